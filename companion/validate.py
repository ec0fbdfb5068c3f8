"""Argument checks shared by every public function.

Each check raises TypeError (wrong type) or ValueError (wrong value) whose message starts with
the parameter's name, so a student sees ``prompt_tokens: must be a whole number of tokens, got 2.5``
instead of a traceback from deep inside numpy or a silent NaN.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Sequence


def _is_bool(x) -> bool:
    return isinstance(x, bool)


def number(name: str, value, *, positive: bool = False, nonnegative: bool = False,
           at_most: float | None = None, at_least: float | None = None) -> float:
    """A finite real number (int, float or numpy scalar); returns it as float."""
    if _is_bool(value) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name}: expected a number, got {type(value).__name__} {value!r}")
    x = float(value)
    if math.isnan(x):
        raise ValueError(f"{name}: is NaN; expected a finite number")
    if math.isinf(x):
        raise ValueError(f"{name}: is infinite; expected a finite number")
    if positive and x <= 0:
        raise ValueError(f"{name}: must be > 0, got {value!r}")
    if nonnegative and x < 0:
        raise ValueError(f"{name}: must be >= 0, got {value!r}")
    if at_least is not None and x < at_least:
        raise ValueError(f"{name}: must be >= {at_least}, got {value!r}")
    if at_most is not None and x > at_most:
        raise ValueError(f"{name}: must be <= {at_most}, got {value!r}")
    return x


def positive(name: str, value) -> float:
    return number(name, value, positive=True)


def nonnegative(name: str, value) -> float:
    return number(name, value, nonnegative=True)


def probability(name: str, value, *, open_low: bool = False, open_high: bool = False) -> float:
    """A probability in [0, 1] (optionally excluding an end)."""
    x = number(name, value, at_least=0.0, at_most=1.0)
    if open_low and x == 0:
        raise ValueError(f"{name}: must be > 0, got {value!r}")
    if open_high and x == 1:
        raise ValueError(f"{name}: must be < 1, got {value!r}")
    return x


def integer(name: str, value, *, minimum: int | None = 0, what: str = "a whole number") -> int:
    """A whole number (int, numpy integer, or an integral float such as 2048.0)."""
    if _is_bool(value) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name}: expected {what}, got {type(value).__name__} {value!r}")
    x = float(value)
    if math.isnan(x) or math.isinf(x):
        raise ValueError(f"{name}: expected {what}, got {value!r}")
    if x != int(x):
        raise ValueError(f"{name}: must be {what}, got {value!r}")
    n = int(x)
    if minimum is not None and n < minimum:
        raise ValueError(f"{name}: must be >= {minimum}, got {value!r}")
    return n


def tokens(name: str, value, *, minimum: int = 0) -> int:
    """A token count: a whole number >= minimum."""
    return integer(name, value, minimum=minimum, what="a whole number of tokens")


def count(name: str, value, *, minimum: int = 1) -> int:
    """A count of things (requests, layers, stages): a whole number >= minimum (default 1)."""
    return integer(name, value, minimum=minimum)


def choice(name: str, value, options: Iterable[str]) -> str:
    opts = list(options)
    if not isinstance(value, str):
        raise TypeError(f"{name}: expected one of {opts}, got {type(value).__name__} {value!r}")
    if value not in opts:
        raise ValueError(f"{name}: expected one of {opts}, got {value!r}")
    return value


def sequence(name: str, value, *, min_len: int = 1) -> Sequence:
    """A non-string sequence (list, tuple, numpy array) with at least ``min_len`` items."""
    if isinstance(value, (str, bytes)) or not hasattr(value, "__len__") or not hasattr(value, "__getitem__"):
        raise TypeError(f"{name}: expected a sequence (list, tuple or array), got {type(value).__name__}")
    if len(value) < min_len:
        raise ValueError(f"{name}: needs at least {min_len} item(s), got {len(value)}")
    return value


def instance(name: str, value, cls, what: str | None = None):
    if not isinstance(value, cls):
        raise TypeError(f"{name}: expected {what or cls.__name__}, got {type(value).__name__} {value!r}")
    return value
