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
# **The question.** A request first reads its whole prompt (prefill), then writes its answer
# one token at a time (decode). 17.2 put the two phases on opposite sides of the ridge. What
# does that mean for the numbers a user sees, where does a request's time go, and what
# happens when both phases share one GPU?
#
# previous: [17.2 Roofline](17_02_roofline.ipynb) | [overview](17_00_overview.ipynb) |
# next: [17.4 KV sizing](17_04_kv_sizing.ipynb)

# %%
from companion import calc, ledger, plots, specs, units, widgets
from companion.sim import scheduler as sched
from companion.sim.scenarios import hol_scenario

hw, m8 = specs.H100_SXM, specs.LLAMA_8B

# %% [markdown]
# ## Three latency metrics
#
# - **TTFT**, time to first token: waiting in the queue plus the whole prefill. Nothing
#   appears on the screen before it.
# - **ITL**, inter-token latency: the gap between two consecutive streamed tokens, measured
#   for every token. Users feel its spikes as stutter.
# - **TPOT**, time per output token: the mean ITL over one response. A mean summarizes; the
#   ITL distribution (its p99 in particular) is what diagnoses a problem.
#
# ## A request's budget
#
# The 8B model on the H100: a 2,048-token prompt takes about 66 ms to prefill at the 50% of
# peak assumed in 17.2, and a healthy decode batch takes a step about every 6 ms (17.5 derives
# 6.1 ms for 57 sequences of 600 live tokens). With 250 output tokens:
#
# $$ T = \text{TTFT} + G \cdot \text{ITL}, \qquad
#    \text{decode share} = \frac{G \cdot \text{ITL}}{T}. $$

# %%
ttft_s = calc.prefill_compute_s(m8, hw, calc.CH17_PROMPT_TOKENS)
step_17_5 = calc.paged_batch_gain(m8, hw)["naive"]["step_s"]
print(f"TTFT (prefill of {calc.CH17_PROMPT_TOKENS:,} tokens at 50% of peak): "
      f"{ttft_s / units.ms:.0f} ms")
print(f"a decode step at a healthy batch (17.5: 57 sequences of 600 tokens): "
      f"{step_17_5 / units.ms:.1f} ms; the chapter uses ~{sched.CH17_HOL_DECODE_STEP_S / units.ms:g} ms")
budget = calc.request_budget(ttft_s, 250, sched.CH17_HOL_DECODE_STEP_S)
print(f"decode, 250 tokens: {budget['decode_s'] / units.ms:,.0f} ms; total {budget['total_s']:.2f} s; "
      f"decode share {100 * budget['decode_share']:.0f}%, prefill share "
      f"{100 * budget['prefill_share']:.0f}%")

# %% [markdown]
# Ninety-six percent of the wall clock is the phase that runs at a third of a percent of the
# chip's arithmetic (17.2). Shortening the prompt attacks only the remaining 4%; the levers
# that matter for latency (17.10) go after decode.
#
# ## The two phases side by side (re-derived)
#
# The chapter summarizes the contrast in a table our copy does not print; these rows are
# re-derived from the formulas of 17.2 for the 8B on the H100.

# %%
i_prefill = calc.prefill_intensity(m8, calc.CH17_PROMPT_TOKENS)
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
# The last row is why the two phases do not scale on the same signal: longer documents raise
# prefill demand, chattier sessions raise decode demand, and each can move without the other.
#
# ## Head-of-line blocking
#
# A serving GPU always holds a batch of running decodes, each wanting a short step every few
# milliseconds, and a queue of arrivals, each wanting a prefill that is a long block of
# compute. If the scheduler runs a whole prefill at once, every running decode waits for it.
# The chapter's case: an 8,000-token prompt arrives while steps take about 6 ms.
#
# $$ t_{\text{stall}} = \frac{2N \cdot n}{0.5\,P}, \qquad
#    \frac{\text{worst ITL}}{\text{step}} \approx \frac{t_{\text{stall}}}{\text{step}}. $$

# %%
hol = calc.head_of_line_stall(m8, hw, calc.CH17_LONG_CONTEXT_TOKENS, sched.CH17_HOL_DECODE_STEP_S)
print(f"prefill FLOPs: {hol['prefill_flops'] / 1e12:.0f}e12; at 50% of peak: {hol['stall_s'] / units.ms:.0f} ms; "
      f"worst ITL ~ {hol['worst_itl_over_step']:.0f}x the {sched.CH17_HOL_DECODE_STEP_S / units.ms:g} ms step")

# %% [markdown]
# ### The stall on a simulated timeline
#
# The chapter states the stall; it prints no timeline. The figure below is **generated by the
# companion's scheduler simulator** (`companion.sim.scheduler`, continuous batching): four
# requests are decoding with a 6 ms step, and the 8,000-token prompt arrives at a step
# boundary and is admitted whole, in the same round as their next decode step. That round
# lasts the decode step plus the prefill, so the worst gap between two tokens of a running
# request is one step longer than the closed-form stall (and its ratio one higher): the
# chapter counts the stall alone.

# %%
scenario = hol_scenario(m8, hw, calc.CH17_LONG_CONTEXT_TOKENS, sched.CH17_HOL_DECODE_STEP_S,
                        calc.CH17_PREFILL_EFFICIENCY, decode_batch=4)
sim = scenario["simulated"]
print(f"simulated smooth ITL: {sim['baseline_itl_s'] / units.ms:.1f} ms; worst ITL: "
      f"{sim['worst_decode_itl_s'] / units.ms:.1f} ms "
      f"({sim['worst_decode_itl_s'] / sim['baseline_itl_s']:.0f}x); "
      f"the long prompt's TTFT: {sim['long_ttft_s'] / units.ms:.0f} ms")
print(sim["result"].summary())
plots.hol_timeline_figure(sim["result"]).show()

# %% [markdown]
# One long prompt freezes every stream for a quarter of a second. In a latency histogram the
# mean ITL hardly moves while the p99 jumps exactly when long prompts arrive, which is the
# signature to look for (17.9).
#
# Neither priority order fixes it. "Decode first" means an arrival may wait behind decode
# steps indefinitely and never get its first token (TTFT starves); "prefill first" is the
# freeze above, as policy. The two answers in the rest of the chapter: split the prompt into
# chunks that share each round with the decode steps (chunked prefill, 17.6), or put prefill
# and decode on different GPUs (disaggregation, 17.8).
#
# ## Chapter says / companion computes

# %%
print(ledger.table("17.3"))

# %% [markdown]
# ## Explorer 1: a request's budget
#
# Change the prompt, the output length, the decode step and the prefill efficiency (and the
# card or the model). The bar splits the request into TTFT and decode; the curve shows how the
# decode share grows with the output length.

# %% tags=["nbval-ignore-output"]
budget_panel = widgets.RequestBudgetPanel()
budget_panel.show()

# %%
print({k: round(v, 3) for k, v in budget_panel.update().numbers.items()})

# %% [markdown]
# ## Explorer 2: head-of-line blocking, simulated
#
# Change the long prompt, the step of the running batch, the prefill efficiency and how many
# decodes are running. Each update re-runs the scheduler simulator on this small scenario;
# the readout puts the closed form beside it.

# %% tags=["nbval-ignore-output"]
hol_panel = widgets.HeadOfLinePanel()
hol_panel.show()

# %%
print({k: round(v, 2) for k, v in hol_panel.update().numbers.items()})

# %% [markdown]
# ## Try this
#
# 1. In explorer 1, set the output to 20 tokens (a classification-style reply). What share of
#    the request is prefill now, and which lever would you reach for?
# 2. In explorer 2, find the prompt length at which the stall equals 10 decode steps.
# 3. Raise the prefill efficiency to 100%: how much of the stall goes away, and is that enough
#    for an ITL target of a few tens of milliseconds?
# 4. Use the 70B in explorer 2 (pretend it fits): how long is the freeze now?
#
# **Practice problems.** In [the exercises folder](../../exercises/) (`ex17_*.ipynb`), the
# Chapter 17 problems on the request time budget (TTFT vs decode share) and on head-of-line
# blocking by a long prompt practise this section; the chunked-prefill follow-up belongs to
# 17.6.
#
# Next: [17.4 KV sizing](17_04_kv_sizing.ipynb).
