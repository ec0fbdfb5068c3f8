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
# # 17.2 Roofline: where decode and prefill sit
#
# **The question.** Before measuring anything, how fast *can* a workload run on a given card?
# The roofline model answers it from two numbers you look up (peak compute, memory bandwidth)
# and one you count (how much arithmetic the workload does per byte it reads). Placed on that
# plot, decode at batch 1 lands at a third of a percent of the chip's peak, prefill of a
# 2,048-token prompt on the compute roof, and batching is the way to move decode up.
#
# previous: [17.1 Memory hierarchy](17_01_memory_hierarchy.ipynb) |
# [overview](17_00_overview.ipynb) | next: [17.3 Prefill vs decode](17_03_prefill_vs_decode.ipynb)

# %%
from companion import calc, ledger, plots, specs, units, widgets
from companion.chapters.ch17 import DECODE_TOK_PER_S
from companion.chapters.ch17 import H100_SPARSE_PEAK_FLOPS_PER_S as SPARSE_PEAK_FLOPS_PER_S

hw, m8 = specs.H100_SXM, specs.LLAMA_8B

# %% [markdown]
# ## Two roofs and a ridge
#
# Call *arithmetic intensity* $I$ the FLOPs a workload performs per byte it moves from HBM.
# With a peak of $P$ FLOP/s and a bandwidth of $\beta$ bytes/s, the work can never go faster
# than either limit allows:
#
# $$ \text{attainable}(I) = \min\left(P,\; I\,\beta\right). $$
#
# On log-log axes this is a line rising with slope 1 (the memory roof: doubling the
# intensity doubles the throughput) until it meets the flat compute roof at the *ridge point*
# $I^* = P/\beta$, the ratio of 17.1. Left of the ridge you pay for bytes; right of it you pay
# for arithmetic.

# %%
ridge = calc.ridge_point(hw)
print(f"ridge = {hw.peak_flops_per_s / units.TFLOP:.0f} TFLOP/s / "
      f"{hw.mem_bw_bytes_per_s / units.TB:.2f} TB/s = {ridge:.0f} FLOP per byte")

# %% [markdown]
# > **Erratum box: the sparse TFLOPS figure.** The vendor's headline for the H100 is 1,979
# > BF16 TFLOP/s, which counts 2:4 structured sparsity (two of every four weights zero and
# > skipped). Served LLM weights are dense, so the dense 989 is the right numerator; the
# > chapter is right that mixing them up is a 2x error. It then says the sparse figure
# > *halves* the ridge and *doubles* the apparent MFU. Both directions are reversed: the ridge
# > is peak over bandwidth, so a 2x larger peak *doubles* it, and MFU is achieved over peak,
# > so a 2x larger denominator *halves* the MFU you report. Read either way, the advice stands:
# > quote the dense peak.

# %%
sparse = hw.with_(peak_flops_per_s=SPARSE_PEAK_FLOPS_PER_S)
# 17 §9's decode measurement (146 tok/s on the 8B) as the achieved rate; any rate gives the same ratio
achieved = calc.decode_utilization(m8, hw, DECODE_TOK_PER_S)["flops_per_s"]
print(f"ridge with the sparse peak: {calc.ridge_point(sparse):.0f} FLOP/B "
      f"({calc.ridge_point(sparse) / ridge:.2f}x the dense ridge)")
print(f"MFU of {achieved:.3g} FLOP/s: dense {100 * calc.mfu(achieved, hw):.2f}%, "
      f"sparse {100 * calc.mfu(achieved, sparse):.2f}%")
for e in ledger.by_section("17.2"):
    if not e.agrees:
        print(f"- {e.claim}: chapter {e.printed} {e.unit}, companion {e.value:.2f}. {e.note}")

# %% [markdown]
# ## Decode at batch 1: one FLOP per byte
#
# One new token passes through every weight once. A matrix multiply spends one multiply and
# one add per weight, so the work is about $2N$ FLOPs for $N$ parameters (attention over the
# cache adds more on long contexts; leaving it out only flatters decode). At batch 1 every
# weight has to come from HBM again for every token: 16 GB do not fit in 50 MB of SRAM, so
# nothing survives from one token to the next. In BF16 each weight is 2 bytes:
#
# $$ I_{\text{decode}} = \frac{2N\ \text{FLOP}}{2N\ \text{bytes}} = 1\ \text{FLOP/byte}. $$
#
# One, against a ridge of 295. The roofline then gives the attainable rate and the share of
# the peak:

# %%
i_b1 = calc.decode_intensity(m8)
b1 = calc.roofline_point(i_b1, hw)
print(f"intensity {i_b1:g} FLOP/byte -> attainable {b1['attainable_flops_per_s']:.3g} FLOP/s "
      f"= {100 * b1['fraction_of_peak']:.2f}% of peak ({b1['bound']}-bound)")

# %% [markdown]
# The same fact in the time domain, for the 8B model: streaming the weights takes about 300
# times longer than the arithmetic on them. The 295 shows up again, now as microseconds
# waiting per microsecond working; the ridge point is the same ratio measured in time.

# %%
split = calc.decode_time_split(m8, hw)
print(f"weights              {split['weight_bytes'] / units.GB:.0f} GB")
print(f"time to stream them  {split['read_s'] / units.ms:.2f} ms per token")
print(f"decode ceiling       {split['tokens_per_s']:.0f} tokens/s")
print(f"FLOPs per token      {split['flops_per_token'] / 1e9:.0f} GFLOP")
print(f"time to compute them {split['compute_s'] / units.us:.1f} µs")
print(f"waiting : working    {split['wait_to_work']:.0f} : 1")

# %% [markdown]
# Why 2 bytes and not 4? Served models use 16-bit weights because on the memory roof bytes
# *are* throughput: FP32 would double every byte count and halve the ceiling, and INT8 (17.10)
# doubles it.

# %%
for label, bpp in (("FP32", 4), ("BF16", 2), ("INT8", 1)):
    s = calc.decode_time_split(m8, hw, bytes_per_param=bpp)
    print(f"{label}: {s['step_s'] / units.ms:5.2f} ms per token, {s['tokens_per_s']:4.0f} tok/s, "
          f"intensity {calc.decode_intensity(m8, bytes_per_param=bpp):g} FLOP/byte")

# %% [markdown]
# ## Prefill: the prompt length is the intensity
#
# Prefill pushes the whole prompt through the model in one pass, so each weight read from HBM
# is used for every prompt token before it is dropped. With $n$ prompt tokens:
#
# $$ I_{\text{prefill}} \approx \frac{2N\,n}{2N} = n\ \text{FLOP/byte}. $$
#
# A 2,048-token prompt sits far right of the ridge: compute-bound. Its time is FLOPs over
# the compute actually achieved; the chapter assumes 50% of peak as a realistic prefill (an
# assumption it flags and reuses; 17.9 turns it into a measurable MFU).

# %%
n = calc.CH17_PROMPT_TOKENS
print(f"prefill intensity ({n:,} tokens): {calc.prefill_intensity(m8, n):,.0f} FLOP/byte")
print(f"prefill FLOPs: {calc.matrix_flops(m8, n) / units.TFLOP:.1f} TFLOP")
print(f"at the full roof: {calc.prefill_compute_s(m8, hw, n, efficiency=1.0) / units.ms:.0f} ms; "
      f"at {calc.CH17_PREFILL_EFFICIENCY:.0%} of peak: "
      f"{calc.prefill_compute_s(m8, hw, n) / units.ms:.0f} ms")
print(f"prompts shorter than ~{ridge / calc.prefill_intensity(m8, 1):.0f} tokens stay on the "
      "memory roof")

# %% [markdown]
# ## Batching moves decode up the roof, and the KV cache drags it back
#
# Decoding $B$ sequences in the same pass lets each weight read serve $B$ tokens, so the
# intensity grows to about $B$; the ridge is reached only near $B \approx 295$. But each
# sequence's KV cache is its own and is read in full every step; it does not amortize. With
# $P$ parameters, 2 bytes each, and $k_{\text{seq}}$ bytes of live cache per sequence:
#
# $$ I_{\text{eff}} = \frac{B \cdot 2P}{2P + B\,k_{\text{seq}}}. $$
#
# The chapter's two cases, the 8B at batch 64: short chats (600 live tokens each) and long
# contexts (8,000 tokens each).

# %%
for L in (0, calc.CH17_CHAT_LIVE_TOKENS, calc.CH17_LONG_CONTEXT_TOKENS):
    step = calc.decode_vs_context(m8, hw, L, batch=64)
    print(f"B = 64, {L:>5,} live tokens: KV {step['kv_bytes'] / 64 / units.GB:5.3f} GB each, "
          f"bytes per step {step['step_bytes'] / units.GB:5.1f} GB, "
          f"intensity {calc.decode_intensity(m8, 64, L):4.1f} FLOP/byte")

# %% [markdown]
# Same batch, a quarter of the intensity once the caches are long: long-context serving is
# bound by memory capacity *and* bandwidth. That is why 17.4 sizes the cache carefully and
# 17.5 stops wasting it.
#
# ## The roofline, drawn from the numbers
#
# The chapter draws a schematic; here every point is computed (`calc.roofline_point` on the
# intensities above): decode at batch 1, batch 64 with weights only, batch 64 with 600 and
# with 8,000 live tokens per sequence, and prefill of the 2,048-token prompt.

# %%
points = [dict(label="decode, batch 1", **b1)]
for label, L in (("decode, B=64, weights only", 0),
                 ("decode, B=64, 600 live tokens", calc.CH17_CHAT_LIVE_TOKENS),
                 ("decode, B=64, 8,000 live tokens", calc.CH17_LONG_CONTEXT_TOKENS)):
    points.append(dict(label=label, **calc.roofline_point(calc.decode_intensity(m8, 64, L), hw)))
points.append(dict(label=f"prefill, {n:,}-token prompt",
                   **calc.roofline_point(calc.prefill_intensity(m8, n), hw)))
for p in points:
    print(f"{p['label']:34} {p['intensity_flop_per_byte']:7,.1f} FLOP/B "
          f"{p['attainable_flops_per_s'] / units.TFLOP:7.1f} TFLOP/s "
          f"{100 * p['fraction_of_peak']:6.2f}% of peak")
plots.roofline_figure(hw, points).show()

# %% [markdown]
# ## Chapter says / companion computes

# %%
print(ledger.table("17.2"))

# %% [markdown]
# ## Explorer: move the points yourself
#
# Choose a card, a model, the decode batch, how many live KV tokens each sequence holds, the
# prompt length of the prefill, and the precision of weights and KV. The four points move on
# the chosen card's roofline (the H100's roof stays in grey for reference); the readout lists
# every plotted number. "chapter's setting" puts back the H100, the 8B, batch 64, 600 live
# tokens, a 2,048-token prompt and BF16.

# %% tags=["nbval-ignore-output"]
panel = widgets.RooflinePanel()
panel.show()

# %%
numbers = panel.update().numbers
for key in ("ridge_flop_per_byte", "decode_b1_intensity", "decode_b1_pct_of_peak",
            "decode_b1_step_ms", "decode_b1_tok_s", "decode_batch_weights_only_intensity",
            "decode_batch_with_kv_intensity", "prefill_intensity", "prefill_pct_of_peak"):
    print(f"{key:36} {numbers[key]:,.4g}")

# %% [markdown]
# ### A mixture of experts on the roofline
#
# The model menu continues past the chapter's shapes with the shelf of real `config.json`
# files, and the text box reads your own (a path or the pasted JSON). The green line is
# batched decode as $B$ doubles from 1 to 1,024; for an MoE the dotted grey line shows where
# a dense model with the same batch-1 intensity would be. The two start together, because one
# token reads exactly the experts it computes with. Then they part: the FLOPs still grow with
# every sequence, but so do the bytes, since under uniform routing a layer with $E$ experts,
# $k$ per token, streams $E\,(1-(1-k/E)^B)$ of them for $B$ tokens. Only when that count
# nears $E$ do the bytes stop growing; from there the intensity climbs in step with $B$ again,
# but along the lower grey line, since each step now reads every expert while each token
# computes through only its own $k$. A skewed router (some experts much more popular than others) touches fewer
# distinct experts per batch, so the real points sit somewhat to the right of the green line.
#
# **Predict, then move.** Select "shelf: Qwen3-30B-A3B" with the chapter's batch. Will the
# batch that reaches the ridge be closer to the dense model's, or several times larger? Write
# your guess, then read both batches off the readout.

# %% tags=["remove-input"]
from companion.display import answer  # noqa: E402  (this cell stands alone for easy merges)

from companion import models  # noqa: E402

moe = models.load("qwen3-30b-a3b")
moe_roof = widgets.RooflinePanel(model="qwen3-30b-a3b").update().numbers
answer(f"At the chapter's batch of {widgets.RooflinePanel().params['batch']} the MoE touches "
       f"{moe_roof['experts_touched']:.1f} experts per layer, so its weights-only intensity "
       f"is {moe_roof['decode_batch_weights_only_intensity']:.3g} FLOP/B, "
       f"{100 * moe_roof['moe_over_dense_intensity']:.0f}% of what a dense model reaches at "
       f"that batch. A dense model would reach the ridge near B = "
       f"{moe_roof['dense_batch_to_reach_ridge']:,.0f}; the MoE needs about "
       f"{moe_roof['batch_to_reach_ridge']:,.0f}, "
       f"{moe_roof['batch_to_reach_ridge'] / moe_roof['dense_batch_to_reach_ridge']:.1f} times "
       f"as many sequences. Long before that batch every expert is read, so a step streams "
       f"all {moe.streamed_params / 1e9:.1f} B read-once parameters while each sequence "
       f"computes through only {moe.active_streamed_params / 1e9:.1f} B of them: the "
       f"intensity stays at that share of B, and B must grow by the inverse, "
       f"{moe.streamed_params / moe.active_streamed_params:.1f}x.",
       title="Worked answer: an MoE's ridge batch")

# %% [markdown]
# ## Try this
#
# 1. In the explorer, raise the batch until batched decode (weights only) touches the ridge.
#    Then set the live KV to 8,000 tokens: how large must the batch be now, and can it ever
#    get there? (Notebook 17.4 answers with the card's memory.)
# 2. Switch the weights to INT8: which points move, by how much, and why does prefill not
#    get faster on the compute roof?
# 3. Drop the prompt below 295 tokens. Which roof is prefill on now?
# 4. Try the H200 with the 8B at batch 1: the ridge moves left, but what happens to the
#    decode ceiling in tokens per second, and why?
# 5. With the 70B, where does batch-1 decode sit, and what is its ceiling on one card (if it
#    fitted)?
#
# **Practice problems.** In [the exercises folder](../../exercises/) (`ex17_*.ipynb`), the
# Chapter 17 problems on placing a workload on the roofline, the batch-1 decode ceiling and
# the effective intensity with KV reads practise this section.
#
# Next: [17.3 Prefill vs decode](17_03_prefill_vs_decode.ipynb).
