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
# # Exercise 17-6 · The pipeline bubble, and where TP stops and PP starts
#
# *Calculation, 17 §7.* Pipeline parallelism (PP) gives each of $p$ GPUs a contiguous run of
# layers, a stage; a token's activation crosses each boundary between stages once. Fed with
# $m$ microbatches back to back, every stage works $m$ stage-steps, but filling and draining
# the pipe adds $p - 1$ more, so the idle share of stage-time is
#
# $$\text{bubble} = \frac{p - 1}{m + p - 1}.$$
#
# Placement follows the communication arithmetic: TP as wide as the NVLink domain (one node),
# and PP stages across nodes only when one node cannot hold the weights plus the runtime
# reserve.
#
# 1. **(a)** Layers per stage; **(b)** stage boundaries a token crosses; **(c)** bytes handed
#    across one boundary per token (one activation vector, 2 bytes per value).
# 2. **(d)**, **(e)** The bubble, in %, for each of the two microbatch counts.
# 3. **(f)** The fewest microbatches that bring the bubble to the target or below.
# 4. For the 405B model on the given card, with the given GPUs per node (8 at seed 0):
#    **(g)** weights per GPU at TP over one whole node, in GB; **(h)** does that fit with the reserve? (`True`/`False`);
#    **(i)** the GPUs in the smallest layout that fits when TP fills the node first and whole
#    nodes are added as PP stages; **(j)** the weights per GPU in that layout, in GB.
#
# The 405B model is fixed; the node size (4 or 8 GPUs), the card and the reserve change with
# the seed, and with them (g)-(j). If a seed would give an unfair variant (a tie, an
# empty list, a zero count, an answer on a rounding edge), `grading.params` moves to the next
# seed and prints why.
#
# Your given data come from `grading.params("17-6", SEED)`. Seed 0 is the chapter's own data
# (the 70B shape at p = 4 with m = 16 and 64, the 405B on H100 SXMs), plus a 5% bubble target
# of ours; your instructor may give you another seed.

# %% nbgrader={"grade": false, "grade_id": "given", "locked": true, "schema_version": 3, "solution": false, "task": false}
from companion import grading, units

SEED = 0
given = grading.params("17-6", SEED)
p, (m1, m2), target = given["stages"], given["microbatches"], given["target_bubble"]
hw, node = given["hardware"], given["gpus_per_node"]
print(f"pipeline: {given['model'].name}, {given['n_layers']} layers, hidden size "
      f"{given['hidden_size']:,}; p = {p} stages; m = {m1} or {m2}; target bubble {target:.0%}")
print(f"placement: {given['big_model'].name}, {given['big_weight_bytes'] / units.GB:g} GB of "
      f"weights on {hw.name} ({hw.mem_bytes / units.GB:g} GB), {node} GPUs per node, reserve "
      f"{given['reserve_bytes'] / units.GB:g} GB per GPU")

# %% [markdown]
# ## (a)-(e) The pipeline
#
# Set `layers_per_stage`, `boundaries`, `handoff_bytes`, `bubble1_pct` and `bubble2_pct`.

# %% nbgrader={"grade": false, "grade_id": "ae_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
layers_per_stage = boundaries = handoff_bytes = bubble1_pct = bubble2_pct = None
### BEGIN SOLUTION
layers_per_stage = given["n_layers"] / p
boundaries = p - 1
handoff_bytes = given["hidden_size"] * 2
bubble1_pct = 100 * (p - 1) / (m1 + p - 1)
bubble2_pct = 100 * (p - 1) / (m2 + p - 1)
print(f"{layers_per_stage:g} layers per stage, {boundaries} boundaries of {handoff_bytes:,} B; "
      f"bubble {bubble1_pct:.1f}% at m = {m1}, {bubble2_pct:.1f}% at m = {m2}")
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "ae_check", "locked": true, "points": 5, "schema_version": 3, "solution": false, "task": false}
with grading.checks():
    grading.check("17-6", "a-layers", layers_per_stage, seed=SEED)
    grading.check("17-6", "b-boundaries", boundaries, seed=SEED)
    grading.check("17-6", "c-handoff", handoff_bytes, seed=SEED)
    grading.check("17-6", "d-bubble-m1", bubble1_pct, seed=SEED)
    grading.check("17-6", "e-bubble-m2", bubble2_pct, seed=SEED)

# %% [markdown]
# ## (f) Microbatches for the target
#
# Set `m_needed`.

# %% nbgrader={"grade": false, "grade_id": "f_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
m_needed = None
### BEGIN SOLUTION
m_needed = 1
while (p - 1) / (m_needed + p - 1) > target:
    m_needed += 1
print(f"m >= {m_needed} microbatches for a bubble <= {target:.0%}")
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "f_check", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
with grading.checks():
    grading.check("17-6", "f-m-needed", m_needed, seed=SEED)

# %% [markdown] nbgrader={"grade": true, "grade_id": "af_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# ### BEGIN SOLUTION
# 80 layers over 4 stages is 20 each, with 3 boundaries of one 16 KiB activation: PP's traffic
# is small enough to cross nodes. Its price is the bubble: 3 / 19 = 15.8% idle at m = 16 and
# 3 / 67 = 4.5% at m = 64; a 5% target needs (p - 1)(1/0.05 - 1) = 57 microbatches in flight.
# Those have to come from traffic, which is why PP is a throughput layout: a single stream
# still visits every layer in turn, and a deep pipeline under light load is mostly bubble.
# ### END SOLUTION

# %% [markdown]
# ## (g)-(j) Placing the 405B
#
# Set `node_per_gpu_gb`, `node_fits`, `layout_gpus` and `layout_per_gpu_gb`.

# %% nbgrader={"grade": false, "grade_id": "gj_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
node_per_gpu_gb = node_fits = layout_gpus = layout_per_gpu_gb = None
### BEGIN SOLUTION
W, reserve = given["big_weight_bytes"], given["reserve_bytes"]


def fits(gpus):
    return W / gpus + reserve < hw.mem_bytes


node_per_gpu_gb = W / node / units.GB
node_fits = fits(node)
layout_gpus = next(tp for tp in (1, 2, 4, 8) if fits(tp)) if node_fits else None
stages = 2
while layout_gpus is None:
    if fits(node * stages):
        layout_gpus = node * stages
    stages += 1
layout_per_gpu_gb = W / layout_gpus / units.GB
print(f"TP = {node}: {node_per_gpu_gb:.1f} GB per GPU, fits: {node_fits}; smallest layout "
      f"{layout_gpus} GPUs at {layout_per_gpu_gb:.1f} GB each")
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "gj_check", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false}
with grading.checks():
    grading.check("17-6", "g-node-per-gpu", node_per_gpu_gb, seed=SEED)
    grading.check("17-6", "h-node-fits", node_fits, seed=SEED)
    grading.check("17-6", "i-layout-gpus", layout_gpus, seed=SEED)
    grading.check("17-6", "j-layout-per-gpu", layout_per_gpu_gb, seed=SEED)

# %% [markdown] nbgrader={"grade": true, "grade_id": "gj_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# ### BEGIN SOLUTION
# 405e9 x 2 B = 810 GB; one node at TP = 8 puts 101 GB on each 80 GB card, so it does not fit.
# Keeping TP at the node's 8 and adding a second node as a PP stage gives 16 GPUs at ~51 GB
# each, with room left for KV: two nodes, TP inside each over NVLink, one activation handoff
# between them per token.
# ### END SOLUTION
