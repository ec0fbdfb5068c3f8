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
# *Calculation, 17 §2 (the roofline, decode at batch 1, prefill, and the effective intensity
# of batched decode; the companion's 17.2 notebook).* A workload's arithmetic intensity $I$ is
# the FLOPs it performs per byte it moves from HBM. On a card of dense peak $\pi$ (FLOP/s) and
# memory bandwidth $\beta$ (bytes/s) the roofline caps it at
#
# $$\text{attainable}(I) = \min(\pi,\ I\,\beta),$$
#
# and the two roofs meet at the ridge point $I^\star = \pi / \beta$: a workload left of it
# ($I < I^\star$) is memory-bound, one at or right of it compute-bound. A forward pass costs
# about 2 FLOPs per parameter per token, $2N$ for a model of $N$ parameters (attention FLOPs
# ignored, as in the chapter), and the weights take $N s$ bytes at $s$ bytes per parameter. One
# decode step of a batch of $b$ sequences reads the weights once for all of them, but each
# sequence's own KV cache, $L\,k$ bytes ($L$ live tokens of $k$ bytes), is read as well:
#
# $$I_\text{decode}(b, L) = \frac{b \cdot 2N}{N s + b\,L\,k}.$$
#
# Prefill of an $n$-token prompt reads the weights once for all $n$ tokens:
# $I_\text{prefill} = 2N n / (N s)$.
#
# 1. **(a)** The card's ridge point $I^\star$ (FLOP per byte).
# 2. **(b)** Decode intensity at batch 1 (weights only, $L = 0$) and **(c)** the share of peak
#    compute it can attain, $\text{attainable}/\pi$, in %.
# 3. **(d)** Decode intensity at batch $b$, weights only; **(e)** and **(f)** the effective
#    intensity with each sequence's live KV at the short and the long context;
#    **(g)** which roof caps batched decode at the long context (`"memory"` or `"compute"`);
#    **(h)** the attainable share of peak at the short context, in %.
# 4. **(i)** Prefill intensity of the given prompt and **(j)** which roof caps it.
# 5. **(k)** The smallest whole batch at which weights-only decode reaches the ridge.
#
# Give each number to at least three significant figures: the grader accepts answers within
# 0.5%, closer than the two figures the chapter prints; (k) is a whole batch, checked exactly.
# Answer (g) and (j) with the word
# `"memory"` or `"compute"`. Some variants store the weights in FP8 and widen them
# to BF16 for the products, so $s$ changes but the peak stays BF16's. If a seed would give
# an unfair variant (a tie, an empty list, a zero count, an answer on a rounding edge),
# `grading.params` moves to the next seed and prints why.
#
# Your given data come from `grading.params("17-3", SEED)`. Seed 0 is the chapter's own data
# (8B on the H100 SXM, $b$ = 64, 600 and 8,000 live tokens, a 2,048-token prompt); on a course hub
# you get a seed of your own, from your user name. Every other seed's long-context batch fits its
# card; the chapter's own does not (the given cell prints what it needs), so at seed 0 (f) is the
# roofline's arithmetic for a batch no 80 GB card holds.

# %% nbgrader={"grade": false, "grade_id": "given", "locked": true, "schema_version": 3, "solution": false, "task": false}
from companion import grading, units
from companion.chapters import ch17

SEED = grading.student_seed()
given = grading.params("17-3", SEED)
hw = given["hardware"]
N, s, k = given["params"], given["bytes_per_param"], given["kv_bytes_per_token"]
b, L_short, L_long = given["batch"], given["short_context"], given["long_context"]
print(f"card: {hw.name}: peak pi = {hw.peak_flops_per_s / 1e12:g} TFLOP/s (dense BF16), "
      f"HBM beta = {hw.mem_bw_bytes_per_s / 1e12:g} TB/s")
print(f"model: {given['model'].name}: N = {N:.3g} params at s = {s:g} bytes, "
      f"k = {k:,} B of KV per token")
print(f"batch b = {b}; live contexts L = {L_short:,} and {L_long:,} tokens; prompt "
      f"n = {given['prompt_tokens']:,} tokens")
need = N * s + b * L_long * k + ch17.RUNTIME_RESERVE_BYTES
print(f"memory at the long context: weights + KV + {ch17.RUNTIME_RESERVE_BYTES / units.GB:g} GB "
      f"reserve = {need / units.GB:.1f} GB of the card's {hw.mem_bytes / units.GB:g} GB: "
      + ("fits" if need <= hw.mem_bytes else "does not fit"))

# %% [markdown]
# ## (a)-(c) The ridge, and decode at batch 1
#
# Set `ridge`, `i1` and `peak_share_1` (in %).
#
# **Then explain**, in two or three sentences in the cell under the check: why does batch-1
# decode's intensity not depend on the model's size, and what does (c) say about the card's
# arithmetic units? A good answer says where $N$ cancels, which roof caps the step, and what
# would have to change to move it right.

# %% nbgrader={"grade": false, "grade_id": "ac_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
ridge = i1 = peak_share_1 = None
### BEGIN SOLUTION
from companion.display import tex
import math

from companion import calc, display


pi, beta = hw.peak_flops_per_s, hw.mem_bw_bytes_per_s
ridge = pi / beta
i1 = 2 * N / (N * s)                      # N cancels: 2 FLOPs per s bytes
attainable_1 = min(pi, i1 * beta)
peak_share_1 = 100 * attainable_1 / pi
display.md(rf"""
**(a)** The ridge is where $I\,\beta$ reaches $\pi$:

$$I^\star = \frac{{\pi}}{{\beta}} = \frac{{{pi / 1e12:g} \times 10^{{12}}\ \text{{FLOP/s}}}}
{{{beta / 1e12:g} \times 10^{{12}}\ \text{{B/s}}}} = {ridge:.1f}\ \text{{FLOP/B}}.$$

**(b)** At batch 1 with no KV, each parameter brings 2 FLOPs and costs $s$ bytes:

$$I_\text{{decode}}(1, 0) = \frac{{2N}}{{N s}} = \frac{{2}}{{{s:g}}} = {i1:g}\ \text{{FLOP/B}}.$$

**(c)** That is left of the ridge, so the memory roof caps it:

$$\frac{{\min(\pi,\ I\beta)}}{{\pi}} = \frac{{\min({pi / 1e12:g},\ {i1:g} \times {beta / 1e12:g})
\ \text{{TFLOP/s}}}}{{{pi / 1e12:g}\ \text{{TFLOP/s}}}}
= \frac{{{attainable_1 / 1e12:g}}}{{{pi / 1e12:g}}} = {peak_share_1:.3f}\,\%.$$
""")
# the companion's own 17 §2 roofline agrees
assert math.isclose(calc.ridge_point(hw), ridge, rel_tol=1e-12)
assert math.isclose(calc.decode_intensity(given["model"], 1), i1, rel_tol=1e-12)
assert math.isclose(100 * calc.roofline_point(i1, hw)["fraction_of_peak"], peak_share_1,
                    rel_tol=1e-12)
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "ac_check", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
with grading.checks():
    grading.check("17-3", "a-ridge", ridge, seed=SEED)
    grading.check("17-3", "b-i1", i1, seed=SEED)
    grading.check("17-3", "c-peak1", peak_share_1, seed=SEED)

# %% [markdown] nbgrader={"grade": true, "grade_id": "ac_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# ### BEGIN SOLUTION
# Batch-1 decode performs 2 FLOPs for each parameter and streams $s$ bytes for it, so its
# intensity is $2/s$ FLOP per byte whatever the model's size: far left of the ridge, and the
# card attains only that intensity times its bandwidth, around one percent of its peak compute
# or less. Nothing is misconfigured; the workload cannot feed the arithmetic units.
# Quoting the 2:4-sparse headline peak instead of the dense one would double the ridge and halve
# every share of peak.
#
# *Look for:* (1) 2 FLOPs and $s$ bytes per parameter, so $N$ cancels; (2) left of the ridge,
# the memory roof caps the step at $I\,\beta$, a small share of peak; (3) only more FLOPs per
# byte read (a batch) moves it right, not a faster arithmetic unit.
# ### END SOLUTION

# %% [markdown]
# ## (d)-(h) Batched decode, with and without the KV reads
#
# Set `iB`, `iB_short`, `iB_long`, `bound_long` and `peak_share_short` (in %).
#
# **Then explain**, in two to four sentences in the cell under the check: why does a batch of
# $b$ multiply (d) by $b$ while (e) and (f) fall short of it, and why would a larger batch not
# rescue the long context? A good answer says which bytes the batch shares and which it does
# not, compares the KV bytes of (f) with the weight bytes, and says what the intensity tends to
# as $b$ grows.

# %% nbgrader={"grade": false, "grade_id": "dh_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
iB = iB_short = iB_long = bound_long = peak_share_short = None
### BEGIN SOLUTION
weight_bytes = N * s
step_flops = b * 2 * N
iB = step_flops / weight_bytes
step_bytes = {L: weight_bytes + b * L * k for L in (L_short, L_long)}
iB_short = step_flops / step_bytes[L_short]
iB_long = step_flops / step_bytes[L_long]
bound_long = "memory" if iB_long < ridge else "compute"
attainable_short = min(pi, iB_short * beta)
peak_share_short = 100 * attainable_short / pi


def relation(x, y):
    """The roofline's test, as LaTeX: below the ridge is memory-bound, at or above compute."""
    return "<" if x < y else r"\ge"


def kv_line(L, intensity):
    gflop = tex(step_flops / 1e9, ',.0f')
    return (rf"$$\begin{{aligned}} I_\text{{decode}}({b}, {tex(L, ',.0f')}) &= "
            rf"\frac{{{gflop}\ \text{{GFLOP}}}}{{{weight_bytes / units.GB:.2f}\ \text{{GB}}"
            rf" + {b} \times {tex(L, ',.0f')} \times {tex(k, ',.0f')}\ \text{{B}}}} \\ &= "
            rf"\frac{{{gflop}\ \text{{GFLOP}}}}{{{step_bytes[L] / units.GB:.2f}\ \text{{GB}}}}"
            rf" = {intensity:.1f}\ \text{{FLOP/B}} \end{{aligned}}$$")


display.md(rf"""
**(d)** Weights only, the batch's $b \cdot 2N$ FLOPs share one read of $N s$ bytes:

$$I_\text{{decode}}(b, 0) = \frac{{b \cdot 2N}}{{N s}} = \frac{{2b}}{{s}}
= \frac{{2 \times {b}}}{{{s:g}}} = {iB:g}\ \text{{FLOP/B}}.$$

**(e), (f)** Each sequence adds its own $L\,k$ bytes to the step, with
$b \cdot 2N = {b} \times 2 \times {N / 1e9:g} \times 10^{{9}} = {tex(step_flops / 1e9, ',.0f')}$ GFLOP
and $N s = {weight_bytes / units.GB:.2f}$ GB:

{kv_line(L_short, iB_short)}

{kv_line(L_long, iB_long)}

**(g)** ${iB_long:.1f} {relation(iB_long, ridge)} I^\star = {ridge:.1f}$: the
**{bound_long}** roof caps batched decode at ${tex(L_long, ',.0f')}$ live tokens.

**(h)** At the short context, ${iB_short:.1f} {relation(iB_short, ridge)} I^\star$, so

$$\frac{{\min(\pi,\ I\beta)}}{{\pi}} = \frac{{\min({pi / 1e12:g},\ {iB_short:.2f} \times
{beta / 1e12:g})\ \text{{TFLOP/s}}}}{{{pi / 1e12:g}\ \text{{TFLOP/s}}}}
= \frac{{{attainable_short / 1e12:.4g}}}{{{pi / 1e12:g}}} = {peak_share_short:.2f}\,\%.$$
""")
m = given["model"]
assert math.isclose(calc.decode_intensity(m, b), iB, rel_tol=1e-12)
assert math.isclose(calc.decode_intensity(m, b, L_short), iB_short, rel_tol=1e-12)
assert math.isclose(calc.decode_intensity(m, b, L_long), iB_long, rel_tol=1e-12)
assert calc.roofline_point(iB_long, hw)["bound"] == bound_long
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
# Weights only, a batch of $b$ multiplies the intensity by $b$ (d): every weight read now serves
# $b$ tokens. But the weights are the only bytes the batch shares. Each sequence adds its own
# $L\,k$ to every step, and at the long context those KV reads outweigh the weights, so the
# intensity falls to a fraction of (d), far left of the ridge. The batch did not change; the
# caches grew. As $b$ grows the intensity tends to $2N/(L\,k)$, a limit set by the context
# alone, so a larger batch cannot carry the long context past the ridge. Long-context decode is
# memory-bound twice: the caches fill the card (capacity, Exercise 17-2) and reading them fills
# the step (bandwidth). (g) comes out the same at every seed: it follows from how decode's KV
# reads grow with the context, not from the card or the model.
#
# *Look for:* (1) the weights are read once for all $b$ sequences, the KV once per sequence;
# (2) at the long context $b\,L\,k$ outweighs $N s$; (3) the limit $2N/(L\,k)$ as $b$ grows,
# which no batch size passes.
# ### END SOLUTION

# %% [markdown]
# ## (i)-(k) Prefill, and the break-even batch
#
# Set `i_prefill`, `bound_prefill` and `breakeven_batch`.
#
# **Then explain**, in two or three sentences in the cell under the check: how can the same
# model on the same card sit on either roof in prefill, and how does the prompt length where
# prefill crosses the ridge compare with (k)? A good answer writes prefill's intensity in $n$
# and $s$, names the crossing length, and says what keeps batched decode from reaching the ridge
# at that batch.

# %% nbgrader={"grade": false, "grade_id": "ik_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
i_prefill = bound_prefill = breakeven_batch = None
### BEGIN SOLUTION
n = given["prompt_tokens"]
i_prefill = 2 * N * n / (N * s)
bound_prefill = "memory" if i_prefill < ridge else "compute"
# weights-only decode reaches the ridge when 2b/s >= I*, i.e. b >= s I* / 2
b_exact = s * ridge / 2
breakeven_batch = math.ceil(b_exact)
display.md(rf"""
**(i)** One read of the weights serves all $n$ prompt tokens:

$$I_\text{{prefill}} = \frac{{2N n}}{{N s}} = \frac{{2n}}{{s}} = \frac{{2 \times {tex(n, ',.0f')}}}{{{s:g}}}
= {tex(i_prefill, ",g")}\ \text{{FLOP/B}}.$$

**(j)** ${tex(i_prefill, ",g")} {relation(i_prefill, ridge)} I^\star = {ridge:.1f}$: the
prefill is **{bound_prefill}**-bound.

**(k)** No search is needed: weights-only decode has $I = 2b/s$, which reaches the ridge when

$$\frac{{2b}}{{s}} \ge I^\star \iff b \ge \frac{{s\,I^\star}}{{2}} = \frac{{{s:g} \times {ridge:.2f}}}{{2}}
= {b_exact:.2f}, \qquad b = \lceil {b_exact:.2f} \rceil = {breakeven_batch}.$$

Check: at $b = {breakeven_batch - 1}$, $I = {2 * (breakeven_batch - 1) / s:g} < {ridge:.2f}$;
at $b = {breakeven_batch}$, $I = {2 * breakeven_batch / s:g} \ge {ridge:.2f}$ FLOP/B.
""")
assert math.isclose(calc.prefill_intensity(m, n), i_prefill, rel_tol=1e-12)
assert calc.roofline_point(i_prefill, hw)["bound"] == bound_prefill
assert calc.roofline_point(calc.decode_intensity(m, breakeven_batch), hw)["bound"] == "compute"
assert calc.roofline_point(calc.decode_intensity(m, breakeven_batch - 1), hw)["bound"] == "memory"
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "ik_check", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
with grading.checks():
    grading.check("17-3", "i-prefill", i_prefill, seed=SEED)
    grading.check("17-3", "j-bound-prefill", bound_prefill, seed=SEED)
    grading.check("17-3", "k-breakeven", breakeven_batch, seed=SEED)

# %% [markdown] nbgrader={"grade": true, "grade_id": "ik_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# ### BEGIN SOLUTION
# Prefill uses every weight it reads once per prompt token, so its intensity is $2n/s$: in BF16
# the prompt length itself. The same model on the same card can therefore sit on either roof in
# prefill: a prompt longer than $s\,I^\star/2$ tokens is compute-bound, a shorter one stays on
# the memory roof. Weights-only decode needs a batch of that same size, $s\,I^\star/2$, to reach
# the ridge (k), and only if its KV reads were free; (e) and (f) show they are not. This is why
# the batch is the first lever and KV memory the first wall.
#
# *Look for:* (1) $I_\text{prefill} = 2n/s$, set by the prompt length; (2) the crossing at
# $n = s\,I^\star/2$ tokens, the same number as the batch of (k); (3) decode's per-sequence KV
# reads keep a real batch of that size below the ridge.
# ### END SOLUTION
