"""Comparing plotly JSON as plotly.js reads it: typed-array specs ({dtype, bdata}, what
plotly.py writes for numpy arrays) decoded to lists, and a missing value written as NaN or
null (JSON has no NaN; plotly.js reads both as a gap) taken as equal."""

from __future__ import annotations

import base64

import numpy as np


def decode(value):
    """``value`` with every typed-array spec decoded to a (nested) list."""
    if isinstance(value, dict):
        if "bdata" in value and "dtype" in value:
            arr = np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"]))
            if value.get("shape"):
                shape = value["shape"]
                arr = arr.reshape([int(s) for s in (shape.split(",") if isinstance(shape, str)
                                                    else shape)])
            return decode(arr.tolist())
        return {k: decode(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [decode(v) for v in value]
    return value


def _missing(x) -> bool:
    return x is None or (isinstance(x, float) and x != x)


def _equal(a, b, path, diffs) -> None:
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            if key not in a or key not in b:
                diffs.append(f"{path}.{key}: only in {'second' if key not in a else 'first'}")
            else:
                _equal(a[key], b[key], f"{path}.{key}", diffs)
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            diffs.append(f"{path}: {len(a)} != {len(b)} items")
        else:
            for i, (x, y) in enumerate(zip(a, b)):
                _equal(x, y, f"{path}[{i}]", diffs)
    elif not (a == b and type(a) is type(b) or _missing(a) and _missing(b)
              or isinstance(a, (int, float)) and isinstance(b, (int, float))
              and not isinstance(a, bool) and not isinstance(b, bool) and a == b):
        diffs.append(f"{path}: {a!r:.60} != {b!r:.60}")


def plotly_json_differences(first, second) -> list[str]:
    diffs: list[str] = []
    _equal(decode(first), decode(second), "", diffs)
    return diffs


def plotly_json_equal(first, second) -> bool:
    diffs = plotly_json_differences(first, second)
    assert not diffs, "\n".join(diffs[:12])
    return True
