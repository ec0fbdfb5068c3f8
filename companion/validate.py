"""Argument checks shared by every public function: the package's one validation dialect.

Each check raises TypeError (wrong type) or ValueError (wrong value) whose message starts with
the parameter's name, so a student sees ``prompt_tokens: must be a whole number of tokens, got 2.5``
instead of a traceback from deep inside numpy or a silent NaN. Scalars: ``number`` (and
``positive``, ``nonnegative``, ``probability``), ``integer`` (``tokens``, ``count``),
``boolean``, ``choice``, ``sequence``, ``instance``. Columns (one value per request, as the
simulators take them): ``column``, which names the offending item (``prompt_tokens[3]``);
``token_ids`` for token sequences, ``array`` for numpy tensors.
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


def boolean(name: str, value) -> bool:
    """True or False (numpy booleans too), nothing else."""
    import numpy as np   # here, not at the top: ``import companion`` stays numpy-free

    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name}: expected True or False, got {type(value).__name__} {value!r}")
    return bool(value)


def column(name: str, values, n: int | None = None, *, whole: bool = False,
           minimum: float | None = None, positive: bool = False, allow_inf: bool = False,
           what: str = "a number", length_of: str = "", min_len: int = 1):
    """A column of numbers, one per item: a scalar (repeated ``n`` times) or a flat sequence
    of ``n`` items (any length when ``n`` is None), as a float64 array (int64 when ``whole``).

    Every item must be a real number (not a bool), finite unless ``allow_inf``, whole when
    ``whole``, >= ``minimum`` or > 0 when ``positive``; the error names the first offending
    item (``prompt_tokens[3]: must be a whole number of tokens, got 2.5``). ``length_of`` names
    what sets ``n`` in the length error ("arrival_s", "requests"); a sequence needs at least
    ``min_len`` items.
    """
    import numpy as np

    if isinstance(values, numbers.Real) and not _is_bool(values) \
            and not isinstance(values, np.bool_):
        if whole:
            x = integer(name, values, minimum=int(minimum) if minimum is not None else None,
                        what="a whole number of tokens")
        else:
            x = float(values)
            if math.isnan(x) or (math.isinf(x) and not allow_inf):
                number(name, values)
            if positive and x <= 0:
                raise ValueError(f"{name}: must be > 0, got {values!r}")
            if minimum is not None and x < minimum:
                raise ValueError(f"{name}: must be >= {minimum:g}, got {values!r}")
        return np.full(1 if n is None else n, x, dtype=np.int64 if whole else np.float64)
    seq = sequence(name, values, min_len=min_len)
    try:
        arr = np.asarray(seq)
    except (TypeError, ValueError):
        arr = np.asarray(seq, dtype=object)
    if arr.ndim != 1:
        raise ValueError(f"{name}: expected a flat sequence, got shape {arr.shape}")
    if n is not None and arr.size != n:
        against = f"{length_of} has {n}" if length_of else f"there are {n}"
        raise ValueError(f"{name}: has {arr.size} items but {against}")
    if arr.dtype.kind not in "iuf" or (not isinstance(seq, np.ndarray)
                                       and any(isinstance(x, bool) for x in seq)):
        bad = next((i for i, x in enumerate(seq) if isinstance(x, (bool, np.bool_))
                    or not isinstance(x, numbers.Real)), 0)
        raise TypeError(f"{name}[{bad}]: expected {what}, got {type(seq[bad]).__name__} "
                        f"{seq[bad]!r}")
    f = arr.astype(np.float64)
    nan = np.isnan(f)
    if nan.any():
        raise ValueError(f"{name}[{int(np.argmax(nan))}]: is NaN")
    inf = np.isinf(f)
    if inf.any() and not (allow_inf and not whole):
        raise ValueError(f"{name}[{int(np.argmax(inf))}]: is infinite")
    if whole:
        frac = f != np.floor(f)
        if frac.any():
            k = int(np.argmax(frac))
            raise ValueError(f"{name}[{k}]: must be a whole number of tokens, got {seq[k]!r}")
    if positive:
        low = f <= 0
        if low.any():
            k = int(np.argmax(low))
            raise ValueError(f"{name}[{k}]: must be > 0, got {seq[k]!r}")
    if minimum is not None:
        low = f < minimum
        if low.any():
            k = int(np.argmax(low))
            raise ValueError(f"{name}[{k}]: must be >= {minimum:g}, got {seq[k]!r}")
    return f.astype(np.int64) if whole else f


def token_ids(name: str, tokens) -> tuple:
    """A 1-D sequence of whole, non-negative token ids, as a tuple of ints."""
    import numpy as np

    seq = sequence(name, tokens, min_len=0)
    arr = np.asarray(seq)
    if arr.size == 0:
        return ()
    if arr.ndim != 1:
        raise ValueError(f"{name}: expected a flat sequence of token ids, got shape {arr.shape}")
    if arr.dtype.kind == "f":
        bad = ~np.isfinite(arr) | (arr != np.round(arr))
        if bad.any():
            i = int(np.argmax(bad))
            raise ValueError(f"{name}[{i}]: expected a whole token id, got {seq[i]!r}")
        arr = arr.astype(np.int64)
    elif arr.dtype.kind not in "iu":
        raise TypeError(f"{name}: expected token ids (whole numbers), got {arr.dtype} items")
    if arr.min() < 0:
        raise ValueError(f"{name}: token ids must be >= 0")
    return tuple(arr.tolist())


def array(name: str, value, ndim: tuple):
    """A numpy array of finite real numbers with one of the dimension counts ``ndim``."""
    import numpy as np

    if not isinstance(value, np.ndarray):
        raise TypeError(f"{name}: expected a numpy array, got {type(value).__name__}")
    if value.ndim not in ndim:
        raise ValueError(f"{name}: expected {' or '.join(map(str, ndim))} dimensions, "
                         f"got shape {value.shape}")
    if value.dtype.kind not in "fiu" or not np.isfinite(value).all():
        raise ValueError(f"{name}: expected finite real numbers")
    return value
