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

# %% nbgrader={"grade": false, "grade_id": "a_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
kv_per_token = None
### BEGIN SOLUTION
from companion.display import tex
import math

from companion import calc, display


n_layers, n_q, n_kv = given["n_layers"], given["n_query_heads"], given["n_kv_heads"]
d_head, value_bytes = given["head_dim"], given["bytes_per_value"]
kv_per_token = 2 * n_layers * n_kv * d_head * value_bytes
display.md(rf"""
**(a)** Two vectors (K and V) per layer, per KV head, each $d_\text{{head}}$ values of
{value_bytes} bytes:

$$\begin{{aligned}}
k &= 2 \cdot n_\text{{layers}} \cdot n_\text{{kv}} \cdot d_\text{{head}} \cdot
\text{{bytes per value}} = 2 \times {n_layers} \times {n_kv} \times {d_head} \times
{value_bytes} \\
&= {tex(kv_per_token, ',.0f')}\ \text{{B}} = {kv_per_token / units.KiB:g}\ \text{{KiB}}.
\end{{aligned}}$$
""")
# the companion's own 17 §4 formula agrees
assert kv_per_token == calc.kv_bytes_per_token(given["model"], value_bytes)
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "a_check", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
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

# %% nbgrader={"grade": false, "grade_id": "bcd_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
seq_gb = mha_factor = mha_seq_gb = None
### BEGIN SOLUTION
seq_bytes = L * kv_per_token
seq_gb = seq_bytes / units.GB
mha_factor = n_q / n_kv                 # MHA: one K/V pair per query head, n_kv -> n_q
mha_seq_bytes = mha_factor * seq_bytes
mha_seq_gb = mha_seq_bytes / units.GB
display.md(rf"""
**(b)** The cache grows linearly with the context:

$$L\,k = {tex(L, ',.0f')} \times {tex(kv_per_token, ',.0f')}\ \text{{B}} = {tex(seq_bytes, ',.0f')}\ \text{{B}}
= {seq_gb:.3f}\ \text{{GB}}.$$

**(c)** MHA puts $n_q$ in place of $n_\text{{kv}}$ and changes nothing else in $k$, so the
cache grows by

$$\frac{{n_q}}{{n_\text{{kv}}}} = \frac{{{n_q}}}{{{n_kv}}} = {mha_factor:g}.$$

**(d)** One sequence under MHA:

$$\frac{{n_q}}{{n_\text{{kv}}}}\,L\,k = {mha_factor:g} \times {seq_gb:.3f}\ \text{{GB}}
= {mha_seq_gb:.2f}\ \text{{GB}}.$$
""")
# the companion's table of attention variants (17 §4) gives the same sizes
rows = {r["n_kv_heads"]: r for r in calc.attention_variants(
    given["model"], context_tokens=L, cache_bytes=given["cache_bytes"],
    bytes_per_value=value_bytes)}
assert math.isclose(rows[n_kv]["kv_bytes_per_sequence"], seq_bytes, rel_tol=1e-12)
assert math.isclose(rows[n_q]["kv_bytes_per_sequence"], mha_seq_bytes, rel_tol=1e-12)
assert math.isclose(rows[n_kv]["reduction_vs_mha"], mha_factor, rel_tol=1e-12)
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "bcd_check", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
with grading.checks():
    grading.check("17-1", "b-per-seq", seq_gb, seed=SEED)
    grading.check("17-1", "c-factor", mha_factor, seed=SEED)
    grading.check("17-1", "d-mha-seq", mha_seq_gb, seed=SEED)

# %% [markdown] nbgrader={"grade": true, "grade_id": "bcd_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# ### BEGIN SOLUTION
# A KV head is what the cache stores: for every token, in every layer, one K vector and one V
# vector of $d_\text{head}$ values. Under GQA the $n_q / n_\text{kv}$ query heads of a group all
# read their group's single pair, so a layer keeps $n_\text{kv}$ pairs per token, not $n_q$.
# Counting the query heads instead computes the cache of the same model under MHA: (a) and (b)
# come out larger by exactly the factor of (c), and (b) becomes (d).
#
# *Look for:* (1) one K/V pair per KV head, per token and layer; (2) the query heads of a group
# share it; (3) the slip multiplies the sizes by $n_q / n_\text{kv}$, the factor of (c).
# ### END SOLUTION

# %% [markdown]
# ## (e), (f) How many sequences fit?
#
# Set `fit_own` and `fit_mha` (whole sequences).
#
# **Then explain**, in two or three sentences in the cell under the check: why is (e) counted
# directly rather than as (c) times (f), and how can the two differ? A good answer names the
# rounding in each count and says in which direction multiplying (f) by (c) errs.

# %% nbgrader={"grade": false, "grade_id": "ef_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
fit_own = fit_mha = None
### BEGIN SOLUTION
cache = given["cache_bytes"]
fit_own = int(cache // seq_bytes)
fit_mha = int(cache // mha_seq_bytes)
display.md(rf"""
**(e), (f)** A sequence either fits or it does not, so each count is a floor:

$$\left\lfloor \frac{{M_{{KV}}}}{{L\,k}} \right\rfloor
= \left\lfloor \frac{{{cache / units.GB:g}\ \text{{GB}}}}{{{seq_gb:.3f}\ \text{{GB}}}} \right\rfloor
= \lfloor {cache / seq_bytes:.2f} \rfloor = {fit_own}\ \text{{sequences (own heads)}},$$

$$\left\lfloor \frac{{M_{{KV}}}}{{(n_q/n_\text{{kv}})\,L\,k}} \right\rfloor
= \left\lfloor \frac{{{cache / units.GB:g}\ \text{{GB}}}}{{{mha_seq_gb:.2f}\ \text{{GB}}}} \right\rfloor
= \lfloor {cache / mha_seq_bytes:.2f} \rfloor = {fit_mha}\ \text{{sequences (MHA)}}.$$

Scaling the MHA count by the factor instead, ${mha_factor:g} \times {fit_mha} =
{mha_factor * fit_mha:g}$, would carry the MHA floor's rounding into the answer.
""")
assert (fit_own, fit_mha) == (rows[n_kv]["sequences"], rows[n_q]["sequences"])
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "ef_check", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
with grading.checks():
    grading.check("17-1", "e-fit-own", fit_own, seed=SEED)
    grading.check("17-1", "f-fit-mha", fit_mha, seed=SEED)

# %% [markdown] nbgrader={"grade": true, "grade_id": "ef_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# ### BEGIN SOLUTION
# Each count divides the cache space by one sequence's bytes and rounds down, because a
# sequence fits whole or not at all. Multiplying (f) by the factor of (c) scales a number that
# was already rounded down, so the MHA count's discarded remainder is multiplied too: the
# product is a whole number no larger than $M_{KV} / (L\,k)$, so it never exceeds (e) and
# usually falls short of it (by up to (c) minus one sequences). The direct count (e) is right.
# At seed 0 this is why 17 §4's GQA count, which scales the MHA count, is lower than the one
# above.
#
# *Look for:* (1) both counts are $\lfloor M_{KV} / (\text{one sequence's bytes}) \rfloor$;
# (2) scaling (f) carries its rounding along; (3) so it undercounts, never overcounts.
# ### END SOLUTION

# %% [markdown]
# ## (g) An FP8 KV cache
#
# Set `kv_per_token_fp8` in bytes.
#
# **Then explain**, in two or three sentences in the cell under the check: how does the FP8
# saving combine with GQA's, and how does storing the cache in FP8 differ from GQA as a
# decision? A good answer says how the two factors combine, who takes each decision and when,
# and what FP8 has to be checked for.

# %% nbgrader={"grade": false, "grade_id": "g_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
kv_per_token_fp8 = None
### BEGIN SOLUTION
fp8_bytes = given["fp8_bytes_per_value"]
kv_per_token_fp8 = 2 * n_layers * n_kv * d_head * fp8_bytes
display.md(rf"""
**(g)** Only the last factor of $k$ changes:

$$k_\text{{FP8}} = 2 \times {n_layers} \times {n_kv} \times {d_head} \times {fp8_bytes}
= {tex(kv_per_token_fp8, ',.0f')}\ \text{{B}} = \frac{{{fp8_bytes}}}{{{value_bytes}}}\,k.$$

Against an MHA cache in BF16 that is ${mha_factor:g} \times {value_bytes // fp8_bytes} =
{mha_factor * value_bytes / fp8_bytes:g}$ times smaller: the two savings multiply.
""")
assert kv_per_token_fp8 == calc.kv_bytes_per_token(given["model"], fp8_bytes)
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "g_check", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
with grading.checks():
    grading.check("17-1", "g-fp8", kv_per_token_fp8, seed=SEED)

# %% [markdown] nbgrader={"grade": true, "grade_id": "g_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# ### BEGIN SOLUTION
# One byte per value instead of two halves $k$ and every size derived from it, and the saving
# stacks with GQA's: the two factors multiply (shown above). GQA is fixed when the model is
# trained, so the serving engineer inherits it; FP8 storage is a choice made at serving time,
# and since it rounds every cached value it needs its own accuracy check on the evaluations.
#
# *Look for:* (1) the factors multiply; (2) GQA at training time, FP8 at serving time;
# (3) FP8 must be checked for accuracy.
# ### END SOLUTION
