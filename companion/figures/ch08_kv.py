"""Figures of 8.3: paged blocks and block tables, branch sharing step by step, the prefix tree of
multi-turn inputs (Figure 8-17), the pool over time under preemption, and cache retention
economics (Figure 8-22).

Builders take states and results computed by ``companion.sim.kvcache`` and ``companion.calc`` and
return plotly figures; the ``*_traces`` helpers return plain trace/layout dicts so that the
explorers in ``companion.explorers.ch08_kv`` draw exactly the same pictures. Every cell of a block
drawing is a bar (a rectangle in data coordinates, with its own colour and hover text), so the
drawings scale with the figure. Deterministic: fixed colours, no timestamps, no randomness.
"""

from __future__ import annotations

from dataclasses import dataclass

from companion import validate as v
from companion.explorers.common import plotly_go as _go

__all__ = ["PoolSnapshot", "snapshot_pool", "block_pool_traces", "block_pool_legend_html", "block_pool_layout", "block_pool_figure",
           "block_pool_steps_figure", "prefix_tree_figure", "pool_usage_figure",
           "retention_bars_traces", "retention_bars_figure", "SEQUENCE_COLORS"]

# one colour per sequence (colour-blind safe), then the states of a physical block
SEQUENCE_COLORS = ("#0072b2", "#e69f00", "#009e73", "#cc79a7", "#56b4e9", "#d55e00",
                   "#8c6d31", "#7f7f7f")
SHARED_COLOR = "#6a3d9a"        # a block referenced by more than one block table (or a cache)
FREE_COLOR = "#ececec"          # a block in the free pool
UNUSED_LINE = "#c00000"         # outline of an allocated but unused slot (tail waste)
CELL_LINE = "#ffffff"


# --- a drawable copy of a BlockManager's state -------------------------------------------------

@dataclass(frozen=True)
class PoolSnapshot:
    """What a BlockManager holds at one moment, in a form the drawings need.

    ``tables``: (name, physical block ids in logical order, tokens held) per sequence;
    ``refcounts``: reference count of every physical block (0 = free); ``label``: a caption.
    """

    block_tokens: int
    num_blocks: int
    tables: tuple[tuple[str, tuple[int, ...], int], ...]
    refcounts: tuple[int, ...]
    label: str = ""

    @property
    def references(self) -> int:
        """Block-table entries over all sequences (8.3.2's 416)."""
        return sum(len(t) for _, t, _ in self.tables)

    @property
    def used_blocks(self) -> int:
        """Physical blocks in use (8.3.2's 131)."""
        return sum(1 for r in self.refcounts if r > 0)

    @property
    def stored_tokens(self) -> int:
        """Distinct token slots written: per block, the fullest view any table has of it."""
        return sum(self.block_fill().values())

    @property
    def allocated_tokens(self) -> int:
        return self.used_blocks * self.block_tokens

    def block_fill(self) -> dict[int, int]:
        """Physical block -> slots filled (the largest fill any referencing table sees)."""
        p = self.block_tokens
        fill: dict[int, int] = {}
        for _, table, n in self.tables:
            for i, b in enumerate(table):
                fill[b] = max(fill.get(b, 0), min(p, n - i * p))
        return fill

    def owners(self) -> dict[int, list[int]]:
        """Physical block -> indices of the sequences whose tables point at it."""
        out: dict[int, list[int]] = {}
        for k, (_, table, _) in enumerate(self.tables):
            for b in table:
                out.setdefault(b, []).append(k)
        return out


def snapshot_pool(manager, label: str = "", names=None) -> PoolSnapshot:
    """Freeze a ``companion.sim.kvcache.BlockManager``'s tables and counts for drawing.

    ``names`` maps sequence ids to display names (default: ``str(seq_id)``).
    """
    from companion.sim.kvcache import BlockManager

    m = v.instance("manager", manager, BlockManager)
    names = {} if names is None else dict(names)
    tables = tuple((str(names.get(s, s)), tuple(m.block_table(s)), m.num_tokens(s))
                   for s in m.sequences)
    # counts from the tables; ask the manager only if something else (a cache) holds blocks
    refs = [0] * m.num_blocks
    for _, table, _ in tables:
        for b in table:
            refs[b] += 1
    if sum(1 for r in refs if r) != m.used_blocks:
        refs = [m.refcount(b) for b in range(m.num_blocks)]
    return PoolSnapshot(m.block_tokens, m.num_blocks, tables, tuple(refs), str(label))


# --- the drawing: block tables (left) and the physical pool (right) ----------------------------

def _seq_color(k: int) -> str:
    return SEQUENCE_COLORS[k % len(SEQUENCE_COLORS)]


# cell colours as numbers on a discrete colour scale (fast to update in a live figure):
# 0..7 a sequence's private block, 8 shared, 9 free, 10 unused slot (white)
_SHARED, _FREE, _UNUSED = len(SEQUENCE_COLORS), len(SEQUENCE_COLORS) + 1, len(SEQUENCE_COLORS) + 2
_PALETTE = list(SEQUENCE_COLORS) + [SHARED_COLOR, FREE_COLOR, "#ffffff"]
_COLORSCALE = [c for k, col in enumerate(_PALETTE)
               for c in ([k / len(_PALETTE), col], [(k + 1) / len(_PALETTE), col])]
_LINESCALE = [[0, CELL_LINE], [0.5, CELL_LINE], [0.5, UNUSED_LINE], [1, UNUSED_LINE]]


def _bars(name, y, base, length, code, outlined, hover, text, axes):
    trace = {"type": "bar", "orientation": "h", "name": name, "y": y, "base": base,
             "x": length, "width": 0.82,
             "marker": {"color": [c + 0.5 for c in code], "coloraxis": "coloraxis",
                        "line": {"color": [0.75 if o else 0.25 for o in outlined],
                                 "coloraxis": "coloraxis2", "width": 1.5}},
             "hovertext": hover, "hovertemplate": "%{hovertext}<extra></extra>",
             "xaxis": axes[0], "yaxis": axes[1], "showlegend": False}
    if any(text):
        trace.update({"text": text, "textposition": "inside", "insidetextanchor": "middle",
                      "textfont": {"size": 10, "color": "#ffffff"}})
    return trace


def _legend_traces() -> list[dict]:
    items = [("private block (colour of its sequence)", SEQUENCE_COLORS[0], None),
             ("shared block (count > 1)", SHARED_COLOR, None),
             ("allocated, unused slot (tail waste)", "#ffffff", UNUSED_LINE),
             ("free block", FREE_COLOR, None)]
    return [{"type": "scatter", "x": [None], "y": [None], "mode": "markers", "name": name,
             "marker": {"symbol": "square", "size": 12, "color": color,
                        "line": {"color": line or color, "width": 2}},
             "hoverinfo": "skip", "showlegend": True} for name, color, line in items]


def block_pool_legend_html() -> str:
    """The colour key of the block drawings as HTML (for an explorer's readout)."""
    def box(color, line=None):
        return (f'<span style="display:inline-block;width:10px;height:10px;background:{color};'
                f'border:2px solid {line or color}"></span>')
    return (f"{box(SEQUENCE_COLORS[0])}{box(SEQUENCE_COLORS[1])} private, "
            f"{box(SHARED_COLOR)} shared, {box('#ffffff', UNUSED_LINE)} unused slot, "
            f"{box(FREE_COLOR)} free")


def block_pool_traces(snapshot: PoolSnapshot, *, slot_level: bool | None = None,
                      columns: int | None = None, merge_runs: bool | None = None,
                      axes=("x", "y", "x2", "y2"), legend: bool = True) -> tuple[list, dict]:
    """Trace dicts and layout: block tables (logical -> physical) and the physical pool.

    Left: one row per sequence, one cell per logical block, labelled with its physical block.
    Right: the pool, ``columns`` blocks per row; ``slot_level`` draws every token slot (small
    pools), otherwise each block is one cell whose filled part is coloured and whose unused tail
    is outlined red. ``merge_runs`` (default: for long tables) merges consecutive blocks of the
    same kind into one cell, in the tables and (block level) in each pool row. Colours: a
    sequence's own colour for private blocks, purple for blocks referenced more than once, grey
    for free blocks. The layout uses autoranged axes, so it does not change with the state.
    """
    snap = snapshot
    p, nb = snap.block_tokens, snap.num_blocks
    slot_level = (nb * p <= 256) if slot_level is None else bool(slot_level)
    if columns is None:
        columns = min(nb, 8 if slot_level else 16)
    cols = v.count("columns", columns)
    fill = snap.block_fill()
    owners = snap.owners()
    names = [name for name, _, _ in snap.tables]
    if merge_runs is None:
        merge_runs = max((len(t) for _, t, _ in snap.tables), default=0) > 24

    def state(b):
        """(colour code, description) of physical block b."""
        ref = snap.refcounts[b]
        who = owners.get(b, [])
        if ref == 0:
            return _FREE, "free"
        if ref > 1 or len(who) != 1:
            return _SHARED, (f"shared by {', '.join(names[k] for k in who)} (count {ref})"
                             if who else f"held outside any table (count {ref})")
        return who[0] % len(SEQUENCE_COLORS), f"private to {names[who[0]]}"

    # left: block tables
    ty, tb, tl, tc, to, th, tt = [], [], [], [], [], [], []
    for k, (name, table, n) in enumerate(snap.tables):
        i = 0
        while i < len(table):
            shared = snap.refcounts[table[i]] > 1
            j = i
            if merge_runs:  # a run of same-kind, consecutive physical blocks
                while (j + 1 < len(table) and table[j + 1] == table[j] + 1
                       and (snap.refcounts[table[j + 1]] > 1) == shared):
                    j += 1
            ty.append(name)
            tb.append(i)
            tl.append(j - i + 1)
            tc.append(_SHARED if shared else k % len(SEQUENCE_COLORS))
            to.append(False)
            kind = f"shared, count {snap.refcounts[table[i]]}" if shared else "private"
            if j == i:
                th.append(f"{name}: logical {i} -> physical {table[i]} ({kind}), "
                          f"{min(p, n - i * p)}/{p} slots used")
                tt.append(str(table[i]) if not merge_runs else "")
            else:
                th.append(f"{name}: logical {i}-{j} -> physical {table[i]}-{table[j]} ({kind})")
                tt.append(f"{table[i]}-{table[j]}" if j - i >= 3 else "")
            i = j + 1
    traces = [_bars("block tables", ty, tb, tl, tc, to, th, tt, axes[:2])]

    # right: the physical pool
    gap = 1 if slot_level else 0.15
    width = p + gap if slot_level else 1 + gap
    py, pb, pl, pc, po, ph, pt = [], [], [], [], [], [], []

    def cell(row, x0, length, code, outlined, hover, text=""):
        py.append(row)
        pb.append(x0)
        pl.append(length)
        pc.append(code)
        po.append(outlined)
        ph.append(hover)
        pt.append(text)

    b = 0
    while b < nb:
        row, col = divmod(b, cols)
        code, desc = state(b)
        ref = snap.refcounts[b]
        used = fill.get(b, 0) if ref else 0
        x0 = col * width
        if slot_level:
            label = "" if ref == 0 else ("*" if code == _SHARED else names[owners[b][0]])
            for s in range(p):
                filled = ref > 0 and s < used
                cell(row, x0 + s, 1, code if (filled or ref == 0) else _UNUSED,
                     bool(ref) and not filled,
                     f"block {b} slot {s}: " + ((desc if filled else "unused") if ref
                                                       else "free"),
                     label if filled else "")
            b += 1
            continue
        # block level: extend a run of whole blocks in the same state along this row
        e = b
        if merge_runs and (used == p or ref == 0):
            while (e + 1 < nb and (e + 1) // cols == row and state(e + 1) == (code, desc)
                   and (snap.refcounts[e + 1] == 0 or fill.get(e + 1, 0) == p)):
                e += 1
        span = (e - b) * width + 1
        what = f"block {b}" if e == b else f"blocks {b}-{e}"
        if ref and used < p:
            frac = used / p
            cell(row, x0, frac, code, False, f"{what}: {desc}, {used}/{p} slots used")
            cell(row, x0 + frac, 1 - frac, _UNUSED, True, f"{what}: unused tail")
        else:
            cell(row, x0, span, code, False,
                 f"{what}: {desc}" + (f", {used}/{p} slots used" if ref else ""))
        b = e + 1
    traces.append(_bars("physical pool", py, pb, pl, pc, po, ph, pt, axes[2:]))
    if legend:
        traces += _legend_traces()

    return traces, block_pool_layout(axes)


def block_pool_layout(axes=("x", "y", "x2", "y2")) -> dict:
    """The (state-independent) layout of ``block_pool_traces``: tables left, pool right."""
    xa, ya, xb, yb = (a.replace("x", "xaxis").replace("y", "yaxis") for a in axes)
    return {
        "barmode": "overlay",
        # the cells' colour codes map to fixed colours through these (never redrawn)
        "coloraxis": {"colorscale": _COLORSCALE, "cmin": 0, "cmax": len(_PALETTE),
                      "showscale": False},
        "coloraxis2": {"colorscale": _LINESCALE, "cmin": 0, "cmax": 1, "showscale": False},
        xa: {"title": {"text": "logical block (position in the sequence)"}, "domain": [0, 0.4],
             "zeroline": False, "anchor": axes[1], "rangemode": "tozero"},
        ya: {"title": {"text": "block table of"}, "type": "category",
             "autorange": "reversed", "anchor": axes[0]},
        xb: {"title": {"text": "physical pool (hover a cell for its block id)"},
             "domain": [0.48, 1.0], "showticklabels": False, "showgrid": False,
             "zeroline": False, "anchor": axes[3]},
        yb: {"title": {"text": "pool row"}, "autorange": "reversed", "dtick": 1,
             "zeroline": False, "anchor": axes[2]},
        "legend": {"orientation": "h", "y": -0.22},
    }


def _caption(snap: PoolSnapshot) -> str:
    return (f"{snap.label + ': ' if snap.label else ''}{snap.references} table entries, "
            f"{snap.used_blocks} physical blocks = {snap.allocated_tokens} slots for "
            f"{snap.stored_tokens} written tokens")


def block_pool_figure(snapshot: PoolSnapshot, *, title: str | None = None, height: int = 380,
                      **kw):
    """One BlockManager state: block tables and the physical pool (8.3.1-8.3.2)."""
    snap = v.instance("snapshot", snapshot, PoolSnapshot)
    traces, layout = block_pool_traces(snap, **kw)
    plot_px = height - 60 - 110
    layout.update({"template": "plotly_white", "height": height,
                   "margin": {"t": 60, "r": 20, "b": 110},
                   "legend": {"orientation": "h", "yanchor": "top", "y": -50 / plot_px},
                   "title": {"text": title if title is not None else _caption(snap)}})
    return _go().Figure(data=traces, layout=layout)


def block_pool_steps_figure(snapshots, *, title: str = "", height: int = 420, **kw):
    """Successive BlockManager states with a slider over the steps (stored in the figure itself,
    so it works without a running kernel). Each step's title gives its counts."""
    snaps = [v.instance(f"snapshots[{i}]", s, PoolSnapshot)
             for i, s in enumerate(v.sequence("snapshots", snapshots))]
    per_step, layout = [], None
    for s in snaps:
        traces, lay = block_pool_traces(s, legend=False, **kw)
        per_step.append(traces)
        layout = layout or lay
    # fixed axes over all steps, so the frame does not jump while the slider moves
    names = []
    for s in snaps:
        names += [name for name, _, _ in s.tables if name not in names]
    longest = max((len(t) for s in snaps for _, t, _ in s.tables), default=1)
    layout["xaxis"].update({"range": [0, longest + 0.3], "rangemode": None})
    layout["yaxis"].update({"categoryorder": "array", "categoryarray": names,
                            "range": [len(names) - 0.5, -0.5], "autorange": False})
    n_per = len(per_step[0])
    data = []
    for k, traces in enumerate(per_step):
        for t in traces:
            t["visible"] = k == 0
            data.append(t)
    legend = _legend_traces()
    data += legend
    steps = []
    for k, s in enumerate(snaps):
        visible = [j // n_per == k for j in range(n_per * len(snaps))] + [True] * len(legend)
        steps.append({"method": "update", "label": str(k),
                      "args": [{"visible": visible},
                               {"title.text": f"{title}<br><sup>step {k}: {_caption(s)}</sup>"}]})
    # below the plot, from the top: axis titles, legend, slider, placed in pixels (paper
    # coordinates are fractions of the plot area's height)
    plot_px = height - 80
    layout.update({
        "template": "plotly_white", "height": height + 190,
        "margin": {"t": 80, "r": 20, "b": 190},
        "title": {"text": f"{title}<br><sup>step 0: {_caption(snaps[0])}</sup>"},
        "sliders": [{"active": 0, "steps": steps, "yanchor": "top", "y": -100 / plot_px,
                     "len": 1.0, "pad": {"t": 0}, "currentvalue": {"prefix": "step "}}],
        "legend": {"orientation": "h", "yanchor": "top", "y": -55 / plot_px},
    })
    return _go().Figure(data=data, layout=layout)


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
    nx, ny, nt, nh, nc = [], [], [], [], []
    for n in t.nodes:
        if n.parent is None:
            continue
        nx.append(n.depth)
        ny.append(ypos[n.id])
        ends = ", ".join(names[i] if names else f"input {i}" for i in n.ends)
        nt.append(f"{n.depth:,}" + (f" ({ends})" if ends else ""))
        nh.append(f"{n.depth:,} tokens from the root; {n.passes} input(s) pass here"
                  + (f"; ends: {ends}" if ends else ""))
        nc.append(SHARED_COLOR if n.passes > 1 else SEQUENCE_COLORS[0])
    traces = [
        {"type": "scatter", "x": ex, "y": ey, "mode": "lines", "name": "edge",
         "line": {"color": "#8c8c8c", "width": 2}, "hoverinfo": "skip", "showlegend": False},
        {"type": "scatter", "x": lx, "y": ly, "mode": "text", "text": lt,
         "textposition": "top center", "name": "new tokens on the edge", "hoverinfo": "skip",
         "showlegend": False, "textfont": {"size": 11}},
        {"type": "scatter", "x": nx, "y": ny, "mode": "markers+text", "text": nt,
         "textposition": "middle right", "hovertext": nh,
         "hovertemplate": "%{hovertext}<extra></extra>", "name": "node (shared if purple)",
         "marker": {"size": 11, "color": nc}, "showlegend": False, "textfont": {"size": 11}},
        {"type": "scatter", "x": [0], "y": [ypos[root]], "mode": "markers+text",
         "text": ["root"], "textposition": "middle left", "name": "root",
         "marker": {"size": 11, "color": "#333333"}, "showlegend": False, "hoverinfo": "skip"},
    ]
    depth = max(n.depth for n in t.nodes)
    layout = {"template": "plotly_white", "height": 120 + 55 * max(1, counter[0]),
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
        color = SEQUENCE_COLORS[k % len(SEQUENCE_COLORS)]
        used = list(r["used_blocks"])
        # only the rounds where the count changes (drawn as steps), plus the last one
        keep = [i for i in range(len(used)) if i == 0 or i == len(used) - 1
                or used[i] != used[i - 1]]
        traces.append({"type": "scatter", "x": keep, "y": [used[i] for i in keep],
                       "mode": "lines", "line": {"color": color, "shape": "hv"},
                       "name": f"{r['label']}: blocks in use"})
        traces.append({"type": "scatter", "x": [0, len(used) - 1],
                       "y": [r["num_blocks"]] * 2, "mode": "lines",
                       "name": f"{r['label']}: pool size ({r['num_blocks']} blocks)",
                       "line": {"color": color, "dash": "dot"}})
        pre = list(r.get("preempt_rounds", ()))
        traces.append({"type": "scatter", "x": pre, "y": [used[i] for i in pre],
                       "mode": "markers", "name": f"{r['label']}: preemption",
                       "marker": {"symbol": "x", "size": 12, "color": color}})
    layout = {"template": "plotly_white", "height": 400, "title": {"text": title},
              "xaxis": {"title": {"text": "decode round"}},
              "yaxis": {"title": {"text": "KV blocks in use (16 tokens each)"},
                        "rangemode": "tozero"},
              "legend": {"orientation": "h", "y": -0.25}}
    return _go().Figure(data=traces, layout=layout)


# --- Figure 8-22: what the same cache space saves ----------------------------------------------

def retention_bars_traces(options, *, max_segments: int = 8, axes=("x", "y")) -> list[dict]:
    """Two traces: stacked bar segments (one per kept prefix, each on top of the previous) and
    the totals above them, for the expected saving of the prefixes kept in one cache space.

    ``options``: list of (label, count, prefix name, value_ms of one prefix); more than
    ``max_segments`` prefixes are drawn as one merged segment.
    """
    opts = [(str(label), int(count), str(name), float(value))
            for label, count, name, value in options]
    palette = [SEQUENCE_COLORS[0], SEQUENCE_COLORS[1]]
    xs, ys, bases, texts, colors = [], [], [], [], []
    for k, (label, count, name, value) in enumerate(opts):
        segments = [(count, count * value)] if count > max_segments else [(1, value)] * count
        start = 0.0
        for n, height in segments:
            xs.append(label)
            ys.append(height)
            bases.append(start)
            texts.append(f"{n} x {name}: {height:.1f} ms" if n > 1 else f"{name}: {height:.1f} ms")
            colors.append(palette[k % len(palette)])
            start += height
    totals = [count * value for _, count, _, value in opts]
    return [
        {"type": "bar", "x": xs, "y": ys, "base": bases, "text": texts, "textposition": "inside",
         "name": "kept prefixes", "marker": {"color": colors,
                                             "line": {"color": "#ffffff", "width": 1.5}},
         "hovertemplate": "%{text}<extra></extra>", "showlegend": False, "width": 0.6,
         "xaxis": axes[0], "yaxis": axes[1]},
        {"type": "scatter", "x": [label for label, *_ in opts], "y": totals, "mode": "text",
         "text": [f"total {t:.1f} ms" for t in totals], "textposition": "top center",
         "showlegend": False, "hoverinfo": "skip", "xaxis": axes[0], "yaxis": axes[1]},
    ]


def retention_bars_figure(options, *, title: str = ""):
    """Figure 8-22: one large prefix vs several small ones in the same cache space (8.3.4)."""
    opts = list(v.sequence("options", options))
    layout = {"template": "plotly_white", "height": 400, "title": {"text": title},
              "barmode": "overlay",
              "yaxis": {"title": {"text": "expected net saving per request (ms)"},
                        "rangemode": "tozero"},
              "xaxis": {"title": {"text": "what the cache space keeps"}}}
    return _go().Figure(data=retention_bars_traces(opts), layout=layout)
