"""Helpers the explorer modules share: plotly imported on first use, a titled figure in the
companion's template, seconds to milliseconds for an axis, and the hardware and KV-precision
choices of the Chapter 17 panels."""

from __future__ import annotations

from companion import specs, units
from companion.explorers.base import Control

__all__ = ["plotly_go", "titled_figure", "to_ms", "stacked_axes", "HARDWARE_PRESETS",
           "KV_PRECISION_BYTES", "hardware_control", "SERVING_COLORS", "SERVING_MODELS",
           "SERVING_CARDS", "WEIGHT_FORMATS", "TP_DEGREES", "choice_control", "model_control",
           "card_control", "REQUEST_PALETTE", "discrete_colorscale"]


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


# the cards a Chapter 17 panel offers, by display name
HARDWARE_PRESETS = {h.name: h for h in (specs.H100_SXM, specs.H200_SXM, specs.A100_80GB,
                                        specs.RTX_PRO_6000, specs.GH200, specs.M2_MAX)}
KV_PRECISION_BYTES = {"BF16 (2 B)": 2.0, "FP8 (1 B)": 1.0}


def hardware_control() -> Control:
    """The "hardware" choice over ``HARDWARE_PRESETS``, H100 SXM first selected."""
    return Control("hardware", "hardware", "choice", specs.H100_SXM.name,
                   options={name: name for name in HARDWARE_PRESETS})


# --- the Chapter 17 §6-§10 explorers' palette, presets and controls ------------------------------

SERVING_COLORS = {
    "prefill": "#e69f00", "decode": "#56b4e9", "idle": "#d9d9d9", "comm": "#d55e00",
    "read": "#0072b2", "wire": "#cc79a7", "fill": "#e69f00", "steady": "#0072b2",
    "drain": "#cc79a7", "cold": "#d55e00", "warm": "#009e73", "mix": "#0072b2",
    "slo": "#c00000", "cap": "#009e73", "cap2": "#7f7f7f", "good": "rgba(0, 158, 115, 0.15)",
}

# the models and cards the §6-§10 panels offer, by display name
SERVING_MODELS = {m.name: m for m in (specs.LLAMA_8B, specs.LLAMA_70B, specs.LLAMA_405B)}
SERVING_CARDS = {h.name: h for h in (specs.H100_SXM, specs.H200_SXM, specs.A100_80GB)}
WEIGHT_FORMATS = {"BF16 (2 B)": 2.0, "FP8 / INT8 (1 B)": 1.0, "INT4 (0.5 B)": 0.5}
TP_DEGREES = {"1": 1, "2": 2, "4": 4, "8": 8}


def choice_control(name: str, label: str, default, options: dict) -> Control:
    """A drop-down ``Control`` over ``options`` (display label -> value)."""
    return Control(name, label, "choice", default, options=options)


def model_control(default: str = specs.LLAMA_70B.name, models=None) -> Control:
    """The "model" choice over ``models`` (names; default ``SERVING_MODELS``)."""
    names = models or SERVING_MODELS
    return choice_control("model", "model", default, {n: n for n in names})


def card_control(cards=None) -> Control:
    """The "hardware" choice (labelled GPU) over ``cards`` (default ``SERVING_CARDS``)."""
    names = cards or SERVING_CARDS
    return choice_control("hardware", "GPU", specs.H100_SXM.name, {n: n for n in names})


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
