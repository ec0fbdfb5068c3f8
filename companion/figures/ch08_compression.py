"""Figures of 8.4: byte layouts of grouped formats (Figure 8-23 and Q2_K), what fits in memory
after loading quantised weights, the H100 BF16/FP8 interval fits and their crossover.

Builders take results computed by ``companion.calc`` and return plotly figures; the
``*_traces`` helpers return plain trace/layout dicts shared with the explorers in
``companion.explorers.ch08_compression``. Deterministic: fixed colours, no timestamps.
"""

from __future__ import annotations

from companion import validate as v
from companion.explorers.common import plotly_go as _go

__all__ = ["byte_layout_traces", "byte_layout_figure", "bits_per_value_figure",
           "memory_stack_traces", "memory_stack_layout", "memory_stack_figure", "interval_fit_figure",
           "LAYOUT_COLORS"]

LAYOUT_COLORS = {"codes": "#0072b2", "metadata": "#e69f00", "plain": "#8c8c8c",
                 "weights": "#4c72b0", "kv": "#55a868", "reserve": "#b0b0b0",
                 "headroom": "#b5dcb9", "over": "#c44e52", "header": "#7f7f7f"}


# --- Figure 8-23: one group as bytes -----------------------------------------------------------

def byte_layout_traces(rows) -> tuple[list, dict]:
    """One bar cell per stored byte, rows top to bottom (Figure 8-23).

    ``rows``: list of dicts with ``label``, ``metadata_bytes`` (the scale, stored first as in
    GGML's block structs), ``code_bytes`` and optionally ``hex`` (the bytes' values, for the
    hover and labels) and ``plain`` (True: the values themselves, no codes/scale split).
    """
    rows = list(v.sequence("rows", rows))
    ys, base, colors, hover, text = [], [], [], [], []
    for r in rows:
        meta = int(round(r.get("metadata_bytes", 0)))
        code = int(round(r["code_bytes"]))
        hexes = list(r.get("hex", ())) or [""] * (meta + code)
        for i in range(meta + code):
            kind = ("value" if r.get("plain") else "scale" if i < meta else "code")
            ys.append(r["label"])
            base.append(i)
            colors.append(LAYOUT_COLORS["plain"] if r.get("plain") else
                          LAYOUT_COLORS["metadata"] if i < meta else LAYOUT_COLORS["codes"])
            h = hexes[i] if i < len(hexes) else ""
            hover.append(f"{r['label']}: byte {i} ({kind})" + (f" = 0x{h}" if h else ""))
            text.append(h)
    traces = [{"type": "bar", "orientation": "h", "y": ys, "base": base, "x": [1] * len(ys),
               "width": 0.7, "marker": {"color": colors, "line": {"color": "#ffffff",
                                                                  "width": 1}},
               "text": text, "textposition": "inside", "insidetextanchor": "middle",
               "textfont": {"size": 9, "color": "#ffffff"}, "textangle": -90,
               "hovertext": hover, "hovertemplate": "%{hovertext}<extra></extra>",
               "showlegend": False, "name": "bytes"}]
    for name, color in (("scale (2-byte half float)", LAYOUT_COLORS["metadata"]),
                        ("codes", LAYOUT_COLORS["codes"]),
                        ("BF16 values (no scale)", LAYOUT_COLORS["plain"])):
        traces.append({"type": "scatter", "x": [None], "y": [None], "mode": "markers",
                       "name": name, "marker": {"symbol": "square", "size": 12,
                                                "color": color}, "hoverinfo": "skip"})
    totals = [int(round(r.get("metadata_bytes", 0) + r["code_bytes"])) for r in rows]
    traces.append({"type": "scatter", "x": [t + 0.5 for t in totals],
                   "y": [r["label"] for r in rows], "mode": "text",
                   "text": [f"{t} bytes" for t in totals], "textposition": "middle right",
                   "showlegend": False, "hoverinfo": "skip"})
    layout = {"barmode": "overlay",
              "xaxis": {"title": {"text": "byte offset within the group"},
                        "range": [-0.5, max(totals) + 9], "dtick": 4},
              "yaxis": {"autorange": "reversed", "type": "category",
                        "title": {"text": "format (one group)"}},
              "legend": {"orientation": "h", "y": -0.3}}
    return traces, layout


def byte_layout_figure(rows, *, title: str = ""):
    """Figure 8-23: the same 32 values stored as BF16, q8_0 and q4_0, byte by byte."""
    traces, layout = byte_layout_traces(rows)
    layout.update({"template": "plotly_white", "height": 120 + 60 * len(list(rows)),
                   "title": {"text": title}, "margin": {"t": 60, "r": 20}})
    return _go().Figure(data=traces, layout=layout)


def bits_per_value_figure(layouts, *, title: str = ""):
    """Stored bits per value split into code bits and metadata bits, one bar per format (8.4.1).

    ``layouts``: mapping format name -> ``calc.QuantLayout``.
    """
    items = list(dict(layouts).items())
    names = [n for n, _ in items]
    code = [lay.code_bytes * 8 / lay.group_values for _, lay in items]
    meta = [lay.metadata_bytes * 8 / lay.group_values for _, lay in items]
    traces = [
        {"type": "bar", "x": names, "y": code, "name": "code bits per value",
         "marker": {"color": LAYOUT_COLORS["codes"]},
         "text": [f"{c:g}" for c in code], "textposition": "inside"},
        {"type": "bar", "x": names, "y": meta, "name": "metadata bits per value",
         "marker": {"color": LAYOUT_COLORS["metadata"]},
         "text": [f"{m:.3g}" if m else "" for m in meta], "textposition": "outside"},
        {"type": "scatter", "x": names, "y": [c + m for c, m in zip(code, meta)],
         "mode": "text", "showlegend": False, "hoverinfo": "skip",
         "text": [f"{lay.group_bytes:g} B / {lay.group_values} values<br>"
                  f"{lay.bits_per_value:g} bits, metadata {100 * lay.metadata_fraction:.1f}%"
                  for _, lay in items], "textposition": "top center"},
    ]
    layout = {"template": "plotly_white", "height": 420, "barmode": "stack",
              "title": {"text": title},
              "yaxis": {"title": {"text": "stored bits per value"},
                        "range": [0, 1.3 * max(c + m for c, m in zip(code, meta))]},
              "xaxis": {"title": {"text": "format"}},
              "legend": {"orientation": "h", "y": -0.2}}
    return _go().Figure(data=traces, layout=layout)


# --- 8.4.1: what fits after loading quantised weights ------------------------------------------

def memory_stack_traces(rows, capacity: float, *, unit_label: str = "GiB") -> tuple[list, dict]:
    """Stacked horizontal bars of memory parts against a capacity mark (8.4.1).

    ``rows``: list of (label, [(part name, size, colour key), ...]) in display units; the parts
    are stacked left to right and labelled inside; what is left of ``capacity`` is drawn as
    headroom, an overflow in red beyond the capacity. Two traces whatever the rows hold (the
    segments, the capacity mark), so an explorer updates them in place.
    """
    rows = list(v.sequence("rows", rows))
    cap = v.positive("capacity", capacity)
    ys, xs, base, colors, texts, hover = [], [], [], [], [], []

    def segment(label, start, size, name, key):
        ys.append(label)
        xs.append(size)
        base.append(start)
        colors.append(LAYOUT_COLORS[key])
        texts.append(name)
        hover.append(f"{label}: {name}, {size:,.2f} {unit_label}")

    for label, parts in rows:
        start = 0.0
        for name, size, key in parts:
            segment(label, start, size, name, key)
            start += size
        if start <= cap:
            segment(label, start, cap - start, "headroom", "headroom")
        else:
            segment(label, cap, start - cap, "over capacity", "over")
    labels = [label for label, _ in rows]
    traces = [
        {"type": "bar", "orientation": "h", "name": "memory", "y": ys, "x": xs, "base": base,
         "text": texts, "textposition": "inside", "insidetextanchor": "middle",
         "hovertext": hover, "hovertemplate": "%{hovertext}<extra></extra>",
         "marker": {"color": colors, "line": {"color": "#ffffff", "width": 1}},
         "showlegend": False},
        # a tall tick at the capacity on every row
        {"type": "scatter", "x": [cap] * len(labels), "y": labels, "mode": "markers",
         "name": f"capacity ({cap:,.2f} {unit_label})",
         "marker": {"symbol": "line-ns", "size": 44, "line": {"color": "#333333", "width": 3}}},
    ]
    return traces, memory_stack_layout(unit_label)


def memory_stack_layout(unit_label: str = "GiB") -> dict:
    """The (data-independent) layout of ``memory_stack_traces``."""
    return {"barmode": "overlay", "uniformtext": {"minsize": 9, "mode": "hide"},
            "xaxis": {"title": {"text": f"memory ({unit_label})"}},
            "yaxis": {"autorange": "reversed", "type": "category",
                      "title": {"text": "what is loaded"}},
            "legend": {"orientation": "h", "y": -0.3}}


def memory_stack_figure(rows, capacity: float, *, title: str = "", unit_label: str = "GiB"):
    """Memory stacked part by part against the capacity (8.4.1's M2 Max example)."""
    traces, layout = memory_stack_traces(rows, capacity, unit_label=unit_label)
    layout.update({"template": "plotly_white", "height": 200 + 50 * len(list(rows)),
                   "title": {"text": title}, "margin": {"t": 60, "r": 20}})
    return _go().Figure(data=traces, layout=layout)


# --- 8.4.2: two linear fits of the output interval ---------------------------------------------

def interval_fit_figure(contexts, fits, *, crossover_tokens=None, marks=(), title: str = ""):
    """Output interval against context length for linear fits a + b L (8.4.2).

    ``contexts``: x values (tokens); ``fits``: mapping name -> intervals in ms at ``contexts``;
    ``crossover_tokens``: where the fits meet (a vertical line); ``marks``: (name, L, ms) points.
    """
    xs = [float(x) for x in v.sequence("contexts", contexts)]
    colors = ["#0072b2", "#d55e00", "#009e73", "#cc79a7"]
    traces = []
    for k, (name, ys) in enumerate(dict(fits).items()):
        traces.append({"type": "scatter", "x": xs, "y": list(ys), "mode": "lines",
                       "name": name, "line": {"color": colors[k % len(colors)]}})
    marks = list(marks)
    if marks:
        traces.append({"type": "scatter", "x": [m[1] for m in marks], "y": [m[2] for m in marks],
                       "mode": "markers+text", "name": "the chapter's readings",
                       "text": [f"{m[0]}: {m[2]:.2f} ms" for m in marks],
                       "textposition": "top left", "marker": {"size": 9, "color": "#333333"}})
    layout = {"template": "plotly_white", "height": 420, "title": {"text": title},
              "xaxis": {"title": {"text": "context length L (tokens)"}},
              "yaxis": {"title": {"text": "output interval (ms)"}},
              "legend": {"orientation": "h", "y": -0.2}}
    if crossover_tokens is not None:
        layout["shapes"] = [{"type": "line", "x0": crossover_tokens, "x1": crossover_tokens,
                             "yref": "paper", "y0": 0, "y1": 1,
                             "line": {"color": "#8c8c8c", "dash": "dot"}}]
        layout["annotations"] = [{"x": crossover_tokens, "yref": "paper", "y": 1.0,
                                  "text": f"crossover {crossover_tokens:,.0f} tokens",
                                  "showarrow": False, "yanchor": "bottom"}]
    return _go().Figure(data=traces, layout=layout)
