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
#    size, give the unused tail slots of the four sequences summed, and the total number of
#    block-table entries (work out each sequence's tail on the way; only the sums are checked).
# 2. **(b)** For the long request below, how much KV do 8, 16 and 32 requests need, stored
#    independently and with the common prefix stored once? (MiB) Reserve what a request holds
#    once generation ends, its $n$ prompt tokens plus $G - 1$ outputs (8.1.2), in whole blocks of
#    $p = 16$ tokens at $k$ bytes per token slot. Stored independently, each of the $b$ requests
#    keeps all of it; with sharing (8.3.2), the $n_s$ prefix tokens are kept once and each request
#    keeps only its $n + G - 1 - n_s$ private tokens, each part rounded up to whole blocks:
#    $M_{KV} = k\,p\lceil n_s/p\rceil + b\,k\,p\lceil (n + G - 1 - n_s)/p\rceil$.
# 3. **(c)** Keep each request's total length fixed but move the number of full private blocks
#    given below (one in the chapter) into the common prefix. How many fewer physical blocks do
#    8, 16 and 32 requests need? (Physical blocks: the prefix's $B_s$ blocks once, plus each
#    request's $B_p$ private blocks.)
#
# If a seed would give an unfair variant (a tie, an empty list, a
# zero count, an answer on a rounding edge), `grading.params` moves to the next seed and prints
# why.
#
# Your given data come from `grading.params("8-3", SEED)`. Seed 0 is the chapter's own data;
# on a course hub you get a seed of your own, from your user name.

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
print(f"(c): {given['joined_blocks']} private full block(s) join the common prefix")

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

# %% [markdown] nbgrader={"grade": true, "grade_id": "a_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# YOUR ANSWER HERE

# %% [markdown]
# ## (b) KV of a batch of long requests, independent and shared
#
# Fill `independent_mib[b]` and `shared_mib[b]` for each batch size.

# %% nbgrader={"grade": false, "grade_id": "b_answer", "locked": false, "schema_version": 3, "solution": true, "task": false} tags=["raises-exception"]
independent_mib, shared_mib = {}, {}
# YOUR CODE HERE

# %% nbgrader={"grade": true, "grade_id": "b_check", "locked": true, "points": 6, "schema_version": 3, "solution": false, "task": false} tags=["raises-exception"]
with grading.checks():
    for b in given["batches"]:
        grading.check("8-3", f"b-indep-b{b}", independent_mib, key=b, seed=SEED)
        grading.check("8-3", f"b-shared-b{b}", shared_mib, key=b, seed=SEED)

# %% [markdown] nbgrader={"grade": true, "grade_id": "b_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# YOUR ANSWER HERE

# %% [markdown]
# ## (c) More blocks in the common prefix
#
# Fill `saved_blocks[b]` for each batch size.

# %% nbgrader={"grade": false, "grade_id": "c_answer", "locked": false, "schema_version": 3, "solution": true, "task": false} tags=["raises-exception"]
saved_blocks = {}
# YOUR CODE HERE

# %% nbgrader={"grade": true, "grade_id": "c_check", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false} tags=["raises-exception"]
with grading.checks():
    for b in given["batches"]:
        grading.check("8-3", f"c-saved-b{b}", saved_blocks, key=b, seed=SEED)

# %% [markdown] nbgrader={"grade": true, "grade_id": "c_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# YOUR ANSWER HERE
