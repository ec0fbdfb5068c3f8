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

# %% nbgrader={"grade": false, "grade_id": "ac_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
bytes_per_token_gb = mbu_pct = mfu_decode_pct = None
### BEGIN SOLUTION
from companion.display import tex
import math

from companion import calc, display


pi, beta = hw.peak_flops_per_s, hw.mem_bw_bytes_per_s
rate = given["decode_tokens_per_s"]
bytes_per_token = D_w / b + L * k
bytes_per_token_gb = bytes_per_token / units.GB
bytes_per_s = rate * bytes_per_token
mbu_pct = 100 * bytes_per_s / beta
flops_per_s = rate * 2 * N
mfu_decode_pct = 100 * flops_per_s / pi
display.md(rf"""
**(a)** Each step's weight read is shared by its $b$ tokens; each sequence's KV is its own:

$$\frac{{D_w}}{{b}} + L\,k = \frac{{{D_w / units.GB:g}\ \text{{GB}}}}{{{b}}} + {tex(L, ',.0f')} \times
{tex(k, ',.0f')}\ \text{{B}} = {bytes_per_token_gb:.3f}\ \text{{GB per token}}.$$

**(b)** The measured rate times those bytes, over the bandwidth:

$$\text{{MBU}} = \frac{{\text{{tok/s}} \times (D_w/b + L\,k)}}{{\beta}}
= \frac{{{tex(rate, ',.0f')} \times {bytes_per_token_gb:.3f} \times 10^{{9}}\ \text{{B}}}}
{{{beta / 1e12:g} \times 10^{{12}}\ \text{{B/s}}}}
= \frac{{{bytes_per_s / 1e12:.3f}\ \text{{TB/s}}}}{{{beta / 1e12:g}\ \text{{TB/s}}}}
= {mbu_pct:.1f}\,\%.$$

**(c)** The same rate in FLOPs, over the dense peak:

$$\text{{MFU}} = \frac{{\text{{tok/s}} \times 2N}}{{\pi}}
= \frac{{{tex(rate, ',.0f')} \times 2 \times {N / 1e9:g} \times 10^{{9}}}}{{{pi / 1e12:g} \times
10^{{12}}\ \text{{FLOP/s}}}} = \frac{{{flops_per_s / 1e12:.3f}\ \text{{TFLOP/s}}}}
{{{pi / 1e12:g}\ \text{{TFLOP/s}}}} = {mfu_decode_pct:.3f}\,\%.$$
""")
# the companion's own 17 §9 ratios agree
util = calc.decode_utilization(given["model"], hw, rate, batch=b, context_tokens=L)
assert math.isclose(100 * util["mbu"], mbu_pct, rel_tol=1e-9)
assert math.isclose(100 * util["mfu"], mfu_decode_pct, rel_tol=1e-9)
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "ac_check", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false}
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

# %% nbgrader={"grade": false, "grade_id": "df_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
headroom = ceiling = promise_possible = None
### BEGIN SOLUTION
headroom = 100 / mbu_pct
step_bytes = D_w + b * L * k
step_s = step_bytes / beta
ceiling = b / step_s
promised = given["promised_speedup"]
promise_possible = headroom >= promised
relation = r"\ge" if promise_possible else "<"
display.md(rf"""
**(d)** The rate can grow until the bytes it streams fill the bandwidth,
$\text{{MBU}} = 100\,\%$:

$$\frac{{1}}{{\text{{MBU}}}} = \frac{{100\,\%}}{{{mbu_pct:.1f}\,\%}} = {headroom:.2f}\times.$$

**(e)** On the memory roof one step moves $D_w + b\,L\,k$ bytes and emits $b$ tokens:

$$\frac{{b\,\beta}}{{D_w + b\,L\,k}} = \frac{{{b} \times {beta / 1e12:g} \times 10^{{12}}\ \text{{B/s}}}}
{{{step_bytes / units.GB:.3f} \times 10^{{9}}\ \text{{B}}}} = {tex(ceiling, ',.0f')}\ \text{{tok/s}},$$

which is the measured rate times the headroom: ${tex(rate, ',.0f')} \times {headroom:.2f} =
{tex(rate * headroom, ',.0f')}$ tok/s.

**(f)** A kernel can at best bring the rate to that ceiling:
${headroom:.2f} {relation} {promised:g}$, so the promised
${promised:g}\times$ is **{"possible" if promise_possible else "not possible"}** without
changing the workload.
""")
assert math.isclose(util["headroom"], headroom, rel_tol=1e-9)
assert math.isclose(calc.decode_vs_context(given["model"], hw, L, batch=b)["tokens_per_s"],
                    ceiling, rel_tol=1e-9)
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "df_check", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
with grading.checks():
    grading.check("17-4", "d-headroom", headroom, seed=SEED)
    grading.check("17-4", "e-ceiling", ceiling, seed=SEED)
    grading.check("17-4", "f-promise-possible", promise_possible, seed=SEED)

# %% [markdown] nbgrader={"grade": true, "grade_id": "df_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# ### BEGIN SOLUTION
# Decode runs against the memory roof, so MBU is its ratio: it says what share of the ceiling
# (e) the measured rate already reaches, and 60-80% counts as healthy (17 §9). The MFU of the
# same measurement stays low however healthy the decode is, since its intensity (at most about
# $2b/s$ FLOP per byte, with $s$ the bytes per weight, 2 in BF16) sits far left of the ridge;
# it says nothing about this phase. Since no
# kernel can push the rate past the ceiling, $1/\text{MBU}$ bounds any kernel speedup; a
# promise beyond it has to come from changing the workload (a larger batch, smaller weights or a
# smaller KV cache), not from a kernel.
#
# *Look for:* (1) decode is memory-bound, so MBU is its ratio; (2) MFU stays low because the
# intensity is far below the ridge; (3) $1/\text{MBU}$ bounds any kernel speedup; (4) beating
# it needs a different workload (batch, weight or KV bytes).
# ### END SOLUTION

# %% [markdown]
# ## (g) Prefill MFU
#
# **Then explain**, in two or three sentences in the cell under the check: is this prefill
# healthy by the ratio that fits its roof, and why would judging each phase by the other
# phase's ratio mislead?
#
# Set `mfu_prefill_pct`.

# %% nbgrader={"grade": false, "grade_id": "g_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
mfu_prefill_pct = None
### BEGIN SOLUTION
prefill_rate = given["prefill_tokens_per_s"]
prefill_flops_per_s = prefill_rate * 2 * N
mfu_prefill_pct = 100 * prefill_flops_per_s / pi
display.md(rf"""
**(g)** The prompt rate in FLOPs, over the dense peak:

$$\text{{MFU}} = \frac{{\text{{tok/s}} \times 2N}}{{\pi}}
= \frac{{{tex(prefill_rate, ',.0f')} \times 2 \times {N / 1e9:g} \times 10^{{9}}}}{{{pi / 1e12:g} \times
10^{{12}}\ \text{{FLOP/s}}}} = \frac{{{prefill_flops_per_s / 1e12:.1f}\ \text{{TFLOP/s}}}}
{{{pi / 1e12:g}\ \text{{TFLOP/s}}}} = {mfu_prefill_pct:.1f}\,\%.$$
""")
assert math.isclose(
    100 * calc.prefill_utilization(given["model"], hw, prefill_rate)["mfu"], mfu_prefill_pct,
    rel_tol=1e-9)
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "g_check", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
with grading.checks():
    grading.check("17-4", "g-mfu-prefill", mfu_prefill_pct, seed=SEED)

# %% [markdown] nbgrader={"grade": true, "grade_id": "g_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# ### BEGIN SOLUTION
# Prefill runs against the compute roof, so MFU is its ratio; 40-60% counts as a strong
# prefill (17 §9), and a value below that band leaves headroom worth profiling. Judge decode by
# MBU and prefill by MFU: quoting the other ratio for a phase gives the wrong verdict in both
# directions.
#
# *Look for:* (1) prefill is compute-bound, so MFU is its ratio; (2) the value set against the
# 40-60% band (17 §9); (3) decode by MBU, prefill by MFU, or the verdict is wrong both ways.
# ### END SOLUTION
