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
# # 17.8 Disaggregated serving and KV-aware routing
#
# **The question.** Prefill is one big burst of arithmetic, decode a long series of small
# memory-bound steps (17 §2-§3). Chunked prefill (17 §6) lets the two take turns on one GPU.
# A large fleet can go further and give each phase GPUs of its own. That raises three
# questions this notebook answers with numbers: how large must each pool be, what does it cost
# to move a request's KV cache from one pool to the other, and, once caches sit on particular
# machines, which machine should receive a conversation's next turn?

# %%
from companion import calc, ledger, plots, specs, units, widgets
from companion.chapters import ch08, ch17
from companion.display import answer, md

hw = specs.H100_SXM
m8, m70 = specs.LLAMA_8B, specs.LLAMA_70B

# %% [markdown]
# ## Two pools, sized by two divisions
#
# Follow one request through a disaggregated deployment, the design of the DistServe and
# Splitwise papers that NVIDIA Dynamo productizes (17 §8). A router hands it to a GPU of the
# *prefill pool*, which runs the whole prompt in one pass with no decode work beside it. The
# KV cache that pass produces is copied to a GPU of the *decode pool*, which then produces the
# answer token by token. A new conversation's prompt is never prefilled on a decode GPU, so the
# long stall of 17 §3 cannot occur there; the one exception, a returning conversation's short
# new message, is priced under KV-aware routing below. And each pool can grow on its own
# evidence: add prefill GPUs when TTFT slips, decode GPUs when ITL does.
#
# Sizing is then two separate divisions. Let requests arrive at rate $\lambda$ with mean
# prompt $\bar n$ and mean output $\bar G$, and let one GPU group sustain $\mu_p$ prompt tokens/s
# of prefill and $\mu_d$ output tokens/s of decode (at the ITL target):
#
# $$g_\text{prefill} = \left\lceil \frac{\lambda \bar n}{\mu_p} \right\rceil, \qquad
# g_\text{decode} = \left\lceil \frac{\lambda \bar G}{\mu_d} \right\rceil.$$
#
# In the chapter's words (17 §8), $\lambda\bar n$ is the prompt demand and $\lambda\bar G$ the
# output demand, $\mu_p$ and $\mu_d$ the prefill and decode capacity per GPU group, and
# $g_\text{prefill}$ and $g_\text{decode}$ the prefill and decode groups. The capacities below
# are the chapter's illustrative ones; a real fleet measures its own.

# %%
pools = calc.disaggregated_pools(100, 2000, 250)
print(f"prompt demand {pools['prompt_tok_per_s']:,.0f} tok/s -> {pools['prefill_groups']} "
      f"prefill groups")
print(f"output demand {pools['output_tok_per_s']:,.0f} tok/s -> {pools['decode_groups']} "
      f"decode groups (ratio {pools['prefill_to_decode']:g} : 1)")
for label, prompt, output in (("longer documents (prompt x 2)", 4000, 250),
                              ("chattier sessions (output x 2)", 2000, 500)):
    p = calc.disaggregated_pools(100, prompt, output)
    print(f"{label:32}: {p['prefill_groups']} prefill, {p['decode_groups']} decode groups")
widgets.PoolSizingPanel().figure().show()

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
cap_chapter = ch17.PREFILL_TOK_PER_S_PER_GROUP
cap_8b = 1 / calc.prefill_compute_s(m8, hw, 1)                 # one H100, 50% of peak
cap_70b = ch17.TP / calc.prefill_compute_s(m70, hw, 1)         # a TP-4 group, 50% of peak
md(f"""Which model fills a "group"? The chapter's {cap_chapter:,} tok/s names none. At
{100 * ch17.PREFILL_EFFICIENCY:.0f}% of peak one H100 prefills the 8B at {cap_8b:,.0f} tok/s
and a TP-{ch17.TP} group the 70B at {cap_70b:,.0f} tok/s, so the chapter's figure reads as
that 70B group at {100 * ch17.PREFILL_EFFICIENCY * cap_chapter / cap_70b:.0f}% of peak. The
pool sizing and its queue below use the chapter's figure, the KV hop the 70B group, and the
goodput comparison the 8B on one GPU.""")

# %% [markdown]
# ## The picture: router, pools and the KV hop
#
# The chapter draws the deployment as a flowchart. Here the same picture is computed: one
# square per GPU group, from `calc.disaggregated_pools`, and the KV traffic between the pools
# from 17 §4's bytes per token times the mean prompt, shipped over the chosen link. A turn
# whose prefix is already cached on a decode GPU skips the prefill pool (the green arrow) and
# has its new message prefilled on that decode GPU (see KV-aware routing below for what that
# costs the GPU's other streams). Move the arrival rate or the request mix in the explorer and
# the squares and flows are redrawn.

# %% tags=["nbval-ignore-output"]
diagram = widgets.DisaggregationDiagramPanel()
diagram.show()

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
d = diagram.at().numbers
d8k = diagram.at(mean_prompt_tokens=8000).numbers
md(f"""At the chapter's traffic the diagram holds {d['prefill_groups']} prefill and
{d['decode_groups']} decode groups. Each mean request hands over
{d['kv_bytes_per_request'] / units.GB:.2f} GB of 70B KV, {d['ship_ms']:.0f} ms over RDMA, and
the pools exchange {d['kv_GB_per_s']:.0f} GB/s in all, spread over the prefill groups' own
links: {d['kv_GB_per_s_per_prefill_group']:.1f} GB/s from each of the {d['prefill_groups']},
well within one {ch17.RDMA_400G_BYTES_PER_S / units.GB:.0f} GB/s card. With 8,000-token prompts the prefill
pool grows to {d8k['prefill_groups']} groups, the decode pool stays at {d8k['decode_groups']},
and each hop takes {d8k['ship_ms']:.0f} ms.""")

# %% [markdown]
# Each workload change moves one pool only: longer documents enlarge the prefill pool,
# chattier sessions the decode pool. A single shared fleet has just one number to tune, two
# pools have two, which is the whole point. The DistServe paper measures the benefit as
# **goodput**, the rate of requests that meet *both* their TTFT and their ITL objective,
# rather than tokens per second.

# %% [markdown]
# ## Where this model breaks: a pool sized to its mean demand is full
#
# Requests arrive at random and a group with no idle time builds a queue that never drains,
# so a pool held to a TTFT target needs spare groups; the pool explorer's dashed line counts
# them.

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the table below
from companion import tables

pool_ctl = {c.name: c for c in widgets.PoolSizingPanel.controls}
pool_rates = range(int(pool_ctl["request_rate"].min), int(pool_ctl["request_rate"].max) + 1)
pool_q = {rate: calc.prefill_pool_for_ttft(rate, ch17.MEAN_PROMPT_TOKENS) for rate in pool_rates}
pool_far = max(pool_q, key=lambda rate: pool_q[rate]["groups"] / pool_q[rate]["chapter_groups"])
pool_strict_ms = pool_ctl["ttft_p90_target_ms"].min
pool_strict = calc.prefill_pool_for_ttft(ch17.REQUEST_RATE_PER_S, ch17.MEAN_PROMPT_TOKENS,
                                         ttft_p90_target_s=pool_strict_ms * units.ms)
pool_rows = [(f"{rate:g} req/s{note}", pool_q[rate]["chapter_groups"], pool_q[rate]["groups"],
              f"{pool_q[rate]['groups'] / pool_q[rate]['chapter_groups']:.2f}")
             for rate, note in ((ch17.REQUEST_RATE_PER_S, " (the chapter)"), (pool_far, ""))]
pool_rows.append((f"{ch17.REQUEST_RATE_PER_S:g} req/s, p90 target {pool_strict_ms:.0f} ms",
                  pool_strict["chapter_groups"],
                  "none" if pool_strict["groups"] is None else pool_strict["groups"],
                  "no pool fits" if pool_strict["groups"] is None else
                  f"{pool_strict['groups'] / pool_strict['chapter_groups']:.2f}"))
md(tables.markdown_table(("setting (prefill groups)", "chapter's model (mean demand)",
                          "fuller model (p90 TTFT target met)", "fuller / chapter"), pool_rows))

# %% [markdown] jp-MarkdownHeadingCollapsed=true
# #### In detail
#
# The pool as a queue: waits, percentiles and the spare groups they ask for.
#
# <!-- fold: the fuller model, its numbers and where it parts from the chapter's -->

# %% [markdown]
# Dividing the mean demand by one group's capacity gives the number of groups that can keep
# up *on average*. At the chapter's traffic the division comes out whole, so every prefill
# group it counts would be busy all of the time. Requests do not arrive on a metronome,
# though, and prompts are not all of mean length; a pool with no spare capacity builds a queue
# that never drains, and the queueing wait lands in every TTFT.
#
# The standard model for this is the M/M/c queue: requests arrive at random (a Poisson stream
# at rate $\lambda$), each of the pool's $g_\text{prefill}$ groups prefills one prompt at a
# time, and prefill times vary around their mean $\bar t_\text{prefill} = \bar n/\mu_p$ as an
# exponential distribution. Exponential prefill times are a choice: the chapter gives only a
# mean prompt, real prompt lengths spread widely, and the exponential is the usual, somewhat
# pessimistic stand-in for that spread that keeps a closed form the explorer can redraw at
# every step of a slider. With an offered load of $\lambda\,\bar t_\text{prefill}$ groups'
# worth, Erlang's C formula gives the chance that a request has to wait at all,
# $P(t_\text{queue} > 0)$, and the wait beyond that is exponential:
#
# $$P(t_\text{queue} > t_\text{slack}) = P(t_\text{queue} > 0)\,
# \mathrm{e}^{-(g_\text{prefill}/\bar t_\text{prefill} - \lambda)\,t_\text{slack}}, \qquad
# \bar t_\text{queue} = \frac{P(t_\text{queue} > 0)}{g_\text{prefill}/\bar t_\text{prefill}
# - \lambda}.$$
#
# Only $g_\text{prefill} > \lambda\,\bar t_\text{prefill}$ is stable. The TTFT a request sees
# is its wait plus its own prefill, $t_\text{queue} + t_\text{prefill}$, and the target of
# 17 §3 is a percentile of that sum: p90 under 500 ms. The sum has a closed-form tail too (an
# exponential prefill added to a wait that is either zero or exponential; Gross and Harris,
# *Fundamentals of Queueing Theory*, ch. 2), `calc.pool_time_tail`, and the pool is sized by
# the smallest $g_\text{prefill}$ whose p90 of the sum is within the target
# (`calc.prefill_pool_for_ttft`). The companion's pool simulation (`companion.sim.queueing`)
# checks the formula.

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
from companion.sim import queueing
from companion.sim.load import nearest_rank_percentile

q = calc.prefill_pool_for_ttft(100, 2000)
service = q["service_s"]
target = ch17.TTFT_P90_TARGET_S
fmt = (lambda x: "grows without bound" if x == float("inf") else f"{x / units.ms:,.0f} ms")
# the tempting shortcut: a p90 wait plus the mean prefill, as if percentiles added
naive = next(c for c in range(q["chapter_groups"], q["groups"] + 1)
             if calc.pool_wait(100, service, c)["percentile_wait_s"] + service <= target)
rows = ["| prefill groups | load per group | P(wait) | p90 wait | p90 TTFT (wait + prefill) |",
        "|---|---|---|---|---|"]
for c in range(q["chapter_groups"], q["groups"] + 3):
    w = calc.pool_wait(100, service, c)
    tag = (" (chapter)" if c == q["chapter_groups"] else
           " (sized for the target)" if c == q["groups"] else
           " (p90 wait + mean prefill fits)" if c == naive else "")
    rows.append(f"| {c}{tag} | {100 * w['utilization']:.1f}% | {100 * w['wait_prob']:.0f}% | "
                f"{fmt(w['percentile_wait_s'])} | {fmt(w['percentile_time_s'])} |")
at_naive = calc.pool_wait(100, service, naive)
over_naive = calc.pool_time_tail(100, service, naive, target)
sim_pool = queueing.pool_run(100, service, q["groups"], n_requests=400_000, seed=17)
sim_p90 = nearest_rank_percentile(sim_pool["time_s"], 90)
# the same pool with every prompt exactly the mean length (M/D/c): simulated, no closed form
fixed_groups = q["chapter_groups"]
while True:
    fixed = queueing.pool_run(100, service, fixed_groups, n_requests=200_000, seed=17,
                              service="fixed")
    fixed_p90 = nearest_rank_percentile(fixed["time_s"], 90)
    if fixed["utilization"] < 1 and fixed_p90 <= target:
        break
    fixed_groups += 1
md("The chapter's prefill pool (100 req/s, 2,000-token prompts, 10,000 tok/s per group) as "
   "an M/M/c queue:\n\n" + "\n".join(rows)
   + f"\n\nThe prefill alone has a p90 of {q['service_percentile_s'] / units.ms:.0f} ms "
     f"(one prompt in ten is longer than {q['service_percentile_s'] * ch17.PREFILL_TOK_PER_S_PER_GROUP:,.0f} tokens), so "
     f"the target leaves little room for waiting. Adding the p90 wait to the mean prefill "
     f"would accept {naive} groups: {at_naive['percentile_wait_s'] / units.ms:.0f} + "
     f"{service / units.ms:.0f} ms fits, yet {100 * over_naive:.1f}% of requests take longer "
     f"than {target / units.ms:.0f} ms and the p90 TTFT is "
     f"{at_naive['percentile_time_s'] / units.ms:.0f} ms. Percentiles do not add. "
     f"The companion's pool simulation with {q['groups']} groups (400,000 seeded requests) "
     f"gives a p90 TTFT of {sim_p90 / units.ms:.0f} ms against the formula's "
     f"{q['fuller']['percentile_time_s'] / units.ms:.0f} ms: one seeded run carries "
     f"sampling error, so {q['groups']} groups sit on the target's edge. With every prompt exactly 2,000 "
     f"tokens (M/D/c, the same simulation with a fixed prefill time) {fixed_groups} groups "
     f"would do, with a p90 TTFT of {fixed_p90 / units.ms:.0f} ms: the spread of prompt "
     "lengths costs groups, not only the randomness of arrivals.")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
pool_controls = {c.name: c for c in widgets.PoolSizingPanel.controls}
rate_hi = pool_controls["request_rate"].max
prompt_hi = pool_controls["mean_prompt_tokens"].max
target_lo = pool_controls["ttft_p90_target_ms"].min * units.ms
busy = calc.prefill_pool_for_ttft(rate_hi, 2000)
quiet = calc.prefill_pool_for_ttft(pool_controls["request_rate"].min, 2000)
strict = calc.prefill_pool_for_ttft(100, 2000, ttft_p90_target_s=target_lo)
long_q = calc.prefill_pool_for_ttft(100, prompt_hi)
assert strict["groups"] is None and long_q["groups"] is None   # what the box says of them
quiet_groups = f"{quiet['groups']} group" + ("s" if quiet["groups"] != 1 else "")
md(f"""> **Where this model breaks: pool sizing.** At the chapter's setting the division gives
> {q['chapter_groups']} prefill groups at exactly 100% load: the queue has no way to drain and
> TTFT grows without bound. Holding a p90 TTFT (wait plus prefill) of 500 ms needs
> {q['groups']} groups ({100 * q['groups'] / q['chapter_groups'] - 100:.0f}% more), which run
> at {100 * q['fuller']['utilization']:.0f}% load with a p90 TTFT of
> {q['fuller']['percentile_time_s'] / units.ms:.0f} ms. The decode pool's
> {pools['decode_groups']} groups sit at exactly
> {100 * pools['output_tok_per_s'] / (pools['decode_groups'] * ch17.DECODE_TOK_PER_S_PER_GROUP):.0f}%
> load too; there the queue is of sequences waiting for a batch slot, and the same
> argument asks for spare slots.
>
> At the explorer's extremes: at {rate_hi:.0f} req/s a large pool evens out the randomness,
> and {busy['groups']} groups suffice where the division says {busy['chapter_groups']}
> ({100 * busy['groups'] / busy['chapter_groups'] - 100:.0f}% spare); at
> {pool_controls['request_rate'].min:.0f} req/s a single group is only
> {100 * quiet['chapter']['utilization']:.0f}% loaded and {quiet_groups} meet the
> target. At the slider's strictest target, {target_lo / units.ms:.0f} ms, no pool helps:
> the prefill alone has a p90 of {strict['service_percentile_s'] / units.ms:.0f} ms (mean
> {strict['service_s'] / units.ms:.0f} ms), and neither does any pool for a
> {prompt_hi:,}-token mean prompt at the chapter's target
> ({long_q['service_s'] / units.ms:,.0f} ms of prefill on one group): only a faster group
> (more GPUs per prompt) or shorter prompts help then.
>
> **When it matters.** Always for latency targets: a pool sized by division meets its
> throughput and misses its TTFT. The spare share it needs shrinks as the pool grows, so the
> chapter's division is close for a large fleet with a loose target and far off for a small
> one or a strict target. The dashed line in the pool explorer is this sizing.""")

# %% [markdown]
# ## The cost of the hop: moving the KV cache
#
# **Where the hop's cost lands.** The prefill's last position already yields token 1, so the
# prefill GPU streams it and TTFT ends there. The decode GPU can compute token 2 only once it
# holds the request's entire KV cache: the hop lengthens the *first inter-token interval*, and
# this notebook judges it against the ITL target. The chapter calls the hop affordable against
# TTFT (17 §8), right where the decode GPU emits token 1; here it delays token 2, a tighter
# budget, so a verdict can flip. That target is the companion's choice within the chapter's
# "a few tens of ms" (17 §3): a miss by a millisecond is a knife edge. The cache's size comes from 17 §4, and
# moving it takes its bytes over the link's bandwidth:
#
# $$T_\text{ship} = \frac{L\,k}{\beta_\text{link}}, \qquad
# k = 2\, n_\text{layers}\, n_\text{kv}\, d_\text{head} \cdot 2\ \text{B}.$$
#
# Here $L$ is the chapter's context to ship, $k$ its KV per token and $T_\text{ship}$ its
# transfer time. A hop travels one way, so $\beta_\text{link}$ is each link's one-way rate.
# NVLink's 900 GB/s in the chapter's assumptions adds both directions: one way is half of it,
# and the chapter's "~3 ms" (17 §8) divides by the full figure (the ledger below carries the
# erratum). PCIe's 64 GB/s and a network card's 400 Gb/s are already rates per direction.

# %%
L = ch17.LONG_CONTEXT_TOKENS
kv = calc.kv_bytes(m70, L, block_tokens=1)
links = {"NVLink, one way (450 GB/s)": calc.nvlink_one_way_bytes_per_s(hw),
         "PCIe Gen5 x16 (64 GB/s)": ch08.PCIE_GEN5_X16_BYTES_PER_S,
         "400 Gb RDMA (50 GB/s)": ch17.RDMA_400G_BYTES_PER_S}
print(f"70B shape, {L:,}-token context: {kv / units.GB:.2f} GB of KV")
for label, bw in links.items():
    print(f"  over {label:27}: {calc.kv_transfer_s(m70, L, bw) / units.ms:5.1f} ms")
contexts = [1000, 2000, 4000, 8000, 16000, 32000, 64000, ch17.LONGEST_CONTEXT_TOKENS]
curves = {label: [calc.kv_transfer_s(m70, c, bw) for c in contexts] for label, bw in links.items()}
marks = {label: (L, calc.kv_transfer_s(m70, L, bw)) for label, bw in links.items()}
plots.kv_transfer_figure(contexts, curves, marks=marks,
                         title=f"Shipping one {m70.name} sequence's KV from prefill to decode "
                               "(17 §8)").show()

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
itl_ms = ch17.ITL_TARGET_S / units.ms
hop_rdma = calc.kv_layered_transfer(m70, hw, L, ch17.RDMA_400G_BYTES_PER_S, tp=ch17.TP)
md(f"""(RDMA means the network card writes straight into the other server's memory, without a
CPU copy at either end.) Shipped whole after the prefill, the 70B's
{hop_rdma['whole_s'] / units.ms:.0f} ms over RDMA holds back token 2 for at least that long,
against an ITL target of {itl_ms:.0f} ms: every later token arrives on time, this one visibly
late. Engines avoid it by sending each layer's KV as soon as that layer is computed, overlapped
with the rest of the prefill, which leaves {hop_rdma['exposed_s'] / units.ms:.2f} ms (next
section). Read the other way, the same numbers say when splitting does not pay: a small model,
short prompts, or too few GPUs to keep two pools busy. The chapter's rule, "below roughly node
scale, share; at fleet scale, split" (17 §8), is tested under *Goodput* below.""")

# %% [markdown]
# ## Where this model breaks: the hop shipped whole, after the prefill
#
# The prefill finishes one layer at a time, so each layer's KV can travel while the next is
# computed and only the last layer's share waits after the prefill; the diagram explorer's
# *KV hop* menu switches to that.

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the table below
hop_ctl = {c.name: c for c in widgets.DisaggregationDiagramPanel.controls}
hop_top = hop_ctl["mean_prompt_tokens"].max
hop_cases = {(mdl, name): calc.kv_layered_transfer(mdl, hw, hop_top, bw, tp=ch17.TP)
             for mdl in (m70,) for name, bw in links.items()}
hop_far = max(hop_cases, key=lambda k: hop_cases[k]["whole_s"] - hop_cases[k]["exposed_s"])
hop_rows = []
for hop_label, hop in ((f"{ch17.LONG_CONTEXT_TOKENS:,} tokens, 400 Gb RDMA (the chapter)",
                        calc.kv_layered_transfer(m70, hw, ch17.LONG_CONTEXT_TOKENS,
                                                 ch17.RDMA_400G_BYTES_PER_S, tp=ch17.TP)),
                       (f"{hop_top:,} tokens, {hop_far[1]}", hop_cases[hop_far])):
    hop_rows.append((hop_label, f"{hop['whole_s'] / units.ms:,.1f} ms",
                     f"{hop['exposed_s'] / units.ms:,.2f} ms",
                     f"{hop['exposed_s'] / hop['whole_s']:.3f}"))
md(tables.markdown_table(("setting (70B KV hop, time after the prefill)",
                          "chapter's model (whole cache)", "fuller model (layer by layer)",
                          "fuller / chapter"), hop_rows))

# %% [markdown] jp-MarkdownHeadingCollapsed=true
# #### In detail
#
# The layered hop and the parallel links, priced at three contexts and three links.
#
# <!-- fold: the fuller model, its numbers and where it parts from the chapter's -->

# %% [markdown]
# The transfer times above send the whole cache over one link once the prefill is done. Two
# things change that. First, a request's layers are finished one after another: the prefill
# computes layer 1 for the whole prompt, then layer 2, and so on, so layer $i$'s KV can be on
# the wire while the GPUs work on layer $i+1$. With $n_\text{layers}$ layers of equal cost, each
# takes $t_\text{prefill}/n_\text{layers}$ to prefill and $T_\text{ship}/n_\text{layers}$ to
# ship, so the last byte arrives
#
# $$\frac{T_\text{ship}}{n_\text{layers}} + \frac{n_\text{layers} - 1}{n_\text{layers}}\,
# \max(0,\ T_\text{ship} - t_\text{prefill})$$
#
# after the prefill ends: one layer's worth while the link keeps up, the full time only when it
# cannot. Second, a 70B prefill group is four GPUs (17 §7), each holding a quarter of the KV
# heads; a server usually gives each GPU its own network card, so the shards can travel in
# parallel. `calc.kv_layered_transfer` prices both; the diagram explorer has a "KV hop"
# dropdown.

# %% tags=["remove-input"]
tp70 = ch17.TP                                   # the 70B prefill group of 17 §4, §7
exposed = {label: [calc.kv_layered_transfer(m70, hw, c, bw, tp=tp70)["exposed_s"]
                   for c in contexts] for label, bw in links.items()}
plots.kv_transfer_figure(contexts, curves, marks=marks, exposed=exposed,
                         exposed_note="layer by layer, after the prefill").show()

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
rows = ["| context | link | whole, one link (chapter) | over 4 links | layer by layer "
        "| prefill (4 GPUs) |", "|---|---|---|---|---|---|"]
for ctx in (ch17.MEAN_PROMPT_TOKENS, L, ch17.LONGEST_CONTEXT_TOKENS):
    for label, bw in links.items():
        k4 = calc.kv_layered_transfer(m70, hw, ctx, bw, tp=tp70, links=tp70)
        k1 = calc.kv_layered_transfer(m70, hw, ctx, bw, tp=tp70)
        rows.append(f"| {ctx:,} | {label} | {k1['whole_s'] / units.ms:,.1f} ms | "
                    f"{k4['spread_s'] / units.ms:,.1f} ms | {k1['exposed_s'] / units.ms:,.2f} ms "
                    f"| {k1['prefill_s'] / units.ms:,.0f} ms |")
md("The 70B's KV hop, four ways of reading it (prefill at 50% of peak on 4 GPUs):\n\n"
   + "\n".join(rows))

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
rdma = ch17.RDMA_400G_BYTES_PER_S
hop8k = calc.kv_layered_transfer(m70, hw, L, rdma, tp=tp70)
hop_long = calc.kv_layered_transfer(m70, hw, ch17.LONGEST_CONTEXT_TOKENS, rdma, tp=tp70)
keep_up = hop8k["kv_bytes"] / hop8k["prefill_s"]           # bytes/s the prefill produces
hop8b = calc.kv_layered_transfer(m8, hw, L, rdma)
diagram_controls = {c.name: c for c in widgets.DisaggregationDiagramPanel.controls}
p_hi = diagram_controls["mean_prompt_tokens"].max
hop_hi = calc.kv_layered_transfer(m70, hw, p_hi, rdma, tp=tp70)
# the context whose whole-cache hop alone fills the ITL target (the first interval's budget)
itl_tokens = ch17.ITL_TARGET_S * rdma / calc.kv_bytes_per_token(m70)
md(f"""> **Where this model breaks: the KV hop.** At the chapter's setting (8,000 tokens of the
> 70B over 400 Gb RDMA) the whole cache takes {hop8k['whole_s'] / units.ms:.0f} ms, but the
> prefill that produces it runs {hop8k['prefill_s'] / units.ms:.0f} ms on four GPUs, producing
> KV at only {keep_up / units.GB:.1f} GB/s. Shipped layer by layer, the link keeps up easily
> and only the last layer's {hop8k['exposed_s'] / units.ms:.2f} ms remains after the prefill:
> {100 * hop8k['hidden_share']:.1f}% of the transfer is hidden. Over four cards in parallel
> the whole-cache time itself falls to a quarter. For the 8B on one GPU the same holds
> ({hop8b['exposed_s'] / units.ms:.2f} ms left of {hop8b['whole_s'] / units.ms:.0f} ms).
>
> At the explorer's longest prompt ({p_hi:,} tokens) the whole cache takes
> {hop_hi['whole_s'] / units.ms:,.0f} ms and the layered hop leaves
> {hop_hi['exposed_s'] / units.ms:.1f} ms; at the chapter's longest context
> ({ch17.LONGEST_CONTEXT_TOKENS:,} tokens) {hop_long['whole_s'] / units.ms:,.0f} ms against
> {hop_long['exposed_s'] / units.ms:.1f} ms. Overlap fails only on a link slower than the KV
> production rate, about {keep_up / units.GB:.1f} GB/s here (a slow Ethernet, or a prefill much
> faster than 50% of peak).
>
> **When it matters.** For the first inter-token interval the chapter's whole-cache figure is
> the pessimistic end: shipped whole over RDMA, the 70B's hop alone passes the
> {ch17.ITL_TARGET_S / units.ms:.0f} ms ITL target from {itl_tokens:,.0f} tokens of context on,
> while layer by layer it leaves {hop_hi['exposed_s'] / units.ms:.1f} ms at {p_hi:,} tokens.
> What the bytes still cost is link capacity: the pools exchange the full volume whatever the
> overlap, so the link has to be sized for the traffic.""")

# %% [markdown]
# ## Goodput: the same GPUs shared or split
#
# The section's case for splitting ends in a rule of thumb: below roughly one node, share the
# GPUs; at fleet scale, split them (17 §8). Goodput puts the rule to a test. It counts the
# requests per second that meet *both* targets of 17 §3, a TTFT within 500 ms and every output
# interval within an ITL target, which the chapter gives only as "a few tens of ms" (17 §3):
# the figure takes 20 ms, the table after it two looser targets too. Take the same GPUs two
# ways, each GPU serving the 8B with the chapter's request mix:
#
# - **shared**: every GPU decodes its own streams and adds one prompt chunk to each round
#   (17 §6), the chunk as large as the ITL target allows;
# - **split**: some GPUs prefill whole prompts and stream token 1, then ship each KV cache one
#   way over NVLink before token 2; the rest only decode; of the possible splits, the one that
#   carries the most.
#
# The model is analytic: the pool queue of the sizing above, 17 §5's decode step and 17 §6's
# chunked round, with the KV hop; the fold below lists what it assumes.

# %%
from companion.explorers.ch17_08_disaggregation_and_routing import goodput_figure

fleets = {}
for gpus in (2, 8):
    split = calc.best_split(gpus)
    rates = [gpus * x / 20 for x in range(1, 201)]          # 0.05 .. 10 req/s per GPU
    fleets[gpus] = {
        "rates": rates,
        "shared": [calc.fleet_goodput(r, gpus)["goodput_per_s"] for r in rates],
        "split": [calc.fleet_goodput(r, gpus, layout="split",
                                     prefill_gpus=split["prefill_gpus"])["goodput_per_s"]
                  for r in rates],
        "split_label": f"{split['prefill_gpus']} prefill + {split['decode_gpus']} decode",
        "best": split, "shared_limit": calc.fleet_slo_rate(gpus)}
goodput_figure(fleets).show()

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the sentence below
def parting(f):
    """The first offered rate at which the two curves differ by more than 1% of it."""
    return next(r for r, a, b in zip(f["rates"], f["shared"], f["split"])
                if abs(a - b) > 0.01 * r)


small, large = fleets[2], fleets[8]
small_part, large_part = parting(small), parting(large)
small_leader = "sharing" if small["shared"][small["rates"].index(small_part)] > \
    small["split"][small["rates"].index(small_part)] else "the split"
large_leader = "sharing" if large["shared"][large["rates"].index(large_part)] > \
    large["split"][large["rates"].index(large_part)] else "the split"
fleet_sizes = range(2, 9)
first_split = next(n for n in fleet_sizes
                   if calc.best_split(n)["slo_rate_per_s"] > calc.fleet_slo_rate(n))
assert small_leader == "sharing" and large_leader == "the split"   # what the text says
md(f"""Both layouts serve a light load alike. Per GPU, as the figure plots it: on 2 GPUs the
curves part at {small_part / 2:.1f} req/s per GPU, where sharing pulls ahead and holds both
targets (for 90% of requests) up to {small['shared_limit'] / 2:.1f} per GPU against the split's
{small['best']['slo_rate_per_s'] / 2:.1f}; on 8 GPUs they part at {large_part / 8:.1f} per GPU,
where the split pulls ahead, up to {large['best']['slo_rate_per_s'] / 8:.1f} per GPU against
sharing's {large['shared_limit'] / 8:.1f}. At this {ch17.ITL_TARGET_S / units.ms:.0f} ms target
the split starts to pay at {first_split} GPUs.""")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the table and the verdict below
itl_targets = (ch17.ITL_TARGET_S, 30 * units.ms, 50 * units.ms)
sweep_sizes = (2, 3, 4, 8, 16, 64)


def ahead(shared_rate, split_rate):
    """Which layout carries more; within 1% the model cannot tell them apart."""
    return ("tie" if abs(split_rate / shared_rate - 1) <= 0.01 else
            "split" if split_rate > shared_rate else "shared")


sweep = {(n, t): (calc.fleet_slo_rate(n, itl_target_s=t),
                  calc.best_split(n, itl_target_s=t)["slo_rate_per_s"])
         for n in sweep_sizes for t in itl_targets}
verdicts = {key: ahead(*rates) for key, rates in sweep.items()}
t20, t30, t50 = itl_targets
sweep_rows = ["| GPUs | " + " | ".join(f"ITL {t / units.ms:.0f} ms: shared / split"
                                        for t in itl_targets) + " |",
              "|---" * (len(itl_targets) + 1) + "|"]
for n in sweep_sizes:
    sweep_rows.append(f"| {n} | " + " | ".join(
        f"{sweep[(n, t)][0]:.1f} / {sweep[(n, t)][1]:.1f}: **{verdicts[(n, t)]}**"
        for t in itl_targets) + " |")
split_from = min(n for n in sweep_sizes
                 if all(verdicts[(m, t20)] == "split" for m in sweep_sizes if m >= n))
shared_30 = [n for n in sweep_sizes if verdicts[(n, t30)] == "shared"]
shared_50 = max(n for n in sweep_sizes
                if all(verdicts[(m, t50)] == "shared" for m in sweep_sizes if m <= n))
lead_50 = max(sweep[(n, t50)][1] / sweep[(n, t50)][0] - 1 for n in sweep_sizes)
assert verdicts[(8, t30)] == "tie" and not any(v == "shared" for (n, t), v in verdicts.items()
                                                   if t == t50 and n > shared_50)
# where the split's decode GPUs run out: KV memory, not the ITL target
kv_full = calc.tp_kv_capacity(m8, hw, context_tokens=ch17.MEAN_PROMPT_TOKENS
                              + ch17.MEAN_OUTPUT_TOKENS)
full_step = calc.decode_step_time(m8, hw, kv_full["max_sequences"],
                                  ch17.MEAN_PROMPT_TOKENS + ch17.MEAN_OUTPUT_TOKENS // 2)
ms_ = lambda t: f"{t / units.ms:.0f} ms"                      # noqa: E731
md("The highest rate (requests/s, whole fleet) at which 90% of requests meet both targets, "
   "the split the best division of the GPUs; within 1% is a tie:\n\n" + "\n".join(sweep_rows)
   + f"""

The verdict moves with the target. At {ms_(t20)} the split carries more from {split_from} GPUs
on. At {ms_(t30)} sharing keeps the lead on {" and ".join(map(str, shared_30))} GPUs, and the
8-GPU fleet ties ({sweep[(8, t30)][0]:.1f} against {sweep[(8, t30)][1]:.1f} req/s). At
{ms_(t50)} sharing carries more up to {shared_50} GPUs and the split never leads by more than
{100 * lead_50:.0f}%. The chapter's "below roughly node scale, share" sits at the loose end
of this range, and the model leaves out two costs that move the crossover up: operating two
pools instead of one, and a batch that fluctuates around its mean.""")

# %% [markdown] jp-MarkdownHeadingCollapsed=true
# #### In detail
#
# What the goodput model assumes, where each layout hits its limit, and the fleet sizes between.
#
# <!-- fold: the goodput model, its assumptions and the fleet sizes between -->

# %% [markdown]
# The model (`calc.fleet_goodput`) is analytic, fast enough to redraw a curve in milliseconds,
# and assumes:
#
# - **The workload.** Requests arrive at random (Poisson). Prompts are exponentially
#   distributed around the chapter's mean of 2,000 tokens, as in the pool sizing; every answer
#   has 250 tokens. A prompt token costs 17 §3's prefill time (the 8B at 50% of peak); a decode
#   round costs 17 §5's memory-bound step at the GPU's batch $b$, $(D_w + b\,L\,k)/\beta$:
#   the weight bytes $D_w$ and each stream's KV, $L$ tokens of $k$ bytes, read at the card's
#   3.35 TB/s, with $L$ the context of a stream halfway through its answer.
# - **The batch.** Little's law gives each GPU's decode batch: arrivals per second times the
#   rounds each stream stays. One mean batch per GPU, so the ITL target is met by every stream
#   or by none.
# - **Shared.** A round is the decode step plus a chunk of $c$ prompt tokens (17 §6), with $c$
#   the largest that keeps the round within the ITL target, so ITL holds by construction and a
#   prompt takes $n/c$ rounds.
# - **Split.** Prefill GPUs run whole prompts and stream token 1, so TTFT is their queue and
#   prefill; the mean prompt's KV hop, one way over NVLink, comes before token 2, so the hop
#   plus one decode step, like every later step, must stay within the ITL target.
# - **Both.** Waiting prompts form one first-come-first-served queue that whichever prefilling
#   GPU frees first takes from (the M/M/c pool above), so the share of requests within the TTFT
#   target is `calc.pool_time_tail`'s complement. Goodput is the offered rate times that share
#   when ITL holds and every queue drains, else zero; the highest rate at which 90% of requests
#   meet both targets is `calc.fleet_slo_rate`.
# - **Left out.** What running two pools costs to operate, attention's FLOPs, the KV memory a
#   waiting prompt holds, and a batch that fluctuates (which would turn the split's ITL cliff
#   into a slope).

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
divisions = {n: calc.best_split(n) for n in sweep_sizes}
trickle = calc.fleet_goodput(0.05, 8)
at_limit = calc.fleet_goodput(large["shared_limit"], 8)
split_edge = calc.fleet_goodput(large["best"]["slo_rate_per_s"], 8, layout="split",
                                prefill_gpus=large["best"]["prefill_gpus"])
decode_context = ch17.MEAN_PROMPT_TOKENS + ch17.MEAN_OUTPUT_TOKENS // 2
# the first interval is the hop plus a step: the step gets what the hop leaves of the target
step_budget = ch17.ITL_TARGET_S - split_edge["hop_s"]
ceiling = calc.itl_batch_ceiling(m8, hw, step_budget, decode_context)
# GPU-seconds a request needs in each pool: its prefill, and its share of a full decode GPU
decode_gpu_s = ((ch17.MEAN_OUTPUT_TOKENS - 1) * calc.decode_step_time(m8, hw, ceiling,
                                                                       decode_context) / ceiling)
demand_ratio = split_edge["prefill_service_s"] / decode_gpu_s
tiny = calc.fleet_goodput(small["best"]["slo_rate_per_s"], 2, layout="split", prefill_gpus=1)
rdma_16 = {hop: calc.fleet_slo_rate(16, layout="split", prefill_gpus=divisions[16]["prefill_gpus"],
                                    link_bytes_per_s=ch17.RDMA_400G_BYTES_PER_S, kv_hop=hop)
           for hop in ("whole", "layered")}
# the decode pool's card (17 §8: bandwidth-heavy SKUs for decode): same peak, more bandwidth
h200 = specs.H200_SXM
per_card = {card.name: calc.itl_batch_ceiling(m8, card, ch17.ITL_TARGET_S, decode_context)
            for card in (hw, h200)}
tok_s = {card.name: per_card[card.name] / calc.decode_step_time(m8, card, per_card[card.name],
                                                                decode_context)
         for card in (hw, h200)}
md(f"""The best divisions at {ch17.ITL_TARGET_S / units.ms:.0f} ms (prefill + decode GPUs): """
   + ", ".join(f"{d['prefill_gpus']} + {d['decode_gpus']} of {n}" for n, d in divisions.items())
   + f""".

**Why the target moves the verdict.** A looser target lets each shared GPU fit bigger prefill
chunks beside its decode step, while the split's decode GPUs fill their memory first:
{kv_full['max_sequences']} streams of {ch17.MEAN_PROMPT_TOKENS + ch17.MEAN_OUTPUT_TOKENS:,}
tokens fill the 8B's {kv_full['free_kv_bytes'] / units.GB:.0f} GB at a
{full_step / units.ms:.1f} ms step, so no target beyond that lends them anything. A batch that
fluctuates hurts the split more: its decode GPUs run at their ceiling, so each upward swing
breaks the ITL target or waits for memory, where a shared GPU shrinks its chunk instead.

**Why sharing runs out.** A shared GPU pays for its ITL with its prefill speed. At a trickle
its chunk is {trickle['chunk_tokens']} tokens; at the 8-GPU fleet's limit of
{large['shared_limit']:.1f} req/s each GPU decodes {at_limit['decode_batch']} streams, the
step has grown to {at_limit['step_s'] / units.ms:.1f} ms, and only
{at_limit['chunk_tokens']} prompt tokens fit beside it: a 2,000-token prompt takes
{ch17.MEAN_PROMPT_TOKENS / at_limit['chunk_tokens']:.1f} rounds, its prefill
{at_limit['prefill_service_s'] / units.ms:.0f} ms instead of
{split_edge['prefill_service_s'] / units.ms:.0f} ms on a GPU that does nothing else. The more
traffic, the bigger the batch and the slower the prefill.

**Why splitting runs out.** At {large['best']['slo_rate_per_s']:.1f} req/s each of the split's
{large['best']['decode_gpus']} decode GPUs holds {split_edge['decode_batch']} streams and its
step reaches {split_edge['step_s'] / units.ms:.1f} ms: with the
{split_edge['hop_s'] / units.ms:.2f} ms hop before a stream's first step, that fills the ITL
target (`calc.itl_batch_ceiling` at {step_budget / units.ms:.2f} ms puts the largest batch at
{ceiling}); its prefill GPUs are
{100 * split_edge['prefill_utilization']:.0f}% busy. On 2 GPUs the split has the opposite
problem: its one prefill GPU limits it while its one decode GPU runs {tiny['decode_batch']}
streams at a {tiny['step_s'] / units.ms:.1f} ms step, far from its ceiling. That is the
chapter's fleet "too small to keep two pools independently busy" (17 §8): whole GPUs cannot
follow a {demand_ratio:.1f} : 1 demand. Between nodes the hop goes over RDMA instead, where
a 2,000-token prompt of the 8B takes
{calc.kv_transfer_s(m8, ch17.MEAN_PROMPT_TOKENS, ch17.RDMA_400G_BYTES_PER_S) / units.ms:.1f} ms
to ship, all of it in the first interval: the 16-GPU split's limit barely moves
({rdma_16['whole']:.1f} req/s against {divisions[16]['slo_rate_per_s']:.1f} over NVLink), since
its decode GPUs have room beside their step, and shipped layer by layer it is
{rdma_16['layered']:.1f}.

**The decode pool's card.** Decode is bound by memory bandwidth and prefill by arithmetic, so
17 §8's rack designs give the decode pool bandwidth-heavy cards. An {h200.name}
({h200.mem_bw_bytes_per_s / 1e12:.2g} TB/s against {hw.mem_bw_bytes_per_s / 1e12:.3g}) holds
{per_card[h200.name]} of the 8B's streams within {ch17.ITL_TARGET_S / units.ms:.0f} ms where an
{hw.name} holds {per_card[hw.name]}, {tok_s[h200.name] / tok_s[hw.name]:.2f}x the output tokens
per GPU; in the prefill pool it is no faster, with the same
{h200.peak_flops_per_s / 1e12:.0f} TFLOP/s.""")

# %% [markdown]
# ## KV-aware routing
#
# With caches living on specific GPUs, the choice of GPU for a request starts to matter. In a
# multi-turn conversation every turn re-sends the entire history: the prompt of turn $t$ is
# everything up to turn $t-1$ plus one new message. If the first turn brings $n_1$ tokens and
# each later turn adds $\Delta n$,
#
# $$L_t = n_1 + (t - 1)\,\Delta n.$$
#
# ($L_t$ is what the chapter calls the accumulated context; in its example $n_1$ is the agent's
# prefix and $\Delta n$ the tokens added per turn.)
#
# A *cold* worker, one that has not seen this conversation, must prefill all $L_t$ tokens. A
# *warm* worker still holds the earlier turns' KV blocks and prefills just the $\Delta n$ new
# ones (the prefix sharing of 17 §5 maps the new sequence onto blocks already resident). At
# 17 §2's cost of $2N$ FLOPs per prefilled token, for a model of $N$ parameters (the
# chapter's "2 × 8e9" (17 §8) for the 8B), and half of the card's peak $\pi$ (989 TFLOP/s):
#
# $$\text{TTFT}_\text{cold} = \frac{2N\,L_t}{0.5\,\pi}, \qquad
# \text{TTFT}_\text{warm} = \frac{2N\,\Delta n}{0.5\,\pi}, \qquad
# \frac{\text{cold}}{\text{warm}} = \frac{L_t}{\Delta n}.$$
#
# The ratio rises by one with every turn. The chapter works it out for its reference agent
# (6,000 tokens in the first turn, 1,200 per later turn) at turn 20, on the 8B.

# %%
r = calc.kv_routing_ttft(m8, hw, 20)
print(f"turn 20: context {r['context_tokens']:,} tokens")
print(f"  cold: {r['cold_flops'] / 1e12:.1f} TFLOP -> {r['cold_s'] / units.ms:.0f} ms")
print(f"  warm: {r['warm_flops'] / 1e12:.1f} TFLOP -> {r['warm_s'] / units.ms:.1f} ms")
print(f"  hit vs miss: {r['speedup']:.0f}x")
for t in (2, 5, 10, 20, 40):
    x = calc.kv_routing_ttft(m8, hw, t)
    print(f"turn {t:2}: cold {x['cold_s'] / units.ms:6.0f} ms, warm {x['warm_s'] / units.ms:4.0f} ms,"
          f" {x['speedup']:4.1f}x")
for share in ch17.ROUTER_WARM_SHARES:
    mean = calc.routed_mean_ttft_s(r["cold_s"], r["warm_s"], share)
    print(f"router landing {100 * share:.0f}% of turn-20 requests warm: mean TTFT "
          f"{mean / units.ms:.0f} ms")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
good, poor = (calc.routed_mean_ttft_s(r["cold_s"], r["warm_s"], s)
              for s in ch17.ROUTER_WARM_SHARES)
md(f"""Going from a router that lands {100 * ch17.ROUTER_WARM_SHARES[1]:.0f}% of turns on a
warm worker to one that lands {100 * ch17.ROUTER_WARM_SHARES[0]:.0f}% cuts the mean TTFT at
turn 20 from {poor / units.ms:.0f} ms to {good / units.ms:.0f} ms, a bigger saving than any
kernel improvement in the chapter. So the router, the part of the stack that knows least about
GPUs, is a performance component; llm-d and NVIDIA Dynamo each include one that ranks workers
by how much of the prompt's prefix they already hold.

The difficulty is an old one from distributed systems: affinity and load balance pull in
opposite directions. Always sending a conversation to its warm worker lets a few busy
conversations swamp one GPU while others idle; spreading load evenly throws away the cached
prefix at every move. Practical routers weigh both signals, prefix overlap and current load,
and the KV cache becomes distributed state with the usual placement, eviction and consistency
problems (a router's map of which worker holds which prefix goes stale the moment a worker
evicts), much like sticky sessions or a sharded cache.""")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
new_tokens = ch17.AGENT_TOKENS_PER_TURN
warm_stall = calc.head_of_line_stall(m8, hw, new_tokens, ch17.DECODE_STEP_S)
warm_chunked = calc.chunked_prefill_trade(m8, hw, new_tokens, ch17.CHUNK_TOKENS,
                                          ch17.DECODE_STEP_S)
fit_chunk = int((ch17.ITL_TARGET_S - ch17.DECODE_STEP_S) / calc.prefill_compute_s(m8, hw, 1))
warm_fit = calc.chunked_prefill_trade(m8, hw, new_tokens, fit_chunk, ch17.DECODE_STEP_S)
prefix_hop = calc.kv_transfer_s(m8, r["context_tokens"] - new_tokens,
                                calc.nvlink_one_way_bytes_per_s(hw))
md(f"""Where does a warm turn's prefill run? On the decode GPU that holds the conversation's
blocks: in the simplest split it is the one prefill left on a decode GPU (some systems
route warm prefixes to prefill workers instead). It is short, not free. At turn 20 its
{new_tokens:,} new tokens take {warm_stall['stall_s'] / units.ms:.0f} ms of compute,
{warm_stall['worst_itl_over_step']:.1f} decode steps of {ch17.DECODE_STEP_S / units.ms:.1f} ms;
run whole, they hold up every stream on that GPU for that long, one interval of
{(warm_stall['stall_s'] + ch17.DECODE_STEP_S) / units.ms:.0f} ms against an ITL target of
{ch17.ITL_TARGET_S / units.ms:.0f} ms. Chunked as in 17 §6 they cost
{warm_chunked['chunks']} rounds of {warm_chunked['iteration_s'] / units.ms:.1f} ms with
{ch17.CHUNK_TOKENS}-token chunks, or {warm_fit['chunks']} rounds of
{warm_fit['iteration_s'] / units.ms:.1f} ms with chunks of {fit_chunk} tokens, the largest that
keep a round within the target. Sending the turn to the prefill pool instead would mean
shipping its {r['context_tokens'] - new_tokens:,}-token cached prefix there and back,
{prefix_hop / units.ms:.1f} ms each way over NVLink, so a warm turn stays where its blocks are
and the decode GPU chunks it.""")

# %% [markdown]
# ## Where this model breaks: prefill without attention, and one average per router
#
# Every prefilled token also attends to all the tokens before it, work that grows with the
# square of the context, and a router's misses set its tail however good its mean; the routing
# explorer's dotted curves draw the first, its readout's percentiles the second.

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the table below
rt_ctl = {c.name: c for c in widgets.KVRoutingPanel.controls}
rt_big = dict(first_turn_tokens=rt_ctl["first_turn_tokens"].max,
              tokens_per_turn=rt_ctl["tokens_per_turn"].max)
rt_rows = []
for rt_label, rt_turn, rt_kw in (("turn 20, the agent's turns (the chapter)", 20, {}),
                                 (f"turn {rt_ctl['turn'].max}, "
                                  f"{rt_big['first_turn_tokens']:,} + "
                                  f"{rt_big['tokens_per_turn']:,} per turn",
                                  rt_ctl["turn"].max, rt_big)):
    rt_ch = calc.kv_routing_ttft(m8, hw, rt_turn, **rt_kw)
    rt_full = calc.kv_routing_ttft(m8, hw, rt_turn, attention=True, **rt_kw)
    rt_rows.append((rt_label, f"{rt_ch['cold_s']:,.2f} s, {rt_ch['speedup']:.0f}x",
                    f"{rt_full['cold_s']:,.2f} s, {rt_full['speedup']:.0f}x",
                    f"{rt_full['cold_s'] / rt_ch['cold_s']:.2f}, "
                    f"{rt_full['speedup'] / rt_ch['speedup']:.2f}"))
md(tables.markdown_table(("setting (8B, cold TTFT and cold / warm)",
                          "chapter's model (matrices only)", "fuller model (attention counted)",
                          "fuller / chapter"), rt_rows))

# %% [markdown] jp-MarkdownHeadingCollapsed=true
# #### In detail
#
# Attention's share of a prefill, and the percentiles a router's mean hides.
#
# <!-- fold: the fuller model, its numbers and where it parts from the chapter's -->

# %% [markdown]
# Two simplifications sit in the routing arithmetic.
#
# - **Attention is left out of the prefill.** $2N$ FLOPs per token counts the matrices only.
#   Each new token also attends to every token before it, which at 17 §8's context lengths is
#   no longer small: a cold worker prefills the whole context $L_t$ with $L_t(L_t+1)/2$ causal
#   pairs, and even the warm worker's $\Delta n$ new tokens attend to the whole cached history.
#   With $a$ FLOPs per pair (`calc.attention_flops_per_pair`), cold costs
#   $2N L_t + a\,L_t(L_t+1)/2$ and warm
#   $2N\,\Delta n + a\,(\Delta n\,(L_t - \Delta n) + \Delta n(\Delta n+1)/2)$. The ratio is
#   no longer $L_t/\Delta n$, and it now depends on the model's shape.
# - **A router is summarised by its mean.** TTFT takes two values only: warm for the share
#   $f_\text{warm}$ of turns that land on a warm worker, cold for the rest. The mean blends
#   them, but the percentiles a dashboard shows (17 §9) do not: every percentile up to the
#   $100\,f_\text{warm}$-th is the warm TTFT, every one above it a full cold prefill
#   (`calc.routed_ttft_percentile`).

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
full = calc.kv_routing_ttft(m8, hw, 20, attention=True)
full70 = calc.kv_routing_ttft(m70, hw, 20, attention=True)
plain70 = calc.kv_routing_ttft(m70, hw, 20)
rows = ["| turn 20 | chapter (matrices only) | attention counted |", "|---|---|---|"]
for key, label in (("cold_s", "cold worker, 8B"), ("warm_s", "warm worker, 8B")):
    rows.append(f"| {label} | {r[key] / units.ms:,.0f} ms | {full[key] / units.ms:,.0f} ms |")
rows.append(f"| cold / warm, 8B | {r['speedup']:.1f}x | {full['speedup']:.1f}x |")
rows.append(f"| cold / warm, 70B | {plain70['speedup']:.1f}x | {full70['speedup']:.1f}x |")
rows2 = ["| router | mean | p50 | p90 | p99 |", "|---|---|---|---|---|"]
for share in ch17.ROUTER_WARM_SHARES:
    cells = [calc.routed_mean_ttft_s(r["cold_s"], r["warm_s"], share)] + [
        calc.routed_ttft_percentile(r["cold_s"], r["warm_s"], share, q) for q in (50, 90, 99)]
    rows2.append(f"| {100 * share:.0f}% of turns warm | "
                 + " | ".join(f"{x / units.ms:,.0f} ms" for x in cells) + " |")
md("\n".join(rows) + "\n\nTurn 20 on the 8B as a dashboard would show it (the chapter's "
   "matrix-only times):\n\n" + "\n".join(rows2))

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
route_controls = {c.name: c for c in widgets.KVRoutingPanel.controls}
t_hi = route_controls["turn"].max
first_hi = route_controls["first_turn_tokens"].max
step_hi = route_controls["tokens_per_turn"].max
far = calc.kv_routing_ttft(m8, hw, t_hi)
far_full = calc.kv_routing_ttft(m8, hw, t_hi, attention=True)
big = dict(first_turn_tokens=first_hi, tokens_per_turn=step_hi)
huge = calc.kv_routing_ttft(m8, hw, t_hi, **big)
huge_full = calc.kv_routing_ttft(m8, hw, t_hi, attention=True, **big)
# what the box says of the sliders' far corner: the longest context, attention over half
assert huge["context_tokens"] == ch17.LONGEST_CONTEXT_TOKENS
assert huge_full["cold_s"] > 2 * huge["cold_s"]
good_share = ch17.ROUTER_WARM_SHARES[0]
p99_good = calc.routed_ttft_percentile(r["cold_s"], r["warm_s"], good_share, 99)
md(f"""> **Where this model breaks: routing.** At the chapter's turn 20 the attention FLOPs make
> the cold prefill {full['cold_s'] / units.ms:,.0f} ms instead of {r['cold_s'] / units.ms:,.0f}
> ms ({100 * (full['cold_s'] / r['cold_s'] - 1):.0f}% more) and the warm one
> {full['warm_s'] / units.ms:.0f} ms instead of {r['warm_s'] / units.ms:.0f} ms
> ({100 * (full['warm_s'] / r['warm_s'] - 1):.0f}% more, since its new tokens attend to the
> whole history): a hit is worth {full['speedup']:.0f}x, not {r['speedup']:.0f}x, in
> TTFT, and more milliseconds than before. The ratio also stops being the same for every
> model: {full70['speedup']:.1f}x for the 70B shape, whose attention is a smaller share of its
> work, against {full['speedup']:.1f}x for the 8B (worked answer 5 below gives both readings). The mean of a {100 * good_share:.0f}%-warm router hides its tail: its p99 is a
> full cold prefill, {p99_good / units.ms:,.0f} ms; its p90 sits exactly on the edge, since exactly
> {100 * (1 - good_share):.0f}% of the turns are cold.
>
> At the explorer's extremes: at turn {t_hi} the cold prefill is
> {far_full['cold_s'] / units.ms:,.0f} ms with attention against
> {far['cold_s'] / units.ms:,.0f} ms without; with a {first_hi:,}-token first turn and
> {step_hi:,} tokens per turn the context reaches {huge['context_tokens']:,} tokens, 17 §4's
> longest context, where the sliders stop (its
> {calc.kv_bytes(m8, huge['context_tokens'], block_tokens=1) / units.GB:.1f} GB of 8B KV fits the
> {calc.tp_kv_capacity(m8, hw)['free_kv_bytes'] / units.GB:.0f} GB an H100 has free), and the
> attention term dominates: {huge_full['cold_s']:,.1f} s against {huge['cold_s']:,.1f} s
> cold, and the hit-to-miss ratio is {huge_full['speedup']:.0f}x instead of
> {huge['speedup']:.0f}x.
>
> **When it matters.** The attention term matters from tens of thousands of tokens on, which
> is exactly where routing matters most; the percentile matters for any SLO stated as a p90 or
> p99, since a router's misses set the tail no matter how good its mean. The routing
> explorer's dotted curves and its readout's percentiles are this model.""")

# %% [markdown]
# ## Chapter says / companion computes

# %%
ledger.show("17.8")

# %% [markdown]
# ## Explorer: sizing the two pools
#
# Request rate, request mix and per-group capacities. The step lines give each pool's group
# count as traffic grows; the dot marks the current workload. The dashed line is the prefill
# pool sized by queueing, so that the p90 of wait plus prefill meets the TTFT target you set.

# %% tags=["nbval-ignore-output"]
pool_panel = widgets.PoolSizingPanel()
pool_panel.show()

# %%
n = pool_panel.at().numbers
print(f"{n['prefill_groups']} prefill and {n['decode_groups']} decode groups "
      f"(ratio {n['prefill_to_decode']:g} : 1)")

# %% [markdown]
# ## Explorer: cold vs warm worker, turn by turn
#
# The turn, the shape of the conversation, the share of turns the router lands warm, the
# prefill efficiency and the model. The dashed line is the mean TTFT at the chosen share; the
# dotted curves count the attention FLOPs, and the readout gives the TTFT percentiles.

# %% tags=["nbval-ignore-output"]
route_panel = widgets.KVRoutingPanel()
route_panel.show()

# %%
n = route_panel.at().numbers
print(f"turn 20: cold {n['cold_ms']:.0f} ms, warm {n['warm_ms']:.1f} ms ({n['speedup']:.0f}x); "
      f"mean at 90% warm {n['mean_ms']:.0f} ms, at 30% warm {n['mean_ms_at_30pct']:.0f} ms")

# %% [markdown]
# ## Try this
#
# 1. **Predict, then move.** In the pool explorer or the diagram, first double the mean
#    prompt, then instead double the mean output. Predict which pool grows each time and what
#    happens to the ratio, then move the sliders.
#    <!-- states: pool_panel(mean_prompt_tokens=4000); pool_panel(mean_output_tokens=500) -->
# 2. At which request rate does the decode pool need an eleventh group? Read it off the step
#    line, then confirm with `calc.disaggregated_pools`.
#    <!-- states: pool_panel(request_rate=...) -->
# 3. Ship an 8,000-token request of the 8B instead of the 70B. How long does RDMA take, which
#    interval of the stream does it lengthen, and does that interval meet the ITL target? Then
#    switch the *KV hop* menu to layer by layer.
#    <!-- states: diagram(model=m8.name, mean_prompt_tokens=8000); diagram(model=m8.name, mean_prompt_tokens=8000, kv_hop="layered") -->
# 4. In the routing explorer, from which turn on does a cold worker miss the 500 ms TTFT
#    target? At turn 40, what share of warm landings keeps the p90 TTFT (the readout's
#    percentiles) under 500 ms? Would the mean have told you?
#    <!-- states: route_panel(turn=...); route_panel(turn=40, warm_share_pct=...) -->
# 5. **Predict, then move.** Switch the routing model to the 70B shape (still prefilled at half
#    of one H100's peak, which it would not fit: read the times as per-GPU work). Will the
#    cold-to-warm ratio change? Predict, then switch.
#    <!-- states: route_panel(model=m70.name) -->

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
base = pool_panel.at().numbers
long_docs = pool_panel.at(mean_prompt_tokens=4000).numbers
chatty = pool_panel.at(mean_output_tokens=500).numbers
answer(f"""Doubling the prompt doubles the prompt demand and only the prefill pool:
{long_docs['prefill_groups']} prefill and {long_docs['decode_groups']} decode groups, a ratio
of {long_docs['prefill_to_decode']:g} : 1. Doubling the output leaves prefill alone and
doubles decode: {chatty['prefill_groups']} and {chatty['decode_groups']}, a ratio of
{chatty['prefill_to_decode']:g} : 1 (the default is {base['prefill_to_decode']:g} : 1). Each
pool follows its own token stream.""", title="Worked answer 1")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
rate_ctl = pool_controls["request_rate"]
rates = [rate_ctl.min + k * rate_ctl.step
         for k in range(round((rate_ctl.max - rate_ctl.min) / rate_ctl.step) + 1)]
base = pool_panel.at().numbers
eleventh = base["decode_groups"] + 1
# the reader's scan along the rate slider, up to the first rate that needs the extra group
rate = next(r for r in rates
            if pool_panel.at(request_rate=r).numbers["decode_groups"] >= eleventh)
at = pool_panel.at(request_rate=rate).numbers
below = pool_panel.at(request_rate=rate - rate_ctl.step).numbers
# the confirmation the prompt asks for, with the chapter's request mix
confirm = calc.disaggregated_pools(rate, ch17.MEAN_PROMPT_TOKENS, ch17.MEAN_OUTPUT_TOKENS)
per_group = ch17.DECODE_TOK_PER_S_PER_GROUP
answer(f"""The decode pool needs $\\lceil \\lambda \\bar G / \\mu_d \\rceil$ groups, with
$\\bar G$ = {ch17.MEAN_OUTPUT_TOKENS} output tokens and $\\mu_d$ = {per_group:,} tok/s per
group. At the chapter's {ch17.REQUEST_RATE_PER_S} req/s that is
{base['output_tok_per_s']:,.0f} tok/s, exactly {base['decode_groups']} groups' capacity, so
the step line jumps at the very next stop of the rate slider, {rate:g} req/s:
{at['output_tok_per_s']:,.0f} output tok/s need {at['decode_groups']} groups, while at
{rate - rate_ctl.step:g} req/s ({below['output_tok_per_s']:,.0f} tok/s) the count stays at
{below['decode_groups']}, running them at
{100 * below['output_tok_per_s'] / (below['decode_groups'] * per_group):.0f}% of their
capacity. That is a capacity count, not a workable pool: as the pool-sizing box showed, a
pool at full load has no slack and its queue grows without bound. `calc.disaggregated_pools` with the chapter's
{ch17.MEAN_PROMPT_TOKENS:,}-token prompts and {ch17.MEAN_OUTPUT_TOKENS}-token outputs agrees
({confirm['decode_groups']} decode groups at {rate:g} req/s). A pool sized exactly to its
demand has no room left: the first extra request per second costs a whole extra group.""",
       title="Worked answer 2")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
ship_tokens = 8000
small_hop = diagram.at(model=m8.name, mean_prompt_tokens=8000).numbers
layered_hop = diagram.at(model=m8.name, mean_prompt_tokens=8000, kv_hop="layered").numbers
big_hop = diagram.at(mean_prompt_tokens=8000).numbers
# the prefill the layered hop overlaps: the diagram's readout gives its time
prefill8 = calc.prefill_compute_s(m8, hw, ship_tokens)
itl_ms = ch17.ITL_TARGET_S / units.ms
whole_verdict = (f"already over the {itl_ms:.0f} ms ITL target before the decode step is added"
                 + (f", though by only {small_hop['ship_ms'] - itl_ms:.1f} ms: a knife edge "
                    "under the companion's own choice of target, which a looser one in the "
                    "chapter's \"few tens of ms\" would pass"
                    if small_hop["ship_ms"] - itl_ms < 0.25 * itl_ms else "")
                 if small_hop["ship_ms"] > itl_ms else
                 f"leaving {itl_ms - small_hop['ship_ms']:.1f} ms of the {itl_ms:.0f} ms ITL "
                 "target for the decode step")
answer(f"""The 8B's KV for {ship_tokens:,} tokens is
{small_hop['kv_bytes_per_request'] / units.GB:.2f} GB, so RDMA needs
{small_hop['ship_ms']:.0f} ms, against {big_hop['ship_ms']:.0f} ms for the 70B (same KV heads
and head size, {m8.n_layers} layers instead of {m70.n_layers}). The prefill GPU has already
streamed token 1, so the hop lengthens the interval before token 2. Shipped whole after the
prefill, that interval is at least {small_hop['ship_ms']:.0f} ms, {whole_verdict}. Shipped
layer by layer during the {prefill8 / units.ms:.0f} ms prefill, the diagram shows
{layered_hop['hop_ms']:.2f} ms left after it, and the first interval is a decode step like any
other. A KV hop is judged against the interval it lengthens, the ITL target, not against
TTFT, and shipping it layer by layer is what makes it fit.""", title="Worked answer 3")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
target_ms = ch17.TTFT_P90_TARGET_S / units.ms
turn_ctl, share_ctl = route_controls["turn"], route_controls["warm_share_pct"]
turns = range(int(turn_ctl.min), int(turn_ctl.max) + 1)
cross = next(t for t in turns if route_panel.at(turn=t).numbers["cold_ms"] > target_ms)
at_cross = route_panel.at(turn=cross).numbers
late_turn = 40
shares = [share_ctl.min + k * share_ctl.step
          for k in range(round((share_ctl.max - share_ctl.min) / share_ctl.step) + 1)]
mixes = {s: route_panel.at(turn=40, warm_share_pct=s).numbers for s in shares}
enough = min(s for s, n in mixes.items() if n["p90_ms"] < target_ms)
at40, below40 = mixes[enough], mixes[enough - share_ctl.step]
# the mean's verdict, for contrast: the first share whose mean is under the target
mean_enough = min(s for s, n in mixes.items() if n["mean_ms"] < target_ms)
# the edge itself: exactly 10% cold passes only by the nearest rank; one miss more fails
r40 = calc.kv_routing_ttft(m8, hw, late_turn)
just_under = calc.routed_ttft_percentile(r40["cold_s"], r40["warm_s"], enough / 100 - 0.001, 90)
safe = enough + share_ctl.step
assert mixes[safe]["p90_ms"] < target_ms and just_under / units.ms > target_ms
answer(f"""The cold TTFT grows by one turn's prefill per turn and first exceeds
{target_ms:.0f} ms at turn {cross} ({at_cross['cold_ms']:.0f} ms). At turn {late_turn} a turn's
TTFT takes one of two values, $T_\\text{{cold}}$ = {at40['cold_ms']:,.0f} ms on a cold worker
or $T_\\text{{warm}}$ = {at40['warm_ms']:.0f} ms on a warm one. The p90 is the TTFT that 90% of
turns stay within: $T_\\text{{warm}}$ while fewer than 10% of turns are cold,
$T_\\text{{cold}}$ as soon as more are. At exactly {enough:g}% warm the readout shows a p90 of
{at40['p90_ms']:.0f} ms, but only because exactly one turn in ten is cold and the nearest-rank
p90 is the last warm one: at {enough - 0.1:g}% warm it is the cold {just_under / units.ms:,.0f}
ms. A router's warm share is no constant, so the answer is *more than* {enough:g}%: on the
slider {safe:g}%, where one turn in {100 / (100 - safe):.0f} is cold and the p90 stays
{mixes[safe]['p90_ms']:.0f} ms with room to spare. The mean would have misled: it drops under
{target_ms:.0f} ms already at {mean_enough:g}% warm ({mixes[mean_enough]['mean_ms']:.0f} ms),
where the p90 is still {mixes[mean_enough]['p90_ms']:,.0f} ms and one turn in
{100 / (100 - mean_enough):.0f} waits that long. Against a p90 target, what counts is the share
of misses, not their average cost: once a cold prefill exceeds the target, the router must
land more than 90% of turns warm, at any turn.""", title="Worked answer 4")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
small = route_panel.at().numbers
big = route_panel.at(model=m70.name).numbers
answer(f"""It depends on whether attention is counted. In the chapter's model (the solid
curves) both TTFTs are $2N$ FLOPs per token, so the 70B's are about
{big['cold_ms'] / small['cold_ms']:.1f}x longer (cold {big['cold_ms']:,.0f} ms, warm
{big['warm_ms']:.0f} ms at turn {ch17.ROUTING_TURN}) while their ratio stays {big['speedup']:.0f}x, the same
$L_t/\\Delta n$ as for the 8B ({small['speedup']:.0f}x): $N$ cancels out of the ratio. With
attention counted (the dotted curves) it no longer cancels. Each token then costs $2N$ plus
$a$ FLOPs for every earlier token it attends to: a warm token attends to the whole history, a
cold prompt's tokens to half of it on average, so attention adds more per token to the warm
prefill and the ratio falls below $L_t/\\Delta n$, more so where attention is a larger share of
the model's work: {big['speedup_attention']:.1f}x for the 70B shape against
{small['speedup_attention']:.1f}x for the 8B. Either way, what the larger model mostly changes
is the absolute saving per warm landing.""",
       title="Worked answer 5")

# %% [markdown]
# Previous: [17.7 Tensor and pipeline parallelism](17_07_parallelism.ipynb); next:
# [17.9 Measuring it](17_09_measuring.ipynb).
#
# > **What you can now compute**
# >
# > - The prefill and decode pool sizes for a request rate and mix, and how each moves with the workload ([Exercise 17-7](../../exercises/ex17_7.ipynb))
# > - The time to ship one request's KV cache over NVLink or RDMA ([Exercise 17-7](../../exercises/ex17_7.ipynb)), and over PCIe (the table above)
# > - The cold and warm TTFT of a conversation's turn $t$ and their ratio ([Exercise 17-13](../../exercises/ex17_13.ipynb))
# > - The mean TTFT a router achieves for a given share of warm landings ([Exercise 17-13](../../exercises/ex17_13.ipynb))
# >
# > <details><summary>Assumptions this notebook made</summary>
# >
# > A GPU group sustains a fixed prefill and decode rate
# > (the chapter's illustrative capacities) and a pool is sized by dividing mean demand by
# > them, while the fuller model treats the prefill pool as an M/M/c queue (Poisson arrivals,
# > exponential prefill times, one prompt per group at a time) and sizes it by the p90 of
# > wait plus prefill; the prefill GPU streams token 1 and the KV hop delays token 2; the hop
# > moves at the link's one-way rate (half of NVLink's spec-sheet figure), whole, after the
# > prefill, while the fuller model ships it layer by layer, one link per GPU where stated,
# > and ignores per-message latency; the goodput comparison serves the 8B on one GPU per
# > group at the goodput table's three ITL targets, with one mean decode batch per GPU, chunks
# > sized to the ITL target on shared GPUs and no cost for running two pools; prefill runs at
# > 50% of peak on one GPU per group for the 8B and four for the 70B; routing TTFT is prefill
# > compute only (no queueing, no network), with attention left out as in the chapter except
# > where the fuller model counts it; a router's warm share is one fixed probability per turn,
# > and routers are compared by mean TTFT, while their tails (p90, p99) are set by the cold
# > prefills that even the better router still sends.
# >
# > </details>
