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
# # 17.10 The levers, ranked
#
# **The question.** Performance trouble shows up as a symptom: throughput is poor, p99 ITL
# spikes, the model will not fit. Which lever treats which symptom, how much does each buy,
# and in which order should they be tried?
#
# The chapter answers with three tables: the levers by symptom, a map from mechanism to
# lever, and a cheat sheet of headline numbers. None of the three is reproduced here; we
# rebuild all of them from the companion's formulas. Two levers get their arithmetic in full
# first: weight quantization and speculative decoding.

# %%
from companion import calc, ledger, plots, specs, units, widgets
from companion.chapters import ch17
from companion.display import answer, md

hw = specs.H100_SXM
m8 = specs.LLAMA_8B

# %% [markdown]
# ## Quantization: a lighter load on the memory roof
#
# At batch 1 a decode step is memory-bound (17 §2): its time is the bytes of the weights over
# the bandwidth $\beta$. Keeping each weight in one byte (INT8 or FP8) instead of two, while
# doing the arithmetic at higher precision, halves those bytes, so the step halves and the
# ceiling doubles. With $N$ parameters of $s$ bytes each:
#
# $$T_\text{step} = \frac{N s}{\beta}, \qquad
# \text{ceiling} = \frac{1}{T_\text{step}}, \qquad
# I = \frac{2N}{N s} = \frac{2}{s}\ \text{FLOP/byte}.$$

# %%
q = calc.quantization_ceiling(m8, hw, 1)
print(f"8B in INT8: weights {q['weight_bytes'] / units.GB:.0f} GB, "
      f"{q['step_s'] / units.ms:.2f} ms per token, ceiling {q['tokens_per_s']:.0f} tok/s "
      f"(BF16: {q['baseline_tokens_per_s']:.0f} tok/s, x{q['speedup']:g}); intensity "
      f"{q['intensity_flop_per_byte']:g} FLOP/byte")
formats = {"BF16 (2 B)": 2.0, "INT8 / FP8 (1 B)": 1.0, "INT4 (0.5 B)": 0.5}
rows = [dict(hardware=card.name, format=label,
             tokens_per_s=calc.quantization_ceiling(m8, card, b)["tokens_per_s"])
        for card in (specs.H100_SXM, specs.H200_SXM) for label, b in formats.items()]
for r in rows:
    print(f"  {r['hardware']:9} {r['format']:17} {r['tokens_per_s']:5.0f} tok/s")
plots.quantization_figure(rows).show()

# %% [markdown]
# Quantizing only the weights is the cautious first move; compressing the KV cache or the
# activations are further, riskier choices. It is also the first lever on the list that can
# alter what the model says, so the doubling counts as free only after your own evaluations
# agree.
#
# ## Speculative decoding: put the idle arithmetic to work
#
# A batch-1 decode step uses well under 1% of the card's arithmetic. Speculative decoding
# spends some of that slack: a small draft model guesses $m$ tokens, and the large model
# scores all of them in a single forward pass. That pass is memory-bound, so scoring $m+1$
# positions streams the same weights as scoring one and takes (almost) the same time.
#
# A note on letters: 17 §10 uses the letter $k$ where this notebook writes $m$. The companion
# keeps $m$, the letter of 8.5, because $k$ already stands for the KV bytes per token (17 §2,
# §4, and the quantized step below); every table, explorer and exercise here uses $m$.

# %%
m = ch17.SPEC_DRAFT_LEN
one = calc.decode_step_time(m8, hw, 1, 0)
wide = calc.decode_step_time(m8, hw, m + 1, 0)
print(f"target pass over 1 position: {one / units.ms:.3f} ms; over {m + 1} positions: "
      f"{wide / units.ms:.3f} ms (intensity {calc.decode_intensity(m8, m + 1):g} FLOP/byte, "
      f"ridge {calc.ridge_point(hw):.0f})")

# %% [markdown]
# Suppose each drafted token survives with probability $\alpha$, independently of the others.
# The pass keeps the accepted prefix and adds one token of its own. It produces at least $j+1$
# tokens exactly when the first $j$ guesses all survive, which has probability $\alpha^j$.
# Summing those tail probabilities gives the expected output of one target pass:
#
# $$\mathbb{E}[X] = \sum_{j=0}^{m} P(X \ge j + 1) = 1 + \alpha + \alpha^2 + \dots + \alpha^m.$$
#
# The simulator (`companion.sim.speculative`: rejection sampling over a two-symbol vocabulary,
# tuned so that a draft token is accepted with probability $\alpha$) checks the formula one
# round at a time.

# %%
alpha = ch17.SPEC_ACCEPTANCE
terms = [calc.speculative_expected_tokens(alpha, j) - calc.speculative_expected_tokens(alpha, j - 1)
         for j in range(1, m + 1)]
expected = calc.speculative_expected_tokens(alpha, m)
print("E[X] = 1 + " + " + ".join(f"{t:.3f}" for t in terms) + f" = {expected:.2f} tokens per pass")
check = widgets.speculative_check(alpha, m, 5000)
print(f"exact P(X = n), n = 1..{m + 1}: " + ", ".join(f"{p:.3f}" for p in check["distribution"]))
print(f"simulated over 5,000 seeded rounds: " + ", ".join(f"{p:.3f}" for p in check["simulated"])
      + f"; mean {check['sim_mean']:.3f}")
spec_panel = widgets.SpeculativeLeverPanel()
spec_panel.figure().show()

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
md(f"""At $\\alpha = {alpha}$ and $m = {m}$ one target pass yields {expected:.2f} tokens on
average, which is where the chapter's "up to" speed-up for one stream comes from. It is an
upper bound because the draft model takes time too and the wider pass is not quite free.
The bargain is plain: more total arithmetic (a second model, and guesses that are thrown
away) in exchange for lower latency. On a decode GPU whose arithmetic sits idle that is a
good deal; on a prefill pool that is already compute-bound it is a bad one.""")

# %% [markdown]
# ## Where this model breaks: quantization's doubling
#
# Fewer bytes per weight shorten only the weight read: the KV cache is still read at two
# bytes a value, and past the ridge the step is arithmetic, which no byte count shortens; the
# lever figure further down draws this as its *INT8, on the roofline* line.

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the table below
from companion import tables

q_grid = {(b, c): calc.quantized_decode_speedup(m8, hw, ch17.INT8_BYTES_PER_PARAM, batch=b,
                                                context_tokens=c)
          for b in (1, ch17.BATCH, 256, 1024)
          for c in (0, ch17.CHAT_LIVE_TOKENS, ch17.LONG_CONTEXT_TOKENS)}


def memory(batch, context_tokens, bytes_per_param=2.0):
    """17 §2's memory check: the weights at that precision, the batch's KV and the runtime
    reserve against the card (the roofline explorer's readout)."""
    return widgets.RooflinePanel().at(batch=batch, context_tokens=context_tokens,
                                      weight_bytes=bytes_per_param).numbers


# the farthest setting among those the card can hold in BF16 (the speed-up's baseline)
q_far = min((key for key in q_grid if memory(*key)["fits_in_memory"]),
            key=lambda key: q_grid[key]["speedup"] / q_grid[key]["chapter_speedup"])
q_rows = [(f"batch {b:,}, {c:,} cached tokens{note}", f"{q_grid[(b, c)]['chapter_speedup']:.2f}x",
           f"{q_grid[(b, c)]['speedup']:.2f}x",
           f"{q_grid[(b, c)]['speedup'] / q_grid[(b, c)]['chapter_speedup']:.2f}")
          for (b, c), note in (((1, 0), " (the chapter)"), (q_far, ""))]
md(tables.markdown_table(("setting (8B, INT8 weights)", "chapter's model (speed-up)",
                          "fuller model (roofline step)", "fuller / chapter"), q_rows))

# %% [markdown] jp-MarkdownHeadingCollapsed=true
# #### In detail
#
# The quantized step on the roofline, over batch and context.
#
# <!-- fold: the fuller model, its numbers and where it parts from the chapter's -->

# %% [markdown]
# The doubled ceiling is a statement about batch 1 at short context, where a step is nothing
# but the weight read. Quantizing the weights (and only the weights) changes one term of the
# roofline step of 17 §2:
#
# $$T_\text{step} = \max\!\left(\frac{b\,F}{\pi},\ \frac{D_w\,s/2 + b\,L\,k}{\beta}\right),$$
#
# with $s$ bytes per weight instead of two. The KV cache keeps its two bytes per value, and the
# arithmetic still runs at the BF16 peak. So the speed-up is 2x only while the weights
# dominate the read: a large batch at a long context spends most of the step on KV, and past
# the ridge the step is arithmetic, which fewer bytes do not shorten.
# `calc.quantized_decode_speedup` prices both steps on the roofline (F counts each token's
# matrices and its attention).

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
contexts = (0, ch17.CHAT_LIVE_TOKENS, ch17.LONG_CONTEXT_TOKENS)
batches = (1, ch17.BATCH, 256, 1024)
rows = ["| batch | " + " | ".join(f"{c:,} cached tokens" for c in contexts) + " |",
        "|---" * (len(contexts) + 1) + "|"]
quant = {}
for b in batches:
    cells = []
    for c in contexts:
        quant[(b, c)] = calc.quantized_decode_speedup(m8, hw, ch17.INT8_BYTES_PER_PARAM,
                                                      batch=b, context_tokens=c)
        bf16, int8 = memory(b, c), memory(b, c, ch17.INT8_BYTES_PER_PARAM)
        room = ("" if bf16["fits_in_memory"] else
                f"; **does not fit** in BF16 ({bf16['memory_needed_GB']:,.0f} GB, "
                f"{bf16['memory_over_card']:.1f}x the card)"
                + (f", fits in INT8 ({int8['memory_needed_GB']:,.0f} GB)"
                   if int8["fits_in_memory"] else ""))
        cells.append(f"{quant[(b, c)]['speedup']:.2f}x ({quant[(b, c)]['bound']}{room})")
    rows.append(f"| {b} | " + " | ".join(cells) + " |")
md(f"INT8 weights on the 8B, speed-up over BF16 on an H100 SXM (the chapter's model: "
   f"{quant[(1, 0)]['chapter_speedup']:g}x everywhere; in brackets the quantized step's "
   f"bound, and whether weights, KV and the {ch17.RUNTIME_RESERVE_BYTES / units.GB:.0f} GB "
   f"runtime reserve fit the {hw.mem_bytes / units.GB:.0f} GB card, 17 §2, §4):\n\n"
   + "\n".join(rows))

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
q_chat = quant[(ch17.BATCH, ch17.CHAT_LIVE_TOKENS)]
q_long = quant[(ch17.BATCH, ch17.LONG_CONTEXT_TOKENS)]
q_deep_batch = 1024
q_deep = quant[(q_deep_batch, 0)]
long_bf16 = memory(ch17.BATCH, ch17.LONG_CONTEXT_TOKENS)
long_int8 = memory(ch17.BATCH, ch17.LONG_CONTEXT_TOKENS, ch17.INT8_BYTES_PER_PARAM)
most_bf16 = calc.tp_kv_capacity(m8, hw, context_tokens=ch17.LONG_CONTEXT_TOKENS)["max_sequences"]
most_int8 = calc.tp_kv_capacity(m8.with_(bytes_per_param=ch17.INT8_BYTES_PER_PARAM), hw,
                                context_tokens=ch17.LONG_CONTEXT_TOKENS)["max_sequences"]
md(f"""> **Where this model breaks: quantization.** At the chapter's setting (batch 1, short
> context) the fuller model gives the chapter's {quant[(1, 0)]['speedup']:.2f}x exactly. At
> 17 §2's batch of {ch17.BATCH} with {ch17.CHAT_LIVE_TOKENS} live tokens each, the KV cache is
> a good part of every read and INT8 weights buy {q_chat['speedup']:.2f}x; at
> {ch17.LONG_CONTEXT_TOKENS:,} tokens each, {q_long['speedup']:.2f}x, though that BF16 baseline
> **does not fit** one H100 ({long_bf16['memory_needed_GB']:.0f} GB with the runtime reserve,
> {long_bf16['memory_over_card']:.1f}x the card, a slip 17 §2's own example at this batch and
> context shares): in BF16 at most
> {most_bf16} such sequences fit, while the INT8 weights free room for {most_int8} (the batch
> of {ch17.BATCH} then needs {long_int8['memory_needed_GB']:.0f} GB). At a batch
> of {q_deep_batch:,} with no cached context (beyond the ridge even in BF16) the step is
> compute-bound and quantizing the weights buys {q_deep['speedup']:.2f}x.
>
> **When it matters.** Whenever quantization is sold for throughput rather than single-stream
> latency: a busy server is exactly where the doubling shrinks. Quantizing the KV cache too
> (8.4) or computing in FP8 (a higher peak) are what move the other terms.""")

# %% [markdown]
# ## Where this model breaks: drafting for free, verifying for free
#
# Every drafted token costs the draft model a step, and a verification pass over $b(m+1)$ rows
# reaches the ridge at a modest batch; the explorer's *draft cost* and *decode batch* sliders
# move its priced speed-up curve.

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the table below
sp_ctl = {c.name: c for c in widgets.SpeculativeLeverPanel.controls}
sp_cases = [(sp_ctl["batch"].min, sp_ctl["draft_cost_pct"].default, " (the chapter)")]
sp_grid = {(b, pct): calc.speculative_speedup(m8, hw, draft_cost=pct / 100, batch=b)
           for b in (1, ch17.BATCH, 256, sp_ctl["batch"].max)
           for pct in (sp_ctl["draft_cost_pct"].min, sp_ctl["draft_cost_pct"].max)}
sp_far = min(sp_grid, key=lambda key: sp_grid[key]["speedup"] / sp_grid[key]["chapter_speedup"])
sp_rows = []
for sp_b, sp_pct, sp_note in sp_cases + [(*sp_far, "")]:
    sp = calc.speculative_speedup(m8, hw, draft_cost=sp_pct / 100, batch=sp_b)
    sp_rows.append((f"batch {sp_b:,}, draft at {sp_pct:g}% of a step{sp_note}",
                    f"{sp['chapter_speedup']:.2f}x", f"{sp['speedup']:.2f}x",
                    f"{sp['speedup'] / sp['chapter_speedup']:.2f}"))
md(tables.markdown_table(("setting (8B, speculative decoding)", "chapter's model (E[X])",
                          "fuller model (draft and pass priced)", "fuller / chapter"), sp_rows))

# %% [markdown] jp-MarkdownHeadingCollapsed=true
# #### In detail
#
# The draft's cost and the wider pass, priced on the roofline.
#
# <!-- fold: the fuller model, its numbers and where it parts from the chapter's -->

# %% [markdown]
# $\mathbb{E}[X]$ counts tokens per target pass. It becomes a speed-up only if a round of speculation costs what one plain step costs, which needs two things the chapter takes for
# granted: drafting $m$ tokens costs nothing, and a pass over $m+1$ positions per sequence
# costs no more than a pass over one. The second holds while the pass is memory-bound, and at
# batch $b$ it computes $b(m+1)$ rows, so it stops holding near the ridge (17 §2). Pricing
# both, with each drafted token costing $t_d$, a fixed share of a plain step $T_\text{step}(b)$:
#
# $$\text{speed-up} = \frac{\mathbb{E}[X]\; T_\text{step}(b)}
# {m\,t_d + T_v(b, m+1)},$$
#
# with the verification pass $T_v$ over $m+1$ positions per sequence and both times on the
# roofline (`calc.speculative_speedup`). Worked answer 2 below already prices a draft token at
# 10% of a plain step; the explorer's last two sliders set that share and $b$.

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
draft_cost = 0.1                              # worked answer 2's draft cost, assumed
spec_controls = {c.name: c for c in widgets.SpeculativeLeverPanel.controls}
cost_hi = spec_controls["draft_cost_pct"].max / 100
batch_hi = spec_controls["batch"].max
rows = ["| batch | chapter: E[X] | free draft, priced pass | draft at 10% of a step | "
        f"draft at {100 * cost_hi:.0f}% |", "|---|---|---|---|---|"]
spec = {}
for b in (1, ch17.BATCH, 256, batch_hi):
    spec[b] = [calc.speculative_speedup(m8, hw, draft_cost=c, batch=b)
               for c in (0.0, draft_cost, cost_hi)]
    rows.append(f"| {b} | {spec[b][0]['chapter_speedup']:.2f}x | "
                + " | ".join(f"{x['speedup']:.2f}x" for x in spec[b]) + " |")
md(f"Speculative decoding on the 8B ($\\alpha$ = {ch17.SPEC_ACCEPTANCE}, $m$ = "
   f"{ch17.SPEC_DRAFT_LEN}, no cached context), speed-up over plain decode at the same "
   f"batch:\n\n" + "\n".join(rows))

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
ridge_b = calc.verification_ridge_batch(m8, hw, ch17.SPEC_DRAFT_LEN)
md(f"""> **Where this model breaks: speculative decoding.** At batch 1 the wider pass is free,
> as the chapter says, so a free draft gives its {spec[1][0]['chapter_speedup']:.2f}x. A draft
> that costs a tenth of a step per token brings that to {spec[1][1]['speedup']:.2f}x, and at
> the explorer's {100 * cost_hi:.0f}% to {spec[1][2]['speedup']:.2f}x. The verification pass
> reaches the ridge at about {ridge_b:.0f} sequences ($b(m+1)$ rows against a ridge of
> {calc.ridge_point(hw):.0f}); at a batch of 256 it costs several plain steps and speculation
> slows decoding down ({spec[256][1]['speedup']:.2f}x with the 10% draft), and at the
> explorer's {batch_hi:,} sequences {spec[batch_hi][1]['speedup']:.2f}x.
>
> **When it matters.** The chapter's "up to" is honest for one stream on an idle card. Any
> real draft model costs something, and under load the gain shrinks and then reverses. That
> is why engines turn speculation off, or shorten the draft, as the batch grows.""")

# %% [markdown]
# ## Where this model breaks: levers that multiply
#
# Halving the weight bytes shortens the plain step more than the wider verification pass,
# which sits nearer the ridge, so each lever changes the step the other acts on; the figure
# under *In detail* draws this as *both, priced together*.

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the table below
cb_batches = (1, ch17.BATCH, 256, 1024)
cb = {b: calc.combined_levers(m8, hw, ch17.INT8_BYTES_PER_PARAM, draft_cost=draft_cost,
                              batch=b, context_tokens=ch17.CHAT_LIVE_TOKENS) for b in cb_batches}
# the farthest batch among those whose weights, KV and reserve fit the card in BF16
cb_far = min((b for b in cb if memory(b, ch17.CHAT_LIVE_TOKENS)["fits_in_memory"]),
             key=lambda b: cb[b]["joint"] / cb[b]["chapter"])
md(tables.markdown_table(
    (f"setting (8B, INT8 and a draft at {100 * draft_cost:g}% of a step)",
     "headline numbers multiplied (2 x E[X])", "fuller model (priced together)", "fuller / headlines"),
    [(f"batch {b:,}, {ch17.CHAT_LIVE_TOKENS} live tokens{note}", f"{cb[b]['chapter']:.2f}x",
      f"{cb[b]['joint']:.2f}x", f"{cb[b]['joint'] / cb[b]['chapter']:.2f}")
     for b, note in ((1, " (the chapter's batch)"), (cb_far, ""))]))

# %% [markdown] jp-MarkdownHeadingCollapsed=true
# #### In detail
#
# The two levers priced alone and together, over the batch.
#
# <!-- fold: the fuller model, its numbers and where it parts from the chapter's -->

# %% [markdown]
# The levers table lists the two speed-ups side by side, and it is tempting to multiply them:
# INT8 weights and a 4-token draft would give the two headline numbers multiplied. They
# interact. Quantization
# shrinks the read of both the plain and the verification pass, which moves the verification
# pass closer to the ridge; KV reads dilute both. `calc.combined_levers` prices the two
# together (both the target and the draft quantized, the draft still at 10% of a plain step)
# against the product of the two priced alone.

# %% tags=["remove-input"]
sweep = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]
live = ch17.CHAT_LIVE_TOKENS
combo = [calc.combined_levers(m8, hw, ch17.INT8_BYTES_PER_PARAM, draft_cost=draft_cost,
                              batch=b, context_tokens=live) for b in sweep]
curves = {
    "INT8, the chapter's 2x": ([combo[0]["quantization"]["chapter_speedup"]] * len(sweep),
                               "chapter"),
    f"INT8, on the roofline ({live} live tokens)": ([c["quantization"]["speedup"]
                                                     for c in combo], "fuller"),
    "speculative, the chapter's E[X]": ([combo[0]["speculative"]["chapter_speedup"]]
                                        * len(sweep), "chapter"),
    f"speculative, draft at {100 * draft_cost:g}%, pass on the roofline": (
        [c["speculative"]["speedup"] for c in combo], "fuller"),
    "both, the chapter's product": ([combo[0]["chapter"]] * len(sweep), "chapter"),
    "both, priced together": ([c["joint"] for c in combo], "fuller"),
    "both, the two priced speed-ups multiplied": ([c["product"] for c in combo], "product"),
}
plots.lever_speedup_figure(sweep, curves).show()

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
pick = {b: c for b, c in zip(sweep, combo)}
rows = ["| batch | headlines multiplied: 2 x E[X] | product of the priced speed-ups | priced together |",
        "|---|---|---|---|"]
for b in (1, ch17.BATCH, 256):
    c = pick[b]
    rows.append(f"| {b} | {c['chapter']:.2f}x | {c['product']:.2f}x | {c['joint']:.2f}x |")
too_big = [b for b in sweep if not memory(b, live)["fits_in_memory"]]
sweep_room = ""
if too_big:
    worst, plural = memory(too_big[-1], live), len(too_big) > 1
    sweep_room = (
        f"\n\nThe figure's batch{'es' if plural else ''} of "
        f"{', '.join(f'{b:,}' for b in too_big)} **{'do' if plural else 'does'} not fit** the "
        f"card in BF16 (at {too_big[-1]:,}: {worst['memory_needed_GB']:.0f} GB of weights, KV "
        f"and runtime reserve, {worst['memory_over_card']:.1f}x the card); at most "
        f"{calc.tp_kv_capacity(m8, hw, context_tokens=live)['max_sequences']:,} sequences of "
        f"{live} tokens fit (17 §4), so {'those points show' if plural else 'that point shows'} "
        f"what such a batch would do, not one this card can run.")
md("INT8 weights and speculative decoding together on the 8B, "
   f"{live} live tokens per sequence, draft at {100 * draft_cost:g}% of a step:\n\n"
   + "\n".join(rows) + sweep_room)

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
one, mid = pick[1], pick[ch17.BATCH]
md(f"""> **Where this model breaks: combining levers.** At batch 1 the two levers do multiply:
> both passes stay memory-bound and quantization shortens each by the same factor, so the
> joint speed-up equals the product of the priced ones, {one['joint']:.2f}x (the chapter's
> headline numbers multiplied give {one['chapter']:.2f}x, because they leave the draft's cost
> out). At a batch of {ch17.BATCH} the product says {mid['product']:.2f}x and the joint model
> {mid['joint']:.2f}x: with the weights halved, the wider verification pass is closer to the
> ridge, so it costs relatively more. At 256 sequences the joint figure is
> {pick[256]['joint']:.2f}x against a product of {pick[256]['product']:.2f}x.
>
> **When it matters.** Whenever levers are stacked to forecast a gain. Each lever changes the
> step the next one acts on, which is the chapter's own reason for fixing the order of
> operations; the forecast has to price the combination, not multiply the headlines.""")

# %% [markdown]
# ## The levers table (re-derived)
#
# One row per symptom: the lever, the quantity it changes, and the chapter's arithmetic
# recomputed for the 8B on an H100 SXM wherever the chapter gives a number. The row for a
# model too large for one card is computed for the 70B at TP = 4, the chapter's own example
# (17 §4, §7). Built by `calc.levers_table`.

# %% tags=["wide-output"]
print(widgets.levers_text(m8, hw))

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
paged16 = calc.paged_batch_gain(m8, hw)
paged1 = calc.paged_batch_gain(m8, hw, block_tokens=1)
md(f"""The paged row allocates KV in 16-token blocks, so each sequence wastes up to a block:
{paged16['paged']['batch']} sequences and {paged16['paged']['tokens_per_s']:,.0f} tok/s. The
interview notebook counts the KV token by token (1-token blocks, no waste), which gives
{paged1['paged']['batch']} sequences and {paged1['paged']['tokens_per_s']:,.0f} tok/s.""")

# %% [markdown]
# **In which order.** First measure (MBU and MFU, the ITL distribution, KV-pool occupancy and
# preemptions; 17 §9). Next make sure the engine really gives you what it should by default:
# paged KV and continuous batching. Then tune the scheduler: chunked prefill and the token
# budget per step. Last come the levers with a price in answer quality, money or operational
# effort: quantization, a different parallel layout, disaggregation. Each step shifts the
# numbers the next one starts from, so the order is not arbitrary.
#
# ## The mechanism-to-lever map (re-derived)
#
# The whole chapter in one table. Cover the right-hand column and try to rebuild it from the
# left.

# %% tags=["wide-output"]
print(widgets.mechanism_map_text())

# %% [markdown]
# ## Cheat sheet (re-derived)
#
# Headline numbers for both model shapes on an H100 SXM, from `calc.cheat_sheet`: spec-sheet
# peaks, BF16, prefill at half of peak, a 4 GB runtime reserve, 8,000-token sequences. Redo
# it for your own card before quoting any of them; a cell below does it for an H200. The
# 70B's weights do not fit one card (weights / card memory above 1x), so its batch-1 decode
# rows are what one card's bandwidth would allow if they did: a yardstick, not a deployment.
# "none" marks a count that is zero; a dash, a quantity that does not exist for a model.

# %% tags=["wide-output"]
print(widgets.cheat_sheet_text([m8, specs.LLAMA_70B], hw))

# %% [markdown]
# ## Chapter says / companion computes

# %%
ledger.show("17.10")

# %% [markdown]
# ## Explorer: speculative decoding
#
# The acceptance rate, the draft length and the number of simulated rounds. Left: the tokens
# one target pass produces (bars exact, diamonds simulated); right: the expectation against
# the draft length. A longer draft adds little once $\alpha^m$ is small. The last two sliders
# price the draft and set the batch: the dashed curve is then the speed-up of the box above.

# %% tags=["nbval-ignore-output"]
spec_panel.show()

# %%
spec_default = spec_panel.defaults()
n = spec_panel.at().numbers
print(f"alpha {spec_default['acceptance']:g}, m {spec_default['draft_len']}: "
      f"{n['expected_tokens']:.2f} expected, {n['simulated_mean']:.3f} simulated")
for a in (0.5, 0.9):
    n = spec_panel.at(acceptance=a).numbers
    print(f"alpha {a}, m {spec_default['draft_len']}: {n['expected_tokens']:.2f} expected")
# %% tags=["wide-output"]
print(widgets.cheat_sheet_text([m8, specs.LLAMA_70B], specs.H200_SXM))

# %% [markdown]
# ## Try this
#
# 1. Which acceptance rate makes $m = 8$ worth half a token per pass more than $m = 4$? Try it
#    in the explorer, then solve $\alpha^5 + \dots + \alpha^8 = 0.5$.
#    <!-- states: spec_panel(acceptance=...); spec_panel(draft_len=8, acceptance=...) -->
# 2. **Predict, then move.** With $\alpha = 0.7$, suppose each drafted token costs a tenth of a
#    target pass. With a free draft, a longer draft always gives more; predict which draft
#    length now gives the most tokens per unit of time (not per pass), then move the
#    draft-length slider and compare.
#    <!-- states: spec_panel(draft_cost_pct=10.0, draft_len=...) -->
# 3. Quantize the 8B to INT4 (half a byte per weight; then add a 16-bit scale per 32
#    weights, as Exercise 17-8's q4_0). Which ceiling does the memory roof allow, and how close
#    does the decode intensity get to the ridge?
# 4. **Predict, then move.** Compare the cheat sheet on the H100 and the H200. Predict which
#    rows change and which cannot, then compare the two printouts.
# 5. Redo the levers table's "does not fit one card" row for TP = 8 instead of 4: the weights
#    per GPU, and the decode step from 17 §7.

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
short_m, long_m, gap = ch17.SPEC_DRAFT_LEN, 8, 0.5
spec_controls = {c.name: c for c in widgets.SpeculativeLeverPanel.controls}
a_ctl, m_ctl = spec_controls["acceptance"], spec_controls["draft_len"]
alphas = [round(a_ctl.min + i * a_ctl.step, 2)
          for i in range(round((a_ctl.max - a_ctl.min) / a_ctl.step) + 1)]


def pair(a):
    """Tokens per target pass at the chapter's draft length and at the long one (explorer)."""
    return (spec_panel.at(acceptance=a).numbers["expected_tokens"],
            spec_panel.at(draft_len=8, acceptance=a).numbers["expected_tokens"])


# the reader's scan along the acceptance slider
first = next(a for a in alphas if pair(a)[1] - pair(a)[0] >= gap)
prev = alphas[alphas.index(first) - 1]


def extra(a):
    return calc.speculative_expected_tokens(a, long_m) - calc.speculative_expected_tokens(a, short_m)


lo, hi = 0.0, 1.0
for _ in range(60):                      # bisection: extra() grows with alpha
    mid = (lo + hi) / 2
    lo, hi = (mid, hi) if extra(mid) < gap else (lo, mid)
answer(f"""The extra tokens of $m = {long_m}$ over $m = {short_m}$ are
$\\alpha^{{{short_m + 1}}} + \\dots + \\alpha^{{{long_m}}}$, which grows with $\\alpha$.
Stepping the acceptance slider with the draft length at {short_m} and then at {long_m}, the gap
first reaches {gap:g} tokens at $\\alpha$ = {first:.2f} ({pair(first)[0]:.2f} against
{pair(first)[1]:.2f} tokens per pass; at {prev:.2f} it is
{pair(prev)[1] - pair(prev)[0]:.3f}). Bisection puts the exact point at
$\\alpha \\approx$ {lo:.3f}. Below that rate the {long_m - short_m} extra guesses together add
less than {gap:g} tokens, because each is accepted only if every earlier one was: a long
draft pays only when the acceptance rate is high.""", title="Worked answer 1")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
cost = 10.0 / 100                        # the draft-cost slider's 10%: a tenth of a pass
lengths = range(int(m_ctl.min), int(m_ctl.max) + 1)
priced = {m: spec_panel.at(draft_cost_pct=10.0, draft_len=m).numbers for m in lengths}
best = max(priced, key=lambda m: priced[m]["speedup"])
free = {m: spec_panel.at(draft_len=m).numbers["speedup"] for m in lengths}
m0 = ch17.SPEC_DRAFT_LEN
answer(f"""A round now takes $1 + {cost:g}m$ target-pass times (the readout's verification pass
still costs {priced[m0]['verify_over_plain']:.2f} plain steps at batch
{spec_panel.defaults()['batch']}) and yields $\\mathbb{{E}}[X]$ tokens, so the explorer's
speed-up is $\\mathbb{{E}}[X]/(1 + {cost:g}m)$: {priced[m0]['speedup']:.2f}x at $m = {m0}$,
{priced[m0 - 1]['speedup']:.2f}x at $m = {m0 - 1}$, {priced[m0 + 1]['speedup']:.2f}x at
$m = {m0 + 1}$. The best draft length is $m$ = {best} ({priced[best]['speedup']:.2f}x), but
the curve is now flat near its top and falls beyond it, to
{priced[int(m_ctl.max)]['speedup']:.2f}x at $m = {int(m_ctl.max)}$, where a free draft would
give {free[int(m_ctl.max)]:.2f}x. Per pass, longer always looks better; per unit of time, each
extra guess has to pay for its own draft cost, and once $\\alpha^m$ is small it no longer
does.""", title="Worked answer 2")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
int4 = calc.quantization_ceiling(m8, hw, 0.5)
q4_bits = 4.5                            # q4_0: 4 bits a weight plus a 16-bit scale per 32
q4 = calc.quantization_ceiling(m8, hw, q4_bits / 8)
answer(f"""At half a byte per weight the 8B streams {int4['weight_bytes'] / units.GB:.0f} GB per
token: {int4['step_s'] / units.ms:.2f} ms, a ceiling of {int4['tokens_per_s']:.0f} tok/s
({int4['speedup']:.2f}x BF16). Counting q4_0's scales, {q4_bits:g} bits or
{q4_bits / 8:g} B per weight, it streams {q4['weight_bytes'] / units.GB:.1f} GB: a ceiling of
{q4['tokens_per_s']:.0f} tok/s, {q4['speedup']:.2f}x BF16. The intensity rises to
{int4['intensity_flop_per_byte']:.2f} FLOP/byte ({q4['intensity_flop_per_byte']:.2f} with the
scales), still about {calc.ridge_point(hw) / int4['intensity_flop_per_byte']:.0f}x below the
ridge of {calc.ridge_point(hw):.0f}: single-stream decode stays firmly memory-bound however small the
weights get.""", title="Worked answer 3")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
h100 = {r["quantity"]: r["value"] for r in calc.cheat_sheet(m8, specs.H100_SXM)}
h200 = {r["quantity"]: r["value"] for r in calc.cheat_sheet(m8, specs.H200_SXM)}
same = [q for q in h100 if h100[q] == h200[q]]
sweep100 = calc.memory_sweep_s(specs.H100_SXM)
sweep200 = calc.memory_sweep_s(specs.H200_SXM)
moved = [q for q in h100 if h100[q] != h200[q]]
answer(f"""For the 8B, {len(moved)} of {len(h100)} rows move: {", ".join(moved)}. The rows that
stay put depend only on the model or on the dense peak, which the two cards share:
{", ".join(same)}. The H200 has the same dense peak but more bandwidth and memory, so the
ridge falls (from {h100['ridge point']:.0f} to {h200['ridge point']:.0f} FLOP/byte), every
bandwidth-bound rate improves (decode steps and ceilings) and more sequences fit. One
bandwidth row gets worse: the full-HBM sweep rises from {sweep100 / units.ms:.1f} to
{sweep200 / units.ms:.1f} ms, because the larger memory takes longer to read even at the higher
bandwidth. A new card moves the rows set by bandwidth and memory, never
those fixed by the model's architecture, such as the KV bytes per token.""", title="Worked answer 4")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
row4 = next(r for r in calc.levers_table(m8, hw) if "tensor" in r["lever"])
row8 = next(r for r in calc.levers_table(m8, hw, tp=8) if "tensor" in r["lever"])
step4 = calc.tp_decode_step(specs.LLAMA_70B, hw, 4)
step8 = calc.tp_decode_step(specs.LLAMA_70B, hw, 8)
wide_tp = 8
answer(f"""At TP = {wide_tp} each GPU holds {row8['after'] / units.GB:.1f} GB of the 70B's
weights (TP = {ch17.TP}: {row4['after'] / units.GB:.0f} GB). The single-stream step becomes
{step8['step_s'] / units.ms:.2f} ms ({step8['read_s'] / units.ms:.2f} ms of reads plus
{step8['comm_s'] / units.ms:.2f} ms of collectives) against {step4['step_s'] / units.ms:.2f}
ms at TP = {ch17.TP}: twice the GPUs buy {step4['step_s'] / step8['step_s']:.2f}x, because the
collective floor does not shrink with the degree.""", title="Worked answer 5")

# %% [markdown]
# Previous: [17.9 Measuring it](17_09_measuring.ipynb); next:
# [Interview questions, worked](17_11_interview_questions.ipynb).
#
# > **What you can now compute**
# >
# > - The batch-1 decode ceiling for any bytes per weight, and its intensity against the ridge ([Exercise 17-8](../../exercises/ex17_8.ipynb))
# > - The expected tokens per target pass of speculative decoding for $\alpha$ and $m$ ([Exercise 17-9](../../exercises/ex17_9.ipynb))
# > - Whether a longer draft still pays once the draft's own cost is counted ([Exercise 17-9](../../exercises/ex17_9.ipynb))
# > - The batch an ITL target and KV memory allow, the starting point of the levers ([Exercise 17-10](../../exercises/ex17_10.ipynb))
# >
# > <details><summary>Assumptions this notebook made</summary>
# >
# > A decode step is the roofline's bound (reads at the
# > full HBM bandwidth, arithmetic at the dense BF16 peak), with no kernel or launch overhead;
# > the chapter's quantization keeps batch 1 and a short context, and the fuller model
# > quantizes the weights only (KV at two bytes, compute at the BF16 peak); the chapter's
# > speculative speed-up takes drafting and the wider pass as free and every draft token
# > accepted independently with one probability, while the fuller model charges each drafted
# > token a fixed share of a plain step; combined levers are priced on one roofline step; the
# > tables' rows are the chapter's arithmetic for the 8B and the 70B shapes on an H100 SXM.
# >
# > </details>
