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

# %% nbgrader={"grade": false, "grade_id": "ae_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
layers_per_stage = boundaries = handoff_bytes = bubble1_pct = bubble2_pct = None
### BEGIN SOLUTION
from companion.display import tex
import math

from companion import calc, display


n_layers, d_model = given["n_layers"], given["hidden_size"]
layers_per_stage = n_layers / S
boundaries = S - 1
handoff_bytes = d_model * 2
bubble1_pct = 100 * (S - 1) / (M1 + S - 1)
bubble2_pct = 100 * (S - 1) / (M2 + S - 1)
display.md(rf"""
**(a)** $n_\text{{layers}} / S = {n_layers} / {S} = {layers_per_stage:g}$ layers per stage.

**(b)** $S$ stages in a row have $S - 1 = {boundaries}$ boundaries between them.

**(c)** One activation vector per boundary per token: $d_\text{{model}} \times 2\ \text{{B}} =
{tex(d_model, ',.0f')} \times 2 = {tex(handoff_bytes, ',.0f')}\ \text{{B}}$
($= {handoff_bytes / units.KiB:g}$ KiB).

**(d), (e)** The fill and drain take $S - 1$ of the $M + S - 1$ stage-steps:

$$\frac{{S - 1}}{{M + S - 1}} = \frac{{{S - 1}}}{{{M1} + {S - 1}}} = \frac{{{S - 1}}}{{{M1 + S - 1}}}
= {bubble1_pct:.2f}\,\% \quad (M = {M1}),$$

$$\frac{{S - 1}}{{M + S - 1}} = \frac{{{S - 1}}}{{{M2} + {S - 1}}} = \frac{{{S - 1}}}{{{M2 + S - 1}}}
= {bubble2_pct:.2f}\,\% \quad (M = {M2}).$$
""")
# the companion's own 17 §7 pipeline agrees
pp = calc.pp_stages(given["model"], S, M1)
assert (pp["layers_per_stage"], pp["boundaries"], pp["handoff_bytes"]) == (
    layers_per_stage, boundaries, handoff_bytes)
assert math.isclose(100 * pp["bubble"], bubble1_pct, rel_tol=1e-12)
assert math.isclose(100 * calc.pipeline_bubble(S, M2), bubble2_pct, rel_tol=1e-12)
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
#
# **Then explain**, in three or four sentences in the cell under the check: why does a small
# bubble need many more microbatches than stages, and what kind of load does that make PP
# suited to? The formula counts a batch pushed through the pipe once, as in a prefill: why does
# steady-state decode keep the pipe full with only about as many microbatches in rotation as
# there are stages, $M \approx S$?

# %% nbgrader={"grade": false, "grade_id": "f_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
m_needed = None
### BEGIN SOLUTION
# (S - 1) / (M + S - 1) <= t  <=>  M >= (S - 1)(1/t - 1): the smallest whole M is its ceiling
m_bound = (S - 1) * (1 / target - 1)
m_needed = max(1, math.ceil(m_bound))


def bubble_pct(M):
    return 100 * (S - 1) / (M + S - 1)


display.md(rf"""
**(f)** Solve the bubble formula for $M$:

$$\text{{bubble}} = \frac{{S - 1}}{{M + S - 1}} \le \text{{target}} \iff
M \ge (S - 1)\left(\frac{{1}}{{\text{{target}}}} - 1\right)
= {S - 1} \times \left(\frac{{1}}{{{target:g}}} - 1\right) = {m_bound:.2f},
\qquad M = {m_needed}.$$

Check: $M = {m_needed}$ gives ${bubble_pct(m_needed):.3f}\,\%$, within the
${100 * target:g}\,\%$ target; $M = {m_needed - 1}$ gives ${bubble_pct(m_needed - 1):.3f}\,\%$,
above it.
""")
assert calc.pipeline_bubble(S, m_needed) <= target * (1 + 1e-12)
assert calc.pipeline_bubble(S, m_needed - 1) > target * (1 + 1e-12)
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "f_check", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
with grading.checks():
    grading.check("17-6", "f-m-needed", m_needed, seed=SEED)

# %% [markdown] nbgrader={"grade": true, "grade_id": "af_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# ### BEGIN SOLUTION
# A token crosses $S - 1$ boundaries, each with one activation vector of a few kilobytes: PP's
# traffic is small enough to cross nodes. Its price is the bubble, which shrinks only as the
# microbatches outnumber the stages: a small target needs $(S - 1)(1/\text{target} - 1)$
# microbatches in flight, many times the number of stages. Those have to come from concurrent traffic, which is
# why PP is a throughput layout: a single stream still visits every layer in turn, and a deep
# pipeline under light load is mostly bubble.
#
# The formula prices a batch pushed through the pipe once, as in a prefill, where the pipe
# fills and drains for every batch. Steady-state decode is different: a microbatch that leaves
# the last stage comes back to the first for its next token, so with $M \ge S$ microbatches
# in rotation the pipe never drains, and only unequal stage times leave some idle (17.7's
# fuller model).
#
# *Look for:* (1) the bubble falls only as $M$ outgrows $S$: (f) is many times $S$; (2) those
# microbatches come from concurrent requests, so PP buys throughput, not single-stream latency;
# (3) in steady-state decode a microbatch leaving the last stage re-enters the first for its
# next token, so $M \approx S$ microbatches in rotation keep every stage busy and the pipe never
# drains; (4) bonus: unequal stage times still leave some idle.
# ### END SOLUTION

# %% [markdown]
# ## (g)-(j) Placing the 405B
#
# Set `node_per_gpu_gb`, `node_fits`, `layout_gpus` and `layout_per_gpu_gb`.
#
# **Then explain**, in two or three sentences in the cell under the check: why does TP stop at
# the edge of the node while whole nodes are added as PP stages, and what is the room left on
# each card above its weights and the reserve used for?

# %% nbgrader={"grade": false, "grade_id": "gj_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
node_per_gpu_gb = node_fits = layout_gpus = layout_per_gpu_gb = None
### BEGIN SOLUTION
D_w, C, reserve = given["big_weight_bytes"], hw.mem_bytes, given["reserve_bytes"]
node_per_gpu = D_w / node
node_per_gpu_gb = node_per_gpu / units.GB
node_fits = node_per_gpu + reserve < C
# D_w / (g S) + M_u < C  <=>  g S > D_w / (C - M_u): more GPUs than this bound
g_bound = D_w / (C - reserve)
if node_fits:       # TP alone on one node: the smallest power of two above the bound
    layout_gpus = 2 ** (math.floor(math.log2(g_bound)) + 1) if g_bound >= 1 else 1
    how = rf"TP = {layout_gpus}, the smallest power of two above ${g_bound:.2f}$, on one node"
else:               # TP = g_node on each node, PP = whole nodes: the fewest above the bound
    stages = math.floor(g_bound / node) + 1
    layout_gpus = node * stages
    how = (rf"TP = {node} on each node and PP = $\lfloor {g_bound:.2f} / {node} \rfloor + 1 = "
           rf"{stages}$ nodes: ${node} \times {stages} = {layout_gpus}$ GPUs")
layout_per_gpu_gb = D_w / layout_gpus / units.GB
verdict, relation = ("fits", "<") if node_fits else ("does not fit", r"\ge")
display.md(rf"""
**(g)** $D_w / g_\text{{node}} = {D_w / units.GB:g}\ \text{{GB}} / {node} =
{node_per_gpu_gb:.2f}\ \text{{GB}}$ per GPU.

**(h)** $D_w / g_\text{{node}} + M_u = {node_per_gpu_gb:.2f} + {reserve / units.GB:g} =
{(node_per_gpu + reserve) / units.GB:.2f}\ \text{{GB}} {relation} C = {C / units.GB:g}\ \text{{GB}}$:
one node **{verdict}**.

**(i)** Each GPU's share of the weights must stay below $C - M_u$, so a layout needs

$$g\,S > \frac{{D_w}}{{C - M_u}} = \frac{{{D_w / units.GB:g}}}{{{C / units.GB:g} - {reserve / units.GB:g}}}
= {g_bound:.2f}\ \text{{GPUs}},$$

which gives {how}.

**(j)** $D_w / (g\,S) = {D_w / units.GB:g}\ \text{{GB}} / {layout_gpus} = {layout_per_gpu_gb:.2f}\ \text{{GB}}$
per GPU, leaving ${(C - reserve) / units.GB - layout_per_gpu_gb:.2f}$ GB of each card for the
KV cache.
""")
layout = calc.parallel_layout(given["big_model"], hw, reserve_bytes=reserve, gpus_per_node=node)
assert (layout["gpus"], layout["pp"] == 1) == (layout_gpus, node_fits)
assert math.isclose(calc.weights_per_gpu_bytes(given["big_model"], node), node_per_gpu,
                    rel_tol=1e-12)
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "gj_check", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false}
with grading.checks():
    grading.check("17-6", "g-node-per-gpu", node_per_gpu_gb, seed=SEED)
    grading.check("17-6", "h-node-fits", node_fits, seed=SEED)
    grading.check("17-6", "i-layout-gpus", layout_gpus, seed=SEED)
    grading.check("17-6", "j-layout-per-gpu", layout_per_gpu_gb, seed=SEED)

# %% [markdown] nbgrader={"grade": true, "grade_id": "gj_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# ### BEGIN SOLUTION
# Each GPU's share of the weights must stay below $C - M_u$, so any layout needs more than
# $D_w / (C - M_u)$ GPUs. When that is more than one node, TP stays at the node's width, over
# NVLink, and whole nodes are added as PP stages, with one activation handoff between them per
# token; what each card has left above its share of the weights and the reserve is room for
# the KV cache. At the chapter's data one node of 8 falls short and two nodes fit.
#
# *Look for:* (1) any layout needs more than $D_w / (C - M_u)$ GPUs; (2) TP's per-layer
# all-reduces need NVLink, so TP stops at the node's width; (3) PP's one small activation per
# token and boundary crosses nodes cheaply, so extra nodes become stages; (4) what is left on
# each card holds the KV cache, which sets the batch.
# ### END SOLUTION
