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
# # Exercise 17-7 · Size the prefill and decode pools of a disaggregated fleet
#
# *Calculation, 17 §8.* With disaggregated serving, prefill and decode run on separate GPU
# pools, each sized against its own bottleneck: the prefill pool in prompt tokens per second,
# the decode pool in output tokens per second. The two sizes are two independent divisions,
# each rounded up to whole groups. The price is a network hop: the prefill pool ships each
# request's KV cache to a decode worker.
#
# 1. **(a)** The prompt tokens per second the prefill pool must absorb and **(b)** the prefill
#    groups needed.
# 2. **(c)** The output tokens per second the decode pool must produce and **(d)** the decode
#    groups needed; **(e)** prefill groups per decode group.
# 3. **(f)** The KV one long request ships, in GB; the transfer time over **(g)** NVLink and
#    **(h)** RDMA, in ms; **(i)** one layer's share of the RDMA transfer, in ms (engines ship
#    layer by layer, overlapped with the prefill of later layers).
#
# The RDMA link is quoted in gigabits per second, as NICs are.
# Your given data come from `grading.params("17-7", SEED)`. Seed 0 is the chapter's own data
# (100 req/s, 2,000-token prompts, 250-token outputs, 10,000 and 2,500 tok/s per group, one
# 8,000-token request of the 70B shape, 900 GB/s NVLink, 400 Gb/s RDMA); your instructor may
# give you another seed.

# %% nbgrader={"grade": false, "grade_id": "given", "locked": true, "schema_version": 3, "solution": false, "task": false}
import math

from companion import grading, units

SEED = 0
given = grading.params("17-7", SEED)
print(f"traffic: {given['request_rate_per_s']} req/s, mean prompt "
      f"{given['mean_prompt_tokens']:,} tokens, mean output {given['mean_output_tokens']:,} "
      f"tokens")
print(f"capacity per GPU group: prefill {given['prefill_tok_per_s_per_group']:,} tok/s, "
      f"decode {given['decode_tok_per_s_per_group']:,} tok/s")
print(f"KV hop: {given['model'].name}, {given['n_layers']} layers, "
      f"k = {given['kv_bytes_per_token']:,} B per token, {given['context_tokens']:,}-token "
      f"request")
print(f"links: NVLink {given['nvlink_bytes_per_s'] / units.GB:g} GB/s, RDMA "
      f"{given['rdma_gbit_per_s']} Gb/s")

# %% [markdown]
# ## (a)-(e) The two pools
#
# Set `prompt_demand`, `prefill_groups`, `output_demand`, `decode_groups` and `pool_ratio`.

# %% nbgrader={"grade": false, "grade_id": "ae_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
prompt_demand = prefill_groups = output_demand = decode_groups = pool_ratio = None
### BEGIN SOLUTION
rate = given["request_rate_per_s"]
prompt_demand = rate * given["mean_prompt_tokens"]
prefill_groups = math.ceil(prompt_demand / given["prefill_tok_per_s_per_group"])
output_demand = rate * given["mean_output_tokens"]
decode_groups = math.ceil(output_demand / given["decode_tok_per_s_per_group"])
pool_ratio = prefill_groups / decode_groups
print(f"prefill: {prompt_demand:,} tok/s -> {prefill_groups} groups; decode: "
      f"{output_demand:,} tok/s -> {decode_groups} groups; ratio {pool_ratio:.2f}")
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "ae_check", "locked": true, "points": 7, "schema_version": 3, "solution": false, "task": false}
with grading.checks():
    grading.check("17-7", "a-prompt-demand", prompt_demand, seed=SEED)
    grading.check("17-7", "b-prefill-groups", prefill_groups, seed=SEED)
    grading.check("17-7", "c-output-demand", output_demand, seed=SEED)
    grading.check("17-7", "d-decode-groups", decode_groups, seed=SEED)
    grading.check("17-7", "e-ratio", pool_ratio, seed=SEED)

# %% [markdown] nbgrader={"grade": true, "grade_id": "ae_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# ### BEGIN SOLUTION
# 100 x 2,000 = 200,000 prompt tok/s needs 20 prefill groups; 100 x 250 = 25,000 output tok/s
# needs 10 decode groups: 2:1 for this mix. The ratio is a property of the workload, not of the
# fleet: longer documents grow only the prefill pool, chattier sessions only the decode pool,
# and two pools can follow each shift on their own where a shared fleet cannot.
# ### END SOLUTION

# %% [markdown]
# ## (f)-(i) The KV hop
#
# Set `kv_gb`, `nvlink_ms`, `rdma_ms` and `per_layer_ms`.

# %% nbgrader={"grade": false, "grade_id": "fi_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
kv_gb = nvlink_ms = rdma_ms = per_layer_ms = None
### BEGIN SOLUTION
kv_bytes = given["kv_bytes_per_token"] * given["context_tokens"]
kv_gb = kv_bytes / units.GB
nvlink_ms = kv_bytes / given["nvlink_bytes_per_s"] / units.ms
rdma_bytes_per_s = given["rdma_gbit_per_s"] * 1e9 / 8
rdma_ms = kv_bytes / rdma_bytes_per_s / units.ms
per_layer_ms = rdma_ms / given["n_layers"]
print(f"{kv_gb:.2f} GB: {nvlink_ms:.1f} ms over NVLink, {rdma_ms:.1f} ms over RDMA "
      f"({rdma_bytes_per_s / units.GB:g} GB/s), {per_layer_ms:.2f} ms per layer")
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "fi_check", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false}
with grading.checks():
    grading.check("17-7", "f-kv", kv_gb, seed=SEED)
    grading.check("17-7", "g-nvlink", nvlink_ms, seed=SEED)
    grading.check("17-7", "h-rdma", rdma_ms, seed=SEED)
    grading.check("17-7", "i-per-layer", per_layer_ms, seed=SEED)

# %% [markdown] nbgrader={"grade": true, "grade_id": "fi_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# ### BEGIN SOLUTION
# 2.62 GB of KV takes ~3 ms over NVLink and ~52 ms over 400 Gb/s (50 GB/s) RDMA. Next to a
# first-token time of several hundred milliseconds that is affordable, and shipping each layer's
# 0.66 ms slice as soon as the prefill finishes that layer hides most of it. The same
# arithmetic says when not to split: small models and short prompts gain nothing that chunked
# prefill on a shared pool was not already giving.
# ### END SOLUTION
