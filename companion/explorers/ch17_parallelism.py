"""17 §7-§8's explorer home: tensor and pipeline parallelism, placement, disaggregated pools
and KV-aware routing.

Figures (plotly, deterministic): ``tp_step_figure`` (``tp_step_traces`` over
``calc.tp_layout_rows``), ``pipeline_figure`` (``pipeline_traces`` over ``calc.pipeline_grid``),
``placement_figure`` (``placement_traces`` over ``calc.placement_candidates``),
``pool_sizing_traces``, ``kv_transfer_figure`` and ``routing_traces``.

Panels: ``TensorParallelPanel`` (a TP decode step: reads, collective latency, wire, over NVLink
and PCIe for TP = 1..8), ``PipelineBubblePanel`` (the stages x slots diagram and the bubble),
``PlacementPanel`` (the smallest TP x PP layout that fits a model of any size),
``PoolSizingPanel`` (prefill and decode pool sizes from the request mix), ``KVRoutingPanel``
(cold vs warm TTFT per turn of a conversation). Every number comes from ``companion.calc``.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from companion import calc, specs, units
from companion.chapters import ch08
from companion.chapters import ch17
from companion.explorers.base import Control, Panel, View
from companion.explorers.common import REQUEST_PALETTE, SERVING_COLORS, discrete_colorscale
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
from companion.formulas.parallelism import PIPE_PHASES
from companion.serves import serves

__all__ = ["tp_step_traces", "tp_step_figure", "pipeline_traces", "pipeline_figure",
           "placement_traces", "placement_figure", "pool_sizing_traces", "kv_transfer_figure",
           "routing_traces", "TensorParallelPanel", "PipelineBubblePanel", "PlacementPanel",
           "PoolSizingPanel", "KVRoutingPanel", "KV_LINKS", "disaggregation_diagram_traces",
           "DisaggregationDiagramPanel"]


# --- §7 tensor parallelism: what a decode step is made of -------------------------------------

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


@serves("17.7")
def tp_step_figure(rows, *, selected=None,
                   title: str = "A tensor-parallel decode step: reads shrink as 1/p, "
                                "collectives do not (17 §7)"):
    traces, layout = tp_step_traces(rows, selected=selected)
    return _fig(traces, dict(layout, height=440), title)


@serves("17.7")
class TensorParallelPanel(Panel):
    """17 §7: each GPU reads 1/p of the weights, then pays 2 all-reduces per layer."""

    title = "Tensor parallelism: a decode step over NVLink and PCIe (17 §7)"
    controls = (
        model_control(),
        card_control(),
        choice_control("tp", "TP degree (highlighted)", 4, TP_DEGREES),
        Control("batch", "batch (sequences)", "int", 1, 1, 256, 1),
        Control("context_tokens", "live KV per sequence (tokens)", "int", 0, 0, 32_000, 500),
        Control("nvlink_latency_us", "NVLink collective floor (µs)", "float",
                ch17.COLLECTIVE_LATENCY_NVLINK_S / units.us, 1.0, 20.0, 0.5),
        Control("pcie_latency_us", "PCIe collective floor (µs)", "float",
                ch17.COLLECTIVE_LATENCY_PCIE_S / units.us, 5.0, 100.0, 1.0),
    )
    main_control = "tp"
    base_layout = {"height": 460}

    def compute(self, *, model, hardware, tp, batch, context_tokens, nvlink_latency_us,
                pcie_latency_us) -> View:
        m, hw = SERVING_MENU[model], SERVING_CARDS[hardware]
        rows = calc.tp_layout_rows(m, hw, batch=batch, context_tokens=context_tokens,
                              nvlink_latency_s=nvlink_latency_us * units.us,
                              pcie_latency_s=pcie_latency_us * units.us)
        pick = {r["link"]: r for r in rows if r["tp"] == tp}
        nv = pick.get("NVLink", pick.get("none"))
        pc = pick.get("PCIe", nv)
        traffic = calc.tp_allreduce_traffic(m, tp)
        cap = calc.tp_kv_capacity(m, hw, tp=tp)
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
            "fits": bool(cap["fits"]),
            # past tp = KV heads (or at any tp > 1 with MLA's one shared latent) the KV cache is
            # copied on every GPU rather than split: the closed forms here assume a split
            "kv_replicated": tp > 1 and (m.kv_lora_rank is not None or tp > m.n_kv_heads),
        }
        fit = "fits" if cap["fits"] else "<b>does not fit</b>"
        per_gpu = numbers["weights_per_gpu_GB"]
        text = (f"<b>{m.name}, TP {tp}</b>: {per_gpu:.{1 if per_gpu < 10 else 0}f} GB of "
                f"weights per GPU ({fit} with the 4 GB reserve)<br>"
                f"{numbers['collectives']} all-reduces per token, "
                f"{numbers['ring_KiB']:.0f} KiB each on the ring, "
                f"{numbers['bytes_per_token_MB']:.2f} MB per token<br>"
                f"read {numbers['read_ms']:.2f} ms + NVLink {numbers['nvlink_latency_ms']:.2f} ms"
                f" latency ({numbers['nvlink_wire_us']:.1f} µs on the wire) = "
                f"<b>{numbers['step_ms']:.2f} ms</b>, {numbers['tokens_per_s']:,.0f} tok/s, "
                f"overhead {numbers['nvlink_overhead_pct']:.0f}%<br>"
                f"over PCIe: {numbers['pcie_comm_ms']:.2f} ms of collectives, overhead "
                f"{numbers['pcie_overhead_pct']:.0f}%" + _kv_split_note(m, tp) + source_line(m))
        return View(numbers=numbers, traces=traces, layout=layout, text=text)


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


@serves("17.7")
def pipeline_figure(grid: dict, *, bubble_curves=None, selected=None,
                    title: str = "Pipeline parallelism: fill, steady state, drain (17 §7)"):
    traces, layout = pipeline_traces(grid, bubble_curves=bubble_curves, selected=selected)
    p = len(grid["phase"])
    return _fig(traces, dict(layout, height=max(320, 160 + 34 * p)), title)


_MICROBATCH_SWEEP = tuple(sorted({int(x) for x in np.geomspace(1, 256, 40).round()}))


@lru_cache(maxsize=32)
def _bubble_curve(stages: int) -> tuple:
    return _MICROBATCH_SWEEP, tuple(calc.pipeline_bubble(stages, m) for m in _MICROBATCH_SWEEP)


@serves("17.7")
class PipelineBubblePanel(Panel):
    """17 §7: stage s runs microbatch j in slot s + j; the empty corners are the bubble."""

    title = "Pipeline parallelism: the bubble (17 §7)"
    controls = (
        Control("stages", "pipeline stages p", "int", 4, 1, 16, 1),
        Control("microbatches", "microbatches m", "int", 16, 1, 64, 1),
    )
    main_control = "microbatches"
    base_layout = {"height": 440}

    def compute(self, *, stages, microbatches) -> View:
        grid = calc.pipeline_grid(stages, microbatches)
        bubble = calc.pipeline_bubble(stages, microbatches)
        curves = {p: _bubble_curve(p) for p in sorted({2, 4, 8, 16, stages}) if p > 1}
        traces, layout = pipeline_traces(grid, bubble_curves=curves,
                                         selected=(microbatches, bubble))
        layers = calc.pp_stages(specs.LLAMA_70B, stages, microbatches)["layers_per_stage"]
        numbers = {"bubble_pct": 100 * bubble, "slots": grid["slots"],
                   "busy_cells": grid["busy_cells"], "idle_cells": grid["idle_cells"],
                   "layers_per_stage_70b": layers}
        text = (f"<b>p = {stages}, m = {microbatches}</b>: {grid['slots']} slots per stage, "
                f"{grid['idle_cells']} of {stages * grid['slots']} stage-slots idle<br>"
                f"bubble (p - 1) / (m + p - 1) = <b>{numbers['bubble_pct']:.1f}%</b><br>"
                f"the 70B shape: {layers:g} layers per stage")
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
        m = calc.placement_model(params_b * 1e9, bytes_per_param)
        hw = specs.H100_SXM.with_(name=f"{gpu_mem_gb:g} GB GPU", mem_bytes=gpu_mem_gb * units.GB)
        reserve, kv_min = reserve_gb * units.GB, min_kv_gb * units.GB
        try:
            layout_ = calc.parallel_layout(m, hw, reserve_bytes=reserve,
                                           gpus_per_node=gpus_per_node,
                                           min_kv_bytes_per_gpu=kv_min)
        except ValueError:
            layout_ = None
        pp_shown = max(4, layout_["pp"] + 1) if layout_ else 4
        rows = calc.placement_candidates(m, gpus_per_node=gpus_per_node, max_pp=min(pp_shown, 16))
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


# --- §8 disaggregated pools and KV-aware routing ----------------------------------------------

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


@serves("17.8")
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
    layout = {"height": 420,
              "xaxis": {"title": {"text": "context shipped (tokens)"}, "type": "log"},
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


_RATE_SWEEP = tuple(range(5, 505, 5))


@serves("17.8")
class PoolSizingPanel(Panel):
    """17 §8: prefill groups from prompt tokens/s, decode groups from output tokens/s."""

    title = "Disaggregated serving: sizing the two pools (17 §8)"
    controls = (
        Control("request_rate", "request rate (req/s)", "float", 100.0, 1.0, 500.0, 1.0),
        Control("mean_prompt_tokens", "mean prompt (tokens)", "int", 2000, 100, 32_000, 100),
        Control("mean_output_tokens", "mean output (tokens)", "int", 250, 10, 4000, 10),
        Control("prefill_capacity", "prefill capacity per group (tok/s)", "float",
                float(ch17.PREFILL_TOK_PER_S_PER_GROUP), 1000.0, 50_000.0, 500.0),
        Control("decode_capacity", "decode capacity per group (tok/s)", "float",
                float(ch17.DECODE_TOK_PER_S_PER_GROUP), 250.0, 20_000.0, 250.0),
    )
    main_control = "request_rate"
    base_layout = {"height": 420}

    def compute(self, *, request_rate, mean_prompt_tokens, mean_output_tokens, prefill_capacity,
                decode_capacity) -> View:
        kw = dict(prefill_tok_per_s_per_group=prefill_capacity,
                  decode_tok_per_s_per_group=decode_capacity)
        pools = calc.disaggregated_pools(request_rate, mean_prompt_tokens, mean_output_tokens,
                                         **kw)
        sweep = [calc.disaggregated_pools(r, mean_prompt_tokens, mean_output_tokens, **kw)
                 for r in _RATE_SWEEP]
        traces, layout = pool_sizing_traces(
            _RATE_SWEEP, [s["prefill_groups"] for s in sweep], [s["decode_groups"] for s in sweep],
            {"rate": request_rate, "prefill_groups": pools["prefill_groups"],
             "decode_groups": pools["decode_groups"]})
        numbers = {k: pools[k] for k in ("prompt_tok_per_s", "output_tok_per_s",
                                         "prefill_groups", "decode_groups", "prefill_to_decode")}
        text = (f"prompt demand {pools['prompt_tok_per_s']:,.0f} tok/s -> "
                f"<b>{pools['prefill_groups']} prefill groups</b><br>"
                f"output demand {pools['output_tok_per_s']:,.0f} tok/s -> "
                f"<b>{pools['decode_groups']} decode groups</b><br>"
                f"ratio {pools['prefill_to_decode']:.2g} : 1")
        return View(numbers=numbers, traces=traces, layout=layout, text=text)


_TURNS = tuple(range(1, 61))


@lru_cache(maxsize=32)
def _routing_curves(model: str, first_turn_tokens: int, tokens_per_turn: int,
                    efficiency: float) -> tuple:
    """Cold and warm TTFT (s) for every turn of ``_TURNS`` (cached while the turn and the warm
    share move)."""
    rows = [calc.kv_routing_ttft(SERVING_MENU[model], specs.H100_SXM, t,
                                 first_turn_tokens=first_turn_tokens,
                                 tokens_per_turn=tokens_per_turn, efficiency=efficiency)
            for t in _TURNS]
    return tuple(x["cold_s"] for x in rows), tuple(x["warm_s"] for x in rows)


@serves("17.8")
class KVRoutingPanel(Panel):
    """17 §8: turn t re-sends the whole conversation; a warm worker prefills only the new part."""

    title = "KV-aware routing: TTFT per turn, cold vs warm worker (17 §8)"
    controls = (
        Control("turn", "turn", "int", 20, 1, 60, 1),
        Control("first_turn_tokens", "first turn (tokens, system + tools)", "int",
                ch17.AGENT_FIRST_TURN_TOKENS, 500, 32_000, 500),
        Control("tokens_per_turn", "added per turn (tokens)", "int",
                ch17.AGENT_TOKENS_PER_TURN, 100, 8000, 100),
        Control("warm_share_pct", "turns the router lands warm (%)", "float",
                100 * ch17.ROUTER_WARM_SHARES[0], 0.0, 100.0, 5.0),
        Control("efficiency_pct", "prefill at % of peak", "float",
                100 * ch17.PREFILL_EFFICIENCY, 10.0, 100.0, 5.0),
        model_control(specs.LLAMA_8B.name, (specs.LLAMA_8B.name, specs.LLAMA_70B.name)),
    )
    main_control = "turn"
    base_layout = {"height": 420}

    def compute(self, *, turn, first_turn_tokens, tokens_per_turn, warm_share_pct,
                efficiency_pct, model) -> View:
        m, eff, share = SERVING_MENU[model], efficiency_pct / 100, warm_share_pct / 100
        kw = dict(first_turn_tokens=first_turn_tokens, tokens_per_turn=tokens_per_turn,
                  efficiency=eff)
        cold, warm = _routing_curves(model, first_turn_tokens, tokens_per_turn, eff)
        r = calc.kv_routing_ttft(m, specs.H100_SXM, turn, **kw)
        mixed = calc.routed_mean_ttft_s(cold, warm, share).tolist()
        traces, layout = routing_traces(
            _TURNS, cold, warm, mixed_s=mixed,
            mixed_label=f"mean with {warm_share_pct:.0f}% of turns warm",
            selected=(turn, r["cold_s"], r["warm_s"]))
        weak = ch17.ROUTER_WARM_SHARES[1]
        mean_s = calc.routed_mean_ttft_s(r["cold_s"], r["warm_s"], share)
        weak_mean_s = calc.routed_mean_ttft_s(r["cold_s"], r["warm_s"], weak)
        numbers = {"context_tokens": r["context_tokens"], "cold_TFLOP": r["cold_flops"] / 1e12,
                   "cold_ms": r["cold_s"] / units.ms, "warm_TFLOP": r["warm_flops"] / 1e12,
                   "warm_ms": r["warm_s"] / units.ms, "speedup": r["speedup"],
                   "mean_ms": mean_s / units.ms, "mean_ms_at_30pct": weak_mean_s / units.ms}
        text = (f"turn {turn}: context {r['context_tokens']:,} tokens<br>"
                f"cold: {numbers['cold_TFLOP']:,.1f} TFLOP -> <b>{numbers['cold_ms']:,.0f} ms"
                f"</b>; warm: {numbers['warm_TFLOP']:,.1f} TFLOP -> "
                f"<b>{numbers['warm_ms']:,.0f} ms</b> ({numbers['speedup']:.0f}x)<br>"
                f"mean TTFT at {warm_share_pct:.0f}% warm: {numbers['mean_ms']:,.0f} ms "
                f"(at {100 * weak:.0f}% warm: {numbers['mean_ms_at_30pct']:,.0f} ms)"
                + source_line(m))
        return View(numbers=numbers, traces=traces, layout=layout, text=text)


# --- §8 the router and the two pools, drawn from the pool-sizing formulas ---------------------

KV_LINKS = {"400 Gb RDMA (50 GB/s)": ch17.RDMA_400G_BYTES_PER_S,
            "PCIe Gen5 x16 (64 GB/s)": ch08.PCIE_GEN5_X16_BYTES_PER_S,
            "NVLink (900 GB/s)": ch17.H100_NVLINK_BYTES_PER_S}


def _pool_cells(n: int, x0: float, x1: float, y0: float, y1: float) -> tuple[list, list, float]:
    """Centres of ``n`` squares in a grid filling the box, and a marker size for them."""
    cols = max(1, math.ceil(math.sqrt(n * (x1 - x0) / (y1 - y0))))
    rows = max(1, math.ceil(n / cols))
    dx, dy = (x1 - x0) / cols, (y1 - y0) / rows
    xs = [x0 + dx * (i % cols + 0.5) for i in range(n)]
    ys = [y1 - dy * (i // cols + 0.5) for i in range(n)]
    return xs, ys, max(4.0, min(28.0, 240 * min(dx, dy) / (x1 - x0 + y1 - y0)))


def disaggregation_diagram_traces(pools: dict, flows: dict) -> tuple[list, dict]:
    """Router, prefill pool, decode pool and the KV hop, with one square per GPU group.

    ``pools``: prefill_groups, decode_groups (``calc.disaggregated_pools``); ``flows``: rate
    (req/s), prompt_tok_s, output_tok_s, kv_bytes_s, ship_ms and link (label)."""
    boxes = {"prefill": (3.2, 6.0, 3.4, 6.0), "decode": (6.6, 9.4, 0.2, 2.8)}
    shapes = [
        {"type": "rect", "x0": 0.0, "x1": 1.2, "y0": 2.5, "y1": 3.5, "line": {"width": 1.5},
         "fillcolor": "#f2f2f2"},
        {"type": "rect", "x0": 1.7, "x1": 2.9, "y0": 2.5, "y1": 3.5, "line": {"width": 1.5},
         "fillcolor": "#e5f5ee"},
    ]
    tints = {"prefill": "#fdf3e1", "decode": "#eaf5fc"}
    for kind, (x0, x1, y0, y1) in boxes.items():
        shapes.append({"type": "rect", "x0": x0, "x1": x1, "y0": y0, "y1": y1,
                       "line": {"color": SERVING_COLORS[kind], "width": 2},
                       "fillcolor": tints[kind], "layer": "below"})
    traces = []
    for kind, key in (("prefill", "prefill_groups"), ("decode", "decode_groups")):
        x0, x1, y0, y1 = boxes[kind]
        xs, ys, size = _pool_cells(pools[key], x0 + 0.1, x1 - 0.1, y0 + 0.1, y1 - 0.45)
        traces.append({"type": "scatter", "mode": "markers", "x": xs, "y": ys,
                       "name": f"{kind} pool: {pools[key]} GPU groups",
                       "marker": {"symbol": "square", "size": size,
                                  "color": SERVING_COLORS[kind]},
                       "hovertemplate": f"{kind} group<extra></extra>"})

    def arrow(x, y, ax, ay, colour="black"):
        return {"x": x, "y": y, "ax": ax, "ay": ay, "xref": "x", "yref": "y", "axref": "x",
                "ayref": "y", "showarrow": True, "arrowhead": 3, "arrowwidth": 2,
                "arrowcolor": colour, "text": "", "standoff": 2, "startstandoff": 2}

    def label(x, y, text, colour="black"):
        return {"x": x, "y": y, "text": text, "showarrow": False, "font": {"size": 11,
                                                                          "color": colour}}

    notes = [
        {"x": 0.6, "y": 3.0, "text": f"requests<br>{flows['rate']:,.0f} req/s", "showarrow": False},
        {"x": 2.3, "y": 3.0, "text": "router<br>(KV-aware)", "showarrow": False},
        {"x": 4.6, "y": 5.8, "text": f"<b>prefill pool</b>: {pools['prefill_groups']} groups",
         "showarrow": False},
        {"x": 8.0, "y": 2.6, "text": f"<b>decode pool</b>: {pools['decode_groups']} groups",
         "showarrow": False},
        arrow(1.7, 3.0, 1.2, 3.0),
        arrow(3.2, 4.4, 2.6, 3.5),
        label(2.1, 4.3, f"{flows['prompt_tok_s']:,.0f}<br>prompt tok/s"),
        arrow(6.9, 2.8, 5.6, 3.4, colour=SERVING_COLORS["comm"]),
        label(7.9, 3.9, f"KV hop: {flows['kv_bytes_s'] / units.GB:,.1f} GB/s in all,<br>"
                        f"{flows['ship_ms']:.0f} ms per request<br>({flows['link']})",
              colour=SERVING_COLORS["comm"]),
        arrow(6.6, 1.0, 2.6, 2.5, colour=SERVING_COLORS["warm"]),
        label(3.9, 1.2, "a turn whose prefix is<br>already warm on a decode GPU",
              colour=SERVING_COLORS["warm"]),
        arrow(10.4, 1.5, 9.4, 1.5),
        label(10.1, 0.6, f"{flows['output_tok_s']:,.0f}<br>output tok/s"),
    ]
    layout = {"shapes": shapes, "annotations": notes, "showlegend": True,
              "xaxis": {"range": [-0.1, 10.9], "visible": False},
              "yaxis": {"range": [-0.1, 6.3], "visible": False},
              "legend": {"orientation": "h", "y": -0.05}}
    return traces, layout


@serves("17.8")
class DisaggregationDiagramPanel(Panel):
    """17 §8 as a picture: the router, the prefill pool, the KV hop and the decode pool, sized by
    ``calc.disaggregated_pools`` and the KV transfer arithmetic."""

    title = "Router, prefill pool, KV hop, decode pool (17 §8)"
    controls = (
        Control("request_rate", "request rate (req/s)", "float", 100.0, 1.0, 500.0, 1.0),
        Control("mean_prompt_tokens", "mean prompt (tokens)", "int", 2000, 100, 32_000, 100),
        Control("mean_output_tokens", "mean output (tokens)", "int", 250, 10, 4000, 10),
        model_control(specs.LLAMA_70B.name, (specs.LLAMA_8B.name, specs.LLAMA_70B.name)),
        choice_control("link", "KV link", "400 Gb RDMA (50 GB/s)", {k: k for k in KV_LINKS}),
    )
    main_control = "request_rate"
    base_layout = {"height": 460}

    def compute(self, *, request_rate, mean_prompt_tokens, mean_output_tokens, model,
                link) -> View:
        m = SERVING_MENU[model]
        pools = calc.disaggregated_pools(request_rate, mean_prompt_tokens, mean_output_tokens)
        kv_request = calc.kv_bytes(m, mean_prompt_tokens, block_tokens=1)
        ship = calc.kv_transfer_s(m, mean_prompt_tokens, KV_LINKS[link])
        flows = {"rate": request_rate, "prompt_tok_s": pools["prompt_tok_per_s"],
                 "output_tok_s": pools["output_tok_per_s"],
                 "kv_bytes_s": request_rate * kv_request, "ship_ms": ship / units.ms,
                 "link": link}
        traces, layout = disaggregation_diagram_traces(pools, flows)
        numbers = {"prefill_groups": pools["prefill_groups"],
                   "decode_groups": pools["decode_groups"],
                   "prefill_to_decode": pools["prefill_to_decode"],
                   "kv_bytes_per_request": kv_request, "kv_GB_per_s": flows["kv_bytes_s"] / units.GB,
                   "ship_ms": ship / units.ms}
        text = (f"<b>{pools['prefill_groups']} prefill</b> and <b>{pools['decode_groups']} "
                f"decode</b> groups (ratio {pools['prefill_to_decode']:.2g} : 1)<br>"
                f"KV per mean request {kv_request / units.GB:.2f} GB, {ship / units.ms:.0f} ms "
                f"over {link}; {flows['kv_bytes_s'] / units.GB:,.1f} GB/s between the pools"
                + source_line(m))
        return View(numbers=numbers, traces=traces, layout=layout, text=text)
