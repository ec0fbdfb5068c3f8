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
# *Derivation, sections 8.5.2-8.5.4.* A draft network proposes $m$ tokens per round, one pass
# per token, and the target checks them all in one verification pass. Every draft position
# survives with the same probability $\alpha$ once all earlier ones did (8.5.2 and the
# chapter's Exercise 8-7 write it $a$; it is the chance that a draft token survives, not the
# acceptance test <i>α</i>(<i>x</i>) that 8.5.1 applies to one particular token). So a round
# emits on average $\mathbb E[X] = 1 + \alpha + \dots + \alpha^m$ tokens, $X$ being the tokens
# one round emits (8.5.2 writes $\mathbb E[N]$ and 8.5.4 writes $\mathbb E[N_m]$; the
# companion keeps $N$ for the model's parameters).
#
# A draft pass takes $t_d$ and the verification pass $T_v$, so a round takes
# $T_r = T_v + t_d\,m$ (the chapter's Exercise 8-7 writes this whole round $T_m$), and the
# average latency per output token is $T_r / \mathbb E[X]$: total time over total tokens
# (8.5.2). $T_v$ is the same at every draft length here: at batch 1 the verification pass
# reads the target's weights and KV once however many positions it checks, and the few extra
# rows of arithmetic cost a small fraction of a millisecond (8.5.2), so it stays one plain
# decode round of Experiment 8-1.
#
# 1. **(a)** $\mathbb E[X]$ for the four draft lengths below.
# 2. **(b)** The latency per output token for each (ms), and the best of the four lengths.
# 3. **(c)** Now the draft runs in groups of 4 positions and a partial group costs a full one,
#    $T_r = T_v + t_d \cdot 4\lceil m/4\rceil$. Compute the latency per token at $m = 5$, the
#    marginal cost $\Delta T_r/\Delta X$ of going from 4 to 5 (both with groups), and decide
#    whether that step helps ($\Delta T_r/\Delta X < T_r/\mathbb E[X]$ at $m = 4$; 8.5.4).
#
# Your given data come from `grading.params("8-7", SEED)`. Seed 0 is the chapter's own data
# (Experiment 8-1's batch-1 round and the 2.10 GB DFlash draft network of 8.5.3). Other seeds
# change the acceptance and the draft network's size; its pass time $t_d$ is always its weights
# read at the rate of that same batch-1 round (8.5.3), so every time comes from one experiment.
# On a course hub you get a seed of your own, from your user name.

# %% nbgrader={"grade": false, "grade_id": "given", "locked": true, "schema_version": 3, "solution": false, "task": false}
from companion import calc, grading, units

SEED = grading.student_seed()
given = grading.params("8-7", SEED)
a, t_v, t_d = given["acceptance"], given["verify_s"], given["per_draft_s"]
print(f"acceptance alpha = {a:g}; verification T_v = {t_v / units.ms:g} ms; "
      f"draft t_d = {t_d / units.ms:g} ms per token (a {given['draft_bytes'] / units.GB:g} GB "
      f"draft network)")
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

# %% [markdown]
# **Explain (not graded).** How much does each added draft position add to $\mathbb E[X]$,
# and why can no draft length, however long, raise it past a fixed ceiling?

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

# %% [markdown]
# **Explain (not graded).** Why does making the draft longer stop lowering the latency per
# token, and what decides where that happens? Why is total time over total tokens the right
# average, rather than the mean of each round's own latency per token?

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

# %% [markdown]
# **Explain (not graded).** What does the fifth position cost with groups of 4, and what would
# it cost without groups? Is it the grouping that decides between 4 and 5 at your seed?

# %% [markdown] nbgrader={"grade": true, "grade_id": "c_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# YOUR ANSWER HERE
