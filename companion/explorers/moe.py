"""Mixture-of-experts figures: weight bytes read per output token vs batch, an MoE against a
dense model of the same size, with the experts a batch touches (``calc.moe_read_curve``).

``moe_read_traces`` returns plain trace dicts, so a read-volume or roofline explorer can add
the MoE curves to its own figure. Deterministic: fixed colours.
"""

from __future__ import annotations

from companion import theme, units
from companion.explorers.common import titled_figure as _fig

__all__ = ["moe_read_traces", "moe_read_figure"]

MOE_COLOR, DENSE_COLOR = theme.VERMILLION, theme.BLUE


def moe_read_traces(rows, *, label: str = "MoE", unit: str = "GB", xaxis: str = "x",
                    yaxis: str = "y") -> list:
    """Two traces over batch from ``calc.moe_read_curve`` rows: D_w(b)/b (experts touched in
    the hover) and D_w/b of a dense model with the same total weights."""
    scale = units.BYTE_UNITS[unit]
    xs = [r["batch"] for r in rows]
    touched = [r["experts_touched"] if r["experts_touched"] is not None else float("nan")
               for r in rows]
    return [
        {"type": "scatter", "mode": "lines+markers", "x": xs,
         "y": [r["weight_read_per_token_bytes"] / scale for r in rows],
         "customdata": touched, "name": f"{label}: experts the batch touches",
         "line": {"color": MOE_COLOR, "width": 3}, "xaxis": xaxis, "yaxis": yaxis,
         "hovertemplate": (f"b=%{{x}}: %{{y:.3g}} {unit} per token, "
                           f"%{{customdata:.1f}} experts per layer<extra>{label}</extra>")},
        {"type": "scatter", "mode": "lines", "x": xs,
         "y": [r["dense_read_per_token_bytes"] / scale for r in rows],
         "name": "dense model of the same size (D_w / b)",
         "line": {"color": DENSE_COLOR, "dash": "dash", "width": 2}, "xaxis": xaxis,
         "yaxis": yaxis,
         "hovertemplate": f"b=%{{x}}: %{{y:.3g}} {unit} per token<extra>dense</extra>"},
    ]


def moe_read_figure(rows, *, label: str = "MoE", unit: str = "GB",
                    title: str = "Weight bytes read per output token vs batch:<br>an MoE "
                                 "reads only the experts its batch touches"):
    """``moe_read_traces`` on log-log axes (batch; weight read per output token)."""
    layout = {"height": 460,
              "xaxis": {"title": {"text": "batch b (sequences per decode step)"}, "type": "log"},
              "yaxis": {"title": {"text": f"weight read per output token ({unit})"},
                        "type": "log"},
              # the legend in its own rows at the figure's foot, below the x title however a
              # long model name makes it wrap
              "legend": theme.foot_legend(),
              "margin": {"b": 120}}
    return _fig(moe_read_traces(rows, label=label, unit=unit), layout, title)
