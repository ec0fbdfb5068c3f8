"""Ledger: Chapter 8's opening and 8.1 (request lifecycle, memory budget, KV capacity, metrics)."""

from __future__ import annotations

from companion import calc
from companion.chapters import ch08
from companion.formulas.batching import token_emission_times
from companion.ledger import Entry, entry
from companion.specs import QWEN3_8B
from companion.units import GiB, KiB, MiB, ms


# the sections its entries lie in (or under): the ledger computes this module only for them
SECTIONS = ("8.1",)


def entries() -> list[Entry]:
    m = QWEN3_8B
    budget = calc.memory_budget(ch08.INSTANCE_MEM_BYTES, m.weight_bytes, ch08.KV_BUDGET_BYTES)
    short_p, short_g = ch08.CHAPTER_REQUEST_TYPES["Short conversation"]
    long_p, long_g = ch08.CHAPTER_REQUEST_TYPES["Long context"]
    short, long_ = calc.kv_capacity_table(m, ch08.KV_BUDGET_BYTES)
    k = calc.kv_bytes_per_token(m)

    times = token_emission_times(ch08.QUEUE_S, ch08.PREFILL_S, ch08.CLIENT_ITL_S, short_g)
    total_s = calc.request_time_s(times)
    stalled = token_emission_times(ch08.QUEUE_S, ch08.PREFILL_S, ch08.CLIENT_ITL_S, short_g,
                                   stall_s=ch08.PREFILL_S, stalled_interval=128)
    stalled_itl = max(calc.inter_token_intervals(stalled))

    return [
        # --- chapter opening (filed under 8.1) ---
        entry("8.1/weights-GiB", "8.1", "BF16 weights of Qwen3-8B", "15.3", "GiB",
              m.weight_bytes / GiB),
        entry("8.1/rest-GiB", "8.1", "32 GiB - 12 GiB KV - weights: activations, graph buffers",
              "4.7", "GiB", budget.slack_bytes / GiB),
        entry("8.1/short-alone-s", "8.1", "short request alone, arrival to last token", "6.95",
              "s", total_s),
        entry("8.1/deadline-margin-s", "8.1", "margin against the 7 s deadline", "0.05", "s",
              ch08.DEADLINE_S - total_s),

        # --- 8.1.1 ---
        entry("8.1.1/ttft-s", "8.1.1", "first token after arrival (0.1 queue + 0.096 prefill)",
              "0.196", "s", calc.ttft_s(times)),
        entry("8.1.1/intervals", "8.1.1", "output intervals of 256 tokens", "255", "intervals",
              len(calc.inter_token_intervals(times))),
        entry("8.1.1/request-time-s", "8.1.1", "0.1 + 0.096 + 255 x 0.0265", "6.95", "s",
              calc.lifecycle_request_time_s(ch08.QUEUE_S, ch08.PREFILL_S, ch08.CLIENT_ITL_S,
                                            short_g)),
        entry("8.1.1/stalled-interval-ms", "8.1.1", "interval with an inserted 0.096 s prefill",
              "123", "ms", stalled_itl / ms,
              # word for word the note of sim_scheduler's "8.1.1/sim-stalled-interval-ms":
              # the ledger shows the two in one row, and a note the row carries is shown once
              note="26.5 + 96 = 122.5 ms exactly (one decode interval plus the 0.096 s "
                   "prefill); the chapter rounds the half up to 123."),
        entry("8.1.1/stalled-total-s", "8.1.1", "total time with one inserted prefill", "7.05",
              "s", calc.request_time_s(stalled)),

        # --- 8.1.2 ---
        entry("8.1.2/kv-per-token-B", "8.1.2", "KV per token, 2 x 36 x 8 x 128 x 2", "147,456",
              "bytes", k),
        entry("8.1.2/kv-per-token-KiB", "8.1.2", "KV per token", "144", "KiB", k / KiB),
        entry("8.1.2/kv-2048-MiB", "8.1.2", "KV of a 2048-token input", "288", "MiB",
              calc.kv_bytes(m, short_p) / MiB),
        entry("8.1.2/kv-8192-MiB", "8.1.2", "KV of an 8192-token input", "1152", "MiB",
              calc.kv_bytes(m, long_p) / MiB),
        entry("8.1.2/long-request-GiB", "8.1.2", "KV added per long request", "1.125", "GiB",
              calc.kv_bytes(m, long_p) / GiB),
        entry("8.1.2/16-long-inputs-GiB", "8.1.2", "input KV of sixteen long requests", "18",
              "GiB", ch08.LONG_BATCH * calc.kv_bytes(m, long_p) / GiB),
        entry("8.1.2/short-computed-tokens", "8.1.2", "short request computes 2048 + 255",
              "2303", "tokens", short["computed_tokens"]),
        entry("8.1.2/long-computed-tokens", "8.1.2", "long request computes 8192 + 255", "8447",
              "tokens", long_["computed_tokens"]),
        entry("8.1.2/short-allocated-tokens", "8.1.2", "short request, 16-token blocks", "2304",
              "tokens", short["allocated_tokens"]),
        entry("8.1.2/long-allocated-tokens", "8.1.2", "long request, 16-token blocks", "8448",
              "tokens", long_["allocated_tokens"]),
        entry("8.1.2/table-short-prefill-MiB", "8.1.2", "table: short KV after prefill", "288",
              "MiB", short["prefill_kv_bytes"] / MiB),
        entry("8.1.2/table-long-prefill-MiB", "8.1.2", "table: long KV after prefill", "1152",
              "MiB", long_["prefill_kv_bytes"] / MiB),
        entry("8.1.2/table-short-final-MiB", "8.1.2", "table: short KV after 256 outputs", "324",
              "MiB", short["final_kv_bytes"] / MiB),
        entry("8.1.2/table-long-final-MiB", "8.1.2", "table: long KV after 256 outputs", "1188",
              "MiB", long_["final_kv_bytes"] / MiB),
        entry("8.1.2/table-short-fit", "8.1.2", "short requests in 12 GiB", "37", "requests",
              short["fit"]),
        entry("8.1.2/table-long-fit", "8.1.2", "long requests in 12 GiB", "10", "requests",
              long_["fit"]),
        entry("8.1.2/budget-MiB", "8.1.2", "12 GiB in the floor's numerator", "12288", "MiB",
              ch08.KV_BUDGET_BYTES / MiB),
        entry("8.1.2/short-fit-at-prefill", "8.1.2", "short requests if sized at prefill", "42",
              "requests", short["fit_if_sized_at_prefill"]),
        entry("8.1.2/short-overcommit-MiB", "8.1.2", "those 42 after 256 outputs", "13,608",
              "MiB", short["final_bytes_if_sized_at_prefill"] / MiB),
        entry("8.1.2/prefix-MiB", "8.1.2", "KV of the 6144-token shared prefix", "864", "MiB",
              calc.kv_bytes(m, ch08.SHARED_PREFIX_TOKENS) / MiB),
        entry("8.1.2/long-rest-MiB", "8.1.2", "KV of the rest of a long input (2048 tokens)",
              "288", "MiB", calc.kv_bytes(m, long_p - ch08.SHARED_PREFIX_TOKENS) / MiB),

        # --- 8.1.3 ---
        entry("8.1.3/ttft-s", "8.1.3", "TTFT of the 8.1.1 example", "0.196", "s",
              calc.ttft_s(times)),
        entry("8.1.3/sum-itl-s", "8.1.3", "255 output intervals in total", "6.76", "s",
              sum(calc.inter_token_intervals(times))),
        entry("8.1.3/throughput-b16", "8.1.3", "16 tokens per 27.44 ms round", "583", "tokens/s",
              calc.decode_tokens_per_s(16, ch08.ROUND_B16_S)),
        entry("8.1.3/throughput-b1", "8.1.3", "one token per 26.26 ms round", "38", "tokens/s",
              calc.decode_tokens_per_s(1, ch08.ROUND_B1_S)),
    ]
