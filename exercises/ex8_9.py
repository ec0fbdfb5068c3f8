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

# %% nbgrader={"grade": false, "grade_id": "a_answer", "locked": false, "schema_version": 3, "solution": true, "task": false} tags=["raises-exception"]
memory_mib = total_s = gpu_s = best = None
# YOUR CODE HERE

# %% nbgrader={"grade": true, "grade_id": "a_check", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false} tags=["raises-exception"]
with grading.checks():
    grading.check("8-9", "a-memory-E", memory_mib, seed=SEED)
    grading.check("8-9", "a-total-E", total_s, seed=SEED)
    grading.check("8-9", "a-gpu-E", gpu_s, seed=SEED)
    grading.check("8-9", "a-best", best, seed=SEED)

# %% [markdown]
# **Explain (not graded).** Why does E need no more memory than B (or only a little more), why
# does it meet the deadline where B does not, and what decides between E and D?

# %% [markdown] nbgrader={"grade": true, "grade_id": "a_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# YOUR ANSWER HERE

# %% [markdown]
# ## (b) Less memory, and (c) shorter output
#
# Set `best_small`, `total_short_s` and `best_short`.

# %% nbgrader={"grade": false, "grade_id": "bc_answer", "locked": false, "schema_version": 3, "solution": true, "task": false} tags=["raises-exception"]
best_small = total_short_s = best_short = None
# YOUR CODE HERE

# %% nbgrader={"grade": true, "grade_id": "bc_check", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false} tags=["raises-exception"]
with grading.checks():
    grading.check("8-9", "b-best-small", best_small, seed=SEED)
    grading.check("8-9", "c-total-E-short", total_short_s, seed=SEED)
    grading.check("8-9", "c-best-short", best_short, seed=SEED)

# %% [markdown]
# **Explain (not graded).** How does the amount of memory decide which scheme survives, and
# what does an index on the GPU change? With the shorter output, what happens to D's advantage
# over E, and why?

# %% [markdown] nbgrader={"grade": true, "grade_id": "bc_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# YOUR ANSWER HERE

# %% [markdown]
# ## (d) The load experiment
#
# Set `gpu_e` (GPU-seconds per qualifying result of E in this run), `ontime_e` (a count),
# `good_e` (req/s, over E's own window, from 0 to E's last completion) and `better`
# (`"B"` or `"E"`).

# %% nbgrader={"grade": false, "grade_id": "d_answer", "locked": false, "schema_version": 3, "solution": true, "task": false} tags=["raises-exception"]
gpu_e = ontime_e = good_e = better = None
# YOUR CODE HERE

# %% nbgrader={"grade": true, "grade_id": "d_check", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false} tags=["raises-exception"]
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
# YOUR ANSWER HERE
