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

# %% nbgrader={"grade": false, "grade_id": "a_answer", "locked": false, "schema_version": 3, "solution": true, "task": false} tags=["raises-exception"]
unused, entries = {}, {}
# YOUR CODE HERE
for p in given["block_sizes"]:
    print(f"p = {p}: unused {unused.get(p)}, entries {entries.get(p)}")

# %% nbgrader={"grade": true, "grade_id": "a_check", "locked": true, "points": 6, "schema_version": 3, "solution": false, "task": false} tags=["raises-exception"]
with grading.checks():
    for p in given["block_sizes"]:
        grading.check("8-3", f"a-p{p}-unused", unused, key=p, seed=SEED)
        grading.check("8-3", f"a-p{p}-entries", entries, key=p, seed=SEED)

# %% [markdown]
# **In words (not graded).** As the block size grows, what happens to the unused tail slots and
# to the block-table entries, what bounds the waste per sequence, and what does a small block
# cost instead?

# %% [markdown] nbgrader={"grade": true, "grade_id": "a_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# YOUR ANSWER HERE

# %% [markdown]
# ## (b) KV of a batch of long requests, independent and shared, and how many fit
#
# Fill `independent_mib[b]` and `shared_mib[b]` for each batch size, and set `fit_independent`
# and `fit_shared` to the most finished requests the KV pool holds each way.

# %% nbgrader={"grade": false, "grade_id": "b_answer", "locked": false, "schema_version": 3, "solution": true, "task": false} tags=["raises-exception"]
independent_mib, shared_mib, fit_independent, fit_shared = {}, {}, None, None
# YOUR CODE HERE

# %% nbgrader={"grade": true, "grade_id": "b_check", "locked": true, "points": 8, "schema_version": 3, "solution": false, "task": false} tags=["raises-exception"]
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
# YOUR ANSWER HERE

# %% [markdown]
# ## (c) More blocks in the common prefix
#
# Fill `saved_blocks[b]` for each batch size, and set `saved_general` for the larger batch.

# %% nbgrader={"grade": false, "grade_id": "c_answer", "locked": false, "schema_version": 3, "solution": true, "task": false} tags=["raises-exception"]
saved_blocks, saved_general = {}, None
# YOUR CODE HERE

# %% nbgrader={"grade": true, "grade_id": "c_check", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false} tags=["raises-exception"]
with grading.checks():
    for b in given["batches"]:
        grading.check("8-3", f"c-saved-b{b}", saved_blocks, key=b, seed=SEED)
    grading.check("8-3", "c-saved-general", saved_general, seed=SEED)

# %% [markdown]
# **In words (not graded).** Explain your count: how many fewer physical blocks does a batch
# of $b$ requests need when $j$ private blocks join the prefix, does it depend on the lengths or
# the model, and where does 8.3.1's two-sequence example fit in it?

# %% [markdown] nbgrader={"grade": true, "grade_id": "c_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# YOUR ANSWER HERE
