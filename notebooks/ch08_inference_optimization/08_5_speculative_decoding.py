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
# **The question.** Plain decode pays one full pass of the target model for every token, and
# on this card a pass over a handful of positions costs hardly more than a pass over one. So
# suppose something cheap guesses the next few tokens and the target checks all the guesses
# in a single pass: how many tokens does a pass then settle, does the text stay the target's
# own, and at what price of guessing does the trick stop paying?
#
# Batching (8.2) and smaller state (8.3, 8.4) make each pass cheaper per token by sharing or
# shrinking what it reads. Speculation leaves the pass alone and cuts how many passes one
# request needs in sequence. The setting is the running example, Qwen3-8B on one RTX PRO 6000,
# where a batch-1 decode round on a 2K context costs 26.26 ms
# ([overview](08_0_overview.ipynb)).

# %%
import numpy as np

from companion import calc, grading, ledger, plots, specs, units, widgets
from companion.chapters import ch08
from companion.display import answer, md
from companion.sim import speculative as sim

model, card = specs.QWEN3_8B, specs.RTX_PRO_6000
plain_round_s = ch08.ROUND_B1_S
ms = units.ms

# %% [markdown]
# ## 8.5.1 Draft, verify, roll back
#
# Each round has a guesser and a judge. The *drafter* can be anything inexpensive (a search
# for a repeat in the text so far, a small network, extra prediction heads) and proposes $m$
# tokens. The target then runs **one** pass over those $m$ positions plus one. Causal attention
# makes that single pass answer $m + 1$ questions at once: at each position it gives the
# target's own next token, assuming the draft before that position were real history.
#
# Under greedy decoding (take the most likely token) the verdict is a scan from the left:
#
# - a draft token that equals the target's pick is kept;
# - at the first one that differs, the target's pick is emitted in its place and the scan ends;
# - every draft token after that point is dropped, even where it happens to match: its check
#   assumed a history that contained the rejected token, so the check proves nothing;
# - when all $m$ match, the same pass has also computed the token that follows the draft, and
#   it is emitted as a bonus.
#
# A round therefore emits at least 1 and at most $m + 1$ tokens. The KV rows written for the
# dropped positions are discarded (the sequence length goes back to the confirmed output), and
# so is any sampler or grammar state that had moved past it.
#
# **Same text as plain greedy decode, up to rounding.** In exact arithmetic the output is the
# token-by-token greedy output. A real engine verifies with one matrix product over $m + 1$
# rows where plain decode computes one; kernels tile, split and order the additions
# differently for different row counts (and batch sizes), so the logits can differ in their
# last bits. Where the two best tokens are almost tied, that can change the winner, and the two
# texts part ways. Both are faithful greedy decodes to within floating-point rounding; neither
# is "the" exact one. The cell below shows the mechanism on two float32 logits built from the
# same three terms added in two orders.

# %%
contributions = [np.float32(1e8), np.float32(1.0), np.float32(-1e8)]   # one logit's terms
rival = np.float32(0.5)                                                 # the runner-up's logit
orders = {"large terms first": (contributions[0] + contributions[1]) + contributions[2],
          "cancel first": (contributions[0] + contributions[2]) + contributions[1]}
for name, logit in orders.items():
    winner = "token A" if logit > rival else "token B"
    print(f"{name:18}: logit of A = {float(logit):g}, of B = {float(rival):g} -> argmax {winner}")

# %% [markdown]
# Figure 8-29's case is a 4-token draft whose third token is wrong. The companion's verifier
# (`companion.sim.speculative.verify_greedy`) runs it on a toy sentence; look at position 4,
# where the target agrees with the draft and the token is dropped all the same.

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
# Move the first mismatch (put it at $m + 1$ for a draft that matches everywhere) and reveal
# the verdicts one position at a time with the step slider.

# %% tags=["nbval-ignore-output"]
verify_panel = widgets.GreedyVerificationPanel()
verify_panel.show()

# %%
print(verify_panel.at().numbers)

# %% [markdown]
# ### Sampling instead of greedy: accept with $\min(1, p_\theta/q)$
#
# When the target *samples* from its distribution $p_\theta$ instead of taking the top token,
# "does the draft agree?" is no longer a yes-or-no question, and a coin flip takes its place.
# The drafter samples $x$ from its own distribution $q$, and the verifier keeps it with
# probability $\min\!\big(1, p_\theta(x)/q(x)\big)$.
#
# Drafting $x$ and keeping it then happens with probability
# $q(x)\min(1, p_\theta(x)/q(x)) = \min(p_\theta(x), q(x))$, never more than the target would
# give $x$. Where the drafter proposes $x$ too rarely there is a shortfall
# $[p_\theta(x) - q(x)]_+$, and after a rejection the verifier samples from exactly that
# shortfall, normalised. Adding the two ways $x$ can come out,
#
# $$P(\text{emit } x) = \min(p_\theta, q)(x) + \Big(1 - \sum_y \min(p_\theta, q)(y)\Big)
# \frac{[p_\theta(x) - q(x)]_+}{\sum_y [p_\theta(y) - q(y)]_+} = p_\theta(x),$$
#
# since $\sum_y [p_\theta - q]_+ = 1 - \sum_y \min(p_\theta, q)$. Whatever the drafter does, the
# emitted tokens follow the target; the drafter only sets how often its tokens survive,
# $\alpha = \sum_x \min(p_\theta(x), q(x))$.
#
# The chapter's toy has two symbols, $p_\theta(A) = 1/4$ and $p_\theta(B) = 3/4$, and two
# extreme drafters: one always proposes A, the other always B.

# %%
for label, q in (("always A", ch08.TOY_DRAFT_ALWAYS_A), ("always B", ch08.TOY_DRAFT_ALWAYS_B)):
    a = calc.speculative_acceptance_rate(ch08.TOY_TARGET_PROBS, q)
    residual = calc.speculative_residual_distribution(ch08.TOY_TARGET_PROBS, q)
    out = sim.output_distribution(ch08.TOY_TARGET_PROBS, q)
    print(f"draft {label}: accepted with alpha = {a:.2f}; after a rejection resample from "
          f"(A, B) = ({residual[0]:.0f}, {residual[1]:.0f}); emitted (A, B) = "
          f"({out[0]:.2f}, {out[1]:.2f})")

# %% [markdown]
# The same check by simulation: 20,000 seeded rounds of four-token drafts from the "always A"
# drafter, counting every token that comes out.

# %%
runs = sim.simulate_rounds(ch08.TOY_TARGET_PROBS, ch08.TOY_DRAFT_ALWAYS_A, ch08.TOY_DRAFT_LEN,
                           20_000, seed=1)
emitted = runs.emitted_tokens()
print(f"{len(emitted):,} tokens emitted in {runs.n_rounds:,} rounds; share of A "
      f"{np.mean(emitted == 0):.3f} (target {ch08.TOY_TARGET_PROBS[0]}); "
      f"mean tokens per round {runs.mean_tokens:.3f}")

# %% [markdown]
# ### Explorer: any target, any drafter
#
# Set the target's $p_\theta(A)$ and the drafter's $q(A)$. On the left, how often each symbol
# is emitted (simulated, seeded) next to $p_\theta$; on the right, how many tokens a round
# yields. Pull $q$ away from $p_\theta$: the left bars hardly move while the right ones pile up
# at 1.

# %% tags=["nbval-ignore-output"]
sampling_panel = widgets.RejectionSamplingPanel()
sampling_panel.show()

# %%
for q_a in (1.0, 0.0):
    n = sampling_panel.at(q_a=q_a).numbers
    print(f"q(A) = {q_a}: acceptance {n['acceptance']:.2f}, E[X] {n['expected_tokens']:.2f} "
          f"(simulated {n['simulated_tokens_per_round']:.2f}), emitted A share "
          f"{n['simulated_share_A']:.3f} vs p(A) {n['target_share_A']}")
# %% [markdown]
# ## 8.5.2 How many tokens per round, and at what latency
#
# ### Average over tokens, not over rounds
#
# Now rounds differ in how many tokens $X_r$ they emit (8.5.2 writes $N_r$ and $\mathbb E[N]$;
# here $N$ counts parameters), so the latency per token has to be total time over total
# tokens, $\bar t_\text{spec} = \sum_r T_r / \sum_r X_r$. Averaging
# each round's own ratio $T_r / X_r$ instead lets a round that produced one token count as much
# as one that produced five. The chapter's pair of rounds, equally long, emitting 1 and 5 tokens:

# %%
times, toks = ch08.MEAN_ROUND_EXAMPLE_S, ch08.MEAN_ROUND_EXAMPLE_TOKENS
print(f"total time / total tokens: {calc.mean_latency_per_token(times, toks) / ms:.1f} ms "
      f"per token")
print(f"mean of per-round ratios:  {calc.unweighted_round_latency(times, toks) / ms:.1f} ms "
      f"per token (wrong)")

# %% [markdown]
# ### Expected output of a round
#
# Write $a_i$ for the chance that draft token $i$ survives given that tokens $1..i-1$ did. A
# round emits more than $j$ tokens exactly when its first $j$ draft tokens all survive, and
# summing those tail probabilities gives
#
# $$\mathbb E[X] = \sum_{j \ge 0} P(X > j) = 1 + \sum_{j=1}^{m} \prod_{i=1}^{j} a_i,$$
#
# which for a constant rate $\alpha$ is $1 + \alpha + \alpha^2 + \dots + \alpha^m$. The toy
# drafters have $\alpha = 1/4$ (AAAA) and $\alpha = 3/4$ (BBBB) at $m = 4$:

# %%
en = {label: calc.speculative_expected_tokens(a, ch08.TOY_DRAFT_LEN)
      for label, a in (("AAAA", 0.25), ("BBBB", 0.75))}
for label, value in en.items():
    print(f"{label}: E[X] = {value:.4f} tokens per round")
acceptances = np.linspace(0, 1, 51).tolist()
curves = {m: [calc.speculative_expected_tokens(a, m) for a in acceptances] for m in (1, 2, 4, 8)}
plots.expected_output_figure(
    acceptances, curves,
    points=[(0.25, en["AAAA"], f"AAAA {en['AAAA']:.2f}"),
            (0.75, en["BBBB"], f"BBBB {en['BBBB']:.2f}")]).show()

# %% [markdown]
# A curve reaches its ceiling $m + 1$ only as $\alpha \to 1$. At middling acceptance, making
# the draft longer only adds powers $\alpha^j$ that are already small.

# %% [markdown] jp-MarkdownHeadingCollapsed=true
# ### The price of verifying more positions
#
# Only the matrix work grows.
#
# <!-- fold: what verifying more positions costs, in FLOPs and in time -->

# %% [markdown]
# Verifying 5 positions reads exactly the weights and KV that a plain step reads; only the
# matrix work grows, by 4 extra rows. Priced at the batch-1 prefill efficiency of
# Experiment 8-1, that is a small fraction of a round, which is why the chapter counts a
# verification round as a plain one:

# %%
extra = calc.verification_extra_flops(model, ch08.TOY_DRAFT_LEN + 1, ch08.SHORT_PROMPT_TOKENS)
mfu_b1 = calc.measured_prefill_mfu(model, card, 1, ch08.SHORT_PROMPT_TOKENS, 0,
                                   ch08.PREFILL_ROUND_S)
print(f"4 extra rows: {extra / units.GFLOP:.1f} GFLOP, at {mfu_b1:.1%} of peak "
      f"{calc.time_at_mfu(extra, card, mfu_b1) / ms:.2f} ms, against a "
      f"{plain_round_s / ms:.2f} ms round")

# %% [markdown]
# **A measurement that says the same (Experiment 8-5).** DFlash drafts 7 tokens per round, so
# its target verifies 8 positions in one pass. In that experiment's own setup the measured
# median round and the median plain decode step compare as follows; the estimate beside them
# prices the 7 extra rows the way the previous cell priced 4.

# %%
dflash_positions = ch08.DFLASH_DRAFT_TOKENS + 1
extra_dflash = calc.verification_extra_flops(model, dflash_positions, ch08.SHORT_PROMPT_TOKENS)
extra_dflash_s = calc.time_at_mfu(extra_dflash, card, mfu_b1)
ratio = ch08.DFLASH_VERIFY_ROUND_S / ch08.DFLASH_PLAIN_STEP_S
print(f"measured: DFlash round {ch08.DFLASH_VERIFY_ROUND_S / ms:.1f} ms vs plain step "
      f"{ch08.DFLASH_PLAIN_STEP_S / ms:.1f} ms -> ratio {ratio:.2f}")
print(f"estimate: {dflash_positions - 1} extra rows = {extra_dflash / units.GFLOP:.0f} GFLOP, "
      f"{extra_dflash_s / ms:.2f} ms at {mfu_b1:.1%} of peak")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
md(f"""
The verifying round came out no longer than the plain step (the medians even put it
{1 - ratio:.0%} lower), although it checks {dflash_positions} positions instead of one. A
difference of that size between two medians says "no measurable extra cost", not "verifying
is faster". The estimate agrees: the extra rows would take about {extra_dflash_s / ms:.1f} ms
even if nothing overlapped, small next to either time, because at batch 1 the pass is paced by
reading weights and a few more rows ride along. Experiment 8-5's plain step
({ch08.DFLASH_PLAIN_STEP_S / ms:.1f} ms) is not Experiment 8-1's ({plain_round_s / ms:.2f} ms):
the two ran under different engine settings, so compare within one experiment, never across.
""")

# %% [markdown]
# ### Latency per token and how much a draft may cost (Figure 8-32)
#
# A round costs the verification $T_v$ plus the draft $T_d$ and yields $\mathbb E[X]$ tokens on
# average:
#
# $$\bar t_\text{spec} = \frac{T_v + T_d}{\mathbb E[X]}.$$
#
# That beats plain decode when $T_v + T_d < \mathbb E[X]\,T_\text{step}$, so the draft may
# cost at most $\mathbb E[X]\,T_\text{step} - T_v$ per round. With a drafter that looks up
# the context (0.1 ms per query) and $T_v = T_\text{step} = 26.26$ ms:

# %%
query_s = ch08.DRAFT_QUERY_S
crossover = {}
for label, value in en.items():
    latency = calc.speculative_latency_per_token(plain_round_s, value, query_s)
    crossover[label] = calc.draft_cost_crossover(plain_round_s, value)
    print(f"{label}: ({(plain_round_s + query_s) / ms:.2f} ms) / {value:.2f} = "
          f"{latency / ms:.2f} ms per token; the draft may cost up to "
          f"{crossover[label] / ms:.1f} ms per round")
draft_axis = [0.0, 70 * ms]
plots.draft_cost_figure(
    draft_axis,
    {f"{label} (E[X] = {value:.2f})":
     [calc.speculative_latency_per_token(plain_round_s, value, d) for d in draft_axis]
     for label, value in en.items()},
    plain_round_s, crossovers=list(crossover.items())).show()

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
md(f"""
Even the weak AAAA drafter comes out ahead here: a rejected round still emits one token and
costs barely more than a plain step. With AAAA's acceptance a drafter may spend up to
{crossover['AAAA'] / ms:.1f} ms per round before it loses; BBBB's acceptance leaves room for
{crossover['BBBB'] / ms:.1f} ms.
""")

# %% [markdown] jp-MarkdownHeadingCollapsed=true
# ### A one-off preparation, and the tail of a request
#
# When an index build pays for itself.
#
# <!-- fold: a one-off preparation, and the last round of a request -->

# %% [markdown]
# The lookup index costs 2 s to build before the first round.
# Each output token then saves
# $T_\text{step} - \bar t_\text{spec}$, so the index has paid for itself after
# $T_\text{prep} / (T_\text{step} - \bar t_\text{spec})$ tokens. For a whole 256-token request
# the companion counts the expected number of rounds exactly: the last round is cut off at
# token 256, so slightly more rounds are needed than $256 / \mathbb E[X]$
# (`calc.speculative_expected_rounds`).

# %%
lat_b = calc.speculative_latency_per_token(plain_round_s, en["BBBB"], query_s)
G = ch08.OUTPUT_TOKENS
print(f"break-even: {calc.prep_break_even_tokens(ch08.INDEX_BUILD_S, plain_round_s, lat_b):.1f} "
      f"output tokens")
print(f"plain decode, {G} tokens: "
      f"{calc.speculative_request_time(G, plain_round_s, 0.0, 0):.2f} s")
rounds = calc.speculative_expected_rounds(G, 0.75, ch08.TOY_DRAFT_LEN)
for exact in (True, False):
    t = calc.speculative_request_time(G, plain_round_s + query_s, 0.75, ch08.TOY_DRAFT_LEN,
                                      prep_s=ch08.INDEX_BUILD_S, exact_rounds=exact)
    how = (f"exact expected rounds {rounds:.2f}" if exact
           else f"{G} / E[X] = {G / en['BBBB']:.2f} rounds")
    print(f"2 s index + BBBB ({how}): {t:.3f} s")

# %% [markdown]
# ### Explorer: acceptance, draft length and draft cost
#
# The dashed line is plain decode; each curve is the latency per token as the draft grows more
# expensive; the crosses mark where speculation stops paying. The chapter's setting is BBBB
# with a 0.1 ms lookup and a 2 s index.

# %% tags=["nbval-ignore-output"]
latency_panel = widgets.SpeculativeLatencyPanel()
latency_panel.show()

# %%
for label, a in (("BBBB", 0.75), ("AAAA", 0.25)):
    n = latency_panel.at(acceptance=a).numbers
    print(f"{label}: E[X] {n['expected_tokens']:.2f}, {n['latency_per_token_ms']:.2f} ms/token, "
          f"crossover {n['crossover_ms']:.1f} ms, 256 tokens with the index "
          f"{n['request_s']:.2f} s (plain {n['plain_request_s']:.2f} s)")
# %% [markdown] jp-MarkdownHeadingCollapsed=true
# ### What engines report
#
# Acceptance counters, and why none of them is $\alpha$.
#
# <!-- fold: an engine's acceptance counters against the acceptance and E[X] of 8.5.2 -->

# %% [markdown]
# A serving engine with speculation on counts, per round, the draft tokens it proposed and how
# many of them survived, and logs ratios of those counts (vLLM's speculative-decoding metrics
# are one example). Two of the ratios look like an acceptance probability and are not one:
#
# - **accepted ÷ proposed** (a "draft acceptance rate") counts every proposed token, including
#   those behind the first rejection, which the verifier never judged on their own. With one
#   $\alpha$ a round keeps $\mathbb E[X] - 1 = \alpha + \dots + \alpha^m$ of its $m$
#   proposals, so the ratio is $(\mathbb E[X] - 1)/m$, below $\alpha$;
# - **mean acceptance length**, one plus the accepted tokens per round, is $\mathbb E[X]$
#   itself: the correction or bonus token is counted in;
# - an **acceptance rate at position $i$**, the rounds that kept position $i$ over all rounds,
#   is $P(X > i)$, which is $\alpha^i$ under one $\alpha$; the conditional $a_i$ of 8.5.2 is
#   the ratio of two neighbouring positions.
#
# The counters of 20,000 simulated BBBB rounds, next to what 8.5.2's formulas give:

# %%
bbbb = sim.simulate_rounds(ch08.TOY_TARGET_PROBS, ch08.TOY_DRAFT_ALWAYS_B, ch08.TOY_DRAFT_LEN,
                           20_000, seed=4)
m_toy, a_toy = ch08.TOY_DRAFT_LEN, 0.75
counters = {"rounds": bbbb.n_rounds, "proposed": m_toy * bbbb.n_rounds,
            "accepted": int(bbbb.accepted.sum())}
by_position = [float((bbbb.accepted >= i).mean()) for i in range(1, m_toy + 1)]
print(f"counters: {counters}")
print(f"accepted / proposed      {counters['accepted'] / counters['proposed']:.3f}   formula "
      f"(E[X] - 1) / m = {(en['BBBB'] - 1) / m_toy:.3f}   (alpha = {a_toy})")
print(f"mean acceptance length   {1 + counters['accepted'] / counters['rounds']:.3f}   formula "
      f"E[X] = {en['BBBB']:.3f}")
print("rate at position i       " + ", ".join(f"{r:.3f}" for r in by_position)
      + "   formula alpha^i = " + ", ".join(f"{a_toy ** i:.3f}" for i in range(1, m_toy + 1)))
print("neighbouring ratios      " + ", ".join(
    f"{b / a:.3f}" for a, b in zip([1.0] + by_position, by_position)) + "   (the a_i)")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
md(f"""So a dashboard reading "acceptance {counters['accepted'] / counters['proposed']:.0%}" for
this drafter describes the same rounds as $\\alpha = {a_toy}$ and
$\\mathbb E[X] =$ {en['BBBB']:.2f}. For the latency of 8.5.2 the mean acceptance length is
the number to take, since it is $\\mathbb E[X]$ measured; to compare drafters at another
draft length, recover $\\alpha$ (or the $a_i$) from the per-position rates first, because the
accepted-to-proposed ratio falls as $m$ grows even when nothing about the drafter
changes.""")

# %% [markdown]
# ## 8.5.3 Where drafts come from: the four stages of a round
#
# A lookup drafter costs next to nothing per round but needs its index; a draft *network*
# costs forward passes of its own plus memory for its weights and KV. The chapter lists five
# sources of drafts (8.5.3), which differ in what the drafter sees and what it costs:
#
# - **context lookup**: copy a span that already appeared in the prompt or the output; no
#   network, only an index to build and query;
# - **an independent small model**: a smaller language model drafting token by token, with
#   its own weights and KV cache in memory;
# - **EAGLE-style heads**: a light network that reads the *target's* hidden states rather
#   than the raw tokens, so it can be small and still agree often; it runs token by token but
#   has no full stack of layers of its own;
# - **multi-token-prediction (MTP) heads**: extra output heads trained with the model itself
#   to predict the next few tokens; only models released with such heads have them;
# - **parallel (DFlash-style) drafting**: a separate draft network that writes a whole block
#   of draft tokens in one pass; DFlash is the chapter's running example.
#
# Splitting a round into
# four stages, one after another, makes drafters comparable term by term:
#
# 1. **draft generation**: $m$ passes of a network that writes one token per pass, or a
#    single pass for one that writes the whole block at once (DFlash-style);
# 2. **verification preparation**: putting the draft tokens and their positions into the
#    target's batch;
# 3. **target verification**: the one pass of the target over $m + 1$ positions;
# 4. **output determination**: comparing, rolling back and, when sampling, resampling.
#
# The chapter times stages 1 and 3 only and takes 2 and 4 as negligible. It prices a pass of
# the 2.10 GB draft network at the measured batch-1 rate: the draft's bytes over the rate the
# target reaches in a batch-1 round (a rate set mostly by launch overhead, the fold below):

# %%
read_b1 = calc.round_read_bytes(model, 1, ch08.SHORT_PROMPT_TOKENS)
bw = calc.effective_read_bandwidth(read_b1, plain_round_s)
fwd = calc.draft_forward_time(ch08.DFLASH_DRAFT_WEIGHT_BYTES, bw)
serial = calc.draft_generation_time(fwd, 4)
parallel = calc.draft_generation_time(fwd, 4, parallel=True)
print(f"batch-1 read {read_b1 / units.GB:.2f} GB in {plain_round_s / ms:.2f} ms: "
      f"{bw / units.GB:.0f} GB/s; one draft pass {fwd / ms:.2f} ms")
print(f"that is {bw / card.mem_bw_bytes_per_s:.2f} of the card's "
      f"{card.mem_bw_bytes_per_s / units.GB:,.0f} GB/s (why, and other rates: the fold below)")
stages = {"serial: 4 draft passes": calc.speculative_round_stages(serial, plain_round_s),
          "parallel: one draft pass": calc.speculative_round_stages(parallel, plain_round_s)}
for label, parts in stages.items():
    print(f"{label:25} " + ", ".join(f"{p['stage']} {p['duration_s'] / ms:.2f} ms"
                                     for p in parts)
          + f" -> round {parts[-1]['end_s'] / ms:.2f} ms")
plots.round_stages_figure(stages, plain_round_s=plain_round_s).show()

# %%
rows = [dict(label="serial, 3 tokens/round", draft_s=serial, verify_s=plain_round_s, tokens=3),
        dict(label="parallel, 3 tokens/round", draft_s=parallel, verify_s=plain_round_s,
             tokens=3),
        dict(label="parallel, 2 tokens/round", draft_s=parallel, verify_s=plain_round_s,
             tokens=2)]
for r in rows:
    t = calc.speculative_latency_per_token(r["verify_s"], r["tokens"], r["draft_s"])
    print(f"{r['label']:26} draft {r['draft_s'] / ms:5.2f} ms + verify "
          f"{r['verify_s'] / ms:.2f} ms over {r['tokens']} tokens = {t / ms:.1f} ms/token")
plots.draft_mode_figure(rows, plain_round_s=plain_round_s).show()

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
md(f"""
(The chapter prints the serial draft as four times its *rounded* single pass; four unrounded
passes give {serial / ms:.2f} ms. The per-token results agree at one decimal.)

Drafting in parallel saves {(serial - parallel) / ms:.1f} ms per round. If its drafts survive
less often, though (2 tokens per round instead of 3), it ends up *slower* than the serial
drafter: the round got shorter, but it is now shared by fewer tokens.
""")

# %% [markdown] jp-MarkdownHeadingCollapsed=true
# ### Why a third of the bandwidth
#
# The draft pass's price, and how it moves with the rate assumed.
#
# <!-- fold: why a draft pass is priced at a third of peak bandwidth, and other readings -->

# %% [markdown]
# A batch-1 pass is a chain of many small kernels (a few per layer, each a matrix-vector
# product). Every kernel pays launch and synchronisation time that does not shrink with its
# bytes, and Experiment 8-1 ran without CUDA graphs (8.6.3), so most of its batch-1 round is
# such fixed time rather than reading. A draft network's kernels are smaller still, so there is
# no reason to expect it nearer the data sheet than its target. The chapter therefore prices
# the draft at the target's own measured rate. The cell below sets that rate beside three
# others: the data sheet, a measured batch-1 rate of a tuned stack from the companion's
# published measurements, and the companion's fit to those measurements, which adds a fixed
# cost to every forward pass.

# %%
from companion import measurements

gpt_fast = next(r for r in measurements.rows() if r.id == "gf-7b-bf16-tp1")
tuned_mbu = calc.decode_utilization(measurements.models()[gpt_fast.model],
                                    specs.A100_80GB, gpt_fast.value)["mbu"]
fit = measurements.calibrate()
m_stage, x_stage = 4, 3           # the four-stage example: 4 draft tokens, 3 per round
weights_alone = ch08.DFLASH_DRAFT_WEIGHT_BYTES / card.mem_bw_bytes_per_s
readings = {
    "data sheet (100% of peak)": weights_alone,
    f"tuned stack, measured at batch 1 ({tuned_mbu:.0%})": weights_alone / tuned_mbu,
    f"the chapter: the target's batch-1 rate ({bw / card.mem_bw_bytes_per_s:.0%})": fwd,
    f"fit to published rows ({fit.bandwidth_eff:.0%} + {fit.overhead_s / ms:.2f} ms a pass)":
        weights_alone / fit.bandwidth_eff + fit.overhead_s,
}
print(f"tuned stack: {gpt_fast.model}, batch 1, {gpt_fast.gpus}, {gpt_fast.value:g} tok/s "
      f"({gpt_fast.source_id}) -> MBU {tuned_mbu:.0%}")
print(f"{'draft pass priced at':52} {'one pass':>9} {'serial':>12} {'parallel':>12}")
for label, t in readings.items():
    per_token = {par: calc.speculative_latency_per_token(
        plain_round_s, x_stage, calc.draft_generation_time(t, m_stage, parallel=par))
        for par in (False, True)}
    print(f"{label:52} {t / ms:6.2f} ms {per_token[False] / ms:6.1f} ms/tok "
          f"{per_token[True] / ms:6.1f} ms/tok")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
gap = {label: (m_stage - 1) * t / x_stage for label, t in readings.items()}
md(f"""Whatever the rate, the parallel drafter saves {m_stage - 1} passes per round, so its lead
over the serial one is {m_stage - 1} passes over {x_stage} tokens: from
{min(gap.values()) / ms:.1f} ms per token at the data sheet to {max(gap.values()) / ms:.1f} ms
with a fixed cost per pass. The fixed cost is what matters for a small drafter: it is paid per
pass whatever the bytes, which is why drafting the block in one pass pays most where passes are
dearest.""")

# %% [markdown]
# ### Explorer: the four stages, serial against parallel
#
# The same network drafting one token per pass or all at once. Lengthen the draft and the
# serial bar stretches while the parallel one stays put; lower $\mathbb E[X]$ (how many tokens
# a round emits, capped at $m + 1$) and both per-token latencies rise; give stages 2 and 4 a
# cost to see how much the chapter's "negligible" assumption matters.

# %% tags=["nbval-ignore-output"]
stages_panel = widgets.RoundStagesPanel()
stages_panel.show()

# %%
n = stages_panel.at().numbers
print(f"m = 4, E[X] = 3: serial {n['serial_ms_per_token']:.1f} ms/token, parallel "
      f"{n['parallel_ms_per_token']:.1f} ms/token")

# %% [markdown]
# ## 8.5.4 How long should a draft be?
#
# Going from a draft of $m - 1$ tokens to $m$ adds $\Delta X = \prod_{i \le m} a_i$ expected
# tokens and some time $\Delta T_r$. With the round at $T_r$ and $\mathbb E[X]$ tokens on
# average, the longer draft lowers the latency per token exactly when
#
# $$\frac{T_r + \Delta T_r}{\mathbb E[X] + \Delta X} < \frac{T_r}{\mathbb E[X]} \iff
# \frac{\Delta T_r}{\Delta X} < \frac{T_r}{\mathbb E[X]}:$$
#
# what the extra expected token costs *at the margin* must be below what a token costs *on
# average* now. $\Delta X$ shrinks geometrically while $\Delta T_r$ stays flat (or jumps), so
# sooner or later the test fails. The jumps come from fixed execution shapes: an engine that
# runs drafts or verification in padded groups (8 rows, then 16) pays for a whole new group
# at the first position past a boundary.
#
# Measurements with DFlash at concurrency 1 show the diminishing return (footnote 23): plain
# decode, a 7-token draft (K7) and a 15-token draft (K15). The three times below are medians of
# the **whole** run of a short extraction task (end to end, per request), not per-token or
# per-round times, so they compare the configurations but cannot be divided by a token count.
# In a round that keeps only one draft token, the rest of a long draft is thrown away:

# %%
lat = ch08.DRAFT_LEN_LATENCY_S
print(f"measured end-to-end medians of a short request: plain {lat['plain'] / ms:.1f} ms, "
      f"K7 {lat['K7'] / ms:.1f} ms, K15 {lat['K15'] / ms:.1f} ms (footnote 23)")
print(f"plain -> K7 saves {(lat['plain'] - lat['K7']) / ms:.1f} ms; K7 -> K15 another "
      f"{(lat['K7'] - lat['K15']) / ms:.1f} ms")
for name, m in ch08.DRAFT_LEN_OF.items():
    out, dropped = calc.verification_outcome(m, 1)
    print(f"{name} accepting one draft token: {out} outputs, {dropped} draft tokens discarded")

# %% [markdown] jp-MarkdownHeadingCollapsed=true
# ### Explorer: draft length with a serial drafter (Exercise 8-7's setting)
#
#
#
# <!-- fold: the draft-length explorer with a serial drafter (Exercise 8-7's setting) -->

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
ex87 = grading.params("8-7", 0)
T_v, t_d = ex87["verify_s"] / units.ms, ex87["per_draft_s"] / units.ms
md(rf"""Exercise 8-7 rounds 8.5.3's figures to $T_v = {T_v:g}$ ms and $t_d = {t_d:g}$ ms per
draft token, so a serial draft of length $m$ makes a round of $T_r = {T_v:g} + {t_d:g}\,m$ ms.
The group slider pads the draft positions to whole groups of $m_\text{{grp}}$,
$T_r = {T_v:g} + {t_d:g}\,m_\text{{grp}}\lceil m/m_\text{{grp}} \rceil$ ms.
Work the exercise by hand first, then check your table here and read the marginal test at
each length.""")

# %% tags=["nbval-ignore-output"]
length_panel = widgets.DraftLengthPanel()
length_panel.show()

# %%
n = length_panel.at().numbers
print(f"m = 4, m_grp = 1: E[X] {n['expected_tokens']:.3f}, T_r {n['round_ms']:.1f} ms, "
      f"{n['latency_per_token_ms']:.2f} ms/token")
print(f"going from m = 3 to m = 4: dT_r/dX {n['marginal_ms_per_token']:.1f} ms vs the m = 3 "
      f"average T_r/E[X] {n['current_ms_per_token']:.2f} ms -> helps: {n['extension_helps']}")

# %% [markdown]
# Concurrency changes the picture as well. At batch 1 the verifier's extra rows run on compute
# that would otherwise sit idle; in a full batch, plain decode already spreads each weight read
# over many requests, and the drafter's passes and memory compete with them. The chapter
# leaves this qualitative. The companion puts numbers on both halves below.

# %% [markdown]
# ## Where this model breaks: verification under load
#
# A big batch already uses the compute that batch 1 leaves idle, so past the ridge each
# verified row costs time (the detail's explorer draws both).

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the table below
from companion import tables

u_ctl = {c.name: c for c in widgets.VerificationLoadPanel().controls}
u_rows = []
for u_label, u_b, u_m, u_ctx in (
        (f"b = 1, m = {ch08.TOY_DRAFT_LEN} (8.5)", u_ctl["batch"].default, ch08.TOY_DRAFT_LEN,
         ch08.SHORT_PROMPT_TOKENS),
        (f"b = {u_ctl['batch'].max}, m = {u_ctl['draft_len'].max}, no context",
         u_ctl["batch"].max, u_ctl["draft_len"].max, u_ctl["context_tokens"].min)):
    u_r = calc.verification_under_load(model, card, u_b, u_m, u_ctx)
    u_rows.append((u_label, f"{u_r['plain_s'] / units.ms:.1f} ms",
                   f"{u_r['verify_s'] / units.ms:.1f} ms", f"{u_r['verify_over_plain']:.2f}"))
md(tables.markdown_table(("verification pass", "plain step (roofline)",
                          "verify (roofline)", "verify / plain"), u_rows))

# %% [markdown] jp-MarkdownHeadingCollapsed=true
# #### In detail
#
# The ridge.
#
# <!-- fold: the fuller model, its numbers and where it parts from the chapter's -->

# %% [markdown]
# A verification pass of $b$ requests computes $b\,(m+1)$ rows.
#
# While that pass stays under the card's ridge it is paced by its reads, and the extra rows are free; past the ridge every
# row costs compute time. With the weights alone the ridge is reached at
# $b = I^\star D_w / (2N\,(m+1))$ (`calc.verification_ridge_batch`); each
# request's live KV adds reads as well, which pushes that batch out
# (`calc.verification_under_load`, the roofline's max of the whole pass, attention per row
# counted). The drafter also sits in the memory the KV budget comes from
# (`calc.draft_kv_budget`): 8.6.3 charges its measured peak, weights plus its own KV and
# buffers, inside the 12 GiB, and 8.5.4 asks to leave room for the draft's KV.

# %%
m_draft = 4
ridge_b = calc.verification_ridge_batch(model, card, m_draft)
print(f"m = {m_draft}: weights-only ridge at b = {ridge_b:.1f} requests "
      f"({ridge_b * (m_draft + 1):.0f} rows per pass)")
print(widgets.verification_load_text(model, card, m_draft,
                                    (0, 128, 512, ch08.SHORT_PROMPT_TOKENS), batches=(64, 128)))
draft_kv = {n_tok: calc.draft_kv_budget(ch08.KV_BUDGET_BYTES, ch08.DFLASH_DRAFT_MEMORY_BYTES,
                                        model,
                                        n_tok, ch08.OUTPUT_TOKENS)
            for n_tok in (ch08.SHORT_PROMPT_TOKENS, ch08.LONG_PROMPT_TOKENS)}
for n_tok, r in draft_kv.items():
    print(f"{n_tok:,}-token prompts: {r['requests_before']} requests fit in "
          f"{ch08.KV_BUDGET_BYTES / units.GiB:.0f} GiB, {r['requests_after']} once the "
          f"{ch08.DFLASH_DRAFT_MEMORY_BYTES / units.GiB:.2f} GiB drafter is resident "
          f"(its weights alone are {ch08.DFLASH_DRAFT_WEIGHT_BYTES / units.GiB:.2f} GiB)")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
short = draft_kv[ch08.SHORT_PROMPT_TOKENS]
r_long = calc.verification_under_load(model, card, 128, m_draft, ch08.SHORT_PROMPT_TOKENS)
md(f"""> **Where this model breaks: free verification.** The batch-1 argument holds up to about
> {ridge_b:.0f} requests at a draft of {m_draft} when contexts are short; past that, a pass of
> 128 requests with almost no context costs
> {calc.verification_under_load(model, card, 128, m_draft, 0)['verify_over_plain']:.1f}x a plain
> step. Long contexts hide it: at {ch08.SHORT_PROMPT_TOKENS:,} tokens each request's KV read
> grows as fast as its verification compute, so the pass never turns compute-bound on this card
> ({r_long['verify_over_plain']:.2f}x at 128 requests). Memory is the tighter limit here: the
> drafter's measured footprint (8.6.3) takes {100 * short['draft_share']:.0f}% of the
> {ch08.KV_BUDGET_BYTES / units.GiB:.0f} GiB budget, so {short['requests_before']} short requests
> become {short['requests_after']}, and the budget runs out long before the ridge batch. So
> on this instance speculative decoding is charged in memory first, and only a larger KV
> budget with short contexts would meet the compute wall.""")

# %% [markdown]
# ##### Explorer: verification under load
#
# The dashed line is the chapter's batch-1 reading (a verification pass costs a plain step);
# the solid line is the roofline ratio at the chosen context, the dotted one with no context at
# all, and the cross marks where the weights-only ridge is reached. Push the batch past the
# ridge with a short context and a long draft, then lengthen the context and watch the KV reads
# hide the extra rows again. The readout also gives what speculation still saves per request
# (E[X] over the ratio, the draft's own cost left out) and what the drafter takes from the KV
# pool.

# %% tags=["nbval-ignore-output"]
load_panel = widgets.VerificationLoadPanel()
load_panel.show()

# %%
load_controls = {c.name: c for c in load_panel.controls}
top = dict(batch=load_controls["batch"].max, draft_len=load_controls["draft_len"].max)
load_settings = {"the chapter: b = 1, m = 4, 2,048 tokens": dict(),
                 "b and m at their maxima, no context": dict(top, context_tokens=0),
                 "b at its maximum, m = 4, no context": dict(batch=top["batch"],
                                                             context_tokens=0),
                 "b and m at their maxima, longest context": dict(
                     top, context_tokens=load_controls["context_tokens"].max)}
load_rows = {label: load_panel.at(**kw).numbers for label, kw in load_settings.items()}
print(f"{'setting':44} {'verify / plain':>15} {'E[X]':>6} {'speedup':>8} {'fit in 12 GiB':>14}")
for label, n in load_rows.items():
    print(f"{label:44} {n['verify_over_plain']:>14.2f}x {n['expected_tokens']:>6.2f} "
          f"{n['speedup_under_load']:>7.2f}x {n['requests_fit_with_drafter']:>6} with drafter")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
base, worst, m4, deep = (load_rows[k] for k in load_settings)
md(f"""> **The gap at the explorer's extremes.** At the chapter's setting the two readings agree
> exactly (a ratio of {base['verify_over_plain']:.2f}, so speculation keeps its full
> {base['expected_tokens']:.2f} tokens per pass). At the explorer's corner with no context,
> {top['batch']} requests each verifying {top['draft_len'] + 1} positions, the pass costs
> {worst['verify_over_plain']:.1f}x a plain step, and each request runs at
> {worst['speedup_under_load']:.2f}x the speed of plain decode: speculation now slows it
> down. With the chapter's draft of {ch08.TOY_DRAFT_LEN} the same batch still costs
> {m4['verify_over_plain']:.1f}x ({m4['speedup_under_load']:.2f}x speedup left). With
> {load_controls['context_tokens'].max:,}-token contexts the KV reads hide even the longest draft
> ({deep['verify_over_plain']:.2f}x), but then only {deep['requests_fit_with_drafter']} such
> requests fit the {ch08.KV_BUDGET_BYTES / units.GiB:.0f} GiB pool, so a batch that large cannot
> exist on this instance. The ratio is a roofline at the card's data-sheet peak; kernels that
> reach a fraction of that peak meet the compute wall at smaller batches.""")

# %% [markdown]
# ## Where this model breaks: one acceptance rate for every round
#
# Easy spans of text accept long runs and hard ones short; the run being convex in the
# acceptance, the mix beats one rate at the same mean (the latency explorer's spread slider).

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the table below
e_ctl = {c.name: c for c in latency_panel.controls}
e_rows = []
for e_label, e_kw in (("BBBB (8.5)", dict()),
                      (f"α = 0.5, spread ±{e_ctl['acceptance_spread'].max:g}, "
                       f"m = {e_ctl['draft_len'].max}",
                       dict(acceptance=0.5, acceptance_spread=e_ctl["acceptance_spread"].max,
                            draft_len=e_ctl["draft_len"].max))):
    e_n = latency_panel.at(**e_kw).numbers
    e_rows.append((e_label, f"{e_n['expected_tokens']:.2f}",
                   f"{e_n['spread_expected_tokens']:.2f}",
                   f"{e_n['spread_expected_tokens'] / e_n['expected_tokens']:.2f}"))
md(tables.markdown_table(("tokens per round", "chapter's model",
                          "fuller model (spans)", "fuller / chapter"), e_rows))

# %% [markdown] jp-MarkdownHeadingCollapsed=true
# #### In detail
#
# The mixture.
#
# <!-- fold: the fuller model, its numbers and where it parts from the chapter's -->

# %% [markdown]
# $\mathbb E[X] = 1 + \alpha + \dots + \alpha^m$ gives every position of every round the same
# chance $\alpha$, whatever happened before.
#
# Text is not that uniform. A drafter that copies
# from the context does very well on a repeated name or a pasted code block and badly on a
# fresh sentence; a draft network is surer of some continuations than others. A simple fuller
# model: half the rounds fall in easy spans, accepted with $\alpha + \Delta\alpha$ per position,
# and half in hard ones, with $\alpha - \Delta\alpha$, so the mean acceptance is still
# $\alpha$ (`calc.spread_expected_tokens`). Since $1 + \alpha + \dots + \alpha^m$ is convex in
# $\alpha$, the mixture always emits at least as many tokens per round, and once the first
# position is accepted the next one is more likely to be too: the positions are no longer
# independent. (Drift the other
# way exists as well: a drafter guessing further ahead of the target's last state gets worse
# with each position. 8.5.4's form with a list of $a_i$ covers any such pattern.) The latency
# explorer's spread slider draws the mixture as a dotted curve.

# %%
lat_controls = {c.name: c for c in latency_panel.controls}
a_bbbb = 0.75
spread_settings = {"the chapter: BBBB, no spread": dict(),
                   "BBBB, spread 0.25": dict(acceptance_spread=0.25),
                   "alpha = 0.5, widest spread, longest draft": dict(
                       acceptance=0.5, acceptance_spread=lat_controls["acceptance_spread"].max,
                       draft_len=lat_controls["draft_len"].max)}
spread_rows = {label: latency_panel.at(**kw).numbers for label, kw in spread_settings.items()}
print(f"{'setting':40} {'E[X] chapter':>13} {'E[X] spans':>11} {'ms/token':>9} "
      f"{'with spans':>11} {'draft may cost':>15}")
for label, n in spread_rows.items():
    print(f"{label:40} {n['expected_tokens']:>13.2f} {n['spread_expected_tokens']:>11.2f} "
          f"{n['latency_per_token_ms']:>9.2f} {n['spread_latency_per_token_ms']:>11.2f} "
          f"{n['crossover_ms']:>6.1f} -> {n['spread_crossover_ms']:.1f} ms")
# the same mixture by simulation: rounds of a drafter equal to the target (accepted always)
# pooled with rounds of one proposing the reverse of the target (accepted half the time)
easy = sim.simulate_rounds(ch08.TOY_TARGET_PROBS, ch08.TOY_TARGET_PROBS, ch08.TOY_DRAFT_LEN,
                           20_000, seed=2)
hard = sim.simulate_rounds(ch08.TOY_TARGET_PROBS, tuple(reversed(ch08.TOY_TARGET_PROBS)),
                           ch08.TOY_DRAFT_LEN, 20_000, seed=3)
mixture = calc.spread_expected_tokens(a_bbbb, 0.25, ch08.TOY_DRAFT_LEN)
print(f"simulated, half the rounds each way: {(easy.mean_tokens + hard.mean_tokens) / 2:.3f} "
      f"tokens per round; the formula: {mixture['expected_tokens']:.3f} (the chapter's "
      f"{mixture['chapter_expected_tokens']:.3f}); second position accepted with "
      f"{mixture['second_position_acceptance']:.3f} once the first is")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
flat, mid, wide = (spread_rows[k] for k in spread_settings)
md(f"""> **Where this model breaks: independent acceptance.** At the chapter's setting (BBBB, one
> acceptance for every round) the two models agree: {flat['expected_tokens']:.2f} tokens per
> round either way. Let the same mean acceptance split into spans of
> {a_bbbb + 0.25:g} and {a_bbbb - 0.25:g} and a round yields {mid['spread_expected_tokens']:.2f}
> tokens ({mid['spread_expected_tokens'] / mid['expected_tokens'] - 1:+.0%}), the latency per
> token falls from {mid['latency_per_token_ms']:.2f} to
> {mid['spread_latency_per_token_ms']:.2f} ms, and the draft may cost
> {mid['spread_crossover_ms']:.1f} ms instead of {mid['crossover_ms']:.1f} ms. At the
> explorer's extreme (a mean of 0.5 made of spans accepted always and never, a draft of
> {lat_controls['draft_len'].max}) the chapter's formula gives {wide['expected_tokens']:.2f}
> tokens per round and the spans {wide['spread_expected_tokens']:.2f}, a factor of
> {wide['spread_expected_tokens'] / wide['expected_tokens']:.1f}. It matters for choosing the
> draft length: with uneven text a long draft pays off in the easy spans, which a single
> average acceptance hides, and it is why engines adapt the draft length as they go (8.5.4). A
> measured mean acceptance is therefore a cautious estimate of E[X] when acceptance comes in
> runs, and an optimistic one when it decays along the draft.""")

# %% [markdown]
# ## Chapter says / companion computes
#
# Every number of 8.5, recomputed (`ok` compares at the chapter's printed rounding; `*` marks
# an entry with a note in the [ledger](../ledger.ipynb)).

# %%
ledger.show("8.5")

# %% [markdown]
# ## Try this
#
# 1. **Predict, then move.** In the rejection-sampling explorer, set $q(A) = p_\theta(A)$.
#    Write down the acceptance and $\mathbb E[X]$ at $m = 4$ before you look. Then move only
#    $q(A)$ to 0.5: which of the two panels changes?
#    <!-- states: sampling_panel(q_a=0.25); sampling_panel(q_a=0.5) -->
# 2. For a target with $p_\theta(A) = 0.5$, which drafter $q(A)$ maximises the acceptance,
#    and what does a drafter that always proposes A get? Work it out from
#    $\alpha = \sum_x \min(p_\theta, q)$, then check with the slider.
#    <!-- states: sampling_panel(p_a=0.5, q_a=...); sampling_panel(p_a=0.5, q_a=1.0) -->
# 3. **Predict, then move.** In the latency explorer, set the draft cost to 10 ms. Guess the
#    smallest acceptance that still beats plain decode at $m = 4$, then find it; is the answer
#    at $m = 1$ higher or lower?
#    <!-- states: latency_panel(draft_ms=10.0, acceptance=...); latency_panel(draft_ms=10.0, draft_len=1, acceptance=...) -->
# 4. Raise the one-off preparation to 5 s and shorten the request to 128 tokens. Is the index
#    still worth building for the BBBB drafter?
#    <!-- states: latency_panel(prep_s=5.0, output_tokens=128) -->
# 5. In the draft-length explorer, pad to groups of 4 and compare $m = 4$ with $m = 5$: what
#    are $\Delta T_r$ and $\Delta X$, and does the marginal test pass? Then lower $t_d$ until
#    $m = 8$ becomes the best length.
#    <!-- states: length_panel(group=4, draft_len=5); length_panel(group=4, draft_len=5, per_draft_ms=...) -->
# 6. **Predict, then move.** In the four-stage explorer, which drafter wins at $m = 8$ with
#    $\mathbb E[X] = 3$, and by how much? Then find the $\mathbb E[X]$ at which the parallel
#    drafter with 8 draft tokens is no faster than the serial one at its chapter setting.
#    <!-- states: stages_panel(draft_tokens=8); stages_panel(); stages_panel(draft_tokens=8, tokens_per_round=...) -->

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
p_a = ch08.TOY_TARGET_PROBS[0]
same = sampling_panel.at(q_a=0.25).numbers
assert p_a == 0.25
moved = sampling_panel.at(q_a=0.5).numbers
answer(f"""
With $q = p_\\theta$ every proposal is kept: the acceptance is {same['acceptance']:.2f} and
$\\mathbb E[X] = 1 + 1 + 1 + 1 + 1 =$ {same['expected_tokens']:.0f} tokens per round. At
$q(A) = 0.5$ the acceptance drops to $\\min(0.25, 0.5) + \\min(0.75, 0.5) =$
{moved['acceptance']:.2f} and $\\mathbb E[X]$ to {moved['expected_tokens']:.2f}: only the right
panel changes. The emitted share of A stays at the target's {p_a} (simulated
{moved['simulated_share_A']:.3f}), because rejection sampling corrects whatever the drafter
gets wrong.
""", title="Worked answer 1")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
target = (0.5, 0.5)
by_q = {q_a: calc.speculative_acceptance_rate(target, (q_a, 1 - q_a))
        for q_a in (0.0, 0.25, 0.5, 0.75, 1.0)}
best_q = max(by_q, key=by_q.get)
on_slider = {q / 100: sampling_panel.at(p_a=0.5, q_a=q / 100).numbers["acceptance"]
             for q in range(101)}
always_a = sampling_panel.at(p_a=0.5, q_a=1.0).numbers
assert max(on_slider, key=on_slider.get) == best_q
answer(f"""
$\\alpha = \\min(0.5, q_A) + \\min(0.5, 1 - q_A)$ is largest when both minima are the full
0.5, which happens only at $q(A) =$ {best_q}: acceptance {by_q[best_q]:.2f}. Away from it the
acceptance falls linearly: {', '.join(f'q(A) = {q:g}: {a:.2f}' for q, a in by_q.items())}. An
always-A drafter keeps half its tokens, so at $m = 4$ it still emits
{always_a['expected_tokens']:.2f} tokens per round (the explorer: acceptance
{always_a['acceptance']:.2f}). A drafter pays off by matching the target's distribution, not
by being confident: acceptance counts only the probability the two share.
""", title="Worked answer 2")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
def least_paying_acceptance(draft_s, m, verify_s=plain_round_s):
    """The smallest acceptance (to 0.001) at which the round beats plain decode."""
    for a in np.linspace(0, 1, 1001):
        if calc.draft_cost_crossover(verify_s, calc.speculative_expected_tokens(a, m)) > draft_s:
            return float(a)
    return None


draft_10 = 10 * ms
a_m4, a_m1 = least_paying_acceptance(draft_10, 4), least_paying_acceptance(draft_10, 1)
needed = (plain_round_s + draft_10) / plain_round_s
# the explorer's acceptance slider moves in steps of 0.01: the first stop that beats plain decode
grid = [a / 100 for a in range(101)]
slider_m4 = next(a for a in grid
                 if latency_panel.at(draft_ms=10.0, acceptance=a).numbers["speedup_vs_plain"] > 1)
slider_m1 = next(a for a in grid if latency_panel.at(draft_ms=10.0, draft_len=1, acceptance=a)
                 .numbers["speedup_vs_plain"] > 1)
answer(f"""
A round now costs {(plain_round_s + draft_10) / ms:.2f} ms, so it must emit more than
{needed:.3f} tokens on average to beat plain decode. At $m = 4$ that takes an acceptance of
about {a_m4:.3f} (the curve $1 + \\alpha + \\dots + \\alpha^4$ crosses {needed:.3f} there); at
$m = 1$ only $1 + \\alpha$ is available, so it needs about {a_m1:.3f}: a *higher* acceptance,
because a one-token draft cannot make up for a poor rate with extra positions. (On the
slider, the first stops that win are {slider_m4:.2f} and {slider_m1:.2f}.) A costly drafter
needs either good guesses or enough positions to spread its cost over.
""", title="Worked answer 3")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
short = latency_panel.at(prep_s=5.0, output_tokens=128).numbers
answer(f"""
With 5 s of preparation the index pays for itself only after
{short['break_even_tokens']:.0f} output tokens, {'more' if short['break_even_tokens'] > 128 else 'fewer'} than the 128 the request writes. The
request takes {short['request_s']:.2f} s with speculation against
{short['plain_request_s']:.2f} s plain: {'still worth it' if short['request_s'] < short['plain_request_s'] else 'not worth building for one request'}.
An index reused across many requests (a shared document, a long conversation) spreads the
5 s over all of them, which changes the verdict.
""", title="Worked answer 4")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
g4 = length_panel.at(group=4, draft_len=5).numbers
t_d = None
for step in np.arange(3.6, -0.01, -0.1):
    if length_panel.at(group=4, draft_len=5, per_draft_ms=float(step)).numbers[
            "best_draft_len"] == 8:
        t_d = float(step)
        break
answer(f"""
With groups of 4, $m = 5$ opens a second group: $\\Delta T_r =$ {g4['added_ms']:.1f} ms buys
$\\Delta X =$ {g4['added_tokens']:.3f} tokens, a marginal {g4['marginal_ms_per_token']:.1f} ms
per token against the $m = 4$ average of {g4['current_ms_per_token']:.2f} ms, so the test
{'passes' if g4['extension_helps'] else 'fails'}. Still padding to groups of 4, $m = 8$
becomes the best length once $t_d$ drops to about {t_d:.1f} ms per draft token (scanning down
from 3.6 ms in steps of 0.1 ms). Padding makes a draft grow a whole group at a time, so the
next group must be cheap enough to pay for all its positions at once.
""", title="Worked answer 5")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
at8 = stages_panel.at(draft_tokens=8).numbers
chapter = stages_panel.at().numbers
even = None
for x in np.arange(3.0, 1.0 - 1e-9, -0.05):
    if stages_panel.at(draft_tokens=8, tokens_per_round=float(x)).numbers[
            "parallel_ms_per_token"] >= chapter["serial_ms_per_token"]:
        even = float(x)
        break
answer(f"""
At $m = 8$ the serial drafter spends {8 * at8['draft_pass_ms']:.1f} ms drafting, so its round
is {at8['serial_round_ms']:.1f} ms against the parallel {at8['parallel_round_ms']:.1f} ms: over
3 tokens that is {at8['serial_ms_per_token']:.1f} against {at8['parallel_ms_per_token']:.1f} ms
per token, the parallel drafter ahead by
{at8['serial_ms_per_token'] - at8['parallel_ms_per_token']:.1f} ms. The serial drafter at the
chapter's setting ($m = 4$, 3 tokens) runs at {chapter['serial_ms_per_token']:.1f} ms per
token; the parallel one with 8 draft tokens falls to that speed once its rounds emit about
{even:.2f} tokens (scanning down in steps of 0.05). A parallel drafter wins by keeping its
drafting time flat as $m$ grows, which pays only while the longer draft is accepted.
""", title="Worked answer 6")

# %% [markdown]
# > **What you can now compute**
# >
# > - The expected tokens per round $\mathbb E[X]$ from per-position acceptances, and the latency per token it buys ([Exercise 8-7](../../exercises/ex8_7.ipynb)).
# > - The largest draft cost per round that still beats plain decode, and the output length after which a one-off preparation pays back ([Exercise 8-8](../../exercises/ex8_8.ipynb)).
# > - A round's four stages for a serial and a parallel drafter, from the draft network's bytes and the batch-1 read rate ([Exercise 8-7](../../exercises/ex8_7.ipynb)).
# > - Whether one more draft position helps, from the marginal test $\Delta T_r / \Delta X < T_r / \mathbb E[X]$, with and without padded groups ([Exercise 8-7](../../exercises/ex8_7.ipynb)).
# >
# > <details><summary>Assumptions this notebook made</summary>
# >
# > Acceptance is a fixed probability per position
# > (independent of the text and of the position, except where a list of acceptances is given
# > or the spread splits rounds into easy and hard spans of the same mean);
# > rounds are timed at batch 1 on a 2,048-token context and priced at the measured batch-1
# > rate (mostly launch overhead, not reading); the draft network runs at the rate the target
# > reaches, and stages 2 and 4 of a round cost
# > nothing unless a slider says so; the under-load numbers are roofline bounds at the card's
# > data-sheet peak and bandwidth, with every request at the same context and the draft's own
# > passes left out of the per-request speedup; the drafter's whole measured footprint
# > (weights, its KV and buffers, 8.6.3) comes out of the 12 GiB KV budget, as 8.6.3 counts it.
# >
# > </details>
#
# Next: [8.6 Load and configuration](08_6_load_and_configuration.ipynb).
