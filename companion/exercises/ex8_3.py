"""Exercise 8-3: block size, paging waste and prefix sharing (8.3.1-8.3.2)."""

from __future__ import annotations

from companion import calc, specs, units
from companion.chapters import ch08
from companion.exercises import common_ch08
from companion.grading import Exercise, Part, screen_answers
from companion.seeds import pick, rng_for
from companion.sim import kv_scenarios


_SHAPES = [  # (prompt, shared prefix, output): prefixes are whole 16-token blocks
    (ch08.LONG_PROMPT_TOKENS, ch08.SHARED_PREFIX_TOKENS, ch08.OUTPUT_TOKENS), (4096, 3072, 256),
    (16384, 12288, 256), (8192, 4096, 128)]
_JOINED_BLOCKS = (1, 2, 3, 4)   # private full blocks that join the prefix in (c)


def _params(seed: int) -> dict:
    if seed == 0:
        lengths, model, shape = ch08.PAGING_EXAMPLE_LENGTHS, specs.QWEN3_8B, _SHAPES[0]
        joined = 1                 # Exercise 8-3: "convert one originally private full block"
    else:
        rng = rng_for("8-3", seed)
        lengths = [int(x) for x in rng.integers(3, 21, size=4)]
        if all(L % 2 == 0 for L in lengths):
            lengths[0] += 1    # an odd length leaves a slot unused at every block size
        model = pick(rng, common_ch08.VARIANT_MODELS)
        shape = pick(rng, _SHAPES)
        joined = pick(rng, _JOINED_BLOCKS)
    prompt, prefix, output = shape
    return {"lengths": tuple(lengths), "block_sizes": ch08.EXERCISE_8_3_BLOCK_SIZES,
            "model": model,
            "kv_bytes_per_token": calc.kv_bytes_per_token(model), "prompt_tokens": prompt,
            "shared_prefix_tokens": prefix, "output_tokens": output, "block_tokens": 16,
            "batches": ch08.EXERCISE_8_3_BATCHES, "joined_blocks": joined}


def _parts() -> tuple[Part, ...]:
    parts = []
    for p in ch08.EXERCISE_8_3_BLOCK_SIZES:
        parts.append(Part(f"a-p{p}-unused", f"unused slots in the tail blocks, summed "
                                            f"(p = {p})", "tokens", "exact"))
        parts.append(Part(f"a-p{p}-entries", f"block-table entries, summed (p = {p})", "blocks",
                          "exact"))
    for b in ch08.EXERCISE_8_3_BATCHES:
        parts.append(Part(f"b-indep-b{b}", f"KV of {b} finished long requests, independent",
                          "MiB"))
    for b in ch08.EXERCISE_8_3_BATCHES:
        parts.append(Part(f"b-shared-b{b}", f"KV of {b} finished long requests, shared prefix",
                          "MiB"))
    for b in ch08.EXERCISE_8_3_BATCHES:
        parts.append(Part(f"c-saved-b{b}", f"physical blocks saved for {b} requests when the "
                                           f"given private blocks join the prefix", "blocks",
                          "exact"))
    return tuple(parts)


def _joined_tokens(g: dict) -> int:
    return g["joined_blocks"] * g["block_tokens"]


def _shared_blocks(g: dict, batch: int, prefix: int) -> int:
    held = calc.held_tokens(g["prompt_tokens"], g["output_tokens"])
    return kv_scenarios.page_sequences([held] * batch, g["block_tokens"],
                                       shared_prefix_tokens=prefix).physical_blocks


def _solve(g: dict) -> dict:
    out = _solve_ab(g)
    for b in g["batches"]:
        prefix = g["shared_prefix_tokens"]
        out[f"c-saved-b{b}"] = (_shared_blocks(g, b, prefix)
                                - _shared_blocks(g, b, prefix + _joined_tokens(g)))
    return out


def _screen(seed: int) -> str | None:
    """(a) and (b) only, so that the screen does not page every batch twice: (c) saves
    k (b - 1) blocks for k joined blocks and a batch of b >= 2 at every seed (8.3.2)."""
    return screen_answers(exercises()[0], _solve_ab(_params(seed)))


def _solve_ab(g: dict) -> dict:
    out = {}
    for p in g["block_sizes"]:
        rep = kv_scenarios.page_sequences(g["lengths"], p)
        out[f"a-p{p}-unused"] = rep.unused_tokens
        out[f"a-p{p}-entries"] = rep.references
    kw = dict(block_tokens=g["block_tokens"])
    for b in g["batches"]:
        out[f"b-indep-b{b}"] = calc.prefix_shared_kv_bytes(
            g["model"], b, g["prompt_tokens"], g["output_tokens"], **kw) / units.MiB
        out[f"b-shared-b{b}"] = calc.prefix_shared_kv_bytes(
            g["model"], b, g["prompt_tokens"], g["output_tokens"],
            shared_prefix_tokens=g["shared_prefix_tokens"], **kw) / units.MiB
    return out


def _mistakes(g: dict) -> dict:
    hints = {}
    lengths = g["lengths"]
    for p in g["block_sizes"]:
        hints[f"a-p{p}-unused"] = [
            (sum(p - L % p for L in lengths),
             "a sequence that fills its last block exactly leaves no slot unused"),
            (sum(calc.kv_tokens_allocated(L, p) for L in lengths),
             "unused slots are allocated minus stored tokens"),
        ]
        hints[f"a-p{p}-entries"] = [
            (sum(calc.kv_tokens_allocated(L, p) for L in lengths),
             "a block-table entry maps one block, not one token slot"),
            (sum(L // p for L in lengths), "a partly filled tail block needs an entry too: "
                                           "round up"),
        ]
    model, prompt, out_t = g["model"], g["prompt_tokens"], g["output_tokens"]
    k = g["kv_bytes_per_token"]
    held = calc.held_tokens(prompt, out_t)
    prefix = g["shared_prefix_tokens"]
    private = calc.kv_bytes(model, held - prefix) / units.MiB
    for b in g["batches"]:
        hints[f"b-indep-b{b}"] = [
            (b * calc.kv_bytes(model, prompt) / units.MiB,
             "reserve what a request holds when generation ends: prompt + output - 1 tokens"),
            (b * held * k / units.MiB, "round each request up to whole 16-token blocks"),
        ]
        hints[f"b-shared-b{b}"] = [
            (b * calc.kv_bytes(model, held) / units.MiB,
             "with sharing the common prefix is stored once, not once per request"),
            (b * private, "the shared prefix is still stored, once"),
            (b * (private + calc.kv_bytes(model, prefix) / units.MiB),
             "with sharing the common prefix is stored once, not once per request"),
        ]
        k = g["joined_blocks"]
        hints[f"c-saved-b{b}"] = [
            (k * b, "the common prefix gains those blocks, stored once: count them"),
            (k * (b + 1), "each request loses its private blocks and the prefix gains them"),
            (b - 1, f"{k} blocks join the prefix, not one"),
        ]
    return hints


def exercises() -> list[Exercise]:
    return [Exercise(
        id="8-3", title="KV block size and prefix sharing", section="8.3.1-8.3.2",
        parts=_parts(), make_params=_params, solve=_solve, mistakes=_mistakes,
        screen=_screen,
    )]
