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

# %% nbgrader={"grade": false, "grade_id": "ae_answer", "locked": false, "schema_version": 3, "solution": true, "task": false} tags=["raises-exception"]
context = cold_tflop = cold_ms = warm_ms = ratio = None
# YOUR CODE HERE

# %% nbgrader={"grade": true, "grade_id": "ae_check", "locked": true, "points": 5, "schema_version": 3, "solution": false, "task": false} tags=["raises-exception"]
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

# %% nbgrader={"grade": false, "grade_id": "fg_answer", "locked": false, "schema_version": 3, "solution": true, "task": false} tags=["raises-exception"]
good_ms = poor_ms = None
# YOUR CODE HERE

# %% nbgrader={"grade": true, "grade_id": "fg_check", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false} tags=["raises-exception"]
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

# %% nbgrader={"grade": false, "grade_id": "hi_answer", "locked": false, "schema_version": 3, "solution": true, "task": false} tags=["raises-exception"]
good_p90_ms = poor_p90_ms = None
# YOUR CODE HERE

# %% nbgrader={"grade": true, "grade_id": "hi_check", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false} tags=["raises-exception"]
with grading.checks():
    grading.check("17-13", "h-p90-good", good_p90_ms, seed=SEED)
    grading.check("17-13", "i-p90-poor", poor_p90_ms, seed=SEED)

# %% [markdown] nbgrader={"grade": true, "grade_id": "ai_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# YOUR ANSWER HERE
