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
# **The question.** A GPU advertises about a thousand trillion floating-point operations per
# second. Why does generating text on it run at a tiny fraction of that? The short answer is
# that the arithmetic units can only work on data that has been brought to them, and bringing
# data from the GPU's main memory is slow compared with how fast they compute. This notebook
# lays out the memory levels of the chapter's card, computes the one ratio the rest of
# Chapter 17 keeps returning to, and lets you compare cards.
#
# [Chapter 17 overview](17_00_overview.ipynb) | next: [17.2 Roofline](17_02_roofline.ipynb)

# %%
from companion import calc, ledger, plots, specs, units, widgets

hw = specs.H100_SXM

# %% [markdown]
# ## A GPU in three words: kernels, SMs, warps
#
# Everything a GPU does is a sequence of *kernels*: one function (a matrix multiply, a
# softmax over some rows) launched over thousands of threads at once. The threads are spread
# over *streaming multiprocessors* (SMs), each with its own arithmetic units, a slice of fast
# on-chip memory and a scheduler; the chapter's H100 SXM has 132 of them. Threads run in
# groups of 32 (a *warp*) that execute one instruction on 32 data lanes.
#
# A CPU core copes with slow memory through big caches and by guessing ahead. A GPU copes by
# keeping many warps resident on each SM: when one warp waits for memory, the scheduler
# switches to another that is ready. That only works when there is plenty of independent
# work in flight. Decoding one token for one user is the case where there is not (17 §1).

# %%
print(f"{hw.name}: {hw.sm_count} SMs, {hw.mem_bytes / units.GB:.0f} GB of HBM at "
      f"{hw.mem_bw_bytes_per_s / units.TB:.2f} TB/s, "
      f"{hw.peak_flops_per_s / units.TFLOP:.0f} dense BF16 TFLOP/s")

# %% [markdown]
# ## The pyramid (re-derived)
#
# Each level of memory trades capacity for speed: registers and on-die SRAM (shared memory and
# the L2 cache) are fast and tiny, HBM (the DRAM stacks on the GPU package) holds the model and
# its caches, and links lead off the card to other GPUs (NVLink) or to the host (PCIe).
#
# *Our copy of the chapter lost the pyramid's table (a "truncated lines" gap), so the rows
# below are re-derived* by `calc.memory_pyramid` from the chapter's own numbers: its diagram
# ("KBs per SM, ~1 ns"; "~50 MB L2"; "80 GB @ 3.35 TB/s"; "NVLink ~900 GB/s"; "PCIe ~64 GB/s")
# and the card preset. The register file is the one number the chapter gives only in words;
# the companion takes the Hopper figure of 256 KiB per SM. "n/a" marks a cell the chapter
# gives no number for (the L2's bandwidth is only "tens of TB/s").

# %%
rows = calc.memory_pyramid(hw)
print(f"{'level':28} {'capacity':>12} {'bandwidth':>12} {'HBM / level':>12}")
for r in rows:
    c = r["capacity_bytes"]
    cap = "n/a" if c is None else units.fmt_bytes(c, "GB" if c >= units.GB else "MB")
    bw = ("n/a" if r["bandwidth_bytes_per_s"] is None
          else f"{r['bandwidth_bytes_per_s'] / units.GB:,.0f} GB/s")
    ratio = "" if r["hbm_over_level"] is None else f"{r['hbm_over_level']:.3g}x"
    print(f"{r['level']:28} {cap:>12} {bw:>12} {ratio:>12}")

# %%
plots.memory_hierarchy_figure(rows).show()

# %% [markdown]
# Two ratios between the rows matter later. NVLink is a few times slower than HBM, and PCIe
# is more than ten times slower than NVLink. That second gap is why tensor parallelism, which
# talks across GPUs many times per token, has to stay on NVLink inside one server (17 §7):

# %%
ratios = calc.bandwidth_ratios(hw)
print(f"HBM / NVLink  = {ratios['hbm_over_nvlink']:.2f}x   (the chapter: 3.7x slower than HBM)")
print(f"NVLink / PCIe = {ratios['nvlink_over_pcie']:.1f}x   (the chapter: 14x faster than PCIe)")

# %% [markdown]
# > **Erratum box: "four orders of magnitude too small".** The chapter says SRAM is four
# > orders of magnitude too small to hold a model. Against the ~50 MB of L2 it names, the
# > 70B's 140 GB of weights is about 2,800 times larger (3.4 orders) and the 8B's 16 GB about
# > 320 times (2.5 orders). Four orders only appears if "SRAM" means one SM's shared memory
# > (a few hundred KB against 16 GB), a figure the chapter does not state. Both readings say
# > the same thing that matters: weights cannot stay on the die, so every decode step reads
# > them from HBM again. The ledger keeps the honest number and the note:

# %%
sram = {e.id: e for e in ledger.by_section("17.1")}["17.1/sram-orders-too-small"]
print(f"chapter: {sram.printed} {sram.unit}; companion: {sram.value:.2f}")
print(sram.note)

# %% [markdown]
# ## The ratio that runs the chapter
#
# Put the compute roof and the memory speed side by side. If the card can do $P$ FLOP/s and
# read $\beta$ bytes/s from HBM, then in the time it takes to fetch one byte it could have done
#
# $$ \frac{P}{\beta} \;\text{FLOP per byte}. $$
#
# A workload that does fewer operations than that for each byte it reads leaves the
# arithmetic units waiting: it is *memory-bound*, and its speed is set by bytes moved. One that
# does more is *compute-bound*. This is the same reasoning as a service that reads from disk:
# once the disk is saturated, more CPU does nothing. Section 17.2 turns the ratio into the
# roofline's ridge point.

# %%
print(f"ridge = {hw.peak_flops_per_s / 1e12:g}e12 / {hw.mem_bw_bytes_per_s / 1e12:g}e12 = "
      f"{calc.ridge_point(hw):.0f} FLOP per byte")

# %% [markdown]
# A second number you can work out in your head: how long it takes just to read the whole
# card once. A decode step reads roughly everything that is resident (weights plus the KV
# cache of every running sequence), so this time is a floor under any step that touches the
# whole memory, however fast the arithmetic is.
#
# $$ t_{\text{sweep}} = \frac{\text{bytes}}{\beta}, \qquad
#    \text{steps per second} \le \frac{1}{t_{\text{sweep}}}. $$

# %%
sweep_s = calc.memory_sweep_s(hw)
print(f"{hw.mem_bytes / units.GB:.0f} GB / {hw.mem_bw_bytes_per_s / units.TB:.2f} TB/s = "
      f"{sweep_s / units.ms:.1f} ms -> at most {1 / sweep_s:.0f} full-memory steps per second")

# %% [markdown]
# The same hierarchy explains the design of the fastest attention kernels. FlashAttention
# never writes the attention score matrix out to HBM: it works on tiles that fit in SRAM and
# throws the scores away once used. It does some arithmetic twice to avoid the memory traffic,
# and with a few hundred FLOPs available per byte that is a bargain (17 §1, §9).
#
# ## Chapter says / companion computes

# %%
print(ledger.table("17.1"))

# %% [markdown]
# ## Other cards
#
# The same two numbers for every hardware preset in the companion. Of these cards the H100
# has the highest ridge: its compute outgrew its memory speed. The H200 and GH200 keep the
# H100's compute but read memory faster, so they reach the compute roof at a lower intensity;
# the A100 and the M2 Max have far less compute, so their ridges are lower still. A lower ridge
# does not make decode faster (that is set by bandwidth alone); it only means less batching is
# needed before the arithmetic units become the limit.

# %%
print(f"{'card':28} {'memory':>8} {'bandwidth':>11} {'TFLOP/s':>8} {'ridge':>7} {'sweep':>9}")
for card in (specs.H100_SXM, specs.H200_SXM, specs.A100_80GB, specs.RTX_PRO_6000, specs.GH200,
             specs.M2_MAX):
    print(f"{card.name:28} {card.mem_bytes / units.GB:6.0f} GB "
          f"{card.mem_bw_bytes_per_s / units.GB:7,.0f} GB/s {card.peak_flops_per_s / units.TFLOP:8.1f} "
          f"{calc.ridge_point(card):7.0f} {calc.memory_sweep_s(card) / units.ms:6.1f} ms")

# %% [markdown]
# ## Explorer: a card's hierarchy, ridge and sweep time
#
# Pick a card and the number of bytes one step must read (the chapter's setting: the whole
# 80 GB). The top panels redraw that card's pyramid; the bottom bars compare the time to read
# those bytes on every card, labelled with each card's ridge point. The "chapter's setting"
# button restores the H100 and 80 GB.

# %% tags=["nbval-ignore-output"]
panel = widgets.MemoryHierarchyPanel()
panel.show()

# %%
numbers = panel.update().numbers
for key in ("ridge_flop_per_byte", "full_sweep_ms", "full_sweeps_per_s", "hbm_over_nvlink",
            "nvlink_over_pcie"):
    print(f"{key:22} {numbers[key]:.4g}")

# %% [markdown]
# ## Try this
#
# 1. Switch the explorer to the H200. Its compute is the H100's, its bandwidth is higher:
#    which way does the ridge move, and what does that mean for a memory-bound decode?
# 2. Set "bytes read per step" to 16 GB (the 8B model's weights). How many steps per second
#    can the H100 make at best? Keep the number: notebook 17.2 derives it as a token rate.
# 3. The M2 Max has no NVLink or PCIe link in its preset: which rows of the pyramid go "n/a",
#    and why does the ridge of a laptop chip come out so low?
# 4. Compute by hand how many times the 70B's 140 GB of weights exceeds 50 MB, then check
#    the ledger note above: which reading of "four orders of magnitude" do you find fair?
#
# **Practice problems.** The Chapter 17 practice set lives in
# [the exercises folder](../../exercises/) (`ex17_*.ipynb`); for this section, look for the
# problems on the ridge point of a card and the full-memory sweep time.
#
# Next: [17.2 Roofline](17_02_roofline.ipynb) places decode and prefill on this ratio.
