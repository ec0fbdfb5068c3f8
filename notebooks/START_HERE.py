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

# %% [markdown]
# ## A first explorer
#
# How many requests' KV fits in the instance's 12 GiB? Drag the prompt length, the shared
# prefix or the KV format and watch the two staircases: independent contexts, and contexts
# that share a common prefix stored once (sections 8.1.2 and 8.3.2).

# %% tags=["nbval-ignore-output"]
from companion import widgets

capacity = widgets.KVCapacityPanel()
capacity.show()

# %% [markdown]
# The same panel, asked directly (this is what every explorer does on each slider move):

# %%
numbers = capacity.at().numbers
for name, value in numbers.items():
    print(f"{name:24s} {value:,.1f}")

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
