"""Exercise 8-5: weight offloading, prefetch buffers and copy time (8.4.3)."""

from __future__ import annotations

from companion import calc, specs, units
from companion.chapters import ch08
from companion.exercises.variants import variant
from companion.grading import Exercise, Part


LINKS = ("pcie", "c2c")
# totals over a request's steps and the bandwidths are graded to 0.1%, so that counting G steps
# instead of G - 1 (0.2% at 512 outputs, more at fewer) fails with its own hint
_STEP_TOLERANCE = 0.001


def _params(seed: int) -> dict:
    chosen = variant("8-5", seed,
                     {"every": ch08.OFFLOAD_EVERY_N_LAYERS, "prompt": ch08.LONG_PROMPT_TOKENS,
                      "output": ch08.OUTPUT_TOKENS, "budget_s": ch08.COPY_BUDGET_S},
                     {"every": (2, 3, 4), "prompt": (4096, 8192), "output": (128, 256, 512),
                      "budget_s": (0.5, 1.0, 2.0)})
    return {
        "model": specs.QWEN3_8B, "every_n_layers": chosen["every"],
        "buffer_sets": ch08.OFFLOAD_PREFETCH_BUFFERS,
        "prompt_tokens": chosen["prompt"], "output_tokens": chosen["output"],
        "pcie_link_bytes_per_s": ch08.PCIE_GEN5_X16_BYTES_PER_S,
        "c2c_link_bytes_per_s": ch08.NVLINK_C2C_BYTES_PER_S,
        "compute_round_s": ch08.ROUND_B1_S, "copy_budget_s": chosen["budget_s"],
        "kv_pool_bytes": ch08.KV_BUDGET_BYTES,
    }


def _parts() -> tuple[Part, ...]:
    parts = []
    for n in ch08.OFFLOAD_PREFETCH_BUFFERS:
        parts.append(Part(f"a-net-{n}buf", f"net GPU memory freed with {n} buffer set(s)", "MiB"))
    for n in ch08.OFFLOAD_PREFETCH_BUFFERS:
        parts.append(Part(f"a-inputs-{n}buf", f"extra prompt-sized KV states that fit "
                                              f"({n} buffer set(s))", "requests", "exact"))
        parts.append(Part(f"a-complete-{n}buf", f"extra finished-request KV states that fit "
                                                f"({n} buffer set(s))", "requests", "exact"))
    for n in ch08.OFFLOAD_PREFETCH_BUFFERS:
        parts.append(Part(f"a-pool-{n}buf", f"extra finished requests the KV pool holds once "
                                            f"the freed memory joins it ({n} buffer set(s))",
                          "requests", "exact"))
    for link, name in (("pcie", "PCIe Gen5 x16"), ("c2c", "NVLink-C2C")):
        parts.append(Part(f"b-copy-{link}", f"lower bound of the copy per step over {name}",
                          "ms"))
        parts.append(Part(f"b-total-{link}", f"lower bound of the copying over all steps, {name}",
                          "s", tolerance=_STEP_TOLERANCE))
        parts.append(Part(f"b-hidden-{link}", f"with two buffer sets, can prefetch hide the copy "
                                              f"behind a decode round over {name}?", kind="bool"))
    parts.append(Part("c-min-bw", "smallest one-way bandwidth for the copy budget", "GB/s",
                      tolerance=_STEP_TOLERANCE))
    parts.append(Part("c-hide-bw", "smallest one-way bandwidth at which the copy per step fits "
                                   "in a decode round", "GB/s", tolerance=_STEP_TOLERANCE))
    return tuple(parts)


def _steps(g: dict) -> int:
    return calc.held_tokens(0, g["output_tokens"])  # G - 1 forward passes after the prefill


def _pool_gain(g: dict, net_bytes: float) -> int:
    """Extra finished requests the KV pool holds when ``net_bytes`` join it: KV blocks are paged
    and interchangeable (8.3.1), so the freed bytes add to the pool's own leftover."""
    request = (g["prompt_tokens"], g["output_tokens"])
    pool = g["kv_pool_bytes"]
    return (calc.max_concurrent(pool + net_bytes, g["model"], *request)
            - calc.max_concurrent(pool, g["model"], *request))


def _solve(g: dict) -> dict:
    out = {}
    model = g["model"]
    input_state = calc.kv_bytes(model, g["prompt_tokens"])
    complete_state = calc.kv_bytes(model, calc.held_tokens(g["prompt_tokens"], g["output_tokens"]))
    for n in g["buffer_sets"]:
        net = calc.ffn_offload(model, g["every_n_layers"], n).net_saved_bytes
        out[f"a-net-{n}buf"] = net / units.MiB
        out[f"a-inputs-{n}buf"] = int(net // input_state)
        out[f"a-complete-{n}buf"] = int(net // complete_state)
        out[f"a-pool-{n}buf"] = _pool_gain(g, net)
    moved = calc.ffn_offload(model, g["every_n_layers"], 1).offloaded_bytes
    steps = _steps(g)
    for link in LINKS:
        bw = g[f"{link}_link_bytes_per_s"]
        copy = calc.offload_copy_bound(moved, bw, g["compute_round_s"], rounds=steps)
        out[f"b-copy-{link}"] = copy.copy_s / units.ms
        out[f"b-total-{link}"] = copy.total_copy_s
        out[f"b-hidden-{link}"] = bool(copy.copy_hidden)
    out["c-min-bw"] = calc.min_link_bytes_per_s(moved, steps, g["copy_budget_s"]) / units.GB
    out["c-hide-bw"] = moved / g["compute_round_s"] / units.GB
    return out


def _mistakes(g: dict) -> dict:
    hints = {}
    model = g["model"]
    off = calc.ffn_offload(model, g["every_n_layers"], 1)
    input_state = calc.kv_bytes(model, g["prompt_tokens"])
    complete_state = calc.kv_bytes(model, calc.held_tokens(g["prompt_tokens"], g["output_tokens"]))
    steps = _steps(g)
    for n in g["buffer_sets"]:
        net = calc.ffn_offload(model, g["every_n_layers"], n).net_saved_bytes
        hints[f"a-net-{n}buf"] = [
            (off.offloaded_bytes / units.MiB, "the prefetch buffers stay on the GPU: subtract "
                                              "them"),
        ]
        hints[f"a-inputs-{n}buf"] = [
            (-(-net // input_state), "only whole states fit: round down"),
            (off.offloaded_bytes // input_state, "divide the net saving, after the buffers"),
        ]
        hints[f"a-complete-{n}buf"] = [
            (-(-net // complete_state), "only whole states fit: round down"),
            (net // input_state, "a finished request holds prompt + output - 1 tokens"),
        ]
        hints[f"a-pool-{n}buf"] = [
            (net // complete_state, "that is the freed memory on its own; the pool's leftover "
                                    "after its own requests adds to it (paged blocks, 8.3.1)"),
            ((g["kv_pool_bytes"] + net) // complete_state, "count only the extra requests: "
                                                           "subtract what the pool held before"),
        ]
    for link in LINKS:
        bw = g[f"{link}_link_bytes_per_s"]
        net1 = calc.ffn_offload(model, g["every_n_layers"], 1).net_saved_bytes
        hints[f"b-copy-{link}"] = [
            (net1 / bw / units.ms, "every step copies all offloaded weights, not the net "
                                   "saving"),
        ]
        hints[f"b-total-{link}"] = [
            ((steps + 1) * off.offloaded_bytes / bw,
             "the first token comes from the prefill: G - 1 steps copy weights"),
        ]
    hints["c-min-bw"] = [
        ((steps + 1) * off.offloaded_bytes / g["copy_budget_s"] / units.GB,
         "the first token comes from the prefill: G - 1 steps copy weights"),
    ]
    hints["c-hide-bw"] = [
        (steps * off.offloaded_bytes / g["compute_round_s"] / units.GB,
         "one step's copy has to fit in one round: D_off / T_round, not all steps'"),
        (off.offloaded_bytes / g["copy_budget_s"] / units.GB,
         "compare one step's copy with the decode round, not with the copy budget"),
    ]
    return hints


def exercises() -> list[Exercise]:
    return [Exercise(
        id="8-5", title="Capacity freed by weight offloading versus added copying",
        section="8.4.3",
        parts=_parts(), make_params=_params, solve=_solve, mistakes=_mistakes,
    )]
