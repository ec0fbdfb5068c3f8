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
# *Calculation, 17 §10.* On the memory roof (17 §2), batch-1 decode streams every weight once
# per token: one plain decode step $T_\text{step}$ emits one token. With $N$ parameters stored
# at $s$ bytes each and a memory bandwidth $\beta$:
#
# $$D_w = N s, \qquad T_\text{step} = \frac{D_w}{\beta}, \qquad
# \text{ceiling} = \frac{1}{T_\text{step}}, \qquad I = \frac{2N}{N s} = \frac{2}{s}\ \text{FLOP/byte}$$
#
# (17 §10, as in its section notebook). Storing the weights in fewer bytes (INT8 or FP8: $s = 1$;
# the block formats `q8_0`/`q4_0` add a 16-bit scale per block of 32 values, so
# $s = 8.5/8$ and $4.5/8$ B) while computing in higher precision shrinks $T_\text{step}$ in
# proportion; a token still costs $2N$ FLOPs. BF16 is $s = 2$. The KV cache is a separate
# decision: here it stays in BF16, $k$ bytes per token of context (17 §4), and is still read
# every step, so at a context of $L$ tokens a step streams $N s + L k$ bytes.
#
# 1. **(a)** The quantized weight bytes $D_w$, in GB; **(b)** the batch-1 time per token, in ms;
#    **(c)** the batch-1 decode ceiling, tok/s; **(d)** the BF16 ceiling for comparison;
#    **(e)** the gain, (c) / (d); **(f)** the decode intensity with quantized weights.
# 2. **(g)** The batch-1 ceiling at the long context $L$, quantized weights and a BF16 KV cache,
#    $\beta / (N s + L k)$, and **(h)** its gain over BF16 weights at the same context.
#
# Weights are streamed whole every step; sizes are decimal ($10^9$ bytes to the GB). Your given
# data come from `grading.params("17-8", SEED)`. Seed 0 is the chapter's own data (8B in INT8
# on the H100 SXM), with an 8,000-token context for (g)-(h); on a course hub
# you get a seed of your own, from your user name.

# %% nbgrader={"grade": false, "grade_id": "given", "locked": true, "schema_version": 3, "solution": false, "task": false}
from companion import grading, units

SEED = grading.student_seed()
given = grading.params("17-8", SEED)
hw = given["hardware"]
N, s, k, L = (given["params"], given["bytes_per_param"], given["kv_bytes_per_token"],
              given["context_tokens"])
print(f"card: {hw.name}, HBM beta = {hw.mem_bw_bytes_per_s / 1e12:g} TB/s")
print(f"model: {given['model'].name}: N = {N:.3g} parameters; k = {k:,} B of BF16 KV per token")
print(f"format {given['format']}: s = {s:g} bytes per parameter; long context L = {L:,} tokens")

# %% [markdown]
# ## (a)-(f) Short context: the weights are the stream
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
