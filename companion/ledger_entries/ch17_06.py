"""Chapter 17 §6: static batching utilization and chunked prefill's ITL/TTFT trade."""

from __future__ import annotations

from companion import calc
from companion.chapters import ch17
from companion.ledger import Entry, entry
from companion.specs import H100_SXM, LLAMA_8B
from companion.units import ms

S = "17.6"


# the sections its entries lie in (or under): the ledger computes this module only for them
SECTIONS = (S,)


def entries() -> list[Entry]:
    hw, m = H100_SXM, LLAMA_8B
    static = calc.static_batch_slot_steps(ch17.STATIC_OUTPUT_LENGTHS)
    # the decode step co-scheduled with each chunk is §5's 6.1 ms (57 sequences, 600 tokens)
    step_s = calc.paged_batch_gain(m, hw, block_tokens=1)["naive"]["step_s"]
    trade = calc.chunked_prefill_trade(m, hw, ch17.LONG_CONTEXT_TOKENS, ch17.CHUNK_TOKENS, step_s)
    return [
        entry("17.6/static-run", S, "slot-steps run = 8 x 800", "6,400", "slot-steps",
              static["run"]),
        entry("17.6/static-useful", S, "slot-steps useful = 100 + 200 + ... + 800", "3,600",
              "slot-steps", static["useful"]),
        entry("17.6/static-utilization", S, "utilization = 3,600 / 6,400", "56", "%",
              100 * static["utilization"]),
        entry("17.6/chunks", S, "8,000-token prompt, 512-token chunks", "16", "chunks",
              trade["chunks"]),
        entry("17.6/chunk-ms", S, "chunk compute = 2 x 8e9 x 512 / (0.5 x 989e12)", "16.6", "ms",
              trade["chunk_s"] / ms),
        entry("17.6/decode-step-ms", S, "decode step co-scheduled with each chunk (57 sequences)",
              "6.1", "ms",
              step_s / ms),
        entry("17.6/iteration-ms", S, "iteration ~ 23 ms", "23", "ms", trade["iteration_s"] / ms),
        entry("17.6/itl-improvement", S, "worst ITL 260 ms -> ~23 ms (11x better)", "11", "x",
              trade["itl_improvement"]),
        entry("17.6/ttft-ms", S, "TTFT for the long prompt: 16 chunks x 23 ms", "370", "ms",
              trade["ttft_s"] / ms, tol=10,
              note="Rounded intermediate: 16 x 23 ms = 368 ~ 370; with the unrounded 22.68 ms "
                   "iteration it is 363 ms (and 357 ms if the last, 320-token chunk is charged "
                   "its own size)."),
        entry("17.6/ttft-increase", S, "~370 ms vs ~260 ms dedicated (+40%)", "40", "%",
              100 * trade["ttft_increase"]),
    ]
