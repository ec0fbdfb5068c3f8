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
# # Exercise 17-8 · What does weight quantization do to the decode ceiling?
#
# *Calculation, 17 §10.* A model of $N$ parameters stores each weight in $s$ bytes and decodes
# on a card with memory bandwidth $\beta$. Quantization stores the weights in fewer bytes (INT8
# or FP8: $s = 1$; the block formats `q8_0`/`q4_0` add a 16-bit scale per block of 32 values,
# so $s = 8.5/8$ and $4.5/8$ B; BF16 is $s = 2$) while the arithmetic still runs in higher
# precision, so a token costs the same FLOPs as before. The KV cache is a separate decision:
# here it stays in BF16, $k$ bytes per token of context (17 §4). Work from the memory roof of
# 17 §2: what does one decode step have to read from HBM, and what does that time buy? (The
# hints below the questions give the formulas if you are stuck.)
#
# 1. **(a)** The quantized weight bytes $D_w$, in GB; **(b)** the batch-1 time per token, in ms;
#    **(c)** the batch-1 decode ceiling, tok/s; **(d)** the BF16 ceiling for comparison,
#    tok/s; **(e)** the gain, (c) / (d); **(f)** the decode intensity with quantized weights, FLOPs per
#    byte read.
# 2. **(g)** The batch-1 ceiling at the long context $L$, quantized weights and a BF16 KV cache,
#    tok/s, and **(h)** its gain over BF16 weights at the same context.
# 3. At a batch of $b$ sequences, each at the long context $L$ (17 §2 runs this case at
#    $b = 64$): **(i)** the BF16 KV one decode step reads, in GB, and **(j)** the gain of the
#    quantized weights over BF16 weights at that batch and context (the ratio of the two step
#    times). The BF16 side of (j) is a comparison on paper: check whether it fits the card
#    with 17 §4's runtime reserve (at seed 0 it does not).
#
# (e), (h) and (j) are plain ratios, without a unit. Each answer is checked to within 0.5%.
#
# Weights are streamed whole every step; sizes are decimal ($10^9$ bytes to the GB). Your given
# data come from `grading.params("17-8", SEED)`. Seed 0 is the chapter's own data (8B in INT8
# on the H100 SXM), with an 8,000-token context for (g)-(j) and 17 §2's batch for (i)-(j); on a
# course hub you get a seed of your own, from your user name.
#
# <details><summary>Hints: the formulas</summary>
#
# - One decode step at batch 1 streams every weight once: $D_w = N s$ bytes, so
#   $T_\text{step} = D_w / \beta$, and the ceiling is one token per step, $1 / T_\text{step}$.
# - Intensity is FLOPs over bytes read: a token costs $2N$ FLOPs against $N s$ bytes.
# - At a context of $L$ tokens the step also reads the cache: $N s + L k$ bytes.
# - At batch $b$ the weights are read once for all $b$ sequences and each sequence's cache once:
#   $N s + b L k$ bytes per step, for BF16 weights $2N + b L k$.
#
# </details>

# %% nbgrader={"grade": false, "grade_id": "given", "locked": true, "schema_version": 3, "solution": false, "task": false}
from companion import grading, units

SEED = grading.student_seed()
given = grading.params("17-8", SEED)
hw = given["hardware"]
N, s, k, L, B = (given["params"], given["bytes_per_param"], given["kv_bytes_per_token"],
                 given["context_tokens"], given["batch"])
print(f"card: {hw.name}, HBM beta = {hw.mem_bw_bytes_per_s / 1e12:g} TB/s, "
      f"{hw.mem_bytes / 1e9:g} GB")
print(f"model: {given['model'].name}: N = {N:.3g} parameters; k = {k:,} B of BF16 KV per token")
print(f"format {given['format']}: s = {s:g} bytes per parameter; long context L = {L:,} tokens; "
      f"batch b = {B} sequences")

# %% [markdown]
# ## (a)-(f) Short context: the weights are the stream
#
# **Then explain**, in two or three sentences in the cell under the check: why is the gain
# exactly $2/s$ here, and why does the decode stay memory-bound however small $s$ gets?
#
# Set `weights_gb`, `step_ms`, `ceiling`, `baseline`, `gain` and `intensity`.

# %% nbgrader={"grade": false, "grade_id": "af_answer", "locked": false, "schema_version": 3, "solution": true, "task": false} tags=["raises-exception"]
weights_gb = step_ms = ceiling = baseline = gain = intensity = None
# YOUR CODE HERE

# %% nbgrader={"grade": true, "grade_id": "af_check", "locked": true, "points": 7, "schema_version": 3, "solution": false, "task": false} tags=["raises-exception"]
with grading.checks():
    grading.check("17-8", "a-weights", weights_gb, seed=SEED)
    grading.check("17-8", "b-step", step_ms, seed=SEED)
    grading.check("17-8", "c-ceiling", ceiling, seed=SEED)
    grading.check("17-8", "d-baseline", baseline, seed=SEED)
    grading.check("17-8", "e-speedup", gain, seed=SEED)
    grading.check("17-8", "f-intensity", intensity, seed=SEED)

# %% [markdown] nbgrader={"grade": true, "grade_id": "af_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# YOUR ANSWER HERE

# %% [markdown]
# ## (g), (h) Long context: the KV cache does not shrink
#
# **Then explain**, in two or three sentences in the cell under the check: why is (h) smaller
# than (e), and what does it tend to as the context grows?
#
# Set `ceiling_long` and `gain_long`.

# %% nbgrader={"grade": false, "grade_id": "gh_answer", "locked": false, "schema_version": 3, "solution": true, "task": false} tags=["raises-exception"]
ceiling_long = gain_long = None
# YOUR CODE HERE

# %% nbgrader={"grade": true, "grade_id": "gh_check", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false} tags=["raises-exception"]
with grading.checks():
    grading.check("17-8", "g-ceiling-long", ceiling_long, seed=SEED)
    grading.check("17-8", "h-speedup-long", gain_long, seed=SEED)

# %% [markdown] nbgrader={"grade": true, "grade_id": "gh_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# YOUR ANSWER HERE

# %% [markdown]
# ## (i), (j) A batch at the long context: the cache is most of the stream
#
# Set `kv_batch_gb` and `gain_batch`.
#
# **Then explain**, in three or four sentences in the cell under the check: why is (j) close
# to 1, and what does quantizing the weights still buy a batched server at this context?

# %% nbgrader={"grade": false, "grade_id": "ij_answer", "locked": false, "schema_version": 3, "solution": true, "task": false} tags=["raises-exception"]
kv_batch_gb = gain_batch = None
# YOUR CODE HERE

# %% nbgrader={"grade": true, "grade_id": "ij_check", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false} tags=["raises-exception"]
with grading.checks():
    grading.check("17-8", "i-kv-batch", kv_batch_gb, seed=SEED)
    grading.check("17-8", "j-speedup-batch", gain_batch, seed=SEED)

# %% [markdown] nbgrader={"grade": true, "grade_id": "ij_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# YOUR ANSWER HERE
