"""The presets and controls several explorer panels share: the models a Chapter 8 panel and the
cards and models a Chapter 17 panel offer, KV and weight precisions, TP degrees, and the
``Control`` builders over them."""

from __future__ import annotations

from companion import calc, specs
from companion.explorers.base import Control

__all__ = ["CH08_MODELS", "KV_PRECISIONS", "HARDWARE_PRESETS", "KV_PRECISION_BYTES",
           "hardware_control", "SERVING_MODELS", "SERVING_CARDS", "WEIGHT_FORMATS", "TP_DEGREES",
           "choice_control", "model_control", "card_control"]


# the models a Chapter 8 panel offers, by display name
CH08_MODELS = {m.name: m for m in (specs.QWEN3_8B, specs.LLAMA_8B, specs.LLAMA_70B)}
# bytes per stored K/V value, block metadata included (8.4.2: q8_0 is 34/32, q4_0 18/32)
KV_PRECISIONS = {"BF16": 2.0, "FP8": 1.0, "q8_0": calc.bits_per_value("q8_0") / 8,
                 "q4_0": calc.bits_per_value("q4_0") / 8}


# the cards a Chapter 17 panel offers, by display name
HARDWARE_PRESETS = {h.name: h for h in (specs.H100_SXM, specs.H200_SXM, specs.A100_80GB,
                                        specs.RTX_PRO_6000, specs.GH200, specs.M2_MAX)}
KV_PRECISION_BYTES = {"BF16 (2 B)": 2.0, "FP8 (1 B)": 1.0}


def hardware_control() -> Control:
    """The "hardware" choice over ``HARDWARE_PRESETS``, H100 SXM first selected."""
    return Control("hardware", "hardware", "choice", specs.H100_SXM.name,
                   options={name: name for name in HARDWARE_PRESETS})


# the models and cards the §6-§10 panels offer, by display name
SERVING_MODELS = {m.name: m for m in (specs.LLAMA_8B, specs.LLAMA_70B, specs.LLAMA_405B)}
SERVING_CARDS = {h.name: h for h in (specs.H100_SXM, specs.H200_SXM, specs.A100_80GB)}
WEIGHT_FORMATS = {"BF16 (2 B)": 2.0, "FP8 / INT8 (1 B)": 1.0, "INT4 (0.5 B)": 0.5}
TP_DEGREES = {"1": 1, "2": 2, "4": 4, "8": 8}


def choice_control(name: str, label: str, default, options: dict) -> Control:
    """A drop-down ``Control`` over ``options`` (display label -> value)."""
    return Control(name, label, "choice", default, options=options)


def model_control(default: str = specs.LLAMA_70B.name, models=None) -> Control:
    """The "model" choice over ``models`` (names; default ``SERVING_MODELS``)."""
    names = models or SERVING_MODELS
    return choice_control("model", "model", default, {n: n for n in names})


def card_control(cards=None) -> Control:
    """The "hardware" choice (labelled GPU) over ``cards`` (default ``SERVING_CARDS``)."""
    names = cards or SERVING_CARDS
    return choice_control("hardware", "GPU", specs.H100_SXM.name, {n: n for n in names})
