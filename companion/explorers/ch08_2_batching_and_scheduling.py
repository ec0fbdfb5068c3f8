"""8.2 explorers (notebook 08_2_batching_and_scheduling): batching's read volume and step time,
chunked prefill, the token budget, and the scheduling policies of 8.2.2 on the companion's
simulator.

``DecodeBatchPanel``: model, hardware, context, KV format, weights in HBM or ROM, batch ->
Figures 8-3/8-4 and the decode roofline with Experiment 8-1's measurements (8.2.1); a toggle
draws 8.2.2's batch-1 fit at any context beside max(fit, roofline), the fuller model.
``ChunkedPrefillPanel``: prompt, chunk size, decodes running alongside -> pairs and round time
per chunk (8.2.3, Figure 8-8).
``TokenBudgetPanel``: permitted interval, decodes, contexts, captured graph shapes -> new prompt
tokens a round may add (8.2.4), priced by the fit or by the fit floored at the roofline.
``SchedulePanel``: policy, chunk size, token budget, concurrency -> Gantt of the four-request
example with total time and longest interval (8.2.2), simulated.
``BudgetSweepPanel``: six staggered requests -> longest interval and queueing vs token budget
(8.2.4), simulated (the chapter's replay data is not printed).

Figures (from the former figures module):

Figures of 8.2: read volume per output token (Figures 8-3, 8-4), the decode step-time
roofline with Experiment 8-1's measurements, LoRA vs KV capacity, the 8.2.2 Gantt timelines,
the pair-count area (Figure 8-8) and chunk costs; 8.2.4's padding and budget figures are in
``companion.explorers.budget_figures``.

Builders take results computed by ``companion.calc`` / ``companion.sim`` and return plotly
figures; the ``*_traces`` helpers return plain trace/layout dicts that this module's explorers
reuse. Deterministic: fixed colours, no timestamps.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from companion import calc, specs, theme, units
from companion.chapters import ch08
from companion.explorers.axes import whole_ticks
from companion.explorers.base import Control, Panel, View
from companion.explorers.common import accuracy_note
from companion.explorers.budget_figures import (budget_sweep_traces, token_budget_traces,
                                                graph_padding_figure, token_budget_figure,
                                                budget_sweep_figure)
from companion.explorers.common import titled_figure as _fig
from companion.explorers.presets import CH08_MODELS, KV_PRECISIONS, ModelMenu, config_control
from companion.formulas.core import decode_step_parts
from companion.formulas.limits_rounds import (fit_undercut_batch, floored_round_time,
                                              floored_token_budget)
from companion.formulas.moe import moe_kv_crossover_batch
from companion.serves import serves
from companion.sim.scenarios import (
    TOKEN_BUDGETS,
    chapter_8_2_2_requests,
    chapter_schedule,
    chapter_schedules,
    token_budget_sweep,
)

__all__ = [
    "read_volume_figure", "rom_weights_figure", "decode_step_figure", "lora_capacity_figure",
    "schedule_gantt_figure", "pair_area_figure", "chunk_cost_figure",
    "DecodeBatchPanel", "ChunkedPrefillPanel",
    "TokenBudgetPanel", "SchedulePanel", "BudgetSweepPanel", "SWEEP_BUDGETS",
]

# the section this module serves (the notebook of its name): every @serves mark here is
# within it (tests/test_sections.py)
SECTION = "8.2"


POW2_TICKS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]


def _batch_axis(max_batch: int, **extra) -> dict:
    ticks = [t for t in POW2_TICKS if t <= max_batch]
    return {"title": {"text": "batch b (requests per decode round)"}, "type": "log",
            "tickvals": ticks, "ticktext": [str(t) for t in ticks], **extra}


# --- Figures 8-3 and 8-4: bytes read per output token ------------------------------------------

def read_volume_traces(batches, curves, *, rom_curves=None, crossovers=None, unit: str = "GiB",
                       xaxis: str = "x", yaxis: str = "y", crossover_text: bool = True) -> list:
    """Traces of read bytes per output token vs batch.

    ``curves``: {label: (read_bytes array over ``batches``, kv_bytes L k)} from
    ``calc.read_bytes_curve``; each gets its KV-only floor as a dashed line. ``rom_curves``
    (same keys, ``weights_in_hbm=False``) are drawn dotted; ``crossovers``: {label: b_KV},
    printed by its marker, or (``crossover_text=False``: where b_KV may fall anywhere, even past
    the batches drawn) in its legend entry.
    """
    scale = units.BYTE_UNITS[unit]
    xs = np.asarray(batches, dtype=int)
    traces = []
    for i, (label, (reads, kv)) in enumerate(curves.items()):
        color = theme.PALETTE[i % len(theme.PALETTE)]
        # each context its own marker as well as its colour; the dash says which read
        mark = {"color": color, "symbol": theme.SYMBOLS[i % len(theme.SYMBOLS)], "size": 8}
        traces.append({"type": "scatter", "mode": "lines+markers", "x": xs,
                       "y": np.asarray(reads) / scale, "name": f"{label}: D_w/b + L k",
                       "line": {"color": color, "width": 3}, "marker": mark,
                       "xaxis": xaxis, "yaxis": yaxis,
                       "hovertemplate": f"b=%{{x}}: %{{y:.3f}} {unit}<extra>{label}</extra>"})
        traces.append({"type": "scatter", "mode": "lines+markers", "x": [int(xs[0]), int(xs[-1])],
                       "y": [kv / scale, kv / scale], "name": f"{label}: KV alone (L k)",
                       "line": {"color": color, "dash": "dash", "width": 1.5}, "marker": mark,
                       "xaxis": xaxis, "yaxis": yaxis,
                       "hovertemplate": f"L k = %{{y:.3f}} {unit}<extra>{label}</extra>"})
        if rom_curves is not None and label in rom_curves:
            traces.append({"type": "scatter", "mode": "lines+markers", "x": xs,
                           "y": np.asarray(rom_curves[label]) / scale,
                           "name": f"{label}: weights from ROM (HBM reads K only)",
                           "line": {"color": color, "dash": "dot", "width": 3}, "marker": mark,
                           "xaxis": xaxis, "yaxis": yaxis})
        if crossovers is not None and label in crossovers:
            b = int(crossovers[label])
            y = float(np.interp(b, xs, np.asarray(reads) / scale))
            point = {"type": "scatter", "mode": "markers+text", "x": [b], "y": [y],
                     "text": [f"b_KV = {b}"], "textposition": "top center",
                     "name": f"{label}: b_KV (KV reads reach weight reads)",
                     "marker": {"color": color, "size": 10, "symbol": "diamond"},
                     "xaxis": xaxis, "yaxis": yaxis}
            if not crossover_text:
                point.pop("text")
                point.pop("textposition")
                point.update(mode="markers",
                             name=f"{label}: b_KV = {b} (KV reads reach weight reads)")
            traces.append(point)
    return traces


@serves("8.2.1")
def read_volume_figure(batches, curves, *, crossovers=None, unit: str = "GiB",
                       title: str = "Figure 8-3: bytes read per output token vs batch (8.2.1)"):
    """Figure 8-3: D_w / b + L k per context, the KV floors, and b_KV for each context."""
    traces = read_volume_traces(batches, curves, crossovers=crossovers, unit=unit)
    layout = {"height": 440, "xaxis": _batch_axis(max(batches)),
              "yaxis": {"title": {"text": f"read per output token ({unit})"}, "type": "log"},
              "legend": {"orientation": "h", "y": -0.25}}
    return _fig(traces, layout, title)


@serves("8.2.1")
def rom_weights_figure(batches, reads_hbm, reads_rom, *, label: str = "8K context",
                       unit: str = "GiB",
                       title: str = "Figure 8-4: weights served from an independent ROM (8.2.1)"):
    """Figure 8-4: HBM reads per output token, W/B + K (weights in HBM) vs K (weights in ROM).

    The shaded gap is the weight read that batching amortizes; it shrinks as 1/B.
    """
    scale = units.BYTE_UNITS[unit]
    xs = np.asarray(batches, dtype=int)
    traces = [
        {"type": "scatter", "mode": "lines", "x": xs, "y": np.asarray(reads_rom) / scale,
         "name": f"{label}: weights in ROM, HBM reads K", "line": {"color": theme.GREEN, "width": 3}},
        {"type": "scatter", "mode": "lines", "x": xs, "y": np.asarray(reads_hbm) / scale,
         "name": f"{label}: weights in HBM, W/B + K", "fill": "tonexty",
         "fillcolor": theme.rgba(theme.VERMILLION, 0.15), "line": {"color": theme.VERMILLION, "width": 3}},
    ]
    layout = {"height": 420, "xaxis": _batch_axis(max(batches)),
              "yaxis": {"title": {"text": f"HBM read per output token ({unit})"}, "type": "log"},
              "legend": {"orientation": "h", "y": -0.25}}
    return _fig(traces, layout, title)


# --- 8.2.1: decode step-time roofline --------------------------------------------------------

def step_time_traces(curve, *, fitted_s=None, measured_round=None, measured_itl=None,
                     xaxis: str = "x", yaxis: str = "y") -> list:
    """Traces of one decode round's time (ms) vs batch.

    ``curve``: ``calc.decode_step_time_curve`` (batch, compute_s, read_s, step_s). ``fitted_s``:
    the 8.2.2 round-time model at the same batches. ``measured_round`` / ``measured_itl``: dicts
    {"batch": [...], "s": [...], "label": str} of measurements, drawn as markers.
    """
    xs = np.asarray(curve["batch"], dtype=int)
    ms = units.ms
    traces = [
        {"type": "scatter", "mode": "lines", "x": xs, "y": np.asarray(curve["read_s"]) / ms,
         "name": "read term (D_w + b L k) / β", "line": {"color": theme.BLUE, "dash": "dash"},
         "xaxis": xaxis, "yaxis": yaxis},
        {"type": "scatter", "mode": "lines", "x": xs, "y": np.asarray(curve["compute_s"]) / ms,
         "name": "compute term b F / π", "line": {"color": theme.VERMILLION, "dash": "dashdot"},
         "xaxis": xaxis, "yaxis": yaxis},
        {"type": "scatter", "mode": "lines", "x": xs, "y": np.asarray(curve["step_s"]) / ms,
         "name": "roofline lower bound (max of the two)", "line": {"color": theme.INK, "width": 3},
         "xaxis": xaxis, "yaxis": yaxis},
    ]
    if fitted_s is not None:
        traces.append({"type": "scatter", "mode": "lines", "x": xs[:len(fitted_s)],
                       "y": np.asarray(fitted_s, dtype=float) / ms,
                       "name": "8.2.2 round model (fixed + per token + per pair)",
                       "line": {"color": theme.GREEN, "dash": "dot"}, "xaxis": xaxis,
                       "yaxis": yaxis})
    for data, symbol, color in ((measured_round, "circle", theme.PINK),
                                (measured_itl, "x", theme.ORANGE)):
        if data is None:
            continue
        traces.append({"type": "scatter", "mode": "markers", "x": list(data["batch"]),
                       "y": [s / ms for s in data["s"]], "name": data["label"],
                       "marker": {"symbol": symbol, "size": 11, "color": color},
                       "xaxis": xaxis, "yaxis": yaxis})
    return traces


@serves("8.2.1")
def decode_step_figure(curve, *, fitted_s=None, measured_round=None, measured_itl=None,
                       title: str = "One decode round vs batch: roofline and measurements "
                                    "(8.2.1)"):
    """Decode round time vs batch: roofline terms, the fitted round model, measured points."""
    traces = step_time_traces(curve, fitted_s=fitted_s, measured_round=measured_round,
                              measured_itl=measured_itl)
    layout = {"height": 440, "xaxis": _batch_axis(int(max(curve["batch"]))),
              "yaxis": {"title": {"text": "time of one decode round (ms)"},
                        "rangemode": "tozero"},
              "legend": {"orientation": "h", "y": -0.25}}
    return _fig(traces, layout, title)


# --- 8.2.1: LoRA adapters vs KV contexts -----------------------------------------------------

@serves("8.2.1")
def lora_capacity_figure(counts, adapter_bytes: float, context_kv_bytes: float, *,
                         kv_budget_bytes: float, matrix_weight_bytes: float,
                         title: str = "Adapters are small, contexts are not (8.2.1)"):
    """Memory of n LoRA adapters vs n independent contexts' KV (GiB), with the KV pool and D_w.

    ``adapter_bytes`` from ``calc.lora_adapter_bytes``; ``context_kv_bytes`` from
    ``calc.kv_bytes``.
    """
    n = np.asarray(list(counts), dtype=float)
    gib = units.GiB
    traces = [
        {"type": "scatter", "mode": "lines", "x": n.tolist(),
         "y": (n * adapter_bytes / gib).tolist(),
         "name": f"n adapters ({adapter_bytes / units.MiB:.1f} MiB each)",
         "line": {"color": theme.GREEN, "width": 3}},
        {"type": "scatter", "mode": "lines", "x": n.tolist(),
         "y": (n * context_kv_bytes / gib).tolist(),
         "name": f"n independent contexts ({context_kv_bytes / gib:.3f} GiB of KV each)",
         "line": {"color": theme.VERMILLION, "width": 3, "dash": "longdash"}},
        {"type": "scatter", "mode": "lines", "x": [n[0], n[-1]],
         "y": [kv_budget_bytes / gib] * 2, "name": f"KV pool ({kv_budget_bytes / gib:g} GiB)",
         "line": {"color": theme.INK, "dash": "dash"}},
        {"type": "scatter", "mode": "lines", "x": [n[0], n[-1]],
         "y": [matrix_weight_bytes / gib] * 2,
         "name": f"matrix weights D_w ({matrix_weight_bytes / gib:.1f} GiB)",
         "line": {"color": theme.BLUE, "dash": "dot"}},
    ]
    layout = {"height": 420, "xaxis": {"title": {"text": "n (adapters or requests)"}},
              "yaxis": {"title": {"text": "memory (GiB)"}, "type": "log"},
              "legend": {"orientation": "h", "y": -0.25}}
    return _fig(traces, layout, title)


# --- 8.2.2: Gantt timelines of the scheduler simulator ---------------------------------------

def gantt_traces(result, *, xaxis: str = "x", yaxis: str = "y", show_legend: bool = True) -> list:
    """Gantt bars (ms) of one ``companion.sim.scheduler`` Result: one row per request.

    From ``result.gantt_rows()``: waiting (arrival to its first prompt round), each prefill or
    prefill-chunk round and each decode round the request took part in; ticks mark its tokens.
    """
    rows = result.gantt_rows()
    traces = []
    for kind, color, name in (("queued", theme.PHASE_COLORS["queue"], "waiting"),
                              ("prefill", theme.PHASE_COLORS["prefill"], "prefill / prefill chunk"),
                              ("decode", theme.PHASE_COLORS["decode"], "decode step")):
        picked = [r for r in rows if r[3] == kind]
        traces.append({"type": "bar", "orientation": "h", "y": [str(r[0]) for r in picked],
                       "base": [r[1] / units.ms for r in picked],
                       "x": [(r[2] - r[1]) / units.ms for r in picked], "name": name,
                       "marker": {"color": color, "line": {"color": theme.WHITE, "width": 1}},
                       "hovertemplate": f"{kind}: %{{base:.1f}} ms + %{{x:.1f}} ms<extra></extra>",
                       "xaxis": xaxis, "yaxis": yaxis, "legendgroup": kind,
                       "showlegend": show_legend, "width": 0.6})
    tx, ty = [], []
    for rid in result.ids:
        times = result.token_times[rid]
        tx.extend(t / units.ms for t in times)
        ty.extend([str(rid)] * len(times))
    traces.append({"type": "scatter", "mode": "markers", "x": tx, "y": ty,
                   "name": "token emitted", "legendgroup": "token", "showlegend": show_legend,
                   "marker": {"symbol": "line-ns-open", "size": 16, "color": theme.PHASE_COLORS["token"],
                              "line": {"width": 2}}, "xaxis": xaxis, "yaxis": yaxis,
                   "hovertemplate": "token at %{x:.1f} ms<extra></extra>"})
    return traces


@serves("8.2.2")
def schedule_gantt_figure(results, *, title: str = "8.2.2: fixed, continuous and chunked "
                                                   "batching of the four-request example"):
    """Stacked Gantt charts, one per policy: ``results`` maps a label to a scheduler Result."""
    results = dict(results)
    n = len(results)
    gap = 0.08
    height = (1 - gap * (n - 1)) / n
    traces, layout = [], {"barmode": "overlay", "height": 230 * n + 120,
                          "legend": {"orientation": "h", "y": -0.12}, "annotations": []}
    for i, (label, result) in enumerate(results.items()):
        ax = "" if i == 0 else str(i + 1)
        traces += gantt_traces(result, xaxis=f"x{ax}", yaxis=f"y{ax}", show_legend=i == 0)
        top = 1 - i * (height + gap)
        layout[f"yaxis{ax}"] = {"domain": [max(0.0, round(top - height, 6)), round(top, 6)],
                               "autorange": "reversed",
                               "type": "category", "anchor": f"x{ax}"}
        layout[f"xaxis{ax}"] = {"anchor": f"y{ax}", "matches": "x" if i else None,
                               "title": {"text": "time (ms)" if i == n - 1 else ""}}
        layout["annotations"].append({"text": f"<b>{label}</b>", "xref": "paper",
                                      "yref": "paper", "x": 0, "y": round(top, 6),
                                      "yanchor": "bottom", "xanchor": "left",
                                      "showarrow": False})
    for key in list(layout):
        if key.startswith("xaxis") and layout[key].get("matches") is None:
            layout[key].pop("matches")
    return _fig(traces, layout, title)


# --- Figure 8-8: pairs as area; chunk costs --------------------------------------------------

def pair_area_traces(chunk_tokens: int, history_tokens: int, pairs: int, *, xaxis: str = "x",
                     yaxis: str = "y", show_legend: bool = True) -> list:
    """Figure 8-8 for one chunk: the c x h rectangle (old context) and the causal triangle.

    The new token i (1..c) attends to h + i keys; x is the key position, y the new token.
    ``pairs`` (from ``calc.attention_pairs``) is printed in the legend/hover.
    """
    c, h = int(chunk_tokens), int(history_tokens)
    traces = [
        {"type": "scatter", "mode": "lines", "x": [0, h, h, 0, 0], "y": [0, 0, c, c, 0],
         "fill": "toself", "fillcolor": theme.rgba(theme.BLUE, 0.35), "line": {"color": theme.BLUE},
         "name": "c h: new tokens x old context", "legendgroup": "rect",
         "showlegend": show_legend, "xaxis": xaxis, "yaxis": yaxis,
         "hovertemplate": f"c h = {c * h:,} pairs<extra></extra>"},
        {"type": "scatter", "mode": "lines", "x": [h, h, h + c, h], "y": [0, c, c, 0],
         "fill": "toself", "fillcolor": theme.rgba(theme.VERMILLION, 0.45), "line": {"color": theme.VERMILLION},
         "name": "c(c+1)/2: causal triangle inside the chunk", "legendgroup": "tri",
         "showlegend": show_legend, "xaxis": xaxis, "yaxis": yaxis,
         "hovertemplate": f"c(c+1)/2 = {c * (c + 1) // 2:,} pairs<extra></extra>"},
        # the count reads from the subplot's left edge (a little in from the y ticks), above
        # the areas (centred on a small area at the left it would run past the edge)
        {"type": "scatter", "mode": "text", "x": [0], "y": [c * 1.12],
         "textposition": "middle right",
         "text": [f"  h = {h:,}: {pairs:,} pairs"], "showlegend": False, "hoverinfo": "skip",
         "xaxis": xaxis, "yaxis": yaxis},
    ]
    return traces


@serves("8.2.3")
def pair_area_figure(chunk_tokens: int, histories, pairs, *,
                     title: str = "Figure 8-8: causal query-key pairs of one chunk as area "
                                  "(8.2.3)"):
    """Figure 8-8: side-by-side areas for each history h (``pairs``: the matching counts).

    All panels share the key axis, so the rectangle's growth with h is visible at scale.
    """
    histories = [int(h) for h in histories]
    pairs = [int(p) for p in pairs]
    n = len(histories)
    gap = 0.06
    width = (1 - gap * (n - 1)) / n
    right = max(histories) + chunk_tokens
    traces, layout = [], {"height": 360, "legend": {"orientation": "h", "y": -0.3}}
    for i, (h, p) in enumerate(zip(histories, pairs)):
        ax = "" if i == 0 else str(i + 1)
        traces += pair_area_traces(chunk_tokens, h, p, xaxis=f"x{ax}", yaxis=f"y{ax}",
                                   show_legend=i == 0)
        left = i * (width + gap)
        layout[f"xaxis{ax}"] = {"domain": [round(left, 6), min(1.0, round(left + width, 6))],
                               "anchor": f"y{ax}",
                               "range": [0, right * 1.02],   # not a chapter input
                               "title": {"text": "key position (tokens)"}}
        layout[f"yaxis{ax}"] = {"anchor": f"x{ax}", "range": [0, chunk_tokens * 1.3],
                               "title": {"text": "new token in the chunk" if i == 0 else ""}}
    return _fig(traces, layout, title)


def chunk_cost_traces(pairs, round_s=None, *, xaxis: str = "x", yaxis: str = "y",
                      yaxis_time: str = "y2") -> list:
    """Bars of pairs per chunk (left axis) and, if given, each chunk's round time (ms, right)."""
    idx = list(range(1, len(pairs) + 1))
    traces = [{"type": "bar", "x": idx, "y": [int(p) for p in pairs],
               "name": "causal pairs of the chunk", "marker": {"color": theme.BLUE},
               "xaxis": xaxis, "yaxis": yaxis}]
    if round_s is not None:
        traces.append({"type": "scatter", "mode": "lines+markers", "x": idx,
                       "y": [t / units.ms for t in round_s], "name": "round time (ms)",
                       "line": {"color": theme.VERMILLION}, "xaxis": xaxis, "yaxis": yaxis_time})
    return traces


def _chunk_axis(n_chunks: int) -> dict:
    """The x axis of the per-chunk plots: chunks 1 .. n, ticked at whole chunks."""
    return {"title": {"text": "chunk (in prompt order)"}, "tickmode": "array",
            "tickvals": whole_ticks(1, max(1, n_chunks))}


@serves("8.2.3")
def chunk_cost_figure(pairs, round_s=None, *,
                      title: str = "Chunks of one prompt: pairs and round time (8.2.3)"):
    """Per-chunk causal pairs (bars) and round time (line, right axis)."""
    traces = chunk_cost_traces(pairs, round_s)
    layout = {"height": 400, "xaxis": _chunk_axis(len(pairs)),
              "yaxis": {"title": {"text": "causal query-key pairs"}},
              "yaxis2": {"title": {"text": "round time (ms)"}, "overlaying": "y",
                         "side": "right", "rangemode": "tozero"},
              "legend": {"orientation": "h", "y": -0.25}}
    return _fig(traces, layout, title)


HARDWARE = {h.name: h for h in (specs.RTX_PRO_6000, specs.H100_SXM, specs.H200_SXM,
                                specs.A100_80GB)}
# Chapter 8's models, then the shelf (MoE ones among them)
MODELS = ModelMenu(CH08_MODELS)
# 8.2.2's batch-1 fit where the chapter draws it, or at any context beside max(fit, roofline)
ROUND_FIT = {"at the chapter's setting only": "chapter",
             "at any context, and floored by the roofline (fuller)": "floored"}
ROUND_MODELS = {"8.2.2's fit (the chapter)": "fit",
                "the fit, floored by the roofline (fuller)": "floored"}

_BATCHES = np.unique(np.geomspace(1, 256, 48).round().astype(int)).tolist()


def _measurement_traces_apply(model, hardware, context_tokens, kv_precision, weights_in_hbm):
    """Experiment 8-1's measurements belong to one setting: Qwen3-8B, RTX PRO 6000, 2K, BF16."""
    return (model == specs.QWEN3_8B.name and hardware == specs.RTX_PRO_6000.name
            and context_tokens == ch08.BATCH_SWEEP_MEASURED["context_tokens"]
            and kv_precision == 2.0
            and weights_in_hbm)


@serves("8.2.1")
class DecodeBatchPanel(Panel):
    """Read volume per output token (Figures 8-3, 8-4) and one decode round's time vs batch,
    with Experiment 8-1's measured rounds and the batch sweep's intervals (8.2.1)."""

    title = "Batching decode: bytes per output token and round time (8.2.1)"
    controls = (
        MODELS.control(specs.QWEN3_8B.name),
        Control("hardware", "accelerator", "choice", specs.RTX_PRO_6000.name,
                options={name: name for name in HARDWARE}),
        Control("context_tokens", "context L (tokens)", "int", 2048, 128, 131072, 128),
        Control("kv_precision", "KV format", "choice", 2.0, options=KV_PRECISIONS),
        Control("weights_in_hbm", "weights served from", "choice", True,
                options={"HBM (conventional)": True, "independent ROM (Figure 8-4)": False}),
        Control("batch", "batch b (requests)", "int", 16, 1, 256, 1),
        config_control(),
        Control("round_fit", "8.2.2's round fit", "choice", "chapter", options=ROUND_FIT),
    )
    main_control = "batch"
    base_layout = {
        "height": 500,
        "xaxis": _batch_axis(256, domain=[0, 0.45], anchor="y"),
        "yaxis": {"title": {"text": "HBM read per output token (GiB)"}, "type": "log",
                  "anchor": "x"},
        "xaxis2": _batch_axis(256, domain=[0.55, 1.0], anchor="y2"),
        "yaxis2": {"title": {"text": "one decode round (ms)"}, "anchor": "x2",
                   "rangemode": "tozero"},
        "legend": {"orientation": "h", "y": -0.3},
    }

    def compute(self, *, model, hardware, context_tokens, kv_precision, weights_in_hbm,
                batch, config_json, round_fit) -> View:
        (m, source), hw = MODELS.pick(model, config_json), HARDWARE[hardware]
        L = context_tokens
        # one sequence's KV read per step (sliding layers keep at most their window)
        kv = calc.kv_bytes_at_context(m, L, bytes_per_value=kv_precision)
        # weights read per output token: D_w / b, or for an MoE D_w(b) / b (experts touched)
        moe = calc.moe_read_curve(m, _BATCHES)
        reads = np.array([r["weight_read_per_token_bytes"] for r in moe]) + kv
        rom = np.full(len(_BATCHES), float(kv))
        b_kv = moe_kv_crossover_batch(m, L, bytes_per_value=kv_precision)
        label = f"L = {L:,}"
        traces = read_volume_traces(_BATCHES, {label: (reads, kv)}, rom_curves={label: rom},
                                    crossovers={label: b_kv}, crossover_text=False)
        traces.append(_every_expert_trace(m, kv))
        at_b = calc.moe_read_curve(m, [batch])[0]
        here = at_b["weight_read_per_token_bytes"] + kv if weights_in_hbm else kv
        traces.append({"type": "scatter", "mode": "markers", "x": [batch],
                       "y": [here / units.GiB], "name": f"b = {batch}",
                       "marker": {"size": 12, "color": theme.INK, "symbol": "circle-open",
                                  "line": {"width": 3}}})

        kw = dict(bytes_per_value=kv_precision, weights_in_hbm=weights_in_hbm)
        curve = calc.decode_step_time_curve(m, hw, _BATCHES, L, **kw)
        chapter = _measurement_traces_apply(m.name, hardware, L, kv_precision, weights_in_hbm)
        # the fit belongs to Qwen3-8B on the RTX PRO 6000 (any context); "floored" draws it
        # there at every context, beside max(fit, roofline) (fuller, 8.2.2)
        fit_card = _measurement_traces_apply(m.name, hardware, 2048, kv_precision,
                                             weights_in_hbm)
        extend = fit_card and round_fit == "floored"
        fitted = ([calc.mixed_round_time_s(b, L, 0) for b in _BATCHES]
                  if chapter or extend else None)
        sweep = ch08.BATCH_SWEEP_MEASURED
        measured_round = {"batch": ch08.EXP81_BATCHES, "s": ch08.EXP81_ROUND_S,
                          "label": "Experiment 8-1: measured decode round (engine)"}
        measured_itl = {"batch": sweep["batch"], "s": sweep["itl_s"],
                        "label": "batch sweep: measured mean output interval (client)"}
        if not chapter:   # keep the trace count fixed so the figure updates in place
            # (with no points, not NaNs: plotly.js keeps a legend entry for a line of NaNs)
            fitted = fitted or []
            measured_round = dict(measured_round, batch=[], s=[])
            measured_itl = dict(measured_itl, batch=[], s=[])
        traces += step_time_traces(curve, fitted_s=fitted, measured_round=measured_round,
                                   measured_itl=measured_itl, xaxis="x2", yaxis="y2")
        floor = ([floored_round_time(m, hw, b, L)["floored_s"] / units.ms for b in _BATCHES]
                 if extend else [])
        traces.append({"type": "scatter", "mode": "lines", "x": _BATCHES[:len(floor)],
                       "y": floor, "name": "8.2.2 fit, never below the roofline (fuller)",
                       "showlegend": extend, "xaxis": "x2", "yaxis": "y2",
                       "line": {"color": theme.GREEN, "dash": "dot", "width": 4}})
        parts = decode_step_parts(m, hw, batch, L, **kw)
        here_fit = floored_round_time(m, hw, batch, L)
        traces.append({"type": "scatter", "mode": "markers", "x": [batch],
                       "y": [parts.step_s / units.ms], "name": f"bound at b = {batch}",
                       "xaxis": "x2", "yaxis": "y2", "showlegend": False,
                       "marker": {"size": 12, "color": theme.INK, "symbol": "circle-open",
                                  "line": {"width": 3}}})
        catchup = calc.compute_catchup_batch(m, hw, L, **kw)
        fit = calc.max_concurrent(ch08.KV_BUDGET_BYTES, m, L, 256, bytes_per_value=kv_precision)
        numbers = {
            "read_per_token_GiB": here / units.GiB,
            "weight_share_GiB": (at_b["weight_read_per_token_bytes"] if weights_in_hbm
                                 else 0.0) / units.GiB,
            "kv_share_GiB": kv / units.GiB,
            "b_KV": b_kv,
            "requests_fit_12GiB": fit,
            "bound_step_ms": parts.step_s / units.ms,
            "bound": parts.bound,
            "bound_tokens_per_s": batch / parts.step_s,
            "compute_catchup_batch": catchup,
            "compute_bound_below_context": calc.compute_bound_context_tokens(
                m, hw, bytes_per_value=kv_precision),
            # fuller (8.2.1, 8.2.2): intensity with the KV read counted; the batch-1 fit
            # (Qwen3-8B on the RTX PRO 6000) against the roofline of the same round
            "weight_only_intensity": calc.weight_reuse_intensity(batch),
            "step_intensity": parts.compute_s * hw.peak_flops_per_s
            / (parts.read_s * hw.mem_bw_bytes_per_s),
            "fit_round_ms": here_fit["fit_s"] / units.ms,
            "floored_round_ms": here_fit["floored_s"] / units.ms,
            "fit_undercuts_roofline_from_batch": fit_undercut_batch(m, hw, L),
        }
        catch = ("never (each request adds more read time than compute time)"
                 if math.isinf(catchup) else f"b = {catchup:,.0f}")
        text = (f"<b>{m.name}</b> on {hw.name}, L = {L:,}<br>"
                f"read per output token at b = {batch}: <b>{numbers['read_per_token_GiB']:.3f} "
                f"GiB</b> (weights {numbers['weight_share_GiB']:.3f} + KV "
                f"{numbers['kv_share_GiB']:.3f})<br>"
                f"b_KV = {b_kv}; requests whose KV fits 12 GiB (256 out): {fit}<br>"
                f"roofline round: {numbers['bound_step_ms']:.2f} ms ({parts.bound}-bound), "
                f"at most {numbers['bound_tokens_per_s']:,.0f} tok/s<br>"
                f"compute catches up with reads at: {catch}" + _moe_lines(m, at_b, numbers)
                + (f"<br>8.2.2 fit {numbers['fit_round_ms']:.2f} ms, floored "
                   f"{numbers['floored_round_ms']:.2f} ms; the fit dips below the roofline "
                   f"from b = {numbers['fit_undercuts_roofline_from_batch']:,.0f}"
                   if extend else "") + source)
        # the floored curve's legend row takes room from the plots: give it back
        text += accuracy_note("decode-bound")
        return View(numbers=numbers, traces=traces, text=text,
                    layout={"height": self.base_layout["height"] + (25 if extend else 0)})


def _every_expert_trace(m, kv) -> dict:
    """For an MoE, the read if each step read every expert (a dense model of the same size,
    D_w / b + KV); empty for a dense model, so the trace count stays fixed."""
    xs, ys = ([], []) if not m.is_moe else (
        _BATCHES, [m.streamed_weight_bytes / b / units.GiB + kv / units.GiB for b in _BATCHES])
    return {"type": "scatter", "mode": "lines", "x": xs, "y": ys,
            "name": "if every expert were read (a dense model of the same size)",
            "showlegend": m.is_moe, "line": {"color": theme.GREY, "dash": "longdash", "width": 2},
            "hovertemplate": "b=%{x}: %{y:.3f} GiB<extra>all experts</extra>"}


def _moe_lines(m, at_b, numbers) -> str:
    """The readout's MoE lines: experts a batch touches and what batching saves so far; fills
    ``numbers`` with them (NaN-free: a dense model gets no MoE entries)."""
    if not m.is_moe:
        return ""
    b = at_b["batch"]
    one = calc.moe_read_curve(m, [1])[0]
    saved = one["weight_read_per_token_bytes"] / at_b["weight_read_per_token_bytes"]
    numbers.update({"experts_touched": at_b["experts_touched"],
                    "weights_read_per_step_GiB": at_b["weight_read_bytes"] / units.GiB,
                    "weight_read_cut_vs_b1": saved})
    return (f"<br>MoE: {m.n_experts} experts per layer, {m.experts_per_token} per token; a "
            f"batch of {b} touches <b>{at_b['experts_touched']:.1f}</b> per layer (uniform "
            f"routing), so a step reads {numbers['weights_read_per_step_GiB']:.2f} of "
            f"{m.streamed_weight_bytes / units.GiB:.2f} GiB of weights<br>"
            f"weight read per token is {saved:.2f}x smaller than at b = 1 (a dense model: "
            f"{b}x); skewed routing touches fewer experts, so it reads less")



@serves("8.2.3")
class ChunkedPrefillPanel(Panel):
    """A prompt split into chunks: causal pairs and round time of each chunk, with decode steps
    of other requests sharing the rounds (8.2.3, Figure 8-8)."""

    title = "Chunked prefill: pairs and round time per chunk (8.2.3)"
    controls = (
        Control("prompt_tokens", "prompt (tokens)", "int", ch08.LONG_PROMPT_TOKENS, 512, 32768,
                512),
        Control("chunk_tokens", "chunk c (tokens)", "int", ch08.CHUNK_TOKENS, 128, 8192, 128),
        Control("decode_requests", "decoding requests in each round", "int", 0, 0, 64, 1),
        Control("decode_context", "their context (tokens)", "int", 2048, 0, 32768, 256),
    )
    main_control = "chunk_tokens"
    base_layout = {
        "height": 420, "xaxis": {"title": {"text": "chunk (in prompt order)"}},
        "yaxis": {"title": {"text": "causal query-key pairs"}},
        "yaxis2": {"title": {"text": "round time (ms)"}, "overlaying": "y", "side": "right",
                   "rangemode": "tozero"},
        "legend": {"orientation": "h", "y": -0.25},
    }

    def compute(self, *, prompt_tokens, chunk_tokens, decode_requests, decode_context) -> View:
        chunks = calc.prefill_chunks(prompt_tokens, chunk_tokens)
        pairs = calc.chunk_pair_series(prompt_tokens, chunk_tokens)
        rounds = [calc.mixed_round_time_s(decode_requests, decode_context, c, h)
                  for c, h in chunks]
        # a round with only the decode steps (with none: the fixed cost of an empty round)
        alone = calc.mixed_round_time_s(decode_requests, decode_context, 0)
        weights = calc.split_weight_read_bytes(specs.QWEN3_8B.streamed_weight_bytes,
                                               prompt_tokens, chunk_tokens)
        numbers = {
            "chunks": len(chunks),
            "first_chunk_pairs": pairs[0],
            "last_chunk_pairs": pairs[-1],
            "last_over_first": pairs[-1] / pairs[0],
            "first_round_ms": rounds[0] / units.ms,
            "last_round_ms": rounds[-1] / units.ms,
            "prefill_total_ms": sum(rounds) / units.ms,
            "decode_round_alone_ms": alone / units.ms,
            "weight_reads_GB": weights / units.GB,
        }
        text = (f"{len(chunks)} chunks of up to {chunk_tokens:,} tokens<br>"
                f"pairs: first {pairs[0]:,}, last {pairs[-1]:,} "
                f"({numbers['last_over_first']:.1f}x)<br>"
                f"round time with {decode_requests} decode(s): first "
                f"{numbers['first_round_ms']:.1f} ms, last {numbers['last_round_ms']:.1f} ms "
                f"(the round without the chunk: {numbers['decode_round_alone_ms']:.2f} ms)<br>"
                f"whole prompt: {numbers['prefill_total_ms']:,.0f} ms; weights read "
                f"{len(chunks)} times = {numbers['weight_reads_GB']:,.1f} GB")
        return View(numbers=numbers, traces=chunk_cost_traces(pairs, rounds), text=text,
                    layout={"xaxis": _chunk_axis(len(chunks))})


GRAPH_SHAPES = {"no CUDA graphs": "none", "graphs for 16 and 32 rows (8.2.4)": "16,32",
                "graphs for powers of two, 1 to 8192 rows": "pow2"}


def graph_shapes(choice: str):
    """Captured graph row counts of a GRAPH_SHAPES choice (None: no graphs)."""
    if choice == "none":
        return None
    if choice == "pow2":
        return tuple(2 ** i for i in range(14))
    return tuple(int(x) for x in choice.split(","))


_TARGETS_S = (np.linspace(27, 300, 28) * units.ms).tolist()
_LAST_CHUNK_HISTORY = ch08.LONG_PROMPT_TOKENS - ch08.CHUNK_TOKENS   # 8.2.3's last chunk


@lru_cache(maxsize=256)
def _budget_curve(decode_requests: int, context_tokens: int, history_tokens: int,
                  graphs: str, round_model: str = "fit") -> tuple:
    """The budget over _TARGETS_S by 8.2.2's fit, or by the fit floored at the roofline
    (cached: only the marker moves with the target)."""
    kw = dict(captured_shapes=graph_shapes(graphs))
    if round_model == "fit":
        return tuple(calc.token_budget_for_itl(t, decode_requests, context_tokens,
                                               history_tokens, **kw) for t in _TARGETS_S)
    return tuple(floored_token_budget(t, specs.QWEN3_8B, specs.RTX_PRO_6000, decode_requests,
                                      context_tokens, history_tokens, **kw) for t in _TARGETS_S)


@serves("8.2.4")
class TokenBudgetPanel(Panel):
    """From a permitted output interval to the new prompt tokens a round may add, for running
    decodes with context L and a prompt whose first h tokens are cached (8.2.4)."""

    title = "Token budget from the permitted output interval (8.2.4)"
    controls = (
        Control("itl_target_ms", "permitted interval (ms)", "float", 50.0, 27.0, 300.0, 1.0),
        Control("decode_requests", "decoding requests", "int", 1, 0, 64, 1),
        Control("context_tokens", "their context L (tokens)", "int", 2048, 0, 32768, 256),
        Control("history_tokens", "prompt tokens already cached h", "int", 0, 0, 16384, 256),
        Control("graphs", "CUDA graphs", "choice", "none", options=GRAPH_SHAPES),
        Control("round_model", "round priced by", "choice", "fit", options=ROUND_MODELS),
    )
    main_control = "itl_target_ms"
    base_layout = {
        "height": 420, "xaxis": {"title": {"text": "permitted output interval (ms)"}},
        "yaxis": {"title": {"text": "new prompt tokens per round"}, "rangemode": "tozero"},
        "legend": {"orientation": "h", "y": -0.25},
    }

    def compute(self, *, itl_target_ms, decode_requests, context_tokens, history_tokens,
                graphs, round_model) -> View:
        shapes = graph_shapes(graphs)
        kw = dict(captured_shapes=shapes)
        target = itl_target_ms * units.ms
        args = (decode_requests, context_tokens)
        fit_budget = calc.token_budget_for_itl(target, *args, history_tokens, **kw)
        floored = floored_token_budget(target, specs.QWEN3_8B, specs.RTX_PRO_6000, *args,
                                       history_tokens, **kw)
        budget = fit_budget if round_model == "fit" else floored
        curves = {f"h = {h:,} cached": _budget_curve(decode_requests, context_tokens, h, graphs,
                                                     round_model)
                  for h in sorted({0, history_tokens, _LAST_CHUNK_HISTORY})}
        traces = token_budget_traces(_TARGETS_S, curves,
                                     marker=(target, budget, "this setting"))
        rows = decode_requests + budget
        round_s = calc.mixed_round_time_s(*args, budget, history_tokens, **kw)
        decode_only = calc.mixed_round_time_s(*args, 0, **kw)
        if round_model == "floored":   # the same rounds, never below their roofline
            card = (specs.QWEN3_8B, specs.RTX_PRO_6000)
            round_s = floored_round_time(*card, *args, budget, history_tokens, **kw)["floored_s"]
            decode_only = floored_round_time(*card, *args, 0, **kw)["floored_s"]
        executed = calc.padded_rows(rows, shapes) if shapes and rows else rows
        numbers = {
            "token_budget": budget,
            "round_ms": round_s / units.ms,
            "decode_round_ms": decode_only / units.ms,
            "rows": rows,
            "rows_executed": executed,
            "fit_token_budget": fit_budget,
            "floored_token_budget": floored,
        }
        text = (f"permitted interval {itl_target_ms:g} ms -> a round may add "
                f"<b>{budget:,}</b> prompt tokens (h = {history_tokens:,})<br>"
                f"that round: {numbers['round_ms']:.1f} ms; the decode round alone "
                f"{numbers['decode_round_ms']:.2f} ms<br>"
                f"rows {rows:,}, executed {executed:,}<br>"
                f"budget by the fit alone {fit_budget:,}; with the roofline floor {floored:,}")
        if budget == 0:
            text += "<br><b>the decode steps alone already exceed the interval</b>"
        return View(numbers=numbers, traces=traces, text=text)


# --- 8.2.2 / 8.2.4 on the scheduling simulator -------------------------------------------------

POLICY_LABELS = {"fixed (static) batching": "static", "continuous batching": "continuous",
                 "continuous + chunked prefill": "chunked"}
_TRADE_CHUNKS = (256, 512, 1024, 2048, 4096, 8192)
# one open marker per chunk size, growing with it, so coinciding points stay distinguishable
_TRADE_SYMBOLS = ("circle-open", "square-open", "diamond-open", "triangle-up-open",
                  "pentagon-open", "hexagon-open")
# 8.2.4: "as the per-round token limit rises from 512 to 8192"
SWEEP_BUDGETS = TOKEN_BUDGETS


# r2's prompt in 8.2.2's four requests, the one the panel's slider replaces
_R2_PROMPT_TOKENS = next(r.prompt_tokens for r in chapter_8_2_2_requests() if r.id == "r2")


@serves("8.2.2")
class SchedulePanel(Panel):
    """8.2.2's four requests on the companion's scheduler: the Gantt chart of one policy, and
    the trade between total time and the longest output interval as the chunk size moves."""

    title = "Four requests, three policies (8.2.2), simulated"
    controls = (
        Control("policy", "policy", "choice", "chunked", options=POLICY_LABELS),
        Control("chunk_tokens", "prefill chunk (tokens)", "int",
                ch08.SCHEDULE_EXAMPLE_CHUNK_TOKENS, 128, 8192, 128),
        Control("token_budget", "token budget per round", "int",
                ch08.SCHEDULE_EXAMPLE_TOKEN_BUDGET, 256, 16384, 256),
        Control("max_running", "requests running at most", "int",
                ch08.SCHEDULE_EXAMPLE_MAX_RUNNING, 1, 4, 1),
        Control("long_prompt_tokens", "r2's prompt (tokens)", "int", _R2_PROMPT_TOKENS, 1024,
                32768, 1024),
    )
    main_control = "policy"
    base_layout = {
        "height": 700, "barmode": "overlay", "margin": {"t": 60, "r": 20, "b": 150},
        "xaxis": {"title": {"text": "time (ms)"}, "anchor": "y"},
        "yaxis": {"domain": [0.5, 1.0], "autorange": "reversed", "type": "category",
                  "anchor": "x"},
        # from zero: with one request running at a time every policy has the same longest
        # interval, and an autorange around that one value would tick its rounding noise
        "xaxis2": {"title": {"text": "longest output interval (ms)"}, "anchor": "y2",
                   "rangemode": "tozero"},
        "yaxis2": {"title": {"text": "total time (ms)"}, "domain": [0.0, 0.36], "anchor": "x2"},
        # the legend in its own rows at the figure's foot, below the lower plot's x title
        "legend": theme.foot_legend(),
    }

    def compute(self, *, policy, chunk_tokens, token_budget, max_running,
                long_prompt_tokens) -> View:
        runs = chapter_schedules(max_running=max_running, chunk_tokens=chunk_tokens,
                                 token_budget=token_budget, long_prompt_tokens=long_prompt_tokens)
        shown = runs[policy]
        traces = gantt_traces(shown)
        sweep = [chapter_schedule("chunked", max_running, c, token_budget, long_prompt_tokens)
                 for c in _TRADE_CHUNKS]
        ms = units.ms
        # each point of the trade is named by its own legend entry (chunk sizes by marker
        # symbol), not by a label beside it: points of neighbouring chunk sizes sit close, or
        # on top of each other once the token budget caps the chunk
        traces.append({"type": "scatter", "mode": "lines", "xaxis": "x2",
                       "yaxis": "y2", "x": [r.max_itl_s / ms for r in sweep],
                       "y": [r.makespan_s / ms for r in sweep],
                       "name": f"chunked, chunk sizes (budget {token_budget:,}):",
                       "hoverinfo": "skip",
                       "line": {"color": theme.PHASE_COLORS["prefill"]}})
        for k, (c, r, symbol) in enumerate(zip(_TRADE_CHUNKS, sweep, _TRADE_SYMBOLS)):
            traces.append({"type": "scatter", "mode": "markers", "xaxis": "x2", "yaxis": "y2",
                           "x": [r.max_itl_s / ms], "y": [r.makespan_s / ms],
                           "name": f"{c:,}",
                           "hovertemplate": f"chunk {c:,}: %{{x:.0f}} ms longest, "
                                            f"%{{y:.0f}} ms total<extra></extra>",
                           "marker": {"size": 8 + 2 * k, "symbol": symbol,
                                      "color": theme.PHASE_COLORS["prefill"],
                                      "line": {"width": 2, "color": theme.PHASE_COLORS["prefill"]}}})
        for name, color, symbol in (("static", theme.GREY, "square"),
                                    ("continuous", theme.BLUE, "diamond")):
            r = runs[name]
            traces.append({"type": "scatter", "mode": "markers", "xaxis": "x2",
                           "yaxis": "y2", "x": [r.max_itl_s / ms], "y": [r.makespan_s / ms],
                           "name": name, "marker": {"size": 11, "color": color,
                                                    "symbol": symbol}})
        traces.append({"type": "scatter", "mode": "markers", "xaxis": "x2", "yaxis": "y2",
                       "x": [shown.max_itl_s / ms], "y": [shown.makespan_s / ms],
                       "name": "shown above", "marker": {"size": 18, "color": theme.INK,
                                                         "symbol": "circle-open",
                                                         "line": {"width": 3}}})
        numbers = {"total_ms": shown.makespan_s / ms, "longest_interval_ms": shown.max_itl_s / ms,
                   "rounds": shown.n_rounds}
        for name, r in runs.items():
            numbers[f"{name}_total_ms"] = r.makespan_s / ms
            numbers[f"{name}_longest_interval_ms"] = r.max_itl_s / ms
        label = {v: k for k, v in POLICY_LABELS.items()}[policy]
        text = (f"<b>{label}</b>: total <b>{numbers['total_ms']:.0f} ms</b>, longest output "
                f"interval <b>{numbers['longest_interval_ms']:.0f} ms</b>, "
                f"{shown.n_rounds} rounds<br>"
                + "<br>".join(f"{name}: {numbers[f'{name}_total_ms']:.0f} ms total, "
                              f"{numbers[f'{name}_longest_interval_ms']:.0f} ms longest"
                              for name in runs)
                + "<br><i>round model fitted to Experiment 8-1 (8.2.2); simulated</i>")
        return View(numbers=numbers, traces=traces, text=text)


@lru_cache(maxsize=256)
def _budget_sweep(n_requests: int, interarrival_ms: float, prompt_tokens: int,
                  output_tokens: int) -> tuple:
    """``token_budget_sweep`` over SWEEP_BUDGETS, all requests allowed to run (cached)."""
    return tuple(token_budget_sweep(SWEEP_BUDGETS, n_requests=n_requests,
                                    interarrival_s=interarrival_ms * units.ms,
                                    prompt_tokens=prompt_tokens, output_tokens=output_tokens,
                                    max_running=n_requests))


def _prefill_load(prompt_tokens: int, budget: int, interarrival_ms: float) -> float:
    """Time one prompt's prefill takes alone, in rounds of ``budget`` tokens (8.2.2's round
    model), over the gap between arrivals: above 1, prompts arrive faster than prefill clears
    them and the queue is a growing backlog (infinite for simultaneous arrivals)."""
    alone = sum(calc.mixed_round_time_s(0, 0, c, h)
                for c, h in calc.prefill_chunks(prompt_tokens, budget))
    return alone / (interarrival_ms * units.ms) if interarrival_ms > 0 else math.inf


@serves("8.2.4")
class BudgetSweepPanel(Panel):
    """Staggered arrivals under chunked prefill: how the per-round token budget trades the
    queueing of later arrivals against the longest output interval (8.2.4). Generated by the
    companion's simulator; the chapter's six-request replay data is not printed."""

    title = "Token budget sweep, staggered arrivals (8.2.4), generated by the simulator"
    controls = (
        Control("n_requests", "requests", "int", ch08.REPLAY_REQUESTS, 2, 12, 1),
        Control("interarrival_ms", "arrival every (ms)", "float",
                ch08.REPLAY_INTERARRIVAL_S / units.ms, 0.0, 400.0, 10.0),
        Control("prompt_tokens", "prompt (tokens)", "int", 4096, 256, 16384, 256),
        Control("output_tokens", "output (tokens)", "int", 64, 2, 256, 1),
        Control("itl_target_ms", "interval target (ms)", "float", 50.0, 27.0, 400.0, 1.0),
    )
    main_control = "itl_target_ms"
    base_layout = {
        "height": 420,
        "xaxis": {"title": {"text": "token budget per round (tokens)"}, "type": "log",
                  "tickvals": list(SWEEP_BUDGETS),
                  "ticktext": [str(b) for b in SWEEP_BUDGETS]},
        "yaxis": {"title": {"text": "longest output interval (ms)"}, "rangemode": "tozero"},
        "yaxis2": {"title": {"text": "queueing (ms)"}, "overlaying": "y", "side": "right",
                   "rangemode": "tozero"},
        "legend": {"orientation": "h", "y": -0.25},
    }

    def compute(self, *, n_requests, interarrival_ms, prompt_tokens, output_tokens,
                itl_target_ms) -> View:
        rows = _budget_sweep(n_requests, interarrival_ms, prompt_tokens, output_tokens)
        budgets = [r["token_budget"] for r in rows]
        traces = budget_sweep_traces(budgets, [r["max_itl_s"] for r in rows],
                                     [r["queue_later_mean_s"] for r in rows])
        target = itl_target_ms * units.ms
        traces.append({"type": "scatter", "mode": "lines", "x": [budgets[0], budgets[-1]],
                       "y": [itl_target_ms, itl_target_ms], "name": "interval target",
                       "line": {"color": theme.RED, "dash": "dot"}})
        within = [r["token_budget"] for r in rows if r["max_itl_s"] <= target]
        fastest = min(rows, key=lambda r: (r["queue_later_mean_s"], -r["token_budget"]))
        numbers = {
            "largest_budget_within_target": max(within) if within else 0,
            "budget_with_least_queueing": fastest["token_budget"],
        }
        loads = {}
        for r in rows:
            b = r["token_budget"]
            loads[b] = _prefill_load(prompt_tokens, b, interarrival_ms)
            numbers[f"max_itl_ms@{b}"] = r["max_itl_s"] / units.ms
            numbers[f"queue_mean_ms@{b}"] = r["queue_later_mean_s"] / units.ms
            numbers[f"prefill_load@{b}"] = loads[b]
        best = (f"<b>{numbers['largest_budget_within_target']:,}</b> tokens" if within
                else "<b>none</b> of the budgets")
        carried = [b for b in budgets if loads[b] < 1]
        if not carried:
            verdict = "above 1 at every budget: the queueing is a growing backlog"
        elif len(carried) == len(budgets):
            verdict = "below 1 at every budget: later arrivals wait only for the round in progress"
        else:
            verdict = f"below 1 from {carried[0]:,} tokens on: smaller budgets build a backlog"
        load_line = ("all arrive at once, so the queueing is a backlog by construction"
                     if interarrival_ms <= 0 else
                     f"{loads[budgets[0]]:.2f} at {budgets[0]:,} to {loads[budgets[-1]]:.2f} at "
                     f"{budgets[-1]:,} tokens, {verdict}")
        text = (f"{n_requests} requests of {prompt_tokens:,} + {output_tokens} tokens, one every "
                f"{interarrival_ms:g} ms<br>prefill load (one prompt alone over the gap): "
                f"{load_line}<br>longest interval under "
                f"{itl_target_ms:g} ms: {best}<br>least queueing of later arrivals: "
                f"<b>{fastest['token_budget']:,}</b> tokens "
                f"({fastest['queue_later_mean_s'] / units.ms:.0f} ms mean)<br>"
                f"<i>generated by the companion's simulator (8.2.2's round model)</i>")
        return View(numbers=numbers, traces=traces, text=text)
