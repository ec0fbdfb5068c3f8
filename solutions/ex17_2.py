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

# %% nbgrader={"grade": false, "grade_id": "ab_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
small_free_gb = small_seqs = None
### BEGIN SOLUTION
from companion.display import tex
import math

from companion import display


def kv_per_token(m):
    """k = 2 n_layers n_kv d_head x 2 bytes (17 §4)."""
    return 2 * m.n_layers * m.n_kv_heads * m.head_dim * 2


C, reserve = hw.mem_bytes, given["reserve_bytes"]
small_weights = 2 * small.n_params
small_free = C - small_weights - reserve
small_free_gb = small_free / units.GB
k_small = kv_per_token(small)
small_seq = L * k_small
small_seqs = int(small_free // small_seq)
display.md(rf"""
**(a)** The weights first, then what the weights and the reserve leave of the card:

$$M_w = 2N = 2 \times {small.n_params / 1e9:g} \times 10^{{9}}\ \text{{B}}
= {small_weights / units.GB:g}\ \text{{GB}},$$

$$M_{{KV}} = C - M_w - M_u = {C / units.GB:g} - {small_weights / units.GB:g}
- {reserve / units.GB:g} = {small_free_gb:.2f}\ \text{{GB}}.$$

**(b)** One sequence's KV, then the floor:

$$k = 2 \times {small.n_layers} \times {small.n_kv_heads} \times {small.head_dim} \times 2
= {tex(k_small, ',.0f')}\ \text{{B}}, \qquad
L\,k = {tex(L, ',.0f')} \times {tex(k_small, ',.0f')}\ \text{{B}} = {small_seq / units.GB:.3f}\ \text{{GB}},$$

$$\left\lfloor \frac{{M_{{KV}}}}{{L\,k}} \right\rfloor
= \left\lfloor \frac{{{small_free_gb:.2f}}}{{{small_seq / units.GB:.3f}}} \right\rfloor
= \lfloor {small_free / small_seq:.2f} \rfloor = {small_seqs}\ \text{{sequences}}.$$
""")
# the companion's own 17 §4 capacity formula agrees
cap_small = calc.tp_kv_capacity(small, hw, tp=1, context_tokens=L, reserve_bytes=reserve)
assert k_small == calc.kv_bytes_per_token(small)
assert math.isclose(cap_small["free_kv_bytes"], small_free, rel_tol=1e-12)
assert cap_small["max_sequences"] == small_seqs
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "ab_check", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
with grading.checks():
    grading.check("17-2", "a-small-free", small_free_gb, seed=SEED)
    grading.check("17-2", "b-small-seqs", small_seqs, seed=SEED)

# %% [markdown] nbgrader={"grade": true, "grade_id": "ab_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# ### BEGIN SOLUTION
# (b) is the KV space over one sequence's KV, rounded down: the card's memory, the weights and
# the reserve set the space (a), while the model's shape ($n_\text{layers}$, $n_\text{kv}$,
# $d_\text{head}$), the bytes per value and the context set one sequence's $L\,k$. Halving
# $L\,k$ doubles the quotient, so the count becomes twice the old one or one more (the floor
# of twice a number). On the memory roof (17 §2) every sequence in the batch shares each step's
# read of the weights, so every byte taken off the KV cache turns into batch, and batch into
# tokens per second.
#
# *Look for:* (1) count = space over per-sequence bytes, floored, naming what sets each;
# (2) about double, exactly double or one more because of the floor; (3) a larger batch
# shares the weight read, so throughput rises.
# ### END SOLUTION

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

# %% nbgrader={"grade": false, "grade_id": "cg_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
ratio = free_per_gpu_gb = free_total_gb = kv_heads_per_gpu = big_seqs = None
### BEGIN SOLUTION
big_weights = 2 * big.n_params
ratio = big_weights / C
free_per_gpu = C - big_weights / g - reserve
free_per_gpu_gb = free_per_gpu / units.GB
free_total = g * free_per_gpu
free_total_gb = free_total / units.GB
kv_heads_per_gpu = big.n_kv_heads / g
k_big = kv_per_token(big)
big_seq = L * k_big
big_seqs = int(free_total // big_seq)
display.md(rf"""
**(c)** $M_w = 2 \times {big.n_params / 1e9:g} \times 10^{{9}}\ \text{{B}} =
{big_weights / units.GB:g}\ \text{{GB}}$, and

$$\frac{{M_w}}{{C}} = \frac{{{big_weights / units.GB:g}}}{{{C / units.GB:g}}} = {ratio:.3f}.$$

**(d)** Each of the $g = {g}$ GPUs holds $M_w / g = {big_weights / g / units.GB:g}$ GB of
weights:

$$C - \frac{{M_w}}{{g}} - M_u = {C / units.GB:g} - {big_weights / g / units.GB:g}
- {reserve / units.GB:g} = {free_per_gpu_gb:.2f}\ \text{{GB per GPU}}.$$

**(e)** The group: $M_{{KV}} = g \times {free_per_gpu_gb:.2f} = {g} \times
{free_per_gpu_gb:.2f} = {free_total_gb:.2f}$ GB.

**(f)** Each GPU computes $1/g$ of the attention heads, and a query head reads only its own
group's K/V pair, so the KV heads go with their groups:
$n_\text{{kv}} / g = {big.n_kv_heads} / {g} = {kv_heads_per_gpu:g}$ per GPU.

**(g)** Each GPU keeps only its heads' share of every sequence, so whole sequences are
counted against the group's space:

$$k = 2 \times {big.n_layers} \times {big.n_kv_heads} \times {big.head_dim} \times 2
= {tex(k_big, ',.0f')}\ \text{{B}}, \qquad L\,k = {big_seq / units.GB:.3f}\ \text{{GB}},$$

$$\left\lfloor \frac{{M_{{KV}}}}{{L\,k}} \right\rfloor
= \left\lfloor \frac{{{free_total_gb:.2f}}}{{{big_seq / units.GB:.3f}}} \right\rfloor
= \lfloor {free_total / big_seq:.2f} \rfloor = {big_seqs}\ \text{{sequences}}.$$

One GPU's space over a whole sequence, $\lfloor {free_per_gpu_gb:.2f} / {big_seq / units.GB:.3f}
\rfloor = {int(free_per_gpu // big_seq)}$, would forget that each GPU stores only $1/g$ of it.
""")
cap_big = calc.tp_kv_capacity(big, hw, tp=g, context_tokens=L, reserve_bytes=reserve)
assert math.isclose(cap_big["weights_over_memory"], ratio, rel_tol=1e-12)
assert math.isclose(cap_big["free_kv_bytes"], free_total, rel_tol=1e-12)
assert (cap_big["kv_heads_per_gpu"], cap_big["max_sequences"]) == (kv_heads_per_gpu, big_seqs)
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "cg_check", "locked": true, "points": 6, "schema_version": 3, "solution": false, "task": false}
with grading.checks():
    grading.check("17-2", "c-big-ratio", ratio, seed=SEED)
    grading.check("17-2", "d-big-free-gpu", free_per_gpu_gb, seed=SEED)
    grading.check("17-2", "e-big-free-total", free_total_gb, seed=SEED)
    grading.check("17-2", "f-big-kv-heads", kv_heads_per_gpu, seed=SEED)
    grading.check("17-2", "g-big-seqs", big_seqs, seed=SEED)

# %% [markdown] nbgrader={"grade": true, "grade_id": "cg_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# ### BEGIN SOLUTION
# When (c) is above 1, as at the chapter's data, the weights alone overflow one card before a
# single token is cached (and near 1 they leave it no room for KV): tensor parallelism is there
# to make the model fit, not to make it faster. Split over $g$ GPUs, each GPU computes $1/g$ of
# the attention heads, and a query head reads only its own group's K/V pair, so each GPU keeps
# the KV heads of its groups, $n_\text{kv} / g$ of them, and stores that share of every
# sequence. A whole sequence is therefore spread over all $g$ GPUs and is counted against the
# group's KV space (e), not one GPU's (d). Dividing (d) by a whole sequence's bytes charges one
# GPU for what all $g$ share and undercounts by about the factor $g$ (the last line above).
#
# *Look for:* (1) (c) at or above 1: the weights do not leave room on one card, so TP is
# about fit; (2) each GPU stores $1/g$ of every sequence because the KV heads shard with the
# attention heads; (3) one GPU's space over a whole sequence undercounts by about $g$.
# ### END SOLUTION
