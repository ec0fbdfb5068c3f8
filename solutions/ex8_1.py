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
# # Exercise 8-1 · How does the read volume change as the batch grows?
#
# *Calculation, section 8.2.1.* In one decode round every request in the batch shares a single
# read of the matrix weights $D_w$, but each request still reads its own context's KV,
# $L k$ bytes ($k$: KV bytes per token, summed over layers; 8.1.2). Per output token the round
# therefore reads
#
# $$d(b, L) = \frac{D_w}{b} + L k .$$
#
# 1. **(a)** Compute the read volume per output token, in GiB ($2^{30}$ bytes), for the short
#    and the long context at batch 1, 4, 16 and 64.
# 2. **(b)** For each context, find the smallest whole batch $b_\text{KV}$ at which the KV read
#    volume reaches or exceeds the amortised weight read ($L k \ge D_w / b$).
# 3. **(c)** With the KV budget, block size $p$ and output length $G$ given below, how many
#    independent requests fit, each reserving the KV it holds at the end of generation (8.1.2)?
# 4. **(d)** For each context, take the batch of (c), the most requests that fit, and find what
#    fraction of $d(b, L)$ is the weight read $D_w / b$ (a number between 0 and 1). Does the
#    capacity stop the batch before it reaches $b_\text{KV}$?
#
# Give GiB values and fractions to at least 3 significant figures (they are checked to within
# 0.5%); batches and request counts are whole numbers. Key `b_kv`, `fits`, `weight_fraction`
# and `stops` by context length, `short` or `long_` (the variables of the given-data cell).
# $d(b, L)$ counts bytes, not time: in Experiment 8-1 a round's time barely follows its bytes
# (8.2.1), because most of a small batch's round is fixed overhead.
#
# Your given data come from `grading.params("8-1", SEED)`. Seed 0 is the chapter's own data;
# on a course hub you get a seed of your own, from your user name. Other seeds may give a model
# too large for one card (the 70B shape's weights alone exceed the chapter's 96 GB card): take
# it as served by an instance of several cards whose KV budget is the one given; no part
# depends on the card.

# %% nbgrader={"grade": false, "grade_id": "given", "locked": true, "schema_version": 3, "solution": false, "task": false}
from companion import calc, grading, units

SEED = grading.student_seed()
given = grading.params("8-1", SEED)
short, long_ = given["contexts"]
print(f"model: {given['model'].name}")
print(f"D_w = {given['weight_bytes']:,.0f} B, k = {given['kv_bytes_per_token'] / units.KiB:g} KiB")
print(f"contexts: short {short} tokens, long {long_} tokens; batches {given['batches']}")
print(f"KV budget {given['kv_budget_bytes'] / units.GiB:g} GiB, p = {given['block_tokens']} tokens "
      f"per block, G = {given['output_tokens']} output tokens")

# %% [markdown]
# ## (a) Read volume per output token
#
# Fill the dictionary `reads` with the eight values in GiB, keyed `(context, batch)`, for
# example `reads[(short, 1)]`. Then, in the cell under the check: how does batching change the
# read per output token for each context, in GiB saved and as a ratio?

# %% nbgrader={"grade": false, "grade_id": "a_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
reads = {}
### BEGIN SOLUTION
from companion.display import tex
import math

from companion import display


D_w, k, GiB = given["weight_bytes"], given["kv_bytes_per_token"], units.GiB
rows = []
for L in (short, long_):
    kv_gib = L * k / GiB                                  # L k, the same at every batch
    for b in given["batches"]:
        weight_gib = D_w / b / GiB                        # D_w / b, shared by the batch
        reads[(L, b)] = weight_gib + kv_gib
        rows.append(f"| {L:,} | {b} | {weight_gib:.4f} | {kv_gib:.4f} | {reads[(L, b)]:.4f} |")
b_lo, b_hi = given["batches"][0], given["batches"][-1]
cut = {L: reads[(L, b_lo)] / reads[(L, b_hi)] for L in (short, long_)}
saved = (D_w / b_lo - D_w / b_hi) / GiB
display.md(rf"""
$d(b, L) = \dfrac{{D_w}}{{b}} + L\,k$ with $D_w = {tex(D_w, ',.0f')}$ B $= {D_w / GiB:.4f}$ GiB
and $k = {tex(k)}$ B. The KV term does not depend on the batch:
$L k = {tex(short)} \times {tex(k)}$ B $= {short * k / GiB:.4f}$ GiB for the short context and
${tex(long_)} \times {tex(k)}$ B $= {long_ * k / GiB:.4f}$ GiB for the long one.

| $L$ (tokens) | $b$ | $D_w / b$ (GiB) | $L k$ (GiB) | $d(b, L)$ (GiB) |
|---:|---:|---:|---:|---:|
""" + "\n".join(rows) + f"""

From batch {b_lo} to {b_hi} both contexts save the same {saved:.4f} GiB per output token, the
weight term $D_w (1/{b_lo} - 1/{b_hi})$; only the ratio differs, because the KV term stays:
the read falls {cut[short]:.1f}x for the short context and {cut[long_]:.1f}x for the long one.""")
for (L, b), value in reads.items():   # check against the companion's 8.2.1 formula
    assert math.isclose(value * GiB, calc.read_bytes_per_output_token(D_w, b, L, k),
                        rel_tol=1e-12)
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "a_check", "locked": true, "points": 8, "schema_version": 3, "solution": false, "task": false}
with grading.checks():
    for L, name in ((short, "short"), (long_, "long")):
        for b in given["batches"]:
            grading.check("8-1", f"a-{name}-b{b}", reads, key=(L, b), seed=SEED)

# %% [markdown] nbgrader={"grade": true, "grade_id": "a_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# ### BEGIN SOLUTION
# The weight term halves every time the batch doubles, while the KV term $L k$ stays put, so
# the total falls towards the KV line and never below it (the table above). The bytes saved
# per output token are the same for both contexts, since only the weight term shrinks; the
# ratio is not. With the short context the weight term dominates at batch 1 and batching cuts
# the read many times over; with the long context the KV term is larger, so the same saving is
# a smaller share of the read, and at large batch the read is mostly the request's own KV.
# ### END SOLUTION

# %% [markdown]
# ## (b) The batch where KV reads catch up, and (c) the capacity

# %% nbgrader={"grade": false, "grade_id": "bc_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
b_kv = {}
fits = {}
### BEGIN SOLUTION
p, G, budget = given["block_tokens"], given["output_tokens"], given["kv_budget_bytes"]
lines = []
for L in (short, long_):
    # (b) L k >= D_w / b  <=>  b >= D_w / (L k): the smallest whole batch is the ceiling
    ratio = D_w / (L * k)
    b_kv[L] = math.ceil(ratio)
    # (c) held tokens, rounded up to whole blocks, at k bytes per slot
    held = L + G - 1
    slots = math.ceil(held / p) * p
    per_request = slots * k
    fits[L] = int(budget // per_request)
    lines.append(rf"""
**$L = {tex(L)}$.** $b_\text{{KV}} = \left\lceil \dfrac{{D_w}}{{L k}} \right\rceil
= \left\lceil \dfrac{{{tex(D_w, ',.0f')}}}{{{tex(L)} \times {tex(k)}}} \right\rceil
= \lceil {ratio:.3f} \rceil = {b_kv[L]}$ requests.
A request holds $L + G - 1 = {tex(L)} + {G} - 1 = {tex(held)}$ tokens, that is
$p \lceil {tex(held)} / p \rceil = {tex(slots)}$ slots with $p = {p}$, and
${tex(slots)} \times {tex(k)}$ B $= {tex(per_request / units.MiB, ',g')}$ MiB. The budget holds
$\left\lfloor {tex(budget / units.MiB, ',.0f')} \text{{ MiB}} / {tex(per_request / units.MiB, ',g')}
\text{{ MiB}} \right\rfloor = {fits[L]}$ such requests.""")
display.md("\n".join(lines))
for L in (short, long_):   # check against the companion's 8.2.1 and 8.1.2 formulas
    assert b_kv[L] == calc.kv_crossover_batch(D_w, L, k)
    assert fits[L] == calc.max_concurrent(budget, given["model"], L, G, block_tokens=p)
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "bc_check", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false}
with grading.checks():
    for L, name in ((short, "short"), (long_, "long")):
        grading.check("8-1", f"b-{name}", b_kv, key=L, seed=SEED)
        grading.check("8-1", f"c-{name}", fits, key=L, seed=SEED)

# %% [markdown]
# ## (d) Which limit binds first?
#
# Fill `weight_fraction` with $\dfrac{D_w / b}{d(b, L)}$ at $b$ = your answer to (c), and
# `stops` with `True` or `False`: does the capacity of (c) stop the batch below $b_\text{KV}$?
# Both keyed by context. Then, in the cell under the check: what does the fraction say about
# what a larger batch could still save?

# %% nbgrader={"grade": false, "grade_id": "d_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
weight_fraction = {}
stops = {}
### BEGIN SOLUTION
lines = []
for L in (short, long_):
    b = fits[L]
    weight_part, kv_part = D_w / b, L * k
    weight_fraction[L] = weight_part / (weight_part + kv_part)
    side = "below" if b < b_kv[L] else "not below"
    lines.append(
        rf"- $L = {tex(L)}$, $b = {b}$: $\dfrac{{D_w / b}}{{D_w / b + L k}} = "
        rf"\dfrac{{{weight_part / GiB:.4f}}}{{{weight_part / GiB:.4f} + {kv_part / GiB:.4f}}}"
        rf" = {weight_fraction[L]:.4f}$ (both terms in GiB). The capacity "
        rf"{b} is {side} "
        rf"$b_\text{{KV}} = {b_kv[L]}$, so the weight read is "
        + ("still the larger part." if weight_fraction[L] > 0.5 else "no longer the larger part.")
        + f" So `stops[{'short' if L == short else 'long_'}] = {b < b_kv[L]}`. No batch, however"
        rf" large, removes more than this fraction of the read; doubling $b$ would remove"
        rf" {weight_fraction[L] / 2:.1%}, one more request only"
        rf" {weight_fraction[L] / (b + 1):.1%}.")
    stops[L] = b < b_kv[L]
display.md("\n".join(lines))
for L in (short, long_):   # above one half exactly when the capacity stops short of b_KV
    assert (weight_fraction[L] > 0.5) == (fits[L] < b_kv[L])
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "d_check", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false}
with grading.checks():
    for L, name in ((short, "short"), (long_, "long")):
        grading.check("8-1", f"d-{name}", weight_fraction, key=L, seed=SEED)
        grading.check("8-1", f"d-stops-{name}", stops, key=L, seed=SEED)

# %% [markdown] nbgrader={"grade": true, "grade_id": "d_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# ### BEGIN SOLUTION
# A fraction above one half means the capacity is below $b_\text{KV}$: the weight term
# $D_w / b$ is still the larger part of $d(b, L)$ when memory stops the batch, so the batch is
# limited by memory, not by the read volume. The fraction is also the most that any larger
# batch could remove from the read per output token, since only the weight term shrinks with
# $b$. Getting much of it back takes far more requests: doubling the batch removes half the
# fraction, which memory forbids, while one more request removes only the fraction divided by
# $b + 1$ (the numbers above). Where the fraction is at or below one half the KV reads have
# caught up before memory runs out. A longer context lowers both numbers: fewer requests fit,
# and the KV term catches up sooner.
# ### END SOLUTION
