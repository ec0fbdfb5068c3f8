"""Chapter 17 §4: KV sizing, the 70B's fit, max concurrency, attention variants, step time
as the context grows."""

from __future__ import annotations

from companion import calc
from companion.chapters import ch17
from companion.ledger import Entry, entry
from companion.specs import H100_SXM, LLAMA_8B, LLAMA_70B
from companion.units import GB, KiB, MB, ms

S = "17.4"


def _context_entries(m, hw) -> list[Entry]:
    printed = {  # tokens: (KV GB, step GB, ms, tok/s) as printed
        1_000: ("0.13", "16.1", "4.8", "208"),
        10_000: ("1.3", "17.3", "5.2", "193"),
        100_000: ("13.1", "29.1", "8.7", "115"),
    }
    out = []
    for L in ch17.CONTEXT_ROWS:
        row = calc.decode_vs_context(m, hw, L)
        kv_p, step_p, ms_p, rate_p = printed[L]
        out += [
            entry(f"17.4/ctx{L}-kv-GB", S, f"{L:,} tokens: live KV", kv_p, "GB",
                  row["kv_bytes"] / GB),
            entry(f"17.4/ctx{L}-step-GB", S, f"{L:,} tokens: weights + KV", step_p, "GB",
                  row["step_bytes"] / GB),
            entry(f"17.4/ctx{L}-step-ms", S, f"{L:,} tokens: step time", ms_p, "ms",
                  row["step_s"] / ms),
        ]
        if L == 10_000:
            out.append(entry(f"17.4/ctx{L}-tok-s", S, f"{L:,} tokens: decode rate", rate_p,
                             "tok/s", row["tokens_per_s"], tol=1.0,
                             note="1 / 5.167 ms = 193.5 tok/s, which rounds to 194 (17.3 GB / "
                                  "3.35 TB/s = 5.164 ms gives 193.6); the chapter truncates "
                                  "to 193."))
        else:
            out.append(entry(f"17.4/ctx{L}-tok-s", S, f"{L:,} tokens: decode rate", rate_p,
                             "tok/s", row["tokens_per_s"]))
    return out


# the sections its entries lie in (or under): the ledger computes this module only for them
SECTIONS = (S,)


def entries() -> list[Entry]:
    hw, m8, m70 = H100_SXM, LLAMA_8B, LLAMA_70B
    L = ch17.LONG_CONTEXT_TOKENS
    k70 = calc.kv_bytes_per_token(m70)
    k8 = calc.kv_bytes_per_token(m8)
    seq70 = calc.kv_bytes(m70, L, block_tokens=1)
    tp4 = calc.tp_kv_capacity(m70, hw, tp=ch17.TP)
    one70 = calc.tp_kv_capacity(m70, hw)
    one8 = calc.tp_kv_capacity(m8, hw)
    variants = {r["attention"]: r for r in calc.attention_variants(m70,
                                                                   cache_bytes=ch17.CACHE_BYTES)}
    longest = calc.kv_by_context(m70, [ch17.LONGEST_CONTEXT_TOKENS], hw)[0]
    crossover = calc.kv_weight_crossover_tokens(m8)
    at_crossover = calc.decode_vs_context(m8, hw, round(crossover))
    ch00_s = calc.memory_sweep_s(hw, calc.kv_bytes(m70, ch17.CH00_CONTEXT_TOKENS, block_tokens=1))
    kb = "KB (KiB)"
    return [
        entry("17.4/70b-kv-per-token-B", S, "70B: 2 x 80 x 8 x 128 x 2", "327,680", "B", k70),
        entry("17.4/70b-kv-per-token-KB", S, "70B KV per token ~ 320 KB", "320", kb, k70 / KiB,
              note="Chapter 17's 'KB' for per-token sizes is KiB: 327,680 B / 1,024 = 320."),
        entry("17.4/70b-kv-8k-GB", S, "70B 8K sequence = 327,680 x 8,000", "2.62", "GB",
              seq70 / GB),
        entry("17.4/70b-third-MB", S, "a third of a megabyte per token", "0.33", "MB",
              k70 / MB),
        entry("17.4/70b-two-and-a-half-GB", S, "two and a half gigabytes per long chat", "2.5",
              "GB", seq70 / GB, tol=0.15,
              note="'Two and a half gigabytes' loosely rounds the 2.62 GB computed just above."),
        entry("17.4/128k-over-half-H100", S,
              "a single 128K-context conversation uses more than half an H100", "0.5",
              "of 80 GB", longest["fraction_of_memory"],
              note="'More than half': 128,000 x 327,680 B = 41.9 GB of 80 GB = 0.52 (0.54 if "
                   "128K means 131,072 tokens). The chapter's KV-by-context table is missing "
                   "from our copy; calc.kv_by_context re-derives it."),
        entry("17.4/70b-weights-GB", S, "weights = 70e9 x 2 B", "140", "GB",
              m70.weight_bytes / GB),
        entry("17.4/70b-over-card", S, "the weights alone are 1.75x the card", "1.75", "x",
              one70["weights_over_memory"]),
        entry("17.4/tp4-weights-GB", S, "at TP = 4 the weights shard to 35 GB per GPU", "35",
              "GB", tp4["weight_bytes_per_gpu"] / GB),
        entry("17.4/tp4-kv-heads", S, "8 KV heads / 4 GPUs = 2 per GPU", "2", "heads",
              tp4["kv_heads_per_gpu"]),
        entry("17.4/tp4-free-GB", S, "80 - 35 (weights) - 4 (reserve) = 41 GB for KV", "41",
              "GB", tp4["free_kv_bytes_per_gpu"] / GB),
        entry("17.4/tp4-aggregate-GB", S, "aggregate: 4 x 41", "164", "GB",
              tp4["free_kv_bytes"] / GB),
        entry("17.4/tp4-sequences", S, "concurrent 8K sequences ~ 164 / 2.62", "62", "sequences",
              tp4["max_sequences"],
              note="A capacity, so floored: 164 / 2.62 = 62.6 -> 62."),
        entry("17.4/8b-kv-per-token-B", S, "8B: 2 x 32 x 8 x 128 x 2", "131,072", "B", k8),
        entry("17.4/8b-kv-per-token-KB", S, "8B KV per token = 128 KB", "128", kb, k8 / KiB),
        entry("17.4/8b-kv-8k-GB", S, "per-seq KV at 8K = 131,072 x 8,000", "1.05", "GB",
              calc.kv_bytes(m8, L, block_tokens=1) / GB),
        entry("17.4/8b-weights-GB", S, "weights = 8e9 x 2 B", "16", "GB", m8.weight_bytes / GB),
        entry("17.4/8b-free-GB", S, "free for KV = 80 - 16 - 4", "60", "GB",
              one8["free_kv_bytes"] / GB),
        entry("17.4/8b-max-concurrent", S, "max concurrent = 60 / 1.05", "57", "sequences",
              one8["max_sequences"]),
        entry("17.4/gqa-reduction", S, "GQA is an 8x cache reduction (64 vs 8 KV heads)", "8",
              "x", variants["GQA"]["reduction_vs_mha"]),
        entry("17.4/mha-sequences", S, "70B with MHA holds three 8K conversations per 80 GB",
              "3", "sequences", variants["MHA"]["sequences"],
              note="Printed in words ('three'): floor(80 GB / 20.97 GB) = 3."),
        entry("17.4/gqa-sequences", S, "with GQA it holds twenty-four", "24", "sequences",
              variants["GQA"]["sequences"],
              note="Erratum. 80 GB / 2.62 GB = 30.5, so GQA holds 30 sequences per 80 GB of "
                   "cache; the chapter's 'twenty-four' is the floored MHA count times 8 "
                   "(3 x 8), which loses the MHA remainder (80 / 20.97 = 3.8). 24 and 3 would "
                   "both come out of 64 GB of cache (64 / 2.62 = 24.4, 64 / 20.97 = 3.05), a "
                   "figure the chapter never states."),
        entry("17.4/fp8-kv-gain", S, "FP8 KV halves dtype_bytes: another 2x", "2", "x",
              calc.kv_bytes_per_token(m70, 2) / calc.kv_bytes_per_token(m70, 1)),
        entry("17.4/ch00-cache-only-ceiling", S, "chapter 00 §4: ~102 tok/s counting only the "
              "cache (100K context)", "102", "tok/s", 1.0 / ch00_s,
              note="Reproduces with the 70B shape's cache at 100,000 tokens: 32.8 GB / 3.35 TB/s "
                   "= 9.78 ms -> 102 tok/s. The 8B's cache at 100K would give 13.1 GB -> "
                   "255 tok/s, so the reconciliation sets the 8B's weights-only 209 against "
                   "the 70B's cache-only 102."),
        *_context_entries(m8, hw),
        entry("17.4/bw-GB-per-ms", S, "16.1 / 3,350 GB/ms = 4.8 ms", "3,350", "GB/ms",
              hw.mem_bw_bytes_per_s / GB * ms,
              note="Erratum (unit). 3.35 TB/s is 3,350 GB/s = 3.35 GB/ms; 16.1 GB / 3,350 GB/s "
                   "= 4.8 ms, so the divisor is right and only the unit 'GB/ms' is wrong."),
        entry("17.4/crossover-tokens", S, "16e9 bytes / 131,072 bytes per token ~ 122,000",
              "122,000", "tokens", crossover, sig=3,
              note="16e9 / 131,072 = 122,070 tokens, printed to three significant figures."),
        entry("17.4/crossover-doubles", S, "one 122K-token context doubles the cost of every "
              "token", "2", "x", at_crossover["step_s"] / calc.decode_time_split(m8, hw)["step_s"]),
    ]
