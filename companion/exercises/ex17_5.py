"""Exercise 17-5: the TP latency floor (17 §7)."""

from __future__ import annotations

from companion import calc, specs, units
from companion.chapters import ch17
from companion.exercises import common_ch17
from companion.exercises.variants import ms, pct, variant
from companion.grading import Exercise, Part


_LAYOUTS = [(specs.LLAMA_70B, specs.H100_SXM, 2), (specs.LLAMA_70B, specs.H100_SXM, 8),
            (specs.LLAMA_70B, specs.H200_SXM, 2), (specs.LLAMA_70B, specs.A100_80GB, 4),
            (specs.LLAMA_70B, specs.A100_80GB, 8), (specs.LLAMA_405B, specs.H200_SXM, 8),
            (specs.LLAMA_8B, specs.H100_SXM, 2), (common_ch17.SHAPE_14B, specs.A100_80GB, 2)]

_PCIE_GENERATION = {specs.H100_SXM.name: "Gen5 x16", specs.H200_SXM.name: "Gen5 x16",
                    specs.A100_80GB.name: "Gen4 x16"}


def _params(seed: int) -> dict:
    c = variant("17-5", seed,
                dict(layout=(specs.LLAMA_70B, specs.H100_SXM, ch17.TP),
                     nvlink_lat=ch17.COLLECTIVE_LATENCY_NVLINK_S,
                     pcie_lat=ch17.COLLECTIVE_LATENCY_PCIE_S),
                dict(layout=_LAYOUTS, nvlink_lat=(3e-6, 5e-6, 8e-6),
                     pcie_lat=(15e-6, 25e-6, 40e-6)))
    m, hw, tp = c["layout"]
    return dict(model=m, hardware=hw, tp=tp, hidden_size=m.hidden_size, n_layers=m.n_layers,
                weight_bytes=m.weight_bytes, bytes_per_value=2,
                # a ring sends one way: the data sheet's NVLink figure adds both directions
                nvlink_bytes_per_s=calc.nvlink_one_way_bytes_per_s(hw),
                nvlink_latency_s=c["nvlink_lat"],
                # each card's own host link, per direction: Gen5 x16 on Hopper, Gen4 on A100
                pcie_bytes_per_s=hw.host_link_bytes_per_s,
                pcie_generation=_PCIE_GENERATION[hw.name],
                pcie_latency_s=c["pcie_lat"])


def _tp_steps(g: dict) -> tuple[dict, dict]:
    kw = dict(bytes_per_value=g["bytes_per_value"])
    nv = calc.tp_decode_step(g["model"], g["hardware"], g["tp"],
                             collective_latency_s=g["nvlink_latency_s"],
                             link_bytes_per_s=g["nvlink_bytes_per_s"], **kw)
    pcie = calc.tp_decode_step(g["model"], g["hardware"], g["tp"],
                               collective_latency_s=g["pcie_latency_s"],
                               link_bytes_per_s=g["pcie_bytes_per_s"], **kw)
    return nv, pcie


def _solve(g: dict) -> dict:
    t = calc.tp_allreduce_traffic(g["model"], g["tp"], bytes_per_value=g["bytes_per_value"])
    nv, pcie = _tp_steps(g)
    return {
        "a-activation": t["activation_bytes"],
        "b-ring": t["ring_bytes"],
        "c-collectives": t["collectives"],
        "d-bytes-per-token": t["bytes_per_token"] / units.MB,
        "e-wire": nv["wire_s"] / units.us,
        "f-floor-nvlink": ms(nv["latency_s"]),
        "g-read": ms(nv["read_s"]),
        # "count latency, not bytes": the chapter's overhead is the latency floor over the read
        "h-overhead-nvlink": pct(nv["latency_s"] / nv["read_s"]),
        # the chapter's step: read + latency floor (the wire time of (e) is within tolerance)
        "i-step": ms(nv["read_s"] + nv["latency_s"]),
        "j-tok-s": 1.0 / (nv["read_s"] + nv["latency_s"]),
        "k-floor-pcie": ms(pcie["latency_s"]),
        "l-overhead-pcie": pct(pcie["latency_s"] / pcie["read_s"]),
    }


def _mistakes(g: dict) -> dict:
    s = _solve(g)
    p, act = g["tp"], s["a-activation"]
    nv, pcie = _tp_steps(g)
    two = ("two all-reduces per layer: one after attention's output projection, one after the "
           "MLP's down-projection")
    return {
        "b-ring": [((p - 1) / p * act, "a ring all-reduce is a reduce-scatter plus an "
                                       "all-gather: 2(g-1)/g of the vector per GPU"),
                   (act, "per GPU, a ring all-reduce sends 2(g-1)/g of the vector")],
        "c-collectives": [(g["n_layers"], two), (2 * g["n_layers"] * p,
                                                 "count per token on one GPU, not summed over "
                                                 "the GPUs")],
        "d-bytes-per-token": [(s["d-bytes-per-token"] / 1.024,
                               "the ring payload is in binary KB (1 KB = 1,024 B here): work in "
                               "bytes, then divide by 1e6 for MB"),
                              (s["d-bytes-per-token"] / 2, two)],
        "f-floor-nvlink": [(s["f-floor-nvlink"] / 2, two)],
        "g-read": [(s["g-read"] * p, "each GPU streams only 1/g of the weights")],
        "h-overhead-nvlink": [(pct(nv["latency_s"] / nv["step_s"]),
                               "compare the floor with the read time, not with the whole step")],
        "i-step": [(s["g-read"], "add the collectives' latency floor to the read time")],
        "k-floor-pcie": [(s["k-floor-pcie"] / 2, two)],
        "l-overhead-pcie": [(pct(pcie["comm_s"] / pcie["read_s"]),
                             "count latency, not bytes: the overhead here is the latency floor "
                             "over the read time (leave the wire time out, as in (h))")],
    }


def _also_accepted(g: dict) -> dict:
    """The chapter's reading of the wire time: 17 §7 divides by NVLink's data-sheet figure,
    which adds both directions (900 GB/s on an H100), where a ring all-reduce sends one way."""
    bytes_per_token = _solve(g)["d-bytes-per-token"] * units.MB
    both_ways = g["hardware"].interconnect_bytes_per_s
    note = ("the chapter's reading: it divides by the data sheet's NVLink figure, which adds "
            "both directions; a ring sends one way, at half of it (notebook 17_07 and the "
            "ledger's 17.7 erratum)")
    return {"e-wire": [(bytes_per_token / both_ways / units.us, note)]}


def exercises() -> list[Exercise]:
    return [Exercise(
        id="17-5", title="The latency floor of tensor parallelism", section="17 §7",
        parts=(
            Part("a-activation", "bytes of one token's activation vector", "B", "rel", 0.001),
            Part("b-ring", "bytes one GPU sends per all-reduce (ring)", "B", "rel", 0.001),
            Part("c-collectives", "all-reduces per token", "collectives", "exact"),
            Part("d-bytes-per-token", "all-reduce bytes per token per GPU", "MB", "rel", 0.005),
            Part("e-wire", "wire time of those bytes over NVLink", "us", "rel", 0.01),
            Part("f-floor-nvlink", "latency floor per token over NVLink", "ms", "rel", 0.005),
            Part("g-read", "per-GPU weight read time of one decode step", "ms", "rel", 0.005),
            Part("h-overhead-nvlink", "NVLink latency floor as a share of the read time", "%",
                 "rel", 0.01),
            Part("i-step", "decode step at TP = g over NVLink", "ms", "rel", 0.005),
            Part("j-tok-s", "batch-1 decode ceiling at TP = g over NVLink", "tok/s", "rel", 0.005),
            Part("k-floor-pcie", "latency floor per token over PCIe", "ms", "rel", 0.005),
            Part("l-overhead-pcie", "PCIe latency floor as a share of the read time", "%", "rel",
                 0.01),
        ),
        make_params=_params, solve=_solve, mistakes=_mistakes,
        also_accepted=_also_accepted,
    )]
