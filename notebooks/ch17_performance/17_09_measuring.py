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
# # 17.9 Measuring it: utilization, MBU and MFU
#
# **The question.** Everything so far was derived. On a live system you must check the
# derivations against measurements. Which numbers tell you how close a deployment is to what
# the hardware allows, and which popular number does not?

# %%
from companion import calc, ledger, plots, specs, units, widgets
from companion.chapters.ch17 import DECODE_TOK_PER_S, PREFILL_TOK_PER_S

hw = specs.H100_SXM
m8 = specs.LLAMA_8B

# %% [markdown]
# ## What "GPU util" measures
#
# The utilization that `nvidia-smi` reports is *kernel residency*: the fraction of the sampling
# window during which at least one kernel was running on the GPU. It does not say how many of
# the 132 SMs that kernel used, nor whether those SMs were computing or waiting for memory. A
# kernel that occupies a single SM and never exits reads as fully utilized, while at most one
# SM's worth of arithmetic is in use:
#
# $$\text{compute in use} \le \frac{\text{SMs busy}}{\text{SMs on the chip}}.$$

# %%
share = calc.sm_share(1, hw)
print(f"one always-resident kernel on 1 of {hw.sm_count} SMs: nvidia-smi util 100%, compute in "
      f"use <= {100 * share:.2f}%")
decode_fraction = calc.roofline_point(calc.decode_intensity(m8), hw)["fraction_of_peak"]
print(f"batch-1 decode of the 8B: a kernel is resident almost all the time, and the roofline "
      f"allows {100 * decode_fraction:.2f}% of peak arithmetic (17 §2)")
sms = list(range(1, hw.sm_count + 1))
plots.sm_share_figure(sms, [calc.sm_share(s, hw) for s in sms]).show()

# %% [markdown]
# So "utilization is high, we need more GPUs" is the wrong conclusion from that gauge; for
# batch-1 decode the fix is a larger batch, which costs nothing. The memory gauge misleads
# too: engines such as vLLM reserve most of HBM for their KV pool at start-up, so "memory used"
# reads nearly full whether the pool holds one sequence or hundreds. The engine's own counters
# (KV-pool occupancy, preemptions) answer that question instead.
#
# ## Two ratios that mean something
#
# Both start from a throughput you measured and the model's fixed constants.
#
# - **MFU** (model FLOPs utilization): the FLOPs your token rate implies over the dense peak,
#   $\text{MFU} = \dfrac{\text{tok/s} \times 2P}{\text{peak FLOP/s}}$.
# - **MBU** (model bandwidth utilization): the bytes your decode must stream per second over
#   peak bandwidth. Each decode step reads the weights once for the whole batch of $B$ and
#   each sequence's $L$ tokens of KV, so per output token
#   $\text{MBU} = \dfrac{\text{tok/s} \times (D_w / B + L\,k)}{\text{bandwidth}}$.
#
# The phase decides which ratio is the verdict. Decode lives on the memory roof, so MBU says
# how close it is to its ceiling, and $1/\text{MBU}$ bounds any further speed-up a kernel could
# bring. Prefill lives on the compute roof, so MFU is its verdict. Quoting the other ratio for
# a phase is the measurement version of quoting sparse TFLOPS.

# %%
dec = calc.decode_utilization(m8, hw, DECODE_TOK_PER_S)
pre = calc.prefill_utilization(m8, hw, PREFILL_TOK_PER_S)
print("decode, 8B, batch 1, measured 146 tok/s:")
print(f"  bytes/s {dec['bytes_per_s']:.3g} -> MBU {100 * dec['mbu']:.1f}%")
print(f"  FLOP/s  {dec['flops_per_s']:.3g} -> MFU {100 * dec['mfu']:.3f}%")
print(f"  headroom at most 1 / MBU = {dec['headroom']:.2f}x "
      f"(the ceiling is {calc.decode_time_split(m8, hw)['tokens_per_s']:.0f} tok/s)")
print("prefill, 8B, measured 20,000 prompt tok/s:")
print(f"  FLOP/s  {pre['flops_per_s']:.3g} -> MFU {100 * pre['mfu']:.1f}%")

# %% [markdown]
# One measurement, two opposite verdicts: the decode is healthy (about 70% of the bandwidth it
# could use) even though its MFU looks catastrophic, and no kernel can make it more than about
# 1.4x faster: a promised 5x has to come from a lever that changes the workload (batch,
# quantization). The prefill runs at about a third of peak, inside the range where profiling
# for the remaining headroom is worth it (40-60% counts as strong).

# %%
ui = widgets.UtilizationPanel()
ui.figure().show()

# %% [markdown]
# ## The standing dashboard
#
# Before any profiler, the chapter's list of always-on metrics, restated: tokens/s for prefill
# and decode *separately*; TTFT p50/p90 and ITL p50/p99 (the tails hold the diagnoses: p99 ITL
# jumping when long prompts arrive is head-of-line blocking); MBU and MFU from those rates
# (two multiplications each); KV-pool occupancy and preemptions per minute from the engine
# (occupancy pinned at 100% with preemptions rising means the batch is capped by memory); and
# the batch size per iteration (if it never reaches its cap while requests wait, something
# upstream is the limit).
#
# ## The profiler pair, in one paragraph
#
# Nsight Systems (`nsys`) draws the whole timeline: kernels, copies, NCCL collectives and CPU
# threads on one time axis. It answers *where the wall clock went*: gaps between kernels while
# the CPU is busy (launch overhead; CUDA Graphs remove it), collectives that do not overlap
# compute under TP, host work on the critical path. Nsight Compute (`ncu`) replays one kernel
# and tells *why that kernel is slow*: its Speed of Light section gives the kernel's share of
# peak compute and of peak memory throughput side by side, a per-kernel roofline verdict,
# plus occupancy and achieved bandwidth. The order matters: `nsys` first to find the kernel or
# gap that owns the time, then `ncu` on that kernel.
#
# ## What a healthy decode profile looks like (a checklist)
#
# Our paraphrase of the chapter's list, as questions to ask of a trace:
#
# 1. **Is the GPU row dense?** Idle gaps between kernels should be a few percent of a step at
#    most; if not, check that CUDA Graphs are really on.
# 2. **Is the step a handful of big kernels?** Attention and the large matrix-vector products
#    should dominate, not thousands of tiny kernels.
# 3. **Do those kernels sit on the memory roof?** Speed of Light: memory throughput high
#    (roughly 60-80% or more), compute low. For decode that is correct; do not "fix" it.
# 4. **Is the whole-step MBU in the 60-80% band?** Around 20% points at a batch that is too
#    small, unfused kernels or scattered KV reads.
# 5. **Under TP, are the collectives hidden?** NCCL time should overlap compute or stay under
#    about a tenth of the step.
# 6. **Is the batch at a real limit?** It should sit at the KV-memory cap or the ITL limit,
#    not at a default nobody raised.
#
# Measure it yourself: the [lab notebook](../lab/measure_it_yourself.ipynb) times decode steps
# on your own machine, computes your MBU and places the result on a roofline.

# %% [markdown]
# ## Chapter says / companion computes

# %%
print(ledger.table("17.9"))

# %% [markdown]
# ## Explorer: MBU and MFU of your measurement
#
# Type in a measured decode rate (for the whole batch) and a measured prefill rate, choose the
# model and card, and give the batch and live context of the decode measurement (they change
# the bytes each token costs). The shaded bands are the chapter's healthy ranges: 60-80% MBU
# for decode, 40-60% MFU for prefill. The right panel sets the measured rate against the
# memory-roof ceiling it implies (measured / MBU).

# %% tags=["nbval-ignore-output"]
ui.show()

# %%
n = ui.update().numbers
print(f"decode MBU {n['decode_mbu_pct']:.1f}%, MFU {n['decode_mfu_pct']:.3f}%, headroom "
      f"{n['headroom']:.2f}x (ceiling {n['ceiling_tok_s']:.0f} tok/s); prefill MFU "
      f"{n['prefill_mfu_pct']:.1f}%")
n = ui.update(decode_tok_s=9300, batch=57, context_tokens=600).numbers
print(f"17 §5's naive batch (57 sequences, 600 live tokens) at its computed ceiling of "
      f"9,300 tok/s: MBU {n['decode_mbu_pct']:.0f}% (the roof itself), MFU "
      f"{n['decode_mfu_pct']:.1f}%")
_ = ui.reset()

# %% [markdown]
# ## Try this
#
# - A colleague reports 150 tok/s for the 70B shape at batch 1 on one H100. Put it in the
#   explorer. What does an MBU above 100% tell you about the measurement?
# - At batch 64 and 8,000 live tokens per sequence, which measured rate would be a healthy 70%
#   MBU? Compare it with the weights-only answer at the same batch.
# - Switch the card to an H200 with the 8B's 146 tok/s. Is the deployment still healthy?
# - Your prefill MFU reads 30%. List three causes (the chapter's closing interview answer
#   names several) that the ratio alone cannot tell apart, and the profiler view that would.
# - Run the [lab notebook](../lab/measure_it_yourself.ipynb) and put your own machine's MBU
#   into the explorer's bands.
#
# **Practice problems.** The Chapter 17 practice problems in
# [the exercises folder](../../exercises/) include MBU and MFU from measured rates and the
# nvidia-smi utilization trap. Previous:
# [17.8 Disaggregated serving and KV-aware routing](17_08_disaggregation_and_routing.ipynb);
# next: [17.10 The levers, ranked](17_10_levers.ipynb).
