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

# %% nbgrader={"grade": false, "grade_id": "ae_answer", "locked": false, "schema_version": 3, "solution": true, "task": false} tags=["raises-exception"]
activation_bytes = ring_bytes = collectives = bytes_per_token_mb = wire_us = None
# YOUR CODE HERE

# %% nbgrader={"grade": true, "grade_id": "ae_check", "locked": true, "points": 5, "schema_version": 3, "solution": false, "task": false} tags=["raises-exception"]
with grading.checks():
    grading.check("17-5", "a-activation", activation_bytes, seed=SEED)
    grading.check("17-5", "b-ring", ring_bytes, seed=SEED)
    grading.check("17-5", "c-collectives", collectives, seed=SEED)
    grading.check("17-5", "d-bytes-per-token", bytes_per_token_mb, seed=SEED)
    grading.check("17-5", "e-wire", wire_us, seed=SEED)

# %% [markdown] nbgrader={"grade": true, "grade_id": "ae_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# YOUR ANSWER HERE

# %% [markdown]
# ## (f)-(j) Count latency, not bytes
#
# Set `floor_nvlink_ms`, `read_ms`, `overhead_nvlink_pct`, `step_ms` and `tok_per_s`.

# %% nbgrader={"grade": false, "grade_id": "fj_answer", "locked": false, "schema_version": 3, "solution": true, "task": false} tags=["raises-exception"]
floor_nvlink_ms = read_ms = overhead_nvlink_pct = step_ms = tok_per_s = None
# YOUR CODE HERE

# %% nbgrader={"grade": true, "grade_id": "fj_check", "locked": true, "points": 5, "schema_version": 3, "solution": false, "task": false} tags=["raises-exception"]
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

# %% nbgrader={"grade": false, "grade_id": "kl_answer", "locked": false, "schema_version": 3, "solution": true, "task": false} tags=["raises-exception"]
floor_pcie_ms = overhead_pcie_pct = None
# YOUR CODE HERE

# %% nbgrader={"grade": true, "grade_id": "kl_check", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false} tags=["raises-exception"]
with grading.checks():
    grading.check("17-5", "k-floor-pcie", floor_pcie_ms, seed=SEED)
    grading.check("17-5", "l-overhead-pcie", overhead_pcie_pct, seed=SEED)

# %% [markdown] nbgrader={"grade": true, "grade_id": "kl_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# YOUR ANSWER HERE
