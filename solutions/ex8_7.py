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

# %% nbgrader={"grade": false, "grade_id": "a_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
expected = {}
### BEGIN SOLUTION
import math

from companion import display

ms = units.ms
rows = []
for m in given["draft_lens"]:
    terms = [a ** j for j in range(m + 1)]          # 1, alpha, ..., alpha^m
    expected[m] = sum(terms)
    shown = " + ".join(f"{x:.4f}" for x in terms) if m <= 4 else (
        f"{terms[0]:.4f} + {terms[1]:.4f} + … + {terms[-1]:.4f}")
    rows.append(f"| {m} | {shown} | **{expected[m]:.4f}** |")
display.md(rf"""
$\alpha = {a:g}$; $\mathbb E[X] = \sum_{{j=0}}^{{m}} \alpha^j = \dfrac{{1 - \alpha^{{m+1}}}}{{1 - \alpha}}$,
never more than $1/(1 - \alpha) = {1 / (1 - a):.3g}$.

| $m$ | $1 + \alpha + \dots + \alpha^m$ | $\mathbb E[X]$ |
|---:|---|---:|
""" + "\n".join(rows))
for m in given["draft_lens"]:   # check against the closed form and the companion's 8.5.2 formula
    assert math.isclose(expected[m], (1 - a ** (m + 1)) / (1 - a))
    assert math.isclose(expected[m], calc.speculative_expected_tokens(a, m))
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "a_check", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false}
with grading.checks():
    for m in given["draft_lens"]:
        grading.check("8-7", f"a-m{m}", expected, key=m, seed=SEED)

# %% [markdown] nbgrader={"grade": true, "grade_id": "a_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# ### BEGIN SOLUTION
# Each extra position adds $\alpha^m$, the chance that every draft token up to it survived, so
# the gains shrink geometrically: doubling a long draft adds much less than doubling a short
# one (the table above). The output can never exceed $1/(1 - \alpha)$, however long the draft.
# ### END SOLUTION

# %% [markdown]
# ## (b) Latency per output token, and the best length
#
# Fill `latency_ms[m]` and set `best_m`.

# %% nbgrader={"grade": false, "grade_id": "b_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
latency_ms = {}
best_m = None
### BEGIN SOLUTION
rows = []
for m in given["draft_lens"]:
    round_ms = (t_v + t_d * m) / ms
    latency_ms[m] = round_ms / expected[m]
    rows.append(f"| {m} | {t_v / ms:g} + {t_d / ms:g} × {m} = {round_ms:.1f} | {expected[m]:.4f} "
                f"| **{latency_ms[m]:.2f}** |")
best_m = min(latency_ms, key=latency_ms.get)
display.md(rf"""
| $m$ | $T_r = T_v + t_d\,m$ (ms) | $\mathbb E[X]$ | $T_r / \mathbb E[X]$ (ms per token) |
|---:|---|---:|---:|
""" + "\n".join(rows) + f"""

The lowest latency per token is at $m = {best_m}$.
""")
for row in calc.draft_length_table(a, given["draft_lens"], t_v, t_d):   # the companion agrees
    assert math.isclose(row["latency_per_token_s"] / ms, latency_ms[row["draft_len"]])
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "b_check", "locked": true, "points": 5, "schema_version": 3, "solution": false, "task": false}
with grading.checks():
    for m in given["draft_lens"]:
        grading.check("8-7", f"b-m{m}", latency_ms, key=m, seed=SEED)
    grading.check("8-7", "b-best", best_m, seed=SEED)

# %% [markdown] nbgrader={"grade": true, "grade_id": "b_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# ### BEGIN SOLUTION
# Every draft token costs the same $t_d$, but the token it adds on average, $\alpha^m$, shrinks;
# once $\alpha^m$ buys less than $t_d$ divided by the current latency per token, a longer draft
# makes each token slower, so the latency falls, reaches a minimum and rises again (the table
# above). Dividing total time by total tokens is the right average (8.5.2); averaging the
# per-round latencies would weigh a one-token round like a long one and overstate the latency.
# ### END SOLUTION

# %% [markdown]
# ## (c) Grouped drafting: 4 or 5?
#
# Set `latency5_ms`, `marginal_ms` ($\Delta T_r/\Delta X$ from 4 to 5) and `extend` (True if 5
# beats 4).

# %% nbgrader={"grade": false, "grade_id": "c_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
latency5_ms = marginal_ms = extend = None
### BEGIN SOLUTION
g = given["group"]


def grouped_round_ms(m):
    """T_r = T_v + t_d g ceil(m / g), in ms."""
    return (t_v + t_d * g * math.ceil(m / g)) / ms


n4, n5 = sum(a ** j for j in range(5)), sum(a ** j for j in range(6))
t4, t5 = grouped_round_ms(4), grouped_round_ms(5)
latency5_ms = t5 / n5
d_t, d_n = t5 - t4, n5 - n4                      # d_n = alpha^5
marginal_ms = d_t / d_n
current_ms = t4 / n4
extend = marginal_ms < current_ms
relation, verdict = ("<", "helps") if extend else (r"\ge", "does not help")
display.md(rf"""
With groups of {g}: $T_r = {t_v / ms:g} + {t_d / ms:g} \times {g} \lceil 4/{g} \rceil = {t4:.1f}$ ms
at $m = 4$ and $T_r = {t_v / ms:g} + {t_d / ms:g} \times {g} \lceil 5/{g} \rceil = {t5:.1f}$ ms at
$m = 5$; $\mathbb E[X] = {n4:.4f}$ and ${n5:.4f}$.

- latency per token at $m = 5$: ${t5:.1f} / {n5:.4f} = {latency5_ms:.2f}$ ms;
- $\Delta T_r = {t5:.1f} - {t4:.1f} = {d_t:.1f}$ ms for $\Delta X = \alpha^5 = {d_n:.4f}$ tokens:
  $\Delta T_r / \Delta X = {marginal_ms:.1f}$ ms per added token;
- at $m = 4$, $T_r/\mathbb E[X] = {t4:.1f} / {n4:.4f} = {current_ms:.2f}$ ms per token.

${marginal_ms:.1f} {relation} {current_ms:.2f}$, so going to 5 {verdict}.
""")
step = calc.marginal_draft_gain(a, 5, t_v, t_d, g)                  # the companion's 8.5.4 test
assert math.isclose(step["marginal_s_per_token"] / ms, marginal_ms) and step["helps"] == extend
assert math.isclose(calc.draft_length_table(a, [5], t_v, t_d, g)[0]["latency_per_token_s"] / ms,
                    latency5_ms)
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "c_check", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
with grading.checks():
    grading.check("8-7", "c-m5", latency5_ms, seed=SEED)
    grading.check("8-7", "c-marginal", marginal_ms, seed=SEED)
    grading.check("8-7", "c-extend", extend, seed=SEED)

# %% [markdown] nbgrader={"grade": true, "grade_id": "c_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# ### BEGIN SOLUTION
# The fifth position opens a new group, so it costs a whole group of draft time, four times
# $t_d$, for only $\alpha^5$ more tokens. That added time per added token is several times the
# current latency per token, so the marginal condition fails and the draft stays at 4 (the
# derivation above). Padding makes the added time jump at group boundaries, so draft lengths
# that fill whole groups are the ones worth considering.
# ### END SOLUTION
