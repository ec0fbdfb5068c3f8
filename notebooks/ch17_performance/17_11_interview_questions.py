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
# # Chapter 17: the interview questions, worked live
#
# The chapter closes with eight questions an interviewer asks about inference performance and
# the shape of a good answer to each. Every good answer there is a derivation, so this notebook
# restates each question in our own words and works its arithmetic with `companion` calls,
# next to the chapter's printed numbers from the ledger. Read a question, try the derivation
# on paper, then run the cell.
#
# All numbers assume the chapter's setting: an H100 SXM (80 GB, 3.35 TB/s, 989 dense BF16
# TFLOP/s, 900 GB/s NVLink), the 8B and 70B Llama-3 shapes, BF16, prefill at 50% of peak.

# %%
from companion import calc, ledger, specs, units, widgets
from companion.chapters.ch17 import DECODE_TOK_PER_S, PREFILL_TOK_PER_S

hw = specs.H100_SXM
m8, m70, m405 = specs.LLAMA_8B, specs.LLAMA_70B, specs.LLAMA_405B

# %% [markdown]
# ## 1. Show why decode is limited by memory bandwidth
#
# Producing one token multiplies the activation through every weight once: one multiply and
# one add per parameter, 2 FLOPs. At batch 1 each 2-byte weight has to come in from HBM for
# that token alone (16 GB do not fit in ~50 MB of on-chip SRAM), so decode does 1 FLOP per
# byte. The chip can do $989/3.35 \approx 295$ FLOPs per byte before memory stops being the
# limit, so the roofline caps decode at $1 \times$ bandwidth, a third of a percent of peak.
# Batching $B$ sequences lets one weight read serve $B$ tokens, but each sequence's KV cache is
# its own and is read every step, so long contexts pull the intensity back down.

# %%
ridge = calc.ridge_point(hw)
b1 = calc.roofline_point(calc.decode_intensity(m8), hw)
print(f"ridge {ridge:.0f} FLOP/byte; batch-1 decode {calc.decode_intensity(m8):g} FLOP/byte -> "
      f"{b1['attainable_flops_per_s']:.3g} FLOP/s = {100 * b1['fraction_of_peak']:.2f}% of peak")
for L in (0, 600, 8000):
    print(f"batch 64, {L:>5} live tokens per sequence: intensity "
          f"{calc.decode_intensity(m8, 64, L):.0f} FLOP/byte")
print(ledger.table(ids=["17.2/ridge", "17.2/decode-intensity-b1", "17.2/attainable-b1",
                        "17.2/fraction-of-peak", "17.2/batch-intensity-64",
                        "17.2/chat-intensity", "17.2/long-intensity"]))

# %% [markdown]
# ## 2. Size the KV cache of a 70B model at an 8K context
#
# Two tensors (K and V) x 80 layers x 8 KV heads x 128 values x 2 bytes per token. The trap is
# the head count: the 70B uses grouped-query attention with 8 KV heads for its 64 query heads;
# plugging in 64 inflates the answer eightfold. Then the capacity point: the weights alone are
# 140 GB, so the model is split over GPUs before it stores a single token, and at TP = 4 the
# memory left on four cards holds about sixty 8K conversations.

# %%
per_token = calc.kv_bytes_per_token(m70)
print(f"70B: {per_token:,} B = {per_token / units.KiB:.0f} KiB per token; 8,000 tokens: "
      f"{calc.kv_bytes(m70, 8000, block_tokens=1) / units.GB:.2f} GB")
for row in calc.attention_variants(m70):
    print(f"  {row['attention']}: {row['n_kv_heads']:2} KV heads, "
          f"{row['kv_bytes_per_token'] / units.KiB:5.0f} KiB per token, "
          f"MHA / this = {row['reduction_vs_mha']:g}x")
cap = calc.tp_kv_capacity(m70, hw, tp=4)
print(f"weights {m70.weight_bytes / units.GB:.0f} GB ({cap['weights_over_memory']:.2f}x a card); "
      f"TP 4: {cap['free_kv_bytes_per_gpu'] / units.GB:.0f} GB free per GPU, "
      f"{cap['free_kv_bytes'] / units.GB:.0f} GB in all -> {cap['max_sequences']} sequences of 8,000")
print(ledger.table(ids=["17.4/70b-kv-per-token-KB", "17.4/70b-kv-8k-GB", "17.4/gqa-reduction",
                        "17.4/70b-weights-GB", "17.4/tp4-sequences",
                        "17.4/interview-about-sixty"]))

# %% [markdown]
# ## 3. "nvidia-smi says 95% busy, yet throughput is poor"
#
# The gauge counts the share of time *some* kernel was resident, not how much of the chip it
# used or whether it computed or waited. Batch-1 decode keeps a kernel resident almost all the
# time while doing a third of a percent of the possible arithmetic. The useful ratios are MBU
# for decode and MFU for prefill. High MBU: the decode is honestly at its memory roof, and the
# levers are batch and bytes (quantization). Low MBU too: profile, `nsys` for gaps and
# serialization, then `ncu` on the dominant kernel. The usual root cause is a batch that is too
# small, often because KV memory caps it.

# %%
print(f"1 of {hw.sm_count} SMs busy all the time: util 100%, compute <= "
      f"{100 * calc.sm_share(1, hw):.2f}%")
dec = calc.decode_utilization(m8, hw, DECODE_TOK_PER_S)
pre = calc.prefill_utilization(m8, hw, PREFILL_TOK_PER_S)
print(f"8B decode at 146 tok/s: MBU {100 * dec['mbu']:.0f}% (healthy), MFU "
      f"{100 * dec['mfu']:.2f}% (irrelevant); prefill at 20,000 tok/s: MFU {100 * pre['mfu']:.0f}%")
print(ledger.table(ids=["17.9/sm-share", "17.3/decode-fraction-of-peak", "17.9/decode-mbu",
                        "17.9/decode-mfu", "17.9/prefill-mfu"]))

# %% [markdown]
# ## 4. Tensor or pipeline parallelism?
#
# TP cuts every matrix and pays two all-reduces per layer, per token: 160 small, latency-bound
# collectives on an 80-layer model. That needs NVLink and keeps TP inside one server; in return
# it divides per-token latency by $p$ and lets a model larger than one card exist at all. PP
# cuts the layer stack, sends one small activation per stage boundary, crosses servers easily,
# but idles a $(p-1)/(m+p-1)$ share of the time unless many microbatches keep the pipe full, and
# never speeds up a single stream. The usual layout: TP up to the edge of the NVLink domain,
# PP across servers on top. A 405B in BF16 is 810 GB: TP 8 x PP 2 over two servers.

# %%
traffic = calc.tp_allreduce_traffic(m70, 4)
step = calc.tp_decode_step(m70, hw, 4)
print(f"70B, TP 4: {traffic['collectives']} collectives per token, floor "
      f"{step['latency_s'] / units.ms:.2f} ms on a {step['read_s'] / units.ms:.1f} ms read")
print(f"PP bubble, p = 4: m = 16 -> {100 * calc.pipeline_bubble(4, 16):.1f}%, m = 64 -> "
      f"{100 * calc.pipeline_bubble(4, 64):.1f}%")
lay = calc.parallel_layout(m405, hw)
print(f"405B: {m405.weight_bytes / units.GB:.0f} GB -> TP {lay['tp']} x PP {lay['pp']} = "
      f"{lay['gpus']} GPUs at {lay['weight_bytes_per_gpu'] / units.GB:.1f} GB each")
print(ledger.table(ids=["17.7/collectives", "17.7/latency-floor-ms", "17.7/bubble-16",
                        "17.7/405b-weights-GB", "17.7/405b-gpus", "17.7/405b-tp8pp2-GB"]))

# %% [markdown]
# ## 5. "Our p99 ITL is terrible but the mean looks fine"
#
# Head-of-line blocking: a long prompt's prefill runs as one block in front of everybody's
# ~6 ms decode step, so every running stream waits about a quarter of a second for one token.
# It happens only when long prompts arrive, so the median does not move and the mean moves a
# little, while p99 explodes. Confirm by correlating ITL spikes with the sizes of arriving
# prompts; fix with chunked prefill and a per-step token budget, accepting a bounded TTFT cost;
# if the fleet is big and the two objectives keep fighting, split prefill and decode (17 §8)
# and optimize goodput.
#
# The trace below is **generated by the companion's scheduler simulator**: 8 chat streams of
# 500 tokens while six 8,000-token prompts arrive, 0.4 s apart.

# %%
hol = calc.head_of_line_stall(m8, hw, 8000, calc.CH17_SMOOTH_ITL_S)
print(f"8,000-token prefill: {hol['stall_s'] / units.ms:.0f} ms, {hol['worst_itl_over_step']:.0f}x "
      f"a 6 ms step")
for label, chunk in (("whole prompts", None), ("512-token chunks", 512)):
    t = widgets.itl_tail_trace(chunk)
    print(f"{label:17}: ITL median {t['itl_p50_s'] / units.ms:5.1f} ms, mean "
          f"{t['itl_mean_s'] / units.ms:5.1f} ms, p99 {t['itl_p99_s'] / units.ms:5.1f} ms "
          f"({t['intervals']:,} intervals); long prompts' mean TTFT "
          f"{t['long_ttft_mean_s'] / units.ms:.0f} ms")
print(ledger.table(ids=["17.3/hol-stall-ms", "17.3/hol-worst-itl-x", "17.6/iteration-ms",
                        "17.6/itl-improvement", "17.6/ttft-increase"]))

# %% [markdown]
# ## 6. Raise throughput without buying GPUs
#
# In order: check that the engine really pages its KV and batches continuously (the 2-4x class
# of win, easy to lose to a misconfiguration); raise the concurrency until KV memory or the ITL
# target stops you (question 7); quantize the weights to 8 bits, which halves the bytes per
# token and doubles the decode ceiling; for multi-turn traffic, add prefix caching with
# KV-aware routing so conversations stop re-prefilling. Each step is the same argument: more
# FLOPs per HBM byte, or fewer bytes per token.

# %%
gain = calc.paged_batch_gain(m8, hw, block_tokens=1)
q = calc.quantization_ceiling(m8, hw, 1)
route = calc.kv_routing_ttft(m8, hw, 20)
print(f"paged KV: batch {gain['naive']['batch']} -> {gain['paged']['batch']}, throughput "
      f"{gain['naive']['tokens_per_s']:,.0f} -> {gain['paged']['tokens_per_s']:,.0f} tok/s "
      f"({gain['throughput_gain']:.1f}x)")
print(f"INT8 weights: ceiling {q['baseline_tokens_per_s']:.0f} -> {q['tokens_per_s']:.0f} tok/s "
      f"({q['speedup']:g}x)")
print(f"KV-aware routing, turn 20: TTFT {route['cold_s'] / units.ms:.0f} -> "
      f"{route['warm_s'] / units.ms:.0f} ms ({route['speedup']:.0f}x)")
print(ledger.table(ids=["17.5/throughput-gain", "17.10/int8-speedup", "17.8/routing-gain"]))

# %% [markdown]
# ## 7. What batch size should we run?
#
# Not a free parameter: two computable limits pin it. From above, the ITL objective: every
# extra sequence adds its KV stream to each step, so the step (the ITL) grows with the batch
# (17 §5: batch 57 -> 760 took the step from 6 to 23 ms). From the side, KV memory: free HBM
# over the per-sequence cache; for the 8B with worst-case 8K reservations, 60 GB / 1.05 GB
# gives 57, and paged KV raises that cap by charging each sequence only what it uses. Run at
# the smaller of the two, then confirm on real traffic: sweep the batch, keep the largest
# that holds p99 ITL; the knee of that curve is where the KV pool fills.
#
# The chapter gives no ITL number for this question; the companion assumes 20 ms ("a few tens
# of ms" in 17 §3; one definition, `companion.chapters.ch17.ITL_TARGET_S`, also Exercise 17-10's)
# and makes it a slider below.

# %%
w = calc.batch_window(m8, hw)
print(f"KV cap: {w['reserved_cap']} with 8,000-token reservations, {w['paged_cap']} paged "
      f"(600 live tokens each)")
print(f"decode step at {w['reserved_cap']}: {w['reserved_cap_step_s'] / units.ms:.1f} ms; at "
      f"{w['paged_cap']}: {w['paged_cap_step_s'] / units.ms:.1f} ms")
print(f"ITL ceiling at {calc.CH17_ASSUMED_ITL_TARGET_S / units.ms:g} ms: {w['itl_ceiling']}; "
      f"run at {w['run_batch']} ({w['binding']} binds),"
      f" {w['run_tokens_per_s']:,.0f} tok/s")
print(ledger.table(ids=["17.4/8b-free-GB", "17.4/8b-kv-8k-GB", "17.4/8b-max-concurrent",
                        "17.5/paged-batch", "17.5/interview-step-6ms",
                        "17.5/interview-step-23ms"]))

# %% [markdown]
# ### Explorer: the batch-size window
#
# The ITL target, the live context per sequence, the worst-case reservation, the model, the
# card and the TP degree. The blue curve is the step time against the batch; the dashed red
# line the ITL target; the vertical lines the KV caps. The star is the batch to run.

# %% tags=["nbval-ignore-output"]
batch_panel = widgets.BatchSizePanel()
batch_panel.show()

# %%
n = batch_panel.update().numbers
print(f"caps {n['reserved_cap']} (reserved) / {n['paged_cap']} (paged), ITL ceiling "
      f"{n['itl_ceiling']}: run at {n['run_batch']} ({n['binding']}), step "
      f"{n['run_step_ms']:.1f} ms")
n = batch_panel.update(itl_target_ms=30).numbers
print(f"with a 30 ms ITL target: ceiling {n['itl_ceiling']}, run at {n['run_batch']} "
      f"({n['binding']} binds)")
_ = batch_panel.reset()

# %% [markdown]
# ## 8. "Prefill should be compute-bound, so why is our MFU only 30%?"
#
# MFU counts only the model's matrix FLOPs, and a real prefill spends time elsewhere: the
# attention kernels (quadratic in the prompt, not in MFU's numerator), normalizations, the
# launches between kernels. Scheduling adds its own losses: chunked prefill splits the work on
# purpose, and prompts shorter than the ridge point (about 295 tokens) never leave the memory
# roof. 30-50% is the normal range; to find the specific gap, run `ncu` on the dominant
# kernels: if the big matrix multiplies each show high compute Speed of Light, the time is lost
# *between* kernels.

# %%
print(f"measured 20,000 prompt tok/s: MFU {100 * pre['mfu']:.0f}%")
attn = calc.attention_flops(m8, 8000)
mat = calc.matrix_flops(m8, 8000)
print(f"8,000-token prompt: attention adds {attn / 1e12:.1f} TFLOP to {mat / 1e12:.0f} TFLOP of "
      f"matrix work ({100 * attn / mat:.0f}%), which MFU does not count")
for n_tok in (128, 256, 2048):
    point = calc.roofline_point(calc.prefill_intensity(m8, n_tok), hw)
    print(f"{n_tok:5}-token prompt: intensity {calc.prefill_intensity(m8, n_tok):,.0f} FLOP/byte, "
          f"{point['bound']}-bound, at most {100 * point['fraction_of_peak']:.0f}% of peak")
print(ledger.table(ids=["17.9/prefill-mfu", "17.2/prefill-memory-bound-below"]))

# %% [markdown]
# ## Try this
#
# - Question 2 for the 405B shape (126 layers, 8 KV heads): KV per token, an 8K sequence, and
#   how many fit in the TP 8 x PP 2 layout's free memory.
# - Question 5: in `widgets.itl_tail_trace`, send the long prompts every 2 s instead of 0.4 s.
#   What happens to p99, and why is that worse news for monitoring?
# - Question 7: in the explorer, move the 8B to TP = 2. Which limit moves, and by how much?
# - Question 7 again: at what ITL target does the ITL ceiling, not KV memory, become binding
#   for 600-token chats on one H100?
# - Question 8: at what prompt length does attention add as many FLOPs as the matrices?
#
# **Practice problems.** The Chapter 17 practice problems in
# [the exercises folder](../../exercises/) are built from these questions and the sections'
# worked examples. Back to [17.10 The levers, ranked](17_10_levers.ipynb).
