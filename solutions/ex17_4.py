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
# # Exercise 17-4 · Is this deployment healthy? MBU and MFU from a measurement
#
# *Calculation, 17 §9.* "GPU util" only says a kernel was resident. Two ratios say how close a
# phase is to its roof:
#
# - **MBU**, model bandwidth utilization: the bytes the measured token rate must stream per
#   second, over peak bandwidth. A decode step of a batch of $B$ reads the weights once and each
#   sequence's live KV, so per output token it streams $D_w / B + L k$ bytes.
# - **MFU**, model FLOPs utilization: tokens/s $\times\ 2P$ over the dense peak.
#
# 1. **(a)** The bytes streamed per output token, in GB.
# 2. **(b)** Decode MBU and **(c)** decode MFU, in %.
# 3. **(d)** The headroom: by what factor can the decode rate still grow on this workload?
#    **(e)** The decode ceiling (tok/s) at this batch and context.
#    **(f)** Someone promises a kernel that makes this decode the given factor faster. Is that
#    possible without changing the workload? (`True` or `False`)
# 4. **(g)** The prefill MFU of the measured prompt rate, in %.
#
# Your given data come from `grading.params("17-4", SEED)`. Seed 0 is the chapter's own data
# (8B on the H100 SXM, 146 tok/s at batch 1, 20,000 prompt tok/s); your instructor may give you
# another seed.

# %% nbgrader={"grade": false, "grade_id": "given", "locked": true, "schema_version": 3, "solution": false, "task": false}
from companion import grading, units

SEED = 0
given = grading.params("17-4", SEED)
hw = given["hardware"]
P, D_w, k = given["params"], given["weight_bytes"], given["kv_bytes_per_token"]
B, L = given["batch"], given["context_tokens"]
print(f"card: {hw.name}: peak {hw.peak_flops_per_s / 1e12:g} TFLOP/s (dense BF16), "
      f"HBM {hw.mem_bw_bytes_per_s / 1e12:g} TB/s")
print(f"model: {given['model'].name}: P = {P:.3g} params, D_w = {D_w / units.GB:g} GB, "
      f"k = {k:,} B per token")
print(f"decode: {given['decode_tokens_per_s']:,} tok/s measured at batch {B}, "
      f"{L:,} live tokens per sequence")
print(f"prefill: {given['prefill_tokens_per_s']:,.0f} prompt tok/s measured; promised kernel "
      f"speedup {given['promised_speedup']:g}x")

# %% [markdown]
# ## (a)-(c) Decode: bytes per token, MBU, MFU
#
# Set `bytes_per_token_gb`, `mbu_pct` and `mfu_decode_pct`.

# %% nbgrader={"grade": false, "grade_id": "ac_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
bytes_per_token_gb = mbu_pct = mfu_decode_pct = None
### BEGIN SOLUTION
rate = given["decode_tokens_per_s"]
bytes_per_token = D_w / B + L * k
bytes_per_token_gb = bytes_per_token / units.GB
mbu_pct = 100 * rate * bytes_per_token / hw.mem_bw_bytes_per_s
mfu_decode_pct = 100 * rate * 2 * P / hw.peak_flops_per_s
print(f"{bytes_per_token_gb:.3f} GB per token -> {rate * bytes_per_token / 1e12:.2f} TB/s: "
      f"MBU {mbu_pct:.1f}%, MFU {mfu_decode_pct:.3f}%")
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "ac_check", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false}
with grading.checks():
    grading.check("17-4", "a-bytes-per-token", bytes_per_token_gb, seed=SEED)
    grading.check("17-4", "b-mbu", mbu_pct, seed=SEED)
    grading.check("17-4", "c-mfu-decode", mfu_decode_pct, seed=SEED)

# %% [markdown]
# ## (d)-(f) How much is left?
#
# Set `headroom`, `ceiling` (tok/s) and `promise_possible`.

# %% nbgrader={"grade": false, "grade_id": "df_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
headroom = ceiling = promise_possible = None
### BEGIN SOLUTION
headroom = 100 / mbu_pct
step_s = (D_w + B * L * k) / hw.mem_bw_bytes_per_s
ceiling = B / step_s
promise_possible = headroom >= given["promised_speedup"]
print(f"headroom {headroom:.2f}x; ceiling {ceiling:,.0f} tok/s; "
      f"a {given['promised_speedup']:g}x kernel win possible: {promise_possible}")
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "df_check", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
with grading.checks():
    grading.check("17-4", "d-headroom", headroom, seed=SEED)
    grading.check("17-4", "e-ceiling", ceiling, seed=SEED)
    grading.check("17-4", "f-promise-possible", promise_possible, seed=SEED)

# %% [markdown] nbgrader={"grade": true, "grade_id": "df_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# ### BEGIN SOLUTION
# 146 tok/s x 16 GB = 2.34 TB/s, 70% of 3.35 TB/s: a healthy decode, closing on its 209 tok/s
# ceiling (146 / 209 is the same 70%). Its MFU, 0.24%, looks catastrophic and means nothing
# for this phase. At 70% MBU no kernel can give more than 1 / 0.7 = 1.4x, so a promised 5x has
# to come from changing the workload (a bigger batch, quantized weights), not from a kernel.
# ### END SOLUTION

# %% [markdown]
# ## (g) Prefill MFU
#
# Set `mfu_prefill_pct`.

# %% nbgrader={"grade": false, "grade_id": "g_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
mfu_prefill_pct = None
### BEGIN SOLUTION
mfu_prefill_pct = 100 * given["prefill_tokens_per_s"] * 2 * P / hw.peak_flops_per_s
print(f"prefill MFU {mfu_prefill_pct:.1f}%")
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "g_check", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
with grading.checks():
    grading.check("17-4", "g-mfu-prefill", mfu_prefill_pct, seed=SEED)

# %% [markdown] nbgrader={"grade": true, "grade_id": "g_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# ### BEGIN SOLUTION
# 20,000 x 2 x 8e9 = 3.2e14 FLOP/s, 32% of the dense peak: decent, with headroom worth
# profiling for (40-60% is a strong prefill). Judge decode by MBU and prefill by MFU; quoting
# the other ratio for a phase gives the wrong verdict in both directions.
# ### END SOLUTION
