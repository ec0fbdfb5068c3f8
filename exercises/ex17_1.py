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
# *Calculation, 17 §4 (the size formula and the GQA/MHA comparison; the companion rebuilds
# both in the 17.4 notebook).* Every layer runs its own attention, and for every token of
# context it keeps one key vector and one value vector per KV head, each $d_\text{head}$ values
# wide. Under grouped-query attention (GQA) a group of query heads reads the same K/V pair, so
# the model has fewer KV heads $n_\text{kv}$ than query heads $n_q$; plain multi-head attention
# (MHA) would keep one K/V pair per query head ($n_\text{kv} = n_q$). Write $k$ for the KV
# bytes one token of context costs, $L$ for the context in tokens and $M_{KV}$ for the cache
# space. Build $k$ from the model's shape yourself (the hints below give the formulas if you
# are stuck).
#
# 1. **(a)** The KV bytes per token $k$ of the model below, in BF16 (2 bytes per value), in
#    bytes.
# 2. **(b)** The KV of one sequence at the given context, in GB.
# 3. **(c)** How many times larger the cache would be if the same model used MHA (a plain
#    ratio); **(d)** the MHA size of one such sequence, in GB.
# 4. **(e)** How many whole sequences of that context fit in the given cache space with the
#    model's own heads, and **(f)** how many under MHA?
# 5. **(g)** The KV bytes per token if the cache is stored in FP8 (1 byte per value), in bytes.
#
# **Precision and units.** (a), (c) and (g) come out as whole numbers: give them exactly (the
# check allows 0.1%). Give (b) and (d) in GB to at least three significant figures (the check
# allows 0.5%), and round only the final answer, not the steps. (e) and (f) count whole
# sequences and must be exact. Sizes are decimal: 1 GB = 10⁹ bytes. Chapter 17 labels contexts
# in thousands: its "8K" is 8,000 tokens here. Each section below also asks a short written
# question, answered in the cell under its check.
#
# Your given data come from `grading.params("17-1", SEED)`. Seed 0 is the chapter's own data
# (the 70B shape); on a course hub you get a seed of your own, from your user name.
#
# <details><summary>Hints: the formulas</summary>
#
# - One token costs a K and a V vector per KV head per layer, each value in its bytes:
#   $k = 2 \cdot n_\text{layers} \cdot n_\text{kv} \cdot d_\text{head} \cdot
#   \text{bytes per value}$; a sequence of $L$ tokens costs $L\,k$.
# - A sequence either fits whole or not at all: the cache holds
#   $\lfloor M_{KV} / (L\,k) \rfloor$ sequences.
#
# </details>

# %% nbgrader={"grade": false, "grade_id": "given", "locked": true, "schema_version": 3, "solution": false, "task": false}
from companion import grading, units

SEED = grading.student_seed()
given = grading.params("17-1", SEED)
L = given["context_tokens"]
print(f"model: {given['model'].name}")
print(f"n_layers = {given['n_layers']} layers, n_q = {given['n_query_heads']} query heads, "
      f"n_kv = {given['n_kv_heads']} KV heads, d_head = {given['head_dim']}, "
      f"{given['bytes_per_value']} bytes per value")
print(f"context {given['context_label']}: L = {L:,} tokens; cache space "
      f"M_KV = {given['cache_bytes'] / units.GB:g} GB")

# %% [markdown]
# ## (a) Bytes per token
#
# Set `kv_per_token` in bytes.

# %% nbgrader={"grade": false, "grade_id": "a_answer", "locked": false, "schema_version": 3, "solution": true, "task": false} tags=["raises-exception"]
kv_per_token = None
# YOUR CODE HERE

# %% nbgrader={"grade": true, "grade_id": "a_check", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false} tags=["raises-exception"]
with grading.checks():
    grading.check("17-1", "a-per-token", kv_per_token, seed=SEED)

# %% [markdown]
# ## (b) One sequence, (c) the GQA factor, (d) the same sequence under MHA
#
# Set `seq_gb` and `mha_seq_gb` in GB and `mha_factor` as a plain number.
#
# **Then explain**, in two to four sentences in the cell under the check: why is the head count
# in $k$ the KV heads $n_\text{kv}$ and not the query heads $n_q$, and what does using $n_q$ by
# mistake do to (a) and (b)? A good answer says what one KV head stores, which heads share it
# under GQA, and by how much the slip inflates the sizes, in terms of (c).

# %% nbgrader={"grade": false, "grade_id": "bcd_answer", "locked": false, "schema_version": 3, "solution": true, "task": false} tags=["raises-exception"]
seq_gb = mha_factor = mha_seq_gb = None
# YOUR CODE HERE

# %% nbgrader={"grade": true, "grade_id": "bcd_check", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false} tags=["raises-exception"]
with grading.checks():
    grading.check("17-1", "b-per-seq", seq_gb, seed=SEED)
    grading.check("17-1", "c-factor", mha_factor, seed=SEED)
    grading.check("17-1", "d-mha-seq", mha_seq_gb, seed=SEED)

# %% [markdown] nbgrader={"grade": true, "grade_id": "bcd_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# YOUR ANSWER HERE

# %% [markdown]
# ## (e), (f) How many sequences fit?
#
# Set `fit_own` and `fit_mha` (whole sequences).
#
# **Then explain**, in two or three sentences in the cell under the check: why is (e) counted
# directly rather than as (c) times (f), and how can the two differ? A good answer names the
# rounding in each count and says in which direction multiplying (f) by (c) errs.

# %% nbgrader={"grade": false, "grade_id": "ef_answer", "locked": false, "schema_version": 3, "solution": true, "task": false} tags=["raises-exception"]
fit_own = fit_mha = None
# YOUR CODE HERE

# %% nbgrader={"grade": true, "grade_id": "ef_check", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false} tags=["raises-exception"]
with grading.checks():
    grading.check("17-1", "e-fit-own", fit_own, seed=SEED)
    grading.check("17-1", "f-fit-mha", fit_mha, seed=SEED)

# %% [markdown] nbgrader={"grade": true, "grade_id": "ef_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# YOUR ANSWER HERE

# %% [markdown]
# ## (g) An FP8 KV cache
#
# Set `kv_per_token_fp8` in bytes.
#
# **Then explain**, in two or three sentences in the cell under the check: how does the FP8
# saving combine with GQA's, and how does storing the cache in FP8 differ from GQA as a
# decision? A good answer says how the two factors combine, who takes each decision and when,
# and what FP8 has to be checked for.

# %% nbgrader={"grade": false, "grade_id": "g_answer", "locked": false, "schema_version": 3, "solution": true, "task": false} tags=["raises-exception"]
kv_per_token_fp8 = None
# YOUR CODE HERE

# %% nbgrader={"grade": true, "grade_id": "g_check", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false} tags=["raises-exception"]
with grading.checks():
    grading.check("17-1", "g-fp8", kv_per_token_fp8, seed=SEED)

# %% [markdown] nbgrader={"grade": true, "grade_id": "g_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# YOUR ANSWER HERE
