"""Walk the public API with bad values: each must raise TypeError/ValueError naming the parameter.

Good calls come from ``tests/api_examples/*.py`` (EXAMPLES); every public function of the
target (``TARGET``: a module or several; by default every ``companion.formulas`` module)
must have one, so a new function without an example fails here. From each good call we derive
bad ones, one parameter at a time: NaN, infinity, a string, a negative number, zero, a
fractional count; for a Model/Hardware a wrong type; for a choice an unknown option; for a
sequence a string, an empty list and a NaN item.
"""

from __future__ import annotations

import importlib
import inspect
import math
import numbers
import pkgutil
import re
import types

import pytest

import tests.api_examples as pkg
from companion.specs import Hardware, Model

COUNT_NAME = re.compile(r"(tokens|batch|stages|microbatches|draft_len|^n_|count|layers|heads|"
                        r"requests|rounds|blocks|branches|turns|adapters|rank|snapshots|"
                        r"positions|chunks)")


# the formula modules together, as the examples of a formula file may call a neighbour's
# function (performance.py's examples include 17 §10's tables from levers)
FORMULA_MODULES = tuple(f"companion.formulas.{i.name}"
                        for i in pkgutil.iter_modules(importlib.import_module(
                            "companion.formulas").__path__) if i.name != "args")


def _target(spec):
    """The module an examples file calls into, or several merged into one namespace."""
    names = (spec,) if isinstance(spec, str) else tuple(spec)
    modules = [importlib.import_module(n) for n in names]
    if len(modules) == 1:
        return modules[0]
    merged = types.SimpleNamespace(__name__=" + ".join(names), __all__=[])
    for m in modules:
        for n in m.__all__:
            setattr(merged, n, getattr(m, n))
            merged.__all__.append(n)
    return merged


def _load():
    for info in pkgutil.iter_modules(pkg.__path__):
        mod = importlib.import_module(f"{pkg.__name__}.{info.name}")
        yield info.name, mod, _target(getattr(mod, "TARGET", FORMULA_MODULES))


MODULES = list(_load())


def _public_functions(target):
    names = getattr(target, "__all__", [n for n in dir(target) if not n.startswith("_")])
    for n in names:
        obj = getattr(target, n)
        if inspect.isfunction(obj):
            yield n, obj


def test_every_public_formula_has_an_example():
    covered = set()
    for _, mod, target in MODULES:
        if target.__name__ == " + ".join(FORMULA_MODULES):
            covered |= set(mod.EXAMPLES)
    missing = []
    for name in FORMULA_MODULES:
        module = importlib.import_module(name)
        missing += [f"{name}.{n}" for n, obj in _public_functions(module)
                    if obj.__module__ == name and n not in covered]
    assert not missing, f"add good calls for these to tests/api_examples/: {sorted(missing)}"


def _bad_variants(param, value):
    """(kind, bad value, expected exception types) for one parameter's good value."""
    if isinstance(value, bool) or value is None:
        return
    if isinstance(value, (Model, Hardware)):
        yield "wrong-type", "not-a-" + type(value).__name__, (TypeError,)
        return
    if isinstance(value, str):
        yield "unknown-option", value + "-nope", (ValueError,)
        yield "wrong-type", 3, (TypeError,)
        return
    if isinstance(value, numbers.Real):
        yield "nan", math.nan, (ValueError, TypeError)
        yield "inf", math.inf, (ValueError, TypeError)
        yield "string", "12", (TypeError,)
        yield "negative", -abs(value) - 1, (ValueError,)
        yield "zero", 0, (ValueError,)
        if isinstance(value, numbers.Integral) and COUNT_NAME.search(param):
            yield "fraction", value + 0.5, (ValueError,)
        return
    if isinstance(value, (list, tuple)):
        yield "string", "abc", (TypeError,)
        yield "empty", [], (ValueError,)
        if value and isinstance(value[0], numbers.Real):
            yield "nan-item", [math.nan] + list(value[1:]), (ValueError, TypeError)


def _cases():
    for modname, mod, target in MODULES:
        allow = getattr(mod, "ALLOW", {})
        for fname, kwargs in mod.EXAMPLES.items():
            for param, value in kwargs.items():
                for kind, bad, exc in _bad_variants(param, value):
                    if kind in allow.get(fname, {}).get(param, []):
                        continue
                    yield pytest.param(target, fname, kwargs, param, bad, exc,
                                       id=f"{modname}.{fname}.{param}.{kind}")


@pytest.mark.parametrize("modname,mod,target", MODULES, ids=[m[0] for m in MODULES])
def test_examples_are_good_calls(modname, mod, target):
    for fname, kwargs in mod.EXAMPLES.items():
        result = getattr(target, fname)(**kwargs)
        if isinstance(result, numbers.Real) and not isinstance(result, bool):
            assert math.isfinite(result), f"{fname}({kwargs}) returned {result}"


@pytest.mark.parametrize("target,fname,kwargs,param,bad,exc", list(_cases()))
def test_bad_value_is_rejected_naming_the_parameter(target, fname, kwargs, param, bad, exc):
    call = dict(kwargs, **{param: bad})
    with pytest.raises(exc) as info:
        getattr(target, fname)(**call)
    assert param in str(info.value), (
        f"{fname}({param}={bad!r}) raised {info.type.__name__}: {info.value} "
        f"(the message must name {param!r})")
