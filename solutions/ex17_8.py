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
# ### END SOLUTION

# %% [markdown]
# ## (g), (h) Long context: the KV cache does not shrink
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
# ### END SOLUTION
