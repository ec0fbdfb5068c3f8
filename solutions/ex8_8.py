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
# and waiting. Speeding up one stage by $s$ shortens only that stage (Amdahl's law); any
# one-off preparation the speed-up needs is added to the total.
#
# 1. **(a)** Halve one stage at a time: what is the task time in each case? (s)
# 2. **(b)** Instead, speed decode up by the factor below and add the draft preparation time:
#    what are the new task time (s) and the net speedup, and at what preparation time does the
#    change stop saving time? (s)
#
# Your given data come from `grading.params("8-8", SEED)`. Seed 0 is the chapter's own data;
# your instructor may give you another seed.

# %% nbgrader={"grade": false, "grade_id": "given", "locked": true, "schema_version": 3, "solution": false, "task": false}
from companion import calc, grading

SEED = 0
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
for name in given["stage_names"]:
    speedups = [given["halving_factor"] if n == name else 1.0 for n in given["stage_names"]]
    halved_s[name] = calc.staged_task_time(given["stage_s"], speedups)
print(halved_s)
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "a_check", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
with grading.checks():
    for name in given["stage_names"]:
        grading.check("8-8", f"a-{name}", halved_s, key=name, seed=SEED)

# %% [markdown] nbgrader={"grade": true, "grade_id": "a_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# ### BEGIN SOLUTION
# Halving a stage saves half of that stage and nothing else: 100 - 10 = 90 s for prefill,
# 100 - 25 = 75 s for decode, 100 - 15 = 85 s for the tool stage. The biggest stage is the best
# lever, and even halving it leaves the other half of the task untouched.
# ### END SOLUTION

# %% [markdown]
# ## (b) Faster decode with a preparation cost
#
# Set `new_time_s`, `speedup` and `break_even_s`.

# %% nbgrader={"grade": false, "grade_id": "b_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
new_time_s = speedup = break_even_s = None
### BEGIN SOLUTION
faster = [given["decode_factor"] if n == "decode" else 1.0 for n in given["stage_names"]]
new_time_s = calc.staged_task_time(given["stage_s"], faster, given["prep_s"])
speedup = calc.staged_task_speedup(given["stage_s"], faster, given["prep_s"])
break_even_s = calc.staged_break_even_s(given["stage_s"], faster)
print(f"{new_time_s:g} s, {speedup:.3f}x, break-even preparation {break_even_s:g} s")
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "b_check", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
with grading.checks():
    grading.check("8-8", "b-time", new_time_s, seed=SEED)
    grading.check("8-8", "b-speedup", speedup, seed=SEED)
    grading.check("8-8", "b-breakeven", break_even_s, seed=SEED)

# %% [markdown] nbgrader={"grade": true, "grade_id": "b_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# ### BEGIN SOLUTION
# Decode at a quarter takes 12.5 s, so the task takes 20 + 12.5 + 30 + 8 = 70.5 s: a net
# speedup of 100 / 70.5 = 1.42x instead of Amdahl's 1.6x without the preparation. The change
# stops paying once the preparation eats all that decode saves, 50 - 12.5 = 37.5 s. One-off
# costs belong in the same sum as the stages they speed up.
# ### END SOLUTION
