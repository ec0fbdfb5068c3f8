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

# %% nbgrader={"grade": false, "grade_id": "ad_answer", "locked": false, "schema_version": 3, "solution": true, "task": false} tags=["raises-exception"]
ttft_ms = decode_share_pct = stall_ms = stall_ratio = None
# YOUR CODE HERE
raise NotImplementedError()

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

# %% nbgrader={"grade": false, "grade_id": "ej_answer", "locked": false, "schema_version": 3, "solution": true, "task": false} tags=["raises-exception"]
chunks = chunk_ms = iteration_ms = itl_gain = ttft_chunked_ms = ttft_increase_pct = None
# YOUR CODE HERE
raise NotImplementedError()

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
