"""Models and hardware: the data every formula starts from, each preset with its source.

Sizes are bytes, rates are per second. ``Model.streamed_weight_bytes`` is the chapters' D_w:
the matrix weights a decode step reads once (every weight except the input embedding table,
which is looked up by row). See 8.1.2, footnote 1 of Chapter 8, and Chapter 17's assumptions.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from companion import validate as v
from companion.chapters import ch08, ch17


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
    """One accelerator (or one unified-memory machine): capacity, bandwidth, dense peak, links."""

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


# --- models ---------------------------------------------------------------------------------

def _dense_layer_params(hidden: int, n_heads: int, n_kv_heads: int, head_dim: int,
                        intermediate: int, qk_norm: bool) -> int:
    """Parameters of one transformer block: attention projections, SwiGLU MLP, RMSNorms."""
    q = hidden * n_heads * head_dim
    kv = 2 * hidden * n_kv_heads * head_dim
    o = n_heads * head_dim * hidden
    mlp = 3 * hidden * intermediate
    norms = 2 * hidden + (2 * head_dim if qk_norm else 0)
    return q + kv + o + mlp + norms


def _dense_model(name, *, n_layers, hidden, n_heads, n_kv_heads, head_dim, intermediate, vocab,
                 tie, qk_norm, bytes_per_param=2.0, source="") -> Model:
    """A Llama/Qwen-style dense model with its parameter count derived from the shape."""
    layers = n_layers * _dense_layer_params(hidden, n_heads, n_kv_heads, head_dim, intermediate,
                                            qk_norm)
    table = vocab * hidden
    # D_w is everything but the input table; a tied table is read as lm_head, so it is streamed
    embedding = 0 if tie else table
    head = table + hidden  # lm_head (or the tied table, counted once) + final norm
    return Model(name=name, n_layers=n_layers, n_kv_heads=n_kv_heads, head_dim=head_dim,
                 n_params=layers + embedding + head, hidden_size=hidden, n_heads=n_heads,
                 intermediate_size=intermediate, vocab_size=vocab, tie_word_embeddings=tie,
                 embedding_params=embedding, head_params=head, bytes_per_param=bytes_per_param,
                 source=source)


QWEN3_8B = _dense_model(
    "Qwen3-8B", n_layers=ch08.QWEN3_8B_LAYERS, hidden=4096, n_heads=32,
    n_kv_heads=ch08.QWEN3_8B_KV_HEADS, head_dim=ch08.QWEN3_8B_HEAD_DIM,
    intermediate=12288, vocab=151936, tie=False, qk_norm=True,
    source="Ch. 8 running example (8.1.2, footnote 1); shape from the public Qwen3-8B config.json: "
           "8,190,735,360 params = 16,381,470,720 B in BF16, D_w 15,136,811,008 B",
)

LLAMA_8B = Model(
    "Llama-3-8B shape (Ch. 17)", n_layers=ch17.MODEL_8B_LAYERS, n_kv_heads=ch17.MODEL_KV_HEADS,
    head_dim=ch17.MODEL_HEAD_DIM, n_params=ch17.MODEL_8B_PARAMS, hidden_size=ch17.MODEL_8B_HIDDEN,
    n_heads=32,
    source="Ch. 17 assumptions: 8e9 params, 32 layers, hidden 4096, 8 KV heads, head dim 128 "
           "(the chapter rounds the parameter count to 8e9, so weights are 16 GB)",
)

LLAMA_70B = Model(
    "Llama-3-70B shape (Ch. 17)", n_layers=ch17.MODEL_70B_LAYERS, n_kv_heads=ch17.MODEL_KV_HEADS,
    head_dim=ch17.MODEL_HEAD_DIM, n_params=ch17.MODEL_70B_PARAMS,
    hidden_size=ch17.MODEL_70B_HIDDEN, n_heads=64,
    source="Ch. 17 assumptions: 70e9 params, 80 layers, hidden 8192, 8 KV heads, head dim 128",
)

LLAMA_405B = Model(
    "Llama-3.1-405B shape (Ch. 17 §7)", n_layers=126, n_kv_heads=8, head_dim=128,
    n_params=ch17.MODEL_405B_PARAMS,
    hidden_size=16384, n_heads=128,
    source="Ch. 17 §7 placement example (405e9 params, BF16); layer/head shape from the public "
           "Llama-3.1-405B config",
)

QWEN3_235B_A22B = Model(
    "Qwen3-235B-A22B", n_layers=94, n_kv_heads=4, head_dim=128, n_params=235e9,
    hidden_size=4096, n_heads=64,
    source="8.4.1 Q2_K capacity example (M2 Max); KV shape from the public Qwen3-235B-A22B "
           "config (94 layers, 4 KV heads, head dim 128); MoE, about 22e9 active parameters",
)

MODELS = {m.name: m for m in (QWEN3_8B, LLAMA_8B, LLAMA_70B, LLAMA_405B, QWEN3_235B_A22B)}


# --- hardware -------------------------------------------------------------------------------

RTX_PRO_6000 = Hardware(
    "RTX PRO 6000 Blackwell WS", mem_bytes=ch08.RTX_PRO_6000_MEM_BYTES,
    mem_bw_bytes_per_s=ch08.RTX_PRO_6000_BW_BYTES_PER_S,
    peak_flops_per_s=ch08.RTX_PRO_6000_PEAK_FLOPS_PER_S,
    host_link_bytes_per_s=ch08.PCIE_GEN5_X16_BYTES_PER_S, power_w=ch08.RTX_PRO_6000_POWER_W,
    source="Ch. 8 opening and footnotes 2, 28: 96 GB, 1792 GB/s, 503.8 dense BF16 TFLOP/s, "
           "600 W, PCIe Gen5 x16 (64 GB/s per direction)",
)

H100_SXM = Hardware(
    "H100 SXM", mem_bytes=ch17.H100_MEM_BYTES, mem_bw_bytes_per_s=ch17.H100_BW_BYTES_PER_S,
    peak_flops_per_s=ch17.H100_PEAK_FLOPS_PER_S, host_link_bytes_per_s=ch17.H100_PCIE_BYTES_PER_S,
    interconnect_bytes_per_s=ch17.H100_NVLINK_BYTES_PER_S, power_w=700.0,
    sm_count=ch17.H100_SM_COUNT, l2_bytes=ch17.H100_L2_BYTES,
    source="Ch. 17 assumptions: 80 GB HBM at 3.35 TB/s, 989 dense BF16 TFLOP/s, 900 GB/s NVLink, "
           "64 GB/s PCIe Gen5 x16, 132 SMs, ~50 MB L2; 700 W from the NVIDIA H100 datasheet",
)

H200_SXM = Hardware(
    "H200 SXM", mem_bytes=141e9, mem_bw_bytes_per_s=4.8e12,
    peak_flops_per_s=ch17.H100_PEAK_FLOPS_PER_S, host_link_bytes_per_s=ch17.H100_PCIE_BYTES_PER_S,
    interconnect_bytes_per_s=ch17.H100_NVLINK_BYTES_PER_S, power_w=700.0,
    sm_count=ch17.H100_SM_COUNT, l2_bytes=ch17.H100_L2_BYTES,
    source="NVIDIA H200 datasheet: 141 GB HBM3e at 4.8 TB/s, same dense BF16 peak as H100 SXM",
)

A100_80GB = Hardware(
    "A100 SXM 80GB", mem_bytes=80e9, mem_bw_bytes_per_s=2.039e12, peak_flops_per_s=312e12,
    host_link_bytes_per_s=ch08.PCIE_GEN4_X16_BYTES_PER_S, interconnect_bytes_per_s=600e9,
    power_w=400.0, sm_count=108,
    l2_bytes=40e6,
    source="NVIDIA A100 datasheet: 80 GB HBM2e at 2,039 GB/s, 312 dense BF16 TFLOP/s; PCIe Gen4 "
           "x16 is 32 GB/s per direction (Ch. 8 footnote 28)",
)

GH200 = Hardware(
    "GH200 (Hopper GPU)", mem_bytes=96e9, mem_bw_bytes_per_s=4.0e12,
    peak_flops_per_s=ch17.H100_PEAK_FLOPS_PER_S, host_link_bytes_per_s=ch08.NVLINK_C2C_BYTES_PER_S,
    power_w=1000.0,
    source="Ch. 8.4.3 and footnote 16: NVLink-C2C 900 GB/s total, 450 GB/s per direction; "
           "96 GB HBM3 at 4 TB/s from the NVIDIA GH200 datasheet",
)

M2_MAX = Hardware(
    "Apple M2 Max (96 GB)", mem_bytes=ch08.M2_MAX_MEM_BYTES, mem_bw_bytes_per_s=400e9,
    peak_flops_per_s=13.6e12, peak_precision="FP32",
    source="Ch. 8.4.1 (Experiment 8-7): 96 GB unified memory (decimal); Apple spec: 400 GB/s, "
           "38-core GPU ~13.6 FP32 TFLOP/s",
)

HARDWARE = {h.name: h for h in (RTX_PRO_6000, H100_SXM, H200_SXM, A100_80GB, GH200, M2_MAX)}

# Links the chapters state (defined in companion.chapters), under the names the notebooks use


# --- Hugging Face config.json --------------------------------------------------------------

def model_from_hf_config(path_or_dict, *, name: str | None = None,
                         bytes_per_param: float = 2.0) -> Model:
    """Build a Model from a Hugging Face ``config.json``: a path (file or folder), a dict, or the
    pasted JSON text. Counted exactly per model type (MoE, MLA, sliding windows, tied
    embeddings, biases, extra norms); see ``companion.models.model_from_hf_config``. A missing
    required field raises ValueError naming it.
    """
    from companion.models import model_from_hf_config as _from_config  # models imports specs
    try:
        return _from_config(path_or_dict, name=name, bytes_per_param=bytes_per_param)
    except (TypeError, ValueError) as e:
        if str(e).startswith("path_or_config:"):  # name this function's own parameter
            raise type(e)("path_or_dict:" + str(e)[len("path_or_config:"):]) from None
        raise
