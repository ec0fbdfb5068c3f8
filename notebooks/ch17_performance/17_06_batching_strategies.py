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
# # 17.6 Batching strategies
#
# **The question.** 17 §2 showed that a bigger batch lifts decode up the memory roof. This
# section asks a scheduling question instead: at which moments may a request enter a running
# batch, and at which moments may it leave? Picture a restaurant. One policy seats a whole
# party and clears the table only when the slowest eater is done; another re-seats each chair
# the moment it frees up; a third also lets a newcomer order in small courses so the kitchen
# never stalls everyone else. Those are static batching, continuous batching and chunked
# prefill, in that order.

# %%
from companion import calc, ledger, plots, specs, units, widgets
from companion.chapters import ch17
from companion.display import answer, md
from companion.sim import scenarios
from companion.sim import scheduler as sched

hw, m8 = specs.H100_SXM, specs.LLAMA_8B

# %% [markdown]
# ## Static batching: every chair waits for the slowest eater
#
# Under static batching a group of $b$ requests starts together and the group's slots are
# released together, when the request with the longest output $G_i$ emits its last token.
# Nobody predicts output lengths in advance, and in chat they differ enormously, so most slots
# sit finished and empty for much of the run. Count *slot-steps* (one slot during one decode
# step) to measure the waste:
#
# $$\text{run} = b \cdot \max_i G_i, \qquad \text{useful} = \sum_i G_i, \qquad
# \text{utilization} = \frac{\sum_i G_i}{b \cdot \max_i G_i}.$$
#
# The chapter's example is a group of 8 whose outputs are 100, 200, ..., 800 tokens:

# %%
lengths = [100, 200, 300, 400, 500, 600, 700, 800]
static = calc.static_batch_slot_steps(lengths)
print(f"slot-steps run {static['run']:,}, useful {static['useful']:,}: utilization "
      f"{100 * static['utilization']:.2f}%")
one_batch = sched.simulate([sched.Request(f"s{g}", 0.0, 1, g) for g in lengths], "static",
                           max_running=8, round_time=sched.chapter17_round_time())
run, useful = one_batch.slot_steps()
print(f"the same batch on the companion's scheduler simulator: {run:,} run, {useful:,} useful "
      f"({100 * one_batch.utilization():.2f}%)")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
md(f"""Only {100 * static['utilization']:.0f}% of the slot-steps produce a token: the rest are
padding, slots kept busy by requests that have already finished. The closed form and the
simulator agree exactly, because the simulator counts the same slot-steps. The waste has a
second face that utilization hides: a request that arrives just after the group starts must
wait until the 800-token member is done before it can even be prefilled. The blocking of
17 §3 reappears, this time at the edge of the group.""")

# %% [markdown]
# ## Continuous batching: re-seat a chair at every token
#
# A decode step is short (milliseconds) and identical for every sequence in it: one forward
# pass, one token each. That makes the end of every step a safe moment to change who is in
# the batch. Continuous batching (called iteration-level scheduling in the Orca paper) does
# exactly that: after each step the scheduler drops the sequences that emitted their end token
# and pulls waiting requests into the freed slots. The length mix stops mattering: while the
# queue holds work, no slot idles.
#
# The admission delay shrinks too, but with a condition. A newcomer joins at the next step
# boundary **only if a slot is free and the KV pool can give it blocks for its prompt**. When
# the batch is at its slot cap, or the pool is full, it waits for a running sequence to finish
# (or for the scheduler to preempt one), just as under static batching, only for one sequence
# rather than a whole group.
#
# Continuous batching does not need paged KV: a scheduler can refill slots step by step while
# reserving each sequence's whole maximum length, and the first iteration-level schedulers did.
# What paging (17 §5) does is raise the batch cap: worst-case reservations fill the pool with slots
# nobody writes, so fewer sequences run at once and a newcomer waits for memory more often;
# blocks handed out as a sequence grows let the same pool hold several times the batch.
#
# The chapter makes the point with a small diagram. Here the companion's scheduler simulator
# replays one queue (the chapter's output mix three times over, shuffled, each
# with a 256-token prompt, all waiting at time 0) through 8 slots, once per policy. A round
# takes the chapter's 6.1 ms decode step plus the prefill of any prompt tokens admitted in it,
# at 50% of peak. **The timelines come from the companion's simulator**; the chapter shows no
# such trace. Utilization here is useful slot-steps over every slot of every round until the
# last request finishes (the makespan), for both policies, so an idle tail counts as waste in
# each.

# %%
requests = widgets.batching_trace_requests()
trace = widgets.batching_trace(requests)
print(f"{len(requests)} requests, outputs per group of 8: "
      f"{sorted(r.output_tokens for r in requests[:8])}")
slots = 8
span_util = {}
for policy, res in trace.items():
    run, useful = res.slot_steps()
    span_util[policy] = useful / (slots * res.n_rounds)
    ttft = [res.ttft_s[r.id] for r in requests]
    print(f"{policy:10}: {slots * res.n_rounds:,} slot-steps over the makespan / {useful:,} useful "
          f"({100 * span_util[policy]:.1f}%),"
          f" all done at {res.makespan_s:.2f} s, mean TTFT {sum(ttft) / len(ttft):.2f} s, "
          f"worst {max(ttft):.2f} s")
plots.batching_gantt_figure({"static: a group runs until its longest member finishes": trace["static"],
                             "continuous: a freed slot is refilled at the next step":
                                 trace["continuous"]}).show()

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
speedup = trace["static"].makespan_s / trace["continuous"].makespan_s
md(f"""Read each row as one slot; a coloured bar is a request occupying it (its letter inside)
and grey is a slot with nothing to do. The static run shows a staircase of grey after each
group, the same {100 * static['utilization']:.0f}% utilization three times over. The
continuous run keeps its rows coloured until the queue is empty and finishes the same work
{speedup:.2f}x sooner; requests also see their first token earlier, a gain the utilization
figure does not record. It is not at 100% either: once the queue is empty, its last long
requests run with the other slots idle, and over the makespan that tail holds it to
{100 * span_util['continuous']:.0f}% (static: {100 * span_util['static']:.0f}%). That grey is
not padding, since there is nobody left to seat, but a slot idles all the same.""")

# %% [markdown]
# ## Chunked prefill: serve a long prompt in courses
#
# One event can still freeze a continuously batched GPU: a newcomer with a long prompt. Its
# whole prefill rides in one step, and every running sequence waits for that step, as computed
# in 17 §3 for an 8,000-token prompt. *Chunked prefill* (from the Sarathi papers; today an
# ordinary engine setting) cuts the prompt into pieces of $c$ tokens and adds one piece to each
# step, next to the usual decode work. With $n$ prompt tokens and the prefill running at half
# of the peak $\pi$ ($N$ is the parameter count, which 17 §2 writes $P$):
#
# $$\text{chunks} = \left\lceil \frac{n}{c} \right\rceil, \qquad
# T_\text{chunk} = \frac{2N\,c}{0.5\,\pi}, \qquad
# T_r = T_\text{step} + T_\text{chunk}, \qquad
# \text{TTFT} \approx \text{chunks} \times T_r.$$
#
# The running batch now never waits longer than one such round $T_r$. The long prompt pays:
# its prefill is spread over many rounds, each of which also carries everyone else's decode
# work, so its first token comes later than if it had had the GPU to itself. (Many engines
# phrase the same rule as a budget of tokens per step, shared by decode tokens and prefill
# chunks.)

# %%
step_s = calc.paged_batch_gain(m8, hw, block_tokens=1)["naive"]["step_s"]
prompt, chunk = ch17.LONG_CONTEXT_TOKENS, ch17.CHUNK_TOKENS
trade = calc.chunked_prefill_trade(m8, hw, prompt, chunk, step_s)
last_chunk = prompt - (trade["chunks"] - 1) * chunk
print(f"closed form, {prompt:,}-token prompt, {chunk}-token chunks, {step_s / units.ms:.2f} ms "
      f"decode step:")
print(f"  {trade['chunks']} chunks of {trade['chunk_s'] / units.ms:.2f} ms, iteration "
      f"{trade['iteration_s'] / units.ms:.2f} ms")
print(f"  worst ITL {trade['dedicated_s'] / units.ms:.1f} -> {trade['iteration_s'] / units.ms:.1f} ms"
      f" ({trade['itl_improvement']:.1f}x better)")
print(f"  TTFT {trade['ttft_s'] / units.ms:.1f} ms vs {trade['dedicated_s'] / units.ms:.1f} ms "
      f"dedicated (+{100 * trade['ttft_increase']:.1f}%); charging the last {last_chunk}-token chunk its "
      f"own size: {trade['ttft_exact_s'] / units.ms:.1f} ms")
whole = scenarios.long_prompt_interference(prompt)
chunked = scenarios.long_prompt_interference(prompt, chunk)
print("simulated (8 decoding requests, the long prompt arrives at a step boundary):")
print(f"  whole prompt in one step: worst decode ITL {whole['worst_decode_itl_s'] / units.ms:.1f} ms"
      f" (the {whole['baseline_itl_s'] / units.ms:.1f} ms step + the prefill), long TTFT "
      f"{whole['long_ttft_s'] / units.ms:.1f} ms")
print(f"  {chunk}-token chunks: worst decode ITL {chunked['worst_decode_itl_s'] / units.ms:.1f} ms, "
      f"long TTFT {chunked['long_ttft_s'] / units.ms:.1f} ms over "
      f"{chunked['long_prompt_rounds']} steps")
chunk_panel = widgets.ChunkSizePanel()
chunk_panel.figure().show()

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
exact_tail = 8000 - (trade["chunks"] - 1) * 512
md(f"""On the left, the closed form over a range of chunk sizes (lines) with the simulator's
result at 512 tokens (diamonds). On the right, the gaps between one running request's tokens
while the long prompt is admitted, simulated: a single gap of
{whole['worst_decode_itl_s'] / units.ms:.0f} ms without chunking, a steady run of
{chunked['worst_decode_itl_s'] / units.ms:.0f} ms steps with it.

> **Rounding box: the chapter's TTFT of the chunked prompt.** The chapter multiplies
> {trade['chunks']} chunks by an iteration already rounded to whole milliseconds. Unrounded,
> the iteration is {trade['iteration_s'] / units.ms:.1f} ms and the product
> {trade['ttft_s'] / units.ms:.0f} ms. The last chunk holds only {exact_tail} tokens, and the
> simulator charges it at that size: {chunked['long_ttft_s'] / units.ms:.0f} ms. Each reading
> rounds to the chapter's penalty of about {100 * trade['ttft_increase']:.0f}% at one
> significant figure, so the trade is the same whichever you take. The ledger's notes
> follow.""")

# %%
for e in ledger.by_section("17.6"):
    if e.id in ("17.6/ttft-ms", "17.6/sim-ttft-chunked-ms"):
        print(f"[{e.id}] chapter {e.printed} {e.unit}, companion {e.value:.1f}\n    {e.note}")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
g_batch = calc.decode_batch_for_step(m8, hw, step_s)
g_ridge = calc.fused_ridge_tokens(m8, hw)
md(f"""Notice what chunking gives up. Two costs hide in it, and they are not the same thing:
every chunk streams the full set of weights again, reads a single prefill would have done
once, and every chunk shares its round with the batch's decode tokens, so the long prompt
waits for work that is not its own. The first cost is real only for small chunks: a pass of
{g_batch} decode tokens plus a chunk computes for longer than it reads the weights once the
pass holds about {g_ridge:.0f} tokens (the ridge at 50% of peak, worked out below), so above a
chunk of about {g_ridge - g_batch:.0f} tokens the re-read hides under compute. The closed form
above charges only the second cost (one decode step per chunk); the first is invisible in it
because it prices the chunk by compute alone. Either way this is a deliberate purchase of
steadiness with speed, the usual bargain of soft real-time systems. Smaller chunks keep chat
streams smooth; larger chunks suit long documents whose users care most about the first
token. When no chunk size meets both objectives at once, the next step is to give prefill
and decode separate GPUs (17 §8).""")

# %% [markdown]
# ## Where this model breaks: one fused pass, not two
#
# An engine runs the chunk and the batch's decode tokens as one forward pass that reads the
# weights once, so a round costs the larger of its reads and its compute rather than their
# sum, and attention makes a long prompt's later chunks dearer (the dotted curves in the
# chunk-size explorer are this model).

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the table below
from companion import tables

t_batch = calc.decode_batch_for_step(m8, hw, step_s)
t_max = {c.name: c.max for c in chunk_panel.controls}
t_pairs = {}
for t_n, t_c in ((ch17.LONG_CONTEXT_TOKENS, ch17.CHUNK_TOKENS),
                 (t_max["prompt_tokens"], t_max["chunk_tokens"])):
    t_pairs[t_n, t_c] = (calc.chunked_prefill_trade(m8, hw, t_n, t_c, step_s),
                         calc.fused_chunked_prefill(m8, hw, t_n, t_c, decode_batch=t_batch,
                                                    decode_context_tokens=ch17.CHAT_LIVE_TOKENS))
(t_ch, t_fu), (t_big_ch, t_big_fu) = t_pairs.values()
t_set = f"{ch17.LONG_CONTEXT_TOKENS:,}-token prompt, {ch17.CHUNK_TOKENS}-token chunks (17 §6)"
md(tables.markdown_table(
    ("setting", "chapter's model (step + chunk)", "fuller model (one fused pass)",
     "fuller / chapter"),
    [(f"worst ITL, {t_set}", f"{t_ch['iteration_s'] / units.ms:.1f} ms",
      f"{t_fu['worst_itl_s'] / units.ms:.1f} ms",
      f"{t_fu['worst_itl_s'] / t_ch['iteration_s']:.2f}"),
     (f"TTFT penalty, {t_set}", f"+{100 * t_ch['ttft_increase']:.0f}%",
      f"+{100 * t_fu['ttft_increase']:.0f}%", f"{t_fu['ttft_increase'] / t_ch['ttft_increase']:.2f}"),
     (f"worst ITL, {t_max['prompt_tokens']:,}-token prompt, {t_max['chunk_tokens']:,}-token "
      f"chunks (both sliders at their top)", f"{t_big_ch['iteration_s'] / units.ms:.0f} ms",
      f"{t_big_fu['worst_itl_s'] / units.ms:.0f} ms",
      f"{t_big_fu['worst_itl_s'] / t_big_ch['iteration_s']:.2f}")]))

# %% [markdown] jp-MarkdownHeadingCollapsed=true
# #### In detail
#
# The fused pass, chunk by chunk.
#
# <!-- fold: the fuller model, its numbers and where it parts from the chapter's -->

# %% [markdown]
# The closed form adds two separate costs per round: a decode step (a weight read) and the
# chunk's compute. An engine does not run them one after the other. It concatenates the
# batch's decode tokens and the chunk into a single forward pass, so the weights stream once
# and the pass costs whichever roof it hits, with attention priced too:
#
# $$T_\text{pass} = \max\!\left(\frac{D_w + (bL + h + c)\,k}{\beta},\;
# \frac{2N\,(c + b) + a\,(c\,h + \tfrac{c(c+1)}{2} + b\,(L+1))}{0.5\,\pi}\right),$$
#
# where $b$ sequences of $L$ live tokens decode beside a chunk of $c$ tokens whose prompt
# already has $h$ tokens cached, $k$ is KV bytes per token and $a$ the attention FLOPs of one
# query-key pair. `calc.fused_step_parts` computes it; `calc.fused_chunked_prefill` sums it
# over the chunks. The decode batch is the one whose step is the chapter's decode step: 17 §5's
# naive batch of chat-length sequences (`calc.decode_batch_for_step`).

# %% tags=["wide-output"]
batch = calc.decode_batch_for_step(m8, hw, step_s)
live = ch17.CHAT_LIVE_TOKENS
fused = calc.fused_chunked_prefill(m8, hw, 8000, 512, decode_batch=batch,
                                   decode_context_tokens=live)
flat = calc.fused_chunked_prefill(m8, hw, 8000, 512, decode_batch=batch,
                                  decode_context_tokens=live, attention=False)
ridge_full = calc.fused_ridge_tokens(m8, hw, efficiency=1.0)
ridge_half = calc.fused_ridge_tokens(m8, hw)
chunk_control = next(c for c in chunk_panel.controls if c.name == "chunk_tokens")
lo, hi = chunk_control.min, chunk_control.max
settings = {"the chapter": (8000, 512), "slider minimum": (8000, lo),
            "worked answer 5": (32_000, 736), "slider maximum": (32_000, hi)}
pair = {key: (calc.chunked_prefill_trade(m8, hw, n_tok, c, step_s),
              calc.fused_chunked_prefill(m8, hw, n_tok, c, decode_batch=batch,
                                         decode_context_tokens=live))
        for key, (n_tok, c) in settings.items()}
(tiny_ch, tiny), (long_ch, long_f), (big_ch, big_f) = (pair[k] for k in
                                                      ("slider minimum", "worked answer 5",
                                                       "slider maximum"))
long_flat = calc.fused_chunked_prefill(m8, hw, 32_000, 736, decode_batch=batch,
                                       decode_context_tokens=live, attention=False)
print(f"decode batch beside the chunk: {batch} sequences of {live} tokens")
print(f"{'setting':52} {'chapter ITL':>12} {'fused ITL':>10} {'chapter TTFT':>13} {'fused TTFT':>11}")
for key, (ch, fu) in pair.items():
    n_tok, c = settings[key]
    label = f"{n_tok:,} tokens, {c:,}-token chunks ({key})"
    print(f"{label:52} {ch['iteration_s'] / units.ms:9.1f} ms {fu['worst_itl_s'] / units.ms:7.1f} ms"
          f" {100 * ch['ttft_increase']:+12.0f}% {100 * fu['ttft_increase']:+10.0f}%")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
last_full = long_f["iteration_s"][-2] if long_f["chunks"] > 1 else long_f["iteration_s"][-1]
md(f"""> **Where this model breaks: chunked prefill.** At the chapter's setting the first round is
> one pass of {512 + batch} tokens, {fused['first_itl_s'] / units.ms:.1f} ms, against the
> chapter's {trade['iteration_s'] / units.ms:.1f} ms: the decode's weight read is hidden under
> the chunk's compute instead of added to it. The long prompt's TTFT penalty falls from
> {100 * trade['ttft_increase']:+.0f}% to {100 * fused['ttft_increase']:+.0f}% (over the prompt
> alone on the same roofline, {fused['alone_s'] / units.ms:.0f} ms with attention; without
> attention {100 * flat['ttft_increase']:+.0f}%). Attention makes later chunks dearer, so the
> worst round is the last full chunk's, {fused['worst_itl_s'] / units.ms:.1f} ms (the final
> {8000 - (fused['chunks'] - 1) * 512}-token remainder takes
> {fused['iteration_s'][-1] / units.ms:.1f} ms): close to the chapter's figure, but by a
> different route.
>
> **Below the ridge.** Computing a pass's tokens takes as long as reading the weights once at
> {ridge_full:.0f} tokens at the full roof, {ridge_half:.0f} tokens at the chapter's 50% of
> peak. A pass smaller than that is memory-bound: it costs one read of the weights, and its
> chunk's compute hides under that read. With {batch} decode tokens already in the pass, a
> chunk below about {ridge_half - batch:.0f} tokens is such a case: at {lo}-token chunks all
> {tiny['memory_bound_chunks']} of {tiny['chunks']} passes are memory-bound, from
> {tiny['first_itl_s'] / units.ms:.2f} ms for the first to {max(tiny['iteration_s']) / units.ms:.2f} ms
> for the last (the KV read grows with the prompt's history). The chapter's sum, a full decode step plus the
> chunk's compute, gives {tiny_ch['iteration_s'] / units.ms:.2f} ms: it
> {'overstates' if tiny_ch['iteration_s'] > max(tiny['iteration_s']) else 'misjudges'} such a round,
> because it pays for the chunk's arithmetic on top of a weight read the chunk shares.
>
> **Long prompts.** The chapter ignores attention FLOPs, and at 8,000 tokens that costs
> little. At 32,000 tokens in 736-token chunks the last full chunk's pass takes
> {last_full / units.ms:.1f} ms, {last_full / long_f['first_itl_s']:.1f}x the first
> ({long_f['first_itl_s'] / units.ms:.1f} ms), and the TTFT is
> {long_f['ttft_s'] / long_flat['ttft_s']:.2f}x what it is without attention
> ({long_f['ttft_s'] / units.ms:,.0f} vs {long_flat['ttft_s'] / units.ms:,.0f} ms). At the
> slider's largest chunk, {hi:,} tokens, the worst round is
> {big_f['worst_itl_s'] / units.ms:.0f} ms, not {big_ch['iteration_s'] / units.ms:.0f} ms.
>
> **When it matters.** For picking a chunk size against an ITL bound the two models agree
> within a few ms at short prompts. The TTFT penalty is where the chapter's sum overstates by
> a factor of {trade['ttft_increase'] / fused['ttft_increase']:.0f}, and at long prompts the
> worst ITL is set by the last chunks, not the first. The chapter's numbers stay as printed
> (the ledger checks them); the dotted curves in the chunk-size explorer below are this
> fuller model.""")

# %% [markdown]
# ## The three strategies side by side (re-derived)
#
# The chapter closes the section with a decision table; the table is not reproduced here. We
# rebuild it from the section's arithmetic with `calc.batching_decision_table()`: every number
# in a cell is computed from its inputs (the output lengths, the long prompt, the chunk size,
# the decode step), so passing other inputs rebuilds the table.

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
md(widgets.decision_table_markdown())

# %% [markdown]
# ## Chapter says / companion computes
#
# First the closed forms, then the simulator's entries (marked `sim` in the ledger). A `*`
# flags a note: the simulated whole-prompt step contains the decode step as well as the
# prefill, and the TTFT entries round differently, as the box above explains.

# %%
ledger.show("17.6")

# %% [markdown]
# ## Explorer: static vs continuous on a simulated queue
#
# Controls: the queue length, the number of slots, the shortest and longest outputs, the
# prompt length and the spacing of arrivals. One group that exactly fills the slots, arriving
# all at once, gives continuous batching nothing to refill with; lengthen the queue or space
# the arrivals and the two policies part ways.

# %% tags=["nbval-ignore-output"]
trace_panel = widgets.BatchingTracePanel()
trace_panel.show()

# %%
n = trace_panel.at().numbers
for p in ("static", "continuous"):
    print(f"{p:10}: utilization {n[f'{p}_utilization_pct']:.1f}%, done at "
          f"{n[f'{p}_makespan_s']:.2f} s, mean TTFT {n[f'{p}_mean_ttft_s']:.2f} s")

# %% [markdown]
# ## Explorer: the chunk-size knob
#
# Controls: the chunk size, the prompt length, the decode step of the running batch and the
# prefill efficiency. The readout puts the closed form next to the simulator at the same
# setting.

# %% tags=["nbval-ignore-output"]
chunk_panel.show()

# %%
for c in (256, 512, 2048):
    n = chunk_panel.at(chunk_tokens=c).numbers
    print(f"chunk {c:5}: closed form ITL {n['iteration_ms']:.1f} ms, TTFT {n['ttft_ms']:.0f} ms "
          f"(+{n['ttft_increase_pct']:.0f}%); simulated ITL {n['sim_worst_itl_ms']:.1f} ms, "
          f"TTFT {n['sim_ttft_ms']:.0f} ms")
# %% [markdown]
# ## Try this
#
# 1. **Predict, then move.** In the batching explorer, make the shortest and the longest
#    output both 450 tokens. Write down the static utilization you expect, then move the
#    sliders. Does continuous batching still finish first?
#    <!-- states: trace_panel(shortest=450, longest=450) -->
# 2. Keep the chapter's output mix but space the arrivals 200 ms apart. How does each
#    policy's *worst* TTFT change, and why so differently?
#    <!-- states: trace_panel(arrival_gap_ms=200.0) -->
# 3. In the chunk-size explorer, shrink the chunk until the closed-form TTFT penalty reaches
#    100%. Which chunk size is that, and what worst ITL do you get for it?
#    <!-- states: chunk_panel(chunk_tokens=...) -->
# 4. **Predict, then move.** Set the decode step to 30 ms (a large batch with long contexts).
#    Will chunking still improve the worst ITL by about the same factor? Predict from the
#    formula for $T_r$, then move the slider.
#    <!-- states: chunk_panel(decode_step_ms=30.0) -->
# 5. For a 32,000-token prompt, which is the largest multiple of 32 tokens whose chunks keep the
#    worst ITL under 30 ms, and what TTFT does the long prompt then pay?
#    <!-- states: chunk_panel(prompt_tokens=32000, chunk_tokens=...) -->

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
even = trace_panel.at(shortest=450, longest=450).numbers
tied = round(even['continuous_makespan_s'], 2) == round(even['static_makespan_s'], 2)
verdict = (f"No: the two tie, both done at {even['static_makespan_s']:.2f} s" if tied else
           f"Continuous batching finishes at {even['continuous_makespan_s']:.2f} s against "
           f"{even['static_makespan_s']:.2f} s for static batching")
answer(f"""With every output the same length no slot ever finishes early, so the static
utilization is {even['static_utilization_pct']:.0f}% (the closed form for the first group:
{even['first_group_utilization_pct']:.0f}%). Does continuous batching still finish first?
{verdict}. It gains by refilling a slot the moment a short request frees it; when every
request in a group ends on the same step, no slot frees early and there is nothing to refill.
Its advantage came from the spread of output lengths, not from the policy itself.""",
       title="Worked answer 1")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
base = trace_panel.at().numbers
spaced = trace_panel.at(arrival_gap_ms=200.0).numbers
answer(f"""Both worst cases improve, because TTFT counts from each request's own arrival and
the late arrivals no longer queue behind everyone from time 0. But static batching gains
little: {base['static_max_ttft_s']:.2f} s becomes {spaced['static_max_ttft_s']:.2f} s, while
continuous batching drops from {base['continuous_max_ttft_s']:.2f} s to
{spaced['continuous_max_ttft_s']:.2f} s. A request that misses a static group waits for that
whole group to drain, however early a slot in it became free; under continuous batching it
waits only until the next slot frees.""", title="Worked answer 2")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
sizes = range(32, 8193, 32)
default_chunk = chunk_panel.at().numbers
# from the chapter's 512 tokens down: the first chunk size whose closed-form penalty reaches 100%
penalties = {c: chunk_panel.at(chunk_tokens=c).numbers for c in range(32, chunk + 1, 32)}
doubling = max(c for c, n in penalties.items() if n["ttft_increase_pct"] >= 100)
at_doubling = penalties[doubling]
below = min(c for c, n in penalties.items() if n["ttft_increase_pct"] < 100)
at_below = penalties[below]
per_token_s = default_chunk["dedicated_ms"] * units.ms / prompt
crossing = step_s / per_token_s                  # T_step / (c t) = 1
cut_ms = 32 * per_token_s / units.ms
answer(f"""The penalty grows as chunks shrink, because every round also carries the
{step_s / units.ms:.1f} ms decode step, and more chunks mean more such steps. Ignoring the
rounding up of the chunk count, the penalty is $T_\\text{{step}} / T_\\text{{chunk}}$, so it
reaches 100% where a chunk takes exactly one decode step: at
{step_s / units.ms:.2f} ms / {per_token_s / units.ms * 1000:.1f} µs per token = {crossing:.0f}
tokens. In multiples of 32, {below} tokens stays just under 100%
({at_below['ttft_increase_pct']:.1f}%, which the readout rounds to
+{at_below['ttft_increase_pct']:.0f}%), and {doubling} tokens is the first past it:
{at_doubling['chunks']} rounds of {at_doubling['iteration_ms']:.1f} ms give a TTFT of
{at_doubling['ttft_ms']:.0f} ms, {at_doubling['ttft_increase_pct']:.0f}% above the
dedicated {at_doubling['dedicated_ms']:.0f} ms. The worst ITL there is
{at_doubling['iteration_ms']:.1f} ms, against {default_chunk['iteration_ms']:.1f} ms
with {chunk}-token chunks. Each 32-token cut saves the same {cut_ms:.2f} ms of ITL, since
$T_\\text{{chunk}}$ is linear in $c$, while the TTFT penalty grows as $1/c$: the smaller the
chunk, the more TTFT each equal ITL saving costs, so the chunk size is a trade with a sweet
spot, not a knob to turn all the way down.""", title="Worked answer 3")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
slow = chunk_panel.at(decode_step_ms=30.0).numbers
answer(f"""No. Reading the gain as the chapter does, the prefill alone against a chunked
round: without chunking the running streams wait out the whole prefill,
{slow['dedicated_ms']:.0f} ms; with chunking a round is the step plus one chunk,
{slow['iteration_ms']:.1f} ms: a {slow['itl_improvement']:.1f}x improvement instead of
{default_chunk['itl_improvement']:.1f}x at the chapter's {step_s / units.ms:.1f} ms step. The
simulator's readout also charges the unchunked round its decode step,
{slow['sim_unchunked_worst_itl_ms']:.0f} ms, and so reports
{slow['sim_unchunked_worst_itl_ms'] / slow['sim_worst_itl_ms']:.1f}x; either reading gives the
same answer. In
$T_r = T_\\text{{step}} + T_\\text{{chunk}}$ the part that chunking shrinks is only
$T_\\text{{chunk}}$; when the step itself is long, it sets the floor of the worst ITL, and
chunking helps least exactly where the batch is already slow.""", title="Worked answer 4")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
limit_ms = 30
long_runs = {c: chunk_panel.at(prompt_tokens=32000, chunk_tokens=c).numbers for c in sizes}
short_runs = {c: chunk_panel.at(chunk_tokens=c).numbers for c in sizes}
fits = [c for c, n in long_runs.items() if n["iteration_ms"] < limit_ms]
best = long_runs[max(fits)]
fused_fit = {32000: max(c for c, n in long_runs.items() if n["fused_worst_itl_ms"] < limit_ms),
             prompt: max(c for c, n in short_runs.items()
                         if c <= prompt and n["fused_worst_itl_ms"] < limit_ms)}
answer(f"""The round must satisfy $T_\\text{{step}} + T_\\text{{chunk}} < {limit_ms}$ ms, so
the chunk may take at most {limit_ms - step_s / units.ms:.1f} ms. The largest multiple of 32
that fits is {max(fits)} tokens ({best['chunk_ms']:.1f} ms per chunk, rounds of
{best['iteration_ms']:.1f} ms). The long prompt needs {best['chunks']} such rounds: a TTFT of
{best['ttft_ms']:,.0f} ms, against {best['dedicated_ms']:,.0f} ms if it had the GPU to itself
({best['ttft_increase_pct']:+.0f}%). In this closed form the chunk limit does not depend on
the prompt length, only the number of rounds does. That is an artefact of leaving attention
out: with one fused pass per round and attention counted, the largest multiple of 32 whose
worst round stays under {limit_ms} ms is {fused_fit[32000]} tokens for this prompt and
{fused_fit[prompt]} tokens for an {prompt:,}-token one, because the last chunks attend to the
longest history. An ITL bound fixes the chunk's time, not its size: the longer the history a
chunk attends to, the fewer tokens it may carry.""", title="Worked answer 5")

# %% [markdown]
# Previous: [17.5 PagedAttention](17_05_paged_attention.ipynb); next:
# [17.7 Tensor and pipeline parallelism](17_07_parallelism.ipynb).
#
# > **What you can now compute**
# >
# > - The worst ITL and the long prompt's TTFT for a given chunk size, and the chunk size that meets an ITL bound ([Exercise 17-11](../../exercises/ex17_11.ipynb))
# > - How long a long prefill stalls a running batch when it is not chunked ([Exercise 17-11](../../exercises/ex17_11.ipynb))
# > - How many sequences a continuously batched, paged KV pool can keep decoding at once, and the throughput that buys ([Exercise 17-12](../../exercises/ex17_12.ipynb))
# > - The batch to run when an ITL target and KV memory both limit it ([Exercise 17-10](../../exercises/ex17_10.ipynb))
# >
# > <details><summary>Assumptions this notebook made</summary>
# >
# > Prefill runs at a fixed 50% of peak whatever the chunk
# > size; reads run at the full HBM bandwidth; the running batch is one fixed set of decode
# > sequences, all at the same context (17 §5's chat length); the chapter's closed form adds a
# > decode step and a chunk's compute and leaves attention out, while the fused model is still a
# > roofline bound (no kernel launch, scheduling or sampling time); the simulator's queues are
# > deterministic (every request arrives as listed and emits exactly its output length).
# >
# > </details>
