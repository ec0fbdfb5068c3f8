"""Tick marks chosen by the companion rather than left to plotly.js, where plotly's own would
mislead a reader.

* Log axes: plotly labels the steps between decades with bare digits ("2", "5" standing for
  20 and 50), which crowd the decade labels and read as the wrong numbers. ``log_ticks`` puts
  full numbers at 1-2-5 steps when the axis spans few decades, and at decades otherwise.
* Axes that count whole things (rows, slots, blocks, requests): plotly happily ticks 0, 0.5,
  1. ``whole_ticks`` gives integer ticks at a 1-2-5 step.

``finish_axes(data, layout)`` applies ``log_ticks`` to every log axis that has no ticks of its
own, from the range it sets or from the data of the traces drawn on it; every companion figure
passes through it (``Panel._layout`` and the companion's ``Figure``).
"""

from __future__ import annotations

import math

__all__ = ["log_ticks", "whole_ticks", "tick_label", "finish_axes"]

# at most this many labelled ticks on an axis (each log label is up to 4 characters)
_MAX_TICKS = 10
# 1-2-5 steps are added while the axis shows fewer decades than this
_FEW_DECADES = 3
_SI = ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))


def tick_label(value: float) -> str:
    """A tick's number in full, short: 0.02, 0.5, 2, 50, 200, 5k, 20k, 1M."""
    if value <= 0 or not math.isfinite(value):
        raise ValueError(f"value: a log tick must be positive and finite, got {value!r}")
    for scale, suffix in _SI:
        if value >= scale:
            return f"{value / scale:g}{suffix}"
    return f"{value:.12g}"


def log_ticks(lo: float, hi: float) -> tuple[list[float], list[str]]:
    """Tick values and labels for a log axis showing ``lo`` .. ``hi`` (data units)."""
    if not (0 < lo <= hi) or not math.isfinite(hi):
        raise ValueError(f"lo, hi: need 0 < lo <= hi, got {lo!r}, {hi!r}")
    first, last = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    decades = [10.0 ** k for k in range(first, last + 1)]
    inside = [d for d in decades if lo <= d <= hi]
    if len(inside) < _FEW_DECADES:
        steps = (1, 2, 5)
    else:
        steps = (1,)
    values = [d * s for d in decades for s in steps if lo <= d * s <= hi]
    if len(values) < 2:  # within a decade: every digit, in full (0.3, 0.4 ... 0.9)
        values = [d * s for d in decades for s in range(1, 10) if lo <= d * s <= hi]
    if len(values) > _MAX_TICKS:  # many decades: every second, third ... decade
        values = inside[::math.ceil(len(inside) / _MAX_TICKS)]
    if len(values) < 2:  # within one digit step: the ends themselves
        values = sorted({_round_nice(lo), _round_nice(hi)})
    values = [float(f"{v:.12g}") for v in values]
    return values, [tick_label(v) for v in values]


def _round_nice(x: float) -> float:
    return float(f"{x:.2g}")


def whole_ticks(lo: float, hi: float, most: int = 8) -> list[int]:
    """Integer tick values covering ``lo`` .. ``hi`` at a 1-2-5 step, at most ``most`` + 1."""
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi < lo:
        raise ValueError(f"lo, hi: need finite lo <= hi, got {lo!r}, {hi!r}")
    span = max(hi - lo, 1)
    step = 1
    for magnitude in (10 ** k for k in range(0, 19)):
        for m in (1, 2, 5):
            step = m * magnitude
            if span / step <= most:
                break
        else:
            continue
        break
    start = math.ceil(lo / step) * step
    return list(range(int(start), int(math.floor(hi)) + 1, int(step)))


def _axis_names(trace: dict) -> tuple[str, str]:
    def name(ref, letter):
        ref = ref or letter
        return f"{letter}axis{ref[1:]}"

    return name(trace.get("xaxis"), "x"), name(trace.get("yaxis"), "y")


def _positive(values) -> list[float]:
    out = []
    if values is None or isinstance(values, (str, dict)):
        return out
    for v in values:
        if isinstance(v, (list, tuple)):
            out += _positive(v)
        elif isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0 \
                and math.isfinite(v):
            out.append(float(v))
    return out


def _extent(data: list, axis: str) -> tuple[float, float] | None:
    """Smallest and largest positive value drawn on ``axis`` ("xaxis2", "yaxis" ...)."""
    letter = axis[0]
    found = []
    for trace in data:
        if _axis_names(trace)["xy".index(letter)] != axis:
            continue
        values = trace.get(letter)
        found += _positive(_tolist(values))
        if trace.get("type") == "bar" and trace.get("base") is not None:
            found += _positive(_tolist(trace.get("base")))
    return (min(found), max(found)) if found else None


def _tolist(values):
    if hasattr(values, "tolist"):
        return values.tolist()
    if isinstance(values, tuple):
        return list(values)
    return values


def finish_axes(data: list, layout: dict) -> dict:
    """``layout`` with ``log_ticks`` on each log axis that sets no ticks itself (tickvals,
    dtick or tickmode); ``data`` are the trace dicts. Returns a new dict; ``layout`` is kept."""
    changed = None
    for name, axis in layout.items():
        if not (isinstance(axis, dict) and name[1:5] == "axis" and name[0] in "xy"):
            continue
        if axis.get("type") != "log" or any(k in axis for k in ("tickvals", "dtick",
                                                                   "tickmode")):
            continue
        span = axis.get("range")
        if span is not None and len(span) == 2 and None not in span:
            lo, hi = 10.0 ** min(span), 10.0 ** max(span)
        else:
            extent = _extent(data, name)
            if extent is None:
                continue
            lo, hi = extent[0] / 1.3, extent[1] * 1.3  # plotly pads an autorange a little
        values, labels = log_ticks(lo, hi)
        changed = changed if changed is not None else dict(layout)
        changed[name] = {**axis, "tickmode": "array", "tickvals": values, "ticktext": labels}
    return changed if changed is not None else layout
