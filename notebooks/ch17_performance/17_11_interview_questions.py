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
# Chapter 17 ends with nine questions that interviewers put to candidates about inference
# performance, each with a sketch of a strong answer. What makes those answers strong is that
# each one is a short derivation. Here every question is restated in our words and its
# arithmetic is done by `companion`, with the chapter's printed numbers beside it from the
# ledger. Treat each section as a drill: read only its heading, derive the answer on paper,
# then read the explanation and the printout and compare.
#
# The setting is the chapter's throughout: an H100 SXM (80 GB, 3.35 TB/s, 989 dense BF16
# TFLOP/s, 900 GB/s NVLink counting both directions together), the 8B and 70B Llama-3 shapes
# in BF16, prefill at 50% of peak.

# %%
from companion import calc, ledger, specs, units, widgets
from companion.chapters import ch17
from companion.display import answer, md

hw = specs.H100_SXM
m8, m70, m405 = specs.LLAMA_8B, specs.LLAMA_70B, specs.LLAMA_405B

# %% [markdown]
# ## 1. Show why decode is limited by memory bandwidth
#
# Count both sides of one token. Each parameter takes part in one multiply and one add, so a
# token costs $2N$ FLOPs. At batch 1 each weight is fetched from HBM for this token alone
# (the weights are gigabytes, the on-chip SRAM tens of megabytes), so the token moves $2N$
# bytes: one FLOP per byte. The card could do $I^\star = \pi/\beta$ FLOPs per byte before
# memory stopped being the limit, a few hundred, so decode runs at the bandwidth times one
# FLOP per byte, a tiny fraction of peak. A batch of $b$ lets one fetch of a weight serve $b$
# tokens; the catch is the KV cache, which belongs to one sequence and is read at every step,
# so long contexts drag the intensity down again: below one once the cache is as large as the
# weights, and toward zero as it grows further.

# %%
ridge = calc.ridge_point(hw)
b1 = calc.roofline_point(calc.decode_intensity(m8), hw)
print(f"ridge {ridge:.0f} FLOP/byte; batch-1 decode {calc.decode_intensity(m8):g} FLOP/byte -> "
      f"{b1['attainable_flops_per_s']:.3g} FLOP/s = {100 * b1['fraction_of_peak']:.2f}% of peak")
for L in (0, ch17.CHAT_LIVE_TOKENS, ch17.LONG_CONTEXT_TOKENS):
    print(f"batch 64, {L:>5} live tokens per sequence: intensity "
          f"{calc.decode_intensity(m8, 64, L):.0f} FLOP/byte")
ledger.show(ids=["17.2/ridge", "17.2/decode-intensity-b1", "17.2/attainable-b1",
                 "17.2/fraction-of-peak", "17.2/batch-intensity-64",
                 "17.2/chat-intensity", "17.2/long-intensity"], label="this answer's numbers")

# %% [markdown]
# ## 2. Size the KV cache of a 70B model at an 8K context
#
# Per token, multiply: K and V, times the layers, times the KV heads, times the head size,
# times 2 bytes. The pitfall is the head count: the 70B has 64 query heads but only 8 KV heads
# (grouped-query attention), and using 64 makes the answer eight times too large. A good
# answer then turns to capacity: the BF16 weights alone exceed a card, so the model is split
# over GPUs before any KV exists, and the question becomes how many long conversations the
# memory left on four cards can hold.

# %%
per_token = calc.kv_bytes_per_token(m70)
print(f"70B: {per_token:,} B = {per_token / units.KiB:.0f} KiB per token; "
      f"{ch17.LONG_CONTEXT_TOKENS:,} tokens: "
      f"{calc.kv_bytes(m70, ch17.LONG_CONTEXT_TOKENS, block_tokens=1) / units.GB:.2f} GB")
for row in calc.attention_variants(m70):
    print(f"  {row['attention']}: {row['n_kv_heads']:2} KV heads, "
          f"{row['kv_bytes_per_token'] / units.KiB:5.0f} KiB per token, "
          f"MHA / this = {row['reduction_vs_mha']:g}x")
cap = calc.tp_kv_capacity(m70, hw, tp=4)
print(f"weights {m70.weight_bytes / units.GB:.0f} GB ({cap['weights_over_memory']:.2f}x a card); "
      f"TP 4: {cap['free_kv_bytes_per_gpu'] / units.GB:.0f} GB free per GPU, "
      f"{cap['free_kv_bytes'] / units.GB:.0f} GB in all -> {cap['max_sequences']} sequences of "
      f"{ch17.LONG_CONTEXT_TOKENS:,}")
ledger.show(ids=["17.4/70b-kv-per-token-KB", "17.4/70b-kv-8k-GB", "17.4/gqa-reduction",
                 "17.4/70b-weights-GB", "17.4/tp4-sequences",
                 "17.4/interview-about-sixty"], label="this answer's numbers")

# %% [markdown]
# ## 3. "nvidia-smi says 95% busy, yet throughput is poor"
#
# That gauge only says that *some* kernel was on the GPU during the sample; it knows nothing of
# how many SMs worked or whether they computed or waited for memory (17 §9). A batch-1 decode
# reads as almost fully busy while using a sliver of the arithmetic. Compute the ratios that
# do mean something: MBU for decode, MFU for prefill. If MBU is high, the decode is simply at
# its memory limit and only a bigger batch or fewer bytes per weight help. If MBU is low as
# well, profile: the `nsys` timeline for gaps and serialised work, then `ncu` on the kernel
# that dominates. Most often the batch is too small, and KV memory is what keeps it small.

# %%
print(f"1 of {hw.sm_count} SMs busy all the time: util 100%, compute <= "
      f"{100 * calc.sm_share(1, hw):.2f}%")
dec = calc.decode_utilization(m8, hw, ch17.DECODE_TOK_PER_S)
pre = calc.prefill_utilization(m8, hw, ch17.PREFILL_TOK_PER_S)
print(f"8B decode at {ch17.DECODE_TOK_PER_S} tok/s: MBU {100 * dec['mbu']:.0f}% (healthy), MFU "
      f"{100 * dec['mfu']:.2f}% (irrelevant); prefill at {ch17.PREFILL_TOK_PER_S:,} tok/s: "
      f"MFU {100 * pre['mfu']:.0f}%")
ledger.show(ids=["17.9/sm-share", "17.3/decode-fraction-of-peak", "17.9/decode-mbu",
                 "17.9/decode-mfu", "17.9/prefill-mfu"], label="this answer's numbers")

# %% [markdown]
# ## 4. Tensor or pipeline parallelism?
#
# Contrast what each one sends and how often (17 §7). TP slices every matrix and must
# all-reduce twice per layer for every token: many small collectives, each with a fixed
# latency floor, so it wants NVLink and stays within a server; its reward is a per-token time
# divided by the TP degree $g$, and a model too big for one card becomes runnable. PP slices
# the layer stack into $S$ stages and passes one activation across each stage boundary, cheap
# enough to cross servers; its price is the bubble $(S-1)/(M+S-1)$ with $M$ microbatches, paid unless many microbatches are in flight, and it
# never makes a single stream faster. The usual answer combines them: TP across the NVLink
# domain, PP stages across servers only when one server is not enough, as for the 405B.

# %%
traffic = calc.tp_allreduce_traffic(m70, 4)
step = calc.tp_decode_step(m70, hw, 4)
print(f"70B, TP 4: {traffic['collectives']} collectives per token, floor "
      f"{step['latency_s'] / units.ms:.2f} ms on a {step['read_s'] / units.ms:.1f} ms read")
print(f"PP bubble, S = 4: M = 16 -> {100 * calc.pipeline_bubble(4, 16):.1f}%, M = 64 -> "
      f"{100 * calc.pipeline_bubble(4, 64):.1f}%")
lay = calc.parallel_layout(m405, hw)
print(f"405B: {m405.weight_bytes / units.GB:.0f} GB -> TP {lay['tp']} x PP {lay['pp']} = "
      f"{lay['gpus']} GPUs at {lay['weight_bytes_per_gpu'] / units.GB:.1f} GB each")
ledger.show(ids=["17.7/collectives", "17.7/latency-floor-ms", "17.7/bubble-16",
                 "17.7/405b-weights-GB", "17.7/405b-gpus", "17.7/405b-tp8pp2-GB"],
            label="this answer's numbers")

# %% [markdown]
# ## 5. "Our p99 ITL is terrible but the mean looks fine"
#
# Think about which intervals are slow. When a long prompt is admitted whole, its prefill sits
# in one step, and every running stream waits that step out: one interval many times the
# usual decode step (17 §3). Such steps are rare, so the median interval is untouched, while
# the mean is pulled well above it (the trace below), and once more than one interval in a hundred holds a stall, the 99th
# percentile is one of those stalls. To confirm, line up the ITL spikes with the arrival of
# long prompts. The remedy is chunked prefill with a token budget per step, paying a bounded
# TTFT cost (17 §6); a large fleet whose two objectives still collide can separate prefill and
# decode (17 §8) and track goodput.
#
# The trace below is **generated by the companion's scheduler simulator**: 8 chat streams of
# 500 tokens while six 8,000-token prompts arrive, 0.4 s apart.

# %% tags=["wide-output"]
hol = calc.head_of_line_stall(m8, hw, ch17.LONG_CONTEXT_TOKENS, ch17.SMOOTH_ITL_S)
print(f"{ch17.LONG_CONTEXT_TOKENS:,}-token prefill: {hol['stall_s'] / units.ms:.0f} ms, "
      f"{hol['worst_itl_over_step']:.0f}x a {ch17.SMOOTH_ITL_S / units.ms:g} ms step")
traces = {"whole prompts": widgets.itl_tail_trace(None),
          "512-token chunks": widgets.itl_tail_trace(512)}
for label, t in traces.items():
    print(f"{label:17}: ITL median {t['itl_p50_s'] / units.ms:5.1f} ms, mean "
          f"{t['itl_mean_s'] / units.ms:5.1f} ms, p99 {t['itl_p99_s'] / units.ms:5.1f} ms "
          f"({t['intervals']:,} intervals); long prompts' mean TTFT "
          f"{t['long_ttft_mean_s'] / units.ms:.0f} ms")


def stall_share(trace: dict) -> dict:
    """One chat stream's intervals and the stalls among them (intervals longer than ten median
    steps: a prefill sat inside each), the chats' end and the last long prompt's arrival."""
    res = trace["result"]
    chats = [r for r in res.ids if r.startswith("chat")]
    longs = [r for r in res.ids if r.startswith("long")]
    stalls = min(int((res.itl_s[r] > 10 * trace["itl_p50_s"]).sum()) for r in chats)
    intervals = len(res.itl_s[chats[0]])
    return {"streams": len(chats), "stalls": stalls, "intervals": intervals,
            "share": stalls / intervals,
            "chat_end_s": min(res.finish_s[res.position(r)] for r in chats),
            "last_long_s": max(res.arrival_s[res.position(r)] for r in longs)}


share = stall_share(traces["whole prompts"])
print(f"whole prompts: the chats decode until {share['chat_end_s']:.2f} s, past the last long "
      f"prompt's arrival at {share['last_long_s']:.1f} s, so each of the {share['streams']} "
      f"streams sits through {share['stalls']} stalls in {share['intervals']} intervals "
      f"({100 * share['share']:.1f}% of them, more than the 1% that a p99 leaves out)")
ledger.show(ids=["17.3/hol-stall-ms", "17.3/hol-worst-itl-x", "17.6/iteration-ms",
                 "17.6/itl-improvement", "17.6/ttft-increase"], label="this answer's numbers")

# %% [markdown]
# ## 6. Raise throughput without buying GPUs
#
# Work down a list, cheapest first. Verify that paged KV and continuous batching are really on,
# since a configuration slip can quietly lose the largest win available. Then raise the
# number of concurrent sequences until KV memory or the ITL target says stop (question 7).
# Then store the weights in 8 bits, halving what each decode step streams. For conversational
# traffic, cache prefixes and route turns to the worker that holds them, so history is not
# prefilled again and again. All four are one roofline idea: make each byte fetched from HBM
# serve more arithmetic, or fetch fewer bytes per token.

# %%
gain = calc.paged_batch_gain(m8, hw, block_tokens=1)
q = calc.quantization_ceiling(m8, hw, 1)
route = calc.kv_routing_ttft(m8, hw, 20)
print(f"paged KV: batch {gain['naive']['batch']} -> {gain['paged']['batch']}, throughput "
      f"{gain['naive']['tokens_per_s']:,.0f} -> {gain['paged']['tokens_per_s']:,.0f} tok/s "
      f"({gain['throughput_gain']:.1f}x)")
print(f"INT8 weights: ceiling {q['baseline_tokens_per_s']:.0f} -> {q['tokens_per_s']:.0f} tok/s "
      f"({q['speedup']:g}x)")
print(f"KV-aware routing, turn 20 of a chat ({ch17.AGENT_FIRST_TURN_TOKENS:,} tokens, then "
      f"{ch17.AGENT_TOKENS_PER_TURN:,} per turn; cold re-prefills all, warm only the new "
      f"message): TTFT {route['cold_s'] / units.ms:.0f} -> "
      f"{route['warm_s'] / units.ms:.0f} ms ({route['speedup']:.0f}x)")
ledger.show(ids=["17.5/throughput-gain", "17.10/int8-speedup", "17.8/routing-gain"],
            label="this answer's numbers")

# %% [markdown]
# ## 7. What batch size should we run?
#
# The batch is set by two limits you can compute, and you run at the smaller one. The ITL
# target bounds it because each added sequence adds its KV reads to every step, so the step,
# which is the ITL, lengthens with the batch (17 §5 computes how much). KV memory bounds it
# because the free HBM divided by each sequence's cache is the most sequences that fit; with
# worst-case reservations that cap is low, and paged KV lifts it by charging each sequence only
# what it uses. Then check on live traffic: sweep the batch and keep the largest value that
# still meets the p99 ITL target; where the curve bends, the KV pool has filled.
#
# The chapter gives no ITL number for this question; the companion assumes 20 ms ("a few tens
# of ms" in 17 §3; one definition, `companion.chapters.ch17.ITL_TARGET_S`, also Exercise 17-10's)
# and makes it a slider below.

# %%
w = calc.batch_window(m8, hw)
print(f"KV cap: {w['reserved_cap']} with {ch17.LONG_CONTEXT_TOKENS:,}-token reservations, "
      f"{w['paged_cap']} paged ({ch17.CHAT_LIVE_TOKENS} live tokens each)")
print(f"decode step at {w['reserved_cap']}: {w['reserved_cap_step_s'] / units.ms:.1f} ms; at "
      f"{w['paged_cap']}: {w['paged_cap_step_s'] / units.ms:.1f} ms")
print(f"ITL ceiling at {ch17.ITL_TARGET_S / units.ms:g} ms: {w['itl_ceiling']}; "
      f"run at {w['run_batch']} ({w['binding']} binds),"
      f" {w['run_tokens_per_s']:,.0f} tok/s")
ledger.show(ids=["17.4/8b-free-GB", "17.4/8b-kv-8k-GB", "17.4/8b-max-concurrent",
                 "17.5/paged-batch", "17.5/interview-step-6ms",
                 "17.5/interview-step-23ms"], label="this answer's numbers")

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
n = batch_panel.at().numbers
print(f"caps {n['reserved_cap']} (reserved) / {n['paged_cap']} (paged), ITL ceiling "
      f"{n['itl_ceiling']}: run at {n['run_batch']} ({n['binding']}), step "
      f"{n['run_step_ms']:.1f} ms")
n = batch_panel.at(itl_target_ms=30).numbers
print(f"with a 30 ms ITL target: ceiling {n['itl_ceiling']}, run at {n['run_batch']} "
      f"({n['binding']} binds)")
# %% [markdown]
# ## 8. "Prefill should be compute-bound, so why is our MFU only 30%?"
#
# MFU's numerator holds only the model's matrix FLOPs, so any time spent on other work lowers
# it: attention, which grows with the square of the prompt and is not in the numerator,
# normalisations, and the launch gaps between kernels. The scheduler adds losses of its own:
# chunked prefill breaks the work up deliberately, and prompts shorter than the ridge point in
# tokens stay on the memory roof. The chapter gives two bands: 30-50% is normal (its interview
# answer), 40-60% strong (17 §9); 17.9's 32% is normal, not strong. To
# locate the loss, run `ncu` on the dominant kernels: if each large matrix multiply shows high
# compute Speed of Light, the time is being lost *between* kernels.

# %%
print(f"measured {ch17.PREFILL_TOK_PER_S:,} prompt tok/s: MFU {100 * pre['mfu']:.0f}%")
attn = calc.attention_flops(m8, ch17.LONG_CONTEXT_TOKENS)
mat = calc.matrix_flops(m8, ch17.LONG_CONTEXT_TOKENS)
print(f"{ch17.LONG_CONTEXT_TOKENS:,}-token prompt: attention adds {attn / 1e12:.1f} TFLOP to {mat / 1e12:.0f} TFLOP of "
      f"matrix work ({100 * attn / mat:.0f}%), which MFU does not count")
for n_tok in (128, 256, 2048):
    point = calc.roofline_point(calc.prefill_intensity(m8, n_tok), hw)
    print(f"{n_tok:5}-token prompt: intensity {calc.prefill_intensity(m8, n_tok):,.0f} FLOP/byte, "
          f"{point['bound']}-bound, at most {100 * point['fraction_of_peak']:.0f}% of peak")
ledger.show(ids=["17.9/prefill-mfu", "17.2/prefill-memory-bound-below"],
            label="this answer's numbers")

# %% [markdown]
# ## 9. "You keep saying roofline: what's on the axes?"
#
# The horizontal axis is arithmetic intensity, FLOPs done per byte moved from HBM; the vertical
# one is attainable FLOP/s, the smaller of the peak and intensity times bandwidth (17 §2). The
# two roofs meet at the ridge. Batch-1 decode sits at one FLOP per byte, a prefill at about
# its prompt length; batching, quantization and speculative decoding all move a point right
# on this one plot.

# %%
rf = widgets.RooflinePanel()
rn = rf.at().numbers
print(f"ridge {rn['ridge_flop_per_byte']:.0f} FLOP/byte; batch-1 decode at "
      f"{rn['decode_b1_intensity']:g} ({rn['decode_b1_pct_of_peak']:.2f}% of peak); prefill at "
      f"{rn['prefill_intensity']:,.0f} ({rn['prefill_pct_of_peak']:.0f}% of peak)")
rf.figure().show()

# %% [markdown]
# ## Try this
#
# 1. Question 2 for the 405B shape (126 layers, 8 KV heads): the KV per token, one 8K
#    sequence, and how many such sequences fit in the TP 8 x PP 2 layout's free memory.
# 2. **Predict, then move.** Question 5: in `widgets.itl_tail_trace`, send the long prompts
#    every 2 s instead of every 0.4 s (`long_every_s=2.0`), and lengthen the chats (`decode_outputs`) in the same
#    proportion so that all six prompts still arrive while they decode. Predict what happens
#    to the p99 ITL and to the mean, then run it. Why is that worse news for monitoring?
# 3. **Predict, then move.** Question 7: in the explorer, put the 8B on TP = 2. Predict which
#    limit moves, and roughly by how much, then move the control.
#    <!-- states: batch_panel(tp=2) -->
# 4. Question 7 again: from which ITL target down does the ITL ceiling, not KV memory, decide
#    the batch for 600-token chats on one H100?
#    <!-- states: batch_panel(itl_target_ms=...) -->
# 5. Question 8: at what prompt length does attention cost as many FLOPs as the matrices?

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
m405_kv = calc.kv_bytes_per_token(m405)
seq_tokens = ch17.LONG_CONTEXT_TOKENS
seq405 = calc.kv_bytes(m405, seq_tokens, block_tokens=1)
lay405 = calc.parallel_layout(m405, hw)
free405 = lay405["free_kv_bytes_per_gpu"] * lay405["gpus"]
answer(f"""Same formula, other shape: {m405_kv:,} B = {m405_kv / units.KiB:.0f} KiB per token
({m405.n_layers} layers instead of {m70.n_layers}), so a sequence of {seq_tokens:,} tokens holds
{seq405 / units.GB:.2f} GB. TP {lay405['tp']} x PP {lay405['pp']} leaves
{lay405['free_kv_bytes_per_gpu'] / units.GB:.1f} GB free on each of {lay405['gpus']} GPUs,
{free405 / units.GB:.0f} GB in all, which holds {int(free405 // seq405)} such sequences (the
cache shards over both the TP group and the stages, so the pool is the sum). The formula is
the same for every shape: what changes is the layer count it multiplies and the memory the
layout leaves free.""",
       title="Worked answer 1")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
often_s, rare_s = 0.4, 2.0
often = widgets.itl_tail_trace(None, long_every_s=often_s)
s_often = stall_share(often)
rare_outputs = round((s_often["intervals"] + 1) * rare_s / often_s)
rare = widgets.itl_tail_trace(None, long_every_s=rare_s, decode_outputs=rare_outputs)
s_rare = stall_share(rare)
answer(f"""With a long prompt every {often_s:g} s, each chat stream of {s_often['intervals'] + 1} tokens sits through
{s_often['stalls']} stalls in its {s_often['intervals']} intervals
({100 * s_often['share']:.1f}%): p99 {often['itl_p99_s'] / units.ms:.1f} ms, mean
{often['itl_mean_s'] / units.ms:.1f} ms, median {often['itl_p50_s'] / units.ms:.1f} ms. With one
every {rare_s:g} s and chats of {rare_outputs:,} tokens that still decode until
{s_rare['chat_end_s']:.1f} s, after the last prompt arrives at {s_rare['last_long_s']:.1f} s,
each stream sits through the same {s_rare['stalls']} stalls, now among
{s_rare['intervals']:,} intervals ({100 * s_rare['share']:.2f}%): p99
{rare['itl_p99_s'] / units.ms:.1f} ms, mean {rare['itl_mean_s'] / units.ms:.1f} ms, median
{rare['itl_p50_s'] / units.ms:.1f} ms. The longest interval is
{often['itl_max_s'] / units.ms:.0f} ms in the first trace and {rare['itl_max_s'] / units.ms:.0f} ms
in the second. A percentile counts how many intervals are slow, not how slow they are: once
the stalls fall below 1% of the intervals, the p99 is an ordinary step and the mean lies only
{(rare['itl_mean_s'] - rare['itl_p50_s']) / units.ms:.1f} ms above the median, yet every user
still freezes once per long prompt. A dashboard of means or p99 can look
healthy through that; the maximum ITL, or the ITL lined up with prompt arrivals, shows it at
once.""",
       title="Worked answer 2")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
one_gpu = batch_panel.at().numbers
two_gpu = batch_panel.at(tp=2).numbers
tp2_comm = calc.tp_decode_step(m8, hw, 2, batch=two_gpu["run_batch"],
                               context_tokens=ch17.CHAT_LIVE_TOKENS)["comm_s"]
answer(f"""Both limits move. Each GPU now reads half of the weights and half of each KV cache,
so the step at a given batch shortens and the ITL ceiling rises from {one_gpu['itl_ceiling']}
to {two_gpu['itl_ceiling']} sequences. Two cards also hold twice the memory but the weights
only once, so the paged KV cap grows from {one_gpu['paged_cap']} to {two_gpu['paged_cap']}
(the reserved cap from {one_gpu['reserved_cap']} to {two_gpu['reserved_cap']}). The batch to
run goes from {one_gpu['run_batch']} to {two_gpu['run_batch']} ({two_gpu['binding']}
binds). The step at that batch includes {tp2_comm / units.ms:.2f} ms of TP collectives
(17 §7), a cost one GPU never paid. A second GPU relaxes both limits at once, so the question
after the move is which of them still binds.""", title="Worked answer 3")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
itl_ctl = next(c for c in widgets.BatchSizePanel.controls if c.name == "itl_target_ms")
targets = [itl_ctl.min + k * itl_ctl.step
           for k in range(round((itl_ctl.max - itl_ctl.min) / itl_ctl.step) + 1)]
windows = {ms: batch_panel.at(itl_target_ms=ms).numbers for ms in targets}
edge = max(ms for ms, n in windows.items() if n["binding"] == "ITL target")
w_edge, w_past = windows[edge], windows[targets[targets.index(edge) + 1]]
answer(f"""The paged KV cap for {ch17.CHAT_LIVE_TOKENS}-token chats is {w_edge['paged_cap']}
sequences whatever the target. The ITL ceiling grows with the target and, stepping the
slider, stays below that cap up to {edge:g} ms (ceiling {w_edge['itl_ceiling']}); one step
later the ceiling is {w_past['itl_ceiling']} and KV memory binds. The exact edge is the step
time of a batch at the cap, {w_edge['paged_cap_step_ms']:.1f} ms: for every target below it
the ITL limit decides the batch. The {ch17.ITL_TARGET_S / units.ms:g} ms target this notebook
assumes (the companion's choice: the chapter asks only for a p99 of "a few tens of ms", 17 §3)
is inside that range: for short chats on one H100 it is the latency target, not memory, that
sets the batch.""",
       title="Worked answer 4")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
N, n_layers, d_model = m8.n_params, m8.n_layers, m8.hidden_size
a_pair = calc.attention_flops_per_pair(m8)       # a = 4 d_head n_q n_layers = 4 n_layers d_model
n_cross = N / (n_layers * d_model)               # closed form, 4N / a
n_check = round(n_cross)
attn_x, mat_x = calc.attention_flops(m8, n_check), calc.matrix_flops(m8, n_check)
i_cross = N / (2 * n_layers * d_model)           # one token's attention = its 2N, at 2N / a keys
attn_8k = calc.attention_flops(m8, ch17.LONG_CONTEXT_TOKENS)
mat_8k = calc.matrix_flops(m8, ch17.LONG_CONTEXT_TOKENS)
answer(f"""Count per token. The matrices cost $2N$ whatever the position. Attention costs
$a = 4\\,d_\\text{{head}}\\,n_q\\,n_\\text{{layers}} = 4\\,n_\\text{{layers}}\\,d_\\text{{model}}$
= {a_pair:,.0f} FLOP for each key a token looks at (8B: $d_\\text{{model}}$ = {d_model:,}), so
token $i$ of a prompt pays $a\\,i$, growing with its position. Summed over an $n$-token prompt
that is $a\\,n(n+1)/2 \\approx 2\\,n_\\text{{layers}}\\,d_\\text{{model}}\\,n^2$ against $2Nn$
for the matrices, and the two are equal at
$n = N/(n_\\text{{layers}}\\,d_\\text{{model}})$ = {N / 1e9:g} × 10⁹ / ({n_layers} × {d_model:,})
= **{n_cross:,.0f} tokens**. `calc` agrees: at {n_check:,} tokens attention is
{attn_x / 1e12:,.0f} TFLOP against {mat_x / 1e12:,.0f} TFLOP of matrix work (ratio
{attn_x / mat_x:.4f}). A single token reaches the balance earlier, once it looks at
$2N/a$ = {i_cross:,.0f} keys, so in a prompt of {n_cross:,.0f} tokens the later half already
spends more on attention than on the weights. At the chapter's
{ch17.LONG_CONTEXT_TOKENS:,}-token prompt attention adds only {100 * attn_8k / mat_8k:.0f}%, a
correction to MFU; well past {n_cross:,.0f} tokens it is most of the prefill.""",
       title="Worked answer 5")

# %% [markdown]
# Back to [17.10 The levers, ranked](17_10_levers.ipynb).
#
# > **What you can now compute**
# >
# > - Why batch-1 decode sits on the memory roof, from the FLOPs and bytes of one token ([Exercise 17-3](../../exercises/ex17_3.ipynb))
# > - The KV bytes of a model at a context, and how many sequences the free memory holds ([Exercise 17-1](../../exercises/ex17_1.ipynb))
# > - The cost of TP collectives and the PP bubble for a placement ([Exercise 17-5](../../exercises/ex17_5.ipynb))
# > - The batch to run between the ITL ceiling and the KV caps ([Exercise 17-10](../../exercises/ex17_10.ipynb))
# > - What the ITL tail of a long-prompt stall looks like, and what chunking trades for it ([Exercise 17-11](../../exercises/ex17_11.ipynb))
