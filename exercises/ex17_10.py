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
# # Exercise 17-10 · Which batch size should we run?
#
# *Calculation, 17 §5 and the interview questions.* The batch $b$ is not a free parameter:
# two limits pin it. Every added sequence adds its live KV, $L$ tokens at $k$ bytes each, to
# each decode step, which also streams the $D_w$ weight bytes, at bandwidth $\beta$ (17 §5):
#
# $$T_\text{step}(b) = \frac{D_w + b\,L\,k}{\beta},$$
#
# so an inter-token latency target $\text{ITL}_\text{target}$ caps the batch from above:
# $T_\text{step}(b) \le \text{ITL}_\text{target}$. The KV memory caps it too. Of the card's
# memory $C$, the weights take $D_w$ and the runtime a reserve $M_u$ (activations and other
# buffers, as in 17.4), which leaves $M_{KV} = C - D_w - M_u$ for the cache. A worst-case
# allocator charges every sequence its full reservation of $L_\text{res}$ tokens; a paged one
# only the $L$ live tokens (the chapter divides by the live bytes alone, with no block
# rounding, and so do we):
#
# $$b_\text{res} = \left\lfloor \frac{M_{KV}}{L_\text{res}\,k} \right\rfloor, \qquad
# b_\text{paged} = \left\lfloor \frac{M_{KV}}{L\,k} \right\rfloor .$$
#
# 1. **(a)** The KV space $M_{KV}$, in GB.
# 2. **(b)** The batch cap with worst-case reservations; **(c)** with paged KV.
# 3. **(d)** The decode step at the paged cap, in ms.
# 4. **(e)** The largest batch whose step meets the ITL target.
# 5. **(f)** With paged KV, which limit binds: `"ITL target"` or `"KV memory"`?
#    **(g)** The decode throughput $b / T_\text{step}(b)$ at the batch you would run (paged
#    KV), tok/s.
#    **(h)** And with worst-case reservations, which limit binds?
#
# Sizes are decimal ($10^9$ bytes to the GB). Your given data come from
# `grading.params("17-10", SEED)`. Seed 0 is the chapter's own data (the 8B on an H100 SXM,
# 600 live tokens per sequence, 8,000-token reservations, a 4 GB reserve) with a 20 ms ITL
# target of ours (the chapter asks for "a few tens of ms"); on a course hub
# you get a seed of your own, from your user name.

# %% nbgrader={"grade": false, "grade_id": "given", "locked": true, "schema_version": 3, "solution": false, "task": false}
import math

from companion import grading, units

SEED = grading.student_seed()
given = grading.params("17-10", SEED)
hw = given["hardware"]
D_w, k = given["weight_bytes"], given["kv_bytes_per_token"]
L, L_res = given["live_tokens"], given["reservation_tokens"]
itl_target = given["itl_target_s"]
print(f"card: {hw.name}, C = {hw.mem_bytes / units.GB:g} GB at beta = "
      f"{hw.mem_bw_bytes_per_s / 1e12:g} TB/s; reserve M_u = "
      f"{given['reserve_bytes'] / units.GB:g} GB")
print(f"model: {given['model'].name}: weights D_w = {D_w / units.GB:g} GB, k = {k:,} B per token")
print(f"L = {L:,} live tokens per sequence; worst-case reservation L_res = {L_res:,} tokens; "
      f"ITL target {itl_target / units.ms:g} ms")

# %% [markdown]
# ## (a)-(d) The memory caps
#
# Set `free_gb`, `cap_reserved`, `cap_paged` and `step_at_cap_ms`.

# %% nbgrader={"grade": false, "grade_id": "ad_answer", "locked": false, "schema_version": 3, "solution": true, "task": false} tags=["raises-exception"]
free_gb = cap_reserved = cap_paged = step_at_cap_ms = None
# YOUR CODE HERE

# %% nbgrader={"grade": true, "grade_id": "ad_check", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false} tags=["raises-exception"]
with grading.checks():
    grading.check("17-10", "a-free", free_gb, seed=SEED)
    grading.check("17-10", "b-cap-reserved", cap_reserved, seed=SEED)
    grading.check("17-10", "c-cap-paged", cap_paged, seed=SEED)
    grading.check("17-10", "d-step-at-cap", step_at_cap_ms, seed=SEED)

# %% [markdown]
# ## (e)-(h) The ITL cap, and which one binds
#
# Set `itl_batch`, `binds_paged`, `throughput` and `binds_reserved`.

# %% nbgrader={"grade": false, "grade_id": "eh_answer", "locked": false, "schema_version": 3, "solution": true, "task": false} tags=["raises-exception"]
itl_batch = binds_paged = throughput = binds_reserved = None
# YOUR CODE HERE

# %% nbgrader={"grade": true, "grade_id": "eh_check", "locked": true, "points": 5, "schema_version": 3, "solution": false, "task": false} tags=["raises-exception"]
with grading.checks():
    grading.check("17-10", "e-itl-batch", itl_batch, seed=SEED)
    grading.check("17-10", "f-binds-paged", binds_paged, seed=SEED)
    grading.check("17-10", "g-throughput", throughput, seed=SEED)
    grading.check("17-10", "h-binds-reserved", binds_reserved, seed=SEED)

# %% [markdown]
# **In words (not graded).** Why does paging move the binding limit from KV memory to the ITL
# target at the chapter's data, how would you pick the batch on a real service, and how far can
# you trust the step's price at that batch?

# %% [markdown] nbgrader={"grade": true, "grade_id": "eh_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# YOUR ANSWER HERE
