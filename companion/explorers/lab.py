"""Figures for the measure-it-yourself lab: this machine's roofline, step time, MBU/MFU.

Inputs are ``companion.measure`` results (a Hardware from ``hardware_from_measurement``, a
``SweepAnalysis``, a ``DecodeSweep`` with a ``StepTimeFit``); outputs are plotly figures with
fixed colours and every axis labelled with its unit, so a figure built from a saved file is
identical each time (nbval compares it).
"""

from __future__ import annotations

import numpy as np

from companion import calc, theme
from companion import validate as v
from companion.explorers.common import plotly_go as _go
from companion.formulas.core import attainable_flops
from companion.serves import serves
from companion.specs import H100_SXM, RTX_PRO_6000, Hardware

__all__ = ["measured_roofline", "measured_step_time", "measured_utilization",
           "measured_step_vs_bytes"]

_MEASURED = theme.INK


def _analysis(value):
    from companion.measure import SweepAnalysis
    return v.instance("analysis", value, SweepAnalysis, "a companion.measure.SweepAnalysis")


def _title(value, default: str) -> str:
    if value is None:
        return default
    return v.instance("title", value, str, "a string")


def _flops_text(flops_per_s: float) -> str:
    if flops_per_s >= 1e12:
        return f"{flops_per_s / 1e12:,.1f} TFLOP/s"
    return f"{flops_per_s / 1e9:,.1f} GFLOP/s"


def _batch_axis(batches) -> dict:
    ticks = [int(b) for b in batches]
    return dict(title="batch (requests decoded together)", type="log", tickvals=ticks,
                ticktext=[str(b) for b in ticks])


_POINT_SYMBOLS = ("circle", "square", "diamond", "triangle-up", "cross", "triangle-down",
                  "star", "x", "pentagon", "hexagon")
_AXIS_FOOT_PX = 60     # below the plot: the x tick labels and the x title
_LEGEND_ROW_PX = 21


_LEGEND_ROW_WIDTH_PX = 600   # what a legend row holds in a figure drawn 700 px wide


def _foot_legend(fig) -> tuple[dict, int]:
    """A legend in its own rows at the figure's foot, below the x title (so it covers no data
    and no axis text whatever the figure's size), and the bottom margin that holds it: plotly
    lays a horizontal legend out in columns as wide as its widest entry (about 40 px of key and
    6.5 px a character, counted generously)."""
    names = [t.name or "" for t in fig.data if t.showlegend is not False]
    widest = 40 + 6.5 * max((len(n) for n in names), default=0)
    per_row = max(1, int(_LEGEND_ROW_WIDTH_PX // widest))
    rows = -(-len(names) // per_row)
    legend = theme.foot_legend(tracegroupgap=0)
    return legend, _AXIS_FOOT_PX + _LEGEND_ROW_PX * rows + 10


def _precision(hardware: Hardware) -> str:
    """The number format a roof's peak counts, for its legend entry: a GPU's datasheet peak is
    a dense BF16 tensor rate, a measured CPU's the matmul dtype it ran (17 §2 warns that the
    format changes the peak)."""
    return hardware.peak_precision


def _log_x(value: float) -> float:
    """An annotation's x on a log axis is log10 of the value (a shape's is the value itself)."""
    return float(np.log10(value))


@serves("17.2")
def measured_roofline(hardware: Hardware, *, references=(H100_SXM, RTX_PRO_6000), analysis=None,
                      title: str | None = None):
    """Roofline of the measured machine beside the chapters' GPUs, with the sweep's points.

    Each roof is min(peak, intensity x bandwidth) (17 §2) drawn through its ridge point; the
    measured decode points sit at (FLOP / bytes read, FLOP / step time). Log-log axes.
    """
    hw = v.instance("hardware", hardware, Hardware, "a companion.specs.Hardware")
    refs = v.sequence("references", references, min_len=0)
    for i, r in enumerate(refs):
        v.instance(f"references[{i}]", r, Hardware, "a companion.specs.Hardware")
    a = None if analysis is None else _analysis(analysis)
    go = _go()

    roofs = [hw] + list(refs)
    x_lo = 0.05
    x_hi = 4.0 * max(calc.ridge_point(h) for h in roofs)
    if a is not None:
        x_lo = min(x_lo, float(a.intensity_flop_per_byte.min()) / 2)
        x_hi = max(x_hi, float(a.intensity_flop_per_byte.max()) * 2)
    fig = go.Figure()
    for i, h in enumerate(roofs):
        ridge = calc.ridge_point(h)
        color = _MEASURED if i == 0 else theme.PALETTE[(i - 1) % len(theme.PALETTE)]
        fig.add_trace(go.Scatter(
            x=[x_lo, ridge, x_hi],
            y=[attainable_flops(x_lo, h), h.peak_flops_per_s, h.peak_flops_per_s],
            mode="lines", line=dict(color=color, width=3 if i == 0 else 2,
                                    dash=theme.DASHES[i % len(theme.DASHES)]),
            name=(f"{h.name}: {h.mem_bw_bytes_per_s / 1e9:,.1f} GB/s, "
                  f"{_flops_text(h.peak_flops_per_s)} {_precision(h)}, "
                  f"ridge {ridge:,.3g} FLOP/byte"),
            legendgroup=h.name,
        ))
        # the ridge's value is in the roof's legend entry: labels beside the diamonds would
        # print over each other where two cards' ridges are close; one legend entry (the
        # first roof's diamond) says what every diamond is
        fig.add_trace(go.Scatter(
            x=[ridge], y=[h.peak_flops_per_s], mode="markers",
            marker=dict(color=color, size=9, symbol="diamond"), showlegend=i == 0,
            name="ridge point of each roof (diamond in the roof's colour)",
            legendgroup="ridge points" if i == 0 else h.name,
            hovertemplate="ridge %{x:.3g} FLOP/byte<extra></extra>",
        ))
    if a is not None:
        achieved = a.sweep.flop / a.step_s
        batches = [int(b) for b in a.batches]
        # the batch of each point is its colour, keyed by the colour bar (labels beside the
        # points would print over each other where the points crowd under the compute roof)
        fig.add_trace(go.Scatter(
            x=a.intensity_flop_per_byte.tolist(), y=achieved.tolist(), mode="markers",
            marker=dict(color=np.log2(batches).tolist(), colorscale=list(theme.SEQUENTIAL_SCALE), size=10,
                        symbol="circle", line=dict(color=_MEASURED, width=1),
                        colorbar=dict(title=dict(text="batch"),
                                      tickvals=np.log2(batches).tolist(),
                                      ticktext=[str(b) for b in batches], thickness=14)),
            text=[f"b={b}" for b in batches],
            name=f"measured decode steps ({a.sweep.dtype} weights; colour: batch)",
            hovertemplate="%{text}: %{x:.3g} FLOP/byte, %{y:.3s}FLOP/s<extra></extra>",
        ))
    legend, bottom = _foot_legend(fig)
    fig.update_layout(
        title=_title(title, "Roofline: this machine (measured) and the chapters' GPUs (spec)"),
        xaxis=dict(title="arithmetic intensity (FLOP per byte read)", type="log"),
        yaxis=dict(title="attainable throughput (FLOP/s)", type="log", tickformat="~s"),
        width=820, height=420 + bottom, legend=legend, margin=dict(b=bottom),
        template=theme.TEMPLATE,
    )
    return fig


def measured_step_time(analysis, *, title: str | None = None):
    """Median step time vs batch (min-max bars) with the fitted read model and roofline bound.

    Lines: the read model constant + bytes / bandwidth, the fitted two-roof model
    constant + max(bytes / bandwidth, FLOP / P_eff), and the roofline lower bound with nothing
    added (calc.decode_step_time on the measured Hardware). Vertical lines: where the step
    stops being flat (measured, dotted) and the ridge-point prediction (dash-dot, a colour of
    its own).
    """
    a = _analysis(analysis)
    go = _go()
    b = a.batches.tolist()
    ms = 1e3
    med = a.step_s * ms
    fig = go.Figure()
    fig.add_trace(go.Scatter(
        x=b, y=med.tolist(), mode="markers", name="measured (median; bars: min to max)",
        marker=dict(color=_MEASURED, size=8),
        error_y=dict(type="data", symmetric=False,
                     array=(a.sweep.step_max_s * ms - med).tolist(),
                     arrayminus=(med - a.sweep.step_min_s * ms).tolist()),
    ))
    fig.add_trace(go.Scatter(
        x=b, y=(a.read_model_s * ms).tolist(), mode="lines", line=dict(color=theme.PALETTE[0]),
        name=(f"read model: bytes / {a.read_fit.bandwidth_bytes_per_s / 1e9:.1f} GB/s + "
              f"{a.read_fit.fixed_s * ms:.2f} ms"
              + ("" if a.read_fit.bandwidth_fitted else " (mean excess of the read-bound points)")),
    ))
    if a.compute_flops_per_s is not None:
        fig.add_trace(go.Scatter(
            x=b, y=(a.model_step_s * ms).tolist(), mode="lines",
            line=dict(color=theme.PALETTE[1], dash="dot"),
            name=f"constant + max(read, FLOP / {a.compute_flops_per_s / 1e9:.1f} GFLOP/s)",
        ))
    fig.add_trace(go.Scatter(
        x=b, y=(a.roofline_step_s * ms).tolist(), mode="lines",
        line=dict(color=theme.PALETTE[2], dash="dash"),
        name="roofline bound (measured roofs, nothing added)",
    ))
    # the lines are shapes (x in data units) and their labels annotations (x in log10 units
    # on a log axis): add_vline's own label would take the batch as a log10 and stretch the
    # axis to it
    if a.knee_batch is not None:
        fig.add_vline(x=a.knee_batch, line=dict(color=_MEASURED, dash="dot"))
        fig.add_annotation(x=_log_x(a.knee_batch), xref="x", y=1, yref="y domain",
                           xanchor="right", yanchor="top", showarrow=False,
                           text=f"leaves flat: b={a.knee_batch}")
    if a.ridge_batch is not None:
        # its own colour and dash: the green dash is the roofline-bound series
        fig.add_vline(x=a.ridge_batch, line=dict(color=theme.PALETTE[3], dash="dashdot"))
        fig.add_annotation(x=_log_x(a.ridge_batch), xref="x", y=0, yref="y domain",
                           xanchor="left", yanchor="bottom", showarrow=False,
                           text=f"ridge predicts b={a.ridge_batch:.3g}")
    legend, bottom = _foot_legend(fig)
    fig.update_layout(
        title=_title(title, f"Decode step time vs batch ({a.sweep.model.name})"),
        xaxis=_batch_axis(b), yaxis=dict(title="step time (ms)", type="log"),
        width=820, height=400 + bottom, legend=legend, margin=dict(b=bottom),
        template=theme.TEMPLATE,
    )
    return fig


@serves("8.6.3", "17.9")
def measured_utilization(analysis, *, title: str | None = None):
    """MBU and MFU (percent) of every sweep point vs batch (17 §9, 8.6.3), each against the
    analysis' hardware: the measured roofs when it comes from hardware_from_measurement."""
    a = _analysis(analysis)
    go = _go()
    b = a.batches.tolist()
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=b, y=(a.mbu * 100).tolist(), mode="lines+markers",
                             name="MBU vs measured: bytes read per s / measured bandwidth",
                             line=dict(color=theme.PALETTE[0]),
                             marker=dict(symbol=theme.SYMBOLS[0])))
    fig.add_trace(go.Scatter(x=b, y=(a.mfu * 100).tolist(), mode="lines+markers",
                             name="MFU vs measured: model FLOP per s / measured matmul peak",
                             line=dict(color=theme.PALETTE[1], dash="dash"),
                             marker=dict(symbol=theme.SYMBOLS[1])))
    legend, bottom = _foot_legend(fig)
    fig.update_layout(
        title=_title(title, f"Utilisation vs batch on {a.hardware.name}"),
        xaxis=_batch_axis(b), yaxis=dict(title="utilisation (%)", rangemode="tozero"),
        width=820, height=340 + bottom, legend=legend, margin=dict(b=bottom),
        template=theme.TEMPLATE,
    )
    return fig


def measured_step_vs_bytes(sweep, fit, *, bytes_kind: str = "kv", title: str | None = None):
    """Step time vs bytes read (MB) for a sweep, with a fitted fixed_s + bytes / bandwidth line.

    ``bytes_kind="kv"`` puts the KV bytes on the x axis (a context sweep at fixed batch: the
    weight read is then part of the intercept); "total" puts D_w + b L k there.
    """
    from companion.measure import DecodeSweep, StepTimeFit

    sw = v.instance("sweep", sweep, DecodeSweep, "a companion.measure.DecodeSweep")
    f = v.instance("fit", fit, StepTimeFit, "a companion.measure.StepTimeFit")
    kind = v.choice("bytes_kind", bytes_kind, ("kv", "total"))
    go = _go()
    x = sw.kv_bytes if kind == "kv" else sw.bytes_read
    med = sw.step_median_s * 1e3
    labels = [f"b={p.batch}, L={p.context_tokens}" for p in sw.points]
    fig = go.Figure()
    # each point its own trace and marker symbol, its batch and context in its legend entry
    # (labels beside the points would run into each other and the axes where points crowd)
    for i, label in enumerate(labels):
        fig.add_trace(go.Scatter(
            x=[float(x[i]) / 1e6], y=[float(med[i])], mode="markers",
            marker=dict(color=_MEASURED, size=9, symbol=_POINT_SYMBOLS[i % len(_POINT_SYMBOLS)]),
            name=label + (" (median; bars: min to max)" if i == 0 else ""),
            hovertemplate=f"{label}: %{{y:.2f}} ms at %{{x:.1f}} MB<extra></extra>",
            error_y=dict(type="data", symmetric=False,
                         array=[float(sw.step_max_s[i] * 1e3 - med[i])],
                         arrayminus=[float(med[i] - sw.step_min_s[i] * 1e3)]),
        ))
    xs = np.array([0.0, float(x.max())])
    fig.add_trace(go.Scatter(
        x=(xs / 1e6).tolist(), y=(f.predict(xs) * 1e3).tolist(), mode="lines",
        line=dict(color=theme.PALETTE[0]),
        name=(f"fit: {f.fixed_s * 1e3:.2f} ms + bytes / {f.bandwidth_bytes_per_s / 1e9:.2f} GB/s"),
    ))
    what = "KV bytes read per step (MB)" if kind == "kv" else "bytes read per step, D_w + b L k (MB)"
    legend, bottom = _foot_legend(fig)
    fig.update_layout(
        title=_title(title, f"Step time vs bytes read ({sw.model.name})"),
        xaxis=dict(title=what, rangemode="tozero"),
        yaxis=dict(title="step time (ms)", rangemode="tozero"),
        width=820, height=360 + bottom, legend=legend, margin=dict(b=bottom),
        template=theme.TEMPLATE,
    )
    return fig
