"""Units and display helpers.

Inside the package every quantity is in base units: bytes, seconds, FLOP, FLOP/s, bytes/s,
tokens. The chapters display binary sizes (KiB, MiB, GiB) for KV and memory budgets and
decimal sizes (KB, MB, GB, TB) for vendor specs and bandwidth-side volumes; ``fmt_bytes``
converts only for display.
"""

from __future__ import annotations

import math

KiB = 1024
MiB = 1024**2
GiB = 1024**3
TiB = 1024**4

KB = 1000
MB = 1000**2
GB = 1000**3
TB = 1000**4

ms = 1e-3
us = 1e-6
ns = 1e-9

TFLOP = 1e12
GFLOP = 1e9

BYTE_UNITS = {
    "B": 1,
    "KiB": KiB, "MiB": MiB, "GiB": GiB, "TiB": TiB,
    "KB": KB, "MB": MB, "GB": GB, "TB": TB,
}
TIME_UNITS = {"s": 1.0, "ms": ms, "us": us, "µs": us, "ns": ns}


def to_unit(value: float, unit: str) -> float:
    """Convert a base-unit quantity (bytes or seconds) to ``unit`` (a key of BYTE_UNITS/TIME_UNITS),
    rounded to 12 significant digits so a display value reads as typed (26.3e-3 s is 26.3 ms,
    not 26.299999999999997): explorers take their sliders' defaults from chapter inputs this way."""
    if unit in BYTE_UNITS:
        return float(f"{value / BYTE_UNITS[unit]:.12g}")
    if unit in TIME_UNITS:
        return float(f"{value / TIME_UNITS[unit]:.12g}")
    raise ValueError(f"unit: unknown unit {unit!r}; expected one of "
                     f"{sorted(BYTE_UNITS) + sorted(TIME_UNITS)}")


def _fmt(x: float, digits: int | None) -> str:
    if digits is None:
        # three significant figures, but never scientific notation for everyday sizes
        if x == 0 or not math.isfinite(x):
            return f"{x:g}"
        magnitude = math.floor(math.log10(abs(x)))
        digits = max(0, 2 - magnitude)
    return f"{x:,.{digits}f}"


def fmt_bytes(n_bytes: float, unit: str = "GiB", digits: int | None = None) -> str:
    """Format a byte count for display in ``unit`` (three significant figures by default).

    >>> from companion import units
    >>> units.fmt_bytes(147456, "KiB")          # Qwen3-8B's KV per token (8.1.2)
    '144 KiB'
    >>> units.fmt_bytes(12 * units.GiB - 864 * units.MiB, "MiB", digits=0)
    '11,424 MiB'
    """
    if unit not in BYTE_UNITS:
        raise ValueError(f"unit: {unit!r} is not a byte unit; expected one of {sorted(BYTE_UNITS)}")
    return f"{_fmt(n_bytes / BYTE_UNITS[unit], digits)} {unit}"
