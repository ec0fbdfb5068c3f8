"""The tests' one rule for "agrees with the chapter": a value rounds to the number as printed.

``rounds_to(value, "6.95")``: within half a unit of the printed number's last digit (commas
allowed), plus ``slack`` for float noise; ``scale`` converts base units to the printed unit.
"""

from __future__ import annotations


def rounds_to(value: float, text: str, *, scale: float = 1.0, slack: float = 1e-9) -> bool:
    """Whether ``value / scale`` rounds to the printed ``text``."""
    s = text.replace(",", "")
    decimals = len(s.split(".")[1]) if "." in s else 0
    return abs(value / scale - float(s)) <= 0.5 * 10 ** -decimals + slack


def assert_printed(value: float, text: str, scale: float = 1.0, *, slack: float = 1e-12) -> None:
    """Assert ``rounds_to``, showing the value in the printed unit when it fails."""
    assert rounds_to(value, text, scale=scale, slack=slack), (value / scale, text)
