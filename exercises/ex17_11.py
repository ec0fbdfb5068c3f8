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
# # Exercise 17-11 · Head-of-line blocking, and what chunked prefill trades for it
#
# *Calculation, 17 §3 and §6.* A prefill of $n$ tokens costs $2Nn$ FLOPs ($N$ parameters;
# attention FLOPs ignored, as in the chapter) and runs at an assumed fraction $u$ of the peak
# $\pi$ (17 §2-§3):
#
# $$t_\text{prefill}(n) = \frac{2 N n}{u\,\pi}.$$
#
# Decode runs at a healthy batch, one step $T_\text{step}$ per output token. The given step is
# 17 §5's memory-bound step of its naive batch, $T_\text{step} = (D_w + b\,L\,k)/\beta$ with
# $b$ sequences of $L$ live tokens (the given data print the inputs): the step 17 §6 and its
# notebook run next to each chunk. A request's wall clock is its TTFT (here: the prefill alone,
# no queueing) plus one step per output token, $T = \text{TTFT} + G\,T_\text{step}$ (17 §3).
#
# When a long prompt of $n$ tokens is prefilled in one piece, every running stream waits for
# it: the stall $t_\text{prefill}(n)$ is the worst ITL as 17 §3 and §6 count it, the prefill
# alone (notebooks 17_03 and 17_06 and the decision table count it the same way). Chunked
# prefill instead runs one chunk of $c$ tokens per round next to the decode step (17 §6):
#
# $$\text{chunks} = \left\lceil \frac{n}{c} \right\rceil, \qquad
# T_\text{chunk} = \frac{2 N c}{u\,\pi}, \qquad
# T_r = T_\text{step} + T_\text{chunk}, \qquad
# \text{TTFT} \approx \text{chunks} \times T_r .$$
#
# 1. **(a)** The prefill time of the typical prompt, in ms, and **(b)** the share of the
#    request's wall clock spent decoding, $G\,T_\text{step} / T$, in %.
# 2. **(c)** The stall an unchunked long prompt imposes on every in-flight decode,
#    $t_\text{prefill}(n)$ of the long prompt, in ms, and **(d)** the worst ITL as a multiple
#    of the decode step, $t_\text{prefill} / T_\text{step}$.
# 3. **(e)** The chunks the long prompt splits into; **(f)** one chunk's compute time, in ms;
#    **(g)** one round $T_r$ (decode step + one chunk), in ms; **(h)** the worst-ITL
#    improvement (17_06's "x better"), the worst ITL unchunked over the worst ITL chunked,
#    $t_\text{prefill} / T_r$.
# 4. **(i)** The long prompt's TTFT when chunked, charging every chunk a full round, in ms, and
#    **(j)** its increase over a dedicated prefill, (i) / (c) - 1, in %.
#
# <details><summary>Note: which decode step, and which worst ITL</summary>
#
# The decode step is §5's unrounded step (§6's, not §3's rounded one). The round that admits
# the whole prompt also runs the decode step, so a scheduler (the companion's simulator) sees
# an unchunked worst gap of $T_\text{step} + t_\text{prefill}$, one step more than the
# chapter's reading. The grader accepts that reading in (d) and (h) too, and its message says
# which reading you used.
#
# </details>
#
# Your given data come from `grading.params("17-11", SEED)`. Seed 0 is the chapter's own data
# (8B on an H100 SXM at 50% of peak, a 2,048-token prompt and 250 outputs, §5's step, an
# 8,000-token prompt in 512-token chunks); on a course hub
# you get a seed of your own, from your user name.

# %% nbgrader={"grade": false, "grade_id": "given", "locked": true, "schema_version": 3, "solution": false, "task": false}
import math

from companion import grading, units

SEED = grading.student_seed()
given = grading.params("17-11", SEED)
hw, N, u = given["hardware"], given["params"], given["efficiency"]
step = given["decode_step_s"]
print(f"card: {hw.name}, pi = {hw.peak_flops_per_s / 1e12:g} TFLOP/s dense, beta = "
      f"{hw.mem_bw_bytes_per_s / 1e12:g} TB/s; prefill at u = {u:.0%} of peak; model "
      f"{given['model'].name}, N = {N:.3g}")
print(f"typical request: {given['prompt_tokens']:,}-token prompt, G = "
      f"{given['output_tokens']} output tokens")
print(f"decode step T_step = (D_w + b L k) / beta = ({given['weight_bytes'] / units.GB:g} GB + "
      f"{given['decode_batch']} x {given['live_tokens']} x {given['kv_bytes_per_token']:,} B) / "
      f"beta = {step / units.ms:.3f} ms (17 §5's naive batch)")
print(f"long prompt n = {given['long_prompt_tokens']:,} tokens, chunks of "
      f"c = {given['chunk_tokens']:,}")

# %% [markdown]
# ## (a)-(d) One request, and one long prompt
#
# Set `ttft_ms`, `decode_share_pct`, `stall_ms` and `stall_ratio`.
#
# **Then explain**, in two or three sentences in the cell under the check: which phase takes
# most of a typical request's wall clock, and why does one long prompt prefilled whole hurt
# every running stream's p99 ITL while barely moving the mean?

# %% nbgrader={"grade": false, "grade_id": "ad_answer", "locked": false, "schema_version": 3, "solution": true, "task": false} tags=["raises-exception"]
ttft_ms = decode_share_pct = stall_ms = stall_ratio = None
# YOUR CODE HERE

# %% nbgrader={"grade": true, "grade_id": "ad_check", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false} tags=["raises-exception"]
with grading.checks():
    grading.check("17-11", "a-ttft", ttft_ms, seed=SEED)
    grading.check("17-11", "b-decode-share", decode_share_pct, seed=SEED)
    grading.check("17-11", "c-stall", stall_ms, seed=SEED)
    grading.check("17-11", "d-stall-ratio", stall_ratio, seed=SEED)

# %% [markdown] nbgrader={"grade": true, "grade_id": "ad_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# YOUR ANSWER HERE

# %% [markdown]
# ## (e)-(j) Chunked prefill
#
# Set `chunks`, `chunk_ms`, `iteration_ms`, `itl_gain`, `ttft_chunked_ms` and
# `ttft_increase_pct`.
#
# **Then explain**, in three or four sentences in the cell under the check: what does chunking
# buy the running streams, what does the long prompt pay for it, and how does the chunk size
# move the two? When would you move the phases to separate pools instead?

# %% nbgrader={"grade": false, "grade_id": "ej_answer", "locked": false, "schema_version": 3, "solution": true, "task": false} tags=["raises-exception"]
chunks = chunk_ms = iteration_ms = itl_gain = ttft_chunked_ms = ttft_increase_pct = None
# YOUR CODE HERE

# %% nbgrader={"grade": true, "grade_id": "ej_check", "locked": true, "points": 6, "schema_version": 3, "solution": false, "task": false} tags=["raises-exception"]
with grading.checks():
    grading.check("17-11", "e-chunks", chunks, seed=SEED)
    grading.check("17-11", "f-chunk", chunk_ms, seed=SEED)
    grading.check("17-11", "g-iteration", iteration_ms, seed=SEED)
    grading.check("17-11", "h-itl-gain", itl_gain, seed=SEED)
    grading.check("17-11", "i-ttft-chunked", ttft_chunked_ms, seed=SEED)
    grading.check("17-11", "j-ttft-increase", ttft_increase_pct, seed=SEED)

# %% [markdown] nbgrader={"grade": true, "grade_id": "ej_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# YOUR ANSWER HERE
