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
# # 17.4 The KV cache, sized honestly
#
# **The question.** 17.2 showed that the batch is the main dial on decode throughput. But every
# sequence in the batch keeps its own keys and values (the KV cache) in HBM, so memory decides
# how far the dial turns. What does one token cost in bytes? How many sequences fit on a card?
# Why must the 70B be split across cards before it can hold even one token of cache? And why
# does a conversation slow down as it grows?
#
# previous: [17.3 Prefill vs decode](17_03_prefill_vs_decode.ipynb) |
# [overview](17_00_overview.ipynb) | next: [17.5 PagedAttention](17_05_paged_attention.ipynb)
#
# Units, as in the chapter: GB and MB are decimal, the chapter's per-token "KB" is KiB (printed
# here as KiB), and "8K tokens" means 8,000 tokens.

# %%
import numpy as np

from companion import calc, ledger, plots, specs, units, widgets
from companion.chapters import ch17
from companion.display import answer, md

hw, m8, m70 = specs.H100_SXM, specs.LLAMA_8B, specs.LLAMA_70B

# %% [markdown]
# ## Building the formula from what attention stores
#
# Ask what a layer needs to remember about a past token so that later tokens can attend to
# it: a key vector and a value vector (hence a factor 2). Each layer attends separately, so
# each layer stores its own pair ($n_\text{layers}$). Within a layer there is one pair per
# *KV head*, each $d_\text{head}$ numbers long, each number stored in a fixed number of bytes.
# Multiply the four counts and the storage size:
#
# $$ k = 2 \cdot n_\text{layers} \cdot n_\text{kv} \cdot d_\text{head} \cdot
#        \text{bytes per value}, \qquad \text{KV}(L) = L\,k. $$
#
# Why count KV heads and not attention heads? With grouped-query attention (GQA), a group of
# query heads reads the same key/value pair, so $n_\text{kv}$ is deliberately smaller than the
# number of query heads; multi-query attention (MQA) takes the idea to a single shared pair.
# These are choices made before training, and this formula is where they pay off (17 §4).

# %%
for m in (m70, m8):
    k = calc.kv_bytes_per_token(m)
    seq = calc.kv_bytes(m, ch17.LONG_CONTEXT_TOKENS, block_tokens=1)
    print(f"{m.name}: 2 x {m.n_layers} x {m.n_kv_heads} x {m.head_dim} x 2 = {k:,} B "
          f"= {k / units.KiB:.0f} KiB per token; {ch17.LONG_CONTEXT_TOKENS:,} tokens = "
          f"{seq / units.GB:.2f} GB")

# %% [markdown]
# ## KV size by context
#
# The chapter's table of cache sizes by context is not reproduced here; we rebuild it with
# `calc.kv_by_context` for the 70B shape, from 1,000 to 128,000 tokens (reading "128K" as
# 128,000, like "8K").

# %%
by_ctx = calc.kv_by_context(m70, hardware=hw)
print(f"{'context':>9} {'KV of one sequence':>20} {'share of an 80 GB H100':>24}")
for r in by_ctx:
    print(f"{r['context_tokens']:>9,} {r['kv_bytes'] / units.GB:>17.2f} GB "
          f"{100 * r['fraction_of_memory']:>22.1f}%")
plots.kv_by_context_figure(by_ctx, capacity_bytes=hw.mem_bytes).show()

# %% [markdown]
# The cache is linear in the context, and the last bar is the striking one: a single
# conversation of the longest context fills more than half of an H100 with its cache alone. At
# such lengths a few requests occupy the whole card, and the batching dial of 17.2 hardly turns.
#
# ## The 70B needs several cards before it stores any cache
#
# Check the weights first: 70e9 parameters at 2 bytes each do not fit in 80 GB, whatever the
# batch. Fitting the model at all is the first job of tensor parallelism (17.7). Split over
# $g$ GPUs, each GPU holds $1/g$ of the weights, and the 8 KV heads divide among the GPUs as
# well, so each GPU stores the cache of its own heads. With the chapter's reserve $M_u$ of 4 GB
# per GPU for the runtime and activations, on cards of capacity $C$:
#
# $$ \text{KV space} = g\,\left(C - \frac{D_w}{g} - M_u\right), \qquad
#    \text{sequences} = \left\lfloor \frac{\text{KV space}}{L\,k} \right\rfloor. $$
#
# The heads split only while $g$ is at most the number of KV heads (8 here): with more GPUs
# than KV heads, TP replicates KV heads, so some cache is stored twice and the formula
# overstates the room.

# %%
one = calc.tp_kv_capacity(m70, hw, tp=1)
tp4 = calc.tp_kv_capacity(m70, hw, tp=4)
print(f"70B weights {m70.weight_bytes / units.GB:.0f} GB = {one['weights_over_memory']:.2f}x one "
      f"card; fits on one: {one['fits']}")
print(f"TP = 4: weights {tp4['weight_bytes_per_gpu'] / units.GB:.0f} GB and "
      f"{tp4['kv_heads_per_gpu']:g} KV heads per GPU; KV space "
      f"{tp4['free_kv_bytes_per_gpu'] / units.GB:.0f} GB per GPU, "
      f"{tp4['free_kv_bytes'] / units.GB:.0f} GB in all; "
      f"{tp4['max_sequences']} sequences of {ch17.LONG_CONTEXT_TOKENS:,} tokens")

# %% [markdown]
# ## How many sequences the 8B holds on one H100

# %%
cap8 = calc.tp_kv_capacity(m8, hw)
print(f"KV per token      {calc.kv_bytes_per_token(m8):,} B = "
      f"{calc.kv_bytes_per_token(m8) / units.KiB:.0f} KiB")
print(f"per sequence (8K) {cap8['kv_bytes_per_sequence'] / units.GB:.2f} GB")
print(f"weights           {m8.weight_bytes / units.GB:.0f} GB")
print(f"runtime reserve   {ch17.RUNTIME_RESERVE_BYTES / units.GB:.0f} GB")
print(f"free for KV       {cap8['free_kv_bytes'] / units.GB:.0f} GB")
print(f"max concurrent    {cap8['max_sequences']} sequences")
print(f"batch that reaches the ridge (17.2): ~{calc.ridge_point(hw) / calc.decode_intensity(m8):.0f}")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
ridge_batch = calc.ridge_point(hw) / calc.decode_intensity(m8)
full = calc.decode_intensity(m8, cap8['max_sequences'], ch17.LONG_CONTEXT_TOKENS)
md(f"""
Even with every byte packed, the card holds {cap8['max_sequences']} worst-case 8K sequences.
Counting the weights alone, as 17.2's ridge batch does, decode would need a batch near
{ridge_batch:.0f} to reach the ridge: roughly {ridge_batch / cap8['max_sequences']:.0f} times
more than fits. Counting the caches too makes it worse: each of the
{cap8['max_sequences']} sequences reads its own {ch17.LONG_CONTEXT_TOKENS:,} tokens of KV every
step, and the step's intensity is {full:.0f} FLOP/byte (17.2's formula with the cache), far
from the ridge's {calc.ridge_point(hw):.0f}. Memory runs out long before the batch stops
paying, so decode stays memory-bound, and any byte shaved off the cache becomes room for
another sequence, which becomes throughput.
""")

# %% [markdown]
# ## GQA, MHA and MQA on the same shape
#
# The chapter's comparison table is not reproduced here; we rebuild it with
# `calc.attention_variants`. The 70B shape gets three attention designs: MHA stores a K/V pair
# for each of the 64 query heads, GQA the model's 8, MQA one. "Sequences" counts 8,000-token
# sequences in 80 GB of cache space.

# %%
variants = calc.attention_variants(m70)
print(f"{'design':6} {'KV heads':>8} {'KV / token':>12} {'8K sequence':>12} {'in 80 GB':>9} "
      f"{'vs MHA':>7}")
for r in variants:
    print(f"{r['attention']:6} {r['n_kv_heads']:>8} {r['kv_bytes_per_token'] / units.KiB:>8,.0f} KiB "
          f"{r['kv_bytes_per_sequence'] / units.GB:>9.2f} GB {r['sequences']:>9} "
          f"{r['reduction_vs_mha']:>6.0f}x")
plots.attention_variants_figure(variants).show()

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
by_design = {r["attention"]: r for r in variants}
mha, gqa_row = by_design["MHA"], by_design["GQA"]
cache = ch17.CACHE_BYTES
gqa = {e.id: e for e in ledger.by_section("17.4")}["17.4/gqa-sequences"]
md(f"""
> **Erratum: GQA holds more than "twenty-four" sequences.** 17 §4 says the 70B with MHA holds
> three 8K conversations in 80 GB of cache, and with GQA's 8x smaller cache, twenty-four. The
> first count is right: {cache / units.GB:.0f} GB / {mha['kv_bytes_per_sequence'] / units.GB:.2f}
> GB = {cache / mha['kv_bytes_per_sequence']:.1f}, rounded down to {mha['sequences']}. The second
> multiplies that rounded-down count by 8 and so throws away the remainder. Dividing directly,
> {cache / units.GB:.0f} GB / {gqa_row['kv_bytes_per_sequence'] / units.GB:.2f} GB =
> {cache / gqa_row['kv_bytes_per_sequence']:.1f}, so GQA holds **{gqa_row['sequences']}**. The
> 8x reduction itself is exact. The ledger records the chapter's {gqa.printed} against the
> companion's {gqa.value:.0f}.
""")

# %% [markdown]
# A serving-time knob works on the same formula: storing the cache in FP8 halves the bytes per
# value, another factor of two that multiplies with GQA's.

# %%
print(f"70B KV per token: BF16 {calc.kv_bytes_per_token(m70, 2) / units.KiB:.0f} KiB, "
      f"FP8 {calc.kv_bytes_per_token(m70, 1) / units.KiB:.0f} KiB")

# %% [markdown]
# ## Decode gets slower as the context grows
#
# Two decode ceilings are in play. 17.2 counted only the weights; the chapter's earlier
# KV-cache chapter counted only the cache. Neither stream can be skipped, so a step pays for
# both:
#
# $$ T_\text{step} = \frac{D_w + L\,k}{\beta}. $$
#
# The 8B at batch 1, at three context lengths:

# %%
for L in (1_000, 10_000, 100_000):
    r = calc.decode_vs_context(m8, hw, L)
    print(f"{L:>7,} tokens: {m8.streamed_weight_bytes / units.GB:.0f} + "
          f"{r['kv_bytes'] / units.GB:.2f} GB = "
          f"{r['step_bytes'] / units.GB:.1f} GB -> {r['step_s'] / units.ms:.2f} ms -> "
          f"{r['tokens_per_s']:.1f} tok/s")
cross = calc.kv_weight_crossover_tokens(m8)
print(f"the cache costs as much bandwidth as the weights at {cross:,.0f} tokens")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
entries = {e.id: e for e in ledger.by_section("17.4")}
ten = calc.decode_vs_context(m8, hw, 10_000)
ch00 = entries["17.4/ch00-cache-only-ceiling"]
md(f"""
(At 10,000 tokens the rate is {ten['tokens_per_s']:.1f} tokens/s; the chapter prints
{entries['17.4/ctx10000-tok-s'].printed}, cutting off where rounding would go up; the ledger notes
it. The cache-only ceiling the chapter quotes, about {ch00.printed} tokens/s, comes out with the
70B's cache at 100,000 tokens read by itself; see the ledger note of `{ch00.id}`.)
""")

# %% [markdown]
# > **Erratum: "GB/ms" should be GB/s.** The chapter divides by "3,350 GB/ms". The bandwidth
# > is 3.35 TB/s, which is 3,350 GB per *second* (or 3.35 GB per millisecond). The quotients it
# > prints are the ones that GB/s gives, so only the unit label is wrong. The same label
# > appears again in 17 §5.

# %%
for e in ledger.by_section("17.4") + ledger.by_section("17.5"):
    if e.id.endswith("bw-GB-per-ms"):
        print(f"[{e.section}] chapter {e.printed} {e.unit}; companion {e.value:.2f} {e.unit}. {e.note}")

# %% [markdown]
# At short contexts the weights are most of the bytes and 17.2's ceiling holds. Past the
# crossover, the cache is most of the bytes; at the crossover itself, one conversation makes
# each of its own tokens cost twice as much as at the start. That is the physical reason long
# conversations slow down even after their memory has been found.

# %%
contexts = sorted({int(x) for x in np.geomspace(500, 300_000, 60)} | {1_000, 10_000, 100_000})
rows = [calc.decode_vs_context(m8, hw, L) for L in contexts]
plots.context_step_figure(contexts, rows, weight_bytes=m8.streamed_weight_bytes,
                          bandwidth_bytes_per_s=hw.mem_bw_bytes_per_s, crossover_tokens=cross,
                          marks=(1_000, 10_000, 100_000)).show()

# %% [markdown]
# ## Where this model breaks: one long conversation slows the whole batch
#
# A decode step is one pass that reads every sequence's cache and that every sequence waits
# for, so one long conversation's bytes stretch the step of all its neighbours, not only its
# own (the figure under "In detail" draws the batch's step beside the batch-1 line).

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the table below
from companion import tables

t_batch = calc.paged_batch_gain(m8, hw, block_tokens=1)["naive"]["batch"]
t_longest = next(c.max for c in widgets.KVSizingPanel.controls if c.name == "context_tokens")
t_rows = []
for t_L, t_what in ((ch17.LONG_CONTEXT_TOKENS, "17 §4"), (t_longest, "explorer's longest")):
    t_r = calc.long_context_in_batch(m8, hw, t_L, batch=t_batch)
    t_rows.append((f"{t_batch} {ch17.CHAT_LIVE_TOKENS}-token chats + one {t_L:,}-token context "
                   f"({t_what})",
                   f"{t_r['batch_step_s'] / units.ms:.2f} ms",
                   f"{t_r['mixed_step_s'] / units.ms:.2f} ms", f"{t_r['batch_slowdown']:.2f}"))
md(tables.markdown_table(("setting (a chat's decode step)",
                          "chapter's model (the long context pays alone)",
                          "fuller model (one shared step)", "fuller / chapter"), t_rows))

# %% [markdown] jp-MarkdownHeadingCollapsed=true
# #### In detail
#
# The step of a batch with one long guest.
#
# <!-- fold: the fuller model, its numbers and where it parts from the chapter's -->

# %% [markdown]
# The three lines above run the step at batch 1, so the cache's growth looks like a cost that
# its own conversation pays.
# A serving GPU decodes that conversation inside a batch, and a
# decode step is one pass for all of its sequences: each of them waits for the whole step, and
# the step reads every sequence's cache. One sequence of $L$ tokens joining $b$ sequences that
# hold $\bar L$ live tokens on average makes the step of *every* sequence
#
# $$ T_\text{step} = \frac{D_w + b\,\bar L\,k + L\,k}{\beta}. $$
#
# The batch below is 17.5's: the chapter's worst-case count of sequences, each holding a
# 600-token chat (`calc.long_context_in_batch`).

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
chat_batch = calc.paged_batch_gain(m8, hw, block_tokens=1)["naive"]["batch"]
kv_controls = {c.name: c for c in widgets.KVSizingPanel.controls}
ctx_lo, ctx_hi = kv_controls["context_tokens"].min, kv_controls["context_tokens"].max
joins = [(1_000, ""), (10_000, ""), (100_000, ""), (round(cross), " (the crossover)"),
         (ctx_hi, " (explorer's longest)")]
shared = {L: calc.long_context_in_batch(m8, hw, L, batch=chat_batch) for L, _ in joins}
md(f"""
| one sequence of | the chapter: its own step at batch 1 | its own slowdown | the batch's step with it ({chat_batch} chats + 1) | every sequence's slowdown |
|---|---|---|---|---|
""" + "\n".join(
    f"| {L:,} tokens{what} | {shared[L]['alone_step_s'] / units.ms:.2f} ms | "
    f"{shared[L]['own_slowdown']:.2f}x | {shared[L]['mixed_step_s'] / units.ms:.2f} ms | "
    f"{shared[L]['batch_slowdown']:.2f}x |" for L, what in joins))

# %%
batch_steps = [calc.long_context_in_batch(m8, hw, L, batch=chat_batch)["mixed_step_s"]
               for L in contexts]
plots.context_step_figure(
    contexts, rows, weight_bytes=m8.streamed_weight_bytes,
    bandwidth_bytes_per_s=hw.mem_bw_bytes_per_s, crossover_tokens=cross,
    marks=(1_000, 10_000, 100_000), batch_steps_s=batch_steps,
    batch_label=f"the step of {chat_batch} 600-token chats + this one: every sequence waits it",
    title="One long context, alone and inside a batch (17 §4, fuller)",
).update_layout(height=540).show()

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
base_step = shared[1_000]["batch_step_s"]
at_cross, at_top, at_10k = shared[round(cross)], shared[ctx_hi], shared[10_000]
md(f"""
> **When it matters.** At batch 1 a conversation of {round(cross):,} tokens doubles the cost of
> its own tokens ({at_cross['own_slowdown']:.2f}x), the chapter's reading. Inside the chapter's
> batch its {at_cross['long_byte_share'] * 100:.0f}% of the step's bytes stretch the step of
> all {chat_batch + 1} sequences from {base_step / units.ms:.1f} ms to
> **{at_cross['mixed_step_s'] / units.ms:.1f} ms** ({at_cross['batch_slowdown']:.2f}x): the
> {chat_batch} short chats pay almost as much as the long one, with no change of their own.
> At {10_000:,} tokens the batch slows by {100 * (at_10k['batch_slowdown'] - 1):.0f}%, little;
> at the explorer's longest context, {ctx_hi:,} tokens, by
> {100 * (at_top['batch_slowdown'] - 1):.0f}%. This is why the ITL of a serving GPU depends
> on its longest guests, and why schedulers cap, or set apart, very long contexts. The step
> formula is still the chapter's; only the batch it is applied to changed.
""")

# %% [markdown]
# ## Where this model breaks: bytes counted token by token
#
# A paged engine hands memory out in whole blocks, so a sequence holds its length rounded up
# to a block and short sequences lose the largest share to their last block's empty slots
# (the explorer's dotted curve counts whole blocks).

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the table below
t_shortest = next(c.min for c in widgets.KVSizingPanel.controls if c.name == "context_tokens")
t_rows = []
for t_L, t_what in ((ch17.LONG_CONTEXT_TOKENS, "17 §4"), (t_shortest, "explorer's shortest")):
    t_r = calc.block_rounded_capacity(m70, hw, context_tokens=t_L, tp=ch17.TP)
    t_rows.append((f"the 70B, TP {ch17.TP}, {t_L:,}-token sequences ({t_what})",
                   f"{t_r['chapter_sequences']:,}", f"{t_r['sequences']:,}",
                   f"{t_r['sequences'] / t_r['chapter_sequences']:.2f}"))
md(tables.markdown_table(("setting", "chapter's model (sequences, token by token)",
                          f"fuller model (sequences, whole {ch17.BLOCK_TOKENS}-token blocks)",
                          "fuller / chapter"), t_rows))

# %% [markdown] jp-MarkdownHeadingCollapsed=true
# #### In detail
#
# The count in whole blocks, model by model.
#
# <!-- fold: the fuller model, its numbers and where it parts from the chapter's -->

# %% [markdown]
# The counts of this notebook divide the KV space by $L\,k$, as if memory could be handed out
# one token at a time. A paged engine (17.5) hands it out in blocks of 16 tokens, so a sequence
# holds $\lceil L/16 \rceil \times 16$ tokens (`calc.block_rounded_capacity`; the explorer's
# dotted curve).

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
block_rows = []
for model, tp in ((m8, 1), (m70, ch17.TP)):
    for L in (ctx_lo, 1_000, ch17.LONG_CONTEXT_TOKENS, ctx_hi):
        r = calc.block_rounded_capacity(model, hw, context_tokens=L, tp=tp)
        block_rows.append(f"| {model.name}, TP {tp} | {L:,} | {r['held_tokens']:,} | "
                          f"{r['chapter_sequences']:,} | {r['sequences']:,} | "
                          f"{100 * r['lost_share']:.1f}% |")
lo8 = calc.block_rounded_capacity(m8, hw, context_tokens=ctx_lo)
k8 = calc.block_rounded_capacity(m8, hw, context_tokens=1_000)
md("""
| model | context (tokens) | held in blocks | sequences, token by token | in whole blocks | fewer |
|---|---|---|---|---|---|
""" + "\n".join(block_rows) + f"""

> **When it matters.** Never at the chapter's setting: {ch17.LONG_CONTEXT_TOKENS:,} tokens
> are exactly {ch17.LONG_CONTEXT_TOKENS // ch17.BLOCK_TOKENS} blocks, so both counts agree.
> At {1_000:,} tokens a block's tail costs {100 * k8['lost_share']:.1f}% of the count. Only at the
> explorer's shortest context, {ctx_lo} tokens, does it cost a tenth of the sequences
> ({lo8['chapter_sequences']:,} -> {lo8['sequences']:,}): the tail of the last block is a
> large part of a short sequence.
""")

# %% [markdown]
# ## Where this model breaks: an "80 GB" card holds 80 GiB
#
# The chapter takes the card's capacity as decimal gigabytes, 80 GB for the H100 and 141 GB for
# the H200. The memory is sized in binary units, so each card holds a few gigabytes more than
# its label, and that extra space goes straight to the cache.

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the table below
import dataclasses

# total memory as nvidia-smi reports it on the SXM cards, in MiB
SMI_MIB = {hw.name: 81_559, specs.H200_SXM.name: 143_771}
gib_cards = {name: dataclasses.replace(specs.HARDWARE[name], mem_bytes=mib * units.MiB)
             for name, mib in SMI_MIB.items()}
gib_cases = ((m8, hw.name, 1), (m70, hw.name, ch17.TP), (m70, specs.H200_SXM.name, 1))
gib_rows, gib_read = [], {}
for g_m, g_name, g_tp in gib_cases:
    g_dec = calc.tp_kv_capacity(g_m, specs.HARDWARE[g_name], tp=g_tp)
    g_bin = calc.tp_kv_capacity(g_m, gib_cards[g_name], tp=g_tp)
    gib_read[(g_m.name, g_name)] = g_bin
    gib_rows.append((f"{g_m.name}, TP {g_tp}, {g_name}",
                     f"{g_dec['free_kv_bytes'] / units.GB:.1f} GB, {g_dec['max_sequences']}",
                     f"{g_bin['free_kv_bytes'] / units.GB:.1f} GB, {g_bin['max_sequences']}"))
md(tables.markdown_table(
    ("setting (8,000-token sequences)", "chapter's model (KV space, sequences; label's GB)",
     "fuller model (KV space, sequences; nvidia-smi's MiB)"), gib_rows))

# %% [markdown] jp-MarkdownHeadingCollapsed=true
# #### In detail
#
# Where the binary capacities come from, and what they change.
#
# <!-- fold: the fuller model, its numbers and where it parts from the chapter's -->

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
smi_h100, smi_h200 = (SMI_MIB[n] for n in (hw.name, specs.H200_SXM.name))
b8 = gib_read[(m8.name, hw.name)]
b70 = gib_read[(m70.name, specs.H200_SXM.name)]
md(f"""
`nvidia-smi` reports the total memory of an H100 SXM as {smi_h100:,} MiB, which is
{smi_h100 * units.MiB / units.GB:.1f} GB (just under 80 GiB), and of an H200 SXM as
{smi_h200:,} MiB, {smi_h200 * units.MiB / units.GB:.1f} GB. The companion's hardware specs keep
the label's decimal capacities, as the chapter does; the table above recomputes the KV space
with these totals and changes nothing else. The weights, the 4 GB reserve and the sequences stay
decimal and unchanged.

> **When it matters.** On the 8B the extra
> {(smi_h100 * units.MiB - hw.mem_bytes) / units.GB:.1f} GB all goes to the cache:
> {b8['free_kv_bytes'] / units.GB:.1f} GB of KV space, **{b8['max_sequences']}** sequences
> instead of {cap8['max_sequences']}, about {100 * (b8['max_sequences'] / cap8['max_sequences'] - 1):.0f}%
> more. On one H200 it changes the verdict on the 70B in BF16: the chapter's reading leaves no
> room after the reserve, the card's real capacity leaves
> {b70['free_kv_bytes'] / units.GB:.1f} GB, **{b70['max_sequences']}** sequences of
> {ch17.LONG_CONTEXT_TOKENS:,} tokens. That is enough to serve, if not to batch. A real engine
> also budgets a share of the memory (vLLM's `gpu_memory_utilization`, 0.9 by default), which
> can take the gain back.
""")

# %% [markdown]
# A classic interview trap hides in "size the KV cache for model X": plugging in all 64 query
# heads of a GQA model makes the answer eight times too large. Write the formula down, say
# whether the model uses GQA, and substitute each number visibly.
#
# ## Chapter says / companion computes

# %%
ledger.show("17.4")

# %% [markdown]
# ## Explorer: size the cache and count the sequences
#
# Choose the model, the card, the context of each sequence, the KV precision, the number of
# tensor-parallel GPUs and the runtime reserve. The bar shows one GPU's memory (weights,
# reserve, the KV of the sequences that fit, what remains); the curve shows the count falling
# as the context grows, and the dotted curve the same count in whole 16-token blocks. The
# count's axis is logarithmic because the count spans orders of magnitude, from thousands of
# short sequences to a handful of the longest (a setting where none fits has no point on it).
# The chapter's setting is the 70B at TP = 4 with 8,000-token sequences; select the 8B and
# TP = 1 for the one-card case.

# %% tags=["nbval-ignore-output"]
panel = widgets.KVSizingPanel()
panel.show()

# %%
for setting in ({}, {"model": m8.name, "tp": 1}):
    numbers = panel.at(**setting).numbers
    print(setting or "chapter's setting (70B, TP = 4)",
          {k: round(numbers[k], 3) for k in ("kv_per_token_KB", "kv_per_sequence_GB",
                                             "weights_per_gpu_GB", "free_kv_per_gpu_GB",
                                             "free_kv_total_GB", "max_sequences")})
# %% [markdown]
# ## Try this
#
# 1. **Predict, then move.** With the 70B at TP = 4, guess whether an FP8 cache doubles the
#    number of 8K sequences exactly, a bit less, or a bit more. Switch the KV to FP8 and check.
#    Then go to TP = 8 (BF16 again): of the extra sequences over TP = 4, how many come from
#    having twice the cards, how many from spreading the weights thinner, and how many from
#    splitting the heads further?
#    <!-- states: panel(kv_bytes=1.0); panel(kv_bytes=1.0, tp=8) -->
# 2. Set the context to 128,000 tokens (the longest context of 17 §4) with the 8B on one H100. How many conversations fit, and
#    what is left of 17.2's batching lever?
#    <!-- states: panel(model=m8.name, tp=1, context_tokens=ch17.LONGEST_CONTEXT_TOKENS) -->
# 3. Give the 70B an H200 (141 GB). Does it fit on one card now, and how much room is left for
#    the cache?
#    <!-- states: panel(hardware=specs.H200_SXM.name, tp=1) -->
# 4. Redo the GQA erratum yourself: 80 GB over one GQA sequence, floored, against eight times
#    the floored MHA count.
# 5. **Predict, then move.** Qwen3-8B has 36 layers to the 8B shape's 32. Predict whether the
#    context where its cache equals its streamed weights is longer or shorter, then select it
#    in the explorer and read `kv_equals_weights_tokens`.
#    <!-- states: panel(model=specs.QWEN3_8B.name) -->

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
bf = panel.at().numbers
fp8 = panel.at(kv_bytes=1.0).numbers
tp8_bf = panel.at(tp=8).numbers
tp8_fp8 = panel.at(kv_bytes=1.0, tp=8).numbers
doubled = 2 * bf["max_sequences"]
same_layout = int(8 * bf["free_kv_per_gpu_GB"] * units.GB // calc.kv_bytes(
    m70, ch17.LONG_CONTEXT_TOKENS, block_tokens=1))
how = ("exactly twice" if fp8["max_sequences"] == doubled else
       "a little more than twice" if fp8["max_sequences"] > doubled else "a little less than twice")
answer(f"""
At TP = 4 the FP8 cache takes the count from {bf['max_sequences']} to **{fp8['max_sequences']}**
sequences: {how}. Each sequence halves ({bf['kv_per_sequence_GB']:.2f} -> {fp8['kv_per_sequence_GB']:.2f}
GB) while the KV space stays {bf['free_kv_total_GB']:.0f} GB, and the part of a sequence that the
floor dropped at BF16 ({bf['free_kv_total_GB'] / bf['kv_per_sequence_GB'] - bf['max_sequences']:.2f})
is worth {2 * (bf['free_kv_total_GB'] / bf['kv_per_sequence_GB'] - bf['max_sequences']):.2f} FP8
sequences. At TP = 8 (BF16) the space grows from {bf['free_kv_total_GB']:.0f} to
{tp8_bf['free_kv_total_GB']:.0f} GB, {bf['max_sequences']} -> **{tp8_bf['max_sequences']}**
sequences ({tp8_fp8['max_sequences']} in FP8). Split the gain in two. Twice the cards at TP = 4's
layout, {bf['weights_per_gpu_GB']:.0f} GB of weights per card, would give 8 ×
{bf['free_kv_per_gpu_GB']:.0f} = {8 * bf['free_kv_per_gpu_GB']:.0f} GB, {same_layout} sequences.
Spreading the {m70.weight_bytes / units.GB:.0f} GB of weights over 8 cards instead of 4
({tp8_bf['weights_per_gpu_GB']:.1f} GB each) frees
{tp8_bf['free_kv_total_GB'] - 8 * bf['free_kv_per_gpu_GB']:.0f} GB more, the remaining
{tp8_bf['max_sequences'] - same_layout} sequences. The heads (now
{tp8_bf['kv_heads_per_gpu']:g} per GPU) contribute nothing: they decide where each sequence's
bytes live, not how many bytes it needs.
""", title="Worked answer 1")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
long8 = panel.at(model=m8.name, tp=1, context_tokens=ch17.LONGEST_CONTEXT_TOKENS).numbers
b_long = long8["max_sequences"]
at_long = calc.decode_attention_intensity(m8, b_long, ch17.LONGEST_CONTEXT_TOKENS)
answer(f"""
One {ch17.LONGEST_CONTEXT_TOKENS:,}-token sequence of the 8B needs
{long8['kv_per_sequence_GB']:.1f} GB, so the {long8['free_kv_total_GB']:.0f} GB of KV space holds
**{b_long}** of them. Reading the weights alone, a batch of {b_long} would do {b_long} FLOP
per byte, but each sequence also reads its cache every step, and a cache this long outweighs
the weights (the two are equal at {long8['kv_equals_weights_tokens']:,.0f} tokens). The step
reads {at_long['bytes'] / units.GB:.0f} GB, {m8.streamed_weight_bytes / units.GB:.0f} GB of
them weights, and the chapter's intensity falls to
**{at_long['chapter_intensity']:.2f} FLOP/byte**. Counting attention's own arithmetic on the
cache (17.2's fuller count: about {at_long['long_context_limit']:.0f} FLOP per cached byte,
set by the query heads that share each KV head) lifts it to {at_long['intensity']:.1f}, still
{calc.ridge_point(hw) / at_long['intensity']:.0f} times below the ridge's
{calc.ridge_point(hw):.0f}. Either way 17.2's batching lever is practically gone: the card is
full after a handful of requests, and each step mostly reads cache. At long contexts memory,
not compute, caps the batch, and with it the throughput.
""", title="Worked answer 2")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
h200 = specs.H200_SXM
on_h200 = panel.at(hardware=specs.H200_SXM.name, tp=1).numbers
tp2_h200 = panel.at(hardware=specs.H200_SXM.name, tp=2).numbers
h100_tp4 = panel.at().numbers
answer(f"""
Only just, and not usefully: {on_h200['weights_GB']:.0f} GB of weights is
{on_h200['weights_over_card']:.2f}x the H200's {h200.mem_bytes / units.GB:.0f} GB, so the
weights alone squeeze in, but with the {ch17.RUNTIME_RESERVE_BYTES / units.GB:g} GB runtime
reserve the card is {-on_h200['free_kv_per_gpu_GB']:.0f} GB short, and there is **no room for
any cache** ({on_h200['max_sequences']} sequences). Two H200s (TP = 2) leave
{tp2_h200['free_kv_total_GB']:.0f} GB of KV space, {tp2_h200['max_sequences']} sequences of
{ch17.LONG_CONTEXT_TOKENS:,} tokens; four H100s leave {h100_tp4['free_kv_total_GB']:.0f} GB
({h100_tp4['max_sequences']} sequences). Fitting the weights is not enough: a serving card
needs room for the cache too, and that room is what the extra GPUs buy. (This is the
chapter's decimal reading of "141 GB". Read with the capacity `nvidia-smi` reports, the single
H200 leaves {b70['free_kv_bytes'] / units.GB:.1f} GB, room for {b70['max_sequences']} sequences:
see "an 80 GB card holds 80 GiB" above.)
""", title="Worked answer 3")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
answer(f"""
$\\lfloor {cache / units.GB:.0f} / {gqa_row['kv_bytes_per_sequence'] / units.GB:.3f} \\rfloor$ =
**{int(cache // gqa_row['kv_bytes_per_sequence'])}**, against
$8 \\times \\lfloor {cache / units.GB:.0f} / {mha['kv_bytes_per_sequence'] / units.GB:.2f} \\rfloor$
= 8 × {mha['sequences']} = {8 * mha['sequences']}. Flooring first and multiplying afterwards
throws away the {cache / mha['kv_bytes_per_sequence'] - mha['sequences']:.2f} of an MHA sequence
left over, which is room for
{8 * (cache / mha['kv_bytes_per_sequence'] - mha['sequences']):.1f} GQA sequences: the gap of
{gqa_row['sequences'] - 8 * mha['sequences']} comes from there.
""", title="Worked answer 4")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
q = specs.QWEN3_8B
qn = panel.at(model=specs.QWEN3_8B.name).numbers
ln = panel.at(model=m8.name).numbers
answer(f"""
Qwen3-8B's cache is bigger per token ({qn['kv_per_token_KB']:.0f} KiB against
{ln['kv_per_token_KB']:.0f} KiB: {q.n_layers} layers against {m8.n_layers}, with the same
{q.n_kv_heads} KV heads of {q.head_dim}). The weights that matter here are the streamed ones,
$D_w$, the bytes a decode step reads: {qn['streamed_weights_GB']:.1f} GB for Qwen3-8B (its
{qn['weights_GB']:.1f} GB of resident weights less the input embedding table, which a step
looks up by row) against {ln['streamed_weights_GB']:.0f} GB for the 8B shape, which counts
every weight as streamed. The crossover is $D_w$ over the KV bytes per token,
{qn['streamed_weights_GB']:.1f} GB / {qn['kv_per_token_KB']:.0f} KiB for Qwen3-8B, so it is
**{'shorter' if qn['kv_equals_weights_tokens'] < ln['kv_equals_weights_tokens'] else 'longer'}**:
`kv_equals_weights_tokens` reads {qn['kv_equals_weights_tokens']:,.0f} against
{ln['kv_equals_weights_tokens']:,.0f}. Both changes push the same way, a bigger cache per
token and fewer bytes of weights to stream. Parameter count alone does not say when the cache
takes over; the layers and KV heads per token, set against the streamed weights, do.
""", title="Worked answer 5")
# %% [markdown]
# Next: [17.5 PagedAttention](17_05_paged_attention.ipynb).
#
# > **What you can now compute**
# > - A model's KV bytes per token from its layers, KV heads, head dimension and precision, and one sequence's cache at any context ([Exercise 17-1](../../exercises/ex17_1.ipynb)).
# > - How much larger the cache would be without GQA, and how many sequences each design holds ([Exercise 17-1](../../exercises/ex17_1.ipynb)).
# > - The KV space left on a card after weights and reserve, and the number of sequences that fit there, on one GPU or sharded over $g$ ([Exercise 17-2](../../exercises/ex17_2.ipynb)).
# > - The decode step and token rate as the context grows, and the context where the cache costs as much as the weights ([Exercise 17-4](../../exercises/ex17_4.ipynb)).
# >
# > <details><summary>Assumptions this notebook made</summary>
# >
# > Every sequence holds the same context, and its cache
# > is counted token by token, with no block tail; the runtime reserve is a fixed 4 GB per GPU
# > whatever the batch; weights and KV heads split evenly over the tensor-parallel GPUs, and no
# > GPU holds less than one KV head; the decode step reads weights and caches at the full HBM
# > bandwidth, at batch 1 unless a line says otherwise (the part on batches shows what a shared
# > step changes); "8K" is 8,000 tokens and "KB" per token is KiB, as in the chapter.
# >
# > </details>
