"""Chapter 17 §7: tensor-parallel communication, the pipeline bubble, 405B placement."""

from __future__ import annotations

from companion import calc
from companion.chapters import ch08, ch17
from companion.ledger import Entry, entry
from companion.specs import H100_SXM, LLAMA_70B, LLAMA_405B
from companion.units import GB, KiB, MiB, ms, us

S = "17.7"


# the sections its entries lie in (or under): the ledger computes this module only for them
SECTIONS = (S,)


def entries() -> list[Entry]:
    hw, m70, m405 = H100_SXM, LLAMA_70B, LLAMA_405B
    traffic = calc.tp_allreduce_traffic(m70, ch17.TP)
    nvlink = calc.tp_decode_step(m70, hw, ch17.TP)
    # a ring all-reduce sends each direction at once: NVLink's one-way 450 GB/s, as in 17.8
    one_way = calc.tp_decode_step(m70, hw, ch17.TP,
                                  link_bytes_per_s=calc.nvlink_one_way_bytes_per_s(hw))
    pcie = calc.tp_decode_step(m70, hw, ch17.TP,
                               collective_latency_s=ch17.COLLECTIVE_LATENCY_PCIE_S,
                               link_bytes_per_s=ch08.PCIE_GEN5_X16_BYTES_PER_S)
    pp16, pp64 = (calc.pp_stages(m70, ch17.PP_STAGES, mb) for mb in ch17.PP_MICROBATCHES)
    layout = calc.parallel_layout(m405, hw)
    kb = "KB (KiB)"
    return [
        entry("17.7/activation-KB", S, "activation per token = 8,192 x 2 B", "16", kb,
              traffic["activation_bytes"] / KiB,
              note="'KB' is KiB here: 16,384 B."),
        entry("17.7/ring-KB", S, "ring all-reduce traffic per GPU ~ 2(p-1)/p x 16 KB", "24", kb,
              traffic["ring_bytes"] / KiB),
        entry("17.7/collectives", S, "collectives per token = 2 x 80 layers", "160",
              "collectives", traffic["collectives"]),
        entry("17.7/bytes-per-token-MB", S, "bytes per token per GPU = 160 x 24 KB", "3.8",
              "MB (MiB)", traffic["bytes_per_token"] / MiB,
              note="Units: the chapter's 'KB' is KiB here, and so is its 'MB': 160 x 24 KiB = "
                   "3,840 KiB = 3.75 MiB, printed 3.8. In decimal units the same bytes are "
                   "3,932,160 B = 3.93 MB."),
        entry("17.7/wire-us", S, "wire time on NVLink = 3.8e6 / 900e9", "4", "µs",
              one_way["wire_s"] / us,
              note="Erratum (both directions counted). H100 NVLink's 900 GB/s adds the two "
                   "directions; a ring all-reduce sends and receives at once, so each direction "
                   "carries its bytes at 450 GB/s and the wire time is twice the printed one "
                   f"({one_way['wire_s'] / us:.1f} us; {nvlink['wire_s'] / us:.1f} us is the "
                   "printed reading). Still trivial beside the 0.8 ms latency floor."),
        entry("17.7/latency-floor-ms", S, "latency floor ~ 160 x 5 µs", "0.8", "ms",
              nvlink["latency_s"] / ms),
        entry("17.7/weights-read-ms", S, "decode step at TP = 4: weights 35 GB / 3.35 TB/s",
              "10.4", "ms", nvlink["read_s"] / ms),
        entry("17.7/nvlink-overhead", S, "overhead on NVLink ~ 8%", "8", "%",
              100 * nvlink["overhead"]),
        entry("17.7/pcie-comm-ms", S, "same 160 collectives over PCIe (~25 µs each)", "4", "ms",
              pcie["comm_s"] / ms),
        entry("17.7/pcie-overhead", S, "~40% overhead over PCIe", "40", "%",
              100 * pcie["overhead"], sig=1,
              note="4 ms / 10.45 ms = 38% (38.9% with the 61 us of wire time); ~40% to one "
                   "significant figure."),
        entry("17.7/tp4-step-ms", S, "70B, batch 1, TP = 4: 10.4 + 0.8 ms", "11.2", "ms",
              one_way["step_s"] / ms, tol=0.06,
              note="10.448 + 0.800 = 11.248 ms rounds to 11.2; the companion also charges the "
                   f"wire time, one way at 450 GB/s ({one_way['wire_s'] / us:.1f} us, "
                   f"{one_way['step_s'] / ms:.3f} ms), which tips the last digit."),
        entry("17.7/tp4-tok-s", S, "decode ceiling ~ 90 tok/s", "90", "tok/s",
              nvlink["tokens_per_s"], sig=1,
              note="1 / 11.25 ms = 88.9 tok/s, printed as ~90."),
        entry("17.7/layers-per-stage", S, "80 layers at p = 4 is 20 layers per stage", "20",
              "layers", pp16["layers_per_stage"]),
        entry("17.7/stage-boundaries", S, "three boundaries total", "3", "boundaries",
              pp16["boundaries"]),
        entry("17.7/bubble-slots-16", S, "p = 4, m = 16: 3 / 19", "19", "stage-steps",
              pp16["total_slots"]),
        entry("17.7/bubble-16", S, "p = 4, m = 16: 15.8% of stage-time idle", "15.8", "%",
              100 * pp16["bubble"]),
        entry("17.7/bubble-slots-64", S, "p = 4, m = 64: 3 / 67", "67", "stage-steps",
              pp64["total_slots"]),
        entry("17.7/bubble-64", S, "p = 4, m = 64: 4.5%", "4.5", "%", 100 * pp64["bubble"]),
        entry("17.7/405b-weights-GB", S, "405B model, BF16: 405e9 x 2 B", "810", "GB",
              m405.weight_bytes / GB),
        entry("17.7/405b-tp8-GB", S, "one node, TP = 8: 810 / 8 per GPU", "101", "GB",
              calc.weights_per_gpu_bytes(m405, ch17.NODE_TP) / GB),
        entry("17.7/405b-gpus", S, "TP = 8 x PP = 2 (16 GPUs)", "16", "GPUs", layout["gpus"]),
        entry("17.7/405b-tp8pp2-GB", S, "810 / 16 ~ 51 GB per GPU -> fits", "51", "GB",
              layout["weight_bytes_per_gpu"] / GB),
        entry("17.7/figure-layers-per-stage", S,
              "figure: PP stage 1 = layers 1-40, stage 2 = layers 41-80", "40", "layers",
              calc.pp_stages(m405, ch17.FIGURE_PP_STAGES, 1)["layers_per_stage"],
              note="The figure illustrates the 405B TP8 x PP2 layout but labels an 80-layer "
                   "stack (the 70B's); Llama-3.1-405B has 126 layers (public config, not stated "
                   "in the chapter), so each stage holds 63."),
    ]
