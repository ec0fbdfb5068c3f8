"""A reader's view of every section notebook in JupyterLab: each paragraph once, as prose;
depth folded; worked answers closed until asked; Run All leaves the explorers alone.

Every section notebook, in the suite's JupyterLab and headless Chromium, run as a reader runs
it (no fold opened by the test); the checks are ``reader_view.check_reader_view`` (the lite
site runs the same on two notebooks, tests/browser/test_lite_site.py). The counts of code
cells that show their source go to the test's report (``record_property``). A fresh exercise
runs to the end calmly: no traceback, an amber "not yet answered" under every check cell.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import lab_harness as H
import reader_view

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
SECTIONS = sorted(
    [p for p in (ROOT / "notebooks" / "ch08_inference_optimization").glob("08_[1-6]_*.ipynb")]
    + [p for p in (ROOT / "notebooks" / "ch17_performance").glob("17_[01][0-9]_*.ipynb")
       if not p.name.startswith("17_00")])


def test_every_section_notebook_is_checked():
    assert len(SECTIONS) == 17
    folded = [reader_view.top_level_folds(json.loads(p.read_text())) >= 1 for p in SECTIONS]
    assert sum(folded) >= 16          # 17.11 is all questions


@pytest.mark.parametrize("path", SECTIONS, ids=lambda p: p.stem)
def test_a_reader_sees_prose_once_and_runs_all_without_moving_an_explorer(
        path, lab, browsing, record_property):
    rel = str(path.relative_to(ROOT))
    n_code = H.open_notebook(browsing.page, lab, rel)
    counts = reader_view.check_reader_view(browsing.page, json.loads(path.read_text()), n_code)
    record_property("checked", f"{path.stem}: {counts['source_shown']} code cells show their "
                               f"source, {counts['output_only']} only their output, "
                               f"{counts['folds']} folds closed, {counts['explorers']} explorers "
                               "at the chapter's setting")
    browsing.assert_offline()
    lab.shutdown_notebook(rel)


EXERCISES = ["exercises/ex8_1.ipynb", "exercises/ex17_1.ipynb"]


@pytest.mark.parametrize("rel", EXERCISES, ids=lambda r: Path(r).stem)
def test_a_fresh_exercise_runs_to_the_end_calmly(rel, lab, browsing):
    """Run All on a fresh exercise: no traceback, amber 'not yet answered' under every check
    cell (nbgrader still scores it 0: make nbgrader-check)."""
    n_code = H.open_notebook(browsing.page, lab, rel)
    assert reader_view.check_fresh_exercise(browsing.page, json.loads((ROOT / rel).read_text()),
                                            n_code) >= 2
    browsing.assert_offline()
    lab.shutdown_notebook(rel)
