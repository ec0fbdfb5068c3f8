"""Helpers every figure module shares: plotly imported on first use, a titled figure in the
companion's template, seconds to milliseconds for an axis."""

from __future__ import annotations

from companion import units


def plotly_go():
    """``plotly.graph_objects``, imported only when a figure is built (``import companion``
    stays free of plotting libraries)."""
    import plotly.graph_objects as go

    return go


def titled_figure(traces, layout: dict, title: str):
    """A plotly Figure of ``traces`` with ``layout``, the plotly_white template and ``title``."""
    layout = dict(layout, template="plotly_white", title={"text": title})
    return plotly_go().Figure(data=traces, layout=layout)


def to_ms(seconds) -> list:
    """Seconds -> milliseconds, item by item (for plotting)."""
    return [s / units.ms for s in seconds]
