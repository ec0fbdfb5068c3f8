"""Chapter 17, "LLM Inference Performance": every input the chapter states, defined once.

The chapter fixes its assumptions once (an H100 SXM, an 8B and a 70B shape) and then states
the workloads of its worked examples. Everything it derives from them is recomputed by
``companion.calc``/``companion.sim`` and checked in the ledger. Base units throughout; note
the chapter's conventions (book-conventions.md): "8K" is 8,000 tokens, "KB" per token is KiB.

Under each name a string gives the section and a short phrase of the chapter ("§4: ...");
``companion.chapters.inputs()`` reads them. Assumptions the companion adds where the chapter
gives no number are marked "(assumed)".
"""

from __future__ import annotations

# --- the assumptions, fixed once (chapter opening) -------------------------------------------------

H100_MEM_BYTES = 80e9
"""Assumptions: "an NVIDIA H100 SXM with 80 GB of HBM"."""

H100_BW_BYTES_PER_S = 3.35e12
"""Assumptions: "80 GB of HBM at 3.35 TB/s"."""

H100_PEAK_FLOPS_PER_S = 989e12
"""Assumptions: "989 TFLOPS of dense BF16 compute"."""

H100_NVLINK_BYTES_PER_S = 900e9
"""Assumptions: "900 GB/s of NVLink"."""

H100_PCIE_BYTES_PER_S = 64e9
"""Assumptions: "64 GB/s of PCIe Gen5 x16"."""

H100_SM_COUNT = 132
"""§1: "the H100 SXM has 132 of them" (SMs)."""

H100_L2_BYTES = 50e6
"""§1 pyramid: "~50 MB L2"."""

H100_SPARSE_PEAK_FLOPS_PER_S = 1979e12
"""§2: "NVIDIA's headline figure for the H100 is 1,979 TFLOPS BF16" (2:4 sparsity)."""

RDMA_400G_BYTES_PER_S = 50e9
"""§8: "over 400 Gb RDMA 50 GB/s"."""

MODEL_8B_PARAMS = 8e9
"""Assumptions: "an 8B (8 × 10⁹ parameters: 32 layers, hidden width 4,096, 8 KV heads, head
dimension 128)"."""

MODEL_8B_LAYERS = 32
"""Assumptions: the 8B's "32 layers"."""

MODEL_8B_HIDDEN = 4096
"""Assumptions: the 8B's "hidden width 4,096"."""

MODEL_70B_PARAMS = 70e9
"""Assumptions: "a 70B (80 layers, hidden width 8,192, 8 KV heads, head dimension 128)"."""

MODEL_70B_LAYERS = 80
"""Assumptions: the 70B's "80 layers"."""

MODEL_70B_HIDDEN = 8192
"""Assumptions: the 70B's "hidden width 8,192"."""

MODEL_KV_HEADS = 8
"""Assumptions: both shapes have "8 KV heads"."""

MODEL_HEAD_DIM = 128
"""Assumptions: both shapes have "head dimension 128"."""

MODEL_405B_PARAMS = 405e9
"""§7: "405B model, BF16: 405e9 × 2 B = 810 GB of weights"."""

REGISTER_LATENCY_S = 1e-9
"""§1 pyramid: "Registers<br/>KBs per SM, ~1 ns"."""

# --- §2-§3: roofline, the two phases ---------------------------------------------------------------

PREFILL_EFFICIENCY = 0.5
"""§2: "at a realistic 50% of peak" ("The 50% here is an assumption, flagged and reused
consistently": §3, §6, §8)."""

PROMPT_TOKENS = 2_048
"""§2: "2,048-token prompt"."""

BATCH = 64
"""§2: "8B, B = 64"."""

CHAT_LIVE_TOKENS = 600
"""§2, §5: "short chats (600 live tokens" / "a mixed workload averaging 600 live tokens"."""

VLLM_GAIN_LOW = 2.0
"""§5: "inside the 2-4x the vLLM paper reported" (throughput over the systems it compared)."""

VLLM_GAIN_HIGH = 4.0
"""§5: "inside the 2-4x the vLLM paper reported" (the top of that range)."""

LONG_CONTEXT_TOKENS = 8_000
"""§2, §4: "long contexts (8,000 tokens" / "8K taken as 8,000 tokens"."""

SMOOTH_ITL_S = 6e-3
"""§3: "Decode at a healthy batch runs a step every ~6 ms (derived in §5)"; the chapter
computes with the rounded 6 ms (§5 gives 6.1 ms)."""

OUTPUT_TOKENS = 250
"""§3: "decode, 250 output tokens"."""

TTFT_P90_TARGET_S = 0.5
"""§3: "Representative chat SLOs — TTFT p90 under ~500 ms" (its ITL target is only "ITL p99
under a few tens of ms"; the companion reads it as ``ITL_TARGET_S``)."""

# --- §4-§5: KV sizing, PagedAttention --------------------------------------------------------------

RUNTIME_RESERVE_BYTES = 4e9
"""§4: "runtime + activations reserve ≈ 4 GB"."""

TP = 4
"""§4, §7: "At TP = 4" (the 70B)."""

CACHE_BYTES = 80e9
"""§4: "three 8K conversations per 80 GB of cache space"."""

LONGEST_CONTEXT_TOKENS = 128_000
"""§4: "a single 128K-context conversation" (128K read as 128,000, as "8K" is 8,000)."""

CONTEXT_ROWS = (1_000, 10_000, 100_000)
"""§4: "as the context grows, one line per regime": 1,000, 10,000 and 100,000 tokens."""

CH00_CONTEXT_TOKENS = 100_000
"""§2: "Chapter 00 §4 computed the same ceiling from the KV-cache side at 100K context"."""

KV_TABLE_CONTEXTS = (1_000, 4_000, 8_000, 32_000, 128_000)
"""§4 (assumed rows): the KV-by-context table is not printed in our copy; these rows re-derive
it between the chapter's 1K and 128K ("8K" = 8,000)."""

MAX_LEN_TOKENS = 8_192
"""§5: "reservation per request (8B, max_len 8,192)"."""

CHAT_TURN_TOKENS = 300
"""§5: "a chat turn that actually uses 300 tokens"."""

SEQUENCE_A_TOKENS = 40
"""§5: "sequence A, 40 tokens live, block size 16"."""

BLOCK_TOKENS = 16
"""§5: "fixed-size blocks of, say, 16 tokens each"."""

BIG_BLOCK_TOKENS = 1_024
"""§5: "a 1,024-token block wastes up to 1,023 tokens"."""

PREFIX_USERS = 100
"""§5: "One 2,000-token system prompt at 100 concurrent users"."""

PREFIX_TOKENS = 2_000
"""§5: "One 2,000-token system prompt"."""

# --- §6: batching strategies -----------------------------------------------------------------------

STATIC_OUTPUT_LENGTHS = tuple(range(100, 801, 100))
"""§6: "batch of 8, output lengths 100, 200, ..., 800 tokens"."""

CHUNK_TOKENS = 512
"""§6: "fixed-size chunks, say 512 tokens"."""

DECODE_STEP_S = 6.1e-3
"""§6: "iteration = decode step 6.1 + chunk 16.6" (ms; §5's naive step, as rounded)."""

# --- §7: tensor and pipeline parallelism -----------------------------------------------------------

COLLECTIVE_LATENCY_NVLINK_S = 5e-6
"""§7: "latency floor ≈ 160 × 5 µs"."""

COLLECTIVE_LATENCY_PCIE_S = 25e-6
"""§7: "same 160 collectives over PCIe (~25 µs each)"."""

ALLREDUCES_PER_LAYER = 2
"""§7: "hence two all-reduce operations ... per layer, per token"."""

PP_STAGES = 4
"""§7: "80 layers at p = 4 is 20 layers per stage"."""

PP_MICROBATCHES = (16, 64)
"""§7: "p = 4, m = 16" and "p = 4, m = 64"."""

NODE_TP = 8
"""§7: "one node, TP = 8"."""

FIGURE_PP_STAGES = 2
"""§7 figure: "Node 1 — PP stage 1 (layers 1-40)" and stage 2 (layers 41-80)."""

# --- §8: disaggregation and routing ----------------------------------------------------------------

REQUEST_RATE_PER_S = 100
"""§8: "Representative traffic (100 req/s"."""

MEAN_PROMPT_TOKENS = 2_000
"""§8: "mean prompt 2,000 tokens"."""

MEAN_OUTPUT_TOKENS = 250
"""§8: "mean output 250 tokens"."""

PREFILL_TOK_PER_S_PER_GROUP = 10_000
"""§8: "prefill capacity ≈ 10,000 tok/s per GPU group"."""

DECODE_TOK_PER_S_PER_GROUP = 2_500
"""§8: "decode capacity ≈ 2,500 tok/s per GPU group"."""

AGENT_FIRST_TURN_TOKENS = 6_000
"""§8: "chapter 09 runs it at 6,000 prefix tokens plus 1,200 per turn"."""

AGENT_TOKENS_PER_TURN = 1_200
"""§8: "plus 1,200 per turn"."""

ROUTING_TURN = 20
"""§8: "At turn 20 the accumulated context is 6,000 + 19 × 1,200"."""

ROUTER_WARM_SHARES = (0.9, 0.3)
"""§8: "A router that lands 90% of turns warm versus one that lands 30%"."""

# --- §9-§10: measuring, the levers -----------------------------------------------------------------

ACTIVE_SMS = 1
"""§9: "a kernel occupying 1 of 132 SMs, always resident"."""

DECODE_TOK_PER_S = 146
"""§9: "a healthy deployment measuring 146 tok/s"."""

PREFILL_TOK_PER_S = 20_000
"""§9: "~20,000 prompt tok/s on the same class of model"."""

PROMISED_SPEEDUP = 5
"""§9: "a promised 5× kernel win on this decode is not possible"."""

HEALTHY_DECODE_MBU = (0.6, 0.8)
"""§9 checklist: "Aggregate MBU at 60-80%"."""

SOL_DECODE_MEMORY_FRACTION = 0.8
"""§9: "A decode matrix-vector kernel showing memory ~80%, compute ~5%"."""

STRONG_PREFILL_MFU = (0.4, 0.6)
"""§9: "judge prefill by MFU (40-60% is strong"."""

INT8_BYTES_PER_PARAM = 1
"""§10: "INT8 or FP8, one byte per parameter"."""

SPEC_DRAFT_LEN = 4
"""§10: "k = 4, α = 0.7"."""

SPEC_ACCEPTANCE = 0.7
"""§10: "k = 4, α = 0.7"."""

# --- interview questions ---------------------------------------------------------------------------

ITL_TARGET_S = 20e-3
"""Interview, "What batch size should we run?" (assumed): the chapter gives no ITL number;
§3's "ITL p99 under a few tens of ms" with §5's "batch 57 → 760 taking the step from 6 to 23 ms"
make 20 ms a target that paged KV's batch can overshoot. One definition for the calc default,
the explorer and Exercise 17-10."""
