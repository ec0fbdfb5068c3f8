"""8.6 explorers (notebook 08_6_load_and_configuration): serving under load.

``AdmissionPanel``: queue time, prefill/TTFT, output interval and output length against the
deadline (admit or reject, 8.6.1), with Little's law for the arrival rate.
``SchemePanel``: the comprehensive example's schemes A-D as a live table and on the memory x
deadline plane (Figure 8-35), with sliders for the KV budget, output length, deadline, D's
tokens per round and shared prefix. Scheme E is left out: Exercise 8-9 asks for it.
``AmdahlPanel``: the decode fraction, its speedup and an added preparation time -> whole-task
speedup (Figure 8-36, Exercise 8-8's setting).

Figures (from the former figures module):

Figures of 8.6 (serving under load): admission against the deadline, Little's law,
effective vs completion throughput against the arrival rate, the comprehensive example's
schemes on the memory x deadline plane (Figure 8-35) and as time bars, Amdahl over task
stages (Figure 8-36), and energy per qualifying result.

Builders take results computed by ``companion.calc`` / ``companion.sim`` and return plotly
figures; the ``*_traces`` helpers return plain trace dicts and the ``*_LAYOUT`` constants the
data-independent layouts that this module's explorers reuse, so a slider move only replaces
trace data. Deterministic: fixed colours, no timestamps.
"""

from __future__ import annotations

import math

import numpy as np

from companion import calc, theme, units
from companion.chapters import ch08
from companion.explorers.base import Control, Panel, View
from companion.explorers.common import titled_figure as _fig
from companion.formulas import serving as sv
from companion.formulas.limits_serving import scheme_result_slowest
from companion.formulas.serving import chapter_schemes
from companion.serves import serves

__all__ = [
    "littles_law_figure", "goodput_figure", "scheme_plane_figure",
    "scheme_time_figure", "amdahl_figure", "energy_per_result_figure", "AdmissionPanel",
    "SchemePanel", "AmdahlPanel", "SCHEME_SETS", "AMDAHL_FRACTIONS",
]

# the section this module serves (the notebook of its name): every @serves mark here is
# within it (tests/test_sections.py)
SECTION = "8.6"


SCHEME_COLORS = {"A": theme.VERMILLION, "B": theme.BLUE, "C": theme.PINK, "D": theme.GREEN,
                 "E": theme.ORANGE}
LIMIT_COLOR = theme.DARK_GREY
OK_FILL = theme.rgba(theme.GREEN, 0.10)


def _finite(x: float, cap: float) -> float:
    return x if math.isfinite(x) else cap


# --- 8.6.1: admission by deadline ----------------------------------------------------------------

_ARRIVALS = {"no (this request alone, 8.6.1)": "alone",
             "evenly spaced (D/D/1)": "even",
             "at random, Poisson (M/D/1)": "poisson"}

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
         "line": {"color": theme.BLUE, "width": 3}},
        {"type": "scatter", "mode": "lines", "x": [qs[0], qs[-1]], "y": [deadline_s] * 2,
         "name": f"deadline ({deadline_s:g} s)", "line": {"color": LIMIT_COLOR, "dash": "dash"}},
    ]
    if current is not None:
        ok = current[1] <= deadline_s
        traces.append({"type": "scatter", "mode": "markers", "x": [current[0]],
                       "y": [current[1]], "name": "admit" if ok else "reject (would be late)",
                       "marker": {"size": 14, "symbol": "circle" if ok else "x",
                                  "color": theme.GREEN if ok else theme.VERMILLION}})
    if phases is not None:
        # one bar trace, its three segments placed end to end with ``base``
        starts = [0.0, phases[0], phases[0] + phases[1]]
        traces.append({"type": "bar", "orientation": "h", "x": list(phases), "base": starts,
                       "y": [0, 0, 0], "width": 0.8, "xaxis": "x2", "yaxis": "y2",
                       "name": "queue | prefill + first token | remaining G - 1 tokens",
                       "marker": {"color": [theme.LIGHT_GREY, theme.ORANGE, theme.BLUE]},
                       "text": ["queue", "prefill", "generation"], "textposition": "inside",
                       "showlegend": False})
        traces.append({"type": "scatter", "mode": "lines", "x": [deadline_s, deadline_s],
                       "y": [-0.6, 0.6], "xaxis": "x2", "yaxis": "y2", "showlegend": False,
                       "name": "deadline", "line": {"color": LIMIT_COLOR, "dash": "dash"}})
    return traces


@serves("8.6.1")
def littles_law_figure(rates, curves, *, points=(),
                       title: str = "Little's law: requests in the system n = lambda T "
                                    "(8.6.1)"):
    """Mean requests in the system against the arrival rate, one line per residence time.

    ``curves``: {label: n over ``rates``}; ``points``: (rate, n, label) markers.
    """
    xs = list(rates)
    traces = [{"type": "scatter", "mode": "lines", "x": xs, "y": list(ys), "name": label,
               "line": {"color": theme.PALETTE[i % 6], "dash": theme.DASHES[i % 6],
                        "width": 2.5}}
              for i, (label, ys) in enumerate(curves.items())]
    if points:
        traces.append({"type": "scatter", "mode": "markers+text",
                       "x": [p[0] for p in points], "y": [p[1] for p in points],
                       "text": [p[2] for p in points], "textposition": "top left",
                       "name": "the chapter's examples",
                       "marker": {"size": 11, "color": theme.INK, "symbol": "diamond"}})
    layout = {"height": 400,
              "xaxis": {"title": {"text": "arrival rate lambda (requests/s)"}},
              "yaxis": {"title": {"text": "mean requests in the system n (requests)"},
                        "rangemode": "tozero"},
              "legend": {"orientation": "h", "y": -0.25}}
    return _fig(traces, layout, title)


@serves("8.6.1")
def queueing_figure(loads, curves, *, points=None,
                    title: str = "Requests on time at one server: even vs random arrivals "
                                 "(8.6.1)"):
    """Share of requests within their queueing slack against the server's load rho.

    ``curves``: {label: share in % over ``loads``}, one line each (the first solid, the others
    dashed); ``points``: {label: (loads, shares)} drawn as markers (a simulation).
    """
    xs = list(loads)
    traces = [{"type": "scatter", "mode": "lines", "x": xs, "y": list(ys), "name": label,
               "line": {"color": theme.PALETTE[i % 6], "width": 2.5,
                        "dash": theme.DASHES[i % 6]}}
              for i, (label, ys) in enumerate(curves.items())]
    for i, (label, (px, py)) in enumerate((points or {}).items()):
        traces.append({"type": "scatter", "mode": "markers", "x": list(px), "y": list(py),
                       "name": label, "marker": {"size": 10, "color": theme.INK,
                                                  "symbol": ("circle-open", "x")[i % 2]}})
    layout = {"height": 420,
              "xaxis": {"title": {"text": "load rho = arrival rate x service time"},
                        "range": [0, 1]},
              "yaxis": {"title": {"text": "requests that wait no longer than the slack (%)"},
                        "range": [0, 105]},
              "legend": {"orientation": "h", "y": -0.25}}
    return _fig(traces, layout, title)


@serves("8.6.3")
def batch_rounds_figure(curves, *, marks=(),
                        title: str = "Rounds until a speculative batch is done (8.6.3)"):
    """P(done within r rounds) against r: ``curves`` {label: (rounds, probabilities)}, and
    ``marks`` (label, rounds) drawn as vertical reference lines (each a legend entry)."""
    traces = [{"type": "scatter", "mode": "lines", "x": list(rx), "y": [100 * p for p in py],
               "name": label, "line": {"color": theme.PALETTE[i % 6], "width": 2.5,
                                       # "dot" and "dash" are the marks' lines
                                       "dash": ("solid", "longdash", "dashdot",
                                                "longdashdot")[i % 4],
                                       "shape": "hv"}}
              for i, (label, (rx, py)) in enumerate(curves.items())]
    for j, (label, r) in enumerate(marks):
        traces.append({"type": "scatter", "mode": "lines", "x": [r, r], "y": [0, 100],
                       "name": label, "line": {"color": (theme.INK, theme.GREY)[j % 2],
                                               "dash": ("dot", "dash")[j % 2]}})
    layout = {"height": 420,
              "xaxis": {"title": {"text": "decode rounds after the first token"}},
              "yaxis": {"title": {"text": "done within that many rounds (%)"},
                        "range": [0, 105]},
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
        c = theme.PALETTE[i % 6]
        # the marker tells the series apart, the dash completion from effective
        mark = {"color": c, "symbol": theme.SYMBOLS[i % len(theme.SYMBOLS)], "size": 8}
        traces.append({"type": "scatter", "mode": "lines+markers", "x": xs, "y": list(done),
                       "name": f"{label}: completion throughput",
                       "line": {"color": c, "width": 2.5}, "marker": mark})
        traces.append({"type": "scatter", "mode": "lines+markers", "x": xs, "y": list(good),
                       "name": f"{label}: effective throughput (correct and on time)",
                       "line": {"color": c, "width": 2.5, "dash": "dash"}, "marker": mark})
    for i, (label, (mx, my)) in enumerate((measured or {}).items()):
        traces.append({"type": "scatter", "mode": "markers", "x": list(mx), "y": list(my),
                       "name": label, "marker": {"size": 12, "symbol": ("x", "cross")[i % 2],
                                                  "color": theme.INK}})
    layout = {"height": 440,
              "xaxis": {"title": {"text": "arrival rate (requests/s)"}, "type": "log"},
              "yaxis": {"title": {"text": "throughput (requests/s)"}, "rangemode": "tozero"},
              "legend": {"orientation": "h", "y": -0.25}}
    return traces, layout


@serves("8.6.2")
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
    ]
    # each scheme its own trace whose legend entry carries its label (colour per scheme, a
    # circle if it qualifies, an x if not): schemes may land on one another at some setting,
    # their labels never do; each later scheme is drawn a little smaller, so schemes on one
    # spot show as rings around each other
    for i, r in enumerate(rs):
        traces.append({
            "type": "scatter", "mode": "markers", "x": [r.total_s], "y": [r.memory_gib],
            "name": f"{r.name}: {_verdict(r)}",
            "marker": {"size": max(18 - 2 * i, 8), "color": SCHEME_COLORS.get(r.name, theme.INK),
                       "symbol": "circle" if r.feasible else "x",
                       "line": {"width": 1, "color": theme.INK}},
            "hovertemplate": f"{r.name}: {_verdict(r)}, " + "%{x:.2f} s, %{y:.2f} GiB"
                             "<extra></extra>"})
    return traces


@serves("8.6.3")
def scheme_plane_figure(results, kv_budget_bytes: float, deadline_s: float, *,
                        title: str = "Figure 8-35: schemes on the memory x deadline plane "
                                     "(8.6.3)"):
    """Figure 8-35: only a scheme inside both limits returns qualifying results."""
    traces = scheme_plane_traces(results, kv_budget_bytes, deadline_s)
    return _fig(traces, SCHEME_PLANE_LAYOUT, title)


@serves("8.6.3")
def scheme_time_figure(results, deadline_s: float, *,
                       title: str = "Where each scheme's time goes: prefill and decode rounds "
                                    "(8.6.3)"):
    """Horizontal stacked bars of prefill and decode seconds per scheme, with the deadline."""
    rs = list(results.values())
    names = [r.name for r in rs]
    traces = [
        {"type": "bar", "orientation": "h", "y": names, "x": [r.prefill_s for r in rs],
         "name": "prefill (whole batch)", "marker": {"color": theme.ORANGE}},
        {"type": "bar", "orientation": "h", "y": names, "x": [r.decode_s for r in rs],
         "name": "decode rounds", "marker": {"color": theme.BLUE},
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
    "xaxis": {"title": {"text": "speedup σ of the accelerated stage (x)"}, "type": "log"},
    "yaxis": {"title": {"text": "whole-task speedup (x)"}, "rangemode": "tozero"},
    "legend": {"orientation": "h", "y": -0.25}}


def amdahl_traces(factors, curves, *, current=None) -> list:
    """Whole-task speedup against the stage speedup s, one curve per decode fraction f.

    ``curves``: {label: speedup over ``factors``}; ``current``: (s, speedup, label) or None.
    """
    xs = list(factors)
    traces = [{"type": "scatter", "mode": "lines", "x": xs, "y": list(ys), "name": label,
               "line": {"color": theme.PALETTE[i % 6], "dash": theme.DASHES[i % 6],
                        "width": 2.5}}
              for i, (label, ys) in enumerate(curves.items())]
    if current is not None:
        traces.append({"type": "scatter", "mode": "markers", "x": [current[0]],
                       "y": [current[1]], "name": current[2],
                       "marker": {"size": 13, "color": theme.INK, "symbol": "circle"}})
    return traces


@serves("8.6.3")
def amdahl_figure(factors, curves, *, current=None,
                  title: str = "Figure 8-36: task speedup vs stage speedup (8.6.3)"):
    """Figure 8-36: the lower the decode fraction f, the sooner the task speedup flattens
    towards 1 / (1 - f)."""
    traces = amdahl_traces(factors, curves, current=current)
    return _fig(traces, AMDAHL_LAYOUT, title)


# --- energy per qualifying result ---------------------------------------------------------------------

@serves("8.6.3")
def energy_per_result_figure(measured, computed=None, *,
                             title: str = "Energy per qualifying result (8.6.3)"):
    """Bars of joules per qualifying result: ``measured`` {label: J} (the chapter's
    measurements) and, if given, ``computed`` {label: J} (companion bounds), in two colours.
    The two are different quantities (measured GPU + CPU joules of real requests against a
    GPU-only bound at the power cap): draw them together only with that said."""
    traces = [
        {"type": "bar", "x": list(measured), "y": list(measured.values()),
         "name": "measured in Experiment 8-9 (GPU + CPU package)",
         "marker": {"color": theme.GREY},
         "text": [f"{j:,.1f} J" for j in measured.values()], "textposition": "outside"},
    ]
    if computed:
        traces.append(
            {"type": "bar", "x": list(computed),
             "y": [_finite(j, 0.0) for j in computed.values()],
             "name": "computed by the companion (card at its power cap)",
             "marker": {"color": theme.GREEN},
             "text": [f"{j:,.0f} J" if math.isfinite(j) else "no qualifying result"
                      for j in computed.values()], "textposition": "outside"})
    # disjoint categories: stacking keeps each bar at full width
    layout = {"height": 420, "barmode": "stack",
              "xaxis": {"title": {"text": "configuration"}},
              "yaxis": {"title": {"text": "energy per qualifying result (J)"},
                        "rangemode": "tozero"},
              "legend": {"orientation": "h", "y": -0.3}}
    return _fig(traces, layout, title)


# --- 8.6.1 admission ---------------------------------------------------------------------------

class AdmissionPanel(Panel):
    """Admit a request only if queue + prefill + (G - 1) x interval still meets the deadline;
    Little's law turns its time in the system into the number of requests held."""

    title = "Admission by deadline and Little's law (8.6.1)"
    controls = (
        Control("queue_s", "time already queued (s)", "float", ch08.QUEUE_S, 0.0, 3.0, 0.01),
        Control("prefill_s", "prefill + first token (s)", "float", ch08.PREFILL_S, 0.01, 3.0,
                0.001),
        Control("interval_ms", "output interval (ms)", "float", ch08.CLIENT_ITL_S / units.ms,
                1.0, 100.0, 0.1),
        Control("output_tokens", "output (tokens)", "int", ch08.OUTPUT_TOKENS, 1, 1024, 1,
                extra_stops=(300,)),              # "Try this" 1: raise the output to 300
        Control("deadline_s", "deadline (s)", "float", ch08.DEADLINE_S, 1.0, 30.0, 0.1),
        Control("arrival_rate", "arrival rate for Little's law (requests/s)", "float",
                ch08.LITTLE_ARRIVAL_RATE_PER_S, 0.0, 32.0, 0.5),
        # Requests like this one, admitted one at a time, queueing for each other
        Control("arrivals", "others like it, served one at a time", "choice", "alone",
                options=_ARRIVALS),
        # The queue's own rate: one at a time, a request of about 7 s saturates the server
        # near 500 per hour, so a rate in requests per second would be overloaded at every stop
        Control("queue_rate_per_h", "queue: requests like it per hour", "float", 250.0, 0.0,
                1200.0, 10.0),
    )
    main_control = "output_tokens"
    base_layout = ADMISSION_LAYOUT

    def compute(self, *, queue_s, prefill_s, interval_ms, output_tokens, deadline_s,
                arrival_rate, arrivals="alone", queue_rate_per_h=250.0) -> View:
        itl = interval_ms * units.ms
        finish = calc.lifecycle_request_time_s(queue_s, prefill_s, itl, output_tokens)
        unqueued = calc.lifecycle_request_time_s(0.0, prefill_s, itl, output_tokens)
        admitted = calc.admit_request(queue_s, prefill_s, itl, output_tokens, deadline_s)
        in_system = calc.requests_in_system(arrival_rate, finish)
        qs = [0.0, max(3.0, 1.2 * queue_s)]
        fs = [calc.lifecycle_request_time_s(q, prefill_s, itl, output_tokens) for q in qs]
        traces = admission_traces(qs, fs, deadline_s, (queue_s, finish),
                                  (queue_s, prefill_s, finish - queue_s - prefill_s))
        numbers = {"ttft_s": queue_s + prefill_s, "generation_s": finish - queue_s - prefill_s,
                   "finish_s": finish, "admitted": admitted, "margin_s": deadline_s - finish,
                   "longest_admissible_queue_s": max(0.0, deadline_s - unqueued),
                   "requests_in_system": in_system}
        queue_text = ""
        if arrivals != "alone":
            # one server, every request taking `unqueued` seconds: D/D/1 or M/D/1
            queue_rate = queue_rate_per_h / 3600.0
            q = calc.queue_on_time(queue_rate, unqueued, max(0.0, deadline_s - unqueued),
                                   arrivals=arrivals)
            numbers.update({"utilisation": q.utilisation, "mean_wait_s": q.mean_wait_s,
                            "on_time_pct": 100 * q.on_time_share,
                            "queue_in_system": q.mean_in_system})
            kind = "Poisson (M/D/1)" if arrivals == "poisson" else "evenly spaced (D/D/1)"
            if math.isfinite(q.mean_wait_s):
                wait_at = calc.lifecycle_request_time_s(q.mean_wait_s, prefill_s, itl,
                                                        output_tokens)
                traces.append({"type": "scatter", "mode": "markers", "x": [q.mean_wait_s],
                               "y": [wait_at], "name": f"mean wait, {kind} arrivals",
                               "marker": {"size": 12, "symbol": "diamond",
                                          "color": theme.ORANGE}})
                queue_text = (f"<br>{kind} at {queue_rate_per_h:g} req/h, one at a time: load "
                              f"{q.utilisation:.2f}, mean wait <b>{q.mean_wait_s:.3f} s</b>, "
                              f"<b>{100 * q.on_time_share:.1f}%</b> on time, "
                              f"{q.mean_in_system:.2f} in the system")
            else:
                queue_text = (f"<br>{kind} at {queue_rate_per_h:g} req/h, one at a time: load "
                              f"{q.utilisation:.2f} &ge; 1, the queue grows without end")
        verdict = "<b>admit</b>" if admitted else "<b>reject</b> (or send elsewhere)"
        text = (f"first token at {queue_s + prefill_s:.3f} s; {output_tokens - 1} intervals "
                f"take {numbers['generation_s']:.2f} s<br>"
                f"finish at <b>{finish:.2f} s</b> vs the {deadline_s:g} s deadline: {verdict}"
                f"<br>it may wait at most {numbers['longest_admissible_queue_s']:.3f} s in the "
                f"queue<br>Little's law at {arrival_rate:g} req/s with {finish:.2f} s in the "
                f"system: n = <b>{in_system:.1f}</b> requests held" + queue_text)
        return View(numbers=numbers, traces=traces, text=text)


# --- 8.6.3 schemes A-E and Figure 8-35 --------------------------------------------------------

# Exercise 8-9 asks for scheme E at the chapter's setting and its variants, so the explorer
# shows A-D only
SCHEME_SETS = {"A-D (Figure 8-35)": "ABCD"}
_D_ROUNDS = {"(G - 1) / mean tokens per round (8.6.3)": "mean",
             "until its slowest request is done (median)": "slowest"}


def _verdict(r) -> str:
    """What a scheme's point says: qualifies, or which limit it breaks."""
    if r.feasible:
        return "qualifies"
    broken = [w for w, ok in (("over memory", r.fits_memory), ("late", r.meets_deadline))
              if not ok]
    return ", ".join(broken)


def _fmt_cost(x: float, unit: str, digits: int) -> str:
    return f"{x:.{digits}f} {unit}" if np.isfinite(x) else "none qualify"


class SchemePanel(Panel):
    """Sixteen long requests under schemes A-D: memory against the KV budget and batch
    completion time against the deadline; only a scheme inside both limits counts."""

    title = "Which configuration serves 16 long requests? (8.6.3, Figure 8-35)"
    controls = (
        Control("kv_budget_gib", "KV + auxiliary budget (GiB)", "float",
                ch08.KV_BUDGET_BYTES / units.GiB, 2.0, 32.0, 0.5),
        Control("output_tokens", "output per request (tokens)", "int",
                ch08.OUTPUT_TOKENS, 2, 1024, 1),
        Control("deadline_s", "deadline (s)", "float", ch08.DEADLINE_S, 1.0, 30.0, 0.1),
        Control("d_tokens_per_round", "D: tokens per round (acceptance)", "float",
                float(ch08.DFLASH_TOKENS_PER_ROUND), 1.0, float(sv.DFLASH_VERIFY_POSITIONS),
                0.1),
        Control("shared_prefix_tokens", "shared prefix (tokens)", "int",
                ch08.SHARED_PREFIX_TOKENS, 0, ch08.LONG_PROMPT_TOKENS - 128, 128),
        # D's rounds from its slowest request instead of the mean output per round
        Control("d_rounds", "D's rounds", "choice", "mean", options=_D_ROUNDS),
    )
    main_control = "kv_budget_gib"
    base_layout = SCHEME_PLANE_LAYOUT

    def compute(self, *, kv_budget_gib, output_tokens, deadline_s, d_tokens_per_round,
                shared_prefix_tokens, d_rounds="mean") -> View:
        chosen = chapter_schemes("ABCD", d_tokens_per_round=d_tokens_per_round,
                                 shared_prefix_tokens=shared_prefix_tokens)
        budget = kv_budget_gib * units.GiB
        kw = dict(kv_budget_bytes=budget, output_tokens=output_tokens, deadline_s=deadline_s,
                  shared_prefix_tokens=shared_prefix_tokens)
        results = calc.compare_schemes(chosen, **kw)
        mean_d_rounds = results["D"].rounds
        d_scheme = next(sc for sc in chosen if sc.name == "D")
        slowest, spread = scheme_result_slowest(d_scheme, **kw)
        if d_rounds == "slowest":
            results["D"] = slowest
        feasible = [r for r in results.values() if r.feasible]
        best = min(feasible, key=lambda r: r.gpu_s_per_result).name if feasible else None
        traces = scheme_plane_traces(results, budget, deadline_s)
        numbers = {"best": best}
        rows = ["<tr><th>scheme</th><th>memory</th><th>prefill</th><th>round</th>"
                "<th>rounds</th><th>total</th><th>fits</th><th>on time</th>"
                "<th>GPU-s / result</th><th>J / result</th></tr>"]
        for r in results.values():
            numbers[f"{r.name}_memory_GiB"] = r.memory_gib
            numbers[f"{r.name}_total_s"] = r.total_s
            numbers[f"{r.name}_feasible"] = r.feasible
            numbers[f"{r.name}_gpu_s_per_result"] = r.gpu_s_per_result
            numbers[f"{r.name}_energy_J_per_result"] = r.energy_j_per_result
            mark = (lambda ok: "yes" if ok else "<b>no</b>")
            rows.append(f"<tr><td><b>{r.name}</b></td><td>{r.memory_gib:.2f} GiB</td>"
                        f"<td>{r.prefill_s:.2f} s</td><td>{r.round_ms:.2f} ms</td>"
                        f"<td>{r.rounds}</td><td>{r.total_s:.2f} s</td>"
                        f"<td>{mark(r.fits_memory)}</td><td>{mark(r.meets_deadline)}</td>"
                        f"<td>{_fmt_cost(r.gpu_s_per_result, 's', 3)}</td>"
                        f"<td>{_fmt_cost(r.energy_j_per_result, 'J', 0)}</td></tr>")
        if spread is not None:
            numbers.update({"D_mean_rounds": mean_d_rounds,
                            "D_slowest_median_rounds": spread.batch_median,
                            "D_slowest_p99_rounds": spread.batch_p99,
                            "D_slowest_total_s": slowest.total_s})
            rows.append(f"<tr><td colspan='10'>D's slowest of {ch08.LONG_BATCH}: "
                        f"{spread.batch_median} rounds at the median, {spread.batch_p99} at the "
                        f"99th percentile (the mean output per round gives "
                        f"{numbers['D_mean_rounds']})</td></tr>")
        verdict = (f"least GPU time per qualifying result: <b>{best}</b>" if best
                   else "<b>no scheme is feasible</b>: relax the deadline, shorten the output "
                        "or free memory")
        text = ("<table style='border-spacing: 8px 2px; white-space: nowrap'>" + "".join(rows)
                + "</table>"
                + verdict)
        return View(numbers=numbers, traces=traces, text=text)


# --- Figure 8-36 Amdahl ------------------------------------------------------------------------

AMDAHL_FRACTIONS = (0.2, 0.5, 0.8, 0.95)
_FACTORS = np.geomspace(1.0, 64.0, 37)
_REFERENCE_CURVES = {f"decode fraction f = {f:g}": [calc.amdahl_speedup(f, s) for s in _FACTORS]
                     for f in AMDAHL_FRACTIONS}


class AmdahlPanel(Panel):
    """Speeding up one stage of a task: 1 / ((1 - f) + f / s), and what an added preparation
    time (a draft index, Exercise 8-8) takes back."""

    title = "Task speedup from speeding up decode (8.6.3, Figure 8-36)"
    controls = (
        # steps of 0.05: the chapter's fractions (0.5, 0.2) and Figure 8-36's are stops of the
        # live slider and of the book's static one
        Control("decode_fraction", "decode fraction f of the task", "float", 0.5, 0.0, 1.0,
                0.05),
        Control("factor", "decode speedup σ (x)", "float", ch08.AMDAHL_FACTOR, 1.0, 64.0, 0.5),
        Control("prep_s", "added preparation (s)", "float", 0.0, 0.0, 60.0, 0.5),
        Control("task_s", "original task time (s)", "float", ch08.AMDAHL_TASK_S, 10.0, 1000.0,
                10.0),
    )
    main_control = "decode_fraction"
    base_layout = AMDAHL_LAYOUT

    def compute(self, *, decode_fraction, factor, prep_s, task_s) -> View:
        stages = [task_s * (1.0 - decode_fraction), task_s * decode_fraction]
        total = calc.staged_task_time(stages, [1.0, factor], prep_s)
        speedup = calc.staged_task_speedup(stages, [1.0, factor], prep_s)
        break_even = calc.staged_break_even_s(stages, [1.0, factor])
        curves = dict(_REFERENCE_CURVES)
        label = f"this setting: f = {decode_fraction:g}, +{prep_s:g} s preparation"
        curves[label] = [calc.staged_task_speedup(stages, [1.0, s], prep_s) for s in _FACTORS]
        traces = amdahl_traces(_FACTORS.tolist(), curves,
                               current=(factor, speedup, f"σ = {factor:g}"))
        traces[len(AMDAHL_FRACTIONS)]["line"].update({"color": theme.INK, "dash": "longdash"})
        numbers = {"task_time_s": total, "speedup": speedup, "break_even_prep_s": break_even,
                   "saves_time": total < task_s}
        text = (f"{stages[0]:g} s unchanged + {stages[1]:g} s / {factor:g} + {prep_s:g} s = "
                f"<b>{total:.1f} s</b><br>task speedup <b>{speedup:.2f}x</b><br>"
                f"break-even at f = {decode_fraction:g}: decode saves {stages[1]:.4g} - "
                f"{stages[1] / factor:.4g} = <b>{break_even:.4g} s</b>, so the change stops "
                f"saving time at that much preparation")
        return View(numbers=numbers, traces=traces, text=text)
