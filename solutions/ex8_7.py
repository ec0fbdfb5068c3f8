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

# %% nbgrader={"grade": false, "grade_id": "a_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
expected = {}
### BEGIN SOLUTION
import math

from companion import display

ms = units.ms
rows, previous = [], 0
for m in given["draft_lens"]:
    terms = [a ** j for j in range(m + 1)]          # 1, alpha, ..., alpha^m
    expected[m] = sum(terms)
    added = sum(terms[previous + 1:])               # alpha^(previous+1) + ... + alpha^m
    shown = " + ".join(f"{x:.4f}" for x in terms) if m <= 4 else (
        f"{terms[0]:.4f} + {terms[1]:.4f} + … + {terms[-1]:.4f}")
    rows.append(f"| {m} | {shown} | **{expected[m]:.4f}** | {previous} → {m}: {added:.4f} "
                f"| {added / (m - previous):.4f} |")
    previous = m
display.md(rf"""
$\alpha = {a:g}$; $\mathbb E[X] = \sum_{{j=0}}^{{m}} \alpha^j = \dfrac{{1 - \alpha^{{m+1}}}}{{1 - \alpha}}$,
never more than $1/(1 - \alpha) = {1 / (1 - a):.3g}$.

| $m$ | $1 + \alpha + \dots + \alpha^m$ | $\mathbb E[X]$ | added over the previous length | added per added position |
|---:|---|---:|---:|---:|
""" + "\n".join(rows) + r"""

Position $j$ adds $\alpha^j$, so a step that adds several positions gains less per position
than the step before it (the last column), even where it adds more in total.
""")
for m in given["draft_lens"]:   # check against the closed form and the companion's 8.5.2 formula
    assert math.isclose(expected[m], (1 - a ** (m + 1)) / (1 - a))
    assert math.isclose(expected[m], calc.speculative_expected_tokens(a, m))
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "a_check", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false}
with grading.checks():
    for m in given["draft_lens"]:
        grading.check("8-7", f"a-m{m}", expected, key=m, seed=SEED)

# %% [markdown]
# **Explain (not graded).** Derive $\mathbb E[X]$ position by position: why does draft position
# $j$ contribute $\alpha^j$, and why may you add the positions' contributions? Then: how much
# does each added position add, and why can no draft length, however long, raise
# $\mathbb E[X]$ past a fixed ceiling?

# %% [markdown] nbgrader={"grade": true, "grade_id": "a_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# ### BEGIN SOLUTION
# The round's output $X$ is the target's own token, always emitted, plus one for each draft
# position that is emitted. Position $j$ is emitted only if positions $1$ to $j$ are all
# accepted; each is accepted with chance $\alpha$ given the ones before it, so position $j$ is
# emitted with chance $\alpha^j$. The mean of a count is the sum of its items' chances
# (linearity of expectation), even though the positions are far from independent, so
# $\mathbb E[X] = 1 + \alpha + \dots + \alpha^m$
# (8.5.2's "at least this many tokens" terms). Each position is thus worth $\alpha$ times the
# one before it: per added position the gain shrinks from one step of the table to the next
# (its last column), although a step that adds more positions can still add more in total.
# The sum is a geometric series, $(1 - \alpha^{m+1})/(1 - \alpha)$, so $\mathbb E[X]$ stays
# below $1/(1 - \alpha)$ however long the draft.
#
# *Look for:* (1) $X$ counted as the always-emitted token plus one for each emitted draft
# position; (2) position $j$ needs all of $1..j$ accepted, chance $\alpha^j$; (3) linearity of
# expectation, which needs no independence; (4) the geometric ceiling $1/(1 - \alpha)$.
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
lens = list(given["draft_lens"])
if best_m == lens[-1]:
    shape = (f"Across the four lengths the latency only falls, so the table alone cannot say "
             f"whether it would rise again beyond $m = {best_m}$.")
elif best_m == lens[0]:
    shape = "The latency is lowest at the shortest length offered and rises from there."
else:
    after = lens[lens.index(best_m) + 1]
    shape = f"The latency falls to $m = {best_m}$ and is higher again at $m = {after}$."
# every whole length, the same rule: where does the minimum really lie?
every = {m: (t_v + t_d * m) / ms / calc.speculative_expected_tokens(a, m) for m in range(1, 65)}
best_any = min(every, key=every.get)
around = ", ".join(f"$m = {m}$: {every[m]:.2f} ms" for m in (best_any - 1, best_any + 1) if m in every)
display.md(rf"""
| $m$ | $T_r = T_v + t_d\,m$ (ms) | $\mathbb E[X]$ | $T_r / \mathbb E[X]$ (ms per token) |
|---:|---|---:|---:|
""" + "\n".join(rows) + f"""

The lowest latency per token of the four is at $m = {best_m}$. {shape}
Over every whole length from 1 to {max(every)} the lowest is at $m = {best_any}$,
{every[best_any]:.2f} ms per token ({around}).
""")
for row in calc.draft_length_table(a, given["draft_lens"], t_v, t_d):   # the companion agrees
    assert math.isclose(row["latency_per_token_s"] / ms, latency_ms[row["draft_len"]])
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "b_check", "locked": true, "points": 5, "schema_version": 3, "solution": false, "task": false}
with grading.checks():
    for m in given["draft_lens"]:
        grading.check("8-7", f"b-m{m}", latency_ms, key=m, seed=SEED)
    grading.check("8-7", "b-best", best_m, seed=SEED)

# %% [markdown]
# **Explain (not graded).** Why does making the draft longer stop lowering the latency per
# token, and what decides where that happens? Why is total time over total tokens the right
# average, rather than the mean of each round's own latency per token?

# %% [markdown] nbgrader={"grade": true, "grade_id": "b_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# ### BEGIN SOLUTION
# Every draft position costs the same $t_d$, but the token it adds on average, $\alpha^m$,
# keeps shrinking. A longer draft lowers the latency only while the added position costs less
# per added token than a token costs now, $t_d/\alpha^m < T_r/\mathbb E[X]$ (8.5.4's marginal
# test); past that point the latency rises again. Where it turns depends on $\alpha$ and
# $t_d$: with a high acceptance and a cheap draft it lies at or beyond the longest length
# offered, and the table only falls (the worked solution says which at this seed and finds the
# best whole length). Dividing total time by total tokens is the right average (8.5.2), since
# that is what a user waits per token over many rounds; averaging the per-round latencies
# would weigh a one-token round like a long one and overstate the latency.
#
# *Look for:* (1) each position costs the same $t_d$ but adds a shrinking $\alpha^m$; (2) the
# marginal test $t_d/\alpha^m < T_r/\mathbb E[X]$ sets the turning point, which moves with
# $\alpha$ and $t_d$; (3) total time over total tokens, because short rounds must not count as
# much as long ones.
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
ungrouped_ms = (t_d / ms) / d_n                 # the same step without groups: one draft pass
if ungrouped_ms < current_ms:
    without = ("below the current latency per token, so without groups the fifth position "
               "would pay: here the grouping is what rules it out.")
else:
    without = (f"{ungrouped_ms / current_ms:.2f} times the current latency per token, so the "
               f"step fails even without groups; grouping raises its price to "
               f"{marginal_ms / current_ms:.1f} times the current latency but does not change "
               f"the choice.")
display.md(rf"""
With groups of {g}: $T_r = {t_v / ms:g} + {t_d / ms:g} \times {g} \lceil 4/{g} \rceil = {t4:.1f}$ ms
at $m = 4$ and $T_r = {t_v / ms:g} + {t_d / ms:g} \times {g} \lceil 5/{g} \rceil = {t5:.1f}$ ms at
$m = 5$; $\mathbb E[X] = {n4:.4f}$ and ${n5:.4f}$.

- latency per token at $m = 5$: ${t5:.1f} / {n5:.4f} = {latency5_ms:.2f}$ ms;
- $\Delta T_r = {t5:.1f} - {t4:.1f} = {d_t:.1f}$ ms for $\Delta X = \alpha^5 = {d_n:.4f}$ tokens:
  $\Delta T_r / \Delta X = {marginal_ms:.1f}$ ms per added token;
- at $m = 4$, $T_r/\mathbb E[X] = {t4:.1f} / {n4:.4f} = {current_ms:.2f}$ ms per token.

${marginal_ms:.1f} {relation} {current_ms:.2f}$, so going to 5 {verdict}.

Without groups the fifth position costs one draft pass: $\Delta T_r / \Delta X = t_d / \alpha^5
= {t_d / ms:g} / {d_n:.4f} = {ungrouped_ms:.1f}$ ms per added token, {without}
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

# %% [markdown]
# **Explain (not graded).** What does the fifth position cost with groups of 4, and what would
# it cost without groups? Is it the grouping that decides between 4 and 5 at your seed?

# %% [markdown] nbgrader={"grade": true, "grade_id": "c_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# ### BEGIN SOLUTION
# With groups, the fifth position opens a new group and costs a whole group of draft time,
# $4t_d$, for only $\alpha^5$ more tokens. That added time per added token is well above the
# current latency per token at every seed offered, so the decision comes out the same at
# every seed: the draft stays at 4. Without groups the same position would cost only $t_d$;
# whether that alone would pay depends on $\alpha$ and $t_d$ (the worked solution compares both
# at this seed). At some seeds the grouping turns a step that would pay into a loss; at others,
# the chapter's data among them, the step fails even ungrouped, and the grouping only widens
# the loss. Padding makes the added time jump at group boundaries, so draft lengths that fill
# whole groups are the ones worth considering.
#
# *Look for:* (1) with groups the fifth position costs $4t_d$, without them $t_d$, for the same
# $\alpha^5$ tokens; (2) both compared with the latency per token at $m = 4$; (3) whether the
# grouping is what rules the step out at this seed (the worked solution says).
# ### END SOLUTION
