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
# # 17.9 Measuring it: utilization, MBU and MFU
#
# **The question.** Every number so far came from a formula. A running deployment has to be
# checked against those formulas with measurements. Which measurements say how far a system
# sits from what its hardware permits, and which widely watched gauge says almost nothing?

# %%
from companion import calc, ledger, plots, specs, units, widgets
from companion.chapters import ch17
from companion.display import answer, md

hw = specs.H100_SXM
m8 = specs.LLAMA_8B

# %% [markdown]
# ## What "GPU util" actually counts
#
# The utilization figure of `nvidia-smi` is *kernel residency*: the share of its sampling
# window in which at least one kernel was present on the GPU. It does not record how many of
# the 132 SMs that kernel occupied, or whether those SMs did arithmetic or sat waiting for
# memory. Think of a shop whose "open" sign is lit all day while one of its 132 counters is
# staffed. A kernel parked on a single SM for the whole window reads as fully busy, yet it
# can use at most one SM's share of the chip:
#
# $$\text{compute in use} \le \frac{\text{SMs busy}}{\text{SMs on the chip}}.$$

# %%
share = calc.sm_share(1, hw)
print(f"one always-resident kernel on 1 of {hw.sm_count} SMs: nvidia-smi util 100%, compute in "
      f"use <= {100 * share:.2f}%")
decode_fraction = calc.roofline_point(calc.decode_intensity(m8), hw)["fraction_of_peak"]
print(f"batch-1 decode of the 8B: a kernel is resident almost all the time, and the roofline "
      f"allows {100 * decode_fraction:.2f}% of peak arithmetic (17 §2)")
sms = list(range(1, hw.sm_count + 1))
plots.sm_share_figure(sms, [calc.sm_share(s, hw) for s in sms]).show()

# %% [markdown]
# Batch-1 decode is exactly this case: the gauge reads close to full while the arithmetic
# units are almost idle. Concluding "we are out of GPU, buy more" would be wrong; raising the
# batch, which costs nothing, is the remedy. The memory gauge has its own blind spot: an
# engine such as vLLM claims most of HBM for its KV pool when it starts, so "memory used" is
# near the top whether one sequence or hundreds are live. Ask the engine's own counters
# (occupancy of the KV pool, preemptions) instead.
#
# ## Two ratios worth computing
#
# Both divide something implied by a measured token rate by the card's peak.
#
# - **MFU** (model FLOPs utilization): the arithmetic the token rate implies, over the dense
#   peak $\pi$: $\text{MFU} = \dfrac{\text{tok/s} \times 2N}{\pi}$, for a model of $N$
#   parameters (17 §2 writes $P$).
# - **MBU** (model bandwidth utilization): the bytes the decode must move per second, over the
#   bandwidth $\beta$. A step reads the weights once for all $b$ sequences and each sequence's
#   $L$ tokens of KV, so per output token
#   $\text{MBU} = \dfrac{\text{tok/s} \times (D_w / b + L\,k)}{\beta}$.
#
# Which ratio to trust depends on the phase. Decode runs against the memory roof, so MBU tells
# how close it is to its limit, and $1/\text{MBU}$ caps what any faster kernel could still
# gain. Prefill runs against the compute roof, so MFU is the one to read there. Judging a
# phase by the other ratio is like advertising a card by its sparse TFLOP/s.

# %%
dec = calc.decode_utilization(m8, hw, ch17.DECODE_TOK_PER_S)
pre = calc.prefill_utilization(m8, hw, ch17.PREFILL_TOK_PER_S)
print("decode, 8B, batch 1, measured 146 tok/s:")
print(f"  bytes/s {dec['bytes_per_s']:.3g} -> MBU {100 * dec['mbu']:.1f}%")
print(f"  FLOP/s  {dec['flops_per_s']:.3g} -> MFU {100 * dec['mfu']:.3f}%")
print(f"  headroom at most 1 / MBU = {dec['headroom']:.2f}x "
      f"(the ceiling is {calc.decode_time_split(m8, hw)['tokens_per_s']:.0f} tok/s)")
print("prefill, 8B, measured 20,000 prompt tok/s:")
print(f"  FLOP/s  {pre['flops_per_s']:.3g} -> MFU {100 * pre['mfu']:.1f}%")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
md(f"""The same decode measurement gets two opposite grades. Against bandwidth it is in good
shape, {100 * dec['mbu']:.0f}% of what the memory system can deliver, while its MFU of
{100 * dec['mfu']:.2f}% looks alarming and means nothing for this phase. No kernel can make
this decode more than {dec['headroom']:.1f}x faster; anyone promising {ch17.PROMISED_SPEEDUP}x must change the
workload itself (a bigger batch, fewer bytes per weight). The prefill reaches
{100 * pre['mfu']:.0f}% of peak: respectable, yet below the
{100 * ch17.STRONG_PREFILL_MFU[0]:.0f}-{100 * ch17.STRONG_PREFILL_MFU[1]:.0f}% band that 17 §9
calls a strong prefill, far enough below it that profiling pays.""")

# %%
ui = widgets.UtilizationPanel()
ui.figure().show()

# %% [markdown]
# ## Where this model breaks: ratios that count only part of the work
#
# 17 §9 defines MBU with the weights *plus the live KV*; its worked decode has almost no
# context, so there the weights alone are the whole count. Read weights-only at a long context,
# the same token rate understates the bytes moved. MFU as the chapter computes it, $2N$ per
# token, leaves attention out at any length. The diamonds in the utilization explorer mark the
# ratios with all the work counted.

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the table below
from companion import measurements, tables

u_controls = {c.name: c for c in widgets.UtilizationPanel.controls}
ctx_hi = u_controls["context_tokens"].max
prompt_lo, prompt_hi = u_controls["prompt_tokens"].min, u_controls["prompt_tokens"].max
rates = dict(decode_tokens_per_s=ch17.DECODE_TOK_PER_S,
             prefill_tokens_per_s=ch17.PREFILL_TOK_PER_S)
ut_rows = []
for ctx in (0, ch17.LONG_CONTEXT_TOKENS, ctx_hi):
    u = calc.utilization_counted(m8, hw, context_tokens=ctx, **rates)
    ut_rows.append((f"decode MBU, batch 1, {ctx:,} cached tokens",
                    f"{100 * u['decode_mbu_chapter']:.0f}%", f"{100 * u['decode_mbu']:.0f}%"))
u = calc.utilization_counted(m8, hw, context_tokens=ctx_hi, **rates)
ut_rows.append((f"decode MFU, batch 1, {ctx_hi:,} cached tokens",
                f"{100 * u['decode_mfu_chapter']:.2f}%", f"{100 * u['decode_mfu']:.2f}%"))
counted = {}
for n in (prompt_lo, ch17.PROMPT_TOKENS, ch17.LONG_CONTEXT_TOKENS, 32_000, prompt_hi):
    counted[n] = calc.utilization_counted(m8, hw, prompt_tokens=n, **rates)
    ut_rows.append((f"prefill MFU, {n:,}-token prompts",
                    f"{100 * counted[n]['prefill_mfu_chapter']:.0f}%",
                    f"{100 * counted[n]['prefill_mfu']:.0f}%"))
md(f"The 8B at the chapter's measured rates ({ch17.DECODE_TOK_PER_S} tok/s of decode, "
   f"{ch17.PREFILL_TOK_PER_S:,} prompt tok/s of prefill) on an H100 SXM:\n\n"
   + tables.markdown_table(("measurement", "MBU weights only; MFU matrices only (the chapter's 2N)",
                            "all work counted (MBU: 17 §9's weights + live KV; MFU: + attention)"),
                           ut_rows))

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the sentence below
mem_t = measurements._regime_misses(False)[measurements._canonical("decode-bound")]
mem_f = measurements.median_miss("decode-bound")
md(f"""How close do real deployments come to that memory roof? Against
{mem_t['n']} published decode-bound measurements
([How good are these models?](../how_good_are_these_models.ipynb)) the roofline's step time
was optimistic in {mem_t['chapter_optimistic']} of {mem_t['n']}, by a median factor of
{measurements.factor(mem_f)}. That factor is the inverse of those deployments' MBU: a median
of about {100 / mem_f:.0f}%, just below 17 §9's healthy
{100 * ch17.HEALTHY_DECODE_MBU[0]:.0f}-{100 * ch17.HEALTHY_DECODE_MBU[1]:.0f}% band.""")

# %% [markdown] jp-MarkdownHeadingCollapsed=true
# #### In detail
#
# The KV reads and the attention FLOPs, priced over context and prompt length.
#
# <!-- fold: the fuller model, its numbers and where it parts from the chapter's -->

# %% [markdown]
# Both ratios divide by a peak what a token rate *implies*, and the chapter's versions imply
# less work than there is.
#
# - **MBU without the KV cache.** The chapter's decode example reads the weights only, which
#   is fair for its short context. Each sequence also streams its $L$ cached tokens every step,
#   $L\,k$ bytes per token on top of $D_w/b$; the formula above already counts them, so at a
#   long context the same token rate means a larger MBU and less headroom.
# - **MFU without attention.** The chapter prices each token at $2N$ FLOPs, the matrices and
#   nothing else, when it computes MFU (17 §9). A token also attends to the tokens before it, $a$ FLOPs per
#   query-key pair. Under the causal mask a token sees only itself and the tokens before it:
#   $L+1$ pairs for a decode token at context $L$, $n(n+1)/2$ pairs over a prompt of $n$
#   tokens. That causal count is the work a causal attention kernel actually does and the
#   usual convention for a decoder; the fuller ratios here use it. The attention term of the
#   PaLM paper's FLOP count (Chowdhery et al., 2022, appendix B), often quoted for MFU,
#   charges every token for the whole sequence, masked half included: $n^2$ pairs per prompt,
#   about twice the causal count. The chapter gives no prompt length for its prefill
#   measurement; the explorer takes 17 §2's prompt length by default.
#
# `calc.utilization_counted` returns both versions; the explorer's diamonds mark the fuller
# ratios. What the PaLM-style count would add, at the notebook's prefill rate:

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the table below
pair_flops = calc.attention_flops_per_pair(m8)
conv_rows = []
for conv_n in (ch17.PROMPT_TOKENS, 32_000):
    conv = calc.utilization_counted(m8, hw, decode_tokens_per_s=ch17.DECODE_TOK_PER_S,
                                    prefill_tokens_per_s=ch17.PREFILL_TOK_PER_S,
                                    prompt_tokens=conv_n)
    # PaLM's appendix B: each token against all n positions, n^2 pairs per prompt
    palm = calc.mfu(calc.prefill_utilization(m8, hw, ch17.PREFILL_TOK_PER_S)["flops_per_s"]
                    + ch17.PREFILL_TOK_PER_S * pair_flops * conv_n, hw)
    conv_rows.append((f"{conv_n:,}-token prompts" + (" (the explorer's default)"
                                                    if conv_n == ch17.PROMPT_TOKENS else ""),
                      f"{100 * conv['prefill_mfu_chapter']:.1f}%",
                      f"{100 * conv['prefill_mfu']:.1f}%", f"{100 * palm:.1f}%",
                      f"+{100 * (palm - conv['prefill_mfu']):.1f} points"))
md(f"Prefill MFU of the 8B at {ch17.PREFILL_TOK_PER_S:,} prompt tok/s on an H100 SXM, by what "
   "the FLOP count includes:\n\n"
   + tables.markdown_table(("prompts", "the chapter's (matrices only)",
                            "causal attention (used here)", "PaLM-style (full square)",
                            "PaLM-style over causal"), conv_rows))

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
at8k = calc.utilization_counted(m8, hw, context_tokens=ch17.LONG_CONTEXT_TOKENS, **rates)
at_hi = calc.utilization_counted(m8, hw, context_tokens=ctx_hi, **rates)
base = counted[ch17.PROMPT_TOKENS]
md(f"""> **Where this model breaks: MBU and MFU.** At the chapter's settings the two versions
> nearly agree: the decode has no context to speak of, and a {ch17.PROMPT_TOKENS:,}-token
> prompt adds {100 * (base['prefill_mfu'] / base['prefill_mfu_chapter'] - 1):.0f}% of attention
> work, so prefill MFU reads {100 * base['prefill_mfu']:.0f}% instead of
> {100 * base['prefill_mfu_chapter']:.0f}%. Both gaps grow with length. If the same
> {ch17.DECODE_TOK_PER_S} tok/s were measured at {ch17.LONG_CONTEXT_TOKENS:,} cached tokens,
> 17 §9's MBU (weights plus live KV) would be {100 * at8k['decode_mbu']:.0f}%, where a
> weights-only count says {100 * at8k['decode_mbu_chapter']:.0f}%, and at the explorer's
> {ctx_hi:,} tokens {100 * at_hi['decode_mbu']:.0f}%: the headroom $1/\\text{{MBU}}$ is
> {1 / at_hi['decode_mbu']:.2f}x, not the weights-only {1 / at_hi['decode_mbu_chapter']:.2f}x. A prefill of 32,000-token prompts at
> {ch17.PREFILL_TOK_PER_S:,} tok/s is doing {100 * counted[32_000]['prefill_mfu']:.0f}% of
> peak in model FLOPs, not {100 * counted[32_000]['prefill_mfu_chapter']:.0f}%, inside the
> band the chapter calls strong rather than below it. At the explorer's longest prompts,
> {prompt_hi:,} tokens, the same rate would need
> {100 * counted[prompt_hi]['prefill_mfu']:.0f}% of peak: counted fully, that measurement is
> at or past what the card can do, which the matrix-only
> {100 * counted[prompt_hi]['prefill_mfu_chapter']:.0f}% does not reveal.
>
> **When it matters.** For judging long-context work. A low MFU at long prompts may be no
> problem at all once attention is counted, and a decode that looks comfortably below the
> memory roof may already be pressing against it once its KV reads are counted. Record the
> context and prompt lengths beside every rate on the dashboard, or the ratios cannot be
> computed honestly.""")

# %% [markdown]
# ## The always-on dashboard
#
# Profilers are for investigations; a dashboard is for every day, and it should make the two
# ratios computable at any moment. What belongs on it (17 §9 lists the same items):
#
# - token rates for prefill and for decode, never merged into one number;
# - TTFT at p50 and p90, ITL at p50 and p99; the tails carry the diagnosis (a p99 ITL that
#   jumps whenever long prompts arrive is the blocking of 17 §3);
# - MBU and MFU, each two multiplications away from those rates;
# - how full the engine's KV pool is, and how often it preempts a sequence (a full pool with
#   rising preemptions means memory, not the scheduler, caps the batch);
# - the batch size of each iteration (if it stays below its cap while requests queue, the
#   limit is somewhere upstream).

# %% [markdown] jp-MarkdownHeadingCollapsed=true
# ### What engines report
#
# From an engine's log line to MBU and MFU.
#
# <!-- fold: turning an engine's logged token rates into MBU and MFU, a worked example -->

# %% [markdown]
# An engine's periodic log holds the inputs of both ratios, not the ratios themselves. vLLM,
# for one, prints every few seconds the prompt and the generation throughput in tokens per
# second, the sequences running and waiting, and how full its KV pool is. Three steps turn such
# a line into the two ratios of this section:
#
# 1. the batch $b$ is the number of running sequences;
# 2. the live context $L$ is the pool's bytes times its usage, shared by $b$ sequences of $k$
#    bytes per token;
# 3. MBU follows from the generation rate with $D_w/b + L\,k$ bytes per token, and MFU from the
#    prompt rate with $2N$ FLOPs per token.
#
# A log line for the 8B on one H100, with inputs chosen for the example (not a measurement;
# the prompt rate is the chapter's prefill figure):

# %%
log = {"prompt tok/s": ch17.PREFILL_TOK_PER_S, "generation tok/s": 4_000.0, "running": 64,
       "KV usage": 0.40}
pool_bytes = calc.paged_batch_gain(m8, hw)["kv_budget_bytes"]
live = log["KV usage"] * pool_bytes / (log["running"] * calc.kv_bytes_per_token(m8))
from_log = calc.decode_utilization(m8, hw, log["generation tok/s"], batch=log["running"],
                                   context_tokens=round(live))
weights_only = calc.decode_utilization(m8, hw, log["generation tok/s"], batch=log["running"])
prompt_side = calc.prefill_utilization(m8, hw, log["prompt tok/s"])
print(f"log: {log}")
print(f"b = {log['running']}, L = {log['KV usage']:.0%} x {pool_bytes / units.GB:.0f} GB / "
      f"({log['running']} x {calc.kv_bytes_per_token(m8):,} B) = {live:,.0f} tokens")
print(f"decode: {from_log['bytes_per_s'] / 1e12:.2f} TB/s -> MBU {from_log['mbu']:.0%} "
      f"(weights only: {weights_only['mbu']:.0%})")
print(f"prefill: {prompt_side['flops_per_s'] / 1e12:.0f} TFLOP/s -> MFU {prompt_side['mfu']:.0%}")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
lo_band, hi_band = ch17.HEALTHY_DECODE_MBU
md(f"""The decode side sits at {from_log['mbu']:.0%} MBU, inside the {lo_band:.0%}-{hi_band:.0%}
band; read without the KV it would be {weights_only['mbu']:.0%} and look slow, because at
{live:,.0f} live tokens each sequence's cache is a larger read per token than its share of the
weights. Two cautions for real logs. The rates are averages over the logging interval, and a
continuously batched engine runs prefill chunks and decode tokens in the same rounds: each
ratio charges its phase the whole interval, so each is a lower bound on what that phase reached
while it ran. And the usage counts whole blocks, so $L$ comes out up to a block per sequence
too high; at 16-token blocks that is noise.""")

# %% [markdown]
# ## The two Nsight profilers
#
# Nsight Systems (`nsys`) records a timeline of the whole process: kernels, memory copies,
# NCCL collectives and CPU threads against one clock. Read it for *where the time went*:
# stretches where the GPU row is empty although the CPU thread is working (launch overhead,
# which CUDA Graphs remove), collectives that do not overlap computation under TP, host work that the GPU waits
# for. Nsight Compute (`ncu`) re-runs a single kernel many times under instrumentation and
# reports *why that kernel is slow*. Its Speed of Light section shows the kernel's throughput
# as a share of peak compute and of peak memory side by side, a roofline verdict for one
# kernel, along with occupancy and achieved bandwidth. Use them in that order: the timeline
# first, to find which kernel or gap is costing the time, and only then `ncu` for that kernel.

# %% [markdown]
# ## Reading a timeline: launches, kernels and the gaps between them
#
# What would `nsys` show for one decode round? The companion cannot run a profiler for you,
# but it can lay out the round its simulator charges as kernels
# (`companion.sim.decode_step_timeline`). Each layer runs five big kernels (the QKV, output,
# gate/up and down projections, and attention), each lasting its roofline time, so together
# they take exactly the simulator's round time $(D_w + b\,L\,k)/\beta$; the other kernels of
# the layer (norms, rotary embedding, KV write, residual adds, activation) are tiny and take a
# minimum kernel time. The CPU row issues the launches.
#
# **Assumptions, not chapter numbers.** The chapter gives no launch costs, so these are
# labelled inputs you can change: 20 µs of CPU time per kernel launch from an eager Python
# framework, 20 µs to replay a captured CUDA graph, 2 µs for the shortest kernel, 12 kernels
# per layer when nothing is fused. Set them to what your own trace shows.
#
# Without graphs a kernel cannot start before the CPU has launched it. While kernels are
# longer than launches the CPU runs ahead and the GPU row stays solid; when a stretch of tiny
# kernels comes along, the GPU finishes them faster than the CPU can issue them, and gaps
# open. A CUDA graph records the round once and replays it with a single launch, so the
# kernels run back to back.

# %%
timeline_panel = widgets.KernelTimelinePanel()
tl = timeline_panel.at().numbers
print(f"8B, batch 1: {tl['kernels']} kernels; eager round {tl['eager_step_ms']:.2f} ms "
      f"({tl['gaps_ms']:.2f} ms of it gaps, {tl['idle_pct']:.0f}%), with CUDA Graphs "
      f"{tl['graph_step_ms']:.2f} ms; roofline memory time {tl['memory_ms']:.2f} ms")
timeline_panel.figure().show()

# %% [markdown]
# Top two rows: the round under CUDA Graphs (one launch, then solid GPU work). Bottom two:
# the eager round, where the CPU's launches (orange) set the pace and the GPU row breaks up
# into slivers with white between them. Only the first two layers are drawn; the bars on the
# right compare whole rounds.
#
# The companion's scheduler simulator can hand over a round of its own schedule: below, a
# round from the middle of the continuous-batching trace of 17 §6, whose batch and cached
# context become the timeline's.

# %%
from companion.sim import batching_trace, batching_trace_requests, round_timeline

schedule = batching_trace(batching_trace_requests())["continuous"]
for graphs in (False, True):
    r = round_timeline(schedule, 40, m8, hw, cuda_graphs=graphs)
    print(f"simulated round 40, batch {r.batch}, {r.context_tokens} cached tokens each, "
          f"graphs {'on ' if graphs else 'off'}: {r.step_s * 1e3:.2f} ms, "
          f"{100 * r.idle_fraction:.1f}% idle")

# %% [markdown]
# ## Reading a Speed of Light section
#
# Nsight Compute's Speed of Light section gives two bars per kernel: the throughput it reached
# as a share of the card's peak *memory* bandwidth and as a share of its peak *compute*. The
# larger bar says which roof the kernel is pressing against; its length says how close it
# gets. The companion computes the same two bars for each kernel of a decode layer
# (`companion.sim.speed_of_light`), assuming each big kernel reaches a given share of its roof
# (by default the 80% memory of the chapter's decode example in 17 §9), and for the whole
# round it reports the round's MBU and MFU from `calc.decode_utilization`, the ratios above.
#
# One difference in what the compute bar means. The companion's is the kernel's FLOP/s over
# the dense tensor peak. `ncu`'s compute bar is the busiest of the SM's pipelines and issue
# slots (load/store, integer, tensor, ...) as a share of its own peak, so a decode kernel that
# does almost no tensor arithmetic still keeps its load/store pipe busy. That is why 17 §9's
# decode kernel shows "compute ~5%" in `ncu` where FLOP/s over peak is a fraction of a
# percent. The explorer opens with some cached context, so the attention kernel has a KV
# cache to read.

# %%
sol_panel = widgets.SpeedOfLightPanel()
sol_default = sol_panel.params
sol = sol_panel.at(**sol_default).numbers
print(f"the explorer opens at: {sol_default['model']} on the {sol_default['hardware']}, batch "
      f"{sol_default['batch']}, {sol_default['context_tokens']:,} cached tokens per sequence "
      f"(a short chat context), each big kernel at "
      f"{sol_default['roof_pct']:.0f}% of its roof")
sol_panel.figure().show()

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
big = sol_panel.at(**{**sol_default, 'batch': 512}).numbers
sol_lo, sol_hi = ch17.HEALTHY_DECODE_MBU
sol_band = "inside" if sol_lo <= sol["mbu_pct"] / 100 <= sol_hi else "outside"
md(f"""At batch {sol_default['batch']} every projection reads about
{sol['gate_up_memory_pct']:.0f}% of peak memory throughput and about
{sol['gate_up_compute_pct']:.2f}% of peak compute: memory-bound, and correctly so. Do not try
to "fix" the low compute bar of a decode kernel. The element-wise kernels show almost nothing
on either bar: they are too small to load the chip, which is why fusing them away matters
more than tuning them. The whole round lands at an MBU of {sol['mbu_pct']:.0f}% ({sol_band}
17 §9's healthy {100 * sol_lo:.0f}-{100 * sol_hi:.0f}% band) and an MFU of
{sol['mfu_pct']:.2f}%. At a batch of 512, still with {sol_default['context_tokens']:,} cached
tokens, one read of the weights serves 512 rows, more FLOPs per byte than the ridge point:
the projection's compute bar rises to {big['gate_up_compute_pct']:.0f}% and its memory bar
falls to {big['gate_up_memory_pct']:.0f}%, so the kernel now presses against the compute
roof, and the round's MFU is {big['mfu_pct']:.0f}%. On a prefill matrix multiply the compute
bar should be the long one; a prefill kernel whose bars look like a decode kernel's points at
a problem.""")

# %% [markdown]
# ## A checklist for a healthy decode trace
#
# Our restatement of the chapter's list, as questions to put to a trace:
#
# 1. **Is the GPU row solid?** The empty time between kernels should be a few percent of a
#    step at most; more suggests CUDA Graphs are off or not taking effect.
# 2. **Do a few large kernels own the step?** Attention and the big matrix-vector products
#    should dominate, not a swarm of tiny kernels.
# 3. **Are those kernels memory-bound in Speed of Light?** Memory throughput high (roughly 60-80%
#    or above), compute low. For decode that is the right shape; leave it alone.
# 4. **Is the MBU of the whole step in the 60-80% band?** Numbers near 20% point at a small
#    batch, unfused kernels or scattered KV reads.
# 5. **Under TP, are the collectives hidden?** NCCL time should overlap compute or stay under
#    about a tenth of the step.
# 6. **Is the batch pressed against a real limit?** It should sit at the KV-memory cap or the
#    ITL limit, not at a default nobody raised.
#
# To do it yourself, the [lab notebook](../lab/measure_it_yourself.ipynb) times decode steps
# on your machine, computes your MBU and places the result on a roofline.

# %% [markdown]
# ## Chapter says / companion computes

# %%
ledger.show("17.9")

# %% [markdown]
# ## Explorer: MBU and MFU of your measurement

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
dec_lo, dec_hi = ch17.HEALTHY_DECODE_MBU
pre_lo, pre_hi = ch17.STRONG_PREFILL_MFU
md(f"""Enter a measured decode rate (for the whole batch) and a measured prefill rate, pick the
model and the card, and give the batch and live context of the decode measurement (they
change how many bytes each token costs). The shaded bands are 17 §9's: for decode MBU the
{100 * dec_lo:.0f}-{100 * dec_hi:.0f}% of its checklist for a healthy decode profile, for
prefill MFU the {100 * pre_lo:.0f}-{100 * pre_hi:.0f}% it calls strong. The right panel
compares the measured rate with the memory-roof ceiling it implies (measured / MBU). The
diamonds are the fuller ratios of the box above, with attention counted over the prompt
length you give. The explorer does not check that the batch and context you give fit the
card's memory (17 §4 does).""")

# %% tags=["nbval-ignore-output"]
ui.show()

# %%
n = ui.at().numbers
print(f"decode MBU {n['decode_mbu_pct']:.1f}%, MFU {n['decode_mfu_pct']:.3f}%, headroom "
      f"{n['headroom']:.2f}x (ceiling {n['ceiling_tok_s']:.0f} tok/s); prefill MFU "
      f"{n['prefill_mfu_pct']:.1f}%")
naive = calc.paged_batch_gain(m8, hw, block_tokens=1)["naive"]
n = ui.at(decode_tok_s=round(naive["tokens_per_s"]), batch=naive["batch"],
              context_tokens=ch17.CHAT_LIVE_TOKENS).numbers
print(f"17 §5's naive batch ({naive['batch']} sequences, {ch17.CHAT_LIVE_TOKENS} live tokens) at "
      f"its computed ceiling of {naive['tokens_per_s']:,.0f} tok/s: MBU "
      f"{n['decode_mbu_pct']:.0f}% (the roof itself), MFU {n['decode_mfu_pct']:.1f}%")
# %% [markdown]
# ## Explorer: the kernel timeline
#
# Model, batch, context, the number of layers, the kernels per layer (fusion), the assumed
# CPU cost per launch and CUDA Graphs on or off.

# %% tags=["nbval-ignore-output"]
timeline_panel.show()

# %% [markdown]
# ## Explorer: Speed of Light
#
# Model, card, batch, context and the share of its roof each big kernel reaches.

# %% tags=["nbval-ignore-output"]
sol_panel.show()

# %% [markdown]
# ## Try this
#
# 1. **Predict, then move.** A colleague reports 150 tok/s for the 70B shape at batch 1 on one
#    H100. Before entering it, predict whether the MBU will be plausible; then enter it. What
#    does an MBU above 100% say about the measurement?
#    <!-- states: ui(model=specs.LLAMA_70B.name, decode_tok_s=150.0) -->
# 2. At batch 57 with 8,000 live tokens per sequence (about the most that fits one H100,
#    17 §4), which measured rate would be a healthy 70% MBU? Compare it with the answer if you
#    ignored the KV reads.
#    <!-- states: ui(batch=57, context_tokens=8000) -->
# 3. **Predict, then move.** Keep the 8B's 146 tok/s but switch the card to an H200. Will the
#    deployment still look healthy? Predict, then switch.
#    <!-- states: ui(hardware=specs.H200_SXM.name) -->
# 4. Your prefill MFU reads 30%. Name three causes the ratio alone cannot tell apart, and for
#    two of them compute how much they cost.
# 5. In the timeline explorer (eager, 8B), from which launch cost on do gaps take more than 1%
#    of the round at batch 1? And at batch 48 with 8,000 cached tokens per sequence?
#    <!-- states: timeline_panel(launch_us=...); timeline_panel(batch=48, context_tokens=8000, launch_us=...) -->

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
reported = 150.0
seventy = ui.at(model=specs.LLAMA_70B.name, decode_tok_s=150.0).numbers
tp_g = 8
tp_mbu = seventy["decode_bytes_per_s"] / (tp_g * specs.H100_SXM.mem_bw_bytes_per_s)
answer(f"""At batch {u_controls['batch'].default} every token streams all {specs.LLAMA_70B.weight_bytes / units.GB:.0f} GB of
the 70B's weights, so {reported:g} tok/s would need {seventy['decode_bytes_per_s'] / 1e12:.1f} TB/s:
an MBU of {seventy['decode_mbu_pct']:.0f}%. The memory roof allows
{seventy['ceiling_tok_s']:.0f} tok/s on one card. The model does not even fit one H100, so
the rate was measured some other way: across $g$ GPUs (divide by $g$ times the bandwidth; at
TP={tp_g} the MBU is about {100 * tp_mbu:.0f}%), with a larger batch, with quantized weights,
or with speculative decoding, where one pass over the weights yields more than one token. An
MBU past the memory roof never describes the setup you think you
measured: it is a wrong rate or a different deployment.""", title="Worked answer 1")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
healthy_mbu = sum(ch17.HEALTHY_DECODE_MBU) / 2     # the middle of the chapter's healthy band
bs_val, ctx_val = 57, 8000
busy = ui.at(batch=57, context_tokens=8000).numbers
# MBU is proportional to the rate: scale the readout's ceiling (and its weights-only MBU)
healthy = healthy_mbu * busy["ceiling_tok_s"]
weights_ceiling = ch17.DECODE_TOK_PER_S / (busy["decode_mbu_weights_only_pct"] / 100)
healthy_w = healthy_mbu * weights_ceiling
check = ui.at(batch=57, context_tokens=8000, decode_tok_s=round(healthy)).numbers
# 17 §2's memory check (weights + KV + reserve): the batch fits, barely
busy_mem = widgets.RooflinePanel().at(batch=57, context_tokens=8000).numbers
answer(f"""MBU is proportional to the measured rate, so the readout's ceiling is all you need:
at {bs_val} sequences of {ctx_val:,} tokens each token costs $D_w/{bs_val} + L\\,k$ bytes,
the memory roof allows {busy['ceiling_tok_s']:,.0f} tok/s for the batch, and
{100 * healthy_mbu:.0f}% MBU is {healthy:,.0f} tok/s (enter {round(healthy):,} and the
readout says {check['decode_mbu_pct']:.0f}%). Ignoring the KV reads, as the readout's
"weights only" line does, you would expect {healthy_w:,.0f} tok/s, about
{healthy_w / healthy:.0f}x more, and would call a healthy deployment slow. (The batch fits:
{busy_mem['memory_weights_GB']:.0f} GB of weights, {busy_mem['memory_kv_GB']:.1f} GB of KV and
the runtime reserve fill {100 * busy_mem['memory_over_card']:.1f}% of the card.) At long
contexts the KV cache, not the weights, is what each step streams, so MBU must count it.""",
       title="Worked answer 2")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
h200 = ui.at(hardware=specs.H200_SXM.name).numbers
lo_band, hi_band = ch17.HEALTHY_DECODE_MBU
answer(f"""The same {ch17.DECODE_TOK_PER_S} tok/s on an H200 is only
{h200['decode_mbu_pct']:.0f}% MBU, below the {100 * lo_band:.0f}-{100 * hi_band:.0f}% band:
the bigger bandwidth raises the ceiling to {h200['ceiling_tok_s']:.0f} tok/s, so the same rate now leaves {h200['headroom']:.2f}x on the table. A rate is healthy or not
only relative to the card it runs on.""", title="Worked answer 3")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
long_prompt, short_prompt = ch17.LONG_CONTEXT_TOKENS, 128
attn = calc.attention_flops(m8, long_prompt)
mat = calc.matrix_flops(m8, long_prompt)
short = calc.roofline_point(calc.prefill_intensity(m8, short_prompt), hw)
answer(f"""Three causes with the same symptom: (a) attention work that MFU does not count, for
a prompt of {long_prompt:,} tokens {attn / 1e12:.0f} TFLOP next to {mat / 1e12:.0f} TFLOP of matrix work
({100 * attn / mat:.0f}% extra); (b) short prompts that never leave the memory roof, a
{short_prompt}-token prompt reaching at most {100 * short['fraction_of_peak']:.0f}% of peak; (c) time
between kernels (launches, normalizations, chunking that splits the prefill on purpose). The
timeline (`nsys`) separates (c) from the rest; `ncu`'s Speed of Light on the big matrix
multiplies separates a kernel that is slow from a kernel that is fine but waits. The ratio
says that time is lost, not where: only a trace and a kernel profile tell the causes apart.""",
       title="Worked answer 4")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
launches = [half / 2 for half in range(0, 121)]     # 0 to 60 µs, the slider's range
late_batch, late_ctx = 48, 8000
at_b1 = {us: timeline_panel.at(launch_us=us).numbers for us in launches}
at_late = {us: timeline_panel.at(batch=48, context_tokens=8000, launch_us=us).numbers
           for us in launches}
onset1 = next(us for us in launches if at_b1[us]["idle_pct"] > 1)
onset_late = next(us for us in launches if at_late[us]["idle_pct"] > 1)
n1, n_late = at_b1[onset1], at_late[onset_late]
n1_batch = timeline_panel.defaults()["batch"]
avg1 = 1e3 * n1["gpu_busy_ms"] / n1["kernels"]
avg_late = 1e3 * n_late["gpu_busy_ms"] / n_late["kernels"]
answer(f"""At batch {n1_batch} gaps pass 1% of the round from {onset1:.1f} µs per launch
({n1['kernels']} kernels in {n1['gpu_busy_ms']:.2f} ms of GPU work). At batch {late_batch}
with {late_ctx:,} cached tokens the attention kernels read a large KV cache, the GPU work grows
to {n_late['gpu_busy_ms']:.2f} ms and the onset moves to {onset_late:.1f} µs (both searched in
steps of {launches[1] - launches[0]:g} µs). Both onsets come before the average kernel time
(GPU work over kernel count: {avg1:.1f} µs and {avg_late:.1f} µs): the long kernels let the CPU run ahead, but each layer's run of tiny kernels
(norms, rotary, KV write, adds) drains that lead, and the GPU waits at the end of each run
once a launch outlasts them. Bigger rounds hide launch overhead, which is why small,
short-context batches gain most from CUDA Graphs.""",
       title="Worked answer 5")


# %% [markdown]
# Previous: [17.8 Disaggregated serving and KV-aware routing](17_08_disaggregation_and_routing.ipynb);
# next: [17.10 The levers, ranked](17_10_levers.ipynb).
#
# > **What you can now compute**
# >
# > - The MBU and MFU of a measured decode or prefill rate, and which one judges the phase ([Exercise 17-4](../../exercises/ex17_4.ipynb))
# > - The headroom left to a decode, $1/\text{MBU}$, and the ceiling it implies ([Exercise 17-4](../../exercises/ex17_4.ipynb))
# > - The most arithmetic a kernel on some of the SMs can use, whatever `nvidia-smi` says ([Exercise 17-4](../../exercises/ex17_4.ipynb))
# > - Where decode and prefill sit on the roofline, and so which ratio to read ([Exercise 17-3](../../exercises/ex17_3.ipynb))
# >
# > <details><summary>Assumptions this notebook made</summary>
# >
# > MBU counts the weights once per step and each
# > sequence's live KV, nothing else (no activations, no KV writes, no re-reads from poor
# > caching); MFU counts 2 FLOPs per parameter, and the fuller version adds attention over
# > the context or the prompt, causal pairs only (not PaLM's full square), but not
# > normalizations or softmax; the memory check of a batch and context is left to the worked
# > answers (weights, KV and the runtime reserve, 17 §4); the peaks are the spec
# > sheet's dense BF16 figures, so a headroom of $1/\text{MBU}$ is an upper bound (no real
# > kernel reaches the spec bandwidth); the kernel timeline's launch costs, minimum kernel time
# > and kernels per layer are labelled assumptions, not measurements, and every kernel runs at
# > its roofline time; Speed of Light assumes each big kernel reaches one fixed share of its
# > roof.
# >
# > </details>
