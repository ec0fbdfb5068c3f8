"""What a reader of each notebook sees before opening any fold, counted from the stored outputs.

    python tools/reading_stats.py [--json] [notebook.ipynb ...]

For every reading notebook (default: the section notebooks, START_HERE, the lab and the
reference pages) it prints

- visible words: Markdown cells and rendered outputs (Markdown, HTML, plain text, stdout) with
  every ``<details>`` block closed (its summary line still shows), as a reader sees the page with every fold closed;
- folded words: the words inside ``<details>`` blocks (worked answers, ledger listings) and
  under a heading that opens collapsed (``jp-MarkdownHeadingCollapsed``: a depth section, whose
  heading cell ends with ``<!-- fold: ... -->`` so that the book folds it too);
- visible code cells: code cells whose source shows in JupyterLab (not ``source_hidden``);
- prose code cells: visible code cells whose source writes prose (``md(...)``/``answer(...)``),
  which a reader would otherwise see twice. The target is 0.

Words are counted after stripping HTML tags, TeX and Markdown punctuation, so a formula counts
as a few words, not as its source. The reading budget of a section notebook is about 3,000
visible words (about 20 minutes of reading).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
READING_BUDGET_WORDS = 3000
PROSE_CALL = re.compile(r"^\s*(md|answer)\(", re.M)
_DETAILS = re.compile(r"<details\b.*?</details>", re.S | re.I)
_SUMMARY = re.compile(r"<summary>(.*?)</summary>", re.S | re.I)
_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s", re.M)
# JupyterLab's cell metadata for a heading shown collapsed (the cells under it hidden)
COLLAPSED = "jp-MarkdownHeadingCollapsed"
_TAG = re.compile(r"<[^>]+>")
_DISPLAY_MATH = re.compile(r"\$\$.*?\$\$", re.S)
_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'.,%/-]*")


def reading_notebooks() -> list[Path]:
    """The notebooks a reader reads: every section notebook, START_HERE, the lab, the reference
    pages (not the solutions or exercises)."""
    nbs = sorted((ROOT / "notebooks").rglob("*.ipynb"))
    return [p for p in nbs if ".ipynb_checkpoints" not in p.parts]


def words(text: str) -> int:
    text = _DISPLAY_MATH.sub(" formula ", text)
    text = _TAG.sub(" ", text)
    return len(_WORD.findall(text))


def split_folds(text: str) -> tuple[str, str]:
    """(what shows with every fold closed, the text inside the folds). A closed fold still
    shows its ``<summary>`` line."""
    blocks = _DETAILS.findall(text)
    summaries = [m.group(1) for b in blocks for m in [_SUMMARY.search(b)] if m]
    folded = " ".join(_SUMMARY.sub(" ", b) for b in blocks)
    return _DETAILS.sub(" ", text) + " " + " ".join(summaries), folded


# what an output holds but never shows: its style rules, and a figure's text alternative (read
# by screen readers in the figure's place, companion.describe)
_NOT_SHOWN = re.compile(r"<style>.*?</style>|<p class=\"companion-sr-only\">.*?</p>", re.S)


def _output_text(output: dict) -> str:
    if output.get("output_type") == "stream":
        return "".join(output.get("text", ""))
    data = output.get("data", {})
    for mime in ("text/markdown", "text/html", "text/plain"):
        if mime in data:
            if mime == "text/plain" and ("application/vnd.plotly.v1+json" in data
                                         or "application/vnd.jupyter.widget-view+json" in data):
                return ""  # a figure's or widget's repr, not text a reader sees
            return _NOT_SHOWN.sub(" ", "".join(data[mime]))
    return ""


def source_hidden(cell: dict) -> bool:
    return bool(cell.get("metadata", {}).get("jupyter", {}).get("source_hidden"))


def heading_level(cell: dict) -> int | None:
    """The level of a Markdown cell's first heading (JupyterLab folds by it), else None."""
    if cell["cell_type"] != "markdown":
        return None
    m = _HEADING.search("".join(cell["source"]))
    return len(m.group(1)) if m else None


def heading_collapsed(cell: dict) -> bool:
    return bool(cell.get("metadata", {}).get(COLLAPSED))


def fold_walk(cells: list[dict]):
    """``(cell, in_fold, opens_fold)`` for each cell, as JupyterLab shows a notebook: a cell is
    hidden under the nearest collapsed heading above it until a heading of the same or a higher
    level; a collapsed heading that is itself shown opens a (top-level) fold."""
    fold_level = None        # inside a collapsed heading's section: that heading's level
    for cell in cells:
        level = heading_level(cell)
        if fold_level is not None and level is not None and level <= fold_level:
            fold_level = None
        in_fold = fold_level is not None
        opens = level is not None and heading_collapsed(cell) and not in_fold
        if opens:
            fold_level = level
        yield cell, in_fold, opens


def stats(path: Path) -> dict:
    nb = json.loads(path.read_text())
    visible = folded = code_visible = prose_visible = 0
    for cell, in_fold, _ in fold_walk(nb["cells"]):
        src = "".join(cell["source"])
        if cell["cell_type"] == "markdown":
            shown, inside = split_folds(src)
            if in_fold:
                folded += words(shown) + words(inside)
            else:
                visible += words(shown)
                folded += words(inside)
            continue
        if cell["cell_type"] != "code":
            continue
        if not source_hidden(cell) and not in_fold:
            code_visible += 1
            if PROSE_CALL.search(src):
                prose_visible += 1
        for output in cell.get("outputs", []):
            shown, inside = split_folds(_output_text(output))
            if in_fold:
                folded += words(shown) + words(inside)
            else:
                visible += words(shown)
                folded += words(inside)
    name = str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)
    return {"notebook": name, "visible_words": visible,
            "folded_words": folded, "visible_code_cells": code_visible,
            "prose_code_cells": prose_visible}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("notebooks", nargs="*", type=Path)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    paths = [p.resolve() for p in args.notebooks] or reading_notebooks()
    rows = [stats(p) for p in paths]
    if args.json:
        json.dump(rows, sys.stdout, indent=1)
        print()
        return 0
    print(f"{'notebook':62} {'visible':>8} {'folded':>7} {'code':>5} {'prose':>6}")
    for r in rows:
        flag = "  over budget" if r["visible_words"] > READING_BUDGET_WORDS else ""
        print(f"{r['notebook']:62} {r['visible_words']:8,} {r['folded_words']:7,} "
              f"{r['visible_code_cells']:5} {r['prose_code_cells']:6}{flag}")
    print(f"{'total':62} {sum(r['visible_words'] for r in rows):8,} "
          f"{sum(r['folded_words'] for r in rows):7,} "
          f"{sum(r['visible_code_cells'] for r in rows):5} "
          f"{sum(r['prose_code_cells'] for r in rows):6}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
