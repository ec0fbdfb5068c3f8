#!/usr/bin/env python
"""How long a student waits: JupyterLab start to the first rendered plotly figure.

Starts JupyterLab on 127.0.0.1 (random port and token, settings in a temporary folder, as the
browser tests do), opens one notebook in headless Chromium and prints the time from the
server's start to each step: REST API answering, JupyterLab's shell on screen, the notebook's
cells attached, the first stored plotly figure rendered, the kernel idle; then (unless
--no-run) Run All Cells, the first live explorer figure (a FigureWidget drawn from the
kernel), and the end of the run. Used by `make bench` (benchmarks/run_all.py, section
"browser"); nothing is asserted. Prints a note and exits 0 when Chromium or Playwright is
missing.

usage: python tests/browser/lab_timing.py [NOTEBOOK] [--no-run]
       (NOTEBOOK relative to the repository root; default: the 8.1 notebook)
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import lab_harness as H  # noqa: E402

DEFAULT = "notebooks/ch08_inference_optimization/08_1_request_lifecycle.ipynb"
# a stored figure's output element is itself the plot (jupyterlab-plotly's renderer); a
# FigureWidget's plot sits inside the widget view
STORED_FIGURE = ".jp-RenderedPlotly"
LIVE_FIGURE = ".js-plotly-plot:not(.jp-RenderedPlotly)"


def main(argv: list[str]) -> int:
    run = "--no-run" not in argv
    args = [a for a in argv if not a.startswith("--")]
    notebook = args[0] if args else DEFAULT
    missing = H.playwright_missing() or (None if H.find_chromium() else "no Chromium found")
    if missing:
        print(f"  (skipped: {missing})")
        return 0
    from playwright.sync_api import sync_playwright

    rows: list[tuple[str, float]] = []
    with tempfile.TemporaryDirectory(prefix="lab-timing-") as state:
        lab = H.LabServer(Path(state))
        t0 = time.perf_counter()

        def mark(what: str) -> None:
            rows.append((what, time.perf_counter() - t0))

        try:
            lab.start()
            mark("server answers (REST API)")
            with sync_playwright() as p:
                browser = H.launch_browser(p, H.find_chromium())
                try:
                    page = browser.new_page(viewport={"width": 1400, "height": 1000})
                    page.set_default_timeout(180_000)
                    page.goto(lab.notebook_url(notebook))
                    page.wait_for_selector("#jp-main-dock-panel", state="visible")
                    mark("JupyterLab shell on screen")
                    page.wait_for_selector(f"{H.ACTIVE} .jp-Cell", state="attached")
                    mark("notebook cells attached")
                    first = page.locator(f"{H.ACTIVE} {STORED_FIGURE}").first
                    if first.count():
                        first.scroll_into_view_if_needed()
                        first.locator(".main-svg").first.wait_for(state="attached")
                        mark("first plotly figure rendered (stored output)")
                    page.wait_for_selector(f'{H.ACTIVE} .jp-Notebook-ExecutionIndicator'
                                           '[data-status="idle"]')
                    mark("kernel idle")
                    if run:
                        n_code = lab.code_cell_count(notebook)
                        page.wait_for_function(
                            "([sel, n]) => document.querySelectorAll(sel).length === n",
                            arg=[f"{H.ACTIVE} .jp-CodeCell", n_code])
                        H.run_all_cells(page, n_code)
                        mark(f"Run All Cells finished ({n_code} code cells)")
                        live = page.locator(f"{H.ACTIVE} .jp-CodeCell").filter(
                            has=page.locator(".widget-slider")).first
                        if live.count():
                            live.scroll_into_view_if_needed()
                            live.locator(f"{LIVE_FIGURE} .main-svg").first.wait_for(
                                state="attached")
                            mark("first explorer figure rendered (FigureWidget)")
                finally:
                    browser.close()
        finally:
            lab.stop()
    print(f"  notebook: {notebook}")
    for what, seconds in rows:
        print(f"  {what:52s} {seconds:7.2f} s after server start")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
