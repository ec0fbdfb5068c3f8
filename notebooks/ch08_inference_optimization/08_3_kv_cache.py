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
# # 8.3 The KV cache: allocate, share, release, keep
#
# **The question.** KV memory is the resource that decides how many requests an instance can
# run at once (8.1.2). How should an engine hand it out so that little is wasted, store
# context that several requests have in common only once, give it back safely when a request
# ends or is cancelled, and decide which finished requests' context is worth keeping for the
# next one?
#
# Four mechanisms answer it, one per subsection: **paging** (8.3.1), **reference-counted
# sharing with copy-on-write** (8.3.2), **prefix reuse across requests** (8.3.3) and a
# **cache policy** that weighs keeping state against recomputing it (8.3.4). The running
# example is the chapter's: Qwen3-8B (its KV per token is worked out in 8.1.2) on an RTX PRO
# 6000, 12 GiB for KV, long requests of 8192 input and 256 output tokens whose first 6144 tokens are the same
# system prompt ([overview](08_0_overview.ipynb)).
#
# The drawings below are made by the companion's paged-KV simulator,
# `companion.sim.kvcache.BlockManager`: every block you see was actually allocated, shared,
# copied or freed by it.

# %%
from companion import calc, ledger, plots, specs, units, widgets
from companion.chapters import ch08
from companion.display import answer, md
from companion.formulas import kv_management as km
from companion.sim import kv_scenarios as kvp
from companion.sim.kv_scenarios import fill_kv_pool, prefix_tree
from companion.sim.kvcache import BlockManager

model = specs.QWEN3_8B
MiB, GiB, ms = units.MiB, units.GiB, units.ms

# %% [markdown]
# ## 8.3.1 Paged allocation
#
# The simplest allocator gives each request one contiguous region big enough for the longest
# sequence it might reach. Two things go wrong. A request that stops early never uses the end
# of its region. And a request that must grow past its region has to move, because the memory
# right after it belongs to somebody else.
#
# Paging removes the need for contiguity. Memory is cut into **physical blocks** of $p$ token
# slots each. A sequence is cut the same way into **logical blocks** (its first $p$ tokens,
# the next $p$, ...), and a per-sequence **block table** records which physical block holds
# each logical one. A growing sequence takes any free block and appends one entry to its
# table; the attention kernel follows the table to find the keys and values of position $i$
# in logical block $\lfloor i/p \rfloor$, slot $i \bmod p$.
#
# A sequence of $L$ tokens then needs $\lceil L/p \rceil$ blocks, and only its last block can
# have empty slots:
#
# $$\text{blocks} = \left\lceil \frac{L}{p} \right\rceil, \qquad
# \text{tail waste} = p\left\lceil \frac{L}{p} \right\rceil - L \;\le\; p - 1 .$$
#
# Small blocks waste little but need long tables and many allocations; large blocks the
# reverse. (vLLM's PagedAttention brought this operating-system idea to the KV cache in 2023;
# see 8.3.1.)
#
# <details><summary>PagedAttention is not FlashAttention</summary>
#
# The names sound alike and both work in blocks, but
# they solve different problems and an engine usually runs both. PagedAttention is about
# *where the cache lives*: the attention kernel follows each sequence's block table to gather
# keys and values from scattered physical blocks, so memory can be handed out a block at a
# time. FlashAttention is about *how attention is computed*: it tiles the score computation so
# that the large intermediate score matrix never has to be written to HBM, keeping partial
# results in on-chip memory. One changes the allocator's layout, the other the kernel's
# arithmetic and memory traffic; a paged FlashAttention kernel does both at once (8.3.1).
#
# </details>
#
# **Worked example.** Four sequences A, B, C, D hold 9, 13, 5 and 15 tokens and may each grow
# to 16. Reserving 16 slots each, paging with $p = 4$, and paging where A and B also share
# their identical first 8 tokens:

# %%
lengths, p = ch08.PAGING_EXAMPLE_LENGTHS, ch08.PAGING_EXAMPLE_BLOCK_TOKENS
alloc = calc.paged_allocation(lengths, p, max_tokens=ch08.PAGING_EXAMPLE_MAX_TOKENS)
shared_blocks = calc.shared_prefix_blocks_saved(ch08.PAGING_EXAMPLE_SHARED_TOKENS, 2, p)
print(f"reserve {ch08.PAGING_EXAMPLE_MAX_TOKENS} each:  {alloc.reserved_tokens} slots for "
      f"{alloc.stored_tokens} tokens, {alloc.reserved_unused_tokens} unused")
print(f"paged, p = {p}:      {alloc.allocated_tokens} slots "
      f"({' + '.join(map(str, alloc.allocated_per_sequence))}), {alloc.unused_tokens} unused, "
      f"tail waste {alloc.tail_waste_per_sequence}, {alloc.table_entries} table entries")
print(f"A and B share {ch08.PAGING_EXAMPLE_SHARED_TOKENS} tokens = {shared_blocks} full blocks: "
      f"{alloc.allocated_tokens - shared_blocks * p} slots")

# %% [markdown]
# The same three cases, allocated by the simulator in the same 64 slots of memory. Each
# sequence grows one token at a time in turn, as decode would grow it, so the physical blocks
# of different sequences interleave in the pool: the tables on the left say where each logical
# block went. Unused slots are outlined in red, free blocks are grey, and purple marks a block
# that more than one table points at. Hover a cell for its block number and fill.

# %%
names = dict(enumerate("ABCD"))
memory = alloc.reserved_tokens            # the 64 slots the reservation needs
cases = [
    ("reserve 16 slots per sequence (one 16-slot region each)",
     kvp.grow_sequences(lengths, ch08.PAGING_EXAMPLE_MAX_TOKENS, pool_tokens=memory)),
    (f"paged, p = {p}", kvp.grow_sequences(lengths, p, pool_tokens=memory)),
    (f"paged, p = {p}, A and B share their first 8 tokens",
     kvp.grow_sequences(lengths, p, shared_prefix_tokens=ch08.PAGING_EXAMPLE_SHARED_TOKENS,
                        pool_tokens=memory)),
]
for title, mgr in cases:
    snap = plots.snapshot_pool(mgr, names=names)
    print(f"{title}: {snap.used_blocks} blocks x {mgr.block_tokens} = {snap.allocated_tokens} "
          f"slots, {snap.stored_tokens} written, {mgr.free_blocks} blocks "
          f"({mgr.free_blocks * mgr.block_tokens} slots) free, tables "
          f"{[len(t) for _, t, _ in snap.tables]}")
    plots.block_pool_figure(snap, title=title, columns=4 if mgr.block_tokens > 8 else 8,
                            height=340).show()

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
md(f"""Paging takes the unused space from {alloc.reserved_unused_tokens} slots to
{alloc.unused_tokens} (tails of {', '.join(map(str, alloc.tail_waste_per_sequence))}, each under
$p$); sharing then removes a *different* waste, the second copy of identical context. Both
counts come out of the simulator's allocation and agree with the closed forms:""")

# %%
ledger.show("8.3.1")

# %% [markdown]
# ### Explorer: block size and lengths
#
# Change the block size and the four lengths. The bottom plot sweeps the block size for the
# current lengths: waste grows with $p$ (it is always below one block per sequence) while the
# number of table entries falls.

# %% tags=["nbval-ignore-output"]
paging = widgets.PagingPanel()
paging.show()

# %%
for q in (3, 6, 12):
    numbers = paging.at(block_tokens=q).numbers
    print(f"p = {q}: {numbers['allocated_tokens']} slots, tail waste {numbers['tail_waste']} "
          f"(total {numbers['unused_tokens']}), {numbers['table_entries']} table entries")
# %% [markdown]
# ## Where this model breaks: a bound is not a typical waste
#
# Lengths ignore the block size, so a last block is as likely nearly full as nearly empty and
# the typical waste is half the bound (the paging explorer's lower plot draws both).

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the table below
from companion import tables

w_rows = []
for w_p in (p, next(c.max for c in paging.controls if c.name == "block_tokens")):
    w_d = calc.tail_waste_distribution(w_p, len(lengths))
    w_rows.append((f"A-D, p = {w_p}" + (" (8.3.1)" if w_p == p else ""), w_d.bound_tokens,
                   f"{w_d.mean_tokens:g}", f"{w_d.mean_tokens / w_d.bound_tokens:.2f}"))
md(tables.markdown_table(("tail waste, slots", "chapter's model (bound)",
                          "fuller model (average)", "fuller / chapter"), w_rows))

# %% [markdown] jp-MarkdownHeadingCollapsed=true
# #### In detail
#
# The waste's spread.
#
# <!-- fold: the fuller model, its numbers and where it parts from the chapter's -->

# %% [markdown]
# 8.3.1 gives the tail waste of one sequence as a bound: never more than $p - 1$ slots.
# The bound is met only by a sequence that has just spilled one token into a fresh block. Prompt
# and answer lengths have nothing to do with the block size, so a sequence's last block is
# equally likely to hold any number of tokens from 1 to $p$; its empty slots are then spread
# evenly over $0, 1, \dots, p - 1$, with mean $(p - 1)/2$ and variance $(p^2 - 1)/12$. A batch
# wastes the sum of such draws (`calc.tail_waste_distribution`): on average half the bound,
# and the larger the batch, the less likely it comes near the bound. The paging explorer's
# lower plot draws both lines beside the waste of the four lengths you set.

# %% jupyter={"source_hidden": true} tags=["hide-input"]
# computes the table below
from companion import tables

long_held = calc.held_tokens(ch08.LONG_PROMPT_TOKENS, ch08.OUTPUT_TOKENS)
k_token = calc.kv_bytes_per_token(model)
rows = []
for label, n_seq, q, stored in (
        ("the four sequences A-D", 4, p, alloc.stored_tokens),
        ("the four sequences A-D", 4, 16, alloc.stored_tokens),
        ("16 long requests, 16-token blocks", ch08.LONG_BATCH, ch08.BLOCK_TOKENS,
         ch08.LONG_BATCH * long_held)):
    w = calc.tail_waste_distribution(q, n_seq)
    rows.append((f"{label} ({stored:,} tokens)", q, w.bound_tokens, f"{w.mean_tokens:g}",
                 w.quantile(0.9),
                 f"{100 * w.bound_tokens / stored:.2f}%", f"{100 * w.mean_tokens / stored:.2f}%"))
md(tables.markdown_table(("sequences", "block p", "bound (slots)", "average", "90th percentile",
                          "bound / tokens held", "average / tokens held"), rows))

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
w4 = calc.tail_waste_distribution(p, 4)
w_long = calc.tail_waste_distribution(ch08.BLOCK_TOKENS, ch08.LONG_BATCH)
short_end = paging.at(block_tokens=16, len_a=1, len_b=1, len_c=1, len_d=1).numbers
md(f"""> **Where this model breaks: paging waste.** The bound answers "how bad can it get"; a
> capacity plan needs "how much, usually". At the chapter's example ($p = {p}$) the four
> lengths waste {alloc.unused_tokens} slots, the bound allows {w4.bound_tokens} and lengths that
> land anywhere in a block waste {w4.mean_tokens:g} on average. The gap is always a factor of
> two, but it matters only where sequences are short against the block: for the chapter's 16
> long requests in {ch08.BLOCK_TOKENS}-token blocks even the bound is
> {100 * w_long.bound_tokens / (ch08.LONG_BATCH * long_held):.2f}% of the tokens they hold
> ({w_long.bound_tokens * k_token / MiB:.1f} MiB), and the average half of that. At the
> explorer's extreme ($p = 16$, four one-token sequences) the waste is
> {short_end['unused_tokens']} of {short_end['allocated_tokens']} slots, every block nearly
> empty. So the bound is the right number for sizing a block against short sequences, and the
> average the right one for the pool a long-context service needs.""")

# %% [markdown]
# ## 8.3.2 Sharing between branches, copy-on-write, and release
#
# Once two block tables may point at the same physical block, the engine must answer two
# questions: *when may the block be reused*, and *what happens when one sharer writes*?
#
# **Reference counts.** Every table entry pointing at a block is a reference, and the block
# carries a count of them. Forking a sequence copies its table and adds one to each count;
# ending a sequence subtracts one from each. A block returns to the free pool only when its
# count reaches zero, so a shared prefix outlives the branch that created it.
#
# **Copy-on-write.** Full blocks of a common prefix are read-only and can be shared forever.
# A *partly* filled shared block is different: both branches want to write their next token
# into its first empty slot. So a branch that is about to write into a block somebody else
# still references first takes a private copy of it (the tokens already there are copied, then
# the branch appends). The last holder can write in place. The chapter's example: a 4-slot
# block holding 3 shared tokens, two branches about to diverge.
#
# Move the slider under the figure to step through the simulator's states: the fork, the copy
# of the shared tail block, the private appends, and the end of one branch.

# %%
steps = kvp.copy_on_write_steps()
for k, s in enumerate(steps):
    print(f"step {k}: {s.label}: {s.references} table entries, {s.used_blocks} blocks, "
          f"counts {[r for r in s.refcounts if r]}")
plots.block_pool_steps_figure(steps, title="Copy-on-write of a shared tail block (p = 4)",
                              slot_level=True, columns=7).show()

# %% [markdown]
# **Counting branches.** With $n_\text{br}$ branches that share a prefix of $B_s$ blocks and
# own $B_p$ private blocks each, the tables hold $n_\text{br}(B_s + B_p)$ references but only
# $B_s + n_\text{br} B_p$ blocks exist.
# The chapter's four-branch experiment has 95 shared and 9 private blocks per branch:

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
share = calc.branch_block_sharing(ch08.BRANCH_EXPERIMENT_BRANCHES,
                                  ch08.BRANCH_EXPERIMENT_SHARED_BLOCKS,
                                  ch08.BRANCH_EXPERIMENT_PRIVATE_BLOCKS)
n_br, b_s, b_p = (ch08.BRANCH_EXPERIMENT_BRANCHES, ch08.BRANCH_EXPERIMENT_SHARED_BLOCKS,
                  ch08.BRANCH_EXPERIMENT_PRIVATE_BLOCKS)
md(f"""$${n_br}\\,({b_s} + {b_p}) = {share.references} \\text{{ references}}, \\qquad
{b_s} + {n_br} \\times {b_p} = {share.physical_blocks} \\text{{ physical blocks}}.$$""")

# %% [markdown] jp-MarkdownHeadingCollapsed=true
# #### The branch experiment, replayed in the simulator
#
# <!-- fold: the simulator's pool, step by step -->

# %% [markdown]
# Below, the simulator replays it: the prefix is prefilled once, forked into four branches,
# and then the branches take turns writing their private blocks (three each per step), so
# their blocks interleave in the pool. Only the private part grows with the number of
# branches; the last step ends branch A, which frees just its 9 private blocks: the prefix
# stays, because three tables still point at it.

# %% tags=["wide-output"]
steps = kvp.branch_sharing_steps()
for k, s in enumerate(steps):
    print(f"step {k:2d}: {s.references:3d} table entries on {s.used_blocks:3d} physical blocks"
          f"  ({s.label})")
plots.block_pool_steps_figure(steps, title="Four branches over a 95-block prefix (16-token blocks)",
                              slot_level=False, columns=20, height=460).show()

# %%
ledger.show(ids=["8.3.2/cow-copied-tokens", "8.3.2/branch-references",
                 "8.3.2/branch-physical-blocks", "8.3.2/branch-independent-blocks",
                 "8.3.2/branch-saved-pct", "8.3.2/branch-private-blocks",
                 "8.3.2/sim-branch-references", "8.3.2/sim-branch-physical-blocks"],
            label="8.3.2, four branches of one prompt")

# %% [markdown]
# ### Explorer: branches, prefix and private blocks
#
# The top half is the simulator's pool at the end (each branch's private blocks written in one
# go, so they lie together); the bottom half sweeps the number of branches: independent
# storage grows by $B_s + B_p$ per branch, shared storage by $B_p$.

# %% tags=["nbval-ignore-output"]
branching = widgets.BranchSharingPanel()
branching.show()

# %%
numbers = branching.at().numbers
print(f"{numbers['references']} references, {numbers['physical_blocks']} physical blocks "
      f"(simulator: {numbers['sim_references']} / {numbers['sim_physical_blocks']}), "
      f"{numbers['saved_pct']:.1f}% saved")

# %% [markdown]
# ### The shared prefix as capacity
#
# Apply the same idea to the 16 long requests. The 6144-token prefix is stored once; each
# request privately holds the rest of its prompt and every output that was fed back. With
# $n$ prompt tokens, $G$ outputs and a shared prefix of $n_s$ tokens, a finished batch of $b$
# requests holds
#
# $$M_{KV}(b) = n_s k + b\,(n - n_s + G - 1)\,k \quad\text{instead of}\quad b\,(n + G - 1)\,k,$$
#
# with each private part rounded up to whole 16-token blocks.

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
private = calc.held_tokens(ch08.LONG_PROMPT_TOKENS, ch08.OUTPUT_TOKENS) - ch08.SHARED_PREFIX_TOKENS
prefix_mib = calc.kv_bytes(model, ch08.SHARED_PREFIX_TOKENS) / MiB
private_mib = calc.kv_bytes(model, private) / MiB
whole_mib = calc.kv_bytes(model, calc.held_tokens(ch08.LONG_PROMPT_TOKENS,
                                                  ch08.OUTPUT_TOKENS)) / MiB
md(f"""For the chapter's request the prefix takes {prefix_mib:,.0f} MiB once; the private part
is {private:,} tokens, rounded to {calc.kv_tokens_allocated(private, ch08.BLOCK_TOKENS):,} in
blocks ({private_mib:,.0f} MiB). So $M_{{KV}}(b) = {prefix_mib:,.0f} + {private_mib:,.0f}\\,b$ MiB
with sharing and ${whole_mib:,.0f}\\,b$ MiB without.""")

# %%
prefix = ch08.SHARED_PREFIX_TOKENS
shared = calc.prefix_shared_kv_bytes(model, ch08.LONG_BATCH, ch08.LONG_PROMPT_TOKENS,
                                     ch08.OUTPUT_TOKENS, shared_prefix_tokens=prefix)
alone = calc.prefix_shared_kv_bytes(model, ch08.LONG_BATCH, ch08.LONG_PROMPT_TOKENS,
                                    ch08.OUTPUT_TOKENS)
print(f"16 long requests: {shared / MiB:,.0f} MiB ({shared / GiB:.2f} GiB) shared vs "
      f"{alone / MiB:,.0f} MiB independent")
long_request = (ch08.LONG_PROMPT_TOKENS, ch08.OUTPUT_TOKENS)
for label, kw in (("independent", {}), ("sharing the prefix", {"shared_prefix_tokens": prefix})):
    print(f"fit in 12 GiB, {label}: "
          f"{calc.max_concurrent(ch08.KV_BUDGET_BYTES, model, *long_request, **kw)}")
# the same by allocation: fill a 12 GiB pool of 16-token blocks until the next request fails
held = calc.held_tokens(ch08.LONG_PROMPT_TOKENS, ch08.OUTPUT_TOKENS)
fill = fill_kv_pool(ch08.KV_BUDGET_BYTES, model, held, shared_prefix_tokens=prefix)
print(f"simulator: {fill.num_blocks} blocks in the pool, {fill.admitted} requests admitted, "
      f"{fill.used_bytes[ch08.LONG_BATCH] / MiB:,.0f} MiB in use with 16 of them")

# %% tags=["nbval-ignore-output"]
capacity = widgets.SharedPrefixCapacityPanel()
capacity.show()

# %%
numbers = capacity.at().numbers
print(f"b = 16: {numbers['shared_MiB']:,.0f} MiB shared, {numbers['independent_MiB']:,.0f} MiB "
      f"independent; fit: {numbers['fit_independent']} independent, {numbers['fit_shared']} shared")

# %% [markdown] jp-MarkdownHeadingCollapsed=true
# ### Release: only when nobody reads the block any more
#
# A block may go back to the pool only when two things hold: its reference count is zero, and
# no accelerator work that was already submitted still reads it.
#
# <!-- fold: release by reference count, replayed block by block -->

# %% [markdown]
# The second condition is
# easy to forget. The engine queues GPU work ahead of time; a decode round launched a moment
# before a user cancels still reads the cancelled request's KV. If the scheduler freed those
# blocks at once and handed them to a new request, the new request's prefill could overwrite
# keys and values that the running round is reading.
#
# So cancellation has two phases: the call itself only stops scheduling new work for the
# request (cheap), and the blocks are freed after the in-flight work has completed. The
# chapter's measurement (8.3.2, footnote 29) shows the gap: the cancel call returned after
# about 1.6 ms, the request's 104 blocks were released after about 31 ms, some twenty times
# later. Those times are measurements; the block bookkeeping of the two phases looks like this:

# %%
pool = BlockManager(256, ch08.BLOCK_TOKENS)
pool.allocate("cancelled", ch08.CANCEL_RELEASED_BLOCKS * ch08.BLOCK_TOKENS)
held_free = pool.free_blocks
# phase 1: the scheduler marks the request cancelled and stops scheduling it; the round
# already submitted still reads its blocks, so nothing is freed yet
print(f"from the cancel call until the in-flight round ends: {held_free} free blocks "
      f"(the call itself frees nothing)")
# phase 2: the in-flight round has completed; now the references can be dropped
released = pool.free("cancelled")
print(f"after the round completes: {pool.free_blocks} free blocks ({len(released)} released, "
      f"{pool.free_blocks - held_free} more than during the call)")

# %% [markdown] jp-MarkdownHeadingCollapsed=true
# ### Preemption by recompute
#
# When decode needs one more block and none is free, the engine can **preempt** a running
# request: drop all of its KV (freeing its blocks for the others) and remember its input and
# the outputs generated so far.
#
# <!-- fold: preemption by recompute in a pool that is too small, simulated -->

# %% [markdown]
# When memory frees up, the request is admitted again and its
# whole context is run through prefill once more, which rebuilds the KV it lost. Memory is
# bought with repeated computation. (The alternative, swapping the blocks to host memory, buys
# it with transfers instead; 8.3.4.)
#
# The chapter observed one preemption with a 1 GiB KV pool, costing extra scheduled
# tokens, and none with 2 GiB (8.3.2, footnote 9); its workload is not printed. A **generated**
# example with the simulator: four requests of 1536 prompt tokens each generate 512 tokens in
# lockstep; the most recently admitted request is preempted when the pool runs dry, and
# resumes when the others have finished.

# %%
runs = []
for gib in (1, 2):
    run = kvp.decode_with_preemption(gib * GiB, [1536] * 4, 512)
    print(f"{gib} GiB pool ({run['num_blocks']} blocks): {run['preemptions']} preemption(s), "
          f"{run['recomputed_tokens']:,} tokens recomputed, {run['rounds']} rounds; "
          f"events {[(r, what, req, toks) for r, what, req, toks in run['events']]}")
    runs.append(dict(run, label=f"{gib} GiB pool"))
plots.pool_usage_figure(runs, title="Generated: four requests decoding in a 1 GiB vs a 2 GiB "
                        "KV pool").show()

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
one_gib = runs[0]
md(f"""The generated 1 GiB run recomputes {one_gib['recomputed_tokens']:,} tokens: the preempted
request's context when it was dropped. The lengths were chosen to force one preemption; the
mechanism, not the count, carries over.""")

# %% [markdown]
# In the 1 GiB pool the blocks in use climb to the pool size, drop when the most recently
# admitted request is preempted, and climb again when it resumes (alone) with its context
# recomputed; the 2 GiB pool never fills. The preempted request comes back only once it fits
# next to what the others will still grow by; resuming it earlier would just preempt it again.

# %%
ledger.show(ids=["8.3.2/shared-prefix-kv-MiB", "8.3.2/private-tokens",
                 "8.3.2/private-tokens-allocated", "8.3.2/private-kv-MiB",
                 "8.3.2/batch-kv-shared-MiB", "8.3.2/long-request-kv-MiB",
                 "8.3.2/batch-kv-independent-MiB", "8.3.2/batch-kv-shared-GiB",
                 "8.3.2/capacity-independent", "8.3.2/capacity-shared",
                 "8.3.2/sim-capacity-shared"],
            label="8.3.2, a shared system prompt")

# %% [markdown]
# ## 8.3.3 Prefix reuse across requests
#
# Sharing does not have to stop when a request ends. If a later request begins with exactly
# the same tokens (same model, same position numbering, same adapter, same KV format), the KV
# left behind can be reused and prefill starts where the match ends: a long request whose
# 6144-token prefix is cached only prefills its last 2048 input tokens.
#
# The match must be a *prefix*. The KV of token $i$ depends on every token before it, so once
# two prompts differ at some position, nothing after it can be reused, even text that happens
# to be identical again later. A timestamp at the very start of a prompt is therefore
# expensive; stable content (system prompt, tool definitions) belongs first, what changes last.

# %%
base = list(range(1000, 1200))                      # 200 token ids
other = base[:100] + [7] + base[101:]               # differs only at the 101st token
print(f"reusable tokens: {calc.reusable_prefix_tokens(base, other)} of {len(other)}, "
      f"in whole 16-token blocks: {calc.reusable_prefix_tokens(base, other, block_tokens=16)}")
prompt_ids = range(ch08.LONG_PROMPT_TOKENS)
print(f"a hit on the 6144-token prefix leaves "
      f"{ch08.LONG_PROMPT_TOKENS - calc.reusable_prefix_tokens(range(prefix), prompt_ids)} "
      f"input tokens to prefill")

# %% [markdown]
# ### Figure 8-17: the prefix tree of a multi-turn task
#
# A prefix tree (radix tree) makes the structure visible: the path from the root to a branch
# point is context that several inputs share, the path from a branch point to a leaf is
# private. Edges carry the number of new tokens, nodes the input length reached.
#
# The chapter's figure comes from recorded agent inputs that it prints only in part (the first
# four rounds share 206 tokens, the next three extend the same path). The inputs below are
# **generated** by the companion in that shape (seeded random token ids and lengths), and the
# tree is built by the simulator's `prefix_tree`:

# %%
rounds = kvp.multi_turn_inputs()
tree = prefix_tree(rounds)
print("input lengths:", [len(r) for r in rounds])
print("edges (parent, child, new tokens):", list(tree.edges))
plots.prefix_tree_figure(tree, labels=[f"round {i + 1}" for i in range(len(rounds))],
                         title="Generated multi-turn inputs as a prefix tree (shape of "
                               "Figure 8-17)").show()

# %% [markdown] jp-MarkdownHeadingCollapsed=true
# #### The seven rounds through the simulator's prefix cache
#
# Reuse needs *room*: a small, busy pool evicts the prefixes before they return.
#
# <!-- fold: a large pool against a small, busy one -->

# %% [markdown]
# Replaying those seven rounds through the simulator's prefix cache (full 16-token blocks,
# least-recently-used eviction) shows that reuse needs *room*: in a large pool every shared
# block is found again; in a small pool shared with other traffic (a generated 1200-token
# request between rounds), the prefixes are evicted before they are needed.

# %%
for label, blocks, noise in (("400-block pool, no other traffic", 400, 0),
                             ("90-block pool, other traffic between rounds", 90, 1200)):
    replay = kvp.replay_prefix_cache(rounds, blocks, interfering_tokens=noise)
    print(f"{label}: {replay['hit_tokens']:,} of {replay['input_tokens']:,} input tokens hit "
          f"({100 * replay['hit_tokens'] / replay['input_tokens']:.0f}%), per round "
          f"{replay['hits']}, {replay['evicted_blocks']} blocks evicted")

# %% [markdown] jp-MarkdownHeadingCollapsed=true
# ### Hybrid models: restoring from a snapshot
#
# Full-attention layers keep one KV entry per token, so any matched prefix length can be
# resumed.
#
# <!-- fold: hybrid models: snapshots, their spacing and their storage -->

# %% [markdown]
# Recurrent (linear-attention) layers keep only a running state, which summarises
# everything so far and cannot be rewound. A hybrid model can therefore resume only at
# positions where it saved a **snapshot** of the recurrent state, and must recompute from the
# latest snapshot at or before the match:
#
# $$\text{restore from } s^* = \max\{s_i \le n_\text{match}\}, \qquad \text{recompute } n_\text{match} - s^* \text{ tokens},$$
#
# where $n_\text{match}$ is the matched length and $s_i$ are the snapshot positions.
#
# The chapter's example matches up to token 10,752 with snapshots at 4096 and 8192. Each
# snapshot of its hybrid model (KDA, split over 8 cards) costs about 53.6 MiB per card, so
# snapshot density trades recomputation for memory.

# %%
point = calc.hybrid_restore_point(ch08.HYBRID_MATCHED_TOKENS, ch08.HYBRID_SNAPSHOT_POSITIONS)
print(f"restore from {point.restore_from:,}, recompute {point.recompute_tokens:,} tokens")
snapshot_bytes = ch08.HYBRID_SNAPSHOT_MIB_PER_CARD * MiB
for n in (2, 32):
    print(f"{n:2d} snapshots: "
          f"{calc.snapshot_storage_bytes(snapshot_bytes, n) / MiB:,.1f} MiB "
          f"per card")
long_term = calc.long_term_cache_fraction(ch08.DEEPSEEK_SWA_SHARE,
                                          ch08.DEEPSEEK_GLOBAL_KV_FRACTION)
print(f"DeepSeek V4.1's long-term cache relative to V4's: {long_term}")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
md(f"""The chapter's storage figures for two and for 32 snapshots are a little below what the
rounded 53.6 MiB gives ({calc.snapshot_storage_bytes(snapshot_bytes, 2) / MiB:,.1f}
and {calc.snapshot_storage_bytes(snapshot_bytes, 32) / MiB:,.1f} MiB):
it multiplied an unrounded size, as the ledger notes explain. The explorer spaces snapshots
evenly: one every 4096 tokens gives {ch08.HYBRID_MATCHED_TOKENS // 4096} of them over the
10,752-token context and {131072 // 4096} over a 128K-token one.""")

# %% tags=["nbval-ignore-output"]
snapshots = widgets.SnapshotSpacingPanel()
snapshots.show()

# %%
for context in (ch08.HYBRID_MATCHED_TOKENS, 131072):
    numbers = snapshots.at(context_tokens=context).numbers
    print(f"context {context:,}: {numbers['snapshots']} snapshots, "
          f"{numbers['storage_MiB']:,.1f} MiB per card; the 10,752-token match recomputes "
          f"{numbers['recompute_tokens']:,} tokens")
# %% [markdown] jp-MarkdownHeadingCollapsed=true
# ### Organising the context: append, rewrite, or summarise?
#
# Prefix reuse is not only something the engine finds; the application decides it too, by how
# it lays out the next round's input.
#
# <!-- fold: append, rewrite or summarise: what each costs in tokens and cache -->

# %% [markdown]
# Take the situation 8.3.3 sketches: an agent has an 8K context in the cache, and a tool has
# just returned 1K tokens. Three ways to go on:
#
# - **append** the tool result at the end;
# - **rewrite** the instructions at the start (a new date, a changed rule), keeping every later
#   token word for word;
# - **summarise** the history into 2K tokens first, then append the tool result to the summary.
#
# Each choice is judged on three counts: how much of the input the prefix cache still serves,
# how many tokens must be computed now, and how much KV every *later* decode step has to read
# (the context it attends over). The companion replays each option through the simulator's
# `PrefixCache` (full 16-token blocks) for Qwen3-8B; the later reads are summed over the next
# $G$ output tokens, step $j$ reading the $L + j$ tokens cached before it.

# %%
options = kvp.context_organisation()
print(f"{'option':10} {'context L':>10} {'reused':>7} {'prefill':>8} {'summary':>8} "
      f"{'KV per step':>12} {'KV over next G':>15} {'+ writing summary':>18}")
for o in options:
    print(f"{o.name:10} {o.context_tokens:>10,} {o.reusable_tokens:>7,} {o.prefill_tokens:>8,} "
          f"{o.summary_tokens:>8,} {o.kv_read_per_step_bytes / MiB:>8,.0f} MiB "
          f"{o.kv_read_over_output_bytes / GiB:>11,.1f} GiB "
          f"{(o.kv_read_over_output_bytes + o.summary_kv_read_bytes) / GiB:>14,.1f} GiB")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
from companion.formulas.core import prefill_flops

by_name = {o.name: o for o in options}
append, rewrite, summarise = by_name["append"], by_name["rewrite"], by_name["summarise"]
per_step_saving = append.kv_read_per_step_bytes - summarise.kv_read_per_step_bytes
bw = specs.RTX_PRO_6000.mem_bw_bytes_per_s
paid_kv = -(-summarise.summary_kv_read_bytes // per_step_saving)
summary_weights = summarise.summary_tokens * model.streamed_weight_bytes   # read once per step
summary_b1_s = (summary_weights + summarise.summary_kv_read_bytes) / bw
paid_b1 = -(-(summary_weights + summarise.summary_kv_read_bytes) // per_step_saving)
paid_by_batch = {b: -(-(summary_weights / b + summarise.summary_kv_read_bytes) // per_step_saving)
                 for b in (4, 16, 64)}
# the summary's context is prefilled whole; appending prefills only the tool result
extra_prefill_s = calc.time_at_mfu(
    prefill_flops(model, summarise.prefill_tokens)
    - prefill_flops(model, append.prefill_tokens, append.reusable_tokens),
    specs.RTX_PRO_6000, km.RECOMPUTE_EFFICIENCY)
md(f"""Appending keeps the whole {append.reusable_tokens:,}-token history as a cached prefix and
computes only the {append.prefill_tokens:,} new tokens. Rewriting the start gives the same final
context, word for word after the first edit, yet the cache serves {rewrite.reusable_tokens} of it:
every token's KV depends on what came before, so all {rewrite.prefill_tokens:,} tokens are
prefilled again. Summarising makes the context {append.context_tokens / summarise.context_tokens:.0f}
times shorter, so each later step reads {summarise.kv_read_per_step_bytes / MiB:,.0f} MiB of KV
instead of {append.kv_read_per_step_bytes / MiB:,.0f} MiB. It pays for that twice: nothing of the
new context is cached ({summarise.prefill_tokens:,} tokens to prefill), and writing the summary
is {summarise.summary_tokens:,} decode steps over the old history, which read
{summarise.summary_kv_read_bytes / GiB:,.0f} GiB of KV by themselves. When the summary pays back
depends on what is counted, and so on the regime:

- **in KV bytes**: the smaller reads repay the summary's after about
  {paid_kv:,.0f} later output tokens. That is its cost on a busy server, where many requests
  share each weight read and a summary step costs little more than its own KV;
- **in time, for one agent alone on the card** (batch 1, where every step is read-bound): each
  of the {summarise.summary_tokens:,} summary steps also streams all
  {model.streamed_weight_bytes / GiB:.1f} GiB of weights, so writing the summary takes about
  {summary_b1_s:.1f} s at full bandwidth, while a later step saves only
  {per_step_saving / bw / ms:.2f} ms: it is repaid after about {paid_b1:,.0f} tokens (its
  larger uncached prefill adds about {extra_prefill_s / (per_step_saving / bw):.0f} more).

Between the two, $b$ requests share each weight read: {", ".join(f"at $b = {b}$ about {n:,.0f} tokens" for b, n in paid_by_batch.items())}.
Which option wins depends on how long the conversation goes on, and on how busy the card is.""")

# %% [markdown]
# **Explorer.** The bars are this round's tokens for each option; the lines are the KV that
# later decode steps read as the answer grows, with the chosen $G$ marked. Move the rewrite
# position to see that an edit costs everything *after* it (stable text first, changing text
# last), and stretch the history to see when a summary starts to pay.

# %% tags=["nbval-ignore-output"]
organise = widgets.ContextOrganisationPanel()
organise.show()

# %%
numbers = organise.at().numbers
print(f"G = {numbers['output_tokens']}: later reads "
      + ", ".join(f"{name} {numbers[f'{name}_later_read_GiB']:,.1f} GiB"
                  for name in ("append", "rewrite", "summarise"))
      + f"; the summary is repaid after {numbers['summary_repaid_after_tokens']:,} tokens in KV "
      f"bytes, {numbers['summary_repaid_after_tokens_batch1']:,} in read time at batch 1")

# %% [markdown] jp-MarkdownHeadingCollapsed=true
# ### Three kinds of state, three lifetimes: DeepSeek V4.1
#
# A model that mixes global attention with sliding-window attention (SWA) holds state of
# different kinds, and they need not live equally long.
#
# <!-- fold: DeepSeek V4.1's three kinds of state and how long each lives -->

# %% [markdown]
# The DeepSeek V4.1 deployment that 8.3.3 describes keeps three tiers apart:
#
# | state | what it is | where it lives, and for how long |
# |---|---|---|
# | global KV | one entry per token for the global-attention layers | the long-term prefix cache, reusable across rounds |
# | encoder SWA | the encoder's sliding-window state | host DRAM, kept for a short while so the next round can continue from it |
# | decoder SWA | the decoder's sliding-window state | on the accelerator, during this round's generation only; never cached |
#
# When the next round arrives, what must be recomputed depends on which tiers are still there.
# The companion's `calc.swa_restore_plan` gives the three cases, here for the same 8K cached
# prefix and 1K of new input as above:

# %%
window = ch08.DEEPSEEK_REPLAY_WINDOW_TOKENS
history_tokens, new_tokens = ch08.CONTEXT_HISTORY_TOKENS, ch08.CONTEXT_TOOL_RESULT_TOKENS
cases = (("global KV and encoder SWA cached", True, True),
         ("only global KV cached", True, False),
         ("nothing cached", False, False))
print(f"{'case':34} {'encoder tokens':>15} {'prefix re-run':>14} {'decoder replay':>15} "
      f"{'approximate state':>18}")
for label, global_hit, swa_hit in cases:
    plan = calc.swa_restore_plan(history_tokens, new_tokens, global_kv_hit=global_hit,
                                 encoder_swa_hit=swa_hit)
    approx = [name for name, flag in (("encoder", plan.encoder_state_approximate),
                                      ("decoder", plan.decoder_state_approximate)) if flag]
    print(f"{label:34} {plan.encoder_tokens:>15,} "
          f"{plan.encoder_replay_tokens + plan.prefix_recomputed_tokens:>14,} "
          f"{plan.decoder_replay_tokens:>15,} {' + '.join(approx):>18}")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
reach = calc.stacked_window_reach_tokens(ch08.DEEPSEEK_DECODER_LAYERS, window)
fraction = calc.long_term_cache_fraction(ch08.DEEPSEEK_SWA_SHARE, ch08.DEEPSEEK_GLOBAL_KV_FRACTION)
md(f"""Every round ends its prefill the same way: the last {window} tokens of the prompt are run
through the {ch08.DEEPSEEK_DECODER_LAYERS} decoder layers to rebuild the decoder's window state,
so even a full cache hit costs a short replay.

**Why a replay gives only an approximate state.** One SWA layer looks back {window - 1} tokens,
but it looks at the *previous layer's* outputs, which themselves looked back {window - 1}
tokens. Stacked {ch08.DEEPSEEK_DECODER_LAYERS} deep, the top layer's state still depends on
inputs up to {reach:,} tokens back, about {reach / window:.0f} windows. A replay that starts
{window} tokens before the end cuts those older dependencies off, so the rebuilt state differs
from the one an uninterrupted run would hold, and the new suffix's KV and SWA inherit that
difference (8.3.3 cites the technical report's section 3.2.2 for this).

**What the tiers save.** In V4 the SWA state made up about half of the long-term cache. V4.1
keeps SWA out of it and compresses the global KV to about a quarter, so the long-term cache
needs (1 - 1/2) x 1/4 = 1/{1 / fraction:.0f} of V4's volume ({fraction:.1%}).""")

# %%
ledger.show("8.3.3")

# %% [markdown]
# ## 8.3.4 Keep, evict, swap out, or recompute?
#
# The title names four separate decisions of a cache manager:
#
# - **admission**: should this prefix enter the cache at all once its request finishes?
# - **eviction**: when space runs short, which cached prefix goes first?
# - **swap-out**: instead of dropping it, move its KV to host memory and fetch it back later;
# - **recomputation**: drop it entirely and rebuild it by prefill if it is ever needed again.
#
# The value below answers admission (and, compared between prefixes, eviction order); its
# $T_f$ and $T_m$ are the swap-out path and $T_\text{rec}$ is the recomputation path.
#
# Keeping a finished request's prefix costs cache space and some maintenance; it pays off only
# if the prefix comes back. Let $\rho$ be the probability that it is used again, $T_\text{rec}$ the time
# to recompute it by prefill, $T_f$ the time to fetch it back, and $T_m$ the upkeep (here:
# writing it out to host memory once); 8.3.4 writes $p_h$, $T_r$ and $V_h$, and this companion
# keeps $T_r$ for a round's time. A hit saves $T_\text{rec} - T_f$, so the expected net saving is
#
# $$V = \rho\,(T_\text{rec} - T_f) - T_m, \qquad \text{worth keeping when } \rho > \frac{T_m}{T_\text{rec} - T_f}.$$
#
# For the 6144-token prefix A on the RTX PRO 6000: $T_\text{rec}$ is its prefill FLOPs at the
# batch-1 prefill efficiency of Experiment 8-1 (unrounded, as printed below), $T_f$ and $T_m$
# are one transfer of its KV over the host link at its nominal rate (per direction).

# %%
print(f"prefill efficiency used (measured, Experiment 8-1): {100 * km.RECOMPUTE_EFFICIENCY:.2f}%")
for link_name, link in (("PCIe Gen5 x16", ch08.PCIE_GEN5_X16_BYTES_PER_S),
                        ("PCIe Gen4 x16", ch08.PCIE_GEN4_X16_BYTES_PER_S)):
    a = calc.prefix_retention(model, specs.RTX_PRO_6000, prefix, hit_prob=ch08.RETENTION_HIT_PROB,
                              efficiency=km.RECOMPUTE_EFFICIENCY, link_bytes_per_s=link)
    print(f"{link_name} ({link / units.GB:.0f} GB/s per direction): T_rec {a.recompute_s / ms:.1f} ms, "
          f"T_f = T_m {a.fetch_s / ms:.1f} ms, a hit saves {a.saving_per_hit_s / ms:.2f} ms, "
          f"V(50%) {a.value_s / ms:.1f} ms, break-even {100 * a.break_even_hit_prob:.1f}%")

# %% [markdown]
#
# ### Figure 8-22: one large prefix or several small ones?
#
# Being worth keeping is not the same as deserving the space. The space prefix A takes holds
# exactly three 2048-token prefixes B instead. Prefill cost grows faster than
# linearly with length (attention pairs grow with the square), so the long prefix saves more
# per byte:

# %%
gen5 = dict(hit_prob=ch08.RETENTION_HIT_PROB, efficiency=km.RECOMPUTE_EFFICIENCY)
a = calc.prefix_retention(model, specs.RTX_PRO_6000, prefix, **gen5)
b = calc.prefix_retention(model, specs.RTX_PRO_6000, ch08.PREFIX_B_TOKENS, **gen5)
print(f"A: {a.kv_bytes / MiB:,.0f} MiB, V {a.value_s / ms:.1f} ms, "
      f"{a.value_s_per_byte * MiB / ms:.3f} ms per MiB")
print(f"B: {b.kv_bytes / MiB:,.0f} MiB, T_rec {b.recompute_s / ms:.1f} ms, T_f {b.fetch_s / ms:.1f} ms, "
      f"V {b.value_s / ms:.1f} ms, {b.value_s_per_byte * MiB / ms:.3f} ms per MiB")
print(f"prefill of {prefix} tokens / {ch08.PREFIX_B_TOKENS} tokens: "
      f"{a.recompute_s / b.recompute_s:.2f}x")
plots.retention_bars_figure(
    [(f"keep one A ({prefix} tokens)", 1, "A", a.value_s / ms),
     (f"keep three B ({ch08.PREFIX_B_TOKENS} tokens each)", ch08.PREFIX_B_COUNT, "B",
      b.value_s / ms)],
    title=f"Figure 8-22: expected saving of {a.kv_bytes / MiB:,.0f} MiB of cache "
          f"(hit probability {ch08.RETENTION_HIT_PROB:.0%}, PCIe Gen5)"
).show()

# %% [markdown] jp-MarkdownHeadingCollapsed=true
# #### Why the long prefix wins: attention's share
#
# Where does A's advantage come from?
#
# <!-- fold: the recomputation split into matrices and attention, and the agent replay -->

# %% [markdown]
# Split the recomputation into its two parts. The layer
# matrices cost the same per token however long the prefix is, and so do the fetch and the
# swap-out, which move bytes. Only attention grows faster than the length, because every
# token of the prefix attends to all the tokens before it. Pricing the recomputation without
# the attention term shows what is left when that goes away:

# %%
a_flat = calc.prefix_retention(model, specs.RTX_PRO_6000, prefix, attention=False, **gen5)
b_flat = calc.prefix_retention(model, specs.RTX_PRO_6000, ch08.PREFIX_B_TOKENS, attention=False,
                               **gen5)
n_b = ch08.PREFIX_B_COUNT
print(f"{'':22} {'one A':>9} {f'{n_b} x B':>9}")
print(f"{'T_r, matrices only':22} {a_flat.recompute_s / ms:7.1f}ms "
      f"{n_b * b_flat.recompute_s / ms:7.1f}ms")
print(f"{'T_r, with attention':22} {a.recompute_s / ms:7.1f}ms {n_b * b.recompute_s / ms:7.1f}ms")
print(f"{'V, matrices only':22} {a_flat.value_s / ms:7.1f}ms {n_b * b_flat.value_s / ms:7.1f}ms")
print(f"{'V, with attention':22} {a.value_s / ms:7.1f}ms {n_b * b.value_s / ms:7.1f}ms")
print(f"attention's share of T_r: A {1 - a_flat.recompute_s / a.recompute_s:.1%}, "
      f"B {1 - b_flat.recompute_s / b.recompute_s:.1%}")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
md(f"""Without attention the two choices tie exactly ({a_flat.value_s / ms:.1f} ms against
{n_b} x {b_flat.value_s / ms:.1f} ms): every term scales with the number of tokens, so the
same {a.kv_bytes / MiB:,.0f} MiB is worth the same however it is cut. The whole margin of A
over three B ({(a.value_s - n_b * b.value_s) / ms:.1f} ms of expected saving at this hit
probability) is attention: it is {1 - a_flat.recompute_s / a.recompute_s:.1%} of A's recomputation and
{1 - b_flat.recompute_s / b.recompute_s:.1%} of B's. The margin therefore widens with the
prefix length (pairs grow with the square of it) and shrinks for a model whose attention is
cheap per pair, such as one with few query heads or a sliding window (8.3.4 assumes full
attention in every layer).""")

# %% [markdown]
# All of this assumes the prefix is still there when it is needed. The chapter's replay of a
# 12-round agent task (19,556 input tokens) hit 16,304 tokens in a 6 GiB pool and none in a
# 1 GiB pool with the same interfering requests; waiting longer between rounds changed
# nothing. Capacity, not timing, kept the prefixes (the generated replay above shows the same
# effect).

# %%
replay = calc.cache_replay_hits(ch08.REPLAY_INPUT_TOKENS, ch08.REPLAY_HIT_TOKENS_6GIB)
print(f"6 GiB pool: {replay.reprocessed_tokens:,} tokens reprocessed, hit ratio "
      f"{100 * replay.hit_ratio:.0f}%")
ledger.show("8.3.4")

# %% [markdown]
# ### Explorer: what should the cache keep?
#
# Hit probabilities, the host link, the two prefix lengths, the cache space and the
# recomputation efficiency. Left: Figure 8-22 for the current setting. Right: the value of
# filling the space with A as A's hit probability varies, against filling it with B's.

# %% tags=["nbval-ignore-output"]
retention = widgets.RetentionPanel()
retention.show()

# %%
for gbps in (64, 32):
    numbers = retention.at(link_gb_per_s=gbps).numbers
    print(f"{gbps} GB/s: keep A {numbers['keep_a_ms']:.1f} ms, keep {numbers['b_fit']} B "
          f"{numbers['keep_b_ms']:.1f} ms; A worth keeping above {numbers['break_even_a_pct']:.1f}%")
# %% [markdown]
# ## Where this model breaks: the price of a recompute and of a swap
#
# A copy engine writes a prefix back while the GPU computes, so only its fetch is waited for
# (the retention explorer's *how T_rec and T_m are priced* menu switches models).

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the table below
v_rows = []
for v_label, v_kw in (("64 GB/s (8.3.4)", {}), ("4 GB/s", dict(link_gb_per_s=next(
        c.min for c in retention.controls if c.name == "link_gb_per_s")))):
    v_c, v_f = (retention.at(pricing=how, **v_kw).numbers["value_a_ms"]
                for how in ("chapter", "fuller"))
    v_rows.append((v_label, f"{v_c:.0f} ms", f"{v_f:.0f} ms", f"{v_f - v_c:+.0f} ms"))
md(tables.markdown_table(("V of one A, link per direction", "chapter's model", "fuller model",
                          "fuller - chapter"), v_rows))

# %% [markdown] jp-MarkdownHeadingCollapsed=true
# #### In detail
#
# Each of the three terms, repriced.
#
# <!-- fold: the fuller model, its numbers and where it parts from the chapter's -->

# %% [markdown]
# $V = \rho\,(T_\text{rec} - T_f) - T_m$ prices its three terms simply, and each
# simplification has a range where it stops holding:
#
# - **$T_\text{rec}$ at one efficiency, at any length.** A prefill pass reads every weight
#   once however few tokens it carries, so it can never take less than $D_w/\beta$. Pricing it
#   by FLOPs alone is right while the prefix is long enough to be compute-bound; below the
#   ridge the roofline's max of compute and memory is the price
#   (`calc.prefix_recompute_roofline`).
# - **$T_m$ as waiting.** 8.3.4 charges the swap-out as one more transfer the GPU waits for. A
#   copy engine can write the prefix back to the host, in the link's other direction, while
#   the GPU keeps computing; then upkeep costs link time, not GPU time, and $T_m \approx 0$.
# - **$T_f$ at the nominal rate, in one piece.** Footnote 28 already calls the transfer time at
#   the nominal rate, $D_\text{link}/\beta_\text{link}$, a lower bound. A paged prefix crosses
#   the link as one contiguous piece per block per layer (keys and values apart:
#   `calc.kv_transfer_pieces`); if each piece carries a fixed cost $t_\text{piece}$, the fetch
#   of $n_\text{pieces}$ pieces becomes $D_\text{link}/\beta_\text{link} +
#   n_\text{pieces}\,t_\text{piece}$.
#
# `calc.prefix_retention_fuller` prices all three; the retention explorer's *pricing* toggle
# switches between the two models (the chapter's stays the default) and its last slider adds
# a cost per piece. Below, the chapter's setting and the explorer's extremes under both:

# %% jupyter={"source_hidden": true} tags=["hide-input"]
# computes the table below
settings = {
    "8.3.4: PCIe Gen5, A = 6144, B = 2048": {},
    "PCIe Gen4 (32 GB/s)": dict(link_gb_per_s=32.0),
    "slowest link on the slider (4 GB/s)": dict(link_gb_per_s=4.0),
    "fastest link on the slider (450 GB/s)": dict(link_gb_per_s=450.0),
    "A = 768, B = 256 tokens, 100% of peak": dict(prefix_a_tokens=768, prefix_b_tokens=256,
                                                 efficiency_pct=100.0),
    "A = 32768 tokens (4608 MiB of cache)": dict(prefix_a_tokens=32768, cache_mib=4608.0),
}
rows, priced = [], {}
for label, kw in settings.items():
    chap = retention.at(pricing="chapter", **kw).numbers
    full = retention.at(pricing="fuller", **kw).numbers
    priced[label] = (chap, full)

    def keep(n):
        return f"{n['a_fit']} A" if n["keep_a_ms"] >= n["keep_b_ms"] else f"{n['b_fit']} B"

    def pays(n):   # a break-even above 100% means no hit probability makes A worth keeping
        return f"{n['break_even_a_pct']:.1f}%" if n["break_even_a_pct"] <= 100 else "never"

    rows.append((label, f"{chap['recompute_b_ms']:.1f} / {full['recompute_b_ms']:.1f}",
                 f"{chap['value_a_ms']:.1f} / {full['value_a_ms']:.1f}",
                 f"{pays(chap)} / {pays(full)}",
                 f"{keep(chap)} / {keep(full)}"))
md(tables.markdown_table(("setting", "T_rec of B, ms (8.3.4 / roofline)",
                          "V of one A at 50%, ms (8.3.4 / fuller)",
                          "A pays above (8.3.4 / fuller)", "the space keeps (8.3.4 / fuller)"),
                         rows))

# %%
card = specs.RTX_PRO_6000
for eff in (km.RECOMPUTE_EFFICIENCY, 1.0):
    ridge = next(n for n in range(1, 8192)
                 if not calc.prefix_recompute_roofline(model, card, n, eff).memory_bound)
    print(f"at {eff:.2%} of peak a recomputed prefix is compute-bound from {ridge} tokens on")
full_a = calc.prefix_retention_fuller(model, card, prefix, **gen5)
print(f"A, fuller pricing: T_rec {full_a.recompute_s / ms:.1f} ms, T_f {full_a.fetch_s / ms:.1f} ms, "
      f"T_m {full_a.maintain_s / ms:.1f} ms, V {full_a.value_s / ms:.1f} ms")
print(f"{'link':>10} {'pieces of A':>12} {'T_f of A':>10} {'doubled at':>12}")
for gbps in (ch08.PCIE_GEN5_X16_BYTES_PER_S, ch08.PCIE_GEN4_X16_BYTES_PER_S,
             ch08.NVLINK_C2C_BYTES_PER_S):
    t_piece = calc.piece_cost_doubling_fetch_s(model, prefix, gbps)
    fetch = calc.link_transfer_s(calc.kv_bytes(model, prefix), gbps)
    print(f"{gbps / units.GB:>6.0f} GB/s {calc.kv_transfer_pieces(model, prefix):>12,} "
          f"{fetch / ms:>7.1f} ms {t_piece * 1e6:>8.3f} us/piece")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
base_c, base_f = priced["8.3.4: PCIe Gen5, A = 6144, B = 2048"]
slow_c, slow_f = priced["slowest link on the slider (4 GB/s)"]
short_c, short_f = priced["A = 768, B = 256 tokens, 100% of peak"]
gen5_t_piece = calc.piece_cost_doubling_fetch_s(model, prefix, ch08.PCIE_GEN5_X16_BYTES_PER_S)
md(f"""> **Where this model breaks: pricing a kept prefix.** At the chapter's setting only the
> write-back matters: charged as waiting it costs {base_c['fetch_a_ms']:.1f} ms, off the GPU's
> path nothing, so keeping A is worth {base_f['value_a_ms']:.1f} ms instead of
> {base_c['value_a_ms']:.1f} ms (+{100 * (base_f['value_a_ms'] / base_c['value_a_ms'] - 1):.0f}%)
> and pays at any hit probability above zero instead of above
> {base_c['break_even_a_pct']:.1f}%, ignoring that its blocks are taken from running requests
> (neither model prices that space). The choice of one A over three B does not move. The gap
> decides things where transfers are slow: on the slider's 4 GB/s link the chapter's pricing
> says a kept A loses {-slow_c['value_a_ms']:.0f} ms on average (it never pays), the fuller one
> that it still saves {slow_f['value_a_ms']:.0f} ms, because only the fetch is waited for. The
> roofline floor changes nothing at 2048 or 6144 tokens, which are far above the ridge; it
> bites for short prefixes at high efficiency (below {ridge} tokens at 100% of peak): a
> 256-token B at 100% of peak costs
> {short_f['recompute_b_ms']:.2f} ms to recompute, not {short_c['recompute_b_ms']:.2f} ms, one
> read of the weights, and there the ranking flips. The chapter's pricing fills the space with
> {short_c['a_fit']} A ({short_c['keep_a_ms']:.1f} ms against {short_c['keep_b_ms']:.1f} ms for
> {short_c['b_fit']} B), the fuller one with {short_f['b_fit']} B ({short_f['keep_b_ms']:.1f} ms
> against {short_f['keep_a_ms']:.1f} ms): below the ridge a short prefix is dearer to rebuild
> than its FLOPs say. The per-piece cost is the unknown to measure on a real engine: A's
> fetch over PCIe Gen5 doubles once each of its pieces costs {gen5_t_piece * 1e6:.2f} us, which is
> why a transfer path that gathers the scattered blocks into few large copies matters.""")

# %% [markdown]
# ## Try this
#
# 1. In the paging explorer, round all four lengths to the nearest multiple of the block size.
#    Where did the waste go? Then set $p = 16$ (lengths back at the chapter's): how many table entries are
#    left, and how much waste?
#    <!-- states: paging(len_a=8, len_b=12, len_c=4, len_d=16); paging(block_tokens=16) -->
# 2. **Predict, then move.** Let A and B have 7 tokens in common instead of 8 (with $p = 4$).
#    Guess how many blocks sharing saves now before you move the slider, and explain the answer.
#    <!-- states: paging(shared_ab_tokens=7) -->
# 3. In the branch explorer, keep the 95 shared blocks and push the private blocks per branch
#    to the slider's end. Does sharing still save more than half of the independent storage?
#    How many private blocks would it take to fall below half?
#    <!-- states: branching(private_blocks=40) -->
# 4. **Predict, then move.** In the capacity explorer, shrink the KV budget to 6 GiB. How long
#    must the shared prefix be for 16 long requests to fit? Guess, then drag the prefix slider.
#    <!-- states: capacity(kv_budget_gib=6.0); capacity(kv_budget_gib=6.0, shared_prefix_tokens=...) -->
# 5. Make the snapshots four times denser. What does that cost in storage for a 128K-token
#    context, and how much recomputation does it save for the 10,752-token match?
#    <!-- states: snapshots(spacing_tokens=1024); snapshots(spacing_tokens=1024, context_tokens=131072) -->
# 6. **Predict, then move.** In the retention explorer, lower A's hit probability until three
#    B's win. Before switching the link to 32 GB/s, predict whether the crossing moves up or
#    down. (Exercise 8-4 asks for it exactly.)
#    <!-- states: retention(link_gb_per_s=32.0) -->
# 7. Raise the recompute efficiency to 100%. Which term of $V$ changes, and does the ranking
#    per MiB change?
#    <!-- states: retention(efficiency_pct=100.0) -->
# 8. **Predict, then move.** In the context explorer, grow the cached history to 32K tokens
#    (tool result and summary as before). Will the summary be repaid sooner or later than at
#    8K? Guess, then move the history slider and read the repayment point.
#    <!-- states: organise(history_tokens=32768) -->

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
aligned = paging.at(len_a=8, len_b=12, len_c=4, len_d=16).numbers
coarse = paging.at(block_tokens=16).numbers
answer(f"""With lengths 8, 12, 4 and 16 every sequence ends exactly on a block boundary, so the tail
waste is {aligned['tail_waste']} and the {aligned['allocated_tokens']} allocated slots all hold
tokens. Back at the chapter's lengths with $p = 16$, each sequence needs a single block: the
tables hold {coarse['table_entries']} entries, but the tails waste {coarse['tail_waste']}, in all
{coarse['unused_tokens']} slots, as many as reserving 16 slots each did.""",
       title="Worked answer 1")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
eight = paging.at().numbers
seven = paging.at(shared_ab_tokens=7).numbers
answer(f"""Only whole blocks can be shared read-only: 8 common tokens fill
{eight['shared_blocks']} blocks of 4, but 7 fill just {seven['shared_blocks']}. The second block
would hold the last three common tokens *and* the first token where A and B differ, so it
cannot be one block for both: each keeps its own copy. Sharing then saves {seven['shared_blocks'] * p} slots instead of
{eight['shared_blocks'] * p} ({seven['allocated_with_sharing_tokens']} slots allocated in
all).""", title="Worked answer 2")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
n_br, b_s = ch08.BRANCH_EXPERIMENT_BRANCHES, ch08.BRANCH_EXPERIMENT_SHARED_BLOCKS
slider_end = branching.at(private_blocks=40).numbers
half = next(q for q in range(1, 10 * b_s)
            if calc.branch_block_sharing(n_br, b_s, q).saved_fraction < 0.5)
at_half = calc.branch_block_sharing(n_br, b_s, half)
answer(f"""Sharing saves the {n_br - 1} extra copies of the prefix, $(n_\\text{{br}} - 1)B_s$
blocks out of $n_\\text{{br}}(B_s + B_p)$. At the slider's end, 40 private blocks per branch, it
still saves {slider_end['saved_pct']:.1f}%. The closed form goes further: the saving drops below
half once $B_p$ reaches {half} ({100 * at_half.saved_fraction:.1f}% saved,
{at_half.physical_blocks} physical blocks for {at_half.references} references), that is once
each branch's private part is about half as long as the shared prefix.""", title="Worked answer 3")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
import math

held = ch08.LONG_PROMPT_TOKENS + ch08.OUTPUT_TOKENS - 1   # tokens a request holds at the end
k_tok = calc.kv_bytes_per_token(model)
budget6 = 6 * GiB          # not a chapter input: the budget this question sets
x_smooth = (ch08.LONG_BATCH * held * k_tok - budget6) / ((ch08.LONG_BATCH - 1) * k_tok)
pool_blocks = int(budget6 // (ch08.BLOCK_TOKENS * k_tok))
held_blocks = math.ceil(held / ch08.BLOCK_TOKENS)     # blocks one request holds in all
# only whole blocks are shared (Worked answer 2): s shared blocks leave held_blocks - s private
s_exact = (ch08.LONG_BATCH * held_blocks - pool_blocks) / (ch08.LONG_BATCH - 1)
prefix_blocks = math.ceil(s_exact)
private_blocks = held_blocks - prefix_blocks
needed = ch08.BLOCK_TOKENS * prefix_blocks
fits_at = calc.max_concurrent(budget6, model, ch08.LONG_PROMPT_TOKENS, ch08.OUTPUT_TOKENS,
                              shared_prefix_tokens=needed)
fits_below = calc.max_concurrent(budget6, model, ch08.LONG_PROMPT_TOKENS, ch08.OUTPUT_TOKENS,
                                 shared_prefix_tokens=needed - 1)
assert fits_at >= ch08.LONG_BATCH > fits_below       # the closed form is the exact threshold
start = capacity.at(kv_budget_gib=6.0).numbers
row = capacity.at(kv_budget_gib=6.0, shared_prefix_tokens=needed).numbers
answer(f"""At 6 GiB the chapter's {ch08.SHARED_PREFIX_TOKENS:,}-token prefix lets
{start['fit_shared']} long requests fit ({start['fit_independent']} without sharing); how much
shorter may it be? Sixteen private parts plus one prefix must fit in a KV pool of $M_{{KV}}$ =
{budget6 / GiB:.0f} GiB. Each request holds $L = n + G - 1 = {ch08.LONG_PROMPT_TOKENS:,} + {ch08.OUTPUT_TOKENS} - 1 = {held:,}$ tokens, of which
a prefix of $n_s$ is shared, at $k = {k_tok:,}$ B per token.

1. Ignoring block rounding, $n_s k + {ch08.LONG_BATCH}\\,(L - n_s)\\,k \\le M_{{KV}}$ gives
   $n_s \\ge ({ch08.LONG_BATCH} L k - M_{{KV}}) / ({ch08.LONG_BATCH - 1}\\,k) = {x_smooth:,.1f}$ tokens.
2. With {ch08.BLOCK_TOKENS}-token blocks the pool holds $\\lfloor M_{{KV}} / ({ch08.BLOCK_TOKENS} k) \\rfloor
   = {pool_blocks:,}$ blocks and each request's $L$ tokens fill $\\lceil L / {ch08.BLOCK_TOKENS} \\rceil =
   {held_blocks}$. Only whole blocks are shared (Worked answer 2), so a prefix of $s$ whole blocks
   leaves ${held_blocks} - s$ private blocks per request:
   $s + {ch08.LONG_BATCH}\\,({held_blocks} - s) \\le {pool_blocks:,}$ gives
   $s \\ge ({ch08.LONG_BATCH} \\times {held_blocks} - {pool_blocks:,}) / {ch08.LONG_BATCH - 1} = {s_exact:.1f}$,
   so {prefix_blocks} shared blocks and {private_blocks} private ones.
3. So the prefix must cover $n_s \\ge {prefix_blocks} \\times {ch08.BLOCK_TOKENS} =$
   **{needed:,} tokens**. At that length {fits_at} requests fit; one token shorter, the last
   prefix block is partly filled, so every request keeps its own copy of it, and {fits_below} fit.

Each request then privately holds {row['private_tokens']:,} tokens ({row['private_MiB']:,.0f}
MiB), and the {ch08.LONG_BATCH} of them take {row['shared_GiB']:.2f} GiB with the prefix. (A scan
in steps of 256 tokens would stop at the next multiple above the threshold, a slight
overestimate.) Without sharing, only {row['fit_independent']} fit: the longer the common
prefix, the more requests one pool serves, because each request pays only for its private
tail.""", title="Worked answer 4")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
spacing = ch08.HYBRID_SNAPSHOT_POSITIONS[0]
long_context = 128 * 1024      # the prompt's 128K context
sparse = snapshots.at(context_tokens=131072).numbers
dense_here = snapshots.at(spacing_tokens=1024).numbers
dense = snapshots.at(spacing_tokens=1024, context_tokens=131072).numbers
assert spacing // 4 == 1024 and long_context == 131072
answer(f"""One snapshot every {spacing // 4:,} tokens instead of {spacing:,} means
{dense['snapshots']} snapshots over {long_context:,} tokens instead of {sparse['snapshots']}:
{dense['storage_MiB']:,.1f} MiB per card instead of {sparse['storage_MiB']:,.1f}. The
{ch08.HYBRID_MATCHED_TOKENS:,}-token match then restores from {dense_here['restore_from']:,} and
recomputes {dense_here['recompute_tokens']:,} tokens instead of {sparse['recompute_tokens']:,}.
Storage grows with the number of snapshots over the whole context, while the saving is capped
by one spacing per match: denser snapshots pay only when long contexts are matched often.""",
       title="Worked answer 5")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
fast = retention.at().numbers
slow = retention.at(link_gb_per_s=32.0).numbers
shift = slow["a_beats_b_above_pct"] - fast["a_beats_b_above_pct"]
answer(f"""Set one A's $V$ equal to three B's (each $V = \\rho\\,(T_\\text{{rec}} - T_f) - T_m$ with
its own prefix's terms, B's hit probability at 50%) and solve for A's $\\rho$ (Exercise 8-4
asks for it exactly). On a 32 GB/s link every transfer takes
{slow['fetch_a_ms'] / fast['fetch_a_ms']:.0f} times as long, A's and the B's alike. Yet the
crossing barely moves ({'down' if shift < 0 else 'up'}, by
{'less than one percentage point' if abs(shift) < 1 else 'a few percentage points'}): either
way the same bytes go over the link, so the slower link takes nearly the same time from both
choices. It changes whether keeping anything pays (A's break-even hit probability
{'rises' if slow['break_even_a_pct'] > fast['break_even_a_pct'] else 'falls'}) far more than
which prefix to keep.""",
       title="Worked answer 6")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
full = retention.at(efficiency_pct=100.0).numbers
ranking = ("stays" if (full['a_per_MiB_ms'] > full['b_per_MiB_ms'])
           == (fast['a_per_MiB_ms'] > fast['b_per_MiB_ms']) else "flips")
answer(f"""Only $T_\\text{{rec}}$ changes: recomputing A takes {full['recompute_a_ms']:.1f} ms
instead of {fast['recompute_a_ms']:.1f} ms, and B {full['recompute_b_ms']:.1f} ms instead of
{fast['recompute_b_ms']:.1f} ms, while fetching and writing out stay at
{full['fetch_a_ms']:.1f} ms for A. Every hit saves less, so both values fall: per MiB, A now
saves {full['a_per_MiB_ms']:.3f} ms and B {full['b_per_MiB_ms']:.3f} ms (at the measured
efficiency {fast['a_per_MiB_ms']:.3f} and {fast['b_per_MiB_ms']:.3f}). The ranking {ranking}:
A's prefill still costs {full['recompute_a_ms'] / full['recompute_b_ms']:.2f} times B's for three
times the tokens, because attention pairs grow with the square of the length.""", title="Worked answer 7")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
long_history = organise.at(history_tokens=32768).numbers
short_history = organise.at().numbers
answer(f"""Sooner. With a 32K history, writing the 2K summary reads more KV
({long_history['summary_pass_read_GiB']:,.0f} GiB instead of
{short_history['summary_pass_read_GiB']:,.0f} GiB), but every later step now saves the difference
between a {long_history['append_context_tokens']:,}-token and a
{long_history['summarise_context_tokens']:,}-token context, which grew faster still. Counted in
KV bytes (a busy server sharing its weight reads), the summary is repaid after
{long_history['summary_repaid_after_tokens']:,} later tokens instead of
{short_history['summary_repaid_after_tokens']:,}; counted in read time for the agent alone at
batch 1, where each summary step also streams the weights, after
{long_history['summary_repaid_after_tokens_batch1']:,} instead of
{short_history['summary_repaid_after_tokens_batch1']:,}. Both fall: the longer the history, the
better summarising looks, as long as the summary keeps what the agent needs, but on an idle
card it takes a long conversation to pay off.""", title="Worked answer 8")

# %% [markdown]
# **Exercises.** [Exercise 8-3](../../exercises/ex8_3.ipynb) practises 8.3.1-8.3.2 and
# [Exercise 8-4](../../exercises/ex8_4.ipynb) 8.3.3-8.3.4. Next:
# [8.4 Compression and offloading](08_4_compression_and_offloading.ipynb).
#
# > **What you can now compute**
# > - the blocks, tail waste and block-table entries of paged sequences for a block size ([Exercise 8-3](../../exercises/ex8_3.ipynb))
# > - the physical blocks and KV bytes of requests that share a prefix, and how many of them fit a pool ([Exercise 8-3](../../exercises/ex8_3.ipynb))
# > - how many prompt tokens a cached prefix saves, and where a hybrid model must restart ([Exercise 8-4](../../exercises/ex8_4.ipynb))
# > - the expected saving $V$ of keeping a prefix and which prefixes a limited cache should hold ([Exercise 8-4](../../exercises/ex8_4.ipynb))
# >
# > <details><summary>Assumptions this notebook made</summary>
# >
# > KV is Qwen3-8B's per token in BF16 (8.1.2), in
# > 16-token blocks; a finished request holds its prompt plus all outputs but the last, and
# > every request of a batch holds the same; tail waste is counted exactly for given lengths
# > (and, where shown, as a distribution for lengths that land anywhere in a block). The
# > simulator's pool has no fragmentation beyond block tails, frees a block only when its count
# > reaches zero and the work reading it is done, evicts the least recently used full blocks,
# > and its workloads (preemption, prefix tree, replays, context options) are the companion's
# > own. The value of a kept prefix takes the hit probability as a given constant, independent
# > of the cache's size and of what else it holds; recomputation runs at the measured batch-1
# > prefill efficiency whatever its length (the roofline floor is shown beside it); transfers
# > run at the link's nominal rate with no cost per piece; the swap-out is waited for (the
# > fuller pricing lets it overlap); attention is full in every layer.
# >
# > </details>
