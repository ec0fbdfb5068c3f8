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
# *Calculation, 17 §10.* A small draft model proposes $m$ tokens (the chapter writes $k$ for
# the draft length; here $k$ is kept for KV bytes, so the draft length is $m$); the target model checks all
# of them in one forward pass. Batch-1 decode is memory-bound, so checking $m + 1$ positions
# streams the same weights as generating one token: the target's verification pass costs
# about one ordinary decode step, $T_v = D_w / \beta$ with $D_w = 2N$ its BF16 weight bytes
# (17 §2). If each draft token is accepted with probability $\alpha$ (once all the earlier ones
# were), one pass emits $X$ tokens, on average
#
# $$\mathbb E[X] = 1 + \alpha + \alpha^2 + \dots + \alpha^m$$
#
# tokens, the target's own token included (17 §10). The draft model's $m$ passes are not free:
# each streams the draft's weights, $t_d = 2 N_\text{draft} / \beta$ in BF16. That assumes
# the draft runs under CUDA Graphs (17 §9): an eager small draft is bound by its kernel
# launches, not by its weight read. 17.10's explorer states the same cost as a share of a
# plain step, $t_d / T_v$. One round then
# takes $T_v + m\,t_d$, and the latency per output token is
#
# $$\frac{T_v + m\,t_d}{\mathbb E[X]} .$$
#
# 1. **(a)** $\mathbb E[X]$, in tokens; **(b)** how many tokens per pass, on average, one more
#    draft token ($m + 1$ instead of $m$) would add; **(c)** $\mathbb E[X]$ with an unlimited
#    draft ($m \to \infty$), in tokens. Derive (b) and (c) yourself from the sum above.
# 2. **(d)** One target pass $T_v$ and **(e)** one draft pass $t_d$, in ms.
# 3. **(f)** The latency per output token with the draft, in ms; **(g)** the speedup over plain
#    decode, $T_v$ divided by (f) (a plain ratio); **(h)** the draft length among 1-8 with the
#    lowest latency per token; **(i)** does going from $m$ to $m + 1$ lower the latency per
#    token? (`True`/`False`)
#
# **Precision and units.** Give (a) to at least four significant figures (the check allows
# 0.2%) and the other numbers to at least three (the check allows 0.5%), and round only the
# final answer, not the steps. (h) is a whole number of draft tokens and must be exact. Sizes
# are decimal (1 GB = 10⁹ bytes); give times in ms. Each section below also asks a short
# written question, answered in the cell under its check.
#
# Your given data come from `grading.params("17-9", SEED)`. Seed 0 is the chapter's own data
# ($m = 4$, $\alpha = 0.7$, the 8B target on an H100 SXM) plus a draft size of ours (a 1e9-
# parameter BF16 draft) for (d)-(i); on a course hub
# you get a seed of your own, from your user name.
#
# <details><summary>Hints for (b) and (c)</summary>
#
# - (b): write the sum for $m$ and for $m + 1$ draft tokens and compare them. The new draft
#   token is emitted only if it and every draft token before it are accepted.
# - (c): the sum in 17 §10 is a geometric series; sum it in closed form, then let $m$ grow with
#   $\alpha < 1$.
#
# </details>

# %% nbgrader={"grade": false, "grade_id": "given", "locked": true, "schema_version": 3, "solution": false, "task": false}
from companion import grading, units

SEED = grading.student_seed()
given = grading.params("17-9", SEED)
alpha, m, hw = given["acceptance"], given["draft_len"], given["hardware"]
print(f"acceptance alpha = {alpha:g}, draft length m = {m}")
print(f"target: {given['model'].name}, D_w = {given['target_weight_bytes'] / units.GB:g} GB; "
      f"draft: N_draft = {given['draft_params']:.3g} params, "
      f"{given['draft_weight_bytes'] / units.GB:g} GB; {hw.name}, HBM beta = "
      f"{hw.mem_bw_bytes_per_s / 1e12:g} TB/s")
print(f"draft lengths to compare: {list(given['draft_lens'])}")

# %% [markdown]
# ## (a)-(c) Tokens per target pass
#
# Set `expected`, `marginal` and `limit`, in tokens.
#
# **Then explain**, in two or three sentences in the cell under the check: what does each term
# $\alpha^j$ of the sum count, and why can no draft length, however long, give more than (c)
# tokens per pass? A good answer names the event whose probability $\alpha^j$ is, says how the
# terms change as $j$ grows, and what that means for lengthening the draft.

# %% nbgrader={"grade": false, "grade_id": "ac_answer", "locked": false, "schema_version": 3, "solution": true, "task": false} tags=["raises-exception"]
expected = marginal = limit = None
# YOUR CODE HERE

# %% nbgrader={"grade": true, "grade_id": "ac_check", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false} tags=["raises-exception"]
with grading.checks():
    grading.check("17-9", "a-expected", expected, seed=SEED)
    grading.check("17-9", "b-marginal", marginal, seed=SEED)
    grading.check("17-9", "c-limit", limit, seed=SEED)

# %% [markdown] nbgrader={"grade": true, "grade_id": "ac_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# YOUR ANSWER HERE

# %% [markdown]
# ## (d)-(i) Charging the draft
#
# Set `target_ms`, `draft_ms` and `latency_ms` in ms, `speedup` (a plain ratio), `best_m` (a
# draft length) and `extend_helps` (`True`/`False`).
#
# **Then explain**, in three or four sentences in the cell under the check: why is (g) below
# (a), when does one more draft token pay for itself, and on which kind of work is speculative
# decoding a good trade? A good answer compares what one more draft token costs and yields with
# the current latency per token, and says what happens to the total work and why that suits
# memory-bound decode but not a compute-bound prefill pool.

# %% nbgrader={"grade": false, "grade_id": "di_answer", "locked": false, "schema_version": 3, "solution": true, "task": false} tags=["raises-exception"]
target_ms = draft_ms = latency_ms = speedup = best_m = extend_helps = None
# YOUR CODE HERE

# %% nbgrader={"grade": true, "grade_id": "di_check", "locked": true, "points": 6, "schema_version": 3, "solution": false, "task": false} tags=["raises-exception"]
with grading.checks():
    grading.check("17-9", "d-target-step", target_ms, seed=SEED)
    grading.check("17-9", "e-draft-step", draft_ms, seed=SEED)
    grading.check("17-9", "f-latency", latency_ms, seed=SEED)
    grading.check("17-9", "g-speedup", speedup, seed=SEED)
    grading.check("17-9", "h-best-k", best_m, seed=SEED)
    grading.check("17-9", "i-extend", extend_helps, seed=SEED)

# %% [markdown] nbgrader={"grade": true, "grade_id": "di_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# YOUR ANSWER HERE
