"""Argument checks the formula modules share, on top of ``companion.validate``: a ``Model`` and a
``Hardware`` named in the error the way every public function names its parameters."""

from __future__ import annotations

from companion import validate as v
from companion.specs import Hardware, Model

__all__ = ["model_arg", "hardware_arg"]


def model_arg(model, name: str = "model") -> Model:
    """``model`` if it is a ``companion.specs.Model``, else a TypeError naming ``name``."""
    return v.instance(name, model, Model, "a companion.specs.Model")


def hardware_arg(hardware, name: str = "hardware") -> Hardware:
    """``hardware`` if it is a ``companion.specs.Hardware``, else a TypeError naming ``name``."""
    return v.instance(name, hardware, Hardware, "a companion.specs.Hardware")
