"""Façades that import their topic modules only when a name is first read (PEP 562).

``companion.calc`` lists some two hundred formulas from a dozen topic modules, and importing
them all (numpy with them) took longer than everything else ``import companion`` does. A
façade built with :func:`attach` imports nothing at first; reading ``calc.kv_bytes`` imports
``companion.formulas.core`` then, once, and binds the name on the façade, so later reads are
plain attribute reads. ``from companion.calc import kv_bytes``, ``dir(calc)``, ``calc.__all__``
and ``help(calc)`` behave as before.

A façade writes the same imports a second time under ``if TYPE_CHECKING:`` so editors and type
checkers see every name; ``tests/architecture.py`` holds the two lists equal.
"""

from __future__ import annotations

import importlib
import sys
from types import ModuleType

__all__ = ["attach"]


def attach(module_name: str, homes: dict[str, tuple[str, ...]]):
    """``(__all__, __getattr__, __dir__)`` for the module ``module_name``, whose names live in
    ``homes`` (home module -> the names it gives the façade).

    ``__getattr__`` imports a listed name's home on first use; in a package (``companion.sim``)
    it also imports a submodule read as an attribute (``sim.scheduler``), as an eager
    ``__init__`` that imported it would have made available. ``__dir__`` lists every listed
    name, loaded or not, the module's dunder names and the submodules imported so far.
    """
    where: dict[str, str] = {}
    for home, names in homes.items():
        for name in names:
            if name in where:
                raise ValueError(f"homes: {name!r} is listed under both {where[name]!r} and "
                                 f"{home!r}")
            where[name] = home
    public = list(where)
    module = sys.modules[module_name]
    is_package = hasattr(module, "__path__")

    def __getattr__(name: str):
        home = where.get(name)
        if home is not None:
            value = getattr(importlib.import_module(home), name)
            setattr(module, name, value)
            return value
        if is_package and not name.startswith("__"):
            full = f"{module_name}.{name}"
            try:
                return importlib.import_module(full)
            except ModuleNotFoundError as err:
                if err.name != full:
                    raise
        raise AttributeError(f"module {module_name!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        own = vars(module)
        loaded = {n for n, obj in own.items() if isinstance(obj, ModuleType)
                  and obj.__name__ == f"{module_name}.{n}"}
        return sorted(set(public) | {n for n in own if n.startswith("__")} | loaded)

    return public, __getattr__, __dir__
