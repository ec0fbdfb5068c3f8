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
# and waiting. Speeding up one stage shortens only that stage (Amdahl's law, Figure 8-36), and
# any one-off preparation the speed-up needs is added to the task's time. The net speedup is
# the old task time over the new one. The preparation in (b) is the work a drafter needs
# before it can help, such as building the context index that 8.5.2 looks drafts up in.
#
# 1. **(a)** Halve one stage at a time: what is the task time in each case? (s)
# 2. **(b)** Instead, speed decode up by the factor below and add the draft preparation time:
#    what are the new task time (s) and the net speedup, and at what preparation time does the
#    change stop saving time? (s)
#
# Compute the answers yourself first, then check them with the Amdahl explorer of the 8.6
# notebook ("Beyond the instance: Amdahl over a whole task"): its decode fraction stands for
# the share of the task the faster stage takes; set it, the speedup and the preparation.
#
# Your given data come from `grading.params("8-8", SEED)`. Seed 0 is the chapter's own data;
# on a course hub you get a seed of your own, from your user name.
#
# <details><summary>Hints: the formula (open after you have tried)</summary>
#
# - With stage times $t_\text{stage}(i)$ and speedups $\sigma_i$ (1 for a stage left alone),
#   the task takes $T' = \sum_i t_\text{stage}(i)/\sigma_i + T_\text{prep}$ instead of
#   $T = \sum_i t_\text{stage}(i)$, and the net speedup is $T/T'$.
# - For one stage that takes a fraction $f$ of the task and no preparation this is 8.6.3's
#   form of Amdahl's law, $T/T' = 1/((1 - f) + f/\sigma)$; the chapter writes the factor
#   <i>s</i>.
# - For the question under (b): 8.5.2 notes that a context index can be built ahead of time and
#   shared across requests. What does each task then pay?
#
# </details>

# %% nbgrader={"grade": false, "grade_id": "given", "locked": true, "schema_version": 3, "solution": false, "task": false}
from companion import calc, grading

SEED = grading.student_seed()
given = grading.params("8-8", SEED)
print(f"{'stage':>9} | " + " | ".join(f"{n:>7}" for n in given["stage_names"]) + " |    task")
print(f"{'time (s)':>9} | " + " | ".join(f"{t:>7g}" for t in given["stage_s"])
      + f" | {sum(given['stage_s']):>7g}")
print(f"(a) halve one stage (factor {given['halving_factor']:g}); (b) decode "
      f"{given['decode_factor']:g}x faster plus {given['prep_s']:g} s of draft preparation")

# %% [markdown]
# ## (a) One stage at a time
#
# Fill `halved_s[name]` for each stage name: `"prefill"`, `"decode"` and `"tool"` (tool use
# and waiting).

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
engine = ("prefill", "decode")                        # the stages the inference engine runs
saved = {name: total - halved_s[name] for name in names}
ranked = sorted(names, key=saved.get, reverse=True)
words = {"prefill": "prefill", "decode": "decode", "tool": "tool use and waiting"}
outside = ("external tool time, which no inference optimization touches (queueing for the "
           "engine is partly the scheduler's doing)")
top = [n for n in ranked if saved[n] == saved[ranked[0]]]


def than(x, y):
    return "more than" if x > y else ("as much as" if x == y else "less than")


if "tool" in top and len(top) > 1:
    lesson = (f"Halving tool use and waiting, mostly {outside}, saves as much as the engine's "
              f"best lever, {words[top[0] if top[0] != 'tool' else top[1]]}.")
elif "tool" in top:
    lesson = (f"The best lever is tool use and waiting, mostly {outside}: faster tools save "
              f"more here than any halving of the engine's own stages (decode "
              f"{saved['decode']:g} s, prefill {saved['prefill']:g} s).")
else:
    lesson = (f"The best lever, {words[top[0]]}, is GPU work. Tool use and waiting, mostly "
              f"{outside}, still saves {saved['tool']:g} s when halved, "
              f"{than(saved['tool'], saved['prefill'])} halving prefill "
              f"({saved['prefill']:g} s).")
display.md(lines[0] + "\n\n" + "\n".join(lines[1:]) + "\n\nTime saved, largest first: "
           + ", ".join(f"{words[n]} {saved[n]:g} s" for n in ranked) + ". " + lesson)
for i, name in enumerate(names):   # check against the companion's 8.6.3 formula
    speedups = [h if j == i else 1.0 for j in range(len(names))]
    assert math.isclose(halved_s[name], calc.staged_task_time(t, speedups))
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "a_check", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
with grading.checks():
    for name in given["stage_names"]:
        grading.check("8-8", f"a-{name}", halved_s, key=name, seed=SEED)

# %% [markdown]
# **Explain (not graded).** Which halving helps most, and which of the three halvings could
# the inference engine deliver?

# %% [markdown] nbgrader={"grade": true, "grade_id": "a_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# ### BEGIN SOLUTION
# Halving a stage saves half of that stage and nothing else, so the larger the stage, the
# better the lever (the ranking above). Only prefill and decode run on the GPU, so the engine
# can deliver those two halvings. The third stage is mostly the external tools' own time
# (searches, code runs, other services), which no inference optimization shortens; only the
# part spent queueing for the engine is partly the scheduler's doing. Halving that stage can
# still save more than halving prefill, and at some seeds it is the largest stage of all,
# where the best lever is faster tools rather than a faster engine. Even the best halving
# leaves every other stage as it was.
#
# *Look for:* (1) a halving saves half of its own stage, so the largest stage is the best
# lever; (2) the engine delivers prefill and decode; (3) external tool time lies outside any
# inference optimization, queueing only partly so.
# ### END SOLUTION

# %% [markdown]
# ## (b) Faster decode with a preparation cost
#
# Set `new_time_s` (s), `speedup` (a ratio, e.g. 1.5) and `break_even_s` (s).

# %% nbgrader={"grade": false, "grade_id": "b_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
new_time_s = speedup = break_even_s = None
# speedup: a ratio, e.g. 1.5
### BEGIN SOLUTION
i = names.index("decode")
s_d, prep = given["decode_factor"], given["prep_s"]
decode_new = t[i] / s_d
new_time_s = total - t[i] + decode_new + prep
speedup = total / new_time_s
break_even_s = t[i] - decode_new              # the preparation may use up what decode saves
amdahl = total / (total - t[i] + decode_new)
f = t[i] / total                                  # decode's share of the task
shares = (1, 4, 16)                               # tasks that share one preparation
shared = {n: total / (total - t[i] + decode_new + prep / n) for n in shares}
display.md(rf"""
Decode: ${t[i]:g} / {s_d:g} = {decode_new:g}$ s. The task:
$T' = {" + ".join(f"{x:g}" for j, x in enumerate(t) if j != i)} + {decode_new:g} + {prep:g}
= {new_time_s:g}$ s, a net speedup of $T / T' = {total:g} / {new_time_s:g} = {speedup:.3f}$
(without the preparation: ${total:g} / {new_time_s - prep:g} = {amdahl:.3f}$).

In 8.6.3's form: decode is $f = {t[i]:g} / {total:g} = {f:.4g}$ of the task, so without the
preparation $T/T' = 1/((1 - f) + f/\sigma) = 1/({1 - f:.4g} + {f / s_d:.4g}) = {amdahl:.3f}$; the
preparation adds its share of the old task, ${prep:g}/{total:g} = {prep / total:.4g}$, to the
denominator: $1/({1 - f + f / s_d:.4g} + {prep / total:.4g}) = {speedup:.3f}$.

The change stops saving time when $T_\text{{prep}}$ equals what decode saves:
$T_\text{{prep}} = {t[i]:g} - {decode_new:g} = {break_even_s:g}$ s. A preparation shared by
several tasks is paid once for all of them, so each task carries only its share: the net
speedup per task is """ + ", ".join(f"{shared[n]:.3f} for {n} task{'s' * (n > 1)}"
                                    for n in shares) + f""", and the whole preparation may
take up to {break_even_s:g} s times the number of tasks sharing it before it stops paying.
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

# %% [markdown]
# **Explain (not graded).** Why is the net speedup well below the decode factor, and how
# would sharing the preparation across several tasks move the break-even?

# %% [markdown] nbgrader={"grade": true, "grade_id": "b_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# ### BEGIN SOLUTION
# The faster decode saves most of its own stage, but the other stages keep their time and the
# preparation is added, so the net speedup is well below the decode factor and below Amdahl's
# figure without the preparation (both computed above). The change stops paying once the
# preparation eats all that decode saves. A preparation shared by several tasks (an index built
# once ahead of time and reused, 8.5.2) is paid once for all of them, so each task carries only
# its share, and the whole preparation may take that many times the single-task break-even
# before it stops paying. One-off costs belong in the same sum as the stages they speed up.
#
# *Look for:* (1) the unchanged stages and the added preparation cap the net speedup (Amdahl);
# (2) break-even where the preparation equals decode's saving; (3) a shared preparation is
# divided among the tasks, multiplying the preparation each can afford.
# ### END SOLUTION
