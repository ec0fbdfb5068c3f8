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
# # 17.10 The levers, ranked
#
# **The question.** A performance problem arrives as a symptom (throughput is low, p99 ITL
# spikes, the model does not fit). Which lever answers which symptom, how much does each one
# buy, and in what order should you pull them?
#
# The chapter indexes its answers by symptom in a table, and closes with a
# mechanism-to-lever map and a cheat sheet. None of the three is printed in our copy of the
# chapter, so this notebook **re-derives all three** from the companion's formulas. Two of
# the levers get their arithmetic worked in full: weight quantization and speculative decoding.

# %%
from companion import calc, ledger, plots, specs, units, widgets

hw = specs.H100_SXM
m8 = specs.LLAMA_8B

# %% [markdown]
# ## Quantization: fewer bytes per weight, a higher ceiling
#
# On the memory roof a decode step costs bytes, not FLOPs (17 §2): at batch 1 the step time
# is the weight bytes over the bandwidth. Storing each weight in one byte (INT8 or FP8) instead
# of two, while still computing in higher precision, halves those bytes:
#
# $$t_\text{token} = \frac{P \times b_\text{weight}}{\beta}, \qquad
# \text{ceiling} = \frac{1}{t_\text{token}}, \qquad
# \text{intensity} = \frac{2P}{P\,b_\text{weight}} = \frac{2}{b_\text{weight}}\
# \text{FLOP/byte}.$$

# %%
q = calc.quantization_ceiling(m8, hw, 1)
print(f"8B in INT8: weights {q['weight_bytes'] / units.GB:.0f} GB, "
      f"{q['step_s'] / units.ms:.2f} ms per token, ceiling {q['tokens_per_s']:.0f} tok/s "
      f"(BF16: {q['baseline_tokens_per_s']:.0f} tok/s, x{q['speedup']:g}); intensity "
      f"{q['intensity_flop_per_byte']:g} FLOP/byte")
formats = {"BF16 (2 B)": 2.0, "INT8 / FP8 (1 B)": 1.0, "INT4 (0.5 B)": 0.5}
rows = [dict(hardware=card.name, format=label,
             tokens_per_s=calc.quantization_ceiling(m8, card, b)["tokens_per_s"])
        for card in (specs.H100_SXM, specs.H200_SXM) for label, b in formats.items()]
for r in rows:
    print(f"  {r['hardware']:9} {r['format']:17} {r['tokens_per_s']:5.0f} tok/s")
plots.quantization_figure(rows).show()

# %% [markdown]
# Weights-only quantization is the safe first step; quantizing the KV cache or the
# activations are separate and harder decisions. It is also the first lever in the list that
# can change the model's answers, so the 2x is only free once your evaluations say so.
#
# ## Speculative decoding: use the idle arithmetic
#
# A batch-1 decode step leaves more than 99% of the arithmetic idle. Speculative decoding spends
# some of it: a small draft model proposes $k$ tokens, and the large model checks all of them
# in one forward pass. Because that pass sits on the memory roof, scoring $k+1$ positions reads
# the same weights as scoring one, so it costs (almost) the same time:

# %%
k = 4
one = calc.decode_step_time(m8, hw, 1, 0)
wide = calc.decode_step_time(m8, hw, k + 1, 0)
print(f"target pass over 1 position: {one / units.ms:.3f} ms; over {k + 1} positions: "
      f"{wide / units.ms:.3f} ms (intensity {calc.decode_intensity(m8, k + 1):g} FLOP/byte, "
      f"ridge {calc.ridge_point(hw):.0f})")

# %% [markdown]
# If each drafted token is accepted with probability $\alpha$, independently, the pass emits
# the accepted prefix plus one token of its own. It yields at least $j+1$ tokens exactly when
# the first $j$ drafts are all accepted, probability $\alpha^j$, so the expected output per
# target pass is
#
# $$E[N] = \sum_{j=0}^{k} P(N \ge j + 1) = 1 + \alpha + \alpha^2 + \dots + \alpha^k.$$
#
# The simulator (`companion.sim.speculative`, rejection sampling on a two-symbol vocabulary
# tuned so a draft token is accepted with probability $\alpha$) checks the formula round by
# round.

# %%
alpha = 0.7
terms = [calc.speculative_expected_tokens(alpha, j) - calc.speculative_expected_tokens(alpha, j - 1)
         for j in range(1, k + 1)]
expected = calc.speculative_expected_tokens(alpha, k)
print("E[N] = 1 + " + " + ".join(f"{t:.3f}" for t in terms) + f" = {expected:.2f} tokens per pass")
check = widgets.speculative_check(alpha, k, 5000)
print(f"exact P(N = n), n = 1..{k + 1}: " + ", ".join(f"{p:.3f}" for p in check["distribution"]))
print(f"simulated over 5,000 seeded rounds: " + ", ".join(f"{p:.3f}" for p in check["simulated"])
      + f"; mean {check['sim_mean']:.3f}")
spec_panel = widgets.SpeculativeLeverPanel()
spec_panel.figure().show()

# %% [markdown]
# With $\alpha = 0.7$ and $k = 4$, one pass produces about 2.8 tokens, hence the chapter's
# "up to ~2.8x" lower single-stream latency: "up to" because the draft model's own time and the
# slightly wider pass are not free. The trade is explicit: more total compute (a whole extra
# model, plus rejected drafts) for less latency. That is right on a decode machine whose
# arithmetic is idle, and wrong on a prefill pool that is already compute-bound.
#
# ## The levers table (re-derived)
#
# One row per symptom: the lever, the quantity it changes, and the chapter's arithmetic
# recomputed for the 8B on an H100 SXM (where a lever has a number in the chapter). Generated
# by `calc.levers_table`; the chapter's own table is missing from our copy.

# %%
print(widgets.levers_text(m8, hw))

# %% [markdown]
# **Order of operations.** Measure first (MBU/MFU, the ITL distribution, KV-pool occupancy and
# preemptions; 17 §9). Then take the structural wins a modern engine gives by default, but
# confirm them: paged KV and continuous batching. Then scheduling policy: chunked prefill and
# the per-iteration token budget. Only then the levers that cost quality, hardware or
# complexity: quantization, a different parallel layout, disaggregation. Each step changes the
# numbers the next one starts from, which is why the order is fixed.
#
# ## The mechanism-to-lever map (re-derived)
#
# The chapter in one table: cover the right column and try to regenerate it from the left.

# %%
print(widgets.mechanism_map_text())

# %% [markdown]
# ## Cheat sheet (re-derived)
#
# The chapter's headline numbers for its two model shapes on an H100 SXM, from
# `calc.cheat_sheet` (spec-sheet peaks, BF16, 50% of peak for prefill, 4 GB runtime reserve,
# 8,000-token sequences). Re-run it with your own card before quoting any of them: the last
# cell of this notebook does it for an H200.

# %%
print(widgets.cheat_sheet_text([m8, specs.LLAMA_70B], hw))

# %% [markdown]
# ## Chapter says / companion computes

# %%
print(ledger.table("17.10"))

# %% [markdown]
# ## Explorer: speculative decoding
#
# The acceptance rate, the draft length and the number of simulated rounds. Left: how many
# tokens one target pass produces (bars exact, diamonds simulated); right: the expectation
# against the draft length. Notice how little a longer draft buys once $\alpha^k$ is small.

# %% tags=["nbval-ignore-output"]
spec_panel.show()

# %%
n = spec_panel.update().numbers
print(f"alpha 0.7, k 4: {n['expected_tokens']:.2f} expected, {n['simulated_mean']:.3f} simulated")
for a in (0.5, 0.9):
    n = spec_panel.update(acceptance=a).numbers
    print(f"alpha {a}, k 4: {n['expected_tokens']:.2f} expected")
_ = spec_panel.reset()

# %%
print(widgets.cheat_sheet_text([m8, specs.LLAMA_70B], specs.H200_SXM))

# %% [markdown]
# ## Try this
#
# - What acceptance rate makes $k = 8$ worth 0.5 tokens per pass more than $k = 4$? Use the
#   explorer, then solve $\alpha^5 + \dots + \alpha^8 = 0.5$.
# - With $\alpha = 0.7$, the draft costs 10% of a target pass per drafted token. Is $k = 4$
#   still the best draft length? (Tokens per unit of time, not per pass.)
# - Quantize the 8B to INT4 (0.5 B per weight). What ceiling does the memory roof allow, and
#   how close is the decode intensity to the ridge?
# - Compare the cheat sheet on the H100 and the H200. Which rows change, and which cannot
#   (and why)?
# - Pick a symptom from the levers table you have seen in practice. Which measurement from
#   17 §9 would have confirmed it before you pulled the lever?
#
# **Practice problems.** The Chapter 17 practice problems in
# [the exercises folder](../../exercises/) include the quantization ceiling, the speculative
# expectation and choosing a lever from a symptom. Previous:
# [17.9 Measuring it](17_09_measuring.ipynb); next:
# [Interview questions, worked](17_11_interview_questions.ipynb).
