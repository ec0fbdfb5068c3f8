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
# probability $\alpha$ once all earlier ones were, so a round with a draft of $m$ tokens outputs
# on average $\mathbb E[X] = 1 + \alpha + \dots + \alpha^m$ tokens, $X$ being the tokens one
# round emits at draft length $m$ (8.5.2; the chapter writes $N_m$). The draft network produces
# one token at a time, $t_d$ each, so a round takes $T_r = T_v + t_d\,m$ with $T_v$ the
# verification (the chapter's Exercise 8-7 writes $T_m$); the average latency per output token
# is $T_r / \mathbb E[X]$ (total time over total tokens, 8.5.2).
#
# 1. **(a)** $\mathbb E[X]$ for the four draft lengths below.
# 2. **(b)** The latency per output token for each (ms), and the best of the four lengths.
# 3. **(c)** Now the draft runs in groups of 4 positions and a partial group costs a full one,
#    $T_r = T_v + t_d \cdot 4\lceil m/4\rceil$. Compute the latency per token at $m = 5$, the
#    marginal cost $\Delta T_r/\Delta X$ of going from 4 to 5 (both with groups), and decide
#    whether that step helps ($\Delta T_r/\Delta X < T_r/\mathbb E[X]$ at $m = 4$; 8.5.4).
#
# The decision at the end of (c) comes out the same at every seed offered: with groups of 4, the
# fifth draft position always pays for a whole new group. If a seed would give an unfair variant
# (a tie, an empty list, a zero count, an answer on a rounding edge), `grading.params` moves to
# the next seed and prints why.
#
# Your given data come from `grading.params("8-7", SEED)`. Seed 0 is the chapter's own data;
# on a course hub you get a seed of your own, from your user name.

# %% nbgrader={"grade": false, "grade_id": "given", "locked": true, "schema_version": 3, "solution": false, "task": false}
from companion import calc, grading, units

SEED = grading.student_seed()
given = grading.params("8-7", SEED)
a, t_v, t_d = given["acceptance"], given["verify_s"], given["per_draft_s"]
print(f"acceptance alpha = {a:g}; verification T_v = {t_v / units.ms:g} ms; "
      f"draft t_d = {t_d / units.ms:g} ms per token")
print(f"draft lengths {given['draft_lens']}; group of {given['group']} positions in (c)")

# %% [markdown]
# ## (a) Expected output per round
#
# Fill `expected[m]` for each draft length.

# %% nbgrader={"grade": false, "grade_id": "a_answer", "locked": false, "schema_version": 3, "solution": true, "task": false} tags=["raises-exception"]
expected = {}
# YOUR CODE HERE

# %% nbgrader={"grade": true, "grade_id": "a_check", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false} tags=["raises-exception"]
with grading.checks():
    for m in given["draft_lens"]:
        grading.check("8-7", f"a-m{m}", expected, key=m, seed=SEED)

# %% [markdown] nbgrader={"grade": true, "grade_id": "a_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# YOUR ANSWER HERE

# %% [markdown]
# ## (b) Latency per output token, and the best length
#
# Fill `latency_ms[m]` and set `best_m`.

# %% nbgrader={"grade": false, "grade_id": "b_answer", "locked": false, "schema_version": 3, "solution": true, "task": false} tags=["raises-exception"]
latency_ms = {}
best_m = None
# YOUR CODE HERE

# %% nbgrader={"grade": true, "grade_id": "b_check", "locked": true, "points": 5, "schema_version": 3, "solution": false, "task": false} tags=["raises-exception"]
with grading.checks():
    for m in given["draft_lens"]:
        grading.check("8-7", f"b-m{m}", latency_ms, key=m, seed=SEED)
    grading.check("8-7", "b-best", best_m, seed=SEED)

# %% [markdown] nbgrader={"grade": true, "grade_id": "b_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# YOUR ANSWER HERE

# %% [markdown]
# ## (c) Grouped drafting: 4 or 5?
#
# Set `latency5_ms`, `marginal_ms` ($\Delta T_r/\Delta X$ from 4 to 5) and `extend` (True if 5
# beats 4).

# %% nbgrader={"grade": false, "grade_id": "c_answer", "locked": false, "schema_version": 3, "solution": true, "task": false} tags=["raises-exception"]
latency5_ms = marginal_ms = extend = None
# YOUR CODE HERE

# %% nbgrader={"grade": true, "grade_id": "c_check", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false} tags=["raises-exception"]
with grading.checks():
    grading.check("8-7", "c-m5", latency5_ms, seed=SEED)
    grading.check("8-7", "c-marginal", marginal_ms, seed=SEED)
    grading.check("8-7", "c-extend", extend, seed=SEED)

# %% [markdown] nbgrader={"grade": true, "grade_id": "c_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# YOUR ANSWER HERE
