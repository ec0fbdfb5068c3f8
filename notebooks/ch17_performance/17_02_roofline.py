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
# **The question.** Without running a single benchmark, what is the fastest a workload could
# possibly go on a given card? The roofline model answers with two numbers from the spec sheet
# (peak compute, memory bandwidth) and one you work out by counting (arithmetic per byte
# fetched). On that picture, decoding for a single user sits far down the sloped memory roof,
# prefilling a 2,048-token prompt sits on the flat compute roof, and batching is the one way to
# lift decode towards the corner.
#
# previous: [17.1 Memory hierarchy](17_01_memory_hierarchy.ipynb) |
# [overview](17_00_overview.ipynb) | next: [17.3 Prefill vs decode](17_03_prefill_vs_decode.ipynb)

# %%
from companion import calc, ledger, models, plots, specs, units, widgets
from companion.chapters import ch17
from companion.display import answer, md

hw, m8, m70 = specs.H100_SXM, specs.LLAMA_8B, specs.LLAMA_70B

# %% [markdown]
# ## Two roofs and a ridge
#
# Count, for a piece of work, the floating-point operations it does and the bytes it has to
# pull out of HBM; their quotient is its *arithmetic intensity* $I$ (FLOP per byte). A card
# with peak $\pi$ FLOP/s and bandwidth $\beta$ bytes/s can deliver at most
#
# $$ \text{attainable}(I) = \min\left(\pi,\; I\,\beta\right). $$
#
# Plotted on log-log axes, the second term is a straight line of slope one: every doubling of
# intensity doubles the throughput, because the same bytes now feed twice the work. It runs
# into the horizontal line $\pi$ at the *ridge point* $I^\star = \pi/\beta$, the ratio of 17.1.
# A workload left of the ridge is priced in bytes, one right of it in FLOPs.

# %%
ridge = calc.ridge_point(hw)
print(f"ridge = {hw.peak_flops_per_s / units.TFLOP:.0f} TFLOP/s / "
      f"{hw.mem_bw_bytes_per_s / units.TB:.2f} TB/s = {ridge:.0f} FLOP per byte")

# %% [markdown]
# ## Decode at batch 1: one FLOP per byte
#
# Producing one token means sending one activation vector through every weight of the model.
# Each weight takes part in one multiply and one add, so a model with $N$ parameters costs
# about $2N$ FLOPs per token. Attention over the KV cache is left out here, and it adds two
# things on long contexts that pull in different directions: its *bytes* (reading the cache)
# make each step slower, so leaving them out makes decode look faster than it is (the
# batching section below and 17.4 add them back); its *FLOPs* raise the intensity a little,
# so leaving them out places decode slightly further left (the fold further down counts them).
# Neither moves batch-1 decode off the memory roof.

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
md(rf"""
Nothing carries over between tokens: the {m8.weight_bytes / units.GB:.0f} GB of weights are
{m8.weight_bytes / hw.l2_bytes:.0f} times the card's {hw.l2_bytes / units.MB:.0f} MB of on-die
L2 cache, so almost none of them can stay on the chip and each token fetches all of them from
HBM again. At 2 bytes per BF16 weight,

$$ I_{{\text{{decode}}}} = \frac{{2N\ \text{{FLOP}}}}{{2N\ \text{{bytes}}}} = 1\ \text{{FLOP/byte}}. $$
""")

# %%
i_b1 = calc.decode_intensity(m8)
b1 = calc.roofline_point(i_b1, hw)
print(f"intensity {i_b1:g} FLOP/byte -> attainable {b1['attainable_flops_per_s']:.3g} FLOP/s "
      f"= {100 * b1['fraction_of_peak']:.2f}% of peak ({b1['bound']}-bound)")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
md(f"""
An intensity of one, against a ridge of {ridge:.0f}: decode at batch 1 can use at most
{100 * b1['fraction_of_peak']:.2f}% of the card's arithmetic. The same fact reads more vividly
as time. For the 8B, fetching the weights of one token takes hundreds of times longer than
computing with them, and the ratio of the two times is the ridge point again.
""")

# %%
split = calc.decode_time_split(m8, hw)
print(f"weights              {split['weight_bytes'] / units.GB:.0f} GB")
print(f"time to stream them  {split['read_s'] / units.ms:.2f} ms per token")
print(f"decode ceiling       {split['tokens_per_s']:.0f} tokens/s")
print(f"FLOPs per token      {split['flops_per_token'] / 1e9:.0f} GFLOP")
print(f"time to compute them {split['compute_s'] / units.us:.1f} µs")
print(f"waiting : working    {split['wait_to_work']:.0f} : 1")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
per_sm = split["flops_per_token"] / hw.sm_count
md(f"""
The chapter reads this as 17.1's latency hiding failing for lack of work; the work is there.
Spread over the card's {hw.sm_count} SMs, one token brings {per_sm / 1e6:.0f} MFLOP per SM,
thousands of independent dot products per layer, plenty to keep loads in flight. But it is
only about {split['compute_s'] / units.us:.0f} µs of arithmetic against a
{split['read_s'] / units.us:,.0f} µs read of the weights. Latency hiding hides the wait for
each load; it cannot make the bytes arrive faster, so at about one FLOP per byte the
arithmetic idles even with perfect overlap: the bound is the bandwidth.
""")

# %% [markdown]
# Because decode is priced in bytes, the storage format of the weights is a speed setting, not
# only a memory one: 4-byte FP32 weights would double the bytes of every token, and 1-byte
# INT8 weights (17.10) halve them.

# %%
for label, bpp in (("FP32", 4), ("BF16", 2), ("INT8", 1)):
    s = calc.decode_time_split(m8, hw, bytes_per_param=bpp)
    print(f"{label}: {s['step_s'] / units.ms:5.2f} ms per token, {s['tokens_per_s']:4.0f} tok/s, "
          f"intensity {calc.decode_intensity(m8, bytes_per_param=bpp):g} FLOP/byte")

# %% [markdown]
# > **Side note, an erratum: the sparse peak moves things the other way.** NVIDIA's headline
# > H100 figure, 1,979 BF16 TFLOP/s, assumes 2:4 structured sparsity (half of each group of
# > four weights is zero and skipped). Served LLM weights are dense, so the dense 989 belongs
# > in the numerator, and 17 §2 is right that mixing the two is a factor-of-two mistake. But it
# > states the consequences backwards: it says the sparse figure halves the ridge and doubles
# > the MFU you would report. The ridge is peak over bandwidth, so a doubled peak *doubles* it; MFU divides
# > the achieved rate by the peak, so a doubled peak *halves* it. The conclusion survives
# > either way: quote the dense peak. The cell below checks both directions.

# %%
sparse = hw.with_(peak_flops_per_s=ch17.H100_SPARSE_PEAK_FLOPS_PER_S)
# 17 §9's decode measurement on the 8B as the achieved rate; any rate gives the same ratio
achieved = calc.decode_utilization(m8, hw, ch17.DECODE_TOK_PER_S)["flops_per_s"]
print(f"ridge with the sparse peak: {calc.ridge_point(sparse):.0f} FLOP/B "
      f"({calc.ridge_point(sparse) / ridge:.2f}x the dense ridge)")
print(f"MFU of {achieved:.3g} FLOP/s: dense {100 * calc.mfu(achieved, hw):.2f}%, "
      f"sparse {100 * calc.mfu(achieved, sparse):.2f}%")
for e in ledger.by_section("17.2"):
    if not e.agrees:
        print(f"- {e.claim}: chapter {e.printed} {e.unit}, companion {e.value:.2f}. {e.note}")

# %% [markdown]
# ## Prefill: the prompt length is the intensity
#
# Prefill handles the entire prompt in one forward pass. Each weight is fetched once and then
# multiplied against all $n$ prompt tokens before the kernel moves on, so the bytes stay the
# same while the FLOPs grow $n$-fold:
#
# $$ I_{\text{prefill}} \approx \frac{2N\,n}{2N} = n\ \text{FLOP/byte}. $$
#
# A 2,048-token prompt is therefore far to the right of the ridge, and its time is set by the
# FLOPs divided by the compute rate actually achieved. The chapter assumes 50% of peak for a
# realistic prefill, says so, and keeps that assumption throughout; 17.9 shows how to measure
# the real fraction (MFU).

# %%
n = ch17.PROMPT_TOKENS
print(f"prefill intensity ({n:,} tokens): {calc.prefill_intensity(m8, n):,.0f} FLOP/byte")
print(f"prefill FLOPs: {calc.matrix_flops(m8, n) / units.TFLOP:.1f} TFLOP")
print(f"at the full roof: {calc.prefill_compute_s(m8, hw, n, efficiency=1.0) / units.ms:.0f} ms; "
      f"at {ch17.PREFILL_EFFICIENCY:.0%} of peak: "
      f"{calc.prefill_compute_s(m8, hw, n) / units.ms:.0f} ms")
print(f"prompts shorter than ~{ridge / calc.prefill_intensity(m8, 1):.0f} tokens stay on the "
      "memory roof")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
from companion.formulas.fuller import matmul_intensity  # noqa: E402

d_ff = models.load("llama-3.1-8b").intermediate_size   # the MLP width the round shape omits
p_longest = next(c.max for c in widgets.RooflinePanel.controls if c.name == "prompt_tokens")
gemm = {t: matmul_intensity(m8, t, intermediate_size=d_ff) for t in (n, p_longest)}
gemm_ridge_b = next(b for b in range(1, 10 * round(ridge))
                    if matmul_intensity(m8, b, intermediate_size=d_ff)["intensity"] >= ridge)
md(f"""
**Where "intensity ≈ n" stops holding.** The count takes the weights as the only bytes. Each
weight product also reads its input activations ($n$ rows as wide as the product's input) and
writes its output, and those bytes grow with $n$ as the FLOPs do. While $n$ is small next to the
model's widths (hidden {m8.hidden_size:,}, MLP {d_ff:,}) they hardly count; at the chapter's
{n:,} tokens they are {100 * gemm[n]['activation_share']:.0f}% of the bytes, and the intensity is
{gemm[n]['intensity']:,.0f} FLOP/B, not {n:,}; at the explorer's longest prompt,
{p_longest:,} tokens, it is {gemm[p_longest]['intensity']:,.0f}, and no prompt passes
{gemm[n]['long_prompt_limit']:,.0f}. Even {gemm[n]['intensity']:,.0f} is
{gemm[n]['intensity'] / ridge:.1f} times the ridge, so prefill stays compute-bound. The same
bytes move weights-only decode a little: it reaches the ridge near a batch of {gemm_ridge_b},
not {ridge:.0f}. (Counted per layer with the shapes of Llama-3.1-8B, each product as its own
kernel, by `matmul_intensity` in `companion.formulas.fuller`.)
""")

# %% [markdown]
# ## Batching lifts decode, and the KV cache pulls it back down
#
# Decode $b$ sequences in the same forward pass and every weight fetched from HBM now serves
# $b$ tokens instead of one, so the intensity climbs to about $b$. Only a batch near the ridge
# value would reach the compute roof. There is a catch: each sequence also has its own KV
# cache, $L$ tokens of $k$ bytes each, and the step reads all of it. That part is private to
# its sequence and does not get shared across the batch:
#
# $$ I_{\text{eff}} = \frac{b \cdot 2N}{2N + b\,L\,k}. $$
#
# The chapter tries it on the 8B at $b = 64$, once with short chats (600 live tokens per
# sequence) and once with long contexts (8,000 tokens each).

# %%
def fits_note(L, batch=64):
    """Weights + the batch's KV + 17 §4's runtime reserve against the card (the explorer's
    memory check), e.g. "87 GB: does not fit"."""
    mem = widgets.RooflinePanel().at(batch=batch, context_tokens=L).numbers
    return (f"{mem['memory_needed_GB']:.0f} GB: "
            + ("fits" if mem["fits_in_memory"] else "does not fit"))


for L in (0, ch17.CHAT_LIVE_TOKENS, ch17.LONG_CONTEXT_TOKENS):
    step = calc.decode_vs_context(m8, hw, L, batch=64)
    print(f"b = 64, {L:>5,} live tokens: KV {step['kv_bytes'] / 64 / units.GB:5.3f} GB each, "
          f"bytes per step {step['step_bytes'] / units.GB:5.1f} GB, "
          f"intensity {calc.decode_intensity(m8, 64, L):4.1f} FLOP/byte; "
          f"weights + KV + reserve {fits_note(L)}")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
long_mem = widgets.RooflinePanel().at(batch=64, context_tokens=ch17.LONG_CONTEXT_TOKENS).numbers
md(f"""
The batch did not change, yet long caches cut the intensity to a fraction of the short-chat
value. Serving long contexts runs into memory twice: the caches fill the card (capacity) and
reading them eats the step (bandwidth). The {ch17.LONG_CONTEXT_TOKENS:,}-token row shows the
first already: weights, 64 caches and the runtime reserve come to
{long_mem['memory_needed_GB']:.0f} GB, {long_mem['memory_over_card']:.2f} times the
{hw.mem_bytes / units.GB:.0f} GB card, so that batch **does not fit**; its intensity is what
such a batch would have, not one this card can run. 17.4 therefore sizes the cache exactly,
and 17.5 stops allocating memory that holds nothing.
""")

# %% [markdown]
# ## The roofline, drawn from the numbers
#
# The chapter sketches the plot by hand; here every marker is computed with
# `calc.roofline_point`: decode at batch 1, decode at batch 64 with weights only, then with
# 600 and with 8,000 live tokens per sequence, and the prefill of the 2,048-token prompt.

# %%
points = [dict(label="decode, batch 1", **b1)]
for label, L in (("decode, b=64, weights only", 0),
                 ("decode, b=64, 600 live tokens", ch17.CHAT_LIVE_TOKENS),
                 ("decode, b=64, 8,000 live tokens", ch17.LONG_CONTEXT_TOKENS)):
    if fits_note(L).endswith("does not fit"):
        label += f" ({fits_note(L)})"
    points.append(dict(label=label, **calc.roofline_point(calc.decode_intensity(m8, 64, L), hw)))
points.append(dict(label=f"prefill, {n:,}-token prompt", phase="prefill",
                   **calc.roofline_point(calc.prefill_intensity(m8, n), hw)))
for p in points:
    print(f"{p['label']:53} {p['intensity_flop_per_byte']:7,.1f} FLOP/B "
          f"{p['attainable_flops_per_s'] / units.TFLOP:7.1f} TFLOP/s "
          f"{100 * p['fraction_of_peak']:6.2f}% of peak")
plots.roofline_figure(hw, points).show()

# %% [markdown]
# Prefill is the tan triangle here and in the explorer below. The chapter closes §2 with a
# habit: for any performance question, draw this picture first and place the question on it.

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
int8 = calc.decode_time_split(m8, hw, bytes_per_param=1)
md(f"""
- *"Should we quantize?"* asks whether shrinking the bytes moves decode right: INT8 weights
  take batch-1 decode from {calc.decode_intensity(m8):g} to
  {calc.decode_intensity(m8, bytes_per_param=1):g} FLOP/B and its ceiling from
  {split['tokens_per_s']:.0f} to {int8['tokens_per_s']:.0f} tok/s, while the prefill of
  {n:,} tokens, already on the compute roof, gains nothing.
- *"Why is utilization high but throughput low?"* A batch-1 step keeps a kernel running for all
  of its {split['step_s'] / units.ms:.2f} ms, so a busy-time meter reads near 100%, yet the
  arithmetic units do {100 * b1['fraction_of_peak']:.2f}% of what they could: the point sits on
  the memory roof, which that meter does not see (17.9).
""")

# %% [markdown]
# ## Where this model breaks: the FLOPs and bytes of a real 8B, attention included
#
# Attention multiplies and adds with every cached token it reads, so a long context brings
# FLOPs along with its bytes and the decode intensity levels off instead of sinking towards
# zero (the explorer's "FLOPs counted" toggle moves its points to this count).

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the table below
from companion import tables

t_longest = next(c.max for c in widgets.RooflinePanel.controls if c.name == "context_tokens")
t_rows = []
for t_L, t_what in ((ch17.CHAT_LIVE_TOKENS, "17 §2"), (t_longest, "explorer's longest")):
    t_r = calc.decode_attention_intensity(m8, ch17.BATCH, t_L)
    t_mem = widgets.RooflinePanel().at(context_tokens=t_L).numbers
    t_rows.append((f"decode, b = {ch17.BATCH}, {t_L:,} live tokens ({t_what})",
                   f"{t_r['chapter_intensity']:.2f} FLOP/B", f"{t_r['intensity']:.2f} FLOP/B",
                   f"{t_r['intensity'] / t_r['chapter_intensity']:.2f}",
                   f"{t_mem['memory_needed_GB']:,.0f} GB: "
                   + ("fits" if t_mem["fits_in_memory"] else
                      f"**does not fit** ({t_mem['memory_over_card']:.1f}x the card)")))
md(tables.markdown_table(("setting", "chapter's model (matrices only)",
                          "fuller model (attention counted)", "fuller / chapter",
                          "weights + KV + reserve on the H100"), t_rows))

# %% [markdown] jp-MarkdownHeadingCollapsed=true
# #### In detail
#
# What a real 8B streams and computes.
#
# <!-- fold: the fuller model, its numbers and where it parts from the chapter's -->

# %% [markdown]
# 17 §2 counts with a round shape: 8e9 parameters, every one of them streamed for each decode
# step and worth 2 FLOPs per token, attention left out. Three things a real model adds:
#
# - **What a step streams.** The input embedding is a table: a token reads its own row, not
#   the whole matrix. The output head, by contrast, runs for every token that needs its next
#   word, so decode pays for it and a prefill only for its last token.
# - **Attention's FLOPs.** Scoring a query against a key and mixing in the value costs, in
#   every layer and each of its $n_q$ query heads, one multiply-add per dimension of each:
#   $a = 4\,d_\text{head}\,n_q\,n_\text{layers}$ FLOPs per causal query-key pair
#   (`calc.attention_flops_per_pair`). A decode token at context $L$ has $L + 1$ such pairs, a
#   prompt of $n$ tokens $n(n+1)/2$.
# - **Where those FLOPs land.** Attention reads each sequence's cache, which the chapter's
#   batched intensity already counts as bytes, and now also does arithmetic with it:
#
# $$ I_{\text{eff}} = \frac{b\,(2N + a\,(L+1))}{D_w + b\,L\,k}
#    \;\xrightarrow{\;L \to \infty\;}\; \frac{a}{k}, $$
#
# where $D_w$ is the weight bytes a decode step streams (the first point above: every weight
# but the input embedding table; the chapter's round shape takes $2N$). The limit is
# the attention's own intensity, which for grouped-query attention is the number of query heads
# sharing each KV head (times 2 / bytes per value). Below, the chapter's shape beside the
# Llama-3.1-8B `config.json` from the companion's shelf (`companion/data/hf_configs`), then the
# batched intensity of 17 §2 with and without attention (`calc.decode_attention_intensity`).

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
real = models.load("llama-3.1-8b")
shape_pf = calc.prefill_readings(m8, hw, n)
real_pf = calc.prefill_readings(real, hw, n)

shape_mat, shape_all = (shape_pf["matrix_flops"] / units.TFLOP,
                        (shape_pf["matrix_flops"] + shape_pf["attention_flops"]) / units.TFLOP)
real_mat, real_all = (real_pf["matrix_flops"] / units.TFLOP,
                      (real_pf["matrix_flops"] + real_pf["attention_flops"]) / units.TFLOP)
shape_split, real_split = calc.decode_time_split(m8, hw), calc.decode_time_split(real, hw)
md(f"""
| | the chapter's 8B shape | {real.name} (`config.json`) |
|---|---|---|
| parameters | {m8.n_params / 1e9:.2f} B | {real.n_params / 1e9:.2f} B |
| bytes a decode step streams | {m8.streamed_weight_bytes / units.GB:.2f} GB | {real.streamed_weight_bytes / units.GB:.2f} GB (no embedding table) |
| batch-1 decode ceiling | {shape_split['tokens_per_s']:.0f} tok/s | {real_split['tokens_per_s']:.0f} tok/s |
| attention FLOPs per query-key pair | {calc.attention_flops_per_pair(m8):,.0f} | {calc.attention_flops_per_pair(real):,.0f} |
| prefill of {n:,} tokens: matrix FLOPs | {shape_mat:.1f} TFLOP | {real_mat:.1f} TFLOP (layers only) |
| the same with attention | {shape_all:.1f} TFLOP | {real_all:.1f} TFLOP |
| prefill at {100 * ch17.PREFILL_EFFICIENCY:.0f}% of peak, with attention | {shape_pf['attention_s'] / units.ms:.1f} ms (chapter: {shape_pf['chapter_s'] / units.ms:.1f} ms) | {real_pf['attention_s'] / units.ms:.1f} ms |
""")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
roof_controls = {c.name: c for c in widgets.RooflinePanel.controls}
L_max = roof_controls["context_tokens"].max
rows = []
for L in (ch17.CHAT_LIVE_TOKENS, ch17.LONG_CONTEXT_TOKENS, L_max):
    r = calc.decode_attention_intensity(m8, ch17.BATCH, L)
    mem = widgets.RooflinePanel().at(context_tokens=L).numbers
    fit = ("fits" if mem["fits_in_memory"] else
           f"**does not fit** ({mem['memory_over_card']:.1f}x the card)")
    rows.append(f"| {L:,} | {r['chapter_intensity']:.1f} | {r['intensity']:.1f} | "
                f"{100 * r['attention_share']:.0f}% | {mem['memory_needed_GB']:,.0f} GB: {fit} |")
limit = calc.decode_attention_intensity(m8, ch17.BATCH, L_max)["long_context_limit"]
md(f"""
Decode at b = {ch17.BATCH} on the {m8.name}:

| live tokens per sequence | chapter's intensity (FLOP/B) | with attention (FLOP/B) | attention's share of the FLOPs | weights + KV + reserve on the H100 |
|---|---|---|---|---|
""" + "\n".join(rows) + f"""

As contexts grow the fuller intensity levels off at $a/k$ = {limit:.0f} FLOP/B instead of
falling towards zero. The last column is a reminder that the intensity formula never asks
whether the batch fits: the longer rows describe batches no single card could hold (17.4).
""")

# %% [markdown]
# ## Where this model breaks: short prompts priced by their compute
#
# A pass cannot end before every weight has been read once, so for prompts shorter than about
# the ridge times the 50% efficiency the memory read, not the arithmetic, sets a prefill's
# time (the explorer's readout prices the prompt both ways).

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the table below
t_shortest = next(c.min for c in widgets.RooflinePanel.controls if c.name == "prompt_tokens")
t_rows = []
for t_n, t_what in ((ch17.PROMPT_TOKENS, "17 §2"), (t_shortest, "explorer's shortest")):
    t_r = calc.prefill_readings(m8, hw, t_n)
    t_rows.append((f"prefill of a {t_n:,}-token prompt ({t_what})",
                   f"{t_r['chapter_s'] / units.ms:.2f} ms", f"{t_r['roofline_s'] / units.ms:.2f} ms",
                   f"{t_r['roofline_over_chapter']:.2f}"))
md(tables.markdown_table(("setting", "chapter's model (compute at 50%)",
                          "fuller model (roofline, attention counted)", "fuller / chapter"),
                         t_rows))

# %% [markdown] jp-MarkdownHeadingCollapsed=true
# #### In detail
#
# The roofline's price of a prefill.
#
# <!-- fold: the fuller model, its numbers and where it parts from the chapter's -->

# %% [markdown]
# 17 §2 notes that a prompt shorter than the ridge sits on the memory roof, yet prices every
# prefill as $2Nn/(0.5\,\pi)$, which shrinks towards zero with $n$. A pass cannot take less
# time than reading the weights once, so the roofline's own price is the larger of the two
# terms, attention included on the compute side (`calc.prefill_readings`):
#
# $$ t_{\text{prefill}} = \max\left(\frac{D_w + n\,k}{\beta},\;
#    \frac{2Nn + a\,n(n+1)/2}{0.5\,\pi}\right). $$

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
p_lo, p_hi = roof_controls["prompt_tokens"].min, roof_controls["prompt_tokens"].max
corner = calc.fused_ridge_tokens(m8, hw)
lengths = [(p_lo, "explorer's shortest"), (128, "a short classification prompt"),
           (round(corner), "where the two terms meet at 50%"), (n, "the chapter's prompt"),
           (ch17.LONG_CONTEXT_TOKENS, "17 §3's long prompt"), (p_hi, "explorer's longest")]
pf = {length: calc.prefill_readings(m8, hw, length) for length, _ in lengths}
md("""
| prompt (tokens) | | the chapter: compute only | + attention | roofline: max with the weight read | roofline / chapter |
|---|---|---|---|---|---|
""" + "\n".join(
    f"| {length:,} | {what} | {pf[length]['chapter_s'] / units.ms:.2f} ms | "
    f"{pf[length]['attention_s'] / units.ms:.2f} ms | {pf[length]['roofline_s'] / units.ms:.2f} ms "
    f"({pf[length]['bound']}) | {pf[length]['roofline_over_chapter']:.2f}x |"
    for length, what in lengths))

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
real_gap = real_split["tokens_per_s"] / shape_split["tokens_per_s"] - 1
at_chat = calc.decode_attention_intensity(m8, ch17.BATCH, ch17.CHAT_LIVE_TOKENS)
at_long = calc.decode_attention_intensity(m8, ch17.BATCH, ch17.LONG_CONTEXT_TOKENS)
at_max = calc.decode_attention_intensity(m8, ch17.BATCH, L_max)
md(f"""
> **When the counts matter.** *Bytes:* a real Llama-3.1-8B streams
> {real.streamed_weight_bytes / units.GB:.1f} GB per step, so its batch-1 ceiling is
> {100 * real_gap:.0f}% above the round shape's; the chapter's conclusions do not move.
> *Attention in decode:* at the chapter's {ch17.CHAT_LIVE_TOKENS} live tokens it adds
> {100 * at_chat['attention_share']:.0f}% of the FLOPs and the intensity barely moves
> ({at_chat['chapter_intensity']:.1f} -> {at_chat['intensity']:.1f}); at
> {ch17.LONG_CONTEXT_TOKENS:,} tokens {at_long['chapter_intensity']:.1f} becomes
> {at_long['intensity']:.1f}, and at the explorer's {L_max:,} tokens
> {at_max['chapter_intensity']:.2f} becomes {at_max['intensity']:.1f}, a factor of
> {at_max['intensity'] / at_max['chapter_intensity']:.0f}. The point moves right but stays far
> below the ridge, and the step time does not change: decode is on the memory roof either way,
> as the chapter says. *Attention in prefill:* {100 * (shape_pf['attention_over_chapter'] - 1):.0f}%
> more time at {n:,} tokens, {100 * (pf[ch17.LONG_CONTEXT_TOKENS]['attention_over_chapter'] - 1):.0f}%
> at {ch17.LONG_CONTEXT_TOKENS:,} (17 §3's stall) and
> {100 * (pf[p_hi]['attention_over_chapter'] - 1):.0f}% at the explorer's {p_hi:,}: past a few
> thousand tokens the quadratic term is not a detail. *Short prompts:* below about
> {corner:.0f} tokens (the ridge times the 50% efficiency) the weight read sets the time; at
> 128 tokens the chapter's price is {100 * (1 - 1 / pf[128]['roofline_over_chapter']):.0f}% too
> low, at the explorer's {p_lo} tokens {pf[p_lo]['roofline_over_chapter']:.1f} times too low.
> The chapter's numbers above stay as printed; the explorer's "FLOPs counted" toggle moves the
> two points to the fuller count, and its readout prices the prompt both ways.
""")

# %% [markdown]
# ## Chapter says / companion computes

# %%
ledger.show("17.2")

# %% [markdown]
# ## Explorer: move the points yourself
#
# Pick a card and a model, the decode batch, the live KV tokens per sequence, the prefill's
# prompt length, and the storage precision of weights and KV. The four markers slide along the
# chosen card's roofline (the H100's roof stays in grey for comparison), and the readout lists
# every plotted number. "chapter's setting" restores the H100, the 8B, batch 64, 600 live
# tokens, a 2,048-token prompt and BF16. The "FLOPs counted" toggle switches the batched decode
# and the prefill from the chapter's count to the one with attention (the part above), and
# the readout prices the prefill by compute alone and on the roofline.

# %% tags=["nbval-ignore-output"]
panel = widgets.RooflinePanel()
panel.show()

# %%
numbers = panel.at().numbers
for key in ("ridge_flop_per_byte", "decode_b1_intensity", "decode_b1_pct_of_peak",
            "decode_b1_step_ms", "decode_b1_tok_s", "decode_batch_weights_only_intensity",
            "decode_batch_with_kv_intensity", "prefill_intensity", "prefill_pct_of_peak"):
    print(f"{key:36} {numbers[key]:,.4g}")

# %% [markdown]
# ### A mixture of experts on the roofline
#
# The model menu continues past the chapter's shapes with the shelf of real `config.json`
# files, and the text box reads your own (a path or the pasted JSON). The green line is
# batched decode as $b$ doubles from 1 to 1,024; for an MoE the dotted grey line shows where
# a dense model with the same batch-1 intensity would be. The two start together, because one
# token reads exactly the experts it computes with. Then they part: the FLOPs still grow with
# every sequence, but so do the bytes, since under uniform routing a layer with $E$ experts,
# $r$ per token, streams $E\,(1-(1-r/E)^b)$ of them for $b$ tokens. Only when that count
# nears $E$ do the bytes stop growing; from there the intensity climbs in step with $b$ again,
# but along the lower grey line, since each step now reads every expert while each token
# computes through only its own $r$. A skewed router (some experts much more popular than others) touches fewer
# distinct experts per batch, so the real points sit somewhat to the right of the green line.
#
# **Predict, then move.** Select "shelf: Qwen3-30B-A3B" with the chapter's batch. Will the
# batch that reaches the ridge be closer to the dense model's, or several times larger? Write
# your guess, then read both batches off the readout.

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
from companion.display import answer  # noqa: E402  (this cell stands alone for easy merges)

from companion import models  # noqa: E402

moe = models.load("qwen3-30b-a3b")
moe_roof = widgets.RooflinePanel(model="qwen3-30b-a3b").update().numbers
answer(f"At the chapter's batch of {widgets.RooflinePanel().params['batch']} the MoE touches "
       f"{moe_roof['experts_touched']:.1f} experts per layer, so its weights-only intensity "
       f"is {moe_roof['decode_batch_weights_only_intensity']:.3g} FLOP/B, "
       f"{100 * moe_roof['moe_over_dense_intensity']:.0f}% of what a dense model reaches at "
       f"that batch. A dense model would reach the ridge near $b$ = "
       f"{moe_roof['dense_batch_to_reach_ridge']:,.0f}; the MoE needs about "
       f"{moe_roof['batch_to_reach_ridge']:,.0f}, "
       f"{moe_roof['batch_to_reach_ridge'] / moe_roof['dense_batch_to_reach_ridge']:.1f} times "
       f"as many sequences. Long before that batch every expert is read, so a step streams "
       f"all {moe.streamed_params / 1e9:.1f} B read-once parameters while each sequence "
       f"computes through only {moe.active_streamed_params / 1e9:.1f} B of them: the "
       f"intensity stays at that share of $b$, and $b$ must grow by the inverse, "
       f"{moe.streamed_params / moe.active_streamed_params:.1f}x.",
       title="Worked answer: an MoE's ridge batch")

# %% [markdown]
# ## Try this
#
# 1. Raise the batch until weights-only decode touches the ridge. Then set the live KV to
#    8,000 tokens: how large must the batch be now, and could one card ever hold it? (17.4
#    answers with the card's memory.)
#    <!-- states: panel(batch=...); panel(batch=..., context_tokens=8000) -->
# 2. **Predict, then move.** Before switching the weights to INT8, predict which of the four
#    markers move and in which direction. Then switch. Why does prefill gain nothing?
#    <!-- states: panel(weight_bytes=1.0) -->
# 3. Shorten the prompt below the ridge value. Which roof is prefill on now, and how long does
#    it take?
#    <!-- states: panel(prompt_tokens=...) -->
# 4. **Predict, then move.** On the H200 with the 8B at batch 1, the ridge moves left. Predict
#    whether the batch-1 ceiling in tokens per second rises, falls or stays, then check.
#    <!-- states: panel(hardware=specs.H200_SXM.name, batch=1) -->
# 5. Switch to the 70B. Where does batch-1 decode sit, and what would its ceiling be on one
#    card if the weights fitted?
#    <!-- states: panel(model=m70.name) -->

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
b_weights = panel.at(batch=int(round(ridge))).numbers
batch_max = {c.name: c for c in widgets.RooflinePanel.controls}["batch"].max
long_mid = panel.at(batch=int(round(ridge)), context_tokens=8000).numbers
long_max = panel.at(batch=batch_max, context_tokens=8000).numbers
# the memory those caches need: 17 §4's count, with its runtime reserve
cap = calc.tp_kv_capacity(m8, hw)
seq_bytes = cap["kv_bytes_per_sequence"]
answer(f"""
Weights only, the intensity equals the batch, so the ridge is touched at a batch of about
**{ridge:.0f}** (the readout shows {b_weights['decode_batch_weights_only_intensity']:.0f} FLOP/B
there). With {ch17.LONG_CONTEXT_TOKENS:,} live tokens per sequence the same batch reaches only
{long_mid['decode_batch_with_kv_intensity']:.1f} FLOP/B with the KV reads counted: the KV term
grows with the batch as fast as the FLOPs do, so the intensity levels off near $2N/(Lk)$ =
{2 * m8.n_params / seq_bytes:.1f} FLOP/B, and even the slider's last batch of {batch_max:,}
reads {long_max['decode_batch_with_kv_intensity']:.1f}. No batch reaches the ridge, and the
card could not hold one anyway: {hw.mem_bytes / units.GB:.0f} GB less
{m8.weight_bytes / units.GB:.0f} GB of weights and the
{ch17.RUNTIME_RESERVE_BYTES / units.GB:.0f} GB runtime reserve leaves
{cap['free_kv_bytes'] / units.GB:.0f} GB, room for {cap['max_sequences']} such caches (17.4);
the readout flags a batch of {int(round(ridge))} at {ch17.LONG_CONTEXT_TOKENS:,} tokens as
**does not fit**: {long_mid['memory_needed_GB']:,.0f} GB, {long_mid['memory_over_card']:.1f}
times the card.
Batching lifts decode only while the shared weights dominate the bytes; once each sequence's
own cache does, it stops helping.
""", title="Worked answer 1")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
bf16 = panel.at().numbers
int8 = panel.at(weight_bytes=1.0).numbers
answer(f"""
The three decode markers move **right**: halving the weight bytes doubles the batch-1 intensity
({bf16['decode_b1_intensity']:.0f} -> {int8['decode_b1_intensity']:.0f} FLOP/B) and raises the
ceiling from {bf16['decode_b1_tok_s']:.0f} to {int8['decode_b1_tok_s']:.0f} tok/s. The batched
points move less once KV reads are part of the step ({bf16['decode_batch_with_kv_intensity']:.1f}
-> {int8['decode_batch_with_kv_intensity']:.1f} FLOP/B), since the cache stays in BF16. Prefill's
intensity doubles as well ({bf16['prefill_intensity']:,.0f} -> {int8['prefill_intensity']:,.0f}),
but it was already on the flat compute roof, where fewer bytes buy nothing: its attainable rate
stays at {int8['prefill_pct_of_peak']:.0f}% of peak. (Faster INT8 arithmetic would raise that
roof; the BF16 peak used here does not count it.) Fewer bytes per weight speed up only the
work that waits on memory: decode gains, compute-bound prefill does not.
""", title="Worked answer 2")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
short = 128
p_short = panel.at(prompt_tokens=short).numbers
bound = "memory" if p_short["prefill_intensity"] < p_short["ridge_flop_per_byte"] else "compute"
# where compute at the chapter's 50% overtakes the weight read, and a prompt at the ridge
corner = calc.fused_ridge_tokens(m8, hw)
at_ridge = calc.prefill_readings(m8, hw, int(round(ridge)))
answer(f"""
At {short} tokens the intensity is {p_short['prefill_intensity']:.0f} FLOP/B, below the
ridge of {p_short['ridge_flop_per_byte']:.0f}: prefill is now **{bound}-bound**, and the roof
lets it reach {p_short['prefill_pct_of_peak']:.0f}% of peak. Its time is set by reading the
weights once: **{p_short['prefill_roofline_ms']:.1f} ms**, about one batch-1 decode step
({p_short['decode_b1_step_ms']:.1f} ms), however short the prompt.

*A refinement.* The ridge assumes the full peak. At the chapter's
{100 * ch17.PREFILL_EFFICIENCY:.0f}% of peak the arithmetic outlasts the weight read sooner,
from about {corner:.0f} tokens (the ridge times {ch17.PREFILL_EFFICIENCY:g}). Between those two
lengths a prompt is still left of the ridge by its intensity, yet its compute sets the time:
a {ridge:.0f}-token prompt takes {at_ridge['roofline_s'] / units.ms:.1f} ms,
{at_ridge['roofline_s'] / (p_short['decode_b1_step_ms'] * units.ms):.1f} times the sweep. So a
prompt of up to about {corner:.0f} tokens costs one weight sweep whatever its length, nearly
free next to the decode that follows it; past that its compute sets the price.
""", title="Worked answer 3")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
h200 = panel.at(hardware=specs.H200_SXM.name, batch=1).numbers
h100 = panel.at(hardware=hw.name, batch=1).numbers
answer(f"""
The ceiling **rises**, from {h100['decode_b1_tok_s']:.0f} to {h200['decode_b1_tok_s']:.0f} tok/s,
by exactly the bandwidth ratio ({specs.H200_SXM.mem_bw_bytes_per_s / hw.mem_bw_bytes_per_s:.2f}x).
Batch-1 decode sits on the memory roof, where only $\\beta$ matters; the ridge moving to
{h200['ridge_flop_per_byte']:.0f} FLOP/B is a side effect of the same change, and the share of
peak compute used rises only from {h100['decode_b1_pct_of_peak']:.2f}% to
{h200['decode_b1_pct_of_peak']:.2f}%. On the memory roof the ceiling follows the bandwidth
alone; where the ridge sits does not enter it.
""", title="Worked answer 4")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
s70 = panel.at(model=m70.name).numbers
s8 = panel.at().numbers
answer(f"""
The 70B's batch-1 intensity is still {s70['decode_b1_intensity']:.0f} FLOP/B, at the same
point of the memory roof as the 8B: more parameters mean more FLOPs *and* more bytes in the
same ratio. Its step would stream {m70.streamed_weight_bytes / units.GB:.0f} GB,
{s70['decode_b1_step_ms']:.1f} ms, for a ceiling of **{s70['decode_b1_tok_s']:.0f} tok/s**
(the 8B: {s8['decode_b1_tok_s']:.0f}), if the weights fitted on one card; they do not
({m70.weight_bytes / hw.mem_bytes:.2f}x its memory), which 17.4 and 17.7 deal with. A larger
model does not move batch-1 decode off the memory roof; it only divides the ceiling by its
weight bytes.
""", title="Worked answer 5")
# %% [markdown]
# Next: [17.3 Prefill vs decode](17_03_prefill_vs_decode.ipynb).
#
# > **What you can now compute**
# > - The arithmetic intensity of decode at any batch and of prefill at any prompt length, and which roof caps each ([Exercise 17-3](../../exercises/ex17_3.ipynb)).
# > - The batch-1 decode ceiling in tokens per second from weight bytes and bandwidth ([Exercise 17-4](../../exercises/ex17_4.ipynb)).
# > - How the live KV cache drags the effective intensity of a batch down ([Exercise 17-3](../../exercises/ex17_3.ipynb)).
# > - What a smaller weight format does to that ceiling ([Exercise 17-8](../../exercises/ex17_8.ipynb)).
# >
# > <details><summary>Assumptions this notebook made</summary>
# >
# > Two FLOPs per parameter per token for a round 8e9
# > parameters, all of them streamed each decode step, with attention's FLOPs left out except
# > where a line adds them; the card runs at its spec-sheet peaks, except a prefill's compute
# > at an assumed 50%; a prefill is priced by its compute alone except in the short-prompt
# > table; only the weights count as bytes, except where the activations of long prompts are
# > added; every sequence of a batch holds the same live context; the MoE's routing is
# > uniform.
# >
# > </details>
