"""What several of Chapter 17's practice problems (17-1 ... 17-13) share: the models and cards
their variants draw from, and the live-token pick that keeps a decode step on the memory roof.

Chapter 17 has no exercises of its own; these problems are built from its worked examples and
its "What interviewers probe" questions. Seed 0 reproduces the chapter's numbers (H100 SXM, the
8B and 70B shapes, "8K" = 8,000 tokens); other seeds swap in another model (Chapter-17-style
round-count shapes, or shapes read from public Hugging Face ``config.json`` files), another
card, context, link, acceptance rate ... Every expected answer is computed by
``companion.calc``; nothing is typed in.

Where a problem needs an input the chapter does not state (an ITL target, a draft model's size),
seed 0 uses a stated assumption, named in the given data and in the notebook.
"""

from __future__ import annotations

from companion import calc, specs
from companion.seeds import pick

__all__ = ["SHAPE_3B", "SHAPE_14B", "ROUND_SMALL", "CARDS", "CARDS_17_3", "memory_bound_live"]

# Chapter-17-style shapes with a round parameter count (the chapter's 8B is 8e9 exactly), so
# "weights = params x bytes" holds as the chapter writes it. Layer/head shapes are the public
# Llama-3.2-3B and Qwen2.5-14B configs.
SHAPE_3B = specs.Model(
    "3B shape (Llama-3.2-3B-like)", n_layers=28, n_kv_heads=8, head_dim=128, n_params=3e9,
    hidden_size=3072, n_heads=24,
    source="practice variant: 3e9 params, the public Llama-3.2-3B layer/head shape")
SHAPE_14B = specs.Model(
    "14B shape (Qwen2.5-14B-like)", n_layers=48, n_kv_heads=8, head_dim=128, n_params=14e9,
    hidden_size=5120, n_heads=40,
    source="practice variant: 14e9 params, the public Qwen2.5-14B layer/head shape")

ROUND_SMALL = [specs.LLAMA_8B, SHAPE_3B, SHAPE_14B]
CARDS = [specs.H100_SXM, specs.H200_SXM, specs.A100_80GB]
# 17-3's and 17-8's cards: the three above and the RTX PRO 6000 of Chapter 8
CARDS_17_3 = [specs.H100_SXM, specs.H200_SXM, specs.A100_80GB, specs.RTX_PRO_6000]


def memory_bound_live(m, hw, options, rng) -> int:
    """A live-token count at which each added sequence costs more bytes- than FLOP-time, so the
    step stays on the memory roof (the chapter's step formula is bytes / bandwidth)."""
    per_seq_flop_s = calc.matrix_flops(m, 1, include_lm_head=True) / hw.peak_flops_per_s
    k = calc.kv_bytes_per_token(m)
    ok = [L for L in options if L * k / hw.mem_bw_bytes_per_s > 1.25 * per_seq_flop_s]
    return pick(rng, ok)
