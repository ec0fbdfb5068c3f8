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
# # Exercise 8-1 · How does the read volume change as the batch grows?
#
# *Calculation, section 8.2.1.* In one decode round every request in the batch shares a single
# read of the matrix weights $D_w$, but each request still reads its own context's KV,
# $L k$ bytes ($k$: KV bytes per token, summed over layers; 8.1.2). Per output token the round
# therefore reads
#
# $$d(b, L) = \frac{D_w}{b} + L k .$$
#
# 1. **(a)** Compute the read volume per output token, in GiB ($2^{30}$ bytes), for the short
#    and the long context at batch 1, 4, 16 and 64.
# 2. **(b)** For each context, find the smallest whole batch $b_\text{KV}$ at which the KV read
#    volume reaches or exceeds the amortised weight read ($L k \ge D_w / b$).
# 3. **(c)** With the KV budget, block size $p$ and output length $G$ given below, how many
#    independent requests fit, each reserving the KV it holds at the end of generation (8.1.2)?
# 4. **(d)** For each context, take the batch of (c), the most requests that fit, and find what
#    fraction of $d(b, L)$ is the weight read $D_w / b$ (a number between 0 and 1). Does the
#    capacity stop the batch before it reaches $b_\text{KV}$?
#
# Give GiB values and fractions to at least 3 significant figures (they are checked to within
# 0.5%); batches and request counts are whole numbers. Key `b_kv`, `fits`, `weight_fraction`
# and `stops` by context length, `short` or `long_` (the variables of the given-data cell).
# $d(b, L)$ counts bytes, not time: in Experiment 8-1 a round's time barely follows its bytes
# (8.2.1), because most of a small batch's round is fixed overhead.
#
# Your given data come from `grading.params("8-1", SEED)`. Seed 0 is the chapter's own data;
# on a course hub you get a seed of your own, from your user name. Other seeds may give a model
# too large for one card (the 70B shape's weights alone exceed the chapter's 96 GB card): take
# it as served by an instance of several cards whose KV budget is the one given; no part
# depends on the card.

# %% nbgrader={"grade": false, "grade_id": "given", "locked": true, "schema_version": 3, "solution": false, "task": false}
from companion import calc, grading, units

SEED = grading.student_seed()
given = grading.params("8-1", SEED)
short, long_ = given["contexts"]
print(f"model: {given['model'].name}")
print(f"D_w = {given['weight_bytes']:,.0f} B, k = {given['kv_bytes_per_token'] / units.KiB:g} KiB")
print(f"contexts: short {short} tokens, long {long_} tokens; batches {given['batches']}")
print(f"KV budget {given['kv_budget_bytes'] / units.GiB:g} GiB, p = {given['block_tokens']} tokens "
      f"per block, G = {given['output_tokens']} output tokens")

# %% [markdown]
# ## (a) Read volume per output token
#
# Fill the dictionary `reads` with the eight values in GiB, keyed `(context, batch)`, for
# example `reads[(short, 1)]`. Then, in the cell under the check: how does batching change the
# read per output token for each context, in GiB saved and as a ratio?

# %% nbgrader={"grade": false, "grade_id": "a_answer", "locked": false, "schema_version": 3, "solution": true, "task": false} tags=["raises-exception"]
reads = {}
# YOUR CODE HERE

# %% nbgrader={"grade": true, "grade_id": "a_check", "locked": true, "points": 8, "schema_version": 3, "solution": false, "task": false} tags=["raises-exception"]
with grading.checks():
    for L, name in ((short, "short"), (long_, "long")):
        for b in given["batches"]:
            grading.check("8-1", f"a-{name}-b{b}", reads, key=(L, b), seed=SEED)

# %% [markdown] nbgrader={"grade": true, "grade_id": "a_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# YOUR ANSWER HERE

# %% [markdown]
# ## (b) The batch where KV reads catch up, and (c) the capacity

# %% nbgrader={"grade": false, "grade_id": "bc_answer", "locked": false, "schema_version": 3, "solution": true, "task": false} tags=["raises-exception"]
b_kv = {}
fits = {}
# YOUR CODE HERE

# %% nbgrader={"grade": true, "grade_id": "bc_check", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false} tags=["raises-exception"]
with grading.checks():
    for L, name in ((short, "short"), (long_, "long")):
        grading.check("8-1", f"b-{name}", b_kv, key=L, seed=SEED)
        grading.check("8-1", f"c-{name}", fits, key=L, seed=SEED)

# %% [markdown]
# ## (d) Which limit binds first?
#
# Fill `weight_fraction` with $\dfrac{D_w / b}{d(b, L)}$ at $b$ = your answer to (c), and
# `stops` with `True` or `False`: does the capacity of (c) stop the batch below $b_\text{KV}$?
# Both keyed by context. Then, in the cell under the check: what does the fraction say about
# what a larger batch could still save?

# %% nbgrader={"grade": false, "grade_id": "d_answer", "locked": false, "schema_version": 3, "solution": true, "task": false} tags=["raises-exception"]
weight_fraction = {}
stops = {}
# YOUR CODE HERE

# %% nbgrader={"grade": true, "grade_id": "d_check", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false} tags=["raises-exception"]
with grading.checks():
    for L, name in ((short, "short"), (long_, "long")):
        grading.check("8-1", f"d-{name}", weight_fraction, key=L, seed=SEED)
        grading.check("8-1", f"d-stops-{name}", stops, key=L, seed=SEED)

# %% [markdown] nbgrader={"grade": true, "grade_id": "d_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# YOUR ANSWER HERE
