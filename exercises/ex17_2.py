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
# *Calculation, 17 §4.* The KV cache gets whatever HBM the weights and a runtime reserve
# (activations, workspace, the engine itself) leave free:
#
# $$\text{free for KV} = \text{HBM} - \text{weights} - \text{reserve},\qquad
# \text{max concurrent} = \left\lfloor \frac{\text{free for KV}}{L\,k} \right\rfloor .$$
#
# A model too big for one card is split with tensor parallelism over $p$ GPUs: each holds
# weights / $p$, and the KV heads shard along with the attention heads, so the KV space of all
# $p$ GPUs together holds the sequences.
#
# 1. **(a)** For the small model on one card: the KV space left, in GB, and **(b)** how many
#    sequences of the given context fit.
# 2. **(c)** The large model's weights as a multiple of one card's memory.
# 3. **(d)** With the large model at TP = $p$: the KV space per GPU and **(e)** of the whole
#    group, in GB; **(f)** the KV heads each GPU holds; **(g)** the sequences that fit.
#
# Sizes are decimal (1 GB = 10⁹ B); weights are 2 bytes per parameter.
# Your given data come from `grading.params("17-2", SEED)`. Seed 0 is the chapter's own data
# (H100 SXM, the 8B and 70B shapes, TP = 4); your instructor may give you another seed.

# %% nbgrader={"grade": false, "grade_id": "given", "locked": true, "schema_version": 3, "solution": false, "task": false}
from companion import calc, grading, units

SEED = 0
given = grading.params("17-2", SEED)
hw, small, big, p = given["hardware"], given["small_model"], given["big_model"], given["tp"]
L = given["context_tokens"]
print(f"card: {hw.name}, {hw.mem_bytes / units.GB:g} GB of HBM; reserve "
      f"{given['reserve_bytes'] / units.GB:g} GB per GPU")
for label, m in (("small", small), ("large", big)):
    print(f"{label} model: {m.name}: {m.n_params:.3g} params, {m.n_layers} layers, "
          f"{m.n_kv_heads} KV heads, head dim {m.head_dim}")
print(f"context {L:,} tokens; the large model runs at TP = {p}")

# %% [markdown]
# ## (a), (b) The small model on one card
#
# Set `small_free_gb` and `small_seqs`. You may use `calc.kv_bytes_per_token(model)` for $k$.

# %% nbgrader={"grade": false, "grade_id": "ab_answer", "locked": false, "schema_version": 3, "solution": true, "task": false} tags=["raises-exception"]
small_free_gb = small_seqs = None
# YOUR CODE HERE
raise NotImplementedError()

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
raise NotImplementedError()

# %% nbgrader={"grade": true, "grade_id": "cg_check", "locked": true, "points": 6, "schema_version": 3, "solution": false, "task": false} tags=["raises-exception"]
with grading.checks():
    grading.check("17-2", "c-big-ratio", ratio, seed=SEED)
    grading.check("17-2", "d-big-free-gpu", free_per_gpu_gb, seed=SEED)
    grading.check("17-2", "e-big-free-total", free_total_gb, seed=SEED)
    grading.check("17-2", "f-big-kv-heads", kv_heads_per_gpu, seed=SEED)
    grading.check("17-2", "g-big-seqs", big_seqs, seed=SEED)

# %% [markdown] nbgrader={"grade": true, "grade_id": "cg_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# YOUR ANSWER HERE
