"""Chapter 17 §1: the memory hierarchy, the 295 ratio, the full-HBM sweep."""

from __future__ import annotations

import math

from companion import calc
from companion.ledger import Entry, entry
from companion.specs import H100_SXM, LLAMA_70B
from companion.units import ms

S = "17.1"


# the sections its entries lie in (or under): the ledger computes this module only for them
SECTIONS = (S,)


def entries() -> list[Entry]:
    hw = H100_SXM
    ratios = calc.bandwidth_ratios(hw)
    sweep_s = calc.memory_sweep_s(hw)
    sram_bytes = next(r for r in calc.memory_pyramid(hw) if r["key"] == "l2")["capacity_bytes"]
    return [
        entry("17.1/sram-orders-too-small", S,
              "SRAM is four orders of magnitude too small to hold a model", "4",
              "orders of magnitude", math.log10(LLAMA_70B.weight_bytes / sram_bytes),
              note="Loose. Against the ~50 MB L2 the chapter names, the 70B's 140 GB is 2,800x "
                   "(3.4 orders) and the 8B's 16 GB is 320x (2.5 orders); even all 80 GB of HBM "
                   "is 1,600x (3.2). Four orders needs per-SM SRAM (the 256 KiB of L1/shared "
                   "memory per SM in NVIDIA's H100 whitepaper vs 16 GB is 6.1e4, 4.8 orders), "
                   "which the chapter does not state. Value: log10(140 GB / 50 MB)."),
        entry("17.1/hbm-over-nvlink", S, "NVLink is 3.7x slower than HBM", "3.7", "x",
              ratios["hbm_over_nvlink"]),
        entry("17.1/nvlink-over-pcie", S, "NVLink is 14x faster than PCIe", "14", "x",
              calc.nvlink_one_way_bytes_per_s(hw) / hw.host_link_bytes_per_s,
              note="Erratum: the 14x divides NVLink's 900 GB/s, which adds both directions, by "
                   "PCIe's 64 GB/s, which counts one. Like for like (450 against 64 GB/s one "
                   "way, or 900 against 128 GB/s both ways) NVLink is 7.0x faster. The "
                   "placement rule stands: tensor parallelism stays on NVLink. Value: one "
                   "direction each."),
        entry("17.1/ridge", S, "989e12 / 3.35e12 = 295 FLOPs per byte", "295", "FLOP/byte",
              calc.ridge_point(hw)),
        entry("17.1/hbm-sweep-ms", S, "80 GB / 3.35 TB/s = 24 ms", "24", "ms", sweep_s / ms),
        entry("17.1/sweeps-per-s", S, "capped at ~40 full-memory steps per second", "40",
              "steps/s", 1.0 / sweep_s, sig=1,
              note="1 / 23.9 ms = 41.9 steps/s (1 / 24 ms = 41.7); the chapter rounds to one "
                   "significant figure, ~40."),
    ]
