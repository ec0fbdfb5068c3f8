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
# *Derivation, sections 8.5.2-8.5.4.* A draft network proposes $m$ tokens per round and the
# target checks them all in one verification pass. The round emits the draft tokens the target
# accepts up to the first rejection, then one token of the target's own, so it always emits at
# least one (8.5.2). Each draft token is accepted with the same probability $\alpha$ once all
# the earlier ones were, and a draft position counts only if every position before it was
# accepted: a token after a rejection is thrown away whatever it is. Call $X$ the number of
# tokens one round emits.
#
# A draft pass takes $t_d$, and the draft network is used serially, one pass per draft token,
# as 8.5.3's comparison supposes (DFlash itself drafts the whole segment in one parallel pass,
# 8.5.3). The verification pass takes $T_v$, so a round takes $T_r = T_v + t_d\,m$. $T_v$ is held the same at every draft
# length: at batch 1 the verification pass reads the target's weights and KV once however many
# positions it checks, and the extra rows of arithmetic are small next to that read (8.5.2), so
# it stays one plain decode round of Experiment 8-1. One step this leaves out: at $m = 8$ the
# target verifies 9 positions, and 8.5.4 notes that going from 8 to 9 pads the input to a
# 16-row execution shape and switches to that shape's computation graph, so a real round would
# take somewhat longer there than the exercise counts.
#
# 1. **(a)** Derive $\mathbb E[X]$ for a draft of length $m$ from the rule above (position by
#    position: what is the chance that draft position $j$ is emitted?), and compute it for the
#    four draft lengths below.
# 2. **(b)** The average latency per output token over many rounds for each length (ms), and
#    the best of the four lengths.
# 3. **(c)** Now the draft runs in groups of 4 positions and a partial group costs a full one,
#    $T_r = T_v + t_d \cdot 4\lceil m/4\rceil$. Compute the latency per token at $m = 5$ and the
#    marginal cost $\Delta T_r/\Delta X$ of going from 4 to 5 (both with groups: the added
#    round time over the added expected tokens), and use 8.5.4's marginal condition to decide
#    whether that step lowers the latency per token.
#
# Your given data come from `grading.params("8-7", SEED)`. Seed 0 is the chapter's own data
# (Experiment 8-1's batch-1 round and the 2.10 GB DFlash draft network of 8.5.3). Other seeds
# change the acceptance and the draft network's size; its pass time $t_d$ is always its weights
# read at the rate of that same batch-1 round (8.5.3), so every time comes from one experiment.
# On a course hub you get a seed of your own, from your user name.
#
# <details><summary>Hints: the formulas (open after you have tried)</summary>
#
# - $X$ is 1 (the target's own token) plus the number of draft positions emitted, so
#   $\mathbb E[X] = 1 + \sum_{j=1}^{m} P(\text{position } j \text{ is emitted})$: the mean of a
#   count is the sum of its items' chances. Position $j$ is emitted only if positions
#   $1, \dots, j$ are all accepted, with chance $\alpha^j$, so
#   $\mathbb E[X] = 1 + \alpha + \dots + \alpha^m = (1 - \alpha^{m+1})/(1 - \alpha)$.
# - Over many rounds the latency per token is total time over total tokens, $T_r/\mathbb E[X]$
#   (8.5.2).
# - 8.5.4's marginal condition: a longer draft lowers the latency per token only if the added
#   time per added token is below the current latency per token,
#   $\Delta T_r/\Delta X < T_r/\mathbb E[X]$ at the shorter length.
#
# </details>
#
# *Notation.* The chapter's Exercise 8-7 writes the acceptance $a$ and the whole round $T_m$;
# here they are $\alpha$ and $T_r$. $\alpha$ is the chance that a draft token survives, not the
# acceptance test <i>α</i>(<i>x</i>) that 8.5.1 applies to one particular token. 8.5.2 writes
# the tokens per round $\mathbb E[N]$ and 8.5.4 writes $\mathbb E[N_m]$; the companion keeps $N$
# for the model's parameters and writes $X$.

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
# Fill `expected[m]` for each draft length. Derive the expression first (the question under the
# check asks for the argument); the hints above give it if you are stuck.

# %% nbgrader={"grade": false, "grade_id": "a_answer", "locked": false, "schema_version": 3, "solution": true, "task": false} tags=["raises-exception"]
expected = {}
# YOUR CODE HERE

# %% nbgrader={"grade": true, "grade_id": "a_check", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false} tags=["raises-exception"]
with grading.checks():
    for m in given["draft_lens"]:
        grading.check("8-7", f"a-m{m}", expected, key=m, seed=SEED)

# %% [markdown]
# **Explain (not graded).** Derive $\mathbb E[X]$ position by position: why does draft position
# $j$ contribute $\alpha^j$, and why may you add the positions' contributions? Then: how much
# does each added position add, and why can no draft length, however long, raise
# $\mathbb E[X]$ past a fixed ceiling?

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
