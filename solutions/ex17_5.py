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
# *Calculation, 17 §7.* Tensor parallelism (TP) over $p$ GPUs splits every weight matrix; each
# transformer layer then ends its attention block and its MLP block with an all-reduce, so a
# decode step runs two all-reduces per layer. Each one carries one token's activation vector
# (hidden size $\times$ 2 bytes), and a ring all-reduce makes every GPU send $2(p-1)/p$ of it.
# The bytes turn out to be trivial; what costs is that every collective also pays a fixed
# launch-plus-latency floor. In exchange each GPU streams only $1/p$ of the weights.
#
# 1. **(a)** Bytes of one token's activation; **(b)** bytes one GPU sends per all-reduce;
#    **(c)** all-reduces per token; **(d)** all-reduce bytes per token per GPU, in MB (10⁶ B);
#    **(e)** their wire time over NVLink, in µs.
# 2. **(f)** The latency floor per token over NVLink (collectives $\times$ per-collective
#    latency), in ms; **(g)** the per-GPU weight-read time of a batch-1 decode step, in ms;
#    **(h)** the floor as a share of that read time, in %.
# 3. **(i)** The decode step at TP = $p$ over NVLink (read + floor; the wire time of (e) is
#    negligible), in ms, and **(j)** the batch-1 ceiling in tok/s.
# 4. **(k)** The same collectives over PCIe: the latency floor in ms, and **(l)** as a share of
#    the read time, in %.
#
# Your given data come from `grading.params("17-5", SEED)`. Seed 0 is the chapter's own data
# (the 70B shape at TP = 4 on H100 SXMs, 5 µs per collective on NVLink, ~25 µs over PCIe);
# your instructor may give you another seed.

# %% nbgrader={"grade": false, "grade_id": "given", "locked": true, "schema_version": 3, "solution": false, "task": false}
from companion import grading, units

SEED = 0
given = grading.params("17-5", SEED)
hw, p = given["hardware"], given["tp"]
print(f"model: {given['model'].name}: {given['n_layers']} layers, hidden size "
      f"{given['hidden_size']:,}, weights {given['weight_bytes'] / units.GB:g} GB; "
      f"{given['bytes_per_value']} bytes per activation value")
print(f"TP = {p} on {hw.name}s: HBM {hw.mem_bw_bytes_per_s / 1e12:g} TB/s")
print(f"NVLink {given['nvlink_bytes_per_s'] / units.GB:g} GB/s, "
      f"{given['nvlink_latency_s'] / units.us:g} us per collective; PCIe "
      f"{given['pcie_bytes_per_s'] / units.GB:g} GB/s, "
      f"{given['pcie_latency_s'] / units.us:g} us per collective")

# %% [markdown]
# ## (a)-(e) The bytes
#
# Set `activation_bytes`, `ring_bytes`, `collectives`, `bytes_per_token_mb` and `wire_us`.

# %% nbgrader={"grade": false, "grade_id": "ae_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
activation_bytes = ring_bytes = collectives = bytes_per_token_mb = wire_us = None
### BEGIN SOLUTION
activation_bytes = given["hidden_size"] * given["bytes_per_value"]
ring_bytes = 2 * (p - 1) / p * activation_bytes
collectives = 2 * given["n_layers"]
bytes_per_token = collectives * ring_bytes
bytes_per_token_mb = bytes_per_token / units.MB
wire_us = bytes_per_token / given["nvlink_bytes_per_s"] / units.us
print(f"{activation_bytes:,} B per activation, {ring_bytes:,.0f} B per all-reduce, "
      f"{collectives} all-reduces -> {bytes_per_token_mb:.2f} MB per token, "
      f"{wire_us:.1f} us on NVLink")
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
# 8,192 x 2 = 16,384 B (the chapter's "16 KB" is binary), 24,576 B per GPU per all-reduce,
# 160 all-reduces: 3.93 MB per token (the chapter's "3.8 MB" multiplies 24 KB by 160 and
# reads the product as decimal), about 4 µs on a 900 GB/s link. The bytes are nothing.
# ### END SOLUTION

# %% [markdown]
# ## (f)-(j) Count latency, not bytes
#
# Set `floor_nvlink_ms`, `read_ms`, `overhead_nvlink_pct`, `step_ms` and `tok_per_s`.

# %% nbgrader={"grade": false, "grade_id": "fj_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
floor_nvlink_ms = read_ms = overhead_nvlink_pct = step_ms = tok_per_s = None
### BEGIN SOLUTION
floor_nvlink_ms = collectives * given["nvlink_latency_s"] / units.ms
read_ms = given["weight_bytes"] / p / hw.mem_bw_bytes_per_s / units.ms
overhead_nvlink_pct = 100 * floor_nvlink_ms / read_ms
step_ms = read_ms + floor_nvlink_ms
tok_per_s = 1000 / step_ms
print(f"floor {floor_nvlink_ms:.2f} ms on a {read_ms:.2f} ms read ({overhead_nvlink_pct:.1f}%): "
      f"step {step_ms:.2f} ms, {tok_per_s:.1f} tok/s")
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
# Set `floor_pcie_ms` and `overhead_pcie_pct`.

# %% nbgrader={"grade": false, "grade_id": "kl_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
floor_pcie_ms = overhead_pcie_pct = None
### BEGIN SOLUTION
floor_pcie_ms = collectives * given["pcie_latency_s"] / units.ms
overhead_pcie_pct = 100 * floor_pcie_ms / read_ms
print(f"PCIe floor {floor_pcie_ms:.1f} ms: {overhead_pcie_pct:.0f}% of the read")
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "kl_check", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
with grading.checks():
    grading.check("17-5", "k-floor-pcie", floor_pcie_ms, seed=SEED)
    grading.check("17-5", "l-overhead-pcie", overhead_pcie_pct, seed=SEED)

# %% [markdown] nbgrader={"grade": true, "grade_id": "kl_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# ### BEGIN SOLUTION
# On NVLink, 160 x 5 µs = 0.8 ms against a $35\text{ GB} / 3.35\text{ TB/s} = 10.4$ ms read:
# about 8%, a step of 11.2 ms and ~89 tok/s for a model that fits no single card. Over PCIe the same 160
# collectives at ~25 µs cost 4 ms, ~38% of the read. That is the placement rule: TP talks every
# layer of every token, so it stays inside the NVLink domain of one node.
# ### END SOLUTION
