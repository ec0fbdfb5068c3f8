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
# # Exercise 8-3 · How do block size and prefix sharing change the KV a batch needs?
#
# *Computation, sections 8.3.1-8.3.2.* A paged allocator gives a sequence of $L$ tokens
# $\lceil L/p \rceil$ blocks of $p$ slots; only the tail block has unused slots,
# $p\lceil L/p\rceil - L$ of them. Requests that share a prefix can map the first entries of their
# block tables to one common set of physical blocks, so the prefix is stored once.
#
# 1. **(a)** Page the four sequences below with blocks of 2, 4 and 8 tokens. For each block
#    size, give the unused tail slots of the four sequences summed, and the block-table entries
#    summed. Only these sums are graded, not each sequence's tail.
# 2. **(b)** For the long request below, how much KV do 8, 16 and 32 requests need once
#    generation ends, stored independently and with the common prefix stored once (MiB)? Reserve
#    what a finished request holds (8.1.2), in whole blocks of $p = 16$ tokens, $k$ bytes per
#    token. Then: how many such requests fit in the KV pool given below, each way?
# 3. **(c)** Keep each request's total length fixed but move the number of full private blocks
#    given below (one in the chapter) into the common prefix. How many fewer physical blocks do
#    8, 16 and 32 requests need, and how many fewer does the larger batch given below need?
#
# In every variant the shared prefix is a whole number of blocks ($n_s$ a multiple of $p$), so
# its blocks are full and read-only. Were it not, its last block would be partly filled, and
# the first request to write its next token there would get a private copy of that block
# (copy-on-write, 8.3.2).
#
# **Precision and units.** Sizes in MiB ($2^{20}$ bytes) to 0.001%: they are whole numbers of
# blocks, so give them unrounded. Slots, entries, blocks and requests are exact whole numbers.
#
# <details><summary>Hints</summary>
#
# - (b): 8.3.2's "shared prefix as capacity" stores the prefix once and keeps the rest per
#   request; each part is rounded to whole blocks on its own. A pool holds as many whole
#   requests as fit.
# - (c): count physical blocks as 8.3.2 counts them for a prefix shared by several branches;
#   8.3.1's worked example (A and B sharing their first 8 tokens) is the smallest case.
#
# </details>

# %% nbgrader={"grade": false, "grade_id": "given", "locked": true, "schema_version": 3, "solution": false, "task": false}
from companion import calc, grading, units

SEED = grading.student_seed()
given = grading.params("8-3", SEED)
lengths = given["lengths"]
print(f"sequence lengths {lengths}; block sizes {given['block_sizes']}")
print(f"model {given['model'].name}: KV {given['kv_bytes_per_token'] / units.KiB:g} KiB per token")
print(f"long request: {given['prompt_tokens']} prompt tokens, the first "
      f"{given['shared_prefix_tokens']} shared, {given['output_tokens']} output tokens, "
      f"{given['block_tokens']}-token blocks; batches {given['batches']}")
print(f"KV pool {given['kv_pool_bytes'] / units.GiB:g} GiB (the chapter's instance on the RTX PRO "
      f"6000, 8.1.2; every variant's model runs there)")
print(f"(c): {given['joined_blocks']} private full block(s) join the common prefix; larger "
      f"batch {given['general_batch']}")

# %% [markdown]
# ## (a) Tail waste and block-table entries
#
# Fill `unused[p]` with the four sequences' unused tail slots summed, and `entries[p]` with
# their block-table entries summed.

# %% nbgrader={"grade": false, "grade_id": "a_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
unused, entries = {}, {}
### BEGIN SOLUTION
from companion.display import tex
import math

from companion import display


rows, tails = [], {}
for p in given["block_sizes"]:
    blocks = [math.ceil(L / p) for L in lengths]            # ceil(L / p) entries each
    tails[p] = [p * n - L for n, L in zip(blocks, lengths)]  # p ceil(L / p) - L unused slots
    unused[p] = sum(tails[p])
    entries[p] = sum(blocks)
    rows.append(f"| {p} | {' + '.join(map(str, blocks))} = **{entries[p]}** "
                f"| {' + '.join(map(str, tails[p]))} = **{unused[p]}** |")
display.md(rf"""
Lengths $L$ = {", ".join(map(str, lengths))}. Each sequence needs $\lceil L/p \rceil$ block-table
entries and leaves $p\lceil L/p \rceil - L$ slots of its tail block unused:

| $p$ | entries $\sum \lceil L/p \rceil$ | unused tail slots $\sum (p\lceil L/p \rceil - L)$ |
|---:|---|---|
""" + "\n".join(rows))
for p in given["block_sizes"]:   # check against the companion's 8.3.1 formulas
    assert tails[p] == [calc.kv_tail_waste_tokens(L, p) for L in lengths]
    assert entries[p] == sum(calc.kv_blocks_needed(L, p) for L in lengths)
### END SOLUTION
for p in given["block_sizes"]:
    print(f"p = {p}: unused {unused.get(p)}, entries {entries.get(p)}")

# %% nbgrader={"grade": true, "grade_id": "a_check", "locked": true, "points": 6, "schema_version": 3, "solution": false, "task": false}
with grading.checks():
    for p in given["block_sizes"]:
        grading.check("8-3", f"a-p{p}-unused", unused, key=p, seed=SEED)
        grading.check("8-3", f"a-p{p}-entries", entries, key=p, seed=SEED)

# %% [markdown]
# **In words (not graded).** As the block size grows, what happens to the unused tail slots and
# to the block-table entries, what bounds the waste per sequence, and what does a small block
# cost instead?

# %% [markdown] nbgrader={"grade": true, "grade_id": "a_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# ### BEGIN SOLUTION
# Going from the smallest to the largest block size, the unused tail slots grow and the
# block-table entries shrink (the table above; 8.3.1's worked example is the row for 4-token
# blocks). Each sequence wastes at most $p - 1$ slots, only in its last block, so smaller blocks
# waste less; but they need more table entries, more allocations and more lookups per token
# read. The point: the block size trades a bounded tail waste, at most $p - 1$ slots per
# sequence whatever its length, against bookkeeping that grows as the blocks shrink (8.3.1).
# ### END SOLUTION

# %% [markdown]
# ## (b) KV of a batch of long requests, independent and shared, and how many fit
#
# Fill `independent_mib[b]` and `shared_mib[b]` for each batch size, and set `fit_independent`
# and `fit_shared` to the most finished requests the KV pool holds each way.

# %% nbgrader={"grade": false, "grade_id": "b_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
independent_mib, shared_mib, fit_independent, fit_shared = {}, {}, None, None
### BEGIN SOLUTION
k, MiB = given["kv_bytes_per_token"], units.MiB
n, G, n_s, p = (given["prompt_tokens"], given["output_tokens"], given["shared_prefix_tokens"],
                given["block_tokens"])
held = n + G - 1                                   # what a finished request holds
full_mib = p * math.ceil(held / p) * k / MiB       # one request, independent
prefix_mib = p * math.ceil(n_s / p) * k / MiB      # the prefix, stored once
private = held - n_s
private_mib = p * math.ceil(private / p) * k / MiB  # each request's own part
rows = []
for b in given["batches"]:
    independent_mib[b] = b * full_mib
    shared_mib[b] = prefix_mib + b * private_mib
    rows.append(f"| {b} | {b} × {full_mib:,g} = **{independent_mib[b]:,g}** "
                f"| {prefix_mib:,g} + {b} × {private_mib:,g} = **{shared_mib[b]:,g}** |")
# the pool: whole requests only
pool_mib = given["kv_pool_bytes"] / MiB
fit_independent = math.floor(pool_mib / full_mib)
fit_shared = math.floor((pool_mib - prefix_mib) / private_mib)
display.md(rf"""
A finished request holds $n + G - 1 = {tex(n)} + {G} - 1 = {tex(held)}$ tokens:
${tex(p * math.ceil(held / p))}$ slots, $\times\ {tex(k)}$ B $= {tex(full_mib, ',g')}$ MiB.
Shared: the prefix takes ${tex(p * math.ceil(n_s / p))}$ slots $= {tex(prefix_mib, ',g')}$ MiB once,
and each request keeps $n + G - 1 - n_s = {tex(private)}$ private tokens,
${tex(p * math.ceil(private / p))}$ slots $= {tex(private_mib, ',g')}$ MiB. So

$$M_{{KV}}(b) = {tex(prefix_mib, ',g')} + {tex(private_mib, ',g')}\,b \ \text{{MiB shared}}, \qquad
{tex(full_mib, ',g')}\,b \ \text{{MiB independent}}.$$

| $b$ | independent, $b \times$ full (MiB) | shared, prefix $+\ b \times$ private (MiB) |
|---:|---|---|
""" + "\n".join(rows) + rf"""

**How many fit.** The pool holds {pool_mib:,g} MiB:
$\lfloor {tex(pool_mib, ',g')} / {tex(full_mib, ',g')} \rfloor = \mathbf{{{fit_independent}}}$
requests independent, and
$\lfloor ({tex(pool_mib, ',g')} - {tex(prefix_mib, ',g')}) / {tex(private_mib, ',g')} \rfloor
= \mathbf{{{fit_shared}}}$ with the prefix stored once.
""")
model = given["model"]
for b in given["batches"]:   # check against the companion's 8.3.2 formula
    assert math.isclose(independent_mib[b] * MiB,
                        calc.prefix_shared_kv_bytes(model, b, n, G, block_tokens=p))
    assert math.isclose(shared_mib[b] * MiB, calc.prefix_shared_kv_bytes(
        model, b, n, G, shared_prefix_tokens=n_s, block_tokens=p))
pool = given["kv_pool_bytes"]                 # and its 8.3.2 capacity, as 08_3 computes it
assert fit_independent == calc.max_concurrent(pool, model, n, G, block_tokens=p)
assert fit_shared == calc.max_concurrent(pool, model, n, G, shared_prefix_tokens=n_s,
                                         block_tokens=p)
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "b_check", "locked": true, "points": 8, "schema_version": 3, "solution": false, "task": false}
with grading.checks():
    for b in given["batches"]:
        grading.check("8-3", f"b-indep-b{b}", independent_mib, key=b, seed=SEED)
        grading.check("8-3", f"b-shared-b{b}", shared_mib, key=b, seed=SEED)
    grading.check("8-3", "b-fit-indep", fit_independent, seed=SEED)
    grading.check("8-3", "b-fit-shared", fit_shared, seed=SEED)

# %% [markdown]
# **In words (not graded).** How does each layout grow with the batch, why does the gap between
# them widen, and what does that do to the number of requests the pool holds?

# %% [markdown] nbgrader={"grade": true, "grade_id": "b_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# ### BEGIN SOLUTION
# Independent storage grows by a whole request's KV with every request; shared storage pays
# the prefix once and then grows only by the private part, which is a fraction of it (the
# derivation above). The gap therefore widens in proportion to the batch, and the same pool
# holds more requests once the prefix is stored once, the more so the larger the prefix's share
# of each request: sharing turns into capacity, not just into saved bytes.
# ### END SOLUTION

# %% [markdown]
# ## (c) More blocks in the common prefix
#
# Fill `saved_blocks[b]` for each batch size, and set `saved_general` for the larger batch.

# %% nbgrader={"grade": false, "grade_id": "c_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
saved_blocks, saved_general = {}, None
### BEGIN SOLUTION
from companion.chapters import ch08

j = given["joined_blocks"]
B_s = math.ceil(n_s / p)                    # prefix blocks, stored once
B_p = math.ceil(private / p)                # private blocks of each request
block_mib = p * k / MiB                     # one block's KV
rows = []
for b in given["batches"] + (given["general_batch"],):
    before = B_s + b * B_p
    after = (B_s + j) + b * (B_p - j)       # j full blocks move from every request to the prefix
    saved = before - after
    if b in given["batches"]:
        saved_blocks[b] = saved
    else:
        saved_general = saved
    rows.append(f"| {b} | {B_s} + {b} × {B_p} = {before:,} | {B_s + j} + {b} × {B_p - j} = "
                f"{after:,} | **{saved}** $= {j}\\times({b} - 1)$ | {saved * block_mib:,g} |")
# 8.3.1's worked example is the smallest case: A and B share their first 8 tokens
ex_p, ex_shared = ch08.PAGING_EXAMPLE_BLOCK_TOKENS, ch08.PAGING_EXAMPLE_SHARED_TOKENS
ex_alloc = calc.paged_allocation(ch08.PAGING_EXAMPLE_LENGTHS, ex_p,
                                 max_tokens=ch08.PAGING_EXAMPLE_MAX_TOKENS)
ex_j = ex_shared // ex_p
ex_saved = calc.shared_prefix_blocks_saved(ex_shared, 2, ex_p)
display.md(rf"""
Before: $B_s = \lceil {tex(n_s)}/{p} \rceil = {B_s}$ prefix blocks and
$B_p = \lceil {tex(private)}/{p} \rceil = {B_p}$ private blocks per request. Moving $j = {j}$ full
private block(s) into the prefix gives $B_s + j$ and $B_p - j$. One block holds
${p} \times {tex(k)}$ B $= {tex(block_mib, ',g')}$ MiB of KV.

| $b$ | before, $B_s + b B_p$ | after, $(B_s + j) + b (B_p - j)$ | saved, $j(b - 1)$ | saved (MiB) |
|---:|---|---|---|---:|
""" + "\n".join(rows) + rf"""

In general $(B_s + b B_p) - (B_s + j + b(B_p - j)) = j(b - 1)$ blocks. 8.3.1's worked example
is the case $b = 2$: A and B share their first {ex_shared} tokens, $j = {ex_shared} / {ex_p}
= {ex_j}$ blocks of {ex_p} slots, so ${ex_j} \times (2 - 1) = {ex_saved}$ blocks are saved and
the {ex_alloc.allocated_tokens} allocated slots drop to
{ex_alloc.allocated_tokens - ex_saved * ex_p}.
""")
assert held == calc.held_tokens(n, G)            # the companion's 8.1.2 count
for b in given["batches"] + (given["general_batch"],):   # and its 8.3.1 block count
    got = saved_blocks.get(b, saved_general)
    assert got == (calc.kv_blocks_needed(n_s, p) + b * calc.kv_blocks_needed(private, p)
                   - calc.kv_blocks_needed(n_s + j * p, p)
                   - b * calc.kv_blocks_needed(private - j * p, p))
assert ex_saved == ex_j * (2 - 1)
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "c_check", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false}
with grading.checks():
    for b in given["batches"]:
        grading.check("8-3", f"c-saved-b{b}", saved_blocks, key=b, seed=SEED)
    grading.check("8-3", "c-saved-general", saved_general, seed=SEED)

# %% [markdown]
# **In words (not graded).** Explain your count: how many fewer physical blocks does a batch
# of $b$ requests need when $j$ private blocks join the prefix, does it depend on the lengths or
# the model, and where does 8.3.1's two-sequence example fit in it?

# %% [markdown] nbgrader={"grade": true, "grade_id": "c_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# ### BEGIN SOLUTION
# Each of the $b$ requests gives up $j$ private blocks, and the common prefix gains $j$ blocks
# that are stored once: $j(b - 1)$ fewer physical blocks, whatever the lengths or the model;
# only the bytes per block depend on the model. 8.3.1's A and B are the case $b = 2$: their two
# shared blocks are stored once instead of twice. Growing the shared prefix pays off in
# proportion to the batch, while the private tails still grow with every request.
# ### END SOLUTION
