"""Figures of Chapter 17 §6-§10 and its interview questions: batching on a simulated queue,
chunked prefill's trade, tensor/pipeline parallelism and placement, disaggregated pools and
KV-aware routing, MBU/MFU, the levers (quantization, speculative decoding), and the batch-size
window.

Builders take numbers computed by ``companion.calc`` or results of ``companion.sim`` and return
plotly figures; the ``*_traces`` helpers return plain ``(traces, layout)`` dicts that the
explorers in ``companion.explorers.ch17_parallelism`` draw with, so a stored figure and a live one are
the same picture. Deterministic: fixed colours, no timestamps, no randomness.
"""

from __future__ import annotations

import math

from companion import validate as v
from companion import units
from companion.explorers.common import titled_figure as _fig, to_ms as _ms

__all__ = [
    # §6
    "batch_slots", "slot_gantt_traces", "batching_gantt_figure", "chunk_trade_traces",
    "chunk_trade_figure",
    # §7
    "tp_step_traces", "tp_step_figure", "pipeline_grid", "pipeline_traces",
    "pipeline_figure", "placement_traces", "placement_figure",
    # §8
    "pool_sizing_traces", "pool_sizing_figure", "kv_transfer_figure", "routing_traces",
    "routing_figure",
    # §9
    "sm_share_figure", "utilization_traces", "utilization_figure",
    # §10
    "quantization_figure", "speculative_traces", "speculative_figure",
    # interview
    "batch_window_traces", "batch_window_figure",
    "SERVING_COLORS",
]

SERVING_COLORS = {
    "prefill": "#e69f00", "decode": "#56b4e9", "idle": "#d9d9d9", "comm": "#d55e00",
    "read": "#0072b2", "wire": "#cc79a7", "fill": "#e69f00", "steady": "#0072b2",
    "drain": "#cc79a7", "cold": "#d55e00", "warm": "#009e73", "mix": "#0072b2",
    "slo": "#c00000", "cap": "#009e73", "cap2": "#7f7f7f", "good": "rgba(0, 158, 115, 0.15)",
}
# one colour per request in a slot Gantt, cycled (colour-blind-safe Okabe-Ito order)
REQUEST_PALETTE = ("#0072b2", "#e69f00", "#009e73", "#cc79a7", "#56b4e9", "#d55e00",
                   "#f0e442", "#8c564b")


def _discrete_scale(colours) -> list:
    """A plotly colour scale mapping the integers 0 .. n-1 (with cmin -0.5, cmax n - 0.5) to
    ``colours``."""
    n = len(colours)
    scale = []
    for i, c in enumerate(colours):
        scale += [[i / n, c], [(i + 1) / n, c]]
    return scale


_PALETTE_SCALE = _discrete_scale(REQUEST_PALETTE)


# --- §6 static vs continuous: a slot Gantt of a simulated queue -------------------------------

def batch_slots(result, *, tolerance_s: float = 1e-9) -> list[tuple]:
    """Assign each request of a scheduler ``Result`` to a batch slot, for drawing.

    Returns (slot, request id, start_s, finish_s) per request that ran, where start is its first
    prompt round and finish its last token; a request takes the lowest-numbered slot whose
    previous occupant finished by its start (the simulator frees a slot at a round boundary,
    so a slot is reused at the very time its previous occupant's last round ends).
    """
    tol = v.nonnegative("tolerance_s", tolerance_s)
    start, finish = result.first_scheduled_s, result.finish_s
    order = sorted((k for k in range(len(result.ids)) if not math.isnan(start[k])),
                   key=lambda k: (start[k], k))
    free_at: list[float] = []     # per slot: when its last occupant finished
    rows = []
    for k in order:
        slot = next((i for i, t in enumerate(free_at) if t <= start[k] + tol), None)
        if slot is None:
            slot = len(free_at)
            free_at.append(0.0)
        end = finish[k] if not math.isnan(finish[k]) else result.makespan_s
        free_at[slot] = end
        rows.append((slot, result.ids[k], float(start[k]), float(end)))
    return rows


def slot_gantt_traces(result, *, xaxis: str = "x", yaxis: str = "y",
                      show_legend: bool = True) -> list:
    """Bars (seconds) of a simulated batch, one row per slot: each request from its first
    prompt round to its last token (labelled with its id), idle stretches in grey.

    Idle: a slot between one occupant's last token and the next occupant's start, or after its
    last occupant until the whole run ends.
    """
    rows = batch_slots(result)
    end = result.makespan_s
    per_slot: dict[int, list] = {}
    for slot, rid, s, e in rows:
        per_slot.setdefault(slot, []).append((s, e))
    idle = []
    for slot, spans in sorted(per_slot.items()):
        cursor = 0.0
        for s, e in spans:
            if s > cursor + 1e-9:
                idle.append((slot, cursor, s))
            cursor = max(cursor, e)
        if end > cursor + 1e-9:
            idle.append((slot, cursor, end))
    index = {rid: k for k, rid in enumerate(result.ids)}
    label = [f"slot {r[0] + 1}" for r in rows]
    traces = [
        {"type": "bar", "orientation": "h", "y": label, "base": [r[2] for r in rows],
         "x": [r[3] - r[2] for r in rows], "text": [str(r[1]) for r in rows],
         "textposition": "inside", "insidetextanchor": "middle", "name": "a request (its id)",
         # numeric colours through a discrete colour scale: plotly validates a list of
         # numbers far faster than a list of colour strings
         "marker": {"color": [index[r[1]] % len(REQUEST_PALETTE) for r in rows],
                    "colorscale": _PALETTE_SCALE, "cmin": -0.5,
                    "cmax": len(REQUEST_PALETTE) - 0.5,
                    "line": {"color": "white", "width": 1}},
         "hovertemplate": "%{text}: %{base:.2f} s + %{x:.2f} s<extra></extra>",
         "xaxis": xaxis, "yaxis": yaxis, "legendgroup": "req", "showlegend": show_legend,
         "width": 0.7},
        {"type": "bar", "orientation": "h", "y": [f"slot {i[0] + 1}" for i in idle],
         "base": [i[1] for i in idle], "x": [i[2] - i[1] for i in idle],
         "name": "slot idle (no token produced)",
         "marker": {"color": SERVING_COLORS["idle"], "line": {"color": "white", "width": 1}},
         "hovertemplate": "idle: %{base:.2f} s + %{x:.2f} s<extra></extra>",
         "xaxis": xaxis, "yaxis": yaxis, "legendgroup": "idle", "showlegend": show_legend,
         "width": 0.7},
    ]
    return traces


def _stacked_axes(n: int, labels, gap: float = 0.1) -> tuple[dict, list]:
    """Layout entries for n stacked subplots sharing x, and an annotation per subplot."""
    height = (1 - gap * (n - 1)) / n
    layout, notes = {}, []
    for i, label in enumerate(labels):
        ax = "" if i == 0 else str(i + 1)
        top = 1 - i * (height + gap)
        domain = [max(0.0, round(top - height, 6)), min(1.0, round(top, 6))]
        layout[f"yaxis{ax}"] = {"domain": domain, "autorange": "reversed",
                               "type": "category", "anchor": f"x{ax}"}
        xa = {"anchor": f"y{ax}", "title": {"text": "time (s)"}}
        if i:
            xa["matches"] = "x"
        layout[f"xaxis{ax}"] = xa
        notes.append({"text": f"<b>{label}</b>", "xref": "paper", "yref": "paper", "x": 0,
                      "y": top, "yanchor": "bottom", "xanchor": "left", "showarrow": False})
    return layout, notes


def batching_gantt_figure(results, *, title: str = "Static vs continuous batching on one "
                                                   "simulated queue (17 §6)"):
    """Stacked slot Gantt charts, one per policy: ``results`` maps a label to a Result."""
    results = dict(results)
    traces = []
    layout, notes = _stacked_axes(len(results), results.keys())
    for i, result in enumerate(results.values()):
        ax = "" if i == 0 else str(i + 1)
        traces += slot_gantt_traces(result, xaxis=f"x{ax}", yaxis=f"y{ax}", show_legend=i == 0)
    n_slots = max(len({r[0] for r in batch_slots(res)}) for res in results.values())
    layout.update({"barmode": "overlay", "height": 110 + len(results) * (40 + 24 * n_slots),
                   "legend": {"orientation": "h", "y": -0.12}, "annotations": notes,
                   "uniformtext": {"minsize": 8, "mode": "hide"}})
    return _fig(traces, layout, title)


# --- §6 chunked prefill: worst ITL and TTFT against the chunk size ------------------------------

def chunk_trade_traces(sweep: dict, selected: dict, *, itl_timelines=None) -> tuple[list, dict]:
    """Chunked prefill's trade against the chunk size, closed form (lines) and simulator (markers),
    and optionally the simulated output intervals of one in-flight decode (right panel).

    ``sweep``: chunk_tokens, iteration_s, ttft_s (closed form per chunk size) and the unchunked
    dedicated_s; ``selected``: chunk_tokens, closed-form iteration_s / ttft_s, simulated
    sim_itl_s / sim_ttft_s. ``itl_timelines``: {label: (token times s, intervals s)}.
    """
    xs = [int(c) for c in sweep["chunk_tokens"]]
    ded = sweep["dedicated_s"] / units.ms
    c = int(selected["chunk_tokens"])
    traces = [
        {"type": "scatter", "mode": "lines", "x": xs, "y": _ms(sweep["iteration_s"]),
         "name": "worst ITL, closed form (decode step + one chunk)",
         "line": {"color": SERVING_COLORS["decode"], "width": 3}},
        {"type": "scatter", "mode": "lines", "x": xs, "y": _ms(sweep["ttft_s"]),
         "name": "long prompt's TTFT, closed form (chunks x iteration)",
         "line": {"color": SERVING_COLORS["prefill"], "width": 3}},
        {"type": "scatter", "mode": "lines", "x": [xs[0], xs[-1]], "y": [ded, ded],
         "name": "unchunked: whole prefill (stall and TTFT)",
         "line": {"color": SERVING_COLORS["comm"], "dash": "dash"}},
        {"type": "scatter", "mode": "markers", "x": [c, c],
         "y": [selected["sim_itl_s"] / units.ms, selected["sim_ttft_s"] / units.ms],
         "name": "simulated (companion scheduler)", "text": ["worst ITL", "TTFT"],
         "marker": {"symbol": "diamond-open", "size": 13, "color": "black",
                    "line": {"width": 2}},
         "hovertemplate": "%{text}: %{y:.1f} ms (simulated)<extra></extra>"},
    ]
    layout = {
        "xaxis": {"title": {"text": "chunk size (tokens)"}, "type": "log",
                  "domain": [0, 0.5] if itl_timelines else [0, 1]},
        "yaxis": {"title": {"text": "time (ms)"}, "type": "log"},
        "legend": {"orientation": "h", "y": -0.25},
    }
    if itl_timelines:
        colours = (SERVING_COLORS["comm"], SERVING_COLORS["decode"])
        for i, (label, (times, gaps)) in enumerate(itl_timelines.items()):
            traces.append({"type": "scatter", "mode": "lines+markers", "x": _ms(times),
                           "y": _ms(gaps), "name": label, "xaxis": "x2", "yaxis": "y2",
                           "line": {"shape": "hv", "color": colours[i % 2]},
                           "marker": {"size": 4}})
        layout["xaxis2"] = {"title": {"text": "emission time of the token (ms, simulated)"},
                            "domain": [0.6, 1], "anchor": "y2"}
        layout["yaxis2"] = {"title": {"text": "interval before it (ms)"}, "anchor": "x2",
                            "type": "log"}
    return traces, layout


def chunk_trade_figure(sweep: dict, selected: dict, *, itl_timelines=None,
                       title: str = "Chunked prefill: smooth ITL for a slower first token "
                                    "(17 §6)"):
    """The chunk-size trade: closed-form worst ITL and TTFT, simulated points and intervals."""
    traces, layout = chunk_trade_traces(sweep, selected, itl_timelines=itl_timelines)
    return _fig(traces, dict(layout, height=460), title)


# --- §7 tensor parallelism: what a decode step is made of ---------------------------------------

def tp_step_traces(rows, *, selected: str | None = None) -> tuple[list, dict]:
    """Stacked bars of one decode step (ms) per layout: weight/KV read, collective latency, wire.

    ``rows``: dicts with label (e.g. "TP 4 · NVLink"), read_s, latency_s, wire_s (from
    ``calc.tp_decode_step``); ``selected`` outlines one label.
    """
    labels = [r["label"] for r in rows]
    outline = [3 if r["label"] == selected else 0 for r in rows]
    traces = []
    for key, name in (("read_s", "read weights + KV (1/p each)"),
                      ("latency_s", "collective latency (count x floor)"),
                      ("wire_s", "collective bytes on the wire")):
        traces.append({"type": "bar", "x": labels, "y": _ms(r[key] for r in rows), "name": name,
                       "marker": {"color": SERVING_COLORS[key.split("_")[0] if key != "latency_s"
                                                          else "comm"],
                                  "line": {"color": "black", "width": outline}},
                       "hovertemplate": "%{x}: %{y:.3f} ms<extra>" + name + "</extra>"})
    totals = [sum(r[k] for k in ("read_s", "latency_s", "wire_s")) / units.ms for r in rows]
    traces.append({"type": "scatter", "mode": "text", "x": labels, "y": totals,
                   "text": [f"{t:.1f}" for t in totals], "textposition": "top center",
                   "showlegend": False, "hoverinfo": "skip"})
    layout = {"barmode": "stack", "xaxis": {"title": {"text": "layout and link"},
                                            "type": "category"},
              "yaxis": {"title": {"text": "decode step (ms)"}, "rangemode": "tozero"},
              "legend": {"orientation": "h", "y": -0.3}}
    return traces, layout


def tp_step_figure(rows, *, selected=None,
                   title: str = "A tensor-parallel decode step: reads shrink as 1/p, "
                                "collectives do not (17 §7)"):
    traces, layout = tp_step_traces(rows, selected=selected)
    return _fig(traces, dict(layout, height=440), title)


# --- §7 pipeline parallelism: stages x time slots -----------------------------------------------

PIPE_PHASES = ("idle (bubble)", "fill", "steady", "drain")


def pipeline_grid(stages: int, microbatches: int) -> dict:
    """The pipeline as a stages x slots grid: which microbatch each stage runs in each slot.

    Stage s (0-based) runs microbatch j in slot s + j, so there are m + p - 1 slots. A busy
    cell's phase: "fill" before the last stage has started (slot < p - 1), "drain" once the
    first stage has finished (slot >= m), "steady" otherwise. Returns microbatch (p rows of
    m + p - 1 entries, None when idle), phase (index into PIPE_PHASES), busy and idle counts.
    """
    p = v.count("stages", stages)
    m = v.count("microbatches", microbatches)
    slots = m + p - 1
    micro, phase = [], []
    for s in range(p):
        row_m, row_p = [], []
        for t in range(slots):
            j = t - s
            if 0 <= j < m:
                row_m.append(j + 1)
                row_p.append(1 if t < p - 1 else 3 if t >= m else 2)
            else:
                row_m.append(None)
                row_p.append(0)
        micro.append(row_m)
        phase.append(row_p)
    busy = p * m
    return dict(slots=slots, microbatch=micro, phase=phase, busy_cells=busy,
                idle_cells=p * slots - busy)


def pipeline_traces(grid: dict, *, bubble_curves=None, selected=None) -> tuple[list, dict]:
    """Heatmap of ``pipeline_grid`` (left) and, optionally, bubble vs microbatches (right).

    ``bubble_curves``: {stages: (microbatches list, bubble fractions)} from
    ``calc.pipeline_bubble``; ``selected``: (microbatches, bubble) marked on the curves.
    """
    p = len(grid["phase"])
    n = 4
    # a discrete colour scale: 0 idle, 1 fill, 2 steady, 3 drain
    colours = [SERVING_COLORS["idle"], SERVING_COLORS["fill"], SERVING_COLORS["steady"],
               SERVING_COLORS["drain"]]
    scale = _discrete_scale(colours)
    show_text = grid["slots"] <= 40
    text = [["" if x is None or not show_text else str(x) for x in row]
            for row in grid["microbatch"]]
    split = bool(bubble_curves)
    traces = [{"type": "heatmap", "z": grid["phase"], "x": list(range(1, grid["slots"] + 1)),
               "y": [f"stage {s + 1}" for s in range(p)], "zmin": -0.5, "zmax": n - 0.5,
               "colorscale": scale, "showscale": False, "text": text,
               "texttemplate": "%{text}", "xgap": 1, "ygap": 1,
               "hovertemplate": "%{y}, slot %{x}: microbatch %{text}<extra></extra>"}]
    for i, name in enumerate(PIPE_PHASES):
        traces.append({"type": "scatter", "mode": "markers", "x": [None], "y": [None],
                       "name": name, "marker": {"symbol": "square", "size": 12,
                                                "color": colours[i]}})
    layout = {"xaxis": {"title": {"text": "time slot (one stage-step each)"},
                        "domain": [0, 0.58] if split else [0, 1]},
              "yaxis": {"autorange": "reversed", "title": {"text": "pipeline stage (GPU)"}},
              "legend": {"orientation": "h", "y": -0.25}}
    if split:
        for k, (stages, (ms, fractions)) in enumerate(sorted(bubble_curves.items())):
            traces.append({"type": "scatter", "mode": "lines", "x": list(ms),
                           "y": [100 * f for f in fractions], "name": f"bubble, p = {stages}",
                           "xaxis": "x2", "yaxis": "y2",
                           "line": {"color": REQUEST_PALETTE[k % len(REQUEST_PALETTE)]}})
        if selected is not None:
            traces.append({"type": "scatter", "mode": "markers", "x": [selected[0]],
                           "y": [100 * selected[1]], "name": "this setting", "xaxis": "x2",
                           "yaxis": "y2", "marker": {"size": 12, "color": "black"}})
        layout["xaxis2"] = {"title": {"text": "microbatches m"}, "type": "log",
                            "domain": [0.68, 1], "anchor": "y2"}
        layout["yaxis2"] = {"title": {"text": "bubble (% of stage time idle)"},
                            "anchor": "x2", "rangemode": "tozero"}
    return traces, layout


def pipeline_figure(grid: dict, *, bubble_curves=None, selected=None,
                    title: str = "Pipeline parallelism: fill, steady state, drain (17 §7)"):
    traces, layout = pipeline_traces(grid, bubble_curves=bubble_curves, selected=selected)
    p = len(grid["phase"])
    return _fig(traces, dict(layout, height=max(320, 160 + 34 * p)), title)


# --- §7 placement: weights per GPU for each candidate layout -------------------------------------

def placement_traces(rows, usable_bytes: float, *, chosen: str | None = None) -> tuple[list, dict]:
    """Bars of weights per GPU (GB) for each candidate layout against the usable memory line.

    ``rows``: dicts with label ("TP 8 x PP 2"), weight_bytes_per_gpu; ``usable_bytes`` = card
    memory - reserve (- required KV); ``chosen``: the label of the smallest layout that fits.
    """
    labels = [r["label"] for r in rows]
    per_gpu = [r["weight_bytes_per_gpu"] / units.GB for r in rows]
    fits = [r["weight_bytes_per_gpu"] < usable_bytes for r in rows]
    colours = [SERVING_COLORS["cap"] if f else SERVING_COLORS["comm"] for f in fits]
    traces = [
        {"type": "bar", "x": labels, "y": per_gpu, "name": "weights per GPU",
         "marker": {"color": colours,
                    "line": {"color": "black", "width": [3 if l == chosen else 0
                                                         for l in labels]}},
         "text": [f"{g:,.0f}" for g in per_gpu], "textposition": "outside",
         "hovertemplate": "%{x}: %{y:,.1f} GB per GPU<extra></extra>"},
        {"type": "scatter", "mode": "lines", "x": [labels[0], labels[-1]],
         "y": [usable_bytes / units.GB] * 2, "name": "usable per GPU (memory - reserve)",
         "line": {"color": SERVING_COLORS["slo"], "dash": "dash"}},
    ]
    layout = {"xaxis": {"title": {"text": "layout (TP inside a node, PP across nodes)"},
                        "type": "category"},
              "yaxis": {"title": {"text": "weights per GPU (GB)"}, "type": "log"},
              "legend": {"orientation": "h", "y": -0.3}}
    return traces, layout


def placement_figure(rows, usable_bytes: float, *, chosen=None,
                     title: str = "Where the weights fit: TP first, then PP (17 §7)"):
    traces, layout = placement_traces(rows, usable_bytes, chosen=chosen)
    return _fig(traces, dict(layout, height=420), title)


# --- §8 disaggregated pools -----------------------------------------------------------------------

def pool_sizing_traces(rates, prefill_groups, decode_groups, selected: dict) -> tuple[list, dict]:
    """Prefill and decode groups needed against the request rate (step lines), with the
    selected workload marked. ``selected``: rate, prefill_groups, decode_groups."""
    xs = list(rates)
    traces = [
        {"type": "scatter", "mode": "lines", "x": xs, "y": list(prefill_groups),
         "name": "prefill groups (prompt tok/s / capacity)",
         "line": {"shape": "hv", "color": SERVING_COLORS["prefill"], "width": 3}},
        {"type": "scatter", "mode": "lines", "x": xs, "y": list(decode_groups),
         "name": "decode groups (output tok/s / capacity)",
         "line": {"shape": "hv", "color": SERVING_COLORS["decode"], "width": 3}},
        {"type": "scatter", "mode": "markers+text",
         "x": [selected["rate"], selected["rate"]],
         "y": [selected["prefill_groups"], selected["decode_groups"]],
         "text": [str(selected["prefill_groups"]), str(selected["decode_groups"])],
         "textposition": "middle left", "name": "this workload",
         "marker": {"size": 11, "color": "black"}},
    ]
    layout = {"xaxis": {"title": {"text": "request rate (requests/s)"}},
              "yaxis": {"title": {"text": "GPU groups"}, "rangemode": "tozero"},
              "legend": {"orientation": "h", "y": -0.25}}
    return traces, layout


def pool_sizing_figure(rates, prefill_groups, decode_groups, selected,
                       title: str = "Disaggregated pools: two independent divisions (17 §8)"):
    traces, layout = pool_sizing_traces(rates, prefill_groups, decode_groups, selected)
    return _fig(traces, dict(layout, height=420), title)


def kv_transfer_figure(contexts, curves, *, marks=None,
                       title: str = "Shipping one sequence's KV from prefill to decode (17 §8)"):
    """Transfer time (ms) against context for each link: ``curves`` {label: seconds list};
    ``marks``: {label: (context, seconds)} points to label (the chapter's 8,000 tokens)."""
    xs = list(contexts)
    traces = []
    for i, (label, secs) in enumerate(curves.items()):
        traces.append({"type": "scatter", "mode": "lines", "x": xs, "y": _ms(secs), "name": label,
                       "line": {"color": REQUEST_PALETTE[i % len(REQUEST_PALETTE)], "width": 3}})
    for i, (label, (ctx, s)) in enumerate((marks or {}).items()):
        traces.append({"type": "scatter", "mode": "markers+text", "x": [ctx], "y": [s / units.ms],
                       "text": [f"{s / units.ms:,.0f} ms"], "textposition": "middle right",
                       "name": label, "showlegend": False,
                       "marker": {"size": 10, "color": REQUEST_PALETTE[i % len(REQUEST_PALETTE)]}})
    layout = {"height": 420, "xaxis": {"title": {"text": "context shipped (tokens)"}, "type": "log"},
              "yaxis": {"title": {"text": "transfer time (ms)"}, "type": "log"},
              "legend": {"orientation": "h", "y": -0.25}}
    return _fig(traces, layout, title)


def routing_traces(turns, cold_s, warm_s, *, mixed_s=None, mixed_label: str = "",
                   selected=None) -> tuple[list, dict]:
    """TTFT per turn of a multi-turn conversation on a cold and a warm worker (log ms), and
    optionally the mean for a router landing a given share of turns warm.
    ``selected``: (turn, cold_s, warm_s) marked."""
    xs = list(turns)
    traces = [
        {"type": "scatter", "mode": "lines", "x": xs, "y": _ms(cold_s),
         "name": "cold worker: re-prefill the whole conversation",
         "line": {"color": SERVING_COLORS["cold"], "width": 3}},
        {"type": "scatter", "mode": "lines", "x": xs, "y": _ms(warm_s),
         "name": "warm worker: prefill the new message only",
         "line": {"color": SERVING_COLORS["warm"], "width": 3}},
    ]
    if mixed_s is not None:
        traces.append({"type": "scatter", "mode": "lines", "x": xs, "y": _ms(mixed_s),
                       "name": mixed_label, "line": {"color": SERVING_COLORS["mix"],
                                                     "dash": "dash"}})
    if selected is not None:
        t, c, w = selected
        traces.append({"type": "scatter", "mode": "markers+text", "x": [t, t],
                       "y": [c / units.ms, w / units.ms],
                       "text": [f"{c / units.ms:,.0f} ms", f"{w / units.ms:,.0f} ms"],
                       "textposition": "middle left", "name": "this turn",
                       "marker": {"size": 11, "color": "black"}})
    layout = {"xaxis": {"title": {"text": "turn of the conversation"}},
              "yaxis": {"title": {"text": "TTFT from prefill (ms)"}, "type": "log"},
              "legend": {"orientation": "h", "y": -0.25}}
    return traces, layout


def routing_figure(turns, cold_s, warm_s, *, mixed_s=None, mixed_label="", selected=None,
                   title: str = "KV-aware routing: a warm worker skips the re-prefill (17 §8)"):
    traces, layout = routing_traces(turns, cold_s, warm_s, mixed_s=mixed_s,
                                    mixed_label=mixed_label, selected=selected)
    return _fig(traces, dict(layout, height=420), title)


# --- §9 measuring -------------------------------------------------------------------------------

def sm_share_figure(active_sms, shares, *, title: str = "A busy GPU by nvidia-smi is not a "
                                                        "busy GPU (17 §9)"):
    """Upper bound on compute in use (% of SMs busy, from ``calc.sm_share``) against the
    nvidia-smi utilization of a kernel that is always resident (100% by definition)."""
    xs = list(active_sms)
    traces = [
        {"type": "scatter", "mode": "lines", "x": xs, "y": [100.0] * len(xs),
         "name": "nvidia-smi 'GPU util' (a kernel resident all the time)",
         "line": {"color": SERVING_COLORS["comm"], "width": 3}},
        {"type": "scatter", "mode": "lines", "x": xs, "y": [100 * s for s in shares],
         "name": "upper bound on compute in use (busy SMs / all SMs)",
         "line": {"color": SERVING_COLORS["read"], "width": 3}},
    ]
    layout = {"height": 380, "xaxis": {"title": {"text": "SMs the resident kernel occupies"}},
              "yaxis": {"title": {"text": "percent"}, "range": [0, 105]},
              "legend": {"orientation": "h", "y": -0.3}}
    return _fig(traces, layout, title)


def utilization_traces(ratios: dict, rates: dict, *, bands=None) -> tuple[list, dict]:
    """Left: utilization bars (%) with the healthy band of each shaded; right: measured decode
    tok/s against the memory-roof ceiling it implies.

    ``ratios``: {label: fraction}; ``bands``: {label: (low, high) fractions}; ``rates``:
    {label: tok/s}.
    """
    labels = list(ratios)
    traces = [{"type": "bar", "orientation": "h", "y": labels,
               "x": [100 * ratios[k] for k in labels], "name": "measured ratio",
               "text": [f"{100 * ratios[k]:.3g}%" for k in labels], "textposition": "outside",
               "marker": {"color": [SERVING_COLORS["read"], SERVING_COLORS["comm"],
                                    SERVING_COLORS["prefill"]][:len(labels)]},
               "cliponaxis": False, "hovertemplate": "%{y}: %{x:.3g}%<extra></extra>"}]
    shapes = []
    for k, (lo, hi) in (bands or {}).items():
        i = labels.index(k)
        shapes.append({"type": "rect", "xref": "x", "yref": "y", "x0": 100 * lo, "x1": 100 * hi,
                       "y0": i - 0.45, "y1": i + 0.45, "fillcolor": SERVING_COLORS["good"],
                       "line": {"width": 0}, "layer": "below"})
    traces.append({"type": "scatter", "mode": "markers", "x": [None], "y": [None],
                   "name": "healthy band (17 §9)",
                   "marker": {"symbol": "square", "size": 12, "color": SERVING_COLORS["good"]}})
    rl = list(rates)
    traces.append({"type": "bar", "x": rl, "y": [rates[k] for k in rl], "xaxis": "x2",
                   "yaxis": "y2", "name": "decode tok/s",
                   "text": [f"{rates[k]:,.0f}" for k in rl], "textposition": "outside",
                   "marker": {"color": [SERVING_COLORS["decode"], SERVING_COLORS["cap2"]]},
                   "cliponaxis": False, "showlegend": False})
    layout = {"xaxis": {"title": {"text": "percent of peak"}, "domain": [0, 0.55],
                        "range": [0, 110]},
              "yaxis": {"type": "category", "autorange": "reversed"},
              "xaxis2": {"domain": [0.7, 1], "anchor": "y2", "type": "category"},
              "yaxis2": {"title": {"text": "decode tokens/s"}, "anchor": "x2",
                         "rangemode": "tozero"},
              "shapes": shapes, "legend": {"orientation": "h", "y": -0.25}}
    return traces, layout


def utilization_figure(ratios, rates, *, bands=None,
                       title: str = "Judge decode by MBU, prefill by MFU (17 §9)"):
    traces, layout = utilization_traces(ratios, rates, bands=bands)
    return _fig(traces, dict(layout, height=400), title)


# --- §10 levers -----------------------------------------------------------------------------------

def quantization_figure(rows, *, title: str = "Fewer bytes per weight, a higher decode ceiling "
                                              "(17 §10)"):
    """Batch-1 decode ceilings (tok/s) by weight format for each card.

    ``rows``: dicts with hardware, format, tokens_per_s (``calc.quantization_ceiling``)."""
    formats = list(dict.fromkeys(r["format"] for r in rows))
    cards = list(dict.fromkeys(r["hardware"] for r in rows))
    traces = []
    for i, hw in enumerate(cards):
        ys = [next(r["tokens_per_s"] for r in rows if r["hardware"] == hw and r["format"] == f)
              for f in formats]
        traces.append({"type": "bar", "x": formats, "y": ys, "name": hw,
                       "text": [f"{y:,.0f}" for y in ys], "textposition": "outside",
                       "marker": {"color": REQUEST_PALETTE[i % len(REQUEST_PALETTE)]},
                       "cliponaxis": False})
    layout = {"height": 400, "barmode": "group",
              "xaxis": {"title": {"text": "weight format (bytes per parameter)"},
                        "type": "category"},
              "yaxis": {"title": {"text": "batch-1 decode ceiling (tokens/s)"}},
              "legend": {"orientation": "h", "y": -0.25}}
    return _fig(traces, layout, title)


def speculative_traces(distribution, simulated, curves, selected) -> tuple[list, dict]:
    """Left: P(N = n tokens per target pass), exact (bars) and simulated (markers); right:
    expected tokens per pass against the draft length for several acceptance rates.

    ``distribution``/``simulated``: probabilities for n = 1 .. k+1; ``curves``: {alpha: (k list,
    expected list)}; ``selected``: (k, expected) marked.
    """
    ns = list(range(1, len(distribution) + 1))
    traces = [
        {"type": "bar", "x": ns, "y": list(distribution), "name": "exact P(N = n)",
         "marker": {"color": SERVING_COLORS["decode"]}},
        {"type": "scatter", "mode": "markers", "x": ns, "y": list(simulated),
         "name": "simulated rounds (rejection sampling, seeded)",
         "marker": {"symbol": "diamond-open", "size": 12, "color": "black",
                    "line": {"width": 2}}},
    ]
    for i, (alpha, (ks, es)) in enumerate(sorted(curves.items())):
        traces.append({"type": "scatter", "mode": "lines", "x": list(ks), "y": list(es),
                       "name": f"E[N], alpha = {alpha:g}", "xaxis": "x2", "yaxis": "y2",
                       "line": {"color": REQUEST_PALETTE[i % len(REQUEST_PALETTE)]}})
    traces.append({"type": "scatter", "mode": "markers", "x": [selected[0]], "y": [selected[1]],
                   "name": "this setting", "xaxis": "x2", "yaxis": "y2",
                   "marker": {"size": 12, "color": "black"}})
    layout = {"xaxis": {"title": {"text": "tokens produced by one target pass (n)"},
                        "domain": [0, 0.45], "dtick": 1},
              "yaxis": {"title": {"text": "probability"}, "rangemode": "tozero"},
              "xaxis2": {"title": {"text": "draft length k"}, "domain": [0.58, 1],
                         "anchor": "y2", "dtick": 1},
              "yaxis2": {"title": {"text": "expected tokens per target pass"}, "anchor": "x2",
                         "rangemode": "tozero"},
              "legend": {"orientation": "h", "y": -0.25}}
    return traces, layout


def speculative_figure(distribution, simulated, curves, selected,
                       title: str = "Speculative decoding: tokens per target pass (17 §10)"):
    traces, layout = speculative_traces(distribution, simulated, curves, selected)
    return _fig(traces, dict(layout, height=420), title)


# --- interview: what batch size? -----------------------------------------------------------------

def batch_window_traces(batches, step_s, tokens_per_s, *, slo_s: float, caps: dict,
                        chosen=None) -> tuple[list, dict]:
    """Decode step time (ITL) and throughput against batch, the ITL target as a horizontal line
    and the KV-memory caps as vertical lines.

    ``caps``: {label: batch}; ``chosen``: (batch, step_s) marked.
    """
    xs = list(batches)
    step_ms = _ms(step_s)
    top = max(max(step_ms), slo_s / units.ms) * 1.1
    traces = [
        {"type": "scatter", "mode": "lines", "x": xs, "y": step_ms,
         "name": "decode step = ITL (memory roof)",
         "line": {"color": SERVING_COLORS["read"], "width": 3}},
        {"type": "scatter", "mode": "lines", "x": xs, "y": list(tokens_per_s),
         "name": "throughput (tokens/s, right axis)", "yaxis": "y2",
         "line": {"color": SERVING_COLORS["cap2"], "dash": "dot"}},
        {"type": "scatter", "mode": "lines", "x": [xs[0], xs[-1]], "y": [slo_s / units.ms] * 2,
         "name": "ITL target", "line": {"color": SERVING_COLORS["slo"], "dash": "dash"}},
    ]
    colours = (SERVING_COLORS["cap"], SERVING_COLORS["cap2"], SERVING_COLORS["comm"])
    for i, (label, b) in enumerate(caps.items()):
        if b >= 1:
            traces.append({"type": "scatter", "mode": "lines", "x": [b, b], "y": [0, top],
                           "name": f"{label}: {b:,}",
                           "line": {"color": colours[i % len(colours)], "width": 2,
                                    "dash": "dashdot" if i else "solid"}})
    if chosen is not None and chosen[0] >= 1:
        traces.append({"type": "scatter", "mode": "markers", "x": [chosen[0]],
                       "y": [chosen[1] / units.ms], "name": f"run at batch {chosen[0]:,}",
                       "marker": {"size": 13, "color": "black", "symbol": "star"}})
    layout = {"xaxis": {"title": {"text": "batch (sequences decoding together)"},
                        "type": "log"},
              "yaxis": {"title": {"text": "decode step (ms)"}, "range": [0, top]},
              "yaxis2": {"title": {"text": "tokens/s"}, "overlaying": "y", "side": "right",
                         "rangemode": "tozero", "showgrid": False},
              "legend": {"orientation": "h", "y": -0.25}}
    return traces, layout


def batch_window_figure(batches, step_s, tokens_per_s, *, slo_s, caps, chosen=None,
                        title: str = "What batch size? Under the ITL target and the KV cap"):
    traces, layout = batch_window_traces(batches, step_s, tokens_per_s, slo_s=slo_s, caps=caps,
                                         chosen=chosen)
    return _fig(traces, dict(layout, height=440), title)
