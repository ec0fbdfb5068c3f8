#!/usr/bin/env python
"""How fast the explorers answer in a real browser, and how long a notebook takes to open.

Real JupyterLab on 127.0.0.1 (the browser tests' harness: random port and token, settings in a
temporary folder) and headless Chromium. Nothing is asserted; `make bench` prints the tables.

latency  For every explorer of the 17 §2, 8.6 and 8.1 notebooks: Run All, then MOVES + 1
         arrow-key steps of one slider (the first warms up and is dropped): half away from the
         end of the range the default sits at, then as many back, each after the previous one
         has settled. Twice: as a reader gets them ("lookahead" rows), and with the page's
         lookahead switched off (window.companionLookahead = false: "kernel" rows, every step
         waits for the kernel's figure). Then MOVES / 2 jumps of five steps (PageUp/PageDown,
         away from that end: "jump" rows), which nothing offered ahead: the kernel's figure
         and a full plotly.js redraw each time, as for a drag or another control's first move. Timed inside the page (tests/browser/page_probe.js)
         from the slider's keydown to the first animation frame that shows the new readout and
         figure; "ahead" is the share of steps shown before the kernel's figure arrived. Split:
           slider -> message   keydown until the slider's comm message leaves the page
           kernel compute      the panel's compute() in the kernel (tests/browser/kernel_probe.py)
           kernel figure       the panel's _apply(): figure + readout refresh, serialisation
           transport           the rest of the time until the figure's message is back
           front end           from that message (kernel rows) or from the slider's message
                               (lookahead rows) until plotly.js is called; 0 when no call
           render              plotly.js call, or a swap of a figure drawn ahead of time,
                               until the frame that shows the final state
drag     Then, per explorer, a pointer drag of that slider (Playwright mouse moves, DRAG_HZ a
         second as a mouse reports them): a first drag to the left end of the track (not
         measured), then from there to the right end in DRAG_S and back in DRAG_S. For every
         pointer move that changes the slider's value (the slider's readout right after the
         move), the lag until the first animation frame that shows that value's figure and
         readout, as the kernel computes them, or those of a value the hand reached after it
         (the page skipped this one and caught up: "exact" is the share that showed the move's
         own value); the value's changes per second (a slider with few stops, such as a
         log-spaced batch, changes less often than 30 times a second) and the figure's updates
         per second, the longest the value stood still and the largest gap between two updates
         over the
         drag; whether the figure at the end is the handle's value. Twice: as a reader gets it
         ("drag") and with the drag handling switched off ("drag-off", the behaviour before it:
         window.companionDrag = false for figure_widget.js, and the panel's
         LOOKAHEAD_AFTER_JUMP_S = None), so that one run compares both on the same load. (A move that the page holds up holds Playwright up too: "move" is
         the median time one mouse move took, and the positions follow the clock.)
open     For each notebook: page open -> first stored figure drawn; Run All -> first live
         explorer (its figure drawn by the kernel's widget), and Run All -> last cell done,
         both timed inside the page from the pointerdown on "Run All Cells".

Where the time went (profiles and this table, issue 16). With plotly's FigureWidget an
update was several comm messages, plotly.py's validation of every change in the kernel, and
a ~5 MB JavaScript module per widget: 64-82 ms median in the page. The explorers now draw
through ``companion.explorers.figure_widget.PlotlyFigure``: one figure message per move, one
``Plotly.react`` per frame at most, a CSS-contained element and axes without plotly's
tick-label overflow pass: 58-105 ms median. Two costs were left, each about half: plotly.js's
full redraw (any data change redraws axes, legend and traces: 25-70 ms in JupyterLab) and the
kernel round trip with the page's own frames around it (about 25-30 ms, of which the kernel's
network round trip is about 5). Lookahead removes both from a step: after each move the
kernel offers the figures one step either side, the page draws them into detached divs while
it is idle, and a step that lands on one swaps that div in (about 20 ms, mostly the frame).
On a shared machine everything grows with the load average: compare "page CPU" (main-thread
CPU per move, settling, drawing ahead and the probe's own per-frame signatures included)
with the wall-clock columns before reading the medians as the page's own cost.

usage: python benchmarks/browser_latency.py [latency] [open] [--moves N] [--profile]
                                            [--notebooks a.ipynb,b.ipynb]
                                            [--paths lookahead,kernel,jump,drag-off,drag]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BROWSER = ROOT / "tests" / "browser"
sys.path.insert(0, str(BROWSER))
import lab_harness as H  # noqa: E402
from kernel_probe import KernelProbe, kernel_id_for  # noqa: E402

PROBE_JS = (BROWSER / "page_probe.js").read_text()
CH08 = "notebooks/ch08_inference_optimization"
CH17 = "notebooks/ch17_performance"
LATENCY_NOTEBOOKS = [f"{CH17}/17_02_roofline.ipynb", f"{CH08}/08_6_load_and_configuration.ipynb",
                     f"{CH08}/08_1_request_lifecycle.ipynb"]
# the slider each explorer's benchmark moves: one whose step changes readout and figure
MOVED = {"RooflinePanel": "batch", "AdmissionPanel": "output_tokens",
         "SchemePanel": "output_tokens", "AmdahlPanel": "decode_fraction",
         "MemoryBudgetPanel": "prompt_tokens", "RequestTimelinePanel": "output_tokens",
         "KVCapacityPanel": "prompt_tokens"}
OPEN_NOTEBOOKS = (["notebooks/START_HERE.ipynb"]
                  + sorted(str(p.relative_to(ROOT)) for d in (CH08, CH17)
                           for p in (ROOT / d).glob("*.ipynb")))
# a stored figure is on screen: drawn by plotly.js, or (outputs written by `make execute` carry
# a PNG) the PNG that plotly's JupyterLab renderer shows until the pointer enters the figure
STORED_FIGURE = (".jp-RenderedPlotly .main-svg", ".jp-RenderedPlotly img.plot-img[src]")
SHOWS = re.compile(r"^(\w+)\.show\(\)\s*$", re.M)
SETTLED_JS = """ms => { const f = window.__probe.frames();
    return f.length > 0 && performance.now() - f[f.length - 1].t > ms; }"""


def percentile(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def explorer_cells(lab, notebook: str) -> list[tuple[int, str]]:
    """(code cell index, variable) of every cell that ends with ``<variable>.show()``."""
    nb = lab.api("GET", f"/api/contents/{notebook}?content=1")["content"]
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    out = []
    for i, cell in enumerate(code):
        m = SHOWS.search("".join(cell["source"]))
        if m:
            out.append((i, m.group(1)))
    return out


def new_page(browser):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.add_init_script(PROBE_JS)
    page.set_default_timeout(180_000)
    return page


# --- one move ----------------------------------------------------------------------------------

def thread_time(cdp) -> float:
    """CPU seconds the page's main thread has used (Chromium's ThreadTime metric)."""
    metrics = cdp.send("Performance.getMetrics")["metrics"]
    return next(m["value"] for m in metrics if m["name"] == "ThreadTime")


def one_move(page, cdp, root, key: str, timeout_s: float = 30) -> dict:
    """Press ``key`` on the focused slider handle; return the page-side times of the move and
    the page's main-thread CPU time over it (settling included, so a slight overestimate).
    (The keyboard goes to the focused element: no actionability checks run in the page.)"""
    start = page.evaluate("() => performance.now()")
    before = root.evaluate("r => window.__probe.watch(r)")
    cpu = thread_time(cdp)
    page.keyboard.press(key)
    page.wait_for_function(SETTLED_JS, arg=400, timeout=timeout_s * 1000, polling=100)
    cpu = thread_time(cdp) - cpu
    rec = page.evaluate("""start => { const P = window.__probe; P.unwatch();
        const after = x => x.t >= start;
        return {frames: P.frames(), ws: P.ws.filter(after), plotly: P.plotly.filter(after),
                inputs: P.inputs.filter(after)}; }""", start)
    rec["before"], rec["page_cpu_ms"] = before, 1e3 * cpu
    return rec


def analyse(rec: dict) -> dict | None:
    """Page-side segments of one move (ms), or None when the move showed nothing new."""
    frames = [f for f in rec["frames"] if f["sig"] != rec["before"]]
    keydowns = [i["t"] for i in rec["inputs"] if i["type"] == "keydown"]
    if not frames or not keydowns:
        return None
    t_in = keydowns[0]
    final = frames[-1]["sig"]
    t_end = next(f["t"] for f in frames if f["sig"] == final)
    sent = [m for m in rec["ws"] if m["dir"] == "out" and m.get("type") == "comm_msg"
            and m["t"] >= t_in]
    if not sent:
        return None
    msg = sent[0]
    replies = [m for m in rec["ws"] if m["dir"] == "in" and m.get("parent") == msg["id"]]
    figure = [m for m in replies if m.get("type") == "comm_msg" and m.get("method") == "update"
              and m.get("keys") and set(m["keys"]) - {"value"}]
    t_figure = figure[0]["t"] if figure else None
    # shown from the page's lookahead: the final state was on screen before the kernel's
    # figure arrived (figure_widget.js drew a kept figure in the keydown's task)
    from_lookahead = t_figure is None or t_figure > t_end
    t_from = t_in if from_lookahead else t_figure
    calls = [c["t"] for c in rec["plotly"] if c["t"] >= t_from and c["t"] <= t_end]
    t_plotly = calls[0] if calls else None
    return {"total": t_end - t_in, "page_cpu": rec["page_cpu_ms"], "t_in": t_in,
            "t_send": msg["t"], "t_figure": t_figure, "from_lookahead": from_lookahead,
            "t_plotly": t_plotly, "t_end": t_end,
            "messages_in": len([m for m in replies if m.get("type") == "comm_msg"]),
            "messages_out": len(sent),
            "plotly_calls": Counter(c["name"] for c in rec["plotly"]
                                    if c["t"] >= t_in and c["t"] <= t_end)}


def breakdown(move: dict, kernel: dict | None) -> dict:
    """Segments (ms) that add up to the total: slider, [compute, apply, transport,] front end,
    render; a step shown from lookahead did not wait for the kernel's three."""
    compute = 1e3 * kernel.get("compute_s", 0.0) if kernel else float("nan")
    apply = 1e3 * kernel.get("apply_s", 0.0) if kernel else float("nan")
    seg = {"slider": move["t_send"] - move["t_in"]}
    if move["from_lookahead"]:
        t_from = move["t_send"]
    elif move["t_figure"] is not None:
        t_from = move["t_figure"]
        seg["compute"], seg["apply"] = compute, apply
        seg["transport"] = move["t_figure"] - move["t_send"] - compute - apply
    else:
        return seg
    if move["t_plotly"] is not None:
        seg["front end"] = move["t_plotly"] - t_from
        seg["render"] = move["t_end"] - move["t_plotly"]
    else:  # a figure drawn ahead of time was swapped in: no plotly.js call in the move
        seg["front end"] = 0.0
        seg["render"] = move["t_end"] - t_from
    return seg


# --- latency -----------------------------------------------------------------------------------

def run_notebook(page, lab, notebook: str) -> int:
    n_code = H.open_notebook(page, lab, notebook)
    H.run_all_cells(page, n_code)
    problems = H.page_problems(page, H.ACTIVE)
    if problems:
        raise RuntimeError(f"{notebook}: " + "; ".join(problems))
    return n_code


def bench_explorer(page, cdp, lab, probe, cell_index: int, variable: str, panel: str,
                   moves: int, path: str = "lookahead") -> dict:
    """``path``: "lookahead" (arrow-key steps as a reader gets them), "kernel" (the same with
    the page's lookahead off) or "jump" (PageUp/PageDown: five steps, away from the end of the
    range the default sits at, never offered ahead: the kernel and a full redraw each time)."""
    from companion import widgets

    cls = getattr(widgets, panel)
    control = next(c for c in cls.controls if c.name == MOVED[panel])
    cells = page.locator(f"{H.ACTIVE} .jp-CodeCell")
    root = cells.nth(cell_index).locator(".jp-OutputArea")
    root.scroll_into_view_if_needed()
    H.wait_figures_rendered(page, root, 1)
    slider = H.slider(root, control.label)
    handle = slider.locator(".noUi-handle")
    handle.scroll_into_view_if_needed()
    handle.focus()
    value = H.slider_value(control, slider)
    # a reader stepping through the range: half the moves away from the end of the range the
    # default sits at, then as many back (the first move warms up and is dropped)
    away, back = (("ArrowLeft", "ArrowRight") if control.step_from(value, +1) is None
                  else ("ArrowRight", "ArrowLeft"))
    if path == "jump":
        keys = [away.replace("ArrowRight", "PageUp").replace("ArrowLeft", "PageDown")] * (
            moves + 1)
    else:
        keys = [away] * (moves // 2 + 1) + [back] * (moves - moves // 2)
    # the page-wide switch figure_widget.js reads: off, every step waits for the kernel
    page.evaluate(f"() => {{ window.companionLookahead = {str(path != 'kernel').lower()}; }}")
    probe.take_log(variable)
    results = []
    for key in keys:
        rec = analyse(one_move(page, cdp, root, key))
        results.append(rec)
    page.evaluate("() => { delete window.companionLookahead; }")
    kernel = probe.take_log(variable)
    results, kernel = results[1:], kernel[1:]
    good = [r for r in results if r is not None]
    rows = []
    for j, move in enumerate(results):
        if move is None:
            continue
        rows.append((move, kernel[j] if j < len(kernel) else None))
    totals = [m["total"] for m, _ in rows]
    segments = defaultdict(list)
    for move, k in rows:
        for name, ms in breakdown(move, k).items():
            segments[name].append(ms)
        segments["page CPU"].append(move["page_cpu"])
        if k:
            segments["kernel CPU"].append(1e3 * (k.get("compute_cpu_s", 0)
                                                 + k.get("apply_cpu_s", 0)))
    calls = Counter()
    for m in good:
        calls.update(m["plotly_calls"])
    return {"variable": variable, "panel": panel, "control": control.name,
            "path": path,
            "ahead": sum(m["from_lookahead"] for m in good) / max(1, len(good)),
            "moves": len(results), "measured": len(totals), "updates": len(kernel),
            "median": statistics.median(totals) if totals else float("nan"),
            "p95": percentile(totals, 0.95) if totals else float("nan"),
            "segments": {k: statistics.median(v) for k, v in segments.items()},
            "messages_in": statistics.median(m["messages_in"] for m in good) if good else 0,
            "windows": [(m["t_in"], m["t_end"]) for m in good],
            "plotly_calls": {k: v / max(1, len(good)) for k, v in calls.items()}}


PATHS = ("lookahead", "kernel", "jump", "drag-off", "drag")


def bench_latency(browser, lab, notebooks, moves: int, profile: bool,
                  paths=PATHS) -> list[dict]:
    """Each explorer's steps with the page's lookahead (as a reader gets them), with it
    switched off (every step through the kernel), then jumps of five steps (half as many),
    then a pointer drag there and back (printed in a table of its own, at the end)."""
    results, drags = [], []
    for notebook in notebooks:
        page = new_page(browser)
        try:
            run_notebook(page, lab, notebook)
            probe = KernelProbe(lab.env["JUPYTER_RUNTIME_DIR"], kernel_id_for(lab, notebook))
            try:
                shown = probe.instrument()
                cdp = page.context.new_cdp_session(page)
                cdp.send("Performance.enable")
                for index, variable in explorer_cells(lab, notebook):
                    if variable not in shown:
                        continue
                    for path in paths:
                        if profile:  # one profile per row: its moves' windows select samples
                            cdp.send("Profiler.enable")
                            cdp.send("Profiler.setSamplingInterval", {"interval": 200})
                            cdp.send("Profiler.start")
                            page_t0 = page.evaluate(CLOCK_MARK_JS)
                        try:
                            if path.startswith("drag"):
                                r = bench_drag(page, cdp, lab, probe, index, variable,
                                               shown[variable], path)
                            else:
                                r = bench_explorer(page, cdp, lab, probe, index, variable,
                                                   shown[variable],
                                                   moves // 2 if path == "jump" else moves,
                                                   path)
                        except Exception as exc:  # e.g. a figure that never rendered: say so
                            r = {"variable": variable, "panel": shown[variable],
                                 "error": f"{type(exc).__name__}: {str(exc).splitlines()[0]}"}
                        r["notebook"] = Path(notebook).stem
                        if profile:
                            r["profile"] = summarise_profile(
                                cdp.send("Profiler.stop")["profile"], r.get("windows", []),
                                page_t0)
                            cdp.send("Profiler.disable")
                        results.append(r)
                        if path.startswith("drag"):
                            drags.append(r)
                        else:
                            print_row(r)
                            print_profile(r)
            finally:
                probe.close()
        finally:
            lab.shutdown_notebook(notebook)
            page.close()
    if drags:
        print(f"\n  pointer drag across the slider, {DRAG_S:.0f} s end to end and back, "
              f"{DRAG_HZ} moves/s: lag from each pointer move that changes the value to the "
              "first frame showing its figure and readout (ms; or a value reached after it: "
              "'exact' is the share that showed the move's own value), the value's changes "
              "per second ('val/s', what the hand asked for: a slider with few stops changes "
              "less often) and the figure's updates per second, the longest the value stood "
              "still and the largest gap between two figure updates (ms), the figure at the "
              "end is the "
              "handle's ('end'), the kernel's updates, page main-thread CPU ms per s",
              flush=True)
        print_drag_header()
        for r in drags:
            print_drag_row(r)
            print_profile(r)
    return results


# a named busy loop: its first sample in the profile ties the profile's clock to the page's
CLOCK_MARK_JS = """() => { const mark = function __probeClockMark() {
    const t = performance.now(); while (performance.now() - t < 20) {} return t; };
    return mark(); }"""


def summarise_profile(profile: dict, windows, page_t_mark: float, top: int = 14):
    """Self time per move (ms) by script and by function, largest first, from a CDP CPU
    profile, counting only samples inside the moves' [keydown, repaint] windows."""
    nodes = {n["id"]: n for n in profile["nodes"]}
    times, t = [], profile["startTime"]
    for dt in profile["timeDeltas"]:
        t += dt
        times.append(t)
    mark = next((ts for node_id, ts in zip(profile["samples"], times)
                 if nodes[node_id]["callFrame"].get("functionName") == "__probeClockMark"),
                None)
    offset_us = (mark if mark is not None else profile["startTime"]) - page_t_mark * 1e3
    spans = [((a * 1e3) + offset_us, (b * 1e3) + offset_us) for a, b in windows]
    by_function: Counter = Counter()
    by_script: Counter = Counter()
    for node_id, t, dt in zip(profile["samples"], times, profile["timeDeltas"]):
        if not any(a <= t <= b for a, b in spans):
            continue
        frame = nodes[node_id]["callFrame"]
        url = frame.get("url", "")
        script = url.rsplit("/", 1)[-1].split("?")[0][:36] or frame.get("functionName")
        name = frame.get("functionName") or "(anonymous)"
        by_function[f"{name} [{script}:{frame.get('lineNumber', 0) + 1}]"] += dt
        by_script[script] += dt
    n = max(1, len(windows))
    return {"by_script": [(k, v / 1e3 / n) for k, v in by_script.most_common(top)],
            "by_function": [(k, v / 1e3 / n) for k, v in by_function.most_common(top)]}


SEGMENTS = ("slider", "compute", "apply", "transport", "front end", "render")
CPU = ("kernel CPU", "page CPU")


def print_header() -> None:
    print(f"  {'explorer':40s} {'path':>9s} {'moves':>5s} {'median':>7s} {'p95':>7s} "
          f"{'ahead':>6s}  "
          + " ".join(f"{s:>9s}" for s in SEGMENTS) + " |" + " ".join(f"{s:>10s}" for s in CPU)
          + "   msgs  plotly calls / move", flush=True)


def print_row(r: dict) -> None:
    if "error" in r:
        print(f"  {r['notebook']}:{r['variable']:30s} FAILED: {r['error'][:150]}", flush=True)
        return
    name = f"{r['notebook']}:{r['variable']} ({r['control']})"
    flag = ("" if r["path"] != "lookahead" or r["median"] < 50 and r["p95"] < 80
            else "  <-- over 50/80 ms")
    segs = (" ".join(f"{r['segments'].get(s, float('nan')):9.1f}" for s in SEGMENTS) + " |"
            + " ".join(f"{r['segments'].get(s, float('nan')):10.1f}" for s in CPU))
    calls = ", ".join(f"{k} {v:.1f}" for k, v in sorted(r["plotly_calls"].items()))
    print(f"  {name[:40]:40s} {r['path']:>9s} {r['measured']:5d} {r['median']:7.1f} "
          f"{r['p95']:7.1f} {100 * r['ahead']:5.0f}%  {segs}"
          f"   {r['messages_in']:4.0f}  {calls}{flag}", flush=True)


def print_profile(r: dict) -> None:
    for kind, rows in r.get("profile", {}).items():
        print(f"      page CPU per move {kind.replace('_', ' ')}:")
        for what, ms in rows:
            print(f"      {ms:8.2f} ms  {what}")


# --- a pointer drag ----------------------------------------------------------------------------

DRAG_S = 2.0     # one way, end to end (then as long back)
DRAG_HZ = 60     # pointer moves per second, as a mouse reports them
# every pointer move, after the slider has handled it (a listener on window sees the event
# last): its time stamp and the value the slider's readout then shows. ipywidgets' slider
# (noUiSlider) moves on the mouse events, which Chromium dispatches after the pointer events
# of the same move: a pointermove listener would read the value of the move before.
POINTER_EVENTS = "['mousedown', 'mousemove', 'mouseup']"
POINTER_JS = """slider => { window.__drag = [];
    const readout = slider.querySelector('.widget-readout');
    window.__dragListener = e => window.__drag.push(
        {t: e.timeStamp, type: e.type, value: readout.textContent});
    for (const type of %s)
        window.addEventListener(type, window.__dragListener); }""" % POINTER_EVENTS
POINTER_OFF_JS = """() => { for (const type of %s)
    window.removeEventListener(type, window.__dragListener); return window.__drag; }""" % POINTER_EVENTS
# what the kernel computes for each value the hand passed: readout HTML and rounded traces
EXPECTED_CODE = r'''
def __probe_expected(variable, name, values):
    import json
    from companion import display
    panel = get_ipython().user_ns[variable]
    out = []
    for value in values:
        view = type(panel).compute(panel, **{**panel.params, name: value})
        # the readout as the page shows it: the view's text and the figure's notes
        out.append([panel.readout_html(view), display.round_floats(view.traces)])
    return json.dumps(out)
'''
SIGNATURE_KEYS = ("type", "x", "y", "text", "base", "width", "name")  # page_probe.js signature()


def _value(control, text: str):
    text = text.strip().replace(",", "")
    return int(float(text)) if control.kind == "int" else float(text)


def drag_once(page, cdp, root, slider, control) -> dict:
    """Drag the handle from the left end of the track to the right end in DRAG_S, then back,
    with DRAG_HZ pointer moves a second; returns the page's pointer events, frames and CPU."""
    H.scroll_to_still(slider)
    track = slider.locator(".noUi-target").bounding_box()
    handle = slider.locator(".noUi-handle").bounding_box()
    y = handle["y"] + handle["height"] / 2
    left, right = track["x"], track["x"] + track["width"]
    page.evaluate(POINTER_JS, slider.element_handle())
    root.evaluate("r => window.__probe.watch(r, 60000, true)")
    cpu = thread_time(cdp)
    page.mouse.move(handle["x"] + handle["width"] / 2, y)
    page.mouse.down()
    t0, move_s = time.perf_counter(), []
    while True:  # positions follow the clock: a move that the page holds up is not made up
        elapsed = time.perf_counter() - t0
        if elapsed >= 2 * DRAG_S:
            break
        f = elapsed / DRAG_S if elapsed < DRAG_S else 2 - elapsed / DRAG_S
        t_move = time.perf_counter()
        page.mouse.move(left + f * (right - left), y)
        move_s.append(time.perf_counter() - t_move)
        time.sleep(max(0.0, (int(elapsed * DRAG_HZ) + 1) / DRAG_HZ - (time.perf_counter() - t0)))
    page.mouse.move(left, y)
    page.mouse.up()
    page.wait_for_function(SETTLED_JS, arg=600, timeout=60_000, polling=100)
    cpu = thread_time(cdp) - cpu
    pointer = page.evaluate(POINTER_OFF_JS)
    frames = page.evaluate("() => { window.__probe.unwatch(); return window.__probe.frames(); }")
    plotly = page.evaluate("t => window.__probe.plotly.filter(c => c.t >= t)", pointer[0]["t"])
    return {"pointer": pointer, "frames": frames, "plotly": plotly, "page_cpu_ms": 1e3 * cpu,
            "move_ms": 1e3 * statistics.median(move_s),
            "final": slider.locator(".widget-readout").inner_text()}


def _shown_state(sig: str) -> dict:
    text, data, _ = json.loads(sig)
    return {"text": text, "data": None if data is None else [
        {k: v for k, v in zip(SIGNATURE_KEYS, t)} for t in data]}


def _expected_states(probe, variable: str, name: str, values: list) -> dict:
    probe.evaluate(EXPECTED_CODE, "'null'")
    raw = probe.evaluate("", f"__probe_expected({variable!r}, {name!r}, {values!r})")
    out = {}
    for value, (text, traces) in zip(values, raw):
        out[value] = {"text": H.html_text(text), "data": [
            {k: H._decode(t[k]) for k in SIGNATURE_KEYS[1:] if k in t}
            | {"type": t.get("type", "scatter")} for t in traces]}
    return out


def analyse_drag(rec: dict, control, expected: dict) -> dict:
    """Per value-changing pointer event, the lag until a frame shows that value's figure and
    readout, or a value the hand reached after it (the page caught up past it); figure updates
    per second and the largest gap between two, over the drag."""
    events, last = [], None
    for e in rec["pointer"]:
        value = _value(control, e["value"])
        if value != last:
            events.append((e["t"], value))
            last = value
    by_text = defaultdict(list)
    for value, state in expected.items():
        by_text[state["text"]].append(value)

    def shows(sig):
        shown = _shown_state(sig)
        text = H.html_text(shown["text"] or "")
        for value in by_text.get(text, []):
            if shown["data"] is not None and not H.state_differences(shown, expected[value]):
                return value
        return None

    frames = [(f["t"], shows(f["sig"]), json.loads(f["sig"])[1]) for f in rec["frames"]]
    t_first, t_last = rec["pointer"][0]["t"], rec["pointer"][-1]["t"]
    lags, exact = [], 0
    for i, (t, value) in enumerate(events[1:], start=1):
        reached = set()
        lag = None
        j = i
        for t_f, shown, _ in frames:
            if t_f < t:
                continue
            while j < len(events) and events[j][0] <= t_f:
                reached.add(events[j][1])
                j += 1
            if shown is not None and (shown == value or shown in reached):
                lag = t_f - t
                exact += shown == value
                break
        lags.append(lag if lag is not None else frames[-1][0] - t if frames else float("nan"))
    # figure updates: frames whose figure data changed, inside the drag
    updates, previous = [], None
    for t_f, _, data in frames:
        if data != previous and t_first <= t_f <= t_last:
            updates.append(t_f)
        previous = data
    marks = [t_first] + updates + [t_last]
    duration_s = (t_last - t_first) / 1e3
    # what the hand asked for: value changes a second, and the longest the value stood still
    changes = [t_first] + [t for t, _ in events[1:]] + [t_last]
    final = _value(control, rec["final"])
    return {"events": len(lags), "median": statistics.median(lags) if lags else float("nan"),
            "p95": percentile(lags, 0.95) if lags else float("nan"),
            "exact": exact / max(1, len(lags)), "updates_per_s": len(updates) / duration_s,
            "max_gap": max(b - a for a, b in zip(marks, marks[1:])),
            "values_per_s": len(lags) / duration_s,
            "value_gap": max(b - a for a, b in zip(changes, changes[1:])),
            "duration_s": duration_s, "moves": len(rec["pointer"]),
            "end_ok": bool(frames) and frames[-1][1] == final, "final": final,
            "page_cpu_per_s": rec["page_cpu_ms"] / duration_s, "move_ms": rec["move_ms"],
            "plotly_calls": dict(Counter(c["name"] for c in rec["plotly"]))}


def bench_drag(page, cdp, lab, probe, cell_index: int, variable: str, panel: str,
               label: str = "drag") -> dict:
    """A pointer drag of the moved slider: from the left end of its track to the right end and
    back (DRAG_S each way), after a first drag to the left end that is not measured."""
    from companion import widgets

    cls = getattr(widgets, panel)
    control = next(c for c in cls.controls if c.name == MOVED[panel])
    root = page.locator(f"{H.ACTIVE} .jp-CodeCell").nth(cell_index).locator(".jp-OutputArea")
    root.scroll_into_view_if_needed()
    H.wait_figures_rendered(page, root, 1)
    slider = H.slider(root, control.label)
    H.drag(page, slider, 0.0)
    root.evaluate("r => window.__probe.watch(r)")
    page.wait_for_function(SETTLED_JS, arg=600, timeout=60_000, polling=100)
    probe.take_log(variable)
    # drag-off: the page-wide switch figure_widget.js reads (a drag is drawn as any other
    # update) and the panel's (its lookahead follows every move at once, as after a step)
    off = label == "drag-off"
    page.evaluate(f"() => {{ window.companionDrag = {str(not off).lower()}; }}")
    if off:
        probe.evaluate(f"{variable}.LOOKAHEAD_AFTER_JUMP_S = None", "'null'")
    try:
        rec = drag_once(page, cdp, root, slider, control)
    finally:
        page.evaluate("() => { delete window.companionDrag; }")
        if off:
            probe.evaluate(f"del {variable}.LOOKAHEAD_AFTER_JUMP_S", "'null'")
    kernel = probe.take_log(variable)
    values = sorted({_value(control, e["value"]) for e in rec["pointer"]}
                    | {_value(control, rec["final"])})
    r = analyse_drag(rec, control, _expected_states(probe, variable, control.name, values))
    r.update(variable=variable, panel=panel, control=control.name, path=label,
             kernel_updates=len(kernel), windows=[(rec["pointer"][0]["t"],
                                                   rec["pointer"][-1]["t"])])
    return r


def print_drag_header() -> None:
    print(f"  {'explorer':40s} {'path':>9s} {'moves':>5s} {'values':>6s} {'lag med':>7s} "
          f"{'p95':>7s} {'exact':>6s} {'val/s':>6s} {'upd/s':>6s} {'val gap':>7s} "
          f"{'max gap':>7s} {'end':>4s} "
          f"{'kernel':>6s} {'page CPU':>8s} {'move':>6s}  plotly calls", flush=True)


def on_target(r: dict) -> bool:
    """Issue 26's targets: lag median under 33 ms and p95 under 50 ms, the figure at the end
    the handle's, and at least 30 figure updates a second, or (a slider with fewer stops than a
    drag passes 30 of a second) as many as the hand changed the value, give or take the frame
    that shows two changes at once (10%)."""
    return (r["median"] < 33 and r["p95"] < 50 and r["end_ok"]
            and r["updates_per_s"] >= 0.9 * min(30.0, r["values_per_s"]))


def print_drag_row(r: dict) -> None:
    if "error" in r:
        print(f"  {r['notebook']}:{r['variable']:30s} FAILED: {r['error'][:150]}", flush=True)
        return
    name = f"{r['notebook']}:{r['variable']} ({r['control']})"
    flag = ("" if on_target(r) else "  <-- off target (33/50 ms; 30/s, or every value)")
    calls = ", ".join(f"{k} {v}" for k, v in sorted(r["plotly_calls"].items()))
    print(f"  {name[:40]:40s} {r['path']:>9s} {r['moves']:5d} {r['events']:6d} "
          f"{r['median']:7.1f} {r['p95']:7.1f} {100 * r['exact']:5.0f}% "
          f"{r['values_per_s']:6.1f} {r['updates_per_s']:6.1f} {r['value_gap']:7.0f} "
          f"{r['max_gap']:7.0f} {'ok' if r['end_ok'] else 'NO':>4s} "
          f"{r['kernel_updates']:6d} {r['page_cpu_per_s']:6.0f}/s {r['move_ms']:6.1f}  "
          f"{calls}{flag}", flush=True)


# --- opening a notebook ------------------------------------------------------------------------

LIVE_FIGURE = ".jp-CodeCell .js-plotly-plot:not(.jp-RenderedPlotly) .main-svg"
FIRST_EXPLORER_JS = """sel => { window.__firstExplorer = null;
    const look = () => { if (document.querySelector(sel)) window.__firstExplorer = performance.now();
                         else requestAnimationFrame(look); };
    requestAnimationFrame(look); }"""


def bench_open(browser, lab, notebooks) -> list[dict]:
    rows = []
    for notebook in notebooks:
        page = new_page(browser)
        row = {"notebook": notebook}
        try:
            t0 = time.perf_counter()
            page.goto(lab.notebook_url(notebook))
            page.wait_for_selector(f"{H.ACTIVE} .jp-Cell", state="attached")
            first = page.locator(", ".join(f"{H.ACTIVE} {s}" for s in STORED_FIGURE)).first
            try:
                first.wait_for(state="attached", timeout=60_000)
                row["open_to_first_figure"] = time.perf_counter() - t0
            except Exception:
                row["open_to_first_figure"] = None  # the notebook stores no figure
            H.wait_kernel_ready(page)
            n_code = lab.code_cell_count(notebook)
            page.wait_for_function("([sel, n]) => document.querySelectorAll(sel).length === n",
                                   arg=[f"{H.ACTIVE} .jp-CodeCell", n_code])
            explorers = explorer_cells(lab, notebook)
            H._menu(page, "Edit", "Clear Outputs of All Cells")
            page.wait_for_function(H.NO_PROMPT_NUMBERED, arg=H.PROMPTS, timeout=30_000)
            # timed inside the page, from the pointerdown on "Run All Cells" (the probe records
            # it) to the first animation frame with a live explorer's figure drawn: the
            # harness's own menu navigation and polling round trips are not the reader's wait
            page.evaluate(FIRST_EXPLORER_JS, f"{H.ACTIVE} {LIVE_FIGURE}")
            t_before = page.evaluate("() => performance.now()")
            H._menu(page, "Run", "Run All Cells")
            t_click = page.evaluate("""t => Math.max(...window.__probe.inputs
                .filter(i => i.type === 'pointerdown' && i.t >= t).map(i => i.t))""", t_before)
            if explorers:
                index = explorers[0][0]
                cell = page.locator(f"{H.ACTIVE} .jp-CodeCell").nth(index)
                prompt = cell.locator(".jp-InputArea-prompt")
                # follow the run like a reader: show the explorer's cell once it has run
                page.wait_for_function("el => /\\[\\d+\\]/.test(el.textContent)",
                                       arg=prompt.element_handle(), polling=50)
                cell.scroll_into_view_if_needed()
                page.wait_for_function("() => window.__firstExplorer !== null", polling=100)
                row["run_all_to_first_explorer"] = (
                    page.evaluate("() => window.__firstExplorer") - t_click) / 1e3
            page.wait_for_function(H.ALL_DONE_OR_ERROR,
                                   arg=[H.PROMPTS, f"{H.ACTIVE} {H.ERROR_OUTPUT}", n_code],
                                   timeout=240_000, polling=50)
            row["run_all_done"] = (page.evaluate("() => performance.now()") - t_click) / 1e3
            row["cells"] = n_code
        except Exception as exc:  # report and go on with the next notebook
            row["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:120]}"
        finally:
            lab.shutdown_notebook(notebook)
            page.close()
        print_open_row(row)
        rows.append(row)
    return rows


def print_open_row(row: dict) -> None:
    def s(key):
        v = row.get(key)
        return f"{v:8.2f}" if isinstance(v, float) else f"{'-':>8s}"

    note = f"  {row['error']}" if "error" in row else ""
    flag = ("  <-- over 5 s" if isinstance(row.get("run_all_to_first_explorer"), float)
            and row["run_all_to_first_explorer"] > 5 else "")
    print(f"  {row['notebook'].replace('notebooks/', ''):58s} {s('open_to_first_figure')} "
          f"{s('run_all_to_first_explorer')} {s('run_all_done')}{flag}{note}", flush=True)


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    # no choices= here: Python 3.11's argparse checks a list default against them and refuses
    # an empty command line (bpo-9625), so the sections are checked below
    parser.add_argument("sections", nargs="*", help="latency, open (default: both)")
    parser.add_argument("--moves", type=int, default=24)
    parser.add_argument("--profile", action="store_true",
                        help="sample the page's JavaScript while moving and print the top")
    parser.add_argument("--notebooks", help="comma-separated notebooks (default: per section)")
    parser.add_argument("--json", help="write the results to this file")
    parser.add_argument("--paths", default=",".join(PATHS),
                        help=f"latency rows to run per explorer (default: {','.join(PATHS)})")
    args = parser.parse_args(argv)
    args.sections = args.sections or ["latency", "open"]
    unknown = sorted(set(args.sections) - {"latency", "open"})
    if unknown:
        parser.error(f"sections: unknown {unknown}; choose from latency, open")
    return args


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    missing = H.playwright_missing() or (None if H.find_chromium() else "no Chromium found")
    if missing:
        print(f"  (skipped: {missing})")
        return 0
    from playwright.sync_api import sync_playwright

    chosen = args.notebooks.split(",") if args.notebooks else None
    out = {"load_average_before": os.getloadavg()}
    t_start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bench-browser-") as state:
        lab = H.LabServer(Path(state))
        lab.start()
        try:
            with sync_playwright() as p:
                browser = H.launch_browser(p, H.find_chromium())
                try:
                    if "latency" in args.sections:
                        print(f"  slider step -> repainted explorer, ms (median of {args.moves} "
                              "moves; segments are medians)", flush=True)
                        print_header()
                        out["latency"] = bench_latency(browser, lab, chosen or LATENCY_NOTEBOOKS,
                                                       args.moves, args.profile,
                                                       tuple(args.paths.split(",")))
                    if "open" in args.sections:
                        print(f"\n  {'opening a notebook, s':58s} {'1st fig':>8s} "
                              f"{'explorer':>8s} {'all done':>8s}", flush=True)
                        print("  (open -> first stored figure; Run All -> first live "
                              "explorer; Run All -> done)")
                        out["open"] = bench_open(browser, lab, chosen or OPEN_NOTEBOOKS)
                finally:
                    browser.close()
        finally:
            lab.stop()
    out["load_average_after"] = os.getloadavg()
    out["seconds"] = time.perf_counter() - t_start
    print(f"\n  load average before {out['load_average_before'][0]:.2f}, after "
          f"{out['load_average_after'][0]:.2f} (1 min); took {out['seconds']:.0f} s")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
