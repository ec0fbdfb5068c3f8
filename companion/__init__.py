"""Companion to Chapter 8 "Inference Optimization" and Chapter 17 "LLM Inference Performance".

Layers (see README): ``specs`` (models, hardware) -> ``calc`` (closed forms) and ``sim``
(iteration-level simulators) -> ``ledger`` (every printed number re-derived) -> ``plots`` /
``widgets`` (figures and slider panels). Importing ``companion`` imports no plotting library.
"""

from companion import units, specs  # noqa: F401  (cheap: no numpy-heavy or plotting imports)

__version__ = "0.1.0"
