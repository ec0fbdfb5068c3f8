"""Figure helpers the explorer modules share: plotly imported on first use (with the rounding
renderer of ``companion.display``), a titled figure in the companion's template, seconds to
milliseconds for an axis, stacked subplots, and the Chapter 17 §6-§10 palettes. The panels'
presets and controls are in ``companion.explorers.presets``."""

from __future__ import annotations

from companion import units

__all__ = ["plotly_go", "titled_figure", "to_ms", "stacked_axes", "PHASE_COLORS",
           "SERVING_COLORS", "REQUEST_PALETTE", "discrete_colorscale"]


def plotly_go():
    """``plotly.graph_objects``, imported only when a figure is built (``import companion``
    stays free of plotting libraries), with the companion's rounding renderer installed so
    that the figure reaches a notebook with CPU-independent numbers (``companion.display``)."""
    import plotly.graph_objects as go

    from companion import display

    display.install()
    return go


def titled_figure(traces, layout: dict, title: str):
    """A plotly Figure of ``traces`` with ``layout``, the plotly_white template and ``title``."""
    layout = dict(layout, template="plotly_white", title={"text": title})
    return plotly_go().Figure(data=traces, layout=layout)


def to_ms(seconds) -> list:
    """Seconds -> milliseconds, item by item (for plotting)."""
    return [s / units.ms for s in seconds]


def stacked_axes(n: int, labels, gap: float = 0.1) -> tuple[dict, list]:
    """Layout entries for n stacked subplots sharing x, and an annotation per subplot."""
    height = (1 - gap * (n - 1)) / n
    layout, notes = {}, []
    for i, label in enumerate(labels):
        ax = "" if i == 0 else str(i + 1)
        top = 1 - i * (height + gap)
        domain = [max(0.0, round(top - height, 6)), min(1.0, round(top, 6))]
        layout[f"yaxis{ax}"] = {"domain": domain, "autorange": "reversed",
                               "type": "category", "anchor": f"x{ax}"}
        xa = {"anchor": f"y{ax}", "title": {"text": "time (s)"}}
        if i:
            xa["matches"] = "x"
        layout[f"xaxis{ax}"] = xa
        notes.append({"text": f"<b>{label}</b>", "xref": "paper", "yref": "paper", "x": 0,
                      "y": top, "yanchor": "bottom", "xanchor": "left", "showarrow": False})
    return layout, notes


# one fixed palette for Chapter 8's request phases (ch08_lifecycle, ch08_batching)
PHASE_COLORS = {
    "queue": "#b0b0b0", "prefill": "#e69f00", "decode": "#56b4e9", "stall": "#d55e00",
    "token": "#0b3d91", "deadline": "#c00000",
}

# --- the Chapter 17 §6-§10 explorers' palette -----------------------------------------------------

SERVING_COLORS = {
    "prefill": "#e69f00", "decode": "#56b4e9", "idle": "#d9d9d9", "comm": "#d55e00",
    "read": "#0072b2", "wire": "#cc79a7", "fill": "#e69f00", "steady": "#0072b2",
    "drain": "#cc79a7", "cold": "#d55e00", "warm": "#009e73", "mix": "#0072b2",
    "slo": "#c00000", "cap": "#009e73", "cap2": "#7f7f7f", "good": "rgba(0, 158, 115, 0.15)",
}

# one colour per request in a slot Gantt, cycled (colour-blind-safe Okabe-Ito order)
REQUEST_PALETTE = ("#0072b2", "#e69f00", "#009e73", "#cc79a7", "#56b4e9", "#d55e00",
                   "#f0e442", "#8c564b")


def discrete_colorscale(colours) -> list:
    """A plotly colour scale mapping the integers 0 .. n-1 (with cmin -0.5, cmax n - 0.5) to
    ``colours``."""
    n = len(colours)
    scale = []
    for i, c in enumerate(colours):
        scale += [[i / n, c], [(i + 1) / n, c]]
    return scale
