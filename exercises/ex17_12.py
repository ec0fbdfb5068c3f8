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
# # Exercise 17-12 · What does PagedAttention buy, in memory and in tokens per second?
#
# *Calculation, 17 §5.* Before paging, a sequence's KV cache had to be contiguous, so each
# request reserved room for the longest sequence it might become, $L_\text{max}$ tokens at $k$
# bytes each (17 §4's $k$; the given data print it). PagedAttention hands out blocks of $p$
# token slots on demand instead; a sequence wastes at most the empty slots of its last block,
# and sequences sharing a prefix of $n_s$ tokens point at the same blocks. A request that holds
# only $L_\text{turn}$ tokens leaves $1 - L_\text{turn}/L_\text{max}$ of its reservation empty.
#
# Empty reservations are never read, so both systems stream only live KV per step: paging
# changes the batch $b$, the number of sequences that ride along on every read of the weights.
# Of the card's memory $C$, the weights take $D_w$ and the runtime a reserve $M_u$ (as in
# 17.4), which leaves $M_{KV} = C - D_w - M_u$ for the cache.
#
# Part (a) reserves the model's maximum length $L_\text{max}$, as 17 §5's fragmentation
# example does; (d) reserves $L_\text{res} \le L_\text{max}$ tokens, the worst-case context
# 17 §4 packs the card with and 17 §5 reuses for its naive batch. With $L$ live tokens per
# sequence (17 §5):
#
# $$b_\text{res} = \left\lfloor \frac{M_{KV}}{L_\text{res}\,k} \right\rfloor, \quad
# b_\text{paged} = \left\lfloor \frac{M_{KV}}{L\,k} \right\rfloor, \quad
# T_\text{step}(b) = \frac{D_w + b\,L\,k}{\beta}, \quad
# \text{throughput} = \frac{b}{T_\text{step}(b)} .$$
#
# 1. **(a)** The KV a worst-case allocator reserves per request, $L_\text{max}\,k$, in GB, and
#    **(b)** the share of it a short chat turn leaves empty, in %.
# 2. **(c)** The worst-case paged waste per sequence (a last block holding a single token),
#    in MB.
# 3. The decode throughput **(d)** with reservations of $L_\text{res}$ tokens (not (a)'s
#    $L_\text{max}$) and **(e)** paged (sequences dividing $M_{KV}$ by their live bytes, no
#    block rounding); **(f)** the throughput gain; **(g)** the paged batch's decode step (its
#    ITL), in ms.
# 4. Another service, whose $n_\text{users}$ users all start from one system prompt of $n_s$
#    tokens (its sequences are not (d)'s chats): the prompt's KV **(h)** when every user
#    stores a copy and **(i)** with prefix sharing, in GB.
#
# Sizes are decimal ($10^9$ bytes to the GB, $10^6$ to the MB). Your given data come from
# `grading.params("17-12", SEED)`. Seed 0 is the chapter's own data (8B on an H100 SXM:
# max_len 8,192, a 300-token turn, 16-token blocks, 600 live tokens against 17 §4's 8,000-token
# reservations, a 2,000-token system prompt for 100 users); on a course hub
# you get a seed of your own, from your user name.

# %% nbgrader={"grade": false, "grade_id": "given", "locked": true, "schema_version": 3, "solution": false, "task": false}
from companion import grading, units

SEED = grading.student_seed()
given = grading.params("17-12", SEED)
hw, D_w, k = given["hardware"], given["weight_bytes"], given["kv_bytes_per_token"]
print(f"card: {hw.name}, C = {hw.mem_bytes / units.GB:g} GB at beta = "
      f"{hw.mem_bw_bytes_per_s / 1e12:g} TB/s; reserve M_u = "
      f"{given['reserve_bytes'] / units.GB:g} GB")
print(f"model: {given['model'].name}: weights D_w = {D_w / units.GB:g} GB, k = {k:,} B per token")
print(f"L_max = {given['max_len_tokens']:,}; chat turn L_turn = {given['used_tokens']} tokens; "
      f"blocks of p = {given['block_tokens']} tokens")
print(f"L = {given['live_tokens']} live tokens per sequence vs reservations of L_res = "
      f"{given['reservation_tokens']:,}; a prefix of n_s = {given['prefix_tokens']:,} tokens "
      f"shared by n_users = {given['users']}")

# %% [markdown]
# ## (a)-(c) Where the memory went
#
# Set `reserved_gb`, `waste_pct` and `worst_paged_mb`.

# %% nbgrader={"grade": false, "grade_id": "ac_answer", "locked": false, "schema_version": 3, "solution": true, "task": false} tags=["raises-exception"]
reserved_gb = waste_pct = worst_paged_mb = None
# YOUR CODE HERE

# %% nbgrader={"grade": true, "grade_id": "ac_check", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false} tags=["raises-exception"]
with grading.checks():
    grading.check("17-12", "a-reserved", reserved_gb, seed=SEED)
    grading.check("17-12", "b-waste", waste_pct, seed=SEED)
    grading.check("17-12", "c-worst-paged", worst_paged_mb, seed=SEED)

# %% [markdown]
# ## (d)-(g) What the batch buys
#
# Set `naive_tok_s`, `paged_tok_s`, `gain` and `paged_step_ms`.

# %% nbgrader={"grade": false, "grade_id": "dg_answer", "locked": false, "schema_version": 3, "solution": true, "task": false} tags=["raises-exception"]
naive_tok_s = paged_tok_s = gain = paged_step_ms = None
# YOUR CODE HERE

# %% nbgrader={"grade": true, "grade_id": "dg_check", "locked": true, "points": 5, "schema_version": 3, "solution": false, "task": false} tags=["raises-exception"]
with grading.checks():
    grading.check("17-12", "d-naive-tok-s", naive_tok_s, seed=SEED)
    grading.check("17-12", "e-paged-tok-s", paged_tok_s, seed=SEED)
    grading.check("17-12", "f-gain", gain, seed=SEED)
    grading.check("17-12", "g-itl-paged", paged_step_ms, seed=SEED)

# %% [markdown]
# **In words (not graded).** Why does a short turn waste most of a worst-case reservation but
# little of a paged one, why does the throughput grow less than the batch, and how far can you
# trust the paged step's price at this batch?

# %% [markdown] nbgrader={"grade": true, "grade_id": "ag_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# YOUR ANSWER HERE

# %% [markdown]
# ## (h), (i) One shared system prompt
#
# Set `prefix_naive_gb` and `prefix_shared_gb`.

# %% nbgrader={"grade": false, "grade_id": "hi_answer", "locked": false, "schema_version": 3, "solution": true, "task": false} tags=["raises-exception"]
prefix_naive_gb = prefix_shared_gb = None
# YOUR CODE HERE

# %% nbgrader={"grade": true, "grade_id": "hi_check", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false} tags=["raises-exception"]
with grading.checks():
    grading.check("17-12", "h-prefix-naive", prefix_naive_gb, seed=SEED)
    grading.check("17-12", "i-prefix-shared", prefix_shared_gb, seed=SEED)
