"""Exercise 17-7: disaggregated pool sizing and the KV hop (17 §8)."""

from __future__ import annotations

import math

from companion import calc, specs
from companion.chapters import ch17
from companion.exercises.variants import gb, ms, variant
from companion.grading import Exercise, Part


def _params(seed: int) -> dict:
    c = variant("17-7", seed,
                dict(rate=ch17.REQUEST_RATE_PER_S, prompt=ch17.MEAN_PROMPT_TOKENS,
                     output=ch17.MEAN_OUTPUT_TOKENS, pcap=ch17.PREFILL_TOK_PER_S_PER_GROUP,
                     dcap=ch17.DECODE_TOK_PER_S_PER_GROUP, model=specs.LLAMA_70B,
                     context=ch17.LONG_CONTEXT_TOKENS, hw=specs.H100_SXM,
                     # §8's 400 Gb RDMA link, in the Gb/s the question states it in
                     rdma=round(ch17.RDMA_400G_BYTES_PER_S * 8 / 1e9)),
                dict(rate=(40, 60, 100, 150, 250), prompt=(800, 1_500, 2_000, 3_000, 6_000),
                     output=(150, 250, 400, 700), pcap=(8_000, 10_000, 12_000, 16_000),
                     dcap=(1_800, 2_500, 3_000, 4_000),
                     model=(specs.LLAMA_70B, specs.LLAMA_8B, specs.LLAMA_405B),
                     context=(4_000, 8_000, 16_000, 32_000),
                     hw=(specs.H100_SXM, specs.A100_80GB), rdma=(100, 200, 400)))
    m = c["model"]
    # NVLink as the data sheet gives it (both directions added): halving it is part (g)'s step
    return dict(request_rate_per_s=c["rate"], mean_prompt_tokens=c["prompt"],
                mean_output_tokens=c["output"], prefill_tok_per_s_per_group=c["pcap"],
                decode_tok_per_s_per_group=c["dcap"], model=m, n_layers=m.n_layers,
                kv_bytes_per_token=calc.kv_bytes_per_token(m), context_tokens=c["context"],
                hardware=c["hw"], prefill_tp=prefill_tp(m, c["hw"]),
                nvlink_spec_bytes_per_s=c["hw"].interconnect_bytes_per_s,
                rdma_gbit_per_s=c["rdma"],
                # the companion's reading of 17 §3's "a few tens of ms" between tokens, against
                # which the hop is judged (no part asks for it)
                itl_target_s=ch17.ITL_TARGET_S)


def prefill_tp(model, hw) -> int:
    """The GPUs one prompt's prefill is split over (tensor parallel): one card when the weights
    fit it with the runtime reserve, else the chapter's TP = 4 (17 §4, §7) when that fits,
    else the node's TP of ``calc.parallel_layout`` (pipeline stages do not shorten one prompt)."""
    if calc.tp_kv_capacity(model, hw)["fits"]:
        return 1
    if calc.tp_kv_capacity(model, hw, tp=ch17.TP)["fits"]:
        return ch17.TP
    return calc.parallel_layout(model, hw)["tp"]


# A spec sheet's NVLink figure (the H100's 900 GB/s, 17's assumptions) adds both directions:
# 18 links of 25 GB/s each way, 450 GB/s out and 450 GB/s in at once. A KV transfer moves bytes
# one way, from the prefill GPU to the decode GPU, so it runs at the per-direction rate.
NVLINK_DIRECTIONS = 2


def _nvlink_bytes_per_s(g: dict) -> float:
    # the data sheet's figure adds both directions; a transfer runs one way
    return g["nvlink_spec_bytes_per_s"] / NVLINK_DIRECTIONS


def _rdma_bytes_per_s(g: dict) -> float:
    # a NIC's rate is per direction (full duplex) and in bits: 400 Gb/s is 50 GB/s each way
    return g["rdma_gbit_per_s"] * 1e9 / 8


def _solve(g: dict) -> dict:
    pools = calc.disaggregated_pools(g["request_rate_per_s"], g["mean_prompt_tokens"],
                                     g["mean_output_tokens"],
                                     prefill_tok_per_s_per_group=g["prefill_tok_per_s_per_group"],
                                     decode_tok_per_s_per_group=g["decode_tok_per_s_per_group"])
    m, L = g["model"], g["context_tokens"]
    rdma_s = calc.kv_transfer_s(m, L, _rdma_bytes_per_s(g))
    return {
        "a-prompt-demand": pools["prompt_tok_per_s"],
        "b-prefill-groups": pools["prefill_groups"],
        "c-output-demand": pools["output_tok_per_s"],
        "d-decode-groups": pools["decode_groups"],
        "e-ratio": pools["prefill_to_decode"],
        "f-kv": gb(calc.kv_bytes(m, L, block_tokens=1)),
        "g-nvlink": ms(calc.kv_transfer_s(m, L, _nvlink_bytes_per_s(g))),
        "h-rdma": ms(rdma_s),
        "i-per-layer": ms(rdma_s / g["n_layers"]),
    }


def _mistakes(g: dict) -> dict:
    s = _solve(g)
    floor = "a pool needs whole groups: round the division up"
    bits = "the NIC's rate is given in gigabits per second: divide by 8 for bytes"
    both_ways = ("the spec-sheet NVLink figure adds both directions; a transfer from one GPU to "
                 "another runs one way, at half of it")
    return {
        "f-kv": [(s["f-kv"] * 1e9, "give GB, not bytes: divide L k by 10^9")],
        "g-nvlink": [(s["g-nvlink"] / NVLINK_DIRECTIONS, both_ways)],
        "b-prefill-groups": [(math.floor(s["a-prompt-demand"] / g["prefill_tok_per_s_per_group"]),
                              floor)],
        "d-decode-groups": [(math.floor(s["c-output-demand"] / g["decode_tok_per_s_per_group"]),
                             floor)],
        "e-ratio": [(1 / s["e-ratio"], "prefill groups over decode groups")],
        "h-rdma": [(s["h-rdma"] / 8, bits)],
        "i-per-layer": [(s["i-per-layer"] / 8, bits)],
    }


def exercises() -> list[Exercise]:
    return [Exercise(
        id="17-7", title="Size disaggregated prefill and decode pools", section="17 §8",
        parts=(
            Part("a-prompt-demand", "prompt tokens per second the prefill pool must absorb",
                 "tok/s", "rel", 0.001),
            Part("b-prefill-groups", "prefill GPU groups", "groups", "exact", points=2),
            Part("c-output-demand", "output tokens per second the decode pool must produce",
                 "tok/s", "rel", 0.001),
            Part("d-decode-groups", "decode GPU groups", "groups", "exact", points=2),
            Part("e-ratio", "prefill groups per decode group", "x", "rel", 0.005),
            Part("f-kv", "KV bytes one long request ships to the decode pool", "GB", "rel", 0.005),
            # a factor of 2 here is the two-way spec figure (its own hint), not K and V
            Part("g-nvlink", "that transfer over NVLink, one direction", "ms", "rel", 0.005,
                 no_slips=(2.0,)),
            Part("h-rdma", "that transfer over RDMA", "ms", "rel", 0.005),
            Part("i-per-layer", "one layer's share of the RDMA transfer (shipped layer by layer)",
                 "ms", "rel", 0.005),
        ),
        make_params=_params, solve=_solve, mistakes=_mistakes,
    )]
