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
# the decode pool in output tokens per second. Requests arrive at rate $\lambda$ with mean
# prompt $\bar n$ and mean output $\bar G$ tokens; one GPU group sustains $\mu_p$ prompt
# tokens/s of prefill or $\mu_d$ output tokens/s of decode. The two sizes are two independent
# divisions, each rounded up to whole groups (17 §8, as in the section notebook):
#
# $$g_\text{prefill} = \left\lceil \frac{\lambda \bar n}{\mu_p} \right\rceil, \qquad
# g_\text{decode} = \left\lceil \frac{\lambda \bar G}{\mu_d} \right\rceil .$$
#
# The price is a network hop: the prefill pool ships each request's KV cache, $L$ tokens at
# $k$ bytes each, to a decode worker over a link of bandwidth $\beta_\text{link}$:
#
# $$T_\text{ship} = \frac{L\,k}{\beta_\text{link}}, \qquad
# k = 2\, n_\text{layers}\, n_\text{kv}\, d_\text{head} \cdot 2\ \text{B (BF16; 17 §4)}.$$
#
# The given data print $k$ and $n_\text{layers}$ for the model.
#
# 1. **(a)** The prompt tokens per second the prefill pool must absorb, $\lambda \bar n$, and
#    **(b)** the prefill groups needed.
# 2. **(c)** The output tokens per second the decode pool must produce, $\lambda \bar G$, and
#    **(d)** the decode groups needed; **(e)** prefill groups per decode group.
# 3. **(f)** The KV one long request ships, $L k$, in GB; the transfer time over **(g)** NVLink,
#    one direction, and **(h)** RDMA, in ms; **(i)** one layer's share of the RDMA transfer,
#    $T_\text{ship} / n_\text{layers}$, in ms (engines ship layer by layer, overlapped with the
#    prefill of later layers).
#
# **Link rates.** A transfer moves the KV one way, from a prefill GPU to a decode GPU, so it
# runs at a link's per-direction rate: check what each link figure in the given data counts.
# The RDMA link is a NIC, quoted per direction in gigabits per second. GB and GB/s are decimal
# ($10^9$).
#
# **ITL target.** 17 §3 asks that tokens keep coming "a few tens of ms" apart; the companion
# reads that as the ITL target the given data print, the yardstick for the hop below (no part
# asks for it).
#
# Your given data come from `grading.params("17-7", SEED)`. Seed 0 is the chapter's own data
# (100 req/s, 2,000-token prompts, 250-token outputs, 10,000 and 2,500 tok/s per group, one
# 8,000-token request of the 70B shape, the H100 SXM's NVLink, 400 Gb/s RDMA); on a course hub
# you get a seed of your own, from your user name.

# %% nbgrader={"grade": false, "grade_id": "given", "locked": true, "schema_version": 3, "solution": false, "task": false}
import math

from companion import grading, units

SEED = grading.student_seed()
given = grading.params("17-7", SEED)
print(f"traffic: lambda = {given['request_rate_per_s']} req/s, mean prompt n = "
      f"{given['mean_prompt_tokens']:,} tokens, mean output G = {given['mean_output_tokens']:,} "
      f"tokens")
print(f"capacity per GPU group: prefill mu_p = {given['prefill_tok_per_s_per_group']:,} tok/s, "
      f"decode mu_d = {given['decode_tok_per_s_per_group']:,} tok/s")
print(f"KV hop: {given['model'].name}, n_layers = {given['n_layers']}, "
      f"k = {given['kv_bytes_per_token']:,} B per token, a request of L = "
      f"{given['context_tokens']:,} tokens")
print(f"links: NVLink {given['nvlink_spec_bytes_per_s'] / units.GB:g} GB/s as the data sheet "
      f"gives it (both directions added); RDMA {given['rdma_gbit_per_s']} Gb/s per direction")
print(f"ITL target (the companion's choice for 17 §3's 'a few tens of ms'): "
      f"{given['itl_target_s'] / units.ms:g} ms")

# %% [markdown]
# ## (a)-(e) The two pools
#
# Set `prompt_demand`, `prefill_groups`, `output_demand`, `decode_groups` and `pool_ratio`.
#
# **Then explain**, in two or three sentences in the cell under the check: why is each pool
# sized by a division of its own, and what change in the traffic moves the ratio (e), and
# which way?

# %% nbgrader={"grade": false, "grade_id": "ae_answer", "locked": false, "schema_version": 3, "solution": true, "task": false} tags=["raises-exception"]
prompt_demand = prefill_groups = output_demand = decode_groups = pool_ratio = None
# YOUR CODE HERE

# %% nbgrader={"grade": true, "grade_id": "ae_check", "locked": true, "points": 7, "schema_version": 3, "solution": false, "task": false} tags=["raises-exception"]
with grading.checks():
    grading.check("17-7", "a-prompt-demand", prompt_demand, seed=SEED)
    grading.check("17-7", "b-prefill-groups", prefill_groups, seed=SEED)
    grading.check("17-7", "c-output-demand", output_demand, seed=SEED)
    grading.check("17-7", "d-decode-groups", decode_groups, seed=SEED)
    grading.check("17-7", "e-ratio", pool_ratio, seed=SEED)

# %% [markdown] nbgrader={"grade": true, "grade_id": "ae_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# YOUR ANSWER HERE

# %% [markdown]
# ## (f)-(i) The KV hop
#
# Set `kv_gb`, `nvlink_ms`, `rdma_ms` and `per_layer_ms`.
#
# **Then explain**, in four or five sentences in the cell under the check: why is the RDMA hop
# so much slower than the NVLink one? The prefill GPU streams the first token, so the hop holds
# back the second: shipped whole after the prefill, how does (h) compare with the given ITL
# target, and why does shipping layer by layer, overlapped with the prefill, leave only (i)
# after it? (Compare the hop with the prefill that produced the cache.)

# %% nbgrader={"grade": false, "grade_id": "fi_answer", "locked": false, "schema_version": 3, "solution": true, "task": false} tags=["raises-exception"]
kv_gb = nvlink_ms = rdma_ms = per_layer_ms = None
# YOUR CODE HERE

# %% nbgrader={"grade": true, "grade_id": "fi_check", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false} tags=["raises-exception"]
with grading.checks():
    grading.check("17-7", "f-kv", kv_gb, seed=SEED)
    grading.check("17-7", "g-nvlink", nvlink_ms, seed=SEED)
    grading.check("17-7", "h-rdma", rdma_ms, seed=SEED)
    grading.check("17-7", "i-per-layer", per_layer_ms, seed=SEED)

# %% [markdown] nbgrader={"grade": true, "grade_id": "fi_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# YOUR ANSWER HERE
