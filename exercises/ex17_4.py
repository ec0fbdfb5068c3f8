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
# *Calculation, 17 §9 (the two ratios; the companion's 17.9 notebook), with the decode step of
# 17 §4.* "GPU util" only says a kernel was resident. Two ratios say how close a phase is to
# its roof, on a card of dense peak $\pi$ (FLOP/s) and memory bandwidth $\beta$ (bytes/s):
#
# - **MBU**, model bandwidth utilization: the bytes the measured token rate must stream per
#   second, over $\beta$. A decode step of a batch of $b$ reads the weights ($D_w$ bytes) once
#   and each sequence's live KV ($L$ tokens of $k$ bytes), so per output token it streams
#   $D_w / b + L\,k$ bytes, and
#   $\text{MBU} = \text{tok/s} \times (D_w / b + L\,k) / \beta$.
# - **MFU**, model FLOPs utilization: the FLOPs the token rate implies, 2 per parameter per
#   token for a model of $N$ parameters, over the dense peak:
#   $\text{MFU} = \text{tok/s} \times 2N / \pi$.
#
# On the memory roof a decode step takes $(D_w + b\,L\,k) / \beta$ and emits $b$ tokens, so the
# decode rate can reach at most $b\,\beta / (D_w + b\,L\,k)$ tokens/s.
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
# (8B on the H100 SXM, 146 tok/s at batch 1, 20,000 prompt tok/s); on a course hub
# you get a seed of your own, from your user name.

# %% nbgrader={"grade": false, "grade_id": "given", "locked": true, "schema_version": 3, "solution": false, "task": false}
from companion import grading, units

SEED = grading.student_seed()
given = grading.params("17-4", SEED)
hw = given["hardware"]
N, D_w, k = given["params"], given["weight_bytes"], given["kv_bytes_per_token"]
b, L = given["batch"], given["context_tokens"]
print(f"card: {hw.name}: peak pi = {hw.peak_flops_per_s / 1e12:g} TFLOP/s (dense BF16), "
      f"HBM beta = {hw.mem_bw_bytes_per_s / 1e12:g} TB/s")
print(f"model: {given['model'].name}: N = {N:.3g} params, D_w = {D_w / units.GB:g} GB, "
      f"k = {k:,} B per token")
in_all = " in all, summed over the batch's sequences," if b > 1 else ""
print(f"decode: {given['decode_tokens_per_s']:,} tok/s measured{in_all} at batch b = {b}, "
      f"L = {L:,} live tokens per sequence")
print(f"prefill: {given['prefill_tokens_per_s']:,.0f} prompt tok/s measured; promised kernel "
      f"speedup {given['promised_speedup']:g}x")

# %% [markdown]
# ## (a)-(c) Decode: bytes per token, MBU, MFU
#
# Set `bytes_per_token_gb`, `mbu_pct` and `mfu_decode_pct`.

# %% nbgrader={"grade": false, "grade_id": "ac_answer", "locked": false, "schema_version": 3, "solution": true, "task": false} tags=["raises-exception"]
bytes_per_token_gb = mbu_pct = mfu_decode_pct = None
# YOUR CODE HERE

# %% nbgrader={"grade": true, "grade_id": "ac_check", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false} tags=["raises-exception"]
with grading.checks():
    grading.check("17-4", "a-bytes-per-token", bytes_per_token_gb, seed=SEED)
    grading.check("17-4", "b-mbu", mbu_pct, seed=SEED)
    grading.check("17-4", "c-mfu-decode", mfu_decode_pct, seed=SEED)

# %% [markdown]
# ## (d)-(f) How much is left?
#
# **Then explain**, in two or three sentences in the cell under the check: which of the two
# ratios, MBU or MFU, judges this decode, and why does the other stay low however well it runs?
# What bounds any kernel's speedup here, and what would have to change to beat that bound?
#
# Set `headroom`, `ceiling` (tok/s) and `promise_possible`.

# %% nbgrader={"grade": false, "grade_id": "df_answer", "locked": false, "schema_version": 3, "solution": true, "task": false} tags=["raises-exception"]
headroom = ceiling = promise_possible = None
# YOUR CODE HERE

# %% nbgrader={"grade": true, "grade_id": "df_check", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false} tags=["raises-exception"]
with grading.checks():
    grading.check("17-4", "d-headroom", headroom, seed=SEED)
    grading.check("17-4", "e-ceiling", ceiling, seed=SEED)
    grading.check("17-4", "f-promise-possible", promise_possible, seed=SEED)

# %% [markdown] nbgrader={"grade": true, "grade_id": "df_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# YOUR ANSWER HERE

# %% [markdown]
# ## (g) Prefill MFU
#
# **Then explain**, in two or three sentences in the cell under the check: is this prefill
# healthy by the ratio that fits its roof, and why would judging each phase by the other
# phase's ratio mislead?
#
# Set `mfu_prefill_pct`.

# %% nbgrader={"grade": false, "grade_id": "g_answer", "locked": false, "schema_version": 3, "solution": true, "task": false} tags=["raises-exception"]
mfu_prefill_pct = None
# YOUR CODE HERE

# %% nbgrader={"grade": true, "grade_id": "g_check", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false} tags=["raises-exception"]
with grading.checks():
    grading.check("17-4", "g-mfu-prefill", mfu_prefill_pct, seed=SEED)

# %% [markdown] nbgrader={"grade": true, "grade_id": "g_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# YOUR ANSWER HERE
