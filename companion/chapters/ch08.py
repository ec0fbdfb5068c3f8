"""Chapter 8, "Inference Optimization": every input the chapter states, defined once.

An input is a number the chapter gives rather than derives: a card's specification, a request
shape, a measured time, the numbers of a worked example or an exercise. Everything the chapter
computes from these is recomputed by ``companion.calc``/``companion.sim`` and checked in the
ledger. Base units throughout (bytes, seconds, tokens, FLOP/s, bytes/s).

Under each name a string gives the section and a short phrase of the chapter where it is
stated ("8.1.1: ..."); ``companion.chapters.inputs()`` reads them. A test fails when one of
these values reappears as a literal in another module (see ``companion.chapters``).
"""

from __future__ import annotations

from companion.units import GiB, MiB, ms

# --- the running example: card, model, instance, requests (chapter opening, 8.1) ----------------

RTX_PRO_6000_MEM_BYTES = 96e9
"""Opening: "96 GB of GPU memory" (decimal; footnote 2's specification row)."""

RTX_PRO_6000_BW_BYTES_PER_S = 1792e9
"""Opening: "1792 GB/s of bandwidth"."""

RTX_PRO_6000_PEAK_FLOPS_PER_S = 503.8e12
"""Opening: "a dense peak of 503.8 TFLOP/s with BF16 input and FP32 accumulation"."""

RTX_PRO_6000_POWER_W = 600.0
"""Opening: "a power cap of 600 W"."""

PCIE_GEN5_X16_BYTES_PER_S = 64e9
"""8.3.4, footnote 28: "PCIe Gen5 x16 (64 GB/s per direction)"."""

PCIE_GEN4_X16_BYTES_PER_S = 32e9
"""8.3.4, footnote 28: "PCIe Gen4 x16 (32 GB/s per direction)"."""

NVLINK_C2C_BYTES_PER_S = 450e9
"""8.4.3, footnote 16: GH200's "NVLink-C2C, at 450 GB/s per direction"."""

M2_MAX_MEM_BYTES = 96e9
"""8.4.1: the M2 Max's "unified memory is nominally 96 GB (decimal)"."""

QWEN3_8B_LAYERS = 36
"""8.1.2: "Qwen3-8B has 36 layers, 8 KV heads per layer, and a head dimension of 128"."""

QWEN3_8B_KV_HEADS = 8
"""8.1.2: "8 KV heads per layer"."""

QWEN3_8B_HEAD_DIM = 128
"""8.1.2: "a head dimension of 128"."""

INSTANCE_MEM_BYTES = 32 * GiB
"""Opening: "this instance is allocated 32 GiB of GPU memory"."""

KV_BUDGET_BYTES = 12 * GiB
"""Opening: "12 GiB is reserved for the KV cache and auxiliary buffers"."""

SHORT_PROMPT_TOKENS = 2048
"""Opening: "short conversations with 2048-token input"."""

LONG_PROMPT_TOKENS = 8192
"""Opening: "long-context requests with 8192-token input"."""

OUTPUT_TOKENS = 256
"""Opening: "both output 256 tokens"."""

SHARED_PREFIX_TOKENS = 6144
"""Opening: "The first 6144 tokens of the long request are an identical system prompt"."""

DEADLINE_S = 7.0
"""Opening: "a complete and correct answer within 7 seconds of arrival"."""

LONG_BATCH = 16
"""Opening and 8.6.3: "16 long requests arrive simultaneously"."""

BLOCK_TOKENS = 16
"""8.1.2: "With 16 tokens per block"."""

CHAPTER_REQUEST_TYPES = {"Short conversation": (SHORT_PROMPT_TOKENS, OUTPUT_TOKENS),
                         "Long context": (LONG_PROMPT_TOKENS, OUTPUT_TOKENS)}
"""Opening table: "Input length 2048 tokens 8192 tokens" and "Output length 256 tokens 256
tokens", as (input tokens, output tokens) per request type."""

# --- 8.1.1-8.1.3: one short request, Experiment 8-1's rounds -------------------------------------

QUEUE_S = 0.1
"""8.1.1: "Assuming this request first queues for 0.1 seconds"."""

PREFILL_S = 0.096
"""8.1.1: "prefill and returning the first token takes about 0.096 seconds"."""

CLIENT_ITL_S = 26.5e-3
"""8.1.1: "a token is returned on average every 26.5 ms" (client side, 8.6.3)."""

ROUND_B1_S = 26.26e-3
"""8.1.3, footnote 5: "for batch 1, a 2K decode round is 26.26 ms" (Experiment 8-1)."""

ROUND_B16_S = 27.44e-3
"""8.1.3: "16 2K requests ... each decode round takes about 27.44 ms"."""

# --- 8.2.1: weight reuse, LoRA, the batch sweep --------------------------------------------------

LORA_RANK = 16
"""8.2.1: "using a low-rank dimension of 16" on the Q and V projections."""

LORA_PROJECTIONS_EXAMPLE = ("q", "v")
"""8.2.1: "For the Q and V projections of Qwen3-8B"."""

LORA_ADAPTERS = 100
"""8.2.1: "100 adapters together occupy 1.43 GiB"."""

CONTEXTS_8K = 100
"""8.2.1: "100 mutually non-sharing 8K contexts occupy 112.5 GiB"."""

BATCH_SWEEP_MEASURED = {
    "batch": (1, 64),
    "tokens_per_s": (37.0, 1165.0),
    "ttft_s": (0.096, 3.29),
    "itl_s": (27e-3, 40e-3),
    "output_tokens": OUTPUT_TOKENS,
    "context_tokens": SHORT_PROMPT_TOKENS,
}
"""8.2.1, footnote 3: "total throughput grows from about 37 to 1165 tokens/s", TTFT "from about
96 ms to 3.29 seconds", ITL "from about 27 to 40 ms" (measured medians, batch 1 and 64)."""

EXP81_BATCHES = (1, 4, 16, 64)
"""8.6.3 table: "batch 1 batch 4 batch 16 batch 64"; Exercise 8-1: "at batch sizes 1, 4, 16, and 64"."""

# --- 8.2.2-8.2.4: the round-time fit, the four-request example, chunks, graphs -------------------

ROUND_FIXED_S = 26.22e-3
"""8.2.2: "a fixed 26.22 ms" per round (fit to Experiment 8-1's batch-1 rounds)."""

ROUND_PER_TOKEN_S = 30.4e-6
"""8.2.2: "plus 30.4 μs per new token"."""

ROUND_PER_PAIR_S = 3e-9
"""8.2.2: "plus 3 ns per query-key pair satisfying the causal relationship"."""

PREFILL_ROUND_S = 94.8e-3
"""8.2.2, footnote 5: "prefill is 94.8 ms" for a 2K request alone (Experiment 8-1)."""

SCHEDULE_EXAMPLE_REQUESTS = (("r0", 0.0, 2048, 8), ("r1", 0.0, 2048, 2),
                             ("r2", 20 * ms, 8192, 2), ("r3", 30 * ms, 2048, 4))
"""8.2.2: "r0 and r1 arrive at time zero ... r2 arrives at 20 ms ... r3 arrives at 30 ms" as
(id, arrival s, input tokens, output tokens)."""

SCHEDULE_EXAMPLE_MAX_RUNNING = 2
"""8.2.2: "At most two requests run at once"."""

SCHEDULE_EXAMPLE_CHUNK_TOKENS = 2048
"""8.2.2: "chunks of 2048 tokens each"."""

SCHEDULE_EXAMPLE_TOKEN_BUDGET = 4096
"""8.2.2: "processing at most 4096 tokens per round"."""

CHUNK_TOKENS = 512
"""8.2.3: "Taking c=512"."""

FIRST_CHUNK_MEDIAN_S = 25.30e-3
"""8.2.3, footnote 6: "median first- and last-chunk times are 25.30 and 35.07 ms"."""

LAST_CHUNK_MEDIAN_S = 35.07e-3
"""8.2.3, footnote 6: the last chunk's median, "35.07 ms"."""

SPLIT_BLOCK_TOKENS = 256
"""8.2.3: "Splitting a 256-token block into two 128-token blocks"."""

SPLIT_CHUNK_TOKENS = 128
"""8.2.3: "two 128-token blocks"."""

CAPTURED_SHAPES = (16, 32)
"""8.2.4: "graphs are pre-captured for 16 rows and 32 rows"."""

PADDING_EXAMPLE_ROWS = 17
"""8.2.4: "Reducing the workload from 18 rows to 17 rows still executes the 32-row graph"."""

REPLAY_REQUESTS = 6
"""8.2.4: "In a replay recording of six requests"."""

REPLAY_INTERARRIVAL_S = 80 * ms
"""8.2.4: "requests arrive every 80 ms"."""

REPLAY_TOKEN_BUDGETS = (512, 8192)
"""8.2.4: "As the per-round token limit rises from 512 to 8192"."""

EXERCISE_8_2_ITL_TARGET_S = 50e-3
"""Exercise 8-2: a per-round token limit under the goal "longest interval under 50 ms"."""

# --- 8.3.1-8.3.2: paging, sharing, copy-on-write --------------------------------------------------

PAGING_EXAMPLE_LENGTHS = (9, 13, 5, 15)
"""8.3.1: "Let A, B, C, D currently have lengths 9, 13, 5, 15"."""

PAGING_EXAMPLE_MAX_TOKENS = 16
"""8.3.1: "each allowed a maximum of 16 tokens"."""

PAGING_EXAMPLE_BLOCK_TOKENS = 4
"""8.3.1: "with p=4 paging"."""

PAGING_EXAMPLE_SHARED_TOKENS = 8
"""8.3.1: "If A and B's first eight tokens are identical"."""

EXERCISE_8_3_BLOCK_SIZES = (2, 4, 8)
"""Exercise 8-3: "into blocks of 2, 4, and 8 tokens"."""

EXERCISE_8_3_BATCHES = (8, 16, 32)
"""Exercise 8-3: "the full capacity for 8, 16, and 32 long requests"."""

COW_EXAMPLE_SHARED_TOKENS = 3
"""8.3.2: "a block that can hold 4 tokens already has the KV of three shared tokens"."""

COW_EXAMPLE_BLOCK_TOKENS = 4
"""8.3.2: "a block that can hold 4 tokens"."""

COW_EXAMPLE_BRANCHES = 2
"""8.3.2: "two branches are about to write different tokens next"."""

BRANCH_EXPERIMENT_BRANCHES = 4
"""8.3.2, footnote 9: "In an existing four-branch experiment"."""

BRANCH_EXPERIMENT_SHARED_BLOCKS = 95
"""8.3.2: "the common prefix occupies 95 blocks"."""

BRANCH_EXPERIMENT_PRIVATE_BLOCKS = 9
"""8.3.2: "each branch has an additional 9 private blocks"."""

PREEMPTION_POOLS_BYTES = (1 * GiB, 2 * GiB)
"""8.3.2: "one preemption occurred when using a 1 GiB KV pool ... with a 2 GiB pool, this
recomputation did not occur"."""

# --- 8.3.3-8.3.4: prefix reuse, snapshots, retention ----------------------------------------------

HYBRID_MATCHED_TOKENS = 10_752
"""8.3.3: "Suppose the text matches up to the 10,752nd token"."""

HYBRID_SNAPSHOT_POSITIONS = (4096, 8192)
"""8.3.3: "recurrent snapshots are saved at the 4096th and 8192nd tokens"."""

HYBRID_SNAPSHOT_MIB_PER_CARD = 53.6
"""8.3.3: "each snapshot is about 53.6 MiB per card" (TP = 8)."""

HYBRID_SNAPSHOT_COUNTS = (2, 32)
"""8.3.3: "keeping 2 snapshots costs about 107 MiB, and keeping 32 snapshots"."""

DEEPSEEK_SWA_SHARE = 1 / 2
"""8.3.3: "SWA accounts for about half of the long-term cache"."""

DEEPSEEK_GLOBAL_KV_FRACTION = 1 / 4
"""8.3.3: "further compresses the global KV to about a quarter"."""

CANCEL_CALL_S = 1.6e-3
"""8.3.2, footnote 29: "the cancellation call returned in about 1.6 ms"."""

CANCEL_RELEASE_S = 31e-3
"""8.3.2, footnote 29: "were not released until about 31 ms"."""

CANCEL_RELEASED_BLOCKS = 104
"""8.3.2, footnote 29: "the corresponding 104 blocks"."""

DEEPSEEK_REPLAY_WINDOW_TOKENS = 128
"""8.3.3: "the encoder replays up to the most recent 128 tokens of the cached prefix"."""

DEEPSEEK_SWA_LAYERS = 40
"""8.3.3: "the 40 layers of SWA resident during generation"."""

DEEPSEEK_DECODER_LAYERS = 20
"""8.3.3: "passing it through the 20 decoder layers"."""

CONTEXT_HISTORY_TOKENS = 8192
"""8.3.3: "Suppose there is already an 8K-token context"."""

CONTEXT_TOOL_RESULT_TOKENS = 1024
"""8.3.3: "the next round appends a 1K tool result"."""

CONTEXT_SUMMARY_TOKENS = 2048
"""8.3.3: "summarize the history down to 2K and then append 1K"."""

RETENTION_HIT_PROB = 0.5
"""8.3.4: "At a 50% hit probability"."""

PREFIX_B_TOKENS = 2048
"""8.3.4: "each B-class prefix contains 2048 tokens"."""

PREFIX_B_COUNT = 3
"""8.3.4: "keeping three B's saves a combined 120.9 ms"."""

REPLAY_ROUNDS = 12
"""8.3.4, footnote 13: "One replay of 12 rounds of agent input"."""

REPLAY_INPUT_TOKENS = 19_556
"""8.3.4: "contains 19,556 input tokens"."""

REPLAY_HIT_TOKENS_6GIB = 16_304
"""8.3.4: "a 6 GiB cache pool hits 16,304 tokens"."""

CACHE_POOLS_BYTES = (6 * GiB, 1 * GiB)
"""8.3.4: "a 6 GiB cache pool ... a 1 GiB pool has no hits"."""

# --- 8.4: quantised files, compressed KV, offload, quality ---------------------------------------

Q2K_FILE_PAYLOAD_BYTES = 69_178_275_840
"""8.4.1, footnote 27: "code-value/floating-point payload is 69,178,275,840 bytes"."""

Q2K_FILE_METADATA_BYTES = 16_506_720_256
"""8.4.1, footnote 27: "quantization metadata is 16,506,720,256 bytes"."""

Q2K_FILE_HEADER_BYTES = 6_006_016
"""8.4.1, footnote 27: "headers and padding are 6,006,016 bytes"."""

UD_Q2K_XL_FILE_GIB = 81.97
"""8.4.1: "Another variant, UD-Q2_K_XL, is about 81.97 GiB" (only its GiB size is given)."""

M2_SYSTEM_RESERVE_BYTES = 8 * GiB
"""8.4.1: "reserving 8 GiB for the system and workspace"."""

CONTEXT_32K_TOKENS = 32_768
"""8.4.1: "If context length grows to 32K" (32K = 32,768 tokens)."""

CONVERSION_S_CASES = (0.2 * ms, 0.8 * ms)
"""8.4.2: "If conversion adds 0.2 ms ... if conversion adds 0.8 ms"."""

BF16_INTERVAL_FIXED_S = 6.44 * ms
"""8.4.2, footnote 15: BF16's fit "6.44+4.37×10^-5 L" ms (Llama-3.1-8B on H100)."""

BF16_INTERVAL_PER_TOKEN_S = 4.37e-5 * ms
"""8.4.2: BF16's growth term, "4.37×10^-5" ms per context token."""

FP8_INTERVAL_FIXED_S = 6.58 * ms
"""8.4.2: FP8's fit "6.58+2.37×10^-5 L" ms."""

FP8_INTERVAL_PER_TOKEN_S = 2.37e-5 * ms
"""8.4.2: FP8's growth term, "2.37×10^-5" ms per context token."""

FIT_CONTEXTS = (2048, 16_384)
"""8.4.2: "at 2K ... while at 16K" (16K = 16,384 reproduces 7.16 ms)."""

DEEPSEEK_V41_GLOBAL_MIB = 6.953
"""8.4.2: "DeepSeek V4.1's two figures are 6.953 MiB and 2.578 MiB" (8K context)."""

DEEPSEEK_V41_SWA_MIB = 2.578
"""8.4.2: V4.1's effective SWA, "2.578 MiB"."""

DEEPSEEK_V4_TOTAL_MIB = 30.521
"""8.4.2: "V4's corresponding two items total 30.521 MiB"."""

MLA_STATE_8K_MIB = 549
"""8.4.2: the compact MLA state of Section 9.2.2 for the same 8K context "is only 549 MiB"."""

OFFLOAD_EVERY_N_LAYERS = 4
"""8.4.3: "Offloading one layer out of every four across 36 layers"."""

OFFLOAD_PREFETCH_BUFFERS = (1, 2)
"""8.4.3: "one buffer set occupies 288 MiB ... two sets occupy 576 MiB"."""

OFFLOAD_BATCH = 4
"""8.4.3: "If each round generates one token for each of four requests"."""

COPY_BUDGET_S = 1.0
"""Exercise 8-5: "If the total time budget for all copying is 1 second"."""

COMPRESS_EXAMPLE_BYTES = 96 * MiB
"""8.4.3: "Compressing 96 MiB of weights to a quarter of their size"."""

COMPRESS_EXAMPLE_FRACTION = 1 / 4
"""8.4.3: "to a quarter of their size"."""

ACCURACY_BF16_KV = 28 / 32
"""8.4.4: "Across 32 natural-generation runs, using BF16 KV answered 28 correctly"."""

ACCURACY_FP8_KV = 26 / 32
"""8.4.4: "switching to the original FP8 implementation answered 26 correctly"."""

ACCURACY_FP8_KV_BF16_Q = 28 / 32
"""8.4.4: "keeping FP8 KV but restoring Q to BF16 again answered 28 correctly"."""

PRECISION_RUNS_PER_TASK = 4
"""8.4.4: "Each task is run twice at each of two concurrency levels" (8 tasks, 32 runs)."""

PRECISION_TASK_WRONG_BF16_KV = 5
"""8.4.4: "task 5 (n512-r0 ...) is wrong all four times under BF16 KV, but correct all four
times under "FP8 KV + BF16 Q""."""

PRECISION_TASK_WRONG_FP8_KV_BF16_Q = 6
"""8.4.4: "task 6 (n512-r1) shows exactly the opposite pattern"."""

# --- 8.5: speculative decoding --------------------------------------------------------------------

TOY_TARGET_PROBS = (0.25, 0.75)
"""8.5.1: "The target distribution is p(A)=1/4, p(B)=3/4"."""

TOY_DRAFT_ALWAYS_A = (1.0, 0.0)
"""8.5.1: "If the draft always generates A"."""

TOY_DRAFT_ALWAYS_B = (0.0, 1.0)
"""8.5.1: "If the draft always generates B"."""

TOY_DRAFT_LEN = 4
"""8.5.2: "Each round the draft generates four copies of the same symbol"."""

MEAN_ROUND_EXAMPLE_S = (1.5 * ms, 1.5 * ms)
"""8.5.2: "if two rounds each take 1.5 ms and output 1 and 5 tokens"."""

MEAN_ROUND_EXAMPLE_TOKENS = (1, 5)
"""8.5.2: "output 1 and 5 tokens respectively"."""

PREEMPTION_EXTRA_TOKENS = 1805
"""8.3.2: one preemption with a 1 GiB KV pool, "scheduling 1805 more tokens than normal
execution" (measured; the workload is not printed)."""

DRAFT_QUERY_S = 0.1 * ms
"""8.5.2: "Adding the 0.1 ms for querying the draft"."""

INDEX_BUILD_S = 2.0
"""8.5.2: "If building a context index takes 2 seconds"."""

DFLASH_DRAFT_TOKENS = 7
"""8.5.2: DFlash "generates 7 draft tokens per round and verifies 8 positions"."""

DFLASH_VERIFY_ROUND_S = 15.2e-3
"""8.5.2: DFlash's round "with a median latency of 15.2 ms" (Experiment 8-5, measured)."""

DFLASH_PLAIN_STEP_S = 16.9e-3
"""8.5.2: "comparable to the 16.9 ms of one ordinary decode step under the same
configuration" (Experiment 8-5, measured)."""

DFLASH_DRAFT_WEIGHT_BYTES = 2.10e9
"""8.5.3: "its weights are about 1.95 GiB (2.10 GB)"."""

DRAFT_LEN_LATENCY_S = {"plain": 90.0e-3, "K7": 30.6e-3, "K15": 29.4e-3}
"""8.5.4: "the median full latency for ordinary decode, K7, and K15 is about 90.0, 30.6, and
29.4 ms" (footnote 23 gives 90.02, 30.58, 29.43; the text subtracts the one-decimal values)."""

DRAFT_LEN_OF = {"K7": 7, "K15": 15}
"""8.5.4: "K7 and K15 denote configurations generating 7 and 15 draft tokens per round"."""

EXERCISE_8_7_ACCEPTANCE = 3 / 4
"""Exercise 8-7: "Fix the draft acceptance probability at a=3/4"."""

EXERCISE_8_7_DRAFT_LENS = (1, 2, 4, 8)
"""Exercise 8-7: "draft block lengths of 1, 2, 4, and 8"."""

EXERCISE_8_7_VERIFY_S = 26.3 * ms
"""Exercise 8-7: "one verification round takes 26.3 ms" (8.5.3's 26.26 to one decimal)."""

EXERCISE_8_7_PER_DRAFT_S = 3.6 * ms
"""Exercise 8-7: "3.6 ms per draft token" (8.5.3's 3.57 to one decimal)."""

EXERCISE_8_7_GROUP = 4
"""Exercise 8-7: "the draft executes in groups of 4 positions"."""

# --- 8.6: load, quality, the comprehensive example -------------------------------------------------

LITTLE_ARRIVAL_RATE_PER_S = 4.0
"""8.6.1: "at an arrival rate of 4 requests per second"."""

LITTLE_RESIDENCE_S = (0.5, 2.0)
"""8.6.1: "an average residence time of 0.5 seconds ... rises to 2 seconds"."""

RETRIEVAL_DEADLINE_S = 3.0
"""8.6.2: "requiring requests to complete correctly within 3 seconds of arrival"."""

QUALITY_CONDITIONS = 7
"""8.6.2, footnote 24: "eight problems, seven conditions"."""

QUALITY_WINDOWS = 3
"""Footnote 24: "three 16-request windows each"."""

QUALITY_WINDOW_REQUESTS = 16
"""8.6.2: "Each experiment submitted 16 requests"."""

QUALITY_PROBLEMS = 8
"""8.6.2: "used the same eight questions"."""

QUALITY_RESPONSES = 336
"""8.6.2: "336 responses were generated in total"."""

QUALITY_CORRECT = 294
"""8.6.2: "of which 294 were correct"."""

QUALITY_GOOD = 155
"""8.6.2: "only 155 also met the deadline"."""

GOODPUT_CB_REQ_PER_S = {1: 0.90, 4: 1.02, 16: 0.60}
"""8.6.2: continuous batching's effective throughput "about 0.90" (1/s), "about 1.02" (4/s),
"about 0.60 req/s" (16/s)."""

EXP81_ROUND_S = (ROUND_B1_S, 26.62e-3, ROUND_B16_S, 29.63e-3)
"""8.6.3 table: "Measured decode round 26.26 ms 26.62 ms 27.44 ms 29.63 ms" at batch 1, 4, 16,
64 (2K context, no shared prefix)."""

EXP81_PREFILL_MFU_MEASURED = {4: 0.61, 16: 0.61, 64: 0.58}
"""8.6.3 table: "Prefill compute efficiency 62% 61% 61% 58%": the batch-4, 16 and 64 values,
measured (the chapter gives no prefill times for them; batch 1's 62% follows from 94.8 ms)."""

SHARED_PREFILL_S = 2.04
"""8.6.3: "processes 32,768 new tokens in 2.04 s" (8K input, first 6K cached, batch 16)."""

SHARED_ROUND_S = 27.35e-3
"""8.6.3: "thereafter each decode round takes 27.35 ms"."""

DFLASH_PEAK_BEFORE_MIB = 17_706
"""8.6.3: peak process memory "(from 17,706 MiB to 20,894 MiB)" (Experiment 8-5)."""

DFLASH_PEAK_AFTER_MIB = 20_894
"""8.6.3: "to 20,894 MiB"."""

DFLASH_DRAFT_MEMORY_BYTES = (DFLASH_PEAK_AFTER_MIB - DFLASH_PEAK_BEFORE_MIB) * MiB
"""8.6.3: the drafter's extra peak memory, "(from 17,706 MiB to 20,894 MiB)", 3188 MiB (weights,
its KV and buffers), which 8.6.3 charges inside the 12 GiB KV budget; more than the 2.10 GB of
weights."""

DFLASH_TTFT_BEFORE_S = 129.4e-3
"""8.6.3: "first-token time rose from 129.4 ms to 141.6 ms" (about 2300 input tokens)."""

DFLASH_TTFT_AFTER_S = 141.6e-3
"""8.6.3: "to 141.6 ms"."""

DFLASH_TOKENS_PER_ROUND = 3
"""8.6.3: "Assume this set of requests averages 3 output tokens per round"."""

LOOKUP_TOKENS_PER_ROUND = 2
"""Exercise 8-9: "each request outputs on average 2 tokens per round"."""

LOOKUP_ROUND_S = SHARED_ROUND_S
"""Exercise 8-9: "the whole batch taking 27.35 ms per round plus a 0.1 ms lookup"."""

LOOKUP_QUERY_S = DRAFT_QUERY_S
"""Exercise 8-9: "plus a 0.1 ms lookup" (the same 0.1 ms as 8.5.2's query)."""

SHORT_OUTPUT_VARIANT_TOKENS = 16
"""8.6.3: "If memory stays the same but output is shortened to 16 tokens"."""

SMALL_KV_BUDGET_BYTES = 6 * GiB
"""8.6.3: "drops from 12 GiB to 6 GiB"."""

AMDAHL_TASK_S = 100.0
"""8.6.3: "Suppose a task takes 100 seconds in total"."""

AMDAHL_DECODE_S = (50.0, 20.0)
"""8.6.3: "of which decode accounts for 50 seconds ... originally accounted for only 20"."""

AMDAHL_FACTOR = 4.0
"""8.6.3: "speeding up decode fourfold"."""

EX88_STAGE_S = (20.0, 50.0, 30.0)
"""Exercise 8-8: "20 seconds of prefill, 50 seconds of decode, and 30 seconds of tool use"."""

EX88_DECODE_FACTOR = 4.0
"""Exercise 8-8: "reduce the decode time to one quarter of its original value"."""

EX88_PREP_S = 8.0
"""Exercise 8-8: "add 8 seconds of draft preparation time"."""

ENERGY_PER_GOOD_J = {"cb@1": 615.0, "cb@4": 652.0, "cb@16": 1083.7, "single@4": 1982.3}
"""8.6.3: "each qualifying result consumed 615.0, 652.0, and 1083.7 J ... one-at-a-time admission
at 4 req/s consumed 1982.3 J" (Experiment 8-9)."""
