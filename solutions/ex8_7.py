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
# # Exercise 8-7 · Which draft length gives the lowest latency per output token?
#
# *Derivation, sections 8.5.2-8.5.4.* Every draft position is accepted with the same
# probability $a$ once all earlier ones were, so a round with a draft of $m$ tokens outputs on
# average $\mathbb E[N_m] = 1 + a + \dots + a^m$ tokens. The draft network produces one token at
# a time, so a round takes $T_m = T_v + t_d\,m$; the average latency per output token is
# $T_m / \mathbb E[N_m]$.
#
# 1. **(a)** $\mathbb E[N_m]$ for the four draft lengths below.
# 2. **(b)** The latency per output token for each (ms), and the best of the four lengths.
# 3. **(c)** Now the draft runs in groups of 4 positions and a partial group costs a full one,
#    $T_m = T_v + t_d \cdot 4\lceil m/4\rceil$. Compute the latency per token at $m = 5$, the
#    marginal cost $\Delta T/\Delta N$ of going from 4 to 5, and decide whether that step helps
#    ($\Delta T/\Delta N < T/N$).
#
# The decision at the end of (c) comes out the same at every seed offered: with groups of 4, the
# fifth draft position always pays for a whole new group. If a seed would give an unfair variant
# (a tie, an empty list, a zero count, an answer on a rounding edge), `grading.params` moves to
# the next seed and prints why.
#
# Your given data come from `grading.params("8-7", SEED)`. Seed 0 is the chapter's own data;
# your instructor may give you another seed.

# %% nbgrader={"grade": false, "grade_id": "given", "locked": true, "schema_version": 3, "solution": false, "task": false}
from companion import calc, grading, units

SEED = 0
given = grading.params("8-7", SEED)
a, t_v, t_d = given["acceptance"], given["verify_s"], given["per_draft_s"]
print(f"acceptance a = {a:g}; verification T_v = {t_v / units.ms:g} ms; "
      f"draft t_d = {t_d / units.ms:g} ms per token")
print(f"draft lengths {given['draft_lens']}; group of {given['group']} positions in (c)")

# %% [markdown]
# ## (a) Expected output per round
#
# Fill `expected[m]` for each draft length.

# %% nbgrader={"grade": false, "grade_id": "a_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
expected = {}
### BEGIN SOLUTION
for m in given["draft_lens"]:
    expected[m] = calc.speculative_expected_tokens(a, m)
print({m: round(n, 4) for m, n in expected.items()})
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "a_check", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false}
with grading.checks():
    for m in given["draft_lens"]:
        grading.check("8-7", f"a-m{m}", expected, key=m, seed=SEED)

# %% [markdown] nbgrader={"grade": true, "grade_id": "a_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# ### BEGIN SOLUTION
# With a = 3/4: 1.75, 2.3125, 3.05 and 3.70 tokens. Each extra position adds a^m, the chance
# that every draft token before it survived, so the gains shrink geometrically: going from 4
# to 8 positions adds only 0.65 tokens. The output can never exceed 1/(1 - a) = 4.
# ### END SOLUTION

# %% [markdown]
# ## (b) Latency per output token, and the best length
#
# Fill `latency_ms[m]` and set `best_m`.

# %% nbgrader={"grade": false, "grade_id": "b_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
latency_ms = {}
best_m = None
### BEGIN SOLUTION
for row in calc.draft_length_table(a, given["draft_lens"], t_v, t_d):
    latency_ms[row["draft_len"]] = row["latency_per_token_s"] / units.ms
best_m = min(latency_ms, key=latency_ms.get)
print({m: round(t, 2) for m, t in latency_ms.items()}, "best:", best_m)
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "b_check", "locked": true, "points": 5, "schema_version": 3, "solution": false, "task": false}
with grading.checks():
    for m in given["draft_lens"]:
        grading.check("8-7", f"b-m{m}", latency_ms, key=m, seed=SEED)
    grading.check("8-7", "b-best", best_m, seed=SEED)

# %% [markdown] nbgrader={"grade": true, "grade_id": "b_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# ### BEGIN SOLUTION
# T_m / E[N_m] gives 17.09, 14.49, 13.34 and 14.89 ms: four draft tokens are best. Each
# draft token costs the same 3.6 ms, but from the fifth position on it buys less than
# 3.6 / 13.3 of a token on average. Dividing total time by total tokens is the right average
# (8.5.2); averaging the per-round latencies would weigh a one-token round like a five-token
# one and overstate the latency.
# ### END SOLUTION

# %% [markdown]
# ## (c) Grouped drafting: 4 or 5?
#
# Set `latency5_ms`, `marginal_ms` ($\Delta T/\Delta N$ from 4 to 5) and `extend` (True if 5
# beats 4).

# %% nbgrader={"grade": false, "grade_id": "c_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
latency5_ms = marginal_ms = extend = None
### BEGIN SOLUTION
g = given["group"]
latency5_ms = calc.draft_length_table(a, [5], t_v, t_d, g)[0]["latency_per_token_s"] / units.ms
step = calc.marginal_draft_gain(a, 5, t_v, t_d, g)
marginal_ms = step["marginal_s_per_token"] / units.ms
extend = step["helps"]
print(f"m = 5: {latency5_ms:.2f} ms per token; dT/dN = {marginal_ms:.1f} ms against "
      f"T/N = {step['current_s_per_token'] / units.ms:.2f} ms -> extend: {extend}")
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "c_check", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
with grading.checks():
    grading.check("8-7", "c-m5", latency5_ms, seed=SEED)
    grading.check("8-7", "c-marginal", marginal_ms, seed=SEED)
    grading.check("8-7", "c-extend", extend, seed=SEED)

# %% [markdown] nbgrader={"grade": true, "grade_id": "c_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# ### BEGIN SOLUTION
# The fifth position opens a new group: the round grows from 40.7 to 55.1 ms (dT = 14.4 ms)
# for dN = a^5 = 0.237 more tokens, 60.7 ms per added token against the current 13.34 ms per
# token. The marginal condition fails, so stay at 4 (5 gives 16.76 ms per token). Padding
# makes the added time jump at group boundaries, so draft lengths that fill whole groups are
# the ones worth considering.
# ### END SOLUTION
