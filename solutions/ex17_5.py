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
# # Exercise 17-5 · What does tensor parallelism cost per token?
#
# *Calculation, 17 §7 (tensor parallelism: the traffic, the latency floor and the step; the
# companion's 17.7 notebook).* Tensor parallelism (TP) over $g$ GPUs splits every weight
# matrix; each transformer layer then ends its attention block and its MLP block with an
# all-reduce, so a decode step runs $n_\text{coll} = 2\,n_\text{layers}$ all-reduces. Each one
# carries one token's activation vector, $d_\text{model}$ values of 2 bytes, and a ring
# all-reduce makes every GPU send $2(g-1)/g$ of it. The bytes turn out to be trivial; what
# costs is that every collective also pays a fixed launch-plus-latency floor $T_\text{floor}$,
# however few bytes it carries. In exchange each GPU streams only $1/g$ of the $D_w$ bytes of
# weights from its HBM (bandwidth $\beta$). One batch-1 decode step, with no KV to read as in
# the chapter, on a link of bandwidth $\beta_\text{link}$:
#
# $$T_\text{step} = \frac{D_w}{g\,\beta}
# + n_\text{coll}\left(T_\text{floor} + \frac{\text{ring bytes}}{\beta_\text{link}}\right).$$
#
# 1. **(a)** Bytes of one token's activation; **(b)** bytes one GPU sends per all-reduce
#    (ring bytes); **(c)** all-reduces per token, $n_\text{coll}$; **(d)** all-reduce bytes per
#    token per GPU, in MB (10⁶ B); **(e)** their wire time over NVLink, in µs.
# 2. **(f)** The latency floor per token over NVLink, $n_\text{coll}\,T_\text{floor}$, in ms;
#    **(g)** the per-GPU weight-read time of a batch-1 decode step, $D_w / (g\,\beta)$, in ms;
#    **(h)** the floor as a share of that read time, in %.
# 3. **(i)** The decode step at TP = $g$ over NVLink (read + floor; the wire time of (e) is
#    negligible), in ms, and **(j)** the batch-1 ceiling in tok/s.
# 4. **(k)** The same collectives over PCIe: the latency floor in ms, and **(l)** as a share of
#    the read time, in %.
#
# Your given data come from `grading.params("17-5", SEED)`. Seed 0 is the chapter's own data
# (the 70B shape at TP = 4 on H100 SXMs, 5 µs per collective on NVLink, ~25 µs over PCIe);
# on a course hub you get a seed of your own, from your user name.

# %% nbgrader={"grade": false, "grade_id": "given", "locked": true, "schema_version": 3, "solution": false, "task": false}
from companion import grading, units

SEED = grading.student_seed()
given = grading.params("17-5", SEED)
hw, g = given["hardware"], given["tp"]
print(f"model: {given['model'].name}: n_layers = {given['n_layers']}, d_model = "
      f"{given['hidden_size']:,}, D_w = {given['weight_bytes'] / units.GB:g} GB of weights; "
      f"{given['bytes_per_value']} bytes per activation value")
print(f"TP = g = {g} on {hw.name}s: HBM beta = {hw.mem_bw_bytes_per_s / 1e12:g} TB/s")
print(f"NVLink {given['nvlink_bytes_per_s'] / units.GB:g} GB/s each way (the data sheet's "
      f"{hw.interconnect_bytes_per_s / units.GB:g} GB/s adds both directions), T_floor = "
      f"{given['nvlink_latency_s'] / units.us:g} us per collective; PCIe "
      f"{given['pcie_generation']} {given['pcie_bytes_per_s'] / units.GB:g} GB/s each way, "
      f"T_floor = "
      f"{given['pcie_latency_s'] / units.us:g} us per collective")

# %% [markdown]
# ## (a)-(e) The bytes
#
# **Then explain**, in two or three sentences in the cell under the check: set the wire time of
# (e) against the per-GPU weight read of a decode step, (g) below. Is tensor parallelism's cost
# per token in the bytes it moves?
#
# Set `activation_bytes`, `ring_bytes`, `collectives`, `bytes_per_token_mb` and `wire_us`.

# %% nbgrader={"grade": false, "grade_id": "ae_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
activation_bytes = ring_bytes = collectives = bytes_per_token_mb = wire_us = None
### BEGIN SOLUTION
from companion.display import tex
import math

from companion import calc, display


d_model, value_bytes, n_layers = given["hidden_size"], given["bytes_per_value"], given["n_layers"]
nvlink = given["nvlink_bytes_per_s"]
activation_bytes = d_model * value_bytes
ring_bytes = 2 * (g - 1) / g * activation_bytes
collectives = 2 * n_layers
bytes_per_token = collectives * ring_bytes
bytes_per_token_mb = bytes_per_token / units.MB
wire_s = bytes_per_token / nvlink
wire_us = wire_s / units.us
display.md(rf"""
**(a)** $d_\text{{model}} \times {value_bytes}\ \text{{B}} = {tex(d_model, ',.0f')} \times {value_bytes}
= {tex(activation_bytes, ',.0f')}\ \text{{B}}$.

**(b)** A ring all-reduce is a reduce-scatter then an all-gather, each sending $(g-1)/g$ of
the vector:

$$\text{{ring bytes}} = \frac{{2(g-1)}}{{g}} \times {tex(activation_bytes, ',.0f')}\ \text{{B}}
= \frac{{2 \times {g - 1}}}{{{g}}} \times {tex(activation_bytes, ',.0f')}\ \text{{B}}
= {tex(ring_bytes, ',.0f')}\ \text{{B}}.$$

**(c)** Two per layer: $n_\text{{coll}} = 2\,n_\text{{layers}} = 2 \times {n_layers} =
{collectives}$.

**(d)** $n_\text{{coll}} \times \text{{ring bytes}} = {collectives} \times {tex(ring_bytes, ',.0f')}\ \text{{B}}
= {tex(bytes_per_token, ',.0f')}\ \text{{B}} = {bytes_per_token_mb:.2f}\ \text{{MB}}$ per token per GPU.

**(e)** Over NVLink:

$$\frac{{{tex(bytes_per_token, ',.0f')}\ \text{{B}}}}{{{nvlink / units.GB:g} \times 10^{{9}}\ \text{{B/s}}}}
= {wire_us:.2f}\ \text{{µs}}.$$

A ring sends each byte one way, so the rate is NVLink's one-way figure; the chapter's "about
4 µs" divides the same bytes by the data sheet's figure, which adds both directions
({bytes_per_token / hw.interconnect_bytes_per_s / units.us:.2f} µs), half the wire time.
""")
# the companion's own 17 §7 traffic agrees
traffic = calc.tp_allreduce_traffic(given["model"], g, bytes_per_value=value_bytes)
assert (traffic["activation_bytes"], traffic["collectives"]) == (activation_bytes, collectives)
assert math.isclose(traffic["bytes_per_token"], bytes_per_token, rel_tol=1e-12)
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "ae_check", "locked": true, "points": 5, "schema_version": 3, "solution": false, "task": false}
with grading.checks():
    grading.check("17-5", "a-activation", activation_bytes, seed=SEED)
    grading.check("17-5", "b-ring", ring_bytes, seed=SEED)
    grading.check("17-5", "c-collectives", collectives, seed=SEED)
    grading.check("17-5", "d-bytes-per-token", bytes_per_token_mb, seed=SEED)
    grading.check("17-5", "e-wire", wire_us, seed=SEED)

# %% [markdown] nbgrader={"grade": true, "grade_id": "ae_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# ### BEGIN SOLUTION
# Each all-reduce moves one activation vector, and a ring sends a bit under twice that per
# GPU; even $2\,n_\text{layers}$ of them come to megabytes per token, which NVLink moves in
# microseconds, a sliver of a step that lasts milliseconds. The bytes are nothing. At seed 0,
# 17 §7 multiplies binary kilobytes and reads the product as decimal megabytes, so its figure
# is a few percent below the one above; working in bytes, as the derivation does, avoids
# mixing the two.
#
# *Look for:* (1) one activation vector per all-reduce, a bit under twice that sent per GPU by
# the ring; (2) megabytes per token, microseconds on NVLink, against a read of milliseconds;
# (3) so the bytes are not the cost; (4) bonus: the chapter's unit mix at seed 0.
# ### END SOLUTION

# %% [markdown]
# ## (f)-(j) Count latency, not bytes
#
# Set `floor_nvlink_ms`, `read_ms`, `overhead_nvlink_pct`, `step_ms` and `tok_per_s`.

# %% nbgrader={"grade": false, "grade_id": "fj_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
floor_nvlink_ms = read_ms = overhead_nvlink_pct = step_ms = tok_per_s = None
### BEGIN SOLUTION
D_w, beta, t_floor = given["weight_bytes"], hw.mem_bw_bytes_per_s, given["nvlink_latency_s"]
floor_nvlink_s = collectives * t_floor
floor_nvlink_ms = floor_nvlink_s / units.ms
read_s = D_w / (g * beta)
read_ms = read_s / units.ms
overhead_nvlink_pct = 100 * floor_nvlink_s / read_s
step_s = read_s + floor_nvlink_s
step_ms = step_s / units.ms
tok_per_s = 1 / step_s
display.md(rf"""
**(f)** Every collective pays its floor, whatever it carries:

$$n_\text{{coll}}\,T_\text{{floor}} = {collectives} \times {t_floor / units.us:g}\ \text{{µs}}
= {floor_nvlink_ms:.3f}\ \text{{ms}}.$$

**(g)** Each GPU reads its $1/g$ of the weights:

$$\frac{{D_w}}{{g\,\beta}} = \frac{{{D_w / units.GB:g}\ \text{{GB}}}}{{{g} \times
{beta / 1e12:g}\ \text{{TB/s}}}} = \frac{{{D_w / g / units.GB:g}\ \text{{GB}}}}
{{{beta / 1e12:g}\ \text{{TB/s}}}} = {read_ms:.3f}\ \text{{ms}}.$$

**(h)** $\dfrac{{{floor_nvlink_ms:.3f}}}{{{read_ms:.3f}}} = {overhead_nvlink_pct:.1f}\,\%$ of the read.

**(i)** Leaving out the wire time of (e), {wire_us:.2f} µs:
$T_\text{{step}} = {read_ms:.3f} + {floor_nvlink_ms:.3f} = {step_ms:.3f}$ ms.

**(j)** One token per step at batch 1: $1 / T_\text{{step}} = 1000 / {step_ms:.3f} =
{tok_per_s:.1f}$ tok/s.
""")
step = calc.tp_decode_step(given["model"], hw, g, collective_latency_s=t_floor,
                           link_bytes_per_s=nvlink, bytes_per_value=value_bytes)
assert math.isclose(step["read_s"], read_s, rel_tol=1e-12)
assert math.isclose(step["latency_s"], floor_nvlink_s, rel_tol=1e-12)
assert math.isclose(step["wire_s"], wire_s, rel_tol=1e-12)
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "fj_check", "locked": true, "points": 5, "schema_version": 3, "solution": false, "task": false}
with grading.checks():
    grading.check("17-5", "f-floor-nvlink", floor_nvlink_ms, seed=SEED)
    grading.check("17-5", "g-read", read_ms, seed=SEED)
    grading.check("17-5", "h-overhead-nvlink", overhead_nvlink_pct, seed=SEED)
    grading.check("17-5", "i-step", step_ms, seed=SEED)
    grading.check("17-5", "j-tok-s", tok_per_s, seed=SEED)

# %% [markdown]
# ## (k), (l) The same collectives over PCIe
#
# **Then explain**, in two or three sentences in the cell under the check: compare (l) with
# (h). What does the difference say about where the GPUs of one tensor-parallel group may sit?
#
# Set `floor_pcie_ms` and `overhead_pcie_pct`.

# %% nbgrader={"grade": false, "grade_id": "kl_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
floor_pcie_ms = overhead_pcie_pct = None
### BEGIN SOLUTION
t_floor_pcie = given["pcie_latency_s"]
floor_pcie_s = collectives * t_floor_pcie
floor_pcie_ms = floor_pcie_s / units.ms
overhead_pcie_pct = 100 * floor_pcie_s / read_s
display.md(rf"""
**(k)** The same ${collectives}$ collectives, each with PCIe's floor:

$$n_\text{{coll}}\,T_\text{{floor}} = {collectives} \times {t_floor_pcie / units.us:g}\ \text{{µs}}
= {floor_pcie_ms:.2f}\ \text{{ms}}.$$

**(l)** $\dfrac{{{floor_pcie_ms:.2f}}}{{{read_ms:.3f}}} = {overhead_pcie_pct:.1f}\,\%$ of the read,
${t_floor_pcie / t_floor:g}$ times the NVLink share.
""")
pcie = calc.tp_decode_step(given["model"], hw, g, collective_latency_s=t_floor_pcie,
                           link_bytes_per_s=given["pcie_bytes_per_s"],
                           bytes_per_value=value_bytes)
assert math.isclose(pcie["latency_s"], floor_pcie_s, rel_tol=1e-12)
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "kl_check", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
with grading.checks():
    grading.check("17-5", "k-floor-pcie", floor_pcie_ms, seed=SEED)
    grading.check("17-5", "l-overhead-pcie", overhead_pcie_pct, seed=SEED)

# %% [markdown] nbgrader={"grade": true, "grade_id": "kl_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# ### BEGIN SOLUTION
# Over NVLink the latency floor costs a modest share of the per-GPU read (h). Over PCIe the same
# number of collectives, each several times slower, cost several times that share (l), eating
# much of what splitting the weights saved. That is the placement rule: TP talks at every layer
# of every token, so it stays inside the NVLink domain of one node.
#
# *Look for:* (1) the same number of collectives, each with a larger floor; (2) the PCIe share
# is the NVLink share times the ratio of the floors; (3) it eats much of the read time TP
# saved; (4) so TP stays inside one NVLink domain.
# ### END SOLUTION
