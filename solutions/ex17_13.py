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
# # Exercise 17-13 · What is KV-aware routing worth on a long conversation?
#
# *Calculation, 17 §8.* In a multi-turn chat, turn $t$'s prompt is the whole conversation so
# far: the first turn's $n_1$ tokens plus $\Delta n$ new tokens per later turn,
# $L_t = n_1 + (t - 1)\,\Delta n$. A worker that still holds the conversation's KV blocks (a
# warm hit) prefills only the $\Delta n$ new tokens; any other worker re-prefills all $L_t$.
# Prefill costs $2N$ FLOPs per token ($N$ parameters; attention ignored, as in the chapter) at
# an assumed fraction $u$ of the peak $\pi$ (17 §8, as in its section notebook):
#
# $$\text{TTFT}_\text{cold} = \frac{2N\,L_t}{u\,\pi}, \qquad
# \text{TTFT}_\text{warm} = \frac{2N\,\Delta n}{u\,\pi}, \qquad
# \frac{\text{TTFT}_\text{cold}}{\text{TTFT}_\text{warm}} = \frac{L_t}{\Delta n}.$$
#
# Both are the prefill alone, with no wait in a queue before it: call each a TTFT (no
# queueing).
#
# A router that lands a share of the turns on a warm worker sends turn $t$ there with that
# probability, so turn $t$'s expected TTFT (no queueing) is
# $\text{share} \times \text{TTFT}_\text{warm} + (1 - \text{share}) \times \text{TTFT}_\text{cold}$.
#
# 1. **(a)** The tokens in the conversation at the given turn, $L_t$; **(b)** the prefill
#    FLOPs on a cold worker, in TFLOP; the TTFT (no queueing) on **(c)** a cold and **(d)** a
#    warm worker, in ms; **(e)** their ratio.
# 2. Two routers land the given shares of turns on a warm worker. The expected TTFT (no
#    queueing) of turn $t$ with **(f)** the better and **(g)** the worse router, in ms.
# 3. The tail of the same turn: the p90 TTFT (no queueing), the smallest TTFT that fewer than
#    10% of such turns exceed, with **(h)** the better and **(i)** the worse router, in ms.
#    Each turn takes one of two times, warm or cold, so the p90 is one of them: which one
#    depends on the share of turns that land cold.
#
# Your given data come from `grading.params("17-13", SEED)`. Seed 0 is the chapter's own data
# (the 8B on an H100 SXM at 50% of peak; 6,000 tokens plus 1,200 per turn, turn 20; routers
# landing 90% and 30% of turns warm); on a course hub
# you get a seed of your own, from your user name.

# %% nbgrader={"grade": false, "grade_id": "given", "locked": true, "schema_version": 3, "solution": false, "task": false}
from companion import grading, units

SEED = grading.student_seed()
given = grading.params("17-13", SEED)
hw, N, u = given["hardware"], given["params"], given["efficiency"]
good, poor = given["hit_rates"]
print(f"card: {hw.name}, pi = {hw.peak_flops_per_s / 1e12:g} TFLOP/s dense; prefill at "
      f"u = {u:.0%} of peak; model {given['model'].name}, N = {N:.3g}")
print(f"conversation: n_1 = {given['first_turn_tokens']:,} tokens, then "
      f"Delta n = {given['tokens_per_turn']:,} per turn; turn t = {given['turn']}")
print(f"warm-hit shares: {good:.0%} and {poor:.0%}")

# %% [markdown]
# ## (a)-(e) One turn, cold and warm
#
# Set `context`, `cold_tflop`, `cold_ms`, `warm_ms` and `ratio`.

# %% nbgrader={"grade": false, "grade_id": "ae_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
context = cold_tflop = cold_ms = warm_ms = ratio = None
### BEGIN SOLUTION
from companion.display import tex, tex_sci
import math

from companion import calc
from companion.display import md


n_1, dn, t = given["first_turn_tokens"], given["tokens_per_turn"], given["turn"]
reached = u * hw.peak_flops_per_s
# step 1: the conversation's length at turn t
context = n_1 + (t - 1) * dn
# step 2: the cold worker prefills all of it, the warm one only the new message
cold_flop = 2 * N * context
warm_flop = 2 * N * dn
cold_tflop = cold_flop / 1e12
cold_ms = cold_flop / reached / units.ms
warm_ms = warm_flop / reached / units.ms
# step 3: their ratio, which is L_t / Delta n
ratio = cold_ms / warm_ms

md(rf"""
**Context at turn {t}.** $L_t = n_1 + (t - 1)\,\Delta n = {tex(n_1)} + {t - 1} \times {tex(dn)} = {tex(context)}$ tokens.

**Cold worker.** $2 N L_t = 2 \times {tex_sci(N)} \times {tex(context)} = {cold_tflop:.1f}\ \text{{TFLOP}}$, at
$u\,\pi = {u:g} \times {tex(hw.peak_flops_per_s / 1e12, ',.0f')} = {reached / 1e12:.1f}$ TFLOP/s:

$$\text{{TTFT}}_\text{{cold}} = \frac{{{cold_tflop:.1f}\ \text{{TFLOP}}}}{{{reached / 1e12:.1f}\ \text{{TFLOP/s}}}} = {cold_ms:.1f}\ \text{{ms}}.$$

**Warm worker.**

$$\text{{TTFT}}_\text{{warm}} = \frac{{2 \times {tex_sci(N)} \times {tex(dn)}}}{{{reached / 1e12:.1f} \times 10^{{12}}}}
= \frac{{{warm_flop / 1e12:.2f}\ \text{{TFLOP}}}}{{{reached / 1e12:.1f}\ \text{{TFLOP/s}}}} = {warm_ms:.2f}\ \text{{ms}}.$$

**Ratio.** ${cold_ms:.1f} / {warm_ms:.2f} = L_t / \Delta n = {tex(context)} / {tex(dn)} = {ratio:.2f}\times$.
""")
# check: the companion's 17 §8 routing arithmetic
r = calc.kv_routing_ttft(given["model"], hw, t, first_turn_tokens=n_1, tokens_per_turn=dn,
                         efficiency=u)
assert r["context_tokens"] == context
assert math.isclose(r["cold_s"] / units.ms, cold_ms, rel_tol=1e-9)
assert math.isclose(r["warm_s"] / units.ms, warm_ms, rel_tol=1e-9)
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "ae_check", "locked": true, "points": 5, "schema_version": 3, "solution": false, "task": false}
with grading.checks():
    grading.check("17-13", "a-context", context, seed=SEED)
    grading.check("17-13", "b-cold-flop", cold_tflop, seed=SEED)
    grading.check("17-13", "c-cold", cold_ms, seed=SEED)
    grading.check("17-13", "d-warm", warm_ms, seed=SEED)
    grading.check("17-13", "e-ratio", ratio, seed=SEED)

# %% [markdown]
# ## (f), (g) Two routers
#
# Set `good_ms` and `poor_ms`.

# %% nbgrader={"grade": false, "grade_id": "fg_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
good_ms = poor_ms = None
### BEGIN SOLUTION
# turn t's expected TTFT: warm with probability share, cold otherwise
good_ms = good * warm_ms + (1 - good) * cold_ms
poor_ms = poor * warm_ms + (1 - poor) * cold_ms

md(rf"""
$$\text{{share}} = {good:g}:\quad {good:g} \times {warm_ms:.2f} + {1 - good:.2g} \times {cold_ms:.1f} = {good_ms:.1f}\ \text{{ms}}, \qquad
\text{{share}} = {poor:g}:\quad {poor:g} \times {warm_ms:.2f} + {1 - poor:.2g} \times {cold_ms:.1f} = {poor_ms:.1f}\ \text{{ms}}.$$

The router with the higher warm share cuts turn {t}'s expected TTFT by ${poor_ms / good_ms:.1f}\times$.
""")
# check: the companion's expected TTFT of a routed turn
assert math.isclose(calc.routed_mean_ttft_s(cold_ms, warm_ms, good), good_ms, rel_tol=1e-12)
assert math.isclose(calc.routed_mean_ttft_s(cold_ms, warm_ms, poor), poor_ms, rel_tol=1e-12)
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "fg_check", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
with grading.checks():
    grading.check("17-13", "f-expected-good", good_ms, seed=SEED)
    grading.check("17-13", "g-expected-poor", poor_ms, seed=SEED)

# %% [markdown]
# ## (h), (i) The tail each router leaves
#
# Set `good_p90_ms` and `poor_p90_ms`.
#
# **Then explain**, in three or four sentences in the cell under the check: why does the cold
# to warm ratio grow with every turn, what do the expected TTFT and the p90 each say about a
# router, and why can a router that wins on the mean still leave the tail at a full cold
# prefill? What keeps a real router from pinning every conversation to its warm worker?

# %% nbgrader={"grade": false, "grade_id": "hi_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
good_p90_ms = poor_p90_ms = None
### BEGIN SOLUTION
def p90_ms(share):
    """The smallest TTFT that fewer than 10% of turns exceed: warm only when fewer than 10%
    of turns land cold."""
    return cold_ms if 1 - share >= 0.1 - 1e-12 else warm_ms


good_p90_ms, poor_p90_ms = p90_ms(good), p90_ms(poor)


def reading(share, p90):
    cold_share = 1 - share
    which = "cold" if p90 == cold_ms else "warm"
    rel = "at least" if which == "cold" else "fewer than"
    return (rf"share {share:g}: {100 * cold_share:.0f}% of turns land cold, {rel} 10%, so the "
            rf"p90 is the {which} TTFT, {p90:.1f} ms")


md(rf"""
- Better router, {reading(good, good_p90_ms)} (its mean: {good_ms:.1f} ms).
- Worse router, {reading(poor, poor_p90_ms)} (its mean: {poor_ms:.1f} ms).
""")
# check: the companion's grader reads the p90 the same way
from companion.exercises import ex17_13

assert good_p90_ms == (cold_ms if ex17_13.p90_is_cold(good) else warm_ms)
assert poor_p90_ms == (cold_ms if ex17_13.p90_is_cold(poor) else warm_ms)
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "hi_check", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
with grading.checks():
    grading.check("17-13", "h-p90-good", good_p90_ms, seed=SEED)
    grading.check("17-13", "i-p90-poor", poor_p90_ms, seed=SEED)

# %% [markdown] nbgrader={"grade": true, "grade_id": "ai_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# ### BEGIN SOLUTION
# A cold worker prefills the whole conversation, a warm one only the newest message, so their
# ratio is $L_t/\Delta n$ and grows by one with every turn (derivation above). A router that
# lands most turns warm keeps the expected TTFT close to the warm value; one that lands few
# pays mostly cold prefills, a larger loss than any kernel tuning in the chapter can win back.
# The mean hides the tail, though: each turn is either warm or cold, so as long as one turn in
# ten or more lands cold the p90 is a full cold prefill, whatever the mean; only a router that
# keeps more than nine turns in ten warm brings the p90 down to the warm value. The catch is
# load: pinning every conversation to its warm worker builds hotspots, so real routers score
# prefix overlap against current load.
#
# *Look for:* (1) cold over warm is $L_t / \Delta n$, which grows with the turn; (2) the mean
# mixes the two times by the warm share and favours the better router; (3) the p90 is one of
# the two times, cold while at least 10% of turns land cold, so it needs a warm share above
# 90% to fall; (4) pinning conversations to warm workers builds hotspots, so routers weigh
# prefix overlap against load.
# ### END SOLUTION
