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
from companion.formulas import batching as bt
from companion.formulas import serving

model = specs.QWEN3_8B
short_p, short_g = bt.CHAPTER_REQUEST_TYPES["Short conversation"]
long_p, long_g = bt.CHAPTER_REQUEST_TYPES["Long context"]

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
alone = widgets.timeline_scenario("alone", bt.QUEUE_S, bt.PREFILL_S, bt.CLIENT_ITL_S, short_g)
busy = widgets.timeline_scenario(
    "one prefill inserted", bt.QUEUE_S, bt.PREFILL_S, bt.CLIENT_ITL_S, short_g,
    stall_s=bt.PREFILL_S,
    stalled_intervals=widgets.stalled_interval_positions(short_g, 1))
for s in (alone, busy):
    times = s["token_times_s"]
    print(f"{s['label']:22} first token {calc.ttft_s(times):.3f} s, last token "
          f"{calc.request_time_s(times):.2f} s, longest interval "
          f"{max(calc.inter_token_intervals(times)) / units.ms:.1f} ms")
plots.request_timeline_figure([alone, busy], deadline_s=serving.DEADLINE_S).show()

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
# $$T_\text{request} = \mathrm{TTFT} + \sum_{j=1}^{G-1} \mathrm{ITL}_j = t_G - t_a.$$
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
for n, round_s in ((16, bt.ROUND_B16_S), (1, bt.ROUND_B1_S)):
    print(f"{n:2d} request(s) per round, {round_s / units.ms:.2f} ms per round: "
          f"{calc.decode_tokens_per_s(n, round_s):,.0f} tokens/s")
print(f"16x the tokens per round for {(bt.ROUND_B16_S / bt.ROUND_B1_S - 1) * 100:.1f}% more "
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
instance = calc.memory_budget(bt.INSTANCE_MEM_BYTES, model.weight_bytes, bt.KV_BUDGET_BYTES)
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
# $$k = 2 \times n_\text{layers} \times n_\text{KV heads} \times d_\text{head} \times
# s_\text{value} = 2 \times 36 \times 8 \times 128 \times 2\ \text{B}.$$

# %%
k = calc.kv_bytes_per_token(model)
print(f"k = {k:,} B = {k / units.KiB:.0f} KiB per token")
print(f"a {short_p:,}-token prompt: {calc.kv_bytes(model, short_p) / units.MiB:,.0f} MiB; "
      f"an {long_p:,}-token prompt: {calc.kv_bytes(model, long_p) / units.MiB:,.0f} MiB "
      f"({calc.kv_bytes(model, long_p) / units.GiB:.3f} GiB)")
print(f"sixteen long prompts: {16 * calc.kv_bytes(model, long_p) / units.GiB:.0f} GiB, "
      f"against a {bt.KV_BUDGET_BYTES / units.GiB:.0f} GiB pool")

# %% [markdown]
# ### Reserve for the end of generation, in whole blocks
#
# KV keeps growing during decode. The first output token comes out of prefill; the next 255
# each need the previous output fed back, so the request finally holds prompt + 255 tokens
# (the last output is returned, never fed back). The allocator hands out 16-token blocks, so
# that count rounds up to a multiple of 16. Admitting a request only when its *final*
# reservation fits means it can never run out of memory halfway through its answer.

# %%
rows = calc.kv_capacity_table(model, bt.KV_BUDGET_BYTES)
print(f"{'request':20} {'prompt KV':>10} {'held':>6} {'blocks of 16':>13} {'reserved':>10} "
      f"{'fit in 12 GiB':>14}")
for r in rows:
    print(f"{r['name']:20} {r['prefill_kv_bytes'] / units.MiB:>6,.0f} MiB "
          f"{r['computed_tokens']:>6,} {r['allocated_tokens']:>13,} "
          f"{r['final_kv_bytes'] / units.MiB:>6,.0f} MiB "
          f"{r['fit']:>14}")
short = rows[0]
print(f"\nsized at prefill instead, {short['fit_if_sized_at_prefill']} short requests would be "
      f"admitted, and after 256 outputs they would need "
      f"{short['final_bytes_if_sized_at_prefill'] / units.MiB:,.0f} MiB of the "
      f"{bt.KV_BUDGET_BYTES / units.MiB:,.0f} MiB pool")
plots.kv_capacity_figure(rows, bt.KV_BUDGET_BYTES).show()

# %% [markdown]
# The long request's first 6144 tokens are the same system prompt for everyone. Stored once
# instead of per request, they take one copy, and each request keeps only its private part;
# section 8.3 turns that into a capacity.

# %%
print(f"shared prefix: {calc.kv_bytes(model, bt.SHARED_PREFIX_TOKENS) / units.MiB:,.0f} MiB; "
      f"the rest of a long prompt: "
      f"{calc.kv_bytes(model, long_p - bt.SHARED_PREFIX_TOKENS) / units.MiB:,.0f} MiB")

# %% [markdown]
# ## Chapter says / companion computes
#
# Every number of the chapter's opening and of 8.1, recomputed (the `ok` column compares at
# the chapter's printed rounding; `*` marks an entry with a note in the
# [ledger](../ledger.ipynb)).

# %%
print(ledger.table("8.1"))

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
# - In the timeline explorer, how short must the queue be for the request to survive one
#   inserted prefill? What if the output interval were the engine's 26.26 ms instead of the
#   client's 26.5 ms?
# - Double the output to 512 tokens. Which part of the timeline dominates now, and what
#   interval would the 7 s deadline require?
# - In the memory explorer, set the prompt to 8192 tokens. How many long requests fit? Switch
#   the KV format to FP8: what doubles, and what does not?
# - Set the block size to 256 tokens. For the short request, how much of the reservation is
#   now padding? (Compare 8.3.1's waste formula.)
# - Pick the Chapter 17 70B shape. Does the instance even hold its weights?
#
# **Exercises.** 8.1 has no exercise of its own; its numbers feed
# [Exercise 8-1](../../exercises/ex8_1.ipynb) (read volume vs batch, and how many requests
# the KV pool admits). Next: [8.2 Batching and scheduling](08_2_batching_and_scheduling.ipynb).
