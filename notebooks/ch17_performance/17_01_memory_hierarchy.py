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
# # 17.1 The memory hierarchy: why serving is a bandwidth problem
#
# **The question.** The spec sheet of the chapter's card promises close to a thousand trillion
# floating-point operations every second, yet a chatbot answering one user on it keeps its
# arithmetic units idle almost all the time. Where does the speed go? Data has to travel to
# the arithmetic before anything can be computed, and on this card the trip from main memory
# is the slow part. Below we lay out the card's memory levels with their sizes, compute the one
# ratio that the whole of Chapter 17 keeps coming back to, and compare six cards.
#
# [Chapter 17 overview](17_00_overview.ipynb) | next: [17.2 Roofline](17_02_roofline.ipynb)

# %%
import math

from companion import calc, ledger, plots, specs, units, widgets
from companion.chapters import ch17
from companion.display import answer, md

hw = specs.H100_SXM

# %% [markdown]
# ## Kernels, SMs and warps, briefly
#
# A GPU program is a chain of *kernels*. Each kernel is a single function (say, one matrix
# product, or a softmax over a batch of rows) that thousands of threads run at the same time.
# The hardware groups those threads onto *streaming multiprocessors* (SMs). Think of an SM as
# a small self-contained factory: it has its own multipliers and adders, its own scratch
# memory and its own dispatcher. Threads travel in bundles of 32, called *warps*, and a warp
# issues one instruction that acts on 32 values at once.
#
# How does such a machine survive slow memory? Not the CPU way (big caches, guessing which
# data comes next) but by juggling: an SM holds many warps at once, and whenever one of them
# is waiting on a memory load, another one that has its data gets the arithmetic units. The
# trick hides the *wait* for each load; it cannot make memory deliver bytes any faster. A
# batch-1 decode step is not short of independent work (every layer holds thousands of
# independent dot products, 17.2), so the SMs can keep enough loads in flight to run the HBM
# near its full bandwidth. What it lacks is arithmetic per byte: at about one FLOP per byte
# fetched, the arithmetic units idle even with perfect overlap. (17 §1 and §2 blame "not enough
# independent operations in flight"; the bound is the bandwidth, as 17.2's roofline shows.)

# %%
print(f"{hw.name}: {hw.sm_count} SMs, {hw.mem_bytes / units.GB:.0f} GB of HBM at "
      f"{hw.mem_bw_bytes_per_s / units.TB:.2f} TB/s, "
      f"{hw.peak_flops_per_s / units.TFLOP:.0f} TFLOP/s ({hw.peak_precision})")

# %% [markdown]
# ## The pyramid, level by level
#
# The chapter's pyramid table is not reproduced here; we rebuild it with `calc.memory_pyramid`
# from the numbers in the chapter's diagram (17 §1: registers at about a nanosecond, about
# 50 MB of L2, 80 GB of HBM at 3.35 TB/s, 900 GB/s of NVLink, 64 GB/s of PCIe) and the card
# preset. The two link figures do not count the same thing: NVLink's 900 GB/s adds its two
# directions (450 GB/s out and 450 GB/s in at once), while PCIe's 64 GB/s is one direction of
# a Gen5 x16 link. The "counts" column says which.
#
# Read the capacities with their scope. The two top levels live *inside every SM*: each of
# the 132 SMs has its own register file and its own block of fast SRAM that serves as L1
# cache and as programmer-managed shared memory. The chapter only says "KBs per SM"; the
# companion takes Hopper's sizes from NVIDIA's H100 whitepaper (256 KiB of registers and
# 256 KiB of L1/shared memory per SM). The L2 cache, by contrast, is a single pool *for the
# whole device*, shared by all SMs, and so is the HBM. The last two rows are links off the
# card, so they have a speed but no capacity. "n/a" marks a number the chapter does not give
# (the L2's speed is only "tens of TB/s").

# %%
rows = calc.memory_pyramid(hw)


def _size(b):
    return "n/a" if b is None else units.fmt_bytes(b, "GB" if b >= units.GB else
                                                   "MB" if b >= units.MB else "KiB")


# what a link's bandwidth figure counts (HBM's is every byte read or written, either way)
counts = {"nvlink": "both directions", "pcie": "one direction"}
print(f"{'level':30} {'capacity':>10} {'whole card':>10} {'bandwidth':>12} {'counts':>15} "
      f"{'HBM / level':>11}")
for r in rows:
    bw = ("n/a" if r["bandwidth_bytes_per_s"] is None
          else f"{r['bandwidth_bytes_per_s'] / units.GB:,.0f} GB/s")
    ratio = "" if r["hbm_over_level"] is None else f"{r['hbm_over_level']:.3g}x"
    print(f"{r['level']:30} {_size(r['capacity_bytes']):>10} {_size(r['device_bytes']):>10} "
          f"{bw:>12} {counts.get(r['key'], ''):>15} {ratio:>11}")

# %%
plots.memory_hierarchy_figure(rows).show()

# %% [markdown]
# Look at the last column. Each step down the links costs a large factor: leaving HBM for
# NVLink, then leaving NVLink for PCIe. How large depends on whether the two figures count the
# same thing. 17 §1 divides the figures as printed, NVLink's two directions over PCIe's one;
# set one direction against one direction, as a transfer from one GPU to another uses them,
# and the second step is half as tall.

# %%
ratios = calc.bandwidth_ratios(hw)
nvlink_one_way = calc.nvlink_one_way_bytes_per_s(hw)       # half of the both-ways figure
pcie = hw.host_link_bytes_per_s                             # already one direction
printed = {e.id: e.printed for e in ledger.by_section("17.1")}
print(f"{'':48} {'ratio':>6}  chapter")
print(f"{'HBM / NVLink (both directions)':48} {ratios['hbm_over_nvlink']:5.2f}x  "
      f"{printed['17.1/hbm-over-nvlink']}x")
print(f"{'HBM / NVLink (one direction)':48} {hw.mem_bw_bytes_per_s / nvlink_one_way:5.2f}x")
print(f"{'NVLink (both directions) / PCIe (one direction)':48} "
      f"{ratios['nvlink_over_pcie']:5.1f}x  {printed['17.1/nvlink-over-pcie']}x")
print(f"{'NVLink / PCIe, one direction each':48} {nvlink_one_way / pcie:5.1f}x")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
md(f"""
> **Erratum: NVLink against PCIe, like for like.** The chapter's
> {printed['17.1/nvlink-over-pcie']}x sets NVLink's {hw.interconnect_bytes_per_s / units.GB:.0f}
> GB/s, which adds both directions, against PCIe's {pcie / units.GB:.0f} GB/s, which counts one.
> One direction against one direction, {nvlink_one_way / units.GB:.0f} GB/s over
> {pcie / units.GB:.0f} GB/s, NVLink is **{nvlink_one_way / pcie:.1f}x** faster (both
> directions of each, {hw.interconnect_bytes_per_s / units.GB:.0f} over
> {2 * pcie / units.GB:.0f} GB/s, give the same). Against HBM, whose
> {hw.mem_bw_bytes_per_s / units.TB:.2f} TB/s counts every byte read or written, the chapter's
> {printed['17.1/hbm-over-nvlink']}x compares total traffic; a copy that runs one way gets
> {nvlink_one_way / units.GB:.0f} GB/s, {hw.mem_bw_bytes_per_s / nvlink_one_way:.1f}x below HBM.
> The placement rule survives the smaller factor: tensor parallelism (17 §7) exchanges data
> between GPUs several times for every token, so it pays only on the fast link inside one
> server, and across PCIe it would spend more time talking than computing. 17.7 prices those
> exchanges at one direction of NVLink.
""")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
sram = {e.id: e for e in ledger.by_section("17.1")}["17.1/sram-orders-too-small"]
level = {r["key"]: r for r in rows}
l2, smem = level["l2"]["capacity_bytes"], level["shared_l1"]["capacity_bytes"]
w70, w8 = specs.LLAMA_70B.weight_bytes, specs.LLAMA_8B.weight_bytes
md(f"""
> **Loose rather than wrong: how many orders of magnitude?** 17 §1 puts the gap between on-die SRAM and a
> model at four orders of magnitude. Measured against the L2 it names, the 70B's
> {w70 / units.GB:.0f} GB of weights is {w70 / l2:,.0f} times larger
> ({sram.value:.1f} orders) and the 8B's {w8 / units.GB:.0f} GB is {w8 / l2:,.0f} times larger
> ({math.log10(w8 / l2):.1f} orders). Four orders appears only against a single SM's
> {smem / units.KiB:.0f} KiB of shared memory ({math.log10(w8 / smem):.1f} orders for the 8B),
> a size the chapter never gives. Either reading leads to the same design fact: the weights
> cannot stay on the die, so each decode step fetches them from HBM again. The ledger keeps
> the 70B's value with this note.
""")

# %% [markdown]
# ## The ratio that runs the chapter
#
# Set the card's two headline numbers against each other. With a peak of $\pi$ FLOP/s and an
# HBM bandwidth of $\beta$ bytes/s, the arithmetic the card can perform while one byte arrives
# is
#
# $$ I^\star = \frac{\pi}{\beta} \quad \text{FLOP per byte}. $$
#
# Picture a kitchen where one cook can chop far faster than the delivery van brings
# vegetables. If a recipe needs only a little chopping per crate, the cook waits at the door
# and the van sets the pace: that work is *memory-bound*. If a recipe needs a lot of chopping
# per crate, the van waits for the cook: *compute-bound*. Any service that scans a disk
# behaves the same way (17 §1 makes that comparison): once the disk is the bottleneck, faster
# CPUs change nothing. 17.2 turns $I^\star$ into the corner of the roofline.

# %%
print(f"ridge = {hw.peak_flops_per_s / 1e12:g}e12 / {hw.mem_bw_bytes_per_s / 1e12:g}e12 = "
      f"{calc.ridge_point(hw):.0f} FLOP per byte")

# %% [markdown]
# A second back-of-the-envelope number: how long does one pass over the whole memory take? A
# decode step touches nearly everything resident (the weights and every running sequence's
# KV cache), so this time bounds every such step from below, however many FLOP/s the card has:
#
# $$ t_{\text{sweep}} = \frac{\text{bytes read}}{\beta}, \qquad
#    \text{steps per second} \le \frac{1}{t_{\text{sweep}}}. $$

# %%
sweep_s = calc.memory_sweep_s(hw)
print(f"{hw.mem_bytes / units.GB:.0f} GB / {hw.mem_bw_bytes_per_s / units.TB:.2f} TB/s = "
      f"{sweep_s / units.ms:.1f} ms -> at most {1 / sweep_s:.0f} full-memory steps per second")

# %% [markdown]
# ### What FlashAttention does with the hierarchy at inference
#
# Attention compares every query of a sequence with every key. Written naively, the kernel
# would write the matrix of scores to HBM, read it back for the softmax, write the resulting
# probabilities, and read those once more to weight the values: four trips (two writes, two
# reads) through the slowest on-card level for data that is thrown away right after. FlashAttention keeps the scores on the die (17 §1). How it
# does so differs between the two phases of serving (17 §3).
#
# *Prefill* has many queries per sequence. The kernel gives each thread block a block of
# queries, streams blocks of keys and values through the SM's shared memory, computes that
# tile of scores there and folds it into a running softmax (a running maximum and sum per
# query row), then moves to the next key block. The score matrix never exists in HBM; the HBM
# traffic is reading $\mathbf{Q}$, $\mathbf{K}$, $\mathbf{V}$ and writing the output.
#
# *Decode* has one new query per sequence (a few query heads per KV head under GQA), so there
# is no block of queries to hand out: at a small batch, one thread block per sequence and KV
# head would leave most of the card's SMs idle while a long cache streams through a few of
# them. Decode kernels split the *keys and values* instead (split-KV, the idea published as
# FlashDecoding): each thread block takes one chunk of the cache, computes its partial softmax
# (its maximum, its sum and its weighted values), and a short second pass merges the chunks.
# Every cached byte is read once, by many SMs at a time, so the step can reach the bandwidth
# that 17.4's step time assumes.
#
# In both phases the trade is arithmetic for bytes: a little extra work (rescaling partial
# results as they merge) to keep intermediate data out of HBM. (The recomputation people
# associate with FlashAttention belongs to training, where the backward pass rebuilds the
# scores instead of storing them; an inference engine runs only the forward pass.) With
# hundreds of FLOPs of headroom per byte, reorganising work to save HBM traffic is the pattern
# behind most fast kernels (17 §1, §9).
#
# ## Chapter says / companion computes

# %%
ledger.show("17.1")

# %% [markdown]
# ## Other cards
#
# The same quantities for every hardware preset. Each peak is labelled with what it counts:
# the NVIDIA cards' figures are dense BF16 tensor-core peaks, while the Apple M2 Max's is an
# FP32 figure for its GPU (Apple publishes no BF16 matrix peak), so its ridge is not directly
# comparable with the others. Two lessons hold regardless. Bandwidth alone sets how fast a
# memory-bound step can go, so the card with the fastest memory wins decode even when its
# compute is no larger. And the ridge says how much work per byte a workload needs before the
# arithmetic becomes the limit; a card with a lower ridge needs less batching to get there.
#
# Two time columns, because they answer different questions. "Own memory" times each card
# reading *all of its own* memory once, 17 §1's sweep, a floor for a step that fills that card;
# a card with more memory takes longer there even when its memory is faster. The last column
# times *the same bytes* on every card, the chapter's sweep of the H100's whole memory (the
# explorer's default, below), so it compares the cards' bandwidths and nothing else.

# %%
same_bytes = hw.mem_bytes          # the chapter's sweep, 80 GB, timed on every card
same_label = f"same {same_bytes / units.GB:.0f} GB"
print(f"{'card':26} {'memory':>8} {'bandwidth':>11} {'peak TFLOP/s':>13} {'precision':>11} "
      f"{'ridge':>6} {'own memory':>11} {same_label:>11}")
for card in (specs.H100_SXM, specs.H200_SXM, specs.A100_80GB, specs.RTX_PRO_6000, specs.GH200,
             specs.M2_MAX):
    print(f"{card.name:26} {card.mem_bytes / units.GB:6.0f} GB "
          f"{card.mem_bw_bytes_per_s / units.GB:7,.0f} GB/s {card.peak_flops_per_s / units.TFLOP:13.1f} "
          f"{card.peak_precision:>11} {calc.ridge_point(card):6.0f} "
          f"{calc.memory_sweep_s(card) / units.ms:8.1f} ms "
          f"{calc.memory_sweep_s(card, same_bytes) / units.ms:8.1f} ms")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
h200 = specs.H200_SXM
md(f"""
The H200 shows why the two columns differ: sweeping its own {h200.mem_bytes / units.GB:.0f} GB
takes {calc.memory_sweep_s(h200) / units.ms:.1f} ms, longer than the H100's
{calc.memory_sweep_s(hw) / units.ms:.1f} ms, yet the same {same_bytes / units.GB:.0f} GB take
it {calc.memory_sweep_s(h200, same_bytes) / units.ms:.1f} ms. The "own memory" column mixes
how much a card holds with how fast it reads; only the "{same_label}" column ranks the cards
for a memory-bound step of a given size.
""")

# %% [markdown]
# ## Where this model breaks: the spec sheet's peaks as reachable rates
#
# Real kernels reach only a share of each peak, so both roofs sit lower and the ridge moves by
# the ratio of the two shares (the explorer's two share sliders, below, redraw its bars and
# ridges at reached rates). The table in the fold works it out with the chapter's own shares.

# %% [markdown] jp-MarkdownHeadingCollapsed=true
# #### In detail
#
# The two shares, taken from the chapter's own measurements.
#
# <!-- fold: the fuller model, its numbers and where it parts from the chapter's -->

# %% [markdown]
# The ridge and the sweep above divide two spec-sheet peaks, and no kernel runs at either.
# The chapter says so itself later: 17 §9 turns a measured decode rate into a share of the peak
# bandwidth (MBU) and a measured prefill rate into a share of the peak compute (MFU), and 17 §2
# assumes half the peak compute for a prefill. Put the shares a card reaches into the two
# formulas and both move:
#
# $$ I^\star_{\text{reached}} = \frac{\text{MFU}\cdot\pi}{\text{MBU}\cdot\beta}, \qquad
#    t_{\text{sweep}} = \frac{\text{bytes read}}{\text{MBU}\cdot\beta}. $$
#
# `calc.achieved_rates` computes both. The rows below take the shares from the chapter: its
# §9 measurements, its §2 assumption, and the ends of the explorer's two sliders further down.

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
m8 = specs.LLAMA_8B
mbu = calc.decode_utilization(m8, hw, ch17.DECODE_TOK_PER_S)["mbu"]
mfu = calc.prefill_utilization(m8, hw, ch17.PREFILL_TOK_PER_S)["mfu"]
controls = {c.name: c for c in widgets.MemoryHierarchyPanel.controls}
bw_lo, c_lo, c_hi = (controls["bandwidth_pct"].min / 100, controls["compute_pct"].min / 100,
                     controls["compute_pct"].max / 100)
readings = [
    ("the spec sheet (17 §1)", 1.0, 1.0),
    ("17 §2's prefill share, 17 §9's decode MBU", ch17.PREFILL_EFFICIENCY, mbu),
    ("17 §9's prefill MFU and decode MBU", mfu, mbu),
    ("explorer: both sliders at their lowest", c_lo, bw_lo),
    ("explorer: full compute, lowest bandwidth", c_hi, bw_lo),
]
rows = {label: calc.achieved_rates(hw, compute_efficiency=c, bandwidth_efficiency=b)
        for label, c, b in readings}
table = "\n".join(
    f"| {label} | {100 * c:.0f}% | {100 * b:.0f}% | {r['ridge_flop_per_byte']:,.0f} | "
    f"{r['sweep_s'] / units.ms:.1f} ms | {r['steps_per_s']:.0f} |"
    for (label, c, b), r in zip(readings, rows.values()))
md(f"""
| rates | compute | bandwidth | ridge (FLOP/B) | {hw.mem_bytes / units.GB:.0f} GB read once | steps/s |
|---|---|---|---|---|---|
{table}
""")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
spec, mixed, measured, low, high = rows.values()
md(f"""
> **When the peaks mislead.** For placing a workload far from the corner the spec-sheet ratio
> is fine: one FLOP per byte is memory-bound at any efficiency. Near the corner it is not. With
> the compute at the chapter's assumed {100 * ch17.PREFILL_EFFICIENCY:.0f}% and the bandwidth at
> the {100 * mbu:.0f}% that 17 §9 measures, the two roofs meet at
> **{mixed['ridge_flop_per_byte']:,.0f}** FLOP/B instead of {spec['ridge_flop_per_byte']:,.0f}
> ({100 * (1 - mixed['ridge_ratio']):.0f}% lower); with §9's measured prefill MFU,
> {100 * mfu:.0f}%, at {measured['ridge_flop_per_byte']:,.0f}. Read the measured share with
> care: it is a whole prefill's rate, and much of its gap to the peak is time spent outside the
> matrix products (attention, normalisation, kernel launches), not a lower compute roof for the
> products themselves. So a workload between the reached ridge and
> {spec['ridge_flop_per_byte']:,.0f} is not thereby compute-bound; the reached ridge only says
> where the rates a real engine measures cross. The sweep time is a floor: at the measured
> bandwidth the card's {hw.mem_bytes / units.GB:.0f} GB take
> **{mixed['sweep_s'] / units.ms:.0f} ms**, not {spec['sweep_s'] / units.ms:.0f} ms, so
> {mixed['steps_per_s']:.0f} full sweeps a second rather than {spec['steps_per_s']:.0f}. At the
> explorer's extremes the reached ridge runs from {low['ridge_flop_per_byte']:,.0f} to
> {high['ridge_flop_per_byte']:,.0f} FLOP/B ({low['ridge_ratio']:.1f}x to
> {high['ridge_ratio']:.0f}x the spec sheet's) and the sweep stretches to
> {low['sweep_s'] / units.ms:.0f} ms. The chapter's own numbers above stay the spec sheet's;
> the explorer's two share sliders, set to 100% by default, redraw the bars at reached rates.
""")

# %% [markdown]
# ## Explorer: a card's hierarchy, ridge and sweep time
#
# Pick a card and how many bytes one step must read (the chapter's setting is the full
# 80 GB). The upper panels redraw that card's pyramid; the lower bars compare, card by card,
# how long reading those bytes takes, each labelled with its ridge point. Two more sliders set
# the share of the peak bandwidth and of the peak compute a card reaches (100% each, the spec
# sheet, by default): below that the bars and ridges are the reached ones of the part above.
# The "chapter's setting" button puts the H100, 80 GB and the spec-sheet rates back.

# %% tags=["nbval-ignore-output"]
panel = widgets.MemoryHierarchyPanel()
panel.show()

# %%
numbers = panel.at().numbers
for key in ("ridge_flop_per_byte", "full_sweep_ms", "full_sweeps_per_s", "hbm_over_nvlink",
            "nvlink_over_pcie", "nvlink_over_pcie_one_way"):
    print(f"{key:24} {numbers[key]:.4g}")

# %% [markdown]
# ## Try this
#
# 1. **Predict, then move.** The H200 has the H100's arithmetic and faster memory. Before you
#    switch the explorer to it, write down which way its ridge moves and whether a
#    memory-bound decode step gets faster or slower. Then switch and compare.
#    <!-- states: panel(hardware=specs.H200_SXM.name) -->
# 2. Set "bytes read per step" to 16 GB, the 8B model's weights. At best, how many steps per
#    second can the H100 make? Keep the answer: 17.2 finds it again as a token rate.
#    <!-- states: panel(sweep_gb=16.0) -->
# 3. Choose the M2 Max. Which rows of its pyramid show "n/a", and why does its ridge come out
#    so low? Is the comparison with the H100 fair?
#    <!-- states: panel(hardware=specs.M2_MAX.name) -->
# 4. **Predict, then compute.** The box above measures the 70B and the 8B against the L2.
#    Guess how many orders of magnitude the 405B's weights sit above it, and whether any of the
#    three models reaches the chapter's four, then work it out.

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
h100 = panel.at().numbers
h200 = panel.at(hardware=specs.H200_SXM.name).numbers
answer(f"""
The ridge moves **left**: {h200['ridge_flop_per_byte']:.0f} FLOP/byte on the H200 against
{h100['ridge_flop_per_byte']:.0f} on the H100, because the same peak is divided by a larger
bandwidth ({h200['bandwidth_GBs']:,.0f} against {h100['bandwidth_GBs']:,.0f} GB/s). A
memory-bound step gets **faster**, by the bandwidth ratio alone: the explorer's
{h100['sweep_ms'] * h100['bandwidth_GBs'] / 1000:.0f} GB step takes
{h200['sweep_ms']:.1f} ms instead of {h100['sweep_ms']:.1f} ms
({h100['sweep_ms'] / h200['sweep_ms']:.2f}x faster, exactly
{h200['bandwidth_GBs'] / h100['bandwidth_GBs']:.2f}x the bandwidth). A lower ridge is not
what speeds decode up: for a memory-bound step only the bandwidth counts, and the faster
memory is what the H200 buys.
""", title="Worked answer 1")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
at16 = panel.at(sweep_gb=16.0).numbers
answer(f"""
Reading {at16['sweep_ms'] * at16['bandwidth_GBs'] / 1000:.0f} GB at
{at16['bandwidth_GBs'] / 1000:.2f} TB/s takes {at16['sweep_ms']:.2f} ms, so the H100 can make
at most **{at16['steps_per_s']:.0f} steps per second**. A batch-1 decode step of the 8B reads
exactly its weights, so this is also its ceiling in tokens per second, whatever its
{at16['peak_TFLOPs']:.0f} TFLOP/s: for a memory-bound step the bytes it must read, divided by
the bandwidth, set the speed limit (17.2 finds the same number on the roofline).
""", title="Worked answer 2")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
m2 = specs.M2_MAX
mac = panel.at(hardware=specs.M2_MAX.name).numbers
h100 = panel.at().numbers
# the explorer draws the pyramid; its numbers name no rows, so read them from the same calc
missing = [r["level"] for r in calc.memory_pyramid(m2)
           if r["capacity_bytes"] is None and r["bandwidth_bytes_per_s"] is None]
answer(f"""
The rows without any number are {", ".join(missing)}: the preset has no SM count (so no per-SM
sizes), no L2 size and no NVLink or PCIe link (its memory is shared with the CPU). Its ridge is
{mac['ridge_flop_per_byte']:.0f} FLOP/byte ({mac['peak_TFLOPs']:.1f} TFLOP/s
{m2.peak_precision} over {mac['bandwidth_GBs']:.0f} GB/s) against
{h100['ridge_flop_per_byte']:.0f} for the H100. The ridge comparison is only rough: the M2
Max's peak is an FP32 figure, the H100's a dense BF16 tensor-core one. The bandwidth
comparison is fair, {h100['bandwidth_GBs'] / mac['bandwidth_GBs']:.1f} times in the H100's
favour ({mac['sweep_ms']:.0f} ms against {h100['sweep_ms']:.1f} ms for the same
{h100['sweep_ms'] * h100['bandwidth_GBs'] / 1000:.0f} GB), and it is the one decode cares
about: compare cards by what the workload is bound by, and only with peaks that count the
same thing.
""", title="Worked answer 3")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
w405 = specs.LLAMA_405B.weight_bytes
answer(f"""
{w405 / units.GB:.0f} GB / {l2 / units.MB:.0f} MB = **{w405 / l2:,.0f}**, that is
{math.log10(w405 / l2):.1f} orders of magnitude: the 405B reaches the chapter's four, while the
70B ({math.log10(w70 / l2):.1f}) and the 8B ({math.log10(w8 / l2):.1f}) fall short. Against one
SM's {smem / units.KiB:.0f} KiB of shared memory even the 70B is {w70 / smem:,.0f} times larger
({math.log10(w70 / smem):.1f} orders). So "four orders" is loose, right for the largest model
and too many for the smaller ones, and every reading gives the same lesson: no model of these
sizes lives on the die, so each decode step streams its weights from HBM.
""", title="Worked answer 4")
# %% [markdown]
# Next: [17.2 Roofline](17_02_roofline.ipynb) places decode and prefill on this ratio.
#
# > **What you can now compute**
# > - A card's ridge point $I^\star = \pi/\beta$, and from it whether a workload is memory- or compute-bound ([Exercise 17-3](../../exercises/ex17_3.ipynb)).
# > - The time to stream a given number of bytes from HBM, the floor under every decode step ([Exercise 17-4](../../exercises/ex17_4.ipynb)).
# > - How much slower NVLink and PCIe are than HBM, and why tensor parallelism stays on NVLink ([Exercise 17-5](../../exercises/ex17_5.ipynb)).
# > - Whether a model's weights fit on one card at all ([Exercise 17-2](../../exercises/ex17_2.ipynb)).
# >
# > <details><summary>Assumptions this notebook made</summary>
# >
# > A card runs at its spec-sheet peaks, dense BF16 compute
# > and full HBM bandwidth, in the ratio, the sweep and the card comparison (the part on
# > reached rates lowers both); a step reads the bytes it names once, with nothing served
# > from L2 and no other traffic; the per-SM register and shared-memory sizes come from
# > NVIDIA's H100 whitepaper, not the chapter; the M2 Max's peak is an FP32 figure; the link
# > figures are the spec sheet's, NVLink's adding both directions and PCIe's counting one.
# >
# > </details>
