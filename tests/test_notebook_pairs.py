"""Every notebook is paired with a py:percent file that is exactly what jupytext writes.

(`jupytext --sync` is not a check: it trusts modification times, which a git checkout
scrambles.) Also: stored outputs must come from tools/execute_notebooks.py: no widget state,
no timing metadata, every code cell executed in order, consecutive stream chunks joined.
"""

from pathlib import Path

import jupytext
import nbformat
import pytest
from jupytext.config import load_jupytext_config

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted(p for d in ("notebooks", "solutions", "exercises")
                   for p in (ROOT / d).rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)


def test_there_are_notebooks():
    assert NOTEBOOKS


@pytest.mark.parametrize("ipynb", NOTEBOOKS, ids=lambda p: str(p.relative_to(ROOT)))
def test_text_file_is_exact_jupytext_output(ipynb):
    text = ipynb.with_suffix(".py")
    assert text.exists(), f"missing paired file {text.name}"
    config = load_jupytext_config(str(ipynb))
    expected = jupytext.writes(jupytext.read(ipynb, config=config), fmt="py:percent",
                               config=config)
    assert text.read_text() == expected, (
        f"{text.name} and {ipynb.name} differ: edit the .py and run `make execute "
        f"ARGS={text.relative_to(ROOT)}`")


@pytest.mark.parametrize("ipynb", NOTEBOOKS, ids=lambda p: str(p.relative_to(ROOT)))
def test_outputs_were_written_by_the_tool(ipynb):
    nb = nbformat.read(ipynb, as_version=4)
    assert "widgets" not in nb.metadata, "widget state stored: re-execute with the tool"
    counts = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        assert "execution" not in cell.metadata, "timing metadata stored"
        kinds = [(o.output_type, o.get("name")) for o in cell.outputs]
        assert not any(a == b and a[0] == "stream" for a, b in zip(kinds, kinds[1:])), (
            "consecutive stream chunks stored apart: re-execute with the tool")
        if cell.source.strip():
            if "raises-exception" in cell.metadata.get("tags", []):
                # an exercise's empty answer or its check: run, but stored as not run (an
                # exercise opens clean, tools/execute_notebooks.py)
                assert cell.execution_count is None and not cell.outputs, (
                    "a raises-exception cell stored with its run: re-execute with the tool")
                counts.append("run, not stored")
            else:
                counts.append(cell.execution_count)
    expected = [c if c == "run, not stored" else i for i, c in enumerate(counts, 1)]
    assert counts == expected, (
        "cells were not executed top to bottom on a fresh kernel: re-execute with the tool")
