# ---
# jupyter:
#   jupytext:
#     notebook_metadata_filter: -jupytext.text_representation.jupytext_version
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Chapter 17, "LLM Inference Performance": assumptions, goals and the map
#
# Chapter 17 looks at LLM serving from the hardware up. Its thread is a single ratio: how many
# floating-point operations a GPU can perform in the time it takes to read one byte from its
# own memory. Generating tokens one at a time does far less work per byte than that, so the
# chip mostly waits for memory. Almost every technique of a modern serving stack (batching,
# paged KV memory, chunked prefill, tensor and pipeline parallelism, disaggregated prefill and
# decode, quantization, speculative decoding) either raises the work done per byte read or
# puts the idle arithmetic to use. The chapter derives each claim with arithmetic you can
# redo; these notebooks redo it with the `companion` package and let you change the inputs.

# %%
from companion import calc, ledger, specs, units

hw, m8, m70 = specs.H100_SXM, specs.LLAMA_8B, specs.LLAMA_70B

# %% [markdown]
# ## The chapter's assumptions, from the presets
#
# Unless a line says otherwise, every number in Chapter 17 is for one NVIDIA H100 SXM with
# spec-sheet values, 16-bit (BF16) numbers, and two model shapes shaped like Llama 3. The
# table is printed from the companion's presets `specs.H100_SXM`, `specs.LLAMA_8B` and
# `specs.LLAMA_70B`, so what you read here is exactly what every later notebook computes with.

# %%
print(f"{'accelerator':38} {hw.name}")
print(f"{'HBM capacity':38} {hw.mem_bytes / units.GB:.0f} GB")
print(f"{'HBM bandwidth':38} {hw.mem_bw_bytes_per_s / units.TB:.2f} TB/s")
print(f"{'dense BF16 peak':38} {hw.peak_flops_per_s / units.TFLOP:.0f} TFLOP/s")
print(f"{'NVLink (GPU to GPU)':38} {hw.interconnect_bytes_per_s / units.GB:.0f} GB/s")
print(f"{'PCIe Gen5 x16 (to the host)':38} {hw.host_link_bytes_per_s / units.GB:.0f} GB/s")
print(f"{'streaming multiprocessors':38} {hw.sm_count}")
print(f"{'L2 cache':38} {hw.l2_bytes / units.MB:.0f} MB")
print(f"{'ridge point (peak / bandwidth)':38} {calc.ridge_point(hw):.0f} FLOP per byte")
print(f"{'prefill efficiency assumed (of peak)':38} {calc.CH17_PREFILL_EFFICIENCY:.0%} = "
      f"{calc.CH17_PREFILL_EFFICIENCY * hw.peak_flops_per_s / units.TFLOP:.1f} TFLOP/s")
print(f"{'runtime + activations reserve per GPU':38} "
      f"{calc.CH17_RUNTIME_RESERVE_BYTES / units.GB:.0f} GB")

# %%
print(f"{'model shape':24} {'8B':>12} {'70B':>12}")
for label, get in (
        ("parameters", lambda m: f"{m.n_params / 1e9:.0f}e9"),
        ("layers", lambda m: f"{m.n_layers}"),
        ("hidden width", lambda m: f"{m.hidden_size:,}"),
        ("query heads", lambda m: f"{m.n_query_heads}"),
        ("KV heads (GQA)", lambda m: f"{m.n_kv_heads}"),
        ("head dimension", lambda m: f"{m.head_dim}"),
        ("bytes per value (BF16)", lambda m: f"{m.bytes_per_param:g}"),
        ("weights", lambda m: f"{m.weight_bytes / units.GB:.0f} GB"),
        ("KV per token", lambda m: f"{calc.kv_bytes_per_token(m) / units.KiB:.0f} KB"),
        ("KV per 8K sequence",
         lambda m: f"{calc.kv_bytes(m, calc.CH17_LONG_CONTEXT_TOKENS, block_tokens=1) / units.GB:.2f} GB"),
        ("weights / one H100", lambda m: f"{m.weight_bytes / hw.mem_bytes:.2f}x")):
    print(f"{label:24} {get(m8):>12} {get(m70):>12}")

# %% [markdown]
# **Reading the chapter's units.** GB and MB are decimal (1e9, 1e6 bytes), like the vendor's
# specs. A per-token size in "KB" is KiB (131,072 B is "128 KB"). "8K tokens" means 8,000
# tokens, except the 8,192-token maximum length a worst-case reservation uses in §5. "50% of
# peak" is 494.5 TFLOP/s. The chapter rounds the 8B to exactly 8e9 parameters, so its weights
# are 16 GB.
#
# ## What you should be able to do afterwards
#
# - Put prefill and decode on a roofline and explain, with numbers, why decoding one sequence
#   uses about a third of a percent of the GPU's arithmetic.
# - Compute a model's KV bytes per token from four numbers of its configuration and turn a
#   card's free memory into a maximum number of concurrent sequences.
# - Say which ideas PagedAttention takes from operating-system virtual memory and compute the
#   batch and throughput they recover.
# - Tell when continuous batching is enough and when a long prompt needs chunked prefill, and
#   what that trade costs in time to first token.
# - Choose tensor or pipeline parallelism from the communication each needs.
# - Explain disaggregated prefill/decode pools and KV-aware routing as answers to the two
#   phases having different bottlenecks.
# - Read a profiler timeline and a per-kernel report, and say why "GPU util" from nvidia-smi
#   misleads.
#
# ## A first taste
#
# Three of the chapter's headline numbers for the 8B on the H100, as the later notebooks
# derive them:

# %%
split = calc.decode_time_split(m8, hw)
b1 = calc.roofline_point(calc.decode_intensity(m8), hw)
cap = calc.tp_kv_capacity(m8, hw)
print(f"batch-1 decode: {split['step_s'] / units.ms:.2f} ms per token, {split['tokens_per_s']:.0f} "
      f"tok/s, {100 * b1['fraction_of_peak']:.2f}% of peak FLOP/s (17.2)")
print(f"8K sequences that fit next to the weights: {cap['max_sequences']} (17.4)")
print(f"prefill of a {calc.CH17_PROMPT_TOKENS:,}-token prompt at 50% of peak: "
      f"{calc.prefill_compute_s(m8, hw, calc.CH17_PROMPT_TOKENS) / units.ms:.0f} ms (17.2)")

# %% [markdown]
# ## Map of the Chapter 17 notebooks
#
# | notebook | section | what you compute and explore |
# |---|---|---|
# | [17.1 Memory hierarchy](17_01_memory_hierarchy.ipynb) | §1 | the memory pyramid (re-derived), the 295 FLOP/byte ratio, the 24 ms full-memory sweep, other cards |
# | [17.2 Roofline](17_02_roofline.ipynb) | §2 | decode at 1 FLOP/byte and 0.34% of peak, 4.78 ms and 209 tok/s, prefill at 33/66 ms, batching and the KV drag on intensity; the roofline explorer |
# | [17.3 Prefill vs decode](17_03_prefill_vs_decode.ipynb) | §3 | TTFT, ITL, TPOT; the 1.57 s request budget; head-of-line blocking on the scheduler simulator |
# | [17.4 KV sizing](17_04_kv_sizing.ipynb) | §4 | the KV formula, sizes by context (re-derived), 70B at TP = 4, the 8B's 57 sequences, GQA vs MHA vs MQA (re-derived), decode slowing with context |
# | [17.5 PagedAttention](17_05_paged_attention.ipynb) | §5 | fragmentation, blocks and block tables on a real allocator, prefix sharing, 57 vs ~760 sequences and 3.6x throughput |
# | [17.6 Batching strategies](17_06_batching_strategies.ipynb) | §6 | static vs continuous batching, chunked prefill and its ITL/TTFT trade |
# | [17.7 Tensor and pipeline parallelism](17_07_parallelism.ipynb) | §7 | all-reduce traffic and latency, the pipeline bubble, placing a 405B model |
# | [17.8 Disaggregation and routing](17_08_disaggregation_and_routing.ipynb) | §8 | sizing prefill and decode pools, shipping the KV cache, KV-aware routing |
# | [17.9 Measuring it](17_09_measuring.ipynb) | §9 | why "GPU util" misleads, MBU and MFU, the Nsight pair |
# | [17.10 The levers, ranked](17_10_levers.ipynb) | §10 | quantization, speculative decoding, the levers and cheat sheet (re-derived) |
# | [Interview questions, worked](17_11_interview_questions.ipynb) | all | the chapter's interview questions answered with the companion |
#
# Every number Chapter 17 prints is re-derived in the [ledger](../ledger.ipynb), with a note
# where the chapter rounds oddly; where it slips, the section notebook has an erratum box that
# explains both readings. The chapter's noted errata:

# %%
errata = [e for e in ledger.by_section("17") if not e.agrees]
print(f"{len(errata)} entries of Chapter 17 disagree with the companion, each with a note:")
for e in errata:
    print(f"  [{e.section}] {e.claim}: printed {e.printed} {e.unit}, recomputed {e.value:.3g}")

# %% [markdown]
#
# **Practice problems.** The Chapter 17 practice set is in
# [the exercises folder](../../exercises/), starting with [Exercise 17-1](../../exercises/ex17_1.ipynb);
# each problem checks your answer with a tolerance and points at the step to revisit, without
# giving the answer away. To put your own machine on the roofline, run the
# [measurement lab](../lab/measure_it_yourself.ipynb).
