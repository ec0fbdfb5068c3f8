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
# # Chapter 8, "Inference Optimization": the running example and the map
#
# A model that answers one user at a few dozen tokens per second can serve thousands of
# tokens per second to many users at once, on the same card. The gap comes from how decode
# works: every new token needs the model's weight matrices read from memory again, and that
# read costs the same whether it serves one request or sixty-four. Chapter 8 is about arranging requests
# so that they share those reads (batching, scheduling), fit in memory (paging, prefix
# sharing, compression, offloading) and need fewer sequential steps (speculative decoding),
# while each user still gets a complete answer before a deadline.
#
# The whole chapter works on one concrete instance. This notebook sets it up with the
# companion's presets, shows the design conditions, states the question the chapter ends on,
# and links every section's notebook.

# %%
from companion import calc, ledger, plots, specs, units
from companion.chapters import ch08

hw, model = specs.RTX_PRO_6000, specs.QWEN3_8B

# %% [markdown]
# ## The hardware and the model
#
# One RTX PRO 6000 Blackwell Workstation Edition runs one copy of Qwen3-8B in BF16 (2 bytes
# per weight). Two numbers of the card matter most in what follows: how fast it reads memory
# and how fast it multiplies. Their ratio, the *ridge point*, says how many FLOPs a kernel must
# do per byte it reads before compute, not memory, becomes the limit. Decode does about 1 FLOP
# per weight byte at batch 1, far below the ridge: it is a memory-bound job.
#
# Two weight sizes appear below, and the chapter uses both. $M_w$ is what the weights occupy
# in memory: every parameter, the input embedding table included. $D_w$ is what one decode
# step streams: every weight *except* that table, because a step looks up only one row of it
# per token (footnote 1 of Chapter 8). Memory budgets use $M_w$; read volumes and read times
# use $D_w$.

# %%
print(f"{'accelerator':34} {hw.name}")
print(f"{'memory':34} {hw.mem_bytes / units.GB:.0f} GB")
print(f"{'memory bandwidth':34} {hw.mem_bw_bytes_per_s / units.GB:,.0f} GB/s")
print(f"{'dense BF16 peak (FP32 accumulate)':34} {hw.peak_flops_per_s / units.TFLOP:.1f} TFLOP/s")
print(f"{'power cap':34} {hw.power_w:.0f} W")
print(f"{'ridge point (peak / bandwidth)':34} {calc.ridge_point(hw):.0f} FLOP per byte")
print()
print(f"{'model':34} {model.name}")
print(f"{'layers, KV heads, head dim':34} {model.n_layers}, {model.n_kv_heads}, {model.head_dim}")
print(f"{'parameters':34} {model.n_params:,.0f}")
embedding_table = model.weight_bytes - model.streamed_weight_bytes
print(f"{'resident BF16 weights M_w (all)':34} {model.weight_bytes:,.0f} B = "
      f"{model.weight_bytes / units.GiB:.1f} GiB")
print(f"{'  of which input embedding table':34} {embedding_table:,.0f} B = "
      f"{embedding_table / units.GiB:.2f} GiB (looked up by row)")
print(f"{'weights streamed per step D_w':34} {model.streamed_weight_bytes:,.0f} B = "
      f"{model.streamed_weight_bytes / units.GiB:.1f} GiB = "
      f"{model.streamed_weight_bytes / units.GB:.2f} GB")
print(f"{'KV per token (K and V, all layers)':34} {calc.kv_bytes_per_token(model):,} B = "
      f"{calc.kv_bytes_per_token(model) / units.KiB:.0f} KiB")
print(f"{'weight reuse at batch 1':34} {calc.weight_reuse_intensity(1):.0f} FLOP per weight byte")

# %% [markdown]
# ## The instance: 32 GiB of the card
#
# The chapter does not give the model the whole card. Its instance gets 32 GiB, and three
# claims share it: the resident weights $M_w$, 12 GiB for the KV cache (the keys and values
# every request keeps for its context) *and auxiliary buffers*, and whatever remains for
# activations, the buffers that CUDA-graph replay keeps, and other workspace. Section 8.1.2
# writes the rule as $M_w + M_{KV} + M_a + M_u \le C$, with $M_{KV}$ the KV pool's blocks and
# other buffers in $M_u$. The chapter budgets the pool and the auxiliary buffers together, so the
# cell below prints them as one line, "KV pool + auxiliary buffers", as every Chapter 8 notebook
# names them. The 12 GiB is not for KV alone: whatever else a configuration keeps per instance is
# charged to it too, such as scheme D's speculation memory in the final comparison (8.6.3, computed
# further down).

# %%
instance = calc.memory_budget(ch08.INSTANCE_MEM_BYTES, model.weight_bytes, ch08.KV_BUDGET_BYTES)
print(f"capacity C               {instance.capacity_bytes / units.GiB:6.1f} GiB")
print(f"weights M_w              {instance.weight_bytes / units.GiB:6.1f} GiB")
print(f"KV pool + auxiliary      {instance.kv_pool_bytes / units.GiB:6.1f} GiB")
print(f"left for M_a + M_u       {instance.slack_bytes / units.GiB:6.1f} GiB")
plots.memory_budget_figure([("32 GiB instance", instance)], hide_empty=True,
                           title="The chapter's instance on the RTX PRO 6000").show()

# %% [markdown]
# ## The workload and the deadline
#
# Two kinds of requests arrive. Both generate 256 tokens; they differ in how much they read
# first. The long one starts with the same 6144-token system prompt and tool definitions
# every time, which section 8.3 will exploit. Every request must be answered completely within
# 7 seconds of arriving.

# %%
print(f"{'design condition':22} {'short conversation':>20} {'long context':>14}")
short_p, short_g = ch08.CHAPTER_REQUEST_TYPES["Short conversation"]
long_p, long_g = ch08.CHAPTER_REQUEST_TYPES["Long context"]
print(f"{'input (tokens)':22} {short_p:>20,} {long_p:>14,}")
print(f"{'output (tokens)':22} {short_g:>20,} {long_g:>14,}")
print(f"{'common prefix (tokens)':22} {0:>20,} {ch08.SHARED_PREFIX_TOKENS:>14,}")
print(f"{'completion deadline (s)':22} {ch08.DEADLINE_S:>20g} {ch08.DEADLINE_S:>14g}")

# %% [markdown]
# How tight is that deadline? A short request measured alone on this card (Experiment 8-1)
# waits 0.1 s in the queue (an assumption of the chapter), needs 0.096 s to read its prompt
# and return the first token, then returns each of the remaining tokens 26.5 ms after the
# previous one:

# %%
alone_s = calc.lifecycle_request_time_s(ch08.QUEUE_S, ch08.PREFILL_S, ch08.CLIENT_ITL_S, short_g)
print(f"short request alone: {alone_s:.2f} s, margin to the deadline "
      f"{ch08.DEADLINE_S - alone_s:.2f} s")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
from companion.display import md

margin_s = ch08.DEADLINE_S - alone_s
md(f"""That leaves about {margin_s / units.ms:.0f} ms of slack, less than one other request's
{ch08.PREFILL_S / units.ms:.0f} ms prefill: a single foreign prefill slipped in between two of its
tokens already breaks the deadline (notebook 8.1 shows it).""")

# %% [markdown]
# ### What a 26.5 ms interval is made of
#
# Each decode step streams $D_w$ from memory, so the card's bandwidth puts a floor under the
# interval: $D_w / \beta$. That floor is far below the measured interval. The cell below adds
# up the rest from Experiment 8-1's batch-1 numbers (8.2.2, 8.6.3): the request's own KV, the
# time the engine spends outside the reads, and what is left between the engine's round and the
# interval the client sees. That last line is the difference of two separate measurements,
# which 8.6.3 attributes to delivery.

# %%
row = calc.decode_efficiency_table()[0]          # batch 1, 2048-token context (8.6.3)
weights_s = model.streamed_weight_bytes / hw.mem_bw_bytes_per_s
kv_s = row["read_s"] - weights_s
delivery_s = ch08.CLIENT_ITL_S - row["round_s"]
print(f"{'read D_w at full bandwidth (floor)':44} {weights_s / units.ms:6.2f} ms")
print(f"{'+ read the 2K context KV':44} {kv_s / units.ms:6.2f} ms")
print(f"{'= the round bytes at full bandwidth':44} {row['read_s'] / units.ms:6.2f} ms "
      f"({row['read_bytes'] / units.GB:.2f} GB)")
print(f"{'+ everything else (mostly host overhead)':44} {row['gap_s'] / units.ms:6.2f} ms")
print(f"{'= measured engine round, batch ' + str(row['batch']):44} {row['round_s'] / units.ms:6.2f} ms "
      f"(MBU {100 * row['mbu']:.0f}%)")
print(f"{'+ the difference (8.6.3: delivery)':44} {delivery_s / units.ms:6.2f} ms")
print(f"{'= interval the client sees':44} {ch08.CLIENT_ITL_S / units.ms:6.2f} ms")
ledger.show(ids=["8.2.2/weight-read-ms", "8.6.3/table-read-ms-b1", "8.6.3/table-mbu-pct-b1",
                 "8.6.3/fixed-gap-ms"], label="the interval's numbers")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
rows = calc.decode_efficiency_table()
big = rows[-1]
md(f"""So the {weights_s / units.ms:.1f} ms weight read is a lower bound on the interval, not a
prediction of it. The request runs alone (batch {row['batch']}), so nothing shares the read,
and its KV adds little. The other {row['gap_s'] / units.ms:.1f} ms of each round are not
spent reading at full speed. Part of it is kernels streaming below the card's peak, but 8.6.3
puts nearly all of it on the host: Experiment 8-1 ran without CUDA Graphs, so every kernel is
launched one at a time, with scheduling and synchronisation around them. The evidence is that
the round hardly follows the bytes: at batch {big['batch']} a round reads
{big['read_bytes'] / row['read_bytes']:.1f}x the bytes yet takes only
{(big['round_s'] - row['round_s']) / units.ms:.1f} ms longer, so batching spreads the same
overhead over more useful reads and the bandwidth efficiency (MBU) climbs from
{100 * row['mbu']:.0f}% to {100 * big['mbu']:.0f}%. Notebook 8.2 builds on this split.""")

# %% [markdown]
# ## The question the chapter builds toward
#
# Sixteen long requests arrive at the same moment. Which configuration of the instance
# answers all sixteen within 7 s, in 12 GiB for KV and auxiliary buffers, for the least GPU
# time? Section 8.6.3
# compares four schemes: BF16 with independent contexts (A), BF16 with the common prefix
# shared (B), a compressed KV cache (C) and speculative decoding with a draft model on top of
# the shared prefix (D);
# Exercise 8-9 adds a fifth. Every section in between supplies one piece of that comparison:
# what a request's memory and time are made of (8.1), how batching and scheduling change both
# (8.2), how the KV cache is allocated and shared (8.3), what compression and offloading trade
# (8.4), what speculation buys (8.5), and how load, quality and cost decide (8.6).
#
# A first look at why the question is not trivial: without sharing, the sixteen contexts do
# not even fit; with sharing they fit but finish too late.

# %%
reserved = calc.kv_bytes(model, calc.held_tokens(long_p, long_g))
need = 16 * reserved
print(f"one long request reserves {reserved / units.MiB:,.0f} MiB of KV; sixteen need "
      f"{need / units.GiB:.2f} GiB of the {ch08.KV_BUDGET_BYTES / units.GiB:.0f} GiB for KV and "
      f"auxiliary buffers")
independent = calc.max_concurrent(ch08.KV_BUDGET_BYTES, model, long_p, long_g)
shared = calc.max_concurrent(ch08.KV_BUDGET_BYTES, model, long_p, long_g,
                             shared_prefix_tokens=ch08.SHARED_PREFIX_TOKENS)
print(f"long requests that fit: {independent} with independent contexts, {shared} with the "
      f"{ch08.SHARED_PREFIX_TOKENS:,}-token prefix stored once")
scheme_b = calc.scheme_result(calc.SCHEMES["B"])
print(f"scheme B (prefix shared) finishes at {scheme_b.prefill_s:.2f} s prefill + "
      f"{scheme_b.rounds} x {scheme_b.round_s / units.ms:.2f} ms = {scheme_b.total_s:.2f} s, "
      f"past the {ch08.DEADLINE_S:g} s deadline")
scheme_d = calc.scheme_result(calc.SCHEMES["D"])
print(f"scheme D cuts the rounds to {scheme_d.rounds} and finishes at {scheme_d.total_s:.2f} s")
print(f"scheme D in the same {ch08.KV_BUDGET_BYTES / units.GiB:.0f} GiB: "
      f"{scheme_d.kv_bytes / units.MiB:,.0f} MiB of shared-prefix KV + "
      f"{calc.SCHEMES['D'].draft_bytes / units.MiB:,.0f} MiB of speculation's extra memory "
      f"(draft weights {ch08.DFLASH_DRAFT_WEIGHT_BYTES / units.GB:.2f} GB + buffers) = "
      f"{scheme_d.memory_bytes / units.GiB:.2f} GiB")

# %% [markdown]
# ## Map of the Chapter 8 notebooks
#
# | notebook | section | what you compute and explore |
# |---|---|---|
# | [8.1 Request lifecycle](08_1_request_lifecycle.ipynb) | 8.1 | the timeline of one request against the deadline (Figure 8-2), TTFT and output intervals, the memory budget, KV per token and how many requests fit |
# | [8.2 Batching and scheduling](08_2_batching_and_scheduling.ipynb) | 8.2 | weight reuse, bytes read per output token vs batch (Figures 8-3, 8-4), the decode roofline, LoRA, fixed vs continuous vs chunked batching on a simulator, pair counts (Figure 8-8), token budget and graph padding |
# | [8.3 KV cache management](08_3_kv_cache.ipynb) | 8.3 | paged blocks and block tables, branch sharing and copy-on-write, prefix reuse, how to organise an agent's context, DeepSeek V4.1's state tiers, eviction vs recomputation |
# | [8.4 Compression and offloading](08_4_compression_and_offloading.ipynb) | 8.4 | quantized weights and KV, byte layouts of q8_0/q4_0, weight offloading and prefetch |
# | [8.5 Speculative decoding](08_5_speculative_decoding.ipynb) | 8.5 | draft and verify, expected tokens per round, draft cost crossovers |
# | [8.6 Load and configuration](08_6_load_and_configuration.ipynb) | 8.6 | queueing and admission, goodput, the comparison of schemes A-E, Amdahl over a task |
#
# Every number the chapter prints is re-derived in the [ledger](../ledger.ipynb), with notes
# where the chapter rounds oddly or slips. The symbols in the formulas keep one meaning
# throughout; the [notation page](../notation.ipynb) lists them.
#
# **Exercises** (open them in order; each checks your answers without revealing them):
# [8-1](../../exercises/ex8_1.ipynb) read volume vs batch,
# [8-2](../../exercises/ex8_2.ipynb) prefill chunk size from an interval target,
# [8-3](../../exercises/ex8_3.ipynb) block size and prefix sharing,
# [8-4](../../exercises/ex8_4.ipynb) which prefixes to cache,
# [8-5](../../exercises/ex8_5.ipynb) weight offloading,
# [8-6](../../exercises/ex8_6.ipynb) KV compression and retries,
# [8-7](../../exercises/ex8_7.ipynb) the best draft length,
# [8-8](../../exercises/ex8_8.ipynb) stage acceleration in an agent task,
# [8-9](../../exercises/ex8_9.ipynb) the comprehensive design.
