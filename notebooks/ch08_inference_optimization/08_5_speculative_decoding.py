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
# # 8.5 Speculative decoding: several tokens per target pass
#
# **The question.** Decode emits one token per pass of the target model, and on this card a
# pass costs about the same whether it checks one position or a handful. Can a cheap guess
# of the next few tokens let one pass settle several of them, *without* changing what the
# target model would have produced, and when does the guessing cost more than it saves?
#
# Earlier sections made each pass cheaper per token by sharing it between requests (8.2) or
# by storing and reading less (8.3, 8.4). Speculation attacks the *number* of sequential
# passes a single request needs. This notebook follows Chapter 8's running example: Qwen3-8B
# on one RTX PRO 6000, where a plain decode round at batch 1 with a 2K context takes
# 26.26 ms ([overview](08_0_overview.ipynb)).

# %%
import numpy as np

from companion import calc, ledger, plots, specs, units, widgets
from companion.formulas import serving as sv
from companion.formulas import speculative as sp
from companion.sim import speculative as sim

model, card = specs.QWEN3_8B, specs.RTX_PRO_6000
plain_round_s = sp.DECODE_ROUND_S_BATCH1_2K

# %% [markdown]
# ## 8.5.1 Draft, verify, roll back
#
# A round has two halves. A *drafter* (anything cheap: a lookup in the text seen so far, a
# small network, extra heads on the model) proposes $m$ tokens. The target model then runs
# **one** pass over those $m$ positions plus one more. Because attention is causal, that
# single pass yields the target's own choice at every position, each computed as if the
# draft tokens before it were the true history.
#
# With greedy decoding (always take the most likely token) the rule is a left-to-right scan:
#
# - while the draft agrees with the target's choice, keep the draft token;
# - at the first disagreement, emit the *target's* token instead and stop;
# - throw away every later draft token, even ones the target happened to agree with: they
#   were verified on a history that contained the rejected token, so their verdicts mean
#   nothing;
# - if all $m$ agree, the pass also produced the target's choice *after* the last draft
#   token, a free bonus.
#
# Either way a round emits between 1 and $m + 1$ tokens, and the output is exactly what plain
# greedy decode would have written. The KV entries of discarded positions are dropped (the
# sequence length is reset to the confirmed output), and so is any sampler or grammar state
# that had advanced past it.
#
# Figure 8-29's case is a 4-token draft whose third token is wrong. The companion's verifier
# (`companion.sim.speculative.verify_greedy`) runs it on a toy sentence; note position 4,
# where the target's choice *matches* the draft and the token is still discarded.

# %%
ver = widgets.greedy_example(draft_len=4, first_mismatch=3)
words = widgets.VERIFICATION_WORDS
print(f"{'position':>8}  {'draft':8} {'target':8} verdict")
for s in ver.steps:
    draft = words[s["draft"]] if s["draft"] is not None else "-"
    print(f"{s['position']:>8}  {draft:8} {words[s['target']]:8} {s['verdict']}")
print(f"\nkept {ver.accepted} draft tokens + 1 correction = {len(ver.output)} outputs "
      f"({' '.join(words[t] for t in ver.output)}); {ver.discarded} draft tokens discarded")
plots.greedy_verification_figure(ver, words=words).show()

# %% [markdown]
# ### Explorer: step through a verification
#
# Move the first mismatch (set it to $m + 1$ for a draft that matches completely) and read
# the verdicts one position at a time with the step slider.

# %% tags=["nbval-ignore-output"]
verify_panel = widgets.GreedyVerificationPanel()
verify_panel.show()

# %%
print(verify_panel.update().numbers)

# %% [markdown]
# ### Sampling instead of greedy: accept with $\min(1, p/q)$
#
# When the target *samples* from its distribution $p$ rather than taking the maximum, "does
# the draft agree?" has no yes/no answer. The fix is a coin flip per draft token. The drafter
# samples $x$ from its own distribution $q$; the verifier accepts it with probability
#
# $$\alpha(x) = \min\!\left(1, \frac{p(x)}{q(x)}\right).$$
#
# The chance of drafting $x$ *and* accepting it is $q(x)\,\alpha(x) = \min(p(x), q(x))$:
# never more than the target wants. Where $q$ under-proposes $x$ there is a shortfall
# $[p(x) - q(x)]_+$, and on a rejection the verifier draws from exactly that shortfall,
# normalised. Summing the two routes,
#
# $$P(\text{emit } x) = \min(p, q)(x) + \Big(1 - \sum_y \min(p, q)(y)\Big)
# \frac{[p(x) - q(x)]_+}{\sum_y [p(y) - q(y)]_+} = p(x),$$
#
# because $\sum_y [p - q]_+ = 1 - \sum_y \min(p, q)$. The output distribution is the
# target's whatever the drafter does; the drafter only decides how often tokens are accepted,
# $a = \sum_x \min(p(x), q(x))$.
#
# The chapter's toy has two symbols with $p(A) = 1/4$, $p(B) = 3/4$ and two extreme drafters:
# one that always says A, one that always says B.

# %%
for label, q in (("always A", sp.TOY_DRAFT_ALWAYS_A), ("always B", sp.TOY_DRAFT_ALWAYS_B)):
    a = calc.speculative_acceptance_rate(sp.TOY_TARGET_PROBS, q)
    residual = calc.speculative_residual_distribution(sp.TOY_TARGET_PROBS, q)
    out = sim.output_distribution(sp.TOY_TARGET_PROBS, q)
    print(f"draft {label}: accepted with a = {a:.2f}; after a rejection resample from "
          f"(A, B) = ({residual[0]:.0f}, {residual[1]:.0f}); emitted (A, B) = "
          f"({out[0]:.2f}, {out[1]:.2f})")

# %% [markdown]
# The same check by simulation: 20,000 seeded rounds of four-token drafts from the "always A"
# drafter, every emitted token counted.

# %%
runs = sim.simulate_rounds(sp.TOY_TARGET_PROBS, sp.TOY_DRAFT_ALWAYS_A, sp.TOY_DRAFT_LEN,
                           20_000, seed=1)
emitted = runs.emitted_tokens()
print(f"{len(emitted):,} tokens emitted in {runs.n_rounds:,} rounds; share of A "
      f"{np.mean(emitted == 0):.3f} (target {sp.TOY_TARGET_PROBS[0]}); "
      f"mean tokens per round {runs.mean_tokens:.3f}")

# %% [markdown]
# ### Explorer: any target, any drafter
#
# Set the target's $p(A)$ and the drafter's $q(A)$. The left panel compares the frequency of
# emitted symbols (simulated, seeded) with $p$; the right panel shows how many tokens a round
# yields. Move $q$ far from $p$: the left bars barely move, the right ones collapse towards 1.

# %% tags=["nbval-ignore-output"]
sampling_panel = widgets.RejectionSamplingPanel()
sampling_panel.show()

# %%
for q_a in (1.0, 0.0):
    n = sampling_panel.update(q_a=q_a).numbers
    print(f"q(A) = {q_a}: acceptance {n['acceptance']:.2f}, E[N] {n['expected_tokens']:.2f} "
          f"(simulated {n['simulated_tokens_per_round']:.2f}), emitted A share "
          f"{n['simulated_share_A']:.3f} vs p(A) {n['target_share_A']}")
_ = sampling_panel.reset()

# %% [markdown]
# ## 8.5.2 How many tokens per round, and at what latency
#
# ### Average over tokens, not over rounds
#
# Rounds now emit different numbers of tokens, so "latency per token" must be total time over
# total tokens, $\bar t = \sum_r T_r / \sum_r N_r$. Averaging each round's own $T_r / N_r$
# gives a round that produced one token as much weight as one that produced five. The
# chapter's two 1.5 ms rounds emitting 1 and 5 tokens:

# %%
times, toks = sp.MEAN_ROUND_EXAMPLE_S, sp.MEAN_ROUND_EXAMPLE_TOKENS
print(f"total time / total tokens: {calc.mean_latency_per_token(times, toks) / units.ms:.1f} ms "
      f"per token")
print(f"mean of per-round ratios:  {calc.unweighted_round_latency(times, toks) / units.ms:.1f} ms "
      f"per token (wrong)")

# %% [markdown]
# ### Expected output of a round
#
# Let $a_j$ be the chance that draft token $j$ is accepted given that tokens $1..j-1$ were.
# A round emits at least $k + 1$ tokens exactly when the first $k$ draft tokens all pass, so
#
# $$\mathbb E[N_m] = \sum_{k \ge 0} P(N > k) = 1 + \sum_{j=1}^{m} \prod_{i=1}^{j} a_i,$$
#
# and with the same $a$ at every position, $1 + a + a^2 + \dots + a^m$. The toy's drafters
# give $a = 1/4$ (AAAA) and $a = 3/4$ (BBBB) at $m = 4$:

# %%
en = {label: calc.speculative_expected_tokens(a, sp.TOY_DRAFT_LEN)
      for label, a in (("AAAA", 0.25), ("BBBB", 0.75))}
for label, value in en.items():
    print(f"{label}: E[N] = {value:.4f} tokens per round")
acceptances = np.linspace(0, 1, 51).tolist()
curves = {m: [calc.speculative_expected_tokens(a, m) for a in acceptances] for m in (1, 2, 4, 8)}
plots.expected_output_figure(
    acceptances, curves,
    points=[(0.25, en["AAAA"], f"AAAA {en['AAAA']:.2f}"),
            (0.75, en["BBBB"], f"BBBB {en['BBBB']:.2f}")]).show()

# %% [markdown]
# Each curve saturates at $m + 1$ only as $a \to 1$: at modest acceptance a longer draft adds
# terms $a^j$ that are already small.
#
# ### The price of verifying more positions
#
# A verification pass over 5 positions reads the same weights and KV as a plain decode step;
# only the matrix work grows, by 4 more rows. At the batch-1 prefill efficiency measured in
# Experiment 8-1 that is a fraction of a millisecond, so the chapter counts a verification
# round as a plain round.

# %%
extra = calc.verification_extra_flops(model, sp.TOY_DRAFT_LEN + 1, sv.EXP81_CONTEXT_TOKENS)
mfu_b1 = calc.measured_prefill_mfu(model, card, 1, sv.EXP81_CONTEXT_TOKENS, 0,
                                   sv.PREFILL_S_BATCH1_2K)
print(f"4 extra rows: {extra / units.GFLOP:.1f} GFLOP, at {mfu_b1:.1%} of peak "
      f"{calc.time_at_mfu(extra, card, mfu_b1) / units.ms:.2f} ms, against a "
      f"{plain_round_s / units.ms:.2f} ms round")

# %% [markdown]
# ### Latency per token and how much a draft may cost (Figure 8-32)
#
# One round costs the verification $T_v$ plus the draft $T_d$ and yields $\mathbb E[N]$
# tokens on average, so
#
# $$\bar t_\text{spec} = \frac{T_v + T_d}{\mathbb E[N]}.$$
#
# It beats plain decode when $T_v + T_d < \mathbb E[N]\,T_\text{plain}$, that is when the
# draft costs less than $\mathbb E[N]\,T_\text{plain} - T_v$ per round. With a context-lookup
# drafter (0.1 ms per query) and $T_v = T_\text{plain} = 26.26$ ms:

# %%
query_s = sp.DRAFT_QUERY_S
crossover = {}
for label, value in en.items():
    latency = calc.speculative_latency_per_token(plain_round_s, value, query_s)
    crossover[label] = calc.draft_cost_crossover(plain_round_s, value)
    print(f"{label}: ({(plain_round_s + query_s) / units.ms:.2f} ms) / {value:.2f} = "
          f"{latency / units.ms:.2f} ms per token; the draft may cost up to "
          f"{crossover[label] / units.ms:.1f} ms per round")
draft_axis = [0.0, 70 * units.ms]
plots.draft_cost_figure(
    draft_axis,
    {f"{label} (E[N] = {value:.2f})":
     [calc.speculative_latency_per_token(plain_round_s, value, d) for d in draft_axis]
     for label, value in en.items()},
    plain_round_s, crossovers=list(crossover.items())).show()

# %% [markdown]
# Even the poor AAAA drafter wins here, because a rejected round still emits one token and
# costs barely more than a plain step. A drafter that needs more than 8.7 ms per round would
# lose with AAAA's acceptance, while BBBB's could afford almost 54 ms.
#
# ### A one-off preparation, and the tail of a request
#
# Building the lookup index takes 2 s before the first round. BBBB saves
# $T_\text{plain} - \bar t_\text{spec}$ per output token, so the index pays for itself after
# $2\ \text{s} / (26.26 - 8.64)\ \text{ms}$ tokens. For a whole 256-token request the
# companion counts the expected number of rounds exactly: the last round stops at token 256,
# so it is slightly more than $256 / \mathbb E[N]$ (`calc.speculative_expected_rounds`).

# %%
lat_b = calc.speculative_latency_per_token(plain_round_s, en["BBBB"], query_s)
G = sp.TOY_OUTPUT_TOKENS
print(f"break-even: {calc.prep_break_even_tokens(sp.INDEX_BUILD_S, plain_round_s, lat_b):.1f} "
      f"output tokens")
print(f"plain decode, {G} tokens: "
      f"{calc.speculative_request_time(G, plain_round_s, 0.0, 0):.2f} s")
rounds = calc.speculative_expected_rounds(G, 0.75, sp.TOY_DRAFT_LEN)
for exact in (True, False):
    t = calc.speculative_request_time(G, plain_round_s + query_s, 0.75, sp.TOY_DRAFT_LEN,
                                      prep_s=sp.INDEX_BUILD_S, exact_rounds=exact)
    how = (f"exact expected rounds {rounds:.2f}" if exact
           else f"{G} / E[N] = {G / en['BBBB']:.2f} rounds")
    print(f"2 s index + BBBB ({how}): {t:.3f} s")

# %% [markdown]
# ### Explorer: acceptance, draft length and draft cost
#
# The dashed line is plain decode; the curves are latency per token as the draft gets more
# expensive; crosses mark where speculation stops paying. The chapter's setting is BBBB with a
# 0.1 ms lookup and a 2 s index.

# %% tags=["nbval-ignore-output"]
latency_panel = widgets.SpeculativeLatencyPanel()
latency_panel.show()

# %%
for label, a in (("BBBB", 0.75), ("AAAA", 0.25)):
    n = latency_panel.update(acceptance=a).numbers
    print(f"{label}: E[N] {n['expected_tokens']:.2f}, {n['latency_per_token_ms']:.2f} ms/token, "
          f"crossover {n['crossover_ms']:.1f} ms, 256 tokens with the index "
          f"{n['request_s']:.2f} s (plain {n['plain_request_s']:.2f} s)")
_ = latency_panel.reset()

# %% [markdown]
# ## 8.5.3 Where drafts come from: serial vs parallel drafting
#
# A lookup drafter costs almost nothing per round but needs an index; a draft *network*
# costs its own forward passes and memory for its weights and KV. A network that writes its
# draft one token at a time pays $m$ forward passes per round; one that emits the whole block
# in a single pass (DFlash-style) pays one.
#
# At batch 1 everything is read-bound, so a forward pass of the 2.10 GB draft network takes
# its weight bytes over the bandwidth the target actually achieves (15.44 GB in 26.26 ms):

# %%
read_b1 = calc.round_read_bytes(model, 1, sv.EXP81_CONTEXT_TOKENS)
bw = calc.effective_read_bandwidth(read_b1, plain_round_s)
fwd = calc.draft_forward_time(sp.DFLASH_DRAFT_WEIGHT_BYTES, bw)
serial = calc.draft_generation_time(fwd, 4)
parallel = calc.draft_generation_time(fwd, 4, parallel=True)
print(f"batch-1 read {read_b1 / units.GB:.2f} GB in {plain_round_s / units.ms:.2f} ms: "
      f"{bw / units.GB:.0f} GB/s; one draft pass {fwd / units.ms:.2f} ms")
rows = [dict(label="serial, 3 tokens/round", draft_s=serial, verify_s=plain_round_s, tokens=3),
        dict(label="parallel, 3 tokens/round", draft_s=parallel, verify_s=plain_round_s,
             tokens=3),
        dict(label="parallel, 2 tokens/round", draft_s=parallel, verify_s=plain_round_s,
             tokens=2)]
for r in rows:
    t = calc.speculative_latency_per_token(r["verify_s"], r["tokens"], r["draft_s"])
    print(f"{r['label']:26} draft {r['draft_s'] / units.ms:5.2f} ms + verify "
          f"{r['verify_s'] / units.ms:.2f} ms over {r['tokens']} tokens = {t / units.ms:.1f} ms/token")
plots.draft_mode_figure(rows, plain_round_s=plain_round_s).show()

# %% [markdown]
# (The chapter prints the serial draft as 14.28 ms, four times the *rounded* 3.57 ms; the
# unrounded pass gives 14.29 ms. The per-token results are the same at one decimal.)
#
# Parallel drafting saves about 10.7 ms per round, but if its drafts are accepted less often
# (2 tokens per round instead of 3) it ends up *slower* than the serial drafter: the saving
# per round is spread over fewer tokens.
#
# ## 8.5.4 How long should a draft be?
#
# Lengthening the draft from $m - 1$ to $m$ adds $\Delta N = \prod_{i \le m} a_i$ expected
# tokens and some time $\Delta T$. With the round at $T$ and $N$ tokens, the longer draft
# lowers the latency per token exactly when
#
# $$\frac{T + \Delta T}{N + \Delta N} < \frac{T}{N} \iff \frac{\Delta T}{\Delta N} <
# \frac{T}{N}:$$
#
# the *marginal* cost of the extra expected output must be below the current *average*. Since
# $\Delta N$ shrinks geometrically while $\Delta T$ stays constant (or jumps), the condition
# eventually fails. Jumps come from fixed execution shapes: if the engine runs drafts or
# verification in padded groups (8 rows, then 16), the step past a group boundary pays for a
# whole group.
#
# The chapter's measurements with DFlash at concurrency 1 make the point (footnote 23): plain
# decode 90.0 ms, a 7-token draft (K7) 30.6 ms, a 15-token draft (K15) 29.4 ms. When a round
# accepts only one draft token, the verifier discards the rest:

# %%
lat = sp.DRAFT_LEN_LATENCY_S
print(f"measured medians: plain {lat['plain'] / units.ms:.1f} ms, K7 {lat['K7'] / units.ms:.1f} "
      f"ms, K15 {lat['K15'] / units.ms:.1f} ms (measurements, footnote 23)")
print(f"plain -> K7 saves {(lat['plain'] - lat['K7']) / units.ms:.1f} ms; K7 -> K15 another "
      f"{(lat['K7'] - lat['K15']) / units.ms:.1f} ms")
for name, m in sp.DRAFT_LEN_OF.items():
    out, dropped = calc.verification_outcome(m, 1)
    print(f"{name} accepting one draft token: {out} outputs, {dropped} draft tokens discarded")

# %% [markdown]
# ### Explorer: draft length with a serial drafter (Exercise 8-7's setting)
#
# Exercise 8-7 rounds 8.5.3's numbers to $T_v = 26.3$ ms and $t_d = 3.6$ ms per draft token,
# so a serial draft of length $m$ takes $T_m = 26.3 + 3.6\,m$ ms. The "groups of g" slider
# pads the draft positions to whole groups, $T_m = 26.3 + 3.6\,g\lceil m/g \rceil$ ms. Work
# the exercise by hand first; then use the explorer to check your table and to see the
# marginal test at each length.

# %% tags=["nbval-ignore-output"]
length_panel = widgets.DraftLengthPanel()
length_panel.show()

# %%
n = length_panel.update().numbers
print(f"m = 4, g = 1: E[N] {n['expected_tokens']:.3f}, T {n['round_ms']:.1f} ms, "
      f"{n['latency_per_token_ms']:.2f} ms/token; dT/dN {n['marginal_ms_per_token']:.1f} ms vs "
      f"T/N {n['current_ms_per_token']:.2f} ms -> helps: {n['extension_helps']}")

# %% [markdown]
# Concurrency changes the picture too. At batch 1 the verifier's extra rows use compute that
# would otherwise idle; in a busy batch, plain decode already shares each weight read across
# many requests, and the drafter's passes and memory compete with them. The draft model's KV
# must also be budgeted when deciding how many requests to admit (8.3, and the schemes of
# [8.6](08_6_load_and_configuration.ipynb)).
#
# ## Chapter says / companion computes
#
# Every number of 8.5, recomputed (`ok` compares at the chapter's printed rounding; `*` marks
# an entry with a note in the [ledger](../ledger.ipynb)).

# %%
print(ledger.table("8.5"))

# %% [markdown]
# ## Try this
#
# 1. In the rejection-sampling explorer, set $q(A) = p(A)$. What is the acceptance, and what
#    is $\mathbb E[N]$ at $m = 4$? Now move only $q$: which of the two panels changes?
# 2. With a target of $p(A) = 0.5$, which drafter maximises acceptance? Predict it from
#    $a = \sum_x \min(p, q)$ before moving the slider.
# 3. In the latency explorer, set the draft cost to 10 ms. For which acceptances does
#    speculation still beat plain decode at $m = 4$? What about at $m = 1$?
# 4. Raise the one-off preparation to 5 s and shorten the request to 128 tokens. Is the index
#    still worth building for the BBBB drafter?
# 5. In the draft-length explorer, set the padding to groups of 4 and compare $m = 4$ with
#    $m = 5$: what are $\Delta T$ and $\Delta N$, and does the marginal test pass? Then lower
#    $t_d$ until $m = 8$ becomes the best length.
#
# **Exercise:** [Exercise 8-7](../../exercises/ex8_7.ipynb) (which draft length minimises the
# latency per token, with and without padding to groups of 4).
