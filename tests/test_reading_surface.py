"""A reader sees each paragraph once, as prose; worked answers stay closed; Run All leaves every
explorer where the reader put it.

Measured on the stored notebooks (``tools/reading_stats.py`` counts the same things):

1. **No visible code cell writes prose.** A code cell that renders a paragraph, a table or a
   worked answer (``display.md``/``display.answer``) has its source hidden in JupyterLab and the
   lite site (``jupyter.source_hidden``) and in the book (``remove-input`` or ``hide-input``).
   Its source stays one click away.
2. **A hidden source previews nothing.** JupyterLab shows the first line of a hidden source
   beside its "..." placeholder, so that line is a comment saying what the cell computes: no
   sentence of the paragraph and no number of the answer shows before the reader asks.
3. **A core path, depth folded.** A depth section (a "where this model breaks" section, an
   aside, a derivation, a simulator replay) opens folded: its heading cell ends with
   ``<!-- fold: summary -->`` and carries JupyterLab's ``jp-MarkdownHeadingCollapsed``, so Lab
   and the lite site show the heading with its cells hidden and the book wraps the rest of the
   section in a closed ``<details>`` (``book/_ext/companion_book.py``). With every fold closed a
   reading notebook shows at most ``READING_BUDGET_WORDS`` words (about 20 minutes of reading);
   the ledger and the notation page are reference pages, looked up rather than read through.
4. **Worked answers are pure.** A cell after an explorer is shown never calls ``update`` or
   ``reset`` on it: answers and tables compute with ``panel.at(...)``, a copy at the chapter's
   setting with the prompt's changes, so Run All never moves the reader's explorer.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import reading_stats  # noqa: E402

NOTEBOOKS = reading_stats.reading_notebooks()
REFERENCE_PAGES = {"ledger.ipynb", "notation.ipynb"}
FOLD_MARK = re.compile(r"<!--\s*fold(?::\s*(.*?))?\s*-->", re.S)
PROSE_CALL = reading_stats.PROSE_CALL
SHOWN = re.compile(r"^([A-Za-z_]\w*)\.show\(\)", re.M)


def _code_cells(path: Path):
    nb = json.loads(path.read_text())
    return [c for c in nb["cells"] if c["cell_type"] == "code"]


def prose_cell_problems(cell: dict) -> list[str]:
    """What is wrong with a code cell that writes prose (empty when all is well)."""
    src = "".join(cell["source"])
    if not PROSE_CALL.search(src):
        return []
    problems = []
    meta = cell.get("metadata", {})
    if not meta.get("jupyter", {}).get("source_hidden"):
        problems.append("source shows in JupyterLab (set jupyter.source_hidden)")
    if not {"remove-input", "hide-input"} & set(meta.get("tags", [])):
        problems.append("source shows in the book (tag remove-input or hide-input)")
    if not src.lstrip().startswith("#"):
        problems.append(f"the placeholder previews {src.splitlines()[0][:60]!r}: "
                        "start with a comment saying what the cell computes")
    return problems


def moved_explorers(cells: list[dict]) -> list[str]:
    """Calls that move an explorer after it is shown: ``name.update(`` / ``name.reset(``."""
    shown: set[str] = set()
    moves = []
    for cell in cells:
        src = "".join(cell["source"])
        for name in shown:
            for m in re.finditer(rf"\b{re.escape(name)}\.(update|reset)\(", src):
                moves.append(f"{name}.{m.group(1)}(...)")
        shown |= set(SHOWN.findall(src))
    return moves


def fold_cell_problems(cell: dict) -> list[str]:
    """A depth section's heading cell: marker and JupyterLab's collapsed flag go together."""
    if cell["cell_type"] != "markdown":
        return []
    src = "".join(cell["source"])
    marked = FOLD_MARK.search(src) is not None
    collapsed = reading_stats.heading_collapsed(cell)
    if not marked and not collapsed:
        return []
    problems = []
    if marked != collapsed:
        problems.append("the fold marker and jp-MarkdownHeadingCollapsed must go together")
    if reading_stats.heading_level(cell) is None or not src.lstrip().startswith("#"):
        problems.append("a folded section's cell starts with its heading")
    if marked and not src.rstrip().endswith("-->"):
        problems.append("the fold marker ends the heading cell (the rest of the section folds)")
    if marked and not (FOLD_MARK.search(src).group(1) or "").strip():
        problems.append("the fold marker names what is folded (the book's summary line)")
    return problems


def test_there_are_reading_notebooks():
    assert len(NOTEBOOKS) >= 20


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_visible_code_cell_writes_prose(path):
    bad = {i: problems for i, cell in enumerate(_code_cells(path))
           if (problems := prose_cell_problems(cell))}
    assert not bad, f"{path.name}: code cells (by index among code cells) {bad}"
    assert reading_stats.stats(path)["prose_code_cells"] == 0


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_depth_sections_fold_in_lab_and_the_book(path):
    nb = json.loads(path.read_text())
    bad = {i: problems for i, cell in enumerate(nb["cells"])
           if (problems := fold_cell_problems(cell))}
    assert not bad, f"{path.name}: cells {bad}"


@pytest.mark.parametrize("path", [p for p in NOTEBOOKS if p.name not in REFERENCE_PAGES],
                         ids=lambda p: p.name)
def test_a_notebook_reads_in_about_twenty_minutes(path):
    visible = reading_stats.stats(path)["visible_words"]
    assert visible <= reading_stats.READING_BUDGET_WORDS, (
        f"{path.name} shows {visible:,} words with every fold closed; fold depth (asides, "
        f"derivations, replays) under a collapsed heading")


def test_every_section_notebook_folds_its_depth():
    folded = [p.name for p in NOTEBOOKS
              if any(reading_stats.heading_collapsed(c) for c in json.loads(p.read_text())["cells"])]
    assert len(folded) >= 16


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_run_all_never_moves_an_explorer(path):
    assert moved_explorers(_code_cells(path)) == []


def _cell(source: str, **metadata) -> dict:
    return {"cell_type": "code", "source": source, "metadata": metadata}


def test_the_prose_cell_rule_can_fail():
    visible = _cell('md(f"""The ridge is {ridge:.0f} FLOP per byte.""")')
    assert len(prose_cell_problems(visible)) == 3
    previewing = _cell('answer(f"""It is {x}.""")', jupyter={"source_hidden": True},
                       tags=["remove-input"])
    assert prose_cell_problems(previewing) == [prose_cell_problems(previewing)[0]]
    assert "placeholder previews" in prose_cell_problems(previewing)[0]
    fine = _cell('# computes the worked answer below\nanswer(f"""It is {x}.""")',
                 jupyter={"source_hidden": True}, tags=["remove-input"])
    assert prose_cell_problems(fine) == []
    assert prose_cell_problems(_cell("print(1)")) == []


def test_the_explorer_rule_can_fail():
    cells = [_cell("panel = widgets.RooflinePanel()\npanel.show()"),
             _cell("n = panel.at(batch=4).numbers"),
             _cell("n = panel.update(batch=4).numbers\n_ = panel.reset()")]
    assert moved_explorers(cells) == ["panel.update(...)", "panel.reset(...)"]
    assert moved_explorers(cells[:2]) == []
    # a panel that was never shown is a private copy: updating it moves nothing on screen
    assert moved_explorers([_cell("other = widgets.RooflinePanel()\nother.update(batch=2)")]) == []


def test_the_fold_rule_can_fail():
    def md(source, **metadata):
        return {"cell_type": "markdown", "source": source, "metadata": metadata}
    good = md("## Where this breaks\n\nLead.\n\n<!-- fold: the detail -->",
              **{"jp-MarkdownHeadingCollapsed": True})
    assert fold_cell_problems(good) == []
    assert len(fold_cell_problems(md("## Where\n\n<!-- fold: the detail -->"))) == 1
    assert len(fold_cell_problems(md("Lead.\n<!-- fold: x -->\nMore.",
                                     **{"jp-MarkdownHeadingCollapsed": True}))) == 2
    assert fold_cell_problems(md("## Plain heading")) == []


def test_cells_under_a_collapsed_heading_count_as_folded(tmp_path):
    cells = [
        {"cell_type": "markdown", "metadata": {}, "source": "# Title\n\none two three"},
        {"cell_type": "markdown", "metadata": {"jp-MarkdownHeadingCollapsed": True},
         "source": "## Depth\n\nfour\n\n<!-- fold: more -->"},
        {"cell_type": "markdown", "metadata": {}, "source": "five six seven eight"},
        {"cell_type": "code", "metadata": {}, "source": "print(1)", "outputs": [
            {"output_type": "stream", "name": "stdout", "text": "nine ten"}]},
        {"cell_type": "markdown", "metadata": {}, "source": "### Still inside\n\neleven"},
        {"cell_type": "markdown", "metadata": {}, "source": "## Back out\n\ntwelve"},
    ]
    path = tmp_path / "nb.ipynb"
    path.write_text(json.dumps({"cells": cells}))
    st = reading_stats.stats(path)
    assert (st["visible_words"], st["folded_words"], st["visible_code_cells"]) == (9, 9, 0)


def test_words_are_counted_outside_folds_only():
    text = ("Visible words here.\n<details><summary>Worked answer 1</summary>\n\nHidden "
            "answer words.\n\n</details>\nMore.")
    shown, folded = reading_stats.split_folds(text)
    assert reading_stats.words(shown) == 7      # the closed fold's summary line shows
    assert reading_stats.words(folded) == 3
