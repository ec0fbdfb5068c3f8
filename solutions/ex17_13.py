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
# far: the first turn's tokens plus one new message per later turn. A worker that still holds
# the conversation's KV blocks (a warm hit) prefills only the new message; any other worker
# re-prefills everything. Prefill costs $2P$ FLOPs per token at an assumed fraction of peak.
#
# 1. **(a)** The tokens in the conversation at the given turn; **(b)** the prefill FLOPs on a
#    cold worker, in TFLOP; the TTFT on **(c)** a cold and **(d)** a warm worker, in ms;
#    **(e)** their ratio.
# 2. Two routers land the given shares of turns on a warm worker. The mean TTFT of
#    **(f)** the better and **(g)** the worse router, in ms.
#
# Your given data come from `grading.params("17-13", SEED)`. Seed 0 is the chapter's own data
# (the 8B on an H100 SXM at 50% of peak; 6,000 tokens plus 1,200 per turn, turn 20; routers
# landing 90% and 30% of turns warm); your instructor may give you another seed.

# %% nbgrader={"grade": false, "grade_id": "given", "locked": true, "schema_version": 3, "solution": false, "task": false}
from companion import grading, units

SEED = 0
given = grading.params("17-13", SEED)
hw, P, eff = given["hardware"], given["params"], given["efficiency"]
good, poor = given["hit_rates"]
print(f"card: {hw.name}, {hw.peak_flops_per_s / 1e12:g} TFLOP/s dense; prefill at {eff:.0%} "
      f"of peak; model {given['model'].name}, P = {P:.3g}")
print(f"conversation: {given['first_turn_tokens']:,} tokens, then "
      f"{given['tokens_per_turn']:,} per turn; turn {given['turn']}")
print(f"warm-hit rates: {good:.0%} and {poor:.0%}")

# %% nbgrader={"grade": false, "grade_id": "ae_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
context = cold_tflop = cold_ms = warm_ms = ratio = None
### BEGIN SOLUTION
context = given["first_turn_tokens"] + (given["turn"] - 1) * given["tokens_per_turn"]
cold_flop = 2 * P * context
cold_tflop = cold_flop / 1e12
cold_ms = cold_flop / (eff * hw.peak_flops_per_s) / units.ms
warm_ms = 2 * P * given["tokens_per_turn"] / (eff * hw.peak_flops_per_s) / units.ms
ratio = cold_ms / warm_ms
print(f"{context:,} tokens: cold {cold_tflop:.0f} TFLOP -> {cold_ms:.0f} ms; warm "
      f"{warm_ms:.0f} ms; {ratio:.0f}x")
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
good_ms = good * warm_ms + (1 - good) * cold_ms
poor_ms = poor * warm_ms + (1 - poor) * cold_ms
print(f"mean TTFT {good_ms:.0f} ms at {good:.0%} warm, {poor_ms:.0f} ms at {poor:.0%}")
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "fg_check", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
with grading.checks():
    grading.check("17-13", "f-expected-good", good_ms, seed=SEED)
    grading.check("17-13", "g-expected-poor", poor_ms, seed=SEED)

# %% [markdown] nbgrader={"grade": true, "grade_id": "ag_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# ### BEGIN SOLUTION
# Turn 20 carries 6,000 + 19 x 1,200 = 28,800 tokens: 461 TFLOP, 932 ms of TTFT on a cold
# worker, against 39 ms for the one new message on a warm one, 24x, and the gap grows every
# turn. A router landing 90% of turns warm averages ~128 ms; one landing 30% averages ~664 ms,
# more TTFT than any kernel in the chapter can win back. The catch is load: pinning every
# conversation to its warm worker builds hotspots, so real routers score prefix overlap against
# current load.
# ### END SOLUTION
