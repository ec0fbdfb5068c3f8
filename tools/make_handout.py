#!/usr/bin/env python
"""A printable PDF of every exercise with one seed's given data (``make handout SEED=n``).

For each exercise (exercises/*.py, the students' copies: no solutions) it sets ``SEED = n`` in
the given-data cell (instead of ``SEED = grading.student_seed()``), executes the notebook with nbclient (the unanswered cells are tagged
``raises-exception``: they run and their outputs are dropped from the handout), joins the
exercises into one notebook with a page break before each, converts it to HTML with nbconvert
(JupyterLab's template without CDN scripts, tools/handout_templates/handout) and prints that
page to PDF with headless Chromium (Debian's, through Playwright), after MathJax has typeset
the formulas. MathJax comes from the installed sphinx-mathjax-offline package; no request
leaves the machine (anything that is not a local file is aborted).

usage: python tools/make_handout.py --seed N [--out build/handout-seedN.pdf] [--html PATH]
       [--only ex8_1 ...]
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
import shutil
import sys
from pathlib import Path

import jupytext
import nbformat
from jupytext.config import load_jupytext_config
from nbclient import NotebookClient

sys.path.insert(0, str(Path(__file__).resolve().parent))
from execute_notebooks import store_unanswered_as_not_run, unix_socket_kernel  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
EXERCISES = ROOT / "exercises"
TEMPLATES = Path(__file__).resolve().parent / "handout_templates"
SEED_LINE = re.compile(r"^SEED = grading\.student_seed\(\)$", re.M)
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--disable-dev-shm-usage"]


def exercise_sources(only: list[str] | None = None) -> list[Path]:
    """exercises/ex*.py in the book's order: 8-1 ... 8-9, then 17-1 ... 17-13."""
    def key(p: Path):
        chapter, number = re.fullmatch(r"ex(\d+)_(\d+)", p.stem).groups()
        return int(chapter), int(number)

    paths = sorted(EXERCISES.glob("ex*_*.py"), key=key)
    if only:
        unknown = sorted(set(only) - {p.stem for p in paths})
        if unknown:
            raise SystemExit(f"--only: no exercise named {unknown[0]!r}")
        paths = [p for p in paths if p.stem in only]
    return paths


def with_seed(py: Path, seed: int):
    """The exercise notebook with ``SEED = seed`` in its given-data cell."""
    nb = jupytext.read(py, config=load_jupytext_config(str(py)))
    cells = [c for c in nb.cells if c.cell_type == "code" and SEED_LINE.search(c.source)]
    if len(cells) != 1:
        raise ValueError(f"{py.name}: expected one 'SEED = grading.student_seed()' line, "
                         f"found {len(cells)}")
    cells[0].source = SEED_LINE.sub(f"SEED = {seed}", cells[0].source)
    return nb


def executed(nb, path: Path):
    """``nb`` run top to bottom; the unanswered cells (tagged raises-exception) shown empty, as
    in exercises/."""
    with unix_socket_kernel() as km:
        NotebookClient(nb, km=km, timeout=600, kernel_name="python3", record_timing=False,
                       resources={"metadata": {"path": str(path.parent)}}).execute()
    store_unanswered_as_not_run(nb)
    nb.metadata.pop("widgets", None)
    return nb


def joined(notebooks: list, seed: int):
    """One notebook: a title, then the exercises, each from a new page."""
    title = nbformat.v4.new_markdown_cell(
        f"# Exercises for Chapters 8 and 17 · seed {seed}\n\n"
        f"The given data below are those of seed {seed}"
        + (" (the chapters' own numbers)" if seed == 0 else "")
        + ". Work in JupyterLab with `SEED = "
        f"{seed}` in each exercise: its check cells grade your answers against this seed.")
    cells = [title]
    for index, nb in enumerate(notebooks):
        if index:
            cells.append(nbformat.v4.new_markdown_cell(
                '<div class="companion-page-break"></div>'))
        cells += nb.cells
    out = nbformat.v4.new_notebook(cells=cells, metadata=notebooks[0].metadata)
    out.metadata["title"] = f"Exercises, seed {seed}"
    return out


def mathjax_file() -> Path:
    package = Path(importlib.import_module("sphinx-mathjax-offline").__file__).parent
    return package / "static" / "mathjax" / "tex-chtml.js"


def to_html(nb) -> str:
    from nbconvert import HTMLExporter

    exporter = HTMLExporter(template_name="handout", extra_template_basedirs=[str(TEMPLATES)])
    exporter.mathjax_url = mathjax_file().as_uri()
    body, _ = exporter.from_notebook_node(nb)
    return body


def find_chromium() -> str:
    for name in (os.environ.get("CHROMIUM_PATH"), "/usr/bin/chromium", "chromium",
                 "chromium-browser", "google-chrome"):
        if name and (shutil.which(name) or os.access(name, os.X_OK)):
            return shutil.which(name) or name
    raise SystemExit("no Chromium found: install Debian's chromium (apt-get install chromium) "
                     "or set CHROMIUM_PATH")


def print_pdf(html_path: Path, pdf_path: Path) -> None:
    """Print the HTML page to PDF with headless Chromium once MathJax has typeset it."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=find_chromium(), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.route("**/*", lambda r: r.continue_() if r.request.url.startswith(
                ("file:", "data:")) else r.abort())
            page.goto(html_path.as_uri(), wait_until="load", timeout=120_000)
            page.wait_for_function("window.MathJax && MathJax.startup && MathJax.startup.promise",
                                   timeout=60_000)
            page.evaluate("MathJax.startup.promise")
            page.pdf(path=str(pdf_path), format="A4", print_background=True,
                     margin={"top": "14mm", "bottom": "14mm", "left": "12mm", "right": "12mm"})
        finally:
            browser.close()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, required=True, help="the students' seed (0: the "
                        "chapters' data)")
    parser.add_argument("--out", type=Path, default=None, help="the PDF to write")
    parser.add_argument("--html", type=Path, default=None, help="also keep the HTML here")
    parser.add_argument("--only", nargs="*", default=None, help="exercise names (ex8_1 ...)")
    args = parser.parse_args(argv)
    if args.seed < 0:
        parser.error(f"--seed: must be 0 or more, got {args.seed}")
    os.environ.setdefault("MPLBACKEND", "Agg")
    # absolute: Chromium opens the page by its file:// URL
    out = (args.out or ROOT / "build" / f"handout-seed{args.seed}.pdf").resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    notebooks = []
    for py in exercise_sources(args.only):
        notebooks.append(executed(with_seed(py, args.seed), py))
        print(f"executed {py.relative_to(ROOT)} with SEED = {args.seed}")
    html_path = (args.html or out.with_suffix(".html")).resolve()
    html_path.write_text(to_html(joined(notebooks, args.seed)), encoding="utf-8")
    print_pdf(html_path, out)
    if args.html is None:
        html_path.unlink()
    print(f"handout: {out} ({out.stat().st_size / 1024:.0f} KiB, {len(notebooks)} exercises)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
