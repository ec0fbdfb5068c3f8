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
# *Calculation, 17 §3 and §6.* A prefill of $n$ tokens costs $2Pn$ FLOPs and runs at an
# assumed fraction of peak (attention FLOPs ignored, as in the chapter). A request's wall
# clock is its TTFT (here: the prefill alone, no queueing) plus one decode step per output
# token. When a long prompt is prefilled in one piece, every in-flight decode waits for it;
# chunked prefill instead runs one fixed-size chunk per iteration next to the decode step.
#
# 1. **(a)** The prefill time of the typical prompt, in ms, and **(b)** the share of the
#    request's wall clock spent decoding, in %.
# 2. **(c)** The stall an unchunked long prompt imposes on every in-flight decode, in ms, and
#    **(d)** the worst ITL as a multiple of the normal step.
# 3. **(e)** The chunks the long prompt splits into; **(f)** one chunk's compute time, in ms;
#    **(g)** one iteration (decode step + one chunk), in ms; **(h)** how much the worst ITL
#    improves, (c) / (g).
# 4. **(i)** The long prompt's TTFT when chunked, charging every chunk a full iteration, in
#    ms, and **(j)** its increase over a dedicated prefill, in %.
#
# Your given data come from `grading.params("17-11", SEED)`. Seed 0 is the chapter's own data
# (8B on an H100 SXM at 50% of peak, a 2,048-token prompt and 250 outputs, a ~6 ms decode
# step, an 8,000-token prompt in 512-token chunks); your instructor may give you another seed.

# %% nbgrader={"grade": false, "grade_id": "given", "locked": true, "schema_version": 3, "solution": false, "task": false}
import math

from companion import grading, units

SEED = 0
given = grading.params("17-11", SEED)
hw, P, eff = given["hardware"], given["params"], given["efficiency"]
step = given["decode_step_s"]
print(f"card: {hw.name}, {hw.peak_flops_per_s / 1e12:g} TFLOP/s dense; prefill at {eff:.0%} "
      f"of peak; model {given['model'].name}, P = {P:.3g}")
print(f"typical request: {given['prompt_tokens']:,}-token prompt, "
      f"{given['output_tokens']} output tokens; decode step {step / units.ms:g} ms")
print(f"long prompt {given['long_prompt_tokens']:,} tokens, chunks of "
      f"{given['chunk_tokens']:,}")

# %% [markdown]
# ## (a)-(d) One request, and one long prompt
#
# Set `ttft_ms`, `decode_share_pct`, `stall_ms` and `stall_ratio`.

# %% nbgrader={"grade": false, "grade_id": "ad_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
ttft_ms = decode_share_pct = stall_ms = stall_ratio = None
### BEGIN SOLUTION
def prefill_s(tokens):
    return 2 * P * tokens / (eff * hw.peak_flops_per_s)


ttft = prefill_s(given["prompt_tokens"])
decode = given["output_tokens"] * step
ttft_ms = ttft / units.ms
decode_share_pct = 100 * decode / (ttft + decode)
stall = prefill_s(given["long_prompt_tokens"])
stall_ms = stall / units.ms
stall_ratio = stall / step
print(f"TTFT {ttft_ms:.0f} ms + decode {decode / units.ms:,.0f} ms: {decode_share_pct:.0f}% "
      f"decode; long prompt stalls {stall_ms:.0f} ms = {stall_ratio:.0f}x a step")
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "ad_check", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false}
with grading.checks():
    grading.check("17-11", "a-ttft", ttft_ms, seed=SEED)
    grading.check("17-11", "b-decode-share", decode_share_pct, seed=SEED)
    grading.check("17-11", "c-stall", stall_ms, seed=SEED)
    grading.check("17-11", "d-stall-ratio", stall_ratio, seed=SEED)

# %% [markdown] nbgrader={"grade": true, "grade_id": "ad_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# ### BEGIN SOLUTION
# 2 x 8e9 x 2,048 = 32.8 TFLOP at 494.5 TFLOP/s is 66 ms; 250 steps of 6 ms are 1.5 s, so
# 96% of the request is decode, the phase running at a fraction of a percent of the chip's
# arithmetic. An 8,000-token prompt is 128 TFLOP, 259 ms of solid compute: every user's
# 6 ms stream freezes for ~43 steps. The mean ITL barely moves; p99 spikes exactly when long
# prompts arrive.
# ### END SOLUTION

# %% [markdown]
# ## (e)-(j) Chunked prefill
#
# Set `chunks`, `chunk_ms`, `iteration_ms`, `itl_gain`, `ttft_chunked_ms` and
# `ttft_increase_pct`.

# %% nbgrader={"grade": false, "grade_id": "ej_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
chunks = chunk_ms = iteration_ms = itl_gain = ttft_chunked_ms = ttft_increase_pct = None
### BEGIN SOLUTION
n, c = given["long_prompt_tokens"], given["chunk_tokens"]
chunks = math.ceil(n / c)
chunk = prefill_s(min(c, n))
iteration = step + chunk
chunk_ms, iteration_ms = chunk / units.ms, iteration / units.ms
itl_gain = stall / iteration
ttft_chunked = chunks * iteration
ttft_chunked_ms = ttft_chunked / units.ms
ttft_increase_pct = 100 * (ttft_chunked / stall - 1)
print(f"{chunks} chunks of {chunk_ms:.1f} ms; iteration {iteration_ms:.1f} ms; worst ITL "
      f"{itl_gain:.1f}x better; TTFT {ttft_chunked_ms:.0f} ms (+{ttft_increase_pct:.0f}%)")
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "ej_check", "locked": true, "points": 6, "schema_version": 3, "solution": false, "task": false}
with grading.checks():
    grading.check("17-11", "e-chunks", chunks, seed=SEED)
    grading.check("17-11", "f-chunk", chunk_ms, seed=SEED)
    grading.check("17-11", "g-iteration", iteration_ms, seed=SEED)
    grading.check("17-11", "h-itl-gain", itl_gain, seed=SEED)
    grading.check("17-11", "i-ttft-chunked", ttft_chunked_ms, seed=SEED)
    grading.check("17-11", "j-ttft-increase", ttft_increase_pct, seed=SEED)

# %% [markdown] nbgrader={"grade": true, "grade_id": "ej_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# ### BEGIN SOLUTION
# 8,000 tokens make 16 chunks of 512 (the last one partial); a chunk is 16.6 ms, so an
# iteration is ~22.6 ms and the worst ITL falls from 259 ms to ~23 ms, about 11x. The long
# prompt pays: 16 iterations are ~361 ms against 259 ms dedicated, about +40%. Chunk size is
# the knob: small chunks favour streaming chat, large ones long-document TTFT, and when no
# chunk size satisfies both SLOs the phases belong on separate pools (§8).
# ### END SOLUTION
