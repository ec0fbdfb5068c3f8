"""The examples in the docstrings run, and say what they show.

Every ``>>>`` example in the modules of the API reference (``companion.calc`` and its formula
modules, ``companion.sim`` and its modules, ``specs``, ``units``, ``grading``, ``ledger``) is run
with ``doctest``; each promised function (``tests/architecture.py``'s ``PROMISED``) must have
one, so the page a student reads cannot drift from what the code does.
"""

from __future__ import annotations

import doctest
import importlib
import inspect
import pkgutil

import pytest

from tests.architecture import PROMISED

PACKAGES = ("companion.formulas", "companion.sim")
MODULES = ("companion.calc", "companion.sim", "companion.specs", "companion.spec_types",
           "companion.models", "companion.units", "companion.grading", "companion.ledger",
           "companion.lazy")


def _modules() -> list[str]:
    names = list(MODULES)
    for package in PACKAGES:
        pkg = importlib.import_module(package)
        names += [f"{package}.{m.name}" for m in pkgutil.iter_modules(pkg.__path__)]
    return sorted(set(names))


@pytest.mark.parametrize("name", _modules())
def test_the_examples_run(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS, verbose=False, report=True)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples in {name} failed"


def test_every_promised_name_has_an_example_and_they_all_run():
    attempted = 0
    for name in _modules():
        attempted += doctest.testmod(importlib.import_module(name), report=False).attempted
    missing = []
    for module, names in PROMISED.items():
        m = importlib.import_module(f"companion.{module}")
        for n in names:
            obj = getattr(m, n)
            if (inspect.isfunction(obj) or inspect.isclass(obj)) and ">>>" not in (
                    obj.__doc__ or ""):
                missing.append(f"{module}.{n}")
    assert missing == [], f"no example in the docstring of {missing}"
    # 25 promised functions and classes, most with two or three examples
    assert attempted >= 60, attempted
