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

# %% nbgrader={"grade": false, "grade_id": "ae_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
prompt_demand = prefill_groups = output_demand = decode_groups = pool_ratio = None
### BEGIN SOLUTION
from companion.display import tex
from companion import calc
from companion.display import md


lam, n_bar, G_bar = (given["request_rate_per_s"], given["mean_prompt_tokens"],
                     given["mean_output_tokens"])
mu_p, mu_d = given["prefill_tok_per_s_per_group"], given["decode_tok_per_s_per_group"]
# step 1: the prefill pool's demand, and the groups it takes (a pool needs whole groups)
prompt_demand = lam * n_bar
prefill_share = prompt_demand / mu_p
prefill_groups = math.ceil(prefill_share)
# step 2: the same for the decode pool
output_demand = lam * G_bar
decode_share = output_demand / mu_d
decode_groups = math.ceil(decode_share)
# step 3: the ratio of the two pools
pool_ratio = prefill_groups / decode_groups

md(rf"""
**Prefill pool.** Every request brings $\bar n$ prompt tokens, so the pool must absorb

$$\lambda\,\bar n = {tex(lam, 'g')}\ \text{{req/s}} \times {tex(n_bar)}\ \text{{tokens}}
= {tex(prompt_demand, ',.0f')}\ \text{{tok/s}},$$

$$g_\text{{prefill}} = \left\lceil \frac{{\lambda \bar n}}{{\mu_p}} \right\rceil
= \left\lceil \frac{{{tex(prompt_demand, ',.0f')}}}{{{tex(mu_p)}}} \right\rceil
= \lceil {prefill_share:.2f} \rceil = {prefill_groups}\ \text{{groups}}.$$

**Decode pool.** Every request leaves with $\bar G$ output tokens:

$$\lambda\,\bar G = {tex(lam, 'g')} \times {tex(G_bar)} = {tex(output_demand, ',.0f')}\ \text{{tok/s}},
\qquad g_\text{{decode}} = \left\lceil \frac{{{tex(output_demand, ',.0f')}}}{{{tex(mu_d)}}} \right\rceil
= \lceil {decode_share:.2f} \rceil = {decode_groups}\ \text{{groups}}.$$

**Ratio.** $g_\text{{prefill}} / g_\text{{decode}} = {prefill_groups} / {decode_groups} = {pool_ratio:.2f}$
prefill groups per decode group.
""")
# check: the companion's 17 §8 sizing gives the same pools
pools = calc.disaggregated_pools(lam, n_bar, G_bar, prefill_tok_per_s_per_group=mu_p,
                                 decode_tok_per_s_per_group=mu_d)
assert (pools["prefill_groups"], pools["decode_groups"]) == (prefill_groups, decode_groups)
assert math.isclose(pools["prefill_to_decode"], pool_ratio, rel_tol=1e-12)
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
# Each pool is sized by its own division (see the derivation above): prompt tokens over what
# one group prefills, output tokens over what one group decodes, each rounded up because a
# pool holds whole groups. The ratio is a property of the workload, not of the fleet: longer
# documents grow only $\lambda \bar n$ and so only the prefill pool, chattier sessions only
# $\lambda \bar G$ and the decode pool, and two pools can follow each shift on their own where
# a shared fleet cannot.
#
# *Look for:* (1) prefill is sized in prompt tokens per second, decode in output tokens per
# second, each against one group's rate; (2) both rounded up to whole groups; (3) the ratio
# follows the workload: longer prompts grow the prefill pool, longer outputs the decode pool;
# (4) separate pools can each follow their own shift.
# ### END SOLUTION

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

# %% nbgrader={"grade": false, "grade_id": "fi_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
kv_gb = nvlink_ms = rdma_ms = per_layer_ms = None
### BEGIN SOLUTION
L, k, n_layers = given["context_tokens"], given["kv_bytes_per_token"], given["n_layers"]
# step 1: the bytes one request ships, L k
kv_bytes = L * k
kv_gb = kv_bytes / units.GB
# step 2: the two links in bytes per second, one direction each (the NIC's rate is in bits)
nvlink_bytes_per_s = given["nvlink_spec_bytes_per_s"] / 2     # the spec figure adds both ways
rdma_bytes_per_s = given["rdma_gbit_per_s"] * 1e9 / 8
# step 3: T_ship = L k / beta_link over each, and one layer's slice of the RDMA transfer
nvlink_ms = kv_bytes / nvlink_bytes_per_s / units.ms
rdma_ms = kv_bytes / rdma_bytes_per_s / units.ms
per_layer_ms = rdma_ms / n_layers

md(rf"""
**The KV of one request.**
$L\,k = {tex(L)} \times {tex(k)}\ \text{{B}} = {kv_bytes / units.GB:.3f}\ \text{{GB}}$.

**The links, one direction each.** NVLink:
${given['nvlink_spec_bytes_per_s'] / units.GB:g}\ \text{{GB/s}} \div 2 = {nvlink_bytes_per_s / units.GB:g}\ \text{{GB/s}}$
(the spec figure adds both directions). RDMA:
${given['rdma_gbit_per_s']}\ \text{{Gb/s}} \div 8 = {rdma_bytes_per_s / units.GB:g}\ \text{{GB/s}}$.

**The transfer.**

$$T_\text{{ship}} = \frac{{L\,k}}{{\beta_\text{{link}}}}:\qquad
\text{{NVLink}}\ \frac{{{kv_bytes / units.GB:.3f}\ \text{{GB}}}}{{{nvlink_bytes_per_s / units.GB:g}\ \text{{GB/s}}}}
= {nvlink_ms:.2f}\ \text{{ms}}, \qquad
\text{{RDMA}}\ \frac{{{kv_bytes / units.GB:.3f}\ \text{{GB}}}}{{{rdma_bytes_per_s / units.GB:g}\ \text{{GB/s}}}}
= {rdma_ms:.1f}\ \text{{ms}}.$$

**One layer's slice.** Over RDMA,
$T_\text{{ship}} / n_\text{{layers}} = {rdma_ms:.1f}\ \text{{ms}} / {n_layers} = {per_layer_ms:.2f}\ \text{{ms}}$.
""")
# the prefill that produced the cache, on the GPUs one prompt is split over, at 17 §3's 50%
from companion.chapters import ch17

m, hw, tp = given["model"], given["hardware"], given["prefill_tp"]
prefill_ms = calc.prefill_compute_s(m, hw, L) / tp / units.ms
itl_ms = given["itl_target_s"] / units.ms
assert given["itl_target_s"] == ch17.ITL_TARGET_S
assert prefill_ms > rdma_ms          # the link keeps up: layer by layer, only a slice is left
md(rf"""
**Against the prefill, and where the time lands.** The prefill that produced these {L:,}
tokens takes $2NL / (0.5\,\pi\,p)$ = {prefill_ms:,.0f} ms, with $p$ = {tp} {hw.name}
GPU{'s' if tp > 1 else ''} sharing it at half of peak (17 §3): {prefill_ms / rdma_ms:.0f} times
the RDMA hop. The prefill
GPU streams token 1, so the hop holds back token 2: shipped whole after the prefill, that one
interval lasts at least {rdma_ms:.0f} ms against an ITL target of {itl_ms:.0f} ms. Since the link
carries each layer's KV faster than the prefill produces the next, shipping layer by layer
leaves only the last layer's slice, {per_layer_ms:.2f} ms, after the prefill.
""")
# check: the companion's 17 §8 transfer time, from the model's own KV size
m = given["model"]
assert math.isclose(calc.kv_bytes(m, L, block_tokens=1), kv_bytes, rel_tol=1e-12)
assert math.isclose(calc.kv_transfer_s(m, L, rdma_bytes_per_s) / units.ms, rdma_ms,
                    rel_tol=1e-12)
assert math.isclose(calc.kv_transfer_s(m, L, nvlink_bytes_per_s) / units.ms, nvlink_ms,
                    rel_tol=1e-12)
if given["seed"] == 0:       # 17 §8 divides by the spec figure: the erratum, worked both ways
    from companion import ledger

    printed = {e.id: e for e in ledger.entries()}
    both_ways_ms = kv_bytes / given["nvlink_spec_bytes_per_s"] / units.ms
    md(rf"""
**Erratum (17 §8, and §7's wire time).** 17 §8 prints about
{printed["17.8/kv-nvlink-ms"].printed} ms over NVLink: that is
${kv_bytes / units.GB:.2f}\ \text{{GB}} / {given['nvlink_spec_bytes_per_s'] / units.GB:g}\ \text{{GB/s}} = {both_ways_ms:.2f}\ \text{{ms}}$,
the spec figure used as if one direction carried all of it. One direction carries half:
${kv_bytes / units.GB:.2f} / {nvlink_bytes_per_s / units.GB:g} = {nvlink_ms:.2f}\ \text{{ms}}$,
twice the printed time and still {rdma_ms / nvlink_ms:.0f} times faster than RDMA. 17 §7's wire time of an all-reduce divides
by the same full figure; its ring sends and receives at once, so it too runs at the
per-direction rate. The RDMA figure needs no change: a NIC's rate is per direction.
""")
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "fi_check", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false}
with grading.checks():
    grading.check("17-7", "f-kv", kv_gb, seed=SEED)
    grading.check("17-7", "g-nvlink", nvlink_ms, seed=SEED)
    grading.check("17-7", "h-rdma", rdma_ms, seed=SEED)
    grading.check("17-7", "i-per-layer", per_layer_ms, seed=SEED)

# %% [markdown] nbgrader={"grade": true, "grade_id": "fi_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# ### BEGIN SOLUTION
# The hop is the request's whole KV cache over the link, one way (derivation above). Inside a
# node NVLink moves it in milliseconds; across nodes RDMA takes an order of magnitude longer,
# because one NIC carries, per direction, a small fraction of what NVLink carries.
# Comparing the two needs both rates in the same unit and for the same direction: the NIC's
# bits become bytes, and the data sheet's two-way NVLink figure becomes its one-way half.
# The prefill GPU streams the first token, so the hop delays the second: shipped whole, that
# one interval can outlast an ITL target of a few tens of ms. But the prefill that produced
# the cache took several times longer than shipping it (derivation above), so the link keeps
# up with it: shipped layer by layer, each layer's slice travels while later layers are
# computed, and only the last slice, part (i), is left after the prefill. With a small model
# and short prompts there is little interference to remove, and chunked prefill on a shared
# pool already gives most of the gain without the hop. The point: the KV hop is the price of
# disaggregation, affordable when the prefill outlasts it and it ships layer by layer, and
# the link's per-direction rate, not the data sheet's two-way sum, sets that price.
#
# *Look for:* (1) the hop is $L k$ one way, at each link's per-direction rate (bits to bytes for
# the NIC, half the two-way NVLink figure); (2) the hop delays the second token, and shipped
# whole it can exceed the ITL target; (3) the prefill takes longer than the hop, so a
# layer-by-layer transfer keeps up and only the last layer's slice, (i), remains; (4) bonus:
# for small models and short prompts chunked prefill on one pool may be the cheaper fix.
# ### END SOLUTION
