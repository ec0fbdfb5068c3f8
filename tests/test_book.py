"""The book's sources (index.md, book/conf.py) and the stored outputs it is built from.

The build itself and what a browser sees are tested in tests/browser/test_book_site.py; these
checks are quick: every notebook and exercise is a page of the book and no solution is; every
stored plotly figure has a PNG beside it (GitHub, print); every stored explorer output holds
its static figure (the book), so a notebook executed without ``make execute`` is caught.
"""

from __future__ import annotations

import fnmatch
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PLOTLY_MIME = "application/vnd.plotly.v1+json"
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
NOTEBOOKS = sorted(p for p in (ROOT / "notebooks").rglob("*.ipynb")
                   if ".ipynb_checkpoints" not in p.parts)
STORED = NOTEBOOKS + sorted((ROOT / "dashboards").glob("*.ipynb"))
# pages that are not notebooks: the API reference (written by autodoc from the docstrings) and
# the accessibility statement
REFERENCE_PAGES = {"book/api", "book/accessibility"}


def toctree_entries() -> list[str]:
    """Every document the front page's toctrees name, globs expanded over the notebooks."""
    text = (ROOT / "index.md").read_text()
    docs = [p.relative_to(ROOT).with_suffix("").as_posix()
            for p in NOTEBOOKS + sorted((ROOT / "exercises").glob("*.ipynb"))] + sorted(
        REFERENCE_PAGES)
    entries = []
    for block in re.findall(r"```\{toctree\}\n(.*?)```", text, re.S):
        for line in block.splitlines():
            line = line.strip()
            if not line or line.startswith(":"):
                continue
            entries += fnmatch.filter(docs, line) if "*" in line else [line]
    return entries


def test_every_notebook_and_exercise_is_a_page_and_no_solution_is():
    entries = toctree_entries()
    assert len(entries) == len(set(entries)), "a page is listed twice"
    wanted = {p.relative_to(ROOT).with_suffix("").as_posix()
              for p in NOTEBOOKS + sorted((ROOT / "exercises").glob("*.ipynb"))}
    assert set(entries) == wanted | REFERENCE_PAGES
    assert not any(e.startswith("solutions/") for e in entries)


def test_the_api_page_documents_each_module_and_lists_every_promised_name():
    from tests.architecture import PROMISED

    page = (ROOT / "book" / "api.md").read_text()
    for module in ("calc", "sim", "specs", "units", "grading", "ledger"):
        assert re.search(rf"^\.\. automodule:: companion\.{module}$", page, re.M), module
    listed = set(re.findall(r"^   companion\.(\w+\.\w+)$", page, re.M))
    assert listed == {f"{m}.{n}" for m, names in PROMISED.items() for n in names}


def test_book_config_builds_from_stored_outputs_only():
    conf = (ROOT / "book" / "conf.py").read_text()
    assert re.search(r'^nb_execution_mode = "off"$', conf, re.M)
    assert '"solutions"' in conf  # excluded


@pytest.mark.parametrize("ipynb", STORED, ids=lambda p: str(p.relative_to(ROOT)))
def test_stored_figures_carry_a_png_and_explorers_their_static_figure(ipynb):
    nb = json.loads(ipynb.read_text())
    for index, cell in enumerate(nb["cells"]):
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if PLOTLY_MIME in data:
                assert "image/png" in data, (
                    f"cell {index}: a plotly figure without its PNG; re-execute with "
                    f"`make execute ARGS={ipynb.relative_to(ROOT).with_suffix('.py')}`")
            if WIDGET_MIME in data:
                figure = data.get(PLOTLY_MIME)
                assert figure and figure["layout"].get("sliders"), (
                    f"cell {index}: an explorer without its static figure; re-execute with "
                    f"`make execute ARGS={ipynb.relative_to(ROOT).with_suffix('.py')}`")
                assert "nbval-ignore-output" in cell["metadata"].get("tags", []), (
                    f"cell {index}: an explorer cell must be tagged nbval-ignore-output (its "
                    "static figure is written by make execute only)")
