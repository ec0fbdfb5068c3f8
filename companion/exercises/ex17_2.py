"""Exercise 17-2: free memory and max concurrency (17 §4)."""

from __future__ import annotations

import math

from companion import calc, specs
from companion.chapters import ch17
from companion.exercises import common_ch17
from companion.exercises.variants import gb, variant
from companion.grading import Exercise, Part


# (card, large model, TP degree): layouts where the sharded weights leave KV room
_LAYOUTS = [(specs.H100_SXM, specs.LLAMA_70B, 4), (specs.H100_SXM, specs.LLAMA_70B, 8),
            (specs.H200_SXM, specs.LLAMA_70B, 2), (specs.H200_SXM, specs.LLAMA_70B, 4),
            (specs.A100_80GB, specs.LLAMA_70B, 4), (specs.A100_80GB, specs.LLAMA_70B, 8),
            (specs.H200_SXM, specs.LLAMA_405B, 8)]


def _params(seed: int) -> dict:
    c = variant("17-2", seed,
                dict(layout=(specs.H100_SXM, specs.LLAMA_70B, ch17.TP), small=specs.LLAMA_8B,
                     context=ch17.LONG_CONTEXT_TOKENS, reserve=ch17.RUNTIME_RESERVE_BYTES),
                dict(layout=_LAYOUTS, small=common_ch17.ROUND_SMALL,
                     context=(4_000, 8_000, 16_000, 32_000), reserve=(2e9, 4e9, 6e9)))
    hw, big, tp = c["layout"]
    return dict(hardware=hw, small_model=c["small"], big_model=big, tp=tp,
                context_tokens=c["context"], reserve_bytes=c["reserve"])


def _capacity(g: dict, model, tp: int) -> dict:
    return calc.tp_kv_capacity(model, g["hardware"], tp=tp, context_tokens=g["context_tokens"],
                               reserve_bytes=g["reserve_bytes"])


def _solve(g: dict) -> dict:
    small = _capacity(g, g["small_model"], 1)
    big = _capacity(g, g["big_model"], g["tp"])
    return {
        "a-small-free": gb(small["free_kv_bytes"]),
        "b-small-seqs": small["max_sequences"],
        "c-big-ratio": big["weights_over_memory"],
        "d-big-free-gpu": gb(big["free_kv_bytes_per_gpu"]),
        "e-big-free-total": gb(big["free_kv_bytes"]),
        "f-big-kv-heads": big["kv_heads_per_gpu"],
        "g-big-seqs": big["max_sequences"],
    }


def _mistakes(g: dict) -> dict:
    s = _solve(g)
    hw, p, L = g["hardware"], g["tp"], g["context_tokens"]
    mem, reserve = hw.mem_bytes, g["reserve_bytes"]
    small_w, big_w = g["small_model"].weight_bytes, g["big_model"].weight_bytes
    seq_small = calc.kv_bytes(g["small_model"], L, block_tokens=1)
    seq_big = calc.kv_bytes(g["big_model"], L, block_tokens=1)
    no_reserve = "subtract the runtime + activations reserve on every GPU"
    floor = "a sequence either fits or not: take the floor"
    return {
        "a-small-free": [(gb(mem - small_w), no_reserve)],
        "b-small-seqs": [((mem - small_w) // seq_small, no_reserve),
                         (math.ceil((mem - small_w - reserve) / seq_small), floor)],
        "c-big-ratio": [(mem / big_w, "weights over card memory, not the reverse")],
        "d-big-free-gpu": [(gb(mem - big_w - reserve), "the weights shard: each GPU holds "
                                                       "weights / g"),
                           (gb(mem - big_w / p), no_reserve)],
        "e-big-free-total": [(gb(mem - big_w / p - reserve), "add up the KV space of all g GPUs"),
                             (gb(p * (mem - big_w / p)), no_reserve)],
        "f-big-kv-heads": [(g["big_model"].n_query_heads / p, "shard the KV heads, not the query "
                                                              "heads")],
        "g-big-seqs": [((mem - big_w / p - reserve) // seq_big,
                        "the KV heads shard with the weights, so all g GPUs' free memory "
                        "holds sequences: use the aggregate"),
                       (p * (mem - big_w / p) // seq_big, no_reserve),
                       (math.ceil(p * (mem - big_w / p - reserve) / seq_big), floor)],
    }


def exercises() -> list[Exercise]:
    return [Exercise(
        id="17-2", title="Turn free memory into a max-concurrency number", section="17 §4",
        parts=(
            Part("a-small-free", "KV space left on one card by the small model", "GB", "rel",
                 0.005),
            Part("b-small-seqs",
                 "sequences of the given context the small model holds on one card",
                 "sequences", "exact", points=2),
            Part("c-big-ratio", "the large model's weights as a multiple of one card's memory",
                 "x", "rel", 0.005),
            Part("d-big-free-gpu", "KV space per GPU with the large model sharded over g GPUs",
                 "GB", "rel", 0.005),
            Part("e-big-free-total", "KV space of the whole TP group", "GB", "rel", 0.005),
            Part("f-big-kv-heads", "KV heads each GPU holds", "heads", "rel", 0.001),
            Part("g-big-seqs", "sequences of the given context the TP group holds", "sequences",
                 "exact", points=2),
        ),
        make_params=_params, solve=_solve, mistakes=_mistakes,
    )]
