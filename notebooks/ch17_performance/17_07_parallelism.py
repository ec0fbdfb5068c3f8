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
# **The question.** The 70B shape's BF16 weights are larger than an H100 SXM's 80 GB of HBM
# (17 §4), so before any question of speed the model has to be split across GPUs. There are
# two natural places to cut, and they generate very different traffic between the GPUs. Which
# cut belongs on which link, and what does each add to the time of one token?
#
# A tempting shortcut is to add replicas: more GPUs, each holding the whole model, behind a
# load balancer. Replicas raise requests per second for a model that already fits, but they
# help neither a model that fits nowhere nor the time of a single token, since each replica
# still streams every weight per step by itself. Tensor and pipeline parallelism instead
# divide *one* copy of the model among GPUs, and dividing is what forces them to talk.

# %%
from companion import calc, ledger, plots, specs, units, widgets
from companion.chapters import ch08, ch17
from companion.display import answer, md

hw = specs.H100_SXM
m70, m405 = specs.LLAMA_70B, specs.LLAMA_405B

# %% [markdown]
# ## Tensor parallelism: each GPU owns a slice of every matrix
#
# Tensor parallelism (TP) over $g$ GPUs gives each GPU $1/g$ of every weight matrix, and all
# $g$ GPUs take part in every layer of every token. Communication stays small thanks to how
# the matrices are paired. Split the first matrix of a pair by its output columns: each GPU
# then holds a slice of the intermediate vector, which is exactly the input its share of the
# second matrix (split by rows) needs. The pair's output, though, is only a *partial sum* on
# each GPU, and the next block needs the complete vector on all of them. Combining partial
# sums so that every GPU ends up holding the total is an **all-reduce**.
#
# Each transformer layer contains two pairs (attention up to its output projection, the MLP up
# to its down projection), hence $2 n_\text{layers}$ all-reduces per token. Each moves one
# activation vector of width $d_\text{model}$; in a ring all-reduce every GPU sends and receives
# $2(g-1)/g$ of that vector. Per token and per GPU:
#
# $$\text{activation} = d_\text{model} \times 2\ \text{B}, \qquad
# \text{ring bytes} = \frac{2(g-1)}{g}\,\text{activation}, \qquad
# n_\text{coll} = 2\,n_\text{layers}.$$
#
# The volume turns out to be negligible. What matters is that every all-reduce is a
# synchronisation point with a fixed cost (kernel launch plus link latency, a few
# microseconds) no matter how few bytes it carries. One decode step then costs each GPU's
# share of the reads plus the collectives:
#
# $$T_\text{step} = \underbrace{\frac{D_w + b\,L\,k}{g\,\beta}}_{\text{each GPU reads }1/g}
# \; + \; n_\text{coll}\left(T_\text{floor} + \frac{b \cdot \text{ring bytes}}
# {\beta_\text{link}}\right).$$
#
# The first term is TP's reason to exist: no other split cuts the time of one token by $g$.
# The second term explains where TP lives: on NVLink, inside one server.

# %%
traffic = calc.tp_allreduce_traffic(m70, 4)
nvlink = calc.tp_decode_step(m70, hw, 4)
pcie = calc.tp_decode_step(m70, hw, 4,
                           collective_latency_s=ch17.COLLECTIVE_LATENCY_PCIE_S,
                           link_bytes_per_s=ch08.PCIE_GEN5_X16_BYTES_PER_S)
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
# The next figure stacks one decode step for TP = 1, 2, 4 and 8 on each link. The read (blue)
# falls as $1/g$. The collective latency (red) stays put, because the number of all-reduces
# is set by the layer count, not by $g$. On PCIe at TP = 8 the collectives come close to
# costing what the reads they shortened used to. (The 70B at TP = 1 is drawn only as the
# arithmetic limit; it does not fit on one card.)

# %%
rows = widgets.tp_layout_rows(m70, hw)
plots.tp_step_figure(rows, selected="TP 4 · NVLink").show()

# %% tags=["remove-input"]
ring_kib = traffic["ring_bytes"] / units.KiB
md(f"""> **Erratum box: the bytes per token of the TP = 4 step.** The chapter multiplies
> {traffic['collectives']} collectives by {ring_kib:.0f} "KB" per collective. That
> {ring_kib:.0f} is in KiB ($2 \\times 3/4 \\times 16{{,}}384$ B), so the product is
> {traffic['bytes_per_token'] / units.MB:.2f} MB in decimal units, or
> {traffic['bytes_per_token'] / units.MiB:.2f} MiB. The chapter's figure is what one gets by
> treating the product in "KB" as thousands of bytes. Either way the wire time on NVLink is a
> few microseconds ({nvlink['wire_s'] / units.us:.1f} µs here), so the argument does not
> change. The ledger's note follows.""")

# %%
for e in ledger.by_section("17.7"):
    if e.id == "17.7/bytes-per-token-MB":
        print(f"{e.claim}: chapter {e.printed} {e.unit}, companion {e.value:.3f}\n  {e.note}")

# %% [markdown]
# ## Pipeline parallelism: each GPU owns a run of whole layers
#
# Pipeline parallelism (PP) slices the model the other way: with $S$ stages, each GPU keeps
# $n_\text{layers}/S$ consecutive layers, and a token's activation is passed from one stage to
# the next. Only that one vector crosses each boundary, once per token, so the speed of the
# link hardly matters, which is why PP is the split that can span servers.
#
# What PP costs is waiting. Give the pipe a single unit of work and only one stage is busy at
# any moment. Cut the batch into $M$ microbatches and inject them one after another: stage
# $i$ (from 0) handles microbatch $j$ in time slot $i + j$. The last stage first has work in
# slot $S-1$ (the pipe is *filling*); the first stage runs out after slot $M-1$ (the pipe is
# *draining*); the run lasts $M + S - 1$ slots. Every stage is busy in $M$ of them, so the idle
# share, called the **bubble**, is
#
# $$\text{bubble} = \frac{(M + S - 1) - M}{M + S - 1} = \frac{S - 1}{M + S - 1}.$$
#
# Only many more microbatches than stages make it small, which in serving means plenty of
# concurrent traffic. And PP never speeds up one stream: a token still visits every layer one
# after another.

# %%
for mb in (16, 64):
    pp = calc.pp_stages(m70, 4, mb)
    print(f"70B, S = 4 stages of {pp['layers_per_stage']:g} layers, {pp['boundaries']} "
          f"boundaries of {pp['handoff_bytes'] / units.KiB:.0f} KiB; M = {mb}: "
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
# Each cell of the diagram is one stage during one slot, labelled with the microbatch it is
# working on. Orange is the filling triangle, purple the draining one, grey the bubble. Count
# the grey cells: $S(S-1)$ of $S(M+S-1)$, which is the formula above.
#
# ## Choosing and combining: where does the 405B go?
#
# The two costs give a rule of thumb: stretch TP across the whole NVLink domain (usually one
# server's 8 GPUs), and add PP stages, one server each, only when a full server is still too
# small. `calc.parallel_layout` follows that rule literally: it tries TP = 1, 2, 4, 8 inside a
# node, then keeps TP at the node's width and adds nodes as pipeline stages until each GPU's
# weights plus the runtime reserve fit on the card.

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
plots.placement_figure(cands, hw.mem_bytes - ch17.RUNTIME_RESERVE_BYTES,
                       chosen="TP 8 x PP 2").show()

# %% tags=["remove-input"]
half = calc.pp_stages(m405, 2, 1)["layers_per_stage"]
md(f"""So the 405B runs as two servers: inside each, 8 GPUs do TP over NVLink (two
all-reduces per layer); between them, one activation per token crosses the network.

> **Erratum box: the layer labels of the 405B drawing.** The chapter's diagram of this
> two-server layout labels its stages with the halves of an 80-layer stack, which is the
> 70B's depth. Taken literally it shows a 70B split across two servers, and the arithmetic
> above says the 70B needs no second server (it fits one node at TP = 2 or 4). Taken as
> intended it shows the 405B, whose public configuration has {m405.n_layers} layers, so each
> stage holds {half:g} of them (layers 1-{half:g} and {half + 1:g}-{m405.n_layers}). The
> weight arithmetic ({m405.weight_bytes / units.GB:,.0f} GB, about
> {calc.weights_per_gpu_bytes(m405, 8, 2) / units.GB:.0f} GB per GPU) does not involve the
> layer count and stands.""")

# %%
print(f"405B shape: {m405.n_layers} layers; two stages of "
      f"{calc.pp_stages(m405, 2, 1)['layers_per_stage']:g}")
for e in ledger.by_section("17.7"):
    if e.id == "17.7/figure-layers-per-stage":
        print(f"ledger: chapter {e.printed}, companion {e.value:g}, agrees: {e.agrees}\n  {e.note}")

# %% [markdown]
# ## Chapter says / companion computes
#
# Every number in 17 §7, recomputed. A `*` flags an entry with a note; the only disagreement
# is the diagram's layer labels discussed above.

# %%
ledger.show("17.7")

# %% [markdown]
# ## Explorer: a tensor-parallel decode step
#
# Choose the model, the card and the TP degree. Raise the batch or the context and the reads
# grow back; move the two collective floors to see where NVLink's lead comes from. At the
# defaults the readout reproduces the chapter's TP = 4 step.

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
# Stages and microbatches. The grey corners keep their size while the busy middle grows with
# $M$.

# %% tags=["nbval-ignore-output"]
pipe_panel = widgets.PipelineBubblePanel()
pipe_panel.show()

# %%
for m in (16, 64):
    n = pipe_panel.update(microbatches=m).numbers
    print(f"S = 4, M = {m}: {n['slots']} slots, {n['idle_cells']} idle cells, bubble "
          f"{n['bubble_pct']:.1f}%")
_ = pipe_panel.reset()

# %% [markdown]
# ## Explorer: where does a model fit?
#
# Model size, weight format, GPU memory and runtime reserve, and optionally some KV space per
# GPU. Each bar is the weight bytes one GPU holds in a candidate layout; the dashed line is
# what a card can spare for them. (The explored model takes the depth and width of the
# closest reference shape; only the pipeline stages depend on those.)

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
# 1. **Predict, then move.** In the TP explorer, set the batch to 64 and the context to 8,000
#    tokens. Will the NVLink collective overhead, as a share of the step, go up or down?
#    Predict, then move the sliders and explain.
# 2. At TP = 8 over PCIe, what share of the step do the collectives take? Below which PCIe
#    floor (µs per collective) would TP = 8 over PCIe match TP = 4 over NVLink?
# 3. How many microbatches bring the bubble of an 8-stage pipeline under 5%? If each
#    microbatch holds 4 sequences, how many sequences must be in flight?
# 4. Place the 405B in FP8 rather than BF16. How many GPUs does it need now, and how many on a
#    card with 141 GB (an H200)?
# 5. **Predict, then move.** Ask the placement explorer for 20 GB of KV per GPU for the 70B.
#    Predict the TP degree first, then compare the result with the TP = 4 that 17 §4 uses.

# %% tags=["remove-input"]
light = tp_panel.update().numbers
heavy = tp_panel.update(batch=64, context_tokens=8000).numbers
_ = tp_panel.reset()
answer(f"""Down. With 64 sequences of 8,000 tokens each GPU reads its quarter of the weights
*and* of a large KV cache, so the read grows from {light['read_ms']:.1f} ms to
{heavy['read_ms']:.1f} ms, while the {light['collectives']} collectives still cost about the
same floor ({heavy['nvlink_latency_ms']:.2f} ms; the payload grows with the batch but stays
tiny on NVLink). The overhead falls from {light['nvlink_overhead_pct']:.1f}% to
{heavy['nvlink_overhead_pct']:.1f}% of the step: a fixed cost shrinks in relative terms when
the variable cost grows.""", title="Worked answer 1")

# %% tags=["remove-input"]
pc8 = calc.tp_decode_step(m70, hw, 8, collective_latency_s=ch17.COLLECTIVE_LATENCY_PCIE_S,
                          link_bytes_per_s=ch08.PCIE_GEN5_X16_BYTES_PER_S)
n_coll = calc.tp_allreduce_traffic(m70, 8)["collectives"]
floor = (nvlink["step_s"] - pc8["read_s"] - pc8["wire_s"]) / n_coll
answer(f"""At TP = 8 over PCIe the collectives take {pc8['comm_s'] / units.ms:.2f} ms of a
{pc8['step_s'] / units.ms:.2f} ms step, {100 * pc8['comm_s'] / pc8['step_s']:.0f}% of it. TP = 4
over NVLink takes {nvlink['step_s'] / units.ms:.2f} ms. TP = 8 over PCIe matches it when
$\\text{{read}} + \\text{{wire}} + n_\\text{{coll}} T_\\text{{floor}}$ equals that, i.e. at a floor
of ({nvlink['step_s'] / units.ms:.2f} - {pc8['read_s'] / units.ms:.2f} -
{pc8['wire_s'] / units.ms:.3f}) ms / {n_coll} = {floor / units.us:.1f} µs per
collective. Below that floor TP = 8 over PCIe is the faster of the two; at the
{ch17.COLLECTIVE_LATENCY_PCIE_S / units.us:g} µs the chapter assumes for PCIe it still
wins per token, but it spends almost half of every step on collectives and ties up twice as
many GPUs as TP = 4 does.""", title="Worked answer 2")

# %% tags=["remove-input"]
stages = 8
need = next(m for m in range(1, 10_000) if calc.pipeline_bubble(stages, m) < 0.05)
answer(f"""$(S-1)/(M+S-1) < 0.05$ with $S = {stages}$ needs
$M + {stages - 1} > {stages - 1} / 0.05 = {(stages - 1) / 0.05:g}$, so
$M = {need}$ microbatches (bubble {100 * calc.pipeline_bubble(stages, need):.2f}%; one fewer
gives {100 * calc.pipeline_bubble(stages, need - 1):.2f}%). That is beyond the explorer's
slider, which is the point: at 4 sequences per microbatch, {4 * need} sequences must be in
flight to keep an 8-stage pipe busy, traffic only a large fleet sees.""",
       title="Worked answer 3")

# %% tags=["remove-input"]
fp8 = place_panel.update(bytes_per_param=1.0).numbers
h200 = place_panel.update(bytes_per_param=1.0, gpu_mem_gb=141).numbers
bf16_h200 = place_panel.update(bytes_per_param=2.0, gpu_mem_gb=141).numbers
_ = place_panel.reset()
answer(f"""In FP8 the 405B's weights are {fp8['weights_GB']:,.0f} GB: {fp8['layout']}, i.e.
{fp8['gpus']} GPUs at {fp8['weights_per_gpu_GB']:.1f} GB each, so one server suffices. On a
141 GB card the FP8 model needs {h200['layout']} ({h200['gpus']} GPUs,
{h200['weights_per_gpu_GB']:.1f} GB each), and even the BF16 model fits in
{bf16_h200['layout']} ({bf16_h200['gpus']} GPUs). Halving the bytes per weight, or growing the
card, removes the pipeline stage and with it the bubble.""", title="Worked answer 4")

# %% tags=["remove-input"]
kv70 = place_panel.update(params_b=m70.n_params / 1e9, min_kv_gb=20).numbers
no_kv = place_panel.update(min_kv_gb=0.0).numbers
_ = place_panel.reset()
answer(f"""Without KV room the 70B's smallest layout is {no_kv['layout']}
({no_kv['weights_per_gpu_GB']:.1f} GB of weights per GPU). Asking for 20 GB of KV per GPU
pushes it to {kv70['layout']}: {kv70['weights_per_gpu_GB']:.1f} GB of weights and
{kv70['free_per_gpu_GB']:.1f} GB free per GPU. That is the chapter's TP = 4 of 17 §4: it picks
four GPUs not because the weights need them but because the KV cache does.""",
       title="Worked answer 5")

# %% [markdown]
# Previous: [17.6 Batching strategies](17_06_batching_strategies.ipynb); next:
# [17.8 Disaggregated serving and KV-aware routing](17_08_disaggregation_and_routing.ipynb).
#
# > **What you can now compute**
# >
# > - The all-reduce bytes and collective count of one TP decode token, and why the latency floor, not the bytes, sets its cost ([Exercise 17-5](../../exercises/ex17_5.ipynb))
# > - A TP decode step over NVLink or PCIe and its communication overhead ([Exercise 17-5](../../exercises/ex17_5.ipynb))
# > - The pipeline bubble for $S$ stages and $M$ microbatches, and the $M$ a target needs ([Exercise 17-6](../../exercises/ex17_6.ipynb))
# > - The smallest TP x PP layout that fits a model's weights on a card ([Exercise 17-6](../../exercises/ex17_6.ipynb))
