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
# # 17.7 Tensor and pipeline parallelism
#
# **The question.** A 70B model in BF16 needs 140 GB for its weights alone, and an H100 SXM
# holds 80 GB (17 §4). Splitting the model over several GPUs is therefore not an optimization
# but the price of admission. There are two ways to cut it, and each one moves different bytes
# between the GPUs at a different rhythm. Which cut goes where, and what does it cost per
# token?
#
# Adding replicas (the same whole model on more GPUs behind a load balancer) does not answer
# this question. Replicas multiply request throughput once a model fits, but every replica
# still has to fit the model and still streams all of its weights for every token. Tensor and
# pipeline parallelism split *one copy* of the model, which is why they need communication.

# %%
from companion import calc, ledger, plots, specs, units, widgets

hw = specs.H100_SXM
m70, m405 = specs.LLAMA_70B, specs.LLAMA_405B

# %% [markdown]
# ## Tensor parallelism: every GPU holds a slice of every matrix
#
# With tensor parallelism (TP) over $p$ GPUs, each weight matrix is cut into $p$ pieces and
# every GPU works on its piece of every layer, in lockstep, for every token. The trick that
# keeps communication small is to pair the matrices: the first matrix of a pair is cut by
# columns, so each GPU produces a slice of the intermediate vector that it can feed straight
# into its own rows of the second matrix, cut by rows. What comes out of the pair is a
# *partial sum* on every GPU, and the next layer needs the full sum everywhere. That is an
# **all-reduce**: a collective operation after which every GPU holds the sum of everyone's
# contributions.
#
# A transformer layer has two such pairs (attention ending in its output projection, the MLP
# ending in its down projection), so decoding one token costs $2 n_\text{layers}$ all-reduces.
# Each one carries a single activation vector of the hidden width $h$. A ring all-reduce makes
# every GPU send (and receive) $2(p-1)/p$ times the vector. Per token and per GPU:
#
# $$\text{activation} = h \times 2\ \text{B}, \qquad
# \text{ring bytes} = \frac{2(p-1)}{p}\,\text{activation}, \qquad
# N_\text{coll} = 2\,n_\text{layers}.$$
#
# The bytes turn out to be trivial; what is not trivial is that each collective is a
# synchronization with a fixed floor (launch plus link latency) of a few microseconds,
# whatever its size. A decode step therefore costs its share of the weight (and KV) reads plus
# the collectives:
#
# $$t_\text{step} = \underbrace{\frac{D_w + B\,L\,k}{p\,\beta}}_{\text{each GPU reads }1/p}
# \; + \; N_\text{coll}\left(t_\text{floor} + \frac{B \cdot \text{ring bytes}}
# {\text{link}}\right).$$
#
# The first term is why TP exists: it is the only split that divides per-token latency by $p$.
# The second term is why TP lives on NVLink, inside one server.

# %%
traffic = calc.tp_allreduce_traffic(m70, 4)
nvlink = calc.tp_decode_step(m70, hw, 4)
pcie = calc.tp_decode_step(m70, hw, 4,
                           collective_latency_s=calc.CH17_COLLECTIVE_LATENCY_PCIE_S,
                           link_bytes_per_s=specs.PCIE_GEN5_X16_BYTES_PER_S)
print(f"70B shape, TP = 4, batch 1")
print(f"  activation per token        {traffic['activation_bytes'] / units.KiB:.0f} KiB "
      f"(the chapter's 'KB')")
print(f"  ring traffic per collective {traffic['ring_bytes'] / units.KiB:.0f} KiB")
print(f"  collectives per token       {traffic['collectives']}")
print(f"  bytes per token per GPU     {traffic['bytes_per_token'] / units.MB:.2f} MB "
      f"({traffic['bytes_per_token'] / units.MiB:.2f} MiB)")
print(f"  NVLink: wire {nvlink['wire_s'] / units.us:.1f} µs, latency floor "
      f"{nvlink['latency_s'] / units.ms:.2f} ms")
print(f"  weight read per GPU         {nvlink['read_s'] / units.ms:.2f} ms")
print(f"  step on NVLink              {nvlink['step_s'] / units.ms:.2f} ms "
      f"(overhead {100 * nvlink['overhead']:.1f}%) -> {nvlink['tokens_per_s']:.1f} tok/s")
print(f"  collectives over PCIe       {pcie['comm_s'] / units.ms:.2f} ms "
      f"(overhead {100 * pcie['overhead']:.1f}%)")

# %% [markdown]
# The figure stacks one decode step for TP = 1, 2, 4, 8 over both links. The read (blue)
# shrinks as $1/p$; the collective latency (red) does not shrink at all, since the number of
# collectives depends on the layers, not on $p$. Over PCIe, by TP = 8 the collectives cost
# nearly as much as the reads they were meant to shrink. (TP = 1 is drawn for the 70B only as
# the arithmetic limit: it does not fit one card.)

# %%
rows = widgets.tp_layout_rows(m70, hw)
plots.tp_step_figure(rows, selected="TP 4 · NVLink").show()

# %% [markdown]
# > **Erratum box: "3.8 MB" per token.** The chapter multiplies 160 collectives by 24 "KB" and
# > writes 3.8 MB. The 24 is KiB (2 x 3/4 x 16,384 B), so the product is 3.93 MB in decimal
# > units, or 3.75 MiB; 3.8 comes from treating 3,840 "KB" as if a KB were 1,000 bytes. Both
# > readings give a wire time of about 4 µs on NVLink, so the conclusion stands. The ledger's
# > note:

# %%
for e in ledger.by_section("17.7"):
    if e.id == "17.7/bytes-per-token-MB":
        print(f"{e.claim}: chapter {e.printed} {e.unit}, companion {e.value:.3f}\n  {e.note}")

# %% [markdown]
# ## Pipeline parallelism: every GPU holds a run of whole layers
#
# Pipeline parallelism (PP) cuts the layer stack instead: with $p$ stages, each GPU holds a
# contiguous block of $n_\text{layers}/p$ layers, and a token's activation walks from stage to
# stage. Between two stages only one activation vector crosses, once per token, so PP barely
# cares how fast the link is. That is what lets it span servers.
#
# Its cost is idle time. Feed the pipe one unit of work and only one stage is ever busy. Split
# the batch into $m$ microbatches and send them in back to back: stage $s$ (counting from 0)
# works on microbatch $j$ in time slot $s + j$. The last stage starts only in slot $p-1$ (the
# pipe *fills*), the first stage is done after slot $m-1$ (the pipe *drains*), so the whole
# run takes $m + p - 1$ slots, in each of which a stage is either busy or idle. Each stage is
# busy in $m$ of them, so the idle share, the **bubble**, is
#
# $$\text{bubble} = \frac{(m + p - 1) - m}{m + p - 1} = \frac{p - 1}{m + p - 1}.$$
#
# It shrinks only when microbatches greatly outnumber stages, that is, under heavy traffic.
# PP never shortens a single stream: one token still passes through every layer in sequence.

# %%
for mb in (16, 64):
    pp = calc.pp_stages(m70, 4, mb)
    print(f"70B, p = 4 stages of {pp['layers_per_stage']:g} layers, {pp['boundaries']} "
          f"boundaries of {pp['handoff_bytes'] / units.KiB:.0f} KiB; m = {mb}: "
          f"{pp['total_slots']} slots, bubble {100 * pp['bubble']:.1f}%")
grid = plots.pipeline_grid(4, 16)
print(f"diagram: {grid['busy_cells']} busy and {grid['idle_cells']} idle stage-slots of "
      f"{4 * grid['slots']}")
curves = {p: ([1, 2, 4, 8, 16, 32, 64, 128],
              [calc.pipeline_bubble(p, m) for m in (1, 2, 4, 8, 16, 32, 64, 128)])
          for p in (2, 4, 8)}
plots.pipeline_figure(grid, bubble_curves=curves,
                      selected=(16, calc.pipeline_bubble(4, 16))).show()

# %% [markdown]
# In the diagram each cell is one stage-step; the number is the microbatch being processed.
# The orange triangle is the fill, the purple one the drain; grey cells are the bubble. Count
# them: $p(p-1)$ idle cells out of $p(m+p-1)$, the formula above.
#
# ## Choosing and combining: the 405B placement
#
# The rule that follows from the two costs: use TP as far as the NVLink domain reaches
# (typically the 8 GPUs of a server), and add PP stages across servers only if one server is
# still too small. `calc.parallel_layout` applies it literally: try TP = 1, 2, 4, 8 on one
# node, then keep TP at the node's width and add whole nodes as pipeline stages, until the
# weights per GPU plus the runtime reserve fit the card.

# %%
print(f"405B in BF16: {m405.weight_bytes / units.GB:,.0f} GB of weights")
for tp, pp in ((8, 1), (8, 2)):
    per_gpu = calc.weights_per_gpu_bytes(m405, tp, pp)
    print(f"  TP {tp} x PP {pp} ({tp * pp} GPUs): {per_gpu / units.GB:,.1f} GB per GPU")
for model, kv in ((m405, 0.0), (m70, 0.0), (m70, 20e9)):
    lay = calc.parallel_layout(model, hw, min_kv_bytes_per_gpu=kv)
    print(f"smallest layout for {model.name} (at least {kv / units.GB:.0f} GB of KV per GPU): "
          f"TP {lay['tp']} x PP {lay['pp']}, {lay['weight_bytes_per_gpu'] / units.GB:.1f} GB "
          f"of weights and {lay['free_kv_bytes_per_gpu'] / units.GB:.1f} GB free per GPU")
cands = widgets.placement_candidates(m405)
plots.placement_figure(cands, hw.mem_bytes - calc.CH17_RUNTIME_RESERVE_BYTES,
                       chosen="TP 8 x PP 2").show()

# %% [markdown]
# Within each of the two servers, 8 GPUs run TP over NVLink (two all-reduces per layer);
# between the servers a single activation crosses per token.
#
# > **Erratum box: the layer labels of the 405B figure.** The chapter's drawing of this
# > two-node layout labels the stages "layers 1-40" and "layers 41-80", an 80-layer stack.
# > That is the 70B's depth. Read literally, the figure describes a 70B split over two
# > nodes, which the arithmetic above shows is not needed (the 70B fits on one node with
# > TP = 2 or 4). Read as intended, it is the 405B, whose public configuration has 126 layers,
# > so each stage holds 63 of them (layers 1-63 and 64-126). The placement arithmetic
# > (810 GB, ~51 GB per GPU) does not depend on the layer count and is unaffected.

# %%
print(f"405B shape: {m405.n_layers} layers; two stages of "
      f"{calc.pp_stages(m405, 2, 1)['layers_per_stage']:g}")
for e in ledger.by_section("17.7"):
    if e.id == "17.7/figure-layers-per-stage":
        print(f"ledger: chapter {e.printed}, companion {e.value:g}, agrees: {e.agrees}\n  {e.note}")

# %% [markdown]
# ## Chapter says / companion computes
#
# Every number of 17 §7, recomputed (`*` marks an entry with a note; the only disagreement
# is the figure's layer labels above).

# %%
print(ledger.table("17.7"))

# %% [markdown]
# ## Explorer: a tensor-parallel decode step
#
# Pick the model, the card and the TP degree; grow the batch or the context to see the reads
# take over again; move the collective floors to see where NVLink's advantage comes from. The
# readout gives the highlighted layout's numbers, the chapter's 0.8 ms floor and 11.2 ms step
# at the defaults.

# %% tags=["nbval-ignore-output"]
tp_panel = widgets.TensorParallelPanel()
tp_panel.show()

# %%
n = tp_panel.update().numbers
print(f"read {n['read_ms']:.2f} ms + floor {n['nvlink_latency_ms']:.2f} ms = step "
      f"{n['step_ms']:.2f} ms, {n['tokens_per_s']:.1f} tok/s; NVLink overhead "
      f"{n['nvlink_overhead_pct']:.1f}%, PCIe overhead {n['pcie_overhead_pct']:.1f}%")

# %% [markdown]
# ## Explorer: the pipeline diagram
#
# Stages and microbatches. Watch the grey corners: they keep their size while the busy middle
# grows with $m$.

# %% tags=["nbval-ignore-output"]
pipe_panel = widgets.PipelineBubblePanel()
pipe_panel.show()

# %%
for m in (16, 64):
    n = pipe_panel.update(microbatches=m).numbers
    print(f"p = 4, m = {m}: {n['slots']} slots, {n['idle_cells']} idle cells, bubble "
          f"{n['bubble_pct']:.1f}%")
_ = pipe_panel.reset()

# %% [markdown]
# ## Explorer: where does a model fit?
#
# Model size, weight format, GPU memory and the runtime reserve; ask for KV room per GPU too.
# The bars are the weights each GPU holds in each candidate layout, the dashed line what a
# card can give them. (The explored model borrows the depth and width of the nearest reference
# shape; only the pipeline stages depend on them.)

# %% tags=["nbval-ignore-output"]
place_panel = widgets.PlacementPanel()
place_panel.show()

# %%
n = place_panel.update().numbers
print(f"{n['weights_GB']:,.0f} GB -> {n['layout']} ({n['gpus']} GPUs), "
      f"{n['weights_per_gpu_GB']:.1f} GB per GPU, {n['free_per_gpu_GB']:.1f} GB free")

# %% [markdown]
# ## Try this
#
# - In the TP explorer, set the batch to 64 and the context to 8,000 tokens. Does the
#   collective overhead still matter? Why does it shrink as a share of the step?
# - With TP = 8 over PCIe, what share of the step is collectives? Find the PCIe floor (µs) at
#   which TP = 8 over PCIe is no faster than TP = 4 over NVLink.
# - In the pipeline explorer, what microbatch count brings the bubble of 8 stages under 5%?
#   How many requests in flight does that imply if each microbatch is 4 sequences?
# - Place the 405B in FP8 instead of BF16. How many GPUs now? And on an H200-sized card
#   (141 GB)?
# - Ask the placement explorer for 20 GB of KV per GPU for the 70B. Which TP degree does it
#   pick, and how does that match 17 §4's choice of TP = 4?
#
# **Practice problems.** The Chapter 17 practice problems in
# [the exercises folder](../../exercises/) include the TP communication arithmetic, the
# pipeline bubble and the TP x PP placement of a large model. Previous:
# [17.6 Batching strategies](17_06_batching_strategies.ipynb); next:
# [17.8 Disaggregated serving and KV-aware routing](17_08_disaggregation_and_routing.ipynb).
