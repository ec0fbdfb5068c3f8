"""Figures of 8.2: read volume per output token (Figures 8-3, 8-4), the decode step-time
roofline with Experiment 8-1's measurements, LoRA vs KV capacity, the 8.2.2 Gantt timelines,
the pair-count area (Figure 8-8), chunk costs, CUDA-graph padding and the token budget.

Builders take results computed by ``companion.calc`` / ``companion.sim`` and return plotly
figures; the ``*_traces`` helpers return plain trace/layout dicts that the explorers in
``companion.explorers.ch08_batching`` reuse. Deterministic: fixed colours, no timestamps.
"""

from __future__ import annotations

import numpy as np

from companion import units
from companion.explorers.common import titled_figure as _fig
from companion.figures.ch08_lifecycle import PHASE_COLORS

__all__ = [
    "read_volume_figure", "rom_weights_figure", "decode_step_figure", "lora_capacity_figure",
    "schedule_gantt_figure", "pair_area_figure", "chunk_cost_figure", "graph_padding_figure",
    "token_budget_figure", "budget_sweep_figure",
]

CONTEXT_COLORS = ("#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00")
REQUEST_COLORS = ("#0072b2", "#e69f00", "#009e73", "#cc79a7", "#d55e00", "#56b4e9",
                  "#8c564b", "#7f7f7f")
POW2_TICKS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]


def _batch_axis(max_batch: int, **extra) -> dict:
    ticks = [t for t in POW2_TICKS if t <= max_batch]
    return {"title": {"text": "batch b (requests per decode round)"}, "type": "log",
            "tickvals": ticks, "ticktext": [str(t) for t in ticks], **extra}


# --- Figures 8-3 and 8-4: bytes read per output token ------------------------------------------

def read_volume_traces(batches, curves, *, rom_curves=None, crossovers=None, unit: str = "GiB",
                       xaxis: str = "x", yaxis: str = "y") -> list:
    """Traces of read bytes per output token vs batch.

    ``curves``: {label: (read_bytes array over ``batches``, kv_bytes L k)} from
    ``calc.read_bytes_curve``; each gets its KV-only floor as a dashed line. ``rom_curves``
    (same keys, ``weights_in_hbm=False``) are drawn dotted; ``crossovers``: {label: b_KV}.
    """
    scale = units.BYTE_UNITS[unit]
    xs = np.asarray(batches, dtype=int)
    traces = []
    for i, (label, (reads, kv)) in enumerate(curves.items()):
        color = CONTEXT_COLORS[i % len(CONTEXT_COLORS)]
        traces.append({"type": "scatter", "mode": "lines", "x": xs,
                       "y": np.asarray(reads) / scale, "name": f"{label}: D_w/b + L k",
                       "line": {"color": color, "width": 3}, "xaxis": xaxis, "yaxis": yaxis,
                       "hovertemplate": f"b=%{{x}}: %{{y:.3f}} {unit}<extra>{label}</extra>"})
        traces.append({"type": "scatter", "mode": "lines", "x": [int(xs[0]), int(xs[-1])],
                       "y": [kv / scale, kv / scale], "name": f"{label}: KV alone (L k)",
                       "line": {"color": color, "dash": "dash", "width": 1.5},
                       "xaxis": xaxis, "yaxis": yaxis,
                       "hovertemplate": f"L k = %{{y:.3f}} {unit}<extra>{label}</extra>"})
        if rom_curves is not None and label in rom_curves:
            traces.append({"type": "scatter", "mode": "lines", "x": xs,
                           "y": np.asarray(rom_curves[label]) / scale,
                           "name": f"{label}: weights from ROM (HBM reads K only)",
                           "line": {"color": color, "dash": "dot", "width": 3},
                           "xaxis": xaxis, "yaxis": yaxis})
        if crossovers is not None and label in crossovers:
            b = int(crossovers[label])
            y = float(np.interp(b, xs, np.asarray(reads) / scale))
            traces.append({"type": "scatter", "mode": "markers+text", "x": [b], "y": [y],
                           "text": [f"b_KV = {b}"], "textposition": "top center",
                           "name": f"{label}: b_KV (KV reads reach weight reads)",
                           "marker": {"color": color, "size": 10, "symbol": "diamond"},
                           "xaxis": xaxis, "yaxis": yaxis})
    return traces


def read_volume_figure(batches, curves, *, crossovers=None, unit: str = "GiB",
                       title: str = "Figure 8-3: bytes read per output token vs batch (8.2.1)"):
    """Figure 8-3: D_w / b + L k per context, the KV floors, and b_KV for each context."""
    traces = read_volume_traces(batches, curves, crossovers=crossovers, unit=unit)
    layout = {"height": 440, "xaxis": _batch_axis(max(batches)),
              "yaxis": {"title": {"text": f"read per output token ({unit})"}, "type": "log"},
              "legend": {"orientation": "h", "y": -0.25}}
    return _fig(traces, layout, title)


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
         "name": f"{label}: weights in ROM, HBM reads K", "line": {"color": "#009e73", "width": 3}},
        {"type": "scatter", "mode": "lines", "x": xs, "y": np.asarray(reads_hbm) / scale,
         "name": f"{label}: weights in HBM, W/B + K", "fill": "tonexty",
         "fillcolor": "rgba(213, 94, 0, 0.15)", "line": {"color": "#d55e00", "width": 3}},
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
         "name": "read term (D_w + b L k) / beta", "line": {"color": "#0072b2", "dash": "dash"},
         "xaxis": xaxis, "yaxis": yaxis},
        {"type": "scatter", "mode": "lines", "x": xs, "y": np.asarray(curve["compute_s"]) / ms,
         "name": "compute term b F / P", "line": {"color": "#d55e00", "dash": "dash"},
         "xaxis": xaxis, "yaxis": yaxis},
        {"type": "scatter", "mode": "lines", "x": xs, "y": np.asarray(curve["step_s"]) / ms,
         "name": "roofline lower bound (max of the two)", "line": {"color": "black", "width": 3},
         "xaxis": xaxis, "yaxis": yaxis},
    ]
    if fitted_s is not None:
        traces.append({"type": "scatter", "mode": "lines", "x": xs,
                       "y": np.asarray(fitted_s, dtype=float) / ms,
                       "name": "8.2.2 round model (fixed + per token + per pair)",
                       "line": {"color": "#009e73"}, "xaxis": xaxis, "yaxis": yaxis})
    for data, symbol, color in ((measured_round, "circle", "#cc79a7"),
                                (measured_itl, "x", "#e69f00")):
        if data is None:
            continue
        traces.append({"type": "scatter", "mode": "markers", "x": list(data["batch"]),
                       "y": [s / ms for s in data["s"]], "name": data["label"],
                       "marker": {"symbol": symbol, "size": 11, "color": color},
                       "xaxis": xaxis, "yaxis": yaxis})
    return traces


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
         "line": {"color": "#009e73", "width": 3}},
        {"type": "scatter", "mode": "lines", "x": n.tolist(),
         "y": (n * context_kv_bytes / gib).tolist(),
         "name": f"n independent contexts ({context_kv_bytes / gib:.3f} GiB of KV each)",
         "line": {"color": "#d55e00", "width": 3}},
        {"type": "scatter", "mode": "lines", "x": [n[0], n[-1]],
         "y": [kv_budget_bytes / gib] * 2, "name": f"KV pool ({kv_budget_bytes / gib:g} GiB)",
         "line": {"color": "black", "dash": "dash"}},
        {"type": "scatter", "mode": "lines", "x": [n[0], n[-1]],
         "y": [matrix_weight_bytes / gib] * 2,
         "name": f"matrix weights D_w ({matrix_weight_bytes / gib:.1f} GiB)",
         "line": {"color": "#0072b2", "dash": "dot"}},
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
    for kind, color, name in (("queued", PHASE_COLORS["queue"], "waiting"),
                              ("prefill", PHASE_COLORS["prefill"], "prefill / prefill chunk"),
                              ("decode", PHASE_COLORS["decode"], "decode step")):
        picked = [r for r in rows if r[3] == kind]
        traces.append({"type": "bar", "orientation": "h", "y": [str(r[0]) for r in picked],
                       "base": [r[1] / units.ms for r in picked],
                       "x": [(r[2] - r[1]) / units.ms for r in picked], "name": name,
                       "marker": {"color": color, "line": {"color": "white", "width": 1}},
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
                   "marker": {"symbol": "line-ns-open", "size": 16, "color": PHASE_COLORS["token"],
                              "line": {"width": 2}}, "xaxis": xaxis, "yaxis": yaxis,
                   "hovertemplate": "token at %{x:.1f} ms<extra></extra>"})
    return traces


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
         "fill": "toself", "fillcolor": "rgba(0, 114, 178, 0.35)", "line": {"color": "#0072b2"},
         "name": "c h: new tokens x old context", "legendgroup": "rect",
         "showlegend": show_legend, "xaxis": xaxis, "yaxis": yaxis,
         "hovertemplate": f"c h = {c * h:,} pairs<extra></extra>"},
        {"type": "scatter", "mode": "lines", "x": [h, h, h + c, h], "y": [0, c, c, 0],
         "fill": "toself", "fillcolor": "rgba(213, 94, 0, 0.45)", "line": {"color": "#d55e00"},
         "name": "c(c+1)/2: causal triangle inside the chunk", "legendgroup": "tri",
         "showlegend": show_legend, "xaxis": xaxis, "yaxis": yaxis,
         "hovertemplate": f"c(c+1)/2 = {c * (c + 1) // 2:,} pairs<extra></extra>"},
        {"type": "scatter", "mode": "text", "x": [(h + c) / 2], "y": [c * 1.12],
         "text": [f"h = {h:,}: {pairs:,} pairs"], "showlegend": False, "hoverinfo": "skip",
         "xaxis": xaxis, "yaxis": yaxis},
    ]
    return traces


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
               "name": "causal pairs of the chunk", "marker": {"color": "#0072b2"},
               "xaxis": xaxis, "yaxis": yaxis}]
    if round_s is not None:
        traces.append({"type": "scatter", "mode": "lines+markers", "x": idx,
                       "y": [t / units.ms for t in round_s], "name": "round time (ms)",
                       "line": {"color": "#d55e00"}, "xaxis": xaxis, "yaxis": yaxis_time})
    return traces


def chunk_cost_figure(pairs, round_s=None, *,
                      title: str = "Chunks of one prompt: pairs and round time (8.2.3)"):
    """Per-chunk causal pairs (bars) and round time (line, right axis)."""
    traces = chunk_cost_traces(pairs, round_s)
    layout = {"height": 400, "xaxis": {"title": {"text": "chunk (in prompt order)"}},
              "yaxis": {"title": {"text": "causal query-key pairs"}},
              "yaxis2": {"title": {"text": "round time (ms)"}, "overlaying": "y",
                         "side": "right", "rangemode": "tozero"},
              "legend": {"orientation": "h", "y": -0.25}}
    return _fig(traces, layout, title)


# --- 8.2.4: CUDA-graph padding and the token budget ------------------------------------------

def graph_padding_figure(rows, executed, *, captured_shapes,
                         title: str = "CUDA-graph padding: rows needed vs rows executed "
                                      "(8.2.4)"):
    """Executed rows (``calc.padded_rows``) vs rows needed, with the captured shapes marked."""
    rows = [int(r) for r in rows]
    traces = [
        {"type": "scatter", "mode": "lines", "x": rows, "y": [int(e) for e in executed],
         "name": "rows executed (next captured graph)", "line": {"shape": "hv", "width": 3,
                                                                 "color": "#d55e00"}},
        {"type": "scatter", "mode": "lines", "x": [rows[0], rows[-1]], "y": [rows[0], rows[-1]],
         "name": "rows needed", "line": {"dash": "dash", "color": "#0072b2"}},
        {"type": "scatter", "mode": "markers", "x": list(captured_shapes),
         "y": list(captured_shapes), "name": "captured graph shapes",
         "marker": {"size": 10, "color": "black"}},
    ]
    layout = {"height": 380, "xaxis": {"title": {"text": "rows this round needs"}},
              "yaxis": {"title": {"text": "rows the GPU executes"}},
              "legend": {"orientation": "h", "y": -0.25}}
    return _fig(traces, layout, title)


def token_budget_traces(targets_s, budgets_by_label, *, marker=None, xaxis: str = "x",
                        yaxis: str = "y") -> list:
    """Lines of new prompt tokens a round may add vs the permitted interval (ms), per label.

    ``budgets_by_label``: {label: budgets over ``targets_s``} from ``calc.token_budget_for_itl``;
    ``marker``: optional (target_s, budget, label) point.
    """
    xs = np.asarray(targets_s, dtype=float) / units.ms
    traces = []
    for i, (label, budgets) in enumerate(budgets_by_label.items()):
        traces.append({"type": "scatter", "mode": "lines", "x": xs,
                       "y": np.asarray(budgets, dtype=int),
                       "name": label, "line": {"color": CONTEXT_COLORS[i % len(CONTEXT_COLORS)],
                                               "shape": "hv" if "graph" in label else "linear"},
                       "xaxis": xaxis, "yaxis": yaxis})
    if marker is not None:
        t, b, label = marker
        traces.append({"type": "scatter", "mode": "markers+text", "x": [t / units.ms],
                       "y": [int(b)], "text": [f"{int(b):,} tokens"], "textposition": "top left",
                       "name": label, "marker": {"size": 11, "color": "black"},
                       "xaxis": xaxis, "yaxis": yaxis})
    return traces


def token_budget_figure(targets_s, budgets_by_label, *, marker=None,
                        title: str = "Token budget from the permitted output interval (8.2.4)"):
    """New prompt tokens per round that keep the round within the interval target."""
    traces = token_budget_traces(targets_s, budgets_by_label, marker=marker)
    layout = {"height": 420, "xaxis": {"title": {"text": "permitted output interval (ms)"}},
              "yaxis": {"title": {"text": "new prompt tokens per round"},
                        "rangemode": "tozero"},
              "legend": {"orientation": "h", "y": -0.25}}
    return _fig(traces, layout, title)


def budget_sweep_traces(budgets, longest_itl_s, queue_s, *, xaxis: str = "x", yaxis: str = "y",
                        yaxis_queue: str = "y2") -> list:
    """Longest output interval and queueing time (ms) vs the per-round token budget."""
    xs = [int(b) for b in budgets]
    return [
        {"type": "scatter", "mode": "lines+markers", "x": xs,
         "y": [t / units.ms for t in longest_itl_s], "name": "longest output interval (ms)",
         "line": {"color": "#d55e00", "width": 3}, "xaxis": xaxis, "yaxis": yaxis},
        {"type": "scatter", "mode": "lines+markers", "x": xs, "y": [t / units.ms for t in queue_s],
         "name": "queueing of later arrivals (ms, right axis)",
         "line": {"color": "#0072b2", "width": 3, "dash": "dash"}, "xaxis": xaxis,
         "yaxis": yaxis_queue},
    ]


def budget_sweep_figure(budgets, longest_itl_s, queue_s, *, interval_target_s=None,
                        title: str = "Token budget sweep, six staggered requests "
                                     "(generated by the companion's simulator)"):
    """The 8.2.4 trade: a larger budget empties the queue sooner but stretches intervals."""
    traces = budget_sweep_traces(budgets, longest_itl_s, queue_s)
    layout = {"height": 420,
              "xaxis": {"title": {"text": "token budget per round (tokens)"}, "type": "log",
                        "tickvals": [int(b) for b in budgets],
                        "ticktext": [str(int(b)) for b in budgets]},
              "yaxis": {"title": {"text": "longest output interval (ms)"},
                        "rangemode": "tozero"},
              "yaxis2": {"title": {"text": "queueing (ms)"}, "overlaying": "y", "side": "right",
                         "rangemode": "tozero"},
              "legend": {"orientation": "h", "y": -0.25}, "shapes": []}
    if interval_target_s is not None:
        layout["shapes"] = [{"type": "line", "xref": "paper", "x0": 0, "x1": 1,
                             "y0": interval_target_s / units.ms,
                             "y1": interval_target_s / units.ms,
                             "line": {"color": "#c00000", "dash": "dot"}}]
    return _fig(traces, layout, title)
