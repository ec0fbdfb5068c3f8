"""Every good call of tests/api_examples, reduced to plain values: what tests/test_wasm32.py
computes both natively and inside the lite site's Pyodide (wasm32, where numpy's default integer
is 32 bits) and compares. An object a call returns is reduced through its public properties and
its public methods that take no argument (a simulator's Result: its tables, summaries and
percentiles), so a method that only breaks on wasm32 shows up here; an exception is recorded as
its type's name on either side, so both must raise alike."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import math
import pkgutil

import numpy as np

DEPTH = 3
# probes that time this machine: their results differ from run to run anywhere
MEASURED = {"measure"}


def plain(x, depth: int = 0):
    """``x`` as JSON-ready values: numbers, strings, lists and dicts."""
    if x is None or isinstance(x, (bool, str)):
        return x
    if isinstance(x, np.generic):
        return plain(x.item(), depth)
    if isinstance(x, int):
        return x
    if isinstance(x, float):
        return x if math.isfinite(x) else repr(x)
    if isinstance(x, np.ndarray):
        return plain(x.tolist(), depth)
    if isinstance(x, dict):
        return {str(k): plain(v, depth) for k, v in x.items()}
    if isinstance(x, (list, tuple, set, frozenset)):
        items = sorted(x, key=repr) if isinstance(x, (set, frozenset)) else x
        return [plain(v, depth) for v in items]
    if depth >= DEPTH or inspect.isroutine(x) or inspect.isclass(x) or inspect.ismodule(x):
        return type(x).__name__
    if dataclasses.is_dataclass(x):
        return {f.name: plain(getattr(x, f.name), depth + 1) for f in dataclasses.fields(x)}
    return _members(x, depth)


def _members(obj, depth: int) -> dict:
    out = {"type": type(obj).__name__}
    for name in dir(type(obj)):
        if name.startswith("_"):
            continue
        attr = inspect.getattr_static(obj, name)
        if isinstance(attr, property):
            out[name] = _call(lambda: getattr(obj, name), depth)
        elif inspect.isfunction(attr):
            params = list(inspect.signature(attr).parameters.values())[1:]
            if all(p.default is not p.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
                   for p in params):
                out[name] = _call(getattr(obj, name), depth)
    return out


def _call(f, depth: int):
    try:
        return plain(f(), depth + 1)
    except Exception as exc:  # noqa: BLE001 - recorded, so both sides must fail alike
        return f"!{type(exc).__name__}"


def collect() -> dict:
    """{"module.function": plain result} for every example call."""
    import tests.api_examples as pkg

    out = {}
    for info in pkgutil.iter_modules(pkg.__path__):
        if info.name in MEASURED:
            continue
        examples = importlib.import_module(f"{pkg.__name__}.{info.name}")
        targets = examples.TARGET if hasattr(examples, "TARGET") else None
        names = ([targets] if isinstance(targets, str) else list(targets) if targets else
                 [f"companion.formulas.{m.name}" for m in pkgutil.iter_modules(
                     importlib.import_module("companion.formulas").__path__)
                  if m.name != "args"])
        modules = [importlib.import_module(n) for n in names]
        for fname, kwargs in examples.EXAMPLES.items():
            f = next(getattr(m, fname) for m in modules if hasattr(m, fname))
            out[f"{info.name}.{fname}"] = _call(lambda: f(**kwargs), -1)
    return out
