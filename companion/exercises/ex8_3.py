"""Exercise 8-3: block size, paging waste and prefix sharing (8.3.1-8.3.2)."""

from __future__ import annotations

from companion import calc, specs, units
from companion.chapters import ch08
from companion.exercises import common_ch08
from companion.grading import Exercise, Part, screen_answers
from companion.seeds import pick, rng_for
from companion.sim import kv_scenarios


_SHAPES = [  # (prompt, shared prefix, output): prefixes are whole 16-token blocks; the held
    # n + G - 1 tokens fill their last block exactly in some shapes (G = 257, 129; n = 6000), so
    # forgetting the "- 1" costs a block there
    (ch08.LONG_PROMPT_TOKENS, ch08.SHARED_PREFIX_TOKENS, ch08.OUTPUT_TOKENS), (4096, 3072, 257),
    (16384, 12288, 256), (8192, 4096, 129), (6000, 4096, 145)]
# the models of the variants: those that run on the chapter's instance (an 8B model on the RTX
# PRO 6000 with the 12 GiB KV pool of 8.1.2); a 70B model does not fit that card in BF16
_MODELS = [m for m in common_ch08.VARIANT_MODELS if m is not specs.LLAMA_70B]
_JOINED_BLOCKS = (1, 2, 3, 4)   # private full blocks that join the prefix in (c)
# (c)'s batch outside the listed ones, where only the general count j (b - 1) answers
_GENERAL_BATCHES = (12, 24, 48, 64, 100)
_GENERAL_BATCH_SEED_0 = 100
# (b)'s sizes are whole numbers of blocks: this tolerance fails an answer that skips the block
# rounding (one slot per request at most 16,639 tokens is 0.006%)
_SIZE_TOLERANCE = 1e-5


def _params(seed: int) -> dict:
    if seed == 0:
        lengths, model, shape = ch08.PAGING_EXAMPLE_LENGTHS, specs.QWEN3_8B, _SHAPES[0]
        joined = 1                 # Exercise 8-3: "convert one originally private full block"
        general = _GENERAL_BATCH_SEED_0
    else:
        rng = rng_for("8-3", seed)
        lengths = [int(x) for x in rng.integers(3, 21, size=4)]
        if all(L % 2 == 0 for L in lengths):
            lengths[0] += 1    # an odd length leaves a slot unused at every block size
        model = pick(rng, _MODELS)
        shape = pick(rng, _SHAPES)
        joined = pick(rng, _JOINED_BLOCKS)
        general = pick(rng, _GENERAL_BATCHES)
    prompt, prefix, output = shape
    return {"lengths": tuple(lengths), "block_sizes": ch08.EXERCISE_8_3_BLOCK_SIZES,
            "model": model,
            "kv_bytes_per_token": calc.kv_bytes_per_token(model), "prompt_tokens": prompt,
            "shared_prefix_tokens": prefix, "output_tokens": output, "block_tokens": 16,
            "batches": ch08.EXERCISE_8_3_BATCHES, "joined_blocks": joined,
            "kv_pool_bytes": ch08.KV_BUDGET_BYTES, "general_batch": general}


def _parts() -> tuple[Part, ...]:
    parts = []
    for p in ch08.EXERCISE_8_3_BLOCK_SIZES:
        parts.append(Part(f"a-p{p}-unused", f"unused slots in the tail blocks, summed "
                                            f"(p = {p})", "tokens", "exact"))
        parts.append(Part(f"a-p{p}-entries", f"block-table entries, summed (p = {p})", "blocks",
                          "exact"))
    for b in ch08.EXERCISE_8_3_BATCHES:
        parts.append(Part(f"b-indep-b{b}", f"KV of {b} finished long requests, independent",
                          "MiB", tolerance=_SIZE_TOLERANCE))
    for b in ch08.EXERCISE_8_3_BATCHES:
        parts.append(Part(f"b-shared-b{b}", f"KV of {b} finished long requests, shared prefix",
                          "MiB", tolerance=_SIZE_TOLERANCE))
    parts.append(Part("b-fit-indep", "most finished long requests the KV pool holds, "
                                     "independent", "requests", "exact"))
    parts.append(Part("b-fit-shared", "most finished long requests the KV pool holds, "
                                      "shared prefix", "requests", "exact"))
    for b in ch08.EXERCISE_8_3_BATCHES:
        parts.append(Part(f"c-saved-b{b}", f"physical blocks saved for {b} requests when the "
                                           f"given private blocks join the prefix", "blocks",
                          "exact"))
    parts.append(Part("c-saved-general", "physical blocks saved for the given larger batch "
                                         "when the given private blocks join the prefix",
                      "blocks", "exact"))
    return tuple(parts)


def _joined_tokens(g: dict) -> int:
    return g["joined_blocks"] * g["block_tokens"]


def _shared_blocks(g: dict, batch: int, prefix: int) -> int:
    held = calc.held_tokens(g["prompt_tokens"], g["output_tokens"])
    return kv_scenarios.page_sequences([held] * batch, g["block_tokens"],
                                       shared_prefix_tokens=prefix).physical_blocks


def _solve(g: dict) -> dict:
    out = _solve_ab(g)
    prefix = g["shared_prefix_tokens"]
    for b in g["batches"]:
        out[f"c-saved-b{b}"] = (_shared_blocks(g, b, prefix)
                                - _shared_blocks(g, b, prefix + _joined_tokens(g)))
    b = g["general_batch"]
    out["c-saved-general"] = (_shared_blocks(g, b, prefix)
                              - _shared_blocks(g, b, prefix + _joined_tokens(g)))
    return out


def _screen(seed: int) -> str | None:
    """(a) and (b) only, so that the screen does not page every batch twice: (c) saves
    j (b - 1) blocks for j joined blocks and a batch of b >= 2 at every seed (8.3.2)."""
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
    request = (g["prompt_tokens"], g["output_tokens"])
    out["b-fit-indep"] = calc.max_concurrent(g["kv_pool_bytes"], g["model"], *request, **kw)
    out["b-fit-shared"] = calc.max_concurrent(g["kv_pool_bytes"], g["model"], *request,
                                              shared_prefix_tokens=g["shared_prefix_tokens"],
                                              **kw)
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
    prefix_mib = calc.kv_bytes(model, prefix) / units.MiB
    rounding = "round each part up to whole 16-token blocks"
    for b in g["batches"]:
        hints[f"b-indep-b{b}"] = [
            (b * calc.kv_bytes(model, prompt) / units.MiB,
             "reserve what a request holds when generation ends: prompt + output - 1 tokens"),
            (b * held * k / units.MiB, "round each request up to whole 16-token blocks"),
            (b * calc.kv_bytes(model, prompt + out_t) / units.MiB, "a finished request holds prompt + output - 1 tokens: the last token's KV is "
             "never written"),
        ]
        hints[f"b-shared-b{b}"] = [
            (b * calc.kv_bytes(model, held) / units.MiB,
             "with sharing the common prefix is stored once, not once per request"),
            (b * private, "the shared prefix is still stored, once"),
            (b * (private + prefix_mib),
             "with sharing the common prefix is stored once, not once per request"),
            ((prefix * k + b * (held - prefix) * k) / units.MiB, rounding),
        ]
    j = g["joined_blocks"]
    for b in g["batches"] + (g["general_batch"],):
        name = f"c-saved-b{b}" if b in g["batches"] else "c-saved-general"
        hints[name] = [
            (j * b, "the common prefix gains those blocks, stored once: count them"),
            (j * (b + 1), "each request loses its private blocks and the prefix gains them"),
            (b - 1, f"{j} blocks join the prefix, not one"),
        ]
    pool = g["kv_pool_bytes"]
    whole = calc.kv_bytes(model, held)
    hints["b-fit-indep"] = [
        (-(-pool // whole), "only whole requests fit: round down"),
        (pool // calc.kv_bytes(model, prompt), "reserve what a finished request holds: prompt + "
                                               "output - 1 tokens"),
    ]
    hints["b-fit-shared"] = [
        (-(-(pool - prefix_mib * units.MiB) // (private * units.MiB)),
         "only whole requests fit: round down"),
        (pool // (private * units.MiB), "the prefix is stored once, but it is stored: take it "
                                        "out of the pool first"),
        (pool // whole, "with sharing each request adds only its private part"),
    ]
    return hints


def exercises() -> list[Exercise]:
    return [Exercise(
        id="8-3", title="KV block size and prefix sharing", section="8.3.1-8.3.2",
        parts=_parts(), make_params=_params, solve=_solve, mistakes=_mistakes,
        screen=_screen,
    )]
