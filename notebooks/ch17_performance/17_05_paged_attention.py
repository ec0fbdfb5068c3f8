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
# **The question.** 17.4 counted sequences as though every reserved KV byte held a real token.
# Until 2023 most serving systems did not work that way: each request was given room for its
# worst case the moment it arrived. How much memory did that cost, what does paging (an idea
# taken from operating systems) change, and how much throughput does the memory won back buy?
#
# previous: [17.4 KV sizing](17_04_kv_sizing.ipynb) | [overview](17_00_overview.ipynb) |
# next: [17.6 Batching strategies](17_06_batching_strategies.ipynb)

# %%
from companion import calc, ledger, plots, specs, units, widgets
from companion.chapters import ch17
from companion.display import answer, md

hw, m8 = specs.H100_SXM, specs.LLAMA_8B
k8 = calc.kv_bytes_per_token(m8)

# %% [markdown]
# ## Reserving for the worst case
#
# When a request arrives, nobody can say how long its answer will be: generation ends when the
# model happens to produce an end-of-sequence token, or when the user gives up. Older attention
# kernels also insisted that a sequence's cache sit in one unbroken stretch of memory. Put the
# two together and the only allocation that can never run out is one sized for the maximum
# length, taken at arrival. Here is what that means for the 8B with a maximum of 8,192 tokens,
# serving a chat turn that ends after 300 tokens:
#
# $$ \text{internal fragmentation} = 1 - \frac{\text{bytes used}}{\text{bytes reserved}}. $$

# %%
waste = calc.reservation_waste(m8, ch17.CHAT_TURN_TOKENS, max_len_tokens=ch17.MAX_LEN_TOKENS)
print(f"reserved {ch17.MAX_LEN_TOKENS:,} x {k8:,} B = "
      f"{waste['reserved_bytes'] / units.GB:.2f} GB; used {ch17.CHAT_TURN_TOKENS} x {k8:,} B "
      f"= {waste['used_bytes'] / units.MB:.0f} MB; wasted {100 * waste['wasted_fraction']:.0f}%")

# %% [markdown]
# Nearly the whole reservation sits empty. That is the largest of three leaks the older
# systems had (17 §5):
#
# - **internal fragmentation**: the empty tail of every worst-case reservation;
# - **external fragmentation**: free memory chopped into gaps between reservations, none big
#   enough for the next request (a heap that is never compacted);
# - **duplication**: requests that begin with the same system prompt or few-shot examples, each
#   storing its own identical copy of that prefix's keys and values.
#
# The vLLM authors measured that, on realistic traffic, the three together left most of the KV
# memory unused (the chapter quotes 60-80%). Such a card did not lack memory; it lacked memory
# it could use, and the batch was capped by the leaks.
#
# ## Pages, page tables, allocation when needed
#
# PagedAttention manages the cache the way an operating system manages RAM:
#
# - the KV memory is divided into equal **blocks**, for instance of 16 token slots (pages);
# - each sequence owns a **block table**, a short list saying which physical block holds its
#   tokens 0-15, which holds 16-31, and so on; the blocks can be anywhere (a page table);
# - a sequence receives a new block only once its last one is full (demand paging).
#
# During attention the kernel looks up each block through the table, just as the address
# translation hardware of a CPU resolves virtual pages. The chapter's example: a sequence with
# 40 live tokens in 16-token blocks.

# %%
a = calc.block_fill(40, 16)
print(f"40 tokens, 16-token blocks: {a['blocks']} blocks; the last holds {a['last_block_tokens']}/16 "
      f"tokens, {a['empty_slots']} slots idle: the only waste this sequence has")

# %% [markdown]
# ### The allocator, drawn from a real block manager
#
# Six requests arrive at one small KV pool of 1,024 token slots
# (`companion.sim.kvcache.BlockManager`, a toy size so that each block is visible; the
# chapter's sizes come next). Top strip: the contiguous scheme, where each request reserves a
# maximum of 256 slots on arrival. Four fit, E and F wait in the queue, and the reserved tails
# stay empty (red outline). Bottom strip: 16-token blocks handed out as tokens arrive. All six fit,
# none wastes more than part of one block, and because the sequences grow side by side their
# later blocks interleave in physical memory; the block tables printed below map them back.
# Sequence A ends with 40 tokens, as in the chapter's example.

# %%
demo = widgets.allocator_demo()
paged, naive = demo["paged"], demo["naive"]
print(f"contiguous: admitted {demo['admitted']['naive']}, waiting {demo['rejected']['naive']}")
print(f"paged:      admitted {demo['admitted']['paged']}, waiting {demo['rejected']['paged']}")
print(f"{'seq':>3} {'tokens':>6}  block table (logical -> physical)   empty slots in the last block")
for sid in paged.sequences:
    print(f"{sid:>3} {paged.num_tokens(sid):>6}  {str(paged.block_table(sid)):34} "
          f"{paged.tail_unused(sid)}")
print(f"paged pool: {paged.used_blocks} of {paged.num_blocks} blocks used; contiguous pool: "
      f"{naive.used_blocks} of {naive.num_blocks} reservations used")
plots.allocator_figure(paged, naive).show()

# %% [markdown]
# **What this drawing cannot show.** Every contiguous reservation above has the same size, so a
# freed reservation always fits the next request exactly: the top strip shows internal
# fragmentation (the empty tails) but never external fragmentation. That needs reservations of
# different sizes. Picture a pool where a large and a small reservation sit side by side and
# the small one finishes: the gap it leaves is free memory, yet a later request that needs a
# large reservation cannot use it, even if the free gaps together would be enough. With fixed
# blocks that situation cannot arise, because any free block serves any sequence.
#
# With blocks, a sequence can lose at most the unfilled part of its last block, against a
# reservation of about a gigabyte. Strictly the worst case is a last block with a single token
# (15 empty slots); the chapter bounds it by a whole block, and both are about 2 MB:

# %%
worst = calc.paged_worst_waste(m8, 16)
print(f"worst-case tail: {worst['tokens']} slots x {k8:,} B = "
      f"{worst['bytes'] / units.MB:.2f} MB (whole-block bound "
      f"{calc.kv_bytes(m8, 16, block_tokens=1) / units.MB:.2f} MB) vs "
      f"{waste['reserved_bytes'] / units.GB:.2f} GB reserved")
print(f"a 1,024-token block can waste up to {calc.paged_worst_waste(m8, 1024)['tokens']:,} tokens")

# %% [markdown]
# Choosing the block size is the operating system's page-size dilemma. Tiny blocks waste almost
# nothing but need long tables and scatter the reads; huge blocks read in long runs but bring
# the empty tails back. Real engines settled on blocks of about 16 tokens.
#
# ## Sharing prefixes, copying on write
#
# Blocks make two more operating-system tricks possible. Requests whose prompts start with the
# same tokens can list the *same* physical blocks for that prefix in their tables, so a system
# prompt is stored once no matter how many users send it (**prefix sharing**). Between users
# only full blocks are shared, and nobody writes into a full block. Sequences forked from one
# request (several samples of one prompt, the beams of a beam search) also share its partly
# filled last block, and each then appends a different next token into it: the first writer gets
# a private copy (**copy-on-write**, as a forked Unix process does). For 100 concurrent users of one 2,000-token
# system prompt:

# %%
share = calc.prefix_sharing_bytes(m8, ch17.PREFIX_USERS, 2_000)
print(f"naive: {ch17.PREFIX_USERS} x 2,000 x {k8:,} B = {share['naive_bytes'] / units.GB:.1f} GB "
      f"of identical bytes; paged: {share['shared_bytes'] / units.GB:.2f} GB")

# %% [markdown]
# If memory still runs out (say, many long answers at once), the engine *preempts*: it takes a
# sequence's blocks away and later either recomputes them or brings back a copy it had moved to
# host memory over PCIe. A nonzero preemption counter tells you the KV budget, not the
# scheduler, is what limits the service.
#
# ## What it buys, in tokens per second
#
# Same card and same KV space as 17.4, with a mixed workload whose sequences hold 600 live
# tokens on average. The contiguous system fits as many sequences as worst-case reservations
# allow; the paged one as many as their live bytes allow. Note that empty reservations are
# never *read*: in both systems a decode step streams the weights plus the live KV only. The
# gain comes from more sequences sharing each pass over the weights:
#
# $$ T_\text{step} = \frac{D_w + b\,L\,k}{\beta}, \qquad
#    \text{throughput} = \frac{b}{T_\text{step}}. $$

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

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
max_len = calc.paged_batch_gain(m8, hw, block_tokens=1, reservation_tokens=ch17.MAX_LEN_TOKENS)
naive_e = {e.id: e for e in ledger.by_section("17.5")}["17.5/naive-batch"]
readings = "\n".join("> " + line
                     for line in widgets.reservation_readings_markdown(m8, hw).splitlines())
md(f"""
> **Erratum: which reservation?** 17 §5 sizes the worst-case reservation at the 8B's maximum
> length, {ch17.MAX_LEN_TOKENS:,} tokens ({waste['reserved_bytes'] / units.GB:.2f} GB), but
> its batch arithmetic then divides by 17.4's {ch17.LONG_CONTEXT_TOKENS:,}-token sequence
> ({calc.kv_bytes(m8, ch17.LONG_CONTEXT_TOKENS, block_tokens=1) / units.GB:.2f} GB). The two
> readings give different naive batches:
>
{readings}
>
> The printed {naive_e.printed} sequences come from the {ch17.LONG_CONTEXT_TOKENS:,}-token reading; a reservation of
> the stated maximum length fits {max_len['naive']['batch']}, which makes paging's advantage a
> little larger. The companion follows the chapter's arithmetic by default
> (`calc.paged_batch_gain(..., reservation_tokens=...)` takes either).
""")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
ledger_ids = {e.id: e for e in ledger.by_section("17.5")}
md(f"""
{gain['batch_gain']:.1f} times the batch buys {gain['throughput_gain']:.1f} times the throughput, not
{gain['batch_gain']:.1f} times:
the larger batch also makes each step heavier, as 17.2's intensity argument predicts. (The
chapter rounds the paged batch to ~{ledger_ids['17.5/paged-batch'].printed} and computes with the
rounded figure, so its step traffic and time, {ledger_ids['17.5/paged-traffic-GB'].printed} GB and
{ledger_ids['17.5/paged-step-ms'].printed} ms, sit slightly below the floored batch's
{gain['paged']['step_bytes'] / units.GB:.1f} GB and {gain['paged']['step_s'] / units.ms:.1f} ms;
counting the 16-token block tails, {blocks['paged']['batch']} sequences fit. The ledger notes each.)
The same numbers show the cost: the ITL grew from {gain['naive']['step_s'] / units.ms:.1f} ms to
{gain['paged']['step_s'] / units.ms:.1f} ms. Throughput and per-token latency pull in opposite
directions, which is why schedulers cap the batch at an ITL target rather than maximise tokens
per second.
""")

# %% [markdown] jp-MarkdownHeadingCollapsed=true
# ### What engines report
#
# The pool's gauges, and a sweep of the concurrency cap.
#
# <!-- fold: KV cache usage, preemption counters and sweeping the sequence cap -->

# %% [markdown]
# An engine does not show its block tables, but it reports what they add up to (vLLM's
# metrics are one example): the share of the KV pool's blocks in use, how many sequences are
# running and how many wait, and a running count of preemptions. Read together, they say
# which limit holds the batch (17 §5, §9):
#
# - **usage well below full while requests wait**: something other than memory caps the batch,
#   usually the engine's limit on concurrent sequences (`--max-num-seqs` in vLLM) or its token
#   budget per step;
# - **usage near full and preemptions rising**: the pool caps the batch, and every preemption
#   throws work away (a recomputed prefix, or a round trip over PCIe);
# - **usage near full and no preemptions**: the pool is about the right size for the load.
#
# The usual experiment is to sweep the concurrency cap and watch throughput, ITL and these
# counters. For 600-token chats on the 8B, this section's arithmetic predicts the sweep (every
# sequence at the mean length). An engine's pool hands out whole 16-token blocks, so the sweep's
# pool cap counts them; the chapter's batch (and worked answer 3) counts live bytes only, a few
# sequences more:

# %%
pool = gain["kv_budget_bytes"]
per_seq = calc.kv_bytes(m8, ch17.CHAT_LIVE_TOKENS)          # whole 16-token blocks
pool_cap = blocks["paged"]["batch"]
itl_cap = calc.itl_batch_ceiling(m8, hw, ch17.ITL_TARGET_S, ch17.CHAT_LIVE_TOKENS)
print(f"{'--max-num-seqs':>14} {'running':>8} {'KV usage':>9} {'step':>8} {'tok/s':>8}  pool")
for cap in (64, 256, itl_cap, pool_cap, 1024, 2048):
    running = min(cap, pool_cap)
    step = calc.decode_vs_context(m8, hw, ch17.CHAT_LIVE_TOKENS, batch=running)
    print(f"{cap:>14,} {running:>8,} {running * per_seq / pool:>9.0%} "
          f"{step['step_s'] / units.ms:>5.1f} ms {step['tokens_per_s']:>8,.0f}  "
          + ("room left" if cap < pool_cap else
             "full" if cap == pool_cap else "full: the rest wait (preempted, if they grow)"))

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
at_pool = calc.decode_vs_context(m8, hw, ch17.CHAT_LIVE_TOKENS, batch=pool_cap)
at_itl = calc.decode_vs_context(m8, hw, ch17.CHAT_LIVE_TOKENS, batch=itl_cap)
md(f"""Throughput climbs with the cap until the pool is full at {pool_cap} sequences in whole
blocks ({gain['paged']['batch']} by live bytes)
({at_pool['tokens_per_s']:,.0f} tok/s, a {at_pool['step_s'] / units.ms:.1f} ms step); past
that, a higher cap adds only waiting requests and preemptions. An ITL target asks for a lower
cap: a {ch17.ITL_TARGET_S / units.ms:g} ms step holds {itl_cap} sequences
({at_itl['tokens_per_s']:,.0f} tok/s, {1 - at_itl['tokens_per_s'] / at_pool['tokens_per_s']:.0%}
less), and the pool then sits at {itl_cap * per_seq / pool:.0%} with no preemptions. Real
sequences grow and differ in length, so a measured sweep shows preemptions before the usage
gauge reads 100%; stop at the largest cap whose ITL p99 meets the target with the preemption
counter flat.""")

# %% [markdown]
# ## Where this model breaks: more batch, more throughput
#
# A step shares only its weight read while each added sequence brings its own cache read, so
# throughput flattens towards a ceiling however large the batch grows (the explorer's dotted
# line is that ceiling, its diamond the batch that reaches half of it).

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the table below
from companion import tables

t_per_seq = gain["naive"]["tokens_per_s"] / gain["naive"]["batch"]
t_rows = []
for t_key, t_what in (("naive", "contiguous"), ("paged", "paged")):
    t_b = gain[t_key]["batch"]
    t_r = calc.decode_throughput_ceiling(m8, hw, live_tokens=ch17.CHAT_LIVE_TOKENS, batch=t_b)
    t_rows.append((f"batch {t_b:,}, {ch17.CHAT_LIVE_TOKENS} live tokens (17 §5, {t_what})",
                   f"{t_b * t_per_seq:,.0f} tok/s", f"{t_r['tokens_per_s']:,.0f} tok/s",
                   f"{t_r['tokens_per_s'] / (t_b * t_per_seq):.2f}"))
md(tables.markdown_table(("setting", "chapter's model (throughput in step with the batch)",
                          "fuller model (the step formula along the batch)",
                          "fuller / chapter"), t_rows))

# %% [markdown] jp-MarkdownHeadingCollapsed=true
# #### In detail
#
# The ceiling, and how far the chapter's batches sit below it.
#
# <!-- fold: the fuller model, its numbers and where it parts from the chapter's -->

# %% [markdown]
# The chapter's arithmetic gives two points, the contiguous batch and the paged one, and warns
# that the throughput does not grow as fast as the batch. The same step formula, followed
# along the whole range of batches, shows why: the weight read is shared, the KV reads are not, so
#
# $$ \text{throughput}(b) = \frac{b\,\beta}{D_w + b\,L\,k}
#    \;\xrightarrow{\;b \to \infty\;}\; \frac{\beta}{L\,k}. $$
#
# Below, the reading that scales the contiguous system's throughput with its batch beside the
# step formula, at the chapter's batches and beyond (`calc.decode_throughput_ceiling`).

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
naive_b, paged_b = gain["naive"]["batch"], gain["paged"]["batch"]
per_seq = gain["naive"]["tokens_per_s"] / naive_b
line_rows = []
for b, what in ((naive_b, "contiguous"), (paged_b, "paged"), (2 * paged_b, "twice the paged"),
                (8 * paged_b, "eight times the paged")):
    r = calc.decode_throughput_ceiling(m8, hw, live_tokens=ch17.CHAT_LIVE_TOKENS, batch=b)
    line_rows.append(f"| {b:,} ({what}) | {b * per_seq:,.0f} | {r['tokens_per_s']:,.0f} | "
                     f"{100 * r['share_of_ceiling']:.0f}% |")
top = calc.decode_throughput_ceiling(m8, hw, live_tokens=ch17.CHAT_LIVE_TOKENS)
md(f"""
| batch | throughput if it grew with the batch (tok/s) | the step formula (tok/s) | share of the ceiling |
|---|---|---|---|
""" + "\n".join(line_rows) + f"""
| any | | ceiling $\\beta/(Lk)$ = {top['ceiling_tokens_per_s']:,.0f} | 100% |
""")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
ceil = calc.decode_throughput_ceiling(m8, hw, live_tokens=ch17.CHAT_LIVE_TOKENS,
                                      batch=gain["paged"]["batch"])
naive_share = calc.decode_throughput_ceiling(m8, hw, live_tokens=ch17.CHAT_LIVE_TOKENS,
                                             batch=gain["naive"]["batch"])["share_of_ceiling"]
doubled = calc.decode_throughput_ceiling(m8, hw, live_tokens=ch17.CHAT_LIVE_TOKENS,
                                         batch=2 * gain["paged"]["batch"])
long_ceil = calc.decode_throughput_ceiling(m8, hw, live_tokens=ch17.LONG_CONTEXT_TOKENS)
md(f"""
> **Where this model breaks: "more batch, more throughput".** The step formula above has a
> limit the batch arithmetic hides. Throughput is $b\\beta / (D_w + b L k)$: as $b$ grows the
> weight read is shared more thinly, but each sequence still brings its own $L k$ bytes, so the
> curve flattens at the ceiling $\\beta / (L k)$ and reaches half of it at $b = D_w / (L k)$,
> the batch whose KV reads equal one weight read. At {ch17.CHAT_LIVE_TOKENS} live tokens
> on the H100 that ceiling is **{ceil['ceiling_tokens_per_s']:,.0f} tok/s**, half of it at
> b = {ceil['half_ceiling_batch']:.0f}. The naive batch runs at
> {100 * naive_share:.0f}% of the ceiling and the paged one at
> {100 * ceil['share_of_ceiling']:.0f}%; doubling the paged batch again would add only
> {100 * (doubled['tokens_per_s'] / ceil['tokens_per_s'] - 1):.0f}% while doubling the ITL's
> KV part. This is why the batch gain and the throughput gain part ways, and why the gain
> shrinks as contexts grow: at {ch17.LONG_CONTEXT_TOKENS:,} live tokens the ceiling is
> {long_ceil['ceiling_tokens_per_s']:,.0f} tok/s, half of it at
> b = {long_ceil['half_ceiling_batch']:.1f}. The compute roof,
> {ceil['compute_ceiling_tokens_per_s']:,.0f} tok/s for this model (full peak, attention left
> out), binds first only for
> contexts short enough that $\\beta / (L k)$ exceeds it. The explorer below draws the
> ceiling (dotted) and its half-way batch.
>
> **The published range.** The chapter places its {gain['throughput_gain']:.1f}x inside the
> {ch17.VLLM_GAIN_LOW:.0f}-{ch17.VLLM_GAIN_HIGH:.0f}x throughput gain the vLLM paper reported
> over the serving systems it compared against. That range is a measurement on real traffic
> (with fragmentation, sharing and scheduling effects together), while the {gain['throughput_gain']:.1f}x here
> is arithmetic on one mean context; the agreement says the mechanism is the right one, not
> that every workload lands at this figure.
""")

# %% [markdown]
# ## Where this model breaks: a decode step priced by its bytes alone
#
# Hundreds of decode tokens in one step make a matrix product as large as a short prefill's,
# and at the share of peak the chapter grants a prefill their arithmetic can outlast the
# reads (the explorer's decode-efficiency slider moves the dashed curve). Priced kernel by
# kernel, as engines run them, that happens even at full peak.

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the table below
t_lowest = next(c.min for c in widgets.PagedKVPanel.controls
                if c.name == "decode_efficiency_pct") / 100
t_rows = []
for t_e, t_what in ((ch17.PREFILL_EFFICIENCY, "17 §2's prefill share"),
                    (t_lowest, "explorer's lowest")):
    t_r = calc.decode_roofline_batch(m8, hw, gain["paged"]["batch"], efficiency=t_e)
    t_rows.append((f"paged batch {gain['paged']['batch']:,}, compute at {100 * t_e:.0f}% "
                   f"({t_what})", f"{t_r['chapter_tokens_per_s']:,.0f} tok/s",
                   f"{t_r['tokens_per_s']:,.0f} tok/s",
                   f"{t_r['tokens_per_s'] / t_r['chapter_tokens_per_s']:.2f}"))
t_k = calc.decode_step_per_kernel(m8, hw, gain["paged"]["batch"], efficiency=1.0)
t_rows.append((f"paged batch {gain['paged']['batch']:,}, compute at 100%, kernels in sequence",
               f"{t_k['chapter_tokens_per_s']:,.0f} tok/s", f"{t_k['tokens_per_s']:,.0f} tok/s",
               f"{t_k['tokens_per_s'] / t_k['chapter_tokens_per_s']:.2f}"))
md(tables.markdown_table(("setting", "chapter's model (bytes / bandwidth)",
                          "fuller model (roofline, attention counted)", "fuller / chapter"),
                         t_rows))

# %% [markdown] jp-MarkdownHeadingCollapsed=true
# #### In detail
#
# The compute roof's term, and where it binds.
#
# <!-- fold: the fuller model, its numbers and where it parts from the chapter's -->

# %% [markdown]
# The step above is the memory roof's time. The compute roof has a term too: $b$ new tokens
# cost $b\,(2N + a\,(L+1))$ FLOPs, attention's pairs included ($N$ is the parameter count,
# which 17 §2 writes $P$; $a$ the FLOPs of one query-key pair; $\pi$ below is the peak
# FLOP/s). Taken as one max over the whole step's bytes and FLOPs, at the full peak it never
# binds for these batches; that max, though, lets the weight products run while attention reads
# the KV, and the per-kernel pricing further down drops that overlap. But a decode step of several hundred sequences is a matrix product
# of several hundred rows, the shape of a short prefill, and 17 §2 grants a prefill only 50%
# of peak. At that rate the roofline's max is
#
# $$ T_\text{step} = \max\left(\frac{D_w + b\,L\,k}{\beta},\;
#    \frac{b\,(2N + a\,(L+1))}{0.5\,\pi}\right), $$
#
# and throughput cannot pass $0.5\,\pi / (2N + a\,(L+1))$ however large the batch
# (`calc.decode_roofline_batch`; the explorer's dashed curve).

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
paged_controls = {c.name: c for c in widgets.PagedKVPanel.controls}
e_lo = paged_controls["decode_efficiency_pct"].min / 100
live_lo, live_hi = paged_controls["live_tokens"].min, paged_controls["live_tokens"].max
effs = ((1.0, "full peak"), (ch17.PREFILL_EFFICIENCY, "17 §2's prefill share"),
        (e_lo, "the explorer's lowest"))
step_rows = []
for b, what in ((naive_b, "contiguous"), (paged_b, "paged, live bytes"),
                (blocks["paged"]["batch"], "paged, 16-token blocks")):
    for e, which in effs:
        r = calc.decode_roofline_batch(m8, hw, b, efficiency=e)
        k = calc.decode_step_per_kernel(m8, hw, b, efficiency=e)
        step_rows.append(
            f"| {b:,} ({what}) | {100 * e:.0f}% ({which}) | {r['chapter_step_s'] / units.ms:.1f} ms, "
            f"{r['chapter_tokens_per_s']:,.0f} tok/s | {r['step_s'] / units.ms:.1f} ms, "
            f"{r['tokens_per_s']:,.0f} tok/s ({r['bound']}) | {k['step_s'] / units.ms:.1f} ms, "
            f"{k['tokens_per_s']:,.0f} tok/s |")
md("""
| batch (600 live tokens) | decode's compute at | the chapter: bytes / bandwidth | roofline max, attention counted | per kernel, in sequence |
|---|---|---|---|---|
""" + "\n".join(step_rows))

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
half = calc.decode_roofline_batch(m8, hw, paged_b, efficiency=ch17.PREFILL_EFFICIENCY)
naive_half = calc.decode_roofline_batch(m8, hw, naive_b, efficiency=ch17.PREFILL_EFFICIENCY)
low = calc.decode_roofline_batch(m8, hw, paged_b, efficiency=e_lo)
full_gain = half["tokens_per_s"] / naive_half["tokens_per_s"]
crossing = half["compute_s"] / half["memory_s"] * ch17.PREFILL_EFFICIENCY
in_range = ("still inside" if ch17.VLLM_GAIN_LOW <= full_gain <= ch17.VLLM_GAIN_HIGH
            else "outside")
ends = {L: (calc.decode_throughput_ceiling(m8, hw, live_tokens=L)["ceiling_tokens_per_s"],
            calc.decode_roofline_batch(m8, hw, 1, live_tokens=L,
                                       efficiency=ch17.PREFILL_EFFICIENCY)
            ["compute_ceiling_tokens_per_s"]) for L in (live_lo, live_hi)}
md(f"""
> **When it matters.** Only for large batches of short contexts, which is exactly where paging
> puts the card. At the contiguous batch and 50% of peak the compute is a fraction of the
> reads and nothing changes. At the paged batch, with the decode's matrices at {100 * ch17.PREFILL_EFFICIENCY:.0f}%
> of peak, the compute takes {half['compute_s'] / units.ms:.1f} ms against
> {half['memory_s'] / units.ms:.1f} ms of reads: the step is **{half['step_s'] / units.ms:.1f} ms**
> and the throughput **{half['tokens_per_s']:,.0f} tok/s**, not {half['chapter_tokens_per_s']:,.0f};
> paging's gain falls from {gain['throughput_gain']:.1f}x to {full_gain:.1f}x, {in_range} the
> vLLM paper's range. The reads stay the limit as long as the decode's matrices reach about
> {100 * crossing:.0f}% of peak. At the explorer's lowest setting, {100 * e_lo:.0f}%, the paged
> step is {low['step_s'] / units.ms:.0f} ms and {low['tokens_per_s']:,.0f} tok/s. The two
> ceilings trade places with the context: at the explorer's {live_lo} live tokens the
> memory ceiling is {ends[live_lo][0]:,.0f} tok/s and the compute one at 50%
> {ends[live_lo][1]:,.0f}, so compute binds; at {live_hi:,} tokens they are
> {ends[live_hi][0]:,.0f} and {ends[live_hi][1]:,.0f}, and memory binds. (These two ceilings
> are at 50% of peak with attention counted; the earlier compute roof was at full peak without
> it.) The chapter's figures stay as printed and the ledger checks them.
""")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
kp = calc.decode_step_per_kernel(m8, hw, paged_b)
kn = calc.decode_step_per_kernel(m8, hw, naive_b)
ridge = calc.ridge_point(hw)
md(f"""
> **Kernel by kernel.** The max above assumes the weight products overlap attention's KV reads.
> In an engine they are separate kernels that run one after the other, each with its own
> roofline, so their times add:
>
> $$ T_\\text{{step}} = \\max\\left(\\frac{{D_w}}{{\\beta}}, \\frac{{2Nb}}{{\\pi}}\\right)
>    + \\max\\left(\\frac{{b\\,L\\,k}}{{\\beta}}, \\frac{{b\\,a\\,(L+1)}}{{\\pi}}\\right). $$
>
> (`calc.decode_step_per_kernel`.) The weight products read {kp['weights_read_s'] / units.ms:.1f} ms of weights whatever the
> batch, and their compute grows with it: past b = {ridge:.0f}, 17 §2's ridge, they are
> compute-bound even at full peak. At the paged batch of {paged_b} they take
> {kp['weights_compute_s'] / units.ms:.1f} ms of compute, then attention reads
> {kp['kv_read_s'] / units.ms:.1f} ms of KV: a **{kp['step_s'] / units.ms:.1f} ms** step and
> **{kp['tokens_per_s']:,.0f} tok/s**, against the chapter's
> {kp['chapter_step_s'] / units.ms:.1f} ms and {kp['chapter_tokens_per_s']:,.0f}. The
> contiguous batch, {naive_b}, sits below the ridge and keeps its price, so paging's gain is
> **{kp['tokens_per_s'] / kn['tokens_per_s']:.1f}x** rather than {gain['throughput_gain']:.1f}x
> at 100% of peak. A real engine lies between the two pricings: the sum of two kernels is at
> most twice their single max, and here it is
> {100 * (kp['step_s'] / kp['overlapped_step_s'] - 1):.0f}% longer
> ({kp['overlapped_step_s'] / units.ms:.1f} ms overlapped).
""")

# %% [markdown]
# ## Chapter says / companion computes
#
# Some rows appear twice: once from the closed forms, once recomputed by allocating real
# blocks in `companion.sim.kvcache` (source "sim").

# %%
ledger.show("17.5")

# %% [markdown]
# ## Explorer: live tokens, block size and the reservation
#
# Change the mean live tokens per sequence, the block size and the contiguous reservation.
# Left: how many sequences fit in the KV space, contiguous (flat, since it depends only on the
# reservation) and paged (rising as sequences get shorter). Right: throughput against ITL as
# the batch grows, with each allocator's batch marked, the memory ceiling (dotted) and its
# half-way batch; the dashed curve prices the same batches on the roofline with the decode's
# matrices at the share of peak the last slider sets (the part above), with its own ceiling.
# The readout gives the count with live bytes only (the chapter's arithmetic) and with block
# tails.

# %% tags=["nbval-ignore-output"]
panel = widgets.PagedKVPanel()
panel.show()

# %%
numbers = panel.at().numbers
for key in ("live_kv_MB", "naive_batch", "paged_batch", "paged_batch_blocks", "naive_step_ms",
            "paged_step_ms", "naive_tok_s", "paged_tok_s", "throughput_gain", "worst_waste_MB"):
    value = numbers[key]
    print(f"{key:20} {value:,.0f}" if value >= 100 else f"{key:20} {value:.4g}")

# %% [markdown]
# ## Try this
#
# 1. **Predict, then move.** Before setting the block size to 1,024 tokens, guess how many
#    600-token sequences still fit: closer to the paged count or to the contiguous one? Then
#    set it and compare.
#    <!-- states: panel(block_tokens=1024) -->
# 2. Raise the mean live tokens to 8,000, so every sequence fills its reservation. What is left
#    of paging's advantage, and why?
#    <!-- states: panel(live_tokens=ch17.LONG_CONTEXT_TOKENS) -->
# 3. Find the batch on the right-hand curve whose step is 10 ms. How much throughput does that
#    ITL cap give up compared with filling the card?
#    <!-- states: panel() -->
# 4. In the allocator drawing, which waiting request would the contiguous pool admit if A
#    finished? Then run `widgets.allocator_demo(max_len_tokens=128)`: what changes in the top
#    strip?
# 5. **Predict, then move.** Estimate, before computing, the bytes prefix sharing saves for
#    1,000 users of a 6,000-token system prompt: tens of GB, hundreds, or thousands?

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
base = panel.at().numbers
big = panel.at(block_tokens=1024).numbers
answer(f"""
With 1,024-token blocks every 600-token sequence occupies a whole block, so each holds 1,024
slots: **{big['paged_batch_blocks']}** sequences fit (with 16-token blocks:
{base['paged_batch_blocks']}; contiguous: {base['naive_batch']}). That is still far more than the
contiguous scheme, because a block holds only
{1024 / ch17.LONG_CONTEXT_TOKENS:.0%} of the {ch17.LONG_CONTEXT_TOKENS:,}-token reservation,
but
{100 * (1 - big['paged_batch_blocks'] / base['paged_batch_blocks']):.0f}% of the paged batch is
gone (the live-bytes count, {big['paged_batch']}, ignores tails and does not change). Paging
saves memory only to the extent its blocks are small next to the sequences: big blocks let
internal fragmentation back in.
""", title="Worked answer 1")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
full = panel.at(live_tokens=ch17.LONG_CONTEXT_TOKENS).numbers
answer(f"""
At {ch17.LONG_CONTEXT_TOKENS:,} live tokens per sequence the paged system fits
**{full['paged_batch_blocks']}** sequences and the contiguous one {full['naive_batch']}: the
advantage is gone (throughput gain {full['throughput_gain']:.2f}x). Prefix sharing would still
help if the prompts had a common start. Paging recovers only the memory that reservations
leave empty; when every sequence really uses its maximum, there is nothing to recover.
""", title="Worked answer 2")
# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
cap_ms = 10
full_card = panel.at().numbers
# the explorer draws the curve; the batch where it crosses the cap comes from the same formula
cap10 = calc.itl_batch_ceiling(m8, hw, cap_ms * units.ms, ch17.CHAT_LIVE_TOKENS)
at10 = calc.decode_vs_context(m8, hw, ch17.CHAT_LIVE_TOKENS, batch=cap10)
answer(f"""
The step is $(D_w + b L k)/\\beta$, which reaches {cap_ms} ms at a batch of **{cap10}**
({at10['step_s'] / units.ms:.2f} ms). That batch makes {at10['tokens_per_s']:,.0f} tok/s
against {full_card['paged_tok_s']:,.0f} tok/s with the card full
({full_card['paged_batch']} sequences, {full_card['paged_step_ms']:.1f} ms per step), so the
{cap_ms} ms cap gives up {100 * (1 - at10['tokens_per_s'] / full_card['paged_tok_s']):.0f}% of
the throughput, in exchange for an ITL
{full_card['paged_step_ms'] / cap_ms:.1f} times shorter. Past the curve's knee the last
sequences add little throughput and a lot of latency, so an ITL target costs less
throughput than its share of the batch suggests.
""", title="Worked answer 3")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
small = widgets.allocator_demo(max_len_tokens=128)
longest = max(prompt + output for _, prompt, output in widgets.ALLOCATOR_DEMO_SEQUENCES)
answer(f"""
When A finishes its reservation becomes one free slot of the maximum size, so the contiguous pool
could take the next request that asks, such as **E**, into A's old place; F would still not fit.
With `max_len_tokens=128` each reservation is half as large, so the same 1,024 slots hold twice
as many: the contiguous pool now admits {len(small['admitted']['naive'])} of the six requests
({len(small['rejected']['naive'])} waiting). That works only because the longest of these
requests needs {longest} tokens; one that grew past 128 would have nowhere to go, which is why a
contiguous system must reserve for the longest answer it allows.
""", title="Worked answer 4")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
big_share = calc.prefix_sharing_bytes(m8, 1_000, 6_000)
answer(f"""
Naive: 1,000 × 6,000 × {k8:,} B = **{big_share['naive_bytes'] / units.GB:,.0f} GB**, many times
an H100's memory, so without sharing such a service could not run on one card at all. Shared:
{big_share['shared_bytes'] / units.GB:.2f} GB, one copy. The saving,
{(big_share['naive_bytes'] - big_share['shared_bytes']) / units.GB:,.0f} GB, is in the hundreds.
""", title="Worked answer 5")

# %% [markdown]
# Next: [17.6 Batching strategies](17_06_batching_strategies.ipynb) (continuous batching relies
# on exactly this allocate-at-any-time memory).
#
# > **What you can now compute**
# > - The internal fragmentation of a worst-case reservation, and the worst-case waste of a paged sequence for a given block size ([Exercise 17-12](../../exercises/ex17_12.ipynb)).
# > - The bytes prefix sharing saves when many requests start with the same prompt ([Exercise 17-12](../../exercises/ex17_12.ipynb)).
# > - The naive and paged batch caps in a given KV space, and the step time and tokens per second each gives ([Exercise 17-12](../../exercises/ex17_12.ipynb)).
# > - The batch to run between an ITL target and the KV memory ([Exercise 17-10](../../exercises/ex17_10.ipynb)).
# >
# > <details><summary>Assumptions this notebook made</summary>
# >
# > Every sequence holds the same mean number of live
# > tokens (a distribution of lengths would fit a different count); a decode step streams the
# > weights and the live KV at the full HBM bandwidth with no attention-kernel or scheduling
# > overhead, and is priced by those bytes alone except in the part that adds its compute
# > (there the weight products and attention are also priced as separate kernels); the
# > KV space is what the weights and a fixed runtime reserve leave; the block tail is ignored
# > in the chapter's arithmetic and counted only where a line says so; sequences never grow
# > past the space they are admitted with, so the arithmetic has no preemption (the sweep's
# > status column only marks where a real engine, whose sequences grow, would start
# > preempting); the toy allocator's requests arrive in a fixed order with known lengths; the
# > chapter reads "a bigger batch, more throughput" from two points, while a step's KV bytes grow with the batch too, so tokens per second
# > approach a ceiling set by the KV bytes per token (drawn beside the two points).
# >
# > </details>
