"""Figures of Chapter 17 §1, §4 and §5: the memory pyramid, the KV cache sized by context and by
attention design, the decode step as the context grows, a card's memory split, and
PagedAttention's allocator beside the contiguous reservation it replaced.

Builders take results computed by ``companion.calc`` (``memory_pyramid``, ``kv_by_context``,
``attention_variants``, ``decode_vs_context``, ``tp_kv_capacity``) or the state of
``companion.sim.kvcache.BlockManager`` pools, and return plotly figures; the ``*_traces``
helpers return plain trace/layout dicts that the explorers in ``companion.explorers.ch17_memory``
reuse. Deterministic: fixed colours, no timestamps. Byte axes are decimal GB/MB, as Chapter 17
prints them.
"""

from __future__ import annotations

from companion import validate as v
from companion import units
from companion.explorers.common import titled_figure as _fig

__all__ = ["memory_hierarchy_traces", "memory_hierarchy_layout", "memory_hierarchy_figure", "kv_by_context_figure",
           "attention_variants_figure", "context_step_traces", "context_step_figure",
           "gpu_memory_traces", "allocator_traces", "allocator_figure",
           "paged_tradeoff_traces", "paged_tradeoff_layout", "SEQ_COLORS"]

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


def memory_hierarchy_figure(rows, *, title: str = "The memory pyramid (17 §1, re-derived)"):
    """``memory_hierarchy_traces`` as a plotly Figure."""
    data = _rows("rows", rows)
    layout = dict(memory_hierarchy_layout([r["level"] for r in data]), height=380)
    return _fig(memory_hierarchy_traces(data), layout, title)


# --- §4: KV by context, by attention design, and the step as context grows --------------------

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


def context_step_figure(contexts, rows, *, weight_bytes: float, bandwidth_bytes_per_s: float,
                        crossover_tokens: float | None = None, marks=(),
                        title: str = "Batch-1 decode step as the context grows (17 §4)"):
    """``context_step_traces`` as a plotly Figure."""
    traces, layout = context_step_traces(contexts, rows, weight_bytes=weight_bytes,
                                         bandwidth_bytes_per_s=bandwidth_bytes_per_s,
                                         crossover_tokens=crossover_tokens, marks=marks)
    return _fig(traces, layout, title)


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


def allocator_figure(paged, naive, *, names=None,
                     title: str = "Contiguous reservations vs paged blocks (17 §5)"):
    """``allocator_traces`` as a plotly Figure."""
    traces, layout = allocator_traces(paged, naive, names=names)
    return _fig(traces, layout, title)


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
