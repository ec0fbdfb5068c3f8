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
# # Exercise 8-9 · Scheme E: less GPU time per qualifying result within memory and deadline
#
# *Comprehensive design, sections 8.6.2-8.6.3.* Sixteen long requests (the first 6144 of
# their 8192 input tokens shared and already cached) must each produce 256 tokens within the
# deadline, with 12 GiB for KV and buffers on the RTX PRO 6000. Schemes A-D are those of 8.6.3
# ("The design problem" in the 8.6 notebook; Figure 8-35): their settings and their stage
# figures (the batch's prefill, one decode round) are printed below. Scheme E is B plus drafts
# looked up from the context (8.5.2-8.5.3): no extra prefill, a round yields the number of tokens per
# request given below and takes B's decode round plus the lookup time (verifying E's few draft
# positions stays inside the round, as D's eight do in 8.6.3). In the chapter the lookup index
# lives in host memory and takes no GPU memory; a variant may keep it on the GPU instead, where
# it takes the few MiB given below (a few bytes per indexed token).
#
# **The rules** (8.6.3), for every scheme:
#
# - *Memory*: the KV the batch holds at the end of generation, each request's $n + G - 1$
#   tokens in whole 16-token blocks at $k$ bytes per token (times the format's size relative
#   to BF16; a shared prefix of $n_s$ tokens stored once), plus its draft's memory.
# - *Time*: the prefill plus $\lceil (G - 1) / \text{tokens per round} \rceil$ decode rounds.
#   The tokens per round are a mean: a real batch ends with its slowest request, which this
#   count, like the chapter's for D, leaves out.
# - *Qualifying*: the $b$ results qualify only if the scheme fits the memory and finishes by
#   the deadline.
# - *Cost*: the card's busy time over the number of qualifying results (8.6.3 writes
#   <i>T</i><sub>GPU</sub>/<i>N</i><sub>g</sub>); this batch occupies the card from its arrival
#   to its last answer, so that is its total time over $b$, in GPU-seconds. Where no result
#   qualifies there is no such cost.
#
# **The questions.**
#
# 1. **(a)** E's memory (MiB), its total time (s) and its GPU-seconds per qualifying result;
#    which of A-E is best (least GPU time per qualifying result among the schemes that fit and
#    meet the deadline; `"none"` if none does)?
# 2. **(b)** The best scheme when only the smaller memory below is available.
# 3. **(c)** E's total time when the output is shortened as below (s), and the best scheme then.
# 4. **(d)** The open-ended experiment, run for you: B and E served the same seeded arrival
#    trace and problem set; their records (arrival, first token, completion, correctness,
#    peak KV and GPU busy time) are printed below. Under greedy decoding E's verification
#    keeps exactly the tokens B would emit (8.5.1), so a problem is right or wrong under both
#    alike; the simulator assumes this, and the two correctness columns are identical: only
#    timing separates the schemes. (Under sampling, verification preserves the target's
#    output distribution, not the sample: single answers could differ, their accuracy would
#    not.) With $\kappa_i = 1$ for a
#    correct answer and $\tau_i = 1$ for one that finishes by its arrival plus the deadline
#    (8.6.2 writes <i>Q<sub>i</sub></i> and <i>D<sub>i</sub></i>), find for E: its GPU time per
#    qualifying result (its GPU busy time over its correct and on-time results), how many of
#    its requests finish in time, and its effective throughput
#    $R_\text{good} = \sum_i \kappa_i \tau_i / T_\text{obs}$ (8.6.2, req/s), where each run's
#    window $T_\text{obs}$ runs from 0 to its own last completion, as in the 8.6 notebook's
#    simulator. Which scheme serves more correct answers in time?
#
# <small>Notation: the 8.6 notebook's $t_\text{GPU}$ is another quantity, the GPU time of one
# request, qualifying or not.</small>
#
# Your given data come from `grading.params("8-9", SEED)`. Seed 0 is the chapter's own data;
# on a course hub you get a seed of your own, from your user name.

# %% nbgrader={"grade": false, "grade_id": "given", "locked": true, "schema_version": 3, "solution": false, "task": false}
from companion import calc, display, grading, specs, units, widgets

SEED = grading.student_seed()
given = grading.params("8-9", SEED)
model = specs.QWEN3_8B
print(f"{given['batch']} requests: {given['prompt_tokens']} input tokens "
      f"({given['shared_prefix_tokens']} shared), {given['output_tokens']} outputs, "
      f"deadline {given['deadline_s']:g} s, {given['kv_budget_bytes'] / units.GiB:g} GiB")
print(f"B: prefill {given['shared_prefill_s']:g} s, decode round "
      f"{given['shared_round_s'] / units.ms:g} ms; E: {given['e_tokens_per_round']:g} tokens per "
      f"request per round, lookup {given['lookup_s'] / units.ms:g} ms per round")
print(f"(b) memory {given['small_kv_budget_bytes'] / units.GiB:g} GiB; (c) output "
      f"{given['short_output_tokens']} tokens")
index = given["index_bytes"]
print("E's lookup index: " + (f"on the GPU, {given['index_bytes_per_token']} B per indexed token "
                              f"over {given['batch']} x ({given['prompt_tokens']} + "
                              f"{given['output_tokens']}) = {given['indexed_tokens']:,} tokens"
                              if index else "in host memory (no GPU memory)"))
print(f"{model.name}: k = {calc.kv_bytes_per_token(model) / units.KiB:g} KiB of BF16 KV per "
      f"token, 16-token blocks")
display.md(widgets.scheme_definition_markdown([calc.SCHEMES[k] for k in "ABCD"]))
stage = calc.compare_schemes([calc.SCHEMES[k] for k in "ABCD"])   # 8.6.3's figures
print("8.6.3's stage figures:")
print(f"{'scheme':>6} {'prefill (s)':>11} {'decode round (ms)':>17} {'tokens per round':>16}")
for name in "ABCD":
    print(f"{name:>6} {stage[name].prefill_s:>11.4f} {stage[name].round_s / units.ms:>17.4f} "
          f"{calc.SCHEMES[name].tokens_per_round:>16g}")

load = given["load"]
print(f"\nLoad experiment, GENERATED BY THE COMPANION (its load simulator; the chapter leaves the "
      f"experiment open):\n{len(load.runs[0].records)} requests arriving as a Poisson process at "
      f"{load.arrival_rate_per_s:g}/s, continuous batching of up to 16, "
      f"{load.kv_budget_bytes / units.GiB:g} GiB KV pool, deadline {load.deadline_s:g} s from "
      "arrival. E's rounds of several tokens are simulated as equal sub-rounds of one token.")
for run in load.runs:
    peak_blocks = run.peak_kv_bytes / (16 * calc.kv_bytes_per_token(model))
    print(f"\nscheme {run.scheme}: decode round {run.decode_round_s / units.ms:g} ms for "
          f"{run.tokens_per_round:g} token(s) per request; peak KV {peak_blocks:.0f} blocks "
          f"of 16 tokens; GPU busy {run.busy_s:.2f} s")
    print(f"{'request':>7} {'problem':>7} {'arrival s':>9} {'first token s':>13} "
          f"{'finish s':>9} {'correct':>7}")
    for r in run.records:
        print(f"{r.request:>7} {r.problem:>7} {r.arrival_s:>9.3f} {r.first_token_s:>13.3f} "
              f"{r.finish_s:>9.3f} {int(r.correct):>7}")

# %% [markdown]
# ## (a) Scheme E at the chapter's settings
#
# Set `memory_mib`, `total_s`, `gpu_s` and `best` (one of `"A"` ... `"E"`, or `"none"`).

# %% nbgrader={"grade": false, "grade_id": "a_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
memory_mib = total_s = gpu_s = best = None
### BEGIN SOLUTION
from companion.display import tex
import math


MiB, GiB, ms = units.MiB, units.GiB, units.ms
k, p, b = calc.kv_bytes_per_token(model), 16, given["batch"]
n, n_s = given["prompt_tokens"], given["shared_prefix_tokens"]
deadline = given["deadline_s"]

# E: B's settings with its own tokens per round, lookup and index
E = dict(shared=True, fmt="bf16", tokens=given["e_tokens_per_round"], draft=given["index_bytes"],
         prefill_s=given["shared_prefill_s"], round_s=given["shared_round_s"] + given["lookup_s"])
plans = {name: dict(shared=sc.shared_prefix, fmt=sc.kv_format, tokens=sc.tokens_per_round,
                    draft=sc.draft_bytes, prefill_s=stage[name].prefill_s,
                    round_s=stage[name].round_s)
         for name, sc in calc.SCHEMES.items() if name != "E"}
plans["E"] = E


def slots(tokens):
    return p * math.ceil(tokens / p)


def figures(plan, budget, G):
    """Memory, rounds, total, feasibility and GPU-s per qualifying result of one scheme."""
    held = n + G - 1
    size = calc.bits_per_value(plan["fmt"]) / 16          # of BF16
    shared = n_s if plan["shared"] else 0
    kv = size * k * ((slots(shared) if shared else 0) + b * slots(held - shared))
    memory = kv + plan["draft"]
    rounds = math.ceil((G - 1) / plan["tokens"] - 1e-9)
    total = plan["prefill_s"] + rounds * plan["round_s"]
    fits, on_time = memory <= budget, total <= deadline
    return dict(memory=memory, rounds=rounds, total=total, fits=fits, on_time=on_time,
                gpu=total / b if fits and on_time else math.inf)


def table(budget, G):
    """The five schemes as a Markdown table, and the best feasible one."""
    res = {name: figures(plan, budget, G) for name, plan in plans.items()}
    feasible = {name: r for name, r in res.items() if r["fits"] and r["on_time"]}
    chosen = min(feasible, key=lambda name: feasible[name]["gpu"]) if feasible else "none"
    rows = "\n".join(
        f"| {name} | {r['memory'] / GiB:.2f} | {'yes' if r['fits'] else 'no'} "
        f"| {plans[name]['prefill_s']:.3f} + {r['rounds']} × {plans[name]['round_s'] / ms:.2f} ms "
        f"= {r['total']:.3f} | {'yes' if r['on_time'] else 'no'} "
        f"| {r['gpu']:.4f} |".replace("| inf |", "| none qualify |") for name, r in res.items())
    head = (f"| scheme | memory (GiB) | fits {budget / GiB:g} GiB? | prefill + rounds × round (s) "
            f"| within {deadline:g} s? | GPU-s per qualifying result |\n|---|---:|:---:|---|:---:|---:|")
    return res, chosen, head + "\n" + rows


setting = (given["kv_budget_bytes"], given["output_tokens"])
G = given["output_tokens"]
res, best, shown = table(*setting)
e = res["E"]
memory_mib, total_s, gpu_s = e["memory"] / MiB, e["total"], e["gpu"]
held = n + G - 1
index_text = (rf" + {tex(given['index_bytes'] / MiB, ',g')}\ \text{{MiB (index)}}"
              if given["index_bytes"] else "")
display.md(rf"""
**E's memory.** The prefix: ${tex(slots(n_s))}$ slots $\times\ {tex(k)}$ B $= {tex(slots(n_s) * k / MiB, ',g')}$ MiB,
once. Each request's private part: $n + G - 1 - n_s = {tex(held - n_s)}$ tokens, ${tex(slots(held - n_s))}$
slots $= {tex(slots(held - n_s) * k / MiB, ',g')}$ MiB.
$M_E = {tex(slots(n_s) * k / MiB, ',g')} + {b} \times {tex(slots(held - n_s) * k / MiB, ',g')}{index_text}
= {tex(memory_mib, ',g')}$ MiB.

**E's time.** $\lceil (G - 1) / {E['tokens']:g} \rceil = \lceil {G - 1} / {E['tokens']:g} \rceil = {e['rounds']}$
rounds of ${given['shared_round_s'] / ms:g} + {given['lookup_s'] / ms:g} = {E['round_s'] / ms:g}$ ms after the
${E['prefill_s']:g}$ s prefill: $T = {E['prefill_s']:g} + {e['rounds']} \times {E['round_s']:g} = {total_s:.4f}$ s.
B needs {res['B']['rounds']} rounds for the same tokens, so E runs {e['rounds'] / res['B']['rounds']:.3f} of
B's rounds, each {given['lookup_s'] / ms:g} ms longer.

**Cost per qualifying result.** E fits ({memory_mib / 1024:.2f} GiB against {setting[0] / GiB:g} GiB)
{"and" if e["on_time"] else "but"} {"meets" if e["on_time"] else "misses"} the {deadline:g} s deadline, so
""" + (f"the card is busy for E's whole {total_s:.4f} s and all {b} results qualify: "
       f"{total_s:.4f} / {b} = {gpu_s:.4f} GPU-seconds per qualifying result."
       if math.isfinite(gpu_s) else "none of its results qualify.") + f"""

{shown}

The feasible scheme with the least GPU time per qualifying result: **{best}**. This choice comes
out the same at every seed: D's draft model saves more rounds than E's lookup, and at
{given['kv_budget_bytes'] / GiB:g} GiB both fit.
""")
# check every scheme against the companion's 8.6.3 model
scheme_e = calc.SCHEMES["E"].with_(tokens_per_round=given["e_tokens_per_round"],
                                   round_extra_s=given["lookup_s"],
                                   draft_bytes=given["index_bytes"])
schemes = [calc.SCHEMES[k] for k in "ABCD"] + [scheme_e]
kw = dict(kv_budget_bytes=given["kv_budget_bytes"], output_tokens=G, deadline_s=deadline)
for name, r in calc.compare_schemes(schemes, **kw).items():
    assert math.isclose(r.memory_bytes, res[name]["memory"])
    assert math.isclose(r.total_s, res[name]["total"], rel_tol=1e-12)
assert best == (calc.best_scheme(schemes, **kw) or "none")
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "a_check", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false}
with grading.checks():
    grading.check("8-9", "a-memory-E", memory_mib, seed=SEED)
    grading.check("8-9", "a-total-E", total_s, seed=SEED)
    grading.check("8-9", "a-gpu-E", gpu_s, seed=SEED)
    grading.check("8-9", "a-best", best, seed=SEED)

# %% [markdown]
# **Explain (not graded).** Why does E need no more memory than B (or only a little more), why
# does it meet the deadline where B does not, and what decides between E and D?

# %% [markdown] nbgrader={"grade": true, "grade_id": "a_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# ### BEGIN SOLUTION
# With the index in host memory, as in the chapter, E stores exactly what B stores: the
# prefix once and each request's private part; an index on the GPU adds only its few MiB. E
# emits several tokens per request per round, so it needs about 1/(tokens per round) as many
# rounds as B (rounded up; the worked solution compares the counts), each a little longer by the
# lookup, and it finishes within the deadline where B does not. D emits even more tokens per
# round and still fits, so it finishes sooner and costs less GPU time per qualifying result:
# it remains the choice, while B and C miss the deadline and A does not fit (the table above).
# ### END SOLUTION

# %% [markdown]
# ## (b) Less memory, and (c) shorter output
#
# Set `best_small`, `total_short_s` and `best_short`.

# %% nbgrader={"grade": false, "grade_id": "bc_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
best_small = total_short_s = best_short = None
### BEGIN SOLUTION
small_budget, short_G = given["small_kv_budget_bytes"], given["short_output_tokens"]
_, best_small, shown_small = table(small_budget, G)
res_short, best_short, shown_short = table(setting[0], short_G)
total_short_s = res_short["E"]["total"]
res_small = {name: figures(plan, small_budget, G) for name, plan in plans.items()}
margin = (small_budget - res_small["E"]["memory"]) / MiB
index_note = (f" Its index takes {given['index_bytes'] / MiB:g} MiB of GPU memory, far too "
              f"little to change the choice." if given["index_bytes"] else
              " Its index lives in host memory.")
extra_prefill = plans["D"]["prefill_s"] - E["prefill_s"]
decode_saved = (res_short["E"]["rounds"] * E["round_s"]
                - res_short["D"]["rounds"] * plans["D"]["round_s"])
display.md(rf"""
**(b) {small_budget / GiB:g} GiB.** Only the memory check changes:

{shown_small}

Best: **{best_small}**. E needs {res_small['E']['memory'] / MiB:,.2f} MiB, {abs(margin):,.2f} MiB
{"below" if margin >= 0 else "above"} the budget.{index_note}

**(c) {short_G} output tokens.** Fewer rounds, and a little less KV per request; E needs
$\lceil {short_G - 1} / {E['tokens']:g} \rceil = {res_short['E']['rounds']}$ rounds:
$T = {E['prefill_s']:g} + {res_short['E']['rounds']} \times {E['round_s']:g} = {total_short_s:.4f}$ s.

{shown_short}

Best: **{best_short}**. Against E, D's draft model adds {extra_prefill:.3f} s of prefill and
saves {decode_saved:.3f} s of decode ({res_short['E']['rounds']} rounds of E against
{res_short['D']['rounds']} of D), so {"D" if decode_saved > extra_prefill else "E"} finishes sooner.
""")
assert math.isclose(total_short_s,
                    calc.scheme_result(scheme_e, **dict(kw, output_tokens=short_G)).total_s)
assert best_small == (calc.best_scheme(schemes, **dict(kw, kv_budget_bytes=small_budget))
                      or "none")
assert best_short == (calc.best_scheme(schemes, **dict(kw, output_tokens=short_G)) or "none")
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "bc_check", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
with grading.checks():
    grading.check("8-9", "b-best-small", best_small, seed=SEED)
    grading.check("8-9", "c-total-E-short", total_short_s, seed=SEED)
    grading.check("8-9", "c-best-short", best_short, seed=SEED)

# %% [markdown]
# **Explain (not graded).** How does the amount of memory decide which scheme survives, and
# what does an index on the GPU change? With the shorter output, what happens to D's advantage
# over E, and why?

# %% [markdown] nbgrader={"grade": true, "grade_id": "bc_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# ### BEGIN SOLUTION
# Memory decides among the drafters. Below what B itself needs (the prefix once plus the
# private parts) nothing fits. Between B's needs and D's, D's draft model no longer fits and B
# is late, so only E, whose drafts cost no GPU memory or a few MiB, is feasible: a draft
# source that costs no GPU memory turns "no feasible scheme" into a feasible one (8.6.3's
# 6 GiB case). With room for D's draft model, D wins again. An index on the GPU takes a few
# MiB, far too little to change any of these choices (the margin above). With a short output
# the prefill dominates every total: D's draft model adds prefill time that eats much or all
# of what its fewer rounds save, while E adds no prefill. The longer the output, the more
# rounds D saves, so D's lead returns once the output is long enough (the comparison above
# says which way it goes at your seed).
# ### END SOLUTION

# %% [markdown]
# ## (d) The load experiment
#
# Set `gpu_e` (GPU-seconds per qualifying result of E in this run), `ontime_e` (a count),
# `good_e` (req/s, over E's own window, from 0 to E's last completion) and `better`
# (`"B"` or `"E"`).

# %% nbgrader={"grade": false, "grade_id": "d_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
gpu_e = ontime_e = good_e = better = None
### BEGIN SOLUTION
from companion.chapters import ch08
from companion.formulas import serving as sv

good, counts, lines, per_good, windows = {}, {}, [], {}, {}
for run in load.runs:
    window_s = max(r.finish_s for r in run.records)                  # this run's T_obs
    windows[run.scheme] = window_s
    on_time = [r.finish_s - r.arrival_s <= load.deadline_s for r in run.records]   # tau_i
    qualifying = sum(1 for r, t in zip(run.records, on_time) if r.correct and t)    # kappa_i tau_i
    good[run.scheme] = qualifying / window_s
    counts[run.scheme] = (len(on_time), sum(on_time), qualifying)
    per_good[run.scheme] = run.busy_s / qualifying if qualifying else math.inf
    cost = (f"{run.busy_s:.2f} / {qualifying} = {per_good[run.scheme]:.3f} GPU-s per qualifying "
            f"result" if qualifying else f"{run.busy_s:.2f} GPU-s for no qualifying result")
    lines.append(rf"- **{run.scheme}**: {len(on_time)} requests, {sum(on_time)} finish within "
                 rf"{load.deadline_s:g} s of arrival ({len(on_time) - sum(on_time)} late), "
                 rf"{qualifying} correct and on time: $R_\text{{good}} = {qualifying} / {window_s:.3f}"
                 rf" = {good[run.scheme]:.4f}$ req/s; GPU busy {cost}.")
gpu_e = per_good["E"]
ontime_e = counts["E"][1]
good_e = good["E"]
better = max(counts, key=lambda name: counts[name][2])    # more correct and on-time answers

# B at its best: one request alone, its own prefill then G - 1 rounds
mu_p = calc.prefill_token_rate(b * (n - n_s), given["shared_prefill_s"])
prefill_alone = (n - n_s) / mu_p
sim_alone_s = prefill_alone + (G - 1) * given["shared_round_s"]      # the simulator's round
# a lone request's round from Experiment 8-1's table (bytes read), at its longest context
lone_round_s = sv.round_time_from_reads(sv.round_read_bytes(model, 1, n + G - 1))
lone_s = prefill_alone + (G - 1) * lone_round_s
slack_lone = load.deadline_s - lone_s
alone = (f"Alone, a request of B needs its prefill and {G - 1} rounds. The simulator prices "
         f"each round at the batch's {given['shared_round_s'] / ms:g} ms: "
         f"${n - n_s} / \\mu_p + {G - 1} \\times {given['shared_round_s'] / ms:g}$ ms "
         f"$= {sim_alone_s:.2f}$ s (Experiment 8-1's prefill speed, $\\mu_p = {tex(mu_p, ',.0f')}$ "
         f"new tokens/s), "
         + ("over" if sim_alone_s > load.deadline_s else "within")
         + f" the {load.deadline_s:g} s deadline. A lone request reads less than a batch of 16, "
         f"though: interpolating Experiment 8-1's table on the bytes it reads gives at most "
         f"{lone_round_s / ms:.2f} ms a round, and {prefill_alone:.3f} s + {G - 1} × "
         f"{lone_round_s / ms:.2f} ms = {lone_s:.2f} s, "
         + (f"within the deadline, so on an idle card a request of B could just make it "
            f"(with {slack_lone:.2f} s to spare); the simulator's fixed round makes B slightly "
            f"slower at light load than that. In this run about "
            f"{load.arrival_rate_per_s * lone_s:.0f} more requests arrive while one would run "
            f"alone, so a request rarely has the card to itself."
            if slack_lone >= 0 else
            f"still over the deadline, so no request of B can be on time however light the "
            f"load."))
# the peak state each run recorded, against the pool and the batch cap
full16 = res["B"]["memory"]                     # 16 requests holding all their KV (no index)
peaks = ", ".join(f"{run.scheme} {run.peak_kv_bytes / MiB:,.0f} MiB" for run in load.runs)
bound = "; ".join(f"{run.scheme}'s run " + ("reached that (the cap of 16 running requests bound)"
                                            if run.peak_kv_bytes >= full16 else
                                            "never held 16 full requests at once")
                  for run in load.runs)
display.md(r"Each run's $T_\text{obs}$ runs from 0 to its own last completion: "
           + ", ".join(f"{name} {w:.3f} s" for name, w in windows.items()) + ".\n\n" + "\n".join(lines) + f"""

**{better}** serves more correct answers in time. The better scheme under load comes out the
same at every seed: E is B with fewer rounds, on the same trace and the same answers.

Under load each of E's qualifying results costs {gpu_e:.3f} GPU-seconds, against {gpu_s:.4f} in
the batch design of (a): {gpu_e / gpu_s:.2f} times as much.

{alone} The simulator holds B's round at the batch's value whatever the batch because a round barely shrinks with fewer requests on this card
(Experiment 8-1: {ch08.ROUND_B1_S / ms:.2f} ms at batch 1 against {ch08.ROUND_B16_S / ms:.2f} ms
at batch 16), but near a deadline this tight that small difference decides.

Peak KV: {peaks}, against a {load.kv_budget_bytes / MiB:,.0f} MiB pool. Sixteen requests
holding all their KV need {full16 / MiB:,.0f} MiB: {bound}. The pool itself never filled.
""")
for run in load.runs:   # check against the companion's 8.6.2 formula
    on_time = [r.finish_s - r.arrival_s <= load.deadline_s for r in run.records]
    assert math.isclose(good[run.scheme], calc.effective_throughput(
        [r.correct for r in run.records], on_time, windows[run.scheme]))
    assert run.peak_kv_bytes <= full16 + given["index_bytes"] < load.kv_budget_bytes
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "d_check", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false}
with grading.checks():
    grading.check("8-9", "d-gpu-E", gpu_e, seed=SEED)
    grading.check("8-9", "d-ontime-E", ontime_e, seed=SEED)
    grading.check("8-9", "d-good-E", good_e, seed=SEED)
    grading.check("8-9", "d-better", better, seed=SEED)

# %% [markdown]
# **Explain (not graded).** B and E complete the same requests with the same answers: why do
# their numbers of qualifying results differ? How does E's GPU time per qualifying result in
# this run compare with the batch design of (a), and why?

# %% [markdown] nbgrader={"grade": true, "grade_id": "d_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# ### BEGIN SOLUTION
# B's $G - 1$ one-token rounds alone take close to the deadline, so even a request served by
# itself barely makes it or misses (the worked solution says which at this seed), and under
# load the prefills of later arrivals and the queue stretch it further: B misses almost
# always. E divides the number of decode rounds by its tokens per round, so most of its
# requests finish in time, though queueing makes some late arrivals miss. Only correct and
# timely answers count in $R_\text{good} = \sum_i \kappa_i \tau_i / T_\text{obs}$, each run over
# its own window: B completes as many requests as E but delivers few or no qualifying
# results, so most of its GPU time and energy is waste. Each of E's qualifying results costs
# more GPU time than in the batch design because the requests arrive spread out: many rounds
# run with fewer than 16 requests, so a round's time is shared by fewer results, and the time
# spent on wrong or late answers is still the card's time (8.6.3 counts all of it).
# ### END SOLUTION
