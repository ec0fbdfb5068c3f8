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
# # Exercise 8-5 · What does offloading FFN weights free, and what does it cost per step?
#
# *Computation, section 8.4.3.* One layer in every few keeps its FFN weights in host memory
# and copies them in just before that layer runs, every decode step: of the model's
# $n_\text{layers}$ layers, $\lfloor n_\text{layers} / \text{interval} \rfloor$ offload their FFN
# (the interval, in layers, is given below), $D_\text{off}$ bytes in all. The GPU must keep
# prefetch buffer sets (each holds one FFN) for the copies to land in. One layer's FFN is three
# matrices (gate, up, down) of $d_\text{model} \times d_\text{ff}$ weights each, $d_\text{ff}$
# being the FFN's inner width, at the bytes per weight given below.
#
# 1. **(a)** With one and with two buffer sets: the net GPU memory freed (MiB), and how many
#    extra KV states fit in it, counting a state as the prompt's KV ($n$ tokens) or as what a
#    finished request holds ($n + G - 1$ tokens; 8.1.2), each in whole 16-token blocks at $k$
#    bytes per token. Only whole states count.
# 2. **(b)** Over PCIe Gen5 x16 and over NVLink-C2C: the lower bound of the copy per step,
#    $D_\text{off} / \beta_\text{link}$ (ms), and of all the copying for one request's $G - 1$
#    decode steps (the first output token comes from the prefill) (s); can prefetch hide the
#    copy behind the measured decode round (is the copy no longer than the round)?
# 3. **(c)** If all the copying must fit in the time budget below, what one-way bandwidth is
#    needed at least? (GB/s, $10^9$ bytes/s)
#
# The two yes/no questions of (b) come out the same at every seed: the two links' bandwidths lie
# far apart, and they decide, not the layer count or the lengths. If a seed would give an unfair
# variant (a tie, an empty list, a zero count, an answer on a rounding edge), `grading.params`
# moves to the next seed and prints why.
#
# Your given data come from `grading.params("8-5", SEED)`. Seed 0 is the chapter's own data;
# on a course hub you get a seed of your own, from your user name.

# %% nbgrader={"grade": false, "grade_id": "given", "locked": true, "schema_version": 3, "solution": false, "task": false}
from companion import calc, grading, units

SEED = grading.student_seed()
given = grading.params("8-5", SEED)
model = given["model"]
print(f"{model.name}: {model.n_layers} layers; one FFN in every {given['every_n_layers']} is "
      f"offloaded; buffer sets {given['buffer_sets']}")
print(f"d_model = {model.hidden_size}, d_ff = {model.intermediate_size}, "
      f"{model.bytes_per_param:g} bytes per weight; k = "
      f"{calc.kv_bytes_per_token(model) / units.KiB:g} KiB of KV per token")
print(f"prompt {given['prompt_tokens']} tokens, {given['output_tokens']} output tokens, "
      f"16-token blocks, BF16 KV")
print(f"links: PCIe Gen5 x16 {given['pcie_link_bytes_per_s'] / units.GB:g} GB/s, NVLink-C2C "
      f"{given['c2c_link_bytes_per_s'] / units.GB:g} GB/s per direction")
print(f"measured decode round {given['compute_round_s'] / units.ms:g} ms; copy budget "
      f"{given['copy_budget_s']:g} s")

# %% [markdown]
# ## (a) Memory freed and what fits in it
#
# Fill `net_mib[n]`, `extra_inputs[n]` and `extra_complete[n]` for n = 1 and 2 buffer sets.

# %% nbgrader={"grade": false, "grade_id": "a_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
net_mib, extra_inputs, extra_complete = {}, {}, {}
### BEGIN SOLUTION
from companion.display import tex
import math

from companion import display


MiB, ms, GB = units.MiB, units.ms, units.GB
d_model, d_ff, s_w = model.hidden_size, model.intermediate_size, model.bytes_per_param
k, p = calc.kv_bytes_per_token(model), 16
n_every, n_prompt, G = given["every_n_layers"], given["prompt_tokens"], given["output_tokens"]

ffn = 3 * d_model * d_ff * s_w                     # one layer's gate, up and down matrices
layers = model.n_layers // n_every                 # offloaded layers
D_off = layers * ffn                               # copied in every step
input_state = p * math.ceil(n_prompt / p) * k      # the prompt's KV
held = n_prompt + G - 1
complete_state = p * math.ceil(held / p) * k       # a finished request's KV
rows = []
for n in given["buffer_sets"]:
    net = D_off - n * ffn
    net_mib[n] = net / MiB
    extra_inputs[n] = int(net // input_state)
    extra_complete[n] = int(net // complete_state)
    rows.append(f"| {n} | {D_off / MiB:,g} − {n} × {ffn / MiB:,g} = **{net_mib[n]:,g}** "
                f"| ⌊{net_mib[n]:,g} / {input_state / MiB:,g}⌋ = **{extra_inputs[n]}** "
                f"| ⌊{net_mib[n]:,g} / {complete_state / MiB:,g}⌋ = **{extra_complete[n]}** |")
display.md(rf"""
One FFN: $3\,d_\text{{model}}\,d_\text{{ff}} \times {s_w:g}\ \text{{B}} = 3 \times {tex(d_model)} \times
{tex(d_ff)} \times {s_w:g}\ \text{{B}} = {tex(ffn / MiB, ',g')}$ MiB.
Offloaded layers: $\lfloor {model.n_layers} / {n_every} \rfloor = {layers}$, so
$D_\text{{off}} = {layers} \times {tex(ffn / MiB, ',g')} = {tex(D_off / MiB, ',g')}$ MiB.
A prompt state holds ${tex(p * math.ceil(n_prompt / p))}$ slots, $\times\ {tex(k)}$ B
$= {tex(input_state / MiB, ',g')}$ MiB; a finished request holds $n + G - 1 = {tex(held)}$ tokens,
${tex(p * math.ceil(held / p))}$ slots $= {tex(complete_state / MiB, ',g')}$ MiB.

| buffer sets | net freed, $D_\text{{off}}$ − sets × FFN (MiB) | extra prompt states | extra finished requests |
|---:|---|---|---|
""" + "\n".join(rows))
# check against the companion's 8.4.3 and 8.1.2 formulas
assert input_state == calc.kv_bytes(model, n_prompt)
assert complete_state == calc.kv_bytes(model, calc.held_tokens(n_prompt, G))
for n in given["buffer_sets"]:
    assert math.isclose(net_mib[n] * MiB, calc.ffn_offload(model, n_every, n).net_saved_bytes)
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "a_check", "locked": true, "points": 6, "schema_version": 3, "solution": false, "task": false}
with grading.checks():
    for n in given["buffer_sets"]:
        grading.check("8-5", f"a-net-{n}buf", net_mib, key=n, seed=SEED)
        grading.check("8-5", f"a-inputs-{n}buf", extra_inputs, key=n, seed=SEED)
        grading.check("8-5", f"a-complete-{n}buf", extra_complete, key=n, seed=SEED)

# %% [markdown] nbgrader={"grade": true, "grade_id": "a_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# ### BEGIN SOLUTION
# Every offloaded layer frees one FFN, and every buffer set takes one FFN back, so the net
# gain is (offloaded layers − buffer sets) FFNs (derived above). A KV state of a long request is
# several FFNs large, so only a few whole states fit, and the second buffer set can cost a
# whole state: double buffering overlaps copy and compute at the price of capacity. A finished
# request holds a little more than its prompt, so it can fit fewer times than a prompt state.
# ### END SOLUTION

# %% [markdown]
# ## (b) Copy time per step and over a whole request
#
# Fill `copy_ms[link]`, `total_s[link]` and `hidden[link]` for link in `("pcie", "c2c")`.

# %% nbgrader={"grade": false, "grade_id": "b_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
copy_ms, total_s, hidden = {}, {}, {}
### BEGIN SOLUTION
steps = G - 1                             # the first token comes from the prefill
round_ms = given["compute_round_s"] / ms
names = {"pcie": "PCIe Gen5 x16", "c2c": "NVLink-C2C"}
lines = [rf"$D_\text{{off}} = {tex(D_off, ',.0f')}$ B $= {D_off / GB:.3f}$ GB per step, "
         rf"over $G - 1 = {steps}$ steps; the decode round takes {round_ms:g} ms."]
for link in ("pcie", "c2c"):
    beta = given[f"{link}_link_bytes_per_s"]
    copy_ms[link] = D_off / beta / ms
    total_s[link] = steps * copy_ms[link] * ms
    hidden[link] = copy_ms[link] <= round_ms
    lines.append(
        rf"- {names[link]}: $D_\text{{off}} / \beta_\text{{link}} = {D_off / GB:.3f}\ \text{{GB}} / "
        rf"{beta / GB:g}\ \text{{GB/s}} = {copy_ms[link]:.2f}$ ms per step; ${steps} \times {copy_ms[link]:.2f}$ ms "
        rf"$= {total_s[link]:.2f}$ s; {copy_ms[link]:.2f} ms "
        + (rf"$\le$ {round_ms:g} ms, so prefetch can hide it." if hidden[link]
           else rf"$>$ {round_ms:g} ms, so the copy sets the step time."))
display.md(lines[0] + "\n\n" + "\n".join(lines[1:]))
for link in ("pcie", "c2c"):   # check against the companion's 8.4.3 bound
    bound = calc.offload_copy_bound(D_off, given[f"{link}_link_bytes_per_s"],
                                    given["compute_round_s"], rounds=steps)
    assert math.isclose(bound.total_copy_s, total_s[link]) and bound.copy_hidden == hidden[link]
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "b_check", "locked": true, "points": 6, "schema_version": 3, "solution": false, "task": false}
with grading.checks():
    for link in ("pcie", "c2c"):
        grading.check("8-5", f"b-copy-{link}", copy_ms, key=link, seed=SEED)
        grading.check("8-5", f"b-total-{link}", total_s, key=link, seed=SEED)
        grading.check("8-5", f"b-hidden-{link}", hidden, key=link, seed=SEED)

# %% [markdown] nbgrader={"grade": true, "grade_id": "b_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# ### BEGIN SOLUTION
# Every step copies all offloaded weights, whatever the buffers. Over PCIe Gen5 the copy takes
# longer than the decode round, so the step is bounded by the copy, and over a whole request
# the copying alone takes seconds: with the chapter's data more than the 7 s deadline.
# NVLink-C2C is several times faster; its copy is shorter than a round, so prefetch can hide it
# completely. The bytes per step do not change with prefetching, only whether they overlap
# compute.
# ### END SOLUTION

# %% [markdown]
# ## (c) The bandwidth the copy budget needs
#
# Set `min_bw_gb_s`.

# %% nbgrader={"grade": false, "grade_id": "c_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
min_bw_gb_s = None
### BEGIN SOLUTION
budget = given["copy_budget_s"]
min_bw_gb_s = steps * D_off / budget / GB
display.md(rf"""
$\beta_\text{{link}} \ge \dfrac{{(G - 1)\,D_\text{{off}}}}{{T_\text{{budget}}}}
= \dfrac{{{steps} \times {D_off / GB:.3f}\ \text{{GB}}}}{{{budget:g}\ \text{{s}}}}
= {min_bw_gb_s:.1f}$ GB/s in one direction.
""")
assert math.isclose(min_bw_gb_s * GB, calc.min_link_bytes_per_s(D_off, steps, budget))
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "c_check", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
with grading.checks():
    grading.check("8-5", "c-min-bw", min_bw_gb_s, seed=SEED)

# %% [markdown] nbgrader={"grade": true, "grade_id": "c_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# ### BEGIN SOLUTION
# Copying the offloaded weights once per step, for every step of a request, within the budget
# needs a link many times faster than PCIe Gen5, and with the chapter's data faster even than
# NVLink-C2C (compare the bandwidth derived above with the two links). Offloading weights that
# every step needs only pays on links that are nearly as fast as memory; otherwise it trades
# capacity for a slower step.
# ### END SOLUTION
