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
# # 17.5 PagedAttention: virtual memory for the KV cache
#
# **The question.** 17.4 counted sequences as if every allocated KV byte held a real token.
# Before 2023 most did not: serving systems reserved each request's worst case up front. How
# much memory did that waste, what does paging (borrowed from operating systems) change, and
# how much throughput does the recovered memory buy?
#
# previous: [17.4 KV sizing](17_04_kv_sizing.ipynb) | [overview](17_00_overview.ipynb) |
# next: [17.6 Batching strategies](17_06_batching_strategies.ipynb)

# %%
from companion import calc, ledger, plots, specs, units, widgets

hw, m8 = specs.H100_SXM, specs.LLAMA_8B

# %% [markdown]
# ## The fragmentation problem
#
# Nobody knows in advance how long an answer will be: the model stops when it emits a stop
# token, and users cancel. The attention kernels of the time wanted each sequence's cache in
# one contiguous piece, and the only contiguous allocation that is always safe is the maximum
# length, reserved when the request arrives. For the 8B with `max_len` = 8,192 and a chat turn
# that uses 300 tokens:
#
# $$ \text{internal fragmentation} = 1 - \frac{\text{used}}{\text{reserved}}. $$

# %%
waste = calc.reservation_waste(m8, 300, max_len_tokens=calc.CH17_MAX_LEN_TOKENS)
print(f"reserved {calc.CH17_MAX_LEN_TOKENS:,} x {calc.kv_bytes_per_token(m8):,} B = "
      f"{waste['reserved_bytes'] / units.GB:.2f} GB; used 300 x {calc.kv_bytes_per_token(m8):,} B "
      f"= {waste['used_bytes'] / units.MB:.0f} MB; wasted {100 * waste['wasted_fraction']:.0f}%")

# %% [markdown]
# That is one of three ways pre-paging systems lost KV memory:
#
# - **internal fragmentation**: the unused tail of each worst-case reservation (by far the
#   largest);
# - **external fragmentation**: gaps between variable-sized contiguous slabs that no new
#   request fits into, like a heap that never compacts;
# - **duplication**: requests with the same system prompt or few-shot header each kept their
#   own copy of its K/V.
#
# The vLLM paper measured 60-80% of KV memory wasted across the three. The card was short of
# *usable* memory, and the batch, the main lever, was capped by the waste.
#
# ## The fix: pages, page tables, allocation on demand
#
# PagedAttention applies virtual memory to the cache:
#
# - KV memory is cut into fixed-size **blocks** of, say, 16 token slots (the pages);
# - each sequence has a **block table** mapping its logical positions to whichever physical
#   blocks it owns, in any order (the page table);
# - a new block is taken only when the last one is full: allocation **on demand**, not on
#   arrival.
#
# The attention kernel follows the block table the way a CPU's memory unit walks page
# tables. The chapter's example, a sequence of 40 live tokens in 16-token blocks:

# %%
a = calc.block_fill(40, 16)
print(f"40 tokens, 16-token blocks: {a['blocks']} blocks; the last holds {a['last_block_tokens']}/16 "
      f"tokens, {a['empty_slots']} slots idle: the only waste this sequence has")

# %% [markdown]
# ### The allocator, drawn from a real block manager
#
# Below, the same six requests arrive at one small KV pool of 1,024 token slots
# (`companion.sim.kvcache.BlockManager`; a toy size so the blocks are visible; the chapter's
# sizes are in the next cells). Top strip: the contiguous scheme, each request reserving a
# `max_len` of 256 slots on arrival: four requests fit, E and F are turned away, and the
# reserved tails stay empty (red outline). Bottom strip: 16-token blocks allocated as tokens
# arrive. All six fit, each wastes less than one block, and because all sequences grow at the
# same time their later blocks interleave in physical memory: the block tables, printed
# below, map them back. Sequence A ends with 40 tokens, the chapter's example.

# %%
demo = widgets.allocator_demo()
paged, naive = demo["paged"], demo["naive"]
print(f"contiguous: admitted {demo['admitted']['naive']}, turned away {demo['rejected']['naive']}")
print(f"paged:      admitted {demo['admitted']['paged']}, turned away {demo['rejected']['paged']}")
print(f"{'seq':>3} {'tokens':>6}  block table (logical -> physical)   empty slots in the last block")
for sid in paged.sequences:
    print(f"{sid:>3} {paged.num_tokens(sid):>6}  {str(paged.block_table(sid)):34} "
          f"{paged.tail_unused(sid)}")
print(f"paged pool: {paged.used_blocks} of {paged.num_blocks} blocks used; contiguous pool: "
      f"{naive.used_blocks} of {naive.num_blocks} reservations used")
plots.allocator_figure(paged, naive).show()

# %% [markdown]
# With blocks, waste is at most one partly filled block per sequence, against a reservation
# of about a gigabyte. Strictly the worst case is a last block holding one token (15 empty
# slots); the chapter bounds it by a whole block, and both round to 2 MB:

# %%
worst = calc.paged_worst_waste(m8, 16)
print(f"worst-case tail: {worst['tokens']} slots x {calc.kv_bytes_per_token(m8):,} B = "
      f"{worst['bytes'] / units.MB:.2f} MB (whole-block bound "
      f"{calc.kv_bytes(m8, 16, block_tokens=1) / units.MB:.2f} MB) vs "
      f"{waste['reserved_bytes'] / units.GB:.2f} GB reserved")
print(f"a 1,024-token block can waste up to {calc.paged_worst_waste(m8, 1024)['tokens']:,} tokens")

# %% [markdown]
# The block size is the page-size trade-off again: small blocks bound the waste tightly but
# make longer block tables and more scattered reads; large blocks read contiguously but let
# the fragmentation back in. Implementations settled near 16 tokens.
#
# ## Sharing prefixes, copying on write
#
# Two more operating-system ideas come with the blocks. Sequences that start with the same
# tokens point their block tables at the same physical blocks (**prefix sharing**: one copy
# of a system prompt however many users share it), and a shared block is copied only when one
# of them writes into it (**copy-on-write**, as after `fork`). A 2,000-token system prompt
# shared by 100 concurrent users:

# %%
share = calc.prefix_sharing_bytes(m8, 100, 2_000)
print(f"naive: 100 x 2,000 x {calc.kv_bytes_per_token(m8):,} B = {share['naive_bytes'] / units.GB:.1f} GB "
      f"of identical bytes; paged: {share['shared_bytes'] / units.GB:.2f} GB")

# %% [markdown]
# When memory still runs out (a burst of long answers), the engine *preempts*: it frees a
# sequence's blocks and later recomputes them, or restores a copy swapped out to host memory
# over PCIe. A nonzero preemption rate means the KV budget, not the scheduler, is the limit.
#
# ## What it buys, in tokens per second
#
# Same card, same 60 GB of KV space as 17.4, a mixed workload averaging 600 live tokens per
# sequence. The naive system holds as many sequences as 8,000-token reservations fit; the
# paged one as many as their live bytes fit. Wasted space is not wasted traffic: both stream
# only the live bytes each step. What changes is how many sequences share each pass over the
# weights:
#
# $$ t_{\text{step}} = \frac{W + B \cdot L \cdot k}{\beta}, \qquad
#    \text{throughput} = \frac{B}{t_{\text{step}}}. $$

# %%
gain = calc.paged_batch_gain(m8, hw, block_tokens=1)     # the chapter's arithmetic: live bytes
blocks = calc.paged_batch_gain(m8, hw, block_tokens=16)  # with the 16-token block tail counted
print(f"live KV per sequence: {gain['live_kv_bytes'] / units.MB:.1f} MB; KV space "
      f"{gain['kv_budget_bytes'] / units.GB:.0f} GB")
for label, row in (("naive", gain["naive"]), ("paged", gain["paged"]),
                   ("paged, 16-token blocks", blocks["paged"])):
    print(f"{label:24} batch {row['batch']:4}: {row['step_bytes'] / units.GB:5.1f} GB per step -> "
          f"{row['step_s'] / units.ms:4.1f} ms -> {row['tokens_per_s']:7,.0f} tok/s")
print(f"batch x{gain['batch_gain']:.1f}, throughput x{gain['throughput_gain']:.1f}")

# %% [markdown]
# Thirteen times the batch gives 3.6 times the throughput, not thirteen: the bigger batch also
# makes every step heavier, as 17.2's intensity argument predicts. (The chapter rounds the
# paged batch to ~760 and multiplies that rounded figure, so it prints 75.7 GB and 22.6 ms
# where the floored 762 gives 75.9 GB and 22.7 ms; counting the 16-token block tails, 752
# sequences fit. The ledger notes each.) The same arithmetic shows the price: the ITL rose
# from about 6 ms to about 23 ms. Throughput and per-token latency pull against each other,
# which is why production schedulers cap the batch at an ITL target instead of maximising
# tokens per second.
#
# ## Chapter says / companion computes
#
# (Some rows appear twice: once from the closed forms and once recomputed by actually
# allocating blocks in `companion.sim.kvcache`; the ledger records the latter's source as
# "sim".)

# %%
print(ledger.table("17.5"))

# %% [markdown]
# ## Explorer: live tokens, block size and the reservation
#
# Change the mean live tokens per sequence, the block size and the contiguous reservation.
# Left: sequences that fit in the KV space, contiguous (flat: it depends only on the
# reservation) and paged (it grows as sequences get shorter). Right: the throughput/ITL
# curve as the batch grows, with the two allocators' batches on it. The readout gives both
# the chapter's live-bytes count and the count with block tails.

# %% tags=["nbval-ignore-output"]
panel = widgets.PagedKVPanel()
panel.show()

# %%
numbers = panel.update().numbers
for key in ("live_kv_MB", "naive_batch", "paged_batch", "paged_batch_blocks", "naive_step_ms",
            "paged_step_ms", "naive_tok_s", "paged_tok_s", "throughput_gain", "worst_waste_MB"):
    value = numbers[key]
    print(f"{key:20} {value:,.0f}" if value >= 100 else f"{key:20} {value:.4g}")

# %% [markdown]
# ## Try this
#
# 1. Set the block size to 1,024 tokens. How many sequences of 600 live tokens fit now, and
#    how close is that to the contiguous scheme?
# 2. Raise the mean live tokens to 8,000 (every sequence uses its whole reservation). What
#    is left of paging's advantage, and why?
# 3. Find the batch on the right-hand curve whose ITL is 10 ms. What throughput does that
#    cap cost, compared with filling the card?
# 4. In the allocator drawing, which request would the contiguous pool admit if A finished?
#    Rerun `widgets.allocator_demo(max_len_tokens=128)`: what changes in the top strip?
# 5. Work out the prefix-sharing saving for 1,000 users of a 6,000-token prompt.
#
# **Practice problems.** In [the exercises folder](../../exercises/) (`ex17_*.ipynb`), the
# Chapter 17 problems on internal fragmentation of worst-case reservations, block tables and
# worst-case waste, prefix sharing, and the naive vs paged batch and throughput practise this
# section.
#
# Next: [17.6 Batching strategies](17_06_batching_strategies.ipynb) (continuous batching
# needs exactly this allocate-anytime memory).
