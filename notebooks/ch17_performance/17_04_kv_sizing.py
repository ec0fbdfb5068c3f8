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
# # 17.4 The KV cache, sized honestly
#
# **The question.** 17.2 made the batch size the main lever on decode throughput. Every
# sequence in a batch keeps its keys and values (the KV cache) in HBM, so the cache decides
# how large the batch can be. How many bytes does one token cost, how many sequences fit on
# a card, why does the 70B need several cards before it stores a single token, and how does
# the cache slow decode down as a conversation grows?
#
# previous: [17.3 Prefill vs decode](17_03_prefill_vs_decode.ipynb) |
# [overview](17_00_overview.ipynb) | next: [17.5 PagedAttention](17_05_paged_attention.ipynb)
#
# A unit note: Chapter 17 writes GB and MB in decimal units but "KB" for a per-token size
# means KiB (131,072 B is "128 KB"), and "8K" means 8,000 tokens. The companion follows it.

# %%
import numpy as np

from companion import calc, ledger, plots, specs, units, widgets

hw, m8, m70 = specs.H100_SXM, specs.LLAMA_8B, specs.LLAMA_70B

# %% [markdown]
# ## The formula, term by term
#
# Attention keeps one key vector and one value vector per token (the factor 2), separately
# in every layer (each layer attends on its own), one pair per *KV head*, each `head_dim`
# numbers of `dtype_bytes` bytes:
#
# $$ k = 2 \times n_{\text{layers}} \times n_{\text{kv heads}} \times d_{\text{head}}
#        \times \text{dtype bytes}, \qquad \text{KV}(L) = L \cdot k. $$
#
# The KV-head count is a factor of its own because of grouped-query attention (GQA): several
# query heads share one K/V pair, so $n_{\text{kv heads}}$ is smaller than the number of query
# heads. Multi-query attention (MQA) is the extreme with one K/V pair for all heads. Both are
# decided when the model is trained; their purpose shows up here, at serving time.

# %%
for m in (m70, m8):
    k = calc.kv_bytes_per_token(m)
    seq = calc.kv_bytes(m, calc.CH17_LONG_CONTEXT_TOKENS, block_tokens=1)
    print(f"{m.name}: 2 x {m.n_layers} x {m.n_kv_heads} x {m.head_dim} x 2 = {k:,} B "
          f"= {k / units.KiB:.0f} KB per token; {calc.CH17_LONG_CONTEXT_TOKENS:,} tokens = "
          f"{seq / units.GB:.2f} GB")

# %% [markdown]
# ## KV size by context (re-derived)
#
# The cache grows linearly with the context. The chapter's table of sizes by context is
# missing from our copy ("truncated lines"); the rows below are **re-derived** with
# `calc.kv_by_context` for the 70B shape, reading "128K" as 128,000 tokens like "8K".

# %%
by_ctx = calc.kv_by_context(m70, hardware=hw)
print(f"{'context':>9} {'KV of one sequence':>20} {'share of an 80 GB H100':>24}")
for r in by_ctx:
    print(f"{r['context_tokens']:>9,} {r['kv_bytes'] / units.GB:>17.2f} GB "
          f"{100 * r['fraction_of_memory']:>22.1f}%")
plots.kv_by_context_figure(by_ctx, capacity_bytes=hw.mem_bytes).show()

# %% [markdown]
# A single 128K-token conversation of the 70B takes more than half an H100 in cache alone.
# In that regime a handful of requests fill the card, and the batching lever barely moves.
#
# ## The 70B does not fit one card; at TP = 4 it holds about 62 long sequences
#
# Before any cache: 70e9 parameters x 2 bytes = 140 GB against 80 GB of HBM. Fitting the
# model at all needs tensor parallelism (17.7). Split over 4 GPUs, each holds a quarter of
# the weights, and the 8 KV heads split too (2 per GPU), so the cache shards along with them.
# With the chapter's 4 GB per GPU held back for the runtime and activations:
#
# $$ \text{KV space} = p\,(M - W/p - R), \qquad
#    \text{sequences} = \left\lfloor \frac{\text{KV space}}{L \cdot k} \right\rfloor. $$

# %%
one = calc.tp_kv_capacity(m70, hw, tp=1)
tp4 = calc.tp_kv_capacity(m70, hw, tp=4)
print(f"70B weights {m70.weight_bytes / units.GB:.0f} GB = {one['weights_over_memory']:.2f}x one "
      f"card; fits on one: {one['fits']}")
print(f"TP = 4: weights {tp4['weight_bytes_per_gpu'] / units.GB:.0f} GB and "
      f"{tp4['kv_heads_per_gpu']:g} KV heads per GPU; KV space "
      f"{tp4['free_kv_bytes_per_gpu'] / units.GB:.0f} GB per GPU, "
      f"{tp4['free_kv_bytes'] / units.GB:.0f} GB in all; "
      f"{tp4['max_sequences']} sequences of {calc.CH17_LONG_CONTEXT_TOKENS:,} tokens")

# %% [markdown]
# ## Max concurrency of the 8B on one H100

# %%
cap8 = calc.tp_kv_capacity(m8, hw)
print(f"KV per token      {calc.kv_bytes_per_token(m8):,} B = "
      f"{calc.kv_bytes_per_token(m8) / units.KiB:.0f} KB")
print(f"per sequence (8K) {cap8['kv_bytes_per_sequence'] / units.GB:.2f} GB")
print(f"weights           {m8.weight_bytes / units.GB:.0f} GB")
print(f"runtime reserve   {calc.CH17_RUNTIME_RESERVE_BYTES / units.GB:.0f} GB")
print(f"free for KV       {cap8['free_kv_bytes'] / units.GB:.0f} GB")
print(f"max concurrent    {cap8['max_sequences']} sequences")
print(f"batch that reaches the ridge (17.2): ~{calc.ridge_point(hw) / calc.decode_intensity(m8):.0f}")

# %% [markdown]
# A full card of worst-case 8K sequences holds 57, against the ~295 that decode would need to
# reach the ridge. Even packed to the last byte, decode stays memory-bound: the batch runs
# out of memory long before it runs out of usefulness, so every byte saved in the cache turns
# into batch, and batch into throughput.
#
# ## GQA, MHA and MQA (re-derived)
#
# The same 70B shape under three attention designs. The chapter's comparison table is not in
# our copy; **re-derived** with `calc.attention_variants`: MHA keeps one K/V pair per query
# head (64), GQA the model's 8, MQA a single one. "Sequences" counts 8,000-token sequences in
# 80 GB of cache space.

# %%
variants = calc.attention_variants(m70)
print(f"{'design':6} {'KV heads':>8} {'KV / token':>12} {'8K sequence':>12} {'in 80 GB':>9} "
      f"{'vs MHA':>7}")
for r in variants:
    print(f"{r['attention']:6} {r['n_kv_heads']:>8} {r['kv_bytes_per_token'] / units.KiB:>9,.0f} KB "
          f"{r['kv_bytes_per_sequence'] / units.GB:>9.2f} GB {r['sequences']:>9} "
          f"{r['reduction_vs_mha']:>6.0f}x")
plots.attention_variants_figure(variants).show()

# %% [markdown]
# > **Erratum box: "twenty-four" sequences with GQA.** The chapter says a 70B with MHA holds
# > three 8K conversations per 80 GB of cache and, with GQA's 8x reduction, twenty-four.
# > Three is right (80 / 20.97 = 3.8, floored). Twenty-four is three times eight: it
# > multiplies the already floored MHA count and loses the remainder. Dividing directly,
# > 80 GB / 2.62 GB = 30.5, so GQA holds **30**. (Both 3 and 24 would come out of 64 GB of
# > cache, a figure the chapter never states.) The 8x reduction itself is exact.

# %%
gqa = {e.id: e for e in ledger.by_section("17.4")}["17.4/gqa-sequences"]
print(f"chapter: {gqa.printed}; companion: {gqa.value:.0f}")
print(gqa.note)

# %% [markdown]
# Quantizing the cache to FP8 halves `dtype_bytes` and buys another 2x from the same formula;
# it stacks with GQA:

# %%
print(f"70B KV per token: BF16 {calc.kv_bytes_per_token(m70, 2) / units.KiB:.0f} KB, "
      f"FP8 {calc.kv_bytes_per_token(m70, 1) / units.KiB:.0f} KB")

# %% [markdown]
# ## Decode slows down as the context grows
#
# 17.2 derived a ceiling of 209 tokens/s from the weights alone; the chapter's earlier
# KV-cache chapter derived about 102 tokens/s from the cache alone. A real step reads both:
#
# $$ t_{\text{step}} = \frac{W + L \cdot k}{\beta}. $$
#
# For the 8B at batch 1, at three context lengths:

# %%
for L in (1_000, 10_000, 100_000):
    r = calc.decode_vs_context(m8, hw, L)
    print(f"{L:>7,} tokens: {m8.weight_bytes / units.GB:.0f} + {r['kv_bytes'] / units.GB:.2f} GB = "
          f"{r['step_bytes'] / units.GB:.1f} GB -> {r['step_s'] / units.ms:.1f} ms -> "
          f"{r['tokens_per_s']:.0f} tok/s")
cross = calc.kv_weight_crossover_tokens(m8)
print(f"the cache costs as much bandwidth as the weights at {cross:,.0f} tokens")

# %% [markdown]
# (At 10,000 tokens the step is 5.17 ms, which gives 193.5 tokens/s; the chapter prints 193,
# truncating where rounding gives 194; the ledger notes it.)
#
# > **Erratum box: "3,350 GB/ms".** The chapter divides by "3,350 GB/ms". The bandwidth is
# > 3.35 TB/s = 3,350 GB/**s** = 3.35 GB/ms. Its quotients (4.8, 5.2, 8.7 ms here; 6.1 and
# > 22.6 ms in 17.5) are right for GB/s, so only the unit label is wrong.

# %%
for e in ledger.by_section("17.4") + ledger.by_section("17.5"):
    if e.id.endswith("bw-GB-per-ms"):
        print(f"[{e.section}] chapter {e.printed} {e.unit}; companion {e.value:.2f} {e.unit}. {e.note}")

# %% [markdown]
# (The chapter's ~102 tokens/s reproduces with the 70B's cache at 100,000 tokens read on its
# own; see the ledger note of `17.4/ch00-cache-only-ceiling`.) Short contexts: the weights
# dominate and 17.2's ceiling holds. Past the crossover the cache dominates: one 122K-token
# conversation doubles the cost of each of its tokens. This is the hardware reason long
# conversations get slower, even once the memory to hold them is paid for.

# %%
contexts = sorted({int(x) for x in np.geomspace(500, 300_000, 60)} | {1_000, 10_000, 100_000})
rows = [calc.decode_vs_context(m8, hw, L) for L in contexts]
plots.context_step_figure(contexts, rows, weight_bytes=m8.streamed_weight_bytes,
                          bandwidth_bytes_per_s=hw.mem_bw_bytes_per_s, crossover_tokens=cross,
                          marks=(1_000, 10_000, 100_000)).show()

# %% [markdown]
# The trap in "size the KV cache for model X" is the head count: using all 64 query heads
# of a GQA model inflates the answer 8x. Name the formula, say whether the model uses GQA,
# and substitute explicitly.
#
# ## Chapter says / companion computes

# %%
print(ledger.table("17.4"))

# %% [markdown]
# ## Explorer: size the cache and count the sequences
#
# Choose the model, the card, the context per sequence, the KV precision, the number of
# tensor-parallel GPUs and the runtime reserve. The bar shows one GPU's memory (weights,
# reserve, the KV of the sequences that fit, what is left); the curve shows how the count
# falls as the context grows. The chapter's setting is the 70B at TP = 4 with 8,000-token
# sequences; switch the model to the 8B and TP to 1 for the 57.

# %% tags=["nbval-ignore-output"]
panel = widgets.KVSizingPanel()
panel.show()

# %%
for setting in ({}, {"model": m8.name, "tp": 1}):
    numbers = panel.update(**setting).numbers
    print(setting or "chapter's setting (70B, TP = 4)",
          {k: round(numbers[k], 3) for k in ("kv_per_token_KB", "kv_per_sequence_GB",
                                             "weights_per_gpu_GB", "free_kv_per_gpu_GB",
                                             "free_kv_total_GB", "max_sequences")})
_ = panel.reset()

# %% [markdown]
# ## Try this
#
# 1. With the 70B at TP = 4, switch the KV to FP8. How many 8K sequences fit now? Then try
#    TP = 8: how much of the gain comes from weights, how much from KV heads?
# 2. Set the context to 128,000 tokens with the 8B on one H100: how many conversations fit,
#    and what does that do to the batching lever of 17.2?
# 3. Give the 70B to an H200 (141 GB): does it fit on one card now, and with how much room
#    for KV?
# 4. Re-derive the GQA erratum yourself: floor(80 / 2.62) against 8 x floor(80 / 20.97).
# 5. With Qwen3-8B (36 layers), find the context where its cache equals its weights.
#
# **Practice problems.** In [the exercises folder](../../exercises/) (`ex17_*.ipynb`), the
# Chapter 17 problems on sizing the KV cache of a model, max concurrency on one card and with
# tensor parallelism, GQA vs MHA, and the context crossover practise this section.
#
# Next: [17.5 PagedAttention](17_05_paged_attention.ipynb).
