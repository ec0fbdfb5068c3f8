"""Models and hardware: the data every formula starts from, each preset with its source.

Sizes are bytes, rates are per second. ``Model.streamed_weight_bytes`` is the chapters' D_w:
the matrix weights a decode step reads once (every weight except the input embedding table,
which is looked up by row). See 8.1.2, footnote 1 of Chapter 8, and Chapter 17's assumptions.
"""

from __future__ import annotations

from companion.chapters import ch08, ch17
# design.md's specs.model_from_hf_config: the very function companion.models defines
from companion.models import model_from_hf_config  # noqa: F401
from companion.spec_types import Hardware, Model


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


#: Qwen3-8B in BF16, Chapter 8's running example (8.1.2): 36 layers, 8 KV heads, head dim 128.
QWEN3_8B = _dense_model(
    "Qwen3-8B", n_layers=ch08.QWEN3_8B_LAYERS, hidden=4096, n_heads=32,
    n_kv_heads=ch08.QWEN3_8B_KV_HEADS, head_dim=ch08.QWEN3_8B_HEAD_DIM,
    intermediate=12288, vocab=151936, tie=False, qk_norm=True,
    source="Ch. 8 running example (8.1.2, footnote 1); shape from the public Qwen3-8B config.json: "
           "8,190,735,360 params = 16,381,470,720 B in BF16, D_w 15,136,811,008 B",
)

#: Chapter 17's 8B shape (32 layers, 8 KV heads, head dim 128; 8e9 parameters).
LLAMA_8B = Model(
    "Llama-3-8B shape (Ch. 17)", n_layers=ch17.MODEL_8B_LAYERS, n_kv_heads=ch17.MODEL_KV_HEADS,
    head_dim=ch17.MODEL_HEAD_DIM, n_params=ch17.MODEL_8B_PARAMS, hidden_size=ch17.MODEL_8B_HIDDEN,
    n_heads=32,
    source="Ch. 17 assumptions: 8e9 params, 32 layers, hidden 4096, 8 KV heads, head dim 128 "
           "(the chapter rounds the parameter count to 8e9, so weights are 16 GB)",
)

#: Chapter 17's 70B shape (80 layers, hidden 8192, 8 KV heads, head dim 128; 70e9 parameters).
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

#: Chapter 8's card: 96 GB, 1792 GB/s, 503.8 dense BF16 TFLOP/s, 600 W, PCIe Gen5 x16.
RTX_PRO_6000 = Hardware(
    "RTX PRO 6000 Blackwell WS", mem_bytes=ch08.RTX_PRO_6000_MEM_BYTES,
    mem_bw_bytes_per_s=ch08.RTX_PRO_6000_BW_BYTES_PER_S,
    peak_flops_per_s=ch08.RTX_PRO_6000_PEAK_FLOPS_PER_S,
    host_link_bytes_per_s=ch08.PCIE_GEN5_X16_BYTES_PER_S, power_w=ch08.RTX_PRO_6000_POWER_W,
    source="Ch. 8 opening and footnotes 2, 28: 96 GB, 1792 GB/s, 503.8 dense BF16 TFLOP/s, "
           "600 W, PCIe Gen5 x16 (64 GB/s per direction)",
)

#: Chapter 17's card: 80 GB HBM at 3.35 TB/s, 989 dense BF16 TFLOP/s, 900 GB/s NVLink.
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
