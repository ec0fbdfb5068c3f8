"""17 §7's explorer home (notebook 17_07_parallelism): tensor and pipeline parallelism, and
placement.

Figures (plotly, deterministic): ``tp_step_figure`` (``tp_step_traces`` over
``calc.tp_layout_rows``), ``pipeline_figure`` (``pipeline_traces`` over ``calc.pipeline_grid``)
and ``placement_figure`` (``placement_traces`` over ``calc.placement_candidates``).

Panels: ``TensorParallelPanel`` (a TP decode step: reads, collective latency, wire, over NVLink
and PCIe for TP = 1..8), ``PipelineBubblePanel`` (the stages x slots diagram and the bubble),
``PlacementPanel`` (the smallest TP x PP layout that fits a model of any size). Every number
comes from ``companion.calc``.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from companion import calc, models, specs, theme, units
from companion.chapters import ch17
from companion.explorers.base import Control, Panel, View
from companion.explorers.common import accuracy_note
from companion.explorers.common import discrete_colorscale
from companion.explorers.common import titled_figure as _fig
from companion.explorers.common import to_ms as _ms
from companion.explorers.presets import (
    SERVING_CARDS,
    SERVING_MENU,
    TP_DEGREES,
    WEIGHT_FORMATS,
    card_control,
    choice_control,
    model_control,
    source_line,
)
from companion.formulas.communication import pp_decode_bubble, tp_step_fuller
from companion.formulas.parallelism import (PIPE_PHASES, pipeline_grid, placement_candidates,
                                            placement_model, tp_layout_rows)
from companion.serves import serves

__all__ = [
    "tp_step_traces", "tp_step_figure", "pipeline_traces", "pipeline_figure", "placement_traces",
    "placement_figure", "TensorParallelPanel", "PipelineBubblePanel", "PlacementPanel",
]

# the section this module serves (the notebook of its name): every @serves mark here is
# within it (tests/test_sections.py)
SECTION = "17.7"


# --- §7 tensor parallelism: what a decode step is made of -------------------------------------

def tp_step_traces(rows, *, selected: str | None = None) -> tuple[list, dict]:
    """Stacked bars of one decode step (ms) per layout: weight/KV read, collective latency, wire.

    ``rows``: dicts with label (e.g. "TP 4 · NVLink"), read_s, latency_s, wire_s (from
    ``calc.tp_decode_step``); ``selected`` outlines one label.
    """
    labels = [r["label"] for r in rows]
    outline = [3 if r["label"] == selected else 0 for r in rows]
    traces = []
    for key, name in (("read_s", "read weights + KV (1/g each)"),
                      ("latency_s", "collective latency (count x floor)"),
                      ("wire_s", "collective bytes on the wire")):
        traces.append({"type": "bar", "x": labels, "y": _ms(r[key] for r in rows), "name": name,
                       "marker": {"color": theme.SERVING_COLORS[key.split("_")[0] if key != "latency_s"
                                                          else "comm"],
                                  "line": {"color": theme.INK, "width": outline}},
                       "hovertemplate": "%{x}: %{y:.3f} ms<extra>" + name + "</extra>"})
    totals = [sum(r[k] for k in ("read_s", "latency_s", "wire_s")) / units.ms for r in rows]
    traces.append({"type": "scatter", "mode": "text", "x": labels, "y": totals,
                   "text": [f"{t:.1f}" for t in totals], "textposition": "top center",
                   "showlegend": False, "hoverinfo": "skip"})
    layout = {"barmode": "stack", "xaxis": {"title": {"text": "layout and link"},
                                            "type": "category"},
              # room above the tallest bar for its total (text does not widen the autorange)
              "yaxis": {"title": {"text": "decode step (ms)"}, "range": [0, 1.12 * max(totals)]},
              # the legend in its own rows at the figure's foot, below the x title, with room
              # for a two-line tick label (a layout marked "<br>(does not fit)")
              "legend": theme.foot_legend(),
              "margin": {"t": 60, "r": 20, "b": _legend_foot_px(3, per_row=2) + 16}}
    return traces, layout


@serves("17.7")
def tp_step_figure(rows, *, selected=None,
                   title: str = "A tensor-parallel decode step: reads shrink as 1/g, "
                                "collectives do not (17 §7)"):
    traces, layout = tp_step_traces(rows, selected=selected)
    return _fig(traces, dict(layout, height=480), title)


# the fuller models' toggles: the chapter's setting first
ALLREDUCE_MODELS = {"flat floor per all-reduce (chapter)": "flat",
                    "ring: 2(g - 1) latency hops (pessimistic bound)": "ring"}
OVERLAP_MODELS = {"added to the step (chapter)": False,
                  "hidden under the reads (best case, batch 2 or more)": True}


def fuller_tp_rows(rows, model, hardware, *, batch: int, context_tokens: int,
                   nvlink_latency_s: float, pcie_latency_s: float, collectives: str,
                   overlap: bool) -> list[dict]:
    """``rows`` (``calc.tp_layout_rows``) repriced by ``tp_step_fuller``: ring latency and/or
    collectives overlapped with the reads. The latency and wire parts become what stays
    exposed, so the stacked bars still add up to the step. NVLink's wire runs at its one-way
    rate, as in ``calc.tp_layout_rows``."""
    one_way = calc.nvlink_one_way_bytes_per_s(hardware)
    links = {"NVLink": (nvlink_latency_s, one_way),
             "PCIe": (pcie_latency_s, hardware.host_link_bytes_per_s),
             "none": (nvlink_latency_s, one_way)}
    out = []
    for r in rows:
        lat, bw = links[r["link"]]
        f = tp_step_fuller(model, hardware, r["tp"], collectives=collectives, overlap=overlap,
                           collective_latency_s=lat, link_bytes_per_s=bw, batch=batch,
                           context_tokens=context_tokens)
        shown = f["exposed_s"] / f["comm_s"] if f["comm_s"] > 0 else 0.0
        out.append(dict(r, latency_s=f["latency_s"] * shown, wire_s=f["wire_s"] * shown,
                        comm_s=f["comm_s"], step_s=f["step_s"], overhead=f["overhead"],
                        tokens_per_s=f["tokens_per_s"], hop_latency_s=f["hop_latency_s"]))
    return out


@serves("17.7")
class TensorParallelPanel(Panel):
    """17 §7: each GPU reads 1/g of the weights, then pays 2 all-reduces per layer."""

    title = "Tensor parallelism: a decode step over NVLink and PCIe (17 §7)"
    controls = (
        model_control(),
        card_control(),
        choice_control("tp", "TP degree g (highlighted)", 4, TP_DEGREES),
        Control("batch", "batch (sequences)", "int", 1, 1, 256, 1),
        Control("context_tokens", "live KV per sequence (tokens)", "int", 0, 0, 32_000, 500),
        Control("nvlink_latency_us", "NVLink collective floor (µs)", "float",
                ch17.COLLECTIVE_LATENCY_NVLINK_S / units.us, 1.0, 20.0, 0.5),
        Control("pcie_latency_us", "PCIe collective floor (µs)", "float",
                ch17.COLLECTIVE_LATENCY_PCIE_S / units.us, 1.0, 100.0, 1.0),
        choice_control("collectives", "all-reduce latency", "flat", ALLREDUCE_MODELS),
        choice_control("overlap", "collectives and reads", False, OVERLAP_MODELS),
    )
    main_control = "tp"
    base_layout = {"height": 460}

    def compute(self, *, model, hardware, tp, batch, context_tokens, nvlink_latency_us,
                pcie_latency_us, collectives, overlap) -> View:
        m, hw = SERVING_MENU[model], SERVING_CARDS[hardware]
        lat = {"nvlink_latency_s": nvlink_latency_us * units.us,
               "pcie_latency_s": pcie_latency_us * units.us}
        rows = tp_layout_rows(m, hw, batch=batch, context_tokens=context_tokens, **lat)
        chapter_nv = next(r for r in rows if r["tp"] == tp and r["link"] in ("NVLink", "none"))
        if collectives != "flat" or overlap:
            rows = fuller_tp_rows(rows, m, hw, batch=batch, context_tokens=context_tokens,
                                  collectives=collectives, overlap=overlap, **lat)
        pick = {r["link"]: r for r in rows if r["tp"] == tp}
        nv = pick.get("NVLink", pick.get("none"))
        pc = pick.get("PCIe", nv)
        traffic = calc.tp_allreduce_traffic(m, tp)
        cap = calc.tp_kv_capacity(m, hw, tp=tp)
        kv = _kv_per_gpu(m, hw, tp, batch, context_tokens)
        traces, layout = tp_step_traces(rows, selected=nv["label"])
        numbers = {
            "activation_KiB": traffic["activation_bytes"] / units.KiB,
            "ring_KiB": traffic["ring_bytes"] / units.KiB, "collectives": traffic["collectives"],
            "bytes_per_token_MB": traffic["bytes_per_token"] / units.MB,
            "read_ms": nv["read_s"] / units.ms, "nvlink_latency_ms": nv["latency_s"] / units.ms,
            "nvlink_wire_us": nv["wire_s"] / units.us,
            "nvlink_overhead_pct": 100 * nv["overhead"], "step_ms": nv["step_s"] / units.ms,
            "tokens_per_s": nv["tokens_per_s"], "pcie_comm_ms": pc["comm_s"] / units.ms,
            "pcie_overhead_pct": 100 * pc["overhead"],
            "weights_per_gpu_GB": cap["weight_bytes_per_gpu"] / units.GB,
            # weights, the reserve and this batch's KV share, all on one GPU
            "fits": bool(cap["fits"]) and kv["kv_bytes_per_gpu"] <= kv["free_bytes_per_gpu"],
            "weights_fit": bool(cap["fits"]),
            "kv_per_gpu_GB": kv["kv_bytes_per_gpu"] / units.GB,
            "free_kv_per_gpu_GB": kv["free_bytes_per_gpu"] / units.GB,
            "max_sequences": kv["max_sequences"],
            # past tp = KV heads (or at any tp > 1 with MLA's one shared latent) the KV cache is
            # copied on every GPU rather than split: the closed forms here assume a split
            "kv_replicated": tp > 1 and (m.kv_lora_rank is not None or tp > m.n_kv_heads),
            "chapter_step_ms": chapter_nv["step_s"] / units.ms,
        }
        text = (f"<b>{m.name}, TP {tp}</b>: " + _fit_line(numbers, batch, context_tokens)
                + "<br>"
                f"{numbers['collectives']} all-reduces per token, "
                f"{numbers['ring_KiB']:.0f} KiB each on the ring, "
                f"{numbers['bytes_per_token_MB']:.2f} MB per token<br>"
                f"read {numbers['read_ms']:.2f} ms + NVLink {numbers['nvlink_latency_ms']:.2f} ms"
                f" latency ({numbers['nvlink_wire_us']:.1f} µs on the wire) = "
                f"<b>{numbers['step_ms']:.2f} ms</b>, {numbers['tokens_per_s']:,.0f} tok/s, "
                f"overhead {numbers['nvlink_overhead_pct']:.0f}%<br>"
                f"over PCIe: {numbers['pcie_comm_ms']:.2f} ms of collectives, overhead "
                f"{numbers['pcie_overhead_pct']:.0f}%" + _fuller_note(numbers, nv, collectives,
                                                                     overlap, tp, batch)
                + _kv_split_note(m, tp) + source_line(m))
        text += accuracy_note("communication-bound")
        return View(numbers=numbers, traces=traces, layout=layout, text=text)


def _kv_per_gpu(m, hw, tp: int, batch: int, context_tokens: int) -> dict:
    """This batch's KV on one GPU and the room for it: the cache splits with the KV heads, up
    to one head per GPU (past that each GPU keeps a copy; MLA's shared latent is copied at any
    degree); the room is the card less 1/g of the weights and the chapter's reserve (17 §4)."""
    shards = 1 if m.kv_lora_rank is not None else min(tp, m.n_kv_heads)
    per_sequence = context_tokens * calc.kv_bytes_per_token(m) / shards
    free = hw.mem_bytes - m.weight_bytes / tp - ch17.RUNTIME_RESERVE_BYTES
    most = int(free // per_sequence) if per_sequence > 0 and free > 0 else 0
    return dict(kv_bytes_per_gpu=batch * per_sequence, free_bytes_per_gpu=free,
                max_sequences=most)


def _fit_line(numbers: dict, batch: int, context_tokens: int) -> str:
    """Weights and this batch's KV per GPU against the card, after the runtime reserve."""
    per_gpu = numbers["weights_per_gpu_GB"]
    free = f"{max(numbers['free_kv_per_gpu_GB'], 0.0):.0f} GB left"
    reserve = f"after the {ch17.RUNTIME_RESERVE_BYTES / units.GB:g} GB reserve"
    weights = f"{per_gpu:.{1 if per_gpu < 10 else 0}f} GB of weights per GPU"
    if context_tokens == 0:
        head = f"{weights}, {free} for KV {reserve}: "
    else:
        head = (f"{weights} + {numbers['kv_per_gpu_GB']:.1f} GB of KV ({batch:,} x "
                f"{context_tokens:,} tokens) against {free} {reserve}: ")
    if not numbers["weights_fit"]:
        return head + "<b>does not fit</b> (the weights alone overflow)"
    if not numbers["fits"]:
        return (head + f"<b>does not fit</b> (at most {numbers['max_sequences']:,} sequences "
                f"of {context_tokens:,} tokens)")
    return head + "fits"


def _fuller_note(numbers: dict, nv: dict, collectives: str, overlap: bool, tp: int,
                 batch: int) -> str:
    """A readout line naming the fuller model in use and the chapter's step beside it."""
    if collectives == "flat" and not overlap:
        return ""
    parts = []
    if collectives == "ring" and tp > 1:
        parts.append(f"ring: {2 * (tp - 1)} hops of {nv['hop_latency_s'] / units.us:.2f} µs "
                     f"per all-reduce, a pessimistic bound for messages this small")
    if overlap and batch < 2:
        parts.append("a batch of 1 cannot be split into halves that take turns, so nothing "
                     "hides: raise the batch to 2 or more")
    elif overlap:
        parts.append("collectives hidden under the reads where they fit")
    return (f"<br><i>{'; '.join(parts) or 'one GPU: nothing to all-reduce'}: step "
            f"{numbers['step_ms']:.2f} ms against the chapter's "
            f"{numbers['chapter_step_ms']:.2f} ms</i>")


def _kv_split_note(m, tp: int) -> str:
    """A readout line when tensor parallelism cannot split the KV cache across the GPUs."""
    if tp == 1:
        return ""
    if m.kv_lora_rank is not None:
        return ("<br><i>MLA keeps one compressed latent per token for all heads: at TP "
                f"{tp} every GPU holds the whole KV cache, not 1/{tp} of it</i>")
    if tp > m.n_kv_heads:
        heads = f"{m.n_kv_heads} KV head" + ("s" if m.n_kv_heads > 1 else "")
        return (f"<br><i>TP {tp} is more than the model's {heads}: each GPU keeps a copy of a "
                f"head instead of a share, so KV per GPU stops shrinking past TP "
                f"{m.n_kv_heads}</i>")
    return ""


# --- §7 pipeline parallelism: stages x time slots ---------------------------------------------

_AXIS_FOOT_PX = 60          # below the plot: x tick labels and the x title
_LEGEND_ROW_PX = 24


def _legend_foot_px(entries: int, per_row: int = 3) -> int:
    """A bottom margin holding the x ticks and title and, below them, a horizontal legend of
    ``entries`` items at ``per_row`` or more to a row (short names: 4-5 fit at 700 px)."""
    return _AXIS_FOOT_PX + _LEGEND_ROW_PX * -(-entries // per_row) + 8

def pipeline_traces(grid: dict, *, bubble_curves=None, selected=None,
                    uneven_curve=None) -> tuple[list, dict]:
    """Heatmap of ``pipeline_grid`` (left) and, optionally, bubble vs microbatches (right).

    ``bubble_curves``: {stages: (microbatches list, bubble fractions)} from
    ``calc.pipeline_bubble``; ``selected``: (microbatches, bubble) marked on the curves;
    ``uneven_curve``: (label, microbatches list, bubble fractions), the fuller model's curve
    for stages of unequal time (``calc.pp_decode_bubble``), dashed.
    """
    p = len(grid["phase"])
    n = 4
    # a discrete colour scale: 0 idle, 1 fill, 2 steady, 3 drain
    colours = [theme.SERVING_COLORS["idle"], theme.SERVING_COLORS["fill"], theme.SERVING_COLORS["steady"],
               theme.SERVING_COLORS["drain"]]
    scale = discrete_colorscale(colours)
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
        # the heatmap's colour key: an entry per phase, drawing nothing itself
        traces.append({"type": "scatter", "mode": "markers", "x": [None], "y": [None],
                       "name": name, "marker": {"symbol": "square", "size": 12,
                                                "color": colours[i]},
                       "meta": {"legend_key": True}})
    entries = len(PIPE_PHASES) + (len(bubble_curves) + (selected is not None)
                                  + (uneven_curve is not None) if split else 0)
    layout = {"xaxis": {"title": {"text": "time slot (one stage-step each)"},
                        "domain": [0, 0.58] if split else [0, 1]},
              "yaxis": {"autorange": "reversed", "title": {"text": "pipeline stage (GPU)"}},
              # the legend in its own rows at the figure's foot, below the x titles
              "legend": theme.foot_legend(),
              "margin": {"t": 60, "r": 20, "b": _legend_foot_px(entries)}}
    if split:
        for k, (stages, (ms, fractions)) in enumerate(sorted(bubble_curves.items())):
            traces.append({"type": "scatter", "mode": "lines", "x": list(ms),
                           "y": [100 * f for f in fractions], "name": f"bubble, S = {stages}",
                           "xaxis": "x2", "yaxis": "y2",
                           # "dash" is the uneven split's line
                           "line": {"color": theme.REQUEST_PALETTE[k % len(theme.REQUEST_PALETTE)],
                                    "dash": ("solid", "dot", "dashdot", "longdash",
                                             "longdashdot")[k % 5]}})
        if uneven_curve is not None:
            label, ms, fractions = uneven_curve
            traces.append({"type": "scatter", "mode": "lines", "x": list(ms),
                           "y": [100 * f for f in fractions], "name": label,
                           "xaxis": "x2", "yaxis": "y2",
                           "line": {"color": theme.INK, "dash": "dash", "width": 2}})
        if selected is not None:
            traces.append({"type": "scatter", "mode": "markers", "x": [selected[0]],
                           "y": [100 * selected[1]], "name": "this setting", "xaxis": "x2",
                           "yaxis": "y2", "marker": {"size": 12, "color": theme.INK}})
        layout["xaxis2"] = {"title": {"text": "microbatches M"}, "type": "log",
                            "domain": [0.68, 1], "anchor": "y2"}
        layout["yaxis2"] = {"title": {"text": "bubble (% of stage time idle)"},
                            "anchor": "x2", "rangemode": "tozero"}
    return traces, layout


@serves("17.7")
def pipeline_figure(grid: dict, *, bubble_curves=None, selected=None, uneven_curve=None,
                    title: str = "Pipeline parallelism: fill, steady state, drain (17 §7)"):
    traces, layout = pipeline_traces(grid, bubble_curves=bubble_curves, selected=selected,
                                     uneven_curve=uneven_curve)
    p = len(grid["phase"])
    legend_px = layout["margin"]["b"] - _AXIS_FOOT_PX
    return _fig(traces, dict(layout, height=max(320, 160 + 34 * p) + legend_px), title)


_MICROBATCH_SWEEP = tuple(sorted({int(x) for x in np.geomspace(1, 256, 40).round()}))


@lru_cache(maxsize=32)
def _bubble_curve(stages: int) -> tuple:
    return _MICROBATCH_SWEEP, tuple(calc.pipeline_bubble(stages, m) for m in _MICROBATCH_SWEEP)


# the fuller model's stages: the public Llama-3.1-70B config (80 layers of 855.7M parameters,
# lm_head and the final norm on the last stage), each stage streaming its weights per step
PIPELINE_CONFIG = "llama-3.1-70b"


@lru_cache(maxsize=32)
def uneven_bubble_curve(stages: int) -> tuple:
    """(label, microbatches, bubbles) of ``calc.pp_decode_bubble`` for the real 70B config split
    into ``stages`` decode stages (the dashed curve of ``PipelineBubblePanel``)."""
    cfg = models.load(PIPELINE_CONFIG)
    label = f"S = {stages}, real 70B stages (lm_head on the last)"
    return label, _MICROBATCH_SWEEP, tuple(
        pp_decode_bubble(cfg, specs.H100_SXM, stages, m)["bubble"] for m in _MICROBATCH_SWEEP)


@serves("17.7")
class PipelineBubblePanel(Panel):
    """17 §7: stage s runs microbatch j in slot s + j; the empty corners are the bubble (of a
    batch pushed through once; the readout adds what steady-state decode leaves)."""

    title = "Pipeline parallelism: the bubble (17 §7)"
    controls = (
        Control("stages", "pipeline stages S", "int", ch17.PP_STAGES, 1, 16, 1),
        Control("microbatches", "microbatches M", "int", ch17.PP_MICROBATCHES[0], 1, 160, 1),
    )
    main_control = "microbatches"
    base_layout = {"height": 440}

    def compute(self, *, stages, microbatches) -> View:
        grid = pipeline_grid(stages, microbatches)
        bubble = calc.pipeline_bubble(stages, microbatches)
        curves = {p: _bubble_curve(p) for p in sorted({2, 4, 8, 16, stages}) if p > 1}
        uneven = uneven_bubble_curve(stages) if stages > 1 else None
        traces, layout = pipeline_traces(grid, bubble_curves=curves,
                                         selected=(microbatches, bubble), uneven_curve=uneven)
        layers = calc.pp_stages(specs.LLAMA_70B, stages, microbatches)["layers_per_stage"]
        real = pp_decode_bubble(models.load(PIPELINE_CONFIG), specs.H100_SXM, stages,
                                microbatches)
        numbers = {"bubble_pct": 100 * bubble, "slots": grid["slots"],
                   "busy_cells": grid["busy_cells"], "idle_cells": grid["idle_cells"],
                   "layers_per_stage_70b": layers, "uneven_bubble_pct": 100 * real["bubble"],
                   "uneven_floor_pct": 100 * real["floor"]}
        lo, hi = min(real["stage_layers"]), max(real["stage_layers"])
        split = (f"{lo} layers each" if lo == hi else
                 "/".join(str(n) for n in real["stage_layers"]) + " layers" if stages <= 8
                 else f"{lo} to {hi} layers")
        text = (f"<b>S = {stages}, M = {microbatches}</b>: {grid['slots']} slots per stage, "
                f"{grid['idle_cells']} of {stages * grid['slots']} stage-slots idle<br>"
                f"bubble (S - 1) / (M + S - 1) = <b>{numbers['bubble_pct']:.1f}%</b> "
                f"(one batch through the pipe, as in a prefill)<br>"
                f"the 70B shape: {layers:g} layers per stage<br>"
                f"<i>stages as the real 70B config splits ({split}, lm_head on the "
                f"last): bubble {numbers['uneven_bubble_pct']:.1f}%, never below "
                f"{numbers['uneven_floor_pct']:.1f}% however many microbatches</i><br>"
                f"<i>steady-state decode, where each microbatch comes back to stage 1 for its "
                f"next token: M ≥ S keeps the pipe full and only that "
                f"{numbers['uneven_floor_pct']:.1f}% remains"
                + ("" if microbatches >= stages else
                   f"; with fewer microbatches than stages, "
                   f"{100 * (1 - microbatches / stages):.0f}% of stage time stays idle")
                + "</i>")
        return View(numbers=numbers, traces=traces, layout=layout, text=text)


# --- §7 placement: weights per GPU for each candidate layout ----------------------------------

def placement_traces(rows, usable_bytes: float, *, chosen: str | None = None) -> tuple[list, dict]:
    """Bars of weights per GPU (GB) for each candidate layout against the usable memory line.

    ``rows``: dicts with label ("TP 8 x PP 2"), weight_bytes_per_gpu; ``usable_bytes`` = card
    memory - reserve (- required KV); ``chosen``: the label of the smallest layout that fits.
    """
    labels = [r["label"] for r in rows]
    per_gpu = [r["weight_bytes_per_gpu"] / units.GB for r in rows]
    fits = [r["weight_bytes_per_gpu"] < usable_bytes for r in rows]
    colours = [theme.SERVING_COLORS["cap"] if f else theme.SERVING_COLORS["comm"] for f in fits]
    traces = [
        {"type": "bar", "x": labels, "y": per_gpu, "name": "weights per GPU",
         "marker": {"color": colours,
                    "line": {"color": theme.INK, "width": [3 if l == chosen else 0
                                                         for l in labels]}},
         "text": [f"{g:,.0f}" for g in per_gpu], "textposition": "outside",
         "hovertemplate": "%{x}: %{y:,.1f} GB per GPU<extra></extra>"},
        {"type": "scatter", "mode": "lines", "x": [labels[0], labels[-1]],
         "y": [usable_bytes / units.GB] * 2, "name": "usable per GPU (memory - reserve)",
         "line": {"color": theme.SERVING_COLORS["slo"], "dash": "dash"}},
    ]
    layout = {"xaxis": {"title": {"text": "layout (TP inside a node, PP across nodes)"},
                        "type": "category"},
              "yaxis": {"title": {"text": "weights per GPU (GB)"}, "type": "log"},
              # the legend in its own rows at the figure's foot, below the x title, with room
              # for a two-line tick label (a layout marked "<br>(does not fit)")
              "legend": theme.foot_legend(),
              "margin": {"t": 60, "r": 20, "b": _legend_foot_px(3, per_row=2) + 16}}
    return traces, layout


@serves("17.7")
def placement_figure(rows, usable_bytes: float, *, chosen=None,
                     title: str = "Where the weights fit: TP first, then PP (17 §7)"):
    traces, layout = placement_traces(rows, usable_bytes, chosen=chosen)
    return _fig(traces, dict(layout, height=420), title)


@serves("17.7")
class PlacementPanel(Panel):
    """17 §7: TP as far as the node reaches, PP across nodes only when a node is too small."""

    title = "Placement: the smallest TP x PP layout that fits (17 §7)"
    controls = (
        Control("params_b", "model size (billion parameters)", "float",
                ch17.MODEL_405B_PARAMS / 1e9, 1.0, 2000.0, 1.0),
        choice_control("bytes_per_param", "weight format", 2.0, WEIGHT_FORMATS),
        Control("gpu_mem_gb", "GPU memory (GB)", "float", specs.H100_SXM.mem_bytes / units.GB, 16.0,
                288.0, 1.0),
        Control("reserve_gb", "runtime reserve per GPU (GB)", "float",
                ch17.RUNTIME_RESERVE_BYTES / units.GB, 0.0, 40.0, 1.0),
        Control("min_kv_gb", "KV space wanted per GPU (GB)", "float", 0.0, 0.0, 80.0, 1.0),
        choice_control("gpus_per_node", "GPUs per node (NVLink domain)", 8, {"4": 4, "8": 8}),
    )
    main_control = "params_b"
    base_layout = {"height": 440}

    def compute(self, *, params_b, bytes_per_param, gpu_mem_gb, reserve_gb, min_kv_gb,
                gpus_per_node) -> View:
        m = placement_model(params_b * 1e9, bytes_per_param)
        hw = specs.H100_SXM.with_(name=f"{gpu_mem_gb:g} GB GPU", mem_bytes=gpu_mem_gb * units.GB)
        reserve, kv_min = reserve_gb * units.GB, min_kv_gb * units.GB
        try:
            layout_ = calc.parallel_layout(m, hw, reserve_bytes=reserve,
                                           gpus_per_node=gpus_per_node,
                                           min_kv_bytes_per_gpu=kv_min)
        except ValueError:
            layout_ = None
        pp_shown = max(4, layout_["pp"] + 1) if layout_ else 4
        rows = placement_candidates(m, gpus_per_node=gpus_per_node, max_pp=min(pp_shown, 16))
        usable = hw.mem_bytes - reserve - kv_min
        chosen = None
        if layout_:
            chosen = next(r["label"] for r in rows
                          if (r["tp"], r["pp"]) == (layout_["tp"], layout_["pp"]))
        traces, layout = placement_traces(rows, max(usable, 1.0), chosen=chosen)
        numbers = {"weights_GB": m.weight_bytes / units.GB, "layout": chosen or "none",
                   "tp": layout_["tp"] if layout_ else 0, "pp": layout_["pp"] if layout_ else 0,
                   "gpus": layout_["gpus"] if layout_ else 0,
                   "weights_per_gpu_GB": (layout_["weight_bytes_per_gpu"] / units.GB
                                          if layout_ else 0.0),
                   "free_per_gpu_GB": (layout_["free_kv_bytes_per_gpu"] / units.GB
                                       if layout_ else 0.0),
                   "layers_per_stage": (calc.pp_stages(m, layout_["pp"], 1)["layers_per_stage"]
                                        if layout_ else 0.0)}
        if layout_:
            text = (f"<b>{m.name}</b>: {numbers['weights_GB']:,.0f} GB of weights<br>"
                    f"smallest layout: <b>{chosen}</b> = {numbers['gpus']} GPUs, "
                    f"{numbers['weights_per_gpu_GB']:,.1f} GB per GPU, "
                    f"{numbers['free_per_gpu_GB']:,.1f} GB left per GPU for KV<br>"
                    f"{m.n_layers} layers (nearest reference shape): "
                    f"{numbers['layers_per_stage']:g} per pipeline stage")
        else:
            text = (f"<b>{m.name}</b>: {numbers['weights_GB']:,.0f} GB: no layout of up to 16 "
                    f"nodes fits")
        return View(numbers=numbers, traces=traces, layout=layout, text=text)
