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
# writes the same formula).* On cards of capacity $C$ bytes, the KV cache gets what the weights
# ($D_w$ bytes) and a runtime reserve $M_u$ per GPU (activations, workspace, the engine itself)
# leave free. A model too big for one card is split with tensor parallelism over $g$ GPUs: each
# holds $D_w / g$ of the weights, and the KV heads shard with the attention heads
# ($n_\text{kv} / g$ per GPU), so each GPU stores only its share of every sequence and the KV
# space of all $g$ GPUs together holds the sequences:
#
# $$M_{KV} = g\left(C - \frac{D_w}{g} - M_u\right), \qquad
# \text{max concurrent} = \left\lfloor \frac{M_{KV}}{L\,k} \right\rfloor ,$$
#
# with $g = 1$ for a model on one card. The weights take 2 bytes per parameter, $D_w = 2N$ for
# $N$ parameters, and a token of context keeps
# $k = 2 \cdot n_\text{layers} \cdot n_\text{kv} \cdot d_\text{head} \cdot 2$ bytes of KV (BF16,
# as in Exercise 17-1).
#
# 1. **(a)** For the small model on one card: the KV space left, in GB, and **(b)** how many
#    sequences of the given context fit.
# 2. **(c)** The large model's weights as a multiple of one card's memory, $D_w / C$.
# 3. **(d)** With the large model at TP = $g$: the KV space per GPU and **(e)** of the whole
#    group, in GB; **(f)** the KV heads each GPU holds; **(g)** the sequences that fit.
#
# Sizes are decimal (1 GB = 10⁹ B).
# Your given data come from `grading.params("17-2", SEED)`. Seed 0 is the chapter's own data
# (H100 SXM, the 8B and 70B shapes, TP = 4); on a course hub
# you get a seed of your own, from your user name.

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
# Set `small_free_gb` and `small_seqs`. You may use `calc.kv_bytes_per_token(model)` to
# check your $k$.

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
# Set `ratio`, `free_per_gpu_gb`, `free_total_gb`, `kv_heads_per_gpu` and `big_seqs`.

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
