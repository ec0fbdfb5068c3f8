"""8.3's explorer home (notebook 08_3_kv_cache): paged blocks and block tables, branch sharing,
the prefix tree (Figure 8-17), the pool under preemption, and cache retention (Figure 8-22).

Figures: ``prefix_tree_figure``, ``pool_usage_figure``, ``retention_bars_figure``; the block
tables and pool of a ``PoolSnapshot`` are drawn by ``companion.explorers.block_pool``.
The snapshots and the walks that produce them (growing sequences, copy-on-write, branch sharing,
preemption, prefix-cache replays) are in ``companion.sim.kv_scenarios``. Deterministic: fixed
colours, no timestamps, no randomness.

Panels: ``PagingPanel`` (block size and lengths -> waste and table entries),
``BranchSharingPanel`` (references vs physical blocks), ``SharedPrefixCapacityPanel``
(864 + 324 b MiB, 35 requests), ``SnapshotSpacingPanel`` (hybrid-state snapshots: recompute vs
storage), ``ContextOrganisationPanel`` (append, rewrite the start or summarise: reuse now, KV
read later), ``RetentionPanel`` (Figure 8-22: which prefixes a cache should keep).
"""

from __future__ import annotations

import math

import numpy as np

from companion import calc, specs, theme, units
from companion import validate as v
from companion.chapters import ch08
from companion.explorers.base import Control, Panel, View
from companion.explorers.block_pool import (
    SHARED_COLOR,
    block_pool_layout,
    block_pool_legend_html,
    block_pool_traces,
    table_ticks,
)
from companion.explorers.common import plotly_go as _go
from companion.formulas import kv_management as km
from companion.formulas.core import cache_retention_value
from companion.formulas.kv_management import decode_kv_read_bytes, retention_break_even_hit_prob
from companion.serves import serves
from companion.sim.kv_scenarios import (
    CONTEXT_OPTIONS,
    SEQUENCE_NAMES,
    branch_sharing_pool,
    context_organisation,
    grow_sequences,
    snapshot_pool,
)

__all__ = [
    "prefix_tree_figure", "pool_usage_figure", "retention_bars_traces", "retention_bars_figure",
    "PagingPanel",
    "BranchSharingPanel", "SharedPrefixCapacityPanel", "SnapshotSpacingPanel",
    "ContextOrganisationPanel", "RetentionPanel",
]

# the section this module serves (the notebook of its name): every @serves mark here is
# within it (tests/test_sections.py)
SECTION = "8.3"


# --- Figure 8-17: the prefix tree --------------------------------------------------------------

def prefix_tree_figure(tree, *, labels=None, title: str = ""):
    """Draw a ``companion.sim.kv_scenarios.PrefixTree``: x = tokens from the root, one row per leaf.

    Edges are labelled with their new tokens; leaves (and inner nodes where an input ends)
    carry the full input length and which inputs end there (``labels``: names of the inputs).
    """
    from companion.sim.kv_scenarios import PrefixTree

    t = v.instance("tree", tree, PrefixTree)
    nodes = {n.id: n for n in t.nodes}
    children: dict[int, list[int]] = {}
    for parent, child, _ in t.edges:
        children.setdefault(parent, []).append(child)
    # y: leaves in depth-first order, inner nodes at the mean of their children
    ypos: dict[int, float] = {}
    counter = [0]

    def place(nid):
        kids = children.get(nid, [])
        for c in kids:
            place(c)
        if kids:
            ypos[nid] = sum(ypos[c] for c in kids) / len(kids)
        else:
            ypos[nid] = counter[0]
            counter[0] += 1

    root = t.nodes[0].id
    place(root)
    ex, ey, lx, ly, lt = [], [], [], [], []
    for parent, child, new in t.edges:
        x0, x1 = nodes[parent].depth, nodes[child].depth
        y0, y1 = ypos[parent], ypos[child]
        ex += [x0, x0, x1, None]
        ey += [y0, y1, y1, None]
        lx.append((x0 + x1) / 2)
        ly.append(y1)
        lt.append(f"+{new:,}")
    names = None if labels is None else [str(x) for x in labels]
    nx, ny, nt, nh, nc, npos = [], [], [], [], [], []
    for n in t.nodes:
        if n.parent is None:
            continue
        nx.append(n.depth)
        ny.append(ypos[n.id])
        # a node whose path runs on along its row is labelled under it: to its right lie the
        # next edge's label and the next node
        on_row = any(ypos[c] == ypos[n.id] for c in children.get(n.id, []))
        npos.append("bottom center" if on_row else "middle right")
        ends = ", ".join(names[i] if names else f"input {i}" for i in n.ends)
        nt.append(f"{n.depth:,}" + (f" ({ends})" if ends else ""))
        nh.append(f"{n.depth:,} tokens from the root; {n.passes} input(s) pass here"
                  + (f"; ends: {ends}" if ends else ""))
        nc.append(SHARED_COLOR if n.passes > 1 else theme.REQUEST_PALETTE[0])
    traces = [
        {"type": "scatter", "x": ex, "y": ey, "mode": "lines", "name": "edge",
         "line": {"color": theme.GREY, "width": 2}, "hoverinfo": "skip", "showlegend": False},
        {"type": "scatter", "x": lx, "y": ly, "mode": "text", "text": lt,
         "textposition": "top center", "name": "new tokens on the edge", "hoverinfo": "skip",
         "showlegend": False, "textfont": {"size": 11}},
        {"type": "scatter", "x": nx, "y": ny, "mode": "markers+text", "text": nt,
         "textposition": npos, "hovertext": nh,
         "hovertemplate": "%{hovertext}<extra></extra>", "name": "node (shared if purple)",
         "marker": {"size": 11, "color": nc}, "showlegend": False, "textfont": {"size": 11}},
        {"type": "scatter", "x": [0], "y": [ypos[root]], "mode": "markers+text",
         "text": ["root"], "textposition": "middle left", "name": "root",
         "marker": {"size": 11, "color": theme.INK}, "showlegend": False, "hoverinfo": "skip"},
    ]
    depth = max(n.depth for n in t.nodes)
    layout = {"template": theme.TEMPLATE, "height": 120 + 55 * max(1, counter[0]),
              "title": {"text": title}, "margin": {"t": 60, "r": 20, "l": 60},
              "xaxis": {"title": {"text": "tokens from the root (prefix length)"},
                        "range": [-0.08 * depth, 1.3 * depth]},
              "yaxis": {"visible": False, "range": [counter[0] - 0.4, -0.6]}}
    return _go().Figure(data=traces, layout=layout)


# --- the pool over time (preemption by recompute) ----------------------------------------------

def pool_usage_figure(runs, *, title: str = ""):
    """Used blocks per decode round for one or more pools, with preemptions marked.

    ``runs``: a list of dicts with ``label``, ``used_blocks`` (per round), ``num_blocks`` and
    ``preempt_rounds`` (rounds at which a sequence was preempted).
    """
    runs = list(v.sequence("runs", runs))
    traces = []
    for k, r in enumerate(runs):
        color = theme.REQUEST_PALETTE[k % len(theme.REQUEST_PALETTE)]
        used = list(r["used_blocks"])
        # only the rounds where the count changes (drawn as steps), plus the last one
        keep = [i for i in range(len(used)) if i == 0 or i == len(used) - 1
                or used[i] != used[i - 1]]
        traces.append({"type": "scatter", "x": keep, "y": [used[i] for i in keep],
                       "mode": "lines", "line": {"color": color, "shape": "hv",
                                                 "dash": ("solid", "dash", "longdash")[k % 3]},
                       "name": f"{r['label']}: blocks in use"})
        traces.append({"type": "scatter", "x": [0, len(used) - 1],
                       "y": [r["num_blocks"]] * 2, "mode": "lines",
                       "name": f"{r['label']}: pool size ({r['num_blocks']} blocks)",
                       "line": {"color": color, "dash": ("dot", "dashdot", "longdashdot")[k % 3]}})
        pre = list(r.get("preempt_rounds", ()))
        traces.append({"type": "scatter", "x": pre, "y": [used[i] for i in pre],
                       "mode": "markers", "name": f"{r['label']}: preemption",
                       "marker": {"symbol": "x", "size": 12, "color": color}})
    layout = {"template": theme.TEMPLATE, "height": 400, "title": {"text": title},
              "xaxis": {"title": {"text": "decode round"}},
              "yaxis": {"title": {"text": "KV blocks in use (16 tokens each)"},
                        "rangemode": "tozero"},
              "legend": {"orientation": "h", "y": -0.25}}
    return _go().Figure(data=traces, layout=layout)


# --- Figure 8-22: what the same cache space saves ----------------------------------------------

def retention_bars_traces(options, *, max_segments: int = 8, axes=("x", "y")) -> list[dict]:
    """The stacked bar segments (one per kept prefix, each on top of the previous) of the
    expected saving of the prefixes kept in one cache space, as a one-trace list; each bar's
    category label gives its total on a second line (a total printed at the bar's end would
    sit inside a negative bar, or past the plot's top).

    ``options``: list of (label, count, prefix name, value_ms of one prefix); more than
    ``max_segments`` prefixes are drawn as one merged segment.
    """
    opts = [(str(label), int(count), str(name), float(value))
            for label, count, name, value in options]
    palette = [theme.REQUEST_PALETTE[0], theme.REQUEST_PALETTE[1]]
    xs, ys, bases, texts, colors = [], [], [], [], []
    for k, (label, count, name, value) in enumerate(opts):
        segments = [(count, count * value)] if count > max_segments else [(1, value)] * count
        start = 0.0
        category = f"{label}<br>total {count * value:.1f} ms"
        # an option that keeps nothing still gets its category (an empty bar)
        for n, height in segments or [(0, 0.0)]:
            xs.append(category)
            ys.append(height)
            bases.append(start)
            texts.append("" if n == 0 else f"{n} x {name}: {height:.1f} ms" if n > 1
                         else f"{name}: {height:.1f} ms")
            colors.append(palette[k % len(palette)])
            start += height
    return [
        {"type": "bar", "x": xs, "y": ys, "base": bases, "text": texts, "textposition": "inside",
         "name": "kept prefixes", "marker": {"color": colors,
                                             "line": {"color": theme.WHITE, "width": 1.5}},
         "hovertemplate": "%{text}<extra></extra>", "showlegend": False, "width": 0.6,
         "xaxis": axes[0], "yaxis": axes[1]},
    ]


@serves("8.3.4")
def retention_bars_figure(options, *, title: str = ""):
    """Figure 8-22: one large prefix vs several small ones in the same cache space (8.3.4)."""
    opts = list(v.sequence("options", options))
    layout = {"template": theme.TEMPLATE, "height": 400, "title": {"text": title},
              "barmode": "overlay",
              "yaxis": {"title": {"text": "expected net saving per request (ms)"},
                        "rangemode": "tozero"},
              "xaxis": {"title": {"text": "what the cache space keeps"}}}
    return _go().Figure(data=retention_bars_traces(opts), layout=layout)


# --- 8.3.1 paging explorer ----------------------------------------------------------------------

_SWEEP_BLOCKS = np.arange(1, 33)
# the four sequences' total tail waste when their lengths land anywhere in a block
_WASTE_BY_BLOCK = {int(q): calc.tail_waste_distribution(int(q), 4) for q in _SWEEP_BLOCKS}


def _pool_and_sweep_layout(sweep_x: str, sweep_y: str) -> dict:
    """Block tables and pool on top, a sweep plot below; nothing here changes with the state."""
    layout = block_pool_layout()
    layout["yaxis"]["domain"] = layout["yaxis2"]["domain"] = [0.5, 1.0]
    layout.update({
        "height": 640, "margin": {"t": 60, "r": 20, "b": 60},
        "xaxis3": {"title": {"text": sweep_x}, "domain": [0, 1], "anchor": "y3"},
        "yaxis3": {"title": {"text": sweep_y}, "domain": [0, 0.33], "anchor": "x3",
                   "rangemode": "tozero"},
        "legend": {"orientation": "h", "y": -0.12},
    })
    return layout


@serves("8.3.1")
class PagingPanel(Panel):
    """8.3.1: four sequences paged into blocks of p tokens: slots allocated, tail waste, table
    entries, against reserving the maximum length up front; A and B may share a prefix."""

    title = "Paged allocation: block tables, tail waste and table entries (8.3.1)"
    controls = (
        Control("block_tokens", "block size p (tokens)", "int", ch08.PAGING_EXAMPLE_BLOCK_TOKENS,
                1, 16, 1),
        Control("len_a", "length of A (tokens)", "int", ch08.PAGING_EXAMPLE_LENGTHS[0], 1, 48, 1),
        Control("len_b", "length of B (tokens)", "int", ch08.PAGING_EXAMPLE_LENGTHS[1], 1, 48, 1),
        Control("len_c", "length of C (tokens)", "int", ch08.PAGING_EXAMPLE_LENGTHS[2], 1, 48, 1),
        Control("len_d", "length of D (tokens)", "int", ch08.PAGING_EXAMPLE_LENGTHS[3], 1, 48, 1),
        Control("max_tokens", "reserved maximum per sequence (tokens)", "int",
                ch08.PAGING_EXAMPLE_MAX_TOKENS, 1, 64, 1),
        Control("shared_ab_tokens", "tokens A and B have in common", "int",
                ch08.PAGING_EXAMPLE_SHARED_TOKENS, 0, 48, 1),
    )
    main_control = "block_tokens"
    base_layout = _pool_and_sweep_layout("block size p (tokens)", "slots / entries (4 sequences)")

    def compute(self, *, block_tokens, len_a, len_b, len_c, len_d, max_tokens,
                shared_ab_tokens) -> View:
        p = block_tokens
        lens = [len_a, len_b, len_c, len_d]
        cap = max(max_tokens, max(lens))           # a reservation below the longest cannot hold it
        shared = min(shared_ab_tokens, len_a, len_b)
        alloc = calc.paged_allocation(lens, p, max_tokens=cap)
        saved_blocks = calc.shared_prefix_blocks_saved(shared, 2, p)
        mgr = grow_sequences(lens, p, shared_prefix_tokens=shared)
        snap = snapshot_pool(mgr, names=dict(enumerate("ABCD")))
        traces, _ = block_pool_traces(snap, slot_level=True, columns=8, legend=False)
        sweep = [calc.paged_allocation(lens, int(q)) for q in _SWEEP_BLOCKS]
        waste_sweep = [_WASTE_BY_BLOCK[int(q)] for q in _SWEEP_BLOCKS]
        waste = _WASTE_BY_BLOCK[p]
        xs = _SWEEP_BLOCKS.tolist()
        traces += [
            {"type": "scatter", "x": xs, "y": [a.unused_tokens for a in sweep],
             "mode": "lines+markers", "name": "unused slots (tail waste)", "xaxis": "x3",
             "yaxis": "y3", "line": {"color": theme.RED}},
            {"type": "scatter", "x": xs, "y": [a.table_entries for a in sweep],
             "mode": "lines+markers", "name": "block-table entries", "xaxis": "x3",
             "yaxis": "y3", "line": {"color": theme.REQUEST_PALETTE[0], "dash": "dash"}},
            {"type": "scatter", "x": [p, p], "y": [alloc.unused_tokens, alloc.table_entries],
             "mode": "markers", "name": "this block size", "xaxis": "x3", "yaxis": "y3",
             "marker": {"size": 11, "color": theme.INK}},
            # where the bound of 8.3.1 sits against the waste of lengths that land anywhere
            # in a block (the bound is twice the average)
            {"type": "scatter", "x": xs, "y": [w.bound_tokens for w in waste_sweep],
             "mode": "lines", "name": "at most 4 (p - 1): 8.3.1's bound", "xaxis": "x3",
             "yaxis": "y3", "line": {"color": theme.GREY, "dash": "dot"}},
            {"type": "scatter", "x": xs, "y": [w.mean_tokens for w in waste_sweep],
             "mode": "lines", "name": "on average 4 (p - 1) / 2 (lengths anywhere in a block)",
             "xaxis": "x3", "yaxis": "y3", "line": {"color": theme.ORANGE, "dash": "dashdot"}},
        ]
        numbers = {
            "reserved_tokens": alloc.reserved_tokens,
            "reserved_unused_tokens": alloc.reserved_unused_tokens,
            "allocated_tokens": alloc.allocated_tokens,
            "stored_tokens": alloc.stored_tokens,
            "unused_tokens": alloc.unused_tokens,
            "table_entries": alloc.table_entries,
            "tail_waste": list(alloc.tail_waste_per_sequence),
            "shared_blocks": saved_blocks,
            "allocated_with_sharing_tokens": alloc.allocated_tokens - saved_blocks * p,
            "sim_allocated_with_sharing_tokens": mgr.used_blocks * p,
            "waste_bound_tokens": waste.bound_tokens,
            "expected_waste_tokens": waste.mean_tokens,
            "waste_90th_tokens": waste.quantile(0.9),
        }
        text = (f"reserve {cap} each: <b>{alloc.reserved_tokens}</b> slots, "
                f"{alloc.reserved_unused_tokens} unused<br>"
                f"paged (p = {p}): <b>{alloc.allocated_tokens}</b> slots for "
                f"{alloc.stored_tokens} tokens, {alloc.unused_tokens} unused<br>"
                f"tail waste A-D: {', '.join(map(str, alloc.tail_waste_per_sequence))} "
                f"(each < p); lengths anywhere in a block waste {waste.mean_tokens:g} on "
                f"average, {waste.quantile(0.9)} at the 90th percentile, at most "
                f"{waste.bound_tokens}<br>block-table entries: {alloc.table_entries}<br>"
                f"A and B share {shared} tokens = {saved_blocks} full block(s): "
                f"<b>{numbers['allocated_with_sharing_tokens']}</b> slots "
                f"(simulator: {numbers['sim_allocated_with_sharing_tokens']})<br>"
                f"{block_pool_legend_html()}")
        return View(numbers=numbers, traces=traces, text=text,
                    layout={"xaxis": dict(self.base_layout["xaxis"], **table_ticks(snap))})


# --- 8.3.2 branch sharing explorer -------------------------------------------------------------

_SWEEP_BRANCHES = np.arange(1, 17)


@serves("8.3.2")
class BranchSharingPanel(Panel):
    """8.3.2: n branches over a common prefix of s blocks with q private blocks each:
    n (s + q) table entries on s + n q physical blocks, drawn from the simulator."""

    title = "Branch sharing: table entries vs physical blocks (8.3.2)"
    controls = (
        Control("branches", "branches n_br", "int", ch08.BRANCH_EXPERIMENT_BRANCHES, 1, 8, 1),
        Control("shared_blocks", "common-prefix blocks B_s", "int",
                ch08.BRANCH_EXPERIMENT_SHARED_BLOCKS, 0, 200, 1),
        Control("private_blocks", "private blocks per branch B_p", "int",
                ch08.BRANCH_EXPERIMENT_PRIVATE_BLOCKS, 0, 40, 1),
    )
    main_control = "branches"
    base_layout = _pool_and_sweep_layout("branches n_br", "blocks")

    def compute(self, *, branches, shared_blocks, private_blocks) -> View:
        share = calc.branch_block_sharing(branches, shared_blocks, private_blocks)
        final = snapshot_pool(branch_sharing_pool(branches, shared_blocks, private_blocks),
                              names={k: SEQUENCE_NAMES[k] for k in range(branches)})
        traces, _ = block_pool_traces(final, slot_level=False, columns=20, merge_runs=True,
                                      legend=False)
        sweep = [calc.branch_block_sharing(int(n), shared_blocks, private_blocks)
                 for n in _SWEEP_BRANCHES]
        xs = _SWEEP_BRANCHES.tolist()
        traces += [
            {"type": "scatter", "x": xs, "y": [s.references for s in sweep], "mode": "lines",
             "name": "stored independently = table entries n(s+q)", "xaxis": "x3",
             "yaxis": "y3", "line": {"color": theme.GREY, "dash": "dash"}},
            {"type": "scatter", "x": xs, "y": [s.physical_blocks for s in sweep],
             "mode": "lines", "name": "shared: physical blocks s + nq", "xaxis": "x3",
             "yaxis": "y3", "line": {"color": SHARED_COLOR}},
            {"type": "scatter", "x": [branches, branches],
             "y": [share.references, share.physical_blocks], "mode": "markers",
             "name": "this setting", "xaxis": "x3", "yaxis": "y3",
             "marker": {"size": 11, "color": theme.INK}},
        ]
        numbers = {
            "references": share.references,
            "physical_blocks": share.physical_blocks,
            "sim_references": final.references,
            "sim_physical_blocks": final.used_blocks,
            "private_blocks": share.private_blocks,
            "saved_blocks": share.saved_blocks,
            "saved_pct": 100 * share.saved_fraction,
        }
        text = (f"table entries: <b>{share.references}</b> = {branches} x ({shared_blocks} + "
                f"{private_blocks})<br>physical blocks: <b>{share.physical_blocks}</b> = "
                f"{shared_blocks} + {branches} x {private_blocks}<br>"
                f"saved by sharing: {share.saved_blocks} blocks ({numbers['saved_pct']:.1f}%)<br>"
                f"private blocks still growing with n: {share.private_blocks}<br>"
                f"simulator: {final.references} entries on {final.used_blocks} blocks<br>"
                f"{block_pool_legend_html()}")
        return View(numbers=numbers, traces=traces, text=text,
                    layout={"xaxis": dict(self.base_layout["xaxis"], **table_ticks(final))})


# --- 8.3.2 shared-prefix capacity --------------------------------------------------------------

_SWEEP_BATCH = np.arange(0, 65, 4)     # M_KV is a straight line in b; 17 points draw it


@serves("8.3.2")
class SharedPrefixCapacityPanel(Panel):
    """8.3.2: KV of b long requests once generation ends, independent (b x 1188 MiB) vs with the
    common prefix stored once (864 + 324 b MiB), against the 12 GiB budget."""

    title = "Shared-prefix capacity: M_KV = prefix + b x private (8.3.2)"
    controls = (
        Control("batch", "requests b", "int", ch08.LONG_BATCH, 1, 64, 1),
        Control("prompt_tokens", "prompt (tokens)", "int", ch08.LONG_PROMPT_TOKENS, 512, 32768,
                256),
        Control("output_tokens", "output (tokens)", "int", ch08.OUTPUT_TOKENS, 1, 4096, 1),
        Control("shared_prefix_tokens", "shared prefix (tokens)", "int",
                ch08.SHARED_PREFIX_TOKENS, 0, 32768, 256),
        Control("block_tokens", "block size (tokens)", "int", ch08.BLOCK_TOKENS, 1, 256, 1),
        Control("kv_budget_gib", "KV budget (GiB)", "float", ch08.KV_BUDGET_BYTES / units.GiB,
                1.0, 80.0, 0.5),
    )
    main_control = "shared_prefix_tokens"
    base_layout = {
        "xaxis": {"title": {"text": "requests b"}},
        "yaxis": {"title": {"text": "KV once generation ends (GiB)"}, "rangemode": "tozero"},
        "legend": {"orientation": "h", "y": -0.2},
    }

    def compute(self, *, batch, prompt_tokens, output_tokens, shared_prefix_tokens,
                block_tokens, kv_budget_gib) -> View:
        m = specs.QWEN3_8B
        prefix = min(shared_prefix_tokens, prompt_tokens - 1)   # keep one private token
        budget = kv_budget_gib * units.GiB
        kw = dict(block_tokens=block_tokens)
        ind = [calc.prefix_shared_kv_bytes(m, int(b), prompt_tokens, output_tokens, **kw) / units.GiB
               for b in _SWEEP_BATCH]
        shr = [calc.prefix_shared_kv_bytes(m, int(b), prompt_tokens, output_tokens,
                                           shared_prefix_tokens=prefix, **kw) / units.GiB
               for b in _SWEEP_BATCH]
        fit_ind = calc.max_concurrent(budget, m, prompt_tokens, output_tokens, **kw)
        fit_shr = calc.max_concurrent(budget, m, prompt_tokens, output_tokens,
                                      shared_prefix_tokens=prefix, **kw)
        held = calc.held_tokens(prompt_tokens, output_tokens)
        at_b_ind = calc.prefix_shared_kv_bytes(m, batch, prompt_tokens, output_tokens, **kw)
        at_b_shr = calc.prefix_shared_kv_bytes(m, batch, prompt_tokens, output_tokens,
                                               shared_prefix_tokens=prefix, **kw)
        whole = prefix - prefix % block_tokens    # only whole prefix blocks are shared (8.3.2)
        numbers = {
            "prefix_MiB": (calc.kv_bytes(m, whole, **kw) if whole else 0) / units.MiB,
            "private_tokens": held - whole,
            "private_MiB": calc.kv_bytes(m, held - whole, **kw) / units.MiB,
            "request_MiB": calc.kv_bytes(m, held, **kw) / units.MiB,
            "independent_MiB": at_b_ind / units.MiB,
            "shared_MiB": at_b_shr / units.MiB,
            "shared_GiB": at_b_shr / units.GiB,
            "fit_independent": fit_ind,
            "fit_shared": fit_shr,
        }
        xs = _SWEEP_BATCH.tolist()
        traces = [
            {"type": "scatter", "x": xs, "y": ind, "mode": "lines",
             "name": "independent: b x request", "line": {"color": theme.GREY, "dash": "dash"}},
            {"type": "scatter", "x": xs, "y": shr, "mode": "lines",
             "name": f"prefix ({prefix:,} tokens) stored once", "line": {"color": SHARED_COLOR}},
            {"type": "scatter", "x": [0, xs[-1]], "y": [kv_budget_gib] * 2, "mode": "lines",
             "name": f"KV budget ({kv_budget_gib:g} GiB)", "line": {"color": theme.RED,
                                                                      "dash": "dot"}},
            {"type": "scatter", "x": [fit_ind, fit_shr],
             "y": [calc.prefix_shared_kv_bytes(m, fit_ind, prompt_tokens, output_tokens, **kw)
                   / units.GiB,
                   calc.prefix_shared_kv_bytes(m, fit_shr, prompt_tokens, output_tokens,
                                               shared_prefix_tokens=prefix, **kw) / units.GiB],
             "mode": "markers",
             "name": "most requests that fit", "marker": {"size": 11, "symbol": "diamond",
                                                          "color": theme.INK}},
            {"type": "scatter", "x": [batch, batch], "y": [at_b_ind / units.GiB,
                                                            at_b_shr / units.GiB],
             "mode": "markers", "name": f"b = {batch}", "marker": {"size": 10,
                                                                   "color": theme.ORANGE}},
        ]
        text = (f"one request holds {held:,} tokens: {numbers['request_MiB']:,.0f} MiB "
                f"independent<br>prefix {numbers['prefix_MiB']:,.0f} MiB once + private "
                f"{numbers['private_tokens']:,} tokens = {numbers['private_MiB']:,.0f} MiB each<br>"
                f"b = {batch}: <b>{numbers['shared_MiB']:,.0f} MiB</b> shared vs "
                f"{numbers['independent_MiB']:,.0f} MiB independent<br>"
                f"fit in {kv_budget_gib:g} GiB: <b>{fit_ind}</b> independent, "
                f"<b>{fit_shr}</b> sharing")
        return View(numbers=numbers, traces=traces, text=text)


# --- 8.3.3 hybrid-state snapshots --------------------------------------------------------------

_SWEEP_SPACING = np.unique(np.round(np.geomspace(256, 32768, 43) / 256).astype(int) * 256)


@serves("8.3.3")
class SnapshotSpacingPanel(Panel):
    """8.3.3: a hybrid model resumes a matched prefix from its latest recurrent-state snapshot;
    denser snapshots recompute less but store more (53.6 MiB each per card at TP = 8)."""

    title = "Hybrid-state snapshots: recompute vs storage (8.3.3)"
    controls = (
        Control("spacing_tokens", "snapshot every (tokens)", "int",
                ch08.HYBRID_SNAPSHOT_POSITIONS[0],
                256, 32768, 256),
        Control("matched_tokens", "matched prefix (tokens)", "int", ch08.HYBRID_MATCHED_TOKENS,
                0, 131072, 128),
        Control("context_tokens", "context kept in snapshots (tokens)", "int",
                ch08.HYBRID_MATCHED_TOKENS, 256, 262144, 256,
                extra_stops=(131072,)),           # "Try this" 5: a 128K-token context
        Control("snapshot_mib", "one snapshot per card (MiB)", "float",
                ch08.HYBRID_SNAPSHOT_MIB_PER_CARD, 1.0, 200.0, 0.1),
    )
    main_control = "spacing_tokens"
    base_layout = {
        "xaxis": {"title": {"text": "snapshot spacing (tokens)"}, "type": "log"},
        "yaxis": {"title": {"text": "tokens recomputed on restore"}, "rangemode": "tozero"},
        "yaxis2": {"title": {"text": "snapshot storage per card (MiB)"}, "overlaying": "y",
                   "side": "right", "rangemode": "tozero"},
        "legend": {"orientation": "h", "y": -0.22},
    }

    @staticmethod
    def _plan(spacing, matched, context, size_bytes):
        count = context // spacing
        positions = [spacing * (i + 1) for i in range(count)]
        point = calc.hybrid_restore_point(matched, positions)
        return count, point, calc.snapshot_storage_bytes(size_bytes, count)

    def compute(self, *, spacing_tokens, matched_tokens, context_tokens, snapshot_mib) -> View:
        size = snapshot_mib * units.MiB
        matched = min(matched_tokens, context_tokens)
        count, point, storage = self._plan(spacing_tokens, matched, context_tokens, size)
        sweep = [self._plan(int(s), matched, context_tokens, size) for s in _SWEEP_SPACING]
        xs = _SWEEP_SPACING.tolist()
        numbers = {
            "snapshots": count,
            "restore_from": point.restore_from,
            "recompute_tokens": point.recompute_tokens,
            "storage_MiB": storage / units.MiB,
            "worst_recompute_tokens": min(spacing_tokens - 1, context_tokens),
        }
        traces = [
            {"type": "scatter", "x": xs, "y": [pt.recompute_tokens for _, pt, _ in sweep],
             "mode": "lines", "name": f"recomputed for a {matched:,}-token match",
             "line": {"shape": "hv", "color": theme.REQUEST_PALETTE[1]}},
            {"type": "scatter", "x": xs, "y": [min(s - 1, context_tokens) for s in xs],
             "mode": "lines", "name": "worst case (match just before a snapshot)",
             "line": {"color": theme.REQUEST_PALETTE[1], "dash": "dot"}},
            {"type": "scatter", "x": xs, "y": [st / units.MiB for _, _, st in sweep],
             "mode": "lines", "name": f"storage for {context_tokens:,} tokens of snapshots",
             "yaxis": "y2", "line": {"shape": "hv", "color": SHARED_COLOR}},
            {"type": "scatter", "x": [spacing_tokens], "y": [point.recompute_tokens],
             "mode": "markers", "name": "this spacing", "marker": {"size": 11,
                                                                  "color": theme.INK}},
        ]
        text = (f"{count} snapshot(s) at every {spacing_tokens:,} tokens up to "
                f"{context_tokens:,}<br>a {matched:,}-token match restores from "
                f"<b>{point.restore_from:,}</b> and recomputes <b>{point.recompute_tokens:,}</b> "
                f"tokens<br>storage: <b>{numbers['storage_MiB']:,.1f} MiB</b> per card "
                f"({snapshot_mib:g} MiB each)")
        return View(numbers=numbers, traces=traces, text=text)


# --- 8.3.3 organising an agent's context -------------------------------------------------------

_CONTEXT_LABELS = {"append": "append the tool result", "rewrite": "rewrite the instructions",
                   "summarise": "summarise, then append"}
# the bars' category labels: two short lines, upright (rotated, the long ones ran into the
# legend below)
_CONTEXT_TICKS = {"append": "append the<br>tool result", "rewrite": "rewrite the<br>instructions",
                  "summarise": "summarise,<br>then append"}
_LATER_STEPS = np.unique(np.linspace(0, 4096, 65).astype(int))


@serves("8.3.3")
class ContextOrganisationPanel(Panel):
    """8.3.3: continue an 8K context with a 1K tool result by appending it, by rewriting the
    leading instructions, or by summarising the history to 2K first; Qwen3-8B, prefix-cache
    reuse in 16-token blocks, and the KV that later decode steps read."""

    title = "Organising the context: reuse now, KV read later (8.3.3)"
    controls = (
        Control("output_tokens", "later output tokens G (tokens)", "int", ch08.OUTPUT_TOKENS, 1,
                4096, 1),
        Control("history_tokens", "cached history (tokens)", "int",
                ch08.CONTEXT_HISTORY_TOKENS, 1024, 65536, 1024),
        Control("appended_tokens", "appended tool result (tokens)", "int",
                ch08.CONTEXT_TOOL_RESULT_TOKENS, 0, 8192, 128),
        Control("summary_tokens", "summary length (tokens)", "int", ch08.CONTEXT_SUMMARY_TOKENS,
                128, 8192, 128),
        Control("rewrite_at_tokens", "rewrite starts at token (position)", "int", 0, 0, 8192, 16),
    )
    main_control = "output_tokens"
    base_layout = {
        "height": 460, "barmode": "stack",
        "xaxis": {"domain": [0, 0.38], "anchor": "y", "tickangle": 0},
        "yaxis": {"title": {"text": "tokens this round"}, "anchor": "x", "rangemode": "tozero"},
        "xaxis2": {"domain": [0.5, 1], "anchor": "y2",
                   "title": {"text": "later output tokens (tokens)"}},
        "yaxis2": {"title": {"text": "KV read by later decode steps (GiB)"}, "anchor": "x2",
                   "rangemode": "tozero"},
        # the legend at the figure's foot, below the first subplot's slanted category labels
        # (in the plot's own coordinates it sat on them)
        "legend": {"orientation": "h", "yref": "container", "y": 0, "yanchor": "bottom"},
        "margin": {"t": 60, "r": 20, "b": 150},
    }

    def compute(self, *, output_tokens, history_tokens, appended_tokens, summary_tokens,
                rewrite_at_tokens) -> View:
        rewrite_at = min(rewrite_at_tokens, history_tokens - 1)
        kw = dict(history_tokens=history_tokens, appended_tokens=appended_tokens,
                  summary_tokens=summary_tokens, rewrite_at_tokens=rewrite_at)
        options = {o.name: o for o in context_organisation(output_tokens=output_tokens, **kw)}
        names = [_CONTEXT_TICKS[n] for n in CONTEXT_OPTIONS]
        bars = (("reused from the prefix cache", "reusable_tokens", SHARED_COLOR),
                ("prefilled now", "prefill_tokens", theme.REQUEST_PALETTE[5]),
                ("generated first (the summary)", "summary_tokens", theme.REQUEST_PALETTE[1]))
        traces = [{"type": "bar", "x": names, "y": [getattr(options[n], key)
                                                    for n in CONTEXT_OPTIONS],
                   "name": label, "marker": {"color": color}}
                  for label, key, color in bars]
        m = specs.QWEN3_8B
        for i, name in enumerate(CONTEXT_OPTIONS):
            L = options[name].context_tokens
            reads = [decode_kv_read_bytes(m, L, int(g)) / units.GiB for g in _LATER_STEPS]
            traces.append({"type": "scatter", "mode": "lines", "x": _LATER_STEPS.tolist(),
                           "y": reads, "xaxis": "x2", "yaxis": "y2",
                           "name": f"{_CONTEXT_LABELS[name]} (L = {L:,})",
                           "line": {"color": theme.REQUEST_PALETTE[i],
                                    "dash": theme.DASHES[i % len(theme.DASHES)]}})
        traces.append({"type": "scatter", "mode": "markers", "xaxis": "x2", "yaxis": "y2",
                       "x": [output_tokens] * 3, "name": f"G = {output_tokens:,}",
                       "y": [options[n].kv_read_over_output_bytes / units.GiB
                             for n in CONTEXT_OPTIONS],
                       "marker": {"size": 10, "color": theme.INK}})
        append, summ = options["append"], options["summarise"]
        saving_per_step = append.kv_read_per_step_bytes - summ.kv_read_per_step_bytes
        numbers = {"output_tokens": output_tokens}
        for name, o in options.items():
            numbers.update({f"{name}_reusable_tokens": o.reusable_tokens,
                            f"{name}_prefill_tokens": o.prefill_tokens,
                            f"{name}_context_tokens": o.context_tokens,
                            f"{name}_step_read_MiB": o.kv_read_per_step_bytes / units.MiB,
                            f"{name}_later_read_GiB": o.kv_read_over_output_bytes / units.GiB})
        numbers["summary_pass_read_GiB"] = summ.summary_kv_read_bytes / units.GiB
        # later steps after which the summary's smaller reads repay the reads of writing it,
        # counted in KV bytes alone (what it costs when many requests share each weight read)
        numbers["summary_repaid_after_tokens"] = (
            math.ceil(summ.summary_kv_read_bytes / saving_per_step) if saving_per_step > 0
            else math.inf)
        # the same in read time for one request alone (batch 1, read-bound): every summary step
        # also streams all the weights, which the later steps read in either option
        summary_read_b1 = summ.summary_tokens * m.streamed_weight_bytes + summ.summary_kv_read_bytes
        numbers["summary_repaid_after_tokens_batch1"] = (
            math.ceil(summary_read_b1 / saving_per_step) if saving_per_step > 0 else math.inf)
        text = "<br>".join(
            f"{_CONTEXT_LABELS[n]}: reuse <b>{o.reusable_tokens:,}</b>, prefill "
            f"<b>{o.prefill_tokens:,}</b>, then {o.kv_read_per_step_bytes / units.MiB:,.0f} MiB "
            f"per step, {o.kv_read_over_output_bytes / units.GiB:,.1f} GiB over {output_tokens:,}"
            for n, o in options.items())
        repaid = numbers["summary_repaid_after_tokens"]
        repaid_b1 = numbers["summary_repaid_after_tokens_batch1"]
        text += (f"<br>writing the summary reads {numbers['summary_pass_read_GiB']:,.0f} GiB of "
                 "KV; " + (f"repaid in KV bytes after {repaid:,} later tokens (a large batch "
                           f"sharing the weight reads), in read time at batch 1 after "
                           f"{repaid_b1:,}" if repaid != math.inf else "never repaid"))
        return View(numbers=numbers, traces=traces, text=text)


# --- 8.3.4 retention economics (Figure 8-22) ---------------------------------------------------

_SWEEP_HIT = np.linspace(0.0, 1.0, 51)
# Figure 8-22's model; the prefix sliders move in steps of 256 tokens and the cache space in
# the KV of that step (36 MiB), from the KV of one prefix A (864 MiB), Qwen3-8B in BF16
_RETENTION_MODEL = specs.QWEN3_8B
_RETENTION_PRICING = {"8.3.4's: compute only, write-back waited for": "chapter",
                      "fuller: roofline floor, write-back off the GPU's path": "fuller"}
_PREFIX_STEP_TOKENS = 256
_PREFIX_STEP_MIB = calc.kv_bytes(_RETENTION_MODEL, _PREFIX_STEP_TOKENS) / units.MiB
_PREFIX_A_MIB = calc.kv_bytes(_RETENTION_MODEL, ch08.SHARED_PREFIX_TOKENS) / units.MiB


@serves("8.3.4")
class RetentionPanel(Panel):
    """8.3.4 / Figure 8-22: keep one large prefix A or several small prefixes B in the same cache
    space? V = rho (T_rec - T_f) - T_m for each, on the RTX PRO 6000 with Qwen3-8B."""

    title = "Which prefixes should the cache keep? (8.3.4, Figure 8-22)"
    controls = (
        Control("hit_prob_a", "hit probability of A", "float", ch08.RETENTION_HIT_PROB, 0.0, 1.0,
                0.01),
        Control("hit_prob_b", "hit probability of each B", "float", ch08.RETENTION_HIT_PROB,
                0.0, 1.0, 0.01),
        Control("link_gb_per_s", "host link (GB/s per direction)", "float",
                ch08.PCIE_GEN5_X16_BYTES_PER_S / units.GB, 4.0, 450.0, 1.0),
        Control("prefix_a_tokens", "prefix A (tokens)", "int", ch08.SHARED_PREFIX_TOKENS,
                _PREFIX_STEP_TOKENS, 32768, _PREFIX_STEP_TOKENS),
        Control("prefix_b_tokens", "prefix B (tokens)", "int", ch08.PREFIX_B_TOKENS,
                _PREFIX_STEP_TOKENS, 32768, _PREFIX_STEP_TOKENS),
        Control("cache_mib", "cache space (MiB)", "float", _PREFIX_A_MIB, _PREFIX_STEP_MIB,
                8192.0, _PREFIX_STEP_MIB),
        Control("efficiency_pct", "recompute at % of BF16 peak", "float",
                100 * km.RECOMPUTE_EFFICIENCY, 5.0, 100.0, 0.1),
        # Where 8.3.4's pricing stops holding (the chapter's stays the default)
        Control("pricing", "how T_rec and T_m are priced", "choice", "chapter",
                options=_RETENTION_PRICING),
        Control("piece_cost_us", "fixed cost per copied KV piece (us)", "float", 0.0, 0.0,
                5.0, 0.05),
    )
    main_control = "hit_prob_a"
    base_layout = {
        "barmode": "overlay", "height": 460, "margin": {"t": 60, "r": 20, "b": 110},
        "xaxis": {"domain": [0, 0.36], "title": {"text": "what the cache space keeps"}},
        "yaxis": {"title": {"text": "expected net saving (ms)"}, "rangemode": "tozero"},
        "xaxis2": {"domain": [0.48, 1], "title": {"text": "hit probability of A"},
                   "range": [0, 1], "anchor": "y2"},
        "yaxis2": {"title": {"text": "expected net saving (ms)"}, "anchor": "x2",
                   "zeroline": True, "zerolinecolor": theme.GREY},
        # at the figure's foot, below the two-line category labels (each with its total)
        "legend": theme.foot_legend(),
    }

    def compute(self, *, hit_prob_a, hit_prob_b, link_gb_per_s, prefix_a_tokens,
                prefix_b_tokens, cache_mib, efficiency_pct, pricing="chapter",
                piece_cost_us=0.0) -> View:
        m, hw = _RETENTION_MODEL, specs.RTX_PRO_6000
        kw = dict(efficiency=efficiency_pct / 100, link_bytes_per_s=link_gb_per_s * units.GB)
        alpha = piece_cost_us * 1e-6
        # the chapter's pricing (a per-piece cost added to each transfer when set), and the
        # fuller one: roofline floor on the recompute, the write-back off the GPU's path
        chapter_a, chapter_b = (calc.prefix_retention_fuller(
            m, hw, n, hit_prob=ph, piece_cost_s=alpha, roofline_floor=False,
            blocking_writeback=True, **kw) for n, ph in ((prefix_a_tokens, hit_prob_a),
                                                         (prefix_b_tokens, hit_prob_b)))
        full_a, full_b = (calc.prefix_retention_fuller(m, hw, n, hit_prob=ph, piece_cost_s=alpha,
                                                       **kw)
                          for n, ph in ((prefix_a_tokens, hit_prob_a),
                                        (prefix_b_tokens, hit_prob_b)))
        a, b = (full_a, full_b) if pricing == "fuller" else (chapter_a, chapter_b)
        cache = cache_mib * units.MiB
        n_a, n_b = int(cache // a.kv_bytes), int(cache // b.kv_bytes)
        keep_a, keep_b = n_a * a.value_s, n_b * b.value_s
        # the hit probability of A at which n_a A's are worth what n_b B's are
        threshold = (retention_break_even_hit_prob(a.recompute_s, a.fetch_s, a.maintain_s,
                                                   target_value_s=keep_b / n_a)
                     if n_a else math.inf)
        numbers = {
            "kv_a_MiB": a.kv_bytes / units.MiB, "kv_b_MiB": b.kv_bytes / units.MiB,
            "recompute_a_ms": a.recompute_s / units.ms, "recompute_b_ms": b.recompute_s / units.ms,
            "fetch_a_ms": a.fetch_s / units.ms, "fetch_b_ms": b.fetch_s / units.ms,
            "value_a_ms": a.value_s / units.ms, "value_b_ms": b.value_s / units.ms,
            "a_fit": n_a, "b_fit": n_b,
            "keep_a_ms": keep_a / units.ms, "keep_b_ms": keep_b / units.ms,
            "break_even_a_pct": 100 * a.break_even_hit_prob,
            "break_even_b_pct": 100 * b.break_even_hit_prob,
            "a_per_MiB_ms": a.value_s_per_byte * units.MiB / units.ms,
            "b_per_MiB_ms": b.value_s_per_byte * units.MiB / units.ms,
            "a_beats_b_above_pct": 100 * threshold,
            "chapter_keep_a_ms": n_a * chapter_a.value_s / units.ms,
            "chapter_keep_b_ms": n_b * chapter_b.value_s / units.ms,
            "fuller_keep_a_ms": n_a * full_a.value_s / units.ms,
            "fuller_keep_b_ms": n_b * full_b.value_s / units.ms,
            "chapter_break_even_a_pct": 100 * chapter_a.break_even_hit_prob,
            "fuller_break_even_a_pct": 100 * full_a.break_even_hit_prob,
            "pieces_a": calc.kv_transfer_pieces(m, prefix_a_tokens),
            "doubling_piece_cost_us": 1e6 * calc.piece_cost_doubling_fetch_s(
                m, prefix_a_tokens, link_gb_per_s * units.GB),
            "recompute_a_memory_bound": calc.prefix_recompute_roofline(
                m, hw, prefix_a_tokens, efficiency_pct / 100).memory_bound,
            "recompute_b_memory_bound": calc.prefix_recompute_roofline(
                m, hw, prefix_b_tokens, efficiency_pct / 100).memory_bound,
        }
        bars = retention_bars_traces(
            [(f"{n_a} x A ({prefix_a_tokens:,} tok)", n_a, "A", a.value_s / units.ms),
             (f"{n_b} x B ({prefix_b_tokens:,} tok)", n_b, "B", b.value_s / units.ms)])
        a_line = [n_a * cache_retention_value(float(ph), a.recompute_s, a.fetch_s,
                                              a.maintain_s) / units.ms for ph in _SWEEP_HIT]
        xs = _SWEEP_HIT.tolist()
        traces = bars + [
            {"type": "scatter", "x": xs, "y": a_line, "mode": "lines",
             "name": f"keep {n_a} x A", "xaxis": "x2", "yaxis": "y2",
             "line": {"color": theme.REQUEST_PALETTE[0]}},
            {"type": "scatter", "x": [0, 1], "y": [keep_b / units.ms] * 2, "mode": "lines",
             "name": f"keep {n_b} x B (at their hit probability)", "xaxis": "x2", "yaxis": "y2",
             "line": {"color": theme.REQUEST_PALETTE[1], "dash": "dash"}},
            {"type": "scatter", "x": [hit_prob_a], "y": [keep_a / units.ms], "mode": "markers",
             "name": "this setting", "xaxis": "x2", "yaxis": "y2",
             "marker": {"size": 11, "color": theme.INK}},
        ]
        if pricing == "fuller":
            # side by side: the chapter's line for the same space
            traces.append({
                "type": "scatter", "x": xs, "mode": "lines", "xaxis": "x2", "yaxis": "y2",
                "y": [n_a * cache_retention_value(float(ph), chapter_a.recompute_s,
                                                  chapter_a.fetch_s, chapter_a.maintain_s)
                      / units.ms for ph in _SWEEP_HIT],
                "name": f"keep {n_a} x A, priced as in 8.3.4",
                "line": {"color": theme.GREY, "dash": "dot"}})
        text = (f"A: {numbers['kv_a_MiB']:,.0f} MiB, recompute {numbers['recompute_a_ms']:.1f} ms,"
                f" fetch {numbers['fetch_a_ms']:.1f} ms, V = <b>{numbers['value_a_ms']:.1f} ms"
                f"</b> (worth keeping above {numbers['break_even_a_pct']:.1f}% hits)<br>"
                f"B: {numbers['kv_b_MiB']:,.0f} MiB, recompute {numbers['recompute_b_ms']:.1f} ms,"
                f" fetch {numbers['fetch_b_ms']:.1f} ms, V = <b>{numbers['value_b_ms']:.1f} ms"
                f"</b><br>{cache_mib:g} MiB keeps {n_a} A ({numbers['keep_a_ms']:.1f} ms) or "
                f"{n_b} B ({numbers['keep_b_ms']:.1f} ms)<br>per MiB: A "
                f"{numbers['a_per_MiB_ms']:.3f} ms, B {numbers['b_per_MiB_ms']:.3f} ms<br>"
                f"keep A: 8.3.4's pricing {numbers['chapter_keep_a_ms']:.1f} ms (pays above "
                f"{numbers['chapter_break_even_a_pct']:.1f}%), fuller "
                f"{numbers['fuller_keep_a_ms']:.1f} ms (above "
                f"{numbers['fuller_break_even_a_pct']:.1f}%); a fetch doubles at "
                f"{numbers['doubling_piece_cost_us']:.2f} us per piece "
                f"({numbers['pieces_a']:,} pieces)")
        return View(numbers=numbers, traces=traces, text=text)
