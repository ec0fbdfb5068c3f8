"""Chapter 17 §9: nvidia-smi util versus SM share, MBU and MFU from measured rates."""

from __future__ import annotations

from companion import calc
from companion.chapters import ch17
from companion.ledger import Entry, entry
from companion.specs import H100_SXM, LLAMA_8B

S = "17.9"


# the sections its entries lie in (or under): the ledger computes this module only for them
SECTIONS = (S,)


def entries() -> list[Entry]:
    hw, m = H100_SXM, LLAMA_8B
    dec = calc.decode_utilization(m, hw, ch17.DECODE_TOK_PER_S)
    pre = calc.prefill_utilization(m, hw, ch17.PREFILL_TOK_PER_S)
    return [
        entry("17.9/sm-share", S, "actual compute in use <= 1/132", "0.8", "%",
              100 * calc.sm_share(ch17.ACTIVE_SMS, hw)),
        entry("17.9/decode-bytes-per-s", S, "bytes/s = 146 x 16e9", "2.34e12", "B/s",
              dec["bytes_per_s"]),
        entry("17.9/decode-mbu", S, "MBU = 2.34e12 / 3.35e12", "70", "%", 100 * dec["mbu"]),
        entry("17.9/decode-flops-per-s", S, "FLOP/s = 146 x 2 x 8e9", "2.34e12", "FLOP/s",
              dec["flops_per_s"]),
        entry("17.9/decode-mfu", S, "MFU = 2.34e12 / 989e12", "0.24", "%", 100 * dec["mfu"]),
        entry("17.9/headroom", S, "remaining headroom at most 1/0.7", "1.4", "x",
              dec["headroom"]),
        entry("17.9/prefill-flops-per-s", S, "FLOP/s = 20,000 x 2 x 8e9", "3.2e14", "FLOP/s",
              pre["flops_per_s"]),
        entry("17.9/prefill-mfu", S, "MFU = 3.2e14 / 989e12", "32", "%", 100 * pre["mfu"]),
    ]
