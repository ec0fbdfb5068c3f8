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
# # 17.3 Prefill and decode: two machines on one GPU
#
# **The question.** Every request has two parts: the model first digests the whole prompt
# (prefill), then writes the answer one token after another (decode). 17.2 placed the two on
# opposite sides of the ridge. What does that split mean for the latencies a user feels, where
# does the time of one request go, what goes wrong when both phases share a GPU, and how do
# we check a latency target once many requests compete?
#
# previous: [17.2 Roofline](17_02_roofline.ipynb) | [overview](17_00_overview.ipynb) |
# next: [17.4 KV sizing](17_04_kv_sizing.ipynb)

# %%
from companion import calc, ledger, plots, sim, specs, units, widgets
from companion.chapters import ch17
from companion.display import answer, md
from companion.sim.scenarios import hol_scenario

hw, m8, m70 = specs.H100_SXM, specs.LLAMA_8B, specs.LLAMA_70B

# %% [markdown]
# ## Three ways to time a stream
#
# - **TTFT** (time to first token) runs from the moment a request arrives until its first
#   output token appears: time spent queued plus the full prefill. Until then the user sees
#   a blank screen.
# - **ITL** (inter-token latency) is the gap between two consecutive output tokens, one value
#   per gap. A long gap is felt as the text freezing mid-sentence.
# - **TPOT** (time per output token) averages the gaps of one response into a single number.
#   An average hides the rare long gap, which is why problems are diagnosed from the
#   distribution of ITL, and its high percentiles in particular (17 §3).
#
# ## Where one request's time goes
#
# Take the 8B on the H100 with a 2,048-token prompt and 250 output tokens. Prefill is the
# compute-bound pass of 17.2, run at the chapter's assumed 50% of peak; decode runs at a
# healthy batch, whose step the chapter rounds to 6 ms (17.5 derives it). The request's wall
# clock is
#
# $$ T = \text{TTFT} + G \cdot \text{ITL}, \qquad
#    \text{decode share} = \frac{G \cdot \text{ITL}}{T}. $$

# %%
G = ch17.OUTPUT_TOKENS
ttft_s = calc.prefill_compute_s(m8, hw, ch17.PROMPT_TOKENS)
step_17_5 = calc.paged_batch_gain(m8, hw)["naive"]["step_s"]
itl_s = ch17.SMOOTH_ITL_S
print(f"TTFT (prefill of {ch17.PROMPT_TOKENS:,} tokens at 50% of peak): "
      f"{ttft_s / units.ms:.0f} ms")
print(f"decode step at a healthy batch (17.5's naive batch at 600 live tokens): "
      f"{step_17_5 / units.ms:.1f} ms; the chapter rounds it to {itl_s / units.ms:g} ms")
budget = calc.request_budget(ttft_s, G, itl_s)
print(f"decode, {G} tokens: {budget['decode_s'] / units.ms:,.0f} ms; total {budget['total_s']:.2f} s; "
      f"decode share {100 * budget['decode_share']:.0f}%, prefill share "
      f"{100 * budget['prefill_share']:.0f}%")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
itl_batch = calc.paged_batch_gain(m8, hw)["naive"]["batch"]
itl_mfu = calc.decode_utilization(m8, hw, itl_batch / step_17_5, batch=itl_batch,
                                  context_tokens=ch17.CHAT_LIVE_TOKENS)["mfu"]
md(f"""
Almost all of the wall clock ({100 * budget['decode_share']:.0f}%) belongs to the phase that,
at batch 1, uses well under one percent of the card's arithmetic (17.2). The
{itl_s / units.ms:g} ms step assumed here is not batch 1: it is 17.5's batch of {itl_batch}
sequences of {ch17.CHAT_LIVE_TOKENS} live tokens, and even that batch uses only about
{100 * itl_mfu:.0f}% of the peak. A shorter prompt can
only win back the remaining {100 * budget['prefill_share']:.0f}%; the latency levers that count
(17.10) act on decode.
""")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
exact = calc.request_budget(ttft_s, G - 1, itl_s)
md(f"""
> **Approximation: G or G - 1 intervals?** The budget above multiplies the step by all $G$
> output tokens. But the first token arrives at the end of the prefill, so it is already inside
> TTFT; after it come only $G - 1$ intervals, which is how 8.1.3 counts
> ($T = \\text{{TTFT}} + \\sum_{{j=1}}^{{G-1}} \\text{{ITL}}_j$). The two readings:
>
> | reading | sum | total |
> |---|---|---|
> | 17 §3: $\\text{{TTFT}} + G \\cdot \\text{{ITL}}$ | {ttft_s / units.ms:.0f} + {G} × {itl_s / units.ms:g} ms | **{budget['total_s']:.3f} s** |
> | 8.1.3: $\\text{{TTFT}} + (G-1) \\cdot \\text{{ITL}}$ | {ttft_s / units.ms:.0f} + {G - 1} × {itl_s / units.ms:g} ms | {exact['total_s']:.3f} s |
>
> The chapter's printed total (rounded to {budget['total_s']:.2f} s) comes from the first
> reading; the exact count is one step ({itl_s / units.ms:g} ms) shorter and rounds to
> {exact['total_s']:.2f} s. For long answers the difference is negligible, and the decode
> share barely moves ({100 * budget['decode_share']:.1f}% against
> {100 * exact['decode_share']:.1f}%); the ledger keeps the chapter's reading. The simulated
> service further down confirms the exact count: its arrival-to-last-token time equals TTFT plus
> $G - 1$ intervals.
""")

# %% [markdown]
# ## The two phases side by side
#
# The chapter's comparison table is not reproduced here; we rebuild its rows from the
# formulas of 17.2 for the 8B on the H100.

# %% tags=["wide-output"]
i_prefill = calc.prefill_intensity(m8, ch17.PROMPT_TOKENS)
i_decode = calc.decode_intensity(m8, 1)
rows = [
    ("arithmetic intensity (FLOP/byte)", f"{i_prefill:,.0f} (= prompt length)",
     f"{i_decode:g} at batch 1 (~ batch size)"),
    ("bound by", calc.roofline_point(i_prefill, hw)["bound"],
     calc.roofline_point(i_decode, hw)["bound"]),
    ("share of peak FLOP/s",
     f"{100 * calc.roofline_point(i_prefill, hw)['fraction_of_peak']:.0f}% (roof; ~50% real)",
     f"{100 * calc.roofline_point(i_decode, hw)['fraction_of_peak']:.2f}%"),
    ("shape of the work", "one large block of compute", "a small, regular step per token"),
    ("metric it sets", "TTFT", "ITL / TPOT"),
    ("demand grows with", "prompt tokens per second", "concurrent streams"),
]
print(f"{'':34} {'prefill':34} {'decode':30}")
for name, a, b in rows:
    print(f"{name:34} {a:34} {b:30}")

# %% [markdown]
# The last row matters for capacity planning. A product change that brings longer documents
# loads prefill; one that makes sessions chattier loads decode. Either can happen alone, so
# one scaling signal cannot serve both phases.
#
# ## Head-of-line blocking
#
# Picture a single checkout lane where most customers buy one item but now and then someone
# arrives with a full trolley. On a serving GPU the one-item customers are the running
# decodes, each needing a short step every few milliseconds; the trolley is a new request's
# prefill, one long block of compute. If the scheduler lets a whole prefill through at once,
# every decode behind it waits. The chapter's case: an 8,000-token prompt arrives while the
# decode step is about 6 ms.
#
# $$ t_{\text{stall}} = \frac{2N \cdot n}{0.5\,\pi}, \qquad
#    \frac{\text{worst ITL}}{\text{step}} \approx \frac{t_{\text{stall}}}{\text{step}}. $$
#
# Here $N$ is the parameter count (17 §2 writes $P$), $n$ the prompt's tokens and $\pi$ the
# card's peak FLOP/s (the chapter's "peak compute").

# %%
hol = calc.head_of_line_stall(m8, hw, ch17.LONG_CONTEXT_TOKENS, ch17.SMOOTH_ITL_S)
print(f"prefill FLOPs: {hol['prefill_flops'] / 1e12:.0f}e12; at 50% of peak: {hol['stall_s'] / units.ms:.0f} ms; "
      f"worst ITL ~ {hol['worst_itl_over_step']:.0f}x the {ch17.SMOOTH_ITL_S / units.ms:g} ms step")

# %% [markdown]
# ### The stall on a simulated timeline
#
# The chapter gives the stall as arithmetic only. The timeline below is **generated by the
# companion's scheduler simulator** (`companion.sim.scheduler`, continuous batching): four
# requests decode with a 6 ms step, and the 8,000-token prompt arrives on a step boundary
# and is admitted whole, into the same round as their next decode step. That round takes the
# step *plus* the prefill, so the worst gap a running request sees is one step longer than
# the closed-form stall (and its ratio to the step one higher); the chapter counts the
# prefill alone.

# %%
scenario = hol_scenario(m8, hw, ch17.LONG_CONTEXT_TOKENS, ch17.SMOOTH_ITL_S,
                        ch17.PREFILL_EFFICIENCY, decode_batch=4)
hol_sim = scenario["simulated"]
print(f"simulated smooth ITL: {hol_sim['baseline_itl_s'] / units.ms:.1f} ms; worst ITL: "
      f"{hol_sim['worst_decode_itl_s'] / units.ms:.1f} ms "
      f"({hol_sim['worst_decode_itl_s'] / hol_sim['baseline_itl_s']:.0f}x); "
      f"the long prompt's TTFT: {hol_sim['long_ttft_s'] / units.ms:.0f} ms")
print(hol_sim["result"].summary())
plots.hol_timeline_figure(hol_sim["result"]).show()

# %% [markdown]
# A single long prompt makes every other stream stop for about a quarter of a second. In the
# statistics this has a recognisable fingerprint: the average ITL hardly changes, while the
# 99th percentile jumps exactly when long prompts come in (17.9 shows how to see it in a
# profile).
#
# Reordering priorities does not cure it. Always running decode first can leave a new request
# waiting indefinitely for its first token; always running prefill first is the freeze above,
# made into a rule. The chapter's two remedies come later: cut the prompt into chunks that ride
# along with the decode steps (chunked prefill, 17.6), or give prefill and decode separate GPUs
# (disaggregation, 17.8).
#
# ## Latency targets under load: percentiles against an SLO
#
# A service-level objective (SLO) names a percentile and a bound. For a chat service, 17 §3
# gives representative targets: nine requests in ten see their first token within about half
# a second, and all but one in a hundred of the gaps between tokens stay within a few tens of
# milliseconds; it checks both for one request on an idle card. Percentiles here are by nearest rank: sort the values, and p90 is
# the one 90% of the way up the list. Note what each target counts: TTFT has one value per
# *request*, ITL one per *interval*, so a request of $G$ tokens contributes $G - 1$ ITL values
# and a p99 of ITL can be set by one stall that hits every running stream at once.
#
# To see the targets under contention, the companion runs a **simulated** service (its own
# model, not a chapter result): 200 requests of the chapter's shape (2,048 prompt tokens, 250
# output tokens) arrive as a Poisson stream at rate $\lambda$ on the 8B and the H100, with
# prefill at 50% of peak and the KV pool of 17.4. The ITL target is read as 20 ms, the
# strictest reading of "a few tens of ms" (shared with Exercise 17-10).

# %% tags=["wide-output"]
for rate in (1.0, 4.0, 8.0):
    run = sim.slo_run(rate)
    print(f"λ = {rate:>4} req/s: TTFT p50/p90/p99 = "
          + " / ".join(f"{run['ttft_pct'][p] / units.ms:5.0f}" for p in ("p50", "p90", "p99"))
          + " ms; ITL p50/p90/p99 = "
          + " / ".join(f"{run['itl_pct'][p] / units.ms:5.1f}" for p in ("p50", "p90", "p99"))
          + f" ms; SLO {'met' if run['slo_met'] else 'missed'}")

# %% [markdown]
# ## Where this model breaks: how a prefill is priced
#
# A pass never beats one read of the weights, and attention's work grows with the square of
# the prompt, so pricing by the matrices' compute runs low at both ends of the prompt range
# (explorer 1's "prefill priced by" toggle draws the roofline's TTFT; explorer 2's readout
# adds the fused pass).

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the table below
from companion import tables

t_shortest = next(c.min for c in widgets.RequestBudgetPanel.controls if c.name == "prompt_tokens")
t_rows = []
for t_n, t_what in ((ch17.PROMPT_TOKENS, "17 §3"), (t_shortest, "explorer 1's shortest")):
    t_r = calc.prefill_readings(m8, hw, t_n)
    t_rows.append((f"TTFT's prefill, {t_n:,}-token prompt ({t_what})",
                   f"{t_r['chapter_s'] / units.ms:,.2f} ms", f"{t_r['roofline_s'] / units.ms:,.2f} ms",
                   f"{t_r['roofline_over_chapter']:.2f}"))
t_stall = calc.head_of_line_readings(m8, hw, ch17.LONG_CONTEXT_TOKENS, ch17.SMOOTH_ITL_S)
t_rows.append((f"stalled round, {ch17.LONG_CONTEXT_TOKENS:,}-token prompt (17 §3)",
               f"{t_stall['chapter_s'] / units.ms:,.0f} ms", f"{t_stall['fused_s'] / units.ms:,.0f} ms",
               f"{t_stall['fused_s'] / t_stall['chapter_s']:.2f}"))
md(tables.markdown_table(("setting", "chapter's model (compute at 50%)",
                          "fuller model (TTFT: roofline; stall: one fused pass)", "fuller / chapter"), t_rows))

# %% [markdown] jp-MarkdownHeadingCollapsed=true
# #### In detail
#
# Three prices of a prefill, side by side.
#
# <!-- fold: the fuller model, its numbers and where it parts from the chapter's -->

# %% [markdown]
# Everything above prices a prefill one way: the matrices' FLOPs, $2Nn$, at 50% of peak. Two
# things that way leaves out (17.2 showed both on the roofline) and one that the stall adds:
#
# - **Short prompts** cannot finish faster than one read of the weights; the time is the
#   roofline's max of that read and the compute, not the compute alone.
# - **Long prompts** carry attention's $a\,n(n+1)/2$ FLOPs, which grow with the square of the
#   prompt.
# - **The stalled round** is neither the prefill alone (the closed form) nor the decode step
#   plus the prefill (the simulator above, which runs two passes back to back). An engine runs
#   the prompt and the batch's decode tokens as one forward pass: the weights are read once,
#   and the pass costs the roofline's max of its reads and of all its FLOPs, attention included:
#
# $$ T_\text{pass} = \max\left(\frac{D_w + b\,L\,k + n\,k}{\beta},\;
#    \frac{2N\,(n + b) + a\,\big(n(n+1)/2 + b\,(L+1)\big)}{0.5\,\pi}\right). $$
#
# Here $n$ is the prompt's length, $b$ the decode batch and $L$ the live tokens each of its
# sequences holds, $k$ the KV bytes per token, $\beta$ the HBM bandwidth and $\pi$ the dense
# peak (FLOP/s); $a = 4\,d_\text{head}\,n_q\,n_\text{layers}$ is attention's FLOPs
# per query-key pair (a score and a weighted value, per query head and layer).
#
# The batch $b$ is the one whose step is the chapter's 6 ms with 600 live tokens each
# (`calc.decode_batch_for_step`). `calc.prefill_readings` and `calc.head_of_line_readings`
# compute the readings side by side.

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
budget_controls = {c.name: c for c in widgets.RequestBudgetPanel.controls}
hol_controls = {c.name: c for c in widgets.HeadOfLinePanel.controls}
b_lo, b_hi = budget_controls["prompt_tokens"].min, budget_controls["prompt_tokens"].max
h_lo, h_hi = hol_controls["prompt_tokens"].min, hol_controls["prompt_tokens"].max
ttft_rows = []
for length, what in ((b_lo, "explorer 1's shortest"), (128, "a short classification prompt"),
                     (ch17.PROMPT_TOKENS, "the chapter's prompt"), (b_hi, "explorer 1's longest")):
    r = calc.prefill_readings(m8, hw, length)
    chapter_req = calc.request_budget(r["chapter_s"], G, itl_s)
    full_req = calc.request_budget(r["roofline_s"], G, itl_s)
    ttft_rows.append(
        f"| {length:,} ({what}) | {r['chapter_s'] / units.ms:,.2f} ms | "
        f"{r['roofline_s'] / units.ms:,.2f} ms ({r['bound']}) | {r['roofline_over_chapter']:.2f}x | "
        f"{100 * chapter_req['decode_share']:.1f}% -> {100 * full_req['decode_share']:.1f}% |")
md(f"""
**TTFT**, the prefill priced by the chapter and by the roofline (with {G} output tokens at
{itl_s / units.ms:g} ms for the decode share):

| prompt (tokens) | the chapter: compute at 50% | roofline: max(weight read, compute + attention) | ratio | decode share of the request |
|---|---|---|---|---|
""" + "\n".join(ttft_rows))

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
stall = {length: calc.head_of_line_readings(m8, hw, length, ch17.SMOOTH_ITL_S)
         for length in (h_lo, ch17.LONG_CONTEXT_TOKENS, h_hi)}
labels = {h_lo: "explorer 2's shortest", ch17.LONG_CONTEXT_TOKENS: "the chapter's long prompt",
          h_hi: "explorer 2's longest"}
fused_batch = stall[ch17.LONG_CONTEXT_TOKENS]["decode_batch"]
md(f"""
**The stalled round** with the chapter's {ch17.SMOOTH_ITL_S / units.ms:g} ms decode step
({fused_batch} sequences of {ch17.CHAT_LIVE_TOKENS} live tokens in the fused pass), and the worst
ITL in steps:

| long prompt (tokens) | the chapter: prefill alone | simulator: step + prefill | one fused pass, attention counted | fused / chapter |
|---|---|---|---|---|
""" + "\n".join(
    f"| {length:,} ({labels[length]}) | {r['chapter_s'] / units.ms:,.0f} ms "
    f"({r['chapter_over_step']:.1f}x) | {r['additive_s'] / units.ms:,.0f} ms "
    f"({r['additive_over_step']:.1f}x) | {r['fused_s'] / units.ms:,.0f} ms "
    f"({r['fused_over_step']:.1f}x, {r['fused_bound']}) | "
    f"{r['fused_s'] / r['chapter_s']:.2f}x |" for length, r in stall.items()))

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the numbers in the text below
tiny_prompt = calc.prefill_readings(m8, hw, b_lo)
at_ch = calc.prefill_readings(m8, hw, ch17.PROMPT_TOKENS)
s8k, s_max = stall[ch17.LONG_CONTEXT_TOKENS], stall[h_hi]
md(f"""
> **When the price matters.** At the chapter's {ch17.PROMPT_TOKENS:,}-token prompt the readings
> agree within {100 * (at_ch['roofline_over_chapter'] - 1):.0f}%, and the request's decode share
> hardly moves: the chapter's budget stands. The two ends of the prompt slider do not. A
> {b_lo}-token prompt costs a weight read, {tiny_prompt['roofline_s'] / units.ms:.1f} ms, which is
> {tiny_prompt['roofline_over_chapter']:.0f} times the chapter's price: for short prompts the TTFT
> is set by memory, and more compute does not shorten it. For the stall, the one-pass model
> lands **{100 * (s8k['fused_s'] / s8k['chapter_s'] - 1):.0f}% above** the chapter's
> {s8k['chapter_s'] / units.ms:.0f} ms at {ch17.LONG_CONTEXT_TOKENS:,} tokens: reading the
> weights once takes back the extra decode step the simulator adds, but attention's FLOPs
> ({100 * s8k['attention_share']:.0f}% of the pass) more than repay it. At the explorer's
> {h_hi:,} tokens attention is {100 * s_max['attention_share']:.0f}% of the pass and the freeze
> is {s_max['fused_s'] / units.ms:,.0f} ms instead of {s_max['chapter_s'] / units.ms:,.0f} ms.
> The head-of-line conclusion only gets stronger. The ledger keeps the chapter's figures;
> explorer 1's "prefill priced by" toggle draws the roofline's TTFT, and explorer 2's readout
> adds the fused pass.
""")

# %% [markdown]
# ## Chapter says / companion computes

# %%
ledger.show("17.3")

# %% [markdown]
# ## Explorer 1: a request's budget
#
# Change the prompt, the output length, the decode step and the prefill efficiency (or the
# card and the model). The bar splits one request into TTFT and decode; the curve below shows
# the decode share climbing as the output grows. The "prefill priced by" toggle switches the
# TTFT from the chapter's compute-only price to the roofline's (the part above).

# %% tags=["nbval-ignore-output"]
budget_panel = widgets.RequestBudgetPanel()
budget_panel.show()

# %%
print({k: round(v, 3) for k, v in budget_panel.at().numbers.items()})

# %% [markdown]
# ## Explorer 2: head-of-line blocking, simulated
#
# Change the long prompt, the step of the running batch, the prefill efficiency and the
# number of running decodes. Every change re-runs the scheduler simulator on this small
# scenario, and the readout sets the closed form and the one fused pass beside it.

# %% tags=["nbval-ignore-output"]
hol_panel = widgets.HeadOfLinePanel()
hol_panel.show()

# %%
print({k: round(v, 2) for k, v in hol_panel.at().numbers.items()})

# %% [markdown]
# ## Explorer 3: TTFT and ITL percentiles against the targets
#
# Move the arrival rate and the two targets, and switch between continuous batching (each
# prompt prefilled whole, in one round) and chunked prefill (512-token pieces). Left: the
# distribution of TTFT over the requests; right: the distribution of every output interval
# (log axis). Dots mark p50, p90 and p99, dashed lines the targets; the readout says whether
# each target holds and adds up the mean request both ways (with $G$ and with $G - 1$
# intervals).

# %% tags=["nbval-ignore-output"]
slo_panel = widgets.SLOPanel()
slo_panel.show()

# %%
slo_numbers = slo_panel.at().numbers
print({k: (v if isinstance(v, (bool, int)) else round(v, 2)) for k, v in slo_numbers.items()
       if not k.endswith("_mean_s")})
print("mean request: simulated {:.1f} ms = TTFT + (G - 1) ITL {:.1f} ms; TTFT + G ITL {:.1f} ms"
      .format(*(slo_numbers[k] / units.ms for k in ("measured_mean_s", "intervals_mean_s",
                                                    "chapter_mean_s"))))

# %% [markdown]
# ## Try this
#
# 1. In explorer 1, shorten the output to 20 tokens (a classification-style reply). What share
#    of the request is prefill now, and which lever would you reach for first?
#    <!-- states: budget_panel(output_tokens=20) -->
# 2. **Predict, then move.** In explorer 2, guess the prompt length at which the stall lasts
#    ten decode steps. Then move the prompt slider until the closed-form ratio reads 10.
#    <!-- states: hol_panel(prompt_tokens=...) -->
# 3. Raise the prefill efficiency to 100%. How much of the stall disappears, and does that
#    meet an ITL target of 20 ms?
#    <!-- states: hol_panel(efficiency_pct=100.0) -->
# 4. **Predict, then move.** In explorer 3, raise the arrival rate step by step. Which target
#    fails first, TTFT p90 or ITL p99, and at what rate? Write down your guess before moving.
#    <!-- states: slo_panel(rate_per_s=...) -->
# 5. At the rate where ITL p99 fails, switch to chunked prefill. Which percentile improves,
#    which one gets worse, and why?
#    <!-- states: slo_panel(rate_per_s=..., policy="chunked") -->

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
n_out = 20
short = budget_panel.at(output_tokens=20).numbers
even = short['ttft_ms'] / (itl_s / units.ms)     # outputs at which decode time equals TTFT
answer(f"""
With {n_out} output tokens the decode part is {n_out} × {itl_s / units.ms:g} ms =
{short['decode_ms']:.0f} ms against a TTFT of {short['ttft_ms']:.0f} ms, so prefill is
**{short['prefill_share_pct']:.0f}%** of the request (it was
{100 * budget['prefill_share']:.0f}% with {G} tokens). Decode still takes the larger part,
{100 - short['prefill_share_pct']:.0f}%, so a faster decode step remains the bigger lever. But
the prompt is no longer negligible: a shorter prompt, a cached shared prefix (8.3) or faster
prefill (a higher MFU, or more GPUs on it) can now win back up to
{short['prefill_share_pct']:.0f}% of the wait, against
{100 * budget['prefill_share']:.0f}% with {G} tokens. The two phases weigh the same at about
{even:.0f} output tokens (TTFT over the step); only replies shorter than that make the prompt
the first lever. Which phase to optimise depends on the request's shape: the shorter the
reply, the larger the prompt's share of the wait.
""", title="Worked answer 1")
# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
step = ch17.SMOOTH_ITL_S
# the stall is linear in n: 10 steps of compute at 50% of peak
n10 = 10 * step * ch17.PREFILL_EFFICIENCY * hw.peak_flops_per_s / (2 * m8.n_params)
near = hol_panel.at(prompt_tokens=int(round(n10 / 256)) * 256).numbers
answer(f"""
The stall is linear in the prompt: $t_\\text{{stall}} = 2Nn/(0.5\\pi)$, so ten
{step / units.ms:g} ms steps need $n = 10 \\times {step / units.ms:g}\\,\\text{{ms}} \\times
0.5\\pi / 2N$ = **{n10:,.0f} tokens**. On the slider (steps of 256) the nearest setting,
{int(round(n10 / 256)) * 256:,} tokens, reads a stall of {near['stall_ms']:.0f} ms =
{near['worst_itl_over_step']:.1f} steps. So a prompt no longer than the chapter's
{ch17.PROMPT_TOKENS:,}-token one already freezes every running stream for about ten steps:
an unchunked prefill is a stall for everyone else, and an ordinary prompt is long enough
to cause it.
""", title="Worked answer 2")
# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
half = hol_panel.at().numbers
full = hol_panel.at(efficiency_pct=100.0).numbers
answer(f"""
The stall halves, from {half['stall_ms']:.0f} ms to {full['stall_ms']:.0f} ms
({full['worst_itl_over_step']:.0f} steps instead of {half['worst_itl_over_step']:.0f}): the
FLOPs are the same and now run at the full roof. That is still
{full['stall_ms'] / (ch17.ITL_TARGET_S / units.ms):.0f} times a
{ch17.ITL_TARGET_S / units.ms:g} ms ITL target,
and no real kernel reaches 100% of peak. Efficiency cannot fix head-of-line blocking; only
splitting the prefill (17.6) or moving it elsewhere (17.8) can.
""", title="Worked answer 3")
# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
rates = [float(r) for r in range(1, 13)]
runs = {r: slo_panel.at(rate_per_s=r).numbers for r in rates}
first_itl = next((r for r in rates if not runs[r]["itl_ok"]), None)
first_ttft = next((r for r in rates if not runs[r]["ttft_ok"]), None)
ttft_note = (f"TTFT p90 only crosses 500 ms at {first_ttft:g} req/s" if first_ttft else
             f"TTFT p90 stays under 500 ms all the way to {rates[-1]:g} req/s "
             f"({runs[rates[-1]]['ttft_p90_ms']:.0f} ms there)")
answer(f"""
**ITL p99 fails first**, at {first_itl:g} req/s (p99 {runs[first_itl]['itl_p99_ms']:.0f} ms
against the 20 ms target), while TTFT p90 is still {runs[first_itl]['ttft_p90_ms']:.0f} ms;
{ttft_note}. Why ITL goes first: every whole prefill stalls *all* running streams for about
{ttft_s / units.ms:.0f} ms, and once prefills arrive often enough that more than 1% of all
intervals contain one, the p99 *is* a stall. TTFT degrades more gently, through queueing, until
the card nears its prefill capacity.
""", title="Worked answer 4")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the worked answer below (unfold it there)
whole = slo_panel.at(rate_per_s=first_itl, policy="continuous").numbers
chunked = slo_panel.at(rate_per_s=first_itl, policy="chunked").numbers
busy_whole = slo_panel.at(rate_per_s=8.0, policy="continuous").numbers
busy_chunked = slo_panel.at(rate_per_s=8.0, policy="chunked").numbers
answer(f"""
At {first_itl:g} req/s, cutting each prefill into 512-token pieces takes ITL p99 from
{whole['itl_p99_ms']:.1f} ms to **{chunked['itl_p99_ms']:.1f} ms**
({'now within' if chunked['itl_ok'] else 'still above'} the 20 ms target): a stalled interval now
holds one chunk, not a whole prompt. At this light load the price hardly shows (ITL p90
{whole['itl_p90_ms']:.1f} -> {chunked['itl_p90_ms']:.1f} ms, TTFT p90
{whole['ttft_p90_ms']:.0f} -> {chunked['ttft_p90_ms']:.0f} ms). At 8 req/s it does: ITL p90
{busy_whole['itl_p90_ms']:.1f} -> {busy_chunked['itl_p90_ms']:.1f} ms, because many more
intervals now carry a piece of someone's prefill, while p99 falls from
{busy_whole['itl_p99_ms']:.0f} to {busy_chunked['itl_p99_ms']:.0f} ms,
{'now within' if busy_chunked['itl_ok'] else 'still above'} the 20 ms target. Chunking moves the pain
from the tail into the middle of the distribution; 17.6 studies that trade.
""", title="Worked answer 5")
# %% [markdown]
# Next: [17.4 KV sizing](17_04_kv_sizing.ipynb).
#
# > **What you can now compute**
# > - A request's TTFT from its prompt and the prefill efficiency, and the share of its wall clock spent decoding ([Exercise 17-11](../../exercises/ex17_11.ipynb)).
# > - The stall one unchunked long prompt imposes on every running stream, in milliseconds and in decode steps ([Exercise 17-11](../../exercises/ex17_11.ipynb)).
# > - Whether a decode step meets an ITL target, and the largest batch that does ([Exercise 17-10](../../exercises/ex17_10.ipynb)).
# > - The prompt tokens per second a stream of requests asks prefill to absorb ([Exercise 17-7](../../exercises/ex17_7.ipynb)).
# >
# > <details><summary>Assumptions this notebook made</summary>
# >
# > A prefill is priced by its matrices' compute at a fixed
# > 50% of peak, attention and the weight read left out, except in the part that adds them;
# > every decode step of a request lasts the same 6 ms whatever its context, a step the
# > chapter rounds from 17.5's batch of 600-token chats; a stalled round adds the prefill to
# > the step (the simulator) or is the prefill alone (the closed form) rather than one fused
# > pass; the simulated service has Poisson arrivals of identical requests, one card and the
# > KV pool of 17.4; percentiles are by nearest rank.
# >
# > </details>
