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
# *Computation, section 8.4.3.* One layer in every $n$ keeps its FFN weights in host memory and
# copies them in just before that layer runs, every decode step. The GPU must keep prefetch
# buffer sets (each holds one FFN) for the copies to land in.
#
# 1. **(a)** With one and with two buffer sets: the net GPU memory freed (MiB), and how many
#    extra KV states fit in it, counting a state as the prompt's KV or as what a finished
#    request holds.
# 2. **(b)** Over PCIe Gen5 x16 and over NVLink-C2C: the lower bound of the copy per step (ms)
#    and of all the copying for one request's decode steps (s); can prefetch hide the copy
#    behind the measured decode round?
# 3. **(c)** If all the copying must fit in the time budget below, what one-way bandwidth is
#    needed at least? (GB/s)
#
# The two yes/no questions of (b) come out the same at every seed: the two links' bandwidths lie
# far apart, and they decide, not the layer count or the lengths. If a seed would give an unfair
# variant (a tie, an empty list, a zero count, an answer on a rounding edge), `grading.params`
# moves to the next seed and prints why.
#
# Your given data come from `grading.params("8-5", SEED)`. Seed 0 is the chapter's own data;
# your instructor may give you another seed.

# %% nbgrader={"grade": false, "grade_id": "given", "locked": true, "schema_version": 3, "solution": false, "task": false}
from companion import calc, grading, units

SEED = 0
given = grading.params("8-5", SEED)
model = given["model"]
print(f"{model.name}: {model.n_layers} layers; one FFN in every {given['every_n_layers']} is "
      f"offloaded; buffer sets {given['buffer_sets']}")
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
input_state = calc.kv_bytes(model, given["prompt_tokens"])
complete_state = calc.kv_bytes(model, calc.held_tokens(given["prompt_tokens"],
                                                       given["output_tokens"]))
for n in given["buffer_sets"]:
    net = calc.ffn_offload(model, given["every_n_layers"], n).net_saved_bytes
    net_mib[n] = net / units.MiB
    extra_inputs[n] = int(net // input_state)
    extra_complete[n] = int(net // complete_state)
    print(f"{n} buffer set(s): {net_mib[n]:,.0f} MiB -> {extra_inputs[n]} prompt states "
          f"({input_state / units.MiB:g} MiB) or {extra_complete[n]} finished requests "
          f"({complete_state / units.MiB:g} MiB)")
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "a_check", "locked": true, "points": 6, "schema_version": 3, "solution": false, "task": false}
with grading.checks():
    for n in given["buffer_sets"]:
        grading.check("8-5", f"a-net-{n}buf", net_mib, key=n, seed=SEED)
        grading.check("8-5", f"a-inputs-{n}buf", extra_inputs, key=n, seed=SEED)
        grading.check("8-5", f"a-complete-{n}buf", extra_complete, key=n, seed=SEED)

# %% [markdown] nbgrader={"grade": true, "grade_id": "a_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# ### BEGIN SOLUTION
# An FFN is 3 x 4096 x 12288 BF16 values, 288 MiB; 9 of 36 layers free 2592 MiB. One buffer
# set keeps 288 MiB back (net 2304 MiB), two keep 576 MiB (net 2016 MiB). That is room for
# two 1152-MiB prompt states or one with two buffers, but for a single finished request
# (1188 MiB) either way: double buffering overlaps copy and compute at the price of capacity.
# ### END SOLUTION

# %% [markdown]
# ## (b) Copy time per step and over a whole request
#
# Fill `copy_ms[link]`, `total_s[link]` and `hidden[link]` for link in `("pcie", "c2c")`.

# %% nbgrader={"grade": false, "grade_id": "b_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
copy_ms, total_s, hidden = {}, {}, {}
### BEGIN SOLUTION
moved = calc.ffn_offload(model, given["every_n_layers"], 1).offloaded_bytes
steps = given["output_tokens"] - 1        # the first token comes from the prefill
for link in ("pcie", "c2c"):
    bound = calc.offload_copy_bound(moved, given[f"{link}_link_bytes_per_s"],
                                    given["compute_round_s"], rounds=steps)
    copy_ms[link] = bound.copy_s / units.ms
    total_s[link] = bound.total_copy_s
    hidden[link] = bound.copy_hidden
    print(f"{link}: {copy_ms[link]:.1f} ms per step, {total_s[link]:.2f} s over {steps} steps, "
          f"hidden: {hidden[link]}")
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "b_check", "locked": true, "points": 6, "schema_version": 3, "solution": false, "task": false}
with grading.checks():
    for link in ("pcie", "c2c"):
        grading.check("8-5", f"b-copy-{link}", copy_ms, key=link, seed=SEED)
        grading.check("8-5", f"b-total-{link}", total_s, key=link, seed=SEED)
        grading.check("8-5", f"b-hidden-{link}", hidden, key=link, seed=SEED)

# %% [markdown] nbgrader={"grade": true, "grade_id": "b_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# ### BEGIN SOLUTION
# Every step copies all 2592 MiB (2.72 GB), whatever the buffers. Over PCIe Gen5 that takes at
# least 42.5 ms, longer than the 26.26 ms decode round, so the step is bounded by the copy and
# 255 steps spend 10.8 s copying: the 7 s deadline is out of reach. NVLink-C2C needs 6.0 ms a
# step and 1.54 s in all; that is shorter than a round, so prefetch can hide it completely.
# The bytes per step do not change with prefetching, only whether they overlap compute.
# ### END SOLUTION

# %% [markdown]
# ## (c) The bandwidth the copy budget needs
#
# Set `min_bw_gb_s`.

# %% nbgrader={"grade": false, "grade_id": "c_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
min_bw_gb_s = None
### BEGIN SOLUTION
moved = calc.ffn_offload(model, given["every_n_layers"], 1).offloaded_bytes
min_bw_gb_s = calc.min_link_bytes_per_s(moved, given["output_tokens"] - 1,
                                        given["copy_budget_s"]) / units.GB
print(f"{min_bw_gb_s:.0f} GB/s")
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "c_check", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
with grading.checks():
    grading.check("8-5", "c-min-bw", min_bw_gb_s, seed=SEED)

# %% [markdown] nbgrader={"grade": true, "grade_id": "c_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# ### BEGIN SOLUTION
# 255 steps x 2.72 GB in one second need about 693 GB/s in one direction: more than ten times
# PCIe Gen5 and half again NVLink-C2C's 450 GB/s. Offloading weights that every step needs
# only pays on links that are nearly as fast as memory; otherwise it trades capacity for a
# slower step.
# ### END SOLUTION
