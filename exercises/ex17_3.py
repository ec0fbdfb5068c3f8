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
# # Exercise 17-3 · Where do decode and prefill sit on the roofline?
#
# *Calculation, 17 §2 (the roofline, decode at batch 1, prefill, and the effective intensity
# of batched decode; the companion's 17.2 notebook).* A workload's arithmetic intensity $I$ is
# the FLOPs it performs per byte it moves from HBM. On a card of dense peak $\pi$ (FLOP/s) and
# memory bandwidth $\beta$ (bytes/s) the roofline caps it at
#
# $$\text{attainable}(I) = \min(\pi,\ I\,\beta),$$
#
# and the two roofs meet at the ridge point $I^\star = \pi / \beta$: a workload left of it
# ($I < I^\star$) is memory-bound, one at or right of it compute-bound. A forward pass costs
# about 2 FLOPs per parameter per token, $2N$ for a model of $N$ parameters (attention FLOPs
# ignored, as in the chapter), and the weights take $N s$ bytes at $s$ bytes per parameter. One
# decode step of a batch of $b$ sequences reads the weights once for all of them, but each
# sequence's own KV cache, $L\,k$ bytes ($L$ live tokens of $k$ bytes), is read as well:
#
# $$I_\text{decode}(b, L) = \frac{b \cdot 2N}{N s + b\,L\,k}.$$
#
# Prefill of an $n$-token prompt reads the weights once for all $n$ tokens:
# $I_\text{prefill} = 2N n / (N s)$.
#
# 1. **(a)** The card's ridge point $I^\star$ (FLOP per byte).
# 2. **(b)** Decode intensity at batch 1 (weights only, $L = 0$) and **(c)** the share of peak
#    compute it can attain, $\text{attainable}/\pi$, in %.
# 3. **(d)** Decode intensity at batch $b$, weights only; **(e)** and **(f)** the effective
#    intensity with each sequence's live KV at the short and the long context;
#    **(g)** which roof caps batched decode at the long context (`"memory"` or `"compute"`);
#    **(h)** the attainable share of peak at the short context, in %.
# 4. **(i)** Prefill intensity of the given prompt and **(j)** which roof caps it.
# 5. **(k)** The smallest whole batch at which weights-only decode reaches the ridge.
#
# Give each number to at least three significant figures: the grader accepts answers within
# 0.5%, closer than the two figures the chapter prints. Answer (g) and (j) with the word
# `"memory"` or `"compute"`. Some variants store the weights in FP8 and widen them
# to BF16 for the products, so $s$ changes but the peak stays BF16's. If a seed would give
# an unfair variant (a tie, an empty list, a zero count, an answer on a rounding edge),
# `grading.params` moves to the next seed and prints why.
#
# Your given data come from `grading.params("17-3", SEED)`. Seed 0 is the chapter's own data
# (8B on the H100 SXM, $b$ = 64, 600 and 8,000 live tokens, a 2,048-token prompt); on a course hub
# you get a seed of your own, from your user name.

# %% nbgrader={"grade": false, "grade_id": "given", "locked": true, "schema_version": 3, "solution": false, "task": false}
from companion import grading, units

SEED = grading.student_seed()
given = grading.params("17-3", SEED)
hw = given["hardware"]
N, s, k = given["params"], given["bytes_per_param"], given["kv_bytes_per_token"]
b, L_short, L_long = given["batch"], given["short_context"], given["long_context"]
print(f"card: {hw.name}: peak pi = {hw.peak_flops_per_s / 1e12:g} TFLOP/s (dense BF16), "
      f"HBM beta = {hw.mem_bw_bytes_per_s / 1e12:g} TB/s")
print(f"model: {given['model'].name}: N = {N:.3g} params at s = {s:g} bytes, "
      f"k = {k:,} B of KV per token")
print(f"batch b = {b}; live contexts L = {L_short:,} and {L_long:,} tokens; prompt "
      f"n = {given['prompt_tokens']:,} tokens")

# %% [markdown]
# ## (a)-(c) The ridge, and decode at batch 1
#
# Set `ridge`, `i1` and `peak_share_1` (in %).

# %% nbgrader={"grade": false, "grade_id": "ac_answer", "locked": false, "schema_version": 3, "solution": true, "task": false} tags=["raises-exception"]
ridge = i1 = peak_share_1 = None
# YOUR CODE HERE

# %% nbgrader={"grade": true, "grade_id": "ac_check", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false} tags=["raises-exception"]
with grading.checks():
    grading.check("17-3", "a-ridge", ridge, seed=SEED)
    grading.check("17-3", "b-i1", i1, seed=SEED)
    grading.check("17-3", "c-peak1", peak_share_1, seed=SEED)

# %% [markdown] nbgrader={"grade": true, "grade_id": "ac_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# YOUR ANSWER HERE

# %% [markdown]
# ## (d)-(h) Batched decode, with and without the KV reads
#
# Set `iB`, `iB_short`, `iB_long`, `bound_long` and `peak_share_short` (in %).

# %% nbgrader={"grade": false, "grade_id": "dh_answer", "locked": false, "schema_version": 3, "solution": true, "task": false} tags=["raises-exception"]
iB = iB_short = iB_long = bound_long = peak_share_short = None
# YOUR CODE HERE

# %% nbgrader={"grade": true, "grade_id": "dh_check", "locked": true, "points": 5, "schema_version": 3, "solution": false, "task": false} tags=["raises-exception"]
with grading.checks():
    grading.check("17-3", "d-iB", iB, seed=SEED)
    grading.check("17-3", "e-iB-short", iB_short, seed=SEED)
    grading.check("17-3", "f-iB-long", iB_long, seed=SEED)
    grading.check("17-3", "g-bound-long", bound_long, seed=SEED)
    grading.check("17-3", "h-peak-short", peak_share_short, seed=SEED)

# %% [markdown] nbgrader={"grade": true, "grade_id": "dh_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# YOUR ANSWER HERE

# %% [markdown]
# ## (i)-(k) Prefill, and the break-even batch
#
# Set `i_prefill`, `bound_prefill` and `breakeven_batch`.

# %% nbgrader={"grade": false, "grade_id": "ik_answer", "locked": false, "schema_version": 3, "solution": true, "task": false} tags=["raises-exception"]
i_prefill = bound_prefill = breakeven_batch = None
# YOUR CODE HERE

# %% nbgrader={"grade": true, "grade_id": "ik_check", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false} tags=["raises-exception"]
with grading.checks():
    grading.check("17-3", "i-prefill", i_prefill, seed=SEED)
    grading.check("17-3", "j-bound-prefill", bound_prefill, seed=SEED)
    grading.check("17-3", "k-breakeven", breakeven_batch, seed=SEED)

# %% [markdown] nbgrader={"grade": true, "grade_id": "ik_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# YOUR ANSWER HERE
