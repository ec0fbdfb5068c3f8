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
# # Exercise 17-1 · How big is the KV cache of the model you are given?
#
# *Calculation, 17 §4.* Every layer keeps a key and a value vector for every KV head and every
# token it has seen, so one token costs
#
# $$k = 2 \times n_\text{layers} \times n_\text{KV heads} \times d_\text{head} \times
# \text{bytes per value}$$
#
# and a sequence of $L$ tokens costs $L k$. Under grouped-query attention (GQA) a group of query
# heads reads the same K/V pair, so $n_\text{KV heads}$ is smaller than the query-head count; plain
# multi-head attention (MHA) would keep one K/V pair per query head.
#
# 1. **(a)** The KV bytes per token of the model below, in BF16.
# 2. **(b)** The KV of one sequence at the given context, in GB (decimal).
# 3. **(c)** How many times larger the cache would be if the same model used MHA.
#    **(d)** The MHA size of one such sequence, in GB.
# 4. **(e)** How many whole sequences of that context fit in the given cache space with the
#    model's own heads, and **(f)** how many under MHA?
# 5. **(g)** The KV bytes per token if the cache is stored in FP8 (1 byte per value).
#
# Chapter 17 labels contexts in thousands: its "8K" is 8,000 tokens here.
# Your given data come from `grading.params("17-1", SEED)`. Seed 0 is the chapter's own data
# (the 70B shape); your instructor may give you another seed.

# %% nbgrader={"grade": false, "grade_id": "given", "locked": true, "schema_version": 3, "solution": false, "task": false}
from companion import grading, units

SEED = 0
given = grading.params("17-1", SEED)
L = given["context_tokens"]
print(f"model: {given['model'].name}")
print(f"{given['n_layers']} layers, {given['n_query_heads']} query heads, "
      f"{given['n_kv_heads']} KV heads, head dim {given['head_dim']}, "
      f"{given['bytes_per_value']} bytes per value")
print(f"context {given['context_label']} = {L:,} tokens; cache space "
      f"{given['cache_bytes'] / units.GB:g} GB")

# %% [markdown]
# ## (a) Bytes per token
#
# Set `kv_per_token` in bytes.

# %% nbgrader={"grade": false, "grade_id": "a_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
kv_per_token = None
### BEGIN SOLUTION
kv_per_token = (2 * given["n_layers"] * given["n_kv_heads"] * given["head_dim"]
                * given["bytes_per_value"])
print(f"{kv_per_token:,} B = {kv_per_token / units.KiB:g} KiB per token")
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "a_check", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
with grading.checks():
    grading.check("17-1", "a-per-token", kv_per_token, seed=SEED)

# %% [markdown]
# ## (b) One sequence, (c) the GQA factor, (d) the same sequence under MHA
#
# Set `seq_gb`, `mha_factor` and `mha_seq_gb`.

# %% nbgrader={"grade": false, "grade_id": "bcd_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
seq_gb = mha_factor = mha_seq_gb = None
### BEGIN SOLUTION
seq_gb = kv_per_token * L / units.GB
mha_factor = given["n_query_heads"] / given["n_kv_heads"]
mha_seq_gb = seq_gb * mha_factor
print(f"one {given['context_label']} sequence: {seq_gb:.3f} GB; MHA would be {mha_factor:g}x: "
      f"{mha_seq_gb:.2f} GB")
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "bcd_check", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
with grading.checks():
    grading.check("17-1", "b-per-seq", seq_gb, seed=SEED)
    grading.check("17-1", "c-factor", mha_factor, seed=SEED)
    grading.check("17-1", "d-mha-seq", mha_seq_gb, seed=SEED)

# %% [markdown] nbgrader={"grade": true, "grade_id": "bcd_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# ### BEGIN SOLUTION
# For the 70B shape: 2 x 80 x 8 x 128 x 2 = 327,680 B, the chapter's "320 KB" (its KB is
# 1,024 bytes here), and 327,680 x 8,000 = 2.62 GB per 8,000-token sequence. With 64 query
# heads sharing 8 KV heads, MHA would store 8x as much: 21 GB for one long chat. Substituting
# the 64 query heads into the formula is the classic slip the factor (c) makes visible; taking
# "8K" as 8,192 tokens gives 2.68 GB instead.
# ### END SOLUTION

# %% [markdown]
# ## (e), (f) How many sequences fit?
#
# Set `fit_own` and `fit_mha` (whole sequences).

# %% nbgrader={"grade": false, "grade_id": "ef_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
fit_own = fit_mha = None
### BEGIN SOLUTION
fit_own = int(given["cache_bytes"] // (kv_per_token * L))
fit_mha = int(given["cache_bytes"] // (kv_per_token * mha_factor * L))
print(f"{fit_own} sequences with the model's own heads, {fit_mha} under MHA")
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "ef_check", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
with grading.checks():
    grading.check("17-1", "e-fit-own", fit_own, seed=SEED)
    grading.check("17-1", "f-fit-mha", fit_mha, seed=SEED)

# %% [markdown] nbgrader={"grade": true, "grade_id": "ef_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# ### BEGIN SOLUTION
# 80 GB holds floor(80 / 2.62) = 30 sequences of the GQA model but only floor(80 / 20.97) = 3
# under MHA. (The chapter's "twenty-four" multiplies the rounded MHA count by 8; counting
# directly gives 30.) GQA is a capacity decision taken at training time: the serving engineer
# inherits an 8x larger batch before any serving technique runs.
# ### END SOLUTION

# %% [markdown]
# ## (g) An FP8 KV cache
#
# Set `kv_per_token_fp8` in bytes.

# %% nbgrader={"grade": false, "grade_id": "g_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
kv_per_token_fp8 = None
### BEGIN SOLUTION
kv_per_token_fp8 = kv_per_token * given["fp8_bytes_per_value"] / given["bytes_per_value"]
print(f"{kv_per_token_fp8:,.0f} B per token")
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "g_check", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
with grading.checks():
    grading.check("17-1", "g-fp8", kv_per_token_fp8, seed=SEED)

# %% [markdown] nbgrader={"grade": true, "grade_id": "g_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# ### BEGIN SOLUTION
# Halving the bytes per value halves the cache (163,840 B per token for the 70B shape), and it
# stacks with GQA: 16x less than an MHA cache in BF16. Unlike GQA, this one is a serving-time
# choice, with its own accuracy check.
# ### END SOLUTION
