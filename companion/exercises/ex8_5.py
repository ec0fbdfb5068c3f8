"""Exercise 8-5: weight offloading, prefetch buffers and copy time (8.4.3)."""

from __future__ import annotations

from companion import calc, specs, units
from companion.chapters import ch08
from companion.exercises.variants import variant
from companion.grading import Exercise, Part


LINKS = ("pcie", "c2c")


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
    for link, name in (("pcie", "PCIe Gen5 x16"), ("c2c", "NVLink-C2C")):
        parts.append(Part(f"b-copy-{link}", f"lower bound of the copy per step over {name}",
                          "ms"))
        parts.append(Part(f"b-total-{link}", f"lower bound of the copying over all steps, {name}",
                          "s"))
        parts.append(Part(f"b-hidden-{link}", f"can prefetch hide the copy behind a decode round "
                                              f"over {name}?", kind="bool"))
    parts.append(Part("c-min-bw", "smallest one-way bandwidth for the copy budget", "GB/s"))
    return tuple(parts)


def _steps(g: dict) -> int:
    return calc.held_tokens(0, g["output_tokens"])  # G - 1 forward passes after the prefill


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
    moved = calc.ffn_offload(model, g["every_n_layers"], 1).offloaded_bytes
    steps = _steps(g)
    for link in LINKS:
        bw = g[f"{link}_link_bytes_per_s"]
        copy = calc.offload_copy_bound(moved, bw, g["compute_round_s"], rounds=steps)
        out[f"b-copy-{link}"] = copy.copy_s / units.ms
        out[f"b-total-{link}"] = copy.total_copy_s
        out[f"b-hidden-{link}"] = bool(copy.copy_hidden)
    out["c-min-bw"] = calc.min_link_bytes_per_s(moved, steps, g["copy_budget_s"]) / units.GB
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
    return hints


def exercises() -> list[Exercise]:
    return [Exercise(
        id="8-5", title="Capacity freed by weight offloading versus added copying",
        section="8.4.3",
        parts=_parts(), make_params=_params, solve=_solve, mistakes=_mistakes,
    )]
