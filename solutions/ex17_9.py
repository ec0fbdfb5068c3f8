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
# # Exercise 17-9 · Speculative decoding: how many tokens per pass, and at what cost?
#
# *Calculation, 17 §10.* A small draft model proposes $k$ tokens; the target model checks all
# of them in one forward pass. Batch-1 decode is memory-bound, so checking $k + 1$ positions
# streams the same weights as generating one token: the target pass costs about one ordinary
# decode step. If each draft token is accepted with probability $\alpha$ (once all the earlier
# ones were), a pass yields on average
#
# $$\mathbb E[N_k] = 1 + \alpha + \alpha^2 + \dots + \alpha^k$$
#
# tokens, the target's own token included. The draft model's $k$ passes are not free: each
# streams the draft's weights.
#
# 1. **(a)** $\mathbb E[N_k]$; **(b)** the tokens one more draft token ($k + 1$) would add;
#    **(c)** $\mathbb E[N]$ with an unlimited draft.
# 2. **(d)** One target pass and **(e)** one draft pass, in ms (weights over bandwidth, BF16).
# 3. **(f)** The latency per output token with the draft, $(T_\text{target} + k\,t_\text{draft})
#    / \mathbb E[N_k]$, in ms; **(g)** the speedup over plain decode; **(h)** the draft length
#    among 1-8 with the lowest latency per token; **(i)** does going from $k$ to $k + 1$
#    lower the latency per token? (`True`/`False`)
#
# Your given data come from `grading.params("17-9", SEED)`. Seed 0 is the chapter's own data
# ($k = 4$, $\alpha = 0.7$, the 8B target on an H100 SXM) plus a draft size of ours (a 1e9-
# parameter BF16 draft) for (d)-(i); your instructor may give you another seed.

# %% nbgrader={"grade": false, "grade_id": "given", "locked": true, "schema_version": 3, "solution": false, "task": false}
from companion import grading, units

SEED = 0
given = grading.params("17-9", SEED)
a, k, hw = given["acceptance"], given["draft_len"], given["hardware"]
print(f"acceptance alpha = {a:g}, draft length k = {k}")
print(f"target: {given['model'].name}, {given['target_weight_bytes'] / units.GB:g} GB; draft: "
      f"{given['draft_params']:.3g} params, {given['draft_weight_bytes'] / units.GB:g} GB; "
      f"{hw.name}, HBM {hw.mem_bw_bytes_per_s / 1e12:g} TB/s")
print(f"draft lengths to compare: {list(given['draft_lens'])}")

# %% [markdown]
# ## (a)-(c) Tokens per target pass
#
# Set `expected`, `marginal` and `limit`.

# %% nbgrader={"grade": false, "grade_id": "ac_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
expected = marginal = limit = None
### BEGIN SOLUTION
def expected_tokens(draft_len):
    return sum(a ** j for j in range(draft_len + 1))


expected = expected_tokens(k)
marginal = expected_tokens(k + 1) - expected
limit = 1 / (1 - a)
print(f"E[N_{k}] = {expected:.3f}; the next draft token adds {marginal:.3f}; limit {limit:.2f}")
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "ac_check", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false}
with grading.checks():
    grading.check("17-9", "a-expected", expected, seed=SEED)
    grading.check("17-9", "b-marginal", marginal, seed=SEED)
    grading.check("17-9", "c-limit", limit, seed=SEED)

# %% [markdown] nbgrader={"grade": true, "grade_id": "ac_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# ### BEGIN SOLUTION
# $1 + 0.7 + 0.49 + 0.343 + 0.240 = 2.77$ tokens per pass: with a free draft, up to ~2.8x lower
# single-stream latency. A fifth draft token adds only 0.7^5 = 0.17 tokens, and no draft length
# can pass 1 / (1 - 0.7) = 3.3: the gains shrink geometrically.
# ### END SOLUTION

# %% [markdown]
# ## (d)-(i) Charging the draft
#
# Set `target_ms`, `draft_ms`, `latency_ms`, `speedup`, `best_k` and `extend_helps`.

# %% nbgrader={"grade": false, "grade_id": "di_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
target_ms = draft_ms = latency_ms = speedup = best_k = extend_helps = None
### BEGIN SOLUTION
bw = hw.mem_bw_bytes_per_s
target_ms = given["target_weight_bytes"] / bw / units.ms
draft_ms = given["draft_weight_bytes"] / bw / units.ms


def latency(draft_len):
    return (target_ms + draft_len * draft_ms) / expected_tokens(draft_len)


latency_ms = latency(k)
speedup = target_ms / latency_ms
best_k = min(given["draft_lens"], key=latency)
extend_helps = latency(k + 1) < latency_ms
print(f"target {target_ms:.2f} ms, draft {draft_ms:.3f} ms: {latency_ms:.2f} ms per token, "
      f"{speedup:.2f}x; best k = {best_k}; k + 1 helps: {extend_helps}")
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "di_check", "locked": true, "points": 6, "schema_version": 3, "solution": false, "task": false}
with grading.checks():
    grading.check("17-9", "d-target-step", target_ms, seed=SEED)
    grading.check("17-9", "e-draft-step", draft_ms, seed=SEED)
    grading.check("17-9", "f-latency", latency_ms, seed=SEED)
    grading.check("17-9", "g-speedup", speedup, seed=SEED)
    grading.check("17-9", "h-best-k", best_k, seed=SEED)
    grading.check("17-9", "i-extend", extend_helps, seed=SEED)

# %% [markdown] nbgrader={"grade": true, "grade_id": "di_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# ### BEGIN SOLUTION
# The target pass streams 16 GB in 4.78 ms; each draft pass 2 GB in 0.60 ms. Four draft
# passes make the round 7.16 ms for 2.77 tokens: 2.58 ms per token, 1.85x rather than the
# ideal 2.77x. A fifth draft token costs 0.60 ms for 0.17 more tokens (3.6 ms per added token,
# above the current 2.58), so k = 4 is already the best length here. Total work goes up (the
# draft runs, rejected tokens are thrown away) to buy latency: right on a decode that leaves
# 99.7% of the arithmetic idle, wrong on a compute-saturated prefill pool.
# ### END SOLUTION
