"""The presets and controls several explorer panels share: the models a Chapter 8 panel and the
cards and models a Chapter 17 panel offer, KV and weight precisions, TP degrees, and the
``Control`` builders over them.

Every model dropdown is a ``ModelMenu``: the panel's chapter presets first, then every model of
the shelf (``companion.models.shelf()``: real config.json files, counted exactly), labelled
"shelf: <name>". ``config_control()`` is the "your config.json" text box of the panels that
size KV and weights; ``ModelMenu.pick(model, config_json)`` turns the two into the Model to
draw and a readout line naming its source, or, for a config that cannot be read, the
reader's error (model_from_hf_config's message, naming the field) while the menu's model stays
drawn.
"""

from __future__ import annotations

import html
import warnings
from functools import lru_cache

from companion import calc, models, specs, theme
from companion.explorers.base import Control

__all__ = ["CH08_MODELS", "KV_PRECISIONS", "HARDWARE_PRESETS", "KV_PRECISION_BYTES",
           "hardware_control", "SERVING_MODELS", "SERVING_CARDS", "WEIGHT_FORMATS", "TP_DEGREES",
           "choice_control", "model_control", "card_control", "ModelMenu", "SHELF_LABEL",
           "CONFIG_CONTROL", "SERVING_MENU", "source_line", "kv_per_token_text", "blank_traces",
           "config_control", "config_examples", "read_pasted_config", "ROOFLINE_MENU",
           "roofline_model_control"]

SHELF_LABEL = "shelf: "
CONFIG_CONTROL = "config_json"


class ModelMenu:
    """A model dropdown's entries: ``presets`` ({name: Model}, the chapter's shapes, values are
    their names) followed by the shelf (label "shelf: <name>", value the shelf key such as
    "qwen3-30b-a3b"). ``menu[value]`` is the Model; ``control()`` the dropdown."""

    def __init__(self, presets: dict):
        self.presets = dict(presets)

    def options(self) -> dict:
        """label -> value: the presets by name, then the shelf."""
        opts = {name: name for name in self.presets}
        opts.update({f"{SHELF_LABEL}{m.name}": key for key, m in _shelf().items()})
        return opts

    def control(self, default: str, *, name: str = "model", label: str = "model") -> Control:
        return Control(name, label, "choice", default, options=self.options())

    def __getitem__(self, value) -> specs.Model:
        if value in self.presets:
            return self.presets[value]
        return _shelf()[value]

    def __contains__(self, value) -> bool:
        return value in self.presets or value in _shelf()

    def __iter__(self):
        return iter(self.options().values())

    def pick(self, value, config_json: str = "") -> tuple[specs.Model, str]:
        """(Model to draw, readout line): the pasted/pointed-to config when there is one and it
        reads, else the menu's model; the line names the model's source, or the config's
        error (the menu's model is drawn meanwhile) and any field warnings."""
        chosen = self[value]
        if not config_json.strip():
            return chosen, source_line(chosen)
        model, problem, notes = read_pasted_config(config_json)
        if model is None:
            return chosen, (f"<br><span style='color:{theme.RED}'><b>your config.json</b>: "
                            f"{html.escape(problem)}</span> (showing {html.escape(chosen.name)} "
                            f"meanwhile)")
        warned = "".join(f"<br><small>warning: {html.escape(n)}</small>" for n in notes)
        return model, source_line(model) + warned


@lru_cache(maxsize=1)
def _shelf() -> dict:
    return {key: models.load(key) for key in models.shelf_keys()}


def kv_per_token_text(model: specs.Model, bytes_per_value: float) -> str:
    """How one token's KV is counted, as readout text: K and V per KV head, or MLA's latent
    plus rope key; with sliding-window layers, the cap they put on it."""
    m, b = model, bytes_per_value
    if m.kv_lora_rank is not None:
        text = (f"{m.n_layers} layers x ({m.kv_lora_rank} latent + {m.qk_rope_head_dim} rope) "
                f"x {b:g} B (MLA)")
    else:
        text = f"2 x {m.n_layers} layers x {m.n_kv_heads} KV heads x {m.head_dim} x {b:g} B"
    if m.sliding_window is not None:
        sliding = sum(w is not None for w in m.layer_windows)
        text += (f"; {sliding} of the {m.n_layers} layers keep only the last "
                 f"{m.sliding_window - 1:,} tokens")
    return text


def blank_traces(traces: list) -> list:
    """``traces`` with their data emptied (same count and types, so a shown figure updates in
    place): what a panel draws for a model that does not fit the setting, beside a readout
    that says so."""
    return [dict(t, x=[], y=[], **({"text": []} if "text" in t else {})) for t in traces]


def source_line(model: specs.Model) -> str:
    """A readout line saying where ``model``'s shape comes from."""
    return f"<br><small>{html.escape(model.name)}: {html.escape(model.source)}</small>"


@lru_cache(maxsize=32)
def read_pasted_config(config_json: str) -> tuple:
    """(Model or None, error message or "", field warnings): ``models.model_from_hf_config``
    on a path or pasted text, its errors and ``ConfigFieldWarning``s caught as text."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", models.ConfigFieldWarning)
        try:
            model = models.model_from_hf_config(config_json.strip(), name="your config.json")
        except (ValueError, TypeError) as e:
            return None, str(e), ()
    notes = tuple(str(w.message) for w in caught
                  if issubclass(w.category, models.ConfigFieldWarning))
    return model, "", notes


def config_examples() -> dict:
    """Example texts for the config box (tests and ``corners`` try them): a dense shelf
    config pasted whole, an MoE, MLA, a sliding window, and one with a field missing."""
    import json

    dense = models.shelf_config("llama-3.1-8b")
    broken = {k: val for k, val in dense.items() if k != "num_key_value_heads"
              and k != "hidden_size"}
    return {"Llama-3.1-8B (dense)": json.dumps(dense),
            "Qwen3-30B-A3B (MoE)": json.dumps(models.shelf_config("qwen3-30b-a3b")),
            "DeepSeek-V2-Lite (MLA)": json.dumps(models.shelf_config("deepseek-v2-lite")),
            "Mistral-7B-v0.1 (sliding window)": json.dumps(
                models.shelf_config("mistral-7b-v0.1")),
            "missing hidden_size": json.dumps(broken)}


def config_control() -> Control:
    """The "your config.json" text box (path or pasted text; empty: the model menu applies)."""
    return Control(CONFIG_CONTROL, "your config.json (path or text)", "text", "",
                   options=config_examples())


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


# the models the 17 §2 and §3 panels offer (roofline, request budget, head-of-line blocking)
ROOFLINE_MENU = ModelMenu({m.name: m for m in (specs.LLAMA_8B, specs.LLAMA_70B, specs.LLAMA_405B,
                                               specs.QWEN3_8B)})


def roofline_model_control() -> Control:
    """The "model" choice over ``ROOFLINE_MENU``, Llama 8B first selected."""
    return ROOFLINE_MENU.control(specs.LLAMA_8B.name)


# the models and cards the §6-§10 panels offer, by display name
SERVING_MODELS = {m.name: m for m in (specs.LLAMA_8B, specs.LLAMA_70B, specs.LLAMA_405B)}
SERVING_CARDS = {h.name: h for h in (specs.H100_SXM, specs.H200_SXM, specs.A100_80GB)}
WEIGHT_FORMATS = {"BF16 (2 B)": 2.0, "FP8 / INT8 (1 B)": 1.0, "INT4 (0.5 B)": 0.5}
TP_DEGREES = {"1": 1, "2": 2, "4": 4, "8": 8}


def choice_control(name: str, label: str, default, options: dict) -> Control:
    """A drop-down ``Control`` over ``options`` (display label -> value)."""
    return Control(name, label, "choice", default, options=options)


# the §6-§10 panels' dropdowns: their presets, then the shelf
SERVING_MENU = ModelMenu(SERVING_MODELS)


def model_control(default: str = specs.LLAMA_70B.name, presets=None) -> Control:
    """The "model" choice over the presets named in ``presets`` (default all of
    ``SERVING_MODELS``), then the shelf; look the value up in ``SERVING_MENU``."""
    names = presets or SERVING_MODELS
    return ModelMenu({n: SERVING_MODELS[n] for n in names}).control(default)


def card_control(cards=None) -> Control:
    """The "hardware" choice (labelled GPU) over ``cards`` (default ``SERVING_CARDS``)."""
    names = cards or SERVING_CARDS
    return choice_control("hardware", "GPU", specs.H100_SXM.name, {n: n for n in names})
