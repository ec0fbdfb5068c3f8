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
# # Exercise 8-5 · What does offloading FFN weights free, and what does it cost per step?
#
# *Computation, section 8.4.3.* One layer in every few keeps its FFN weights in host memory
# and copies them in just before that layer runs, every decode step: of the model's
# $n_\text{layers}$ layers, $\lfloor n_\text{layers} / \text{interval} \rfloor$ offload their FFN
# (the interval, in layers, is given below), $D_\text{off}$ bytes in all. The GPU must keep
# prefetch buffer sets (each holds one FFN) for the copies to land in. One layer's FFN is three
# matrices (gate, up, down) of $d_\text{model} \times d_\text{ff}$ weights each, $d_\text{ff}$
# being the FFN's inner width, at the bytes per weight given below.
#
# 1. **(a)** With one and with two buffer sets: what is the net GPU memory freed (MiB)? How
#    many extra KV states fit in it *on its own*, the chapter's count (the freed bytes taken as
#    a region of their own that holds only whole states)? Count a state as the prompt's KV
#    ($n$ tokens) or as what a finished request holds ($n + G - 1$ tokens; 8.1.2), each in whole
#    16-token blocks at $k$ bytes per token. Then count at the pool instead: KV blocks are paged
#    and interchangeable (8.3.1), so the freed memory joins the KV pool given below; how many
#    more finished requests does the pool hold than before?
# 2. **(b)** Over PCIe Gen5 x16 and over NVLink-C2C: the lower bound of the copy per step,
#    $D_\text{off} / \beta_\text{link}$ (ms), and of all the copying for one request's $G - 1$
#    decode steps (the first output token comes from the prefill) (s); and, with two buffer sets
#    (so that one FFN can be copied while the layer before it computes), can prefetch hide the
#    copy behind the measured decode round, that is, is the copy per step no longer than the
#    round? (`True` or `False`.)
# 3. **(c)** If all the copying of a request must fit in the copy budget below, with none of it
#    overlapped by compute (the companion's reading of the chapter's "total time budget for
#    all copying"), what one-way bandwidth is needed at least? And from what one-way
#    bandwidth on does the copy per step fit inside one decode round, so that, with two buffer
#    sets, it stops slowing the step? (GB/s, $10^9$ bytes/s)
#
# **Precision and units.** MiB are $2^{20}$ bytes, GB/s $10^9$ bytes/s. The net memory and the
# copy per step to 0.5%; the copying over all steps and the two bandwidths to 0.1%, which
# tells $G - 1$ steps from $G$; counts of states and requests exact; the hiding questions
# `True`/`False`.
#
# A caveat on the data: NVLink-C2C is the CPU-GPU link of NVIDIA's GH200, not of the
# RTX PRO 6000 whose decode round is given below, and that round was measured at a 2K context
# while this request runs at 8K. That round was also mostly launch overhead (Experiment 8-1
# ran without CUDA Graphs; 8.6.3), so a tuned engine's round, and with it the room prefetch
# has to hide a copy, would be shorter. The comparison shows which side of the round each link
# falls on, not a measured system.

# %% nbgrader={"grade": false, "grade_id": "given", "locked": true, "schema_version": 3, "solution": false, "task": false}
from companion import calc, grading, units

SEED = grading.student_seed()
given = grading.params("8-5", SEED)
model = given["model"]
print(f"{model.name}: {model.n_layers} layers; one FFN in every {given['every_n_layers']} is "
      f"offloaded; buffer sets {given['buffer_sets']}")
print(f"d_model = {model.hidden_size}, d_ff = {model.intermediate_size}, "
      f"{model.bytes_per_param:g} bytes per weight; k = "
      f"{calc.kv_bytes_per_token(model) / units.KiB:g} KiB of KV per token")
print(f"prompt {given['prompt_tokens']} tokens, {given['output_tokens']} output tokens, "
      f"16-token blocks, BF16 KV; KV pool {given['kv_pool_bytes'] / units.GiB:g} GiB")
print(f"links: PCIe Gen5 x16 {given['pcie_link_bytes_per_s'] / units.GB:g} GB/s, NVLink-C2C "
      f"{given['c2c_link_bytes_per_s'] / units.GB:g} GB/s per direction")
print(f"measured decode round {given['compute_round_s'] / units.ms:g} ms; copy budget "
      f"{given['copy_budget_s']:g} s")

# %% [markdown]
# ## (a) Memory freed and what fits in it
#
# Fill `net_mib[n]`, `extra_inputs[n]` and `extra_complete[n]` (the freed memory on its own),
# and `pool_complete[n]` (the pool with the freed memory in it), for n = 1 and 2 buffer sets.

# %% nbgrader={"grade": false, "grade_id": "a_answer", "locked": false, "schema_version": 3, "solution": true, "task": false} tags=["raises-exception"]
net_mib, extra_inputs, extra_complete, pool_complete = {}, {}, {}, {}
# YOUR CODE HERE

# %% nbgrader={"grade": true, "grade_id": "a_check", "locked": true, "points": 8, "schema_version": 3, "solution": false, "task": false} tags=["raises-exception"]
with grading.checks():
    for n in given["buffer_sets"]:
        grading.check("8-5", f"a-net-{n}buf", net_mib, key=n, seed=SEED)
        grading.check("8-5", f"a-inputs-{n}buf", extra_inputs, key=n, seed=SEED)
        grading.check("8-5", f"a-complete-{n}buf", extra_complete, key=n, seed=SEED)
        grading.check("8-5", f"a-pool-{n}buf", pool_complete, key=n, seed=SEED)

# %% [markdown]
# **In words (not graded).** What does each buffer set cost, why can counting the freed memory
# on its own understate what offloading buys, and when does the second buffer set cost a whole
# request?

# %% [markdown] nbgrader={"grade": true, "grade_id": "a_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# YOUR ANSWER HERE

# %% [markdown]
# ## (b) Copy time per step and over a whole request
#
# Fill `copy_ms[link]`, `total_s[link]` and `hidden[link]` (`True` or `False`) for link in
# `("pcie", "c2c")`.

# %% nbgrader={"grade": false, "grade_id": "b_answer", "locked": false, "schema_version": 3, "solution": true, "task": false} tags=["raises-exception"]
copy_ms, total_s, hidden = {}, {}, {}
# YOUR CODE HERE

# %% nbgrader={"grade": true, "grade_id": "b_check", "locked": true, "points": 6, "schema_version": 3, "solution": false, "task": false} tags=["raises-exception"]
with grading.checks():
    for link in ("pcie", "c2c"):
        grading.check("8-5", f"b-copy-{link}", copy_ms, key=link, seed=SEED)
        grading.check("8-5", f"b-total-{link}", total_s, key=link, seed=SEED)
        grading.check("8-5", f"b-hidden-{link}", hidden, key=link, seed=SEED)

# %% [markdown]
# **In words (not graded).** Does prefetching change how many bytes cross the link each step?
# What decides whether the copy slows the step, and why does that need two buffer sets?

# %% [markdown] nbgrader={"grade": true, "grade_id": "b_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# YOUR ANSWER HERE

# %% [markdown]
# ## (c) The bandwidth the copy budget needs, and the bandwidth that hides the copy
#
# Set `min_bw_gb_s` (the whole request's copying within the budget, none of it overlapped) and
# `hide_bw_gb_s` (one step's copy within one decode round).

# %% nbgrader={"grade": false, "grade_id": "c_answer", "locked": false, "schema_version": 3, "solution": true, "task": false} tags=["raises-exception"]
min_bw_gb_s = hide_bw_gb_s = None
# YOUR CODE HERE

# %% nbgrader={"grade": true, "grade_id": "c_check", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false} tags=["raises-exception"]
with grading.checks():
    grading.check("8-5", "c-min-bw", min_bw_gb_s, seed=SEED)
    grading.check("8-5", "c-hide-bw", hide_bw_gb_s, seed=SEED)

# %% [markdown]
# **In words (not graded).** What does the copy budget stand for, and which of your two
# bandwidths decides whether offloading slows decoding? On which links does it pay?

# %% [markdown] nbgrader={"grade": true, "grade_id": "c_explain", "locked": false, "points": 0, "schema_version": 3, "solution": true, "task": false}
# YOUR ANSWER HERE
