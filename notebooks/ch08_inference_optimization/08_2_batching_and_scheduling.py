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
# # 8.2 Batching and scheduling
#
# **The question.** Running many requests together multiplies throughput, but it also changes
# when each user gets their tokens. How much does a batch save, what limits it, and how should
# a scheduler mix new prompts with requests that are already generating?
#
# The section has four parts: why batching saves memory reads (8.2.1), how requests join and
# leave a running batch (8.2.2), why a long prompt should be cut into chunks (8.2.3), and how
# a per-round token budget and pre-captured CUDA graphs shape each round (8.2.4). The running
# example is Qwen3-8B on one RTX PRO 6000 ([overview](08_0_overview.ipynb)).

# %%
from companion import calc, ledger, plots, specs, units, widgets
from companion.chapters import ch08, ch17
from companion.display import md
from companion.sim import scenarios, scheduler
from companion.sim.records_ch08 import CHAPTER_REPLAY_PROMPTS

model, hw = specs.QWEN3_8B, specs.RTX_PRO_6000
d_w = model.streamed_weight_bytes
k = calc.kv_bytes_per_token(model)
short_p, _ = ch08.CHAPTER_REQUEST_TYPES["Short conversation"]
long_p, _ = ch08.CHAPTER_REQUEST_TYPES["Long context"]

# %% [markdown]
# ## 8.2.1 One read of the weights, many rows of work
#
# In a matrix product $\mathbf{Y} = \mathbf{X}\mathbf{W}$ every element of the weight matrix
# $\mathbf{W}$ is multiplied with every row of $\mathbf{X}$. During decode each running request
# contributes one row (its newest token), so $b$ requests make a $b$-row $\mathbf{X}$. If
# $\mathbf{W}$ is read once per round, the work done per byte of weights grows with $b$:
#
# $$I_\text{weight} \approx \frac{2b}{s}\ \text{FLOP per byte}$$
#
# (two FLOPs per multiply-add, $s = 2$ bytes per weight in BF16; 8.2.1 writes $s_w$). Compare
# it with the card's ridge point, the intensity at which compute rather than bandwidth becomes
# the limit:

# %%
for b in (1, 4, 16, 64, 256):
    print(f"b = {b:3d}: {calc.weight_reuse_intensity(b):5.0f} FLOP per weight byte")
print(f"ridge point of the {hw.name}: {calc.ridge_point(hw):.0f} FLOP per byte")

# %% [markdown]
# Only the weights are shared. Attention still reads each request's own KV cache, which no
# other request can use, so the KV part of the reads does not shrink with batching.

# %% [markdown] jp-MarkdownHeadingCollapsed=true
# ### Sharing the base model across fine-tunes: LoRA
#
# Batching needs every row to use the same weights.
#
# <!-- fold: LoRA adapters: what one more fine-tune costs in memory and in reads -->

# %% [markdown]
# LoRA keeps the base weights fixed and adds
# to a projection $\mathbf{W}$ a low-rank correction $\mathbf{B}\mathbf{A}$ ($\mathbf{A}$ is
# $R \times d_\text{in}$, $\mathbf{B}$ is $d_\text{out} \times R$, for a rank $R$), so many
# tasks can share one base model, each with a small adapter of $R(d_\text{in} + d_\text{out})$
# values per adapted projection per layer. The base matrices
# stay shared across the whole batch; the adapter products are grouped by adapter, and
# requests spread over many adapters leave few rows per group.

# %%
adapter = calc.lora_adapter_bytes(model, 16, ("q", "v"))
adapters = calc.lora_adapter_bytes(model, 16, ("q", "v"), n_adapters=100)
contexts = 100 * calc.kv_bytes(model, long_p)
print(f"rank-16 adapter on Q and V: {adapter / units.MiB:.1f} MiB; 100 adapters "
      f"{adapters / units.GiB:.2f} GiB; matrix weights D_w {d_w / units.GiB:.1f} GiB")
print(f"100 independent 8K contexts: {contexts / units.GiB:.1f} GiB of KV")
plots.lora_capacity_figure(range(1, 101), adapter, calc.kv_bytes(model, long_p),
                           kv_budget_bytes=ch08.KV_BUDGET_BYTES, matrix_weight_bytes=d_w).show()

# %% [markdown]
# Many adapters fit easily; many contexts do not. How many *adapters* an instance can hold and
# how many *requests* it can serve at once are separate limits, and the second is KV.
#
# ### Bytes read per output token
#
# Let $D_w$ be the matrix weights read once per round, $L$ the context of each request (no
# sharing) and $k$ the KV bytes per token. One round of $b$ requests reads, in total and per
# output token,
#
# $$D(b, L) = D_w + bLk, \qquad d(b, L) = \frac{D_w}{b} + Lk.$$
#
# The first term of $d$ falls as $1/b$, the second does not move. They are equal where
# $bLk = D_w$; the smallest whole batch at which KV reads reach the weight read is
#
# $$b_\text{KV} = \left\lceil \frac{D_w}{Lk} \right\rceil.$$

# %%
batches = list(range(1, 129))
curves = {f"{L // 1024}K context": (calc.read_bytes_curve(d_w, batches, L, k), L * k)
          for L in (short_p, long_p)}
crossovers = {f"{L // 1024}K context": calc.kv_crossover_batch(d_w, L, k)
              for L in (short_p, long_p)}
for label, b_kv in crossovers.items():
    print(f"{label}: b_KV = {b_kv}")
plots.read_volume_figure(batches, curves, crossovers=crossovers).show()

# %% [markdown]
# On the log scale each doubling of the batch halves the weight term, so the curves bend down
# onto their KV floors; the 8K floor is four times higher, and its curve reaches it at a much
# smaller batch. A bigger batch also keeps more bytes resident at once: 64 short requests need
# the weights plus 64 contexts of KV.

# %%
resident = calc.batch_resident_bytes(model, 64, calc.held_tokens(short_p, 2))
print(f"64 short requests after one decode step: {resident / units.GB:.1f} GB resident "
      f"(weights + KV)")

# %% [markdown]
# ### From bytes to time: the decode roofline
#
# Let $F$ be the FLOPs of one request's decode step, $\pi$ the peak FLOP/s (8.2.1 writes
# $P$) and $\beta$ the bandwidth. A round cannot be faster than its compute or its reads:
#
# $$T_r \approx \max\left(\frac{bF}{\pi},\ \frac{D_w + bLk}{\beta}\right).$$
#
# Each added request adds $F/\pi$ of compute time and $Lk/\beta$ of read time. Only if the first
# is larger does compute ever catch up with the reads, at $b = (D_w/\beta)/(F/\pi - Lk/\beta)$.
# For Qwen3-8B on this card that needs a context shorter than a few hundred tokens:

# %%
print(f"compute per request exceeds its KV read time only below "
      f"L = {calc.compute_bound_context_tokens(model, hw):.0f} tokens")
for L in (256, short_p, long_p):
    b = calc.compute_catchup_batch(model, hw, L)
    print(f"L = {L:5d}: compute catches up with reads at "
          + ("no batch (reads grow faster)" if b == float("inf") else f"b = {b:,.0f}"))

# %% [markdown]
# At the chapter's contexts decode stays bound by memory reads at every batch. The roofline
# is a lower bound; measured rounds are slower. Experiment 8-1 timed decode rounds in the
# engine at four batches, and 8.2.2 fits a round-time model to its batch-1 rounds; the batch
# sweep (footnote 3) measured the client's mean output interval. All are drawn below, the
# measurements quoted, not computed.

# %%
curve = calc.decode_step_time_curve(model, hw, batches, short_p)
fitted = [calc.mixed_round_time_s(b, short_p, 0) for b in batches]
sweep = ch08.BATCH_SWEEP_MEASURED
plots.decode_step_figure(
    curve, fitted_s=fitted,
    measured_round={"batch": ch08.EXP81_BATCHES, "s": ch08.EXP81_ROUND_S,
                    "label": "Experiment 8-1: measured decode round (engine, 2K)"},
    measured_itl={"batch": sweep["batch"], "s": sweep["itl_s"],
                  "label": "batch sweep: measured mean output interval (client, 2K)"}).show()

# %% [markdown]
# The measured rounds sit far above the roofline and grow slowly with the batch: most of a
# small round is a nearly fixed overhead (kernels submitted one by one, host work; 8.6.3
# measures it), which a larger batch spreads over more tokens. The batch sweep's quoted
# endpoints (measurements, Qwen3-8B, 2K in, 256 out) are consistent with a simple timeline:
# if $b$ requests each take $\mathrm{TTFT} + (G-1)\,\mathrm{ITL}$ for $G$ outputs, they deliver
# about $G\,b / (\mathrm{TTFT} + (G-1)\,\mathrm{ITL})$ tokens per second.

# %%
print(f"{'batch':>5} {'measured tok/s':>15} {'TTFT':>8} {'ITL':>8} {'b G / T_request':>16}")
measured = widgets.chapter_batch_sweep()
for row in measured:
    print(f"{row['batch']:>5} {row['tokens_per_s']:>15,.0f} {row['ttft_s']:>7.3f}s "
          f"{row['itl_s'] / units.ms:>6.0f}ms {row['implied_tokens_per_s']:>16,.0f}")
print(f"batch 64 vs 1: throughput x{measured[1]['tokens_per_s'] / measured[0]['tokens_per_s']:.1f},"
      f" TTFT x{measured[1]['ttft_s'] / measured[0]['ttft_s']:.0f}, "
      f"interval x{measured[1]['itl_s'] / measured[0]['itl_s']:.1f}")

# %% [markdown]
# Throughput rises many times over, but the first token now waits for 64 prefills, and every
# interval is longer. An online service that also waits to *fill* a batch adds that wait to
# the TTFT as well.
#
# ### Weights from a separate fast memory (Figure 8-4)
#
# Suppose the weights came from a separate read-only memory fast enough to keep up, so HBM
# delivers only the KV: its read per output token drops from $D_w/b + Lk$ to $Lk$. The gap
# between the curves is the weight read batching used to amortize; it shrinks as $1/b$, so the
# bigger the batch, the less there is to win.

# %%
reads_hbm = calc.read_bytes_curve(d_w, batches, long_p, k)
reads_rom = calc.read_bytes_curve(d_w, batches, long_p, k, weights_in_hbm=False)
print(f"{'batch':>5} {'weights in HBM':>15} {'weights in ROM':>15}   (GiB read per output token)")
for b in (1, 16, 64):
    print(f"{b:>5} {reads_hbm[b - 1] / units.GiB:>15.2f} {reads_rom[b - 1] / units.GiB:>15.3f}")
plots.rom_weights_figure(batches, reads_hbm, reads_rom).show()

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
rom_added_s = long_p * k / hw.mem_bw_bytes_per_s   # what one more 8K request adds to a round
rom_itl = ch08.EXERCISE_8_2_ITL_TARGET_S
md(f"""In ROM a round takes $\\max(bF/\\pi,\\ bLk/\\beta)$: both terms grow in step with $b$,
so no crossover in $b$ exists; the context alone picks the bound, and tokens per second stop
growing with the batch. Memory and latency bound it instead: at 8K each request adds
{rom_added_s / units.ms:.2f} ms to the round, so a {rom_itl / units.ms:g} ms interval allows
{int(rom_itl // rom_added_s)} requests, but the KV pool holds
{calc.max_concurrent(ch08.KV_BUDGET_BYTES, model, long_p, ch08.OUTPUT_TOKENS)}.""")

# %% [markdown]
# ### Explorer: batch, context, hardware
#
# The left plot is Figures 8-3/8-4 for one context; the right one is the decode roofline.
# The measured points appear only at the setting they were measured in (Qwen3-8B, RTX PRO 6000,
# 2K, BF16 KV, weights in HBM).

# %% tags=["nbval-ignore-output"]
decode = widgets.DecodeBatchPanel()
decode.show()

# %%
for key, value in decode.at().numbers.items():
    print(f"{key:30} {value:,.3f}" if isinstance(value, float) else f"{key:30} {value}")

# %% [markdown] jp-MarkdownHeadingCollapsed=true
# ### The same explorer with a mixture of experts
#
# The model menu also lists the shelf of real `config.json` files (each readout ends with the
# file's source), and the text box takes your own, as a path or pasted text.
#
# <!-- fold: the same explorer with a mixture of experts, and a prediction to make -->

# %% [markdown]
# Pick an MoE such
# as Qwen3-30B-A3B. One token passes through only $r$ of a layer's $E$ experts, but a decode
# step serves the whole batch, and the batch needs every expert any of its tokens chose. If
# routing is uniform, $b$ tokens leave an expert unchosen with probability $(1-r/E)^b$, so a
# layer streams $E\,(1-(1-r/E)^b)$ experts. While that count still grows almost in step with
# $b$, each added request drags in weights of its own and the read per token barely falls; once
# nearly every expert is touched, the MoE amortizes like a dense model and its curve bends
# down onto the grey one (every expert read). A real router prefers some experts, so a batch
# touches fewer distinct ones than the uniform count: the MoE reads less than this curve shows,
# and the full-amortization regime starts at a larger batch.
#
# **Predict, then move.** Select "shelf: Qwen3-30B-A3B" and move the batch from 1 to 8. A
# dense model would now read an eighth of the weights per output token. Guess the MoE's factor
# first, then read it off the readout; then try 64.

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
from companion.display import answer  # noqa: E402  (this cell stands alone for easy merges)

moe_panel = widgets.DecodeBatchPanel(model="qwen3-30b-a3b")  # a second panel: the one
moe_at = {b: moe_panel.update(batch=b).numbers for b in (1, 8, 64)}  # above stays as it is
answer(f"At a batch of 8 the step touches {moe_at[8]['experts_touched']:.1f} experts per "
       f"layer instead of the {moe_at[1]['experts_touched']:.0f} one token uses, so it streams {moe_at[8]['weights_read_per_step_GiB']:.1f} GiB of "
       f"weights where one token needed {moe_at[1]['weights_read_per_step_GiB']:.1f} GiB. The "
       f"weight read per output token falls only {moe_at[8]['weight_read_cut_vs_b1']:.1f}x, "
       f"not 8x. At 64 the batch touches {moe_at[64]['experts_touched']:.0f} experts per layer, "
       f"close to all of them: from there on every added request shares weights that are "
       f"already read, and the cut, {moe_at[64]['weight_read_cut_vs_b1']:.0f}x so far, grows "
       f"almost as fast as the batch, as a dense model's does.",
       title="Worked answer: an MoE's batch")

# %% [markdown]
# ## 8.2.2 Fixed batches and continuous batching
#
# A batch is made of *slots*, one row each. With **fixed (static) batching** a group of
# requests starts together and the next group waits until the whole group has finished, so a
# slot freed by a short answer idles until the longest answer ends. **Continuous batching**
# re-forms the batch at every round boundary: a freed slot takes the next waiting request
# immediately. The catch: the newcomer's prompt must be prefilled, and if it runs in the same
# round as the others' decode steps, that round (and so their output interval) becomes as long
# as the prefill.
#
# The chapter's example has four requests and at most two running:

# %%
for r in scenarios.chapter_8_2_2_requests():
    print(f"{r.id}: arrives at {r.arrival_s / units.ms:4.0f} ms, prompt {r.prompt_tokens:5,} "
          f"tokens, output {r.output_tokens} tokens")

# %% [markdown]
# A round's time is modelled as a fixed part, plus a cost per new token, plus a cost per
# causal query-key pair (a new token on $h$ cached tokens attends to $h + 1$ keys). The
# chapter fits the three numbers to Experiment 8-1's batch-1 rounds; they reproduce its decode
# round and its prefill, and the weight read alone accounts for part of the fixed cost:

# %%
print(f"fixed {ch08.ROUND_FIXED_S / units.ms:.2f} ms + {ch08.ROUND_PER_TOKEN_S / units.us:.1f} us "
      f"per token + {ch08.ROUND_PER_PAIR_S / units.ns:.0f} ns per pair")
print(f"one 2K decode round: {calc.mixed_round_time_s(1, short_p, 0) / units.ms:.2f} ms")
print(f"a 2K prefill alone:  {calc.mixed_round_time_s(0, 0, short_p) / units.ms:.1f} ms")
print(f"reading D_w once at {hw.mem_bw_bytes_per_s / units.GB:,.0f} GB/s: "
      f"{d_w / hw.mem_bw_bytes_per_s / units.ms:.1f} ms")

# %% [markdown]
# No closed form gives the schedules: the companion's scheduler simulator
# (`companion.sim.scheduler`) runs them round by round. Requests join and leave only at round
# boundaries, in arrival order; the round that finishes a prompt emits its first token.
# **Chunked prefill** (third chart) splits r2's 8192-token prompt into 2048-token chunks, and
# each round first gives every decoding request its step, then fills the rest of a 4096-token
# budget with prompt chunks.

# %%
runs = widgets.chapter_schedules()
for name, result in runs.items():
    print(f"{name:10} total {result.makespan_s / units.ms:5.0f} ms, longest output interval "
          f"{result.max_itl_s / units.ms:4.0f} ms, {result.n_rounds} rounds")
static, continuous = runs["static"], runs["continuous"]
print(f"continuous vs fixed: total time {1 - continuous.makespan_s / static.makespan_s:.0%} "
      f"shorter, longest interval {continuous.max_itl_s / static.max_itl_s:.0f}x longer")
plots.schedule_gantt_figure({"fixed batching": static, "continuous batching": continuous,
                             "continuous + chunked prefill (2048-token chunks, budget 4096)":
                             runs["chunked"]}).show()

# %% [markdown]
# In the fixed schedule r2 and r3 wait for r0 to finish its eight tokens. Continuously, r2
# takes r1's slot at once, but its whole 8K prefill lands in one round with r0's next decode
# step: r0 waits hundreds of milliseconds for one token. Chunking spreads that prefill over
# several rounds, each of which also advances r0, so r0's worst wait shrinks, at the price of
# a little more total time than the continuous schedule (each extra round pays the fixed cost
# again).
#
# Every round of a schedule is inspectable; here is the chunked one:

# %%
print(runs["chunked"].summary())

# %% [markdown]
# ### Explorer: policy, chunk size, token budget
#
# The upper chart is the Gantt timeline of the chosen policy; the lower one places each
# schedule by its longest output interval and its total time, with a line through chunked
# prefill at several chunk sizes (for the chosen budget). Smaller chunks move left (shorter
# stalls) and up (more rounds).

# %% tags=["nbval-ignore-output"]
schedule = widgets.SchedulePanel()
schedule.show()

# %%
for key, value in schedule.at().numbers.items():
    print(f"{key:36} {value:,.1f}" if isinstance(value, float) else f"{key:36} {value}")

# %% [markdown]
# ## 8.2.3 Why chunks of the same size get slower
#
# A chunk of $c$ new tokens on $h$ cached ones: the $i$-th new token attends to $h + i$ keys,
# so the chunk has
#
# $$\text{pairs}(c, h) = \sum_{i=1}^{c} (h + i) = ch + \frac{c(c+1)}{2}$$
#
# causal query-key pairs. Figure 8-8 draws them as area: a rectangle for the old context
# (it widens as $h$ grows) and a triangle inside the chunk (fixed for a fixed $c$). The two
# panels are the first and the last 512-token chunk of an 8K prompt, on one shared key axis.

# %%
chunks = calc.prefill_chunks(long_p, 512)
pairs = calc.chunk_pair_series(long_p, 512)
first_h, last_h = chunks[0][1], chunks[-1][1]
print(f"first chunk (h = {first_h}): {pairs[0]:,} pairs; last chunk (h = {last_h:,}): "
      f"{pairs[-1]:,} pairs, {pairs[-1] / pairs[0]:.0f}x")
plots.pair_area_figure(512, [first_h, last_h], [pairs[0], pairs[-1]]).show()

# %% [markdown]
# Attention is only part of a chunk's work. The projections and the FFN cost the same for
# every 512-token chunk, so the whole chunk's FLOPs grow far less than its pairs. The chapter
# also quotes the measured median chunk times (footnote 6):

# %%
flops = calc.chunk_flops_series(model, long_p, 512)
print(f"layer matrices + attention: {flops[0] / units.TFLOP:.2f} -> "
      f"{flops[-1] / units.TFLOP:.2f} TFLOP, +{(flops[-1] / flops[0] - 1) * 100:.0f}%")
print(f"measured median chunk time: {ch08.FIRST_CHUNK_MEDIAN_S / units.ms:.2f} -> "
      f"{ch08.LAST_CHUNK_MEDIAN_S / units.ms:.2f} ms, "
      f"+{(ch08.LAST_CHUNK_MEDIAN_S / ch08.FIRST_CHUNK_MEDIAN_S - 1) * 100:.0f}%")
rounds = [calc.mixed_round_time_s(0, 0, c, h) for c, h in chunks]
plots.chunk_cost_figure(pairs, rounds,
                        title="An 8K prompt in 512-token chunks: pairs and modelled round "
                              "time (8.2.2's model)").show()

# %% [markdown]
# (The round model of 8.2.2 includes the per-round fixed overhead, so its chunk times lie above
# the measured CUDA-event medians; its growth from chunk to chunk comes from the pairs alone.)
#
# Smaller chunks are not free either: every chunk runs the whole model, so every chunk reads
# all the weights again. Take 256 prompt tokens: run as one chunk, each layer's FFN weights are
# read once; run as two halves of 128, they are read twice:

# %%
ffn = calc.ffn_weight_bytes_per_layer(model)
print(f"one layer's FFN: {ffn / units.MiB:.0f} MiB; read as two chunks: "
      f"{calc.split_weight_read_bytes(ffn, 256, 128) / units.MiB:.0f} MiB")

# %% [markdown]
# So a scheduler should pick the *largest* chunk that still keeps the running requests'
# intervals within their target.
#
# ### Explorer: chunk size and running decodes

# %% tags=["nbval-ignore-output"]
chunked = widgets.ChunkedPrefillPanel()
chunked.show()

# %%
for key, value in chunked.at().numbers.items():
    print(f"{key:24} {value:,.2f}" if isinstance(value, float) else f"{key:24} {value:,}")

# %% [markdown]
# ## 8.2.4 Token budget and CUDA-graph padding
#
# A scheduler caps the new tokens per round: the **token budget** (8.2.2's chunked example used
# 4096). The GPU then runs a matrix of that many rows, but not necessarily *exactly* that many:
# to avoid per-kernel launch overhead, engines replay **CUDA graphs** captured in advance for a
# few fixed row counts, and pad a round up to the next captured size. With graphs for 16 and 32
# rows:

# %%
shapes = ch08.CAPTURED_SHAPES
for rows in (16, 17, 18):
    print(f"{rows} rows run the {calc.padded_rows(rows, shapes)}-row graph "
          f"({calc.padding_rows(rows, shapes)} rows of padding)")
needed = list(range(1, 41))
plots.graph_padding_figure(needed, [calc.padded_rows(r, shapes) for r in needed],
                           captured_shapes=shapes).show()

# %% [markdown]
# Cutting a round from 18 to 17 rows saves nothing; from 17 to 16 it halves the rows. A graph
# for 17 rows would remove the padding, but every captured graph costs capture time and keeps
# its buffers for good (the $M_u$ of 8.1.2).
#
# **Choosing the budget in two steps.** First, the permitted output interval bounds how long a
# round may run. Second, the round model turns that time into new tokens, given how many
# requests decode in the round, their context, and how much of the prefilling prompt is
# already cached (longer history, more pairs per new token, fewer tokens):
#
# $$t_\text{fixed} + t_\text{token}(b + c) + t_\text{pair}\left(b(L+1) + ch + \tfrac{c(c+1)}{2}
# \right) \le \text{ITL target}.$$

# %%
targets = [t * units.ms for t in range(27, 301, 3)]
by_history = {f"h = {h:,} cached": [calc.token_budget_for_itl(t, 1, short_p, h) for t in targets]
              for h in (0, 4096, 7680)}
for h in (0, 4096, 7680):    # the method at a 60 ms target; move the target in the explorer
    print(f"60 ms target, one 2K decode, h = {h:5,}: "
          f"{calc.token_budget_for_itl(60 * units.ms, 1, short_p, h):,} new tokens per round")
plots.token_budget_figure(targets, by_history).show()

# %% [markdown] jp-MarkdownHeadingCollapsed=true
# ### The budget trade on staggered arrivals (simulated)
#
# The chapter replays six requests arriving 80 ms apart and raises the budget from 512 to
# 8192 tokens: later arrivals queue less and less, while the longest output interval of the
# running requests grows.
#
# <!-- fold: the budget trade when requests arrive one after another, simulated -->

# %% [markdown]
# The chapter does not print the replay's prompts, so the sweep below runs the **built
# replay** the [ledger](../ledger.ipynb) checks 8.2.4 against (the same one Exercise 8-2's
# seed 0 uses): five prompts of about 1,635 tokens and one of 4,258, 64 outputs each, chunk =
# budget, on 8.2.2's round model, its prompts chosen so that its 8192 row reproduces the
# chapter's. It is simulated, not the chapter's measurement. Call **prefill load** the time one
# prompt's prefill takes alone, in rounds of the budget, over the gap between arrivals: above
# 1, prompts arrive faster than prefill clears them. The table gives its mean over the five
# prompts a later arrival can queue behind, and the same load for the explorer's default of
# 4096-token prompts.

# %%
def prefill_load(prompt_tokens, budget, gap_s):
    """One prompt's prefill alone, in rounds of ``budget`` tokens (8.2.2's model), over the gap."""
    return sum(calc.mixed_round_time_s(0, 0, c, h)
               for c, h in calc.prefill_chunks(prompt_tokens, budget)) / gap_s


gap = ch08.REPLAY_INTERARRIVAL_S
built = CHAPTER_REPLAY_PROMPTS
replay_rows = scenarios.token_budget_sweep(widgets.SWEEP_BUDGETS, interarrival_s=gap,
                                     prompt_tokens=list(built))
mean_load = {b: sum(prefill_load(n, b, gap) for n in built[:-1]) / (len(built) - 1)
             for b in widgets.SWEEP_BUDGETS}
load_4096 = {b: prefill_load(4096, b, gap) for b in widgets.SWEEP_BUDGETS}
print(f"built replay, arrivals every {gap / units.ms:.0f} ms; prompts {built}")
print(f"{'budget':>7} {'mean load':>10} {'longest interval':>17} {'queueing':>10} "
      f"{'load, 4096-token prompts':>25}")
for b, row in zip(widgets.SWEEP_BUDGETS, replay_rows):
    print(f"{b:>7,} {mean_load[b]:>10.3f} {row['max_itl_s'] / units.ms:>14.1f} ms "
          f"{row['queue_later_mean_s'] / units.ms:>7.2f} ms {load_4096[b]:>25.2f}")
plots.budget_sweep_figure([r["token_budget"] for r in replay_rows], [r["max_itl_s"] for r in replay_rows],
                          [r["queue_later_mean_s"] for r in replay_rows],
                          interval_target_s=ch08.EXERCISE_8_2_ITL_TARGET_S,
                          title=f"Token budget sweep, the built replay, requests "
                                f"{gap / units.ms:.0f} ms apart (simulated)").show()

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
printed = {e.id: e.printed for e in ledger.entries() if e.section == "8.2.4"}
first_ok = next(i for i, b in enumerate(widgets.SWEEP_BUDGETS) if mean_load[b] < 1)
b_ok = widgets.SWEEP_BUDGETS[first_ok]
md(f"""**The chapter's endpoints.** 8.2.4 prints later arrivals queueing
{printed["8.2.4/replay-512-queue-built"]} ms at 512 tokens and under
{printed["8.2.4/replay-8192-queue-built"]} ms at 8192, and a longest interval of
{printed["8.2.4/replay-512-longest-interval-floor"]} ms at 512 and
{printed["8.2.4/replay-8192-longest-interval-built"]} ms at 8192. The built replay gives
{replay_rows[0]['queue_later_mean_s'] / units.ms:.1f} ms and
{replay_rows[-1]['queue_later_mean_s'] / units.ms:.2f} ms, and
{replay_rows[0]['max_itl_s'] / units.ms:.1f} ms and {replay_rows[-1]['max_itl_s'] / units.ms:.1f} ms: the
8192 pair holds, while the 512 pair does not come out of the round model at all (the ledger's
notes on `8.2.4/replay-512-*` say why: a round carrying a 512-token chunk beside a decode step
already lasts longer than the printed interval).

**The trade.** At {widgets.SWEEP_BUDGETS[0]} tokens the mean load is
{mean_load[widgets.SWEEP_BUDGETS[0]]:.2f}: each prompt pays the fixed round cost in so many
rounds that its prefill outlasts the gap, and later arrivals wait behind a backlog. From
{b_ok:,} tokens on the load is just under 1 ({mean_load[b_ok]:.3f}: the prompts are sized to
fill the {gap / units.ms:.0f} ms gap with one prefill round), so each later arrival waits only
for the round in progress, and every further token only lengthens the longest interval
({replay_rows[first_ok]['max_itl_s'] / units.ms:.0f} to {replay_rows[-1]['max_itl_s'] / units.ms:.0f} ms).
The explorer's default prompts are longer: 4096 tokens take more than one gap to prefill at
every budget (load {min(load_4096.values()):.2f} to {max(load_4096.values()):.2f} at
{gap / units.ms:.0f} ms), so there its queueing column measures a growing backlog, not a price
the budget trades; space the arrivals further apart to see the trade again.

The two rules bound one feasible range: the load sets its bottom, the smallest budget whose
load stays below 1, and 8.2.3's interval target its top, the largest chunk whose rounds keep
the intervals within target. Any budget in between works; 8.2.3's choice, the top end, reads
the weights least often. When the bottom lies above the top the range is empty: no budget
keeps up within the target, and only more capacity or a looser target does.""")

# %% [markdown]
# ### Explorers: the token budget
#
# First, the closed form: from a permitted interval to a budget, with or without graph
# padding. Second, the simulated sweep: change the arrivals and the request sizes and watch
# which budget keeps the longest interval under the target, and which one empties the queue
# fastest.

# %% tags=["nbval-ignore-output"]
budget = widgets.TokenBudgetPanel()
budget.show()

# %%
for key, value in budget.at().numbers.items():
    print(f"{key:16} {value:,.2f}" if isinstance(value, float) else f"{key:16} {value:,}")

# %% tags=["nbval-ignore-output"]
budget_sweep = widgets.BudgetSweepPanel()
budget_sweep.show()

# %%
sweep_now = budget_sweep.at().numbers
print(f"{'budget':>7} {'prefill load':>13} {'longest interval (ms)':>22} {'queueing (ms)':>14}")
for b in widgets.SWEEP_BUDGETS:
    print(f"{b:>7,} {sweep_now[f'prefill_load@{b}']:>13.2f} "
          f"{sweep_now[f'max_itl_ms@{b}']:>22.1f} {sweep_now[f'queue_mean_ms@{b}']:>14.0f}")
print(f"largest within target {sweep_now['largest_budget_within_target']:,}, least queueing "
      f"{sweep_now['budget_with_least_queueing']:,}")

# %% [markdown]
# ## Where this model breaks: the batch-1 round fit
#
# No round beats reading its bytes, KV included, yet the batch-1 fit, stretched to big
# batches and long contexts, predicts rounds that do (the batch explorer's *8.2.2's round
# fit* menu draws both).

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the table below
from companion import tables

f_ctl = {c.name: c for c in decode.controls}
f_rows = []
for f_b, f_L in ((f_ctl["batch"].default, short_p), (f_ctl["batch"].max,
                                                    f_ctl["context_tokens"].max)):
    f_r = calc.floored_round_time(model, hw, f_b, f_L)
    f_kv = f_b * f_L * k
    f_rows.append((f"b = {f_b}, {f_L:,} tokens" + (" (the chapter)" if f_L == short_p else ""),
                   f"{f_kv / units.GiB:,.1f} GiB"
                   + (f" (over the {hw.mem_bytes / units.GB:.0f} GB card)"
                      if f_kv > hw.mem_bytes else ""),
                   f"{f_r['fit_s'] / units.ms:,.1f} ms", f"{f_r['floored_s'] / units.ms:,.1f} ms",
                   f"{f_r['floored_s'] / f_r['fit_s']:.1f}"))
md(tables.markdown_table(("round of", "KV", "chapter's model (fit)",
                          "fuller model (floored)", "fuller / chapter"), f_rows))

# %% [markdown] jp-MarkdownHeadingCollapsed=true
# #### In detail
#
# Both simplifications, priced.
#
# <!-- fold: the fuller model, its numbers and where it parts from the chapter's -->

# %% [markdown]
# Two of this section's models are simpler than a real round, and the explorers reach the
# settings where that shows.
#
# - **Weights only.** $I_\text{weight} = 2b/s$ counts the weight reads alone, so it reaches
#   the card's ridge at a batch of a few hundred. A decode round also reads every request's KV.
#   With it counted, the round's intensity is $bF/(D_w + bLk)$, which can never exceed
#   $F/(Lk)$ however large the batch (`step_intensity` in the batch explorer's readout).
# - **The round fit.** 8.2.2's fit comes from batch-1 rounds at one context. Each decode row
#   adds $t_\text{token} + t_\text{pair}(L + 1)$ to it, while reading that row's KV at the
#   card's full bandwidth takes $Lk/\beta$, several times more. The fit starts well above the
#   roofline (its fixed part is larger than one weight read) but climbs more slowly, so past
#   some batch it predicts a round faster than the card can read the round's bytes. No real
#   round is that fast: `calc.floored_round_time` takes the larger of the fit and the roofline
#   of the same pass (weights, every request's KV, the FLOPs of its rows and attention pairs,
#   all at the card's peak), and `calc.fit_undercut_batch` finds where the two cross. The batch
#   explorer's "8.2.2's round fit" menu draws both at any context; the token-budget explorer's
#   "round priced by" menu prices the budget with the floor.

# %%
ridge = calc.ridge_point(hw)
print(f"{'batch':>5} {'I_weight':>9} {'I_step, 2K':>11} {'I_step, 8K':>11}   (ridge {ridge:.0f} "
      f"FLOP/byte)")
for b in (1, 16, 64, 256):
    i_step = {L: decode.at(batch=b, context_tokens=L).numbers["step_intensity"]
              for L in (short_p, long_p)}
    print(f"{b:>5} {calc.weight_reuse_intensity(b):>9.0f} {i_step[short_p]:>11.1f} "
          f"{i_step[long_p]:>11.1f}")

# %%
batch_max = max(c.max for c in decode.controls if c.name == "batch")
ctx_max = max(c.max for c in decode.controls if c.name == "context_tokens")
print(f"{'context':>8} {'fit < roofline from b':>22} {'b':>4} {'fit':>9} {'roofline':>10} "
      f"{'floored':>9}")
fit_rows, undercut = {}, {}
for L in (short_p, long_p, 32768, ctx_max):
    undercut[L] = calc.fit_undercut_batch(model, hw, L)
    for b in (64, batch_max):
        fit_rows[L, b] = r = calc.floored_round_time(model, hw, b, L)
        print(f"{L:>8,} {undercut[L]:>22,.0f} {b:>4} {r['fit_s'] / units.ms:>6.1f} ms "
              f"{r['roofline_s'] / units.ms:>7.1f} ms {r['floored_s'] / units.ms:>6.1f} ms"
              + ("  *" if b * L * k + d_w > hw.mem_bytes else ""))
print(f"* weights and KV exceed the card's {hw.mem_bytes / units.GB:.0f} GB: a priced formula, "
      "not a state the card can run")
print("\nExperiment 8-1 at 2K, where the fit was made:")
for b, measured in zip(ch08.EXP81_BATCHES, ch08.EXP81_ROUND_S):
    print(f"  b = {b:2d}: measured {measured / units.ms:.2f} ms, fit "
          f"{calc.mixed_round_time_s(b, short_p, 0) / units.ms:.2f} ms, roofline "
          f"{decode.at(batch=b).numbers['bound_step_ms']:.2f} ms")

# %%
b_controls = {c.name: c for c in budget.controls}
corner = dict(decode_requests=b_controls["decode_requests"].max,
              context_tokens=b_controls["context_tokens"].max)
target_ms = b_controls["itl_target_ms"].default
corner_label = (f"{corner['decode_requests']} decodes on {corner['context_tokens']:,} "
                f"tokens")
budget_settings = {"the chapter's setting": dict(),
                   f"{corner_label}, {target_ms:g} ms": corner,
                   f"{corner_label}, {b_controls['itl_target_ms'].max:g} ms":
                   dict(corner, itl_target_ms=b_controls["itl_target_ms"].max)}
budget_rows = {label: budget.at(**kw).numbers for label, kw in budget_settings.items()}
print(f"{'setting':40} {'budget by the fit':>18} {'floored':>8}")
for label, n in budget_rows.items():
    print(f"{label:40} {n['fit_token_budget']:>18,} {n['floored_token_budget']:>8,}")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
at_max = fit_rows[short_p, batch_max]
far = fit_rows[ctx_max, batch_max]
chapter_b, worst_b = (budget_rows[k] for k in list(budget_settings)[:2])
corner_kv = corner['decode_requests'] * corner['context_tokens'] * k
rel = [abs(calc.mixed_round_time_s(b, short_p, 0) / t - 1)
       for b, t in zip(ch08.EXP81_BATCHES, ch08.EXP81_ROUND_S)]
md(f"""> **Where this model breaks: the round fit and the weight-only intensity.** Where the fit
> was made (2K, batches up to {ch08.EXP81_BATCHES[-1]}) it is sound: it stays within
> {max(rel):.0%} of Experiment 8-1's measured rounds and above the roofline, so the floored
> model changes nothing at the chapter's settings, and the token budget at the chapter's
> setting is {chapter_b['fit_token_budget']} tokens either way. Extrapolated, it breaks: at 2K
> the fit falls below the roofline from b = {undercut[short_p]:.0f}, at 8K from
> {undercut[long_p]:.0f}, at 32K from {undercut[32768]:.0f}. At the batch explorer's extremes
> ({batch_max} requests) it claims {at_max['fit_s'] / units.ms:.1f} ms where the 2K round needs
> at least {at_max['floored_s'] / units.ms:.1f} ms, and {far['fit_s'] / units.ms:.0f} ms where
> {ctx_max:,}-token contexts need {far['floored_s']:.1f} s (a batch whose KV,
> {batch_max * ctx_max * k / units.TiB:.1f} TiB, no card holds: the bound of the formula,
> not of a server). The token-budget
> explorer's corner, {b_controls['decode_requests'].max} decodes on
> {b_controls['context_tokens'].max:,}-token contexts ({corner_kv / units.GiB:,.0f} GiB of KV,
> more than the card's {hw.mem_bytes / units.GB:.0f} GB, so it too is a priced formula, not a
> reachable state), gets a budget of
> {worst_b['fit_token_budget']} tokens from the fit at a {target_ms:g} ms target, but their KV
> alone takes longer than that to read, so the floored budget is
> {worst_b['floored_token_budget']}. The weight-only intensity misleads the same way: at
> {batch_max} requests it reads {calc.weight_reuse_intensity(batch_max):.0f} FLOP per byte, but
> a 2K decode round with its KV reaches only
> {decode.at(batch=batch_max).numbers['step_intensity']:.0f}, and no batch takes it past
> $F/(Lk)$ = {calc.matrix_flops(model, 1, include_lm_head=True) / (short_p * k):.0f}, far below
> the ridge of {ridge:.0f}. Use the fit for batch-1-like rounds on short
> contexts; at large batches and long contexts the KV reads set the round.""")

# %% [markdown]
# ## Chapter says / companion computes
#
# Every number of 8.2 that follows from stated inputs, recomputed (`*`: see the entry's note in
# the [ledger](../ledger.ipynb)). Measurements that nothing derives (the batch sweep, the chunk
# medians) are inputs, not entries.

# %%
ledger.show("8.2")

# %% [markdown]
# ## Try this
#
# 1. **Predict, then move.** In the batch explorer, switch the context to 8K. Will
#    $b_\text{KV}$ move up or down, and by roughly what factor? Move the slider and compare, then
#    check how many 8K requests the 12 GiB pool admits: does memory or the read volume stop the
#    batch first?
#    <!-- states: decode(context_tokens=8192) -->
# 2. Serve the weights from ROM. Does a bigger batch still cut the HBM bytes per output token?
#    Then shorten the context to 128 tokens and push the batch to 256: which roofline term wins?
#    <!-- states: decode(weights_in_hbm=False); decode(weights_in_hbm=False, context_tokens=128, batch=256) -->
# 3. Try the H100 SXM with the 70B shape. Where does the ridge point move, and does decode ever
#    become compute-bound at a 2K context?
#    <!-- states: decode(model=specs.LLAMA_70B.name, hardware=specs.H100_SXM.name) -->
# 4. **Predict, then move.** In the schedule explorer, shrink the chunk to 512 tokens. Predict
#    what happens to r0's longest interval and to the total time before you move it. Then raise
#    the budget to 16384 with 8192-token chunks: which policy has chunked prefill turned into?
#    <!-- states: schedule(chunk_tokens=512); schedule(chunk_tokens=8192, token_budget=16384) -->
# 5. Let up to four requests run at once. Does fixed batching still lose to continuous?
#    <!-- states: schedule(max_running=4) -->
# 6. With graphs captured for every power of two, find a permitted interval where a slightly
#    longer target adds no row at all, and one where a small step doubles the rows executed.
#    <!-- states: budget(graphs="pow2"); budget(graphs="pow2", itl_target_ms=...) -->
# 7. **Predict, then move.** In the sweep explorer, space the arrivals 400 ms apart. Will the
#    budget still matter? Write down your guess, then move the arrival slider.
#    <!-- states: budget_sweep(interarrival_ms=400.0) -->

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
from companion.display import answer, md

two_k = decode.at().numbers
eight_k = decode.at(context_tokens=8192).numbers
answer(f"""$b_\\text{{KV}} = \\lceil D_w/(Lk)\\rceil$ falls as the context grows: from
{two_k['b_KV']} at 2K to {eight_k['b_KV']} at 8K, about a quarter, because four times the context
means four times the KV per request. The pool admits {eight_k['requests_fit_12GiB']} requests of
{long_p:,} + 256 tokens, so at 8K memory stops the batch
{'before' if eight_k['requests_fit_12GiB'] < eight_k['b_KV'] else 'after'} the KV reads reach
the weight read.""", title="Worked answer 1")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
rom = decode.at(weights_in_hbm=False).numbers
rom_64 = decode.at(weights_in_hbm=False, batch=64).numbers
tiny = decode.at(weights_in_hbm=False, context_tokens=128, batch=256).numbers
tiny_hbm = decode.at(context_tokens=128, batch=256).numbers
anywhere = tiny["compute_catchup_batch"] <= 1
answer(f"""No: with the weights in ROM, HBM delivers only each request's own KV, so the bytes
per output token stay at {rom['read_per_token_GiB']:.4f} GiB at the chapter's batch of 16 and
{rom_64['read_per_token_GiB']:.4f} GiB at batch 64. The batch still matters for how busy the
matrix units are. Still in ROM, at a 128-token context each request adds more compute time
than read time (that holds below about {tiny['compute_bound_below_context']:.0f} tokens), and
with no weight read left to share, compute wins
{'at any batch' if anywhere else f"from b = {tiny['compute_catchup_batch']:,.0f}"}: at batch
256 the roofline round is {tiny['bound']}-bound ({tiny['bound_step_ms']:.2f} ms). With the
weights back in HBM the same round would be {tiny_hbm['bound']}-bound
({tiny_hbm['bound_step_ms']:.2f} ms), since compute catches up only at
$b \\approx$ {tiny_hbm['compute_catchup_batch']:,.0f}. Taking the weights out of HBM removes
the one read a batch shares, so the context alone decides the bound, and short contexts turn
compute-bound.""", title="Worked answer 2")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
h100 = decode.at(model=specs.LLAMA_70B.name, hardware=specs.H100_SXM.name).numbers
catch = h100["compute_catchup_batch"]
w70, hbm = specs.LLAMA_70B.weight_bytes, specs.H100_SXM.mem_bytes
answer(f"""The H100 SXM's ridge point is {calc.ridge_point(specs.H100_SXM):.0f} FLOP per byte
against {calc.ridge_point(hw):.0f} for the RTX PRO 6000. The setting itself needs a word: the
70B shape's weights are {w70 / units.GB:.0f} GB in BF16, {w70 / hbm:.2f} times the H100's
{hbm / units.GB:.0f} GB of HBM, so it cannot run on one card; 17 §4 and §7 serve it with tensor
parallelism over {ch17.TP} GPUs ({w70 / ch17.TP / units.GB:.0f} GB of weights each), and
otherwise a smaller model is the choice. Splitting a step over GPUs divides its FLOPs and its
bytes alike, so the one-card roofline still says which roof binds on each GPU (the
all-reduces aside). For the 70B shape at 2K, compute per
request overtakes its KV read only below {h100['compute_bound_below_context']:.0f} tokens of
context, so at 2K compute catches up with the reads at
{'no batch at all' if catch == float('inf') else f'b = {catch:,.0f}'}; the round at batch 16
is {h100['bound']}-bound. A higher ridge only moves compute-bound decode further away:
at long contexts the KV reads set the pace on either card.""", title="Worked answer 3")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
default = schedule.at().numbers
small = schedule.at(chunk_tokens=512).numbers
whole = schedule.at(chunk_tokens=8192, token_budget=16384).numbers
answer(f"""With 512-token chunks r0's longest interval drops from
{default['longest_interval_ms']:.0f} ms to {small['longest_interval_ms']:.0f} ms, while the total
grows from {default['total_ms']:.0f} ms to {small['total_ms']:.0f} ms: more rounds, each paying
the fixed cost again. With 8192-token chunks and a 16384 budget the whole 8K prompt fits one
round, so chunked prefill behaves like plain continuous batching: total
{whole['total_ms']:.0f} ms and longest interval {whole['longest_interval_ms']:.0f} ms, against
{whole['continuous_total_ms']:.0f} ms and {whole['continuous_longest_interval_ms']:.0f} ms for
continuous. Chunking trades total time for shorter intervals, and a chunk as large as the
prompt leaves nothing to trade.""", title="Worked answer 4")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
four = schedule.at(max_running=4).numbers
r3_prompt = dict((r[0], r[2]) for r in ch08.SCHEDULE_EXAMPLE_REQUESTS)["r3"]   # 8.2.2's r3
r3_rows_ms = r3_prompt * ch08.ROUND_PER_TOKEN_S / units.ms
r3_pairs_ms = r3_prompt * (r3_prompt + 1) / 2 * ch08.ROUND_PER_PAIR_S / units.ms
rest_ms = (four['continuous_longest_interval_ms'] - default['continuous_longest_interval_ms']
           - r3_rows_ms - r3_pairs_ms)
answer(f"""Yes, on total time: with four slots fixed batching takes
{four['static_total_ms']:.0f} ms against {four['continuous_total_ms']:.0f} ms for continuous
(with two slots: {default['static_total_ms']:.0f} and {default['continuous_total_ms']:.0f} ms).
The price of continuous batching grows instead. With four slots r3 is admitted together with
r2, so r3's whole {r3_prompt:,}-token prefill joins the round that carries r2's: the longest
output interval grows from {default['continuous_longest_interval_ms']:.1f} ms by
{r3_rows_ms:.1f} ms of rows ({r3_prompt:,} x {ch08.ROUND_PER_TOKEN_S * 1e6:.1f} us) and
{r3_pairs_ms:.1f} ms of pairs to {four['continuous_longest_interval_ms']:.1f} ms; the extra
decode rows add only {rest_ms:.2f} ms. Meanwhile fixed batching keeps every interval
at {four['static_longest_interval_ms']:.0f} ms. Continuous batching buys its shorter total with
longer worst intervals, and more slots raise that price: it trades smoothness for
throughput.""", title="Worked answer 5")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
grid = range(27, 301)
at_50 = budget.at(graphs="pow2").numbers
at_50_free = budget.at().numbers
n_dec = next(c.default for c in budget.controls if c.name == "decode_requests")
from companion.explorers.ch08_2_batching_and_scheduling import graph_shapes
pow2_shapes = graph_shapes("pow2")
executed = {t: budget.at(graphs="pow2", itl_target_ms=float(t)).numbers["rows_executed"]
            for t in grid}
flat = next(t for t in grid if t + 1 in executed and executed[t + 1] == executed[t])
jump = next(t for t in grid if t + 1 in executed and executed[t + 1] >= 2 * executed[t])
answer(f"""At the chapter's 50 ms the graphs execute {at_50['rows_executed']:,} rows for
{at_50['rows']:,} scheduled. Scanning the permitted interval in 1 ms steps: from {flat} to {flat + 1} ms the GPU runs
the same {executed[flat]:,} rows (the extra millisecond buys tokens only up to the same captured
graph), while from {jump} to {jump + 1} ms the executed rows jump from {executed[jump]:,} to
{executed[jump + 1]:,}, because the row count just crossed a power of two. With graphs for
powers of two the permitted interval buys work in steps, so a target just below an edge
wastes nothing and one just above it pays for padding rows. That is why the budget itself falls
at 50 ms: without graphs the target allows a round of {at_50_free['rows']:,} rows
({n_dec} decode, {at_50_free['rows'] - n_dec:,} new tokens), but padding it to the next graph,
{calc.padded_rows(at_50_free['rows'], pow2_shapes):,} rows, would overrun the target, so the
round is held to {at_50['rows']:,} rows and the budget falls to {at_50['rows'] - n_dec:,} new
tokens, the most whose padded round still fits.""",
       title="Worked answer 6")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
spaced = budget_sweep.at(interarrival_ms=400.0).numbers
close = budget_sweep.at().numbers
lo, hi = widgets.SWEEP_BUDGETS[0], widgets.SWEEP_BUDGETS[-1]
sweep_target = next(c.default for c in budget_sweep.controls if c.name == "itl_target_ms")
answer(f"""Half of it. The interval side stays: 400 ms apart the longest interval still climbs
from {spaced[f'max_itl_ms@{lo}']:.1f} ms at {lo} tokens to {spaced[f'max_itl_ms@{hi}']:.0f} ms at
{hi:,} (80 ms apart: {close[f'max_itl_ms@{lo}']:.1f} to {close[f'max_itl_ms@{hi}']:.0f} ms, where
queued prompts also share the largest rounds). The queueing side goes: the prefill load is
{spaced[f'prefill_load@{lo}']:.2f} at {lo} tokens and {spaced[f'prefill_load@{hi}']:.2f} at
{hi:,}, below 1 at every budget, so a later arrival waits only for the round in progress,
{spaced[f'queue_mean_ms@{lo}']:.1f} ms at {lo} and {spaced[f'queue_mean_ms@{hi}']:.1f} ms at
{hi:,} (80 ms apart, where the load is above 1, a backlog made it
{close[f'queue_mean_ms@{lo}']:.0f} and {close[f'queue_mean_ms@{hi}']:.0f} ms). With nothing left
to buy, the smallest budget wins both columns: the largest budget within {sweep_target:g} ms
is {spaced['largest_budget_within_target']} tokens, and the least queueing is at
{spaced['budget_with_least_queueing']}. The budget trades intervals against queueing only while a small budget leaves prefill
overloaded; when arrivals are sparse, every token of budget costs interval and buys nothing.""",
       title="Worked answer 7")

# %% [markdown]
# Previous: [8.1 Request lifecycle](08_1_request_lifecycle.ipynb).
# Next: [8.3 KV cache management](08_3_kv_cache.ipynb).
#
# > **What you can now compute**
# > - the bytes a decode round reads per output token, $D_w/b + Lk$, and the batch $b_\text{KV}$ where KV reads reach the weight read ([Exercise 8-1](../../exercises/ex8_1.ipynb))
# > - whether the KV pool or the read volume stops a batch first ([Exercise 8-1](../../exercises/ex8_1.ipynb))
# > - a mixed round's time from the fitted fixed, per-token and per-pair costs, and the causal pairs of a prefill chunk ([Exercise 8-2](../../exercises/ex8_2.ipynb))
# > - the largest token budget (and chunk) that keeps the output interval under a target ([Exercise 8-2](../../exercises/ex8_2.ipynb))
# >
# > <details><summary>Assumptions this notebook made</summary>
# >
# > Every request in a decode batch has the same context and
# > none shares its KV; the weights are read once per round and, in the roofline, at the card's
# > data-sheet bandwidth and peak (a lower bound, not a prediction); a round's time is 8.2.2's
# > fit (fixed part, per token, per pair) from batch-1 rounds of Qwen3-8B on this card, used
# > as is in the schedules and the token budget, and floored by the roofline only where the
# > menus say so; prompts and answers have the lengths the examples give, with no distribution
# > around them; the six-request sweep is the companion's built replay (simulated), not the
# > chapter's measured one;
# > an MoE's router is uniform; 8.2.1's arithmetic intensity counts the weight bytes only
# > (2b/s), and the column that adds each request's KV bytes shows how far long contexts
# > pull a batch back below the ridge.
# >
# > </details>
