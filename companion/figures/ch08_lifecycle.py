"""Figures of 8.1: the request timeline (Figure 8-2), the memory budget and the KV capacity.

Builders take results computed by ``companion.calc`` and return plotly figures; the
``*_traces`` helpers return plain trace/layout dicts so that the explorers in
``companion.explorers.ch08_lifecycle`` draw exactly the same picture. Deterministic: fixed colours,
no timestamps.
"""

from __future__ import annotations

import numpy as np

from companion import units
from companion.explorers.common import plotly_go as _go

__all__ = ["request_timeline_figure", "memory_budget_figure", "kv_capacity_figure"]

# one fixed palette for Chapter 8's request phases (shared with ch08_batching)
PHASE_COLORS = {
    "queue": "#b0b0b0", "prefill": "#e69f00", "decode": "#56b4e9", "stall": "#d55e00",
    "token": "#0b3d91", "deadline": "#c00000",
}
MEMORY_COLORS = {
    "weights": "#4c72b0", "kv_used": "#55a868", "kv_free": "#b5dcb9", "rest": "#dd8452",
    "over": "#c44e52",
}


# --- Figure 8-2: one request's timeline --------------------------------------------------------

def timeline_traces(scenarios, deadline_s: float | None = None) -> tuple[list, dict]:
    """Trace dicts and layout of Figure 8-2 for one or more request timelines.

    Each scenario is a dict: ``label``, ``queue_s``, ``prefill_s``, ``token_times_s`` (emission
    times after arrival, from ``calc.token_emission_times``) and optionally ``stalls``: a list
    of (start_s, duration_s) output intervals stretched by an inserted prefill. Rows are
    numbered top to bottom (labels on the axis); the deadline is a trace, so the layout depends
    only on the labels.
    """
    scenarios = list(scenarios)
    if not scenarios:
        raise ValueError("scenarios: needs at least one timeline")
    labels = [str(s["label"]) for s in scenarios]
    rows = list(range(len(scenarios)))
    queue = [float(s["queue_s"]) for s in scenarios]
    prefill = [float(s["prefill_s"]) for s in scenarios]
    first = [float(s["token_times_s"][0]) for s in scenarios]
    last = [float(s["token_times_s"][-1]) for s in scenarios]

    def hbar(name, y, base, width, color, hover):
        return {"type": "bar", "orientation": "h", "name": name, "y": y, "base": base,
                "x": width, "marker": {"color": color}, "hovertemplate": hover, "width": 0.5}

    stall_y, stall_base, stall_x = [], [], []
    for row, s in zip(rows, scenarios):
        for start, duration in s.get("stalls", ()):
            stall_y.append(row)
            stall_base.append(float(start))
            stall_x.append(float(duration))
    traces = [
        hbar("queue", rows, [0.0] * len(rows), queue, PHASE_COLORS["queue"],
             "queue %{x:.3f} s<extra></extra>"),
        hbar("prefill (first token at its end)", rows, queue, prefill, PHASE_COLORS["prefill"],
             "prefill %{x:.3f} s<extra></extra>"),
        hbar("decode: G - 1 output intervals", rows, first,
             [b - a for a, b in zip(first, last)], PHASE_COLORS["decode"],
             "decode %{x:.3f} s<extra></extra>"),
        hbar("interval stretched by an inserted prefill", stall_y, stall_base, stall_x,
             PHASE_COLORS["stall"], "stall %{x:.3f} s<extra></extra>"),
    ]
    tick_x = np.concatenate([np.asarray(s["token_times_s"], dtype=float) for s in scenarios])
    tick_y = np.concatenate([np.full(len(s["token_times_s"]), float(row))
                             for row, s in zip(rows, scenarios)])
    traces.append({"type": "scatter", "mode": "markers", "name": "token returned",
                   "x": tick_x, "y": tick_y,
                   "marker": {"symbol": "line-ns-open", "size": 14,
                              "color": PHASE_COLORS["token"], "line": {"width": 1}},
                   "hovertemplate": "token at %{x:.4f} s<extra></extra>"})
    traces.append({"type": "scatter", "mode": "text", "name": "request time", "x": last,
                   "y": rows, "text": [f"  {t:.2f} s" for t in last],
                   "textposition": "middle right", "showlegend": False, "hoverinfo": "skip"})
    edge = [len(rows) - 0.5, -0.5]      # bottom to top (the y axis is reversed): label on top
    deadline = [] if deadline_s is None else [deadline_s, deadline_s]
    traces.append({"type": "scatter", "mode": "lines+text", "name": "deadline",
                   "x": deadline, "y": edge if deadline else [],
                   "text": ["", f"deadline {deadline_s:g} s"] if deadline else [],
                   "textposition": "top center",
                   "line": {"color": PHASE_COLORS["deadline"], "dash": "dash"},
                   "textfont": {"color": PHASE_COLORS["deadline"]}, "hoverinfo": "skip"})
    return traces, timeline_layout(labels)


def timeline_layout(labels) -> dict:
    """Layout of Figure 8-2: one numbered row per timeline, labelled on the y axis."""
    labels = [str(x) for x in labels]
    return {
        "barmode": "overlay",
        "xaxis": {"title": {"text": "time since arrival (s)"}, "rangemode": "tozero"},
        "yaxis": {"tickvals": list(range(len(labels))), "ticktext": labels,
                  "autorange": "reversed", "zeroline": False},
        "legend": {"orientation": "h", "y": -0.3},
        "height": 220 + 70 * len(labels),
    }


def request_timeline_figure(scenarios, deadline_s: float | None = None,
                            title: str = "Figure 8-2: one request's timeline (8.1.1)"):
    """Figure 8-2 as a plotly Figure: queue, prefill, output intervals, token ticks, deadline."""
    traces, layout = timeline_traces(scenarios, deadline_s)
    layout = dict(layout, template="plotly_white", title={"text": title})
    return _go().Figure(data=traces, layout=layout)


# --- 8.1.2: the memory budget M_w + M_KV + M_a + M_u <= C -------------------------------------

def budget_traces(budgets, kv_in_use_bytes=None, *, xaxis: str = "x", yaxis: str = "y",
                  unit: str = "GiB") -> tuple[list, dict]:
    """Stacked horizontal bars of memory budgets (``calc.memory_budget`` results), in ``unit``.

    ``budgets``: a list of (label, MemoryBudget). ``kv_in_use_bytes`` (one per budget, or None)
    splits the KV pool into what the admitted requests reserve and what stays free. The
    remainder C - M_w - M_KV - M_a - M_u is drawn as "activations, graph buffers, workspace"
    when positive, and as an overflow bar when the parts exceed C.
    """
    budgets = list(budgets)
    if not budgets:
        raise ValueError("budgets: needs at least one (label, MemoryBudget)")
    scale = units.BYTE_UNITS[unit]
    labels = [str(label) for label, _ in budgets]
    parts = [b for _, b in budgets]
    in_use = (list(kv_in_use_bytes) if kv_in_use_bytes is not None
              else [b.kv_pool_bytes for b in parts])
    free = [b.kv_pool_bytes - u for b, u in zip(parts, in_use)]
    named = [b.activation_bytes + b.other_bytes for b in parts]
    rest = [max(b.slack_bytes, 0.0) for b in parts]
    over = [max(-b.slack_bytes, 0.0) for b in parts]

    def bar(name, values, color):
        return {"type": "bar", "orientation": "h", "name": name, "y": labels,
                "x": [x / scale for x in values], "marker": {"color": color},
                "xaxis": xaxis, "yaxis": yaxis,
                "hovertemplate": f"{name}: %{{x:.2f}} {unit}<extra></extra>"}

    traces = [
        bar("weights M_w", [b.weight_bytes for b in parts], MEMORY_COLORS["weights"]),
        bar("KV reserved by admitted requests", in_use, MEMORY_COLORS["kv_used"]),
        bar("KV pool left free", free, MEMORY_COLORS["kv_free"]),
        bar("activations + graph buffers (M_a + M_u, listed)", named, "#937860"),
        bar("left for activations, graph buffers, workspace", rest, MEMORY_COLORS["rest"]),
        bar("over capacity", over, MEMORY_COLORS["over"]),
    ]
    capacity = [b.capacity_bytes / scale for b in parts]
    traces.append({"type": "scatter", "mode": "markers", "name": "capacity C",
                   "x": capacity, "y": labels, "xaxis": xaxis, "yaxis": yaxis,
                   "marker": {"symbol": "line-ns", "size": 34, "color": "black",
                              "line": {"width": 3}},
                   "hovertemplate": f"C = %{{x:.2f}} {unit}<extra></extra>"})
    layout = {"barmode": "stack", "legend": {"orientation": "h", "y": -0.3}}
    return traces, layout


def memory_budget_figure(budgets, kv_in_use_bytes=None, *, unit: str = "GiB",
                         title: str = "Memory budget of the instance (8.1.2)"):
    """The 8.1.2 budget as stacked bars: weights, KV (reserved / free), the rest, capacity C."""
    traces, layout = budget_traces(budgets, kv_in_use_bytes, unit=unit)
    layout.update(template="plotly_white", title={"text": title}, height=320,
                  xaxis={"title": {"text": f"memory ({unit})"}},
                  yaxis={"autorange": "reversed"})
    return _go().Figure(data=traces, layout=layout)


def capacity_bar_traces(rows, *, xaxis: str = "x", yaxis: str = "y") -> list:
    """Grouped bars of one request's KV after prefill and reserved at the end (MiB) per type.

    ``rows``: ``calc.kv_capacity_table`` rows (with "name"); the number that fits is the text.
    """
    names = [r["name"] for r in rows]
    return [
        {"type": "bar", "name": "KV after prefill", "x": names,
         "y": [r["prefill_kv_bytes"] / units.MiB for r in rows], "xaxis": xaxis, "yaxis": yaxis,
         "marker": {"color": MEMORY_COLORS["kv_free"]},
         "text": [f"{r['prefill_kv_bytes'] / units.MiB:,.0f} MiB" for r in rows],
         "textposition": "outside"},
        {"type": "bar", "name": "KV reserved for the whole output", "x": names,
         "y": [r["final_kv_bytes"] / units.MiB for r in rows], "xaxis": xaxis, "yaxis": yaxis,
         "marker": {"color": MEMORY_COLORS["kv_used"]},
         "text": [f"{r['final_kv_bytes'] / units.MiB:,.0f} MiB: {r['fit']} fit" for r in rows],
         "textposition": "outside"},
    ]


def kv_capacity_figure(rows, kv_budget_bytes: float,
                       title: str = "KV per request and requests that fit (8.1.2)"):
    """The 8.1.2 capacity table as bars: MiB per request at prefill and reserved, with the fit."""
    traces = capacity_bar_traces(rows)
    layout = {"template": "plotly_white", "title": {"text": title}, "barmode": "group",
              "height": 380,
              "yaxis": {"title": {"text": "KV of one request (MiB)"}},
              "xaxis": {"title": {"text": f"request type ({kv_budget_bytes / units.GiB:g} GiB "
                                          f"of KV)"}},
              "legend": {"orientation": "h", "y": -0.25}}
    return _go().Figure(data=traces, layout=layout)
