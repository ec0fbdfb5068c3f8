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
#    size, list each sequence's unused tail slots, and give their sum and the total number of
#    block-table entries.
# 2. **(b)** For the long request below (16-token blocks, KV reserved for what a request holds
#    once generation ends), how much KV do 8, 16 and 32 requests need, stored independently and
#    with the common prefix stored once? (MiB)
# 3. **(c)** Keep each request's total length fixed but move the number of full private blocks
#    given below (one in the chapter) into the common prefix. How many fewer physical blocks do
#    8, 16 and 32 requests need?
#
# If a seed would give an unfair variant (a tie, an empty list, a
# zero count, an answer on a rounding edge), `grading.params` moves to the next seed and prints
# why.
#
# Your given data come from `grading.params("8-3", SEED)`. Seed 0 is the chapter's own data;
# your instructor may give you another seed.

# %% nbgrader={"grade": false, "grade_id": "given", "locked": true, "schema_version": 3, "solution": false, "task": false}
from companion import calc, grading, units

SEED = 0
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
# Fill `tails[p]` with the four sequences' unused tail slots, and `unused[p]`, `entries[p]`
# with their sums.

# %% nbgrader={"grade": false, "grade_id": "a_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
tails, unused, entries = {}, {}, {}
### BEGIN SOLUTION
for p in given["block_sizes"]:
    tails[p] = [calc.kv_tail_waste_tokens(L, p) for L in lengths]
    unused[p] = sum(tails[p])
    entries[p] = sum(calc.kv_blocks_needed(L, p) for L in lengths)
### END SOLUTION
for p in given["block_sizes"]:
    print(f"p = {p}: tails {tails.get(p)}, unused {unused.get(p)}, entries {entries.get(p)}")

# %% nbgrader={"grade": true, "grade_id": "a_check", "locked": true, "points": 6, "schema_version": 3, "solution": false, "task": false}
with grading.checks():
    for p in given["block_sizes"]:
        grading.check("8-3", f"a-p{p}-unused", unused, key=p, seed=SEED)
        grading.check("8-3", f"a-p{p}-entries", entries, key=p, seed=SEED)

# %% [markdown] nbgrader={"grade": true, "grade_id": "a_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# ### BEGIN SOLUTION
# With 2-token blocks each odd length wastes one slot (4 in all) but the four tables need 23
# entries; with 4-token blocks the waste is 3 + 3 + 3 + 1 = 10 slots in 13 entries (the 52
# slots of 8.3.1's worked example); with 8-token blocks 7 + 3 + 3 + 1 = 14 slots in only 7
# entries. Smaller blocks waste less (at most p - 1 per sequence) but need more table entries
# and more allocations: the trade-off of 8.3.1.
# ### END SOLUTION

# %% [markdown]
# ## (b) KV of a batch of long requests, independent and shared
#
# Fill `independent_mib[b]` and `shared_mib[b]` for each batch size.

# %% nbgrader={"grade": false, "grade_id": "b_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
independent_mib, shared_mib = {}, {}
### BEGIN SOLUTION
model, prompt, out = given["model"], given["prompt_tokens"], given["output_tokens"]
for b in given["batches"]:
    independent_mib[b] = calc.prefix_shared_kv_bytes(model, b, prompt, out) / units.MiB
    shared_mib[b] = calc.prefix_shared_kv_bytes(
        model, b, prompt, out, shared_prefix_tokens=given["shared_prefix_tokens"]) / units.MiB
    print(f"{b:>3} requests: {independent_mib[b]:>8,.0f} MiB independent, "
          f"{shared_mib[b]:>8,.0f} MiB shared")
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "b_check", "locked": true, "points": 6, "schema_version": 3, "solution": false, "task": false}
with grading.checks():
    for b in given["batches"]:
        grading.check("8-3", f"b-indep-b{b}", independent_mib, key=b, seed=SEED)
        grading.check("8-3", f"b-shared-b{b}", shared_mib, key=b, seed=SEED)

# %% [markdown] nbgrader={"grade": true, "grade_id": "b_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# ### BEGIN SOLUTION
# A finished long request holds 8192 + 255 = 8447 tokens, 8448 slots in 16-token blocks,
# 1188 MiB, so b independent requests need 1188 b MiB: 9,504, 19,008 and 38,016 MiB. With the
# 6144-token prefix stored once (864 MiB) each request keeps only 2303 private tokens (2304
# slots, 324 MiB): 864 + 324 b = 3,456, 6,048 and 11,232 MiB. Only the shared layout keeps 16
# or even 32 requests inside a 12 GiB (12,288 MiB) reservation.
# ### END SOLUTION

# %% [markdown]
# ## (c) More blocks in the common prefix
#
# Fill `saved_blocks[b]` for each batch size.

# %% nbgrader={"grade": false, "grade_id": "c_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
saved_blocks = {}
### BEGIN SOLUTION
held = calc.held_tokens(given["prompt_tokens"], given["output_tokens"])
p, prefix = given["block_tokens"], given["shared_prefix_tokens"]


def physical_blocks(batch, shared_tokens):
    # prefix blocks stored once, plus each request's private blocks
    return (calc.kv_blocks_needed(shared_tokens, p)
            + batch * calc.kv_blocks_needed(held - shared_tokens, p))


for b in given["batches"]:
    joined = given["joined_blocks"] * p
    saved_blocks[b] = physical_blocks(b, prefix) - physical_blocks(b, prefix + joined)
print(saved_blocks)
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "c_check", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
with grading.checks():
    for b in given["batches"]:
        grading.check("8-3", f"c-saved-b{b}", saved_blocks, key=b, seed=SEED)

# %% [markdown] nbgrader={"grade": true, "grade_id": "c_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# ### BEGIN SOLUTION
# Each of the b requests gives up k private blocks, and the common prefix gains k blocks that
# are stored once: k (b - 1) fewer physical blocks, whatever the lengths or the model. Growing the shared prefix pays
# off in proportion to the batch, while the private tails still grow with every request.
# ### END SOLUTION
