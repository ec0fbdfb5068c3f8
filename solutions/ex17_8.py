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

# %% nbgrader={"grade": false, "grade_id": "af_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
weights_gb = step_ms = ceiling = baseline = gain = intensity = None
### BEGIN SOLUTION
from companion.display import tex, tex_sci
import math

from companion import calc
from companion.display import md


beta = hw.mem_bw_bytes_per_s
# step 1: the bytes one token streams, D_w = N s
weights = N * s
weights_gb = weights / units.GB
# step 2: the time to stream them, and its inverse, the batch-1 ceiling
step = weights / beta
step_ms = step / units.ms
ceiling = 1 / step
# step 3: the same for BF16 weights (s = 2), and the gain
bf16_weights = N * 2
baseline = beta / bf16_weights
gain = ceiling / baseline
# step 4: the intensity, 2N FLOPs over N s bytes
intensity = 2 * N / weights

md(rf"""
**Weight bytes.** $D_w = N s = {tex_sci(N)} \times {s:g}\ \text{{B}} = {weights_gb:g}\ \text{{GB}}$.

**Time per token and ceiling.**

$$T_\text{{step}} = \frac{{D_w}}{{\beta}} = \frac{{{weights_gb:g}\ \text{{GB}}}}{{{tex(beta / units.GB, ',.0f')}\ \text{{GB/s}}}}
= {step_ms:.3f}\ \text{{ms}}, \qquad
\frac{{1}}{{T_\text{{step}}}} = {ceiling:.1f}\ \text{{tok/s}}.$$

**BF16 for comparison.** $D_w = 2N = {bf16_weights / units.GB:g}\ \text{{GB}}$, so
$\beta / (2N) = {baseline:.1f}$ tok/s, and the gain is
${ceiling:.1f} / {baseline:.1f} = {gain:.3f} = 2/s$.

**Intensity.** $I = 2N / (N s) = 2 / {s:g} = {intensity:.3f}$ FLOP/byte, against a ridge of
$\pi / \beta = {hw.peak_flops_per_s / beta:.0f}$ FLOP/byte on this card.
""")
# check: the companion's 17 §10 quantization ceiling
q = calc.quantization_ceiling(given["model"], hw, s)
assert math.isclose(q["tokens_per_s"], ceiling, rel_tol=1e-9)
assert math.isclose(q["baseline_tokens_per_s"], baseline, rel_tol=1e-9)
assert math.isclose(q["intensity_flop_per_byte"], intensity, rel_tol=1e-9)
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
# At batch 1 the step is the weight read, so the ceiling scales with $1/s$: the gain over BF16
# is exactly $2/s$, and the intensity rises by the same factor (derivation above). It stays
# far left of the card's ridge, so the step remains a memory read and the arithmetic is no
# limit. Quantization is the first lever in the chapter's list that can change the output,
# so the gain is only free once the evaluations say the answers did not suffer.
#
# *Look for:* (1) the batch-1 step is the weight read, so time scales with $s$; (2) gain and
# intensity both rise by $2/s$; (3) the intensity stays far below the ridge, so the step is
# still a memory read; (4) bonus: the gain has a price in quality to check.
# ### END SOLUTION

# %% [markdown]
# ## (g), (h) Long context: the KV cache does not shrink
#
# **Then explain**, in two or three sentences in the cell under the check: why is (h) smaller
# than (e), and what does it tend to as the context grows?
#
# Set `ceiling_long` and `gain_long`.

# %% nbgrader={"grade": false, "grade_id": "gh_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
ceiling_long = gain_long = None
### BEGIN SOLUTION
# step 1: the live KV one step reads at context L (BF16, unchanged by weight quantization)
kv = L * k
# step 2: the step now streams weights plus KV, with quantized and with BF16 weights
ceiling_long = beta / (weights + kv)
bf16_long = beta / (bf16_weights + kv)
gain_long = ceiling_long / bf16_long

md(rf"""
**KV read per step.** $L k = {tex(L)} \times {tex(k)}\ \text{{B}} = {kv / units.GB:.3f}\ \text{{GB}}$.

**Ceilings at this context.**

$$\frac{{\beta}}{{N s + L k}} = \frac{{{tex(beta / units.GB, ',.0f')}\ \text{{GB/s}}}}{{({weights_gb:g} + {kv / units.GB:.3f})\ \text{{GB}}}}
= {ceiling_long:.1f}\ \text{{tok/s}}, \qquad
\frac{{\beta}}{{2N + L k}} = \frac{{{tex(beta / units.GB, ',.0f')}}}{{({bf16_weights / units.GB:g} + {kv / units.GB:.3f})}}
= {bf16_long:.1f}\ \text{{tok/s}}.$$

**Gain.** $\dfrac{{2N + L k}}{{N s + L k}} = {ceiling_long:.1f} / {bf16_long:.1f} = {gain_long:.3f}$,
below the short-context ${gain:.3f}$.
""")
# check: the companion's step at context L, with and without quantized weights
m = given["model"]
assert math.isclose(calc.decode_vs_context(m, hw, L, bytes_per_param=s)["tokens_per_s"],
                    ceiling_long, rel_tol=1e-9)
assert math.isclose(calc.decode_vs_context(m, hw, L)["tokens_per_s"], bf16_long, rel_tol=1e-9)
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "gh_check", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
with grading.checks():
    grading.check("17-8", "g-ceiling-long", ceiling_long, seed=SEED)
    grading.check("17-8", "h-speedup-long", gain_long, seed=SEED)

# %% [markdown] nbgrader={"grade": true, "grade_id": "gh_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# ### BEGIN SOLUTION
# At a long context each step also reads the BF16 cache, $L k$ bytes that quantizing the
# weights does not touch. The gain is then $(2N + Lk)/(Ns + Lk)$, which falls from $2/s$
# toward 1 as $Lk$ grows (see the derivation above). The longer the context, the more of the
# stream is cache, and the more the next lever has to be the cache itself (FP8 KV, fewer KV
# heads).
#
# *Look for:* (1) the BF16 cache, $Lk$, is read every step and quantizing the weights leaves
# it alone; (2) the gain $(2N + Lk)/(Ns + Lk)$ falls toward 1 as $L$ grows; (3) the next
# lever is the cache itself.
# ### END SOLUTION

# %% [markdown]
# ## (i), (j) A batch at the long context: the cache is most of the stream
#
# Set `kv_batch_gb` and `gain_batch`.
#
# **Then explain**, in three or four sentences in the cell under the check: why is (j) close
# to 1, and what does quantizing the weights still buy a batched server at this context?

# %% nbgrader={"grade": false, "grade_id": "ij_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
kv_batch_gb = gain_batch = None
### BEGIN SOLUTION
from companion.chapters import ch17

# step 1: one copy of the weights per step, but every sequence reads its own BF16 cache
kv_batch = B * L * k
kv_batch_gb = kv_batch / units.GB
# step 2: the step's bytes with quantized and with BF16 weights; the gain is their ratio
step_q = (weights + kv_batch) / beta
step_bf16 = (bf16_weights + kv_batch) / beta
gain_batch = step_bf16 / step_q
# step 3: what each configuration needs in memory, with 17 §4's runtime reserve
reserve = ch17.RUNTIME_RESERVE_BYTES
need_q, need_bf16 = weights + kv_batch + reserve, bf16_weights + kv_batch + reserve

md(rf"""
**KV read per step.** $b L k = {B} \times {tex(L)} \times {tex(k)}\ \text{{B}}
= {kv_batch_gb:.1f}\ \text{{GB}}$, {B} times one sequence's {kv / units.GB:.3f} GB, against
{weights_gb:g} GB of quantized weights read once.

**Gain.** The BF16 step over the quantized one, each its bytes over $\beta$:

$$\frac{{2N + b L k}}{{N s + b L k}}
= \frac{{{bf16_weights / units.GB:g} + {kv_batch_gb:.1f}}}{{{weights_gb:g} + {kv_batch_gb:.1f}}}
= {gain_batch:.3f},$$

against {gain_long:.3f} for one sequence at this context and {gain:.3f} at batch 1 and short
context: the cache is {100 * kv_batch / (weights + kv_batch):.0f}% of what a quantized step
reads, and quantizing the weights shrinks only the rest.

**Memory.** The quantized configuration needs {need_q / units.GB:.1f} GB with the runtime
reserve, {"within" if need_q <= hw.mem_bytes else "beyond"} the card's
{hw.mem_bytes / units.GB:g} GB; with BF16 weights it would need {need_bf16 / units.GB:.1f} GB,
{"within the card too" if need_bf16 <= hw.mem_bytes else "more than the card holds"}.
""")
# check: the companion's roofline step at batch b, quantized against BF16 weights
q_batch = calc.quantized_decode_speedup(given["model"], hw, s, batch=B, context_tokens=L)
assert math.isclose(q_batch["speedup"], gain_batch, rel_tol=1e-9)
assert q_batch["bound"] == "memory"
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "ij_check", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
with grading.checks():
    grading.check("17-8", "i-kv-batch", kv_batch_gb, seed=SEED)
    grading.check("17-8", "j-speedup-batch", gain_batch, seed=SEED)

# %% [markdown] nbgrader={"grade": true, "grade_id": "ij_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# ### BEGIN SOLUTION
# A batch shares one read of the weights but not the caches: the KV term is $b$ times one
# sequence's, while the weight term stays as it was, so at a serving batch and a long context
# the cache is most of every step and the gain $(2N + bLk)/(Ns + bLk)$ sinks close to 1
# (derivation above). Quantizing the weights then buys little speed per step; what it still
# buys is room: the bytes it frees can hold more sequences' caches, which is where a batched
# server gains. The throughput lever for this regime is the cache itself (FP8 KV, fewer KV
# heads) or a shorter context.
#
# *Look for:* (1) the weights are read once per step, the caches $b$ times; (2) so the cache
# is most of the step and the gain sinks toward 1; (3) the freed bytes hold more sequences'
# caches, a larger batch; (4) bonus: the BF16 baseline may not even fit the card.
# ### END SOLUTION
