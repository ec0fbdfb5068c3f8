"""17 §4's explorer home (notebook 17_04_kv_sizing): KV sizing and max concurrency, with tensor
parallelism.

Figures (plotly, deterministic: fixed colours, no timestamps; byte axes in decimal GB/MB, as
Chapter 17 prints them): ``kv_by_context_figure``, ``attention_variants_figure``,
``context_step_figure`` (``context_step_traces``) and ``gpu_memory_traces``.

Panel: ``KVSizingPanel`` (model, hardware, context, KV precision, TP degree and runtime reserve
-> KV per token and per sequence, memory per GPU and how many sequences fit; a second, dotted
curve counts each sequence in whole 16-token blocks, ``calc.block_rounded_capacity``).
"""

from __future__ import annotations

import math

import numpy as np

from companion import calc, specs, theme, units
from companion import validate as v
from companion.chapters import ch17
from companion.explorers.axes import log_ticks
from companion.explorers.base import Control, Panel, View
from companion.explorers.common import dict_rows
from companion.explorers.common import titled_figure as _fig
from companion.formulas.fuller import block_rounded_capacity
from companion.explorers.presets import (
    HARDWARE_PRESETS,
    KV_PRECISION_BYTES,
    ModelMenu,
    config_control,
    hardware_control,
    kv_per_token_text,
)
from companion.serves import serves

__all__ = [
    "kv_by_context_figure", "attention_variants_figure", "context_step_traces",
    "context_step_figure", "gpu_memory_traces", "KVSizingPanel",
]

# the section this module serves (the notebook of its name): every @serves mark here is
# within it (tests/test_sections.py)
SECTION = "17.4"




# --- §4: KV by context, by attention design, and the step as context grows --------------------

@serves("17.4")
def kv_by_context_figure(rows, *, capacity_bytes: float | None = None,
                         title: str = "KV cache of one sequence by context (17 §4, re-derived)"):
    """Bars of ``calc.kv_by_context`` rows (GB) with the card's capacity and half of it marked."""
    data = dict_rows("rows", rows)
    labels = [f"{r['context_tokens']:,}" for r in data]
    gb = [r["kv_bytes"] / units.GB for r in data]
    traces = [{"type": "bar", "x": labels, "y": gb, "name": "KV of one sequence",
               "marker": {"color": theme.MEMORY_COLORS["kv"]},
               "text": [f"{g:,.3g} GB" for g in gb], "textposition": "outside",
               "hovertemplate": "%{x} tokens: %{y:,.4g} GB<extra></extra>"}]
    shapes, annotations = [], []
    if capacity_bytes is not None:
        cap = v.positive("capacity_bytes", capacity_bytes) / units.GB
        for frac, dash, label in ((1.0, "solid", f"card: {cap:,.0f} GB"),
                                  (0.5, "dash", f"half the card: {cap / 2:,.0f} GB")):
            shapes.append({"type": "line", "xref": "paper", "x0": 0, "x1": 1, "y0": cap * frac,
                           "y1": cap * frac, "line": {"color": theme.MEMORY_COLORS["over"],
                                                      "dash": dash}})
            annotations.append({"xref": "paper", "x": 0.01, "y": cap * frac, "text": label,
                                "showarrow": False, "yanchor": "bottom", "xanchor": "left"})
    layout = {"xaxis": {"title": {"text": "context (tokens; 8K = 8,000)"}, "type": "category"},
              "yaxis": {"title": {"text": "KV bytes (GB)"}, "rangemode": "tozero"},
              "shapes": shapes, "annotations": annotations, "height": 420}
    return _fig(traces, layout, title)


@serves("17.4")
def attention_variants_figure(rows, *, cache_bytes: float = ch17.CACHE_BYTES,
                              context_tokens: int = ch17.LONG_CONTEXT_TOKENS,
                              title: str = "One shape, three attention designs "
                                           "(17 §4, re-derived)"):
    """Two bar panels of ``calc.attention_variants`` rows: KV per token (KB = KiB, log) and
    sequences of ``context_tokens`` that fit in ``cache_bytes`` (log)."""
    data = dict_rows("rows", rows)
    cache = v.positive("cache_bytes", cache_bytes)
    ctx = v.tokens("context_tokens", context_tokens, minimum=1)
    # two lines per category: side by side the one-line names ran into each other
    names = [f"{r['attention']}<br>({r['n_kv_heads']} KV heads)" for r in data]
    kib = [r["kv_bytes_per_token"] / units.KiB for r in data]
    colors = [theme.REQUEST_PALETTE[i % len(theme.REQUEST_PALETTE)] for i in range(len(data))]
    traces = [
        {"type": "bar", "x": names, "y": kib, "name": "KV per token",
         "marker": {"color": colors}, "text": [f"{k:,.0f} KB" for k in kib],
         "textposition": "outside", "showlegend": False, "xaxis": "x", "yaxis": "y"},
        {"type": "bar", "x": names, "y": [r["sequences"] for r in data],
         "name": "sequences that fit", "marker": {"color": colors},
         "text": [f"{r['sequences']:,}" for r in data], "textposition": "outside",
         "showlegend": False, "xaxis": "x2", "yaxis": "y2"},
    ]
    layout = {
        "xaxis": {"domain": [0, 0.45], "anchor": "y"},
        "yaxis": {"title": {"text": "KV per token (KB = KiB, log)"}, "type": "log",
                  "anchor": "x"},
        "xaxis2": {"domain": [0.55, 1.0], "anchor": "y2"},
        # log, as the left panel: the counts span two orders of magnitude (MHA's 3 to MQA's
        # hundreds), and each design's factor over the next is then one equal step
        "yaxis2": {"title": {"text": f"{ctx:,}-token sequences in {cache / units.GB:,.0f} GB "
                                     "(log)"},
                   "type": "log", "anchor": "x2",
                   # bars grow from one sequence, so a design's bar height reads as its count
                   "range": [0.0, math.log10(2.0 * max([r["sequences"] for r in data] + [1]))]},
        "height": 420,
    }
    return _fig(traces, layout, title)


_MARK_COLORS = (theme.NAVY, theme.PURPLE, theme.OCHRE, theme.FOREST)
_MARK_SYMBOLS = ("circle", "square", "diamond", "triangle-up")


def context_step_traces(contexts, rows, *, weight_bytes: float, bandwidth_bytes_per_s: float,
                        crossover_tokens: float | None = None, marks=(), batch_steps_s=None,
                        batch_label: str = "in a batch", xaxis: str = "x",
                        yaxis: str = "y") -> tuple[list, dict]:
    """Decode step time (ms) vs context: the weight stream (flat) and weights + live KV.

    ``rows``: ``calc.decode_vs_context`` results over ``contexts``; ``marks``: contexts to
    mark, one trace each after the two lines, its step time and tok/s in its legend entry
    (the chapter's 1,000 / 10,000 / 100,000);
    ``crossover_tokens``: where the KV stream equals the weight stream (a dotted line);
    ``batch_steps_s``: a third line, the step (seconds) of a batch that one sequence of each
    context joins (``calc.long_context_in_batch``'s ``mixed_step_s``), named ``batch_label``.
    """
    xs = [int(c) for c in v.sequence("contexts", contexts)]
    data = dict_rows("rows", rows)
    if len(xs) != len(data):
        raise ValueError(f"rows: expected one row per context ({len(xs)}), got {len(data)}")
    w = v.positive("weight_bytes", weight_bytes)
    bw = v.positive("bandwidth_bytes_per_s", bandwidth_bytes_per_s)
    weight_ms = w / bw / units.ms
    axes = {"xaxis": xaxis, "yaxis": yaxis}
    traces = [
        {"type": "scatter", "mode": "lines", "x": xs, "y": [weight_ms] * len(xs),
         "name": "weights only", "line": {"color": theme.MEMORY_COLORS["weights"], "dash": "dash"},
         "hovertemplate": "weights: %{y:.3g} ms<extra></extra>", **axes},
        {"type": "scatter", "mode": "lines", "x": xs,
         "y": [r["step_s"] / units.ms for r in data], "name": "weights + live KV",
         "line": {"color": theme.MEMORY_COLORS["kv"], "width": 3},
         "customdata": [r["tokens_per_s"] for r in data],
         "hovertemplate": "%{x:,} tokens: %{y:.3g} ms, %{customdata:,.0f} tok/s"
                          "<extra></extra>", **axes},
    ]
    batch_ms = []
    if batch_steps_s is not None:
        batch_ms = [float(x) / units.ms for x in v.sequence("batch_steps_s", batch_steps_s)]
        if len(batch_ms) != len(xs):
            raise ValueError(f"batch_steps_s: expected one step per context ({len(xs)}), got "
                             f"{len(batch_ms)}")
        traces.append({"type": "scatter", "mode": "lines", "x": xs, "y": batch_ms,
                       "name": batch_label,
                       "line": {"color": theme.MEMORY_COLORS["kv"], "dash": "dashdot"},
                       "hovertemplate": "%{x:,} tokens: every sequence waits %{y:.3g} ms"
                                        "<extra></extra>", **axes})
    # each marked context its own trace, its numbers in its legend entry (and hover): labels
    # on the plot ran off its edges and into the axis title
    mark_rows = [(int(c), r) for c, r in zip(xs, data) if int(c) in {int(m) for m in marks}]
    for i, (c, r) in enumerate(mark_rows):
        label = f"{r['step_s'] / units.ms:.2g} ms, {r['tokens_per_s']:,.0f} tok/s"
        traces.append({"type": "scatter", "mode": "markers", "x": [c],
                       "y": [r["step_s"] / units.ms], "text": [label],
                       "name": f"{c:,} tokens: {label}",
                       "hovertemplate": f"{c:,} tokens: %{{text}}<extra></extra>",
                       "marker": {"size": 11, "color": _MARK_COLORS[i % len(_MARK_COLORS)],
                                  "symbol": _MARK_SYMBOLS[i % len(_MARK_SYMBOLS)]}, **axes})
    top = max([r["step_s"] / units.ms for r in data] + [weight_ms] + batch_ms)
    if crossover_tokens is not None:
        x = v.positive("crossover_tokens", crossover_tokens)
        traces.append({"type": "scatter", "mode": "lines+text", "x": [x, x],
                       "y": [0, top], "text": ["", f"KV = weights at {x:,.0f} tokens"],
                       "textposition": "bottom left", "name": "crossover",
                       "line": {"color": theme.GREY, "dash": "dot"}, "hoverinfo": "skip",
                       **axes})
    layout = {
        xaxis.replace("x", "xaxis"): {"type": "log",
                                      "title": {"text": "context per sequence (tokens)"}},
        yaxis.replace("y", "yaxis"): {"title": {"text": "decode step (ms)"},
                                      "rangemode": "tozero"},
        "legend": {"orientation": "h", "y": -0.25}, "height": 420,
    }
    return traces, layout


@serves("17.4")
def context_step_figure(contexts, rows, *, weight_bytes: float, bandwidth_bytes_per_s: float,
                        crossover_tokens: float | None = None, marks=(), batch_steps_s=None,
                        batch_label: str = "in a batch",
                        title: str = "Batch-1 decode step as the context grows (17 §4)"):
    """``context_step_traces`` as a plotly Figure."""
    traces, layout = context_step_traces(contexts, rows, weight_bytes=weight_bytes,
                                         bandwidth_bytes_per_s=bandwidth_bytes_per_s,
                                         crossover_tokens=crossover_tokens, marks=marks,
                                         batch_steps_s=batch_steps_s, batch_label=batch_label)
    return _fig(traces, layout, title)


@serves("17.4")
def gpu_memory_traces(memory_bytes: float, weight_bytes: float, reserve_bytes: float,
                      kv_used_bytes: float, *, label: str = "per GPU", xaxis: str = "x",
                      yaxis: str = "y") -> list:
    """One stacked horizontal bar (GB) as a single trace: weights, runtime reserve, KV of the
    sequences that fit, spare KV space; anything beyond the card is drawn red (17 §4)."""
    cap = v.positive("memory_bytes", memory_bytes)
    parts = [("weights", v.nonnegative("weight_bytes", weight_bytes)),
             ("reserve", v.nonnegative("reserve_bytes", reserve_bytes)),
             ("kv", v.nonnegative("kv_used_bytes", kv_used_bytes))]
    used = sum(b for _, b in parts)
    parts.append(("free", max(cap - used, 0.0)))
    parts.append(("over", max(used - cap, 0.0)))
    names = {"weights": "weights", "reserve": "reserve", "kv": "KV in use",
             "free": "spare", "over": "over the card"}
    gb = [n / units.GB for _, n in parts]
    bases = [sum(gb[:i]) for i in range(len(gb))]
    return [{"type": "bar", "orientation": "h", "y": [label] * len(parts), "x": gb,
             "base": bases, "name": "memory of one GPU",
             "marker": {"color": [theme.MEMORY_COLORS[k] for k, _ in parts]},
             "text": [f"{names[k]} {g:,.3g} GB" if g >= 1 else "" for (k, _), g in
                      zip(parts, gb)],
             "textposition": "inside", "xaxis": xaxis, "yaxis": yaxis}]


# --- §4 KV sizing ----------------------------------------------------------------------------

_KV_MODELS = ModelMenu({m.name: m for m in (specs.LLAMA_70B, specs.LLAMA_8B, specs.LLAMA_405B,
                                            specs.QWEN3_8B)})
_TP = {"1": 1, "2": 2, "4": 4, "8": 8}
_CONTEXT_SWEEP = np.unique(np.geomspace(256, 131_072, 41).astype(int))


@serves("17.4")
class KVSizingPanel(Panel):
    """17 §4 live: KV bytes per token and sequence, memory per GPU, sequences that fit."""

    title = "KV cache, sized honestly (17 §4): how many sequences fit"
    controls = (
        _KV_MODELS.control(specs.LLAMA_70B.name),
        hardware_control(),
        Control("context_tokens", "context per sequence (tokens)", "int",
                ch17.LONG_CONTEXT_TOKENS, 100, ch17.LONGEST_CONTEXT_TOKENS, 100),
        Control("kv_bytes", "KV precision", "choice", 2.0, options=KV_PRECISION_BYTES),
        Control("tp", "tensor-parallel GPUs", "choice", 4, options=_TP),
        Control("reserve_gb", "runtime reserve per GPU (GB)", "float",
                ch17.RUNTIME_RESERVE_BYTES / units.GB, 0.0, 20.0, 0.5),
        config_control(),
    )
    main_control = "context_tokens"
    base_layout = {
        "height": 520, "barmode": "overlay",
        "xaxis": {"title": {"text": "memory of one GPU (GB)"}, "domain": [0, 1], "anchor": "y"},
        "yaxis": {"domain": [0.72, 1.0], "anchor": "x", "showticklabels": False},
        "xaxis2": {"title": {"text": "context per sequence (tokens)"}, "type": "log",
                   "anchor": "y2"},
        # log: the count runs from thousands at short contexts to a handful at the longest
        "yaxis2": {"title": {"text": "sequences that fit, all GPUs (log scale)"}, "type": "log",
                   "domain": [0, 0.5], "anchor": "x2"},
        "legend": {"orientation": "h", "y": -0.22},
    }

    def compute(self, *, model, hardware, context_tokens, kv_bytes, tp, reserve_gb,
                config_json) -> View:
        (m, source), hw = _KV_MODELS.pick(model, config_json), HARDWARE_PRESETS[hardware]
        reserve = reserve_gb * units.GB
        kw = dict(tp=tp, reserve_bytes=reserve, bytes_per_value=kv_bytes)
        cap = calc.tp_kv_capacity(m, hw, context_tokens=context_tokens, **kw)
        per_token = calc.kv_bytes_per_token(m, kv_bytes)
        n = cap["max_sequences"]
        sweep = [calc.tp_kv_capacity(m, hw, context_tokens=int(L), **kw)["max_sequences"]
                 for L in _CONTEXT_SWEEP]
        # the fuller count: each sequence holds whole blocks of 17 §5's 16 tokens
        blocks = block_rounded_capacity(m, hw, context_tokens=context_tokens, **kw)
        sweep_blocks = [block_rounded_capacity(m, hw, context_tokens=int(L), **kw)["sequences"]
                        for L in _CONTEXT_SWEEP]
        numbers = {
            "kv_per_token_KB": per_token / units.KiB,     # Chapter 17's "KB" is KiB
            "kv_per_sequence_GB": cap["kv_bytes_per_sequence"] / units.GB,
            "weights_GB": m.weight_bytes / units.GB,               # resident (all of them)
            # D_w: what a decode step streams, all but the input embedding table
            "streamed_weights_GB": m.streamed_weight_bytes / units.GB,
            "weights_over_card": cap["weights_over_memory"],
            "weights_per_gpu_GB": cap["weight_bytes_per_gpu"] / units.GB,
            "kv_heads_per_gpu": cap["kv_heads_per_gpu"],
            "free_kv_per_gpu_GB": cap["free_kv_bytes_per_gpu"] / units.GB,
            "free_kv_total_GB": cap["free_kv_bytes"] / units.GB,
            "fits": cap["fits"],
            "max_sequences": n,
            "sequence_over_card": cap["kv_bytes_per_sequence"] / hw.mem_bytes,
            "kv_equals_weights_tokens": calc.kv_weight_crossover_tokens(m,
                                                                        bytes_per_value=kv_bytes),
            "max_sequences_blocks": blocks["sequences"],
            "block_held_tokens": blocks["held_tokens"],
        }
        traces = gpu_memory_traces(hw.mem_bytes, cap["weight_bytes_per_gpu"], reserve,
                                   n * cap["kv_bytes_per_sequence"] / tp,
                                   label=f"each of {tp} GPU(s)")
        traces += [
            {"type": "scatter", "mode": "lines", "x": _CONTEXT_SWEEP.tolist(), "y": sweep,
             "name": "sequences that fit vs context", "xaxis": "x2", "yaxis": "y2"},
            {"type": "scatter", "mode": "lines", "x": _CONTEXT_SWEEP.tolist(), "y": sweep_blocks,
             "name": f"in whole {ch17.BLOCK_TOKENS}-token blocks (17 §5)", "xaxis": "x2",
             "yaxis": "y2", "line": {"color": theme.GREY, "dash": "dot"}},
            {"type": "scatter", "mode": "markers", "x": [context_tokens], "y": [n],
             "name": "this setting", "xaxis": "x2", "yaxis": "y2"},
        ]
        if cap["fits"]:
            verdict = (f"free for KV: {numbers['free_kv_per_gpu_GB']:,.3g} GB per GPU, "
                       f"{numbers['free_kv_total_GB']:,.4g} GB in all<br>"
                       f"sequences of {context_tokens:,} tokens that fit: <b>{n:,}</b> "
                       f"({blocks['sequences']:,} in whole {ch17.BLOCK_TOKENS}-token blocks, "
                       f"{blocks['held_tokens']:,} tokens held each)")
        else:
            verdict = (f"<b>does not fit</b>: {numbers['weights_per_gpu_GB']:,.4g} GB of weights "
                       f"+ {reserve_gb:g} GB reserve per GPU exceed {hw.mem_bytes / units.GB:,.0f} "
                       "GB; raise the TP degree")
        heads = numbers["kv_heads_per_gpu"]
        head_note = ("" if float(heads).is_integer() and heads >= 1 else
                     " (TP above the KV-head count replicates heads: not modelled)")
        text = (f"<b>{m.name}</b>: {kv_per_token_text(m, kv_bytes)} = "
                f"<b>{per_token:,.0f} B</b> = "
                f"{numbers['kv_per_token_KB']:,.4g} KB per token<br>"
                f"one {context_tokens:,}-token sequence: <b>{numbers['kv_per_sequence_GB']:,.3g} "
                f"GB</b> ({100 * numbers['sequence_over_card']:.3g}% of one card)<br>"
                f"resident weights {numbers['weights_GB']:,.4g} GB = "
                f"{numbers['weights_over_card']:.3g}x the card; at TP {tp}: {numbers['weights_per_gpu_GB']:,.4g} GB and "
                f"{heads:g} KV heads per GPU{head_note}<br>{verdict}<br>"
                f"a sequence's KV equals the streamed weights (D_w = "
                f"{numbers['streamed_weights_GB']:,.4g} GB"
                + (", all but the input embedding table"
                   if m.streamed_weight_bytes < m.weight_bytes else "")
                + f") at {numbers['kv_equals_weights_tokens']:,.0f} tokens" + source)
        # whole sequences on a log axis: ticks at 1-2-5 or decades from one sequence up (a
        # setting where none fits leaves no point; the readout says so)
        top = max(sweep + sweep_blocks + [n, 2])
        ticks, labels = log_ticks(1.0, 1.3 * top)
        count_axis = dict(self.base_layout["yaxis2"], tickmode="array", tickvals=ticks,
                          ticktext=labels, range=[math.log10(0.8), math.log10(1.3 * top)])
        return View(numbers=numbers, traces=traces, text=text, layout={"yaxis2": count_axis})
