"""Model and Hardware: the two dataclasses every formula starts from.

``companion.specs`` holds the presets made of them (each with its source) and reads a Hugging
Face config.json through ``companion.models``; both import these classes from here, so neither
needs the other to define them.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from companion import validate as v

LAYER_TYPES = ("full_attention", "sliding_attention")


@dataclass(frozen=True)
class Model:
    """A decoder-only transformer's shape, enough for KV sizing, byte and FLOP counts.

    ``n_params`` is the total parameter count. Three quantities are derived from it unless given:
    ``weight_bytes`` (resident weights) = n_params x bytes_per_param; ``streamed_weight_bytes``
    (D_w, read once per decode step) = (n_params - embedding_params) x bytes_per_param, the input
    embedding table being looked up by row (footnote 1 of Ch. 8; 0 by default, which is Chapter
    17's simplification that every parameter is streamed); ``layer_params`` (the transformer
    blocks, which prefill FLOPs count, 8.3.4) = n_params - embedding_params - head_params, where
    head_params are the lm_head and final norm (a tied table is counted there, once).
    ``with_`` recomputes a derived quantity whenever one of its inputs changes, unless the call
    gives it explicitly.

    Optional structure read from a Hugging Face config (all None/empty for a plain shape):

    - MoE: ``n_experts`` routed experts per MoE layer, ``experts_per_token`` (top-k),
      ``moe_layers`` layers that route, ``expert_params`` parameters of one routed expert in one
      layer, ``n_shared_experts`` always-on experts (counted in the dense part).
    - MLA (DeepSeek): ``kv_lora_rank`` and ``qk_rope_head_dim``; a token's cache per layer is the
      compressed latent plus the shared rope key, kv_lora_rank + qk_rope_head_dim values.
      ``v_head_dim`` when values are narrower than the query/key head (MLA).
    - Local attention: ``sliding_window`` tokens and ``layer_types`` (one "full_attention" or
      "sliding_attention" per layer; a window without layer types means every layer slides).
    - ``notes``: what a reader should know about the count (defaults applied, parts left out).

    Qwen3-8B's shape and exact parameter count give the chapters' 16,381,470,720 B of BF16
    weights and 147,456 B of KV per token (8.1.2):

    >>> from companion import calc, specs
    >>> qwen = specs.Model("Qwen3-8B", 36, 8, 128, 8_190_735_360)
    >>> qwen.weight_bytes, calc.kv_bytes_per_token(qwen)
    (16381470720.0, 147456)
    """

    name: str
    n_layers: int
    n_kv_heads: int
    head_dim: int
    n_params: float
    weight_bytes: float | None = None
    streamed_weight_bytes: float | None = None
    hidden_size: int | None = None
    n_heads: int | None = None
    intermediate_size: int | None = None
    vocab_size: int | None = None
    tie_word_embeddings: bool = False
    layer_params: float | None = None
    bytes_per_param: float = 2.0
    source: str = ""
    embedding_params: float = 0.0
    head_params: float = 0.0
    n_experts: int | None = None
    experts_per_token: int | None = None
    moe_layers: int = 0
    expert_params: float = 0.0
    n_shared_experts: int = 0
    kv_lora_rank: int | None = None
    qk_rope_head_dim: int | None = None
    v_head_dim: int | None = None
    sliding_window: int | None = None
    layer_types: tuple | None = None
    notes: tuple = ()

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise TypeError(f"name: expected a non-empty string, got {self.name!r}")
        v.count("n_layers", self.n_layers)
        v.count("n_kv_heads", self.n_kv_heads)
        v.count("head_dim", self.head_dim)
        v.positive("n_params", self.n_params)
        v.positive("bytes_per_param", self.bytes_per_param)
        for name in ("hidden_size", "n_heads", "intermediate_size", "vocab_size", "n_experts",
                     "experts_per_token", "kv_lora_rank", "qk_rope_head_dim", "v_head_dim",
                     "sliding_window"):
            if getattr(self, name) is not None:
                v.count(name, getattr(self, name))
        for name in ("weight_bytes", "streamed_weight_bytes", "layer_params"):
            if getattr(self, name) is not None:
                v.positive(name, getattr(self, name))
        for name in ("embedding_params", "head_params", "expert_params"):
            v.nonnegative(name, getattr(self, name))
        v.count("moe_layers", self.moe_layers, minimum=0)
        v.count("n_shared_experts", self.n_shared_experts, minimum=0)
        if self.n_heads is not None and self.n_heads % self.n_kv_heads:
            raise ValueError(f"n_kv_heads: {self.n_kv_heads} does not divide n_heads={self.n_heads}")
        self._check_moe()
        if (self.kv_lora_rank is None) != (self.qk_rope_head_dim is None):
            raise ValueError("kv_lora_rank: MLA needs kv_lora_rank and qk_rope_head_dim together")
        self._check_layer_types()
        if self.embedding_params + self.head_params >= self.n_params:
            raise ValueError(f"embedding_params: embedding ({self.embedding_params:g}) and head "
                             f"({self.head_params:g}) leave no layer parameters of "
                             f"n_params={self.n_params:g}")
        if not isinstance(self.notes, tuple):
            object.__setattr__(self, "notes", tuple(self.notes))
        if self.weight_bytes is None:
            object.__setattr__(self, "weight_bytes", self.n_params * self.bytes_per_param)
        if self.streamed_weight_bytes is None:
            object.__setattr__(self, "streamed_weight_bytes",
                               (self.n_params - self.embedding_params) * self.bytes_per_param)
        if self.layer_params is None:
            object.__setattr__(self, "layer_params",
                               self.n_params - self.embedding_params - self.head_params)

    def _check_moe(self):
        if self.n_experts is None and self.experts_per_token is None and not self.moe_layers:
            return
        if self.n_experts is None or self.experts_per_token is None:
            raise ValueError("n_experts: an MoE needs n_experts and experts_per_token together")
        if self.experts_per_token > self.n_experts:
            raise ValueError(f"experts_per_token: {self.experts_per_token} exceeds "
                             f"n_experts={self.n_experts}")
        if not 0 < self.moe_layers <= self.n_layers:
            raise ValueError(f"moe_layers: must be in 1..n_layers={self.n_layers}, "
                             f"got {self.moe_layers}")
        if self.expert_params <= 0:
            raise ValueError("expert_params: an MoE needs the parameters of one routed expert")
        if self.moe_layers * self.n_experts * self.expert_params >= self.n_params:
            raise ValueError("expert_params: the routed experts alone exceed n_params")

    def _check_layer_types(self):
        if self.layer_types is None:
            return
        types = tuple(self.layer_types)
        object.__setattr__(self, "layer_types", types)
        if len(types) != self.n_layers:
            raise ValueError(f"layer_types: has {len(types)} entries for n_layers={self.n_layers}")
        bad = sorted({t for t in types if t not in LAYER_TYPES})
        if bad:
            raise ValueError(f"layer_types: unknown {bad}; expected {LAYER_TYPES}")
        if "sliding_attention" in types and self.sliding_window is None:
            raise ValueError("sliding_window: layer_types has sliding layers but no window")

    # --- attention and KV ---------------------------------------------------------------

    @property
    def n_query_heads(self) -> int:
        """Query heads (defaults to the KV heads, i.e. MHA, when the config does not say)."""
        return self.n_heads if self.n_heads is not None else self.n_kv_heads

    @property
    def is_mla(self) -> bool:
        """True for multi-head latent attention (DeepSeek-V2/V3): the cache holds a latent."""
        return self.kv_lora_rank is not None

    @property
    def attention_type(self) -> str:
        """'MLA', 'MHA' (one KV head per query head), 'MQA' (one KV head) or 'GQA' (between)."""
        if self.is_mla:
            return "MLA"
        if self.n_kv_heads == self.n_query_heads:
            return "MHA"
        if self.n_kv_heads == 1:
            return "MQA"
        return "GQA"

    @property
    def kv_row_values(self) -> int:
        """Values in one cached row that a grouped format quantises together: a head's
        head_dim, or MLA's whole latent + rope key (kv_lora_rank + qk_rope_head_dim)."""
        return self.kv_lora_rank + self.qk_rope_head_dim if self.is_mla else self.head_dim

    @property
    def kv_values_per_layer(self) -> int:
        """Values one token leaves in one layer's cache: 2 (K and V) x KV heads x head_dim, or
        MLA's kv_lora_rank + qk_rope_head_dim (one latent shared by K and V)."""
        return self.kv_row_values if self.is_mla else 2 * self.n_kv_heads * self.head_dim

    @property
    def layer_windows(self) -> tuple:
        """Tokens each layer keeps: None (the whole context) or the sliding window."""
        if self.sliding_window is None:
            return (None,) * self.n_layers
        types = self.layer_types or ("sliding_attention",) * self.n_layers
        return tuple(self.sliding_window if t == "sliding_attention" else None for t in types)

    @property
    def qk_head_dim(self) -> int:
        """Width of a query/key head (for MLA: nope + rope part, the config's head_dim here)."""
        return self.head_dim

    @property
    def value_head_dim(self) -> int:
        """Width of a value head (v_head_dim when the config gives one, else head_dim)."""
        return self.v_head_dim if self.v_head_dim is not None else self.head_dim

    # --- parameters: total, streamed, active --------------------------------------------

    @property
    def is_moe(self) -> bool:
        return self.n_experts is not None

    @property
    def routed_expert_params(self) -> float:
        """Parameters of every routed expert of every MoE layer: moe_layers x E x expert."""
        return self.moe_layers * (self.n_experts or 0) * self.expert_params

    @property
    def inactive_params(self) -> float:
        """Routed-expert parameters one token does not use: moe_layers x (E - k) x expert."""
        if not self.is_moe:
            return 0.0
        return self.moe_layers * (self.n_experts - self.experts_per_token) * self.expert_params

    @property
    def active_params(self) -> float:
        """Parameters one token passes through: total minus the routed experts it skips."""
        return self.n_params - self.inactive_params

    @property
    def active_layer_params(self) -> float:
        """Layer parameters one token passes through (prefill FLOPs of an MoE count these)."""
        return self.layer_params - self.inactive_params

    @property
    def streamed_params(self) -> float:
        """Parameters read once per decode step when every expert is read (D_w / bytes_per_param)."""
        return self.streamed_weight_bytes / self.bytes_per_param

    @property
    def active_streamed_params(self) -> float:
        """Read-once parameters one token passes through (its FLOPs: 2 x this per token)."""
        return self.streamed_params - self.inactive_params

    def with_(self, **changes) -> "Model":
        """A copy with some fields changed (validated again).

        weight_bytes, streamed_weight_bytes and layer_params are recomputed from the changed
        inputs (n_params, bytes_per_param, embedding_params, head_params) unless given.
        """
        return replace(self, **_rederive(self, changes, _MODEL_DERIVED))


# derived field -> the fields it is computed from (Model.__post_init__'s defaults)
_MODEL_DERIVED = {
    "weight_bytes": ("n_params", "bytes_per_param"),
    "streamed_weight_bytes": ("n_params", "bytes_per_param", "embedding_params"),
    "layer_params": ("n_params", "embedding_params", "head_params"),
}


def _rederive(obj, changes: dict, derived: dict) -> dict:
    """``changes`` with each derived field reset to None (recomputed) when an input changed.

    A derived field given in ``changes`` wins. A field whose inputs did not change keeps its
    value, even one the preset gave explicitly (Qwen3-8B's exact byte counts).
    """
    out = dict(changes)
    for field_name, inputs in derived.items():
        if field_name in out:
            continue
        if any(k in out and out[k] != getattr(obj, k) for k in inputs):
            out[field_name] = None
    return out


@dataclass(frozen=True)
class Hardware:
    """One accelerator (or one unified-memory machine): capacity, bandwidth, dense peak, links.

    Bytes, bytes/s, FLOP/s and watts. The H100 SXM of Chapter 17 (80 GB at 3.35 TB/s, 989 dense
    BF16 TFLOP/s) has its ridge at about 295 FLOP per byte (17 §2):

    >>> from companion import calc, specs, units
    >>> h100 = specs.Hardware("H100 SXM", 80 * units.GB, 3.35e12, 989e12)
    >>> round(calc.ridge_point(h100))
    295
    """

    name: str
    mem_bytes: float
    mem_bw_bytes_per_s: float
    peak_flops_per_s: float
    host_link_bytes_per_s: float | None = None
    power_w: float | None = None
    interconnect_bytes_per_s: float | None = None
    sm_count: int | None = None
    l2_bytes: float | None = None
    source: str = ""
    extra: dict = field(default_factory=dict, compare=False)
    # what peak_flops_per_s counts: tables that compare cards label every peak with it
    peak_precision: str = "dense BF16"

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise TypeError(f"name: expected a non-empty string, got {self.name!r}")
        v.positive("mem_bytes", self.mem_bytes)
        v.positive("mem_bw_bytes_per_s", self.mem_bw_bytes_per_s)
        v.positive("peak_flops_per_s", self.peak_flops_per_s)
        for name in ("host_link_bytes_per_s", "power_w", "interconnect_bytes_per_s", "l2_bytes"):
            if getattr(self, name) is not None:
                v.positive(name, getattr(self, name))
        if self.sm_count is not None:
            v.count("sm_count", self.sm_count)
        if not isinstance(self.peak_precision, str) or not self.peak_precision:
            raise TypeError(f"peak_precision: expected a non-empty string, "
                            f"got {self.peak_precision!r}")

    def with_(self, **changes) -> "Hardware":
        """A copy with some fields changed (validated again).

        Hardware stores no derived field today (the ridge point and friends are computed by
        calc), so nothing goes stale; ``extra`` is copied so the two objects never share it.
        """
        changes = _rederive(self, changes, _HARDWARE_DERIVED)
        changes.setdefault("extra", dict(self.extra))
        return replace(self, **changes)


_HARDWARE_DERIVED: dict = {}
