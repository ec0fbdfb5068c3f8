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
for key, value in memory.update().numbers.items():
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
    numbers = timeline.update(inserted_prefills=inserted).numbers
    print(f"{inserted} inserted: TTFT {numbers['ttft_s']:.3f} s, request "
          f"{numbers['request_time_s']:.2f} s, longest interval "
          f"{numbers['longest_interval_ms']:.1f} ms, meets the deadline: "
          f"{numbers['meets_deadline']}")
_ = timeline.reset()

# %% [markdown]
# ## Try this
#
# 1. **Predict, then move.** Put one other request's prefill into the timeline explorer. Guess
#    how much shorter the queue has to be for the answer to make the deadline again, then drag
#    the queue slider down until it does. Does the engine's 26.26 ms interval, in place of the
#    client's 26.5 ms, rescue it without touching the queue?
# 2. Ask for 512 output tokens instead of 256. Which phase of the timeline now dominates, and
#    what output interval would still finish inside the 7 s deadline?
# 3. **Predict, then move.** In the memory explorer, set the prompt to 8192 tokens and note how
#    many requests fit. Before switching the KV format to FP8, write down which readouts you
#    expect to double and which to stay put; then switch and check.
# 4. Use 256-token blocks. How many of the short request's reserved slots are padding? Then
#    let it generate 300 tokens instead of 256 and compare with 16-token blocks (8.3.1 bounds
#    the padding by one block).
# 5. Pick the 70B shape of Chapter 17. Does the 32 GiB instance even hold its weights?

# %% tags=["remove-input"]
from companion.display import answer, md

ms = units.ms
one = timeline.at(inserted_prefills=1)
queue_needed_ms = (ch08.QUEUE_S + one.numbers["margin_s"]) / ms
engine = timeline.at(inserted_prefills=1, interval_ms=ch08.ROUND_B1_S / ms)
answer(f"""With one prefill inserted the request ends at {one.numbers['request_time_s']:.3f} s,
{-one.numbers['margin_s'] * 1000:.0f} ms past the deadline. Every millisecond taken off the
queue moves the whole timeline left by a millisecond, so the queue has to drop from
{ch08.QUEUE_S / ms:.0f} ms to about {queue_needed_ms:.0f} ms. The engine's shorter interval saves
{(ch08.CLIENT_ITL_S - ch08.ROUND_B1_S) / ms:.2f} ms on each of the {short_g - 1} intervals, which
brings the request to {engine.numbers['request_time_s']:.3f} s: it
{'meets' if engine.numbers['meets_deadline'] else 'still misses'} the deadline
(margin {engine.numbers['margin_s'] * 1000:+.0f} ms).""", title="Worked answer 1")

# %% tags=["remove-input"]
long_answer = timeline.at(output_tokens=2 * short_g)
decode_s = long_answer.numbers["request_time_s"] - long_answer.numbers["ttft_s"]
needed_interval = (ch08.DEADLINE_S - long_answer.numbers["ttft_s"]) / (2 * short_g - 1)
answer(f"""With {2 * short_g} tokens the request takes {long_answer.numbers['request_time_s']:.2f} s:
{decode_s:.2f} s of it are the {2 * short_g - 1} output intervals and only
{long_answer.numbers['ttft_s']:.3f} s come before the first token, so decode is almost the whole
story. To finish within {ch08.DEADLINE_S:g} s, each interval may last at most
(deadline - TTFT) / (G - 1) = {needed_interval / ms:.1f} ms, about half of today's
{ch08.CLIENT_ITL_S / ms:g} ms.""", title="Worked answer 2")

# %% tags=["remove-input"]
bf16 = memory.at(prompt_tokens=long_p).numbers
fp8 = memory.at(prompt_tokens=long_p, kv_precision=1.0).numbers
answer(f"""At {long_p:,} prompt tokens each request reserves {bf16['reserved_MiB']:,.0f} MiB, and
{bf16['requests_that_fit']} of them fit in the pool. FP8 stores each key and value in one byte
instead of two: the KV per token falls from {bf16['kv_per_token_KiB']:.0f} to
{fp8['kv_per_token_KiB']:.0f} KiB, every request reserves {fp8['reserved_MiB']:,.0f} MiB, and the
count becomes {fp8['requests_that_fit']}, twice as many up to rounding. What does not move: the
tokens held ({fp8['held_tokens']:,}), the slots reserved in blocks ({fp8['allocated_tokens']:,}),
the weights ({fp8['weights_GiB']:.1f} GiB) and the slack left for activations.""",
       title="Worked answer 3")

# %% tags=["remove-input"]
def padding(**params):
    n = memory.at(**params).numbers
    return n["allocated_tokens"] - n["held_tokens"], n


pad_256, big = padding(block_tokens=256)
pad_300_256, big_300 = padding(block_tokens=256, output_tokens=300)
pad_300_16, small_300 = padding(output_tokens=300)
answer(f"""Only {pad_256} slot: the short request holds {big['held_tokens']:,} tokens at the end,
one short of a multiple of 256 ({big['allocated_tokens']:,}), so large blocks happen to cost
nothing here. With 300 outputs it holds {big_300['held_tokens']:,} tokens: 256-token blocks
reserve {big_300['allocated_tokens']:,} slots, {pad_300_256} of them padding
({pad_300_256 / big_300['allocated_tokens']:.0%}), while 16-token blocks pad only
{pad_300_16}. Both stay below one block, as 8.3.1's bound says; the pool admits
{big_300['requests_that_fit']} such requests with 256-token blocks and
{small_300['requests_that_fit']} with 16-token ones.""", title="Worked answer 4")

# %% tags=["remove-input"]
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
