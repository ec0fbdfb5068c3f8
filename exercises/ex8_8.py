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

# %% nbgrader={"grade": false, "grade_id": "a_answer", "locked": false, "schema_version": 3, "solution": true, "task": false} tags=["raises-exception"]
halved_s = {}
# YOUR CODE HERE

# %% nbgrader={"grade": true, "grade_id": "a_check", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false} tags=["raises-exception"]
with grading.checks():
    for name in given["stage_names"]:
        grading.check("8-8", f"a-{name}", halved_s, key=name, seed=SEED)

# %% [markdown]
# **Explain (not graded).** Which halving helps most, and which of the three halvings could
# the inference engine deliver?

# %% [markdown] nbgrader={"grade": true, "grade_id": "a_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# YOUR ANSWER HERE

# %% [markdown]
# ## (b) Faster decode with a preparation cost
#
# Set `new_time_s` (s), `speedup` (a ratio, e.g. 1.5) and `break_even_s` (s).

# %% nbgrader={"grade": false, "grade_id": "b_answer", "locked": false, "schema_version": 3, "solution": true, "task": false} tags=["raises-exception"]
new_time_s = speedup = break_even_s = None
# speedup: a ratio, e.g. 1.5
# YOUR CODE HERE

# %% nbgrader={"grade": true, "grade_id": "b_check", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false} tags=["raises-exception"]
with grading.checks():
    grading.check("8-8", "b-time", new_time_s, seed=SEED)
    grading.check("8-8", "b-speedup", speedup, seed=SEED)
    grading.check("8-8", "b-breakeven", break_even_s, seed=SEED)

# %% [markdown]
# **Explain (not graded).** Why is the net speedup well below the decode factor, and how
# would sharing the preparation across several tasks move the break-even?

# %% [markdown] nbgrader={"grade": true, "grade_id": "b_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# YOUR ANSWER HERE
