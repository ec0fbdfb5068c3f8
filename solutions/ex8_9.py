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
# looked up from the context: no extra prefill, a round yields the number of tokens per request
# given below and takes B's 27.35 ms plus the lookup time (verifying E's few draft positions
# stays inside the round, as D's eight do in 8.6.3). In the chapter the index lives in host
# memory and takes no GPU memory; a variant may keep it on the GPU instead, where it takes the
# memory given below.
#
# The rules of 8.6.3, for every scheme: its memory is the KV the batch holds at the end of
# generation, each request's $n + G - 1$ tokens in whole 16-token blocks at $k$ bytes per token
# (times the format's size relative to BF16; a shared prefix of $n_s$ tokens stored once), plus
# its draft's memory; it decodes in $\lceil (G - 1) / \text{tokens per round} \rceil$ rounds,
# and its total time is the prefill plus those rounds. Its $b$ results qualify only if it fits
# the memory and finishes by the deadline; then each qualifying result costs $t_\text{GPU}$,
# its total time divided by $b$, in GPU-seconds; otherwise none qualify.
#
# 1. **(a)** E's memory (MiB), its total time (s) and its GPU-seconds per qualifying result;
#    which of A-E is best (least GPU time per qualifying result among the schemes that fit and
#    meet the deadline; `"none"` if none does)?
# 2. **(b)** The best scheme when only the smaller memory below is available.
# 3. **(c)** E's total time when the output is shortened as below (s), and the best scheme then.
# 4. **(d)** The open-ended experiment, run for you: B and E served the same seeded arrival
#    trace and problem set (records below). How many of B's requests finish late (after
#    arrival + deadline), how many of E's finish in time, what is E's effective throughput
#    $R_\text{good} = \sum_i \kappa_i \tau_i / T_\text{obs}$ (8.6.2) over the common observation
#    window $T_\text{obs}$ (from 0 to the last completion of either run) (req/s), and which scheme
#    serves more correct answers in time?
#
# Within the ranges the seeds draw from, the best scheme in (a) and the better scheme in (d) are
# the same at every seed: D's draft model saves more rounds than E's lookup as long as both fit,
# and E is B with fewer rounds. The best scheme in (b) and (c) changes with the index's memory
# and the output length. If a seed would give an unfair variant
# (a tie, an empty list, a zero count, an answer on a rounding edge), `grading.params` moves to
# the next seed and prints why.
#
# Your given data come from `grading.params("8-9", SEED)`. Seed 0 is the chapter's own data;
# on a course hub you get a seed of your own, from your user name.

# %% nbgrader={"grade": false, "grade_id": "given", "locked": true, "schema_version": 3, "solution": false, "task": false}
from companion import calc, display, grading, specs, units

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
print("E's lookup index: " + (f"on the GPU, {index / units.MiB:g} MiB" if index
                              else "in host memory (no GPU memory)"))
print(f"{model.name}: k = {calc.kv_bytes_per_token(model) / units.KiB:g} KiB of BF16 KV per "
      f"token, 16-token blocks")
stage = calc.compare_schemes([calc.SCHEMES[k] for k in "ABCD"])   # 8.6.3's figures
for name, s in calc.SCHEMES.items():
    if name != "E":
        print(f"  scheme {name}: {display.round_floats(s)}")  # 6 significant digits
        print(f"    8.6.3's stage figures: prefill {stage[name].prefill_s:.4f} s, decode round "
              f"{stage[name].round_s / units.ms:.4f} ms")

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

**Cost per qualifying result.** E fits ({memory_mib / 1024:.2f} GiB against {setting[0] / GiB:g} GiB)
{"and" if e["on_time"] else "but"} {"meets" if e["on_time"] else "misses"} the {deadline:g} s deadline, so
""" + (rf"$T / b = {total_s:.4f} / {b} = {gpu_s:.4f}$ GPU-seconds per qualifying result."
       if math.isfinite(gpu_s) else "none of its results qualify.") + f"""

{shown}

The feasible scheme with the least GPU time per qualifying result: **{best}**.
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

# %% [markdown] nbgrader={"grade": true, "grade_id": "a_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# ### BEGIN SOLUTION
# With the index in host memory, as in the chapter, E stores exactly what B stores: the
# prefix once and each request's private part; an index on the GPU adds its own memory. It
# needs half of B's decode rounds or fewer, each a little longer by the lookup, so it finishes
# within the deadline where B does not. D needs even fewer rounds and still fits, so it costs
# less GPU time per qualifying result and remains the choice; B and C miss the deadline and A
# does not fit (the table above).
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
display.md(rf"""
**(b) {small_budget / GiB:g} GiB.** Only the memory check changes:

{shown_small}

Best: **{best_small}**.

**(c) {short_G} output tokens.** Fewer rounds, and a little less KV per request; E needs
$\lceil {short_G - 1} / {E['tokens']:g} \rceil = {res_short['E']['rounds']}$ rounds:
$T = {E['prefill_s']:g} + {res_short['E']['rounds']} \times {E['round_s']:g} = {total_short_s:.4f}$ s.

{shown_short}

Best: **{best_short}**.
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

# %% [markdown] nbgrader={"grade": true, "grade_id": "bc_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# ### BEGIN SOLUTION
# With the chapter's 6 GiB, D no longer fits and B fits but is late; E with its index in host
# memory needs no more memory than B and meets the deadline, so E turns "no feasible scheme"
# into a feasible one: a draft source that costs no GPU memory is worth most when memory is
# what binds. An index kept on the GPU can push E out of the smaller memory as well. With 16 output
# tokens the prefill dominates every total: D's draft model adds prefill time that eats most of
# what its fewer rounds save, while E adds no prefill, so at the chapter's data E costs the
# least GPU time per result (the tables above).
# ### END SOLUTION

# %% [markdown]
# ## (d) The load experiment
#
# Set `late_b` and `ontime_e` (counts), `good_e` (req/s, over the window from 0 to the last
# completion of either run) and `better` (`"B"` or `"E"`).

# %% nbgrader={"grade": false, "grade_id": "d_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
late_b = ontime_e = good_e = better = None
### BEGIN SOLUTION
window_s = max(r.finish_s for run in load.runs for r in run.records)     # T_obs
good, counts, lines = {}, {}, []
for run in load.runs:
    on_time = [r.finish_s - r.arrival_s <= load.deadline_s for r in run.records]   # tau_i
    qualifying = sum(1 for r, t in zip(run.records, on_time) if r.correct and t)    # kappa_i tau_i
    good[run.scheme] = qualifying / window_s
    counts[run.scheme] = (len(on_time), sum(on_time), qualifying)
    lines.append(rf"- **{run.scheme}**: {len(on_time)} requests, {sum(on_time)} finish within "
                 rf"{load.deadline_s:g} s of arrival ({len(on_time) - sum(on_time)} late), "
                 rf"{qualifying} correct and on time: $R_\text{{good}} = {qualifying} / {window_s:.3f}"
                 rf" = {good[run.scheme]:.4f}$ req/s.")
late_b = counts["B"][0] - counts["B"][1]
ontime_e = counts["E"][1]
good_e = good["E"]
better = max(good, key=good.get)
display.md(rf"$T_\text{{obs}}$ runs from 0 to the last completion of either run, "
           rf"{window_s:.3f} s." + "\n\n" + "\n".join(lines)
           + f"\n\n**{better}** serves more correct answers in time.")
for run in load.runs:   # check against the companion's 8.6.2 formula
    on_time = [r.finish_s - r.arrival_s <= load.deadline_s for r in run.records]
    assert math.isclose(good[run.scheme], calc.effective_throughput(
        [r.correct for r in run.records], on_time, window_s))
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "d_check", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false}
with grading.checks():
    grading.check("8-9", "d-late-B", late_b, seed=SEED)
    grading.check("8-9", "d-ontime-E", ontime_e, seed=SEED)
    grading.check("8-9", "d-good-E", good_e, seed=SEED)
    grading.check("8-9", "d-better", better, seed=SEED)

# %% [markdown] nbgrader={"grade": true, "grade_id": "d_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# ### BEGIN SOLUTION
# Under load B misses the deadline almost always: even a request alone needs $G - 1$ rounds of
# B's decode round, close to the deadline by itself, and the prefills of later arrivals stretch
# its rounds further. E divides the number of decode rounds by its tokens per round, so most
# of its requests finish in time, even though queueing makes some late arrivals miss. Only
# correct and timely answers count in $R_\text{good} = \sum_i \kappa_i \tau_i / T_\text{obs}$,
# over one window for both runs: B completes as many requests as E but delivers few or no
# qualifying results, so most of its GPU time and energy is waste.
# ### END SOLUTION
