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
# # 8.1 A request's life: time and memory
#
# **The question.** When does a user see the first token and the last token of an answer,
# and how many users' requests can the instance hold in memory at once?
#
# Two budgets govern every later section of Chapter 8: a *time* budget per request (the 7 s
# deadline of the running example) and a *memory* budget per instance (32 GiB, of which
# 12 GiB go to the KV pool and auxiliary buffers). This notebook takes both apart for the chapter's short request, a
# 2048-token prompt answered with 256 tokens by Qwen3-8B on an RTX PRO 6000
# ([overview](08_0_overview.ipynb)). It takes 8.1.3's metrics straight after 8.1.1's timeline,
# because they are read off that timeline, and comes to memory (8.1.2) last.

# %%
from companion import calc, ledger, plots, specs, units, widgets
from companion.chapters import ch08
from companion.display import md

model = specs.QWEN3_8B
short_p, short_g = ch08.CHAPTER_REQUEST_TYPES["Short conversation"]
long_p, long_g = ch08.CHAPTER_REQUEST_TYPES["Long context"]

# %% [markdown]
# ## 8.1.1 Four phases of a request
#
# A request goes through four phases:
#
# 1. **Queue.** It waits until the scheduler picks it and finds KV memory for it.
# 2. **Prefill.** The whole prompt is known in advance, so the model processes all its tokens
#    in one pass (many tokens in parallel), storing each layer's keys and values. The last
#    prompt position yields the first output token.
# 3. **Decode.** Each new token is fed back in to produce the next one. One request can only
#    do this one token at a time, but the decode steps of *different* requests can run in the
#    same pass, which is where batching gets its throughput (8.2).
# 4. **Release.** Once the last token is out, the request's private KV is freed; a shared
#    prefix may stay cached for later requests (8.3).
#
# Two words recur from here on (8.1). A *batch* is the set of input tokens the card processes
# in one execution; a *scheduling iteration* is one pass of the scheduler: it chooses what the
# round runs, launches it and handles its results. A request spans many
# iterations, and the requests it is batched with may change from one to the next.
#
# The chapter measures the short request alone (Experiment 8-1): 0.096 s for prefill and the
# first token, then one token every 26.5 ms on average. With an assumed 0.1 s in the queue,
# the emission times of all 256 tokens are
#
# $$t_1 = t_\text{queue} + t_\text{prefill}, \qquad t_{j+1} = t_j + \text{interval}.$$
#
# Figure 8-2 draws them. The second row is the same request when one other request's prefill
# (also 0.096 s) is squeezed in between two of its tokens: nothing about its own work changed,
# only the order of execution.

# %%
alone = widgets.timeline_scenario("alone", ch08.QUEUE_S, ch08.PREFILL_S, ch08.CLIENT_ITL_S,
                                  short_g)
busy = widgets.timeline_scenario(
    "one prefill inserted", ch08.QUEUE_S, ch08.PREFILL_S, ch08.CLIENT_ITL_S, short_g,
    stall_s=ch08.PREFILL_S,
    stalled_intervals=widgets.stalled_interval_positions(short_g, 1))
for s in (alone, busy):
    times = s["token_times_s"]
    print(f"{s['label']:22} first token {calc.ttft_s(times):.3f} s, last token "
          f"{calc.request_time_s(times):.2f} s, longest interval "
          f"{max(calc.inter_token_intervals(times)) / units.ms:.1f} ms")
plots.request_timeline_figure([alone, busy], deadline_s=ch08.DEADLINE_S).show()

# %% [markdown]
# Alone, the request ends just before the deadline; with one foreign prefill in the middle it
# ends just after it. The first token splits the timeline into two parts that later sections
# attack separately: everything before it (queueing, prefill) sets when the user sees a
# response; the intervals after it set when the answer is complete.

# %% [markdown]
# ## 8.1.3 From a timeline to metrics
#
# With arrival time $t_a$ and the $G$ output tokens returned at $t_1, \dots, t_G$:
#
# $$\mathrm{TTFT} = t_1 - t_a, \qquad \mathrm{ITL}_j = t_{j+1} - t_j \ (j = 1, \dots, G-1),$$
#
# $$T = \mathrm{TTFT} + \sum_{j=1}^{G-1} \mathrm{ITL}_j = t_G - t_a.$$
#
# TTFT is *not* one of the intervals: $G$ tokens have $G - 1$ intervals. The companion computes
# all three from the emission times above. A service-level objective (*SLO*) turns what users
# need into limits on these metrics; the running example's SLO is that $T$ stays within 7 s,
# and the scheduling sections also compare the longest output interval.

# %%
times = alone["token_times_s"]
intervals = calc.inter_token_intervals(times)
print(f"TTFT                    {calc.ttft_s(times):.3f} s")
print(f"output intervals        {len(intervals)}, summing to {sum(intervals):.2f} s")
print(f"request time            {calc.request_time_s(times):.2f} s")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
delivery_ms = (ch08.CLIENT_ITL_S - ch08.ROUND_B1_S) / units.ms
md(f"""These are per-request numbers. The instance as a whole is judged by throughput, the
tokens it produces per second over all requests. One decode round that advances
16 requests yields 16 tokens; Experiment 8-1 measures such a round
at {ch08.ROUND_B16_S / units.ms:.2f} ms, against {ch08.ROUND_B1_S / units.ms:.2f} ms for a round
with one request. Both come from the engine's own log of its rounds. The
{ch08.CLIENT_ITL_S / units.ms:g} ms interval of the timeline above is what the *client*
measures between tokens, which also includes handing each token over to it (8.6.3): the
{delivery_ms:.2f} ms between the two numbers is delivery, not computation.""")

# %%
for n, round_s in ((16, ch08.ROUND_B16_S), (1, ch08.ROUND_B1_S)):
    print(f"{n:2d} request(s) per round, {round_s / units.ms:.2f} ms per round: "
          f"{calc.decode_tokens_per_s(n, round_s):,.0f} tokens/s")
print(f"16x the tokens per round for {(ch08.ROUND_B16_S / ch08.ROUND_B1_S - 1) * 100:.1f}% more "
      f"time per round")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
reads = {r["batch"]: r for r in calc.decode_efficiency_table()}
md(f"""Many times the output for barely more time per round: that asymmetry is what 8.2 explains.
Do not credit it all to the shared weight read. At peak bandwidth the bytes of a round take
{reads[1]['read_s'] / units.ms:.2f} ms at batch 1 and {reads[16]['read_s'] / units.ms:.2f} ms at
batch 16, {(reads[16]['read_s'] / reads[1]['read_s'] - 1) * 100:.0f}% more, since every request
reads its own KV. The measured rounds rise only
{(ch08.ROUND_B16_S / ch08.ROUND_B1_S - 1) * 100:.1f}% because about
{reads[1]['gap_s'] / units.ms:.1f} ms of each is fixed host overhead that the batch does not
add to (8.6.3). The chapter also keeps answer quality in view: a fast wrong answer is not
served work (8.6).""")

# %% [markdown]
# ## 8.1.2 What must fit in memory
#
# A card's memory holds four things at once, and they must fit its capacity $C$:
#
# $$M_w + M_{KV} + M_a + M_u \le C,$$
#
# the resident weights $M_w$, the physical KV blocks $M_{KV}$ (a block shared by several
# requests counts once), activations and workspace $M_a$, and other buffers $M_u$ such as the
# fixed inputs that CUDA-graph replay needs. The weights are loaded before any request
# arrives; the KV grows with every request admitted and every token generated. On a multi-card
# instance the same sum must hold on *each* card separately.

# %%
instance = calc.memory_budget(ch08.INSTANCE_MEM_BYTES, model.weight_bytes, ch08.KV_BUDGET_BYTES)
print(f"weights {instance.weight_bytes / units.GiB:.1f} GiB + KV pool "
      f"{instance.kv_pool_bytes / units.GiB:.0f} GiB in C = "
      f"{instance.capacity_bytes / units.GiB:.0f} GiB leaves "
      f"{instance.slack_bytes / units.GiB:.1f} GiB for activations and graph buffers")
plots.memory_budget_figure([("32 GiB instance", instance)], hide_empty=True).show()

# %% [markdown]
# ### KV per token
#
# Every token of context keeps a key and a value vector for every KV head of every layer:
#
# $$k = 2 \times n_\text{layers} \times n_\text{kv} \times d_\text{head} \times
# s_\text{value} = 2 \times 36 \times 8 \times 128 \times 2\ \text{B}.$$

# %%
k = calc.kv_bytes_per_token(model)
print(f"k = {k:,} B = {k / units.KiB:.0f} KiB per token")
print(f"a {short_p:,}-token prompt: {calc.kv_bytes(model, short_p) / units.MiB:,.0f} MiB; "
      f"an {long_p:,}-token prompt: {calc.kv_bytes(model, long_p) / units.MiB:,.0f} MiB "
      f"({calc.kv_bytes(model, long_p) / units.GiB:.3f} GiB)")
print(f"{ch08.LONG_BATCH} long prompts: "
      f"{ch08.LONG_BATCH * calc.kv_bytes(model, long_p) / units.GiB:.0f} GiB, "
      f"against a {ch08.KV_BUDGET_BYTES / units.GiB:.0f} GiB pool")

# %% [markdown]
# ### Reserve for the end of generation, in whole blocks
#
# KV keeps growing during decode. The first output token comes out of prefill; every later
# one is produced by feeding the previous output back in, which writes that output's KV. The
# very last output is returned but never fed back, so a finished request holds its prompt plus
# $G - 1$ outputs. The allocator hands out 16-token blocks, so that count rounds up to a
# multiple of 16. Admitting a request only when its *final*
# reservation fits means it can never run out of memory halfway through its answer.

# %%
rows = calc.kv_capacity_table(model, ch08.KV_BUDGET_BYTES)
print(widgets.kv_capacity_text(model, ch08.KV_BUDGET_BYTES))
short = rows[0]
print(f"\nsized at prefill instead, {short['fit_if_sized_at_prefill']} short requests would be "
      f"admitted, and after {short['output_tokens']} outputs they would need "
      f"{short['final_bytes_if_sized_at_prefill'] / units.MiB:,.0f} MiB of the "
      f"{ch08.KV_BUDGET_BYTES / units.MiB:,.0f} MiB pool")
plots.kv_capacity_figure(rows, ch08.KV_BUDGET_BYTES).show()

# %% [markdown]
# The long request's first 6144 tokens are the same system prompt for everyone. Stored once
# instead of per request, they take one copy, and each request keeps only its private part;
# section 8.3 turns that into a capacity.

# %%
print(f"shared prefix: {calc.kv_bytes(model, ch08.SHARED_PREFIX_TOKENS) / units.MiB:,.0f} MiB; "
      f"the rest of a long prompt: "
      f"{calc.kv_bytes(model, long_p - ch08.SHARED_PREFIX_TOKENS) / units.MiB:,.0f} MiB")

# %% [markdown]
# ## Chapter says / companion computes
#
# Every number of the chapter's opening and of 8.1, recomputed (the `ok` column compares at
# the chapter's printed rounding; `*` marks an entry with a note in the
# [ledger](../ledger.ipynb)).

# %%
ledger.show("8.1")

# %% [markdown]
# ## Explorer: memory budget and KV capacity
#
# Change the model, the KV format, the prompt and output lengths, the block size, the KV pool
# or the instance size. The top bar is the instance's memory; the lower plot shows, on a log
# scale, how many requests of each prompt length fit when each reserves its final KV (solid),
# how many a scheduler that sized them at prefill would admit (dotted; they would run out
# mid-answer) and how many fit by what they hold on average (dashed; see below). The button
# restores the chapter's setting.

# %% tags=["nbval-ignore-output"]
memory = widgets.MemoryBudgetPanel()
memory.show()

# %%
for key, value in memory.at().numbers.items():
    print(f"{key:28} {value:,.3f}" if isinstance(value, float) else f"{key:28} {value}")

# %% [markdown]
# ## Explorer: the timeline against the deadline
#
# Move the queueing time, the prefill time, the output interval and the output length, and
# insert other requests' prefills into this request's decode phase. The second row is the
# request with the prefills you insert (none at the chapter's setting, so it matches the
# first). The readout tells how many such insertions the request can absorb before it misses
# the deadline, and warns when the output interval is shorter than reading the weights once
# allows. The prefill sliders start at the fixed part of 8.2.2's round fit, the shortest pass
# that fit prices.

# %% tags=["nbval-ignore-output"]
timeline = widgets.RequestTimelinePanel()
timeline.show()

# %%
for inserted in (0, 1):
    numbers = timeline.at(inserted_prefills=inserted).numbers
    print(f"{inserted} inserted: TTFT {numbers['ttft_s']:.3f} s, request "
          f"{numbers['request_time_s']:.2f} s, longest interval "
          f"{numbers['longest_interval_ms']:.1f} ms, meets the deadline: "
          f"{numbers['meets_deadline']}")
# %% [markdown]
# ## Where this model breaks: one interval for every token
#
# A prefill that joins a decode step's forward pass shares that pass's fixed cost (one read of
# the weights, one round of kernel submissions), so it stretches the interval by less than its
# own time; the timeline explorer's *an inserted prefill runs* menu switches between the two.

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the table below
from companion import tables


def ends(n):
    """The request's end and its margin against the deadline, as a table cell."""
    late = n["margin_s"] < 0
    return (f"{n['request_time_s']:.3f} s, {abs(n['margin_s']) / units.ms:,.0f} ms "
            f"{'late' if late else 'to spare'}")


t_ctl = {c.name: c for c in timeline.controls}
most, shortest_ms = t_ctl["inserted_prefills"].max, t_ctl["inserted_prefill_ms"].min
t_settings = {f"1 prefill of {ch08.PREFILL_S / units.ms:.0f} ms (the chapter)":
              dict(inserted_prefills=1),
              f"{most} prefills of {shortest_ms:g} ms (the slider's shortest)":
              dict(inserted_prefills=most, inserted_prefill_ms=shortest_ms)}
pass_rows = {label: {way: timeline.at(inserted_pass=way, **kw).numbers
                     for way in ("own", "shared")}
             for label, kw in t_settings.items()}
md(tables.markdown_table(("setting (request's end, against the deadline)",
                          "chapter's model (own pass)", "fuller model (shared pass)"),
                         [(label, ends(r["own"]), ends(r["shared"]))
                          for label, r in pass_rows.items()]))

# %% [markdown] jp-MarkdownHeadingCollapsed=true
# #### In detail
#
# The shared pass priced, and the growing context too.
#
# <!-- fold: the fuller model, its numbers and where it parts from the chapter's -->

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
one, small = pass_rows.values()
small_tokens = (shortest_ms * units.ms - ch08.ROUND_FIXED_S) / ch08.ROUND_PER_TOKEN_S
shared_stall = calc.inserted_prefill_stall_s(ch08.PREFILL_S, fused=True)


def side(n):
    """How far before or after the deadline a request ends."""
    return (f"{abs(n['margin_s']) / units.ms:,.0f} ms "
            f"{'before' if n['margin_s'] >= 0 else 'after'}")


g_max = t_ctl["output_tokens"].max
added = {g: sum(iv) - len(iv) * ch08.CLIENT_ITL_S
         for g in (short_g, g_max)
         for iv in [calc.context_growth_intervals_s(model, ch08.CLIENT_ITL_S, short_p, g)]}
md(f"""**The shared pass.** An engine that batches continuously (8.2.2) runs a newcomer's
prompt in the same forward pass as this request's next decode step. 8.2.2's fit prices a pass
as a fixed {ch08.ROUND_FIXED_S / units.ms:.2f} ms (reading the weights, submitting the kernels)
plus {ch08.ROUND_PER_TOKEN_S / units.us:.1f} µs per new token and
{ch08.ROUND_PER_PAIR_S / units.ns:g} ns per query-key pair; a shared pass pays the fixed part
once, so the interval grows by the prefill minus that part
(`calc.inserted_prefill_stall_s`): the chapter's {ch08.PREFILL_S / units.ms:.0f} ms prefill
adds {shared_stall / units.ms:.2f} ms and stretches it to
{one['shared']['longest_interval_ms']:.1f} ms instead of
{one['own']['longest_interval_ms']:.1f} ms. The verdict stands (the request still misses),
but by less. No pass of that fit is shorter than its fixed part, so the prefill sliders start
there: the shortest, {shortest_ms:g} ms, is a chunk of about {small_tokens:.0f} new tokens. In
a shared pass each such chunk costs only its per-token terms, so {most} of them end the request
{side(small['shared'])} the deadline, where {most} passes of their own end it
{side(small['own'])} it. Short prefills (short
prompts, chunks of a long one) are where the two models part.

**The growing context.** Each decode step reads the KV of every token before it, so later
steps read a little more. The {ch08.CLIENT_ITL_S / units.ms:g} ms interval is the client's
average over the answer, so it already contains that growth; `calc.context_growth_intervals_s`
prices it from Experiment 8-1's rounds and adds it on top, which bounds what treating every
interval alike can miss: {added[short_g] / units.ms:.1f} ms over {short_g} outputs and
{added[g_max] / units.ms:.0f} ms over the explorer's {g_max:,}. It is small because each step
reads {model.streamed_weight_bytes / units.GiB:.1f} GiB of weights beside
{calc.kv_bytes(model, short_p) / units.GiB:.2f} GiB of KV; it matters with many long contexts in
one batch, where the KV is most of what a round reads (8.2.1).""")

# %% [markdown]
# ## Where this model breaks: reserving the whole answer up front
#
# A request's KV grows by one token per decode step, so over its life it holds on average much
# less than the final size that 8.1.2 reserves for it; the memory explorer's dashed curve counts
# the requests that fit by that average.

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the table below
m_ctl = {c.name: c for c in memory.controls}
shapes = {"short request (the chapter)": dict(),
          "long request (the chapter)": dict(prompt_tokens=long_p),
          f"{m_ctl['prompt_tokens'].min}-token prompt, {m_ctl['output_tokens'].max:,} outputs":
          dict(prompt_tokens=m_ctl["prompt_tokens"].min, output_tokens=m_ctl["output_tokens"].max)}
held_rows = {label: memory.at(**kw).numbers for label, kw in shapes.items()}
sh, lo, gen = held_rows.values()
md(tables.markdown_table(
    ("setting (requests in the pool)", "chapter's model (reserved)",
     "fuller model (held on average)", "fuller / chapter"),
    [(label, n["requests_that_fit"], n["fit_by_mean_holding"],
      f"{n['fit_by_mean_holding'] / n['requests_that_fit']:.2f}")
     for label, n in held_rows.items() if n is not lo]))

# %% [markdown] jp-MarkdownHeadingCollapsed=true
# #### In detail
#
# What a request holds, round by round.
#
# <!-- fold: the fuller model, its numbers and where it parts from the chapter's -->

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
short_held = calc.kv_held_over_answer(model, ch08.KV_BUDGET_BYTES, short_p, short_g)
one_token = memory.at(prompt_tokens=long_p, output_tokens=m_ctl["output_tokens"].min).numbers
long_gain = (f"{lo['fit_by_mean_holding']} long ones instead of {lo['requests_that_fit']}"
             if lo["fit_by_mean_holding"] != lo["requests_that_fit"] else
             f"no more long ones ({lo['requests_that_fit']} either way)")
md(f"""8.1.2 admits a request only when its final KV fits, so it never runs out halfway, but it
holds that much only in its last round: after prefill it holds its prompt, and one token more
after each decode step. `calc.kv_held_over_answer` averages what it holds over its rounds;
that is also what requests started at staggered times hold per request at any moment, so it
counts the requests a scheduler that admits by what is held now (and evicts one when a run of
long answers overflows the pool, 8.3) keeps running on average. A short request reserves
{short_held['reserved_bytes'] / units.MiB:,.0f} MiB and holds
{short_held['mean_held_bytes'] / units.MiB:,.0f} MiB on average
({sh['reservation_used_on_average']:.0%}), which would run
{sh['fit_by_mean_holding']} short requests instead of {sh['requests_that_fit']} and
{long_gain}: the guarantee costs little while the answer is short next to the prompt, and
nothing for a one-token answer ({one_token['reservation_used_on_average']:.0%} used). A long
answer after a short prompt uses only {gen['reservation_used_on_average']:.0%} of it, half the
pool left idle: reasoning and code are where admitting by what is held, and preempting on
overflow, pays. The chapter fixes every answer at {short_g} tokens; real answers stop early,
so a reservation sized for the longest permitted answer wastes more.""")

# %% [markdown]
# ## Where this model breaks: throughput from decode rounds alone
#
# No output appears while a batch's prompts are being prefilled, so the rate over a whole batch
# cycle, prefill included, is lower than the rate of its decode rounds.

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the table below
prefill_rows = {r["batch"]: r for r in calc.prefill_efficiency_row()}
cycle = {}
for c_b, c_round in zip(ch08.EXP81_BATCHES, ch08.EXP81_ROUND_S):
    cycle[c_b] = (calc.decode_tokens_per_s(c_b, c_round),
                  calc.batch_cycle_throughput(c_b, short_g, prefill_rows[c_b]["prefill_s"],
                                              c_round))
md(tables.markdown_table(
    ("setting", "chapter's model (decode rounds)", "fuller model (whole cycle)",
     "fuller / chapter"),
    [(f"batch {b}" + (" (the chapter)" if b == ch08.LONG_BATCH else ""),
      f"{cycle[b][0]:,.0f} tok/s", f"{cycle[b][1]:,.0f} tok/s", f"{cycle[b][1] / cycle[b][0]:.2f}")
     for b in (ch08.LONG_BATCH, ch08.EXP81_BATCHES[-1])]))

# %% [markdown] jp-MarkdownHeadingCollapsed=true
# #### In detail
#
# The cycle's formula, and the batch sweep beside it.
#
# <!-- fold: the fuller model, its numbers and where it parts from the chapter's -->

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
import math

b_top = ch08.EXP81_BATCHES[-1]
sweep = {k: dict(zip(ch08.BATCH_SWEEP_MEASURED["batch"], v))
         for k, v in ch08.BATCH_SWEEP_MEASURED.items() if k in ("tokens_per_s", "ttft_s", "itl_s")}
round_top = dict(zip(ch08.EXP81_BATCHES, ch08.EXP81_ROUND_S))[b_top]
pre_top = prefill_rows[b_top]["prefill_s"]
moved_s = (short_g - 1) * (sweep["itl_s"][b_top] - round_top)
end_formula = pre_top + (short_g - 1) * round_top
end_sweep = sweep["ttft_s"][b_top] + (short_g - 1) * sweep["itl_s"][b_top]
sweep_end_rate = b_top * short_g / end_sweep
md(f"""8.1.3 divides the tokens of one decode round by its time: the rate between a batch's
first tokens and its last. For $b$ requests that arrive together and each emit $G$ tokens,
the rate over the whole cycle is $bG / (t_\\text{{prefill}}(b) + (G - 1)\\,T_r(b))$
(`calc.batch_cycle_throughput`), with $T_r$ Experiment 8-1's measured decode round and
$t_\\text{{prefill}}(b)$ the time to prefill $b$ prompts at the efficiency that experiment
measured (8.6.3, `calc.prefill_efficiency_row`). At batch 1 the cycle runs only
{1 - cycle[1][1] / cycle[1][0]:.0%} below the decode-only rate; at batch {b_top} the prefill
puts {pre_top:.2f} s before any first token. The batch sweep of 8.2.1 measures a real engine; this
notebook's reading of its numbers (not a claim of the chapter) is that it interleaves prompt
chunks with decode steps, so a first token
comes after about {sweep['ttft_s'][b_top]:.2f} s rather than after the whole batch's prefill, and
its
output interval grows from the {round_top / units.ms:.2f} ms of a decode-only round to
{sweep['itl_s'][b_top] / units.ms:.0f} ms, because rounds carry prefill beside decoding: over
{short_g - 1} intervals that is {moved_s:.2f} s of prefill paid inside the answer. Up front or
spread, the prefill is paid once (last token after {end_formula:.1f} s in the formula,
{end_sweep:.1f} s in the sweep), which is why the cycle's {cycle[b_top][1]:,.0f} tokens/s comes
within about {math.ceil(100 * max(abs(cycle[b_top][1] / x - 1) for x in (sweep['tokens_per_s'][b_top], sweep_end_rate)))}%
of the sweep (its reported {sweep['tokens_per_s'][b_top]:,.0f}, or the
{sweep_end_rate:,.0f} its own last token at {end_sweep:.1f} s implies) and the decode-only
{cycle[b_top][0]:,.0f} does not. The decode-only rate fits a steady stream whose prefills are
spread over many rounds; for a batch that arrives at once, and for short answers after long
prompts, the prefill is a large share of the cycle.""")

# %% [markdown]
# ## Try this
#
# 1. **Predict, then move.** Put one other request's prefill into the timeline explorer. Guess
#    how much shorter the queue has to be for the answer to make the deadline again, then drag
#    the queue slider down until it does. Then put the queue back and set the output interval
#    to the engine's 26.26 ms round in place of the client's 26.5 ms, as if delivering each
#    token cost nothing: does that rescue the request, and could it pay for a whole prefill?
#    <!-- states: timeline(inserted_prefills=1); timeline(inserted_prefills=1, queue_ms=...); timeline(inserted_prefills=1, interval_ms=ch08.ROUND_B1_S / ms) -->
# 2. Ask for 512 output tokens instead of 256. Which phase of the timeline now dominates, what
#    output interval would still finish inside the 7 s deadline, and what on this card would
#    have to change to get it?
#    <!-- states: timeline(output_tokens=512) -->
# 3. **Predict, then move.** In the memory explorer, set the prompt to 8192 tokens and note how
#    many requests fit. Before switching the KV format to FP8, write down which readouts you
#    expect to double and which to stay put; then switch and check.
#    <!-- states: memory(prompt_tokens=8192); memory(prompt_tokens=8192, kv_precision=1.0) -->
# 4. Use 256-token blocks. How many of the short request's reserved slots are padding? Then
#    let it generate 300 tokens instead of 256 and compare with 16-token blocks (8.3.1 bounds
#    the padding by one block).
#    <!-- states: memory(block_tokens=256); memory(block_tokens=256, output_tokens=300); memory(output_tokens=300) -->
# 5. Pick the 70B shape of Chapter 17. Does the 32 GiB instance even hold its weights?
#    <!-- states: memory(model=specs.LLAMA_70B.name) -->

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
from companion.display import answer, md

import math

ms = units.ms
one = timeline.at(inserted_prefills=1)
queue_needed_ms = (ch08.QUEUE_S + one.numbers["margin_s"]) / ms
queue_on_slider = 10 * math.floor(queue_needed_ms / 10)    # the queue slider moves in 10 ms
shorter_queue = timeline.at(inserted_prefills=1, queue_ms=queue_on_slider)
engine = timeline.at(inserted_prefills=1, interval_ms=ch08.ROUND_B1_S / ms)
saved_s = one.numbers["request_time_s"] - engine.numbers["request_time_s"]
answer(f"""With one prefill inserted the request ends at {one.numbers['request_time_s']:.3f} s,
{-one.numbers['margin_s'] / ms:.0f} ms past the deadline. Every millisecond taken off the
queue moves the whole timeline left by a millisecond, so the queue has to drop from
{ch08.QUEUE_S / ms:.0f} ms to about {queue_needed_ms:.0f} ms (on the slider,
{queue_on_slider:.0f} ms leaves a margin of {shorter_queue.numbers['margin_s'] / ms:+.0f} ms).

With delivery costing nothing, each of the {short_g - 1} intervals shrinks to the engine's
{ch08.ROUND_B1_S / ms:.2f} ms round, {(ch08.CLIENT_ITL_S - ch08.ROUND_B1_S) / ms:.2f} ms less
than the client's {ch08.CLIENT_ITL_S / ms:g} ms: {short_g - 1} x
{(ch08.CLIENT_ITL_S - ch08.ROUND_B1_S) / ms:.2f} ms = {saved_s / ms:.0f} ms in all. The request
ends at {engine.numbers['request_time_s']:.3f} s and
{'meets' if engine.numbers['meets_deadline'] else 'still misses'} the deadline (margin
{engine.numbers['margin_s'] / ms:+.0f} ms): the saving covers the
{-one.numbers['margin_s'] / ms:.0f} ms overshoot, but
{'not' if saved_s < ch08.PREFILL_S else 'also'} a whole {ch08.PREFILL_S / ms:.0f} ms prefill.
The lesson: a saving on the output interval counts once per interval, {short_g - 1} times
here, so a fraction of a millisecond per token adds up to tens of milliseconds per request.""", title="Worked answer 1")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
long_answer = timeline.at(output_tokens=512)
decode_s = long_answer.numbers["request_time_s"] - long_answer.numbers["ttft_s"]
needed_interval = (ch08.DEADLINE_S - long_answer.numbers["ttft_s"]) / (2 * short_g - 1)
b1 = calc.decode_efficiency_table()[0]      # Experiment 8-1's batch-1 round (8.6.3)
answer(f"""With {2 * short_g} tokens the request takes {long_answer.numbers['request_time_s']:.2f} s:
{decode_s:.2f} s of it are the {2 * short_g - 1} output intervals and only
{long_answer.numbers['ttft_s']:.3f} s come before the first token, so decode is almost the whole
story. To finish within {ch08.DEADLINE_S:g} s, each interval may last at most
(deadline - TTFT) / (G - 1) = {needed_interval / ms:.1f} ms, about half of today's
{ch08.CLIENT_ITL_S / ms:g} ms.

Can this card do that? Reading the weights and the KV once at
{specs.RTX_PRO_6000.mem_bw_bytes_per_s / units.GB:,.0f} GB/s takes {b1['read_s'] / ms:.2f} ms
({b1['read_bytes'] / units.GB:.2f} GB, 8.6.3), so {needed_interval / ms:.1f} ms is well above
that floor: the bandwidth allows it. But the measured {b1['round_s'] / ms:.2f} ms round is mostly not reading:
{b1['gap_s'] / ms:.1f} ms of it is submitting kernels one at a time and host-side scheduling
(Experiment 8-1 ran without CUDA Graphs). Capturing the step as a CUDA Graph and scheduling
better attack that part; a card with more bandwidth would shrink only the
{b1['read_s'] / ms:.2f} ms. For a long answer the output interval, not the prefill, decides
whether the deadline holds, and at batch 1 that interval is mostly overhead. Even with all the
overhead gone the round would have to read at {100 * b1['read_s'] / needed_interval:.0f}% of peak
bandwidth ({b1['read_s'] / ms:.2f} / {needed_interval / ms:.1f} ms), about the
{100 * calc.decode_efficiency_table()[-1]['mbu']:.0f}% that Experiment 8-1 measured only at batch
{calc.decode_efficiency_table()[-1]['batch']} (8.6.3).""",
       title="Worked answer 2")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
bf16 = memory.at(prompt_tokens=8192).numbers
fp8 = memory.at(prompt_tokens=8192, kv_precision=1.0).numbers
answer(f"""At {long_p:,} prompt tokens each request reserves {bf16['reserved_MiB']:,.0f} MiB, and
{bf16['requests_that_fit']} of them fit in the pool. FP8 stores each key and value in one byte
instead of two: the KV per token falls from {bf16['kv_per_token_KiB']:.0f} to
{fp8['kv_per_token_KiB']:.0f} KiB, every request reserves {fp8['reserved_MiB']:,.0f} MiB, and the
count becomes {fp8['requests_that_fit']}, twice as many up to rounding. What does not move: the
tokens held ({fp8['held_tokens']:,}), the slots reserved in blocks ({fp8['allocated_tokens']:,}),
the weights ({fp8['weights_GiB']:.1f} GiB) and the slack left for activations. FP8 changes the
bytes each token takes, never the tokens: only what is counted in bytes moves, and with it how
many requests fit.""",
       title="Worked answer 3")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
def padding(n):
    return n["allocated_tokens"] - n["held_tokens"], n


pad_256, big = padding(memory.at(block_tokens=256).numbers)
pad_300_256, big_300 = padding(memory.at(block_tokens=256, output_tokens=300).numbers)
pad_300_16, small_300 = padding(memory.at(output_tokens=300).numbers)
answer(f"""Only {pad_256} slot: the short request holds {big['held_tokens']:,} tokens at the end,
one short of a multiple of 256 ({big['allocated_tokens']:,}), so large blocks happen to cost
nothing here. With 300 outputs it holds {big_300['held_tokens']:,} tokens: 256-token blocks
reserve {big_300['allocated_tokens']:,} slots, {pad_300_256} of them padding
({pad_300_256 / big_300['allocated_tokens']:.0%}), while 16-token blocks pad only
{pad_300_16}. Both stay below one block, as 8.3.1's bound says; the pool admits
{big_300['requests_that_fit']} such requests with 256-token blocks and
{small_300['requests_that_fit']} with 16-token ones. Large blocks cost at most one block per
request, which matters only while a request is short next to the block.""", title="Worked answer 4")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
seventy = memory.at(model=specs.LLAMA_70B.name).numbers
answer(f"""No. The 70B shape's BF16 weights alone take {seventy['weights_GiB']:.0f} GiB, so with
the {ch08.KV_BUDGET_BYTES / units.GiB:.0f} GiB KV pool and auxiliary buffers the instance is short by
{-seventy['left_for_activations_GiB']:.0f} GiB before a single activation. Its KV is also
{seventy['kv_per_token_KiB']:.0f} KiB per token, so the same pool would hold only
{seventy['requests_that_fit']} short requests anyway. In BF16 it needs a larger instance or
several cards (Chapter 17 §7). FP8 weights halve it to about
{seventy['weights_GiB'] / 2:.0f} GiB, which fits one whole card of
{specs.RTX_PRO_6000.mem_bytes / units.GiB:.1f} GiB with room for KV (weight quantization, 8.4.1), though not the
32 GiB instance.""", title="Worked answer 5")

# %% [markdown]
# **Exercises.** 8.1 has no exercise of its own; its numbers feed the exercises below.
# Next: [8.2 Batching and scheduling](08_2_batching_and_scheduling.ipynb).
#
# > **What you can now compute**
# > - the KV bytes per token of a model from its layers, KV heads and head size, and a request's reservation in whole blocks ([Exercise 8-1](../../exercises/ex8_1.ipynb))
# > - how many requests a KV pool admits when each reserves its KV for the whole answer ([Exercise 8-3](../../exercises/ex8_3.ipynb))
# > - a request's TTFT, output intervals and end-to-end time from its phases, and what an inserted prefill does to them (the timeline explorer above; [Exercise 8-2](../../exercises/ex8_2.ipynb) then picks a prefill chunk size from an output-interval target)
# > - whether weights, KV pool and workspace fit an instance's memory ([Exercise 8-9](../../exercises/ex8_9.ipynb))
# >
# > <details><summary>Assumptions this notebook made</summary>
# >
# > The request runs alone on the card except for the
# > prefills inserted into it, and waits an assumed 0.1 s in the queue; every output interval is
# > the client's measured average (the growing context changes it by well under a millisecond);
# > an inserted prefill is a pass of its own unless the toggle puts it in the shared pass, whose
# > saving is 8.2.2's fitted fixed part; every request of a type has the same prompt and answer
# > length (2,048 or 8,192 tokens, then 256), KV lives in 16-token blocks and is reserved for the
# > whole answer at admission, and the KV pool is the only memory that grows; the average
# > holding assumes requests start at evenly staggered times; the whole-cycle throughput uses
# > Experiment 8-1's measured rounds and prefill efficiencies for a batch that arrives at once.
# >
# > </details>
