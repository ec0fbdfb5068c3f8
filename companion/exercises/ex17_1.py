"""Exercise 17-1: KV cache per token and per sequence (17 §4)."""

from __future__ import annotations

import math

from companion import calc, specs, units
from companion.chapters import ch17
from companion.exercises.variants import gb, variant
from companion.grading import Exercise, Part, screen_answers


# --- models beyond the presets -----------------------------------------------------------------

# Public Hugging Face config.json fields (the same files as tests/data/hf_configs/, which a test
# compares against); kept here so the package does not read from tests/.
HF_CONFIGS = {
    "llama-3-8b": dict(model_type="llama", hidden_size=4096, intermediate_size=14336,
                       num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=8,
                       vocab_size=128256, tie_word_embeddings=False),
    "llama-3-70b": dict(model_type="llama", hidden_size=8192, intermediate_size=28672,
                        num_hidden_layers=80, num_attention_heads=64, num_key_value_heads=8,
                        vocab_size=128256, tie_word_embeddings=False),
    "llama-2-7b-mha": dict(model_type="llama", hidden_size=4096, intermediate_size=11008,
                           num_hidden_layers=32, num_attention_heads=32, vocab_size=32000,
                           tie_word_embeddings=False),
    "gemma-2b-mqa": dict(model_type="gemma", hidden_size=2048, intermediate_size=16384,
                         num_hidden_layers=18, num_attention_heads=8, num_key_value_heads=1,
                         head_dim=256, vocab_size=256000, tie_word_embeddings=True),
    "qwen3-8b": dict(model_type="qwen3", hidden_size=4096, intermediate_size=12288,
                     num_hidden_layers=36, num_attention_heads=32, num_key_value_heads=8,
                     head_dim=128, vocab_size=151936, tie_word_embeddings=False),
}
HF_MODELS = {key: specs.model_from_hf_config(cfg, name=f"{key} (config.json)")
             for key, cfg in HF_CONFIGS.items()}

# GQA and MQA models only: an MHA model (llama-2-7b-mha) would make (c) 1, (d) equal (b) and
# (f) equal (e), and the written questions about the saving empty (the screen rejects one too)
_MODELS = [specs.LLAMA_70B, specs.LLAMA_405B, HF_MODELS["llama-3-8b"], HF_MODELS["qwen3-8b"],
           HF_MODELS["gemma-2b-mqa"]]


def _thousands_label(tokens: int) -> str:
    """"8K" for 8,000 tokens, as Chapter 17 labels contexts."""
    return f"{tokens // 1000}K" if tokens % 1000 == 0 else f"{tokens:,}"


def _params(seed: int) -> dict:
    c = variant("17-1", seed,
                dict(model=specs.LLAMA_70B, context=ch17.LONG_CONTEXT_TOKENS,
                     cache=ch17.CACHE_BYTES),
                dict(model=_MODELS, context=(4_000, 8_000, 16_000, 32_000),
                     cache=(40e9, 60e9, 80e9)))
    m = c["model"]
    return dict(model=m, n_layers=m.n_layers, n_query_heads=m.n_query_heads,
                n_kv_heads=m.n_kv_heads, head_dim=m.head_dim, bytes_per_value=2,
                context_tokens=c["context"], context_label=_thousands_label(c["context"]),
                cache_bytes=c["cache"], fp8_bytes_per_value=1)


def _screen(seed: int) -> str | None:
    """Why a seed's variant is unfair, or None. A model that already uses MHA (as many KV heads
    as query heads) makes (c) 1, (d) equal to (b), (f) equal to (e) and the written questions
    about GQA's saving empty, so no seed hands one out."""
    g = _params(seed)
    if g["n_kv_heads"] == g["n_query_heads"]:
        return (f"{g['model'].name} already uses MHA ({g['n_kv_heads']} KV heads for "
                f"{g['n_query_heads']} query heads): nothing to compare it with")
    return screen_answers(exercises()[0], _solve(g))


def _variants(g: dict) -> dict:
    rows = calc.attention_variants(g["model"], context_tokens=g["context_tokens"],
                                   cache_bytes=g["cache_bytes"],
                                   bytes_per_value=g["bytes_per_value"])
    by_heads = {r["n_kv_heads"]: r for r in rows}
    return dict(own=by_heads[g["n_kv_heads"]], mha=by_heads[g["n_query_heads"]])


def _solve(g: dict) -> dict:
    v = _variants(g)
    own, mha = v["own"], v["mha"]
    return {
        "a-per-token": calc.kv_bytes_per_token(g["model"], g["bytes_per_value"]),
        "b-per-seq": gb(own["kv_bytes_per_sequence"]),
        "c-factor": own["reduction_vs_mha"],
        "d-mha-seq": gb(mha["kv_bytes_per_sequence"]),
        "e-fit-own": own["sequences"],
        "f-fit-mha": mha["sequences"],
        "g-fp8": calc.kv_bytes_per_token(g["model"], g["fp8_bytes_per_value"]),
    }


def _mistakes(g: dict) -> dict:
    s = _solve(g)
    k, L = s["a-per-token"], g["context_tokens"]
    query = k * g["n_query_heads"] / g["n_kv_heads"]
    hint_heads = ("use the KV heads (n_kv_heads), not the query heads: under GQA several query "
                  "heads share one K/V pair, which is the point of the formula")
    hint_8k = (f"Chapter 17 reads \"{g['context_label']}\" as {L:,} tokens here, not a multiple "
               f"of 1,024")
    binary = L // 1000 * 1024 if L % 1000 == 0 else None
    seq = [(gb(query * L), hint_heads)]
    if binary:
        seq.append((gb(k * binary), hint_8k))
    fit = []
    if binary:
        fit.append((g["cache_bytes"] // (k * binary), hint_8k))
    return {
        "a-per-token": [(query, hint_heads),
                        (k / 2, "count both K and V (the leading 2) and 2 bytes per BF16 value"),
                        (k / units.KiB * 1000,
                         "that reads the size in KiB as if 1 KB were 1,000 bytes: Chapter "
                         "17's \"KB\" per token is binary (1 KiB = 1,024 bytes), and the "
                         "answer is asked in bytes")],
        "b-per-seq": seq,
        "c-factor": [(1 / s["c-factor"], "give MHA over this model: query heads / KV heads "
                                         "(a factor >= 1)")],
        "d-mha-seq": ([(gb(query * binary), hint_8k)] if binary else []),
        "e-fit-own": fit + [(s["f-fit-mha"] * s["c-factor"],
                             "divide the cache by this model's own per-sequence size and take "
                             "the floor; scaling the MHA count by the factor multiplies its "
                             "rounding too"),
                            (math.ceil(g["cache_bytes"] / (k * L)),
                             "a sequence either fits or not: take the floor")],
        "f-fit-mha": [(math.ceil(g["cache_bytes"] / (query * L)),
                       "a sequence either fits or not: take the floor")],
        "g-fp8": [(k, "FP8 stores each K/V value in 1 byte instead of 2")],
    }


def exercises() -> list[Exercise]:
    return [Exercise(
        id="17-1", title="Size the KV cache of a model you are given", section="17 §4",
        parts=(
            Part("a-per-token", "KV bytes per token", "B", "rel", 0.001, points=2),
            Part("b-per-seq", "KV bytes of one sequence at the given context", "GB", "rel", 0.005),
            Part("c-factor", "how many times larger the cache would be under MHA", "x", "rel",
                 0.001),
            Part("d-mha-seq", "KV bytes of one sequence under MHA", "GB", "rel", 0.005),
            Part("e-fit-own", "whole sequences that fit the cache space, this model", "sequences",
                 "exact"),
            Part("f-fit-mha", "whole sequences that fit the cache space, under MHA", "sequences",
                 "exact"),
            Part("g-fp8", "KV bytes per token with an FP8 KV cache", "B", "rel", 0.001),
        ),
        make_params=_params, solve=_solve, mistakes=_mistakes,
        conditions=("the model uses GQA or MQA (fewer KV heads than query heads), so that the "
                    "MHA comparison means something",),
        screen=_screen,
    )]
