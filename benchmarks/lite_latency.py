#!/usr/bin/env python
"""How fast the lite site (JupyterLite, the companion in the page's Pyodide kernel) opens and
answers, and which notebooks run to the end there. Nothing is asserted; `make bench` prints it.

The site is built with the project's own command (`make lite`, into build/lite), served by
Python's http.server on 127.0.0.1 and used in headless Chromium with every request that is not
for 127.0.0.1 blocked. Each notebook gets a fresh browser context (a fresh kernel and browser
storage), as a reader who opens it gets.

open      For the 17 §2, 8.6 and 8.1 notebooks: page open -> kernel ready (the notebook shown,
          its every code cell attached and the Pyodide kernel idle, companion loaded), and Run
          All -> first live explorer (timed inside the page from the pointerdown on "Run All
          Cells" to the first frame with an explorer's figure) and -> last cell done.
latency   In those notebooks, the same six explorers and sliders as browser_latency.py: MOVES
          arrow-key steps of one slider (half away from the end the default sits at, then
          back; the first warms up and is dropped), each timed inside the page from its keydown
          to the first frame that shows the step's final readout and figure (page_probe.js),
          median and p95 as the JupyterLab rows are, with the page's lookahead as a reader gets
          it; then a pointer drag across the slider, analysed as browser_latency.py's drag
          rows, against what companion computes here for each value the hand passed.
notebooks Run All of every notebook the site serves under notebooks/ and dashboards/ (the
          exercises stop by design at their unanswered check cells; tests/browser/
          test_lite_site.py grades one): whether it runs to the end with no error output, and
          the first error when it does not.

usage: python benchmarks/lite_latency.py [open] [latency] [notebooks] [--moves N]
"""

from __future__ import annotations

import argparse
import json
import re
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

SITE = ROOT / "build" / "lite"
KERNEL_MS = 300_000
RUN_ALL_MS = 600_000
SECTIONS = ("open", "latency", "notebooks")
CHANGED_AND_SETTLED_JS = """([before, ms]) => { const f = window.__probe.frames();
    return f.some(x => x.sig !== before) && performance.now() - f[f.length - 1].t > ms; }"""
CONSTRUCTOR = r"^{variable}\s*=\s*(widgets\.\w+\(.*\))\s*$"


def build() -> None:
    started = time.perf_counter()
    done = subprocess.run(["make", "--no-print-directory", "lite"], cwd=ROOT,
                          capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"make lite failed:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
    size = sum(p.stat().st_size for p in SITE.rglob("*") if p.is_file())
    print(f"  site: {SITE.relative_to(ROOT)}, {size / 2**20:.0f} MiB, make lite took "
          f"{time.perf_counter() - started:.0f} s", flush=True)


class Reader:
    """A fresh browser context on the site, kept to 127.0.0.1, with the timing probe."""

    def __init__(self, browser):
        self.context = browser.new_context(viewport={"width": 1400, "height": 1000})
        self.context.add_init_script(B.PROBE_JS)
        self.left = []
        self.context.route("**/*", self._route)
        self.page = self.context.new_page()
        self.page.set_default_timeout(KERNEL_MS)

    def _route(self, r) -> None:
        url = r.request.url
        host = url.split("/")[2].split(":")[0] if "://" in url else ""
        if host in H.LOOPBACK_HOSTS or url.startswith(("data:", "blob:")):
            r.continue_()
        else:
            self.left.append(url)
            r.abort()

    def close(self) -> None:
        self.context.close()


def open_and_run(browser, site, notebook: str) -> tuple[Reader, dict]:
    """Open ``notebook`` in a fresh context and Run All, timing both; the reader stays open."""
    reader = Reader(browser)
    page, row = reader.page, {"notebook": notebook}
    t0 = time.perf_counter()
    n_code = H.open_notebook(page, site, notebook, timeout_ms=KERNEL_MS)
    row["open_to_kernel_ready"] = time.perf_counter() - t0
    H._menu(page, "Edit", "Clear Outputs of All Cells")
    page.wait_for_function(H.NO_PROMPT_NUMBERED, arg=H.PROMPTS, timeout=30_000)
    page.evaluate(B.FIRST_EXPLORER_JS, f"{H.ACTIVE} {B.LIVE_FIGURE}")
    t_before = page.evaluate("() => performance.now()")
    H._menu(page, "Run", "Run All Cells")
    t_click = page.evaluate("""t => Math.max(...window.__probe.inputs
        .filter(i => i.type === 'pointerdown' && i.t >= t).map(i => i.t))""", t_before)
    page.wait_for_function(H.ALL_DONE_OR_ERROR, arg=[H.PROMPTS, f"{H.ACTIVE} {H.ERROR_OUTPUT}",
                                                     n_code], timeout=RUN_ALL_MS, polling=100)
    row["run_all_done"] = (page.evaluate("() => performance.now()") - t_click) / 1e3
    first = page.evaluate("() => window.__firstExplorer")
    row["run_all_to_first_explorer"] = (first - t_click) / 1e3 if first else None
    errors = page.locator(f"{H.ACTIVE} {H.ERROR_OUTPUT}")
    row["error"] = errors.first.inner_text()[:300] if errors.count() else None
    row["cells"] = n_code
    row["left_the_machine"] = list(reader.left)
    return reader, row


def print_open_row(row: dict) -> None:
    def s(key):
        v = row.get(key)
        return f"{v:8.2f}" if isinstance(v, float) else f"{'-':>8s}"

    note = f"  ERROR: {row['error'].splitlines()[-1][:100]}" if row.get("error") else ""
    if row.get("left_the_machine"):
        note += f"  requests blocked: {row['left_the_machine'][:3]}"
    print(f"  {row['notebook'].replace('notebooks/', ''):58s} {s('open_to_kernel_ready')} "
          f"{s('run_all_to_first_explorer')} {s('run_all_done')}{note}", flush=True)


def panel_for(site, notebook: str, variable: str):
    """The explorer ``variable`` as the notebook builds it (its constructor line), built here."""
    from companion import widgets
    from companion.chapters import ch08, ch17

    code = "\n".join("".join(c["source"]) for c in site.notebook(notebook)["cells"]
                     if c["cell_type"] == "code")
    m = re.search(CONSTRUCTOR.format(variable=re.escape(variable)), code, re.M)
    return eval(m.group(1), {"widgets": widgets, "ch08": ch08, "ch17": ch17})  # noqa: S307


def explorers(site, notebook: str) -> list[tuple[int, str, str]]:
    """(code cell index, variable, panel class) of the notebook's benchmarked explorers."""
    code = [c for c in site.notebook(notebook)["cells"] if c["cell_type"] == "code"]
    out = []
    for i, cell in enumerate(code):
        m = B.SHOWS.search("".join(cell["source"]))
        if m:
            panel = type(panel_for(site, notebook, m.group(1))).__name__
            if panel in B.MOVED:
                out.append((i, m.group(1), panel))
    return out


def steps(page, root, cls, moves: int) -> dict:
    """Arrow-key steps of the benchmarked slider: keydown -> first frame of the final state."""
    control = next(c for c in cls.controls if c.name == B.MOVED[cls.__name__])
    slider = H.slider(root, control.label)
    handle = slider.locator(".noUi-handle")
    handle.scroll_into_view_if_needed()
    handle.focus()
    value = H.slider_value(control, slider)

    def room(direction: int) -> int:  # steps the slider can still take that way
        n, x = 0, value
        while n <= moves and (x := control.step_from(x, direction)) is not None:
            n += 1
        return n

    # away from the nearer end and back, never pressing past an end (a step that changes
    # nothing has nothing to time)
    right, left = room(+1), room(-1)
    (away, n), back = ((("ArrowRight", right), "ArrowLeft") if right >= left
                       else (("ArrowLeft", left), "ArrowRight"))
    n = min(n, moves // 2 + 1)
    totals = []
    for key in [away] * n + [back] * n:
        start = page.evaluate("() => performance.now()")
        before = root.evaluate("r => window.__probe.watch(r)")
        page.keyboard.press(key)
        # changed, then still for 400 ms (a kernel in WebAssembly may take longer than that
        # to answer a step the page could not show from its lookahead)
        page.wait_for_function(CHANGED_AND_SETTLED_JS, arg=[before, 400], timeout=60_000,
                               polling=100)
        rec = page.evaluate("""start => { const P = window.__probe; P.unwatch();
            return {frames: P.frames(), inputs: P.inputs.filter(x => x.t >= start)}; }""", start)
        frames = [f for f in rec["frames"] if f["sig"] != before]
        keydowns = [i["t"] for i in rec["inputs"] if i["type"] == "keydown"]
        if frames and keydowns:
            final = frames[-1]["sig"]
            totals.append(next(f["t"] for f in frames if f["sig"] == final) - keydowns[0])
        else:
            totals.append(None)
    totals = [t for t in totals[1:] if t is not None]
    return {"control": control.name, "moves": len(totals),
            "median": statistics.median(totals) if totals else float("nan"),
            "p95": B.percentile(totals, 0.95) if totals else float("nan")}


def expected_states(panel, name: str, values: list) -> dict:
    """What companion computes here for each value the hand passed (as the kernel does)."""
    from companion import display

    out = {}
    for value in values:
        view = type(panel).compute(panel, **{**panel.params, name: value})
        out[value] = {"text": H.html_text(panel.readout_html(view)), "data": [
            {k: H._decode(t[k]) for k in B.SIGNATURE_KEYS[1:] if k in t}
            | {"type": t.get("type", "scatter")} for t in display.round_floats(view.traces)]}
    return out


def drag(page, root, panel) -> dict:
    cls = type(panel)
    control = next(c for c in cls.controls if c.name == B.MOVED[cls.__name__])
    slider = H.slider(root, control.label)
    H.drag(page, slider, 0.0)   # a first drag to the left end, not measured
    root.evaluate("r => window.__probe.watch(r)")
    page.wait_for_function(B.SETTLED_JS, arg=600, timeout=60_000, polling=100)
    cdp = page.context.new_cdp_session(page)
    cdp.send("Performance.enable")
    rec = B.drag_once(page, cdp, root, slider, control)
    values = sorted({B._value(control, e["value"]) for e in rec["pointer"]}
                    | {B._value(control, rec["final"])})
    r = B.analyse_drag(rec, control, expected_states(panel, control.name, values))
    r.update(control=control.name, path="drag", kernel_updates=0)
    return r


def bench(browser, site, sections, moves: int) -> dict:
    out = {"open": [], "steps": [], "drags": [], "notebooks": []}
    if "open" in sections or "latency" in sections:
        print(f"\n  {'opening a notebook, s':58s} {'kernel':>8s} {'explorer':>8s} "
              f"{'all done':>8s}", flush=True)
        print("  (open -> kernel ready; Run All -> first live explorer; Run All -> done)")
        for notebook in B.LATENCY_NOTEBOOKS:
            reader, row = open_and_run(browser, site, notebook)
            print_open_row(row)
            out["open"].append(row)
            try:
                if "latency" not in sections or row["error"]:
                    continue
                cells = reader.page.locator(f"{H.ACTIVE} .jp-CodeCell")
                for index, variable, panel_name in explorers(site, notebook):
                    panel = panel_for(site, notebook, variable)
                    root = cells.nth(index).locator(".jp-OutputArea")
                    root.scroll_into_view_if_needed()
                    H.wait_figures_rendered(reader.page, root, 1, timeout_s=120)
                    for kind, run in (("steps", lambda: steps(reader.page, root, type(panel),
                                                              moves)),
                                      ("drags", lambda: drag(reader.page, root, panel))):
                        try:
                            r = run()
                        except Exception as exc:  # report and go on
                            r = {"error": f"{type(exc).__name__}: {str(exc).splitlines()[0]}"}
                        r.update(notebook=Path(notebook).stem, variable=variable,
                                 panel=panel_name)
                        out[kind].append(r)
            finally:
                reader.close()
        if out["steps"]:
            print(f"\n  slider step -> repainted explorer in the lite site, ms (median of "
                  f"{moves} arrow-key steps, the page's lookahead as a reader gets it)")
            for r in out["steps"]:
                name = f"{r['notebook']}:{r['variable']} ({r.get('control', '?')})"
                if "error" in r:
                    print(f"  {name[:48]:48s} FAILED: {r['error'][:120]}")
                    continue
                print(f"  {name[:48]:48s} median {r['median']:6.1f}   p95 {r['p95']:6.1f}   "
                      f"({r['moves']} steps)", flush=True)
        if out["drags"]:
            print("\n  pointer drag across the slider in the lite site (columns as the "
                  "JupyterLab drag table; the kernel's updates are not counted here)")
            B.print_drag_header()
            for r in out["drags"]:
                if "error" in r:
                    print(f"  {r['notebook']}:{r['variable']:30s} FAILED: {r['error'][:150]}")
                else:
                    B.print_drag_row(r)
    if "notebooks" in sections:
        notebooks = [p for p in sorted((site.site / "files").rglob("*.ipynb"))
                     if p.relative_to(site.site / "files").parts[0] in ("notebooks",
                                                                         "dashboards")]
        print(f"\n  Run All of every notebook in the lite site ({len(notebooks)})", flush=True)
        for path in notebooks:
            notebook = str(path.relative_to(site.site / "files"))
            try:
                reader, row = open_and_run(browser, site, notebook)
                reader.close()
            except Exception as exc:  # a notebook that never finished: say where
                row = {"notebook": notebook,
                       "error": f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"}
            print_open_row(row)
            out["notebooks"].append(row)
        failed = [r["notebook"] for r in out["notebooks"] if r.get("error")]
        print(f"  {len(notebooks) - len(failed)} of {len(notebooks)} ran to the end"
              + (f"; not: {failed}" if failed else ""), flush=True)
    return out


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sections", nargs="*", help=", ".join(SECTIONS))
    parser.add_argument("--moves", type=int, default=24)
    parser.add_argument("--json", help="write the results to this file")
    args = parser.parse_args(argv)
    args.sections = args.sections or list(SECTIONS)
    unknown = sorted(set(args.sections) - set(SECTIONS))
    if unknown:
        parser.error(f"sections: unknown {unknown}; choose from {', '.join(SECTIONS)}")
    return args


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    sections = args.sections
    missing = H.playwright_missing() or (None if H.find_chromium() else "no Chromium found")
    if missing:
        print(f"  (skipped: {missing})")
        return 0
    from playwright.sync_api import sync_playwright

    build()
    import os

    out = {"load_average_before": os.getloadavg()}
    with tempfile.TemporaryDirectory(prefix="bench-lite-") as state:
        site = H.LiteSite(SITE, Path(state))
        site.start(timeout_s=60)
        try:
            with sync_playwright() as p:
                browser = H.launch_browser(p, H.find_chromium())
                try:
                    out.update(bench(browser, site, sections, args.moves))
                finally:
                    browser.close()
        finally:
            site.stop()
    out["load_average_after"] = os.getloadavg()
    print(f"\n  load average before {out['load_average_before'][0]:.2f}, after "
          f"{out['load_average_after'][0]:.2f} (1 min)")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
