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
# 0.5%, closer than the two figures the chapter prints; (k) is a whole batch, checked exactly.
# Answer (g) and (j) with the word
# `"memory"` or `"compute"`. Some variants store the weights in FP8 and widen them
# to BF16 for the products, so $s$ changes but the peak stays BF16's. If a seed would give
# an unfair variant (a tie, an empty list, a zero count, an answer on a rounding edge),
# `grading.params` moves to the next seed and prints why.
#
# Your given data come from `grading.params("17-3", SEED)`. Seed 0 is the chapter's own data
# (8B on the H100 SXM, $b$ = 64, 600 and 8,000 live tokens, a 2,048-token prompt); on a course hub
# you get a seed of your own, from your user name. Every other seed's long-context batch fits its
# card; the chapter's own does not (the given cell prints what it needs), so at seed 0 (f) is the
# roofline's arithmetic for a batch no 80 GB card holds.

# %% nbgrader={"grade": false, "grade_id": "given", "locked": true, "schema_version": 3, "solution": false, "task": false}
from companion import grading, units
from companion.chapters import ch17

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
need = N * s + b * L_long * k + ch17.RUNTIME_RESERVE_BYTES
print(f"memory at the long context: weights + KV + {ch17.RUNTIME_RESERVE_BYTES / units.GB:g} GB "
      f"reserve = {need / units.GB:.1f} GB of the card's {hw.mem_bytes / units.GB:g} GB: "
      + ("fits" if need <= hw.mem_bytes else "does not fit"))

# %% [markdown]
# ## (a)-(c) The ridge, and decode at batch 1
#
# Set `ridge`, `i1` and `peak_share_1` (in %).
#
# **Then explain**, in two or three sentences in the cell under the check: why does batch-1
# decode's intensity not depend on the model's size, and what does (c) say about the card's
# arithmetic units? A good answer says where $N$ cancels, which roof caps the step, and what
# would have to change to move it right.

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
#
# **Then explain**, in two to four sentences in the cell under the check: why does a batch of
# $b$ multiply (d) by $b$ while (e) and (f) fall short of it, and why would a larger batch not
# rescue the long context? A good answer says which bytes the batch shares and which it does
# not, compares the KV bytes of (f) with the weight bytes, and says what the intensity tends to
# as $b$ grows.

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
#
# **Then explain**, in two or three sentences in the cell under the check: how can the same
# model on the same card sit on either roof in prefill, and how does the prompt length where
# prefill crosses the ridge compare with (k)? A good answer writes prefill's intensity in $n$
# and $s$, names the crossing length, and says what keeps batched decode from reaching the ridge
# at that batch.

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
