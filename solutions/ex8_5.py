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
# 1. **(a)** With one and with two buffer sets: what is the net GPU memory freed (MiB)? How
#    many extra KV states fit in it *on its own*, the chapter's count (the freed bytes taken as
#    a region of their own that holds only whole states)? Count a state as the prompt's KV
#    ($n$ tokens) or as what a finished request holds ($n + G - 1$ tokens; 8.1.2), each in whole
#    16-token blocks at $k$ bytes per token. Then count at the pool instead: KV blocks are paged
#    and interchangeable (8.3.1), so the freed memory joins the KV pool given below; how many
#    more finished requests does the pool hold than before?
# 2. **(b)** Over PCIe Gen5 x16 and over NVLink-C2C: the lower bound of the copy per step,
#    $D_\text{off} / \beta_\text{link}$ (ms), and of all the copying for one request's $G - 1$
#    decode steps (the first output token comes from the prefill) (s); and, with two buffer sets
#    (so that one FFN can be copied while the layer before it computes), can prefetch hide the
#    copy behind the measured decode round, that is, is the copy per step no longer than the
#    round? (`True` or `False`.)
# 3. **(c)** If all the copying of a request must fit in the copy budget below, with none of it
#    overlapped by compute (the companion's reading of the chapter's "total time budget for
#    all copying"), what one-way bandwidth is needed at least? And from what one-way
#    bandwidth on does the copy per step fit inside one decode round, so that, with two buffer
#    sets, it stops slowing the step? (GB/s, $10^9$ bytes/s)
#
# **Precision and units.** MiB are $2^{20}$ bytes, GB/s $10^9$ bytes/s. The net memory and the
# copy per step to 0.5%; the copying over all steps and the two bandwidths to 0.1%, which
# tells $G - 1$ steps from $G$; counts of states and requests exact; the hiding questions
# `True`/`False`.
#
# A caveat on the data: NVLink-C2C is the CPU-GPU link of NVIDIA's GH200, not of the
# RTX PRO 6000 whose decode round is given below, and that round was measured at a 2K context
# while this request runs at 8K. That round was also mostly launch overhead (Experiment 8-1
# ran without CUDA Graphs; 8.6.3), so a tuned engine's round, and with it the room prefetch
# has to hide a copy, would be shorter. The comparison shows which side of the round each link
# falls on, not a measured system.

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
      f"16-token blocks, BF16 KV; KV pool {given['kv_pool_bytes'] / units.GiB:g} GiB")
print(f"links: PCIe Gen5 x16 {given['pcie_link_bytes_per_s'] / units.GB:g} GB/s, NVLink-C2C "
      f"{given['c2c_link_bytes_per_s'] / units.GB:g} GB/s per direction")
print(f"measured decode round {given['compute_round_s'] / units.ms:g} ms; copy budget "
      f"{given['copy_budget_s']:g} s")

# %% [markdown]
# ## (a) Memory freed and what fits in it
#
# Fill `net_mib[n]`, `extra_inputs[n]` and `extra_complete[n]` (the freed memory on its own),
# and `pool_complete[n]` (the pool with the freed memory in it), for n = 1 and 2 buffer sets.

# %% nbgrader={"grade": false, "grade_id": "a_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
net_mib, extra_inputs, extra_complete, pool_complete = {}, {}, {}, {}
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
pool = given["kv_pool_bytes"]
before = math.floor(pool / complete_state)         # finished requests the pool holds already
leftover = pool - before * complete_state          # and what it has left
rows, pool_rows = [], []
for n in given["buffer_sets"]:
    net = D_off - n * ffn
    net_mib[n] = net / MiB
    extra_inputs[n] = int(net // input_state)
    extra_complete[n] = int(net // complete_state)
    pool_complete[n] = math.floor((pool + net) / complete_state) - before
    rows.append(f"| {n} | {D_off / MiB:,g} − {n} × {ffn / MiB:,g} = **{net_mib[n]:,g}** "
                f"| ⌊{net_mib[n]:,g} / {input_state / MiB:,g}⌋ = **{extra_inputs[n]}** "
                f"| ⌊{net_mib[n]:,g} / {complete_state / MiB:,g}⌋ = **{extra_complete[n]}** |")
    pool_rows.append(f"| {n} | ⌊({pool / MiB:,g} + {net_mib[n]:,g}) / {complete_state / MiB:,g}⌋"
                     f" − {before} = **{pool_complete[n]}** | {extra_complete[n]} |")
display.md(rf"""
One FFN: $3\,d_\text{{model}}\,d_\text{{ff}} \times {s_w:g}\ \text{{B}} = 3 \times {tex(d_model)} \times
{tex(d_ff)} \times {s_w:g}\ \text{{B}} = {tex(ffn / MiB, ',g')}$ MiB.
Offloaded layers: $\lfloor {model.n_layers} / {n_every} \rfloor = {layers}$, so
$D_\text{{off}} = {layers} \times {tex(ffn / MiB, ',g')} = {tex(D_off / MiB, ',g')}$ MiB.
A prompt state holds ${tex(p * math.ceil(n_prompt / p))}$ slots, $\times\ {tex(k)}$ B
$= {tex(input_state / MiB, ',g')}$ MiB; a finished request holds $n + G - 1 = {tex(held)}$ tokens,
${tex(p * math.ceil(held / p))}$ slots $= {tex(complete_state / MiB, ',g')}$ MiB.

**The freed memory on its own** (the chapter's count):

| buffer sets | net freed, $D_\text{{off}}$ − sets × FFN (MiB) | extra prompt states | extra finished requests |
|---:|---|---|---|
""" + "\n".join(rows) + rf"""

**At the pool.** The {pool / MiB:,g} MiB pool already holds {before} finished requests and has
{leftover / MiB:,g} MiB left over; paged blocks are interchangeable, so that leftover and the
freed memory add up:

| buffer sets | extra finished requests in the pool | freed memory on its own |
|---:|---|---:|
""" + "\n".join(pool_rows))
# check against the companion's 8.4.3, 8.1.2 and 8.3.2 formulas
assert input_state == calc.kv_bytes(model, n_prompt)
assert complete_state == calc.kv_bytes(model, calc.held_tokens(n_prompt, G))
for n in given["buffer_sets"]:
    assert math.isclose(net_mib[n] * MiB, calc.ffn_offload(model, n_every, n).net_saved_bytes)
    assert pool_complete[n] == (calc.max_concurrent(pool + net_mib[n] * MiB, model, n_prompt, G)
                                - calc.max_concurrent(pool, model, n_prompt, G))
    assert pool_complete[n] >= extra_complete[n]
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "a_check", "locked": true, "points": 8, "schema_version": 3, "solution": false, "task": false}
with grading.checks():
    for n in given["buffer_sets"]:
        grading.check("8-5", f"a-net-{n}buf", net_mib, key=n, seed=SEED)
        grading.check("8-5", f"a-inputs-{n}buf", extra_inputs, key=n, seed=SEED)
        grading.check("8-5", f"a-complete-{n}buf", extra_complete, key=n, seed=SEED)
        grading.check("8-5", f"a-pool-{n}buf", pool_complete, key=n, seed=SEED)

# %% [markdown]
# **In words (not graded).** What does each buffer set cost, why can counting the freed memory
# on its own understate what offloading buys, and when does the second buffer set cost a whole
# request?

# %% [markdown] nbgrader={"grade": true, "grade_id": "a_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# ### BEGIN SOLUTION
# Every offloaded layer frees one FFN, and every buffer set takes one FFN back, so the net gain
# is (offloaded layers − buffer sets) FFNs (derived above). A KV state of a long request is
# several FFNs large, so only a few whole states fit in the freed memory on its own, and there
# a second buffer set loses a state whenever it pushes the freed bytes below a multiple of the
# state size. But KV blocks are paged and interchangeable (8.3.1): the freed memory is not a
# region of its own, it joins the pool, whose leftover after its own requests adds to it. The
# pool-level gain is therefore never smaller than the isolated count and can be larger, and the
# second buffer set costs a request only if it pushes the pool's total below the next multiple
# of a request (the table above shows whether it does here). A finished request holds a little
# more than its prompt, so it can fit fewer times than a prompt state.
# ### END SOLUTION

# %% [markdown]
# ## (b) Copy time per step and over a whole request
#
# Fill `copy_ms[link]`, `total_s[link]` and `hidden[link]` (`True` or `False`) for link in
# `("pcie", "c2c")`.

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
        + (rf"$\le$ {round_ms:g} ms, so with two buffer sets prefetch can hide it." if hidden[link]
           else rf"$>$ {round_ms:g} ms, so the copy sets the step time."))
# why two buffer sets: with one, the next FFN's copy can only start once the offloaded layer
# before it has finished, so it overlaps just the resident layers in between
between = n_every - 1
between_ms = between * round_ms / model.n_layers
per_ffn = {link: ffn / given[f"{link}_link_bytes_per_s"] / ms for link in ("pcie", "c2c")}


def fits(x):
    return "fits in" if x <= between_ms else "outlasts"


lines.append(
    f"\nWhy two buffer sets: with one, the copy of the next offloaded FFN can start only when the "
    f"offloaded layer before it has finished, so it can overlap just the {between} resident "
    f"layer(s) in between, about {between} × {round_ms / model.n_layers:.2f} = "
    f"{between_ms:.2f} ms of compute. One FFN's copy takes {per_ffn['pcie']:.2f} ms over PCIe "
    f"Gen5 ({fits(per_ffn['pcie'])} that) and {per_ffn['c2c']:.2f} ms over NVLink-C2C "
    f"({fits(per_ffn['c2c'])} it); with two sets the link never waits for compute, and only the "
    f"whole step's copy against the whole round counts.")
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

# %% [markdown]
# **In words (not graded).** Does prefetching change how many bytes cross the link each step?
# What decides whether the copy slows the step, and why does that need two buffer sets?

# %% [markdown] nbgrader={"grade": true, "grade_id": "b_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# ### BEGIN SOLUTION
# Every step copies all offloaded weights, whatever the buffers: prefetching changes when the
# bytes move, never how many. Over PCIe Gen5 the copy takes longer than the decode round, so
# the step is bounded by the copy, and over a whole request the copying alone takes seconds.
# NVLink-C2C is several times faster; its copy is shorter than a round, so with two buffer sets,
# where the next FFN's copy runs while the current layer computes, prefetch can hide it
# completely. With one set a copy overlaps only the resident layers between two offloaded ones,
# which can be too short even when the whole step's copy fits (the per-layer check above). The
# two yes/no answers come out the same at every seed: the links' bandwidths decide them.
# ### END SOLUTION

# %% [markdown]
# ## (c) The bandwidth the copy budget needs, and the bandwidth that hides the copy
#
# Set `min_bw_gb_s` (the whole request's copying within the budget, none of it overlapped) and
# `hide_bw_gb_s` (one step's copy within one decode round).

# %% nbgrader={"grade": false, "grade_id": "c_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
min_bw_gb_s = hide_bw_gb_s = None
### BEGIN SOLUTION
budget = given["copy_budget_s"]
min_bw_gb_s = steps * D_off / budget / GB
hide_bw_gb_s = D_off / given["compute_round_s"] / GB
from companion import specs

hbm = specs.RTX_PRO_6000.mem_bw_bytes_per_s             # the card's memory bandwidth
display.md(rf"""
**The budget, as exposed copy time.** If none of the copying overlaps compute, it all adds to
the request:

$$\beta_\text{{link}} \ge \dfrac{{(G - 1)\,D_\text{{off}}}}{{T_\text{{budget}}}}
= \dfrac{{{steps} \times {D_off / GB:.3f}\ \text{{GB}}}}{{{budget:g}\ \text{{s}}}}
= {min_bw_gb_s:.1f}\ \text{{GB/s}}.$$

**Hiding the copy.** With two buffer sets a step is only as long as the longer of its compute
and its copy, so the copy stops slowing the step once it fits in one round of $T_r = {round_ms:g}$ ms:

$$\beta_\text{{link}} \ge \dfrac{{D_\text{{off}}}}{{T_r}}
= \dfrac{{{D_off / GB:.3f}\ \text{{GB}}}}{{{round_ms:g}\ \text{{ms}}}}
= {hide_bw_gb_s:.1f}\ \text{{GB/s}},$$

{"above" if hide_bw_gb_s > given["pcie_link_bytes_per_s"] / GB else "below"} PCIe Gen5's
{given["pcie_link_bytes_per_s"] / GB:g} GB/s and
{"below" if hide_bw_gb_s < given["c2c_link_bytes_per_s"] / GB else "above"} NVLink-C2C's
{given["c2c_link_bytes_per_s"] / GB:g} GB/s, and {100 * hide_bw_gb_s * GB / hbm:.0f}% of the
card's {hbm / GB:,.0f} GB/s memory bandwidth.
""")
assert math.isclose(min_bw_gb_s * GB, calc.min_link_bytes_per_s(D_off, steps, budget))
for link in ("pcie", "c2c"):   # the threshold agrees with (b)'s hiding test
    assert hidden[link] == (given[f"{link}_link_bytes_per_s"] >= hide_bw_gb_s * GB)
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "c_check", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
with grading.checks():
    grading.check("8-5", "c-min-bw", min_bw_gb_s, seed=SEED)
    grading.check("8-5", "c-hide-bw", hide_bw_gb_s, seed=SEED)

# %% [markdown]
# **In words (not graded).** What does the copy budget stand for, and which of your two
# bandwidths decides whether offloading slows decoding? On which links does it pay?

# %% [markdown] nbgrader={"grade": true, "grade_id": "c_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# ### BEGIN SOLUTION
# The budget is copy time left exposed: it assumes none of the copying overlaps compute, so
# every step's copy adds to the request, and it asks for a link fast enough to move all steps'
# weights in that time. With prefetch and two buffer sets the copy hides behind compute
# instead, and what matters is one step's copy against one round: once the link carries
# $D_\text{off}$ within a round, $D_\text{off} / T_r$ (derived above), the copy no
# longer slows the step at all, and the budget figure is beside the point. That threshold lies
# far below memory bandwidth: NVLink-C2C clears it, PCIe Gen5 does not. So offloading weights
# that every step needs pays on a link that is a fraction of memory's speed, as long as the
# link outruns $D_\text{off} / T_r$ and the buffers allow the overlap; on a slower
# link it trades capacity for a slower step.
# ### END SOLUTION
