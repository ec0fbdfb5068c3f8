"""Chapter 17 §3: the request budget and head-of-line blocking."""

from __future__ import annotations

from companion import calc
from companion.chapters import ch17
from companion.ledger import Entry, entry
from companion.specs import H100_SXM, LLAMA_8B
from companion.units import ms

S = "17.3"


# the sections its entries lie in (or under): the ledger computes this module only for them
SECTIONS = (S,)


def entries() -> list[Entry]:
    hw, m = H100_SXM, LLAMA_8B
    ttft_s = calc.prefill_compute_s(m, hw, ch17.PROMPT_TOKENS)
    budget = calc.request_budget(ttft_s, ch17.OUTPUT_TOKENS, ch17.SMOOTH_ITL_S)
    stall = calc.head_of_line_stall(m, hw, ch17.LONG_CONTEXT_TOKENS, ch17.SMOOTH_ITL_S)
    naive_step_s = calc.paged_batch_gain(m, hw, block_tokens=1)["naive"]["step_s"]
    decode_fraction = calc.roofline_point(calc.decode_intensity(m), hw)["fraction_of_peak"]
    return [
        entry("17.3/ttft-ms", S, "2,048-token prompt prefills in ~66 ms (TTFT)", "66", "ms",
              ttft_s / ms),
        entry("17.3/itl-ms", S, "decode at a healthy batch runs a step every ~6 ms (from §5)",
              "6", "ms", naive_step_s / ms,
              note="§5's step for 57 sequences of 600 live tokens: 20.5 GB / 3.35 TB/s = 6.1 ms. "
                   "§3's budget then uses 6 ms as its input."),
        entry("17.3/decode-ms", S, "decode, 250 output tokens = 250 x 6 ms", "1,500", "ms",
              budget["decode_s"] / ms),
        entry("17.3/total-s", S, "total ~ 1.57 s", "1.57", "s", budget["total_s"]),
        entry("17.3/total-ms", S, "decode share denominator 1,566 ms", "1,566", "ms",
              budget["total_s"] / ms),
        entry("17.3/decode-share", S, "decode share = 1,500 / 1,566", "96", "%",
              100 * budget["decode_share"]),
        entry("17.3/prefill-share", S, "shortening the prompt only attacks the 4%", "4", "%",
              100 * budget["prefill_share"]),
        entry("17.3/decode-fraction-of-peak", S, "decode runs at 0.3% of the chip's arithmetic",
              "0.3", "%", 100 * decode_fraction),
        entry("17.3/hol-prefill-flops", S, "prefill FLOPs = 2 x 8e9 x 8,000", "128e12", "FLOP",
              stall["prefill_flops"]),
        entry("17.3/hol-prefill-ms", S, "prefill time = 128e12 / (0.5 x 989e12)", "259", "ms",
              stall["stall_s"] / ms),
        entry("17.3/hol-stall-ms", S, "every in-flight decode stalls for ~260 ms", "260", "ms",
              stall["stall_s"] / ms, sig=2,
              note="259 ms rounded to two significant figures."),
        entry("17.3/hol-worst-itl-x", S, "worst ITL ~ 43x baseline", "43", "x",
              stall["worst_itl_over_step"]),
        entry("17.3/quarter-second", S, "a quarter-second freeze", "0.25", "s", stall["stall_s"],
              tol=0.01, note="'A quarter-second' for the 0.259 s stall."),
    ]
