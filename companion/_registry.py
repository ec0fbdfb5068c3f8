"""Collect the public names of every topic module in a package into a façade module.

``companion.plots`` and ``companion.widgets`` are façades over ``companion.figures`` and
``companion.panels``: adding a topic module there is enough for its ``__all__`` to appear in
the façade, so notebook helpers never edit a shared file.
"""

from __future__ import annotations

import importlib
import pkgutil


def reexport(package, namespace: dict, facade: str) -> list[str]:
    """Import every non-private module of ``package`` and copy its ``__all__`` into ``namespace``."""
    # clashes are looked for among this call's names only: on importlib.reload the façade's
    # namespace still holds the names of its previous run
    origin: dict[str, str] = {}
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda i: i.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        for name in module.__all__:
            if name in origin:
                raise ImportError(f"{facade}: {name} is defined twice (in {origin[name]} and "
                                  f"again in {info.name})")
            namespace[name] = getattr(module, name)
            origin[name] = info.name
    return list(origin)
