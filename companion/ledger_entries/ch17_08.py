"""Chapter 17 §8: disaggregated pool sizing, KV transfer, KV-aware routing."""

from __future__ import annotations

from companion import calc
from companion.chapters import ch17
from companion.ledger import Entry, entry
from companion.specs import H100_SXM, LLAMA_8B, LLAMA_70B
from companion.units import GB, ms

S = "17.8"


# the sections its entries lie in (or under): the ledger computes this module only for them
SECTIONS = (S,)


def entries() -> list[Entry]:
    hw, m8, m70 = H100_SXM, LLAMA_8B, LLAMA_70B
    pools = calc.disaggregated_pools(ch17.REQUEST_RATE_PER_S, ch17.MEAN_PROMPT_TOKENS,
                                     ch17.MEAN_OUTPUT_TOKENS)
    L = ch17.LONG_CONTEXT_TOKENS
    route = calc.kv_routing_ttft(m8, hw, ch17.ROUTING_TURN)
    return [
        entry("17.8/prompt-demand", S, "prompt demand = 100 x 2,000", "200,000", "tok/s",
              pools["prompt_tok_per_s"]),
        entry("17.8/prefill-groups", S, "prefill capacity ~ 10,000 tok/s per group", "20",
              "groups", pools["prefill_groups"]),
        entry("17.8/output-demand", S, "output demand = 100 x 250", "25,000", "tok/s",
              pools["output_tok_per_s"]),
        entry("17.8/decode-groups", S, "decode capacity ~ 2,500 tok/s per group", "10", "groups",
              pools["decode_groups"]),
        entry("17.8/pool-ratio", S, "a 2:1 pool ratio for this mix", "2", "prefill : decode",
              pools["prefill_to_decode"]),
        entry("17.8/kv-to-ship-GB", S, "one 8K-token 70B request's KV to ship", "2.62", "GB",
              calc.kv_bytes(m70, L, block_tokens=1) / GB),
        # a hop runs one way: the companion's value is the one-way time, not 2.62 / 900
        entry("17.8/kv-nvlink-ms", S, "over NVLink 900 GB/s: 2.62 / 900", "3", "ms",
              calc.kv_transfer_s(m70, L, calc.nvlink_one_way_bytes_per_s(hw)) / ms,
              note="Erratum (both directions counted). H100 NVLink's 900 GB/s adds the two "
                   "directions; a KV hop goes one way, at 450 GB/s, so the ship takes twice "
                   "the printed time (2.62 GB / 450 GB/s = 5.8 ms; 2.62 / 900 = 2.9 ms is the "
                   "printed reading). Still far below RDMA's."),
        entry("17.8/kv-rdma-ms", S, "over 400 Gb RDMA 50 GB/s: 2.62 / 50", "52", "ms",
              calc.kv_transfer_s(m70, L, ch17.RDMA_400G_BYTES_PER_S) / ms),
        entry("17.8/turn20-context", S, "turn 20 context = 6,000 + 19 x 1,200", "28,800",
              "tokens", route["context_tokens"]),
        entry("17.8/cold-TFLOP", S, "cold worker: prefill 28,800 tokens = 2 x 8e9 x 28,800",
              "461", "TFLOP", route["cold_flops"] / 1e12),
        entry("17.8/cold-ms", S, "cold at 50% of peak = 461e12 / 494e12", "932", "ms",
              route["cold_s"] / ms),
        entry("17.8/warm-TFLOP", S, "warm worker: prefill 1,200 new = 2 x 8e9 x 1,200", "19.2",
              "TFLOP", route["warm_flops"] / 1e12),
        entry("17.8/warm-ms", S, "warm at 50% of peak = 19.2e12 / 494e12", "39", "ms",
              route["warm_s"] / ms),
        entry("17.8/routing-gain", S, "routing hit vs miss ~ 24x on TTFT", "24", "x",
              route["speedup"]),
    ]
