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
# 4. fit a step-time model, compute MBU and MFU per batch, and find the batch where the step
#    stops being flat, then compare that batch with what the ridge point predicts,
# 5. save the measurement to a file, and load a saved one instead of measuring.
#
# Nothing here needs a GPU. With `torch` and CUDA installed, `measure()` adds a GPU copy and
# bf16/fp16 matrix products; without them it quietly skips them.

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
# starts to grow with b once b / 2 passes the ridge, at b of about 2 x ridge. On an H100 in
# BF16 the same reasoning gives a batch of a few hundred (the first cell below prints it); on
# a CPU it may be ten or twenty. Batching stops being free much sooner on a machine with so
# little compute per byte.
#
# **And the real step is slower than the roofline.** 8.6.3's batch-1 round took 26.26 ms,
# about three times what its read needs at spec bandwidth (section 7 recomputes both): a
# fixed cost per round (kernel launches, host scheduling) sat on top. A CPU has its own fixed costs (Python, thread hand-offs, and the BLAS
# choosing a different kernel for one row than for several), which the fits below separate.

# %%
import tempfile
import time
from pathlib import Path

from companion import calc, plots, specs
from companion import measure as ms
from companion.chapters import ch08
from companion.display import md

FAST = ms.fast_mode()   # COMPANION_FAST=1 (tests, notebook execution): tiny sizes, seconds
REFERENCE = Path("measurements") / "reference_2core_epyc.json"

for gpu in (specs.H100_SXM, specs.RTX_PRO_6000):
    print(f"{gpu.name:28} ridge {calc.ridge_point(gpu):6.1f} FLOP/byte -> BF16 decode leaves "
          f"the memory roof near batch {calc.ridge_point(gpu):.0f}")

# %% [markdown]
# ## 1. Measure
#
# `ms.measure()` runs every probe. Full sizes take about half a minute on a quiet 2-core
# machine (two to four times that if other programs are busy on it). With
# `COMPANION_FAST=1` everything is shrunk to run in a second or two on one thread.
#
# > **What fast mode can and cannot show.** The stored outputs of this notebook were made in
# > fast mode (that is how the test suite runs it). Fast mode shows that every probe, fit and
# > figure works on this machine, and the *shape* of the tables. It cannot show this machine's
# > memory bandwidth (its arrays fit in the last-level cache, so the probes time the cache),
# > nor a trustworthy fitted slope or knee (each step lasts a millisecond or two, so timing
# > jitter is as large as the effects being fitted). Where a fit below cannot be trusted, the
# > notebook says so and why, computed from the fit itself. For numbers that mean something,
# > run it with full sizes (unset `COMPANION_FAST`), or read section 6, which analyses a
# > full-size run stored with the notebook.
#
# What it runs:
#
# * **Bandwidth, STREAM-style** (`stream_probe`): copy, scale, add and triad on three float64
#   arrays of 4 x the last-level cache each, so every byte comes from DRAM. Bytes are counted
#   the STREAM way: each array read or written counts once (copy 2 arrays, triad 3). A normal
#   store first reads the cache line it will overwrite (write-allocate), so the bus carries
#   more than that; the table shows both counts. A fifth kernel, `read`, only reads (a dot
#   product), which is what a decode step mostly does.
# * **Matrix products** (`matmul_probe`): n x n times n x n, 2 n³ FLOP, in float32 and
#   float64, through whatever BLAS numpy uses.
# * **Decode sweeps** (`decode_sweep`): the next section.
#
# Every probe repeats and keeps every sample; the tables show the median and the spread.
#
# **In the lite site** (the companion running in your browser, nothing installed) the kernel
# is Python compiled to WebAssembly, on one thread, with numpy's own plain BLAS. There
# `ms.measure()` uses smaller sizes that finish in about ten seconds, and its label says what
# it measured: the browser's WebAssembly, which is a real machine to put on a roofline, but
# not your computer's native speed.

# %% tags=["nbval-ignore-output"]
t0 = time.perf_counter()
m = ms.measure(fast=FAST, label="this machine")
measure_s = time.perf_counter() - t0
info = m.machine
blas = ", ".join(f"{b['internal_api']} {b['version']} ({b['num_threads']} threads)"
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
# We use the float32 peak, the format the decode sweep runs in.

# %% tags=["nbval-ignore-output"]
hw = ms.hardware_from_measurement(m, dtype="float32")
ridge = calc.ridge_point(hw)
h100_ridge = calc.ridge_point(specs.H100_SXM)
print(f"{hw.name}: {hw.mem_bw_bytes_per_s / 1e9:.1f} GB/s, "
      f"{hw.peak_flops_per_s / 1e9:.1f} GFLOP/s -> ridge {ridge:.2f} FLOP/byte")
print(f"H100 SXM ridge {h100_ridge:.0f} FLOP/byte: {h100_ridge / ridge:.0f} x further right")
print(f"bandwidth: the H100 has {specs.H100_SXM.mem_bw_bytes_per_s / hw.mem_bw_bytes_per_s:.0f} x "
      f"this machine's; compute: {specs.H100_SXM.peak_flops_per_s / hw.peak_flops_per_s:,.0f} x")

# %% [markdown]
# The last line is the whole story of this lab in two ratios: a GPU is faster than a CPU at
# both, but far more so at arithmetic than at fetching bytes, which is why its ridge is so much
# further right and why decode, which does little arithmetic per byte, wastes most of a GPU.

# %% [markdown]
# ## 3. The decode sweep
#
# `decode_sweep` builds a stack of transformer layers with Qwen3-8B's proportions, every width
# divided by 4 (hidden 1024, 8 query heads and 2 KV heads of 128, FFN 3072, so about 48 MB of
# float32 weights per layer; 4 layers, several times the last-level cache, so every step
# streams its weights from DRAM; fast mode uses one layer at a smaller scale). One step multiplies b activation rows through Q,
# K, V, attends each request's queries over its own cached keys and values (a separate KV
# array per request, `context_tokens` long, so the KV read grows as b x L), then O and the
# MLP. It counts bytes read as the chapter does, D(b, L) = D_w + b L k (8.2.1), and FLOP as
# 2 x parameters x b plus the attention's 4 x head_dim x query heads x layers per cached token.
#
# `analyze_sweep` then reads the sweep through the measured roofline:
#
# * **read model**: step = fixed + bytes / bandwidth, fitted to the points left of half the
#   ridge (with constant weight bytes the overhead and the bandwidth cannot both be fitted, so
#   the bandwidth is held at the measured figure, the same split 8.6.3 makes with the spec);
# * **leaves flat**: the first batch whose median step is more than 50% above that model
#   (generous on purpose: shared machines are noisy, and batch 1 often runs a different kernel);
# * **ridge prediction**: the batch at which the step's intensity b F / (D_w + b L k) reaches
#   the measured ridge, with F the FLOP per request (about 2 x ridge here, float32);
# * **MBU and MFU**: bytes read per second over the measured bandwidth, and model FLOP per
#   second over the measured peak (17 §9).

# %%
def sweep_table(analysis):
    sw = analysis.sweep
    print(f"{'batch':>5} {'step ms':>8} {'min-max ms':>14} {'read MB':>8} {'FLOP/byte':>9} "
          f"{'MBU':>6} {'MFU':>6}")
    for i, p in enumerate(sw.points):
        print(f"{p.batch:5d} {p.step_s.median * 1e3:8.2f} "
              f"{p.step_s.min * 1e3:6.2f}-{p.step_s.max * 1e3:<7.2f} {p.bytes_read / 1e6:8.1f} "
              f"{p.intensity_flop_per_byte:9.2f} {analysis.mbu[i]:6.1%} {analysis.mfu[i]:6.1%}")


# %% tags=["nbval-ignore-output"]
analysis = ms.analyze_sweep(m.batch_sweep, hw)
print(analysis.summary())
print()
sweep_table(analysis)

# %% tags=["nbval-ignore-output"]
plots.measured_step_time(analysis).show()

# %% [markdown]
# How to read it: the black points are measurements (bars from the fastest to the slowest
# repeat). Left of the knee they sit near the blue read line: the weight read costs the same
# whether one row or eight ride along, which is why batching raises throughput for free. Right
# of it they climb along the red dotted line, the fitted compute line (the step's FLOP over an
# effective compute rate, plus the fixed cost). The green dashed line is the roofline bound
# with no fixed cost at all; the gap between it and the points is this machine's version of
# 8.6.3's per-round overhead.
#
# On a CPU you may also see batch 1 well *below* the read line and batch 2 jump up. That is
# not the roofline: with one row the BLAS uses a matrix-vector kernel that streams memory
# very well, while for a few rows it switches to a general matrix kernel that streams it less
# well. Kernel choice moves MBU, as 8.6.3 found for CUDA Graphs.

# %% tags=["nbval-ignore-output"]
plots.measured_roofline(hw, analysis=analysis).show()

# %% [markdown]
# As the batch grows, the measured steps move right and up under the CPU's memory roof, then
# level off under its compute roof. The GPUs' roofs sit orders of magnitude higher, and their
# ridges (diamonds) far to the right: at the intensity where this CPU is already
# compute-bound, an H100 is still deep on its memory slope.

# %% tags=["nbval-ignore-output"]
plots.measured_utilization(analysis).show()

# %% [markdown]
# Overall MBU falls and MFU rises with batch: at small batch the step is a bandwidth problem
# (judge it by MBU), at large batch a compute problem (judge it by MFU), the phase rule of
# 17 §9 replayed along the batch axis. Two details are worth finding in your own curve. Batch 1
# often has the best MBU of all (the matrix-vector kernel again). And over the flat stretch
# (batch 2 to about 8 on the reference machine below) MBU creeps up: the step time barely moves while a little more KV
# is read, so the fixed cost is spread over more bytes. That is the effect 8.6.3 reports on
# the RTX PRO 6000, where MBU roughly doubles between batch 1 and 64 (section 7); on the GPU
# it continues for far longer, because the compute limit is tens of times further away.
# (In fast mode these curves are mostly noise; section 6 shows them for a full-size run.)

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
# The same fit on the full-size reference run that is stored with this notebook (section 6
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

# %% [markdown]
# ## 5. Save the measurement
#
# `save_measurement` writes JSON: the machine description, every sample, schema name and
# version, units in the key names (`time_s`, `bytes_per_run`, `array_bytes`).
# `load_measurement` gives back an identical object. Here it goes to a scratch folder; to pool
# a class's machines, copy the files into `measurements/` and compare them (section 6).

# %% tags=["nbval-ignore-output"]
saved = ms.save_measurement(m, Path(tempfile.gettempdir()) / "my_measurement.json")
assert ms.load_measurement(saved) == m
print(f"saved {saved} ({saved.stat().st_size / 1024:.0f} KiB), loads back identical")

# %% [markdown] jp-MarkdownHeadingCollapsed=true
# ## 6. Load a saved measurement instead of measuring
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
print(f"{ref.label}")
print(f"measured {ref.created_utc}: {ref.machine['cpu_model']}, {ref.machine['usable_cores']} "
      f"cores, numpy {ref.machine['numpy_version']}, {ref_blas}")
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
print(f"the same reasoning for an H100 in BF16 (2 bytes): b = "
      f"{calc.ridge_point(specs.H100_SXM):.0f}")

# %% [markdown]
# Why the measured knee and the two predictions differ:
#
# * **The step leaves flat after the ridge batch.** The ridge compares compute with the read
#   alone, but every step also pays a fixed cost (the gap between the read line and the
#   roofline bound in the figure below). Compute has to outgrow read *plus* that cost before
#   the step visibly rises, and the 50% criterion adds a margin on top.
# * **The fitted roofs cross before the ridge batch.** The compute line's rate is what
#   decode actually gets, below the square-matmul peak: skinny products, the attention's many
#   small products and thread hand-offs all run slower than one big product.
# * **Both corrections are small next to the hardware gap.** The same reasoning keeps an H100
#   in BF16 flat up to a batch of a few hundred, and this CPU's decode leaves flat in the tens.

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

# %% [markdown]
# ## 7. The same fit on Chapter 8's per-round log
#
# 8.6.3 prints four measured decode rounds of Qwen3-8B on the RTX PRO 6000 with the bytes each
# read. The chapter's efficiency is the read time at spec bandwidth over the measured round,
# which is MBU; subtracting the read time gives the per-round overhead. Letting the fit choose
# the bandwidth too is a useful warning about reading fits.

# %%
# 8.6.3 table (2K context, no shared prefix): the measured rounds are the chapter's inputs, the
# bytes each round reads are D_w + b L k (calc.round_read_bytes: 15.44 ... 34.46 GB)
ROUND_BATCH = ch08.EXP81_BATCHES
ROUND_READ_BYTES = [calc.round_read_bytes(specs.QWEN3_8B, b, ch08.SHORT_PROMPT_TOKENS)
                    for b in ROUND_BATCH]
ROUND_MEASURED_S = ch08.EXP81_ROUND_S               # engine per-round log

card = specs.RTX_PRO_6000
print(f"{'batch':>5} {'read at spec':>12} {'measured':>9} {'MBU':>5} {'overhead':>9}")
for b, nbytes, t in zip(ROUND_BATCH, ROUND_READ_BYTES, ROUND_MEASURED_S):
    read_s = nbytes / card.mem_bw_bytes_per_s
    print(f"{b:5d} {read_s * 1e3:9.2f} ms {t * 1e3:6.2f} ms {calc.mbu(nbytes / t, card):5.0%} "
          f"{(t - read_s) * 1e3:6.2f} ms")
free = ms.fit_step_time(ROUND_READ_BYTES, ROUND_MEASURED_S)
print(f"free fit: {free.fixed_s * 1e3:.1f} ms + bytes / {free.bandwidth_bytes_per_s / 1e12:.1f} TB/s"
      f" (the card's spec is {card.mem_bw_bytes_per_s / 1e12:.3f} TB/s)")
print("checks: " + ("passed" if not (p := ms.fit_problems(
    free, ROUND_READ_BYTES, peak_bytes_per_s=card.mem_bw_bytes_per_s)) else "; ".join(p)))

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
mbus = [calc.mbu(nbytes / t, card) for nbytes, t in zip(ROUND_READ_BYTES, ROUND_MEASURED_S)]
overheads = [t - nbytes / card.mem_bw_bytes_per_s
             for nbytes, t in zip(ROUND_READ_BYTES, ROUND_MEASURED_S)]
md(f"""
The MBU column is 8.6.3's efficiency row ({', '.join(f'{u:.0%}' for u in mbus)}), and the
overhead column its batch-1 gap of {overheads[0] * 1e3:.1f} ms. But the overhead is not
constant: it shrinks to {overheads[-1] * 1e3:.1f} ms as the batch grows, and the free fit
answers with a bandwidth {free.bandwidth_bytes_per_s / card.mem_bw_bytes_per_s:.1f} times the
card's spec, which is physically impossible. The model "fixed cost plus bytes over bandwidth"
assumes the two add up; in that engine the host-side cost partly overlaps the reads, so the sum
overstates the round and the slope understates the per-byte cost. A fit is only as good as its
model: check the fitted bandwidth against the datasheet before believing it (here
`ms.fit_problems` does).
""")

# %% [markdown]
# ## Try this
#
# * **Another format.** Run `ms.decode_sweep(dtype="float64")` and analyse it against
#   `ms.hardware_from_measurement(m, dtype="float64")`. Predict first: the intensity halves
#   (b / 4) and so does the peak, so where should the step leave flat?
# * **Longer contexts.** Rerun the batch sweep with `context_tokens=1024`. The KV read grows
#   with b, so intensity grows more slowly than b: watch `ridge_batch` move out and MBU stay
#   higher (17 §2's 49-instead-of-64 example, in miniature).
# * **One thread.** Wrap a measurement in `threadpoolctl.threadpool_limits(1)`. On a 2-core
#   machine the matrix-product peak roughly halves and bandwidth drops much less: the ridge
#   moves left, and decode stays flat for fewer batches.
# * **Pool a class.** Save everyone's file into `measurements/`, then
#   `print(ms.comparison_text(ms.compare_measurements(sorted(Path("measurements").glob("*.json")))))`.
#   Which machine has the highest ridge, and does its decode leave flat latest?
# * **A GPU.** On a machine with `torch` and CUDA, `ms.measure()` adds `cuda` rows:
#   `ms.hardware_from_measurement(m, device="cuda", dtype="bfloat16")` puts your GPU on the
#   roofline beside the H100's spec. How far below the spec are the measured roofs?
