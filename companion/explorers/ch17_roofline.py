"""17 §2-§3's explorer home: the roofline, a request's time budget, head-of-line blocking.

Figures (plotly, deterministic: fixed colours, fixed axis ranges, no timestamps):
``roofline_figure`` (``roofline_traces``/``roofline_layout`` over ``calc.roofline_point``
results), ``request_budget_traces`` (``calc.request_budget``) and ``hol_timeline_figure``
(``hol_timeline_traces``/``_layout`` over a simulator ``Result``). A panel draws with the same
``*_traces`` helpers, so the stored figure and the live one are the same picture.

Panels: ``RooflinePanel`` (17 §2: hardware, model, batch, live context per sequence, prompt
length and weight / KV precision -> decode at batch 1, batched decode (weights only and with
each sequence's KV), and prefill placed on the log-log roofline; the readout lists every
plotted number), ``RequestBudgetPanel`` (17 §3: TTFT + output x ITL, and where the time goes),
``HeadOfLinePanel`` (17 §3: a long prompt admitted whole into a running decode batch, on the
scheduler simulator through ``sim.scenarios.hol_scenario``, beside the chapter's closed form),
``SLOPanel`` (17 §3: TTFT and ITL percentiles of a simulated Poisson stream, ``sim.slo_run``,
against a TTFT p90 and an ITL p99 target; ``slo_cdf_traces`` draws the two CDFs).
"""

from __future__ import annotations

import math

import numpy as np

from companion import calc, specs, units
from companion import validate as v
from companion.chapters import ch17
from companion.explorers.base import Control, Panel, View
from companion.explorers.common import plotly_go as _go
from companion.explorers.presets import (
    HARDWARE_PRESETS,
    KV_PRECISION_BYTES,
    ModelMenu,
    config_control,
    hardware_control,
    source_line,
)
from companion.formulas.core import ridge_point
from companion.serves import serves
from companion.sim.result import Result
from companion.sim.scenarios import hol_scenario
from companion.sim.slo import slo_run
from companion.specs import Hardware

__all__ = [
    "roofline_traces", "roofline_layout", "roofline_figure", "request_budget_traces",
    "hol_timeline_traces", "hol_timeline_layout", "hol_timeline_figure", "ROOFLINE_X_RANGE",
    "ROOFLINE_Y_RANGE", "RooflinePanel", "RequestBudgetPanel", "HeadOfLinePanel",
    "slo_cdf_traces", "slo_cdf_layout", "SLOPanel",
]


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


@serves("17.2")
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


@serves("17.2")
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
    layout = dict(hol_timeline_layout(), height=160 + 32 * len(res.ids),
                  template="plotly_white", title={"text": title})
    return _go().Figure(data=hol_timeline_traces(res), layout=layout)


_MODELS = ModelMenu({m.name: m for m in (specs.LLAMA_8B, specs.LLAMA_70B, specs.LLAMA_405B,
                                         specs.QWEN3_8B)})
# bytes per stored weight (17 §2's FP32 aside, BF16 as served, §10's INT8/FP8, a 4-bit format)
_WEIGHT_BYTES = {"FP32 (4 B)": 4.0, "BF16 (2 B)": 2.0, "INT8 / FP8 (1 B)": 1.0,
                 "INT4 (0.5 B)": 0.5}


def _model_choice():
    return _MODELS.control(specs.LLAMA_8B.name)


@serves("17.2")
class RooflinePanel(Panel):
    """17 §2 live: where decode (batch 1), batched decode and prefill sit on a card's roofline."""

    title = "Roofline (17 §2): decode, batched decode and prefill"
    controls = (
        hardware_control(),
        _model_choice(),
        Control("batch", "decode batch B (sequences)", "int", ch17.BATCH, 1, 1024, 1),
        Control("context_tokens", "live KV per sequence (tokens)", "int",
                ch17.CHAT_LIVE_TOKENS, 0, ch17.LONGEST_CONTEXT_TOKENS, 100),
        Control("prompt_tokens", "prefill prompt (tokens)", "int", ch17.PROMPT_TOKENS,
                16, 32_768, 16),
        Control("weight_bytes", "weight precision", "choice", 2.0, options=_WEIGHT_BYTES),
        Control("kv_bytes", "KV precision", "choice", 2.0, options=KV_PRECISION_BYTES),
        config_control(),
    )
    main_control = "batch"
    base_layout = dict(roofline_layout(), height=560)

    def compute(self, *, hardware, model, batch, context_tokens, prompt_tokens, weight_bytes,
                kv_bytes, config_json) -> View:
        hw, (m, source) = HARDWARE_PRESETS[hardware], _MODELS.pick(model, config_json)
        kw = dict(bytes_per_param=weight_bytes)
        i_b1 = calc.decode_intensity(m, 1, **kw)
        i_weights = calc.decode_intensity(m, batch, **kw)
        i_kv = calc.decode_intensity(m, batch, context_tokens, kv_bytes_per_value=kv_bytes, **kw)
        i_prefill = calc.prefill_intensity(m, prompt_tokens, **kw)
        points = [
            dict(label="decode, batch 1", **calc.roofline_point(i_b1, hw)),
            dict(label=f"decode, batch {batch}, weights only",
                 **calc.roofline_point(i_weights, hw)),
            dict(label=f"decode, batch {batch}, + {context_tokens:,} live KV tokens each",
                 **calc.roofline_point(i_kv, hw)),
            dict(label=f"prefill, {prompt_tokens:,}-token prompt",
                 **calc.roofline_point(i_prefill, hw)),
        ]
        split = calc.decode_time_split(m, hw, **kw)
        step = calc.decode_vs_context(m, hw, context_tokens, batch=batch,
                                      kv_bytes_per_value=kv_bytes, **kw)
        ridge = calc.ridge_point(hw)
        numbers = {"ridge_flop_per_byte": ridge,
                   "peak_TFLOPs": hw.peak_flops_per_s / units.TFLOP,
                   "bandwidth_TBs": hw.mem_bw_bytes_per_s / units.TB}
        keys = ("decode_b1", "decode_batch_weights_only", "decode_batch_with_kv", "prefill")
        for key, p in zip(keys, points):
            numbers[f"{key}_intensity"] = p["intensity_flop_per_byte"]
            numbers[f"{key}_TFLOPs"] = p["attainable_flops_per_s"] / units.TFLOP
            numbers[f"{key}_pct_of_peak"] = 100 * p["fraction_of_peak"]
        numbers.update({
            "decode_b1_step_ms": split["step_s"] / units.ms,
            "decode_b1_tok_s": split["tokens_per_s"],
            "wait_to_work": split["wait_to_work"],
            "decode_batch_step_ms": step["step_s"] / units.ms,
            "decode_batch_tok_s": step["tokens_per_s"],
            "batch_to_reach_ridge": calc.decode_ridge_batch(m, hw, **kw),
        })
        rows = "".join(
            f"<tr><td>{p['label']}</td><td align='right'>{p['intensity_flop_per_byte']:,.3g}"
            f"</td><td align='right'>{p['attainable_flops_per_s'] / units.TFLOP:,.4g}</td>"
            f"<td align='right'>{100 * p['fraction_of_peak']:.3g}%</td><td>{p['bound']}</td>"
            "</tr>" for p in points)
        text = (f"<b>{m.name}</b> on <b>{hw.name}</b>: ridge <b>{ridge:,.0f}</b> FLOP/B "
                f"({numbers['peak_TFLOPs']:,.4g} TFLOP/s / {numbers['bandwidth_TBs']:.3g} TB/s)"
                "<table><tr><th>point</th><th>FLOP/B</th><th>TFLOP/s</th><th>of peak</th>"
                f"<th>roof</th></tr>{rows}</table>"
                f"batch-1 decode: {numbers['decode_b1_step_ms']:.3g} ms per token = "
                f"<b>{numbers['decode_b1_tok_s']:,.0f} tok/s</b>, waiting : working = "
                f"{numbers['wait_to_work']:,.0f} : 1<br>"
                f"batch {batch}: {numbers['decode_batch_step_ms']:.3g} ms per step = "
                f"{numbers['decode_batch_tok_s']:,.0f} tok/s; a batch of "
                f"~{numbers['batch_to_reach_ridge']:,.0f} reaches the ridge (weights only)"
                + _moe_sweep_lines(m, hw, batch, i_b1, numbers, kw) + source)
        traces = roofline_traces(hw, points, reference=specs.H100_SXM)
        # the batch sweep under the workload points (which stay the last trace, on top)
        traces[-1:-1] = _decode_sweep_traces(m, hw, i_b1, kw)
        return View(numbers=numbers, traces=traces, text=text)


_SWEEP_BATCHES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)


def _decode_sweep_traces(m, hw, i_b1, kw) -> list:
    """Batched decode (weights only) as B doubles from 1 to 1024, and for an MoE its two
    asymptotes: B x I(1) (only the k experts of one token read: where it starts) and
    B x I(1) x D_w(1) / D_w (every expert read: where it ends). In between, each added
    sequence brings experts of its own and the intensity grows more slowly than B; once all
    are read it grows as B again. Three traces always (the asymptotes empty for a dense model,
    whose sweep is both)."""
    pts = [calc.roofline_point(calc.decode_intensity(m, b, **kw), hw) for b in _SWEEP_BATCHES]
    xs = list(_SWEEP_BATCHES)
    traces = [{"type": "scatter", "mode": "lines+markers",
               "name": "decode as B doubles (1 to 1,024)",
               "x": [p["intensity_flop_per_byte"] for p in pts],
               "y": [p["attainable_flops_per_s"] / units.TFLOP for p in pts], "customdata": xs,
               "hovertemplate": "B=%{customdata}: %{x:.3g} FLOP/B<extra>this model</extra>",
               "line": {"color": "#009e73", "width": 1.5}, "marker": {"size": 6}}]
    every = (calc.moe_streamed_weight_bytes(m, 1) / m.streamed_weight_bytes
             if m.is_moe else 1.0)
    for scale, name, dash in ((1.0, "MoE asymptote: each token's own experts only", "dot"),
                              (every, "MoE asymptote: every expert read", "dash")):
        line = ([calc.roofline_point(b * i_b1 * scale, hw) for b in _SWEEP_BATCHES]
                if m.is_moe else [])
        traces.append({"type": "scatter", "mode": "lines", "showlegend": m.is_moe,
                       "name": name, "x": [p["intensity_flop_per_byte"] for p in line],
                       "y": [p["attainable_flops_per_s"] / units.TFLOP for p in line],
                       "customdata": xs if m.is_moe else [],
                       "hovertemplate": "B=%{customdata}: %{x:.3g} FLOP/B<extra></extra>",
                       "line": {"color": "#7f7f7f", "dash": dash, "width": 1.5}})
    return traces


def _moe_sweep_lines(m, hw, batch, i_b1, numbers, kw) -> str:
    """Readout lines for an MoE: experts a batch touches, its intensity against a dense
    model's at the same batch, and the ridge batch of each (adds them to ``numbers``)."""
    if not m.is_moe:
        return ""
    touched = calc.expected_experts_touched(m.n_experts, m.experts_per_token, batch)
    i_batch = calc.decode_intensity(m, batch, **kw)
    dense_ridge = calc.ridge_point(hw) / i_b1
    numbers.update({"experts_touched": touched, "moe_over_dense_intensity":
                    i_batch / (batch * i_b1), "dense_batch_to_reach_ridge": dense_ridge})
    return (f"<br>MoE ({m.n_experts} experts, {m.experts_per_token} per token): batch {batch} "
            f"touches <b>{touched:.1f}</b> experts per layer under uniform routing, so its "
            f"intensity is {100 * numbers['moe_over_dense_intensity']:.0f}% of a dense model's "
            f"at that batch; the ridge needs B ~ {numbers['batch_to_reach_ridge']:,.0f} "
            f"instead of ~{dense_ridge:,.0f} (skewed routing touches fewer experts: sooner)"
            f"<br>once every expert is read, intensity grows with B again, along the lower "
            f"grey line: each token computes through {m.experts_per_token} of "
            f"{m.n_experts} experts but the step reads all of them")


# --- §3: a request's time budget --------------------------------------------------------------

_OUTPUT_SWEEP = np.unique(np.geomspace(1, 4096, 40).astype(int))


@serves("17.3")
class RequestBudgetPanel(Panel):
    """17 §3 live: TTFT (prefill at a fraction of peak) + output tokens x ITL, and its split."""

    title = "A request's time budget (17 §3): where the wall clock goes"
    controls = (
        hardware_control(),
        _model_choice(),
        Control("prompt_tokens", "prompt (tokens)", "int", ch17.PROMPT_TOKENS, 16,
                32_768, 16),
        Control("output_tokens", "output (tokens)", "int", 250, 1, 4096, 1),
        Control("itl_ms", "ITL: one decode step (ms)", "float",
                ch17.SMOOTH_ITL_S / units.ms, 1.0, 100.0, 0.1),
        Control("efficiency_pct", "prefill at % of peak", "float",
                100 * ch17.PREFILL_EFFICIENCY, 5.0, 100.0, 1.0),
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
                efficiency_pct) -> View:
        hw, m = HARDWARE_PRESETS[hardware], _MODELS[model]
        itl = itl_ms * units.ms
        ttft = calc.prefill_compute_s(m, hw, prompt_tokens, efficiency=efficiency_pct / 100)
        budget = calc.request_budget(ttft, output_tokens, itl)
        shares = [100 * calc.request_budget(ttft, int(g), itl)["decode_share"]
                  for g in _OUTPUT_SWEEP]
        numbers = {"ttft_ms": ttft / units.ms, "decode_ms": budget["decode_s"] / units.ms,
                   "total_s": budget["total_s"], "decode_share_pct": 100 * budget["decode_share"],
                   "prefill_share_pct": 100 * budget["prefill_share"]}
        traces = request_budget_traces(budget)
        traces += [
            {"type": "scatter", "mode": "lines+markers", "x": _OUTPUT_SWEEP.tolist() + [None,
             output_tokens], "y": shares + [None, numbers["decode_share_pct"]],
             "name": "decode share vs output length (marker: this request)",
             "marker": {"size": [0] * len(shares) + [0, 12], "color": "#0b3d91"},
             "xaxis": "x2", "yaxis": "y2"},
        ]
        text = (f"TTFT = prefill of {prompt_tokens:,} tokens at {efficiency_pct:g}% of peak: "
                f"<b>{numbers['ttft_ms']:,.0f} ms</b><br>"
                f"decode = {output_tokens:,} x {itl_ms:g} ms = "
                f"<b>{numbers['decode_ms']:,.0f} ms</b><br>"
                f"total <b>{numbers['total_s']:.3g} s</b>, "
                f"<b>{numbers['decode_share_pct']:.0f}%</b> of it decode "
                f"(prefill {numbers['prefill_share_pct']:.0f}%)" + source_line(m))
        return View(numbers=numbers, traces=traces, text=text)


# --- §3: head-of-line blocking on the scheduler simulator ------------------------------------

@serves("17.3")
class HeadOfLinePanel(Panel):
    """17 §3 live: an unchunked long prefill stalls every in-flight decode (simulated)."""

    title = "Head-of-line blocking (17 §3), on the companion's scheduler simulator"
    controls = (
        hardware_control(),
        _model_choice(),
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
        hw, m = HARDWARE_PRESETS[hardware], _MODELS[model]
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
        traces = hol_timeline_traces(sim["result"])
        text = (f"prefill of {prompt_tokens:,} tokens: {numbers['prefill_TFLOP']:,.1f} TFLOP at "
                f"{efficiency_pct:g}% of peak = <b>{numbers['stall_ms']:,.0f} ms</b> stall "
                f"= <b>{numbers['worst_itl_over_step']:,.0f}x</b> the {step_ms:g} ms step "
                "(closed form)<br>"
                f"simulated: smooth ITL {numbers['sim_baseline_itl_ms']:.3g} ms, worst ITL "
                f"<b>{numbers['sim_worst_itl_ms']:,.0f} ms</b> "
                f"({numbers['sim_worst_over_baseline']:,.0f}x: the stalled round also runs "
                f"the decode step); the long prompt's TTFT "
                f"{numbers['sim_long_ttft_ms']:,.0f} ms" + source_line(m))
        return View(numbers=numbers, traces=traces, text=text)


# --- §3: latency targets under load ------------------------------------------------------------

_SLO_POLICIES = {"continuous batching (whole prefill)": "continuous",
                 "chunked prefill": "chunked"}
_SLO_QUANTILES = np.linspace(0.0, 1.0, 101)
_PCT_COLORS = {"p50": "#6c757d", "p90": "#0b3d91", "p99": "#bc4b51"}


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
        traces.append({"type": "scatter", "mode": "lines", "x": xs.tolist(),
                       "y": (100 * _SLO_QUANTILES).tolist(), "name": f"{name} CDF",
                       "line": {"color": "#2d6a4f", "shape": "hv"}, "xaxis": xa, "yaxis": ya,
                       "hovertemplate": "%{x:.4g} ms: %{y:.0f}% of them<extra></extra>"})
        traces.append({"type": "scatter", "mode": "markers+text", "name": f"{name} percentiles",
                       "x": [pct[p] / units.ms for p in _PCT_COLORS],
                       "y": [float(p[1:]) for p in _PCT_COLORS], "text": list(_PCT_COLORS),
                       "textposition": "middle left",
                       "marker": {"size": 10, "color": list(_PCT_COLORS.values())},
                       "xaxis": xa, "yaxis": ya})
        traces.append({"type": "scatter", "mode": "lines", "name": f"{name} target",
                       "x": [target / units.ms, target / units.ms], "y": [0, 100],
                       "line": {"color": "#bc6c25", "dash": "dash"}, "xaxis": xa, "yaxis": ya})
    return traces


def slo_cdf_layout() -> dict:
    return {
        "showlegend": False,
        "xaxis": {"title": {"text": "time to first token (ms)"}, "domain": [0, 0.46],
                  "anchor": "y", "rangemode": "tozero"},
        "yaxis": {"title": {"text": "requests at or below (%)"}, "range": [0, 101],
                  "anchor": "x"},
        "xaxis2": {"title": {"text": "interval between output tokens (ms, log)"},
                   "type": "log", "domain": [0.54, 1], "anchor": "y2"},
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
            return "<b style='color:#2d6a4f'>met</b>" if ok else "<b style='color:#bc4b51'>missed</b>"

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
