"""17 §2's explorer home (notebook 17_02_roofline): the roofline.

Figures (plotly, deterministic: fixed colours, fixed axis ranges, no timestamps):
``roofline_figure`` (``roofline_traces``/``roofline_layout`` over ``calc.roofline_point``
results). The panel draws with the same ``*_traces`` helpers, so the stored figure and the
live one are the same picture.

Panel: ``RooflinePanel`` (hardware, model, batch, live context per sequence, prompt length and
weight / KV precision -> decode at batch 1, batched decode (weights only and with each
sequence's KV), and prefill placed on the log-log roofline; the readout lists every plotted
number). Its "FLOPs counted" toggle moves the two points whose work includes attention to the
fuller count (``calc.decode_attention_intensity``, ``calc.prefill_readings``).
"""

from __future__ import annotations

from companion import calc, specs, theme, units
from companion import validate as v
from companion.chapters import ch17
from companion.explorers.base import Control, Panel, View
from companion.explorers.common import plotly_go as _go
from companion.explorers.common import accuracy_note, readable
from companion.explorers.presets import (
    HARDWARE_PRESETS,
    KV_PRECISION_BYTES,
    config_control,
    hardware_control,
)
from companion.explorers.presets import ROOFLINE_MENU, roofline_model_control
from companion.formulas.core import (expected_experts_touched, moe_streamed_weight_bytes,
                                     ridge_point)
from companion.formulas.fuller import decode_attention_intensity, prefill_readings
from companion.formulas.performance import decode_ridge_batch
from companion.serves import serves
from companion.specs import Hardware

__all__ = [
    "roofline_traces", "roofline_layout", "roofline_figure", "ROOFLINE_X_RANGE",
    "ROOFLINE_Y_RANGE", "RooflinePanel",
]

# the section this module serves (the notebook of its name): every @serves mark here is
# within it (tests/test_sections.py)
SECTION = "17.2"


# log10 axis ranges, fixed so that the picture does not jump when a control moves:
# intensity 0.1 .. ~1.6e5 FLOP/byte (the farthest point the controls reach is the 405B's
# 32,768-token prefill with INT4 weights and attention counted, ~1.4e5), attainable
# 0.01 .. ~3,000 TFLOP/s
ROOFLINE_X_RANGE = (-1.0, 5.2)
ROOFLINE_Y_RANGE = (-2.0, 3.5)

ROOF_COLOR = theme.INK
REFERENCE_COLOR = theme.GREY        # dashed, where the ridge is dotted
RIDGE_COLOR = theme.GREY
POINT_COLORS = (theme.VERMILLION, theme.PINK, theme.BLUE, theme.GREEN, theme.ORANGE, theme.SKY)
POINT_SYMBOLS = ("circle", "circle-open", "diamond", "square", "triangle-up", "x")
# a point marked phase="prefill" always draws as the tan triangle (theme.ORANGE, the theme's
# prefill colour), in every figure; the other points take the remaining styles in order
PREFILL_STYLE = 4
_OTHER_STYLES = tuple(i for i in range(len(POINT_COLORS)) if i != PREFILL_STYLE)


def _point_styles(points) -> list[int]:
    """The style index of each point: ``PREFILL_STYLE`` for a prefill, the others in turn."""
    out, k = [], 0
    for p in points:
        if p.get("phase") == "prefill":
            out.append(PREFILL_STYLE)
        else:
            out.append(_OTHER_STYLES[k % len(_OTHER_STYLES)])
            k += 1
    return out


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
    """A workload's legend entry: its label, intensity and share of peak on one line."""
    return (f"{p['label']}: {readable(p['intensity_flop_per_byte'])} FLOP/B, "
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
    ``calc.roofline_points``) and optionally ``phase="prefill"``, which draws the point as the
    prefill's tan triangle whatever its place in the list. The roof is min(peak, intensity x
    bandwidth) in TFLOP/s; the ridge (peak / bandwidth) is a dotted vertical line;
    ``reference`` draws a second card's roof in grey (the chapter's H100 when another card is chosen; hidden when it is the same card).
    Three traces (roof, reference roof, ridge) and then one per point, last: each point is a
    marker of its own colour and symbol whose legend entry carries its label, intensity and
    share of peak, so labels never print over each other or off the plot however close the
    points sit. Lean on purpose: an explorer re-sends every property on each update.
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
    styles = _point_styles(pts)
    return [
        {"type": "scatter", "mode": "lines", "x": rx, "y": ry, "name": f"roof: {hw.name}",
         "line": {"color": ROOF_COLOR, "width": 3}, **axes},
        {"type": "scatter", "mode": "lines", "x": fx, "y": fy,
         "name": f"roof: {ref.name} (reference)",
         "visible": True if ref != hw else "legendonly",
         "line": {"color": REFERENCE_COLOR, "dash": "dash"}, **axes},
        {"type": "scatter", "mode": "lines+text", "x": [ridge, ridge],
         "y": [10.0 ** ROOFLINE_Y_RANGE[0], peak_t], "name": f"ridge = {ridge:,.0f} FLOP/B",
         "text": ["", f"ridge {ridge:,.0f}"], "textposition": "top center",
         "line": {"color": RIDGE_COLOR, "dash": "dot"}, **axes},
    ] + [
        {"type": "scatter", "mode": "markers", "name": _point_label(p),
         "x": [p["intensity_flop_per_byte"]], "y": [p["attainable_flops_per_s"] / units.TFLOP],
         "hovertemplate": f"{p['label']}<br>%{{x:,.3g}} FLOP/B, %{{y:,.4g}} TFLOP/s<extra></extra>",
         "marker": {"size": 13, "color": POINT_COLORS[i], "symbol": POINT_SYMBOLS[i],
                    "line": {"width": 2, "color": POINT_COLORS[i]}},
         **axes}
        for i, p in zip(styles, pts)
    ]


@serves("17.2")
def roofline_figure(hardware: Hardware, points, *, reference: Hardware | None = None,
                    title: str = "Roofline (17 §2): decode starves the arithmetic units, "
                                 "prefill saturates them"):
    """The 17 §2 roofline as a plotly Figure: ``roofline_traces`` with a title."""
    traces = roofline_traces(hardware, points, reference=reference)
    # taller than the plot needs: the legend below it carries one line per workload
    layout = dict(roofline_layout(), height=580, template=theme.TEMPLATE,
                  title={"text": title})
    return _go().Figure(data=traces, layout=layout)


# bytes per stored weight (17 §2's FP32 aside, BF16 as served, §10's INT8/FP8, a 4-bit format)
_WEIGHT_BYTES = {"FP32 (4 B)": 4.0, "BF16 (2 B)": 2.0, "INT8 / FP8 (1 B)": 1.0,
                 "INT4 (0.5 B)": 0.5}

# which FLOPs a point counts: the chapter's 2 per parameter per token, or those plus attention's
# over each token's context (the fuller model of 17 §2's "Where this model breaks")
_FLOP_COUNTS = {"matrices only (17 §2)": "matrices",
                "matrices + attention over the context": "attention"}


@serves("17.2")
class RooflinePanel(Panel):
    """17 §2 live: where decode (batch 1), batched decode and prefill sit on a card's roofline."""

    title = "Roofline (17 §2): decode, batched decode and prefill"
    controls = (
        hardware_control(),
        roofline_model_control(),
        Control("batch", "decode batch B (sequences)", "int", ch17.BATCH, 1, 1024, 1),
        Control("context_tokens", "live KV per sequence (tokens)", "int",
                ch17.CHAT_LIVE_TOKENS, 0, ch17.LONGEST_CONTEXT_TOKENS, 100),
        Control("prompt_tokens", "prefill prompt (tokens)", "int", ch17.PROMPT_TOKENS,
                16, 32_768, 16),
        Control("weight_bytes", "weight precision", "choice", 2.0, options=_WEIGHT_BYTES),
        Control("kv_bytes", "KV precision", "choice", 2.0, options=KV_PRECISION_BYTES),
        Control("flops", "FLOPs counted", "choice", "matrices", options=_FLOP_COUNTS),
        config_control(),
    )
    main_control = "batch"
    base_layout = dict(roofline_layout(), height=620)   # the legend: a line per workload

    def compute(self, *, hardware, model, batch, context_tokens, prompt_tokens, weight_bytes,
                kv_bytes, flops, config_json) -> View:
        hw, (m, source) = HARDWARE_PRESETS[hardware], ROOFLINE_MENU.pick(model, config_json)
        kw = dict(bytes_per_param=weight_bytes)
        i_b1 = calc.decode_intensity(m, 1, **kw)
        i_weights = calc.decode_intensity(m, batch, **kw)
        i_kv = calc.decode_intensity(m, batch, context_tokens, kv_bytes_per_value=kv_bytes, **kw)
        i_prefill = calc.prefill_intensity(m, prompt_tokens, **kw)
        # the fuller count: attention's FLOPs over each token's context, the same bytes
        full_kv = decode_attention_intensity(m, batch, context_tokens,
                                             kv_bytes_per_value=kv_bytes, **kw)
        full_prefill = prefill_readings(m, hw, prompt_tokens, **kw)
        with_attention = flops == "attention"
        tag = ", attention counted" if with_attention else ""
        shown = ((full_kv["intensity"], full_prefill["intensity"]) if with_attention
                 else (i_kv, i_prefill))
        points = [
            dict(label="decode, batch 1", **calc.roofline_point(i_b1, hw)),
            dict(label=f"decode, batch {batch}, weights only",
                 **calc.roofline_point(i_weights, hw)),
            dict(label=f"decode, batch {batch}, + {context_tokens:,} live KV tokens each{tag}",
                 **calc.roofline_point(shown[0], hw)),
            dict(label=f"prefill, {prompt_tokens:,}-token prompt{tag}", phase="prefill",
                 **calc.roofline_point(shown[1], hw)),
        ]
        split = calc.decode_time_split(m, hw, **kw)
        step = calc.decode_vs_context(m, hw, context_tokens, batch=batch,
                                      kv_bytes_per_value=kv_bytes, **kw)
        ridge = calc.ridge_point(hw)
        numbers = {"ridge_flop_per_byte": ridge,
                   "peak_TFLOPs": hw.peak_flops_per_s / units.TFLOP,
                   "bandwidth_TBs": hw.mem_bw_bytes_per_s / units.TB}
        # the chapter's count under its own keys whatever the toggle, the fuller one beside it
        for key, i in (("decode_b1", i_b1), ("decode_batch_weights_only", i_weights),
                       ("decode_batch_with_kv", i_kv), ("prefill", i_prefill),
                       ("decode_batch_with_kv_attention", full_kv["intensity"]),
                       ("prefill_attention", full_prefill["intensity"])):
            p = calc.roofline_point(i, hw)
            numbers[f"{key}_intensity"] = p["intensity_flop_per_byte"]
            numbers[f"{key}_TFLOPs"] = p["attainable_flops_per_s"] / units.TFLOP
            numbers[f"{key}_pct_of_peak"] = 100 * p["fraction_of_peak"]
        numbers.update({
            "decode_b1_step_ms": split["step_s"] / units.ms,
            "decode_b1_tok_s": split["tokens_per_s"],
            "wait_to_work": split["wait_to_work"],
            "decode_batch_step_ms": step["step_s"] / units.ms,
            "decode_batch_tok_s": step["tokens_per_s"],
            "batch_to_reach_ridge": decode_ridge_batch(m, hw, **kw),
            "decode_attention_share_pct": 100 * full_kv["attention_share"],
            "prefill_attention_share_pct": 100 * full_prefill["attention_share"],
            "prefill_chapter_ms": full_prefill["chapter_s"] / units.ms,
            "prefill_roofline_ms": full_prefill["roofline_s"] / units.ms,
        })
        numbers.update(_memory_numbers(m, hw, weight_bytes, step["kv_bytes"]))
        rows = "".join(
            f"<tr><td>{p['label']}</td><td align='right'>{readable(p['intensity_flop_per_byte'])}"
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
                + _memory_line(numbers, batch, context_tokens, hw)
                + _fuller_lines(numbers, full_prefill, prompt_tokens, with_attention)
                + _moe_sweep_lines(m, hw, batch, i_b1, numbers, kw) + source)
        text += accuracy_note("decode-bound")
        traces = roofline_traces(hw, points, reference=specs.H100_SXM)
        # the batch sweep under the workload points (which stay the last traces, on top)
        at = len(traces) - len(points)
        traces[at:at] = _decode_sweep_traces(m, hw, i_b1, kw)
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
               "line": {"color": theme.GREEN, "width": 1.5}, "marker": {"size": 6}}]
    every = (moe_streamed_weight_bytes(m, 1) / m.streamed_weight_bytes
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
                       "line": {"color": theme.GREY, "dash": dash, "width": 1.5}})
    return traces


def _moe_sweep_lines(m, hw, batch, i_b1, numbers, kw) -> str:
    """Readout lines for an MoE: experts a batch touches, its intensity against a dense
    model's at the same batch, and the ridge batch of each (adds them to ``numbers``)."""
    if not m.is_moe:
        return ""
    touched = expected_experts_touched(m.n_experts, m.experts_per_token, batch)
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


def _memory_numbers(m, hw, weight_bytes: float, kv_bytes: float) -> dict:
    """What the batched decode point needs in memory: every stored weight at the chosen
    precision, the batch's live KV and the chapter's runtime reserve (17 §4), against the card.
    The intensity formula does not look at memory, so a point can sit where no card holds it."""
    weights = m.with_(bytes_per_param=weight_bytes).weight_bytes
    needed = weights + kv_bytes + ch17.RUNTIME_RESERVE_BYTES
    return {"memory_weights_GB": weights / units.GB, "memory_kv_GB": kv_bytes / units.GB,
            "memory_needed_GB": needed / units.GB,
            "memory_over_card": needed / hw.mem_bytes, "fits_in_memory": needed <= hw.mem_bytes}


def _memory_line(numbers, batch, context_tokens, hw) -> str:
    """A readout line: does the batched decode point fit on the card at all?"""
    def gb(x):
        return f"{x:,.0f}" if x >= 100 else f"{x:.3g}"

    parts = (f"{gb(numbers['memory_weights_GB'])} GB of weights + "
             f"{gb(numbers['memory_kv_GB'])} GB of KV ({batch:,} x {context_tokens:,} tokens) + "
             f"{ch17.RUNTIME_RESERVE_BYTES / units.GB:g} GB reserve = "
             f"{gb(numbers['memory_needed_GB'])} GB")
    if numbers["fits_in_memory"]:
        return f"<br>memory: {parts}, fits the {hw.mem_bytes / units.GB:g} GB card"
    return (f"<br><b>does not fit</b>: {parts}, {numbers['memory_over_card']:.1f}x the "
            f"{hw.mem_bytes / units.GB:g} GB card; the batched point shows the intensity such a "
            f"batch would have, not one this card can run")


def _fuller_lines(numbers, prefill, prompt_tokens, with_attention) -> str:
    """Readout lines for the fuller count: attention's share of the FLOPs, and the prefill's
    time priced by compute at 50% of peak (the chapter) and by the roofline's max."""
    shown = "shown" if with_attention else "toggle \"FLOPs counted\" to show it"
    return (f"<br>attention's share of the FLOPs ({shown}): "
            f"{numbers['decode_attention_share_pct']:.3g}% of the batched decode's, "
            f"{numbers['prefill_attention_share_pct']:.3g}% of the prefill's<br>"
            f"prefill of {prompt_tokens:,} tokens: {numbers['prefill_chapter_ms']:.3g} ms by "
            f"compute at {100 * ch17.PREFILL_EFFICIENCY:.0f}% of peak (17 §2), "
            f"<b>{numbers['prefill_roofline_ms']:.3g} ms</b> on the roofline with attention "
            f"({prefill['bound']}-bound: "
            + ("the weight read sets it" if prefill["bound"] == "memory" else
               "the compute sets it") + ")")
