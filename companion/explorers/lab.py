"""Figures for the measure-it-yourself lab: this machine's roofline, step time, MBU/MFU.

Inputs are ``companion.measure`` results (a Hardware from ``hardware_from_measurement``, a
``SweepAnalysis``, a ``DecodeSweep`` with a ``StepTimeFit``); outputs are plotly figures with
fixed colours and every axis labelled with its unit, so a figure built from a saved file is
identical each time (nbval compares it).
"""

from __future__ import annotations

import numpy as np

from companion import calc
from companion import validate as v
from companion.explorers.common import plotly_go as _go
from companion.formulas.core import attainable_flops
from companion.serves import serves
from companion.specs import H100_SXM, RTX_PRO_6000, Hardware

__all__ = ["measured_roofline", "measured_step_time", "measured_utilization",
           "measured_step_vs_bytes"]

_COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf")
_MEASURED = "#111111"


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
        color = _MEASURED if i == 0 else _COLORS[(i - 1) % len(_COLORS)]
        fig.add_trace(go.Scatter(
            x=[x_lo, ridge, x_hi],
            y=[attainable_flops(x_lo, h), h.peak_flops_per_s, h.peak_flops_per_s],
            mode="lines", line=dict(color=color, width=3 if i == 0 else 2,
                                    dash="solid" if i == 0 else "dash"),
            name=f"{h.name}: {h.mem_bw_bytes_per_s / 1e9:,.1f} GB/s, {_flops_text(h.peak_flops_per_s)}",
        ))
        fig.add_trace(go.Scatter(
            x=[ridge], y=[h.peak_flops_per_s], mode="markers+text",
            marker=dict(color=color, size=9, symbol="diamond"),
            text=[f"ridge {ridge:,.3g}"], textposition="top left", showlegend=False,
            hovertemplate="ridge %{x:.3g} FLOP/byte<extra></extra>",
        ))
    if a is not None:
        achieved = a.sweep.flop / a.step_s
        fig.add_trace(go.Scatter(
            x=a.intensity_flop_per_byte.tolist(), y=achieved.tolist(), mode="markers+text",
            marker=dict(color=_MEASURED, size=8, symbol="circle-open", line=dict(width=2)),
            text=[f"b={int(b)}" for b in a.batches], textposition="bottom right",
            name=f"measured decode steps ({a.sweep.dtype} weights)",
            hovertemplate="%{text}: %{x:.3g} FLOP/byte, %{y:.3s}FLOP/s<extra></extra>",
        ))
    fig.update_layout(
        title=_title(title, "Roofline: this machine (measured) and the chapters' GPUs (spec)"),
        xaxis=dict(title="arithmetic intensity (FLOP per byte read)", type="log"),
        yaxis=dict(title="attainable throughput (FLOP/s)", type="log", tickformat="~s"),
        width=820, height=500, legend=dict(x=0.01, y=0.99, bgcolor="rgba(255,255,255,0.7)"),
        template="plotly_white",
    )
    return fig


def measured_step_time(analysis, *, title: str | None = None):
    """Median step time vs batch (min-max bars) with the fitted read model and roofline bound.

    Lines: the read model fixed + bytes / bandwidth, the fitted two-roof model
    fixed + max(bytes / bandwidth, FLOP / P_eff), and the roofline lower bound with no fixed
    cost (calc.decode_step_time on the measured Hardware). Vertical lines: where the step stops
    being flat (measured) and the ridge-point prediction.
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
        x=b, y=(a.read_model_s * ms).tolist(), mode="lines", line=dict(color=_COLORS[0]),
        name=(f"read model: {a.read_fit.fixed_s * ms:.2f} ms + bytes / "
              f"{a.read_fit.bandwidth_bytes_per_s / 1e9:.1f} GB/s"),
    ))
    if a.compute_flops_per_s is not None:
        fig.add_trace(go.Scatter(
            x=b, y=(a.model_step_s * ms).tolist(), mode="lines",
            line=dict(color=_COLORS[1], dash="dot"),
            name=f"fixed + max(read, FLOP / {a.compute_flops_per_s / 1e9:.1f} GFLOP/s)",
        ))
    fig.add_trace(go.Scatter(
        x=b, y=(a.roofline_step_s * ms).tolist(), mode="lines",
        line=dict(color=_COLORS[2], dash="dash"), name="roofline bound (no fixed cost)",
    ))
    if a.knee_batch is not None:
        fig.add_vline(x=a.knee_batch, line=dict(color=_MEASURED, dash="dot"),
                      annotation_text=f"leaves flat: b={a.knee_batch}",
                      annotation_position="top left")
    if a.ridge_batch is not None:
        fig.add_vline(x=a.ridge_batch, line=dict(color=_COLORS[2], dash="dash"),
                      annotation_text=f"ridge predicts b={a.ridge_batch:.3g}",
                      annotation_position="bottom right")
    fig.update_layout(
        title=_title(title, f"Decode step time vs batch ({a.sweep.model.name})"),
        xaxis=_batch_axis(b), yaxis=dict(title="step time (ms)", type="log"),
        width=820, height=480, legend=dict(x=0.01, y=0.99, bgcolor="rgba(255,255,255,0.7)"),
        template="plotly_white",
    )
    return fig


@serves("8.6.3", "17.9")
def measured_utilization(analysis, *, title: str | None = None):
    """MBU and MFU (percent) of every sweep point vs batch (17 §9, 8.6.3)."""
    a = _analysis(analysis)
    go = _go()
    b = a.batches.tolist()
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=b, y=(a.mbu * 100).tolist(), mode="lines+markers",
                             name="MBU: bytes read per s / measured bandwidth",
                             line=dict(color=_COLORS[0])))
    fig.add_trace(go.Scatter(x=b, y=(a.mfu * 100).tolist(), mode="lines+markers",
                             name="MFU: model FLOP per s / measured matmul peak",
                             line=dict(color=_COLORS[1])))
    fig.update_layout(
        title=_title(title, f"Utilisation vs batch on {a.hardware.name}"),
        xaxis=_batch_axis(b), yaxis=dict(title="utilisation (%)", rangemode="tozero"),
        width=820, height=420, legend=dict(x=0.01, y=0.99), template="plotly_white",
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
    fig.add_trace(go.Scatter(
        x=(x / 1e6).tolist(), y=med.tolist(), mode="markers+text", text=labels,
        textposition="top left", marker=dict(color=_MEASURED, size=8),
        name="measured (median; bars: min to max)",
        error_y=dict(type="data", symmetric=False,
                     array=(sw.step_max_s * 1e3 - med).tolist(),
                     arrayminus=(med - sw.step_min_s * 1e3).tolist()),
    ))
    xs = np.array([0.0, float(x.max())])
    fig.add_trace(go.Scatter(
        x=(xs / 1e6).tolist(), y=(f.predict(xs) * 1e3).tolist(), mode="lines",
        line=dict(color=_COLORS[0]),
        name=(f"fit: {f.fixed_s * 1e3:.2f} ms + bytes / {f.bandwidth_bytes_per_s / 1e9:.2f} GB/s"),
    ))
    what = "KV bytes read per step (MB)" if kind == "kv" else "bytes read per step, D_w + b L k (MB)"
    fig.update_layout(
        title=_title(title, f"Step time vs bytes read ({sw.model.name})"),
        xaxis=dict(title=what, rangemode="tozero"),
        yaxis=dict(title="step time (ms)", rangemode="tozero"),
        width=820, height=440, legend=dict(x=0.01, y=0.99), template="plotly_white",
    )
    return fig
