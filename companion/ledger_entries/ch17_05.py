"""Chapter 17 §5: PagedAttention: fragmentation, block waste, prefix sharing, what paging buys."""

from __future__ import annotations

from companion import calc
from companion.chapters import ch17
from companion.ledger import Entry, entry
from companion.specs import H100_SXM, LLAMA_8B
from companion.units import GB, MB, ms

S = "17.5"


# the sections its entries lie in (or under): the ledger computes this module only for them
SECTIONS = (S,)


def entries() -> list[Entry]:
    hw, m = H100_SXM, LLAMA_8B
    frag = calc.reservation_waste(m, ch17.CHAT_TURN_TOKENS)
    seq_a = calc.block_fill(ch17.SEQUENCE_A_TOKENS, ch17.BLOCK_TOKENS)
    waste = calc.paged_worst_waste(m, ch17.BLOCK_TOKENS)
    prefix = calc.prefix_sharing_bytes(m, ch17.PREFIX_USERS, ch17.PREFIX_TOKENS)
    # the chapter divides the KV space by the live bytes alone (no block rounding)
    gain = calc.paged_batch_gain(m, hw, block_tokens=1)
    naive, paged = gain["naive"], gain["paged"]
    return [
        entry("17.5/reservation-GB", S, "reservation per request = 8,192 x 131,072 B", "1.07",
              "GB", frag["reserved_bytes"] / GB),
        entry("17.5/chat-turn-MB", S, "a chat turn that uses 300 tokens = 300 x 131,072 B", "39",
              "MB", frag["used_bytes"] / MB),
        entry("17.5/internal-fragmentation", S, "internal fragmentation = 1 - 39 MB / 1.07 GB",
              "96", "%", 100 * frag["wasted_fraction"]),
        entry("17.5/seq-a-last-block", S, "sequence A: block 3 is 8/16 full", "8", "tokens",
              seq_a["last_block_tokens"]),
        entry("17.5/worst-waste-MB", S, "worst-case waste per sequence = 16 tokens x 131,072 B",
              "2", "MB", waste["bytes"] / MB,
              note="The true worst case is a last block holding one token: 15 empty slots x "
                   "131,072 B = 1.97 MB; the chapter's whole-block bound (16 x 131,072 B = "
                   "2.10 MB) also rounds to 2 MB."),
        entry("17.5/reserved-GB", S, "(vs ~1 GB reserved)", "1", "GB",
              frag["reserved_bytes"] / GB),
        entry("17.5/big-block-waste", S, "a 1,024-token block wastes up to 1,023 tokens",
              "1,023", "tokens", calc.paged_worst_waste(m, ch17.BIG_BLOCK_TOKENS)["tokens"]),
        entry("17.5/prefix-naive-GB", S, "naive: 100 x 2,000 x 131,072 B", "26.2", "GB",
              prefix["naive_bytes"] / GB),
        entry("17.5/prefix-paged-GB", S, "paged: 1 x 2,000 x 131,072 B", "0.26", "GB",
              prefix["shared_bytes"] / GB),
        entry("17.5/live-kv-MB", S, "live KV per sequence = 600 x 131,072 B", "78.6", "MB",
              gain["live_kv_bytes"] / MB),
        entry("17.5/kv-space-GB", S, "same 60 GB of KV space", "60", "GB",
              gain["kv_budget_bytes"] / GB),
        entry("17.5/naive-batch", S, "naive batch = 60 GB / 1.05 GB reservation", "57",
              "sequences", naive["batch"],
              note="The naive batch reserves the §4 8,000-token figure (1.05 GB). With §5's own "
                   "8,192-token reservation (1.07 GB) it would be floor(60 / 1.0737) = 55."),
        entry("17.5/paged-batch", S, "paged batch = 60 GB / 78.6 MB actual", "760", "sequences",
              paged["batch"], sig=2,
              note="floor(60e9 / 78.6432e6) = 762, printed as ~760 (two significant figures)."),
        entry("17.5/batch-gain", S, "13x the batch", "13", "x", gain["batch_gain"]),
        entry("17.5/naive-traffic-GB", S, "naive: 16 + 57 x 0.0786", "20.5", "GB",
              naive["step_bytes"] / GB),
        entry("17.5/naive-step-ms", S, "naive: 20.5 / 3,350 GB/ms", "6.1", "ms",
              naive["step_s"] / ms),
        entry("17.5/naive-tok-s", S, "naive: 57 / 0.0061", "9,300", "tok/s",
              naive["tokens_per_s"], sig=2,
              note="57 / 6.114 ms = 9,323 tok/s (the chapter's 57 / 0.0061 = 9,344); both "
                   "~9,300 at two significant figures."),
        entry("17.5/paged-traffic-GB", S, "paged: 16 + 760 x 0.0786", "75.7", "GB",
              paged["step_bytes"] / GB, tol=0.25,
              note="Rounded intermediate: the chapter multiplies the rounded batch 760 "
                   "(16 + 760 x 0.0786 = 75.7 GB); with the floored 762 it is 75.9 GB."),
        entry("17.5/paged-step-ms", S, "paged: 75.7 / 3,350 GB/ms", "22.6", "ms",
              paged["step_s"] / ms, tol=0.1,
              note="From the rounded batch 760: 75.7 / 3,350 = 22.6 ms; with 762 sequences, "
                   "75.9 GB -> 22.7 ms."),
        entry("17.5/paged-tok-s", S, "paged: 760 / 0.0226", "33,600", "tok/s",
              paged["tokens_per_s"], sig=3,
              note="762 / 22.66 ms = 33,621 tok/s (760 / 0.0226 = 33,628); ~33,600 at three "
                   "significant figures."),
        entry("17.5/throughput-gain", S, "3.6x the throughput from the same hardware", "3.6",
              "x", gain["throughput_gain"]),
        entry("17.5/bw-GB-per-ms", S, "20.5 / 3,350 GB/ms = 6.1 ms", "3,350", "GB/ms",
              hw.mem_bw_bytes_per_s / GB * ms,
              note="Erratum (unit), as in §4: 3.35 TB/s is 3,350 GB/s = 3.35 GB/ms; the "
                   "quotients (6.1 ms, 22.6 ms) are right for GB/s."),
    ]
