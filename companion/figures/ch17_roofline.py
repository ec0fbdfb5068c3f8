"""Figures of Chapter 17 §2-§3: the roofline with decode, batched decode and prefill on it, a
request's time budget, and the head-of-line stall on a simulated timeline.

Builders take results computed by ``companion.calc`` (``roofline_point``, ``request_budget``) or
``companion.sim.scheduler`` (a ``Result``) and return plotly figures; the ``*_traces`` helpers
return plain trace/layout dicts that the explorers in ``companion.explorers.ch17_roofline`` draw
with, so the stored figure and the live one are the same picture. Deterministic: fixed colours,
fixed axis ranges, no timestamps.
"""

from __future__ import annotations

import math

from companion import validate as v
from companion import units
from companion.explorers.common import plotly_go as _go
from companion.formulas.core import ridge_point
from companion.specs import Hardware

__all__ = ["roofline_traces", "roofline_layout", "roofline_figure", "request_budget_traces", "hol_timeline_traces",
           "hol_timeline_layout", "hol_timeline_figure", "ROOFLINE_X_RANGE", "ROOFLINE_Y_RANGE"]

# log10 axis ranges, fixed so that the picture does not jump when a control moves:
# intensity 0.1 .. ~3e5 FLOP/byte, attainable 0.01 .. ~3,000 TFLOP/s
ROOFLINE_X_RANGE = (-1.0, 5.5)
ROOFLINE_Y_RANGE = (-2.0, 3.5)

ROOF_COLOR = "#222222"
REFERENCE_COLOR = "#b0b0b0"
RIDGE_COLOR = "#7f7f7f"
POINT_COLORS = ("#d55e00", "#cc79a7", "#0072b2", "#009e73", "#e69f00", "#56b4e9")
POINT_SYMBOLS = ("circle", "circle-open", "diamond", "square", "triangle-up", "x")
PHASE = {"prefill": "#e69f00", "decode": "#56b4e9", "stalled": "#d55e00", "token": "#0b3d91",
         "queued": "#b0b0b0"}


def _hw(hardware) -> Hardware:
    return v.instance("hardware", hardware, Hardware, "a companion.specs.Hardware")


def _roof_xy(hw: Hardware) -> tuple[list, list]:
    """Three points of min(peak, I x bandwidth) over the plotted range, in TFLOP/s."""
    lo, hi = 10.0 ** ROOFLINE_X_RANGE[0], 10.0 ** ROOFLINE_X_RANGE[1]
    ridge = ridge_point(hw)
    xs = [lo, ridge, hi]
    ys = [min(hw.peak_flops_per_s, x * hw.mem_bw_bytes_per_s) / units.TFLOP for x in xs]
    return xs, ys


def _point_label(p: dict) -> str:
    return (f"{p['label']}<br>{p['intensity_flop_per_byte']:,.3g} FLOP/B, "
            f"{100 * p['fraction_of_peak']:.3g}% of peak")


def roofline_layout(*, xaxis: str = "x", yaxis: str = "y") -> dict:
    """The roofline's axes: log-log, fixed ranges (``ROOFLINE_X_RANGE``, ``ROOFLINE_Y_RANGE``)."""
    return {
        xaxis.replace("x", "xaxis"): {
            "type": "log", "range": list(ROOFLINE_X_RANGE),
            "title": {"text": "arithmetic intensity (FLOP per byte moved from HBM)"}},
        yaxis.replace("y", "yaxis"): {
            "type": "log", "range": list(ROOFLINE_Y_RANGE),
            "title": {"text": "attainable throughput (TFLOP/s)"}},
        "legend": {"orientation": "h", "y": -0.2},
    }


def roofline_traces(hardware: Hardware, points, *, reference: Hardware | None = None,
                    xaxis: str = "x", yaxis: str = "y") -> list:
    """Trace dicts of the log-log roofline (17 §2) with workload points on it.

    ``points``: dicts as ``calc.roofline_point`` returns them plus a ``label`` (as in
    ``calc.roofline_points``). The roof is min(peak, intensity x bandwidth) in TFLOP/s; the
    ridge (peak / bandwidth) is a dotted vertical line; ``reference`` draws a second card's roof
    in grey (the chapter's H100 when another card is chosen; hidden when it is the same card).
    Always four traces: roof, reference roof, ridge, and the points (one trace, each point
    labelled with its intensity and share of peak). Lean on purpose: an explorer re-sends
    every property on each update.
    """
    hw = _hw(hardware)
    pts = [v.instance(f"points[{i}]", p, dict, "a dict from calc.roofline_point")
           for i, p in enumerate(v.sequence("points", points, min_len=0))]
    ref = hw if reference is None else _hw(reference)
    rx, ry = _roof_xy(hw)
    fx, fy = _roof_xy(ref)
    ridge = ridge_point(hw)
    peak_t = hw.peak_flops_per_s / units.TFLOP
    axes = {} if (xaxis, yaxis) == ("x", "y") else {"xaxis": xaxis, "yaxis": yaxis}
    n = len(pts)
    return [
        {"type": "scatter", "mode": "lines", "x": rx, "y": ry, "name": f"roof: {hw.name}",
         "line": {"color": ROOF_COLOR, "width": 3}, **axes},
        {"type": "scatter", "mode": "lines", "x": fx, "y": fy,
         "name": f"roof: {ref.name} (reference)",
         "visible": True if ref != hw else "legendonly",
         "line": {"color": REFERENCE_COLOR, "dash": "dash"}, **axes},
        {"type": "scatter", "mode": "lines+text", "x": [ridge, ridge],
         "y": [10.0 ** ROOFLINE_Y_RANGE[0], peak_t], "name": f"ridge = {ridge:,.0f} FLOP/B",
         "text": ["", f"ridge {ridge:,.0f}"], "line": {"color": RIDGE_COLOR, "dash": "dot"},
         **axes},
        {"type": "scatter", "mode": "markers+text", "name": "workloads",
         "x": [p["intensity_flop_per_byte"] for p in pts],
         "y": [p["attainable_flops_per_s"] / units.TFLOP for p in pts],
         "text": [_point_label(p) for p in pts],
         "textposition": [("bottom right", "top left")[i % 2] for i in range(n)],
         "marker": {"size": 13, "color": [POINT_COLORS[i % len(POINT_COLORS)] for i in range(n)],
                    "symbol": [POINT_SYMBOLS[i % len(POINT_SYMBOLS)] for i in range(n)]},
         **axes},
    ]


def roofline_figure(hardware: Hardware, points, *, reference: Hardware | None = None,
                    title: str = "Roofline (17 §2): decode starves the arithmetic units, "
                                 "prefill saturates them"):
    """The 17 §2 roofline as a plotly Figure: ``roofline_traces`` with a title."""
    traces = roofline_traces(hardware, points, reference=reference)
    layout = dict(roofline_layout(), height=520, template="plotly_white",
                  title={"text": title})
    return _go().Figure(data=traces, layout=layout)


# --- §3: a request's budget ------------------------------------------------------------------

def request_budget_traces(budget: dict, *, label: str = "one request", xaxis: str = "x",
                          yaxis: str = "y") -> list:
    """Stacked horizontal bar (ms) of ``calc.request_budget``: prefill (TTFT) then decode."""
    b = v.instance("budget", budget, dict, "a dict from calc.request_budget")
    ttft_ms, decode_ms = b["ttft_s"] / units.ms, b["decode_s"] / units.ms
    axes = {} if (xaxis, yaxis) == ("x", "y") else {"xaxis": xaxis, "yaxis": yaxis}
    common = {"type": "bar", "orientation": "h", "y": [label], "textposition": "inside", **axes}
    return [
        dict(common, base=[0.0], x=[ttft_ms], name="TTFT (prefill)",
             marker={"color": PHASE["prefill"]},
             text=[f"TTFT {ttft_ms:,.0f} ms ({100 * b['prefill_share']:.0f}%)"]),
        dict(common, base=[ttft_ms], x=[decode_ms], name="decode (output x ITL)",
             marker={"color": PHASE["decode"]},
             text=[f"decode {decode_ms:,.0f} ms ({100 * b['decode_share']:.0f}%)"]),
    ]


# --- §3: head-of-line blocking on a simulated timeline ---------------------------------------

def _stalled(duration_s: float, baseline_s: float) -> bool:
    return duration_s > 1.5 * baseline_s


_HOL_NAMES = {"queued": "waiting", "prefill": "prefill (whole prompt in one round)",
              "decode": "decode step", "stalled": "decode step stalled behind the prefill"}


def hol_timeline_layout() -> dict:
    """Axes of ``hol_timeline_traces``: time in ms, one category row per request."""
    return {"barmode": "overlay",
            "xaxis": {"title": {"text": "time (ms)"}, "rangemode": "tozero"},
            "yaxis": {"title": {"text": "request"}, "autorange": "reversed",
                      "type": "category"},
            "legend": {"orientation": "h", "y": -0.25}}


def hol_timeline_traces(result) -> list:
    """Gantt bars (ms) of a ``companion.sim.scheduler`` Result: one row per request, every
    prefill round and decode step; a decode step that a co-scheduled prefill stretched beyond
    1.5x the shortest step is drawn as a stall. Ticks mark emitted tokens (17 §3). Always five
    traces (waiting, prefill, decode, stalled decode, tokens).
    """
    from companion.sim.scheduler import Result

    res = v.instance("result", result, Result, "a companion.sim.scheduler.Result")
    rows = res.gantt_rows(merge_decode=False, include_queue=True)
    decode_durations = [e - s for _, s, e, k in rows if k == "decode"]
    baseline = min(decode_durations) if decode_durations else math.inf
    groups = {"queued": [], "prefill": [], "decode": [], "stalled": []}
    for rid, s, e, kind in rows:
        if kind == "decode" and _stalled(e - s, baseline):
            kind = "stalled"
        groups[kind].append((str(rid), s, e))
    traces = []
    for kind, seg in groups.items():
        traces.append({"type": "bar", "orientation": "h", "name": _HOL_NAMES[kind],
                       "y": [r for r, _, _ in seg], "base": [s / units.ms for _, s, _ in seg],
                       "x": [(e - s) / units.ms for _, s, e in seg],
                       "marker": {"color": PHASE[kind]}})
    tx, ty = [], []
    for rid in res.ids:
        times = res.token_times[rid]
        tx.extend(t / units.ms for t in times)
        ty.extend([str(rid)] * len(times))
    traces.append({"type": "scatter", "mode": "markers", "x": tx, "y": ty,
                   "name": "token emitted",
                   "marker": {"symbol": "line-ns-open", "size": 14, "color": PHASE["token"]}})
    return traces


def hol_timeline_figure(result, *, title: str = "Head-of-line blocking (17 §3): one long "
                                                "prompt freezes every in-flight decode"):
    """``hol_timeline_traces`` as a plotly Figure (label it as simulator output in the text)."""
    from companion.sim.scheduler import Result

    res = v.instance("result", result, Result, "a companion.sim.scheduler.Result")
    layout = dict(hol_timeline_layout(), height=160 + 32 * len(res.ids),
                  template="plotly_white", title={"text": title})
    return _go().Figure(data=hol_timeline_traces(res), layout=layout)
