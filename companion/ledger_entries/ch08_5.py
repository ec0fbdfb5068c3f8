"""Ledger entries for Chapter 8, section 8.5 (speculative decoding): 8.5.1-8.5.4, Exercise 8-7."""

from __future__ import annotations

from companion import calc
from companion.chapters import ch08
from companion.ledger import Entry, entry
from companion.specs import QWEN3_8B, RTX_PRO_6000
from companion.units import GB, GiB, GFLOP, ms

S1, S2, S3, S4 = "8.5.1", "8.5.2", "8.5.3", "8.5.4"


def _toy_expected_tokens(draft_probs) -> float:
    """E[X] of the two-symbol toy: acceptance from p and q, four draft tokens (8.5.1-8.5.2)."""
    a = calc.speculative_acceptance_rate(ch08.TOY_TARGET_PROBS, draft_probs)
    return calc.speculative_expected_tokens(a, ch08.TOY_DRAFT_LEN)


def _batch1_bandwidth() -> float:
    """8.5.3: bytes a batch-1 2K round reads over its measured 26.26 ms."""
    read = calc.round_read_bytes(QWEN3_8B, 1, ch08.SHORT_PROMPT_TOKENS)
    return calc.effective_read_bandwidth(read, ch08.ROUND_B1_S)


# the sections its entries lie in (or under): the ledger computes this module only for them
SECTIONS = ("8.5",)


def entries() -> list[Entry]:
    out: list[Entry] = []
    add = out.append

    # --- 8.5.1 ---------------------------------------------------------------------------
    outputs, _ = calc.verification_outcome(4, 2)
    add(entry("8.5.1/fig8-29-outputs", S1,
              "Figure 8-29: 4 drafts, third diverges -> outputs kept", "3", "tokens", outputs))

    # --- 8.5.2: averaging, E[X], verification cost ----------------------------------------
    times, toks = ch08.MEAN_ROUND_EXAMPLE_S, ch08.MEAN_ROUND_EXAMPLE_TOKENS
    add(entry("8.5.2/mean-example-total-ms", S2, "two 1.5 ms rounds: total time", "3", "ms",
              sum(times) / ms))
    add(entry("8.5.2/mean-example-total-tokens", S2, "two rounds emitting 1 and 5: total tokens",
              "6", "tokens", sum(toks)))
    add(entry("8.5.2/mean-latency-ms", S2, "sum T / sum N: average latency per token", "0.5",
              "ms", calc.mean_latency_per_token(times, toks) / ms))
    add(entry("8.5.2/round2-latency-ms", S2, "the 5-token round alone: 1.5 ms / 5", "0.3",
              "ms/token", calc.mean_latency_per_token(times[1:], toks[1:]) / ms))
    add(entry("8.5.2/unweighted-mean-ms", S2, "wrong unweighted mean of per-round ratios", "0.9",
              "ms", calc.unweighted_round_latency(times, toks) / ms))

    en_a = _toy_expected_tokens(ch08.TOY_DRAFT_ALWAYS_A)
    en_b = _toy_expected_tokens(ch08.TOY_DRAFT_ALWAYS_B)
    add(entry("8.5.2/EN-AAAA", S2, "E[X] = 1 + a + ... + a^4, draft AAAA (a = 1/4)", "1.33",
              "tokens", en_a,
              note="a = sum_x min(p(x), q(x)) = 1/4 for p = (1/4, 3/4), q = always A; "
                   "E[X] = 1.3320."))
    add(entry("8.5.2/EN-BBBB", S2, "E[X], draft BBBB (a = 3/4)", "3.05", "tokens", en_b,
              note="a = 3/4 for a draft that always proposes B; E[X] = 3.0508."))

    positions = calc.verification_outcome(ch08.TOY_DRAFT_LEN, ch08.TOY_DRAFT_LEN)[0]
    add(entry("8.5.2/verify-positions", S2, "positions verified for a 4-token draft", "5",
              "positions", positions))
    extra = calc.verification_extra_flops(QWEN3_8B, positions, ch08.SHORT_PROMPT_TOKENS)
    add(entry("8.5.2/extra-verify-GFLOP", S2, "extra FLOPs of the 4 extra verification rows",
              "65", "GFLOP", extra / GFLOP,
              note="Verification rows count every read-once matrix incl. lm_head (D_w/2 = "
                   "7,568,405,504 params): 4 x 2 x 7.568e9 = 60.5 GFLOP, plus their causal "
                   "attention on the 2048-token context (5h+15 - (h+1) = 8,206 pairs x 589,824 "
                   "= 4.8 GFLOP): 65.4 GFLOP. (All 8.19e9 params without attention would give "
                   "65.5, layer params only 55.6; the same convention gives D's 2.56 TFLOP in "
                   "8.6.3.)"))
    mfu_b1 = calc.measured_prefill_mfu(QWEN3_8B, RTX_PRO_6000, 1, ch08.SHORT_PROMPT_TOKENS, 0,
                                       ch08.PREFILL_ROUND_S)
    add(entry("8.5.2/extra-verify-ms", S2, "time of the extra rows at 62% of BF16 peak", "0.2",
              "ms", calc.time_at_mfu(extra, RTX_PRO_6000, mfu_b1) / ms,
              note="62% is the measured batch-1 prefill MFU (2K prefill in 94.8 ms: 62.2%); "
                   "65.4 GFLOP / (0.622 x 503.8 TFLOP/s) = 0.21 ms."))
    add(entry("8.5.2/dflash-positions", S2, "DFlash: 7 draft tokens -> positions verified", "8",
              "positions", calc.verification_outcome(ch08.DFLASH_DRAFT_TOKENS,
                                                     ch08.DFLASH_DRAFT_TOKENS)[0]))

    # --- 8.5.2: per-token latency, crossover, index break-even, 256-token request ----------
    verify_s = ch08.ROUND_B1_S
    round_s = verify_s + ch08.DRAFT_QUERY_S
    add(entry("8.5.2/round-with-query-ms", S2, "verification round + 0.1 ms draft query",
              "26.36", "ms", round_s / ms))
    lat_a = calc.speculative_latency_per_token(verify_s, en_a, ch08.DRAFT_QUERY_S)
    lat_b = calc.speculative_latency_per_token(verify_s, en_b, ch08.DRAFT_QUERY_S)
    add(entry("8.5.2/latency-AAAA-ms", S2, "per-token latency AAAA: 26.36 / 1.33", "19.8", "ms",
              lat_a / ms))
    add(entry("8.5.2/latency-BBBB-ms", S2, "per-token latency BBBB: 26.36 / 3.05", "8.64", "ms",
              lat_b / ms))
    add(entry("8.5.2/crossover-AAAA-ms", S2, "largest draft query cost that still pays, AAAA",
              "8.7", "ms", calc.draft_cost_crossover(verify_s, en_a) / ms,
              note="E[X] x 26.26 - 26.26 = 0.332 x 26.26 = 8.72 ms (Figure 8-32)."))
    add(entry("8.5.2/crossover-BBBB-ms", S2, "largest draft query cost that still pays, BBBB",
              "53.9", "ms", calc.draft_cost_crossover(verify_s, en_b) / ms,
              note="2.0508 x 26.26 = 53.85 ms (Figure 8-32)."))
    add(entry("8.5.2/bbbb-saving-ms", S2, "saving per output token, 26.26 - 8.64", "17.6", "ms",
              (verify_s - lat_b) / ms))
    add(entry("8.5.2/index-break-even-tokens", S2, "tokens that pay back a 2 s index build",
              "114", "tokens", calc.prep_break_even_tokens(ch08.INDEX_BUILD_S, verify_s, lat_b),
              note="2 s / (26.26 - 8.6405 ms) = 113.5 tokens."))
    add(entry("8.5.2/plain-request-s", S2, "256 tokens of plain decode: 256 x 26.26 ms", "6.72",
              "s", calc.speculative_request_time(ch08.OUTPUT_TOKENS, verify_s, 0.0, 0)))
    exact = calc.speculative_request_time(ch08.OUTPUT_TOKENS, round_s, 0.75, ch08.TOY_DRAFT_LEN,
                                          prep_s=ch08.INDEX_BUILD_S)
    naive = calc.speculative_request_time(ch08.OUTPUT_TOKENS, round_s, 0.75, ch08.TOY_DRAFT_LEN,
                                          prep_s=ch08.INDEX_BUILD_S, exact_rounds=False)
    rounds = calc.speculative_expected_rounds(ch08.OUTPUT_TOKENS, 0.75, ch08.TOY_DRAFT_LEN)
    add(entry("8.5.2/spec-request-s", S2, "2 s index + BBBB rounds for 256 tokens", "4.22", "s",
              exact,
              note=f"Exact expected rounds until 256 tokens are out, the last round cut off "
                   f"(R(g) = 1 + sum_k P(N=k) R(g-k)): {rounds:.2f} rounds x 26.36 ms + 2 s = "
                   f"{exact:.3f} s. Dividing instead, 256 / E[X] = {256 / en_b:.2f} rounds gives "
                   f"{naive:.3f} s, which would print 4.21."))

    # --- 8.5.3: draft sources, serial vs parallel ------------------------------------------
    bw = _batch1_bandwidth()
    add(entry("8.5.3/batch1-read-GB", S3, "batch-1 2K round reads D_w + 2048 k", "15.44", "GB",
              calc.round_read_bytes(QWEN3_8B, 1, ch08.SHORT_PROMPT_TOKENS) / GB))
    add(entry("8.5.3/batch1-bandwidth-GBps", S3, "effective bandwidth: 15.44 GB in 26.26 ms",
              "588", "GB/s", bw / GB))
    add(entry("8.5.3/draft-weights-GiB", S3, "DFlash draft weights, 2.10 GB in GiB", "1.95",
              "GiB", ch08.DFLASH_DRAFT_WEIGHT_BYTES / GiB, tol=0.01,
              note="2.10 GB = 1.956 GiB, which would print 1.96. Both printed roundings hold only "
                   "for 2.095e9-2.099e9 B; the companion takes the stated 2.10 GB because it "
                   "reproduces the 3.57 ms forward pass (1.95 GiB = 2.094 GB would give 3.56 ms)."))
    fwd = calc.draft_forward_time(ch08.DFLASH_DRAFT_WEIGHT_BYTES, bw)
    add(entry("8.5.3/draft-forward-ms", S3, "one draft forward pass: 2.10 GB / 588 GB/s", "3.57",
              "ms", fwd / ms))
    serial = calc.draft_generation_time(fwd, 4, parallel=False)
    parallel = calc.draft_generation_time(fwd, 4, parallel=True)
    add(entry("8.5.3/serial-draft-ms", S3, "four draft tokens one at a time", "14.28", "ms",
              serial / ms, tol=0.01,
              note="The text multiplies the rounded 3.57 ms: 4 x 3.57 = 14.28; unrounded "
                   "4 x 3.5719 = 14.288 ms would print 14.29."))
    add(entry("8.5.3/parallel-draft-ms", S3, "whole draft in one parallel forward pass", "3.57",
              "ms", parallel / ms))
    add(entry("8.5.3/serial-latency-ms", S3, "serial: (14.28 + 26.26) / 3 per token", "13.5",
              "ms", calc.speculative_latency_per_token(verify_s, 3, serial) / ms))
    add(entry("8.5.3/parallel-latency-ms", S3, "parallel: (3.57 + 26.26) / 3 per token", "9.9",
              "ms", calc.speculative_latency_per_token(verify_s, 3, parallel) / ms))
    add(entry("8.5.3/parallel-latency-2tok-ms", S3, "parallel at 2 outputs: (3.57 + 26.26) / 2",
              "14.9", "ms", calc.speculative_latency_per_token(verify_s, 2, parallel) / ms))
    add(entry("8.5.3/draft-time-saved-ms", S3, "draft time saved by parallel drafting", "10.7",
              "ms", (serial - parallel) / ms))

    # --- 8.5.4: K7 / K15, Exercise 8-7's data ---------------------------------------------
    lat = ch08.DRAFT_LEN_LATENCY_S
    add(entry("8.5.4/K7-saving-ms", S4, "plain -> K7 saves 90.0 - 30.6", "59", "ms",
              (lat["plain"] - lat["K7"]) / ms,
              note="90.0 - 30.6 = 59.4 ms (footnote 23's 90.02 - 30.58 = 59.44)."))
    add(entry("8.5.4/K15-extra-saving-ms", S4, "K7 -> K15 saves 30.6 - 29.4", "1.2", "ms",
              (lat["K7"] - lat["K15"]) / ms,
              note="From the one-decimal medians the text prints; footnote 23's 30.58 - 29.43 "
                   "= 1.15 ms sits on the rounding boundary."))
    for name in ("K7", "K15"):
        printed = {"K7": "6", "K15": "14"}[name]
        add(entry(f"8.5.4/{name}-discarded", S4, f"{name} accepting one draft token: discarded",
                  printed, "tokens", calc.verification_outcome(ch08.DRAFT_LEN_OF[name], 1)[1]))
    add(entry("8.5.4/ex8-7-verify-ms", S4, "Exercise 8-7: verification round to one decimal",
              "26.3", "ms", verify_s / ms))
    add(entry("8.5.4/ex8-7-draft-ms", S4, "Exercise 8-7: one draft token to one decimal", "3.6",
              "ms", fwd / ms, note="The 3.57 ms DFlash forward pass of 8.5.3 (3.572 ms)."))
    return out
