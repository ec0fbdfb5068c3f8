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

# %% nbgrader={"grade": false, "grade_id": "a_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
prefill_ms = None
decode_ms = None
### BEGIN SOLUTION
from companion.display import tex
import math

from companion import display
from companion.sim import scheduler

ms = units.ms


def pairs(c, h):
    """Causal query-key pairs of c new tokens on h cached ones (8.2.3)."""
    return c * h + c * (c + 1) // 2


def round_terms(new_tokens, n_pairs):
    """The three terms of the round model, in ms."""
    return t0 / ms, t_tok * new_tokens / ms, t_pair * n_pairs / ms


n0 = given["requests"][0][2]             # r0 and r1 have the same prompt length
# first round: both prompts, h = 0
pre_pairs = 2 * pairs(n0, 0)
pre_terms = round_terms(2 * n0, pre_pairs)
prefill_ms = sum(pre_terms)
# next round: one new token each, on the n0 tokens of its prompt (h = n0, so n0 + 1 pairs)
dec_pairs = 2 * pairs(1, n0)
dec_terms = round_terms(2, dec_pairs)
decode_ms = sum(dec_terms)
display.md(rf"""
With $t_\text{{fixed}} = {t0 / ms:g}$ ms, $t_\text{{token}} = {t_tok / units.us:g}$ µs and
$t_\text{{pair}} = {t_pair / units.ns:g}$ ns:

**First round** (r0 and r1 prefill $n = {tex(n0)}$ tokens each, nothing cached):
$\text{{pairs}}(n, 0) = \dfrac{{n(n+1)}}{{2}} = {tex(pairs(n0, 0))}$, twice: ${tex(pre_pairs)}$ pairs, and
${tex(2 * n0)}$ new tokens.

$$T_r = {t0 / ms:g}\,\text{{ms}} + {t_tok / units.us:g}\,\text{{µs}} \times {tex(2 * n0)}
+ {t_pair / units.ns:g}\,\text{{ns}} \times {tex(pre_pairs)}
= {pre_terms[0]:.2f} + {pre_terms[1]:.2f} + {pre_terms[2]:.2f} = {prefill_ms:.2f}\ \text{{ms}}$$

**Next round** (one decode step each, on $h = {tex(n0)}$ cached tokens):
$\text{{pairs}}(1, h) = h + 1 = {tex(n0 + 1)}$, twice: ${tex(dec_pairs)}$ pairs, and 2 new tokens.

$$T_r = {t0 / ms:g}\,\text{{ms}} + {t_tok / units.us:g}\,\text{{µs}} \times 2
+ {t_pair / units.ns:g}\,\text{{ns}} \times {tex(dec_pairs)}
= {dec_terms[0]:.2f} + {dec_terms[1]:.3f} + {dec_terms[2]:.3f} = {decode_ms:.3f}\ \text{{ms}}$$
""")
# check: the companion's pair count, and its scheduler's first two rounds
requests = [scheduler.Request(*r) for r in given["requests"]]
sim = scheduler.simulate(requests, "continuous", max_running=given["max_running"],
                         round_time=scheduler.RoundTimeModel(t0, t_tok, t_pair))
assert pairs(n0, 0) == calc.attention_pairs(n0, 0)
assert math.isclose(prefill_ms, sim.rounds[0].duration_s / ms, rel_tol=1e-9)
assert math.isclose(decode_ms, sim.rounds[1].duration_s / ms, rel_tol=1e-9)
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "a_check", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
with grading.checks():
    grading.check("8-2", "a-prefill", prefill_ms, seed=SEED)
    grading.check("8-2", "a-decode", decode_ms, seed=SEED)

# %% [markdown]
# **In words (not graded).** Which term of the round model dominates the first round, which
# dominates the second, and why is the second round barely longer than the fixed part?

# %% [markdown] nbgrader={"grade": true, "grade_id": "a_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# ### BEGIN SOLUTION
# The prefill round computes both prompts, so its token term and its two causal triangles
# dominate, and it is also both requests' TTFT. The decode round computes one token per request
# on the cached prompt: two rows and two short rows of pairs, so it lasts barely longer than
# the fixed part (the weight read and the kernel launches). The derivation above shows the three
# terms of each round.
# ### END SOLUTION

# %% [markdown]
# ## (b) The longest output interval
#
# Set `longest_ms` (the duration of the longest round that carries a decode step), and
# `source` to one of the options printed below.

# %% nbgrader={"grade": false, "grade_id": "b_options", "locked": true, "schema_version": 3, "solution": false, "task": false}
from companion.exercises.ex8_2 import SOURCES_8_2

print(SOURCES_8_2)

# %% nbgrader={"grade": false, "grade_id": "b_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
longest_ms = None
source = None
### BEGIN SOLUTION
n2 = given["requests"][2][2]
# r1 emits its 2nd and last token in the second round and leaves; r2 (arrived during the first
# round) takes its slot in the third round, next to r0's decode step. r0 has its prompt and its
# first output token cached by then: h = n0 + 1.
h_r0 = n0 + 1
adm_pairs = pairs(1, h_r0) + pairs(n2, 0)
adm_terms = round_terms(1 + n2, adm_pairs)
longest_ms = sum(adm_terms)
source = "r2-prefill"
with_decode = [r for r in sim.rounds if any(s.kind == "decode" for s in r.segments)]
runner_up = max((r for r in with_decode if r.duration_s < longest_ms * ms * (1 - 1e-9)),
                key=lambda r: r.duration_s)
runner_up_prompts = [f"{seg.request_id}'s prompt" for seg in runner_up.segments
                     if seg.kind == "prefill"]
runner_up_carries = (" and ".join(runner_up_prompts) + " beside decode steps"
                     if runner_up_prompts else "decode steps only")
display.md(rf"""
r1 leaves after the second round (its two tokens), so the third round runs r0's decode step on
$h = {tex(n0)} + 1 = {tex(h_r0)}$ cached tokens together with r2's whole prompt of
${tex(n2)}$ tokens:
$\text{{pairs}}(1, {tex(h_r0)}) + \text{{pairs}}({tex(n2)}, 0) = {tex(h_r0 + 1)} + {tex(pairs(n2, 0))}
= {tex(adm_pairs)}$ pairs and $1 + {tex(n2)} = {tex(1 + n2)}$ new tokens.

$$T_r = {t0 / ms:g}\,\text{{ms}} + {t_tok / units.us:g}\,\text{{µs}} \times {tex(1 + n2)}
+ {t_pair / units.ns:g}\,\text{{ns}} \times {tex(adm_pairs)}
= {adm_terms[0]:.2f} + {adm_terms[1]:.2f} + {adm_terms[2]:.2f} = {longest_ms:.1f}\ \text{{ms}}$$

r0 waits this whole round for its next token: {longest_ms:.1f} ms against {decode_ms:.2f} ms for
a plain decode round; the next longest round with a decode step in it takes
{runner_up.duration_s / ms:.1f} ms ({runner_up_carries}). So r2's prefill makes the longest output interval.
""")
worst = max(with_decode, key=lambda r: r.duration_s)
assert math.isclose(longest_ms, worst.duration_s / ms, rel_tol=1e-9)   # the simulator agrees
assert any(s.request_id == "r2" and s.kind == "prefill" for s in worst.segments)
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "b_check", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
with grading.checks():
    grading.check("8-2", "b-longest-round", longest_ms, seed=SEED)
    grading.check("8-2", "b-source", source, seed=SEED)

# %% [markdown]
# **In words (not graded).** Why does continuous batching make this round the longest output
# interval, whose interval is it, and does that request's own work cause it?

# %% [markdown] nbgrader={"grade": true, "grade_id": "b_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# ### BEGIN SOLUTION
# Continuous batching fills r1's slot at the next boundary and runs r2's whole long prompt in
# the same round as r0's decode step. The token term and the prompt's causal triangle make that
# round many times longer than a decode round (computed above). r0 emitted a token at the start
# of that round and emits the next one at its end, so one of its output intervals stretches to
# the whole admitting round. The stall comes from sharing the round with a long prefill, not
# from r0's own work, and the cause comes out the same at every seed: the long prompt is
# admitted whole.
# ### END SOLUTION

# %% [markdown]
# ## (c) Pairs of the first and last chunk, and the chunk the target allows
#
# Set `pairs_first` ($h = 0$) and `pairs_last` (the last chunk of r2's prompt); then
# `chunk_first` and `chunk_last`, the most new prompt tokens a round with one decode step on
# $n$ tokens of context may carry within the interval target, on $h = 0$ and on the $h$ of
# r2's last chunk. Use 8.2.4's two steps: the target bounds how long the round may run, and the
# round model turns that time into new tokens (an inequality in $c$; round down).

# %% nbgrader={"grade": false, "grade_id": "c_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
pairs_first = pairs_last = chunk_first = chunk_last = None
### BEGIN SOLUTION
c = given["chunk_tokens"]
h_last = n2 - c                          # the last chunk sees the rest of r2's prompt cached
pairs_first = c * (c + 1) // 2
pairs_last = c * h_last + c * (c + 1) // 2
# the interval target as a chunk size: one decode step on n0 tokens plus a chunk on h tokens
target = given["itl_target_s"]
target_ms = target / ms


def largest_chunk(h):
    """Step 2 of 8.2.4: the largest whole c with
    t0 + t_tok (1 + c) + t_pair ((n0 + 1) + c h + c (c + 1) / 2) <= target."""
    slack = target - (t0 + t_tok + t_pair * (n0 + 1))     # step 1: what the chunk may take
    a, b = t_pair / 2, t_tok + t_pair * (h + 0.5)         # a c^2 + b c <= slack
    return math.floor((-b + math.sqrt(b * b + 4 * a * slack)) / (2 * a))


chunk_first, chunk_last = largest_chunk(0), largest_chunk(h_last)
model = dict(fixed_s=t0, per_token_s=t_tok, per_pair_s=t_pair)
round_first = calc.mixed_round_time_s(1, n0, c, 0, **model) / ms
round_last = calc.mixed_round_time_s(1, n0, c, h_last, **model) / ms


def verdict(t):
    return "within" if t <= target_ms else "over"


display.md(rf"""
$c = {tex(c)}$. First chunk, $h = 0$: $\text{{pairs}}(c, 0) = \dfrac{{c(c+1)}}{{2}}
= \dfrac{{{tex(c)} \times {tex(c + 1)}}}{{2}} = {tex(pairs_first)}$.

Last chunk of r2's prompt, $h = {tex(n2)} - {tex(c)} = {tex(h_last)}$:
$\text{{pairs}}(c, h) = c\,h + \dfrac{{c(c+1)}}{{2}} = {tex(c)} \times {tex(h_last)} + {tex(pairs_first)}
= {tex(pairs_last)}$, {pairs_last / pairs_first:.1f} times the first.

**The same chunk, two round times.** Next to one decode step on $n = {tex(n0)}$ tokens, a
{c:,}-token chunk makes a round of {round_first:.1f} ms on $h = 0$ ({verdict(round_first)} the
{target_ms:g} ms target) and {round_last:.1f} ms on $h = {tex(h_last)}$
({verdict(round_last)} it).

**The target as a chunk size.** The round must satisfy

$$t_\text{{fixed}} + t_\text{{token}}(1 + c) + t_\text{{pair}}\left((n + 1) + c\,h
+ \tfrac{{c(c+1)}}{{2}}\right) \le {target_ms:g}\ \text{{ms}},$$

a quadratic in $c$; its largest whole solution is **{chunk_first:,}** tokens on $h = 0$ and
**{chunk_last:,}** on $h = {tex(h_last)}$. A scheduler that keeps the target for every chunk of
this prompt can use at most {chunk_last:,} new tokens per round, or shrink its chunks as the
prompt's cached history grows.
""")
assert (pairs_first, pairs_last) == (calc.attention_pairs(c, 0), calc.attention_pairs(c, h_last))
for h, best in ((0, chunk_first), (h_last, chunk_last)):   # the companion's 8.2.4 solver agrees
    assert best == calc.token_budget_for_itl(target, 1, n0, h, **model)
for h, best in ((0, chunk_first), (h_last, chunk_last)):   # the largest c that fits, and no more
    assert calc.mixed_round_time_s(1, n0, best, h, **model) <= target
    assert calc.mixed_round_time_s(1, n0, best + 1, h, **model) > target
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "c_check", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false}
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
# ### BEGIN SOLUTION
# The first chunk has only its own causal triangle, $c(c+1)/2$ pairs. The last chunk of the
# long prompt also attends to everything cached before it, the rectangle $c\,h$, which is many
# times the triangle (the ratio is computed above). A fixed chunk length therefore does not
# give a fixed round time: the rectangle grows with the context, so late chunks of a long
# prompt are the slow ones (Figure 8-8). Turned around, the interval target allows fewer new
# tokens per round the longer the cached history: a budget that meets the target for the first
# chunk can break it for the last, so the budget has to be sized for the longest history the
# scheduler will chunk (or shrink as the history grows).
# ### END SOLUTION

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

# %% nbgrader={"grade": false, "grade_id": "d_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
budget_for_interval = budget_for_admission = keeps_up = None
cost_for_interval = cost_for_admission = None
### BEGIN SOLUTION
loads = {row.token_budget: replay_prefill_load(replay, row.token_budget) for row in replay.rows}
meets = [row.token_budget for row in replay.rows if row.max_itl_s < target]
budget_for_interval = max(meets)
least_queue = min(row.queue_later_mean_s for row in replay.rows)
quickest = [row.token_budget for row in replay.rows
            if row.queue_later_mean_s <= least_queue * (1 + 1e-9)]
budget_for_admission = quickest[0]
# the table prints the load to three decimals; below 1 there, prefill keeps up
keeping = [b for b in loads if round(loads[b], 3) < 1]
keeps_up = min(keeping) if keeping else "none"
cost_for_interval = "per-token cost"
cost_for_admission = "fixed per-round cost"
by_budget = {row.token_budget: row for row in replay.rows}
rows = "\n".join(
    f"| {b:,} | {loads[b]:.3f} | {by_budget[b].max_itl_s / ms:.1f} "
    f"| {'yes' if b in meets else 'no'} | {'yes' if b in keeping else 'no'} "
    f"| {by_budget[b].queue_later_mean_s / ms:.1f} |" for b in loads)
tie_note = (" (a tie: each later arrival's first chunk runs in the same round at each of them, "
            "so the grader accepts any of them)" if len(quickest) > 1 else "")
# what each cost does, on this replay: the first prompt's prefill at the interval budget and at
# the largest budget, and the last chunk of the longest prompt at the interval budget
first, biggest, largest = replay.prompt_tokens[0], max(replay.prompt_tokens), max(loads)
n_rounds = {b: len(calc.prefill_chunks(first, b)) for b in (budget_for_interval, largest)}
h_big = biggest - min(budget_for_interval, biggest)
c_big = min(budget_for_interval, biggest)
if keeping:
    smallest = min(keeping)
    edge = (" That load is within a hair of 1: the seed-0 prompts are built to fill the gap "
            "exactly, and a few more tokens per prompt would tip it over (so `\"none\"` is "
            "accepted too)."
            if loads[smallest] > 0.99 else "")
    keep_text = (f"The smallest budget that keeps up is **{smallest:,}** (load "
                 f"{loads[smallest]:.3f}), and its longest interval is "
                 f"{by_budget[smallest].max_itl_s / ms:.1f} ms, over the target.{edge}")
else:
    keep_text = ("**No budget keeps up**: the mean prefill load is above 1 in every row, so "
                 "every queueing time in the table is a backlog growing over six arrivals (over a "
                 "longer run it would grow without bound), not a steady wait.")
display.md(f"""
| token budget | mean prefill load | longest interval (ms) | under {target_ms:g} ms? | keeps up (load < 1)? | mean queue of later arrivals (ms) |
|---:|---:|---:|:---:|:---:|---:|
{rows}

**Interval goal.** The budgets that meet the target are {", ".join(f"{b:,}" for b in meets)};
the largest, **{budget_for_interval:,}**, runs the fewest rounds. Its mean prefill load is
{loads[budget_for_interval]:.2f}: it cannot keep up with these arrivals.

**Admission.** Later arrivals queue least at
**{" / ".join(f"{b:,}" for b in quickest)}** tokens{tie_note}.

**Keeping up.** {keep_text}

**The costs.** A prompt's tokens and its causal pairs cost the same however it is chunked
(the pairs of its chunks always sum to $n(n+1)/2$); what a smaller budget adds is rounds, each
paying the fixed {t0 / ms:g} ms again: the first prompt ({first:,} tokens) takes
{n_rounds[budget_for_interval]} rounds at {budget_for_interval:,} tokens against
{n_rounds[largest]} at {largest:,}. That **fixed per-round cost** sets the mean prefill load. A
larger budget instead puts more new tokens into every round that carries a chunk: a
{c_big:,}-token chunk costs {c_big * t_tok / ms:.1f} ms in its **per-token** term and
{calc.attention_pairs(c_big, h_big) * t_pair / ms:.1f} ms in its pair term even on
{h_big:,} cached tokens (the end of the longest prompt, {biggest:,} tokens), so the per-token
cost is what lengthens the longest interval.

No budget in this table both meets the {target_ms:g} ms target and keeps up: this arrival rate
needs more capacity (another instance, or fewer arrivals per instance), not a different budget.
""")
assert not set(meets) & set(keeping)
assert c_big * t_tok > calc.attention_pairs(c_big, h_big) * t_pair
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "d_check", "locked": true, "points": 5, "schema_version": 3, "solution": false, "task": false}
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
# ### BEGIN SOLUTION
# Every budget that keeps the longest interval under the target has a mean prefill load above 1
# (the table): a prompt cut into small chunks pays the fixed per-round cost once per chunk, and
# since its tokens and pairs cost the same however it is cut, those extra rounds are what make
# its prefill outlast the gap between arrivals. Prompts then arrive faster than prefill clears
# them, and the queueing column measures how fast a backlog grows over six arrivals, not a
# price the budget buys. A budget large enough to keep up, where one exists at all, puts so many
# tokens into each round that their per-token cost breaks the interval target. So the budget
# that meets the target cannot keep up, and the one that keeps up misses the target (8.2.4;
# 08_2's "The budget trade on staggered arrivals"): this load needs more capacity, another
# instance or fewer arrivals per instance. Once prefill can keep up, 08_2's rule applies: the
# smallest budget whose load stays below 1, if its longest interval meets the target. The two
# costs come out the same at every seed; the budgets do not.
# ### END SOLUTION
