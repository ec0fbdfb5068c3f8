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
from fractions import Fraction

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
# Here $D_w$ is the weight bytes, $b$ the batch (sequences decoded together), $L$ the live
# tokens each sequence holds and $k$ the KV bytes per token, so $b\,L\,k$ is the batch's
# cache; $\beta$ is the HBM bandwidth; each all-reduce pays $T_\text{floor}$, its fixed
# latency, plus its bytes over $\beta_\text{link}$, the link's rate in one direction. (17 §7
# calls both the TP degree and the stage count *p*, and the microbatch count *m*; here they
# are $g$, $S$ and $M$, in the explorers too.)
#
# The first term is TP's reason to exist: no other split cuts the time of one token by $g$.
# The second term explains where TP lives: on NVLink, inside one server.

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
one_way = calc.nvlink_one_way_bytes_per_s(hw)
heads4 = calc.tp_kv_capacity(m70, hw, tp=4)["kv_heads_per_gpu"]
heads8 = calc.tp_kv_capacity(m70, hw, tp=8)["kv_heads_per_gpu"]
md(rf"""
*One direction.* A ring all-reduce sends and receives at the same time, so each direction of a
link carries its own bytes. NVLink's {hw.interconnect_bytes_per_s / units.GB:.0f} GB/s in the
chapter's assumptions adds both directions; one direction is
{one_way / units.GB:.0f} GB/s (`calc.nvlink_one_way_bytes_per_s`), and that is
$\beta_\text{{link}}$ here. PCIe's {ch08.PCIE_GEN5_X16_BYTES_PER_S / units.GB:.0f} GB/s is
already a figure per direction. The chapter divides by the full
{hw.interconnect_bytes_per_s / units.GB:.0f}, which halves its wire time; the bytes stay small
either way.

*The KV cache splits with the heads.* Each GPU runs its share of the attention heads and keeps
their K and V: the 70B's {m70.n_kv_heads} KV heads are {heads4:g} per GPU at TP = 4 and
{heads8:g} at TP = 8. A head cannot be cut further, so past $g$ = $n_\text{{kv}}$ =
{m70.n_kv_heads} each GPU would keep copies and its KV would stop shrinking: TP degrees up to
the KV-head count split the cache cleanly.
""")

# %%
traffic = calc.tp_allreduce_traffic(m70, 4)
nvlink = calc.tp_decode_step(m70, hw, 4, link_bytes_per_s=one_way)   # one direction
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
rows = [dict(r, label=f"{r['label']}<br>(does not fit)") if m70.weight_bytes / r["tp"] > hw.mem_bytes
        else r for r in rows]
plots.tp_step_figure(rows, selected="TP 4 · NVLink").show()

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
ring_kib = traffic["ring_bytes"] / units.KiB
mb_entry = next(e for e in ledger.by_section("17.7") if e.id == "17.7/bytes-per-token-MB")
md(f"""> **Units note: the bytes per token of the TP = 4 step.** The chapter multiplies
> {traffic['collectives']} collectives by {ring_kib:.0f} "KB" per collective. Its "KB" is KiB
> ($2 \\times 3/4 \\times 16{{,}}384$ B), and its "MB" then is MiB: the product is
> {traffic['bytes_per_token'] / units.KiB:,.0f} KiB =
> {traffic['bytes_per_token'] / units.MiB:.2f} MiB, which it prints as {mb_entry.printed}. In decimal units the
> same bytes are {traffic['bytes_per_token'] / units.MB:.2f} MB. Either way the wire time on
> NVLink is a few microseconds ({nvlink['wire_s'] / units.us:.1f} µs at the one-way rate), so
> the argument does not change. The ledger's note follows.""")

# %%
for e in ledger.by_section("17.7"):
    if e.id == "17.7/bytes-per-token-MB":
        print(f"{e.claim}: chapter {e.printed} {e.unit}, companion {e.value:.3f}\n  {e.note}")

# %% [markdown]
# ## Where this model breaks: one flat floor per all-reduce, added to the step
#
# A ring all-reduce over $g$ GPUs is $2(g-1)$ messages in a row, each paying its own latency,
# and an engine can run collectives while the weights stream; the TP explorer's *all-reduce
# latency* and *collectives and reads* menus redraw the bars with both. The ring is a
# pessimistic bound for decode's small messages, and hiding needs a batch that can be split
# in two, so the best case is priced at $b$ = 2.

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the table below
from companion import tables

tp_ctl = {c.name: c for c in widgets.TensorParallelPanel.controls}
nv_link = dict(link_bytes_per_s=one_way)          # NVLink, one direction
pcie_top = dict(collective_latency_s=tp_ctl["pcie_latency_us"].max * units.us,
                link_bytes_per_s=ch08.PCIE_GEN5_X16_BYTES_PER_S)
tp_rows = []
for tp_label, tp_g, tp_kw in (("TP 4 · NVLink (the chapter)", 4, nv_link),
                              ("TP 8 · NVLink", 8, nv_link),
                              (f"TP 8 · PCIe, {tp_ctl['pcie_latency_us'].max:.0f} µs floor",
                               8, pcie_top)):
    tp_flat = calc.tp_step_fuller(m70, hw, tp_g, collectives="flat", **tp_kw)["step_s"]
    tp_ring = calc.tp_step_fuller(m70, hw, tp_g, **tp_kw)["step_s"]
    tp_hid = calc.tp_step_fuller(m70, hw, tp_g, collectives="flat", overlap=True, batch=2,
                                 **tp_kw)["step_s"]
    tp_rows.append((tp_label, f"{tp_flat / units.ms:.2f} ms",
                    f"{tp_ring / units.ms:.2f} ms ({tp_ring / tp_flat:.2f}x)",
                    f"{tp_hid / units.ms:.2f} ms ({tp_hid / tp_flat:.2f}x)"))
md(tables.markdown_table(("setting (70B decode step)",
                          "chapter's model (flat floor, added; b = 1)",
                          "ring, added; b = 1 (pessimistic for g > 4)",
                          "best case (flat floor hidden; b = 2)"), tp_rows))

# %% [markdown] jp-MarkdownHeadingCollapsed=true
# #### In detail
#
# The ring's hops and the overlap, priced at every degree and link.
#
# <!-- fold: the fuller model, its numbers and where it parts from the chapter's -->

# %% [markdown]
# The communication term above rests on two simplifications.
#
# 1. **Every all-reduce costs the same floor, whatever $g$.** The ring algorithm passes the
#    vector around the $g$ GPUs in
#    $2(g-1)$ steps: $g-1$ to add up the partial sums, $g-1$ to hand the totals back. Each step
#    is a message, and each message pays a latency $t_\text{msg}$. In the usual
#    latency-plus-bandwidth form (Thakur, Rabenseifner and Gropp, 2005):
#
#    $$T_\text{ring} = 2(g-1)\,t_\text{msg} + \frac{2(g-1)}{g}\,
#    \frac{\text{vector bytes}}{\beta_\text{link}}.$$
#
#    The bandwidth part is the chapter's; only the latency part grows with $g$. To compare like
#    with like we choose $t_\text{msg}$ so that the ring costs exactly the chapter's floor at its
#    own TP = 4 ($t_\text{msg} = T_\text{floor}/6$). The two models then agree at the chapter's setting
#    and part at every other degree. Take the ring as a **pessimistic bound**: decode's
#    all-reduces, one activation vector per token, are the smallest messages NCCL handles, and
#    for those it picks tree, NVLink SHARP (NVLS) or one-shot algorithms whose latency barely
#    grows with $g$. The flat floor is the closer model there; the ring marks how bad a
#    latency that grows with $g$ could make it.
# 2. **The collectives are added to the reads.** An engine can overlap part of them with other
#    work, for instance by splitting the batch in two halves that take turns, one reading
#    weights while the other all-reduces. That needs at least two sequences: at $b$ = 1 there
#    is nothing to split, and the collectives stay in the step. For $b \ge 2$ the best possible
#    case hides them entirely:
#    $T_\text{step} = \max(\text{read}, \text{comm})$. 17 §9's checklist asks a trace whether
#    the collectives overlap and speaks as if §7's arithmetic assumed they did, yet §7 adds the
#    two. The sum and the max bracket what a real trace can show.
#
# `calc.tp_step_fuller` prices a step either way; the TP explorer below has both as dropdowns.

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
tp_controls = {c.name: c for c in widgets.TensorParallelPanel.controls}
pcie_link = dict(collective_latency_s=ch17.COLLECTIVE_LATENCY_PCIE_S,
                 link_bytes_per_s=ch08.PCIE_GEN5_X16_BYTES_PER_S)
layouts = [(2, "NVLink", nv_link), (4, "NVLink", nv_link), (8, "NVLink", nv_link),
           (4, "PCIe", pcie_link), (8, "PCIe", pcie_link)]
variants = {"chapter: flat, added": dict(collectives="flat"),
            "ring (pessimistic bound), added": dict(),
            "flat, hidden (best case, b = 2)": dict(collectives="flat", overlap=True, batch=2),
            "ring, hidden (b = 2)": dict(overlap=True, batch=2)}
head = "| layout | " + " | ".join(variants) + " |"
lines = [head, "|" + "---|" * (len(variants) + 1)]
for g, link, kw in layouts:
    cells = [f"{calc.tp_step_fuller(m70, hw, g, **kw, **v)['step_s'] / units.ms:.2f} ms"
             for v in variants.values()]
    lines.append(f"| TP {g} · {link} | " + " | ".join(cells) + " |")
md("A 70B decode step, four ways (the first column is the chapter's model; the two added "
   "columns at batch 1, the two hidden ones at batch 2, the smallest batch that splits):\n\n"
   + "\n".join(lines))

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
t_msg = calc.ring_hop_latency_s()
chap4 = calc.tp_step_fuller(m70, hw, 4, collectives="flat", **nv_link)
one4 = calc.tp_step_fuller(m70, hw, 4, collectives="flat", overlap=True, **nv_link)
chap4_b2 = calc.tp_step_fuller(m70, hw, 4, collectives="flat", batch=2, **nv_link)
hid4 = calc.tp_step_fuller(m70, hw, 4, collectives="flat", overlap=True, batch=2, **nv_link)
flat8 = calc.tp_step_fuller(m70, hw, 8, collectives="flat", **nv_link)
ring8 = calc.tp_step_fuller(m70, hw, 8, **nv_link)
ring2 = calc.tp_step_fuller(m70, hw, 2, **nv_link)
flat2 = calc.tp_step_fuller(m70, hw, 2, collectives="flat", **nv_link)
top = tp_controls["nvlink_latency_us"].max * units.us
flat8_top = calc.tp_step_fuller(m70, hw, 8, collectives="flat", collective_latency_s=top,
                                **nv_link)
ring8_top = calc.tp_step_fuller(m70, hw, 8, collective_latency_s=top, **nv_link)
pc8_flat = calc.tp_step_fuller(m70, hw, 8, collectives="flat", **pcie_link)
pc8_ring = calc.tp_step_fuller(m70, hw, 8, **pcie_link)
pc8_hid = calc.tp_step_fuller(m70, hw, 8, collectives="flat", overlap=True, batch=2, **pcie_link)
pc8_ring_hid = calc.tp_step_fuller(m70, hw, 8, overlap=True, batch=2, **pcie_link)
# how the chapter's model has fared against published measurements, and in which direction
from companion import measurements

comm_rows = [r for r in measurements.split()[1] if r.regime == "communication-bound"]
comm_err = [measurements.predict(r).chapter_error_pct for r in comm_rows]
comm_pct = measurements.stated_accuracy("communication-bound")
direction = (f"too short, about {comm_pct:.0f}% below the measured times"
             if all(e < 0 for e in comm_err) else
             f"too long, about {comm_pct:.0f}% above the measured times"
             if all(e > 0 for e in comm_err) else
             f"off by about {comm_pct:.0f}%, in both directions")
md(f"""> **Where this model breaks: collective latency and overlap.** At the chapter's setting
> (TP = 4 on NVLink) the ring model agrees with the flat floor by construction: a hop of
> {t_msg / units.us:.2f} µs, six hops per all-reduce. The overlap assumption is the one that
> moves the answer there, from a batch of 2 on: hiding the collectives under the reads takes
> the step from {chap4_b2['step_s'] / units.ms:.2f} ms to {hid4['step_s'] / units.ms:.2f} ms,
> the {100 * chap4_b2['overhead']:.0f}% overhead to {100 * hid4['overhead']:.0f}%. At the
> chapter's batch of 1 nothing can take turns, and the step stays at
> {one4['step_s'] / units.ms:.2f} ms.
>
> At the explorer's other degrees the latency model matters. At TP = 8 the ring needs
> {2 * (8 - 1)} hops per all-reduce, so the collectives cost {ring8['latency_s'] / units.ms:.2f} ms instead of
> {flat8['latency_s'] / units.ms:.2f} ms and the overhead is {100 * ring8['overhead']:.0f}%,
> not {100 * flat8['overhead']:.0f}% ({ring8['step_s'] / units.ms:.2f} vs
> {flat8['step_s'] / units.ms:.2f} ms per token). At TP = 2 it runs the other way
> ({ring2['step_s'] / units.ms:.2f} vs {flat2['step_s'] / units.ms:.2f} ms). With the NVLink
> floor at the slider's top, {top / units.us:.0f} µs, TP = 8 takes
> {ring8_top['step_s'] / units.ms:.2f} ms under the ring against
> {flat8_top['step_s'] / units.ms:.2f} ms under the flat floor. Over PCIe at TP = 8 the ring
> puts {pc8_ring['comm_s'] / units.ms:.1f} ms of collectives on a
> {pc8_ring['read_s'] / units.ms:.1f} ms read (flat floor: {pc8_flat['comm_s'] / units.ms:.1f}
> ms). At $b$ = 2, perfect overlap would hide the flat floor's collectives entirely (a
> {pc8_hid['step_s'] / units.ms:.2f} ms step) but not the ring's, which outlast the read
> ({pc8_ring_hid['step_s'] / units.ms:.2f} ms).
>
> **When it matters.** For the chapter's placement rule, hardly at all: every variant keeps
> TP inside NVLink. For predicting what a larger TP degree buys it matters a lot: the flat
> floor says TP = 8 cuts the step by {chap4['step_s'] / flat8['step_s']:.2f}x over TP = 4, the
> ring says {chap4['step_s'] / ring8['step_s']:.2f}x. The chapter's numbers stay as printed;
> the "all-reduce latency" and "collectives and reads" dropdowns of the TP explorer switch
> the bars to the fuller model.
>
> **Against measurements.** Step times predicted the chapter's way, where the collectives set
> the pace, have come out {direction} (the median of {len(comm_rows)} held-out published
> {"measurement" if len(comm_rows) == 1 else "measurements"}, so a thin sign; see
> [How good are these models?](../how_good_are_these_models.ipynb)): a real step carries costs
> this arithmetic leaves out. That one measurement is a {comm_rows[0].model} at
> {comm_rows[0].notes.split(",")[0]}, batch {comm_rows[0].batch}, {comm_rows[0].output_tokens}
> output tokens per request: a model that small spread over that many GPUs reads its weights
> in under a millisecond per step, so fixed per-step costs the chapter leaves out
> (kernel launches, scheduling, sampling) set the time. Read the miss as a warning for small
> models at high TP, not as the error at the chapter's 70B.""")

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
#
# **Where the formula holds.** It prices one batch pushed through the pipe once: the pipe fills,
# runs and drains for every batch, as in the prefill of a batch of prompts or any one-shot
# batch. Steady-state decode runs differently. A microbatch that leaves the last stage with its
# new token goes straight back to the first stage for the next one, so with $M \ge S$
# microbatches in rotation the pipe never drains and the fill happens once, when serving
# starts. Only unequal stage times then leave stages idle (the fold below prices that for the
# real 70B); with $M < S$ a share $1 - M/S$ of stage time stays idle.

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

# %% [markdown]
# ## Where this model breaks: stages of unequal length
#
# In decode a stage's time is the time to read its own weights, and the last stage also holds
# the output projection, so it is the slowest and sets the pace of every slot; the pipeline
# explorer's dashed curve is the bubble with the real 70B's stages.

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the table below
from companion import models

pp_cfg = models.load("llama-3.1-70b")
pp_ctl = {c.name: c for c in widgets.PipelineBubblePanel.controls}
pp_grid = {(st, mb): calc.pp_decode_bubble(pp_cfg, hw, st, mb)
           for st in range(max(2, pp_ctl["stages"].min), pp_ctl["stages"].max + 1)
           for mb in range(pp_ctl["microbatches"].min, pp_ctl["microbatches"].max + 1)}
pp_far = max(pp_grid, key=lambda k: pp_grid[k]["bubble"] / pp_grid[k]["equal_bubble"])
pp_rows = []
for pp_key, pp_note in (((ch17.PP_STAGES, ch17.PP_MICROBATCHES[0]), " (the chapter)"),
                        ((ch17.PP_STAGES, ch17.PP_MICROBATCHES[-1]), " (the chapter)"),
                        (pp_far, "")):
    pp_r = pp_grid[pp_key]
    pp_rows.append((f"S = {pp_key[0]}, M = {pp_key[1]}{pp_note}",
                    f"{100 * pp_r['equal_bubble']:.1f}%", f"{100 * pp_r['bubble']:.1f}%",
                    f"{pp_r['bubble'] / pp_r['equal_bubble']:.2f}"))
md(tables.markdown_table(("setting (70B decode stages)", "chapter's model (equal stages)",
                          "fuller model (real stages)", "fuller / chapter"), pp_rows))

# %% [markdown] jp-MarkdownHeadingCollapsed=true
# #### In detail
#
# Stage times from the real configuration, and a bubble that no longer vanishes.
#
# <!-- fold: the fuller model, its numbers and where it parts from the chapter's -->

# %% [markdown]
# The bubble formula counts slots, so it assumes every stage needs the same time per
# microbatch. A real split is not that tidy. The layer count need not divide by $S$, and the
# last stage also runs the output projection, `lm_head`, a hidden-by-vocabulary matrix that in
# the public Llama-3.1-70B configuration weighs more than a whole layer. In decode a stage's
# time is its own weight read, so the last stage is the slowest one.
#
# With stage times $t_\text{stage}(1), \dots, t_\text{stage}(S)$ the microbatches still enter
# one after another, but each stage can start microbatch $j$ only when it has finished $j-1$
# and the stage before has finished $j$. The last microbatch leaves at
#
# $$T_\text{pipe} = \sum_i t_\text{stage}(i) + (M-1)\,\max_i t_\text{stage}(i), \qquad
# \text{bubble} = 1 - \frac{M \sum_i t_\text{stage}(i)}{S\,T_\text{pipe}}
# \;\xrightarrow{M\to\infty}\; 1 - \frac{\bar t_\text{stage}}{\max_i t_\text{stage}(i)}.$$
#
# With equal stages this is the chapter's $(S-1)/(M+S-1)$. With unequal ones the bubble no
# longer vanishes as $M$ grows: the slowest stage sets the pace and the others wait for it
# every slot. `calc.pp_decode_bubble` splits the real configuration (spare layers to the first
# stages, `lm_head` on the last) and prices it; the companion's event-by-event pipeline run
# (`companion.sim.pipeline`) gives the same figures.

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
from companion import models
from companion.sim import pipeline

cfg70 = models.load("llama-3.1-70b")
pipe_controls = {c.name: c for c in widgets.PipelineBubblePanel.controls}
s_max, m_max = pipe_controls["stages"].max, pipe_controls["microbatches"].max
cases = [(4, 16, "the chapter"), (4, 64, "the chapter"), (3, 16, "layers do not divide"),
         (8, m_max, ""), (s_max, m_max, "slider maxima"), (s_max, 1, "")]
rows = ["| stages S | microbatches M | layers per stage | chapter's bubble | real stages | "
        "floor as M grows |", "|---|---|---|---|---|---|"]
real = {}
for st, mb, note in cases:
    r = calc.pp_decode_bubble(cfg70, hw, st, mb)
    real[(st, mb)] = r
    lo, hi = min(r["stage_layers"]), max(r["stage_layers"])
    split = f"{lo}" if lo == hi else "/".join(str(n) for n in r["stage_layers"])
    rows.append(f"| {st}{' (' + note + ')' if note else ''} | {mb} | {split} | "
                f"{100 * r['equal_bubble']:.1f}% | {100 * r['bubble']:.1f}% | "
                f"{100 * r['floor']:.1f}% |")
check = pipeline.pipeline_run(real[(4, 16)]["stage_times_s"], 16)
md("The 70B's decode stages on an H100 SXM, each stage's time its weights over the bandwidth "
   "(the configuration's exact parameter counts):\n\n" + "\n".join(rows)
   + f"\n\nThe simulated run of S = 4, M = 16 gives a bubble of {100 * check['bubble']:.1f}%.")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
c416, c464, cmax = real[(4, 16)], real[(4, 64)], real[(s_max, m_max)]
head_layers = cfg70.head_params / (cfg70.layer_params / cfg70.n_layers)
md(f"""> **Where this model breaks: the pipeline bubble.** The output projection weighs as much
> as {head_layers:.2f} layers, so with 20 layers per stage the last of the chapter's four
> stages takes {c416['imbalance']:.3f}x the mean. At the chapter's settings the bubble is
> {100 * c416['bubble']:.1f}% instead of {100 * c416['equal_bubble']:.1f}% at M = 16, and
> {100 * c464['bubble']:.1f}% instead of {100 * c464['equal_bubble']:.1f}% at M = 64: more
> microbatches cannot push it below {100 * c464['floor']:.1f}%. At the explorer's corner of
> {s_max} stages and {m_max} microbatches each stage holds {cfg70.n_layers // s_max} layers and
> the last one carries {head_layers:.2f} layers' worth more, so the bubble is
> {100 * cmax['bubble']:.1f}%, not {100 * cmax['equal_bubble']:.1f}%, with a floor of
> {100 * cmax['floor']:.1f}%.
>
> **When it matters.** Whenever stages are few layers deep (deep pipelines) or the traffic is
> heavy enough that the chapter would call the bubble negligible. Engines answer by giving
> the last stage fewer layers; a split that balances the weights rather than the layer count
> brings the chapter's formula back. The dashed curve in the pipeline explorer is this model
> for the stage count you choose.""")

# %% [markdown]
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

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
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
# Every number in 17 §7, recomputed. A `*` flags an entry with a note. Two errata: the
# diagram's layer labels discussed above, and the NVLink wire time, which the chapter prices at
# the 900 GB/s of both directions where a ring all-reduce gets 450 GB/s each way (the same
# reading 17 §8's KV hop gets); the step it feeds still rounds to the printed figure.

# %%
ledger.show("17.7")

# %% [markdown]
# ## Explorer: a tensor-parallel decode step
#
# Choose the model, the card and the TP degree. Raise the batch or the context and the reads
# grow back; move the two collective floors to see where NVLink's lead comes from. At the
# defaults the readout reproduces the chapter's TP = 4 step, with NVLink's wire at its one-way
# rate, and its first line checks that each GPU holds its weights and this batch's share of
# the KV cache. The last two dropdowns switch to the fuller model of the box above: ring
# latency that grows with the degree (a pessimistic bound), and collectives hidden under the
# reads (from a batch of 2).

# %% tags=["nbval-ignore-output"]
tp_panel = widgets.TensorParallelPanel()
tp_panel.show()

# %%
n = tp_panel.at().numbers
print(f"read {n['read_ms']:.2f} ms + floor {n['nvlink_latency_ms']:.2f} ms = step "
      f"{n['step_ms']:.2f} ms, {n['tokens_per_s']:.1f} tok/s; NVLink overhead "
      f"{n['nvlink_overhead_pct']:.1f}%, PCIe overhead {n['pcie_overhead_pct']:.1f}%")

# %% [markdown]
# ## Explorer: the pipeline diagram
#
# Stages and microbatches. The grey corners keep their size while the busy middle grows with
# $M$. The dashed curve is the fuller model for your stage count: the real 70B configuration
# split into stages of unequal weight.

# %% tags=["nbval-ignore-output"]
pipe_panel = widgets.PipelineBubblePanel()
pipe_panel.show()

# %%
for m in (16, 64):
    n = pipe_panel.at(microbatches=m).numbers
    print(f"S = 4, M = {m}: {n['slots']} slots, {n['idle_cells']} idle cells, bubble "
          f"{n['bubble_pct']:.1f}%")
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
n = place_panel.at().numbers
print(f"{n['weights_GB']:,.0f} GB -> {n['layout']} ({n['gpus']} GPUs), "
      f"{n['weights_per_gpu_GB']:.1f} GB per GPU, {n['free_per_gpu_GB']:.1f} GB free")

# %% [markdown]
# ## Try this
#
# 1. **Predict, then move.** In the TP explorer, set the batch to 64 and the context to 8,000
#    tokens. Will the NVLink collective overhead, as a share of the step, go up or down?
#    Predict, then move the sliders and explain.
#    <!-- states: tp_panel(batch=64, context_tokens=8000) -->
# 2. At TP = 8 over PCIe, what share of the step do the collectives take, and how does the step
#    compare with TP = 8 over NVLink, the same GPUs on the faster link? Below which PCIe floor
#    (µs per collective) would the two match?
#    <!-- states: tp_panel(tp=8); tp_panel(tp=8, pcie_latency_us=...) -->
# 3. How many microbatches bring the bubble of an 8-stage pipeline to 5% or below? If each
#    microbatch holds 4 sequences, how many sequences must be in flight? Does the answer
#    change for steady-state decode?
#    <!-- states: pipe_panel(stages=8, microbatches=...) -->
# 4. Place the 405B in FP8 rather than BF16. How many GPUs does it need now, and how many on a
#    card with 141 GB (an H200)?
#    <!-- states: place_panel(bytes_per_param=1.0); place_panel(bytes_per_param=1.0, gpu_mem_gb=141.0) -->
# 5. **Predict, then move.** Ask the placement explorer for 20 GB of KV per GPU for the 70B.
#    Predict the TP degree first, then compare the result with the TP = 4 that 17 §4 uses.
#    <!-- states: place_panel(params_b=m70.n_params / 1e9, min_kv_gb=20.0) -->

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
light = tp_panel.at().numbers
heavy_batch, heavy_ctx = 64, 8000
heavy = tp_panel.at(batch=64, context_tokens=8000).numbers
light_comm, heavy_comm = (n["nvlink_latency_ms"] + n["nvlink_wire_us"] / 1000 for n in (light, heavy))
answer(f"""Down. With {heavy_batch} sequences of {heavy_ctx:,} tokens each GPU reads its
1/{ch17.TP} of the weights *and* of a large KV cache, so the read grows from
{light['read_ms']:.1f} ms to {heavy['read_ms']:.1f} ms. The {light['collectives']} collectives
keep their latency floor ({heavy['nvlink_latency_ms']:.2f} ms), but their bytes grow with the
batch: {heavy_batch} activation vectors per all-reduce take
{heavy['nvlink_wire_us'] / 1000:.2f} ms on the wire at NVLink's one-way rate (against
{light['nvlink_wire_us']:.1f} µs at batch 1), no longer negligible beside the floor. Both
together still grow far less than the read, so the collectives' share of the step falls from
{100 * light_comm / light['step_ms']:.1f}% to {100 * heavy_comm / heavy['step_ms']:.1f}%
(measured against the read alone, the chapter's "overhead":
{light['nvlink_overhead_pct']:.1f}% to {heavy['nvlink_overhead_pct']:.1f}%). The setting also
does not fit: each GPU would hold {heavy['kv_per_gpu_GB']:.1f} GB of KV beside
{heavy['weights_per_gpu_GB']:.0f} GB of weights, against {heavy['free_kv_per_gpu_GB']:.0f} GB
left after the reserve, room for {heavy['max_sequences']} such sequences (17 §4's count), and
the readout says so. A cost that is mostly fixed shrinks in relative terms when the variable
cost grows.""", title="Worked answer 1")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
nv4 = tp_panel.at().numbers                      # the chapter's TP = 4 on NVLink
tp_wide = 8
pc8 = tp_panel.at(tp=8).numbers                  # TP = 8: NVLink in step_ms, PCIe beside it
nv8_step = pc8["step_ms"]
pcie_step = pc8["read_ms"] + pc8["pcie_comm_ms"]
# the reader's scan: every stop of the PCIe floor slider, TP = 8 on both links
floor_ctl = tp_controls["pcie_latency_us"]
floors = [floor_ctl.min + k * floor_ctl.step
          for k in range(round((floor_ctl.max - floor_ctl.min) / floor_ctl.step) + 1)]
scan = {f: tp_panel.at(tp=8, pcie_latency_us=f).numbers for f in floors}
step_at = {f: n["read_ms"] + n["pcie_comm_ms"] for f, n in scan.items()}
last_ok = max(f for f in floors if step_at[f] <= nv8_step)
after = floors[floors.index(last_ok) + 1]
# the comm time is linear in the floor: interpolate between the two stops around the tie
tie = last_ok + (nv8_step - step_at[last_ok]) / (step_at[after] - step_at[last_ok]) * (
    after - last_ok)
# the pessimistic bound: ring latency growing with the degree
ring8 = tp_panel.at(tp=8, collectives="ring").numbers
ring_pcie_step = ring8["read_ms"] + ring8["pcie_comm_ms"]
answer(f"""At TP = {tp_wide} over PCIe each GPU reads for {pc8['read_ms']:.2f} ms, and the
{pc8['collectives']} collectives add {pc8['pcie_comm_ms']:.2f} ms: a step of
{pcie_step:.2f} ms, of which the collectives take {100 * pc8['pcie_comm_ms'] / pcie_step:.0f}%
(the readout's "overhead" of {pc8['pcie_overhead_pct']:.0f}% is the same time measured against
the read). The same {tp_wide} GPUs on NVLink take {nv8_step:.2f} ms, so PCIe makes every token
{pcie_step / nv8_step:.2f} times slower. Scanning the PCIe floor slider at TP = {tp_wide}, each
microsecond of floor adds {pc8['collectives']} µs to the step; PCIe still keeps up with NVLink at
{last_ok:g} µs ({step_at[last_ok]:.2f} ms) and loses at {after:g} µs
({step_at[after]:.2f} ms), so the tie sits at about {tie:.1f} µs per collective, below
NVLink's own {ch17.COLLECTIVE_LATENCY_NVLINK_S / units.us:g} µs floor: PCIe's slower wire has to be paid back in latency too. The chapter's
{ch17.COLLECTIVE_LATENCY_PCIE_S / units.us:g} µs is far above it. (Against TP = {ch17.TP} over
NVLink, {nv4['step_ms']:.2f} ms, TP = {tp_wide} over PCIe wins under the flat floor only by
spending twice the GPUs, and under the ring's pessimistic bound it loses that too:
{ring_pcie_step:.1f} ms.) On the slower link the collective floors eat what the extra GPUs
saved in reads, which is why TP stays on NVLink.""", title="Worked answer 2")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
stages, per_microbatch, target = 8, 4, Fraction(5, 100)
# the bubble formula, solved exactly: the smallest M with (S - 1) / (M + S - 1) <= target
need = next(m for m in range(1, 10_000) if Fraction(stages - 1, m + stages - 1) <= target)
at_need = pipe_panel.at(stages=8, microbatches=need).numbers
before = pipe_panel.at(stages=8, microbatches=need - 1).numbers
# steady-state decode: M = S microbatches keep the pipe full; unequal stages leave the floor
steady = pipe_panel.at(stages=8, microbatches=stages).numbers
answer(f"""$(S-1)/(M+S-1) \\le {float(100 * target):g}\\%$ with $S = {stages}$ needs
$M + {stages - 1} \\ge {stages - 1} / {float(target):g} = {float((stages - 1) / target):g}$, so
$M = {need}$ microbatches: the explorer shows a bubble of {at_need['bubble_pct']:.1f}%, exactly
the target, and {before['bubble_pct']:.2f}% one microbatch fewer. At {per_microbatch} sequences
per microbatch, **{per_microbatch * need} sequences** must be in flight. That is the chapter's
model, and it is right where a batch goes through the pipe once and the pipe fills and drains
around it: the prefill of a batch of prompts, or any one-shot batch. Steady-state decode is
kinder. Each microbatch returns to the first stage for its next token, so $M = S = {stages}$
microbatches already keep every stage busy: {per_microbatch * stages} sequences, not
{per_microbatch * need}. What idles the stages then is only their unequal length: the real
70B's {stages} stages leave {steady['uneven_floor_pct']:.1f}% however many microbatches
circulate. A one-shot pipeline needs traffic far larger than its stage count; a decoding one
needs about one microbatch per stage, and then its slowest stage sets the pace.""",
       title="Worked answer 3")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
fp8 = place_panel.at(bytes_per_param=1.0).numbers
h200 = place_panel.at(bytes_per_param=1.0, gpu_mem_gb=141.0).numbers
bf16_h200 = place_panel.at(gpu_mem_gb=141.0).numbers
h200_gb = specs.H200_SXM.mem_bytes / units.GB
answer(f"""In FP8 the 405B's weights are {fp8['weights_GB']:,.0f} GB: {fp8['layout']}, i.e.
{fp8['gpus']} GPUs at {fp8['weights_per_gpu_GB']:.1f} GB each, so one server suffices. On a
{h200_gb:.0f} GB card the FP8 model needs {h200['layout']} ({h200['gpus']} GPUs,
{h200['weights_per_gpu_GB']:.1f} GB each), and even the BF16 model fits in
{bf16_h200['layout']} ({bf16_h200['gpus']} GPUs). Halving the bytes per weight, or growing the
card, removes the pipeline stage and with it the bubble.""", title="Worked answer 4")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
kv70 = place_panel.at(params_b=m70.n_params / 1e9, min_kv_gb=20.0).numbers
no_kv = place_panel.at(params_b=m70.n_params / 1e9).numbers
kv_wanted = 20.0
answer(f"""Without KV room the 70B's smallest layout is {no_kv['layout']}
({no_kv['weights_per_gpu_GB']:.1f} GB of weights per GPU). Asking for {kv_wanted:g} GB of KV per GPU
pushes it to {kv70['layout']}: {kv70['weights_per_gpu_GB']:.1f} GB of weights and
{kv70['free_per_gpu_GB']:.1f} GB free per GPU. That is the chapter's TP = {ch17.TP} of 17 §4:
the layout is sized by the KV cache it must hold, not by the weights alone.""",
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
# >
# > <details><summary>Assumptions this notebook made</summary>
# >
# > A decode step is its weight and KV reads plus the
# > collectives (the explorer's batches stay below the ridge, so the reads, not the
# > arithmetic, set it); each all-reduce costs the chapter's flat floor and is added to the
# > step, while the fuller model prices a ring whose hop latency is fitted to that floor at
# > TP = 4 (a pessimistic bound) and, from a batch of 2, bounds overlap by hiding the
# > collectives completely; links run at their nominal bandwidth in one direction (NVLink's
# > spec figure halved); the bubble formula takes equal stages, one batch pushed through
# > once, and ignores the stage-to-stage handoff, while the fuller model takes each decode
# > stage's time as its weight read and still ignores the handoff; placement counts weights
# > and a fixed runtime reserve only (no activations, no embedding or head imbalance between
# > stages), while the TP explorer also counts the batch's KV cache.
# >
# > </details>
