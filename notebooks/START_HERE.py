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
# # Start here: an interactive companion to two chapters on LLM inference
#
# This companion follows **Chapter 8, "Inference Optimization"** (one Qwen3-8B instance on
# an RTX PRO 6000, and the question of which serving configuration lets sixteen long requests
# finish correctly within seven seconds) and **Chapter 17, "LLM Inference Performance"** (the
# roofline view of an H100: why decode waits on memory, how big the KV cache gets, and which
# lever to pull first).
#
# Every result in these notebooks is computed by the `companion` package from the inputs the
# chapters state (a card's bandwidth, a model's shape, a measured time). No result is typed into
# the text: a sentence that quotes a number is rendered by a code cell that asked `companion`
# for it, as the one below does, and a test re-runs every notebook to check that the stored
# text still matches. The [ledger](ledger.ipynb) puts each printed number of both chapters next
# to the recomputation, and lists the places where the chapters round unusually or slip.
#
# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
from companion import calc, specs, units
from companion.display import md

prompt = 2048
md(f"""For instance: a {prompt:,}-token prompt to Qwen3-8B leaves
{calc.kv_bytes(specs.QWEN3_8B, prompt) / units.MiB:,.0f} MiB of keys and values in the cache
(8.1.2). That figure was not written by hand; this cell computed it just now.""")

# %% [markdown]
# **How to use a notebook.** Read from the top and run the cells in order (Run > Run All
# Cells). Explorers are panels of sliders and dropdowns above a live figure: every move
# recomputes the numbers and redraws. The *chapter's setting* button puts the chapter's values
# back. Each section ends with "try this" prompts, each with a folded worked answer to open
# after you have tried, and a box of what you can now compute, linked to its exercises. The
# [notation page](notation.ipynb) lists the one meaning each symbol has in every notebook.
#
# **Where your work lives.** `make lab` opens JupyterLab on working copies of the notebooks
# and exercises in `my-work/`: change, run and save them freely, the originals stay as they are.
#
# **Where to begin.** Read Chapter 8's notebooks in order, from the
# [8.0 overview](ch08_inference_optimization/08_0_overview.ipynb) (the running example and the
# question it builds toward) to 8.6, with each section's exercises after it. Chapter 17's
# notebooks stand on their own; begin them with §1-§3 (memory, the roofline, prefill against
# decode), which the rest build on. Each
# notebook reads in about twenty minutes with its "in detail" folds closed.

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
batch1_read = specs.QWEN3_8B.streamed_weight_bytes + 2048 * calc.kv_bytes_per_token(specs.QWEN3_8B)
md(f"""**Units.** Memory sizes (weights, KV, pools) are binary: 1 GiB = 2^30 bytes, 1 MiB =
2^20. Bandwidths are decimal: 1 GB = 10^9 bytes, GB/s, as is a card's memory on its
specification sheet: the RTX PRO 6000's {specs.RTX_PRO_6000.mem_bytes / units.GB:.0f} GB are
{specs.RTX_PRO_6000.mem_bytes / units.GiB:.1f} GiB. The bytes a step reads appear in both: Chapter 8
gives the same batch-1 read at a 2,048-token context as {batch1_read / units.GiB:.2f} GiB (8.2.1)
and as {batch1_read / units.GB:.2f} GB (8.6.3); 1 GiB = {units.GiB / units.GB:.4f} GB. Each
notebook names the unit of every number it prints, and each exercise states the unit it
wants.""")

# %% [markdown]
# ## A first explorer

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
from companion.chapters import ch08

model = specs.QWEN3_8B
short_p, out_g = ch08.CHAPTER_REQUEST_TYPES["Short conversation"]
long_p, _ = ch08.CHAPTER_REQUEST_TYPES["Long context"]
pool, prefix = ch08.KV_BUDGET_BYTES, ch08.SHARED_PREFIX_TOKENS


def reserved_mib(prompt_tokens):
    """KV one request reserves for its whole answer, in 16-token blocks (8.1.2)."""
    return calc.kv_bytes(model, calc.held_tokens(prompt_tokens, out_g)) / units.MiB


held = calc.held_tokens(short_p, out_g)
md(f"""Every token of context leaves a key and a value per layer in the cache:
{calc.kv_bytes_per_token(model) / units.KiB:.0f} KiB per token for Qwen3-8B. By the end of its
answer a {short_p:,}-token request holds its prompt and all but its last output token (the last
one is never fed back): {short_p:,} + {out_g} - 1 = {held:,} tokens. The cache hands out whole
{ch08.BLOCK_TOKENS}-token blocks, so the request reserves {reserved_mib(short_p):,.0f} MiB; an {long_p:,}-token
one reserves {reserved_mib(long_p):,.0f} MiB. The instance keeps {pool / units.GiB:.0f} GiB for
KV and auxiliary buffers: it can serve {calc.max_concurrent(pool, model, short_p, out_g)} short
requests at once, or only {calc.max_concurrent(pool, model, long_p, out_g)} long ones (8.1.2).
Memory, not arithmetic, caps how many users run together.

Drag the prompt length and watch the staircase fall. Qwen3-8B's native context is 32,768
tokens (longer ones need rope scaling); the slider runs past it only to show the trend.""")

# %% tags=["nbval-ignore-output"]
from companion import widgets

capacity = widgets.KVCapacityPanel()
capacity.show()

# %% [markdown]
# The same panel, asked directly (this is what every explorer does on each slider move):

# %%
numbers = capacity.at().numbers
for name, value in numbers.items():
    print(f"{name:24s} {value:,}" if isinstance(value, int) else f"{name:24s} {value:,.1f}")

# %% [markdown] jp-MarkdownHeadingCollapsed=true
# #### In detail: sharing the prefix
#
# <!-- fold: the panel's second staircase -->

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
private = calc.held_tokens(long_p, out_g) - prefix
md(f"""The long requests all begin with the same {prefix:,}-token system prompt. Stored once for
all of them ({calc.kv_bytes(model, prefix) / units.MiB:,.0f} MiB) instead of once per request,
it leaves each request only its own tokens: the {calc.held_tokens(long_p, out_g):,} it holds less
the shared {prefix:,}, {private:,} tokens ({calc.kv_bytes(model, private) / units.MiB:,.0f} MiB in
whole blocks), and {calc.max_concurrent(pool, model, long_p, out_g, shared_prefix_tokens=prefix)}
long requests fit (8.3.2). The panel's second staircase counts these; it starts at the prefix,
since only a prompt at least as long as the prefix can contain it. The shared-prefix and KV
format controls move it.""")

# %% [markdown]
# ## Map
#
# **Chapter 8, Inference Optimization** (`ch08_inference_optimization/`)
#
# | notebook | what it answers |
# |---|---|
# | [8.0 Overview](ch08_inference_optimization/08_0_overview.ipynb) | the running example and the question the chapter builds toward |
# | [8.1 Request lifecycle](ch08_inference_optimization/08_1_request_lifecycle.ipynb) | where a request's time goes; what memory an instance must hold |
# | [8.2 Batching and scheduling](ch08_inference_optimization/08_2_batching_and_scheduling.ipynb) | why batching helps decode; static vs continuous vs chunked scheduling |
# | [8.3 KV cache](ch08_inference_optimization/08_3_kv_cache.ipynb) | paging, sharing, copy-on-write, prefix reuse, organising a context, what to keep in cache |
# | [8.4 Compression and offloading](ch08_inference_optimization/08_4_compression_and_offloading.ipynb) | quantised weights and KV, offloading over a link |
# | [8.5 Speculative decoding](ch08_inference_optimization/08_5_speculative_decoding.ipynb) | drafts, verification, and when they pay |
# | [8.6 Load and configuration](ch08_inference_optimization/08_6_load_and_configuration.ipynb) | goodput under load; the 16-request configuration choice |
#
# **Chapter 17, LLM Inference Performance** (`ch17_performance/`)
#
# | notebook | what it answers |
# |---|---|
# | [17.0 Overview](ch17_performance/17_00_overview.ipynb) | the chapter's assumptions and goals |
# | [§1 Memory hierarchy](ch17_performance/17_01_memory_hierarchy.ipynb) | how many FLOPs a card can do per byte it reads |
# | [§2 Roofline](ch17_performance/17_02_roofline.ipynb) | why decode sits far left of the ridge and prefill far right |
# | [§3 Prefill vs decode](ch17_performance/17_03_prefill_vs_decode.ipynb) | TTFT, ITL, head-of-line blocking |
# | [§4 KV sizing](ch17_performance/17_04_kv_sizing.ipynb) | bytes per token, max concurrency, GQA |
# | [§5 PagedAttention](ch17_performance/17_05_paged_attention.ipynb) | fragmentation and what paging buys |
# | [§6 Batching strategies](ch17_performance/17_06_batching_strategies.ipynb) | static, continuous, chunked prefill |
# | [§7 Parallelism](ch17_performance/17_07_parallelism.ipynb) | tensor vs pipeline parallelism |
# | [§8 Disaggregation and routing](ch17_performance/17_08_disaggregation_and_routing.ipynb) | prefill/decode pools, KV-aware routing |
# | [§9 Measuring](ch17_performance/17_09_measuring.ipynb) | MBU, MFU, and reading a profile |
# | [§10 Levers](ch17_performance/17_10_levers.ipynb) | quantisation, speculation, and their order |
# | [Interview questions](ch17_performance/17_11_interview_questions.ipynb) | the chapter's questions as live derivations |
#
# **Also:** the [notation](notation.ipynb) used in every formula; the
# [ledger](ledger.ipynb) of every printed number; the
# [measure-it-yourself lab](lab/measure_it_yourself.ipynb) that puts your own machine on the
# roofline; and the exercises in [`../exercises/`](../exercises/) (Exercises 8-1 to 8-9 and a
# Chapter 17 practice set), each checked by `companion.grading`.

# %% [markdown]
# ## How much of the two chapters is re-derived?

# %%
from collections import Counter

from companion import ledger

entries = ledger.entries()
per_chapter = Counter("Chapter " + e.section.split(".")[0] for e in entries)
print(f"{len(entries)} printed numbers re-derived ({dict(sorted(per_chapter.items()))})")
print(f"{sum(e.agrees for e in entries)} agree with the chapter at its printed rounding or a "
      f"noted one; {sum(not e.agrees for e in entries)} are errata, explained in the ledger")

# %% [markdown]
# ## For instructors
#
# `docs/instructors.md` in the repository is the quick start for running the exercises as a
# graded course (`make lab-instructor` opens it beside the solutions): the worked solutions
# and their index (`solutions/index.ipynb`: parts, points, tolerances), the
# nbgrader cycle on a JupyterHub, and how each student gets numbers of their own
# (`grading.student_seed()` derives a seed from the hub user name; seed 0 is the chapter's
# data).

# %% [markdown]
# ## Next step
#
# Open the [8.0 overview](ch08_inference_optimization/08_0_overview.ipynb): it sets up the
# instance, the two kinds of request and the seven-second deadline that every Chapter 8
# notebook comes back to. Then go on to
# [8.1 Request lifecycle](ch08_inference_optimization/08_1_request_lifecycle.ipynb).
