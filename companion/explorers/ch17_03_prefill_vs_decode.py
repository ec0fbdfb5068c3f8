"""17 §3's explorer home (notebook 17_03_prefill_vs_decode): a request's time budget, head-of-line
blocking and the SLO percentiles.

Figures (plotly, deterministic: fixed colours, no timestamps): ``request_budget_traces``
(``calc.request_budget``), ``hol_timeline_figure`` (``hol_timeline_traces``/``_layout`` over a
simulator ``Result``) and ``slo_cdf_traces``/``slo_cdf_layout``.

Panels: ``RequestBudgetPanel`` (TTFT + output x ITL, and where the time goes; its "prefill
priced by" toggle swaps the chapter's compute-only TTFT for the roofline's, ``calc.prefill_readings``),
``HeadOfLinePanel`` (a long prompt admitted whole into a running decode batch, on the
scheduler simulator through ``sim.scenarios.hol_scenario``, beside the chapter's closed form and
one fused pass on the roofline, ``calc.head_of_line_readings``),
``SLOPanel`` (TTFT and ITL percentiles of a simulated Poisson stream, ``sim.slo_run``, against
a TTFT p90 and an ITL p99 target; ``slo_cdf_traces`` draws the two CDFs).
"""

from __future__ import annotations

import math

import numpy as np

from companion import calc, specs, theme, units
from companion import validate as v
from companion.chapters import ch17
from companion.explorers.base import Control, Panel, View
from companion.explorers.common import accuracy_note
from companion.explorers.common import plotly_go as _go
from companion.explorers.presets import HARDWARE_PRESETS, hardware_control, source_line
from companion.explorers.presets import ROOFLINE_MENU, roofline_model_control
from companion.formulas.fuller import head_of_line_readings, prefill_readings
from companion.serves import serves
from companion.sim.result import Result
from companion.sim.scenarios import hol_scenario
from companion.sim.slo import slo_run

__all__ = [
    "request_budget_traces", "hol_timeline_traces", "hol_timeline_layout", "hol_timeline_figure",
    "RequestBudgetPanel", "HeadOfLinePanel", "slo_cdf_traces", "slo_cdf_layout", "SLOPanel",
]

# the section this module serves (the notebook of its name): every @serves mark here is
# within it (tests/test_sections.py)
SECTION = "17.3"


PHASE = {"prefill": theme.ORANGE, "decode": theme.SKY, "stalled": theme.VERMILLION, "token": theme.NAVY,
         "queued": theme.LIGHT_GREY}


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
            # the legend in its own rows at the figure's foot, below the x title however
            # short the figure (in the plot's coordinates it sat on the title)
            "legend": theme.foot_legend(),
            "margin": {"t": 60, "r": 20, "b": 130}}


@serves("17.3")
def hol_timeline_traces(result) -> list:
    """Gantt bars (ms) of a simulator ``Result``: one row per request, every
    prefill round and decode step; a decode step that a co-scheduled prefill stretched beyond
    1.5x the shortest step is drawn as a stall. Ticks mark emitted tokens (17 §3). Always five
    traces (waiting, prefill, decode, stalled decode, tokens).
    """
    res = v.instance("result", result, Result, "a companion.sim.result.Result")
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


@serves("17.3")
def hol_timeline_figure(result, *, title: str = "Head-of-line blocking (17 §3): one long "
                                                "prompt freezes every in-flight decode"):
    """``hol_timeline_traces`` as a plotly Figure (label it as simulator output in the text)."""
    res = v.instance("result", result, Result, "a companion.sim.result.Result")
    layout = dict(hol_timeline_layout(), height=220 + 32 * len(res.ids),
                  template=theme.TEMPLATE, title={"text": title})
    layout["margin"] = dict(layout["margin"], t=80)
    return _go().Figure(data=hol_timeline_traces(res), layout=layout)


# --- §3: a request's time budget --------------------------------------------------------------

_OUTPUT_SWEEP = np.unique(np.geomspace(1, 4096, 40).astype(int))

# how the TTFT bar prices the prefill: the chapter's compute alone, or the roofline's max of
# the weight read and the compute with attention (17 §3's "Where this model breaks")
_PREFILL_PRICES = {"compute at the set % of peak (17 §2-§3)": "chapter",
                   "roofline: max(weight read, compute + attention)": "roofline"}


@serves("17.3")
class RequestBudgetPanel(Panel):
    """17 §3 live: TTFT (prefill at a fraction of peak) + output tokens x ITL, and its split."""

    title = "A request's time budget (17 §3): where the wall clock goes"
    controls = (
        hardware_control(),
        roofline_model_control(),
        Control("prompt_tokens", "prompt (tokens)", "int", ch17.PROMPT_TOKENS, 16,
                32_768, 16),
        Control("output_tokens", "output (tokens)", "int", ch17.OUTPUT_TOKENS, 1, 4096, 1),
        Control("itl_ms", "ITL: one decode step (ms)", "float",
                ch17.SMOOTH_ITL_S / units.ms, 1.0, 100.0, 0.1),
        Control("efficiency_pct", "prefill at % of peak", "float",
                100 * ch17.PREFILL_EFFICIENCY, 5.0, 100.0, 1.0),
        Control("prefill_price", "prefill priced by", "choice", "chapter",
                options=_PREFILL_PRICES),
    )
    main_control = "prompt_tokens"
    base_layout = {
        "height": 460, "barmode": "overlay",
        "xaxis": {"title": {"text": "time since the request starts (ms)"}, "domain": [0, 1],
                  "anchor": "y", "rangemode": "tozero"},
        "yaxis": {"domain": [0.72, 1.0], "anchor": "x", "showticklabels": False},
        "xaxis2": {"title": {"text": "output tokens"}, "type": "log", "anchor": "y2"},
        "yaxis2": {"title": {"text": "decode share of the request (%)"}, "domain": [0, 0.5],
                   "range": [0, 100], "anchor": "x2"},
        "legend": {"orientation": "h", "y": -0.25},
    }

    def compute(self, *, hardware, model, prompt_tokens, output_tokens, itl_ms,
                efficiency_pct, prefill_price) -> View:
        hw, m = HARDWARE_PRESETS[hardware], ROOFLINE_MENU[model]
        itl = itl_ms * units.ms
        ttft = calc.prefill_compute_s(m, hw, prompt_tokens, efficiency=efficiency_pct / 100)
        priced = prefill_readings(m, hw, prompt_tokens, efficiency=efficiency_pct / 100)
        chapter = calc.request_budget(ttft, output_tokens, itl)
        if prefill_price == "roofline":
            ttft = priced["roofline_s"]
        budget = calc.request_budget(ttft, output_tokens, itl)
        shares = [100 * calc.request_budget(ttft, int(g), itl)["decode_share"]
                  for g in _OUTPUT_SWEEP]
        # the chapter's reading under its own keys whatever the toggle, the roofline's beside it
        numbers = {"ttft_ms": chapter["ttft_s"] / units.ms,
                   "decode_ms": chapter["decode_s"] / units.ms,
                   "total_s": chapter["total_s"], "decode_share_pct": 100 * chapter["decode_share"],
                   "prefill_share_pct": 100 * chapter["prefill_share"],
                   "roofline_ttft_ms": priced["roofline_s"] / units.ms,
                   "roofline_over_chapter": priced["roofline_over_chapter"],
                   "attention_share_pct": 100 * priced["attention_share"]}
        traces = request_budget_traces(budget)
        traces += [
            {"type": "scatter", "mode": "lines+markers", "x": _OUTPUT_SWEEP.tolist() + [None,
             output_tokens], "y": shares + [None, numbers["decode_share_pct"]],
             "name": "decode share vs output length (marker: this request)",
             "marker": {"size": [0] * len(shares) + [0, 12], "color": theme.NAVY},
             "xaxis": "x2", "yaxis": "y2"},
        ]
        bound = ("the weight read sets it" if priced["bound"] == "memory"
                 else f"compute, attention {numbers['attention_share_pct']:.2g}% of it")
        drawn = "drawn" if prefill_price == "roofline" else "toggle to draw it"
        text = (f"TTFT = prefill of {prompt_tokens:,} tokens at {efficiency_pct:g}% of peak: "
                f"<b>{numbers['ttft_ms']:,.3g} ms</b> (17 §2-§3); on the roofline "
                f"<b>{numbers['roofline_ttft_ms']:,.3g} ms</b> ({bound}; "
                f"{numbers['roofline_over_chapter']:.3g}x; {drawn})<br>"
                f"decode = {output_tokens:,} x {itl_ms:g} ms = "
                f"<b>{numbers['decode_ms']:,.0f} ms</b><br>"
                f"total <b>{budget['total_s']:.3g} s</b>, "
                f"<b>{100 * budget['decode_share']:.0f}%</b> of it decode "
                f"(prefill {100 * budget['prefill_share']:.0f}%)" + source_line(m))
        text += accuracy_note("prefill-bound")
        return View(numbers=numbers, traces=traces, text=text)


# --- §3: head-of-line blocking on the scheduler simulator ------------------------------------

@serves("17.3")
class HeadOfLinePanel(Panel):
    """17 §3 live: an unchunked long prefill stalls every in-flight decode (simulated)."""

    title = "Head-of-line blocking (17 §3), on the companion's scheduler simulator"
    controls = (
        hardware_control(),
        roofline_model_control(),
        Control("prompt_tokens", "long prompt (tokens)", "int", ch17.LONG_CONTEXT_TOKENS,
                256, 32_000, 256),
        Control("step_ms", "in-flight decode step (ms)", "float",
                ch17.SMOOTH_ITL_S / units.ms, 1.0, 50.0, 0.1),
        Control("efficiency_pct", "prefill at % of peak", "float",
                100 * ch17.PREFILL_EFFICIENCY, 5.0, 100.0, 1.0),
        Control("decode_batch", "in-flight decodes (rows drawn)", "int", 4, 1, 12, 1),
    )
    main_control = "prompt_tokens"
    base_layout = dict(hol_timeline_layout(), height=420)

    def compute(self, *, hardware, model, prompt_tokens, step_ms, efficiency_pct,
                decode_batch) -> View:
        hw, m = HARDWARE_PRESETS[hardware], ROOFLINE_MENU[model]
        step = step_ms * units.ms
        out = hol_scenario(m, hw, prompt_tokens, step, efficiency_pct / 100, decode_batch)
        closed, sim = out["closed_form"], out["simulated"]
        numbers = {
            "prefill_TFLOP": closed["prefill_flops"] / units.TFLOP,
            "stall_ms": closed["stall_s"] / units.ms,
            "worst_itl_over_step": closed["worst_itl_over_step"],
            "sim_baseline_itl_ms": sim["baseline_itl_s"] / units.ms,
            "sim_worst_itl_ms": sim["worst_decode_itl_s"] / units.ms,
            "sim_worst_over_baseline": sim["worst_decode_itl_s"] / sim["baseline_itl_s"],
            "sim_long_ttft_ms": sim["long_ttft_s"] / units.ms,
        }
        full = head_of_line_readings(m, hw, prompt_tokens, step, efficiency=efficiency_pct / 100)
        numbers.update({"fused_stall_ms": full["fused_s"] / units.ms,
                        "fused_over_step": full["fused_over_step"],
                        "fused_decode_batch": full["decode_batch"]})
        traces = hol_timeline_traces(sim["result"])
        text = (f"prefill of {prompt_tokens:,} tokens: {numbers['prefill_TFLOP']:,.1f} TFLOP at "
                f"{efficiency_pct:g}% of peak = <b>{numbers['stall_ms']:,.0f} ms</b> stall "
                f"= <b>{numbers['worst_itl_over_step']:,.0f}x</b> the {step_ms:g} ms step "
                "(closed form)<br>"
                f"simulated: smooth ITL {numbers['sim_baseline_itl_ms']:.3g} ms, worst ITL "
                f"<b>{numbers['sim_worst_itl_ms']:,.0f} ms</b> "
                f"({numbers['sim_worst_over_baseline']:,.0f}x: the stalled round also runs "
                f"the decode step); the long prompt's TTFT "
                f"{numbers['sim_long_ttft_ms']:,.0f} ms<br>"
                f"one fused pass (the prompt and {full['decode_batch']} decode tokens at "
                f"{ch17.CHAT_LIVE_TOKENS} live tokens, weights read once, attention counted, "
                f"the roofline's max): <b>{numbers['fused_stall_ms']:,.0f} ms</b> = "
                f"{numbers['fused_over_step']:,.0f}x the step ({full['fused_bound']}-bound)"
                + source_line(m))
        return View(numbers=numbers, traces=traces, text=text)


# --- §3: latency targets under load ------------------------------------------------------------

_SLO_POLICIES = {"continuous batching (whole prefill)": "continuous",
                 "chunked prefill": "chunked"}
_SLO_QUANTILES = np.linspace(0.0, 1.0, 101)
_PCT_COLORS = {"p50": theme.GREY, "p90": theme.NAVY, "p99": theme.RED}


def _inward(marks, drawn, *, log: bool) -> list:
    """A percentile label's side: left of its marker (above a CDF: empty), unless the marker
    is within a fifth of the axis from its left end, where the label would be cut: then below
    and right (under the CDF: empty too). ``drawn``: every x on the axis (its autorange; a
    linear one starts at 0)."""
    f = (lambda x: float(np.log10(max(x, 1e-12)))) if log else float
    drawn = [x for x in drawn if x > 0] if log else list(drawn) + [0.0]
    lo, hi = (f(min(drawn)), f(max(drawn))) if drawn else (0.0, 1.0)
    span = (hi - lo) or 1.0
    return ["bottom right" if (f(x) - lo) / span < 0.2 else "middle left" for x in marks]


def slo_cdf_traces(run: dict) -> list:
    """Two CDF panels of an ``sim.slo_run`` result: TTFT (ms, x/y) and output intervals (ms,
    log axis, x2/y2), each with its p50/p90/p99 marked and its target as a dashed line."""
    traces = []
    for key, pct, target, xa, ya, name in (
            ("ttft_s", run["ttft_pct"], run["ttft_target_s"], "x", "y", "TTFT"),
            ("itl_s", run["itl_pct"], run["itl_target_s"], "x2", "y2", "ITL")):
        values = np.asarray(run[key]) / units.ms
        # the CDF at 101 quantiles: the shape of every sample at a fixed size
        xs = np.quantile(values, _SLO_QUANTILES, method="inverted_cdf")
        marks = [pct[p] / units.ms for p in _PCT_COLORS]
        traces.append({"type": "scatter", "mode": "lines", "x": xs.tolist(),
                       "y": (100 * _SLO_QUANTILES).tolist(), "name": f"{name} CDF",
                       "line": {"color": theme.FOREST, "shape": "hv"}, "xaxis": xa, "yaxis": ya,
                       "hovertemplate": "%{x:.4g} ms: %{y:.0f}% of them<extra></extra>"})
        traces.append({"type": "scatter", "mode": "markers+text", "name": f"{name} percentiles",
                       "x": marks,
                       "y": [float(p[1:]) for p in _PCT_COLORS], "text": list(_PCT_COLORS),
                       "textposition": _inward(marks, xs.tolist() + [target / units.ms],
                                               log=xa == "x2"),
                       "marker": {"size": 10, "color": list(_PCT_COLORS.values())},
                       "xaxis": xa, "yaxis": ya})
        traces.append({"type": "scatter", "mode": "lines", "name": f"{name} target",
                       "x": [target / units.ms, target / units.ms], "y": [0, 100],
                       "line": {"color": theme.OCHRE, "dash": "dash"}, "xaxis": xa, "yaxis": ya})
    return traces


def slo_cdf_layout() -> dict:
    return {
        "showlegend": False,
        # a wide gap: the right panel's y title and ticks stand between the two
        "xaxis": {"title": {"text": "time to first token (ms)"}, "domain": [0, 0.42],
                  "anchor": "y", "rangemode": "tozero"},
        "yaxis": {"title": {"text": "requests at or below (%)"}, "range": [0, 101],
                  "anchor": "x"},
        "xaxis2": {"title": {"text": "interval between output tokens (ms, log)"},
                   "type": "log", "domain": [0.58, 1], "anchor": "y2"},
        "yaxis2": {"title": {"text": "intervals at or below (%)"}, "range": [0, 101],
                   "anchor": "x2"},
    }


@serves("17.3")
class SLOPanel(Panel):
    """17 §3 live: TTFT p90 and ITL p99 of a simulated service against the two targets."""

    title = "Latency targets under load (17 §3): TTFT p90 and ITL p99, simulated"
    controls = (
        Control("rate_per_s", "arrival rate λ (requests/s)", "float", 2.0, 0.5, 12.0, 0.5),
        Control("ttft_target_ms", "TTFT p90 target (ms)", "float",
                ch17.TTFT_P90_TARGET_S / units.ms, 50.0, 2000.0, 10.0),
        Control("itl_target_ms", "ITL p99 target (ms)", "float",
                ch17.ITL_TARGET_S / units.ms, 5.0, 200.0, 1.0),
        Control("policy", "scheduler", "choice", "continuous", options=_SLO_POLICIES),
    )
    main_control = "rate_per_s"
    base_layout = dict(slo_cdf_layout(), height=440)

    def compute(self, *, rate_per_s, ttft_target_ms, itl_target_ms, policy) -> View:
        run = slo_run(rate_per_s, ttft_target_s=ttft_target_ms * units.ms,
                      itl_target_s=itl_target_ms * units.ms, policy=policy)
        numbers = {f"ttft_{p}_ms": run["ttft_pct"][p] / units.ms for p in _PCT_COLORS}
        numbers.update({f"itl_{p}_ms": run["itl_pct"][p] / units.ms for p in _PCT_COLORS})
        numbers.update({
            "ttft_ok": run["ttft_ok"], "itl_ok": run["itl_ok"], "slo_met": run["slo_met"],
            "measured_mean_s": run["measured_mean_s"],
            "intervals_mean_s": run["intervals_mean_s"],
            "chapter_mean_s": run["chapter_mean_s"],
            "completed": run["completed"],
        })

        def verdict(ok):
            return (f"<b style='color:{theme.FOREST}'>met</b>" if ok
                    else f"<b style='color:{theme.RED}'>missed</b>")

        def row(name, key):
            return " / ".join(f"{numbers[f'{key}_{p}_ms']:,.4g}" for p in _PCT_COLORS)

        text = (f"{run['completed']} requests of {ch17.PROMPT_TOKENS:,} + {ch17.OUTPUT_TOKENS} "
                f"tokens at {rate_per_s:g} req/s, {specs.LLAMA_8B.name} on "
                f"{specs.H100_SXM.name} ({policy})<br>"
                f"TTFT p50 / p90 / p99: {row('TTFT', 'ttft')} ms; p90 target "
                f"{ttft_target_ms:g} ms {verdict(run['ttft_ok'])}<br>"
                f"ITL p50 / p90 / p99: {row('ITL', 'itl')} ms; p99 target "
                f"{itl_target_ms:g} ms {verdict(run['itl_ok'])}<br>"
                f"SLO: {verdict(run['slo_met'])}. Mean request: simulated "
                f"{run['measured_mean_s']:.3f} s = TTFT + (G - 1) ITL "
                f"{run['intervals_mean_s']:.3f} s; TTFT + G ITL gives "
                f"{run['chapter_mean_s']:.3f} s")
        return View(numbers=numbers, traces=slo_cdf_traces(run), text=text)
