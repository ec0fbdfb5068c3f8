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

# %% nbgrader={"grade": false, "grade_id": "ad_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
ttft_ms = decode_share_pct = stall_ms = stall_ratio = None
### BEGIN SOLUTION
from companion.display import tex, tex_sci
from companion import calc, ledger
from companion.display import md
from companion.sim.scenarios import hol_scenario


reached = u * hw.peak_flops_per_s            # the FLOP/s prefill actually gets


def prefill_s(tokens):
    """T_prefill(n) = 2 N n / (u pi)."""
    return 2 * N * tokens / reached


# step 1: the typical request: its prefill, its decode, and the decode's share
n_typ, G = given["prompt_tokens"], given["output_tokens"]
ttft = prefill_s(n_typ)
decode = G * step
ttft_ms = ttft / units.ms
decode_share_pct = 100 * decode / (ttft + decode)
# step 2: the long prompt's prefill, run whole in one round
n_long = given["long_prompt_tokens"]
stall = prefill_s(n_long)
stall_ms = stall / units.ms
# step 3: the worst ITL as the chapter counts it, the prefill alone, over the decode step
stall_ratio = stall / step
worst = step + stall                          # the simulator's round: it also runs the step
sim_ratio = worst / step

chapter_note = ""
if given["seed"] == 0:
    printed = {e.id: e.printed for e in ledger.entries()}["17.3/hol-worst-itl-x"]
    chapter_note = (f"17 §3 prints about {printed}×, dividing the prefill by its rounded "
                    f"step. ")
md(rf"""
**Typical request.** The prefill reaches $u\,\pi = {u:g} \times {tex(hw.peak_flops_per_s / 1e12, ',.0f')}\ \text{{TFLOP/s}} = {reached / 1e12:.1f}\ \text{{TFLOP/s}}$:

$$\text{{TTFT}} = \frac{{2 N n}}{{u\,\pi}} = \frac{{2 \times {tex_sci(N)} \times {tex(n_typ)}}}{{{reached / 1e12:.1f} \times 10^{{12}}}}
= \frac{{{2 * N * n_typ / 1e12:.1f}\ \text{{TFLOP}}}}{{{reached / 1e12:.1f}\ \text{{TFLOP/s}}}} = {ttft_ms:.1f}\ \text{{ms}}.$$

$$G\,T_\text{{step}} = {G} \times {step / units.ms:.3f}\ \text{{ms}} = {tex(decode / units.ms, ',.0f')}\ \text{{ms}}, \qquad
\frac{{G\,T_\text{{step}}}}{{\text{{TTFT}} + G\,T_\text{{step}}}} = \frac{{{tex(decode / units.ms, ',.0f')}}}{{{ttft_ms:.1f} + {tex(decode / units.ms, ',.0f')}}}
= {decode_share_pct:.1f}\%.$$

**The long prompt, whole.**

$$t_\text{{prefill}} = \frac{{2 \times {tex_sci(N)} \times {tex(n_long)}}}{{{reached / 1e12:.1f} \times 10^{{12}}}}
= \frac{{{2 * N * n_long / 1e12:.0f}\ \text{{TFLOP}}}}{{{reached / 1e12:.1f}\ \text{{TFLOP/s}}}} = {stall_ms:.1f}\ \text{{ms}}.$$

**Worst ITL.** Every running stream waits out the whole prefill:

$$\frac{{t_\text{{prefill}}}}{{T_\text{{step}}}} = \frac{{{stall_ms:.1f}}}{{{step / units.ms:.3f}}}
= {stall_ratio:.2f}\times.$$

{chapter_note}The round that admits the prompt also runs the decode step, so a scheduler sees one step more,
$({step / units.ms:.3f} + {stall_ms:.1f}) / {step / units.ms:.3f} = {sim_ratio:.2f}\times$
(the simulator's reading, also accepted).
""")
# check: the companion's 17 §3 closed forms, and its scheduler simulator for the worst gap
m = given["model"]
assert math.isclose(calc.prefill_compute_s(m, hw, n_typ, efficiency=u), ttft, rel_tol=1e-9)
assert math.isclose(calc.request_budget(ttft, G, step)["decode_share"] * 100, decode_share_pct,
                    rel_tol=1e-9)
hol = hol_scenario(m, hw, n_long, step, u, decode_batch=4)
assert math.isclose(hol["closed_form"]["stall_s"], stall, rel_tol=1e-9)
assert math.isclose(hol["closed_form"]["worst_itl_over_step"], stall_ratio, rel_tol=1e-9)
assert math.isclose(hol["simulated"]["worst_decode_itl_s"], worst, rel_tol=1e-9)
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "ad_check", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false}
with grading.checks():
    grading.check("17-11", "a-ttft", ttft_ms, seed=SEED)
    grading.check("17-11", "b-decode-share", decode_share_pct, seed=SEED)
    grading.check("17-11", "c-stall", stall_ms, seed=SEED)
    grading.check("17-11", "d-stall-ratio", stall_ratio, seed=SEED)

# %% [markdown] nbgrader={"grade": true, "grade_id": "ad_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# ### BEGIN SOLUTION
# The prefill of a typical prompt is short next to the decode that follows: most of the
# request's wall clock is decode (derivation above), the phase that leaves nearly all of the
# chip's arithmetic idle. A long prompt prefilled whole is a block of solid compute many times
# the step, and every running stream's next token waits for it: one gap many steps long.
# The mean ITL barely moves, because the freeze is one gap among many; p99 spikes exactly when
# long prompts arrive.
#
# *Look for:* (1) decode is most of a typical request's time, (b); (2) a whole long prefill
# is one block of compute many decode steps long, (d); (3) every running stream waits it out,
# one long gap; (4) one gap among many barely moves the mean but sets the p99.
# ### END SOLUTION

# %% [markdown]
# ## (e)-(j) Chunked prefill
#
# Set `chunks`, `chunk_ms`, `iteration_ms`, `itl_gain`, `ttft_chunked_ms` and
# `ttft_increase_pct`.
#
# **Then explain**, in three or four sentences in the cell under the check: what does chunking
# buy the running streams, what does the long prompt pay for it, and how does the chunk size
# move the two? When would you move the phases to separate pools instead?

# %% nbgrader={"grade": false, "grade_id": "ej_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
chunks = chunk_ms = iteration_ms = itl_gain = ttft_chunked_ms = ttft_increase_pct = None
### BEGIN SOLUTION
from companion.sim.round_time import StepPlusPrefillRoundTime
from companion.sim.scenarios import long_prompt_interference

c = given["chunk_tokens"]
# step 1: how many chunks, and one chunk's compute (a chunk never exceeds the prompt)
chunks = math.ceil(n_long / c)
chunk = prefill_s(min(c, n_long))
chunk_ms = chunk / units.ms
# step 2: one round runs the decode step and one chunk
iteration = step + chunk
iteration_ms = iteration / units.ms
# step 3: the worst-ITL improvement: the worst gap falls from the whole prefill to one round
itl_gain = stall / iteration
sim_gain = worst / iteration                 # the simulator's reading: step + prefill
# step 4: the long prompt's TTFT, every chunk charged a full round, against a dedicated prefill
ttft_chunked = chunks * iteration
ttft_chunked_ms = ttft_chunked / units.ms
ttft_increase_pct = 100 * (ttft_chunked / stall - 1)

gain_note = ""
if given["seed"] == 0:
    printed = {e.id: e.printed for e in ledger.entries()}["17.6/itl-improvement"]
    gain_note = f"17 §6 prints about {printed}×. "
md(rf"""
**Chunks.** $\lceil n / c \rceil = \lceil {tex(n_long)} / {tex(c)} \rceil = \lceil {n_long / c:.3f} \rceil = {chunks}$.

**One chunk and one round.**

$$T_\text{{chunk}} = \frac{{2 N c}}{{u\,\pi}} = \frac{{2 \times {tex_sci(N)} \times {tex(min(c, n_long))}}}{{{reached / 1e12:.1f} \times 10^{{12}}}} = {chunk_ms:.2f}\ \text{{ms}}, \qquad
T_r = T_\text{{step}} + T_\text{{chunk}} = {step / units.ms:.3f} + {chunk_ms:.2f} = {iteration_ms:.2f}\ \text{{ms}}.$$

**Worst-ITL improvement.** The worst ITL falls from the whole prefill to one round:

$$\frac{{t_\text{{prefill}}}}{{T_r}} = \frac{{{stall_ms:.1f}\ \text{{ms}}}}{{{iteration_ms:.2f}\ \text{{ms}}}} = {itl_gain:.2f}\times\ \text{{better}}.$$

{gain_note}Counting the decode step in the unchunked round too, as the simulator does, gives
${worst / units.ms:.1f} / {iteration_ms:.2f} = {sim_gain:.2f}\times$ (also accepted).

**The long prompt's TTFT.**

$$\text{{chunks}} \times T_r = {chunks} \times {iteration_ms:.2f}\ \text{{ms}} = {ttft_chunked_ms:.1f}\ \text{{ms}}
\quad\text{{against}}\quad t_\text{{prefill}} = {stall_ms:.1f}\ \text{{ms}}:\quad
\frac{{{ttft_chunked_ms:.1f}}}{{{stall_ms:.1f}}} - 1 = {ttft_increase_pct:+.1f}\%.$$
""")
# check: the companion's 17 §6 closed form, and the simulator's chunked run (its worst gap is
# one round)
trade = calc.chunked_prefill_trade(m, hw, n_long, c, step, efficiency=u)
assert trade["chunks"] == chunks
assert math.isclose(trade["iteration_s"], iteration, rel_tol=1e-9)
assert math.isclose(trade["ttft_s"], ttft_chunked, rel_tol=1e-9)
assert math.isclose(trade["itl_improvement"], itl_gain, rel_tol=1e-9)   # 17_06's number
rt = StepPlusPrefillRoundTime.from_hardware(m, hw, decode_step_s=step, mfu=u)
sim_chunked = long_prompt_interference(n_long, c, round_time=rt)
assert math.isclose(sim_chunked["worst_decode_itl_s"], iteration, rel_tol=1e-9)
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
# Chunking caps every running stream's worst gap at one round, a decode step plus one chunk,
# instead of the whole prefill (derivation above; the simulator's reading adds one step to the
# unchunked gap, and both readings are graded). The long prompt pays: each of its chunks shares
# a round with everyone's decode step, so its first token comes later than with a dedicated
# prefill, and the smaller the chunk, the more rounds and the larger that penalty. When no
# chunk size meets both objectives the phases belong on separate pools (17 §8). The point:
# chunked prefill does not remove the long prompt's work, it spreads it out, trading that
# prompt's TTFT for every other stream's worst ITL, and the chunk size sets the rate of that
# exchange.
#
# *Look for:* (1) the worst gap falls from the whole prefill to one round, step plus chunk,
# (h); (2) the long prompt's TTFT rises, every chunk sharing a round with the decode step,
# (j); (3) smaller chunks: a smaller worst ITL, a larger TTFT penalty; (4) when no chunk size
# meets both targets, separate prefill and decode pools (17 §8).
# ### END SOLUTION
