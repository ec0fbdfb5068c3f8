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
# # Notation: one letter, one meaning
#
# The two chapters were written separately, and each borrows letters freely: the same quantity
# can appear under two names, and one letter can stand for two quantities a few pages apart.
# The notebooks of this companion use a single set of symbols instead, listed below. When you
# meet a letter in any notebook's formula, it means what this page says, in every section.
#
# Each row gives the symbol, what it stands for, the unit the companion computes it in, the
# section that first needs it, and the notebook where it is introduced. Inside the `companion`
# package every quantity is kept in base units (bytes, seconds, FLOP, FLOP/s, bytes/s);
# GiB, ms or TFLOP/s appear only when a number is shown to you.
#
# A subscript names a variant rather than a new quantity: $T_v$ is a time (the verification
# pass of a speculative round), $g_\text{prefill}$ is a GPU count (the prefill pool). Every
# symbol a formula uses is in the table, and no notebook gives one of them a second meaning.

# %% [markdown]
# ## The symbols
#
# Rows are ordered by the section that introduces them, Chapter 8 first. The last column says
# which letter the chapters themselves print where it is not the one used here: Chapter 8 and
# Chapter 17 each reuse a few letters for different things ($T_r$ is a round's time in 8.5.2
# and a recompute time in 8.3.4; $p$ is a block's size in 8.3.1 and a GPU count in 17 §7), so
# the companion keeps one of the two meanings and gives the other a letter of its own. The
# table is `companion.notation.SYMBOLS`; a test reads every formula of the notebooks,
# exercises and solutions against it.

# %% jupyter={"source_hidden": true} tags=["remove-input"]
# computes the table below
from companion import notation
from companion.display import md

md(notation.markdown_table())

# %% [markdown]
# ## Habits that keep the letters apart
#
# - **Tokens are never $T$.** $T$ is always a time; a count of tokens gets $n$, $G$, $L$, $c$,
#   $h$ or $m$, so a formula such as $T = \mathrm{TTFT} + (G-1)\,\mathrm{ITL}$ reads
#   without a second look.
# - **Times by what they time.** $T$ alone is a whole request, $T_r$ one round, $T_\text{step}$
#   one plain decode step, and a subscript names anything else ($T_v$, $T_\text{rec}$); a
#   change or a mean keeps the letter ($\Delta T_r$, $\bar T$).
# - **Matrices are bold.** $\mathbf{W}$, $\mathbf{X}$, $\mathbf{Q}$, $\mathbf{K}$,
#   $\mathbf{V}$ and LoRA's $\mathbf{B}\mathbf{A}$ are matrices; the plain letters stay free
#   for numbers ($V$ is a saving; A and B name the two tokens of 8.5's toy vocabulary).
# - **One batch letter.** A batch is $b$ everywhere, including Chapter 17's formulas; $b_\text{KV}$
#   is a particular batch, not another quantity.
# - **Per-sequence cache bytes are a product.** The KV a sequence holds is written $L\,k$
#   (context times bytes per token), never as a new letter.
# - **Compute is $\pi$, parameters are $N$.** Peak FLOP/s and the parameter count both begin
#   with P in English; here they get different letters so that $2N/\pi$ (the compute time of one
#   token at batch 1) cannot be misread.
# - **Bytes per parameter are $s$, bytes per token are $k$.** A parameter stored in $s$ bytes
#   and a token of context that keeps $k$ bytes of KV are different rates: $D_w = N s$ for a
#   dense model, $L k$ for a sequence.
# - **GPUs are $g$.** A tensor-parallel degree, a pool of prefill cards or a pool of decode
#   cards is $g$ with a subscript ($g_\text{prefill}$), or said in words.
# - **Mean values get a bar.** The mean prompt of a workload is $\bar n$, the mean output
#   $\bar G$.
#
# Back to [Start here](START_HERE.ipynb), or to the overviews of
# [Chapter 8](ch08_inference_optimization/08_0_overview.ipynb) and
# [Chapter 17](ch17_performance/17_00_overview.ipynb).
