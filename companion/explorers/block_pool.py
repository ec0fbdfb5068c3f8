"""The BlockManager drawing of 8.3.1-8.3.2 (notebook 08_3_kv_cache and the panels there):
block tables on the left, the physical pool on the right.

``block_pool_figure``/``block_pool_steps_figure`` (``block_pool_traces``, ``block_pool_layout``)
draw a ``companion.sim.kv_scenarios.PoolSnapshot``: every cell of a block is a bar (a rectangle
in data coordinates with its own colour and hover text), so the drawing scales with the figure.
Deterministic: fixed colours, no timestamps, no randomness.
"""

from __future__ import annotations

from companion import theme, validate as v
from companion.explorers.axes import whole_ticks
from companion.explorers.common import plotly_go as _go
from companion.serves import serves
from companion.sim.kv_scenarios import PoolSnapshot

__all__ = [
    "block_pool_traces", "block_pool_legend_html", "block_pool_layout", "block_pool_figure",
    "block_pool_steps_figure", "table_ticks", "SHARED_COLOR",
]


# one colour per sequence (colour-blind safe), then the states of a physical block
SHARED_COLOR = theme.PURPLE        # a block referenced by more than one block table (or a cache)
FREE_COLOR = theme.FAINT_GREY          # a block in the free pool
UNUSED_LINE = theme.RED         # outline of an allocated but unused slot (tail waste)
CELL_LINE = theme.WHITE


# --- the drawing: block tables (left) and the physical pool (right) ----------------------------

# cell colours as numbers on a discrete colour scale (fast to update in a live figure):
# 0..7 a sequence's private block, 8 shared, 9 free, 10 unused slot (white)
_SHARED, _FREE, _UNUSED = len(theme.REQUEST_PALETTE), len(theme.REQUEST_PALETTE) + 1, len(theme.REQUEST_PALETTE) + 2
_PALETTE = list(theme.REQUEST_PALETTE) + [SHARED_COLOR, FREE_COLOR, theme.WHITE]
_COLORSCALE = [c for k, col in enumerate(_PALETTE)
               for c in ([k / len(_PALETTE), col], [(k + 1) / len(_PALETTE), col])]
_LINESCALE = [[0, CELL_LINE], [0.5, CELL_LINE], [0.5, UNUSED_LINE], [1, UNUSED_LINE]]


def _bars(name, y, base, length, code, outlined, hover, text, axes, text_colors=None):
    trace = {"type": "bar", "orientation": "h", "name": name, "y": y, "base": base,
             "x": length, "width": 0.82,
             "marker": {"color": [c + 0.5 for c in code], "coloraxis": "coloraxis",
                        "line": {"color": [0.75 if o else 0.25 for o in outlined],
                                 "coloraxis": "coloraxis2", "width": 1.5}},
             "hovertext": hover, "hovertemplate": "%{hovertext}<extra></extra>",
             "xaxis": axes[0], "yaxis": axes[1], "showlegend": False}
    if any(text):
        trace.update({"text": text, "textposition": "inside", "insidetextanchor": "middle",
                      "textfont": {"size": 10, "color": text_colors
                                   or [theme.text_on(_PALETTE[c]) for c in code]}})
    return trace


ID_DARK = theme.DARK_GREY             # a block id printed on a free block or an unused slot
ID_TEXT = theme.INK             # a slot-level pool's block ids (over slots of any colour)


def _block_id_trace(xs, ys, texts, axes) -> dict:
    """The block ids of a slot-level pool, one at the middle of each block (a slot cell is too
    narrow to hold one); empty for a block-level pool, whose cells carry their ids."""
    return {"type": "scatter", "mode": "text", "name": "block ids", "x": xs, "y": ys,
            "text": texts, "textposition": "middle center",
            # dark, with a light shadow: legible on any cell colour and on the gaps between slots
            "textfont": {"size": 11, "color": ID_TEXT, "shadow": "auto"}, "hoverinfo": "skip",
            "showlegend": False, "xaxis": axes[0], "yaxis": axes[1]}


def _legend_traces() -> list[dict]:
    items = [("private block (colour of its sequence)", theme.REQUEST_PALETTE[0], None),
             ("shared block (count > 1)", SHARED_COLOR, None),
             ("allocated, unused slot (tail waste)", theme.WHITE, UNUSED_LINE),
             ("free block", FREE_COLOR, None)]
    return [{"type": "scatter", "x": [None], "y": [None], "mode": "markers", "name": name,
             "marker": {"symbol": "square", "size": 12, "color": color,
                        "line": {"color": line or color, "width": 2}},
             "hoverinfo": "skip", "showlegend": True,
             "meta": {"legend_key": True}}     # a colour key of the bars, drawing nothing
            for name, color, line in items]


def block_pool_legend_html() -> str:
    """The colour key of the block drawings as HTML (for an explorer's readout)."""
    def box(color, line=None):
        return (f'<span style="display:inline-block;width:10px;height:10px;background:{color};'
                f'border:2px solid {line or color}"></span>')
    return (f"{box(theme.REQUEST_PALETTE[0])}{box(theme.REQUEST_PALETTE[1])} private, "
            f"{box(SHARED_COLOR)} shared, {box(theme.WHITE, UNUSED_LINE)} unused slot, "
            f"{box(FREE_COLOR)} free")


def block_pool_traces(snapshot: PoolSnapshot, *, slot_level: bool | None = None,
                      columns: int | None = None, merge_runs: bool | None = None,
                      axes=("x", "y", "x2", "y2"), legend: bool = True) -> tuple[list, dict]:
    """Trace dicts and layout: block tables (logical -> physical) and the physical pool.

    Left: one row per sequence, one cell per logical block, labelled with its physical block
    (the x ticks number the logical blocks at their middles).
    Right: the pool, ``columns`` blocks per row, each labelled with its block id; ``slot_level``
    draws every token slot (small pools), otherwise each block is one cell whose filled part is
    coloured and whose unused tail is outlined red. ``merge_runs`` (default: for long tables)
    merges consecutive blocks of the same kind into one cell, in the tables and (block level) in
    each pool row. Colours: a sequence's own colour for private blocks, purple for blocks
    referenced more than once, grey for free blocks. The layout uses autoranged axes; only the
    table axis' ticks (``table_ticks``) follow the state.
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
        return who[0] % len(theme.REQUEST_PALETTE), f"private to {names[who[0]]}"

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
            tc.append(_SHARED if shared else k % len(theme.REQUEST_PALETTE))
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
    py, pb, pl, pc, po, ph, pt, ptc = [], [], [], [], [], [], [], []
    ix, iy, it = [], [], []               # slot level: the block ids, one per block

    def cell(row, x0, length, code, outlined, hover, text="", text_color=None):
        py.append(row)
        pb.append(x0)
        pl.append(length)
        pc.append(code)
        po.append(outlined)
        ph.append(hover)
        pt.append(text)
        ptc.append(text_color or theme.text_on(_PALETTE[code]))

    b = 0
    while b < nb:
        row, col = divmod(b, cols)
        code, desc = state(b)
        ref = snap.refcounts[b]
        used = fill.get(b, 0) if ref else 0
        x0 = col * width
        if slot_level:
            for s in range(p):
                filled = ref > 0 and s < used
                cell(row, x0 + s, 1, code if (filled or ref == 0) else _UNUSED,
                     bool(ref) and not filled,
                     f"block {b} slot {s}: " + ((desc if filled else "unused") if ref
                                                       else "free"))
            # its id across the block's middle
            ix.append(x0 + p / 2)
            iy.append(row)
            it.append(str(b))
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
        ids = str(b) if e == b else f"{b}-{e}"     # on the cell (plotly shrinks it to fit)
        if ref and used < p:
            frac = used / p
            on_filled = 2 * used > p                   # the id on the wider part
            cell(row, x0, frac, code, False, f"{what}: {desc}, {used}/{p} slots used",
                 ids if on_filled else "")
            cell(row, x0 + frac, 1 - frac, _UNUSED, True, f"{what}: unused tail",
                 "" if on_filled else ids, ID_DARK)
        else:
            cell(row, x0, span, code, False,
                 f"{what}: {desc}" + (f", {used}/{p} slots used" if ref else ""),
                 ids, theme.text_on(_PALETTE[code]) if ref else ID_DARK)
        b = e + 1
    traces.append(_bars("physical pool", py, pb, pl, pc, po, ph, pt, axes[2:], ptc))
    traces.append(_block_id_trace(ix, iy, it, axes[2:]))
    if legend:
        traces += _legend_traces()

    layout = block_pool_layout(axes)
    layout[axes[0].replace("x", "xaxis")].update(table_ticks(snap))
    return traces, layout


def table_ticks(snapshot_or_blocks) -> dict:
    """Ticks of the block-table axis for a snapshot's longest table (or a number of logical
    blocks): whole logical blocks, each number at its block's middle."""
    longest = (snapshot_or_blocks if isinstance(snapshot_or_blocks, int)
               else max((len(t) for _, t, _ in snapshot_or_blocks.tables), default=1))
    ks = whole_ticks(0, max(longest - 1, 0))
    return {"tickmode": "array", "tickvals": [k + 0.5 for k in ks],
            "ticktext": [str(k) for k in ks]}


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
        xb: {"title": {"text": "physical pool (block ids; hover a cell for its use)"},
             "domain": [0.48, 1.0], "showticklabels": False, "showgrid": False,
             "zeroline": False, "anchor": axes[3]},
        yb: {"title": {"text": "pool row"}, "autorange": "reversed", "dtick": 1,
             "zeroline": False, "anchor": axes[2]},
        "legend": {"orientation": "h", "y": -0.22},
    }


def _counts(snap: PoolSnapshot) -> str:
    return (f"{snap.references} table entries, {snap.used_blocks} physical blocks = "
            f"{snap.allocated_tokens} slots for {snap.stored_tokens} written tokens")


def _caption(snap: PoolSnapshot) -> str:
    return f"{snap.label + ': ' if snap.label else ''}{_counts(snap)}"


def _step_title(title: str, k: int, snap: PoolSnapshot) -> str:
    """A step's title: what happened and the counts on lines of their own (one line of both
    runs past a narrow figure's edge)."""
    what = f"step {k}: {snap.label}" if snap.label else f"step {k}"
    return f"{title}<br><sup>{what}</sup><br><sup>{_counts(snap)}</sup>"


@serves("8.3.1", "8.3.2")
def block_pool_figure(snapshot: PoolSnapshot, *, title: str | None = None, height: int = 380,
                      **kw):
    """One BlockManager state: block tables and the physical pool (8.3.1-8.3.2)."""
    snap = v.instance("snapshot", snapshot, PoolSnapshot)
    traces, layout = block_pool_traces(snap, **kw)
    plot_px = height - 60 - 110
    layout.update({"template": theme.TEMPLATE, "height": height,
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
    layout["xaxis"].update({"range": [0, longest + 0.3], "rangemode": None,
                            **table_ticks(longest)})
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
                               {"title.text": _step_title(title, k, s)}]})
    # below the plot, from the top: axis titles, legend, slider, placed in pixels (paper
    # coordinates are fractions of the plot area's height)
    plot_px = height - 80
    layout.update({
        "template": theme.TEMPLATE, "height": height + 210,
        "margin": {"t": 100, "r": 20, "b": 190},
        "title": {"text": _step_title(title, 0, snaps[0])},
        "sliders": [{"active": 0, "steps": steps, "yanchor": "top", "y": -100 / plot_px,
                     "len": 1.0, "pad": {"t": 0}, "currentvalue": {"prefix": "step "}}],
        "legend": {"orientation": "h", "yanchor": "top", "y": -55 / plot_px},
    })
    return _go().Figure(data=data, layout=layout)
