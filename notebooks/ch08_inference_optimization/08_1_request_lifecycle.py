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
# 12 GiB is KV cache). This notebook takes both apart for the chapter's short request, a
# 2048-token prompt answered with 256 tokens by Qwen3-8B on an RTX PRO 6000
# ([overview](08_0_overview.ipynb)).

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
# all three from the emission times above.

# %%
times = alone["token_times_s"]
intervals = calc.inter_token_intervals(times)
print(f"TTFT                    {calc.ttft_s(times):.3f} s")
print(f"output intervals        {len(intervals)}, summing to {sum(intervals):.2f} s")
print(f"request time            {calc.request_time_s(times):.2f} s")

# %% [markdown]
# These are per-request numbers. The instance as a whole is judged by throughput, the tokens
# it produces per second over all requests. One decode round that advances 16 requests yields
# 16 tokens; Experiment 8-1 measures such a round at 27.44 ms, against 26.26 ms for a round
# with one request:

# %%
for n, round_s in ((16, ch08.ROUND_B16_S), (1, ch08.ROUND_B1_S)):
    print(f"{n:2d} request(s) per round, {round_s / units.ms:.2f} ms per round: "
          f"{calc.decode_tokens_per_s(n, round_s):,.0f} tokens/s")
print(f"16x the tokens per round for {(ch08.ROUND_B16_S / ch08.ROUND_B1_S - 1) * 100:.1f}% more "
      f"time per round")

# %% [markdown]
# Many times the output for barely more time per round: that asymmetry is what 8.2 explains.
# The chapter also keeps answer quality in view: a fast wrong answer is not served work (8.6).

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
plots.memory_budget_figure([("32 GiB instance", instance)]).show()

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
# or the instance size. The top bar is the instance's memory; the lower plot shows how many
# requests of each prompt length fit when each reserves its final KV (solid) and how many a
# scheduler that sized them at prefill would admit (dotted; they would run out mid-answer).
# The button restores the chapter's setting.

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
# insert other requests' prefills into this request's decode phase. The readout tells how many
# such insertions the request can absorb before it misses the deadline.

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
# the weights, one set of kernel launches), so it stretches the interval by less than its own
# time; the timeline explorer's *an inserted prefill runs* menu switches between the two.

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the table below
from companion import tables

t_ctl = {c.name: c for c in timeline.controls}
t_rows = []
for t_label, t_kw in ((f"1 prefill of {ch08.PREFILL_S / units.ms:.0f} ms (the chapter)",
                       dict(inserted_prefills=1)),
                      (f"{t_ctl['inserted_prefills'].max} prefills of "
                       f"{t_ctl['inserted_prefill_ms'].min:g} ms",
                       dict(inserted_prefills=t_ctl["inserted_prefills"].max,
                            inserted_prefill_ms=t_ctl["inserted_prefill_ms"].min))):
    t_own = timeline.at(inserted_pass="own", **t_kw).numbers["request_time_s"]
    t_shared = timeline.at(inserted_pass="shared", **t_kw).numbers["request_time_s"]
    t_rows.append((t_label, f"{t_own:.2f} s", f"{t_shared:.2f} s", f"{t_shared / t_own:.2f}"))
md(tables.markdown_table(("setting (request's end)", "chapter's model (own pass)",
                          "fuller model (shared pass)", "fuller / chapter"), t_rows))

# %% [markdown] jp-MarkdownHeadingCollapsed=true
# #### In detail
#
# The shared pass priced, and the growing context too.
#
# <!-- fold: the fuller model, its numbers and where it parts from the chapter's -->

# %% [markdown]
# The timeline gives every output the same interval and charges an inserted prefill its whole
# standalone time on top of the interval it lands in. Both are simplifications, and both can be
# priced with the chapter's own numbers.
#
# - **A shared pass.** An engine that batches continuously (8.2.2) runs the newcomer's prompt in
#   the same forward pass as this request's next decode step. Every pass pays a part that does
#   not depend on its tokens (reading the weights, launching the kernels: the fixed term of
#   8.2.2's round fit), and a shared pass pays it once, so the interval grows by the prefill
#   minus that part (`calc.inserted_prefill_stall_s`). An engine that gives each prefill a pass
#   of its own pays the chapter's sum. The timeline explorer has a toggle for the two.
# - **A growing context.** Each decode step reads the KV of every token before it, so a later
#   step reads a little more than an early one. `calc.context_growth_intervals_s` prices the
#   extra bytes along Experiment 8-1's measured decode rounds (round time against bytes read).

# %%
controls = {c.name: c for c in timeline.controls}
most, longest_ms = controls["inserted_prefills"].max, controls["inserted_prefill_ms"].max
shortest_ms = controls["inserted_prefill_ms"].min
settings = {f"the chapter: 1 prefill of {ch08.PREFILL_S / units.ms:.0f} ms":
            dict(inserted_prefills=1),
            f"{most} prefills of {longest_ms:,.0f} ms": dict(inserted_prefills=most,
                                                             inserted_prefill_ms=longest_ms),
            f"{most} prefills of {shortest_ms:,.0f} ms": dict(inserted_prefills=most,
                                                              inserted_prefill_ms=shortest_ms)}
pass_rows = {label: {way: timeline.at(inserted_pass=way, **kw).numbers for way in ("own", "shared")}
             for label, kw in settings.items()}
print(f"a {ch08.PREFILL_S / units.ms:.0f} ms prefill adds "
      f"{calc.inserted_prefill_stall_s(ch08.PREFILL_S) / units.ms:.2f} ms in a pass of its own, "
      f"{calc.inserted_prefill_stall_s(ch08.PREFILL_S, fused=True) / units.ms:.2f} ms in a "
      f"shared one\n")
print(f"{'inserted':34} {'own pass: longest':>18} {'request':>9} {'shared: longest':>16} "
      f"{'request':>9}")
for label, r in pass_rows.items():
    print(f"{label:34} {r['own']['longest_interval_ms']:>15,.1f} ms {r['own']['request_time_s']:>7.2f} s"
          f" {r['shared']['longest_interval_ms']:>13,.1f} ms {r['shared']['request_time_s']:>7.3f} s")
growth = {g: calc.context_growth_intervals_s(model, ch08.CLIENT_ITL_S, short_p, g)
          for g in (short_g, controls["output_tokens"].max)}
for g, iv in growth.items():
    print(f"{g:,} outputs: intervals from {iv[0] / units.ms:.3f} to {iv[-1] / units.ms:.3f} ms, "
          f"{(sum(iv) - len(iv) * ch08.CLIENT_ITL_S) / units.ms:.1f} ms added over the answer")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
one, big, small = (pass_rows[k] for k in settings)
added = {g: (sum(iv) - len(iv) * ch08.CLIENT_ITL_S) for g, iv in growth.items()}
g_max = controls["output_tokens"].max
md(f"""> **Where this model breaks: the output interval.** At the chapter's setting one inserted
> prefill stretches an interval to {one['own']['longest_interval_ms']:.1f} ms in a pass of its own
> and to {one['shared']['longest_interval_ms']:.1f} ms in a shared pass; the request ends at
> {one['own']['request_time_s']:.3f} s or {one['shared']['request_time_s']:.3f} s. Both miss the
> {ch08.DEADLINE_S:g} s deadline, so the chapter's verdict stands, but the overshoot shrinks from
> {-one['own']['margin_s'] * 1000:.0f} to {-one['shared']['margin_s'] * 1000:.0f} ms. At the
> explorer's extremes the gap is one fixed part per insertion: {most} prefills of
> {longest_ms:,.0f} ms cost {big['own']['request_time_s']:.1f} s against
> {big['shared']['request_time_s']:.1f} s, and {most} prefills of {shortest_ms:,.0f} ms, which the
> chapter's sum turns into {small['own']['request_time_s']:.2f} s and a missed deadline, ride
> free in a shared pass ({small['shared']['request_time_s']:.2f} s). It matters for short
> prefills (short prompts, chunks of a long one): a shared pass hides them almost entirely.
>
> The growing context does not matter at batch 1: over {short_g} outputs the intervals add
> {added[short_g] / units.ms:.1f} ms in all, and even at the explorer's {g_max:,} outputs only
> {added[g_max] / units.ms:.0f} ms, because each step reads
> {model.streamed_weight_bytes / units.GB:.1f} GB of weights beside
> {calc.kv_bytes(model, short_p) / units.GB:.2f} GB of KV. It matters with many long contexts in
> one batch, where the KV is most of what a round reads (8.2.1).""")

# %% [markdown]
# ## Where this model breaks: reserving the whole answer up front
#
# A request's KV grows by one token per decode step, so over its life it holds on average much
# less than the final size that 8.1.2 reserves for it; the memory explorer's dashed curve counts
# the requests that fit by that average.

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the table below
m_ctl = {c.name: c for c in memory.controls}
m_rows = []
for m_label, m_kw in (("short request (the chapter)", dict()),
                      (f"{m_ctl['prompt_tokens'].min}-token prompt, "
                       f"{m_ctl['output_tokens'].max:,} outputs",
                       dict(prompt_tokens=m_ctl["prompt_tokens"].min,
                            output_tokens=m_ctl["output_tokens"].max))):
    m_n = memory.at(**m_kw).numbers
    m_rows.append((m_label, m_n["requests_that_fit"], m_n["fit_by_mean_holding"],
                   f"{m_n['fit_by_mean_holding'] / m_n['requests_that_fit']:.2f}"))
md(tables.markdown_table(("setting (requests in the pool)", "chapter's model (reserved)",
                          "fuller model (held on average)", "fuller / chapter"), m_rows))

# %% [markdown] jp-MarkdownHeadingCollapsed=true
# #### In detail
#
# What a request holds, round by round.
#
# <!-- fold: the fuller model, its numbers and where it parts from the chapter's -->

# %% [markdown]
# 8.1.2 admits a request only when its final KV fits, so it can never run out halfway.
# A request holds that much only in its last round, though: after prefill it holds its prompt,
# and one more token after each decode step. `calc.kv_held_over_answer` averages what it holds
# over its rounds. That average is also what a pool of requests that started at staggered
# times holds per request at any moment, so it tells how many requests a scheduler that admits
# by what requests hold now (and evicts one when a run of long answers overflows the pool, see
# 8.3) keeps running on average. The memory explorer draws that count as a dashed curve.

# %%
mem_controls = {c.name: c for c in memory.controls}
shapes = {"short request (the chapter)": dict(),
          "long request (the chapter)": dict(prompt_tokens=long_p),
          "shortest prompt, longest answer": dict(
              prompt_tokens=mem_controls["prompt_tokens"].min,
              output_tokens=mem_controls["output_tokens"].max),
          "long prompt, shortest answer": dict(prompt_tokens=long_p,
                                               output_tokens=mem_controls["output_tokens"].min)}
held = calc.kv_held_over_answer(model, ch08.KV_BUDGET_BYTES, short_p, short_g)
print(f"the short request reserves {held['reserved_bytes'] / units.MiB:,.0f} MiB and holds "
      f"{held['mean_held_bytes'] / units.MiB:,.1f} MiB on average over its {short_g} rounds\n")
held_rows = {label: memory.at(**kw).numbers for label, kw in shapes.items()}
print(f"{'request':34} {'reserved':>10} {'held on average':>16} {'share':>6} "
      f"{'fit reserved':>13} {'fit by average':>15}")
for label, n in held_rows.items():
    print(f"{label:34} {n['reserved_MiB']:>6,.0f} MiB {n['mean_held_MiB']:>12,.0f} MiB "
          f"{n['reservation_used_on_average']:>6.0%} {n['requests_that_fit']:>13} "
          f"{n['fit_by_mean_holding']:>15}")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
sh, lo, gen, pre = (held_rows[k] for k in shapes)
md(f"""> **Where this model breaks: the reservation.** At the chapter's setting a short request
> holds on average {sh['reservation_used_on_average']:.0%} of what it reserves, so admitting by
> what requests hold would run {sh['fit_by_mean_holding']} short requests instead of
> {sh['requests_that_fit']}, and {lo['fit_by_mean_holding']} long ones instead of
> {lo['requests_that_fit']}: the guarantee costs little when the answer is short next to the
> prompt. At the explorer's extremes it costs up to half the pool: a
> {mem_controls['prompt_tokens'].min}-token prompt with {mem_controls['output_tokens'].max:,}
> outputs uses {gen['reservation_used_on_average']:.0%} of its reservation on average
> ({gen['requests_that_fit']} admitted against {gen['fit_by_mean_holding']} by the average),
> while a one-token answer uses {pre['reservation_used_on_average']:.0%} of it. Long answers (reasoning,
> code) are where a reserving scheduler leaves memory idle, and where admitting by what is held
> and preempting on overflow pays. The chapter fixes every answer at {short_g} tokens; real
> answers stop early, so a reservation sized for the longest permitted answer wastes more.""")

# %% [markdown]
# ## Where this model breaks: throughput from decode rounds alone
#
# No output appears while a batch's prompts are being prefilled, so the rate over a whole batch
# cycle, prefill included, is lower than the rate of its decode rounds.

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the table below
c_pre = {r["batch"]: r["prefill_s"] for r in calc.prefill_efficiency_row()}
c_rows = []
for c_b, c_round in zip(ch08.EXP81_BATCHES, ch08.EXP81_ROUND_S):
    if c_b in (ch08.LONG_BATCH, ch08.EXP81_BATCHES[-1]):
        c_dec = calc.decode_tokens_per_s(c_b, c_round)
        c_cyc = calc.batch_cycle_throughput(c_b, short_g, c_pre[c_b], c_round)
        c_rows.append((f"batch {c_b}" + (" (the chapter)" if c_b == ch08.LONG_BATCH else ""),
                       f"{c_dec:,.0f} tok/s", f"{c_cyc:,.0f} tok/s", f"{c_cyc / c_dec:.2f}"))
md(tables.markdown_table(("setting", "chapter's model (decode rounds)",
                          "fuller model (whole cycle)", "fuller / chapter"), c_rows))

# %% [markdown] jp-MarkdownHeadingCollapsed=true
# #### In detail
#
# The cycle's formula, and the batch sweep beside it.
#
# <!-- fold: the fuller model, its numbers and where it parts from the chapter's -->

# %% [markdown]
# 8.1.3 divides the tokens of one decode round by its time. That is the rate between a batch's
# first tokens and its last ones; before the first token the whole batch waits for its
# prefills. For $b$ requests that arrive together and each emit $G$ tokens, the rate over the
# whole cycle is
#
# $$\frac{b\,G}{t_\text{prefill}(b) + (G - 1)\,T_r(b)}$$
#
# (`calc.batch_cycle_throughput`). Below, $T_r$ is Experiment 8-1's measured decode round and
# $t_\text{prefill}(b)$ the time to prefill a batch of $b$ prompts at the efficiency that
# experiment measured (8.6.3's table, `calc.prefill_efficiency_row`). The batch sweep of 8.2.1
# measured the cycle at batches 1 and 64.

# %%
prefill_rows = {r["batch"]: r for r in calc.prefill_efficiency_row()}
sweep = dict(zip(ch08.BATCH_SWEEP_MEASURED["batch"], ch08.BATCH_SWEEP_MEASURED["tokens_per_s"]))
cycle = {}
print(f"{'batch':>5} {'decode round':>13} {'decode only':>12} {'prefill of b':>13} "
      f"{'whole cycle':>12} {'measured (sweep)':>17}")
for b, round_s in zip(ch08.EXP81_BATCHES, ch08.EXP81_ROUND_S):
    pre_s = prefill_rows[b]["prefill_s"]
    cycle[b] = (calc.decode_tokens_per_s(b, round_s),
                calc.batch_cycle_throughput(b, short_g, pre_s, round_s))
    seen = f"{sweep[b]:,.0f} tok/s" if b in sweep else "-"
    print(f"{b:>5} {round_s / units.ms:>10.2f} ms {cycle[b][0]:>8,.0f} t/s {pre_s:>11.2f} s "
          f"{cycle[b][1]:>8,.0f} t/s {seen:>17}")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
b16, b64, b1 = cycle[16], cycle[64], cycle[1]
md(f"""> **Where this model breaks: decode-only throughput.** At the chapter's setting (16 requests)
> the decode rounds run at {b16[0]:,.0f} tokens/s, but the whole cycle, with its
> {prefill_rows[16]['prefill_s']:.2f} s of prefill, delivers {b16[1]:,.0f} tokens/s,
> {1 - b16[1] / b16[0]:.0%} less. At the ends of the measured range the gap runs from
> {1 - b1[1] / b1[0]:.0%} at batch 1 to {1 - b64[1] / b64[0]:.0%} at batch 64, where the decode-only
> rate ({b64[0]:,.0f} tokens/s) is nearly twice what the batch sweep measured
> ({sweep[64]:,.0f}), while the cycle formula gives {b64[1]:,.0f}. (That the two land so
> close is partly luck: the sweep quotes rounded medians of a real engine that interleaves
> prefill chunks with decoding.) The
> decode-only rate is the right number for a steady stream of requests whose prefills are
> spread over many rounds; for a batch that arrives at once, and for short answers after long
> prompts, the prefill is a large share of the cycle.""")

# %% [markdown]
# ## Try this
#
# 1. **Predict, then move.** Put one other request's prefill into the timeline explorer. Guess
#    how much shorter the queue has to be for the answer to make the deadline again, then drag
#    the queue slider down until it does. Does the engine's 26.26 ms interval, in place of the
#    client's 26.5 ms, rescue it without touching the queue?
#    <!-- states: timeline(inserted_prefills=1); timeline(inserted_prefills=1, queue_ms=...); timeline(inserted_prefills=1, interval_ms=ch08.ROUND_B1_S / ms) -->
# 2. Ask for 512 output tokens instead of 256. Which phase of the timeline now dominates, and
#    what output interval would still finish inside the 7 s deadline?
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
answer(f"""With one prefill inserted the request ends at {one.numbers['request_time_s']:.3f} s,
{-one.numbers['margin_s'] * 1000:.0f} ms past the deadline. Every millisecond taken off the
queue moves the whole timeline left by a millisecond, so the queue has to drop from
{ch08.QUEUE_S / ms:.0f} ms to about {queue_needed_ms:.0f} ms (on the slider,
{queue_on_slider:.0f} ms leaves a margin of {shorter_queue.numbers['margin_s'] * 1000:+.0f} ms).
The engine's shorter interval saves
{(ch08.CLIENT_ITL_S - ch08.ROUND_B1_S) / ms:.2f} ms on each of the {short_g - 1} intervals, which
brings the request to {engine.numbers['request_time_s']:.3f} s: it
{'meets' if engine.numbers['meets_deadline'] else 'still misses'} the deadline
(margin {engine.numbers['margin_s'] * 1000:+.0f} ms). The lesson: a saving on the output
interval counts once per interval, {short_g - 1} times here, so it
{'can make up for' if engine.numbers['meets_deadline'] else 'is not enough to make up for'} a
whole inserted prefill, which a shorter queue repays only millisecond for millisecond.""", title="Worked answer 1")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
long_answer = timeline.at(output_tokens=512)
decode_s = long_answer.numbers["request_time_s"] - long_answer.numbers["ttft_s"]
needed_interval = (ch08.DEADLINE_S - long_answer.numbers["ttft_s"]) / (2 * short_g - 1)
answer(f"""With {2 * short_g} tokens the request takes {long_answer.numbers['request_time_s']:.2f} s:
{decode_s:.2f} s of it are the {2 * short_g - 1} output intervals and only
{long_answer.numbers['ttft_s']:.3f} s come before the first token, so decode is almost the whole
story. To finish within {ch08.DEADLINE_S:g} s, each interval may last at most
(deadline - TTFT) / (G - 1) = {needed_interval / ms:.1f} ms, about half of today's
{ch08.CLIENT_ITL_S / ms:g} ms. For a long answer the
output interval, not the prefill, decides whether the deadline holds.""", title="Worked answer 2")

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
the {ch08.KV_BUDGET_BYTES / units.GiB:.0f} GiB KV pool the instance is short by
{-seventy['left_for_activations_GiB']:.0f} GiB before a single activation. Its KV is also
{seventy['kv_per_token_KiB']:.0f} KiB per token, so the same pool would hold only
{seventy['requests_that_fit']} short requests anyway. Such a model needs several cards, which
Chapter 17 §7 takes up.""", title="Worked answer 5")

# %% [markdown]
# **Exercises.** 8.1 has no exercise of its own; its numbers feed the exercises below.
# Next: [8.2 Batching and scheduling](08_2_batching_and_scheduling.ipynb).
#
# > **What you can now compute**
# > - the KV bytes per token of a model from its layers, KV heads and head size, and a request's reservation in whole blocks ([Exercise 8-1](../../exercises/ex8_1.ipynb))
# > - how many requests a KV pool admits when each reserves its KV for the whole answer ([Exercise 8-3](../../exercises/ex8_3.ipynb))
# > - a request's TTFT, output intervals and end-to-end time from its phases, and what an inserted prefill does to them ([Exercise 8-2](../../exercises/ex8_2.ipynb))
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
