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
# *Calculation, 17 §2.* A workload's arithmetic intensity is the FLOPs it performs per byte
# it moves from HBM. The roofline caps it at
#
# $$\text{attainable} = \min(\text{peak},\ \text{intensity} \times \text{bandwidth}),$$
#
# and the two roofs meet at the ridge point, peak / bandwidth. A forward pass costs about
# 2 FLOPs per parameter per token (attention FLOPs ignored, as in the chapter). One decode step
# of a batch of $B$ sequences reads the weights once for all of them, but each sequence's own
# KV cache, $L k$ bytes, is read as well:
#
# $$I_\text{decode}(B, L) = \frac{B \cdot 2P}{P \cdot \text{bytes per param} + B\,L\,k}.$$
#
# Prefill of an $n$-token prompt reads the weights once for all $n$ tokens.
#
# 1. **(a)** The card's ridge point (FLOP per byte).
# 2. **(b)** Decode intensity at batch 1 (weights only) and **(c)** the share of peak compute
#    it can attain, in %.
# 3. **(d)** Decode intensity at batch $B$, weights only; **(e)** and **(f)** the effective
#    intensity with each sequence's live KV at the short and the long context;
#    **(g)** which roof caps batched decode at the long context (`"memory"` or `"compute"`);
#    **(h)** the attainable share of peak at the short context, in %.
# 4. **(i)** Prefill intensity of the given prompt and **(j)** which roof caps it.
# 5. **(k)** The smallest whole batch at which weights-only decode reaches the ridge.
#
# (g) comes out the same at every seed: it follows from how decode's KV reads grow with the
# context, not from the card or the model. Some variants store the weights in FP8 and widen them
# to BF16 for the products, so the bytes per weight change but the peak stays BF16's. If a seed would give
# an unfair variant (a tie, an empty list, a zero count, an answer on a rounding edge),
# `grading.params` moves to the next seed and prints why.
#
# Your given data come from `grading.params("17-3", SEED)`. Seed 0 is the chapter's own data
# (8B on the H100 SXM, B = 64, 600 and 8,000 live tokens, a 2,048-token prompt); your
# instructor may give you another seed.

# %% nbgrader={"grade": false, "grade_id": "given", "locked": true, "schema_version": 3, "solution": false, "task": false}
from companion import grading, units

SEED = 0
given = grading.params("17-3", SEED)
hw = given["hardware"]
P, bpp, k = given["params"], given["bytes_per_param"], given["kv_bytes_per_token"]
B, L_short, L_long = given["batch"], given["short_context"], given["long_context"]
print(f"card: {hw.name}: peak {hw.peak_flops_per_s / 1e12:g} TFLOP/s (dense BF16), "
      f"HBM {hw.mem_bw_bytes_per_s / 1e12:g} TB/s")
print(f"model: {given['model'].name}: P = {P:.3g} params at {bpp:g} bytes, "
      f"k = {k:,} B of KV per token")
print(f"batch B = {B}; live contexts {L_short:,} and {L_long:,} tokens; prompt "
      f"{given['prompt_tokens']:,} tokens")

# %% [markdown]
# ## (a)-(c) The ridge, and decode at batch 1
#
# Set `ridge`, `i1` and `peak_share_1` (in %).

# %% nbgrader={"grade": false, "grade_id": "ac_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
ridge = i1 = peak_share_1 = None
### BEGIN SOLUTION
peak, bw = hw.peak_flops_per_s, hw.mem_bw_bytes_per_s
ridge = peak / bw
i1 = 2 * P / (P * bpp)
peak_share_1 = 100 * min(peak, i1 * bw) / peak
print(f"ridge {ridge:.1f} FLOP/B; batch-1 decode {i1:g} FLOP/B -> {peak_share_1:.3f}% of peak")
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "ac_check", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
with grading.checks():
    grading.check("17-3", "a-ridge", ridge, seed=SEED)
    grading.check("17-3", "b-i1", i1, seed=SEED)
    grading.check("17-3", "c-peak1", peak_share_1, seed=SEED)

# %% [markdown] nbgrader={"grade": true, "grade_id": "ac_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# ### BEGIN SOLUTION
# 989e12 / 3.35e12 = 295 FLOP per byte on the H100. Batch-1 decode does 2 FLOPs for every
# 2-byte parameter it streams: 1 FLOP per byte, so it attains 3.35 TFLOP/s, 0.34% of peak.
# Nothing is misconfigured: the workload cannot feed the arithmetic units. (Using the 1,979
# TFLOP/s sparse headline would double the ridge and halve every share of peak.)
# ### END SOLUTION

# %% [markdown]
# ## (d)-(h) Batched decode, with and without the KV reads
#
# Set `iB`, `iB_short`, `iB_long`, `bound_long` and `peak_share_short` (in %).

# %% nbgrader={"grade": false, "grade_id": "dh_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
iB = iB_short = iB_long = bound_long = peak_share_short = None
### BEGIN SOLUTION
def decode_intensity(batch, live_tokens):
    return batch * 2 * P / (P * bpp + batch * live_tokens * k)


iB = decode_intensity(B, 0)
iB_short = decode_intensity(B, L_short)
iB_long = decode_intensity(B, L_long)
bound_long = "memory" if iB_long < ridge else "compute"
peak_share_short = 100 * min(peak, iB_short * bw) / peak
print(f"B = {B}: {iB:g} FLOP/B weights only; {iB_short:.1f} at {L_short:,} tokens, "
      f"{iB_long:.1f} at {L_long:,} ({bound_long}-bound); {peak_share_short:.1f}% of peak")
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "dh_check", "locked": true, "points": 5, "schema_version": 3, "solution": false, "task": false}
with grading.checks():
    grading.check("17-3", "d-iB", iB, seed=SEED)
    grading.check("17-3", "e-iB-short", iB_short, seed=SEED)
    grading.check("17-3", "f-iB-long", iB_long, seed=SEED)
    grading.check("17-3", "g-bound-long", bound_long, seed=SEED)
    grading.check("17-3", "h-peak-short", peak_share_short, seed=SEED)

# %% [markdown] nbgrader={"grade": true, "grade_id": "dh_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# ### BEGIN SOLUTION
# Weights only, B = 64 gives 64 FLOP/B. But the weights are the only bytes the batch shares:
# with 600 live tokens each (78.6 MB) the step moves 16 + 64 x 0.0786 = 21.0 GB and the
# intensity is 49; with 8,000 tokens each (1.05 GB) it moves 83 GB and the intensity drops to
# 12. Same batch, a quarter of the intensity, because the caches grew: long-context decode is
# memory-bound in capacity and in bandwidth.
# ### END SOLUTION

# %% [markdown]
# ## (i)-(k) Prefill, and the break-even batch
#
# Set `i_prefill`, `bound_prefill` and `breakeven_batch`.

# %% nbgrader={"grade": false, "grade_id": "ik_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
i_prefill = bound_prefill = breakeven_batch = None
### BEGIN SOLUTION
n = given["prompt_tokens"]
i_prefill = 2 * P * n / (P * bpp)
bound_prefill = "memory" if i_prefill < ridge else "compute"
breakeven_batch = 1
while decode_intensity(breakeven_batch, 0) < ridge:
    breakeven_batch += 1
print(f"prefill of {n:,} tokens: {i_prefill:g} FLOP/B ({bound_prefill}-bound); decode needs "
      f"B >= {breakeven_batch} to reach the ridge")
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "ik_check", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
with grading.checks():
    grading.check("17-3", "i-prefill", i_prefill, seed=SEED)
    grading.check("17-3", "j-bound-prefill", bound_prefill, seed=SEED)
    grading.check("17-3", "k-breakeven", breakeven_batch, seed=SEED)

# %% [markdown] nbgrader={"grade": true, "grade_id": "ik_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# ### BEGIN SOLUTION
# A 2,048-token prompt uses every weight 2,048 times per read: 2,048 FLOP/B, far right of the
# 295 ridge, so the same model on the same card is compute-bound in prefill. Its intensity is
# the prompt length, so prompts shorter than ~295 tokens stay on the memory roof. Decode only
# meets the ridge at a batch of 296 sequences (and only if their KV reads were free), which is
# why the batch is the first lever and KV memory the first wall.
# ### END SOLUTION
