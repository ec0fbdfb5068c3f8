"""Companion to Chapter 8 "Inference Optimization" and Chapter 17 "LLM Inference Performance".

Layers (README.md, "Architecture"): ``chapters`` (the chapters' stated inputs) -> ``specs``
(models, hardware) -> ``calc`` (closed forms, over ``formulas``) and ``sim`` (simulators and
the chapters' scenarios) -> ``ledger`` (every printed number re-derived) -> ``plots`` /
``widgets`` (figures and slider panels, over ``explorers``). ``where("8.3.4")`` lists what the
companion has for a section. Importing ``companion`` imports no plotting library.
"""

from companion import specs, units  # noqa: F401  (cheap: no numpy-heavy or plotting imports)
from companion.sections import where  # noqa: F401  (imports the rest only when called)

# the package's version, and pyproject.toml's (it reads this line); CHANGELOG.md says what changed
__version__ = "0.2.0"
