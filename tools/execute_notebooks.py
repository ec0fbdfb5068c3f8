#!/usr/bin/env python
"""Write every notebook's stored outputs by executing its py:percent source on a fresh kernel.

The ``.py`` (jupytext py:percent) file is the source of truth for inputs. For each one this
builds the notebook, executes it with nbclient (no per-cell timing metadata, widget state
dropped: anywidget would otherwise store ~5 MB of plotly.js per notebook; consecutive stream
chunks joined, as their split depends on timing), writes the paired
``.ipynb`` and rewrites the ``.py`` exactly as jupytext would, so the pair is in sync.
Stored outputs are therefore always the tools' output, never hand edits.

It sets COMPANION_STATIC_OUTPUTS=1 for the kernels: then every plotly figure's output also
holds a PNG (GitHub's view, print), drawn by plotly.js itself in headless Chromium (kaleido, one
Chromium per kernel; companion/explorers/static_image.py, which needs Debian's chromium or
CHROMIUM_PATH), and every explorer's output also holds its static figure (the book), see
companion/explorers/static.py. A kernel of a student or of nbval writes neither.

A cell tagged ``raises-exception`` (an exercise's empty answer cells and the check cells that
need them) runs, so that the cells after it see the same kernel, but is stored as not run: no
outputs, no prompt number. A student opening an exercise sees the question and empty answers,
not a traceback or a red "not yet" banner; nbval runs such a cell without comparing its
outputs (it has no reference), and tests/test_unfinished_answers.py runs its own copies to
check what it prints.

usage: python tools/execute_notebooks.py [paths or folders ...]   (default: every notebook)
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import jupytext
import nbformat
from jupytext.config import load_jupytext_config
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("notebooks", "solutions", "dashboards")


def sources(args: list[str]) -> list[Path]:
    paths = [Path(a) for a in args] or [ROOT / f for f in FOLDERS]
    found: list[Path] = []
    for p in paths:
        p = p if p.is_absolute() else Path.cwd() / p
        if p.is_dir():
            found += sorted(q for q in p.rglob("*.py") if ".ipynb_checkpoints" not in q.parts
                            and q.name != "__init__.py")
        elif p.suffix == ".ipynb":
            found.append(p.with_suffix(".py"))
        else:
            found.append(p)
    return found


def merge_adjacent_streams(outputs: list) -> list:
    """One output per run of consecutive stdout (or stderr) chunks: how the kernel chunks a
    cell's prints depends on timing, so without this a re-execution on a busy machine rewrites
    outputs that did not change (nbval joins them anyway; unlike nbclient's coalesce_streams,
    text never moves past a figure between the prints)."""
    merged: list = []
    for output in outputs:
        if (output.get("output_type") == "stream" and merged
                and merged[-1].get("output_type") == "stream"
                and merged[-1].get("name") == output.get("name")):
            merged[-1]["text"] += output["text"]
        else:
            merged.append(output)
    return merged


@contextmanager
def unix_socket_kernel():
    """A kernel manager (not started) whose kernel talks over Unix sockets in a folder of its
    own; the kernel is shut down and the folder removed afterwards: no TCP ports, so none of ipykernel's warning that TCP traffic is
    unencrypted, and no port another process can take (conftest.py does the same for nbval)."""
    from jupyter_client import KernelManager

    # short: a Unix socket's path holds at most 107 bytes
    with tempfile.TemporaryDirectory(prefix="kernel-") as folder:
        km = KernelManager(kernel_name="python3", transport="ipc",
                           connection_file=os.path.join(folder, "kernel.json"),
                           ip=os.path.join(folder, "kernel-ipc"))
        try:
            yield km
        finally:              # a client given a manager leaves its kernel running
            if km.has_kernel:
                km.shutdown_kernel(now=True)


def store_unanswered_as_not_run(nb) -> None:
    """Empty the outputs and prompt numbers of the cells tagged ``raises-exception`` (an
    exercise's unanswered cells): they ran, but a reader sees them as not run."""
    for cell in nb.cells:
        if cell.cell_type == "code" and "raises-exception" in cell.metadata.get("tags", []):
            cell.outputs, cell.execution_count = [], None


def execute(py: Path) -> float:
    config = load_jupytext_config(str(py))
    nb = jupytext.read(py, config=config)
    nb.metadata.setdefault("kernelspec", {"display_name": "Python 3 (ipykernel)",
                                          "language": "python", "name": "python3"})
    t0 = time.perf_counter()
    with unix_socket_kernel() as km:
        NotebookClient(nb, km=km, timeout=600, kernel_name="python3", record_timing=False,
                       resources={"metadata": {"path": str(py.parent)}}).execute()
    elapsed = time.perf_counter() - t0
    nb.metadata.pop("widgets", None)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = merge_adjacent_streams(cell.outputs)
    store_unanswered_as_not_run(nb)
    # jupytext gives every cell a fresh random id; stable ids keep re-execution diffs to
    # what actually changed
    for index, cell in enumerate(nb.cells):
        cell["id"] = f"cell-{index:03d}"
    ipynb = py.with_suffix(".ipynb")
    nbformat.write(nb, ipynb)
    py.write_text(jupytext.writes(jupytext.read(ipynb, config=config), fmt="py:percent",
                                  config=config))
    return elapsed


def main(argv: list[str]) -> int:
    os.environ.setdefault("MPLBACKEND", "Agg")
    os.environ.setdefault("COMPANION_FAST", "1")
    os.environ.setdefault("COMPANION_STATIC_OUTPUTS", "1")
    # stored outputs hold the chapter's data (seed 0), whoever runs this (a hub user's terminal)
    from companion.grading import IDENTITY_ENV
    for var in IDENTITY_ENV:
        os.environ.pop(var, None)
    for py in sources(argv):
        elapsed = execute(py)
        size = py.with_suffix(".ipynb").stat().st_size
        print(f"executed {py.relative_to(ROOT)} in {elapsed:.1f}s ({size / 1024:.0f} KiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
