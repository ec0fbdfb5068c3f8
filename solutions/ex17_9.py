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

# %% nbgrader={"grade": false, "grade_id": "ac_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
expected = marginal = limit = None
### BEGIN SOLUTION
from companion.display import tex
import math

from companion import calc
from companion.display import md


def expected_tokens(draft_len):
    """E[X] = 1 + alpha + ... + alpha^draft_len."""
    return sum(alpha ** j for j in range(draft_len + 1))


# step 1: the terms alpha^j, j = 0..m, and their sum
terms = [alpha ** j for j in range(m + 1)]
expected = sum(terms)
# step 2: the next term, alpha^(m+1), is what one more draft token adds
marginal = alpha ** (m + 1)
# step 3: the geometric series summed to infinity
limit = 1 / (1 - alpha)

md(rf"""
**Expected tokens per pass.**
$\mathbb E[X] = \sum_{{j=0}}^{{{m}}} \alpha^j = {' + '.join(f'{t:.3f}' for t in terms)} = {expected:.3f}$ tokens.

**One more draft token.** Term $j \ge 1$ of the sum is the probability that the first $j$ draft
tokens are all accepted, which is when the $j$-th one is kept (the leading 1 is the target's
own token). With $m + 1$ draft tokens the
sum gains one term: the new token is emitted only if it and all $m$ before it are accepted, so
it adds $\alpha^{{m+1}} = {alpha:g}^{{{m + 1}}} = {marginal:.3f}$ tokens per pass.

**Unlimited draft.** The sum is geometric with ratio $\alpha$: multiplying it by $1 - \alpha$
cancels every term but the first and the last, so

$$\mathbb E[X] = \frac{{1 - \alpha^{{m+1}}}}{{1 - \alpha}}
\ \xrightarrow{{\ m \to \infty\ }}\ \frac{{1}}{{1 - \alpha}} = \frac{{1}}{{1 - {alpha:g}}}
= {limit:.3f}\ \text{{tokens}},$$

since $\alpha < 1$ makes $\alpha^{{m+1}}$ vanish as $m$ grows.
""")
# check: the companion's 17 §10 / 8.5.2 expectation
assert math.isclose(calc.speculative_expected_tokens(alpha, m), expected, rel_tol=1e-12)
assert math.isclose(calc.speculative_expected_tokens(alpha, m + 1) - expected, marginal,
                    rel_tol=1e-9)
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "ac_check", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false}
with grading.checks():
    grading.check("17-9", "a-expected", expected, seed=SEED)
    grading.check("17-9", "b-marginal", marginal, seed=SEED)
    grading.check("17-9", "c-limit", limit, seed=SEED)

# %% [markdown] nbgrader={"grade": true, "grade_id": "ac_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# ### BEGIN SOLUTION
# Each term $\alpha^j$ ($j \ge 1$) is the probability that the first $j$ draft tokens all
# survive, which is exactly when the $j$-th one is kept; with the target's own token (the
# leading 1) the sum counts the expected output of one pass
# (derivation above). The terms shrink geometrically: each extra draft token adds less than the
# one before, and the sum of all of them is $1/(1-\alpha)$, which no finite draft reaches.
# Lengthening the draft therefore has diminishing returns, while each extra token still costs
# a full draft pass.
#
# *Look for:* (1) $\alpha^j$ = probability the first $j$ draft tokens are all accepted;
# (2) the terms shrink by the factor $\alpha$ each; (3) so the sum is bounded by
# $1/(1-\alpha)$ and longer drafts add less and less.
# ### END SOLUTION

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

# %% nbgrader={"grade": false, "grade_id": "di_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
target_ms = draft_ms = latency_ms = speedup = best_m = extend_helps = None
### BEGIN SOLUTION
beta = hw.mem_bw_bytes_per_s
# step 1: the two passes, each a read of its model's weights
T_v = given["target_weight_bytes"] / beta
t_d = given["draft_weight_bytes"] / beta
target_ms, draft_ms = T_v / units.ms, t_d / units.ms


def latency_s(draft_len):
    """(T_v + draft_len t_d) / E[X]: seconds per output token."""
    return (T_v + draft_len * t_d) / expected_tokens(draft_len)


# step 2: one round at the given m, and what it buys per token
round_s = T_v + m * t_d
latency_ms = round_s / expected / units.ms
speedup = T_v / (round_s / expected)
# step 3: every draft length offered, and the lowest latency
table = {j: latency_s(j) / units.ms for j in given["draft_lens"]}
best_m = min(table, key=table.get)
# step 4: m + 1 helps when its added time per added token is below the current average
added_ms_per_token = draft_ms / marginal
extend_helps = latency_s(m + 1) / units.ms < latency_ms

rows = "\n".join(f"| {j} | {expected_tokens(j):.3f} | {(T_v + j * t_d) / units.ms:.2f} | "
                 f"{table[j]:.3f}{' (lowest)' if j == best_m else ''} |" for j in table)
md(rf"""
**The two passes.**
$T_v = D_w / \beta = {given['target_weight_bytes'] / units.GB:g}\ \text{{GB}} / {tex(beta / units.GB, ',.0f')}\ \text{{GB/s}} = {target_ms:.3f}\ \text{{ms}}$;
$t_d = {given['draft_weight_bytes'] / units.GB:g}\ \text{{GB}} / {tex(beta / units.GB, ',.0f')}\ \text{{GB/s}} = {draft_ms:.3f}\ \text{{ms}}$.

**Latency per token at $m = {m}$.**

$$\frac{{T_v + m\,t_d}}{{\mathbb E[X]}} = \frac{{({target_ms:.3f} + {m} \times {draft_ms:.3f})\ \text{{ms}}}}{{{expected:.3f}}}
= \frac{{{round_s / units.ms:.3f}\ \text{{ms}}}}{{{expected:.3f}}} = {latency_ms:.3f}\ \text{{ms}},
\qquad \text{{speedup}} = \frac{{{target_ms:.3f}}}{{{latency_ms:.3f}}} = {speedup:.3f}\times$$

against the free-draft ideal of ${expected:.3f}\times$.

**Every draft length offered.**

| $m$ | $\mathbb E[X]$ | $T_v + m t_d$ (ms) | ms per token |
|---:|---:|---:|---:|
{rows}

**Going from $m = {m}$ to ${m + 1}$** adds $t_d = {draft_ms:.3f}$ ms for $\alpha^{{{m + 1}}} = {marginal:.3f}$
tokens, ${added_ms_per_token:.2f}$ ms per added token, against the current average of
${latency_ms:.3f}$ ms: it {'lowers' if extend_helps else 'does not lower'} the latency per token.
""")
# check: the companion's draft-length arithmetic (8.5.4, Exercise 8-7) gives the same
rows_c = calc.draft_length_table(alpha, given["draft_lens"], T_v, t_d)
assert min(rows_c, key=lambda r: r["latency_per_token_s"])["draft_len"] == best_m
assert math.isclose(calc.draft_length_table(alpha, [m], T_v, t_d)[0]["latency_per_token_s"],
                    latency_ms * units.ms, rel_tol=1e-9)
assert calc.marginal_draft_gain(alpha, m + 1, T_v, t_d)["helps"] == extend_helps
assert math.isclose(calc.decode_time_split(given["model"], hw)["step_s"], T_v, rel_tol=1e-9)
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "di_check", "locked": true, "points": 6, "schema_version": 3, "solution": false, "task": false}
with grading.checks():
    grading.check("17-9", "d-target-step", target_ms, seed=SEED)
    grading.check("17-9", "e-draft-step", draft_ms, seed=SEED)
    grading.check("17-9", "f-latency", latency_ms, seed=SEED)
    grading.check("17-9", "g-speedup", speedup, seed=SEED)
    grading.check("17-9", "h-best-k", best_m, seed=SEED)
    grading.check("17-9", "i-extend", extend_helps, seed=SEED)

# %% [markdown] nbgrader={"grade": true, "grade_id": "di_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# ### BEGIN SOLUTION
# With a free draft the speedup would be $\mathbb E[X]$, (a); charging the draft's own $m$
# passes lengthens each round, so (g) falls below it (derivation above). Each extra draft token
# costs a full draft pass but adds only the next, smaller term $\alpha^{m+1}$; lengthening pays
# only while that added cost per added token stays below the current average latency per
# token, which the table shows for every length. Total work goes up (the draft runs, rejected
# tokens are thrown away) to buy latency: a good trade on a memory-bound decode that leaves
# almost all of the arithmetic idle, a bad one on a prefill pool that is already
# compute-bound.
#
# *Look for:* (1) the draft passes add time the free-draft ideal ignores; (2) extend while
# $t_d / \alpha^{m+1}$ is below the current latency per token; (3) more total work for lower
# latency, worth it only where the arithmetic is idle (memory-bound decode).
# ### END SOLUTION
