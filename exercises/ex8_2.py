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
# # Exercise 8-2 · How large may a prefill chunk be under an output-interval target?
#
# *Analysis, sections 8.2.2-8.2.4.* Four requests share an instance that runs at most two at
# a time. Every round takes (8.2.2's round model)
#
# $$T_r = t_\text{fixed} + t_\text{token}\cdot(\text{new tokens}) + t_\text{pair}\cdot
#   (\text{causal query-key pairs}),$$
#
# where a chunk of $c$ new tokens on $h$ cached tokens adds
# $\text{pairs}(c, h) = c\,h + c(c+1)/2$ pairs (8.2.3, Figure 8-8) and a decode step is a
# chunk of one token. The schedule follows 8.2.2: the round that prefills a request's prompt
# also emits its first output token, and each later round emits one more; a request leaves
# after the round that emits its last token, and continuous batching gives its slot to the
# next waiting request at the next round, which prefills that request's whole prompt.
#
# 1. **(a)** By hand, with the round model above: how long is the first round, in which r0's
#    and r1's prompts are prefilled together, and how long is the next round, one decode step
#    for each of them? (ms)
# 2. **(b)** A running request waits through every round that carries its decode step, so
#    each such round is one of its output intervals. Which of these rounds runs longest, and
#    why? Give its duration (ms) and pick its cause from the options printed in (b).
# 3. **(c)** Split prompts into chunks of $c$ tokens: how many query-key pairs does the first
#    chunk have, and how many the last chunk of r2's prompt? Then turn the interval target into
#    a chunk size (8.2.4): the most new prompt tokens a round may carry next to one decode step
#    on a context of $n$ tokens (r0's prompt length) without lasting longer than the target,
#    for a chunk on no cached context and for one on the cached history of r2's last chunk.
# 4. **(d)** A replay of six requests (printed in (d)) was run at several per-round token
#    budgets. Pick the largest budget whose longest output interval stays under the target,
#    the budget under which later arrivals queue least, and the smallest budget whose mean
#    prefill load (defined in (d)) is below 1, or `"none"`; then name the round-model cost behind
#    each of the two trends, from the options printed there.
#
# **Precision and units.** Times in ms: the first round of (a) and the round of (b) to four
# significant figures (the checker accepts 0.2%), the decode round of (a) to three decimals
# (0.01%); pair counts and (c)'s chunk sizes as exact whole numbers (a chunk size is
# rounded down: the round must not exceed the target); budgets and options as printed.

# %% nbgrader={"grade": false, "grade_id": "given", "locked": true, "schema_version": 3, "solution": false, "task": false}
from companion import calc, grading, units

SEED = grading.student_seed()
given = grading.params("8-2", SEED)
t0, t_tok, t_pair = given["fixed_s"], given["per_token_s"], given["per_pair_s"]
print(f"round model: {t0 / units.ms:g} ms + {t_tok / units.us:g} us per new token "
      f"+ {t_pair / units.ns:g} ns per causal pair; at most {given['max_running']} running")
print("requests (id, arrival s, prompt tokens, output tokens):")
for r in given["requests"]:
    print("  ", r)
print(f"chunk length c = {given['chunk_tokens']} tokens; "
      f"interval target {given['itl_target_s'] / units.ms:g} ms")

# %% [markdown]
# ## (a) The first two rounds
#
# Set `prefill_ms` (r0 and r1 prefilled in one round) and `decode_ms` (the next round).

# %% nbgrader={"grade": false, "grade_id": "a_answer", "locked": false, "schema_version": 3, "solution": true, "task": false} tags=["raises-exception"]
prefill_ms = None
decode_ms = None
# YOUR CODE HERE

# %% nbgrader={"grade": true, "grade_id": "a_check", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false} tags=["raises-exception"]
with grading.checks():
    grading.check("8-2", "a-prefill", prefill_ms, seed=SEED)
    grading.check("8-2", "a-decode", decode_ms, seed=SEED)

# %% [markdown]
# **In words (not graded).** Which term of the round model dominates the first round, which
# dominates the second, and why is the second round barely longer than the fixed part?

# %% [markdown] nbgrader={"grade": true, "grade_id": "a_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# YOUR ANSWER HERE

# %% [markdown]
# ## (b) The longest output interval
#
# Set `longest_ms` (the duration of the longest round that carries a decode step), and
# `source` to one of the options printed below.

# %% nbgrader={"grade": false, "grade_id": "b_options", "locked": true, "schema_version": 3, "solution": false, "task": false}
from companion.exercises.ex8_2 import SOURCES_8_2

print(SOURCES_8_2)

# %% nbgrader={"grade": false, "grade_id": "b_answer", "locked": false, "schema_version": 3, "solution": true, "task": false} tags=["raises-exception"]
longest_ms = None
source = None
# YOUR CODE HERE

# %% nbgrader={"grade": true, "grade_id": "b_check", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false} tags=["raises-exception"]
with grading.checks():
    grading.check("8-2", "b-longest-round", longest_ms, seed=SEED)
    grading.check("8-2", "b-source", source, seed=SEED)

# %% [markdown]
# **In words (not graded).** Why does continuous batching make this round the longest output
# interval, whose interval is it, and does that request's own work cause it?

# %% [markdown] nbgrader={"grade": true, "grade_id": "b_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# YOUR ANSWER HERE

# %% [markdown]
# ## (c) Pairs of the first and last chunk, and the chunk the target allows
#
# Set `pairs_first` ($h = 0$) and `pairs_last` (the last chunk of r2's prompt); then
# `chunk_first` and `chunk_last`, the most new prompt tokens a round with one decode step on
# $n$ tokens of context may carry within the interval target, on $h = 0$ and on the $h$ of
# r2's last chunk. Use 8.2.4's two steps: the target bounds how long the round may run, and the
# round model turns that time into new tokens (an inequality in $c$; round down).

# %% nbgrader={"grade": false, "grade_id": "c_answer", "locked": false, "schema_version": 3, "solution": true, "task": false} tags=["raises-exception"]
pairs_first = pairs_last = chunk_first = chunk_last = None
# YOUR CODE HERE

# %% nbgrader={"grade": true, "grade_id": "c_check", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false} tags=["raises-exception"]
with grading.checks():
    grading.check("8-2", "c-pairs-first", pairs_first, seed=SEED)
    grading.check("8-2", "c-pairs-last", pairs_last, seed=SEED)
    grading.check("8-2", "c-budget-first", chunk_first, seed=SEED)
    grading.check("8-2", "c-budget-last", chunk_last, seed=SEED)

# %% [markdown]
# **In words (not graded).** Why does one chunk size give a longer round late in a long prompt
# than at its start, and what does that mean for the token budget a scheduler may set under an
# interval target?

# %% [markdown] nbgrader={"grade": true, "grade_id": "c_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# YOUR ANSWER HERE

# %% [markdown]
# ## (d) Choosing the token budget from the replay
#
# The replay below is generated by the companion's scheduler simulator (the chapter does not
# print its records): six prompts arriving one every gap, chunk = budget. A prompt's prefill
# load is the one 08_2 defines in "The budget trade on staggered arrivals": the time its
# prefill takes alone, in rounds of the budget (8.2.2's round model), over the gap between
# arrivals. The table prints the **mean prefill load**, its mean over the first five prompts,
# the ones a later arrival can queue behind. Above 1, prompts arrive faster than prefill
# clears them.
#
# Set `budget_for_interval` (the largest budget whose longest interval stays under the target),
# `budget_for_admission` (the budget under which later arrivals queue least), `keeps_up` (the
# smallest budget whose mean prefill load is below 1, or `"none"`), and `cost_for_interval`,
# `cost_for_admission` to one of the cost options printed below: the round-model cost behind
# the longest interval's trend across the budgets, and the one behind the mean prefill load's
# trend.

# %% nbgrader={"grade": false, "grade_id": "replay", "locked": true, "schema_version": 3, "solution": false, "task": false}
from companion import display
from companion.exercises.ex8_2 import COSTS_8_2, replay_prefill_load

replay = given["replay"]
print(f"prompts {replay.prompt_tokens} tokens, one every {replay.interarrival_s / units.ms:g} ms, "
      f"{replay.output_tokens} outputs each, chunk = budget")
print(f"{'budget':>7} {'mean load':>13} {'longest interval':>17} "
      f"{'mean queue of later arrivals':>29}")
for row in replay.rows:
    print(f"{row.token_budget:>7} {replay_prefill_load(replay, row.token_budget):>13.3f} "
          f"{row.max_itl_s / units.ms:>14.1f} ms {row.queue_later_mean_s / units.ms:>26.1f} ms")
print("\ncost options:", COSTS_8_2)

# %% nbgrader={"grade": false, "grade_id": "replay_note", "locked": true, "schema_version": 3, "solution": false, "task": false}
# about the given data; at seed 0, the replay against the pairs 8.2.4 prints (computed; the
# ledger holds the same checks)
from companion import ledger
from companion.sim import scheduler as sched

note = f"""Your given data come from `grading.params("8-2", SEED)`. Seed 0 keeps the chapter's
inputs for (a)-(c); its replay is not the chapter's data (the chapter does not print its
records) but one the companion built to reproduce the 8192 row 8.2.4 prints (below). On a
course hub you get a seed of your own, from your user name.
If a seed would give an unfair variant (a tie the table cannot show, a budget on the edge of
the target, a chunk size on a rounding edge), `grading.params` moves to the next seed and
prints why."""
if given["seed"] == 0:
    printed = {e.id: e for e in ledger.entries() if e.section == "8.2.4"}
    row = {r.token_budget: r for r in replay.rows}
    fit = sched.RoundTimeModel.chapter8()
    gap = replay.interarrival_s
    q8192 = printed["8.2.4/replay-8192-queue-built"]
    i8192 = printed["8.2.4/replay-8192-longest-interval-built"]
    i512 = printed["8.2.4/replay-512-longest-interval-floor"]
    q512 = printed["8.2.4/replay-512-queue-built"]
    # the replay at 8192: when its rounds end, against the arrivals
    run = sched.simulate([sched.Request(f"q{i}", i * gap, n, replay.output_tokens)
                          for i, n in enumerate(replay.prompt_tokens)], "chunked",
                         max_running=replay.max_running, round_time=fit, chunk_tokens=8192,
                         token_budget=8192)
    ends = [r.end_s for r in run.rounds[:5]]
    early = [(e - (i + 1) * gap) / units.us for i, e in enumerate(ends)]
    # the shortest round that spends a whole 512-token budget with one decode step in it: 511
    # prompt tokens on no cached context plus the decode row (the decode's own pairs left out)
    floor_pairs = calc.attention_pairs(511, 0)
    floor_512 = fit.fixed_s + fit.per_token_s * 512 + fit.per_pair_s * floor_pairs
    note += f"""

**Seed 0 and 8.2.4's printed pairs.** *8192 tokens per round:* 8.2.4 prints later arrivals
queueing under {q8192.printed} ms and a longest interval of about {i8192.printed} ms; seed 0's
replay gives {row[8192].queue_later_mean_s / units.ms:.3f} ms and
{row[8192].max_itl_s / units.ms:.1f} ms. Its first five prompts are built so that each prefill
round, with the decode steps beside it, lasts just over the {gap / units.ms:g} ms gap: the
rounds end at {", ".join(f"{e / units.ms:.3f}" for e in ends)} ms, so each later arrival lands
{early[0]:.1f} to {early[-1]:.1f} µs *before* a round ends, waits for it, and starts its prefill
in the next round; the sixth prompt's prefill round sets the longest interval. That is a knife
edge: their mean prefill load is just under 1 from 2048 tokens up, and a few more tokens per
prompt would make every budget overloaded; so at seed 0 (only there) the checker also accepts
`"none"` for `keeps_up`.

*512 tokens per round:* 8.2.4 prints about {q512.printed} ms and {i512.printed} ms, which is
inconsistent with the fitted round model. A round that spends its whole 512-token budget on 511
prompt tokens and one decode step lasts at least
{fit.fixed_s / units.ms:g} ms + 512 × {fit.per_token_s / units.us:g} µs +
{floor_pairs:,} × {fit.per_pair_s / units.ns:g} ns = {floor_512 / units.ms:.1f} ms (the 511
tokens' causal pairs on no cached context; the decode step's own pairs left out, so this is a
lower bound), more than {i512.printed} ms; this replay's 512 row gives
{row[512].max_itl_s / units.ms:.1f} ms. Its queueing at 512 is
{row[512].queue_later_mean_s / units.ms:.1f} ms, not {q512.printed} ms: queueing under
{q8192.printed} ms at 8192 pins each of the first five prompts to the {gap / units.ms:g} ms
grid, and the 512 queueing then moves in steps that miss the printed value (ledger
`8.2.4/replay-512-queue-built`). The chapter's 512 pair was measured on its engine, not produced
by this round model; (d) is graded on the replay above."""
display.answer(note, "About the given data (seeds, and seed 0 against 8.2.4)")

# %% nbgrader={"grade": false, "grade_id": "d_answer", "locked": false, "schema_version": 3, "solution": true, "task": false} tags=["raises-exception"]
budget_for_interval = budget_for_admission = keeps_up = None
cost_for_interval = cost_for_admission = None
# YOUR CODE HERE

# %% nbgrader={"grade": true, "grade_id": "d_check", "locked": true, "points": 5, "schema_version": 3, "solution": false, "task": false} tags=["raises-exception"]
with grading.checks():
    grading.check("8-2", "d-budget-itl", budget_for_interval, seed=SEED)
    grading.check("8-2", "d-budget-queue", budget_for_admission, seed=SEED)
    grading.check("8-2", "d-keeps-up", keeps_up, seed=SEED)
    grading.check("8-2", "d-cost-itl", cost_for_interval, seed=SEED)
    grading.check("8-2", "d-cost-queue", cost_for_admission, seed=SEED)

# %% [markdown]
# **In words (not graded).** Can any budget in the table both keep the longest interval under
# the target and keep up with the arrivals? Explain why with the two costs you named, say what
# the queueing column measures when the mean prefill load is above 1, and say what you would change
# instead of the budget.

# %% [markdown] nbgrader={"grade": true, "grade_id": "d_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# YOUR ANSWER HERE
