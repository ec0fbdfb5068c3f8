#!/usr/bin/env python
"""How long a reader waits for the first figure, each row measured in this run (`make bench
ARGS=startup`). Nothing is asserted; the last column says whether the row meets its target
(targets are for a quiet machine: the load average is printed before and after).

import      `python -c "import companion.calc"` less `python -c pass`, median of 7 each
lab cold    `make lab`'s server (its flags, a fresh state directory, so no kernel and no
            browser cache), started anew for each notebook; a fresh browser opens the notebook,
            its kernel starts, Clear Outputs, then Run All -> the first live explorer's figure
            drawn (timed inside the page from the pointerdown on Run All Cells)
lab warm    the same page: Restart Kernel and Clear Outputs of All Cells, Run All again ->
            first live explorer (the reader's second run: plotly.js already in the page, the
            files in the OS cache)
dashboard   `make dashboard`'s Voila page: address entered -> the first explorer's figure drawn
lite kernel the lite site (build/lite, `make lite`), a fresh browser context: page open -> the
            first notebook shown with its kernel idle (JupyterLite's Pyodide kernel loaded,
            companion importable)
lite second the same visit: a second notebook opened in a new tab -> its kernel idle
lite first  Run All of the first notebook -> its first live explorer
explorer

The lab rows need Chromium and Playwright (as the browser tests); the lite rows need a built
site (this script runs `make lite`, which needs npm and the network the first time).

usage: python benchmarks/startup.py [--notebooks a.ipynb,b.ipynb] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "browser"))
sys.path.insert(0, str(ROOT / "benchmarks"))
import browser_latency as B  # noqa: E402
import lab_harness as H  # noqa: E402

CH08 = "notebooks/ch08_inference_optimization"
CH17 = "notebooks/ch17_performance"
LAB_NOTEBOOKS = ["notebooks/START_HERE.ipynb", f"{CH08}/08_3_kv_cache.ipynb",
                 f"{CH17}/17_02_roofline.ipynb"]
LITE_FIRST, LITE_SECOND = "notebooks/START_HERE.ipynb", f"{CH17}/17_02_roofline.ipynb"
DASHBOARD = "dashboards/lecture.ipynb"
TARGETS_S = {"import": 0.150, "lab cold": 3.0, "lab warm": 1.5, "dashboard": 3.0,
             "lite kernel": 10.0, "lite second": 5.0}
KERNEL_MS = 300_000


def student_env(state: Path) -> dict:
    """The harness's isolated environment, as a student's shell has it: Python writes its
    bytecode caches (a sandbox may set PYTHONDONTWRITEBYTECODE, which a student's machine
    does not, and which would make every kernel compile the companion again), and without
    the tests' COMPANION_FAST."""
    env = H.isolated_env(state)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.pop("COMPANION_FAST", None)   # the tests' shortcut; `make lab` does not set it
    return env


def process_median(code: str, n: int = 7) -> float:
    runs = []
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    for _ in range(n):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT, env=env)
        runs.append(time.perf_counter() - t)
    return statistics.median(runs)


def import_row() -> float:
    return process_median("import companion.calc") - process_median("pass")


def run_all_to_first_explorer(page, server, notebook: str, n_code: int) -> float:
    """Clear outputs, Run All, and the seconds from the pointerdown on Run All Cells to the
    first frame with a live explorer's figure drawn (the cell scrolled into view once it ran,
    as a reader following the run sees it)."""
    H._menu(page, "Edit", "Clear Outputs of All Cells")
    page.wait_for_function(H.NO_PROMPT_NUMBERED, arg=H.PROMPTS, timeout=30_000)
    page.evaluate(B.FIRST_EXPLORER_JS, f"{H.ACTIVE} {B.LIVE_FIGURE}")
    t_before = page.evaluate("() => performance.now()")
    H._menu(page, "Run", "Run All Cells")
    t_click = page.evaluate("""t => Math.max(...window.__probe.inputs
        .filter(i => i.type === 'pointerdown' && i.t >= t).map(i => i.t))""", t_before)
    index = first_explorer_index(server, notebook)
    cell = page.locator(f"{H.ACTIVE} .jp-CodeCell").nth(index)
    page.wait_for_function("el => /\\[\\d+\\]/.test(el.textContent)",
                           arg=cell.locator(".jp-InputArea-prompt").element_handle(),
                           polling=50, timeout=KERNEL_MS)
    cell.scroll_into_view_if_needed()
    page.wait_for_function("() => window.__firstExplorer !== null", polling=50,
                           timeout=KERNEL_MS)
    first = (page.evaluate("() => window.__firstExplorer") - t_click) / 1e3
    page.wait_for_function(H.ALL_DONE_OR_ERROR,
                           arg=[H.PROMPTS, f"{H.ACTIVE} {H.ERROR_OUTPUT}", n_code],
                           timeout=KERNEL_MS, polling=100)
    return first


def first_explorer_index(server, notebook: str) -> int:
    if isinstance(server, H.LiteSite):
        cells = [c for c in server.notebook(notebook)["cells"] if c["cell_type"] == "code"]
    else:
        cells = [c for c in server.api("GET", f"/api/contents/{notebook}?content=1")["content"]
                 ["cells"] if c["cell_type"] == "code"]
    return next(i for i, c in enumerate(cells) if B.SHOWS.search("".join(c["source"])))


def restart_and_clear(page) -> None:
    H._menu(page, "Kernel", "Restart Kernel and Clear Outputs of All Cells…")
    accept = page.locator(".jp-Dialog .jp-mod-accept")
    try:
        accept.wait_for(state="visible", timeout=5_000)
        accept.click()
    except Exception:  # noqa: BLE001 - a Lab set not to ask restarts at once
        pass
    page.wait_for_function(H.NO_PROMPT_NUMBERED, arg=H.PROMPTS, timeout=30_000)
    H.wait_kernel_ready(page, KERNEL_MS)


def lab_rows(browser, notebooks) -> list[dict]:
    rows = []
    for notebook in notebooks:
        row = {"notebook": notebook}
        with tempfile.TemporaryDirectory(prefix="bench-startup-lab-") as state:
            lab = H.LabServer(Path(state), student_env(Path(state)))
            lab.start()
            context = browser.new_context(viewport={"width": 1400, "height": 1000})
            context.add_init_script(B.PROBE_JS)
            page = context.new_page()
            page.set_default_timeout(KERNEL_MS)
            try:
                n_code = H.open_notebook(page, lab, notebook, timeout_ms=KERNEL_MS)
                row["cold"] = run_all_to_first_explorer(page, lab, notebook, n_code)
                restart_and_clear(page)
                row["warm"] = run_all_to_first_explorer(page, lab, notebook, n_code)
            except Exception as exc:  # report and go on
                row["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:160]}"
            finally:
                context.close()
                lab.stop()
        rows.append(row)
        print_row(f"lab cold  {short(notebook)}", row.get("cold"), "lab cold", row.get("error"))
        print_row(f"lab warm  {short(notebook)}", row.get("warm"), "lab warm", row.get("error"))
    return rows


def dashboard_row(browser) -> dict:
    row = {}
    missing = H.voila_missing()
    if missing:
        return {"error": f"skipped: {missing}"}
    with tempfile.TemporaryDirectory(prefix="bench-startup-voila-") as state:
        server = H.VoilaServer(DASHBOARD, Path(state), student_env(Path(state)))
        server.start()
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        page = context.new_page()
        try:
            server.wait_preheated()
            page.add_init_script(B.FIRST_EXPLORER_JS.replace("sel =>", "(sel =>")
                                 + ")('.js-plotly-plot .main-svg')")
            t0 = time.perf_counter()
            page.goto(f"{server.base}/", timeout=KERNEL_MS, wait_until="commit")
            page.wait_for_function("() => window.__firstExplorer", polling=50,
                                   timeout=KERNEL_MS)
            # the figure's own frame, from the navigation's start (the page's time origin)
            row["first_figure"] = page.evaluate(
                "() => (window.__firstExplorer - 0) / 1e3")
            row["wall"] = time.perf_counter() - t0
        except Exception as exc:  # noqa: BLE001
            row["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:160]}"
        finally:
            context.close()
            server.stop()
    print_row("dashboard (URL -> first figure)", row.get("first_figure"), "dashboard",
              row.get("error"))
    return row


def lite_rows(browser) -> dict:
    import lite_latency as L

    row: dict = {}
    try:
        L.build()
    except SystemExit as exc:
        row["error"] = str(exc).splitlines()[0]
        print_row("lite", None, None, row["error"])
        return row
    with tempfile.TemporaryDirectory(prefix="bench-startup-lite-") as state:
        site = H.LiteSite(L.SITE, Path(state))
        site.start(timeout_s=60)
        reader = L.Reader(browser)
        try:
            t0 = time.perf_counter()
            n_code = H.open_notebook(reader.page, site, LITE_FIRST, timeout_ms=KERNEL_MS)
            row["kernel"] = time.perf_counter() - t0
            print_row(f"lite kernel  {short(LITE_FIRST)}", row["kernel"], "lite kernel")
            row["first_explorer"] = run_all_to_first_explorer(reader.page, site, LITE_FIRST,
                                                              n_code)
            print_row(f"lite Run All -> explorer  {short(LITE_FIRST)}",
                      row["first_explorer"], None)
            second = reader.context.new_page()
            second.set_default_timeout(KERNEL_MS)
            t0 = time.perf_counter()
            H.open_notebook(second, site, LITE_SECOND, timeout_ms=KERNEL_MS)
            row["second_kernel"] = time.perf_counter() - t0
            print_row(f"lite second  {short(LITE_SECOND)}", row["second_kernel"],
                      "lite second")
            row["left_the_machine"] = list(reader.left)
        except Exception as exc:  # noqa: BLE001
            row["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:160]}"
            print_row("lite", None, None, row["error"])
        finally:
            reader.close()
            site.stop()
    return row


def short(notebook: str) -> str:
    return Path(notebook).stem


def print_row(name: str, seconds, target_key, error: str | None = None) -> None:
    if error:
        print(f"  {name:52s} {'-':>8s}   {error}", flush=True)
        return
    target = TARGETS_S.get(target_key)
    verdict = ("" if target is None or seconds is None else
               f"   target < {target:g} s: {'met' if seconds < target else 'MISSED'}")
    value = f"{seconds:8.2f}" if isinstance(seconds, float) else f"{'-':>8s}"
    print(f"  {name:52s} {value} s{verdict}", flush=True)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notebooks", help="comma-separated notebooks for the lab rows")
    parser.add_argument("--json", help="write the results to this file")
    args = parser.parse_args(argv)
    out: dict = {"load_average_before": os.getloadavg()}
    print(f"  load average {out['load_average_before'][0]:.2f} (1 min) before; targets are "
          "for a quiet machine", flush=True)
    out["import"] = import_row()
    print_row("import companion.calc (over a bare interpreter)", out["import"], "import")
    missing = H.playwright_missing() or (None if H.find_chromium() else "no Chromium found")
    if missing:
        print(f"  (browser rows skipped: {missing})")
    else:
        from playwright.sync_api import sync_playwright

        with sync_playwright() as p:
            browser = H.launch_browser(p, H.find_chromium())
            try:
                notebooks = args.notebooks.split(",") if args.notebooks else LAB_NOTEBOOKS
                out["lab"] = lab_rows(browser, notebooks)
                out["dashboard"] = dashboard_row(browser)
                out["lite"] = lite_rows(browser)
            finally:
                browser.close()
    out["load_average_after"] = os.getloadavg()
    print(f"  load average before {out['load_average_before'][0]:.2f}, after "
          f"{out['load_average_after'][0]:.2f} (1 min)")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
