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

# %% nbgrader={"grade": false, "grade_id": "ac_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
reserved_gb = waste_pct = worst_paged_mb = None
### BEGIN SOLUTION
from companion.display import tex
import math

from companion import calc
from companion.display import md


L_max, L_turn, p = given["max_len_tokens"], given["used_tokens"], given["block_tokens"]
# step 1: the reservation, L_max k, and the part of it one short turn fills
reserved = L_max * k
used = L_turn * k
reserved_gb = reserved / units.GB
waste_pct = 100 * (1 - used / reserved)
# step 2: paged, at most the last block's p - 1 empty slots are wasted
worst_paged = (p - 1) * k
worst_paged_mb = worst_paged / units.MB
whole_block = p * k                         # 17 §5's bound: a whole block

md(rf"""
**Reservation.** $L_\text{{max}}\,k = {tex(L_max)} \times {tex(k)}\ \text{{B}} = {reserved_gb:.3f}\ \text{{GB}}$.

**A short turn's share.** It fills $L_\text{{turn}}\,k = {tex(L_turn)} \times {tex(k)}\ \text{{B}} = {used / units.MB:.1f}\ \text{{MB}}$, so
$1 - L_\text{{turn}} / L_\text{{max}} = 1 - {tex(L_turn)} / {tex(L_max)} = {waste_pct:.1f}\%$ of the reservation stays empty.

**Paged worst case.** A last block holding one token leaves $p - 1$ slots empty:
$(p - 1)\,k = {p - 1} \times {tex(k)}\ \text{{B}} = {worst_paged_mb:.2f}\ \text{{MB}}$.
17 §5 bounds it by one whole block, $p\,k = {whole_block / units.MB:.2f}$ MB; the grader accepts that reading too.
""")
# check: the companion's 17 §5 fragmentation arithmetic
m = given["model"]
w = calc.reservation_waste(m, L_turn, max_len_tokens=L_max)
assert math.isclose(w["reserved_bytes"], reserved, rel_tol=1e-12)
assert math.isclose(100 * w["wasted_fraction"], waste_pct, rel_tol=1e-9)
assert calc.paged_worst_waste(m, p)["bytes"] == worst_paged
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "ac_check", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
with grading.checks():
    grading.check("17-12", "a-reserved", reserved_gb, seed=SEED)
    grading.check("17-12", "b-waste", waste_pct, seed=SEED)
    grading.check("17-12", "c-worst-paged", worst_paged_mb, seed=SEED)

# %% [markdown]
# ## (d)-(g) What the batch buys
#
# Set `naive_tok_s`, `paged_tok_s`, `gain` and `paged_step_ms`.

# %% nbgrader={"grade": false, "grade_id": "dg_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
naive_tok_s = paged_tok_s = gain = paged_step_ms = None
### BEGIN SOLUTION
beta = hw.mem_bw_bytes_per_s
L, L_res = given["live_tokens"], given["reservation_tokens"]
assert L_res <= L_max                       # (d)'s reservation, 17 §4's worst-case context
# step 1: the KV space, and the batch each allocator fits into it
free = hw.mem_bytes - D_w - given["reserve_bytes"]
live = L * k
naive_batch = math.floor(free / (L_res * k))
paged_batch = math.floor(free / live)


def step_s(batch):
    """t_step(b) = (D_w + b L k) / beta: the weights plus every sequence's live KV."""
    return (D_w + batch * live) / beta


# step 2: each batch's step, and the tokens per second it gives
naive_step, paged_step = step_s(naive_batch), step_s(paged_batch)
naive_tok_s = naive_batch / naive_step
paged_tok_s = paged_batch / paged_step
gain = paged_tok_s / naive_tok_s
paged_step_ms = paged_step / units.ms
# step 3 (not graded): the same batches priced kernel by kernel, and where the weight
# products turn compute-bound (17 §2's ridge for this model)
kp = calc.decode_step_per_kernel(m, hw, paged_batch, live_tokens=L)
kn = calc.decode_step_per_kernel(m, hw, naive_batch, live_tokens=L)
turn = paged_batch * kp["weights_read_s"] / kp["weights_compute_s"]


def row(label, b, t):
    return (rf"\text{{{label}:}}\quad \frac{{({D_w / units.GB:g} + {tex(b)} \times "
            rf"{live / units.GB:.6f})\ \text{{GB}}}}{{{tex(beta / units.GB, ',.0f')}\ "
            rf"\text{{GB/s}}}} = {t / units.ms:.2f}\ \text{{ms}} \ \Rightarrow\ "
            rf"\frac{{{tex(b)}}}{{{t:.5f}\ \text{{s}}}} = {tex(b / t, ',.0f')}\ "
            rf"\text{{tok/s}}")


md(rf"""
**KV space.** $M_{{KV}} = {hw.mem_bytes / units.GB:g} - {D_w / units.GB:g} - {given['reserve_bytes'] / units.GB:g} = {free / units.GB:g}\ \text{{GB}}$.

**Batches.**
$b_\text{{res}} = \lfloor {free / units.GB:g}\ \text{{GB}} / ({tex(L_res)} \times {tex(k)}\ \text{{B}}) \rfloor = \lfloor {free / (L_res * k):.2f} \rfloor = {tex(naive_batch)}$;
$b_\text{{paged}} = \lfloor {free / units.GB:g}\ \text{{GB}} / ({tex(L)} \times {tex(k)}\ \text{{B}}) \rfloor = \lfloor {free / live:.2f} \rfloor = {tex(paged_batch)}$.

**Steps and throughput.** Both stream the weights plus $b$ sequences of live KV:

$${row('reserved', naive_batch, naive_step)}$$

$${row('paged', paged_batch, paged_step)}$$

**Gain.** ${tex(paged_tok_s, ',.0f')} / {tex(naive_tok_s, ',.0f')} = {gain:.2f}\times$ the throughput from
${paged_batch / naive_batch:.1f}\times$ the batch, while each step grows from
${naive_step / units.ms:.2f}$ to ${paged_step_ms:.2f}$ ms.

**Kernel by kernel.** The graded steps price each batch by its bytes alone. An engine runs the
weight products and attention one after the other, and past $b = {turn:.0f}$ (17 §2's ridge
for this card and model) the products are compute-bound even at full peak. Priced that way
(`calc.decode_step_per_kernel`), the paged step is
${kp['weights_s'] / units.ms:.1f} + {kp['attention_s'] / units.ms:.1f} = {kp['step_s'] / units.ms:.1f}$ ms
({kp['tokens_per_s']:,.0f} tok/s) against the graded {paged_step_ms:.1f} ms, and the gain is
${kp['tokens_per_s'] / kn['tokens_per_s']:.2f}\times$ rather than ${gain:.2f}\times$.
""")
# check: the companion's 17 §5 paging arithmetic (live bytes, no block rounding)
pg = calc.paged_batch_gain(m, hw, live_tokens=L, reservation_tokens=L_res, block_tokens=1,
                           reserve_bytes=given["reserve_bytes"])
assert (pg["naive"]["batch"], pg["paged"]["batch"]) == (naive_batch, paged_batch)
assert math.isclose(pg["throughput_gain"], gain, rel_tol=1e-9)
assert math.isclose(pg["paged"]["step_s"], paged_step, rel_tol=1e-9)
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "dg_check", "locked": true, "points": 5, "schema_version": 3, "solution": false, "task": false}
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
# ### BEGIN SOLUTION
# A worst-case reservation is almost all empty for a short turn, while paging wastes at most
# part of one block (derivation above). In the same KV space the batch grows by about
# $L_\text{res}/L$, yet throughput grows less: the bigger batch makes every step heavier,
# because each added sequence streams its own live KV next to the shared weight read, so the
# step (the ITL) lengthens too. Throughput and ITL trade against each other, which is why a
# serving config caps the batch. The step's price is the chapter's bytes-only one: once the
# batch passes the point where the weight products turn compute-bound (17 §2's ridge), it
# runs short, because the products and attention run as separate kernels whose times add
# (the kernel-by-kernel line above gives both at your seed).
# ### END SOLUTION

# %% [markdown]
# ## (h), (i) One shared system prompt
#
# Set `prefix_naive_gb` and `prefix_shared_gb`.

# %% nbgrader={"grade": false, "grade_id": "hi_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
prefix_naive_gb = prefix_shared_gb = None
### BEGIN SOLUTION
n_s, n_users = given["prefix_tokens"], given["users"]
# step 1: one copy of the prefix's KV; step 2: one per user without sharing
one_copy = n_s * k
prefix_shared_gb = one_copy / units.GB
prefix_naive_gb = n_users * one_copy / units.GB

md(rf"""
**Shared.** $n_s\,k = {tex(n_s)} \times {tex(k)}\ \text{{B}} = {prefix_shared_gb:.3f}\ \text{{GB}}$, held once.

**A copy per user.** $n_\text{{users}}\,n_s\,k = {n_users} \times {prefix_shared_gb:.3f}\ \text{{GB}} = {prefix_naive_gb:.1f}\ \text{{GB}}$.
""")
# check: the companion's 17 §5 prefix-sharing arithmetic
ps = calc.prefix_sharing_bytes(m, n_users, n_s)
assert math.isclose(ps["naive_bytes"] / units.GB, prefix_naive_gb, rel_tol=1e-12)
assert math.isclose(ps["shared_bytes"] / units.GB, prefix_shared_gb, rel_tol=1e-12)
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "hi_check", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
with grading.checks():
    grading.check("17-12", "h-prefix-naive", prefix_naive_gb, seed=SEED)
    grading.check("17-12", "i-prefix-shared", prefix_shared_gb, seed=SEED)
