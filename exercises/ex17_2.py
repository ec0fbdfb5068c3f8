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
# # Exercise 17-2 · How many sequences can the card hold at once?
#
# *Calculation, 17 §4 (the 70B on four GPUs and the 8B on one; the companion's 17.4 notebook
# does the same arithmetic).* On a card of capacity $C$ bytes, the KV cache $M_{KV}$ gets what
# the resident weights ($M_w$ bytes, every stored weight; not $D_w$, the bytes a decode step
# streams) and a runtime reserve $M_u$ per GPU (activations, workspace, the engine itself)
# leave free. The weights take 2 bytes per parameter (BF16), and each token of
# context keeps $k$ bytes of BF16 KV, built from the model's shape as in Exercise 17-1. A model
# too big for one card is split with tensor parallelism (TP) over $g$ GPUs: each GPU holds
# $1/g$ of every layer's weights and computes $1/g$ of its attention heads (17 §4, 17 §7).
# Work out what that split means for each GPU's free memory, for the KV heads each GPU keeps,
# and for how many sequences the group holds at a context of $L$ tokens (the hints below the
# questions help if you are stuck).
#
# 1. **(a)** For the small model on one card: the KV space left, in GB, and **(b)** how many
#    whole sequences of the given context fit.
# 2. **(c)** The large model's weights as a multiple of one card's memory, $M_w / C$ (a plain
#    ratio).
# 3. **(d)** With the large model at TP = $g$: the KV space per GPU and **(e)** of the whole
#    group, in GB; **(f)** the KV heads each GPU holds; **(g)** how many whole sequences of the
#    given context the group holds.
#
# **Precision and units.** Give (a), (c), (d) and (e) to at least three significant figures
# (the check allows 0.5%), and round only the final answer, not the steps. (f) is a whole number
# of heads (the check allows 0.1%), and (b) and (g) count whole sequences and must be exact.
# Sizes are decimal: 1 GB = 10⁹ bytes. Each section below also asks a short written question,
# answered in the cell under its check.
#
# Your given data come from `grading.params("17-2", SEED)`. Seed 0 is the chapter's own data
# (H100 SXM, the 8B and 70B shapes, TP = 4); on a course hub
# you get a seed of your own, from your user name.
#
# <details><summary>Hints</summary>
#
# - One card ($g = 1$): the cache space is what is left, $M_{KV} = C - M_w - M_u$, with
#   $M_w = 2N$ for $N$ parameters. A sequence of $L$ tokens holds $L\,k$ bytes, and it fits
#   whole or not at all: round the number of sequences down.
# - TP: the reserve is paid on every GPU, the weights only once in all. A query head reads only
#   the K/V pair of its own group, so ask where each group's KV must live; 17 §4 works the 70B
#   case through.
# - For (g), ask what share of one sequence's KV a single GPU stores, and count against the
#   space that holds the whole sequence.
#
# </details>

# %% nbgrader={"grade": false, "grade_id": "given", "locked": true, "schema_version": 3, "solution": false, "task": false}
from companion import calc, grading, units

SEED = grading.student_seed()
given = grading.params("17-2", SEED)
hw, small, big, g = given["hardware"], given["small_model"], given["big_model"], given["tp"]
L = given["context_tokens"]
print(f"card: {hw.name}, C = {hw.mem_bytes / units.GB:g} GB of HBM; reserve "
      f"M_u = {given['reserve_bytes'] / units.GB:g} GB per GPU")
for label, m in (("small", small), ("large", big)):
    print(f"{label} model: {m.name}: N = {m.n_params:.3g} params, n_layers = {m.n_layers}, "
          f"n_kv = {m.n_kv_heads} KV heads, d_head = {m.head_dim}")
print(f"context L = {L:,} tokens; the large model runs at TP = g = {g}")

# %% [markdown]
# ## (a), (b) The small model on one card
#
# Set `small_free_gb` in GB and `small_seqs` (whole sequences). You may use
# `calc.kv_bytes_per_token(model)` to check your $k$.
#
# **Then explain**, in two or three sentences in the cell under the check: which quantities set
# (b), and what happens to it if each sequence's KV is halved (an FP8 cache, or half the
# context)? A good answer says which inputs set the KV space and which set one sequence's bytes,
# whether the count exactly doubles and why, and what the larger count buys on the memory roof
# of 17 §2.

# %% nbgrader={"grade": false, "grade_id": "ab_answer", "locked": false, "schema_version": 3, "solution": true, "task": false} tags=["raises-exception"]
small_free_gb = small_seqs = None
# YOUR CODE HERE

# %% nbgrader={"grade": true, "grade_id": "ab_check", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false} tags=["raises-exception"]
with grading.checks():
    grading.check("17-2", "a-small-free", small_free_gb, seed=SEED)
    grading.check("17-2", "b-small-seqs", small_seqs, seed=SEED)

# %% [markdown] nbgrader={"grade": true, "grade_id": "ab_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# YOUR ANSWER HERE

# %% [markdown]
# ## (c)-(g) The large model, sharded
#
# Set `ratio` (a plain number), `free_per_gpu_gb` and `free_total_gb` in GB,
# `kv_heads_per_gpu` (heads) and `big_seqs` (whole sequences).
#
# **Then explain**, in three or four sentences in the cell under the check: what does (c) say
# about why the large model runs tensor-parallel at all, and why does (g) count sequences
# against the whole group's space (e) rather than one GPU's (d)? A good answer says what the
# weights leave of one card, what share of every sequence's KV one GPU stores and why, and
# what dividing (d) by one whole sequence's bytes would get wrong.

# %% nbgrader={"grade": false, "grade_id": "cg_answer", "locked": false, "schema_version": 3, "solution": true, "task": false} tags=["raises-exception"]
ratio = free_per_gpu_gb = free_total_gb = kv_heads_per_gpu = big_seqs = None
# YOUR CODE HERE

# %% nbgrader={"grade": true, "grade_id": "cg_check", "locked": true, "points": 6, "schema_version": 3, "solution": false, "task": false} tags=["raises-exception"]
with grading.checks():
    grading.check("17-2", "c-big-ratio", ratio, seed=SEED)
    grading.check("17-2", "d-big-free-gpu", free_per_gpu_gb, seed=SEED)
    grading.check("17-2", "e-big-free-total", free_total_gb, seed=SEED)
    grading.check("17-2", "f-big-kv-heads", kv_heads_per_gpu, seed=SEED)
    grading.check("17-2", "g-big-seqs", big_seqs, seed=SEED)

# %% [markdown] nbgrader={"grade": true, "grade_id": "cg_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# YOUR ANSWER HERE
