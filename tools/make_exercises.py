#!/usr/bin/env python
"""Generate the students' exercises/ from solutions/ (the single source).

For each solutions/<name>.py (jupytext py:percent with nbgrader cell metadata) this writes
exercises/<name>.py and executes it into exercises/<name>.ipynb, doing what nbgrader's
generate_assignment does to a source notebook:

- code between ``### BEGIN SOLUTION`` and ``### END SOLUTION`` becomes ``# YOUR CODE HERE``
  (the stub ``companion.course.configure`` gives nbgrader too: the answer cell's first line,
  which stays, defines its answer variables as empty, so nothing raises and the check cell
  says "not yet answered");
- a markdown cell marked as a solution becomes ``YOUR ANSWER HERE``;
- ``### BEGIN HIDDEN TESTS`` ... ``### END HIDDEN TESTS`` blocks are removed;
- outputs are dropped, and the unanswered cells (the emptied answers and the checks that
  need them) are tagged ``raises-exception``: the executor stores them as not run (the
  student sees the question and empty answer cells), and JupyterLab's Run All goes on past
  a student's half-written answer that raises.

The nbgrader metadata stays on every cell, so the exercises also import into nbgrader.
usage: python tools/make_exercises.py [--check]   (--check: compare, write nothing; exit 1 if stale)
"""

from __future__ import annotations

import re
import sys
import tempfile
from pathlib import Path

import jupytext
from jupytext.config import load_jupytext_config

from companion import course

ROOT = Path(__file__).resolve().parents[1]
SOLUTIONS = ROOT / "solutions"
EXERCISES = ROOT / "exercises"

_SOLUTION = re.compile(r"^([ \t]*)### BEGIN SOLUTION[^\n]*\n.*?^[ \t]*### END SOLUTION[^\n]*$",
                       re.S | re.M)
_HIDDEN = re.compile(r"^[ \t]*### BEGIN HIDDEN TESTS[^\n]*\n.*?^[ \t]*### END HIDDEN TESTS[^\n]*\n?",
                     re.S | re.M)
CODE_STUB = "{indent}" + course.CODE_STUB     # the stub nbgrader gets too
MARKDOWN_STUB = "YOUR ANSWER HERE"


def _nbgrader(cell) -> dict:
    return cell.metadata.get("nbgrader", {})


def strip_notebook(nb):
    """Turn a solution notebook into the student's version (in place) and return it."""
    unanswered = False
    for cell in nb.cells:
        meta = _nbgrader(cell)
        tags = [t for t in cell.metadata.get("tags", []) if t != "raises-exception"]
        if cell.cell_type == "markdown":
            if meta.get("solution"):
                cell.source = MARKDOWN_STUB
        elif cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
            if "### BEGIN SOLUTION" in cell.source:
                cell.source = _SOLUTION.sub(lambda m: CODE_STUB.format(indent=m.group(1)),
                                            cell.source)
                unanswered = True
                tags.append("raises-exception")
            cell.source = _HIDDEN.sub("", cell.source).rstrip("\n")
            if meta.get("grade") and unanswered:
                tags.append("raises-exception")
        if tags:
            cell.metadata["tags"] = tags
        else:
            cell.metadata.pop("tags", None)
    return nb


def generate(out_dir: Path) -> list[Path]:
    """Write the stripped py:percent files into ``out_dir``; return their paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for src in sorted(SOLUTIONS.glob("ex*.py")):
        config = load_jupytext_config(str(src))
        nb = strip_notebook(jupytext.read(src, config=config))
        dest = out_dir / src.name
        dest.write_text(jupytext.writes(nb, fmt="py:percent", config=config))
        written.append(dest)
    return written


def main(argv: list[str]) -> int:
    if "--check" in argv:
        with tempfile.TemporaryDirectory() as tmp:
            fresh = {p.name: p.read_text() for p in generate(Path(tmp))}
        current = {p.name: p.read_text() for p in EXERCISES.glob("ex*.py")}
        stale = sorted(set(fresh) ^ set(current) | {n for n in fresh if fresh[n] != current.get(n)})
        for name in stale:
            print(f"stale: exercises/{name}")
        return 1 if stale else 0
    for stale in EXERCISES.glob("ex*.*"):
        stale.unlink()
    paths = generate(EXERCISES)
    sys.path.insert(0, str(ROOT / "tools"))
    from execute_notebooks import execute  # same executor as every other notebook

    for path in paths:
        elapsed = execute(path)
        print(f"generated {path.relative_to(ROOT)} ({elapsed:.1f}s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
