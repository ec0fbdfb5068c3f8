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
# # Chapter 17, "LLM Inference Performance": assumptions, goals and the map
#
# Chapter 17 studies LLM serving from the silicon upwards, and one quotient carries the whole
# argument: the arithmetic a GPU could do in the time one byte travels from its memory to its
# cores. Producing tokens one at a time asks for far less arithmetic per byte than that, so the
# card spends most of its time waiting for data. Read that way, 17 §1 sorts the techniques of a
# serving stack into two groups: those that change how much work each fetched byte does
# (batching, paged KV memory, quantization, separate prefill and decode pools) and those that
# spend the arithmetic decode leaves idle (speculative decoding). Chunked prefill schedules the
# two phases of a request around each other, and tensor and pipeline parallelism split a model
# that one card cannot hold or serve fast enough (17 §6, §7). Each claim comes with arithmetic;
# these notebooks redo that arithmetic with the `companion` package and let you change every
# input.
#
# Every symbol keeps one meaning in all the notebooks of both chapters; the
# [notation page](../notation.ipynb) lists them with their units.

# %%
from companion import calc, ledger, specs, units, widgets
from companion.chapters import ch17

hw, m8, m70 = specs.H100_SXM, specs.LLAMA_8B, specs.LLAMA_70B

# %% [markdown]
# ## The chapter's assumptions, from the presets
#
# Unless a line says otherwise, every number in Chapter 17 is for one NVIDIA H100 SXM with
# spec-sheet values, 16-bit (BF16) numbers, and two model shapes shaped like Llama 3. The
# table is printed from the companion's presets `specs.H100_SXM`, `specs.LLAMA_8B` and
# `specs.LLAMA_70B`, so what you read here is exactly what every later notebook computes with.

# %%
print(f"{'accelerator':38} {hw.name}")
print(f"{'HBM capacity':38} {hw.mem_bytes / units.GB:.0f} GB")
print(f"{'HBM bandwidth':38} {hw.mem_bw_bytes_per_s / units.TB:.2f} TB/s")
print(f"{'dense BF16 peak':38} {hw.peak_flops_per_s / units.TFLOP:.0f} TFLOP/s")
print(f"{'NVLink (GPU to GPU), both directions':38} {hw.interconnect_bytes_per_s / units.GB:.0f} GB/s "
      f"= {calc.nvlink_one_way_bytes_per_s(hw) / units.GB:.0f} GB/s each way")
print(f"{'PCIe Gen5 x16 (to the host), each way':38} {hw.host_link_bytes_per_s / units.GB:.0f} GB/s")
print(f"{'streaming multiprocessors':38} {hw.sm_count}")
print(f"{'L2 cache':38} {hw.l2_bytes / units.MB:.0f} MB")
print(f"{'ridge point (peak / bandwidth)':38} {calc.ridge_point(hw):.0f} FLOP per byte")
print(f"{'prefill efficiency assumed (of peak)':38} {ch17.PREFILL_EFFICIENCY:.0%} = "
      f"{ch17.PREFILL_EFFICIENCY * hw.peak_flops_per_s / units.TFLOP:.1f} TFLOP/s")
print(f"{'runtime + activations reserve per GPU':38} "
      f"{ch17.RUNTIME_RESERVE_BYTES / units.GB:.0f} GB")

# %%
print(widgets.model_shapes_text([m8, m70], hw, context_tokens=ch17.LONG_CONTEXT_TOKENS))

# %% [markdown]
# **Reading the chapter's units.** GB and MB are decimal (1e9 and 1e6 bytes), as on a spec
# sheet, but a per-token size written "KB" is in KiB. "8K tokens" means 8,000 tokens, except for
# the 8,192-token maximum length that 17 §5's worst-case reservation uses. The chapter rounds
# the 8B to exactly 8e9 parameters. A link's rate is what one direction carries, except
# NVLink's spec-sheet figure, which adds the two directions together (17.8 shows what that does
# to a KV transfer). The cell below shows what these conventions give.
#
# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
from companion.display import md

md(f"""
So the 8B's per-token cache of {calc.kv_bytes_per_token(m8):,} B is written
"{calc.kv_bytes_per_token(m8) / units.KiB:.0f} KB", "50% of peak" means
{ch17.PREFILL_EFFICIENCY * hw.peak_flops_per_s / units.TFLOP:.1f} TFLOP/s, and the 8B's
weights are {m8.weight_bytes / units.GB:.0f} GB.
""")

# %% [markdown]
# ## What you should be able to do afterwards
#
# - Place prefill and decode on the roofline and show, with numbers, how little of the card's
#   arithmetic a single decoding sequence can use.
# - Work out a model's KV bytes per token from its configuration, and turn the memory left
#   on a card into a maximum number of sequences running at once.
# - Name the operating-system ideas behind PagedAttention and compute how much batch and
#   throughput they win back.
# - Decide when continuous batching suffices and when long prompts call for chunked prefill,
#   and what that choice costs in time to first token.
# - Pick tensor or pipeline parallelism by counting the bytes each must exchange.
# - Explain separate prefill and decode pools, and routing by cached KV, as consequences of the
#   two phases being limited by different resources.
# - Read a profiler timeline and a per-kernel report, and explain why the "GPU util" figure
#   of nvidia-smi is a poor guide.
#
# ## A first taste
#
# Three of the chapter's headline numbers for the 8B on the H100, as the later notebooks
# derive them:

# %%
split = calc.decode_time_split(m8, hw)
b1 = calc.roofline_point(calc.decode_intensity(m8), hw)
cap = calc.tp_kv_capacity(m8, hw)
print(f"batch-1 decode: {split['step_s'] / units.ms:.2f} ms per token, {split['tokens_per_s']:.0f} "
      f"tok/s, {100 * b1['fraction_of_peak']:.2f}% of peak FLOP/s (17.2)")
print(f"8K sequences that fit next to the weights: {cap['max_sequences']} (17.4)")
print(f"prefill of a {ch17.PROMPT_TOKENS:,}-token prompt at 50% of peak: "
      f"{calc.prefill_compute_s(m8, hw, ch17.PROMPT_TOKENS) / units.ms:.0f} ms (17.2)")

# %% [markdown]
# ## Map of the Chapter 17 notebooks
#
# | notebook | section | what you compute and explore |
# |---|---|---|
# | [17.1 Memory hierarchy](17_01_memory_hierarchy.ipynb) | §1 | the memory pyramid per SM and per device (re-derived), the ridge ratio, the time to read the whole card, other cards |
# | [17.2 Roofline](17_02_roofline.ipynb) | §2 | decode and prefill on the roofline, the batch-1 decode ceiling, prefill time, batching and the KV drag on intensity; the roofline explorer |
# | [17.3 Prefill vs decode](17_03_prefill_vs_decode.ipynb) | §3 | TTFT, ITL, TPOT; a request's time budget (TTFT plus one inter-token gap per later token: G - 1 gaps for G tokens, or G as the chapter's shortcut counts); head-of-line blocking on the scheduler simulator; TTFT and ITL percentiles against SLO targets under load |
# | [17.4 KV sizing](17_04_kv_sizing.ipynb) | §4 | the KV formula, sizes by context (re-derived), the 70B over four GPUs, how many 8K sequences the 8B holds, GQA vs MHA vs MQA (re-derived), decode slowing with context |
# | [17.5 PagedAttention](17_05_paged_attention.ipynb) | §5 | fragmentation, blocks and block tables on a real allocator, prefix sharing, the naive and paged batches and the throughput gain |
# | [17.6 Batching strategies](17_06_batching_strategies.ipynb) | §6 | static vs continuous batching, chunked prefill and its ITL/TTFT trade |
# | [17.7 Tensor and pipeline parallelism](17_07_parallelism.ipynb) | §7 | all-reduce traffic and latency, the pipeline bubble, placing a 405B model |
# | [17.8 Disaggregation and routing](17_08_disaggregation_and_routing.ipynb) | §8 | sizing prefill and decode pools, shipping the KV cache, KV-aware routing |
# | [17.9 Measuring it](17_09_measuring.ipynb) | §9 | why "GPU util" misleads, MBU and MFU, the Nsight pair |
# | [17.10 The levers, ranked](17_10_levers.ipynb) | §10 | quantization, speculative decoding, the levers and cheat sheet (re-derived) |
# | [Interview questions, worked](17_11_interview_questions.ipynb) | all | the chapter's interview questions answered with the companion |
#
# Every number Chapter 17 prints is re-derived in the [ledger](../ledger.ipynb), with a note
# where the chapter rounds oddly; where it slips, the section notebook has an erratum box that
# explains both readings. The table below lists each of the chapter's errata with the reading
# the companion computes in its place and the reason.

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
import math

errata = [e for e in ledger.by_section("17") if not e.agrees]
m405 = specs.LLAMA_405B
level = {r["key"]: r for r in calc.memory_pyramid(hw)}
l2, smem = level["l2"]["capacity_bytes"], level["shared_l1"]["capacity_bytes"]
sparse = hw.with_(peak_flops_per_s=ch17.H100_SPARSE_PEAK_FLOPS_PER_S)
achieved = calc.decode_utilization(m8, hw, ch17.DECODE_TOK_PER_S)["flops_per_s"]
gqa = next(r for r in calc.attention_variants(m70) if r["attention"] == "GQA")
mha = next(r for r in calc.attention_variants(m70) if r["attention"] == "MHA")
per_ms = hw.mem_bw_bytes_per_s / units.GB * units.ms          # GB per millisecond
step_4 = calc.decode_vs_context(m8, hw, 1_000)
step_5 = calc.paged_batch_gain(m8, hw, block_tokens=1)["naive"]
one_way = calc.nvlink_one_way_bytes_per_s(hw)
kv_ship = calc.kv_bytes(m70, ch17.LONG_CONTEXT_TOKENS, block_tokens=1)
stage_layers = calc.pp_stages(m405, 2, 1)["layers_per_stage"]
correct = {
    "17.1/sram-orders-too-small": (
        f"loose rather than wrong: {math.log10(m70.weight_bytes / l2):.1f} orders for the 70B "
        f"({m70.weight_bytes / l2:,.0f}x the {l2 / units.MB:.0f} MB L2), "
        f"{math.log10(m8.weight_bytes / l2):.1f} for the 8B, "
        f"{math.log10(m405.weight_bytes / l2):.1f} for the 405B "
        f"({m405.weight_bytes / l2:,.0f}x)",
        f"against the L2 the chapter names the count depends on the model; against one SM's "
        f"{smem / units.KiB:.0f} KiB it is {math.log10(m8.weight_bytes / smem):.1f} for the 8B, "
        f"a size the chapter never states. The lesson stands: the weights live in HBM"),
    "17.1/nvlink-over-pcie": (
        f"{one_way / hw.host_link_bytes_per_s:.1f}x: {one_way / units.GB:.0f} against "
        f"{hw.host_link_bytes_per_s / units.GB:.0f} GB/s, one direction each",
        f"the {hw.interconnect_bytes_per_s / units.GB:.0f} GB/s of NVLink adds both directions, "
        f"PCIe's {hw.host_link_bytes_per_s / units.GB:.0f} GB/s counts one; the placement rule "
        f"stands"),
    "17.2/sparse-ridge-halves": (
        f"it doubles: {calc.ridge_point(sparse):.0f} against {calc.ridge_point(hw):.0f} FLOP/byte "
        f"({calc.ridge_point(sparse) / calc.ridge_point(hw):.2f}x)",
        "the ridge is peak over bandwidth, and the sparse peak is twice the dense one"),
    "17.2/sparse-mfu-doubles": (
        f"it halves: the batch-1 decode of 17 §9, {100 * calc.mfu(achieved, hw):.2f}% MFU "
        f"against the dense peak, would read {100 * calc.mfu(achieved, sparse):.2f}%",
        "MFU divides the achieved rate by the peak, so a larger peak shrinks it"),
    "17.4/gqa-sequences": (
        f"{gqa['sequences']}: {ch17.CACHE_BYTES / units.GB:.0f} GB / "
        f"{gqa['kv_bytes_per_sequence'] / units.GB:.2f} GB = "
        f"{ch17.CACHE_BYTES / gqa['kv_bytes_per_sequence']:.1f}, rounded down",
        f"the printed count is 8 x the floored MHA count {mha['sequences']}, which drops MHA's "
        f"remainder ({ch17.CACHE_BYTES / mha['kv_bytes_per_sequence']:.1f} sequences)"),
    "17.4/bw-GB-per-ms": (
        f"{hw.mem_bw_bytes_per_s / units.GB:,.0f} GB/s = {per_ms:.2f} GB/ms",
        f"only the unit is wrong: {step_4['step_bytes'] / units.GB:.1f} GB / "
        f"{hw.mem_bw_bytes_per_s / units.GB:,.0f} GB/s = {step_4['step_s'] / units.ms:.1f} ms, "
        f"the quotient printed"),
    "17.5/bw-GB-per-ms": (
        f"{hw.mem_bw_bytes_per_s / units.GB:,.0f} GB/s = {per_ms:.2f} GB/ms",
        f"the same slip as in §4: {step_5['step_bytes'] / units.GB:.1f} GB / "
        f"{hw.mem_bw_bytes_per_s / units.GB:,.0f} GB/s = {step_5['step_s'] / units.ms:.1f} ms "
        f"is right"),
    "17.7/figure-layers-per-stage": (
        f"{stage_layers:g} layers per stage ({m405.n_layers} in two)",
        f"the drawing is the 405B's TP 8 x PP 2 layout, and the 405B has {m405.n_layers} layers "
        f"(public configuration); {m70.n_layers} is the 70B's depth"),
    "17.8/kv-nvlink-ms": (
        f"{calc.kv_transfer_s(m70, ch17.LONG_CONTEXT_TOKENS, one_way) / units.ms:.1f} ms: "
        f"{kv_ship / units.GB:.2f} GB at {one_way / units.GB:.0f} GB/s",
        f"the {hw.interconnect_bytes_per_s / units.GB:.0f} GB/s of NVLink counts both directions "
        f"together; a KV hop uses one"),
}
lines = [f"| § | the chapter reads | the correct reading | why |", "|---|---|---|---|"]
for e in errata:
    right, why = correct.get(e.id, (f"{e.value:.3g} {e.unit}", e.reason))
    lines.append(f"| {e.section} | {e.claim} ({e.printed} {e.unit}) | {right} | {why} |")
md(f"""{len(errata)} entries of Chapter 17 disagree with the companion:

""" + "\n".join(lines))

# %% [markdown]
#
# **Practice problems.** The Chapter 17 practice set is in
# [the exercises folder](../../exercises/), starting with [Exercise 17-1](../../exercises/ex17_1.ipynb);
# each problem checks your answer with a tolerance and points at the step to revisit, without
# giving the answer away. To put your own machine on the roofline, run the
# [measurement lab](../lab/measure_it_yourself.ipynb).
