"""A reader's view of every section notebook in JupyterLab: each paragraph once, as prose;
depth folded; worked answers closed until asked; Run All leaves the explorers alone.

For each section notebook, in the suite's JupyterLab and headless Chromium, as a reader runs
it (no fold opened by the test):

1. it opens with its depth sections folded (one "cells hidden" button per collapsed heading);
2. Run All finishes with no error output, and the folds are still closed;
3. no visible code cell shows source that writes prose or an answer (``md(``/``answer(``):
   those cells show only their rendered output, their source behind a placeholder whose one
   line says what the cell computes;
4. every worked answer is closed, and opening one shows its text;
5. every explorer in the kernel still sits at the chapter's setting, and its controls show
   it: no cell moved it (answers compute with ``panel.at``).

The counts of visible code cells go to the test's report (``record_property``).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

import lab_harness as H
from kernel_probe import KernelProbe, kernel_id_for

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import reading_stats  # noqa: E402

SECTIONS = sorted(
    [p for p in (ROOT / "notebooks" / "ch08_inference_optimization").glob("08_[1-6]_*.ipynb")]
    + [p for p in (ROOT / "notebooks" / "ch17_performance").glob("17_[01][0-9]_*.ipynb")
       if not p.name.startswith("17_00")])

# every visible code cell: does its shown source write prose? (hidden cells and cells under a
# collapsed heading are not in view: offsetParent is null)
VISIBLE_CODE_JS = """(active) => [...document.querySelectorAll(active + ' .jp-CodeCell')]
    .filter(c => c.offsetParent !== null)
    .map(c => { const e = c.querySelector('.jp-InputArea-editor');
                return e && e.offsetParent !== null ? e.innerText : null; })"""

# every shown panel: its parameters equal its defaults (a float within half its slider's step:
# a slider snaps a default that is off its grid), and its widgets show its parameters
EXPLORERS_AT_DEFAULTS = r'''
def __explorers_at_defaults():
    from companion.explorers.base import Panel
    out = {}
    for name, obj in list(get_ipython().user_ns.items()):
        if not isinstance(obj, Panel) or getattr(obj, "_ui", None) is None:
            continue
        steps = {c.name: getattr(c, "step", None) or 0 for c in obj.controls}

        def differs(a, b, k):   # a float slider snaps its default to its step when shown
            if isinstance(a, float) and isinstance(b, (int, float)):
                return abs(a - b) > steps[k] / 2 + 1e-9
            return a != b
        moved = {k: [obj.params[k], v] for k, v in obj.defaults().items()
                 if differs(obj.params[k], v, k)}
        shown = {k: [w.value, obj.params[k]] for k, w in getattr(obj, "_widgets", {}).items()
                 if k in obj.params and w.value != obj.params[k]
                 and not (isinstance(w.value, float) and abs(w.value - obj.params[k]) < 1e-9)}
        out[name] = {"moved": {k: repr(v) for k, v in moved.items()},
                     "widgets_differ": {k: repr(v) for k, v in shown.items()}}
    return out
'''


def top_level_folds(path: Path) -> int:
    """How many collapsed headings a reader sees (one inside another shows as one)."""
    cells = json.loads(path.read_text())["cells"]
    count, fold = 0, None
    for cell in cells:
        level = reading_stats.heading_level(cell)
        if fold is not None and level is not None and level <= fold:
            fold = None
        if fold is None and level is not None and reading_stats.heading_collapsed(cell):
            fold, count = level, count + 1
    return count


def test_every_section_notebook_is_checked():
    assert len(SECTIONS) == 17
    assert sum(top_level_folds(p) >= 1 for p in SECTIONS) >= 16   # 17.11 is all questions


@pytest.mark.parametrize("path", SECTIONS, ids=lambda p: p.stem)
def test_a_reader_sees_prose_once_and_runs_all_without_moving_an_explorer(
        path, lab, browsing, record_property):
    page = browsing.page
    rel = str(path.relative_to(ROOT))
    folds = top_level_folds(path)
    n_code = H.open_notebook(page, lab, rel)
    assert page.locator(H.FOLD_BUTTON).count() == folds, "depth sections open folded"

    H.run_all_cells(page, n_code, open_folds=False)
    problems = H.page_problems(page, H.ACTIVE)
    assert not problems, "\n".join(problems)
    assert page.locator(H.FOLD_BUTTON).count() == folds, "Run All leaves the folds closed"

    shown = page.evaluate(VISIBLE_CODE_JS, H.ACTIVE)
    sources = [s for s in shown if s is not None]
    prose = [s.splitlines()[0] for s in sources if reading_stats.PROSE_CALL.search(s)]
    record_property("checked", f"{path.stem}: {len(sources)} code cells show their source, "
                               f"{len(shown) - len(sources)} show only their output, "
                               f"{folds} folds closed")
    assert prose == [], f"visible code cells that write prose: {prose}"

    answers = page.locator(f"{H.ACTIVE} .jp-OutputArea-output details",
                           has=page.locator("summary", has_text=re.compile("Worked answer")))
    assert answers.count() >= 1
    assert all(not answers.nth(i).evaluate("d => d.open") for i in range(answers.count()))
    # the first answer in view (one under a folded section is not)
    in_view = [i for i in range(answers.count())
               if answers.nth(i).evaluate("d => d.offsetParent !== null")]
    assert in_view, "no worked answer outside the folds"
    first = answers.nth(in_view[0])
    body = first.locator(":scope > :not(summary)").first
    first.scroll_into_view_if_needed()
    assert not body.is_visible(), "a worked answer shows before the reader opens it"
    first.locator("summary").click()
    body.wait_for(state="visible")
    assert len(first.inner_text().split()) > 10

    probe = KernelProbe(lab.env["JUPYTER_RUNTIME_DIR"], kernel_id_for(lab, rel))
    try:
        state = probe.evaluate(EXPLORERS_AT_DEFAULTS,
                               "__import__('json').dumps(__explorers_at_defaults())")
    finally:
        probe.close()
    assert state, "no explorer found in the kernel"
    moved = {name: s for name, s in state.items() if s["moved"] or s["widgets_differ"]}
    assert moved == {}, f"explorers left away from the chapter's setting: {moved}"
    assert not H.page_problems(page, H.ACTIVE)
    browsing.assert_offline()
    lab.shutdown_notebook(rel)
