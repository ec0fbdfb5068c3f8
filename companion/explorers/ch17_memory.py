"""17 §1, §4 and §5's explorer home: the memory hierarchy of a card, KV sizing and max
concurrency (with tensor parallelism), and what PagedAttention buys.

Figures (plotly, deterministic: fixed colours, no timestamps; byte axes in decimal GB/MB, as
Chapter 17 prints them): ``memory_hierarchy_figure`` (``memory_hierarchy_traces``/``_layout``
over ``calc.memory_pyramid``), ``kv_by_context_figure``, ``attention_variants_figure``,
``context_step_figure`` (``context_step_traces``), ``gpu_memory_traces``, ``allocator_figure``
(``allocator_traces`` over two ``sim.kvcache.BlockManager`` pools, as built by
``sim.kv_scenarios.allocator_demo``) and ``paged_tradeoff_traces``/``_layout``.

Panels: ``MemoryHierarchyPanel`` (17 §1: a hardware preset and the bytes a step must read ->
the card's pyramid, ridge point, full-memory sweep time and link ratios, beside every other
preset), ``KVSizingPanel`` (17 §4: model, hardware, context, KV precision, TP degree and
runtime reserve -> KV per token and per sequence, memory per GPU and how many sequences fit),
``PagedKVPanel`` (17 §5: mean live tokens, block size and the contiguous reservation -> naive
vs paged batch, step time (ITL) and throughput).
"""

from __future__ import annotations

import numpy as np

from companion import calc, specs, units
from companion import validate as v
from companion.chapters import ch17
from companion.explorers.base import Control, Panel, View
from companion.explorers.common import titled_figure as _fig
from companion.explorers.presets import (
    HARDWARE_PRESETS,
    KV_PRECISION_BYTES,
    ModelMenu,
    blank_traces,
    config_control,
    hardware_control,
    kv_per_token_text,
    source_line,
)
from companion.serves import serves

__all__ = [
    "memory_hierarchy_traces", "memory_hierarchy_layout", "memory_hierarchy_figure",
    "kv_by_context_figure", "attention_variants_figure", "context_step_traces",
    "context_step_figure", "gpu_memory_traces", "allocator_traces", "allocator_figure",
    "paged_tradeoff_traces", "paged_tradeoff_layout", "SEQ_COLORS", "MemoryHierarchyPanel",
    "KVSizingPanel", "PagedKVPanel",
]


LEVEL_COLORS = ("#6a3d9a", "#1f78b4", "#2d6a4f", "#40916c", "#bc6c25")
SEQ_COLORS = ("#0072b2", "#e69f00", "#009e73", "#cc79a7", "#56b4e9", "#d55e00", "#8c6d31",
              "#7f7f7f")
MEM_COLORS = {"weights": "#4c72b0", "reserve": "#dd8452", "kv": "#55a868", "spare": "#d9ead3",
              "over": "#c44e52"}
FREE_COLOR = "#ececec"
WASTE_LINE = "#c00000"


def _rows(name: str, rows) -> list[dict]:
    return [v.instance(f"{name}[{i}]", r, dict, "a dict row from companion.calc")
            for i, r in enumerate(v.sequence(name, rows))]


def _fmt_bytes_dec(n: float) -> str:
    for unit in ("TB", "GB", "MB", "KB"):
        if n >= units.BYTE_UNITS[unit]:
            return units.fmt_bytes(n, unit)
    return f"{n:,.0f} B"


# --- §1: the memory pyramid ------------------------------------------------------------------

def memory_hierarchy_layout(level_names, *, xaxes=("x", "x2"), yaxes=("y", "y2")) -> dict:
    """Axes of ``memory_hierarchy_traces``: capacity (GB) and bandwidth (GB/s), both log,
    levels top (fastest) to bottom."""
    names = list(level_names)
    xa, xb = (a.replace("x", "xaxis") for a in xaxes)
    ya, yb = (a.replace("y", "yaxis") for a in yaxes)
    cat = {"type": "category", "categoryorder": "array", "categoryarray": names,
           "autorange": "reversed"}
    return {
        xa: {"type": "log", "title": {"text": "capacity (GB, log scale)"}, "domain": [0, 0.47],
             "range": [-2.5, 3.5], "anchor": yaxes[0]},
        xb: {"type": "log", "title": {"text": "bandwidth (GB/s, log scale)"},
             "domain": [0.53, 1.0], "range": [-0.3, 4.5], "anchor": yaxes[1]},
        ya: dict(cat, anchor=xaxes[0]),
        yb: dict(cat, anchor=xaxes[1], showticklabels=False),
        "showlegend": False,
    }


def memory_hierarchy_traces(rows, *, xaxes=("x", "x2"), yaxes=("y", "y2")) -> list:
    """Two bar panels over the levels of ``calc.memory_pyramid``: capacity (GB, log) and
    bandwidth (GB/s, log). A level the chapter gives no number for is marked "n/a". Four
    traces (bars and "n/a" marks per panel); axes from ``memory_hierarchy_layout``."""
    levels = _rows("rows", rows)
    names = [r["level"] for r in levels]
    traces = []
    for key, unit, xa, ya, name, nax in (
            ("capacity_bytes", "GB", xaxes[0], yaxes[0], "capacity", 1e-2),
            ("bandwidth_bytes_per_s", "GB/s", xaxes[1], yaxes[1], "bandwidth", 1.0)):
        have = [r for r in levels if r.get(key) is not None]
        missing = [r for r in levels if r.get(key) is None]
        traces.append({
            "type": "bar", "orientation": "h", "name": name,
            "y": [r["level"] for r in have], "x": [r[key] / units.GB for r in have],
            "marker": {"color": [LEVEL_COLORS[names.index(r["level"]) % len(LEVEL_COLORS)]
                                 for r in have]},
            "text": [f"{r[key] / units.GB:,.4g} {unit}" for r in have],
            "hovertext": [f"{r['level']} ({r['where']}): {r['text']}" for r in have],
            "xaxis": xa, "yaxis": ya})
        traces.append({
            "type": "scatter", "mode": "text", "name": f"{name} n/a",
            "y": [r["level"] for r in missing], "x": [nax] * len(missing),
            "text": ["n/a"] * len(missing), "textposition": "middle right",
            "hovertext": [f"{r['level']}: {r['text']}" for r in missing],
            "xaxis": xa, "yaxis": ya})
    return traces


@serves("17.1")
def memory_hierarchy_figure(rows, *, title: str = "The memory pyramid (17 §1, re-derived)"):
    """``memory_hierarchy_traces`` as a plotly Figure."""
    data = _rows("rows", rows)
    layout = dict(memory_hierarchy_layout([r["level"] for r in data]), height=380)
    return _fig(memory_hierarchy_traces(data), layout, title)


# --- §4: KV by context, by attention design, and the step as context grows --------------------

@serves("17.4")
def kv_by_context_figure(rows, *, capacity_bytes: float | None = None,
                         title: str = "KV cache of one sequence by context (17 §4, re-derived)"):
    """Bars of ``calc.kv_by_context`` rows (GB) with the card's capacity and half of it marked."""
    data = _rows("rows", rows)
    labels = [f"{r['context_tokens']:,}" for r in data]
    gb = [r["kv_bytes"] / units.GB for r in data]
    traces = [{"type": "bar", "x": labels, "y": gb, "name": "KV of one sequence",
               "marker": {"color": MEM_COLORS["kv"]},
               "text": [f"{g:,.3g} GB" for g in gb], "textposition": "outside",
               "hovertemplate": "%{x} tokens: %{y:,.4g} GB<extra></extra>"}]
    shapes, annotations = [], []
    if capacity_bytes is not None:
        cap = v.positive("capacity_bytes", capacity_bytes) / units.GB
        for frac, dash, label in ((1.0, "solid", f"card: {cap:,.0f} GB"),
                                  (0.5, "dash", f"half the card: {cap / 2:,.0f} GB")):
            shapes.append({"type": "line", "xref": "paper", "x0": 0, "x1": 1, "y0": cap * frac,
                           "y1": cap * frac, "line": {"color": MEM_COLORS["over"],
                                                      "dash": dash}})
            annotations.append({"xref": "paper", "x": 0.01, "y": cap * frac, "text": label,
                                "showarrow": False, "yanchor": "bottom", "xanchor": "left"})
    layout = {"xaxis": {"title": {"text": "context (tokens; 8K = 8,000)"}, "type": "category"},
              "yaxis": {"title": {"text": "KV bytes (GB)"}, "rangemode": "tozero"},
              "shapes": shapes, "annotations": annotations, "height": 420}
    return _fig(traces, layout, title)


@serves("17.4")
def attention_variants_figure(rows, *, cache_bytes: float = 80e9, context_tokens: int = 8000,
                              title: str = "One shape, three attention designs "
                                           "(17 §4, re-derived)"):
    """Two bar panels of ``calc.attention_variants`` rows: KV per token (KB = KiB, log) and
    sequences of ``context_tokens`` that fit in ``cache_bytes``."""
    data = _rows("rows", rows)
    cache = v.positive("cache_bytes", cache_bytes)
    ctx = v.tokens("context_tokens", context_tokens, minimum=1)
    names = [f"{r['attention']} ({r['n_kv_heads']} KV heads)" for r in data]
    kib = [r["kv_bytes_per_token"] / units.KiB for r in data]
    colors = [SEQ_COLORS[i % len(SEQ_COLORS)] for i in range(len(data))]
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
        "yaxis2": {"title": {"text": f"{ctx:,}-token sequences in {cache / units.GB:,.0f} GB"},
                   "anchor": "x2", "rangemode": "tozero"},
        "height": 420,
    }
    return _fig(traces, layout, title)


def context_step_traces(contexts, rows, *, weight_bytes: float, bandwidth_bytes_per_s: float,
                        crossover_tokens: float | None = None, marks=(),
                        xaxis: str = "x", yaxis: str = "y") -> tuple[list, dict]:
    """Decode step time (ms) vs context: the weight stream (flat) and weights + live KV.

    ``rows``: ``calc.decode_vs_context`` results over ``contexts``; ``marks``: contexts to
    label with their step time and tok/s (the chapter's 1,000 / 10,000 / 100,000);
    ``crossover_tokens``: where the KV stream equals the weight stream (a dotted line).
    """
    xs = [int(c) for c in v.sequence("contexts", contexts)]
    data = _rows("rows", rows)
    if len(xs) != len(data):
        raise ValueError(f"rows: expected one row per context ({len(xs)}), got {len(data)}")
    w = v.positive("weight_bytes", weight_bytes)
    bw = v.positive("bandwidth_bytes_per_s", bandwidth_bytes_per_s)
    weight_ms = w / bw / units.ms
    axes = {"xaxis": xaxis, "yaxis": yaxis}
    traces = [
        {"type": "scatter", "mode": "lines", "x": xs, "y": [weight_ms] * len(xs),
         "name": "weights only", "line": {"color": MEM_COLORS["weights"], "dash": "dash"},
         "hovertemplate": "weights: %{y:.3g} ms<extra></extra>", **axes},
        {"type": "scatter", "mode": "lines", "x": xs,
         "y": [r["step_s"] / units.ms for r in data], "name": "weights + live KV",
         "line": {"color": MEM_COLORS["kv"], "width": 3},
         "customdata": [r["tokens_per_s"] for r in data],
         "hovertemplate": "%{x:,} tokens: %{y:.3g} ms, %{customdata:,.0f} tok/s"
                          "<extra></extra>", **axes},
    ]
    mark_rows = [(int(c), r) for c, r in zip(xs, data) if int(c) in {int(m) for m in marks}]
    traces.append({"type": "scatter", "mode": "markers+text",
                   "x": [c for c, _ in mark_rows],
                   "y": [r["step_s"] / units.ms for _, r in mark_rows],
                   "text": [f"{r['step_s'] / units.ms:.2g} ms, {r['tokens_per_s']:,.0f} tok/s"
                            for _, r in mark_rows],
                   "textposition": "top left", "name": "the chapter's three contexts",
                   "marker": {"size": 10, "color": "#0b3d91"}, **axes})
    top = max([r["step_s"] / units.ms for r in data] + [weight_ms])
    if crossover_tokens is not None:
        x = v.positive("crossover_tokens", crossover_tokens)
        traces.append({"type": "scatter", "mode": "lines+text", "x": [x, x],
                       "y": [0, top], "text": ["", f"KV = weights at {x:,.0f} tokens"],
                       "textposition": "bottom left", "name": "crossover",
                       "line": {"color": "#7f7f7f", "dash": "dot"}, "hoverinfo": "skip",
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
                        crossover_tokens: float | None = None, marks=(),
                        title: str = "Batch-1 decode step as the context grows (17 §4)"):
    """``context_step_traces`` as a plotly Figure."""
    traces, layout = context_step_traces(contexts, rows, weight_bytes=weight_bytes,
                                         bandwidth_bytes_per_s=bandwidth_bytes_per_s,
                                         crossover_tokens=crossover_tokens, marks=marks)
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
    parts.append(("spare", max(cap - used, 0.0)))
    parts.append(("over", max(used - cap, 0.0)))
    names = {"weights": "weights", "reserve": "reserve", "kv": "KV in use",
             "spare": "spare", "over": "over the card"}
    gb = [n / units.GB for _, n in parts]
    bases = [sum(gb[:i]) for i in range(len(gb))]
    return [{"type": "bar", "orientation": "h", "y": [label] * len(parts), "x": gb,
             "base": bases, "name": "memory of one GPU",
             "marker": {"color": [MEM_COLORS[k] for k, _ in parts]},
             "text": [f"{names[k]} {g:,.3g} GB" if g >= 1 else "" for (k, _), g in
                      zip(parts, gb)],
             "textposition": "inside", "xaxis": xaxis, "yaxis": yaxis}]


# --- §5: the allocator -----------------------------------------------------------------------

def _manager(name: str, manager):
    from companion.sim.kvcache import BlockManager

    return v.instance(name, manager, BlockManager, "a companion.sim.kvcache.BlockManager")


def _pool_cells(mgr, row: str, names: dict, colors: dict) -> list[tuple]:
    """(row, x0, width, colour, outline, hover, text) per used/unused/free span of a pool."""
    p = mgr.block_tokens
    owner, fill = {}, {}
    for sid in mgr.sequences:
        n = mgr.num_tokens(sid)
        for i, b in enumerate(mgr.block_table(sid)):
            owner[b] = sid
            fill[b] = max(fill.get(b, 0), min(p, n - i * p))
    cells = []
    for b in range(mgr.num_blocks):
        x0 = b * p
        if b not in owner:
            cells.append((row, x0, p, FREE_COLOR, "#ffffff", f"block {b}: free", ""))
            continue
        sid, used = owner[b], fill[b]
        name = names.get(sid, str(sid))
        hover = f"block {b}: {name}, {used}/{p} slots hold tokens"
        cells.append((row, x0, used, colors[sid], "#ffffff", hover,
                      name if used >= 0.25 * p else ""))
        if used < p:
            cells.append((row, x0 + used, p - used, "#ffffff", WASTE_LINE,
                          hover + f" ({p - used} reserved, empty)", ""))
    return cells


@serves("17.5")
def allocator_traces(paged, naive, *, names=None) -> tuple[list, dict]:
    """Two strips over the same physical KV memory (token slots): contiguous worst-case
    reservations (``naive``: a BlockManager whose block is the whole max length, so each
    sequence owns one block) and PagedAttention's fixed-size blocks (``paged``), each cell
    coloured by the sequence holding it; reserved-but-empty slots are outlined red (17 §5).
    """
    pm, nm = _manager("paged", paged), _manager("naive", naive)
    if pm.num_blocks * pm.block_tokens != nm.num_blocks * nm.block_tokens:
        raise ValueError("naive: both pools must cover the same token slots "
                         f"({pm.num_blocks * pm.block_tokens} vs "
                         f"{nm.num_blocks * nm.block_tokens})")
    names = {} if names is None else dict(names)
    order = list(dict.fromkeys(list(pm.sequences) + list(nm.sequences)))
    colors = {sid: SEQ_COLORS[i % len(SEQ_COLORS)] for i, sid in enumerate(order)}
    rows = (f"contiguous: max_len {nm.block_tokens} reserved per sequence",
            f"paged: {pm.block_tokens}-token blocks on demand")
    cells = _pool_cells(nm, rows[0], names, colors) + _pool_cells(pm, rows[1], names, colors)
    traces = [{"type": "bar", "orientation": "h", "name": "KV memory",
               "y": [c[0] for c in cells], "base": [c[1] for c in cells],
               "x": [c[2] for c in cells], "width": 0.6,
               "marker": {"color": [c[3] for c in cells],
                          "line": {"color": [c[4] for c in cells], "width": 1.5}},
               "hovertext": [c[5] for c in cells],
               "hovertemplate": "%{hovertext}<extra></extra>", "text": [c[6] for c in cells],
               "textposition": "inside", "insidetextanchor": "middle",
               "textfont": {"color": "#ffffff", "size": 10}, "showlegend": False}]
    for sid in order:
        traces.append({"type": "scatter", "x": [None], "y": [None], "mode": "markers",
                       "name": names.get(sid, str(sid)), "hoverinfo": "skip",
                       "marker": {"symbol": "square", "size": 12, "color": colors[sid]}})
    for label, color, line in (("reserved / allocated but empty", "#ffffff", WASTE_LINE),
                               ("free", FREE_COLOR, FREE_COLOR)):
        traces.append({"type": "scatter", "x": [None], "y": [None], "mode": "markers",
                       "name": label, "hoverinfo": "skip",
                       "marker": {"symbol": "square", "size": 12, "color": color,
                                  "line": {"color": line, "width": 2}}})
    slots = pm.num_blocks * pm.block_tokens
    layout = {"barmode": "overlay",
              "xaxis": {"title": {"text": "KV memory (token slots)"}, "range": [0, slots]},
              "yaxis": {"type": "category", "categoryorder": "array",
                        "categoryarray": list(rows), "autorange": "reversed"},
              "legend": {"orientation": "h", "y": -0.35}, "height": 330}
    return traces, layout


@serves("17.5")
def allocator_figure(paged, naive, *, names=None,
                     title: str = "Contiguous reservations vs paged blocks (17 §5)"):
    """``allocator_traces`` as a plotly Figure."""
    traces, layout = allocator_traces(paged, naive, names=names)
    return _fig(traces, layout, title)


@serves("17.5")
def paged_tradeoff_traces(batches, step_s, tokens_per_s, marks, *, xaxis: str = "x",
                          yaxis: str = "y") -> list:
    """Throughput (tok/s) against step time = ITL (ms) as the batch grows, and labelled points
    (``marks``: (label, batch, step_s, tokens_per_s)) in a second trace: 17 §5's 57 vs ~760
    sequences."""
    bs = [int(b) for b in v.sequence("batches", batches)]
    steps = [float(s) for s in v.sequence("step_s", step_s)]
    rates = [float(r) for r in v.sequence("tokens_per_s", tokens_per_s)]
    if not len(bs) == len(steps) == len(rates):
        raise ValueError("step_s: batches, step_s and tokens_per_s must have equal lengths")
    marks = list(marks)
    return [
        {"type": "scatter", "mode": "lines", "x": [s / units.ms for s in steps], "y": rates,
         "name": "batch 1, 2, ... (weights + live KV per step)", "line": {"color": "#7f7f7f"},
         "xaxis": xaxis, "yaxis": yaxis},
        {"type": "scatter", "mode": "markers+text", "name": "the two allocators",
         "x": [s / units.ms for _, _, s, _ in marks], "y": [r for _, _, _, r in marks],
         "text": [f"{label}: batch {b:,}<br>{s / units.ms:.3g} ms, {r:,.0f} tok/s"
                  for label, b, s, r in marks],
         "textposition": [("bottom right", "top left")[i % 2] for i in range(len(marks))],
         "marker": {"size": 12, "color": [SEQ_COLORS[(5, 0)[i % 2]] for i in range(len(marks))]},
         "xaxis": xaxis, "yaxis": yaxis},
    ]


def paged_tradeoff_layout(*, xaxis: str = "x", yaxis: str = "y") -> dict:
    """Axes of ``paged_tradeoff_traces``: step time (ms) and throughput (tok/s)."""
    return {xaxis.replace("x", "xaxis"): {"title": {"text": "step time = ITL (ms)"},
                                          "rangemode": "tozero"},
            yaxis.replace("y", "yaxis"): {"title": {"text": "decode throughput (tok/s)"},
                                          "rangemode": "tozero"}}


def _opt(x, scale=1.0):
    """None stays None (a level or link the preset does not have), numbers are scaled."""
    return None if x is None else x / scale


# --- §1 the memory hierarchy -----------------------------------------------------------------

@serves("17.1")
class MemoryHierarchyPanel(Panel):
    """17 §1 live: a card's memory pyramid, ridge point and full-memory sweep, vs the others."""

    title = "The memory hierarchy (17 §1): capacity, bandwidth, and the ratio that runs decode"
    controls = (
        hardware_control(),
        Control("sweep_gb", "bytes read per step (GB)", "float", 80.0, 1.0, 200.0, 1.0),
    )
    main_control = "hardware"
    base_layout = memory_hierarchy_layout(
        [r["level"] for r in calc.memory_pyramid(specs.H100_SXM)])
    base_layout["yaxis"]["domain"] = base_layout["yaxis2"]["domain"] = [0.5, 1.0]
    base_layout.update({
        "height": 640, "barmode": "overlay",
        "xaxis3": {"title": {"text": "time to read those bytes once (ms)"}, "domain": [0, 1],
                   "anchor": "y3", "rangemode": "tozero"},
        "yaxis3": {"domain": [0, 0.36], "anchor": "x3", "autorange": "reversed",
                   "type": "category"}})

    def compute(self, *, hardware, sweep_gb) -> View:
        hw = HARDWARE_PRESETS[hardware]
        rows = calc.memory_pyramid(hw)
        sweep_bytes = sweep_gb * units.GB
        ratios = (calc.bandwidth_ratios(hw) if hw.interconnect_bytes_per_s is not None
                  and hw.host_link_bytes_per_s is not None else {})
        full_s = calc.memory_sweep_s(hw)
        sweep_s = calc.memory_sweep_s(hw, sweep_bytes)
        numbers = {
            "memory_GB": hw.mem_bytes / units.GB,
            "bandwidth_GBs": hw.mem_bw_bytes_per_s / units.GB,
            "peak_TFLOPs": hw.peak_flops_per_s / units.TFLOP,
            "ridge_flop_per_byte": calc.ridge_point(hw),
            "full_sweep_ms": full_s / units.ms,
            "full_sweeps_per_s": 1.0 / full_s,
            "sweep_ms": sweep_s / units.ms,
            "steps_per_s": 1.0 / sweep_s,
            "nvlink_GBs": _opt(hw.interconnect_bytes_per_s, units.GB),
            "host_link_GBs": _opt(hw.host_link_bytes_per_s, units.GB),
            "hbm_over_nvlink": ratios.get("hbm_over_nvlink"),
            "nvlink_over_pcie": ratios.get("nvlink_over_pcie"),
        }
        traces = memory_hierarchy_traces(rows)
        names = list(HARDWARE_PRESETS)
        times = [calc.memory_sweep_s(h, sweep_bytes) / units.ms for h in HARDWARE_PRESETS.values()]
        ridges = [calc.ridge_point(h) for h in HARDWARE_PRESETS.values()]
        traces.append({
            "type": "bar", "orientation": "h", "y": names, "x": times, "name": "sweep time",
            "xaxis": "x3", "yaxis": "y3",
            "marker": {"color": ["#2d6a4f" if n == hardware else "#b7c9bf" for n in names]},
            "text": [f"{t:,.3g} ms (ridge {r:,.0f} FLOP/B)" for t, r in zip(times, ridges)]})
        link = ("" if not ratios else
                f"<br>HBM / NVLink = {ratios['hbm_over_nvlink']:.2g}x, NVLink / PCIe = "
                f"{ratios['nvlink_over_pcie']:.2g}x")
        text = (f"<b>{hw.name}</b>: {numbers['memory_GB']:,.0f} GB at "
                f"{numbers['bandwidth_GBs']:,.0f} GB/s, {numbers['peak_TFLOPs']:,.4g} TFLOP/s"
                f"<br>ridge = peak / bandwidth = <b>{numbers['ridge_flop_per_byte']:,.0f} FLOP "
                f"per byte</b><br>reading all of memory once: <b>{numbers['full_sweep_ms']:.3g} "
                f"ms</b> (at most {numbers['full_sweeps_per_s']:,.0f} such steps/s)<br>"
                f"reading {sweep_gb:g} GB per step: {numbers['sweep_ms']:.3g} ms, "
                f"{numbers['steps_per_s']:,.0f} steps/s"
                + (" (more than the card holds)" if sweep_bytes > hw.mem_bytes else "") + link)
        return View(numbers=numbers, traces=traces, text=text)


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
        "yaxis2": {"title": {"text": "sequences that fit (all GPUs)"}, "domain": [0, 0.5],
                   "anchor": "x2", "rangemode": "tozero"},
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
        numbers = {
            "kv_per_token_KB": per_token / units.KiB,     # Chapter 17's "KB" is KiB
            "kv_per_sequence_GB": cap["kv_bytes_per_sequence"] / units.GB,
            "weights_GB": m.weight_bytes / units.GB,
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
        }
        traces = gpu_memory_traces(hw.mem_bytes, cap["weight_bytes_per_gpu"], reserve,
                                   n * cap["kv_bytes_per_sequence"] / tp,
                                   label=f"each of {tp} GPU(s)")
        traces += [
            {"type": "scatter", "mode": "lines", "x": _CONTEXT_SWEEP.tolist(), "y": sweep,
             "name": "sequences that fit vs context", "xaxis": "x2", "yaxis": "y2"},
            {"type": "scatter", "mode": "markers", "x": [context_tokens], "y": [n],
             "name": "this setting", "xaxis": "x2", "yaxis": "y2"},
        ]
        if cap["fits"]:
            verdict = (f"free for KV: {numbers['free_kv_per_gpu_GB']:,.3g} GB per GPU, "
                       f"{numbers['free_kv_total_GB']:,.4g} GB in all<br>"
                       f"sequences of {context_tokens:,} tokens that fit: <b>{n:,}</b>")
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
                f"weights {numbers['weights_GB']:,.4g} GB = {numbers['weights_over_card']:.3g}x "
                f"the card; at TP {tp}: {numbers['weights_per_gpu_GB']:,.4g} GB and "
                f"{heads:g} KV heads per GPU{head_note}<br>{verdict}<br>"
                f"a sequence's KV equals the weights at "
                f"{numbers['kv_equals_weights_tokens']:,.0f} tokens" + source)
        return View(numbers=numbers, traces=traces, text=text)


# --- §5 PagedAttention -----------------------------------------------------------------------

_PAGED_MODELS = ModelMenu({m.name: m for m in (specs.LLAMA_8B, specs.QWEN3_8B)})
_LIVE_SWEEP = np.unique(np.geomspace(16, 32_768, 41).astype(int))


@serves("17.5")
class PagedKVPanel(Panel):
    """17 §5 live: worst-case reservations vs paged blocks: batch, ITL and throughput."""

    title = "What PagedAttention buys (17 §5): batch, step time and throughput"
    controls = (
        _PAGED_MODELS.control(specs.LLAMA_8B.name),
        hardware_control(),
        Control("live_tokens", "mean live tokens per sequence", "int",
                ch17.CHAT_LIVE_TOKENS, 16, 8000, 8),
        Control("block_tokens", "block size (tokens)", "int", 16, 1, 1024, 1),
        Control("reservation_tokens", "contiguous reservation per request (tokens)", "int",
                ch17.LONG_CONTEXT_TOKENS, 1024, 32_768, 64),
    )
    main_control = "block_tokens"
    base_layout = {
        "height": 520,
        "xaxis": {"title": {"text": "mean live tokens per sequence"}, "type": "log",
                  "domain": [0, 0.44], "anchor": "y"},
        "yaxis": {"title": {"text": "sequences that fit in the KV space"}, "type": "log",
                  "anchor": "x"},
        **paged_tradeoff_layout(xaxis="x2", yaxis="y2"),
        "legend": {"orientation": "h", "y": -0.22},
    }
    base_layout["xaxis2"].update(domain=[0.56, 1.0], anchor="y2")
    base_layout["yaxis2"].update(anchor="x2")

    def compute(self, *, model, hardware, live_tokens, block_tokens, reservation_tokens) -> View:
        m, hw = _PAGED_MODELS[model], HARDWARE_PRESETS[hardware]
        free = hw.mem_bytes - m.weight_bytes - ch17.RUNTIME_RESERVE_BYTES
        if free <= 0:   # a shelf model too large for one card: say so, draw nothing
            chapter = self.compute(**dict(self.defaults(), hardware=hardware,
                                          live_tokens=live_tokens, block_tokens=block_tokens,
                                          reservation_tokens=reservation_tokens))
            return View(numbers={"fits": False}, traces=blank_traces(chapter.traces),
                        text=(f"<b>{m.name}</b>: {m.weight_bytes / units.GB:,.0f} GB of weights "
                              f"+ the {ch17.RUNTIME_RESERVE_BYTES / units.GB:g} GB reserve "
                              f"leave no KV space on one {hw.name} "
                              f"({hw.mem_bytes / units.GB:,.0f} GB): this panel is one card; "
                              "17 §7 shards such a model" + source_line(m)))
        live = min(live_tokens, reservation_tokens)
        kw = dict(live_tokens=live, reservation_tokens=reservation_tokens)
        # the chapter divides the KV space by live bytes alone (no block tail): block 1
        ideal = calc.paged_batch_gain(m, hw, block_tokens=1, **kw)
        blocks = calc.paged_batch_gain(m, hw, block_tokens=block_tokens, **kw)
        frag = calc.reservation_waste(m, live, max_len_tokens=reservation_tokens)
        worst = calc.paged_worst_waste(m, block_tokens)
        tail = calc.block_fill(live, block_tokens)
        budget = ideal["kv_budget_bytes"]
        naive, paged, paged_b = ideal["naive"], ideal["paged"], blocks["paged"]
        numbers = {
            "kv_budget_GB": budget / units.GB,
            "live_kv_MB": ideal["live_kv_bytes"] / units.MB,
            "reservation_GB": calc.kv_bytes(m, reservation_tokens, block_tokens=1) / units.GB,
            "internal_fragmentation_pct": 100 * frag["wasted_fraction"],
            "naive_batch": naive["batch"],
            "paged_batch": paged["batch"],
            "paged_batch_blocks": paged_b["batch"],
            "batch_gain": ideal["batch_gain"],
            "naive_step_ms": naive["step_s"] / units.ms,
            "paged_step_ms": paged["step_s"] / units.ms,
            "paged_blocks_step_ms": paged_b["step_s"] / units.ms,
            "naive_tok_s": naive["tokens_per_s"],
            "paged_tok_s": paged["tokens_per_s"],
            "paged_blocks_tok_s": paged_b["tokens_per_s"],
            "throughput_gain": ideal["throughput_gain"],
            "worst_waste_MB": worst["bytes"] / units.MB,
            "tail_empty_slots": tail["empty_slots"],
        }
        # left: sequences that fit as live tokens vary (naive: flat at budget / reservation)
        lives = [int(x) for x in _LIVE_SWEEP if x <= reservation_tokens]
        paged_fit = [calc.max_concurrent(budget, m, x, 1, block_tokens=block_tokens)
                     for x in lives]
        traces = [
            {"type": "scatter", "mode": "lines", "x": lives, "y": [naive["batch"]] * len(lives),
             "name": f"contiguous: {reservation_tokens:,}-token reservations",
             "line": {"color": SEQ_COLORS[5], "dash": "dash"}},
            {"type": "scatter", "mode": "lines+markers", "x": lives + [None, live, live],
             "y": paged_fit + [None, naive["batch"], paged_b["batch"]],
             "name": f"paged: {block_tokens}-token blocks (markers: this workload)",
             "marker": {"size": [0] * len(lives) + [0, 11, 11]},
             "line": {"color": SEQ_COLORS[0]}},
        ]
        top = max(paged["batch"], 2)
        batches = np.unique(np.geomspace(1, top * 1.25, 40).astype(int))
        steps = [calc.decode_vs_context(m, hw, live, batch=int(b)) for b in batches]
        marks = [("contiguous", naive["batch"], naive["step_s"], naive["tokens_per_s"]),
                 ("paged", paged_b["batch"], paged_b["step_s"], paged_b["tokens_per_s"])]
        traces += paged_tradeoff_traces(batches.tolist(), [s["step_s"] for s in steps],
                                        [s["tokens_per_s"] for s in steps], marks,
                                        xaxis="x2", yaxis="y2")
        # the fuller reading: throughput flattens at beta / (L k); half of it at b = D_w / (L k)
        ceil = calc.decode_throughput_ceiling(m, hw, live_tokens=live,
                                              batch=max(paged["batch"], 1))
        half_b = max(1, round(ceil["half_ceiling_batch"]))
        half = calc.decode_vs_context(m, hw, live, batch=half_b)
        x_end = max(s["step_s"] for s in steps) / units.ms
        traces += [
            {"type": "scatter", "mode": "lines", "x": [0, x_end],
             "y": [ceil["ceiling_tokens_per_s"]] * 2, "xaxis": "x2", "yaxis": "y2",
             "name": "ceiling beta / (L k): each extra sequence adds its own KV read",
             "line": {"color": SEQ_COLORS[2], "dash": "dot"}},
            {"type": "scatter", "mode": "markers", "x": [half["step_s"] / units.ms],
             "y": [half["tokens_per_s"]], "xaxis": "x2", "yaxis": "y2",
             "name": f"half the ceiling: b = D_w / (L k) = {half_b:,}",
             "marker": {"symbol": "diamond", "size": 11, "color": SEQ_COLORS[2]}},
        ]
        numbers.update(ceiling_tok_s=ceil["ceiling_tokens_per_s"],
                       compute_ceiling_tok_s=ceil["compute_ceiling_tokens_per_s"],
                       half_ceiling_batch=ceil["half_ceiling_batch"],
                       paged_share_of_ceiling_pct=100 * ceil["share_of_ceiling"])
        clipped = ("" if live == live_tokens
                   else f" (clipped to the {reservation_tokens:,} reserved)")
        text = (f"live KV per sequence: {live:,} tokens{clipped} = "
                f"<b>{numbers['live_kv_MB']:,.3g} MB</b>; a contiguous reservation of "
                f"{reservation_tokens:,} tokens = {numbers['reservation_GB']:.3g} GB, "
                f"{numbers['internal_fragmentation_pct']:.3g}% of it empty<br>"
                f"KV space {numbers['kv_budget_GB']:,.3g} GB: contiguous "
                f"<b>{naive['batch']:,}</b> sequences, paged <b>{paged['batch']:,}</b> "
                f"(chapter's arithmetic, live bytes only) / <b>{paged_b['batch']:,}</b> with "
                f"{block_tokens}-token blocks ({numbers['batch_gain']:.3g}x)<br>"
                f"step = ITL: {numbers['naive_step_ms']:.3g} ms vs "
                f"{numbers['paged_step_ms']:.3g} ms; throughput "
                f"<b>{numbers['naive_tok_s']:,.0f}</b> vs <b>{numbers['paged_tok_s']:,.0f}</b> "
                f"tok/s ({numbers['throughput_gain']:.2g}x)<br>"
                f"ceiling beta / (L k) = {numbers['ceiling_tok_s']:,.0f} tok/s, half of it at "
                f"b = {numbers['half_ceiling_batch']:,.0f}; paged reaches "
                f"{numbers['paged_share_of_ceiling_pct']:.0f}% of it<br>"
                f"worst-case tail per sequence: {block_tokens - 1} slots = "
                f"{numbers['worst_waste_MB']:,.3g} MB; this workload's tail: "
                f"{numbers['tail_empty_slots']} empty slots" + source_line(m))
        return View(numbers=numbers, traces=traces, text=text)
