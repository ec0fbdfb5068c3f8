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
# *Calculation, 17 §10.* On the memory roof, batch-1 decode time per token is the weight
# bytes over the bandwidth. Storing the weights in fewer bytes per parameter (INT8 or FP8: one
# byte; block formats such as `q8_0`/`q4_0` add a scale per block of 32) while computing in
# higher precision shrinks that time in proportion and raises the intensity, 2 FLOPs per
# parameter over the bytes per parameter. The KV cache is a separate decision: here it stays
# in BF16 and is still read every step.
#
# 1. **(a)** The quantized weight bytes, in GB; **(b)** the batch-1 time per token, in ms;
#    **(c)** the batch-1 decode ceiling, tok/s; **(d)** the BF16 ceiling for comparison;
#    **(e)** the gain, (c) / (d); **(f)** the decode intensity with quantized weights.
# 2. **(g)** The batch-1 ceiling at the long context, quantized weights and a BF16 KV cache,
#    and **(h)** its gain over BF16 weights at the same context.
#
# Weights are streamed whole every step (params $\times$ bytes per parameter); sizes are
# decimal. Your given data come from `grading.params("17-8", SEED)`. Seed 0 is the chapter's
# own data (8B in INT8 on the H100 SXM), with an 8,000-token context for (g)-(h); your
# instructor may give you another seed.

# %% nbgrader={"grade": false, "grade_id": "given", "locked": true, "schema_version": 3, "solution": false, "task": false}
from companion import grading, units

SEED = 0
given = grading.params("17-8", SEED)
hw = given["hardware"]
P, bpp, k, L = (given["params"], given["bytes_per_param"], given["kv_bytes_per_token"],
                given["context_tokens"])
print(f"card: {hw.name}, HBM {hw.mem_bw_bytes_per_s / 1e12:g} TB/s")
print(f"model: {given['model'].name}: P = {P:.3g} params; k = {k:,} B of BF16 KV per token")
print(f"format {given['format']}: {bpp:g} bytes per parameter; long context {L:,} tokens")

# %% [markdown]
# ## (a)-(f) Short context: the weights are the stream
#
# Set `weights_gb`, `step_ms`, `ceiling`, `baseline`, `gain` and `intensity`.

# %% nbgrader={"grade": false, "grade_id": "af_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
weights_gb = step_ms = ceiling = baseline = gain = intensity = None
### BEGIN SOLUTION
bw = hw.mem_bw_bytes_per_s
weights = P * bpp
weights_gb = weights / units.GB
step_ms = weights / bw / units.ms
ceiling = bw / weights
baseline = bw / (P * 2)
gain = ceiling / baseline
intensity = 2 / bpp
print(f"{weights_gb:g} GB -> {step_ms:.2f} ms per token -> {ceiling:.0f} tok/s (BF16: "
      f"{baseline:.0f}), {gain:.2f}x; intensity {intensity:.2f} FLOP/B")
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "af_check", "locked": true, "points": 7, "schema_version": 3, "solution": false, "task": false}
with grading.checks():
    grading.check("17-8", "a-weights", weights_gb, seed=SEED)
    grading.check("17-8", "b-step", step_ms, seed=SEED)
    grading.check("17-8", "c-ceiling", ceiling, seed=SEED)
    grading.check("17-8", "d-baseline", baseline, seed=SEED)
    grading.check("17-8", "e-speedup", gain, seed=SEED)
    grading.check("17-8", "f-intensity", intensity, seed=SEED)

# %% [markdown] nbgrader={"grade": true, "grade_id": "af_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# ### BEGIN SOLUTION
# 8e9 x 1 B = 8 GB streams in 2.39 ms: 419 tok/s against 209 in BF16, exactly 2x, and the
# intensity moves from 1 to 2 FLOP per byte, still far left of the 295 ridge. It is the first
# lever in the chapter's list that can change the output, so the 2x is only free once the
# evals say so.
# ### END SOLUTION

# %% [markdown]
# ## (g), (h) Long context: the KV cache does not shrink
#
# Set `ceiling_long` and `gain_long`.

# %% nbgrader={"grade": false, "grade_id": "gh_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
ceiling_long = gain_long = None
### BEGIN SOLUTION
kv = L * k
ceiling_long = bw / (weights + kv)
gain_long = ceiling_long / (bw / (P * 2 + kv))
print(f"at {L:,} tokens: {ceiling_long:.0f} tok/s, {gain_long:.2f}x over BF16 weights")
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "gh_check", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
with grading.checks():
    grading.check("17-8", "g-ceiling-long", ceiling_long, seed=SEED)
    grading.check("17-8", "h-speedup-long", gain_long, seed=SEED)

# %% [markdown] nbgrader={"grade": true, "grade_id": "gh_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# ### BEGIN SOLUTION
# At 8,000 tokens the 8B also reads 1.05 GB of BF16 KV per step: 9.05 GB gives 370 tok/s, and
# the gain over BF16 weights (17.05 GB) falls to 1.88x. The longer the context, the more of the
# stream is cache, and the more the next lever has to be the cache itself (FP8 KV, GQA).
# ### END SOLUTION
