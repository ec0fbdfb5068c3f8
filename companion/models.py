"""Any model a student brings: a Hugging Face ``config.json`` counted exactly, and a shelf of real
configs shipped with the package.

``model_from_hf_config`` reads a config (a path, a folder holding ``config.json``, a dict, or the
pasted JSON text) and returns a ``specs.Model`` whose parameter count equals what the model's own
implementation in ``transformers`` instantiates: attention projections with their biases, gated
MLPs, routed and shared experts and their routers, every norm the architecture has, the embedding
table and an lm_head unless the model type ties them. It also carries what KV sizing needs:
KV heads and head width, MLA's compressed latent (DeepSeek-V2/V3), and sliding-window layers,
so a cache's size at a given context comes out right (see ``calc.kv_bytes_at_context``).

Supported ``model_type`` values are the keys of ``ARCHITECTURES``. Anything else raises a
ValueError naming the model type; a field that changes sizes in a way this module does not model
raises or warns (``ConfigFieldWarning``) naming the field; a missing field that the model type
has no default for raises a ValueError naming it. Fields a model type fills in by default when
they are absent (Gemma ties its embeddings, Mistral slides over 4096 tokens ...) are applied as
``transformers`` applies them and listed in ``Model.notes``.

``shelf()`` returns every config in ``companion/data/hf_configs/`` as a Model keyed by display
name, ``load(key)`` one of them (by key or display name), ``shelf_sources()`` where each file
came from.
"""

from __future__ import annotations

import json
import os
import warnings
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

from companion import validate as v
from companion.spec_types import Model

__all__ = ["ARCHITECTURES", "ConfigFieldWarning", "model_from_hf_config", "shelf", "load",
           "shelf_keys", "shelf_sources", "shelf_config"]


class ConfigFieldWarning(UserWarning):
    """A config field that may change sizes was not understood, or is counted differently."""


@dataclass(frozen=True)
class Architecture:
    """How one ``model_type`` builds its blocks (read off its ``transformers`` modeling file).

    norms_per_layer: RMSNorm weights of width hidden per block (2, or 4 for Gemma 2/3).
    qk_norm: per-head q and k norms of width head_dim (Qwen3, Gemma 3).
    qkv_bias / o_bias / mlp_bias: True, False, or the config key that switches the bias.
    tie_default: tie_word_embeddings when the config does not say.
    window: how local attention is declared: None (never), "plain" (``sliding_window`` on
      every layer), "qwen" (``use_sliding_window`` and ``max_window_layers``), "gemma2"
      (every other layer) or "gemma3" (``sliding_window_pattern``, default every 6th full).
    window_default: the model type's default ``sliding_window`` when the key is absent.
    moe: None, "mixtral", "qwen3_moe" or "deepseek".
    mla: DeepSeek's multi-head latent attention.
    """

    norms_per_layer: int = 2
    qk_norm: bool = False
    qkv_bias: object = False
    o_bias: object = False
    mlp_bias: object = False
    tie_default: bool = False
    window: str | None = None
    window_default: int | None = None
    moe: str | None = None
    mla: bool = False


ARCHITECTURES = {
    "llama": Architecture(qkv_bias="attention_bias", o_bias="attention_bias",
                          mlp_bias="mlp_bias"),
    "mistral": Architecture(window="plain", window_default=4096),
    "mixtral": Architecture(window="plain", moe="mixtral"),
    "qwen2": Architecture(qkv_bias=True, window="qwen", window_default=4096),
    "qwen3": Architecture(qk_norm=True, qkv_bias="attention_bias", o_bias="attention_bias",
                          window="qwen", window_default=4096),
    "qwen3_moe": Architecture(qk_norm=True, qkv_bias="attention_bias", o_bias="attention_bias",
                              window="qwen", window_default=4096, moe="qwen3_moe"),
    "phi3": Architecture(window="plain"),
    "gemma": Architecture(qkv_bias="attention_bias", o_bias="attention_bias", tie_default=True),
    "gemma2": Architecture(norms_per_layer=4, qkv_bias="attention_bias", o_bias="attention_bias",
                           tie_default=True, window="gemma2", window_default=4096),
    "gemma3_text": Architecture(norms_per_layer=4, qk_norm=True, qkv_bias="attention_bias",
                                o_bias="attention_bias", tie_default=True, window="gemma3",
                                window_default=4096),
    "deepseek_v2": Architecture(mlp_bias="mlp_bias", moe="deepseek", mla=True),
    "deepseek_v3": Architecture(moe="deepseek", mla=True),
}

# A multimodal wrapper whose language model sits under "text_config" (counted alone, with a
# warning): Gemma 3 4B and up ship as "gemma3" with a vision tower.
_WRAPPERS = {"gemma3": "gemma3_text"}

# Gemma3TextConfig's defaults: transformers writes a nested text_config without the fields that
# equal them, so a real Gemma 3 config.json omits these.
_NESTED_DEFAULTS = {
    "gemma3_text": dict(vocab_size=262208, hidden_size=2304, intermediate_size=9216,
                        num_hidden_layers=26, num_attention_heads=8, num_key_value_heads=4,
                        head_dim=256, sliding_window=4096, sliding_window_pattern=6),
}

# Fields every supported model type reads but that change no size (routing rules, rope, dropout,
# token ids, numerics). Anything not listed here nor read below is looked at by _unknown_fields.
_IRRELEVANT = {
    "architectures", "model_type", "_name_or_path", "auto_map", "transformers_version",
    "torch_dtype", "dtype", "bos_token_id", "eos_token_id", "pad_token_id", "hidden_act",
    "hidden_activation", "initializer_range", "rms_norm_eps", "layer_norm_eps", "use_cache",
    "rope_theta", "rope_scaling", "rope_parameters", "rope_local_base_freq", "rope_interleave",
    "max_position_embeddings", "original_max_position_embeddings", "attention_dropout",
    "embd_pdrop", "resid_pdrop", "pretraining_tp", "output_router_logits",
    "router_aux_loss_coef", "router_jitter_noise", "aux_loss_alpha", "seq_aux",
    "norm_topk_prob", "topk_method", "n_group", "topk_group", "routed_scaling_factor",
    "scoring_func", "ep_size", "query_pre_attn_scalar", "final_logit_softcapping",
    "attn_logit_softcapping", "cache_implementation", "use_mrope", "partial_rotary_factor",
    "use_bidirectional_attention", "tie_word_embeddings", "head_dim", "num_key_value_heads",
    "attention_bias", "mlp_bias", "sliding_window", "use_sliding_window", "max_window_layers",
    "layer_types", "sliding_window_pattern", "_sliding_window_pattern", "quantization_config",
    "num_nextn_predict_layers", "moe_layer_freq", "torchscript", "return_dict",
}
_SIZE_WORDS = ("size", "dim", "num_", "n_", "expert", "layer", "head", "rank", "vocab",
               "window", "bias", "norm", "tie", "share", "proj", "lora", "mtp")


def _read(path_or_dict):
    """(dict, default name) from a path, a folder, a dict or pasted JSON text."""
    if isinstance(path_or_dict, dict):
        return dict(path_or_dict), "model"
    if isinstance(path_or_dict, str) and path_or_dict.lstrip().startswith("{"):
        try:
            return json.loads(path_or_dict), "model"
        except json.JSONDecodeError as e:
            raise ValueError(f"path_or_dict: the pasted text is not valid JSON ({e})") from None
    if isinstance(path_or_dict, (str, os.PathLike)):
        path = os.fspath(path_or_dict)
        if os.path.isdir(path):
            path = os.path.join(path, "config.json")
        if not os.path.exists(path):
            raise ValueError(f"path_or_dict: no file {path!r}")
        with open(path, encoding="utf-8") as f:
            try:
                cfg = json.load(f)
            except json.JSONDecodeError as e:
                raise ValueError(f"path_or_dict: {path!r} is not valid JSON ({e})") from None
        stem = os.path.splitext(os.path.basename(path))[0]
        if stem == "config":
            stem = os.path.basename(os.path.dirname(os.path.abspath(path))) or "model"
        return cfg, stem
    raise TypeError(f"path_or_dict: expected a path to config.json, a dict or the JSON text, "
                    f"got {type(path_or_dict).__name__}")


class _Fields:
    """Reads a config's fields, recording which model-type defaults it applied."""

    def __init__(self, cfg: dict, model_type: str, defaults: dict | None = None):
        self.cfg, self.model_type = cfg, model_type
        self.defaults = defaults or {}
        self.applied: list[str] = []

    def has(self, key) -> bool:
        return self.cfg.get(key) is not None

    def need(self, key):
        if self.has(key):
            return self.cfg[key]
        if key in self.defaults:
            self.applied.append(f"{key}={self.defaults[key]!r}")
            return self.defaults[key]
        raise ValueError(f"config.json: missing required field {key!r} (model_type "
                         f"{self.model_type!r})")

    def count(self, key, *, minimum=1):
        return v.count(key, self.need(key), minimum=minimum)

    def optional(self, key, default, *, note=True):
        if key in self.cfg:
            return self.cfg[key]
        if key in self.defaults:
            default = self.defaults[key]
        if note:
            self.applied.append(f"{key}={default!r}")
        return default

    def flag(self, spec) -> bool:
        """A bias switch: a fixed True/False or the config key holding it (absent: False)."""
        if isinstance(spec, bool):
            return spec
        value = self.cfg.get(spec, False)
        if not isinstance(value, bool):
            raise TypeError(f"{spec}: expected true or false, got {value!r}")
        return value


def _unknown_fields(cfg: dict, read: set, model_type: str) -> None:
    for key in sorted(set(cfg) - read - _IRRELEVANT):
        if key.startswith("_") or not any(w in key for w in _SIZE_WORDS):
            continue
        warnings.warn(f"{key}: not understood for model_type {model_type!r}; it may change "
                      f"sizes that this count leaves out", ConfigFieldWarning, stacklevel=3)


def _layer_types(f: _Fields, arch: Architecture, n_layers: int):
    """(sliding_window, layer_types or None) as transformers derives them for this type."""
    if arch.window is None:
        return None, None
    if arch.window == "qwen":
        if not f.optional("use_sliding_window", False, note=False):
            return None, None
        window = v.count("sliding_window", f.optional("sliding_window", arch.window_default))
        first = v.count("max_window_layers", f.optional("max_window_layers", 28), minimum=0)
        types = tuple("sliding_attention" if i >= first else "full_attention"
                      for i in range(n_layers))
    else:
        window = f.optional("sliding_window", arch.window_default,
                            note=arch.window_default is not None)
        if window is None:
            return None, None
        window = v.count("sliding_window", window)
        if isinstance(f.cfg.get("layer_types"), list):
            types = tuple(f.cfg["layer_types"])
        elif arch.window == "gemma2":
            types = tuple("sliding_attention" if (i + 1) % 2 else "full_attention"
                          for i in range(n_layers))
        elif arch.window == "gemma3":
            pattern = v.count("sliding_window_pattern", f.cfg.get(
                "sliding_window_pattern", f.cfg.get("_sliding_window_pattern", f.optional(
                    "sliding_window_pattern", 6))))
            types = tuple("sliding_attention" if (i + 1) % pattern else "full_attention"
                          for i in range(n_layers))
        else:
            types = None  # every layer slides
    if types is not None and "sliding_attention" not in types:
        return None, None
    return window, types


def _gated_mlp(hidden: int, inner: int, bias: bool) -> int:
    """gate, up and down projections of a SwiGLU/GeGLU MLP (+ their biases)."""
    return 3 * hidden * inner + (2 * inner + hidden if bias else 0)


def _build(cfg: dict, model_type: str, *, name: str, bytes_per_param: float, source: str,
           defaults: dict | None = None, notes: tuple = ()) -> Model:
    arch = ARCHITECTURES[model_type]
    f = _Fields(cfg, model_type, defaults)
    n_layers = f.count("num_hidden_layers")
    hidden = f.count("hidden_size")
    n_heads = f.count("num_attention_heads")
    vocab = f.count("vocab_size")
    n_kv = v.count("num_key_value_heads", cfg.get("num_key_value_heads")
                   or f.defaults.get("num_key_value_heads") or n_heads)
    tie = f.optional("tie_word_embeddings", arch.tie_default, note=arch.tie_default)
    if not isinstance(tie, bool):
        raise TypeError(f"tie_word_embeddings: expected true or false, got {tie!r}")
    out_notes = list(notes)

    # --- attention ---------------------------------------------------------------------
    kv_lora = rope = v_dim = None
    if arch.mla:
        kv_lora = f.count("kv_lora_rank")
        rope = f.count("qk_rope_head_dim")
        nope = f.count("qk_nope_head_dim")
        v_dim = f.count("v_head_dim")
        q_lora = cfg.get("q_lora_rank")
        qk_dim = nope + rope
        bias = f.flag("attention_bias")
        if q_lora is None:
            q = hidden * n_heads * qk_dim
        else:
            q_lora = v.count("q_lora_rank", q_lora)
            q = hidden * q_lora + (q_lora if bias else 0) + q_lora + q_lora * n_heads * qk_dim
        kv = (hidden * (kv_lora + rope) + ((kv_lora + rope) if bias else 0) + kv_lora
              + kv_lora * n_heads * (nope + v_dim))
        o = n_heads * v_dim * hidden + (hidden if bias else 0)
        attention = q + kv + o
        head_dim = qk_dim
        n_kv = n_heads  # every head gets its own K and V out of the shared latent
    else:
        if f.has("head_dim"):
            head_dim = v.count("head_dim", cfg["head_dim"])
        elif "head_dim" in f.defaults:
            head_dim = f.need("head_dim")
        else:
            if hidden % n_heads:
                raise ValueError(f"head_dim: missing, and hidden_size={hidden} is not divisible "
                                 f"by num_attention_heads={n_heads}")
            head_dim = hidden // n_heads
        q_out, kv_out = n_heads * head_dim, n_kv * head_dim
        attention = hidden * (q_out + 2 * kv_out) + q_out * hidden
        if f.flag(arch.qkv_bias):
            attention += q_out + 2 * kv_out
        if f.flag(arch.o_bias):
            attention += hidden
        if arch.qk_norm:
            attention += 2 * head_dim
    norms = arch.norms_per_layer * hidden

    # --- MLP / experts -----------------------------------------------------------------
    mlp_bias = f.flag(arch.mlp_bias)
    dense_layers, moe_layers = n_layers, 0
    n_experts = top_k = None
    expert = router = shared = 0
    if arch.moe == "mixtral":
        n_experts = f.count("num_local_experts")
        top_k = f.count("num_experts_per_tok")
        expert = _gated_mlp(hidden, f.count("intermediate_size"), False)
        router = hidden * n_experts
        dense_layers, moe_layers = 0, n_layers
        dense_inner = 0
    elif arch.moe == "qwen3_moe":
        n_experts = f.count("num_experts", minimum=0)
        if n_experts:
            top_k = f.count("num_experts_per_tok")
            step = f.count("decoder_sparse_step")
            only = cfg.get("mlp_only_layers") or []
            moe_layers = sum(1 for i in range(n_layers)
                             if i not in only and (i + 1) % step == 0)
            expert = _gated_mlp(hidden, f.count("moe_intermediate_size"), False)
            router = hidden * n_experts
        dense_layers = n_layers - moe_layers
        dense_inner = f.count("intermediate_size") if dense_layers else 0
        if not moe_layers:
            n_experts = top_k = None
    elif arch.moe == "deepseek":
        n_experts = f.count("n_routed_experts")
        top_k = f.count("num_experts_per_tok")
        first_dense = f.count("first_k_dense_replace", minimum=0)
        if cfg.get("moe_layer_freq", 1) != 1:
            warnings.warn(f"moe_layer_freq: {cfg['moe_layer_freq']!r}; transformers routes every "
                          f"layer from first_k_dense_replace on and so does this count",
                          ConfigFieldWarning, stacklevel=3)
        moe_layers = max(0, n_layers - first_dense)
        dense_layers = n_layers - moe_layers
        moe_inner = f.count("moe_intermediate_size")
        expert = _gated_mlp(hidden, moe_inner, False)
        router = hidden * n_experts
        n_shared = f.count("n_shared_experts", minimum=0)
        shared = _gated_mlp(hidden, moe_inner * n_shared, mlp_bias) if n_shared else 0
        dense_inner = f.count("intermediate_size") if dense_layers else 0
        if model_type == "deepseek_v3":
            out_notes.append(f"the router's e_score_correction_bias ({moe_layers} x {n_experts} "
                             f"values) is a buffer in transformers, not a parameter; not counted")
    else:
        dense_inner = f.count("intermediate_size")
    n_shared_experts = (f.count("n_shared_experts", minimum=0) if arch.moe == "deepseek" else 0)
    if n_experts is not None and top_k > n_experts:
        raise ValueError(f"num_experts_per_tok: {top_k} exceeds the {n_experts} experts")

    dense_mlp = _gated_mlp(hidden, dense_inner, mlp_bias) if dense_layers else 0
    moe_mlp = (n_experts or 0) * expert + router + shared
    layers = n_layers * (attention + norms) + dense_layers * dense_mlp + moe_layers * moe_mlp

    table = vocab * hidden
    embedding = 0 if tie else table
    head = table + hidden  # lm_head (or the tied table, once) + final norm
    total = layers + embedding + head

    if cfg.get("num_nextn_predict_layers"):
        out_notes.append(f"num_nextn_predict_layers={cfg['num_nextn_predict_layers']}: the "
                         f"multi-token-prediction module in the checkpoint is not part of the "
                         f"transformers model and is not counted")
    if cfg.get("quantization_config"):
        method = cfg["quantization_config"].get("quant_method", "?")
        warnings.warn(f"quantization_config: the checkpoint stores {method} weights; this count "
                      f"is parameters, bytes use bytes_per_param={bytes_per_param:g}",
                      ConfigFieldWarning, stacklevel=3)
        out_notes.append(f"checkpoint weights are {method}-quantized; bytes here assume "
                         f"{bytes_per_param:g} B per parameter")
    window, types = _layer_types(f, arch, n_layers)
    if f.applied:
        out_notes.append(f"defaults of model_type {model_type!r} applied: "
                         + ", ".join(f.applied))
    read = set(cfg) & {"num_hidden_layers", "hidden_size", "num_attention_heads", "vocab_size",
                       "intermediate_size", "kv_lora_rank", "qk_rope_head_dim",
                       "qk_nope_head_dim", "v_head_dim", "q_lora_rank", "n_routed_experts",
                       "n_shared_experts", "num_experts_per_tok", "first_k_dense_replace",
                       "moe_intermediate_size", "num_local_experts", "num_experts",
                       "decoder_sparse_step", "mlp_only_layers"}
    _unknown_fields(cfg, read, model_type)
    return Model(name=name, n_layers=n_layers, n_kv_heads=n_kv, head_dim=head_dim,
                 n_params=total, hidden_size=hidden, n_heads=n_heads,
                 intermediate_size=dense_inner or None, vocab_size=vocab,
                 tie_word_embeddings=tie, embedding_params=embedding, head_params=head,
                 bytes_per_param=bytes_per_param, n_experts=n_experts,
                 experts_per_token=top_k, moe_layers=moe_layers, expert_params=expert,
                 n_shared_experts=n_shared_experts, kv_lora_rank=kv_lora,
                 qk_rope_head_dim=rope, v_head_dim=v_dim, sliding_window=window,
                 layer_types=types, notes=tuple(out_notes), source=source)


def model_from_hf_config(path_or_dict, *, name: str | None = None,
                         bytes_per_param: float = 2.0) -> Model:
    """A ``specs.Model`` from a Hugging Face ``config.json``, its parameters counted exactly.

    ``path_or_dict``: a path to config.json (or to the folder holding it), a dict, or the
    JSON text itself (pasted). The count matches the model's transformers implementation
    (tests/data/reference_counts.json, made by tools/reference_counts.py). An unknown
    model_type, a missing field without a model-type default, or a bad value raises ValueError
    naming it; a size-changing field this reader does not model warns (ConfigFieldWarning).

    Qwen3-8B's public config gives the 8.1.2 byte counts:

    >>> from companion import calc, specs
    >>> qwen = specs.model_from_hf_config({
    ...     "model_type": "qwen3", "num_hidden_layers": 36, "num_attention_heads": 32,
    ...     "num_key_value_heads": 8, "head_dim": 128, "hidden_size": 4096,
    ...     "intermediate_size": 12288, "vocab_size": 151936, "tie_word_embeddings": False})
    >>> qwen.weight_bytes, calc.kv_bytes_per_token(qwen)
    (16381470720.0, 147456)
    >>> specs.model_from_hf_config({"model_type": "qwen3", "num_hidden_layers": 36})
    Traceback (most recent call last):
    ...
    ValueError: config.json: missing required field 'hidden_size' (model_type 'qwen3')
    """
    cfg, default_name = _read(path_or_dict)
    bpp = v.positive("bytes_per_param", bytes_per_param)
    model_type = cfg.get("model_type")
    if model_type is None:
        raise ValueError("config.json: missing required field 'model_type' (it says which "
                         "architecture to count)")
    if not isinstance(model_type, str):
        raise TypeError(f"model_type: expected a string, got {model_type!r}")
    label = name or cfg.get("_name_or_path") or default_name
    source = "derived from a Hugging Face config.json"
    defaults, notes = None, ()
    if model_type in _WRAPPERS:
        inner = _WRAPPERS[model_type]
        text = cfg.get("text_config")
        if not isinstance(text, dict):
            raise ValueError(f"text_config: model_type {model_type!r} keeps its language model "
                             f"there, and the config has none")
        if cfg.get("vision_config") is not None:
            warnings.warn(f"vision_config: model_type {model_type!r} has a vision tower and "
                          f"projector; only the language model (text_config) is counted",
                          ConfigFieldWarning, stacklevel=2)
            notes = ("only the language model is counted (no vision tower or projector)",)
        cfg = dict(text, model_type=inner)
        defaults, model_type = _NESTED_DEFAULTS.get(inner), inner
    if model_type not in ARCHITECTURES:
        supported = ", ".join(sorted(set(ARCHITECTURES) | set(_WRAPPERS)))
        raise ValueError(f"model_type: {model_type!r} is not supported (its parameter count "
                         f"would be a guess); supported: {supported}")
    return _build(cfg, model_type, name=label, bytes_per_param=bpp, source=source,
                  defaults=defaults, notes=notes)


# --- the shelf ------------------------------------------------------------------------------

def _data_dir():
    return resources.files("companion") / "data" / "hf_configs"


@lru_cache(maxsize=1)
def shelf_sources() -> dict:
    """Where each shelf config came from: {key: {"model", "hf_repo", "note", ...}} with either
    "vendored_from" (a byte-for-byte copy of config.json in a public repository) or
    "transcribed_from" (written back field for field from a faithful copy held as code)."""
    return json.loads((_data_dir() / "SOURCES.json").read_text(encoding="utf-8"))["configs"]


def shelf_keys() -> list[str]:
    """The shelf's keys ("qwen3-8b", "deepseek-v3", ...), in the shelf's order."""
    return list(shelf_sources())


def _shelf_key(key) -> str:
    """The shelf key ``key`` names: a key ("qwen3-30b-a3b") or a display name as ``shelf()``
    lists it ("Qwen3-30B-A3B"), case ignored; anything else raises naming the keys."""
    sources = shelf_sources()
    if isinstance(key, str) and key not in sources:
        by_name = {meta["model"].lower(): k for k, meta in sources.items()}
        by_name.update({k.lower(): k for k in sources})
        key = by_name.get(key.strip().lower(), key)
    return v.choice("key", key, sources)


def shelf_config(key: str) -> dict:
    """The raw config.json of one shelf model, as shipped (``key`` as in ``load``)."""
    k = _shelf_key(key)
    return json.loads((_data_dir() / f"{k}.json").read_text(encoding="utf-8"))


@lru_cache(maxsize=None)
def _load(key: str, bytes_per_param: float) -> Model:
    meta = shelf_sources()[key]
    with warnings.catch_warnings():
        # the shelf's own fields are documented in SOURCES.json; nothing to warn the reader of
        warnings.simplefilter("ignore", ConfigFieldWarning)
        m = model_from_hf_config(shelf_config(key), name=meta["model"],
                                 bytes_per_param=bytes_per_param)
    # say how the file reached the shelf: a transcription is not the original bytes
    how, origin = (("copied from", meta["vendored_from"]) if "vendored_from" in meta
                   else ("transcribed from", meta["transcribed_from"]))
    return m.with_(source=f"{meta['model']} config.json (Hugging Face repository "
                          f"{meta['hf_repo']}), {how} {origin['repo']}:{origin['path']} at "
                          f"{origin['commit'][:12]}")


def load(key: str, *, bytes_per_param: float = 2.0) -> Model:
    """One shelf model by key, e.g. ``load("qwen3-30b-a3b")`` (see ``shelf_keys()``), or by
    the display name ``shelf()`` lists it under (``load("Qwen3-30B-A3B")``, case ignored)."""
    k = _shelf_key(key)
    return _load(k, v.positive("bytes_per_param", bytes_per_param))


def shelf(*, bytes_per_param: float = 2.0) -> dict:
    """Every shelf model: {display name: Model}, in the shelf's order (for model dropdowns)."""
    models = (load(k, bytes_per_param=bytes_per_param) for k in shelf_keys())
    return {m.name: m for m in models}
