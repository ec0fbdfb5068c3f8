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
# # Lab: measure it yourself
#
# **The question.** Chapter 17 builds its whole argument from two datasheet numbers, memory
# bandwidth and peak compute, plus one number you count, FLOP per byte moved (17 §1-§2).
# Chapter 8 closes by calibrating the same two ratios against a real engine's per-round log
# (8.6.3), and Chapter 17 ends by telling you to sweep the batch size and compute MBU and MFU
# yourself (17 §5, §9). This lab does that on the computer running this notebook:
#
# 1. measure its memory bandwidth and its matrix-multiply throughput,
# 2. build a `Hardware` for it and place it on the roofline beside the chapters' GPUs,
# 3. run a miniature decode step (real Qwen3-8B layer shapes, scaled down) at growing batch,
#    with its tokens per second, MBU and MFU,
# 4. fit the bandwidth the attention gets from its KV cache (a context sweep),
# 5. tell a per-step cost from a per-byte one (a weight-size sweep),
# 6. save the measurement to a file, and 7. load a saved one instead of measuring,
# 8. run the same fit on Chapter 8's per-round log, where it breaks.
#
# Nothing here needs a GPU. With `torch` and CUDA installed, `measure()` adds a GPU copy and
# bf16/fp16 matrix products; without them it quietly skips them. `README.md` next to this
# notebook says how to run it at full size and how to pool a class's files.

# %% [markdown]
# ## What to expect, before measuring anything
#
# **The ridge point is a ratio of two speeds.** Divide the FLOP/s a chip can do by the bytes/s
# its memory can deliver and you get how many operations each fetched byte must feed before
# the arithmetic, rather than the memory, becomes the limit (17 §1). A data-centre GPU is
# built to be extreme here: thousands of arithmetic lanes sit behind one memory system. A CPU
# has far fewer lanes per byte of bandwidth, so its ridge sits much further left, at a few
# FLOP per byte instead of hundreds.
#
# **Decode's intensity is set by the batch.** One decode step streams every weight once and
# uses each weight once per request in the batch: 2 FLOP (a multiply and an add) per weight
# per request. Per byte, that is 2b / (bytes per weight): b FLOP/byte with 2-byte weights, as
# 17 §2 counts for BF16. numpy on a CPU has no fast BF16 matrix product, so this lab stores
# its weights in **float32 (4 bytes): intensity b / 2**; in float64 it would be b / 4. Keep
# that factor in mind whenever you compare with the chapter.
#
# **So the prediction is:** the step time stays flat while the weight read dominates, and
# starts to grow with b once b / 2 passes the ridge, at b of about 2 x ridge. That counts the
# weights only. Every request also reads its own KV cache each step, which no batch shares, so
# the intensity levels off: with 8.2.1's byte count D_w + b L k it can never pass F / (L k),
# F being the FLOP per request (17 §2 makes the same point).
# The first cell below prints both versions for the chapters' GPUs: counting the weights
# alone they leave the memory roof at a batch of a few hundred; counting the KV at the
# chapters' own contexts they never do. A CPU's ridge is so low that its decode does cross it.
#
# **And the real step is slower than the roofline.** 8.6.3's batch-1 round took 26.26 ms,
# about three times what its read needs at spec bandwidth; the chapter explains the rest as a
# cost per round (kernel launches, host scheduling) added to the read. This lab fits that
# additive model and tests it twice: section 5 asks whether a CPU's excess is per step or per
# byte, and section 8 shows that on the chapter's own log the two costs do not simply add.

# %%
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from threadpoolctl import threadpool_limits

from companion import calc, plots, specs
from companion import measure as ms
from companion.chapters import ch08, ch17
from companion.display import answer, md

FAST = ms.fast_mode()   # COMPANION_FAST=1 (tests, notebook execution): tiny sizes, seconds
REFERENCE = Path("measurements") / "reference_2core_epyc.json"


def kv_ridge(model, hardware, context_tokens, bytes_per_value=2):
    """Decode with every request's KV counted (8.2, 17 §2): the intensity b F / (D_w + b L k)
    never passes F / (L k), whatever the batch. Returns that ceiling and the batch where the
    intensity reaches the ridge (None: never). F = 2 x parameters FLOP per request."""
    flop = calc.matrix_flops(model, 1, include_lm_head=True)
    d_w = model.streamed_weight_bytes * bytes_per_value / model.bytes_per_param
    per_request = context_tokens * calc.kv_bytes_per_token(model, bytes_per_value)
    ridge = calc.ridge_point(hardware)
    batch = None if flop <= ridge * per_request else ridge * d_w / (flop - ridge * per_request)
    return flop / per_request, batch


CHAPTER_SETTINGS = ((specs.RTX_PRO_6000, specs.QWEN3_8B, ch08.SHORT_PROMPT_TOKENS, "8.6.3"),
                    (specs.H100_SXM, specs.LLAMA_8B, ch17.CHAT_LIVE_TOKENS, "17 §2"))
for gpu, model, context, where in CHAPTER_SETTINGS:
    ridge = calc.ridge_point(gpu)
    ceiling, batch = kv_ridge(model, gpu, context)
    print(f"{gpu.name}: ridge {ridge:.1f} FLOP/byte ({gpu.peak_precision} peak); {model.name}, BF16")
    print(f"  weights only: decode reaches the ridge at batch "
          f"{ridge / calc.decode_intensity(model, 1):.0f}")
    print(f"  with {context:,}-token contexts ({where}): intensity never passes F/(L k) = "
          f"{ceiling:.0f} FLOP/byte -> "
          + ("never leaves the memory roof, at any batch" if batch is None else
             f"reaches the ridge at batch {batch:.0f}"))

# %% [markdown]
# ## 1. Measure
#
# `ms.measure()` runs every probe. Full sizes take about half a minute on a quiet 2-core
# machine (two to four times that if other programs are busy on it). With
# `COMPANION_FAST=1` everything is shrunk to run in a second or two on one thread.
#
# > **What fast mode can and cannot show.** The stored outputs were made in fast mode, as the
# > test suite runs it: every probe, fit and figure works, and the tables have their shape. But
# > its arrays fit in the cache, so it times the cache, not the memory, and its steps last a
# > millisecond or two, so jitter is as large as the effects fitted. Each fit below says when
# > it cannot be trusted, and why. For meaningful numbers run at full size (unset
# > `COMPANION_FAST`), or read section 7's stored full-size run.
#
# <details><summary>What each probe runs, and what the lite site measures</summary>
#
# * **Bandwidth, STREAM-style** (`stream_probe`): copy, scale, add and triad on three float64
#   arrays of 4 x the last-level cache each, so every byte comes from DRAM. Bytes are counted
#   the STREAM way: each array read or written counts once (copy 2 arrays, triad 3). A normal
#   store first reads the cache line it will overwrite (write-allocate), so the bus carries
#   more than that; the table shows both counts. A fifth kernel, `read`, only reads (a dot
#   product), which is what a decode step mostly does.
# * **Matrix products** (`matmul_probe`): n x n times n x n, 2 n³ FLOP, in float32 and
#   float64, through whatever BLAS numpy uses.
# * **Decode sweeps** (`decode_sweep`): sections 3 and 4.
#
# Every probe repeats and keeps every sample; the tables show the median and the spread. By
# default every probe uses every usable core; `ms.measure(threads=1)` limits all of them at
# once, the BLAS included.
#
# **In the lite site** (the companion running in your browser, nothing installed) the kernel
# is Python compiled to WebAssembly, on one thread, with numpy's own plain BLAS. There
# `ms.measure()` uses smaller sizes that finish in about ten seconds, and its label says what
# it measured: the browser's WebAssembly, which is a real machine to put on a roofline, but
# not your computer's native speed.
#
# </details>

# %% tags=["nbval-ignore-output"]
t0 = time.perf_counter()
m = ms.measure(fast=FAST, label="this machine")
measure_s = time.perf_counter() - t0
info = m.machine
blas = ", ".join(f"{b['internal_api']} {b['version']} ({b['num_threads']} "
                 f"thread{'' if b['num_threads'] == 1 else 's'})"
                 for b in info["blas"] if b.get("user_api") == "blas")
sizes = "fast" if FAST else "browser" if ms.in_browser() else "full"
print(f"measured {m.label} in {measure_s:.1f} s ({sizes} sizes)")
print(f"CPU {info['cpu_model']}, {info['usable_cores']} usable cores, "
      f"{info['mem_bytes'] / 1e9:.1f} GB memory, last-level cache "
      f"{(info['last_level_cache_bytes'] or 0) / 2**20:.0f} MiB")
print(f"numpy {info['numpy_version']}, BLAS: {blas or 'unknown'}; GPU: {info['gpu_name']}")

# %%
def bandwidth_table(measurement):
    print(f"{'kernel':7} {'device':6} {'array':>8} {'thr':>3} {'median GB/s':>11} "
          f"{'best GB/s':>9} {'spread GB/s':>13} {'best, with write-allocate':>26}")
    for r in measurement.bandwidth:
        lo, hi = r.bytes_per_run / r.time_s.max / 1e9, r.bytes_per_run / r.time_s.min / 1e9
        wa = r.write_allocate_bytes_per_run / r.time_s.min / 1e9
        print(f"{r.kernel:7} {r.device:6} {r.array_bytes / 2**20:5.0f} MiB {r.threads:3d} "
              f"{r.median_bytes_per_s / 1e9:11.1f} {r.best_bytes_per_s / 1e9:9.1f} "
              f"{lo:6.1f}-{hi:<6.1f} {wa:26.1f}")


def matmul_table(measurement):
    print(f"{'device':6} {'dtype':9} {'n':>5} {'median GFLOP/s':>14} {'best GFLOP/s':>12} "
          f"{'spread GFLOP/s':>15}")
    for r in measurement.matmul:
        lo, hi = r.flop_per_run / r.time_s.max / 1e9, r.flop_per_run / r.time_s.min / 1e9
        print(f"{r.device:6} {r.dtype:9} {r.n:5d} {r.median_flop_per_s / 1e9:14.1f} "
              f"{r.best_flop_per_s / 1e9:12.1f} {lo:7.1f}-{hi:<7.1f}")


# %% tags=["nbval-ignore-output"]
bandwidth_table(m)
print()
matmul_table(m)

# %% [markdown]
# Things to notice in your own numbers:
#
# * The kernels that write usually report less than `read`: part of what they move is never
#   counted (the write-allocate column adds it back), and numpy's element-wise loops, even
#   split over threads, stream memory less efficiently than the BLAS dot product does.
# * float64 products run at about half the float32 rate: the vector units hold half as many
#   float64 lanes. The "peak" of a machine depends on the number format, exactly as the
#   chapter's 989 TFLOP/s is a dense BF16 figure (17 §2).

# %% [markdown]
# ## 2. This machine as a `Hardware`
#
# `hardware_from_measurement` turns the best bandwidth (STREAM's convention: bytes over the
# fastest run, highest of the kernels) and the best matrix-product rate into a
# `companion.specs.Hardware`, so any function that takes an H100 also takes this machine.
# We use the float32 peak, the format the decode sweep runs in; the `Hardware` records that
# format (`peak_precision`), as the chapters' cards record theirs.

# %% tags=["nbval-ignore-output"]
hw = ms.hardware_from_measurement(m, dtype="float32")
ridge = calc.ridge_point(hw)
h100 = specs.H100_SXM
h100_ridge = calc.ridge_point(h100)
print(f"{hw.name}: {hw.mem_bw_bytes_per_s / 1e9:.1f} GB/s, "
      f"{hw.peak_flops_per_s / 1e9:.1f} GFLOP/s {hw.peak_precision} -> ridge {ridge:.2f} FLOP/byte")
print(f"H100 SXM ridge {h100_ridge:.0f} FLOP/byte ({h100.peak_precision}): "
      f"{h100_ridge / ridge:.0f} x further right")
print(f"bandwidth: the H100 has {h100.mem_bw_bytes_per_s / hw.mem_bw_bytes_per_s:.0f} x "
      f"this machine's (bytes are bytes, whatever the format)")
print(f"compute: {h100.peak_flops_per_s / hw.peak_flops_per_s:,.0f} x, but that sets the H100's "
      f"{h100.peak_precision} tensor-core peak beside this CPU's {hw.peak_precision} rate")

# %% [markdown]
# Read the compute ratio with its formats: it sets the H100's dense BF16 tensor-core peak
# beside numpy's float32 rate (numpy has no fast BF16 product). NVIDIA's datasheet puts the
# H100's plain FP32 rate more than ten times below its BF16 peak; the companion's presets do
# not hold that figure, so the like-for-like ratio is not printed, but it is more than ten
# times smaller. Bytes have no format, so the bandwidth ratio stands. Either way a GPU's lead
# is far larger at arithmetic than at fetching bytes: hence its ridge far to the right, and
# decode, with little arithmetic per byte, wasting most of a GPU.

# %% [markdown]
# ## 3. The decode sweep

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
full = ms.FULL_SIZES["batch_sweep"]
stack = ms.scaled_decode_model(scale=full["scale"], n_layers=full["n_layers"])
md(f"""
<details><summary>What one decode step does</summary>

`decode_sweep` builds a stack of transformer layers with Qwen3-8B's proportions, every width
divided by {full['scale']}: hidden {stack.hidden_size}, {stack.n_query_heads} query heads and
{stack.n_kv_heads} KV heads of {stack.head_dim}, FFN {stack.intermediate_size}, so
{stack.streamed_weight_bytes / stack.n_layers / 1e6:.1f} MB of float32 weights per layer. Full
size stacks {stack.n_layers} layers, {stack.streamed_weight_bytes / 1e6:.0f} MB, which has to
be larger than the last-level cache for every step to stream its weights from DRAM (the sweep
cell below checks that against this machine's cache). Fast mode uses one layer at a smaller
scale. One step multiplies b activation rows through Q, K, V, attends each request's queries
over its own cached keys and values (a separate KV array per request, `context_tokens` long,
so the KV read grows as b x L), then O and the MLP. It counts bytes read as the chapter
does, D(b, L) = D_w + b L k (8.2.1), and FLOP as 2 x parameters x b plus the attention's
4 x head_dim x query heads x layers per cached token.

</details>
""")

# %% [markdown]
# `analyze_sweep` reads the sweep through the measured roofline. Two names matter
# everywhere below: **MBU vs measured** and **MFU vs measured** divide bytes read per second
# by the *measured* bandwidth and model FLOP per second by the *measured* matrix-product
# peak. 17 §9's MBU and MFU divide by the datasheet's peaks instead (section 8 uses those).
# The table also gives **tokens per second**, b / step, the throughput 17 §5 tells you to plot
# against batch; each request gets one token per step, so the step is also its inter-token
# latency (ITL).
#
# <details><summary>The read model, the knee and the ridge prediction</summary>
#
# * **read model**: step = constant + bytes / bandwidth, fitted to the points left of half the
#   ridge. With constant weight bytes the two cannot both be fitted, so the bandwidth is held
#   at the STREAM figure and the constant is the mean time those points take beyond a read at
#   that rate, the split 8.6.3 makes with the spec. Whether that constant is a cost per step
#   is a separate question (section 5);
# * **leaves flat**: the first batch whose median step is more than 50% above the read model
#   (generous on purpose: shared machines are noisy, and batch 1 often runs a different kernel);
# * **ridge prediction**: the batch at which the step's intensity b F / (D_w + b L k) reaches
#   the measured ridge, with F the FLOP per request (2 x parameters, plus the attention's);
#   with float32 weights and a short context that lands a little beyond b = 2 x ridge.
#
# </details>

# %%
def sweep_table(analysis):
    sw = analysis.sweep
    print(f"{'batch':>5} {'step=ITL ms':>11} {'min-max ms':>14} {'tok/s':>7} {'read MB':>8} "
          f"{'FLOP/byte':>9} {'MBU vs measured':>15} {'MFU vs measured':>15}")
    for i, p in enumerate(sw.points):
        print(f"{p.batch:5d} {p.step_s.median * 1e3:11.2f} "
              f"{p.step_s.min * 1e3:6.2f}-{p.step_s.max * 1e3:<7.2f} "
              f"{analysis.tokens_per_s[i]:7.0f} {p.bytes_read / 1e6:8.1f} "
              f"{p.intensity_flop_per_byte:9.2f} {analysis.mbu[i]:15.1%} {analysis.mfu[i]:15.1%}")


# %% tags=["nbval-ignore-output"]
analysis = ms.analyze_sweep(m.batch_sweep, hw)
d_w = m.batch_sweep.points[0].weight_bytes
llc = info["last_level_cache_bytes"]
print(analysis.summary())
if llc:
    print(f"D_w is {d_w / llc:.2g} x this machine's {llc / 2**20:.0f} MiB last-level cache: "
          + ("the weights stream from DRAM" if d_w > 2 * llc else
             "they may be served partly from cache, so these steps can flatter the bandwidth"))
print()
sweep_table(analysis)

# %% tags=["nbval-ignore-output"]
plots.measured_step_time(analysis).show()

# %% [markdown]
# How to read it: the black points are measurements (bars from the fastest to the slowest
# repeat). The blue line is the read model, a read at the STREAM rate plus the fitted
# constant. Left of the knee the points stay near it: the weight read costs about the same
# whether one row or eight ride along, which is why batching raises throughput for free (from
# batch 2 on, the tok/s column grows almost in proportion to the batch). Right of the knee they climb
# along the red dotted compute line. The green dashed line is the roofline bound: the
# measured roofs and nothing else.
#
# The gap between the points and the green line is easy to read as a per-step overhead like
# 8.6.3's. On a CPU it is often mostly something else. For one row the BLAS runs a
# matrix-vector kernel that streams the weights at close to the STREAM rate; for a few rows it
# switches to a general matrix kernel that streams the same bytes markedly slower. That loss
# is per byte, not per step: it would double with a model twice the size, where a true
# per-step cost would stay put. Section 5 measures which of the two your machine has, and
# section 7 works it out for the reference run. The remedies differ as well: CUDA Graphs,
# which 8.6.3's experiment had switched off, remove launch costs that are paid per step
# (17 §9); a per-byte loss needs a better kernel instead.

# %% tags=["nbval-ignore-output"]
plots.measured_roofline(hw, analysis=analysis).show()

# %% [markdown]
# As the batch grows, the measured steps move right and up under the CPU's memory roof, then
# level off under its compute roof. The GPUs' roofs sit orders of magnitude higher (their
# legend entries name the format each peak counts), and their ridges (diamonds) far to the
# right: at the intensity where this CPU is already compute-bound, an H100 is still deep on
# its memory slope.

# %% tags=["nbval-ignore-output"]
plots.measured_utilization(analysis).show()

# %% [markdown]
# Overall MBU vs measured falls and MFU vs measured rises with batch: at small batch the step
# is a bandwidth problem (judge it by MBU), at large batch a compute problem (judge it by MFU),
# the phase rule of 17 §9 replayed along the batch axis. Batch 1 often has the best MBU of all
# (the matrix-vector kernel again). Over the flat stretch after it, a per-step cost spread
# over more bytes can lift MBU only as fast as the bytes read grow, which at a short context
# is by a few percent between batch 2 and the knee. A larger rise or fall there is the step
# time itself moving: timing noise, or the BLAS picking another kernel for another number of
# rows. Section 7 puts numbers on this for the reference run. 8.6.3's MBU, by contrast,
# roughly doubles between batch 1 and 64 on the RTX PRO 6000, because its reads more than
# double while its round grows only a little (section 8). (In fast mode these curves are mostly
# noise.)

# %% [markdown]
# ## 4. Fitting the bandwidth the step really gets: a context sweep
#
# A batch sweep at short context reads almost the same bytes at every small batch, so it
# cannot separate fixed cost from bandwidth. A context sweep can: at a fixed small batch, grow
# the context, so only the KV read grows. Fitting step = fixed + KV bytes / bandwidth gives
# the rate at which the attention streams the cache (the slope), and everything else, the
# weight pass included, lands in the intercept.

# %% tags=["nbval-ignore-output"]
ctx = m.context_sweep
try:
    kv_fit = ms.fit_step_time(ctx.kv_bytes, ctx.step_median_s)
except ValueError as err:   # a busy machine can hide the slope in noise
    print(f"free fit failed ({err}); holding the bandwidth at the measured figure")
    kv_fit = ms.fit_step_time(ctx.kv_bytes, ctx.step_median_s,
                              bandwidth_bytes_per_s=hw.mem_bw_bytes_per_s)
weights_s = ctx.points[0].weight_bytes / hw.mem_bw_bytes_per_s
print(f"batch {ctx.points[0].batch}, context {ctx.context_tokens.min()}..{ctx.context_tokens.max()}"
      f" tokens: KV read from 0 to {ctx.kv_bytes.max() / 1e6:.0f} MB per step")
print(f"fit: {kv_fit.fixed_s * 1e3:.2f} ms + KV bytes / {kv_fit.bandwidth_bytes_per_s / 1e9:.2f} "
      f"GB/s (rms residual {kv_fit.rms_residual_s * 1e3:.2f} ms)")
print(f"attention streams the cache at {kv_fit.bandwidth_bytes_per_s / hw.mem_bw_bytes_per_s:.0%}"
      f" of the measured bandwidth; the weight read alone would take {weights_s * 1e3:.2f} ms")
plots.measured_step_vs_bytes(ctx, kv_fit).show()

# %% jupyter={"source_hidden": true} tags=["nbval-ignore-output", "remove-input"]
# computes the numbers in the text below
problems = ms.fit_problems(kv_fit, ctx.kv_bytes, cache_bytes=info["last_level_cache_bytes"],
                           peak_bytes_per_s=hw.mem_bw_bytes_per_s)
if problems:
    md(f"""
**Do not read a bandwidth off this fit.** {'; '.join(p[0].upper() + p[1:] for p in problems)}.
{'This run used fast sizes, which is expected to fail these checks: ' if FAST else ''}the fitted
{kv_fit.bandwidth_bytes_per_s / 1e9:.2f} GB/s is whatever the noise made of the slope. The
full-size reference run below gives a fit that passes them.
""")
else:
    md(f"""
This fit passes the companion's checks (R² {kv_fit.r_squared:.2f}, reads beyond the cache, a
bandwidth below the measured peak): the attention streams the cache at
{kv_fit.bandwidth_bytes_per_s / 1e9:.2f} GB/s, {kv_fit.bandwidth_bytes_per_s / hw.mem_bw_bytes_per_s:.0%}
of the bandwidth STREAM measured.
""")

# %% [markdown]
# The same fit on the full-size reference run that is stored with this notebook (section 7
# loads all of it); it prints the same on every machine:

# %%
ref = ms.load_measurement(REFERENCE)
ref_hw = ms.hardware_from_measurement(ref, dtype=ref.batch_sweep.dtype)
ref_ctx = ref.context_sweep
ref_fit = ms.fit_step_time(ref_ctx.kv_bytes, ref_ctx.step_median_s)
ref_problems = ms.fit_problems(ref_fit, ref_ctx.kv_bytes,
                               cache_bytes=ref.machine["last_level_cache_bytes"],
                               peak_bytes_per_s=ref_hw.mem_bw_bytes_per_s)
print(f"reference, batch {ref_ctx.points[0].batch}: KV read 0 to "
      f"{ref_ctx.kv_bytes.max() / 1e6:.0f} MB per step; fit {ref_fit.fixed_s * 1e3:.2f} ms + "
      f"KV bytes / {ref_fit.bandwidth_bytes_per_s / 1e9:.2f} GB/s, R^2 {ref_fit.r_squared:.3f}")
print("checks: " + ("passed" if not ref_problems else "; ".join(ref_problems)))
plots.measured_step_vs_bytes(ref_ctx, ref_fit).show()

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
share = ref_fit.bandwidth_bytes_per_s / ref_hw.mem_bw_bytes_per_s
md(f"""
In the reference run the line explains {ref_fit.r_squared:.0%} of the variation, and the cache
is streamed at {ref_fit.bandwidth_bytes_per_s / 1e9:.1f} GB/s,
{'only ' if share < 0.5 else ''}{share:.0%} of what STREAM measured on the same machine.
""")

# %% [markdown]
# Why the KV slope comes out low: each request's cache is its own small matrix product per KV
# head, and small products stream memory worse than one big one, so the KV read gets a lower
# bandwidth than the weight read. On a GPU the same effect is why attention kernels for decode are written with
# special care; in the chapter's terms, this raises the per-request read cost L k / beta and
# pushes the ridge batch further out (17 §2, "the KV cache does not amortize").

# %% [markdown] jp-MarkdownHeadingCollapsed=true
# ## 5. Per step or per byte? A weight-size sweep
#
# Is the read model's constant paid once per step, or on every byte?
#
# <!-- fold: a weight-size sweep that tells the two apart -->

# %% [markdown]
# The batch sweep cannot tell a cost paid once per step from a loss paid on every byte: its
# weight bytes hardly change, so both land in the read model's constant. Change the weight
# bytes instead. The cell below stacks one, two, four and eight layers and times a step at
# batch 1 and at batch 4 with no context, then fits, per batch, step = fixed + weight bytes /
# rate. The **slope** is the rate that batch's kernels stream the weights at; the **intercept**
# is what a step costs whatever it reads (Python, thread hand-offs, small buffers). If both
# intercepts are small and batch 4's rate is well below batch 1's, the batch sweep's constant
# is mostly a per-byte loss. The stack keeps the batch sweep's scale, so the biggest one is
# twice its weights; at full size this takes a few seconds.

# %% tags=["nbval-ignore-output"]
WEIGHT_LAYERS = (1, 2, 4, 8)
WEIGHT_BATCHES = (1, 4)
preset = (ms.FAST_SIZES if FAST else ms.BROWSER_SIZES if ms.in_browser()
          else ms.FULL_SIZES)["batch_sweep"]
with threadpool_limits(limits=1 if FAST else None, user_api="blas"):
    weight_runs = [ms.decode_sweep(scale=preset["scale"], n_layers=n, batches=WEIGHT_BATCHES,
                                   context_tokens=0, repeats=preset["repeats"],
                                   threads=preset.get("threads"))
                   for n in WEIGHT_LAYERS]
weight_bytes = [run.points[0].weight_bytes for run in weight_runs]
print(f"{'layers':>6} {'D_w MB':>7}" + "".join(f" {'b=' + str(b) + ' step ms (min-max)':>27}"
                                               for b in WEIGHT_BATCHES))
for n, run, nbytes in zip(WEIGHT_LAYERS, weight_runs, weight_bytes):
    print(f"{n:6d} {nbytes / 1e6:7.1f}" + "".join(
        f" {p.step_s.median * 1e3:10.2f} ({p.step_s.min * 1e3:.2f}-{p.step_s.max * 1e3:.2f})"
        .rjust(28) for p in run.points))
weight_fits = {}
for i, b in enumerate(WEIGHT_BATCHES):
    try:
        weight_fits[b] = ms.fit_step_time(weight_bytes,
                                          [run.points[i].step_s.median for run in weight_runs])
    except ValueError as err:      # noise can hide the slope
        weight_fits[b] = None
        print(f"batch {b}: no fit ({err})")
        continue
    f = weight_fits[b]
    print(f"batch {b}: step = {f.fixed_s * 1e3:.2f} ms + weight bytes / "
          f"{f.bandwidth_bytes_per_s / 1e9:.1f} GB/s ({f.bandwidth_bytes_per_s / hw.mem_bw_bytes_per_s:.0%}"
          f" of STREAM), R^2 {f.r_squared:.3f}")

# %% jupyter={"source_hidden": true} tags=["nbval-ignore-output", "remove-input"]
# computes the numbers in the text below
weight_trouble = []
for b, f in weight_fits.items():
    if f is None:
        weight_trouble.append(f"batch {b}: the step did not grow with the weights")
    else:
        weight_trouble += [f"batch {b}: {p}" for p in ms.fit_problems(
            f, weight_bytes, cache_bytes=info["last_level_cache_bytes"],
            peak_bytes_per_s=hw.mem_bw_bytes_per_s)]
if weight_trouble:
    md(f"""
**Do not read rates off these fits.** {'; '.join(weight_trouble)}.
{'This run used fast sizes, which is expected to fail these checks. ' if FAST else ''}Run the
notebook at full size on a quiet machine; section 7 reads the same question off the reference
run's batch sweep instead.
""")
else:
    one, four = weight_fits[1], weight_fits[4]
    constant = f"{analysis.read_fit.fixed_s * 1e3:.2f} ms"
    if four.bandwidth_bytes_per_s < 0.8 * one.bandwidth_bytes_per_s:
        verdict = (f"Batch 4 streams every byte markedly slower: most of what the batch sweep "
                   f"put in its constant ({constant}) is that per-byte loss, and it would grow "
                   f"with a larger model.")
    else:
        verdict = (f"Both batches stream at about the same rate, so here the batch sweep's "
                   f"constant ({constant}) is mostly a cost per step.")
    md(f"""
Batch 1 streams the weights at {one.bandwidth_bytes_per_s / 1e9:.1f} GB/s and pays
{one.fixed_s * 1e3:.2f} ms a step on top; batch 4 streams them at
{four.bandwidth_bytes_per_s / 1e9:.1f} GB/s and pays {four.fixed_s * 1e3:.2f} ms. {verdict}
""")

# %% [markdown]
# ## 6. Save the measurement
#
# `save_measurement` writes JSON: the machine description, every sample, schema name and
# version, units in the key names (`time_s`, `bytes_per_run`, `array_bytes`).
# `load_measurement` gives back an identical object. Here it goes to a scratch folder. To
# pool a class's machines, each student saves a full-size run as
# `measurements/<name>_<cores>core_<cpu>.json` (lower case, no spaces: `ana_8core_m2pro.json`),
# and everyone compares all the files (section 7); `README.md` beside this notebook has the rule
# and what to hand in.

# %% tags=["nbval-ignore-output"]
saved = ms.save_measurement(m, Path(tempfile.gettempdir()) / "my_measurement.json")
assert ms.load_measurement(saved) == m
print(f"saved {saved} ({saved.stat().st_size / 1024:.0f} KiB), loads back identical")

# %% [markdown] jp-MarkdownHeadingCollapsed=true
# ## 7. Load a saved measurement instead of measuring
#
# The file committed next to this notebook is one full-size run of `ms.measure()` on the
# 2-core cloud virtual machine the companion was built on.
#
# <!-- fold: load a saved measurement (another machine's, or yours from last time) -->

# %% [markdown]
# Other programs shared those two
# cores most of the time, and a busy neighbour can slow a multi-threaded BLAS call tenfold
# (each call waits for its slowest thread), so the run was made at a moment when the cores
# were otherwise idle; the `noisy` line names the points whose repeats still spread.
# Everything below is computed from that file, so it prints the same on every run; compare it
# with your own numbers above.

# %%
ref_analysis = ms.analyze_sweep(ref.batch_sweep, ref_hw)
ref_blas = ", ".join(f"{b['internal_api']} {b['version']}" for b in ref.machine["blas"]
                     if b.get("user_api") == "blas")
ref_llc = ref.machine["last_level_cache_bytes"]
print(f"{ref.label}")
print(f"measured {ref.created_utc}: {ref.machine['cpu_model']}, {ref.machine['usable_cores']} "
      f"cores, numpy {ref.machine['numpy_version']}, {ref_blas}, last-level cache "
      f"{ref_llc / 2**20:.0f} MiB (D_w is {ref.batch_sweep.points[0].weight_bytes / ref_llc:.1f} x that)")
print()
bandwidth_table(ref)
print()
matmul_table(ref)
print()
print(ref_analysis.summary())
print()
sweep_table(ref_analysis)

# %%
def batch_text(b):
    return "none in the sweep" if b is None else f"{b:.1f}"


ref_ridge = calc.ridge_point(ref_hw)
bpp = ref.batch_sweep.bytes_per_param
print(f"ridge {ref_ridge:.2f} FLOP/byte; {ref.batch_sweep.dtype} weights ({bpp:.0f} bytes): "
      f"decode intensity about 2 b / {bpp:.0f}")
print(f"ridge prediction: b = ridge x {bpp:.0f} / 2 = {ref_ridge * bpp / 2:.1f} without KV, "
      f"{batch_text(ref_analysis.ridge_batch)} with the sweep's KV reads")
print(f"measured: the step leaves flat at batch {ref_analysis.knee_batch}; the fitted roofs "
      f"cross at batch {batch_text(ref_analysis.crossover_batch)}")
print()
print("KV counted, at the chapters' contexts (F / (L k) is the most intensity any batch reaches):")
for machine, model, context, nbytes in (
        (ref_hw, specs.QWEN3_8B, ch08.SHORT_PROMPT_TOKENS, bpp),
        (specs.RTX_PRO_6000, specs.QWEN3_8B, ch08.SHORT_PROMPT_TOKENS, 2),
        (specs.H100_SXM, specs.LLAMA_8B, ch17.CHAT_LIVE_TOKENS, 2)):
    ceiling, batch = kv_ridge(model, machine, context, nbytes)
    print(f"  {machine.name}, ridge {calc.ridge_point(machine):.1f}: {model.name} with "
          f"{nbytes:.0f}-byte values, {context:,} tokens: F/(L k) = {ceiling:.0f} -> "
          + ("never leaves the memory roof" if batch is None else
             f"leaves the memory roof at batch {batch:.0f}"))

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
ra, rbw = ref_analysis, ref_hw.mem_bw_bytes_per_s


def and_list(items):
    items = list(items)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


at = {int(b): i for i, b in enumerate(ra.batches)}
pts = ref.batch_sweep.points
one = pts[at[1]]
read_one = one.bytes_read / rbw
per_step_most = one.step_s.median - read_one          # all of batch 1's excess, at most
fitted = [i for i, x in enumerate(ra.intensity_flop_per_byte) if x <= ra.ridge_flop_per_byte / 2]
excess = [ra.step_s[i] - pts[i].bytes_read / rbw for i in fitted]
few = [i for i in fitted if ra.batches[i] > 1]        # the few-row points in the fit
rates = [pts[i].bytes_read / (ra.step_s[i] - per_step_most) for i in few]
times = sorted({f"{excess[fitted.index(i)] / per_step_most:.0f}" for i in few})
times_text = times[0] if len(times) == 1 else f"{times[0]} to {times[-1]}"
cpu_ceiling, cpu_batch = kv_ridge(specs.QWEN3_8B, ref_hw, ch08.SHORT_PROMPT_TOKENS, bpp)
# the flat stretch after batch 1: where MBU vs measured peaks before the knee
knee_i = at[ra.knee_batch]
flat = [i for i in range(at[2], knee_i)]
peak_i = max(flat, key=lambda i: ra.mbu[i])
lo_p, hi_p = pts[at[2]], pts[peak_i]
bytes_up = hi_p.bytes_read / lo_p.bytes_read - 1
mbu_up = ra.mbu[peak_i] / ra.mbu[at[2]] - 1
faster = 1 - ra.step_s[peak_i] / ra.step_s[at[2]]
# the knee: how close the batch before it came to the 50% line
before = knee_i - 1
line = (1 + ra.tolerance) * ra.read_model_s[before]
below = 1 - ra.step_s[before] / line
b_before = int(ra.batches[before])
md(f"""
Three things the reference run shows once you look past the summary:

* **The read model's constant is not a per-step cost.** It is {ra.read_fit.fixed_s * 1e3:.2f} ms,
  the mean of the excesses over a STREAM-rate read of the points it was fitted to:
  {and_list(f'{e * 1e3:.1f}' for e in excess)} ms at batches
  {and_list(str(int(ra.batches[i])) for i in fitted)}. Batch 1 takes {one.step_s.median * 1e3:.2f} ms,
  and reading its {one.bytes_read / 1e6:.0f} MB at {rbw / 1e9:.1f} GB/s takes {read_one * 1e3:.2f} ms,
  so a cost paid once per step is at most {per_step_most * 1e3:.2f} ms. Batches
  {and_list(str(int(ra.batches[i])) for i in few)} read almost the same bytes yet exceed the
  read by {times_text} times that; even granting each of them batch 1's whole excess as a
  per-step cost,
  they stream the weights at only {and_list(f'{r / 1e9:.1f}' for r in rates)} GB/s,
  {min(rates) / rbw:.0%}-{max(rates) / rbw:.0%} of STREAM. Most of the constant is the few-row
  matrix kernel streaming slowly, a loss per byte that would grow with the model. The
  reference file holds no weight-size sweep, so section 5 on your own machine is the direct test.
* **MBU vs measured does not creep up because a fixed cost is spread more thinly.** From batch
  2 to batch {int(ra.batches[peak_i])}, where it peaks before the knee, the bytes read grow by
  {bytes_up:.1%} but MBU vs measured grows by {mbu_up:.0%}, from {ra.mbu[at[2]]:.1%} to
  {ra.mbu[peak_i]:.1%}. Spreading a fixed cost over more bytes could explain at most the
  {bytes_up:.1%}; the rest is the step getting {faster:.0%} faster, from
  {ra.step_s[at[2]] * 1e3:.2f} to {ra.step_s[peak_i] * 1e3:.2f} ms, well inside the repeats'
  spread at batch {int(ra.batches[peak_i])} ({hi_p.step_s.min * 1e3:.1f}-{hi_p.step_s.max * 1e3:.1f} ms).
  Timing noise and the BLAS's choice of kernel move MBU here, not amortisation.
* **The knee is a bracket, not a batch.** At batch {b_before} the line the median must cross is
  {1 + ra.tolerance:.1f} x {ra.read_model_s[before] * 1e3:.2f} = {line * 1e3:.1f} ms; the median,
  {ra.step_s[before] * 1e3:.2f} ms, stays {below:.0%} below it, with repeats from
  {pts[before].step_s.min * 1e3:.1f} to {pts[before].step_s.max * 1e3:.1f} ms on both sides of it{
  f', and batch {ra.knee_batch} is flagged noisy' if ra.knee_batch in ra.noisy_batches else ''}.
  The step leaves flat somewhere between batch
  {b_before} and {ra.knee_batch}, on a grid that doubles the batch at each point. So part of the
  {ra.knee_batch / ra.ridge_batch:.1f}x gap between the measured knee and the ridge prediction
  ({ra.ridge_batch:.1f}) is the grid's resolution: from the bracket's lower end it is
  {b_before / ra.ridge_batch:.1f}x.

The rest of the gap has two causes of opposite sign. The step leaves flat *after* the ridge
batch because the ridge compares compute with the read alone, while the step also carries
the excess above, and compute has to outgrow both before a 50% rise shows. The fitted roofs
cross *before* the ridge batch because the compute line's rate is what decode actually gets,
{ra.compute_flops_per_s / ref_hw.peak_flops_per_s:.0%} of the square-matmul peak: skinny
products, the attention's many small ones and thread hand-offs all run slower than one big
product. The contrast with the GPUs is the printout above: with the KV counted, this CPU's
ridge ({ref_ridge:.1f} FLOP/byte) sits far below the most that decode can reach, so even the
full Qwen3-8B at 8.6.3's context would cross it, at batch {cpu_batch:.0f}, while the chapters'
GPUs, at the chapters' own contexts, never leave their memory roofs at all.
""")

# %%
plots.measured_roofline(ref_hw, analysis=ref_analysis,
                        title=f"Roofline: {ref.label} (measured) and the chapters' GPUs").show()

# %%
plots.measured_step_time(ref_analysis).show()

# %% [markdown]
# `compare_measurements` makes the class table: one row per file. With your own saved file
# next to the reference you would call
# `ms.compare_measurements([REFERENCE, saved])`; here, the reference alone.

# %%
print(ms.comparison_text(ms.compare_measurements([REFERENCE])))

# %% tags=["nbval-ignore-output"]
print(ms.comparison_text(ms.compare_measurements([REFERENCE, saved])))

# %% [markdown] jp-MarkdownHeadingCollapsed=true
# ## 8. The same fit on Chapter 8's per-round log
#
# Where "fixed cost plus bytes over bandwidth" breaks, on the chapter's own numbers.
#
# <!-- fold: 8.6.3's rounds, the overhead that shrinks, and 17 §9's headroom rule -->

# %% [markdown]
# 8.6.3 prints four measured decode rounds of Qwen3-8B on the RTX PRO 6000 with the bytes each
# read. Its efficiency is the read time at the card's *spec* bandwidth over the measured
# round: that is MBU as 17 §9 defines it, against the datasheet, not the "MBU vs measured" of
# sections 3-7. Subtracting the read time gives the per-round overhead the chapter reports.
# Letting the fit choose the bandwidth too is a useful warning about reading fits.

# %%
# 8.6.3 table (2K context, no shared prefix): the measured rounds are the chapter's inputs, the
# bytes each round reads are D_w + b L k (calc.round_read_bytes: 15.44 ... 34.46 GB)
ROUND_BATCH = ch08.EXP81_BATCHES
ROUND_READ_BYTES = [calc.round_read_bytes(specs.QWEN3_8B, b, ch08.SHORT_PROMPT_TOKENS)
                    for b in ROUND_BATCH]
ROUND_MEASURED_S = ch08.EXP81_ROUND_S               # engine per-round log

card = specs.RTX_PRO_6000
print(f"{'batch':>5} {'read at spec':>12} {'measured':>9} {'MBU':>5} {'overhead':>9} "
      f"{'headroom <= 1/MBU':>17}")
for b, nbytes, t in zip(ROUND_BATCH, ROUND_READ_BYTES, ROUND_MEASURED_S):
    read_s = nbytes / card.mem_bw_bytes_per_s
    u = calc.mbu(nbytes / t, card)
    print(f"{b:5d} {read_s * 1e3:9.2f} ms {t * 1e3:6.2f} ms {u:5.0%} "
          f"{(t - read_s) * 1e3:6.2f} ms {1 / u:16.1f}x")
free = ms.fit_step_time(ROUND_READ_BYTES, ROUND_MEASURED_S)
print(f"free fit: {free.fixed_s * 1e3:.1f} ms + bytes / {free.bandwidth_bytes_per_s / 1e12:.1f} TB/s"
      f" (the card's spec is {card.mem_bw_bytes_per_s / 1e12:.3f} TB/s)")
print("checks: " + ("passed" if not (p := ms.fit_problems(
    free, ROUND_READ_BYTES, peak_bytes_per_s=card.mem_bw_bytes_per_s)) else "; ".join(p)))

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
mbus = [calc.mbu(nbytes / t, card) for nbytes, t in zip(ROUND_READ_BYTES, ROUND_MEASURED_S)]
reads = [nbytes / card.mem_bw_bytes_per_s for nbytes in ROUND_READ_BYTES]
overheads = [t - r for t, r in zip(ROUND_MEASURED_S, reads)]
ref_one_mbu = ref_analysis.mbu[at[1]]
md(f"""
The MBU column is 8.6.3's efficiency row ({', '.join(f'{u:.0%}' for u in mbus)}), and the
overhead column its batch-1 gap of {overheads[0] * 1e3:.1f} ms. **Here the lab and the chapter
disagree.** 8.6.3 describes that gap as barely changing with the amount read; its own table
has it shrinking from {overheads[0] * 1e3:.1f} to {overheads[-1] * 1e3:.1f} ms, by
{1 - overheads[-1] / overheads[0]:.0%}, while the read grows
{ROUND_READ_BYTES[-1] / ROUND_READ_BYTES[0]:.1f}-fold. Fitting "fixed + bytes / bandwidth" to
the four rounds answers with {free.bandwidth_bytes_per_s / 1e12:.1f} TB/s,
{free.bandwidth_bytes_per_s / card.mem_bw_bytes_per_s:.1f} times the card's spec, which no card
can stream: the model's two terms do not add up.

17 §9 gives the reason they need not. With CUDA Graphs off, as in this experiment, the host
submits every kernel on its own; when submitting is slower than running, the GPU finishes
each kernel and waits for the next, and the timeline shows gaps. A round then lasts about as
long as the slower of the two sides, host or GPU, not their sum, and a larger read hides more
of the host's time behind it, so the apparent overhead shrinks as the batch grows. A pure
maximum would not explain everything either: every read at spec here
({reads[0] * 1e3:.2f}-{reads[-1] * 1e3:.2f} ms) is shorter than the batch-1 round
({ROUND_MEASURED_S[0] * 1e3:.2f} ms), so the round would stay flat, yet it grows by
{(ROUND_MEASURED_S[-1] - ROUND_MEASURED_S[0]) * 1e3:.2f} ms: the host's work grows with the
batch too, or the reads run below spec. Either way the chapter's overhead is a fair summary
at batch 1, not a constant to add at every batch. A fit is only as good as its model: check
the fitted bandwidth against the datasheet before believing it (`ms.fit_problems` does).

The last column is 17 §9's headroom rule: a step at a given MBU can get at most 1 / MBU
faster from better kernels, since no kernel beats the bandwidth. At batch 1 the card's round
could become at most {1 / mbus[0]:.1f}x faster, and the slack lies between kernels, which is
what CUDA Graphs remove. The reference CPU's batch-1 step, at {ref_one_mbu:.0%} MBU vs
measured, has at most {1 / ref_one_mbu:.2f}x left against its own STREAM rate: there, only
a change to the workload (batch, format) can buy more.
""")

# %% [markdown]
# ## Try this
#
# 1. **Another format.** Run `ms.decode_sweep(dtype="float64")` and analyse it against
#    `ms.hardware_from_measurement(m, dtype="float64")`. Predict first: the intensity halves
#    (b / 4) and so, roughly, does the peak. Where should the step leave flat?
# 2. **Longer contexts.** Rerun the batch sweep with `context_tokens=1024`. Predict first: does
#    `ridge_batch` move in or out, and does MBU vs measured at small batch go up or down?
#    (17 §2's 49-instead-of-64 example, in miniature.)
# 3. **One thread.** Run `m1 = ms.measure(threads=1, label="one thread")`: it limits the BLAS
#    and the probes' own worker threads alike, so every probe uses one core. Predict first:
#    what happens to the matrix-product peak, the bandwidth, the ridge and the ridge batch?
# 4. **Pool a class.** Each student saves a full-size run as
#    `measurements/<name>_<cores>core_<cpu>.json` (the rule in `README.md`); then
#    `print(ms.comparison_text(ms.compare_measurements(sorted(Path("measurements").glob("*.json")))))`.
#    Which machine has the highest ridge, and does its decode leave flat latest?
# 5. **A GPU.** On a machine with `torch` and CUDA, `ms.measure()` adds `cuda` rows:
#    `ms.hardware_from_measurement(m, device="cuda", dtype="bfloat16")` puts your GPU on the
#    roofline beside the H100's spec. How far below the spec are the measured roofs, and which
#    MBU will you quote?

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
ref64 = ms.hardware_from_measurement(ref, dtype="float64")
ridge64 = calc.ridge_point(ref64)
size32, size64 = ms.ITEMSIZE["float32"], ms.ITEMSIZE["float64"]
answer(f"""With float64 weights every weight is {size64} bytes, so a step does 2 b FLOP per
{size64} bytes: intensity b / {size64 // 2}. On the reference machine the float64 peak is
{ref64.peak_flops_per_s / 1e9:.1f} GFLOP/s against {ref_hw.peak_flops_per_s / 1e9:.1f} in
float32, so the ridge drops from {ref_ridge:.2f} to {ridge64:.2f} FLOP/byte. The weights-only
ridge batch is ridge x bytes per weight / 2: {ref_ridge:.2f} x {size32} / 2 =
{ref_ridge * size32 / 2:.1f} in float32, {ridge64:.2f} x {size64} / 2 = {ridge64 * size64 / 2:.1f}
in float64. Both sides of the ratio halve, so the step should leave flat at about the same
batch. The lesson: the batch where decode turns compute-bound is half the peak divided by
the rate at which weights arrive (bandwidth / bytes per weight), since each weight feeds
2 FLOP per request; a format that speeds up the products as much as it shrinks the bytes
leaves it where it was, while one that only shrinks the bytes (weight-only quantisation,
products still in BF16) moves it to a smaller batch, because every byte now feeds more
arithmetic.""",
       title="Worked answer 1")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
long_ctx = 1024
scaled = ref.batch_sweep.model
k_ref = calc.kv_bytes_per_token(scaled, bytes_per_value=bpp)
short_ctx = int(ref.batch_sweep.context_tokens[0])


def sweep_ridge_batch(context_tokens):
    """b F / (D_w + b L k) = ridge for the reference sweep's stack (None: never)."""
    flop = calc.matrix_flops(scaled, 1) + context_tokens * calc.attention_flops_per_pair(scaled)
    per_request = context_tokens * k_ref
    if flop <= ref_ridge * per_request:
        return None
    return ref_ridge * scaled.streamed_weight_bytes / (flop - ref_ridge * per_request)


ctx_mbu = [p.bytes_read / p.step_s.median / ref_hw.mem_bw_bytes_per_s for p in ref_ctx.points]
answer(f"""At {long_ctx:,} tokens each request reads {long_ctx * k_ref / 1e6:.1f} MB of KV per
step, which no other request shares, on top of the {scaled.streamed_weight_bytes / 1e6:.0f} MB of
weights. The intensity therefore grows more slowly with the batch, and the reference machine's
ridge batch moves out from {sweep_ridge_batch(short_ctx):.1f} (at the sweep's {short_ctx} tokens)
to {batch_text(sweep_ridge_batch(long_ctx))}. MBU vs measured does **not** rise with the extra
bytes: the attention streams the cache at only {share:.0%} of the STREAM rate (section 4), so
the more of each step is KV, the lower it goes. The reference's context sweep at batch
{ref_ctx.points[0].batch} shows it: {ctx_mbu[0]:.0%} MBU vs measured with no context,
{ctx_mbu[-1]:.0%} at {int(ref_ctx.context_tokens[-1]):,} tokens. The lesson: 17 §2's drop in
intensity is a matter of counting bytes, but whether MBU holds up at long contexts depends on
how well the attention kernel streams the cache, a separate measurement.""",
       title="Worked answer 2")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
cores = ref.machine["usable_cores"]
one_core = ms.analyze_sweep(ref.batch_sweep, replace(ref_hw,
                                                     peak_flops_per_s=ref_hw.peak_flops_per_s / cores))
answer(f"""With every probe on one core, the matrix products lose most of the machine's
arithmetic: on the {cores}-core reference, about 1/{cores} of
{ref_hw.peak_flops_per_s / 1e9:.1f} GFLOP/s. If one core still drew all of the
{ref_hw.mem_bw_bytes_per_s / 1e9:.1f} GB/s, the ridge would fall to
{calc.ridge_point(one_core.hardware):.2f} FLOP/byte and the ridge batch from
{ref_analysis.ridge_batch:.1f} to {one_core.ridge_batch:.1f}. One core usually cannot keep
enough reads in flight to draw all of it, so the bandwidth drops too, by less than the peak,
and the ridge falls by less than that. Compare `ms.hardware_from_measurement(m1)` with the
full run and check. The lesson: the ridge is a ratio, and cores add arithmetic much faster
than they add bandwidth, so a machine with fewer cores leaves the memory roof at a smaller
batch. (Limiting only the BLAS, with `threadpoolctl.threadpool_limits(1)`, would leave the
STREAM kernels and the attention on every core and mix the two.)""",
       title="Worked answer 3")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
row = ms.compare_measurements([REFERENCE])[0]
answer(f"""Sort the table by `ridge fp32` first: that column comes from two large, repeatable
probes. The reference machine sits at {row['ridge_float32_flop_per_byte']:.2f} FLOP/byte, a
ridge batch of {row['ridge_batch']:.1f}. The machine with the highest ridge should have the
largest `ridge b`, and its decode should leave flat latest. Check that against `knee b`
loosely: the knee is read off a noisy sweep on a grid that doubles the batch, so it is a
bracket (the reference's lies between {b_before} and {ra.knee_batch}, section 7), and two
machines whose knees differ by one grid step are not ranked by them. A reversal larger than
that usually means a busy machine or a BLAS whose few-row kernel streams badly. The naming rule
(`<name>_<cores>core_<cpu>.json`) keeps one file per student and machine, so a rerun replaces
a file instead of adding a duplicate row. The lesson: rank machines by what the roofline
predicts, and use the measured knee to check the prediction, not to replace it.""",
       title="Worked answer 4")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
answer(f"""Expect both measured roofs below the H100's datasheet figures of
{h100.mem_bw_bytes_per_s / 1e12:.2f} TB/s and {h100.peak_flops_per_s / 1e12:.0f} TFLOP/s
({h100.peak_precision}): a datasheet peak is a design limit that no real kernel reaches, and
the `copy` row also counts its bytes the STREAM way. Your measured ridge is the ratio of the
two measured roofs, so it moves away from the spec's {h100_ridge:.0f} FLOP/byte in whichever
direction the two shortfalls differ. Then decide which MBU to quote: against your measured
bandwidth it is "MBU vs measured" (sections 3-7), against the datasheet it is 17 §9's MBU
(section 8), and the two differ by exactly the ratio of measured to spec bandwidth. The lesson:
a utilisation is only comparable with another one that divides by the same roof, so say which
roof you used.""", title="Worked answer 5")
