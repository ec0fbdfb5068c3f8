"""Figures of 8.6 (serving under load): admission against the deadline, Little's law,
effective vs completion throughput against the arrival rate, the comprehensive example's
schemes on the memory x deadline plane (Figure 8-35) and as time bars, Amdahl over task
stages (Figure 8-36), and energy per qualifying result.

Builders take results computed by ``companion.calc`` / ``companion.sim`` and return plotly
figures; the ``*_traces`` helpers return plain trace dicts and the ``*_LAYOUT`` constants the
data-independent layouts that the explorers in ``companion.explorers.ch08_serving`` reuse, so a
slider move only replaces trace data. Deterministic: fixed colours, no timestamps.
"""

from __future__ import annotations

import math

from companion import units
from companion.explorers.common import titled_figure as _fig

__all__ = [
    "admission_figure", "littles_law_figure", "goodput_figure", "scheme_plane_figure",
    "scheme_time_figure", "amdahl_figure", "energy_per_result_figure",
]

SCHEME_COLORS = {"A": "#d55e00", "B": "#0072b2", "C": "#cc79a7", "D": "#009e73",
                 "E": "#e69f00"}
CURVE_COLORS = ("#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9")
LIMIT_COLOR = "#444444"
OK_FILL = "rgba(0, 158, 115, 0.10)"


def _finite(x: float, cap: float) -> float:
    return x if math.isfinite(x) else cap


# --- 8.6.1: admission by deadline ----------------------------------------------------------------

ADMISSION_LAYOUT = {
    "height": 440,
    "xaxis": {"title": {"text": "time already spent queueing (s)"}, "anchor": "y"},
    "yaxis": {"title": {"text": "finish time after arrival (s)"}, "domain": [0.32, 1.0]},
    "xaxis2": {"title": {"text": "time after arrival (s): queue | prefill | generation"},
               "anchor": "y2", "rangemode": "tozero"},
    "yaxis2": {"domain": [0.0, 0.12], "showticklabels": False, "range": [-0.6, 0.6],
               "zeroline": False, "showgrid": False},
    "legend": {"orientation": "h", "y": -0.3}}


def admission_traces(queue_s, finish_s, deadline_s: float, current=None, phases=None) -> list:
    """Finish time against time already spent queueing, the deadline and this request.

    ``queue_s``/``finish_s``: the line (from ``calc.lifecycle_request_time_s``); ``current``:
    (queue s, finish s); ``phases``: (queue, prefill, generation) seconds drawn as a bar under
    the plot, with the deadline. Lay out with ``ADMISSION_LAYOUT``.
    """
    qs, fs = list(queue_s), list(finish_s)
    traces = [
        {"type": "scatter", "mode": "lines", "x": qs, "y": fs,
         "name": "finish time = queue + prefill + (G - 1) x interval",
         "line": {"color": "#0072b2", "width": 3}},
        {"type": "scatter", "mode": "lines", "x": [qs[0], qs[-1]], "y": [deadline_s] * 2,
         "name": f"deadline ({deadline_s:g} s)", "line": {"color": LIMIT_COLOR, "dash": "dash"}},
    ]
    if current is not None:
        ok = current[1] <= deadline_s
        traces.append({"type": "scatter", "mode": "markers", "x": [current[0]],
                       "y": [current[1]], "name": "admit" if ok else "reject (would be late)",
                       "marker": {"size": 14, "symbol": "circle" if ok else "x",
                                  "color": "#009e73" if ok else "#d55e00"}})
    if phases is not None:
        # one bar trace, its three segments placed end to end with ``base``
        starts = [0.0, phases[0], phases[0] + phases[1]]
        traces.append({"type": "bar", "orientation": "h", "x": list(phases), "base": starts,
                       "y": [0, 0, 0], "width": 0.8, "xaxis": "x2", "yaxis": "y2",
                       "name": "queue | prefill + first token | remaining G - 1 tokens",
                       "marker": {"color": ["#bbbbbb", "#e69f00", "#0072b2"]},
                       "text": ["queue", "prefill", "generation"], "textposition": "inside",
                       "showlegend": False})
        traces.append({"type": "scatter", "mode": "lines", "x": [deadline_s, deadline_s],
                       "y": [-0.6, 0.6], "xaxis": "x2", "yaxis": "y2", "showlegend": False,
                       "name": "deadline", "line": {"color": LIMIT_COLOR, "dash": "dash"}})
    return traces


def admission_figure(queue_s, finish_s, deadline_s: float, *, current, phases,
                     title: str = "Admission by deadline (8.6.1)"):
    """Finish time vs queueing time against the deadline, with one request's phases."""
    traces = admission_traces(queue_s, finish_s, deadline_s, current, phases)
    return _fig(traces, ADMISSION_LAYOUT, title)


def littles_law_figure(rates, curves, *, points=(),
                       title: str = "Little's law: requests in the system n = lambda T "
                                    "(8.6.1)"):
    """Mean requests in the system against the arrival rate, one line per residence time.

    ``curves``: {label: n over ``rates``}; ``points``: (rate, n, label) markers.
    """
    xs = list(rates)
    traces = [{"type": "scatter", "mode": "lines", "x": xs, "y": list(ys), "name": label,
               "line": {"color": CURVE_COLORS[i % 6], "width": 2.5}}
              for i, (label, ys) in enumerate(curves.items())]
    if points:
        traces.append({"type": "scatter", "mode": "markers+text",
                       "x": [p[0] for p in points], "y": [p[1] for p in points],
                       "text": [p[2] for p in points], "textposition": "top left",
                       "name": "the chapter's examples",
                       "marker": {"size": 11, "color": "black", "symbol": "diamond"}})
    layout = {"height": 400,
              "xaxis": {"title": {"text": "arrival rate lambda (requests/s)"}},
              "yaxis": {"title": {"text": "mean requests in the system n (requests)"},
                        "rangemode": "tozero"},
              "legend": {"orientation": "h", "y": -0.25}}
    return _fig(traces, layout, title)


# --- 8.6.2: effective vs completion throughput ------------------------------------------------------

def goodput_traces(rates, series, *, measured=None):
    """Throughput (req/s) against the arrival rate.

    ``series``: {label: (completion req/s, effective req/s) over ``rates``}, drawn solid
    (completion) and dashed (effective, correct and on time). ``measured``: {label: (rates,
    req/s)} drawn as markers only, labelled as measurements.
    """
    xs = list(rates)
    traces = []
    for i, (label, (done, good)) in enumerate(series.items()):
        c = CURVE_COLORS[i % 6]
        traces.append({"type": "scatter", "mode": "lines+markers", "x": xs, "y": list(done),
                       "name": f"{label}: completion throughput",
                       "line": {"color": c, "width": 2.5}})
        traces.append({"type": "scatter", "mode": "lines+markers", "x": xs, "y": list(good),
                       "name": f"{label}: effective throughput (correct and on time)",
                       "line": {"color": c, "width": 2.5, "dash": "dash"}})
    for i, (label, (mx, my)) in enumerate((measured or {}).items()):
        traces.append({"type": "scatter", "mode": "markers", "x": list(mx), "y": list(my),
                       "name": label, "marker": {"size": 12, "symbol": ("x", "cross")[i % 2],
                                                  "color": "black"}})
    layout = {"height": 440,
              "xaxis": {"title": {"text": "arrival rate (requests/s)"}, "type": "log"},
              "yaxis": {"title": {"text": "throughput (requests/s)"}, "rangemode": "tozero"},
              "legend": {"orientation": "h", "y": -0.25}}
    return traces, layout


def goodput_figure(rates, series, *, measured=None,
                   title: str = "Completion vs effective throughput against the arrival rate "
                                "(8.6.2), simulated"):
    """Completion and effective throughput against the arrival rate (simulated curves, with
    measured points where given)."""
    traces, layout = goodput_traces(rates, series, measured=measured)
    return _fig(traces, layout, title)


# --- Figure 8-35: the memory x deadline plane -------------------------------------------------------

SCHEME_PLANE_LAYOUT = {
    "height": 460,
    "xaxis": {"title": {"text": "time until the whole batch completes (s)"},
              "rangemode": "tozero"},
    "yaxis": {"title": {"text": "KV + auxiliary memory (GiB)"}, "rangemode": "tozero"},
    "legend": {"orientation": "h", "y": -0.25}}


def scheme_plane_traces(results, kv_budget_bytes: float, deadline_s: float) -> list:
    """Each scheme at (completion time s, memory GiB), the feasible rectangle and the limits
    (drawn past the farthest point, so autorange frames them). ``results``: {name:
    ``calc.SchemeResult``}. Lay out with ``SCHEME_PLANE_LAYOUT``.
    """
    rs = list(results.values())
    budget = kv_budget_bytes / units.GiB
    x_max = max([deadline_s] + [r.total_s for r in rs]) * 1.12
    y_max = max([budget] + [r.memory_gib for r in rs]) * 1.15
    traces = [
        {"type": "scatter", "mode": "lines", "x": [0, deadline_s, deadline_s, 0, 0],
         "y": [0, 0, budget, budget, 0], "fill": "toself", "fillcolor": OK_FILL,
         "line": {"width": 0}, "name": "fits and on time", "hoverinfo": "skip"},
        {"type": "scatter", "mode": "lines", "x": [0, x_max], "y": [budget, budget],
         "name": f"KV + auxiliary budget ({budget:g} GiB)",
         "line": {"color": LIMIT_COLOR, "dash": "dash"}},
        {"type": "scatter", "mode": "lines", "x": [deadline_s, deadline_s], "y": [0, y_max],
         "name": f"deadline ({deadline_s:g} s)", "line": {"color": LIMIT_COLOR, "dash": "dot"}},
        {"type": "scatter", "mode": "markers+text", "x": [r.total_s for r in rs],
         "y": [r.memory_gib for r in rs],
         "text": [f"{r.name} {'ok' if r.feasible else 'x'}" for r in rs],
         "textposition": "top right", "name": "schemes (completion time, memory)",
         "marker": {"size": 16, "color": [SCHEME_COLORS.get(r.name, "black") for r in rs],
                    "symbol": ["circle" if r.feasible else "x" for r in rs],
                    "line": {"width": 1, "color": "black"}},
         "hovertemplate": "%{text}: %{x:.2f} s, %{y:.2f} GiB<extra></extra>"},
    ]
    return traces


def scheme_plane_figure(results, kv_budget_bytes: float, deadline_s: float, *,
                        title: str = "Figure 8-35: schemes on the memory x deadline plane "
                                     "(8.6.3)"):
    """Figure 8-35: only a scheme inside both limits returns qualifying results."""
    traces = scheme_plane_traces(results, kv_budget_bytes, deadline_s)
    return _fig(traces, SCHEME_PLANE_LAYOUT, title)


def scheme_time_figure(results, deadline_s: float, *,
                       title: str = "Where each scheme's time goes: prefill and decode rounds "
                                    "(8.6.3)"):
    """Horizontal stacked bars of prefill and decode seconds per scheme, with the deadline."""
    rs = list(results.values())
    names = [r.name for r in rs]
    traces = [
        {"type": "bar", "orientation": "h", "y": names, "x": [r.prefill_s for r in rs],
         "name": "prefill (whole batch)", "marker": {"color": "#e69f00"}},
        {"type": "bar", "orientation": "h", "y": names, "x": [r.decode_s for r in rs],
         "name": "decode rounds", "marker": {"color": "#0072b2"},
         "text": [f"{r.rounds} x {r.round_ms:.2f} ms" for r in rs], "textposition": "inside"},
        {"type": "scatter", "mode": "lines", "x": [deadline_s, deadline_s],
         "y": [names[0], names[-1]], "name": f"deadline ({deadline_s:g} s)",
         "line": {"color": LIMIT_COLOR, "dash": "dash", "width": 3}},
    ]
    layout = {"height": 360, "barmode": "stack",
              "xaxis": {"title": {"text": "time until the whole batch completes (s)"}},
              "yaxis": {"title": {"text": "scheme"}, "autorange": "reversed"},
              "legend": {"orientation": "h", "y": -0.3}}
    return _fig(traces, layout, title)


# --- Figure 8-36: Amdahl over task stages ---------------------------------------------------------------

AMDAHL_LAYOUT = {
    "height": 420,
    "xaxis": {"title": {"text": "speedup s of the accelerated stage (x)"}, "type": "log"},
    "yaxis": {"title": {"text": "whole-task speedup (x)"}, "rangemode": "tozero"},
    "legend": {"orientation": "h", "y": -0.25}}


def amdahl_traces(factors, curves, *, current=None) -> list:
    """Whole-task speedup against the stage speedup s, one curve per decode fraction f.

    ``curves``: {label: speedup over ``factors``}; ``current``: (s, speedup, label) or None.
    """
    xs = list(factors)
    traces = [{"type": "scatter", "mode": "lines", "x": xs, "y": list(ys), "name": label,
               "line": {"color": CURVE_COLORS[i % 6], "width": 2.5}}
              for i, (label, ys) in enumerate(curves.items())]
    if current is not None:
        traces.append({"type": "scatter", "mode": "markers", "x": [current[0]],
                       "y": [current[1]], "name": current[2],
                       "marker": {"size": 13, "color": "black", "symbol": "circle"}})
    return traces


def amdahl_figure(factors, curves, *, current=None,
                  title: str = "Figure 8-36: task speedup vs stage speedup (8.6.3)"):
    """Figure 8-36: the lower the decode fraction f, the sooner the task speedup flattens
    towards 1 / (1 - f)."""
    traces = amdahl_traces(factors, curves, current=current)
    return _fig(traces, AMDAHL_LAYOUT, title)


# --- energy per qualifying result ---------------------------------------------------------------------

def energy_per_result_figure(measured, computed, *,
                             title: str = "Energy per qualifying result (8.6.3)"):
    """Bars of joules per qualifying result: ``measured`` {label: J} (the chapter's
    measurements) and ``computed`` {label: J} (companion bounds), in two colours."""
    traces = [
        {"type": "bar", "x": list(measured), "y": list(measured.values()),
         "name": "measured in Experiment 8-9 (GPU + CPU package)",
         "marker": {"color": "#999999"},
         "text": [f"{j:,.1f} J" for j in measured.values()], "textposition": "outside"},
        {"type": "bar", "x": list(computed), "y": [_finite(j, 0.0) for j in computed.values()],
         "name": "computed by the companion (card at its power cap)",
         "marker": {"color": "#009e73"},
         "text": [f"{j:,.0f} J" if math.isfinite(j) else "no qualifying result"
                  for j in computed.values()], "textposition": "outside"},
    ]
    # disjoint categories: stacking keeps each bar at full width
    layout = {"height": 420, "barmode": "stack",
              "xaxis": {"title": {"text": "configuration"}},
              "yaxis": {"title": {"text": "energy per qualifying result (J)"},
                        "rangemode": "tozero"},
              "legend": {"orientation": "h", "y": -0.3}}
    return _fig(traces, layout, title)
