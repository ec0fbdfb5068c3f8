"""17 §9's explorer home (notebook 17_09_measuring): measuring (SM share, MBU, MFU), the
kernel timeline and the speed of light.

Figures (plotly, deterministic): ``sm_share_figure``, ``utilization_traces``,
``kernel_timeline_traces`` and ``speed_of_light_traces``.

Panels: ``UtilizationPanel`` (MBU and MFU of measured decode and prefill rates),
``KernelTimelinePanel`` (one decode step's kernels, launched one by one or as a graph),
``SpeedOfLightPanel`` (a step's time against its memory and compute floors).
"""

from __future__ import annotations

from companion import calc, specs, theme, units
from companion.chapters import ch17
from companion.explorers.base import Control, Panel, View
from companion.explorers.common import titled_figure as _fig
from companion.explorers.presets import ModelMenu, blank_traces, choice_control, source_line
from companion.serves import serves
from companion.sim.kernel_timeline import (
    BIG_KERNELS,
    KERNELS_PER_LAYER,
    LAUNCH_OVERHEAD_S,
    decode_step_timeline,
    speed_of_light,
    timeline_unsupported,
)

__all__ = [
    "sm_share_figure", "utilization_traces", "UtilizationPanel", "kernel_timeline_traces",
    "KernelTimelinePanel", "speed_of_light_traces", "SpeedOfLightPanel",
]

# the section this module serves (the notebook of its name): every @serves mark here is
# within it (tests/test_sections.py)
SECTION = "17.9"


# --- §9 measuring: SM share, MBU and MFU ------------------------------------------------------

@serves("17.9")
def sm_share_figure(active_sms, shares, *, title: str = "A busy GPU by nvidia-smi is not a "
                                                        "busy GPU (17 §9)"):
    """Upper bound on compute in use (% of SMs busy, from ``calc.sm_share``) against the
    nvidia-smi utilization of a kernel that is always resident (100% by definition)."""
    xs = list(active_sms)
    traces = [
        {"type": "scatter", "mode": "lines", "x": xs, "y": [100.0] * len(xs),
         "name": "nvidia-smi 'GPU util' (a kernel resident all the time)",
         "line": {"color": theme.SERVING_COLORS["comm"], "width": 3}},
        {"type": "scatter", "mode": "lines", "x": xs, "y": [100 * s for s in shares],
         "name": "upper bound on compute in use (busy SMs / all SMs)",
         "line": {"color": theme.SERVING_COLORS["read"], "width": 3, "dash": "dash"}},
    ]
    layout = {"height": 380, "xaxis": {"title": {"text": "SMs the resident kernel occupies"}},
              "yaxis": {"title": {"text": "percent"}, "range": [0, 105]},
              "legend": {"orientation": "h", "y": -0.3}}
    return _fig(traces, layout, title)


def utilization_traces(ratios: dict, rates: dict, *, bands=None,
                       counted=None) -> tuple[list, dict]:
    """Left: utilization bars (%) with 17 §9's band of each shaded (healthy for decode MBU,
    strong for prefill MFU); right: measured decode tok/s against the memory-roof ceiling it
    implies.

    ``ratios``: {label: fraction}; ``bands``: {label: (low, high) fractions}; ``rates``:
    {label: tok/s}; ``counted``: {label: fraction}, the fuller model's ratio for the same
    measurement (attention FLOPs and every KV byte counted, ``calc.utilization_counted``),
    drawn as a marker on each bar's row.
    """
    labels = list(ratios)
    traces = [{"type": "bar", "orientation": "h", "y": labels,
               "x": [100 * ratios[k] for k in labels], "name": "measured ratio",
               "text": [f"{100 * ratios[k]:.3g}%" for k in labels], "textposition": "outside",
               "marker": {"color": [theme.SERVING_COLORS["read"], theme.SERVING_COLORS["comm"],
                                    theme.SERVING_COLORS["prefill"]][:len(labels)]},
               "cliponaxis": False, "hovertemplate": "%{y}: %{x:.3g}%<extra></extra>"}]
    shapes = []
    for k, (lo, hi) in (bands or {}).items():
        i = labels.index(k)
        shapes.append({"type": "rect", "xref": "x", "yref": "y", "x0": 100 * lo, "x1": 100 * hi,
                       "y0": i - 0.45, "y1": i + 0.45, "fillcolor": theme.SERVING_COLORS["good"],
                       "line": {"width": 0}, "layer": "below"})
    if counted:
        keys = [k for k in labels if k in counted]
        traces.append({"type": "scatter", "mode": "markers", "y": keys,
                       "x": [100 * counted[k] for k in keys],
                       "name": "counting attention FLOPs and KV bytes",
                       "marker": {"symbol": "diamond-open", "size": 13, "color": theme.INK,
                                  "line": {"width": 2}},
                       "cliponaxis": False,
                       "hovertemplate": "%{y}, all work counted: %{x:.3g}%<extra></extra>"})
    # the key of the shaded bands (shapes), drawing nothing itself
    traces.append({"type": "scatter", "mode": "markers", "x": [None], "y": [None],
                   "name": "17 §9's band (decode: healthy; prefill: strong)",
                   "meta": {"legend_key": True},
                   "marker": {"symbol": "square", "size": 12, "color": theme.SERVING_COLORS["good"]}})
    rl = list(rates)
    traces.append({"type": "bar", "x": rl, "y": [rates[k] for k in rl], "xaxis": "x2",
                   "yaxis": "y2", "name": "decode tok/s",
                   "text": [f"{rates[k]:,.0f}" for k in rl], "textposition": "outside",
                   "marker": {"color": [theme.SERVING_COLORS["decode"], theme.SERVING_COLORS["cap2"]]},
                   "cliponaxis": False, "showlegend": False})
    layout = {"xaxis": {"title": {"text": "percent of peak"}, "domain": [0, 0.55],
                        "range": [0, 110]},
              "yaxis": {"type": "category", "autorange": "reversed"},
              "xaxis2": {"domain": [0.7, 1], "anchor": "y2", "type": "category"},
              "yaxis2": {"title": {"text": "decode tokens/s"}, "anchor": "x2",
                         "rangemode": "tozero"},
              "shapes": shapes, "legend": {"orientation": "h", "y": -0.25}}
    return traces, layout


_MEASURE_MODELS = ModelMenu({m.name: m for m in (specs.LLAMA_8B, specs.LLAMA_70B,
                                                 specs.QWEN3_8B)})


_MEASURE_CARDS = {h.name: h for h in (specs.H100_SXM, specs.H200_SXM, specs.A100_80GB,
                                      specs.RTX_PRO_6000)}
# 17 §5's naive batch of the 8B on one H100 (the notebook sets the batch slider to it)
_NAIVE_BATCH = calc.paged_batch_gain(specs.LLAMA_8B, specs.H100_SXM,
                                     block_tokens=1)["naive"]["batch"]


@serves("17.9")
class UtilizationPanel(Panel):
    """17 §9: the same measurement over two denominators; decode by MBU, prefill by MFU."""

    title = "MBU and MFU from measured token rates (17 §9)"
    controls = (
        _MEASURE_MODELS.control(specs.LLAMA_8B.name),
        choice_control("hardware", "GPU", specs.H100_SXM.name, {n: n for n in _MEASURE_CARDS}),
        Control("decode_tok_s", "measured decode (tokens/s, whole batch)", "float",
                float(ch17.DECODE_TOK_PER_S), 1.0, 20_000.0, 1.0),
        Control("batch", "decode batch (sequences)", "int", 1, 1, 512, 1,
                extra_stops=(_NAIVE_BATCH,)),     # 17 §5's naive batch, set by the notebook
        Control("context_tokens", "live KV per sequence (tokens)", "int", 0, 0, 32_000, 100),
        Control("prefill_tok_s", "measured prefill (prompt tokens/s)", "float",
                float(ch17.PREFILL_TOK_PER_S), 500.0, 100_000.0, 500.0),
        Control("prompt_tokens", "prompt length of the prefill measurement (tokens)", "int",
                ch17.PROMPT_TOKENS, 128, ch17.LONGEST_CONTEXT_TOKENS, 128),
    )
    main_control = "batch"
    base_layout = {"height": 400}

    def compute(self, *, model, hardware, decode_tok_s, batch, context_tokens,
                prefill_tok_s, prompt_tokens) -> View:
        m, hw = _MEASURE_MODELS[model], _MEASURE_CARDS[hardware]
        dec = calc.decode_utilization(m, hw, decode_tok_s, batch=batch,
                                      context_tokens=context_tokens)
        pre = calc.prefill_utilization(m, hw, prefill_tok_s)
        full = calc.utilization_counted(m, hw, decode_tokens_per_s=decode_tok_s,
                                        prefill_tokens_per_s=prefill_tok_s, batch=batch,
                                        context_tokens=context_tokens,
                                        prompt_tokens=prompt_tokens)
        ceiling = decode_tok_s / dec["mbu"]
        ratios = {"decode MBU": dec["mbu"], "decode MFU": dec["mfu"], "prefill MFU": pre["mfu"]}
        traces, layout = utilization_traces(
            ratios, {"measured": decode_tok_s, "memory-roof ceiling": ceiling},
            bands={"decode MBU": ch17.HEALTHY_DECODE_MBU,
                   "prefill MFU": ch17.STRONG_PREFILL_MFU},
            counted={"decode MBU": full["decode_mbu"], "decode MFU": full["decode_mfu"],
                     "prefill MFU": full["prefill_mfu"]})
        numbers = {"decode_bytes_per_s": dec["bytes_per_s"], "decode_mbu_pct": 100 * dec["mbu"],
                   "decode_flops_per_s": dec["flops_per_s"], "decode_mfu_pct": 100 * dec["mfu"],
                   "headroom": dec["headroom"], "ceiling_tok_s": ceiling,
                   "prefill_flops_per_s": pre["flops_per_s"], "prefill_mfu_pct": 100 * pre["mfu"],
                   "decode_mbu_weights_only_pct": 100 * full["decode_mbu_chapter"],
                   "decode_mfu_attention_pct": 100 * full["decode_mfu"],
                   "prefill_mfu_attention_pct": 100 * full["prefill_mfu"]}
        lo, hi = ch17.HEALTHY_DECODE_MBU
        if dec["mbu"] > 1:
            verdict = "above the memory roof: recheck the rate, batch or context"
        elif dec["mbu"] >= lo:
            verdict = "healthy: near the memory roof; only batch or fewer bytes help now"
        else:
            verdict = "low: suspect a small batch, unfused kernels or scattered KV (profile)"
        text = (f"<b>decode</b>: {dec['bytes_per_s']:.3g} B/s -> MBU "
                f"<b>{numbers['decode_mbu_pct']:.0f}%</b>; {dec['flops_per_s']:.3g} FLOP/s -> "
                f"MFU {numbers['decode_mfu_pct']:.2g}%<br>"
                f"headroom at most {dec['headroom']:.2f}x (ceiling {ceiling:,.0f} tok/s): "
                f"{verdict}<br><b>prefill</b>: {pre['flops_per_s']:.3g} FLOP/s -> MFU "
                f"<b>{numbers['prefill_mfu_pct']:.0f}%</b><br>"
                f"<i>all work counted: decode MBU {numbers['decode_mbu_pct']:.0f}% (weights "
                f"only {numbers['decode_mbu_weights_only_pct']:.0f}%), decode MFU "
                f"{numbers['decode_mfu_attention_pct']:.2g}%, prefill MFU "
                f"{numbers['prefill_mfu_attention_pct']:.0f}% with attention over "
                f"{prompt_tokens:,}-token prompts</i>" + source_line(m))
        return View(numbers=numbers, traces=traces, layout=layout, text=text)


# --- §9 the Nsight pair: a decode round's kernel timeline, and Speed of Light ----------------

_TIMELINE_MODELS = ModelMenu({m.name: m for m in (specs.LLAMA_8B, specs.QWEN3_8B)})
_GRAPHS = {"off (eager: one launch per kernel)": False, "on (one graph replay per round)": True}
_KERNEL_COLOURS = {"matmul": theme.SERVING_COLORS["read"], "attention": theme.SERVING_COLORS["warm"],
                   "elementwise": theme.SERVING_COLORS["cap2"], "launch": theme.SERVING_COLORS["prefill"]}


def _kernel_kind(name: str) -> str:
    if name in ("qkv_proj", "o_proj", "gate_up_proj", "down_proj", "lm_head"):
        return "matmul"
    return "attention" if name == "attention" else "elementwise"


def kernel_timeline_traces(timelines: dict, *, shown_layers: int = 2) -> tuple[list, dict]:
    """Nsight-Systems-style rows (CPU launches, GPU kernels) for each timeline of
    ``timelines`` ({label: StepTimeline}), zoomed on its first ``shown_layers`` layers, plus
    a bar of each round's GPU busy time and gaps (right)."""
    traces, n = [], len(timelines)
    rows = []
    for label in timelines:
        rows += [f"{label} · CPU", f"{label} · GPU"]
    seen, end = set(), 0.0
    for label, tl in timelines.items():
        for e in tl.events:
            if not (0 <= e.layer < shown_layers or e.name == "cudaGraphLaunch"):
                continue
            end = max(end, e.end_s)
            kind = "launch" if e.row == "CPU" else _kernel_kind(e.name)
            traces.append({"type": "bar", "orientation": "h", "base": [e.start_s / units.us],
                           "x": [(e.end_s - e.start_s) / units.us], "y": [f"{label} · {e.row}"],
                           "marker": {"color": _KERNEL_COLOURS[kind],
                                      "line": {"color": theme.WHITE, "width": 0.5}},
                           "name": kind, "legendgroup": kind, "showlegend": kind not in seen,
                           "hovertemplate": f"{e.name} (layer {e.layer})<br>"
                                            "%{base:.1f} µs + %{x:.2f} µs<extra></extra>"})
            seen.add(kind)
    labels = list(timelines)
    traces.append({"type": "bar", "x": labels, "y": [timelines[k].gpu_busy_s / units.ms
                                                      for k in labels],
                   "name": "GPU busy", "xaxis": "x2", "yaxis": "y2",
                   "marker": {"color": theme.SERVING_COLORS["read"]}})
    traces.append({"type": "bar", "x": labels, "y": [timelines[k].gaps_s / units.ms
                                                      for k in labels],
                   "name": "GPU idle (gaps)", "xaxis": "x2", "yaxis": "y2",
                   "marker": {"color": theme.SERVING_COLORS["idle"]}})
    layout = {"barmode": "overlay",
              "xaxis": {"title": {"text": f"time from the round's first launch (µs; first "
                                          f"{shown_layers} layers)"}, "domain": [0, 0.68],
                        "range": [0, 1.02 * end / units.us]},  # not a chapter input
              "yaxis": {"type": "category", "categoryorder": "array",
                        "categoryarray": rows[::-1]},
              "xaxis2": {"domain": [0.78, 1], "anchor": "y2", "type": "category"},
              "yaxis2": {"title": {"text": "whole round (ms)"}, "anchor": "x2",
                         "rangemode": "tozero"},
              "legend": {"orientation": "h", "y": -0.25}}
    # the right panel stacks busy and idle; plotly stacks per axis only in "stack" mode, so the
    # idle bar is drawn on top of the busy one by its base
    traces[-1]["base"] = [timelines[k].gpu_busy_s / units.ms for k in labels]
    return traces, layout


def _unsupported_view(panel: Panel, m, problem: str) -> View:
    """What the timeline panels draw for a model they cannot lay out: the chapter's traces
    emptied (the shown figure keeps its traces) and a readout that says why."""
    chapter = panel.compute(**panel.defaults())
    return View(numbers={"supported": False}, traces=blank_traces(chapter.traces),
                layout=chapter.layout, text=f"<b>{problem}</b>" + source_line(m))


@serves("17.9")
class KernelTimelinePanel(Panel):
    """17 §9: gaps between kernels when the CPU launches slower than the GPU runs, and CUDA
    Graphs replaying the round as one launch. Launch costs are labelled assumptions."""

    title = "A decode round as Nsight Systems draws it: launches, kernels, gaps (17 §9)"
    controls = (
        _TIMELINE_MODELS.control(specs.LLAMA_8B.name),
        Control("batch", "batch (sequences)", "int", 1, 1, 256, 1),
        Control("context_tokens", "live KV per sequence (tokens)", "int", 0, 0, 32_000, 100),
        Control("layers", "layers (same width)", "int", specs.LLAMA_8B.n_layers, 1, 96, 1),
        Control("kernels_per_layer", "kernels per layer (5 = fully fused)", "int",
                KERNELS_PER_LAYER, 5, 24, 1),
        Control("launch_us", "CPU cost per kernel launch (µs, assumed)", "float",
                round(LAUNCH_OVERHEAD_S / units.us, 9), 0.0, 60.0, 1.0),
        choice_control("graphs", "CUDA Graphs", False, _GRAPHS),
    )
    main_control = "launch_us"
    base_layout = {"height": 460}

    def compute(self, *, model, batch, context_tokens, layers, kernels_per_layer, launch_us,
                graphs) -> View:
        m = _TIMELINE_MODELS[model]
        if problem := timeline_unsupported(m):
            return _unsupported_view(self, m, problem)
        kw = dict(batch=batch, context_tokens=context_tokens, layers=layers,
                  kernels_per_layer=kernels_per_layer, launch_overhead_s=launch_us * units.us)
        eager = decode_step_timeline(m, specs.H100_SXM, cuda_graphs=False, **kw)
        graphed = decode_step_timeline(m, specs.H100_SXM, cuda_graphs=True, **kw)
        chosen = graphed if graphs else eager
        shown = {"eager": eager, "CUDA Graphs": graphed}
        traces, layout = kernel_timeline_traces(shown)
        numbers = {"kernels": chosen.kernels, "launches": chosen.launches,
                   "gpu_busy_ms": chosen.gpu_busy_s / units.ms, "step_ms": chosen.step_s / units.ms,
                   "gaps_ms": chosen.gaps_s / units.ms, "idle_pct": 100 * chosen.idle_fraction,
                   "eager_step_ms": eager.step_s / units.ms,
                   "graph_step_ms": graphed.step_s / units.ms,
                   "graph_speedup": eager.step_s / graphed.step_s,
                   "memory_ms": chosen.memory_time_s / units.ms,
                   "tokens_per_s": batch / chosen.step_s}
        text = (f"<b>{'CUDA Graphs' if graphs else 'eager'}</b>: {chosen.kernels} kernels, "
                f"{chosen.launches} launch{'es' if chosen.launches != 1 else ''}; round "
                f"{numbers['step_ms']:.2f} ms = {numbers['gpu_busy_ms']:.2f} ms busy + "
                f"<b>{numbers['gaps_ms']:.2f} ms of gaps ({numbers['idle_pct']:.0f}%)</b><br>"
                f"eager {numbers['eager_step_ms']:.2f} ms vs graphs "
                f"{numbers['graph_step_ms']:.2f} ms ({numbers['graph_speedup']:.2f}x); the "
                f"roofline's memory time is {numbers['memory_ms']:.2f} ms" + source_line(m))
        return View(numbers=numbers, traces=traces, layout=layout, text=text)


def speed_of_light_traces(sol: dict) -> tuple[list, dict]:
    """Nsight-Compute-style Speed of Light bars (memory and compute throughput, % of peak) for
    each kind of kernel in a decode layer, and for the whole round (its MBU and MFU)."""
    merged: dict = {}
    for r in sol["kernels"]:
        name = r["name"] if r["name"] in BIG_KERNELS else "element-wise (each)"
        merged.setdefault(name, r)
    names = list(merged) + ["whole round (MBU / MFU)"]
    memory = [merged[n]["memory_pct"] for n in merged] + [100 * sol["mbu"]]
    compute = [merged[n]["compute_pct"] for n in merged] + [100 * sol["mfu"]]
    traces = [
        {"type": "bar", "orientation": "h", "y": names, "x": memory, "name": "memory throughput",
         "marker": {"color": theme.SERVING_COLORS["read"]},
         "text": [f"{x:.1f}%" for x in memory], "textposition": "outside", "cliponaxis": False},
        {"type": "bar", "orientation": "h", "y": names, "x": compute,
         "name": "compute throughput", "marker": {"color": theme.SERVING_COLORS["prefill"]},
         "text": [f"{x:.2g}%" for x in compute], "textposition": "outside",
         "cliponaxis": False},
    ]
    layout = {"barmode": "group", "xaxis": {"title": {"text": "% of the card's peak"},
                                            "range": [0, 110]},
              "yaxis": {"autorange": "reversed", "type": "category"},
              "legend": {"orientation": "h", "y": -0.2}}
    return traces, layout


@serves("17.9")
class SpeedOfLightPanel(Panel):
    """17 §9: how to read a Speed of Light section, computed for the kernels of one decode
    layer and for the whole round (its MBU and MFU)."""

    title = "Reading Speed of Light: memory vs compute throughput per kernel (17 §9)"
    controls = (
        _TIMELINE_MODELS.control(specs.LLAMA_8B.name),
        choice_control("hardware", "GPU", specs.H100_SXM.name, {n: n for n in _MEASURE_CARDS}),
        Control("batch", "batch (sequences)", "int", 1, 1, 1024, 1),
        # 17 §2's short chat: at 0 the attention kernel would read nothing
        Control("context_tokens", "live KV per sequence (tokens)", "int", ch17.CHAT_LIVE_TOKENS,
                0, 32_000, 100),
        Control("roof_pct", "share of its roof each big kernel reaches (%)", "float",
                100 * ch17.SOL_DECODE_MEMORY_FRACTION, 10.0, 100.0, 5.0),
    )
    main_control = "batch"
    base_layout = {"height": 440}

    def compute(self, *, model, hardware, batch, context_tokens, roof_pct) -> View:
        m, hw = _TIMELINE_MODELS[model], _MEASURE_CARDS[hardware]
        if problem := timeline_unsupported(m):
            return _unsupported_view(self, m, problem)
        sol = speed_of_light(m, hw, batch=batch, context_tokens=context_tokens,
                             roof_fraction=roof_pct / 100)
        traces, layout = speed_of_light_traces(sol)
        by_name = {r["name"]: r for r in sol["kernels"]}
        mlp = by_name["gate_up_proj"]
        numbers = {"mbu_pct": 100 * sol["mbu"], "mfu_pct": 100 * sol["mfu"],
                   "round_ms": sol["round_s"] / units.ms, "tokens_per_s": sol["tokens_per_s"],
                   "gate_up_memory_pct": mlp["memory_pct"],
                   "gate_up_compute_pct": mlp["compute_pct"],
                   "attention_memory_pct": by_name["attention"]["memory_pct"],
                   "gate_up_time_share_pct": 100 * mlp["time_share"]}
        bound = "memory" if mlp["memory_pct"] >= mlp["compute_pct"] else "compute"
        text = (f"gate/up projection: memory <b>{mlp['memory_pct']:.0f}%</b>, compute "
                f"<b>{mlp['compute_pct']:.2g}%</b> of peak: {bound}-bound<br>"
                f"whole round {numbers['round_ms']:.2f} ms ({sol['tokens_per_s']:,.0f} tok/s): "
                f"MBU {numbers['mbu_pct']:.0f}%, MFU {numbers['mfu_pct']:.2g}%" + source_line(m))
        return View(numbers=numbers, traces=traces, layout=layout, text=text)
