"""17 §5's explorer home (notebook 17_05_paged_attention): what PagedAttention buys.

Figures (plotly, deterministic: fixed colours, no timestamps): ``allocator_figure``
(``allocator_traces`` over two ``sim.kvcache.BlockManager`` pools, as built by
``sim.kv_scenarios.allocator_demo``) and ``paged_tradeoff_traces``/``_layout``.

Panel: ``PagedKVPanel`` (mean live tokens, block size and the contiguous reservation -> naive
vs paged batch, step time (ITL) and throughput; the throughput ceiling beta / (L k), and a
second, dashed curve with the step priced by the roofline's max once the decode's matrices run
at a set share of peak, ``calc.decode_roofline_batch``).
"""

from __future__ import annotations

import math

import numpy as np

from companion import calc, specs, theme, units
from companion import validate as v
from companion.chapters import ch17
from companion.explorers.axes import finish_axes
from companion.explorers.base import Control, Panel, View
from companion.explorers.common import titled_figure as _fig
from companion.explorers.presets import (
    HARDWARE_PRESETS,
    ModelMenu,
    blank_traces,
    hardware_control,
    source_line,
)
from companion.formulas.fuller import decode_roofline_batch
from companion.serves import serves

__all__ = [
    "allocator_traces", "allocator_figure", "paged_tradeoff_traces", "paged_tradeoff_layout",
    "PagedKVPanel",
]

# the section this module serves (the notebook of its name): every @serves mark here is
# within it (tests/test_sections.py)
SECTION = "17.5"


FREE_COLOR = theme.FAINT_GREY
WASTE_LINE = theme.RED


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
            cells.append((row, x0, p, FREE_COLOR, theme.WHITE, f"block {b}: free", ""))
            continue
        sid, used = owner[b], fill[b]
        name = names.get(sid, str(sid))
        hover = f"block {b}: {name}, {used}/{p} slots hold tokens"
        cells.append((row, x0, used, colors[sid], theme.WHITE, hover,
                      name if used >= 0.25 * p else ""))
        if used < p:
            cells.append((row, x0 + used, p - used, theme.WHITE, WASTE_LINE,
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
    colors = {sid: theme.REQUEST_PALETTE[i % len(theme.REQUEST_PALETTE)] for i, sid in enumerate(order)}
    # two lines each: one-line names took a third of the width from the strips
    rows = (f"contiguous: max_len {nm.block_tokens}<br>reserved per sequence",
            f"paged: {pm.block_tokens}-token<br>blocks on demand")
    cells = _pool_cells(nm, rows[0], names, colors) + _pool_cells(pm, rows[1], names, colors)
    traces = [{"type": "bar", "orientation": "h", "name": "KV memory",
               "y": [c[0] for c in cells], "base": [c[1] for c in cells],
               "x": [c[2] for c in cells], "width": 0.6,
               "marker": {"color": [c[3] for c in cells],
                          "line": {"color": [c[4] for c in cells], "width": 1.5}},
               "hovertext": [c[5] for c in cells],
               "hovertemplate": "%{hovertext}<extra></extra>", "text": [c[6] for c in cells],
               "textposition": "inside", "insidetextanchor": "middle",
               "textfont": {"color": [theme.text_on(c[3]) for c in cells], "size": 10},
               "showlegend": False}]
    for sid in order:
        # a key for the bar cells' colours (the bars themselves stay out of the legend)
        traces.append({"type": "scatter", "x": [None], "y": [None], "mode": "markers",
                       "name": names.get(sid, str(sid)), "hoverinfo": "skip",
                       "meta": {"legend_key": True},
                       "marker": {"symbol": "square", "size": 12, "color": colors[sid]}})
    for label, color, line in (("reserved / allocated but empty", theme.WHITE, WASTE_LINE),
                               ("free", FREE_COLOR, FREE_COLOR)):
        traces.append({"type": "scatter", "x": [None], "y": [None], "mode": "markers",
                       "name": label, "hoverinfo": "skip", "meta": {"legend_key": True},
                       "marker": {"symbol": "square", "size": 12, "color": color,
                                  "line": {"color": line, "width": 2}}})
    slots = pm.num_blocks * pm.block_tokens
    layout = {"barmode": "overlay",
              "xaxis": {"title": {"text": "KV memory (token slots)"}, "range": [0, slots]},
              "yaxis": {"type": "category", "categoryorder": "array",
                        "categoryarray": list(rows), "autorange": "reversed"},
              # the key in its own rows at the figure's foot, below the x title
              "legend": theme.foot_legend(xref="container"),
              "margin": {"b": 120}, "height": 380,
              # a sequence's name in a cell too narrow for it is left out, not shrunk to a dot
              "uniformtext": {"minsize": 9, "mode": "hide"}}
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
    """Throughput (tok/s) against step time = ITL (ms) as the batch grows, then one trace per
    point of ``marks`` ((label, batch, step_s, tokens_per_s)), its numbers in its legend entry
    (a label on the plot ran into the ticks and off the edges): 17 §5's 57 vs ~760
    sequences."""
    bs = [int(b) for b in v.sequence("batches", batches)]
    steps = [float(s) for s in v.sequence("step_s", step_s)]
    rates = [float(r) for r in v.sequence("tokens_per_s", tokens_per_s)]
    if not len(bs) == len(steps) == len(rates):
        raise ValueError("step_s: batches, step_s and tokens_per_s must have equal lengths")
    marks = list(marks)
    return [
        {"type": "scatter", "mode": "lines", "x": [s / units.ms for s in steps], "y": rates,
         "name": "batch 1, 2, ... (weights + live KV per step)", "line": {"color": theme.GREY},
         "xaxis": xaxis, "yaxis": yaxis},
    ] + [
        {"type": "scatter", "mode": "markers",
         "name": f"{label}: batch {b:,}, {s / units.ms:.3g} ms, {r:,.0f} tok/s",
         "x": [s / units.ms], "y": [r],
         "hovertemplate": f"{label}: batch {b:,}<br>%{{x:.3g}} ms, %{{y:,.0f}} tok/s"
                          "<extra></extra>",
         "marker": {"size": 12, "color": theme.REQUEST_PALETTE[(5, 0)[i % 2]],
                    "symbol": ("circle", "square")[i % 2]},
         "xaxis": xaxis, "yaxis": yaxis}
        for i, (label, b, s, r) in enumerate(marks)
    ]


def paged_tradeoff_layout(*, xaxis: str = "x", yaxis: str = "y") -> dict:
    """Axes of ``paged_tradeoff_traces``: step time (ms) and throughput (tok/s)."""
    return {xaxis.replace("x", "xaxis"): {"title": {"text": "step time = ITL (ms)"},
                                          "rangemode": "tozero"},
            yaxis.replace("y", "yaxis"): {"title": {"text": "decode throughput (tok/s)"},
                                          "rangemode": "tozero"}}


# --- §5 PagedAttention -----------------------------------------------------------------------

def _log_axes_of(traces, layout) -> dict:
    """The left panel's log axes (x, y) as ``traces`` draw them, with full-number ticks and a
    fixed range: what an emptied figure keeps (with no data plotly would pick its own range
    and label it with bare minor digits)."""
    axes = finish_axes(traces, {k: layout[k] for k in ("xaxis", "yaxis")})
    out = {}
    for name, axis in axes.items():
        ticks = axis.get("tickvals") or [1, 10]
        out[name] = dict(axis, range=[math.log10(ticks[0]) - 0.15,
                                      math.log10(ticks[-1]) + 0.15])
    return out


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
        Control("block_tokens", "block size (tokens)", "int", ch17.BLOCK_TOKENS, 1, 1024, 1),
        Control("reservation_tokens", "contiguous reservation per request (tokens)", "int",
                ch17.LONG_CONTEXT_TOKENS, 1024, 32_768, 64),
        # the dashed curve's compute rate: 17 §2's prefill share of peak by default
        Control("decode_efficiency_pct", "decode matrices at % of peak (dashed curve)", "float",
                100 * ch17.PREFILL_EFFICIENCY, 10.0, 100.0, 1.0),
    )
    main_control = "block_tokens"
    base_layout = {
        "height": 620,   # the legend below: a line per allocator, curve and ceiling
        "xaxis": {"title": {"text": "mean live tokens per sequence"}, "type": "log",
                  "domain": [0, 0.44], "anchor": "y"},
        "yaxis": {"title": {"text": "sequences that fit in the KV space"}, "type": "log",
                  "anchor": "x"},
        **paged_tradeoff_layout(xaxis="x2", yaxis="y2"),
        "legend": {"orientation": "h", "y": -0.22},
    }
    base_layout["xaxis2"].update(domain=[0.56, 1.0], anchor="y2")
    base_layout["yaxis2"].update(anchor="x2")

    def compute(self, *, model, hardware, live_tokens, block_tokens, reservation_tokens,
                decode_efficiency_pct) -> View:
        m, hw = _PAGED_MODELS[model], HARDWARE_PRESETS[hardware]
        free = hw.mem_bytes - m.weight_bytes - ch17.RUNTIME_RESERVE_BYTES
        if free <= 0:   # a shelf model too large for one card: say so, draw nothing
            chapter = self.compute(**dict(self.defaults(), hardware=hardware,
                                          live_tokens=live_tokens, block_tokens=block_tokens,
                                          reservation_tokens=reservation_tokens,
                                          decode_efficiency_pct=decode_efficiency_pct))
            return View(numbers={"fits": False}, traces=blank_traces(chapter.traces),
                        layout=_log_axes_of(chapter.traces, self.base_layout),
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
             "line": {"color": theme.REQUEST_PALETTE[5], "dash": "dash"}},
            {"type": "scatter", "mode": "lines+markers", "x": lives + [None, live, live],
             "y": paged_fit + [None, naive["batch"], paged_b["batch"]],
             "name": f"paged: {block_tokens}-token blocks (markers: this workload)",
             "marker": {"size": [0] * len(lives) + [0, 11, 11]},
             "line": {"color": theme.REQUEST_PALETTE[0]}},
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
        # the fuller step: the roofline's max of the reads and the compute (attention counted)
        # at the set share of peak
        e = decode_efficiency_pct / 100
        full = [decode_roofline_batch(m, hw, int(b), live_tokens=live, efficiency=e)
                for b in batches]
        full_paged = decode_roofline_batch(m, hw, max(paged_b["batch"], 1), live_tokens=live,
                                           efficiency=e)
        x_end = max(max(s["step_s"] for s in steps), max(f["step_s"] for f in full)) / units.ms
        traces += [
            {"type": "scatter", "mode": "lines", "x": [f["step_s"] / units.ms for f in full],
             "y": [f["tokens_per_s"] for f in full], "xaxis": "x2", "yaxis": "y2",
             "name": f"the same batches, compute at {decode_efficiency_pct:g}% of peak counted "
                     f"(roofline max)",
             "line": {"color": theme.REQUEST_PALETTE[3], "dash": "dash"}},
            {"type": "scatter", "mode": "lines", "x": [0, x_end],
             "y": [full_paged["compute_ceiling_tokens_per_s"]] * 2, "xaxis": "x2", "yaxis": "y2",
             "name": f"compute ceiling at {decode_efficiency_pct:g}% of peak",
             "line": {"color": theme.REQUEST_PALETTE[3], "dash": "dot"}},
        ]
        numbers.update(roofline_paged_step_ms=full_paged["step_s"] / units.ms,
                       roofline_paged_tok_s=full_paged["tokens_per_s"],
                       compute_ceiling_at_efficiency_tok_s=full_paged["compute_ceiling_tokens_per_s"])
        traces += [
            {"type": "scatter", "mode": "lines", "x": [0, x_end],
             "y": [ceil["ceiling_tokens_per_s"]] * 2, "xaxis": "x2", "yaxis": "y2",
             "name": "ceiling beta / (L k): each extra sequence adds its own KV read",
             "line": {"color": theme.REQUEST_PALETTE[2], "dash": "dashdot"}},
            {"type": "scatter", "mode": "markers", "x": [half["step_s"] / units.ms],
             "y": [half["tokens_per_s"]], "xaxis": "x2", "yaxis": "y2",
             "name": f"half the ceiling: b = D_w / (L k) = {half_b:,}",
             "marker": {"symbol": "diamond", "size": 11, "color": theme.REQUEST_PALETTE[2]}},
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
                f"dashed: with the decode's matrices at {decode_efficiency_pct:g}% of peak the "
                f"paged batch ({paged_b['batch']:,}) steps in <b>"
                f"{numbers['roofline_paged_step_ms']:.3g} ms</b> "
                f"({full_paged['bound']}-bound), {numbers['roofline_paged_tok_s']:,.0f} tok/s; "
                f"compute ceiling {numbers['compute_ceiling_at_efficiency_tok_s']:,.0f} tok/s<br>"
                f"worst-case tail per sequence: {block_tokens - 1} slots = "
                f"{numbers['worst_waste_MB']:,.3g} MB; this workload's tail: "
                f"{numbers['tail_empty_slots']} empty slots" + source_line(m))
        return View(numbers=numbers, traces=traces, text=text)
