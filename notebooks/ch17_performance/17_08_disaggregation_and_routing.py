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
# **The question.** Prefill is a large block of arithmetic; decode is a long trickle of
# memory reads (17 §2-§3). Chunked prefill (17 §6) lets both share one GPU politely. At fleet
# scale there is a stronger option: give each phase its own pool of GPUs. How many GPUs does
# each pool need, what does moving a request's KV cache between them cost, and once KV caches
# live on particular machines, where should the next request of a conversation go?

# %%
from companion import calc, ledger, plots, specs, units, widgets
from companion.chapters.ch17 import LONGEST_CONTEXT_TOKENS

hw = specs.H100_SXM
m8, m70 = specs.LLAMA_8B, specs.LLAMA_70B

# %% [markdown]
# ## Two pools, two bottlenecks
#
# In a disaggregated deployment a request is first prefilled on a *prefill pool*, in one
# uninterrupted compute-bound pass; the KV cache it produces is then shipped to a *decode
# pool*, which streams the answer from it. Nothing long ever runs in front of a decode step,
# so the head-of-line stall of 17 §3 cannot happen, and each pool can be scaled on its own
# signal: the prefill pool when TTFT degrades, the decode pool when ITL does.
#
# Sizing becomes two independent divisions. With request rate $\lambda$, mean prompt
# $\bar P$ and mean output $\bar G$, and a measured capacity per GPU group of $C_p$ prompt
# tokens/s for prefill and $C_d$ output tokens/s for decode (at the ITL target):
#
# $$N_\text{prefill} = \left\lceil \frac{\lambda \bar P}{C_p} \right\rceil, \qquad
# N_\text{decode} = \left\lceil \frac{\lambda \bar G}{C_d} \right\rceil.$$
#
# The capacities are the chapter's representative values; a real deployment measures its own.

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

# %% [markdown]
# A longer-document workload grows only the prefill pool; a chattier one only the decode pool.
# A fleet of identical GPUs serving both phases has one size to choose; two pools have two.
# The DistServe paper phrases the benefit as **goodput**: requests per second that meet both
# the TTFT and the ITL objective, rather than raw tokens per second.
#
# ## The price of the hop: shipping the KV cache
#
# The decode worker needs the request's whole KV cache before it can emit the second token.
# Its size is 17 §4's formula, and its transfer time is bytes over link bandwidth:
#
# $$t_\text{ship} = \frac{2\, n_\text{layers}\, n_\text{kv}\, d_\text{head} \cdot 2\ \text{B}
# \cdot L}{\text{link bandwidth}}.$$

# %%
L = calc.CH17_LONG_CONTEXT_TOKENS
kv = calc.kv_bytes(m70, L, block_tokens=1)
links = {"NVLink (900 GB/s)": specs.NVLINK_H100_BYTES_PER_S,
         "PCIe Gen5 x16 (64 GB/s)": specs.PCIE_GEN5_X16_BYTES_PER_S,
         "400 Gb RDMA (50 GB/s)": specs.RDMA_400G_BYTES_PER_S}
print(f"70B shape, {L:,}-token context: {kv / units.GB:.2f} GB of KV")
for label, bw in links.items():
    print(f"  over {label:24}: {calc.kv_transfer_s(m70, L, bw) / units.ms:5.1f} ms")
contexts = [1000, 2000, 4000, 8000, 16000, 32000, 64000, LONGEST_CONTEXT_TOKENS]
curves = {label: [calc.kv_transfer_s(m70, c, bw) for c in contexts] for label, bw in links.items()}
marks = {label: (L, calc.kv_transfer_s(m70, L, bw)) for label, bw in links.items()}
plots.kv_transfer_figure(contexts, curves, marks=marks).show()

# %% [markdown]
# (RDMA is the network card writing directly into the other machine's memory, with no CPU copy
# on either side.) Tens of milliseconds are affordable against a TTFT of hundreds, and engines
# hide most of it by sending layer by layer while prefill is still computing the later layers.
# The same arithmetic says when disaggregating is a bad idea: small models, short prompts, or a
# fleet too small to keep two pools busy independently. Below roughly one node, share the GPUs
# (with chunked prefill); at fleet scale, split them.
#
# ## KV-aware routing
#
# Once KV caches are objects that live on particular workers, *where* a request lands
# matters. A multi-turn conversation re-sends its whole history every turn: turn $t$'s prompt
# is turn $t-1$'s conversation plus one new message. With a first turn of $F$ tokens and $T$
# more per turn,
#
# $$L_t = F + (t - 1)\,T.$$
#
# A *cold* worker (one that never saw this conversation) must prefill all $L_t$ tokens; a
# *warm* worker, which still holds the previous turn's KV blocks, prefills only the $T$ new
# ones (17 §5's prefix sharing points the new sequence at the resident blocks). With 17 §2's
# prefill cost of $2P$ FLOPs per token at 50% of peak:
#
# $$\text{TTFT}_\text{cold} = \frac{2P\,L_t}{0.5\,\text{peak}}, \qquad
# \text{TTFT}_\text{warm} = \frac{2P\,T}{0.5\,\text{peak}}, \qquad
# \frac{\text{cold}}{\text{warm}} = \frac{L_t}{T}.$$
#
# The ratio grows linearly with the turn number. The chapter evaluates it for a reference agent
# (6,000 tokens up front, 1,200 per turn) at turn 20, on the 8B.

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
for share in calc.CH17_ROUTER_WARM_SHARES:
    mean = calc.routed_mean_ttft_s(r["cold_s"], r["warm_s"], share)
    print(f"router landing {100 * share:.0f}% of turn-20 requests warm: mean TTFT "
          f"{mean / units.ms:.0f} ms")

# %% [markdown]
# A router that lands 90% of turns on the warm worker beats one that manages 30% by more TTFT
# than any kernel optimization in the chapter. That is why the router, the least GPU-specific
# part of the stack, counts as a performance component (llm-d and NVIDIA Dynamo both ship one
# that scores workers by prefix overlap).
#
# The catch is a familiar distributed-systems tension: prefix affinity fights load balance.
# Pin every conversation to its warm worker and a few hot conversations overload one GPU while
# others idle; balance perfectly and every move costs a full re-prefill. Real routers score
# both (overlap and current load), and the KV cache becomes distributed state with placement
# and eviction problems, like a sticky-session tier or a sharded cache.

# %% [markdown]
# ## Chapter says / companion computes

# %%
print(ledger.table("17.8"))

# %% [markdown]
# ## Explorer: sizing the two pools
#
# Request rate, the request mix and the per-group capacities. The step lines show how many
# groups each pool needs as traffic grows; the dot is the current workload.

# %% tags=["nbval-ignore-output"]
pool_panel = widgets.PoolSizingPanel()
pool_panel.show()

# %%
n = pool_panel.update().numbers
print(f"{n['prefill_groups']} prefill and {n['decode_groups']} decode groups "
      f"(ratio {n['prefill_to_decode']:g} : 1)")

# %% [markdown]
# ## Explorer: cold vs warm worker, turn by turn
#
# The turn, the conversation's shape, the share of turns the router lands warm, the prefill
# efficiency and the model. The dashed line is the mean TTFT at the chosen warm share.

# %% tags=["nbval-ignore-output"]
route_panel = widgets.KVRoutingPanel()
route_panel.show()

# %%
n = route_panel.update().numbers
print(f"turn 20: cold {n['cold_ms']:.0f} ms, warm {n['warm_ms']:.1f} ms ({n['speedup']:.0f}x); "
      f"mean at 90% warm {n['mean_ms']:.0f} ms, at 30% warm {n['mean_ms_at_30pct']:.0f} ms")

# %% [markdown]
# ## Try this
#
# - Double the mean prompt in the pool explorer, then double the mean output instead. Which
#   pool moves each time, and what happens to the ratio?
# - At what request rate does the decode pool need its eleventh group? Read it off the step
#   line, then check it with `calc.disaggregated_pools`.
# - Ship an 8,000-token 8B request instead of the 70B one. How long does RDMA take now, and
#   against what TTFT would you compare it?
# - In the routing explorer, at which turn does a cold worker cross a 500 ms TTFT target? What
#   warm share keeps the mean under it at turn 40?
# - Switch the routing model to the 70B shape (prefilled at the same 50% of one H100's peak,
#   which it would not fit: read it as per-GPU work). How does the ratio change, and why not?
#
# **Practice problems.** The Chapter 17 practice problems in
# [the exercises folder](../../exercises/) include sizing disaggregated pools, the KV transfer
# over NVLink vs RDMA, and the cold vs warm TTFT of a multi-turn conversation. Previous:
# [17.7 Tensor and pipeline parallelism](17_07_parallelism.ipynb); next:
# [17.9 Measuring it](17_09_measuring.ipynb).
