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
# *Calculation, 17 §7 (pipeline parallelism and the 405B placement; the companion's 17.7
# notebook).* Pipeline parallelism (PP) splits the layers into $S$ stages, contiguous runs of
# layers with one GPU each; a token's activation, $d_\text{model}$ values of 2 bytes, crosses
# each boundary between stages once. Fed with $M$ microbatches back to back, every stage works $M$ stage-steps, but
# filling and draining the pipe adds $S - 1$ more, so the idle share of stage-time is
#
# $$\text{bubble} = \frac{S - 1}{M + S - 1}.$$
#
# Placement follows the communication arithmetic: TP as wide as the NVLink domain (one node of
# $g_\text{node}$ GPUs), and PP stages across nodes only when one node cannot hold the weights
# plus the runtime reserve. A layout of TP over $g$ GPUs and PP over $S$ stages uses $g\,S$
# GPUs; it holds $D_w$ bytes of weights on cards of capacity $C$ with a reserve $M_u$ per GPU
# when $D_w / (g\,S) + M_u < C$.
#
# 1. **(a)** Layers per stage; **(b)** stage boundaries a token crosses; **(c)** bytes handed
#    across one boundary per token.
# 2. **(d)**, **(e)** The bubble, in %, for each of the two microbatch counts.
# 3. **(f)** The fewest microbatches that bring the bubble to the given target or below
#    ($\le$: a bubble equal to the target meets it).
# 4. For the 405B model on the given card, with the given GPUs per node (8 at seed 0):
#    **(g)** weights per GPU at TP over one whole node, $D_w / g_\text{node}$, in GB;
#    **(h)** does that fit with the reserve? (`True`/`False`);
#    **(i)** the GPUs in the smallest layout that fits when TP fills the node first (TP = 1, 2,
#    4, ... up to $g_\text{node}$ on one node, then TP = $g_\text{node}$ with PP = 2, 3, ...
#    whole nodes); **(j)** the weights per GPU in that layout, in GB.
#
# The 405B model is fixed; the node size (4 or 8 GPUs), the card and the reserve change with
# the seed, and with them (g)-(j). If a seed would give an unfair variant (a tie, an
# empty list, a zero count, an answer on a rounding edge), `grading.params` moves to the next
# seed and prints why.
#
# Your given data come from `grading.params("17-6", SEED)`. Seed 0 is the chapter's own data
# (the 70B shape at $S$ = 4 with $M$ = 16 and 64, the 405B on H100 SXMs), plus a bubble
# target of ours; on a course hub you get a seed of your own, from your user name.

# %% nbgrader={"grade": false, "grade_id": "given", "locked": true, "schema_version": 3, "solution": false, "task": false}
from companion import grading, units

SEED = grading.student_seed()
given = grading.params("17-6", SEED)
S, (M1, M2), target = given["stages"], given["microbatches"], given["target_bubble"]
hw, node = given["hardware"], given["gpus_per_node"]
print(f"pipeline: {given['model'].name}, n_layers = {given['n_layers']}, d_model = "
      f"{given['hidden_size']:,}; S = {S} stages; M = {M1} or {M2}; target bubble {target:.1%}")
print(f"placement: {given['big_model'].name}, D_w = {given['big_weight_bytes'] / units.GB:g} GB "
      f"of weights on {hw.name} (C = {hw.mem_bytes / units.GB:g} GB), g_node = {node} GPUs per "
      f"node, reserve M_u = {given['reserve_bytes'] / units.GB:g} GB per GPU")

# %% [markdown]
# ## (a)-(e) The pipeline
#
# Set `layers_per_stage`, `boundaries`, `handoff_bytes`, `bubble1_pct` and `bubble2_pct`.

# %% nbgrader={"grade": false, "grade_id": "ae_answer", "locked": false, "schema_version": 3, "solution": true, "task": false} tags=["raises-exception"]
layers_per_stage = boundaries = handoff_bytes = bubble1_pct = bubble2_pct = None
# YOUR CODE HERE

# %% nbgrader={"grade": true, "grade_id": "ae_check", "locked": true, "points": 5, "schema_version": 3, "solution": false, "task": false} tags=["raises-exception"]
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
#
# **Then explain**, in three or four sentences in the cell under the check: why does a small
# bubble need many more microbatches than stages, and what kind of load does that make PP
# suited to? The formula counts a batch pushed through the pipe once, as in a prefill: why does
# steady-state decode keep the pipe full with only about as many microbatches in rotation as
# there are stages, $M \approx S$?

# %% nbgrader={"grade": false, "grade_id": "f_answer", "locked": false, "schema_version": 3, "solution": true, "task": false} tags=["raises-exception"]
m_needed = None
# YOUR CODE HERE

# %% nbgrader={"grade": true, "grade_id": "f_check", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false} tags=["raises-exception"]
with grading.checks():
    grading.check("17-6", "f-m-needed", m_needed, seed=SEED)

# %% [markdown] nbgrader={"grade": true, "grade_id": "af_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# YOUR ANSWER HERE

# %% [markdown]
# ## (g)-(j) Placing the 405B
#
# Set `node_per_gpu_gb`, `node_fits`, `layout_gpus` and `layout_per_gpu_gb`.
#
# **Then explain**, in two or three sentences in the cell under the check: why does TP stop at
# the edge of the node while whole nodes are added as PP stages, and what is the room left on
# each card above its weights and the reserve used for?

# %% nbgrader={"grade": false, "grade_id": "gj_answer", "locked": false, "schema_version": 3, "solution": true, "task": false} tags=["raises-exception"]
node_per_gpu_gb = node_fits = layout_gpus = layout_per_gpu_gb = None
# YOUR CODE HERE

# %% nbgrader={"grade": true, "grade_id": "gj_check", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false} tags=["raises-exception"]
with grading.checks():
    grading.check("17-6", "g-node-per-gpu", node_per_gpu_gb, seed=SEED)
    grading.check("17-6", "h-node-fits", node_fits, seed=SEED)
    grading.check("17-6", "i-layout-gpus", layout_gpus, seed=SEED)
    grading.check("17-6", "j-layout-per-gpu", layout_per_gpu_gb, seed=SEED)

# %% [markdown] nbgrader={"grade": true, "grade_id": "gj_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# YOUR ANSWER HERE
