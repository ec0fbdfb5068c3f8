"""Models and hardware: the data every formula starts from, each preset with its source.

Sizes are bytes, rates are per second. ``Model.streamed_weight_bytes`` is the chapters' D_w:
the matrix weights a decode step reads once (every weight except the input embedding table,
which is looked up by row). See 8.1.2, footnote 1 of Chapter 8, and Chapter 17's assumptions.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field, replace

from companion import validate as v
from companion.chapters import ch08, ch17


@dataclass(frozen=True)
class Model:
    """A decoder-only transformer's shape, enough for KV sizing, byte and FLOP counts.

    ``n_params`` is the total parameter count. ``weight_bytes`` (resident weights) defaults to
    n_params x bytes_per_param; ``streamed_weight_bytes`` (D_w) defaults to weight_bytes, which
    is Chapter 17's simplification (every parameter streamed each step). ``layer_params`` are the
    transformer blocks' parameters (no embedding, no lm_head): prefill FLOPs count these (8.3.4).
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

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise TypeError(f"name: expected a non-empty string, got {self.name!r}")
        v.count("n_layers", self.n_layers)
        v.count("n_kv_heads", self.n_kv_heads)
        v.count("head_dim", self.head_dim)
        v.positive("n_params", self.n_params)
        v.positive("bytes_per_param", self.bytes_per_param)
        for name in ("hidden_size", "n_heads", "intermediate_size", "vocab_size"):
            if getattr(self, name) is not None:
                v.count(name, getattr(self, name))
        for name in ("weight_bytes", "streamed_weight_bytes", "layer_params"):
            if getattr(self, name) is not None:
                v.positive(name, getattr(self, name))
        if self.n_heads is not None and self.n_heads % self.n_kv_heads:
            raise ValueError(f"n_kv_heads: {self.n_kv_heads} does not divide n_heads={self.n_heads}")
        if self.weight_bytes is None:
            object.__setattr__(self, "weight_bytes", self.n_params * self.bytes_per_param)
        if self.streamed_weight_bytes is None:
            object.__setattr__(self, "streamed_weight_bytes", self.weight_bytes)
        if self.layer_params is None:
            object.__setattr__(self, "layer_params", self.n_params)

    @property
    def n_query_heads(self) -> int:
        """Query heads (defaults to the KV heads, i.e. MHA, when the config does not say)."""
        return self.n_heads if self.n_heads is not None else self.n_kv_heads

    @property
    def attention_type(self) -> str:
        """'MHA' (one KV head per query head), 'MQA' (one KV head) or 'GQA' (in between)."""
        if self.n_kv_heads == self.n_query_heads:
            return "MHA"
        if self.n_kv_heads == 1:
            return "MQA"
        return "GQA"

    @property
    def streamed_params(self) -> float:
        """Parameters read once per decode step (D_w / bytes_per_param)."""
        return self.streamed_weight_bytes / self.bytes_per_param

    def with_(self, **changes) -> "Model":
        """A copy with some fields changed (validated again)."""
        return replace(self, **changes)


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

    def with_(self, **changes) -> "Hardware":
        return replace(self, **changes)


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
    """A Llama/Qwen-style dense model with its parameter count derived from the config."""
    layer = _dense_layer_params(hidden, n_heads, n_kv_heads, head_dim, intermediate, qk_norm)
    layers = n_layers * layer
    embed = vocab * hidden
    lm_head = 0 if tie else vocab * hidden
    total = layers + embed + lm_head + hidden  # + final norm
    # D_w: everything except the input embedding table (a tied table is read as lm_head).
    streamed = total - (0 if tie else embed)
    return Model(name=name, n_layers=n_layers, n_kv_heads=n_kv_heads, head_dim=head_dim,
                 n_params=total, weight_bytes=total * bytes_per_param,
                 streamed_weight_bytes=streamed * bytes_per_param, hidden_size=hidden,
                 n_heads=n_heads, intermediate_size=intermediate, vocab_size=vocab,
                 tie_word_embeddings=tie, layer_params=layers, bytes_per_param=bytes_per_param,
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
    peak_flops_per_s=13.6e12,
    source="Ch. 8.4.1 (Experiment 8-7): 96 GB unified memory (decimal); Apple spec: 400 GB/s, "
           "38-core GPU ~13.6 FP32 TFLOP/s",
)

HARDWARE = {h.name: h for h in (RTX_PRO_6000, H100_SXM, H200_SXM, A100_80GB, GH200, M2_MAX)}

# Links the chapters state (defined in companion.chapters), under the names the notebooks use
PCIE_GEN5_X16_BYTES_PER_S = ch08.PCIE_GEN5_X16_BYTES_PER_S   # per direction
PCIE_GEN4_X16_BYTES_PER_S = ch08.PCIE_GEN4_X16_BYTES_PER_S   # per direction
NVLINK_C2C_BYTES_PER_S = ch08.NVLINK_C2C_BYTES_PER_S         # per direction
NVLINK_H100_BYTES_PER_S = ch17.H100_NVLINK_BYTES_PER_S
RDMA_400G_BYTES_PER_S = ch17.RDMA_400G_BYTES_PER_S          # 400 Gb/s


# --- Hugging Face config.json --------------------------------------------------------------

def model_from_hf_config(path_or_dict, *, name: str | None = None,
                         bytes_per_param: float = 2.0) -> Model:
    """Build a Model from a Hugging Face ``config.json`` (a path or an already-loaded dict).

    Reads num_hidden_layers, hidden_size, num_attention_heads, num_key_value_heads (absent means
    MHA, as in Hugging Face's Llama config), head_dim (else hidden_size / num_attention_heads),
    intermediate_size, vocab_size, tie_word_embeddings. The parameter count is derived for a
    Llama/Qwen-style dense model (SwiGLU MLP, RMSNorm; q/k norms when the model_type is qwen3).
    A missing required field raises ValueError naming it.
    """
    if isinstance(path_or_dict, (str, os.PathLike)):
        with open(path_or_dict, encoding="utf-8") as f:
            cfg = json.load(f)
        default_name = os.path.basename(os.path.dirname(os.path.abspath(path_or_dict))) or "model"
    elif isinstance(path_or_dict, dict):
        cfg = path_or_dict
        default_name = "model"
    else:
        raise TypeError(f"path_or_dict: expected a path to config.json or a dict, got "
                        f"{type(path_or_dict).__name__}")

    def need(key):
        if key not in cfg or cfg[key] is None:
            raise ValueError(f"config.json: missing required field {key!r}")
        return cfg[key]

    n_layers = v.count("num_hidden_layers", need("num_hidden_layers"))
    hidden = v.count("hidden_size", need("hidden_size"))
    n_heads = v.count("num_attention_heads", need("num_attention_heads"))
    n_kv = v.count("num_key_value_heads", cfg.get("num_key_value_heads") or n_heads)
    if cfg.get("head_dim") is not None:
        head_dim = v.count("head_dim", cfg["head_dim"])
    else:
        if hidden % n_heads:
            raise ValueError(f"head_dim: missing, and hidden_size={hidden} is not divisible by "
                             f"num_attention_heads={n_heads}")
        head_dim = hidden // n_heads
    intermediate = v.count("intermediate_size", need("intermediate_size"))
    vocab = v.count("vocab_size", need("vocab_size"))
    tie = bool(cfg.get("tie_word_embeddings", False))
    qk_norm = str(cfg.get("model_type", "")).startswith("qwen3")
    label = name or cfg.get("_name_or_path") or default_name
    return _dense_model(label, n_layers=n_layers, hidden=hidden, n_heads=n_heads, n_kv_heads=n_kv,
                        head_dim=head_dim, intermediate=intermediate, vocab=vocab, tie=tie,
                        qk_norm=qk_norm, bytes_per_param=bytes_per_param,
                        source="derived from a Hugging Face config.json")
