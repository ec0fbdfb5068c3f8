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
# # Exercise 8-8 · How much does a faster stage shorten a whole agent task?
#
# *Calculation, section 8.6.3.* An agent task spends its time in prefill, decode, and tool use
# and waiting. Speeding up one stage by a factor $\sigma$ shortens only that stage (Amdahl's
# law, Figure 8-36); any one-off preparation the speed-up needs is added to the total. With
# stage times $t_\text{stage}(i)$ and speedups $\sigma_i$ (1 for a stage left alone), the task
# takes
#
# $$T' = \sum_i \frac{t_\text{stage}(i)}{\sigma_i} + T_\text{prep}$$
#
# instead of $T = \sum_i t_\text{stage}(i)$, and the net speedup is $T / T'$.
#
# 1. **(a)** Halve one stage at a time: what is the task time in each case? (s)
# 2. **(b)** Instead, speed decode up by the factor below and add the draft preparation time:
#    what are the new task time (s) and the net speedup, and at what preparation time does the
#    change stop saving time? (s)
#
# Your given data come from `grading.params("8-8", SEED)`. Seed 0 is the chapter's own data;
# on a course hub you get a seed of your own, from your user name.

# %% nbgrader={"grade": false, "grade_id": "given", "locked": true, "schema_version": 3, "solution": false, "task": false}
from companion import calc, grading

SEED = grading.student_seed()
given = grading.params("8-8", SEED)
stages = dict(zip(given["stage_names"], given["stage_s"]))
print(f"stage times: {stages} (s)")
print(f"(a) halve one stage (factor {given['halving_factor']:g}); (b) decode "
      f"{given['decode_factor']:g}x faster plus {given['prep_s']:g} s of draft preparation")

# %% [markdown]
# ## (a) One stage at a time
#
# Fill `halved_s[name]` for each stage name.

# %% nbgrader={"grade": false, "grade_id": "a_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
halved_s = {}
### BEGIN SOLUTION
import math

from companion import display

names, t = given["stage_names"], given["stage_s"]
total = sum(t)
h = given["halving_factor"]
lines = [rf"$T = {' + '.join(f'{x:g}' for x in t)} = {total:g}$ s. Halving one stage:"]
for i, name in enumerate(names):
    halved_s[name] = total - t[i] + t[i] / h          # only stage i shrinks
    lines.append(rf"- {name}: $T' = {total:g} - {t[i]:g} + {t[i]:g}/{h:g} = {halved_s[name]:g}$ s")
display.md(lines[0] + "\n\n" + "\n".join(lines[1:]))
for i, name in enumerate(names):   # check against the companion's 8.6.3 formula
    speedups = [h if j == i else 1.0 for j in range(len(names))]
    assert math.isclose(halved_s[name], calc.staged_task_time(t, speedups))
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "a_check", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
with grading.checks():
    for name in given["stage_names"]:
        grading.check("8-8", f"a-{name}", halved_s, key=name, seed=SEED)

# %% [markdown] nbgrader={"grade": true, "grade_id": "a_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# ### BEGIN SOLUTION
# Halving a stage saves half of that stage and nothing else, so the saving is proportional to
# the stage's share of the task (the derivation above). The biggest stage is the best lever,
# and even halving it leaves everything else untouched.
# ### END SOLUTION

# %% [markdown]
# ## (b) Faster decode with a preparation cost
#
# Set `new_time_s`, `speedup` and `break_even_s`.

# %% nbgrader={"grade": false, "grade_id": "b_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
new_time_s = speedup = break_even_s = None
### BEGIN SOLUTION
i = names.index("decode")
s_d, prep = given["decode_factor"], given["prep_s"]
decode_new = t[i] / s_d
new_time_s = total - t[i] + decode_new + prep
speedup = total / new_time_s
break_even_s = t[i] - decode_new              # the preparation may use up what decode saves
amdahl = total / (total - t[i] + decode_new)
display.md(rf"""
Decode: ${t[i]:g} / {s_d:g} = {decode_new:g}$ s. The task:
$T' = {" + ".join(f"{x:g}" for j, x in enumerate(t) if j != i)} + {decode_new:g} + {prep:g}
= {new_time_s:g}$ s, a net speedup of $T / T' = {total:g} / {new_time_s:g} = {speedup:.3f}$
(without the preparation: ${total:g} / {new_time_s - prep:g} = {amdahl:.3f}$).

The change stops saving time when $T_\text{{prep}}$ equals what decode saves:
$T_\text{{prep}} = {t[i]:g} - {decode_new:g} = {break_even_s:g}$ s.
""")
faster = [s_d if j == i else 1.0 for j in range(len(names))]   # the companion's 8.6.3 formulas
assert math.isclose(new_time_s, calc.staged_task_time(t, faster, prep))
assert math.isclose(speedup, calc.staged_task_speedup(t, faster, prep))
assert math.isclose(break_even_s, calc.staged_break_even_s(t, faster))
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "b_check", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
with grading.checks():
    grading.check("8-8", "b-time", new_time_s, seed=SEED)
    grading.check("8-8", "b-speedup", speedup, seed=SEED)
    grading.check("8-8", "b-breakeven", break_even_s, seed=SEED)

# %% [markdown] nbgrader={"grade": true, "grade_id": "b_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# ### BEGIN SOLUTION
# The faster decode saves most of its own stage, but the other stages keep their time and the
# preparation is added, so the net speedup is well below what the decode factor suggests and
# below Amdahl's figure without the preparation (both computed above). The change stops paying
# once the preparation eats all that decode saves. One-off costs belong in the same sum as the
# stages they speed up.
# ### END SOLUTION
