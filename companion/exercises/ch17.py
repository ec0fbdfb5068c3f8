"""Practice problems 17-1 ... 17-7 (Chapter 17): given data by seed, answers by calc, hints.

Chapter 17 has no exercises of its own; these problems are built from its worked examples and
its "What interviewers probe" questions. Seed 0 reproduces the chapter's numbers (H100 SXM, the
8B and 70B shapes, "8K" = 8,000 tokens); other seeds swap in another model (Chapter-17-style
round-count shapes, or shapes read from public Hugging Face ``config.json`` files), another
card, context, link, acceptance rate ... Every expected answer is computed by
``companion.calc``; nothing is typed in.

Where a problem needs an input the chapter does not state (an ITL target, a draft model's size),
seed 0 uses a stated assumption, named in the given data and in the notebook.
"""

from __future__ import annotations

import math

from companion import calc, specs, units
from companion.chapters import ch17
from companion.exercises.variants import gb as _gb
from companion.exercises.variants import ms as _ms
from companion.exercises.variants import pct as _pct
from companion.exercises.variants import pick, rng_for
from companion.exercises.variants import variant as _variant
from companion.grading import Exercise, Part, register, screen_answers

# --- models beyond the presets -----------------------------------------------------------------

# Public Hugging Face config.json fields (the same files as tests/data/hf_configs/, which a test
# compares against); kept here so the package does not read from tests/.
HF_CONFIGS = {
    "llama-3-8b": dict(model_type="llama", hidden_size=4096, intermediate_size=14336,
                       num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=8,
                       vocab_size=128256, tie_word_embeddings=False),
    "llama-3-70b": dict(model_type="llama", hidden_size=8192, intermediate_size=28672,
                        num_hidden_layers=80, num_attention_heads=64, num_key_value_heads=8,
                        vocab_size=128256, tie_word_embeddings=False),
    "llama-2-7b-mha": dict(model_type="llama", hidden_size=4096, intermediate_size=11008,
                           num_hidden_layers=32, num_attention_heads=32, vocab_size=32000,
                           tie_word_embeddings=False),
    "gemma-2b-mqa": dict(model_type="gemma", hidden_size=2048, intermediate_size=16384,
                         num_hidden_layers=18, num_attention_heads=8, num_key_value_heads=1,
                         head_dim=256, vocab_size=256000, tie_word_embeddings=True),
    "qwen3-8b": dict(model_type="qwen3", hidden_size=4096, intermediate_size=12288,
                     num_hidden_layers=36, num_attention_heads=32, num_key_value_heads=8,
                     head_dim=128, vocab_size=151936, tie_word_embeddings=False),
}
HF_MODELS = {key: specs.model_from_hf_config(cfg, name=f"{key} (config.json)")
             for key, cfg in HF_CONFIGS.items()}

# Chapter-17-style shapes with a round parameter count (the chapter's 8B is 8e9 exactly), so
# "weights = params x bytes" holds as the chapter writes it. Layer/head shapes are the public
# Llama-3.2-3B and Qwen2.5-14B configs.
SHAPE_3B = specs.Model(
    "3B shape (Llama-3.2-3B-like)", n_layers=28, n_kv_heads=8, head_dim=128, n_params=3e9,
    hidden_size=3072, n_heads=24,
    source="practice variant: 3e9 params, the public Llama-3.2-3B layer/head shape")
SHAPE_14B = specs.Model(
    "14B shape (Qwen2.5-14B-like)", n_layers=48, n_kv_heads=8, head_dim=128, n_params=14e9,
    hidden_size=5120, n_heads=40,
    source="practice variant: 14e9 params, the public Qwen2.5-14B layer/head shape")

ROUND_SMALL = [specs.LLAMA_8B, SHAPE_3B, SHAPE_14B]
CARDS = [specs.H100_SXM, specs.H200_SXM, specs.A100_80GB]

# --- the chapter's inputs (companion.chapters.ch17), reused as seed 0 -------------------------

H100 = specs.H100_SXM
MEAN_PROMPT_8, MEAN_OUTPUT_8 = ch17.MEAN_PROMPT_TOKENS, ch17.MEAN_OUTPUT_TOKENS
RDMA_GBIT_PER_S = round(ch17.RDMA_400G_BYTES_PER_S * 8 / 1e9)   # §8: 400 Gb RDMA
SPEC_ACCEPTANCE, SPEC_DRAFT_LEN = ch17.SPEC_ACCEPTANCE, ch17.SPEC_DRAFT_LEN
PREFIX_TOKENS_5, PREFIX_USERS_5 = ch17.PREFIX_TOKENS, ch17.PREFIX_USERS

# Assumptions for parts the chapter does not quantify (stated in the given data and notebooks):
DRAFT_PARAMS_9 = 1e9         # a 1e9-parameter BF16 draft model for 17-9's draft-cost parts
PP_TARGET_BUBBLE = 0.05      # a 5% bubble target for 17-6


def _thousands_label(tokens: int) -> str:
    """"8K" for 8,000 tokens, as Chapter 17 labels contexts."""
    return f"{tokens // 1000}K" if tokens % 1000 == 0 else f"{tokens:,}"


MEMORY_OR_COMPUTE = ("memory", "compute")


# --- 17-1: KV cache per token and per sequence (17 §4) ----------------------------------------

_MODELS_17_1 = [specs.LLAMA_70B, specs.LLAMA_405B, HF_MODELS["llama-3-8b"], HF_MODELS["qwen3-8b"],
                HF_MODELS["gemma-2b-mqa"], HF_MODELS["llama-2-7b-mha"]]


def _params_17_1(seed: int) -> dict:
    c = _variant("17-1", seed,
                 dict(model=specs.LLAMA_70B, context=ch17.LONG_CONTEXT_TOKENS,
                      cache=ch17.CACHE_BYTES),
                 dict(model=_MODELS_17_1, context=(4_000, 8_000, 16_000, 32_000),
                      cache=(40e9, 60e9, 80e9)))
    m = c["model"]
    return dict(model=m, n_layers=m.n_layers, n_query_heads=m.n_query_heads,
                n_kv_heads=m.n_kv_heads, head_dim=m.head_dim, bytes_per_value=2,
                context_tokens=c["context"], context_label=_thousands_label(c["context"]),
                cache_bytes=c["cache"], fp8_bytes_per_value=1)


def _variants_17_1(g: dict) -> dict:
    rows = calc.attention_variants(g["model"], context_tokens=g["context_tokens"],
                                   cache_bytes=g["cache_bytes"],
                                   bytes_per_value=g["bytes_per_value"])
    by_heads = {r["n_kv_heads"]: r for r in rows}
    return dict(own=by_heads[g["n_kv_heads"]], mha=by_heads[g["n_query_heads"]])


def _solve_17_1(g: dict) -> dict:
    v = _variants_17_1(g)
    own, mha = v["own"], v["mha"]
    return {
        "a-per-token": calc.kv_bytes_per_token(g["model"], g["bytes_per_value"]),
        "b-per-seq": _gb(own["kv_bytes_per_sequence"]),
        "c-factor": own["reduction_vs_mha"],
        "d-mha-seq": _gb(mha["kv_bytes_per_sequence"]),
        "e-fit-own": own["sequences"],
        "f-fit-mha": mha["sequences"],
        "g-fp8": calc.kv_bytes_per_token(g["model"], g["fp8_bytes_per_value"]),
    }


def _mistakes_17_1(g: dict) -> dict:
    s = _solve_17_1(g)
    k, L = s["a-per-token"], g["context_tokens"]
    query = k * g["n_query_heads"] / g["n_kv_heads"]
    hint_heads = ("use the KV heads (n_kv_heads), not the query heads: under GQA several query "
                  "heads share one K/V pair, which is the point of the formula")
    hint_8k = (f"Chapter 17 reads \"{g['context_label']}\" as {L:,} tokens here, not a multiple "
               f"of 1,024")
    binary = L // 1000 * 1024 if L % 1000 == 0 else None
    seq = [(_gb(query * L), hint_heads)]
    if binary:
        seq.append((_gb(k * binary), hint_8k))
    fit = []
    if binary:
        fit.append((g["cache_bytes"] // (k * binary), hint_8k))
    return {
        "a-per-token": [(query, hint_heads),
                        (k / 2, "count both K and V (the leading 2) and 2 bytes per BF16 value")],
        "b-per-seq": seq,
        "c-factor": [(1 / s["c-factor"], "give MHA over this model: query heads / KV heads "
                                         "(a factor >= 1)")],
        "d-mha-seq": ([(_gb(query * binary), hint_8k)] if binary else []),
        "e-fit-own": fit + [(s["f-fit-mha"] * s["c-factor"],
                             "divide the cache by this model's own per-sequence size and take "
                             "the floor; scaling the MHA count by the factor multiplies its "
                             "rounding too"),
                            (math.ceil(g["cache_bytes"] / (k * L)),
                             "a sequence either fits or not: take the floor")],
        "f-fit-mha": [(math.ceil(g["cache_bytes"] / (query * L)),
                       "a sequence either fits or not: take the floor")],
        "g-fp8": [(k, "FP8 stores each K/V value in 1 byte instead of 2")],
    }


register(Exercise(
    id="17-1", title="Size the KV cache of a model you are given", section="17 §4",
    parts=(
        Part("a-per-token", "KV bytes per token", "B", "rel", 0.001, points=2),
        Part("b-per-seq", "KV bytes of one sequence at the given context", "GB", "rel", 0.005),
        Part("c-factor", "how many times larger the cache would be under MHA", "x", "rel", 0.001),
        Part("d-mha-seq", "KV bytes of one sequence under MHA", "GB", "rel", 0.005),
        Part("e-fit-own", "whole sequences that fit the cache space, this model", "sequences",
             "exact"),
        Part("f-fit-mha", "whole sequences that fit the cache space, under MHA", "sequences",
             "exact"),
        Part("g-fp8", "KV bytes per token with an FP8 KV cache", "B", "rel", 0.001),
    ),
    make_params=_params_17_1, solve=_solve_17_1, mistakes=_mistakes_17_1,
))


# --- 17-2: free memory and max concurrency (17 §4) ---------------------------------------------

# (card, large model, TP degree): layouts where the sharded weights leave KV room
_LAYOUTS_17_2 = [(specs.H100_SXM, specs.LLAMA_70B, 4), (specs.H100_SXM, specs.LLAMA_70B, 8),
                 (specs.H200_SXM, specs.LLAMA_70B, 2), (specs.H200_SXM, specs.LLAMA_70B, 4),
                 (specs.A100_80GB, specs.LLAMA_70B, 4), (specs.A100_80GB, specs.LLAMA_70B, 8),
                 (specs.H200_SXM, specs.LLAMA_405B, 8)]


def _params_17_2(seed: int) -> dict:
    c = _variant("17-2", seed,
                 dict(layout=(H100, specs.LLAMA_70B, ch17.TP), small=specs.LLAMA_8B,
                      context=ch17.LONG_CONTEXT_TOKENS, reserve=ch17.RUNTIME_RESERVE_BYTES),
                 dict(layout=_LAYOUTS_17_2, small=ROUND_SMALL,
                      context=(4_000, 8_000, 16_000, 32_000), reserve=(2e9, 4e9, 6e9)))
    hw, big, tp = c["layout"]
    return dict(hardware=hw, small_model=c["small"], big_model=big, tp=tp,
                context_tokens=c["context"], reserve_bytes=c["reserve"])


def _capacity(g: dict, model, tp: int) -> dict:
    return calc.tp_kv_capacity(model, g["hardware"], tp=tp, context_tokens=g["context_tokens"],
                               reserve_bytes=g["reserve_bytes"])


def _solve_17_2(g: dict) -> dict:
    small = _capacity(g, g["small_model"], 1)
    big = _capacity(g, g["big_model"], g["tp"])
    return {
        "a-small-free": _gb(small["free_kv_bytes"]),
        "b-small-seqs": small["max_sequences"],
        "c-big-ratio": big["weights_over_memory"],
        "d-big-free-gpu": _gb(big["free_kv_bytes_per_gpu"]),
        "e-big-free-total": _gb(big["free_kv_bytes"]),
        "f-big-kv-heads": big["kv_heads_per_gpu"],
        "g-big-seqs": big["max_sequences"],
    }


def _mistakes_17_2(g: dict) -> dict:
    s = _solve_17_2(g)
    hw, p, L = g["hardware"], g["tp"], g["context_tokens"]
    mem, reserve = hw.mem_bytes, g["reserve_bytes"]
    small_w, big_w = g["small_model"].weight_bytes, g["big_model"].weight_bytes
    seq_small = calc.kv_bytes(g["small_model"], L, block_tokens=1)
    seq_big = calc.kv_bytes(g["big_model"], L, block_tokens=1)
    no_reserve = "subtract the runtime + activations reserve on every GPU"
    floor = "a sequence either fits or not: take the floor"
    return {
        "a-small-free": [(_gb(mem - small_w), no_reserve)],
        "b-small-seqs": [((mem - small_w) // seq_small, no_reserve),
                         (math.ceil((mem - small_w - reserve) / seq_small), floor)],
        "c-big-ratio": [(mem / big_w, "weights over card memory, not the reverse")],
        "d-big-free-gpu": [(_gb(mem - big_w - reserve), "the weights shard: each GPU holds "
                                                        "weights / tp"),
                           (_gb(mem - big_w / p), no_reserve)],
        "e-big-free-total": [(_gb(mem - big_w / p - reserve), "add up the KV space of all tp GPUs"),
                             (_gb(p * (mem - big_w / p)), no_reserve)],
        "f-big-kv-heads": [(g["big_model"].n_query_heads / p, "shard the KV heads, not the query "
                                                               "heads")],
        "g-big-seqs": [((mem - big_w / p - reserve) // seq_big,
                        "the KV heads shard with the weights, so all tp GPUs' free memory "
                        "holds sequences: use the aggregate"),
                       (p * (mem - big_w / p) // seq_big, no_reserve),
                       (math.ceil(p * (mem - big_w / p - reserve) / seq_big), floor)],
    }


register(Exercise(
    id="17-2", title="Turn free memory into a max-concurrency number", section="17 §4",
    parts=(
        Part("a-small-free", "KV space left on one card by the small model", "GB", "rel", 0.005),
        Part("b-small-seqs", "sequences of the given context the small model holds on one card",
             "sequences", "exact", points=2),
        Part("c-big-ratio", "the large model's weights as a multiple of one card's memory", "x",
             "rel", 0.005),
        Part("d-big-free-gpu", "KV space per GPU with the large model sharded over tp GPUs",
             "GB", "rel", 0.005),
        Part("e-big-free-total", "KV space of the whole TP group", "GB", "rel", 0.005),
        Part("f-big-kv-heads", "KV heads each GPU holds", "heads", "rel", 0.001),
        Part("g-big-seqs", "sequences of the given context the TP group holds", "sequences",
             "exact", points=2),
    ),
    make_params=_params_17_2, solve=_solve_17_2, mistakes=_mistakes_17_2,
))


# --- 17-3: roofline placement (17 §2) ----------------------------------------------------------

CARDS_17_3 = [specs.H100_SXM, specs.H200_SXM, specs.A100_80GB, specs.RTX_PRO_6000]


def _params_17_3(seed: int) -> dict:
    c = _variant("17-3", seed,
                 dict(hw=H100, model=specs.LLAMA_8B, batch=ch17.BATCH, short=ch17.CHAT_LIVE_TOKENS,
                      long=ch17.LONG_CONTEXT_TOKENS, prompt=ch17.PROMPT_TOKENS),
                 dict(hw=CARDS_17_3, model=ROUND_SMALL, batch=(16, 32, 64, 128),
                      short=(300, 600, 1_000, 2_000), long=(4_000, 8_000, 16_000, 32_000),
                      prompt=(128, 256, 512, 2_048, 8_192)))
    m = c["model"]
    return dict(hardware=c["hw"], model=m, params=m.n_params, bytes_per_param=m.bytes_per_param,
                kv_bytes_per_token=calc.kv_bytes_per_token(m), batch=c["batch"],
                short_context=c["short"], long_context=c["long"], prompt_tokens=c["prompt"])


def _solve_17_3(g: dict) -> dict:
    m, hw, b = g["model"], g["hardware"], g["batch"]
    ridge = calc.ridge_point(hw)
    i1 = calc.decode_intensity(m, 1)
    i_short = calc.decode_intensity(m, b, g["short_context"])
    i_long = calc.decode_intensity(m, b, g["long_context"])
    i_prefill = calc.prefill_intensity(m, g["prompt_tokens"])
    # the smallest whole batch whose weights-only intensity (B x i1) reaches the ridge
    breakeven = math.ceil(ridge / i1)
    while calc.roofline_point(calc.decode_intensity(m, breakeven), hw)["bound"] != "compute":
        breakeven += 1
    return {
        "a-ridge": ridge,
        "b-i1": i1,
        "c-peak1": _pct(calc.roofline_point(i1, hw)["fraction_of_peak"]),
        "d-iB": calc.decode_intensity(m, b),
        "e-iB-short": i_short,
        "f-iB-long": i_long,
        "g-bound-long": calc.roofline_point(i_long, hw)["bound"],
        "h-peak-short": _pct(calc.roofline_point(i_short, hw)["fraction_of_peak"]),
        "i-prefill": i_prefill,
        "j-bound-prefill": calc.roofline_point(i_prefill, hw)["bound"],
        "k-breakeven": breakeven,
    }


def _mistakes_17_3(g: dict) -> dict:
    s = _solve_17_3(g)
    hw, b, k, P = g["hardware"], g["batch"], g["kv_bytes_per_token"], g["params"]
    w = P * g["bytes_per_param"]
    sparse = "use the dense BF16 peak; the headline figure assumes 2:4 sparsity and is 2x"
    no_kv = ("the KV cache does not amortize: every sequence's live KV is read each step, so "
             "add B x L x k to the bytes")
    kv_once = "each of the B sequences reads its own KV: B x L x k bytes, not L x k"
    out = {
        "a-ridge": [(hw.mem_bw_bytes_per_s / hw.peak_flops_per_s, "ridge = peak FLOP/s / "
                                                                    "bandwidth (bytes/s)"),
                    (2 * hw.peak_flops_per_s / hw.mem_bw_bytes_per_s, sparse)],
        "b-i1": [(2.0, "2 FLOPs per parameter over 2 bytes per parameter")],
        "c-peak1": [(_pct(s["b-i1"] * hw.mem_bw_bytes_per_s / (2 * hw.peak_flops_per_s)),
                     sparse)],
        "h-peak-short": [(_pct(b * hw.mem_bw_bytes_per_s / hw.peak_flops_per_s), no_kv),
                         (_pct(s["e-iB-short"] * hw.mem_bw_bytes_per_s
                               / (2 * hw.peak_flops_per_s)), sparse)],
        "k-breakeven": [(math.floor(s["a-ridge"]), "round the batch up: below the ridge it is "
                                                   "still memory-bound")],
    }
    for name, L in (("e-iB-short", g["short_context"]), ("f-iB-long", g["long_context"])):
        out[name] = [(b, no_kv), (b * 2 * P / (w + L * k), kv_once)]
    return out


register(Exercise(
    id="17-3", title="Place decode and prefill on the roofline", section="17 §2",
    parts=(
        Part("a-ridge", "ridge point of the card", "FLOP/B", "rel", 0.005),
        Part("b-i1", "decode intensity at batch 1", "FLOP/B", "rel", 0.005),
        Part("c-peak1", "batch-1 decode's attainable share of peak compute", "%", "rel", 0.005),
        Part("d-iB", "decode intensity at batch B, weights only", "FLOP/B", "rel", 0.005),
        Part("e-iB-short", "effective decode intensity at batch B with short live contexts",
             "FLOP/B", "rel", 0.005),
        Part("f-iB-long", "effective decode intensity at batch B with long live contexts",
             "FLOP/B", "rel", 0.005),
        Part("g-bound-long", "which roof caps batched decode at long contexts", kind="choice",
             options=MEMORY_OR_COMPUTE),
        Part("h-peak-short", "attainable share of peak for batched decode, short contexts", "%",
             "rel", 0.005),
        Part("i-prefill", "prefill intensity of the given prompt", "FLOP/B", "rel", 0.005),
        Part("j-bound-prefill", "which roof caps that prefill", kind="choice",
             options=MEMORY_OR_COMPUTE),
        Part("k-breakeven", "smallest whole batch whose weights-only decode reaches the ridge",
             "sequences", "exact"),
    ),
    make_params=_params_17_3, solve=_solve_17_3, mistakes=_mistakes_17_3,
))


# --- 17-4: MBU and MFU from a measurement (17 §9) ----------------------------------------------

def _params_17_4(seed: int) -> dict:
    if seed == 0:
        m, hw, b, L = specs.LLAMA_8B, H100, 1, 0
        decode_rate, prefill_rate, promised = ch17.DECODE_TOK_PER_S, ch17.PREFILL_TOK_PER_S, \
            ch17.PROMISED_SPEEDUP
    else:
        rng = rng_for("17-4", seed)
        m, hw = pick(rng, ROUND_SMALL), pick(rng, CARDS)
        b, L = pick(rng, [1, 4, 16, 32]), pick(rng, [0, 500, 1_000, 2_000, 4_000])
        ceiling = calc.decode_vs_context(m, hw, L, batch=b)["tokens_per_s"]
        decode_rate = round(pick(rng, [0.45, 0.55, 0.62, 0.7, 0.78, 0.85]) * ceiling)
        mfu = pick(rng, [0.22, 0.3, 0.38, 0.45, 0.55])
        prefill_rate = round(mfu * hw.peak_flops_per_s / calc.matrix_flops(m, 1), -2)
        promised = pick(rng, [1.2, 1.5, 2, 3, 5])
    return dict(model=m, hardware=hw, params=m.n_params, weight_bytes=m.weight_bytes,
                kv_bytes_per_token=calc.kv_bytes_per_token(m), batch=b, context_tokens=L,
                decode_tokens_per_s=decode_rate, prefill_tokens_per_s=prefill_rate,
                promised_speedup=promised)


def _solve_17_4(g: dict) -> dict:
    m, hw, b, L = g["model"], g["hardware"], g["batch"], g["context_tokens"]
    dec = calc.decode_utilization(m, hw, g["decode_tokens_per_s"], batch=b, context_tokens=L)
    per_token = calc.read_bytes_per_output_token(m.streamed_weight_bytes, b, L,
                                                 g["kv_bytes_per_token"])
    return {
        "a-bytes-per-token": _gb(per_token),
        "b-mbu": _pct(dec["mbu"]),
        "c-mfu-decode": _pct(dec["mfu"]),
        "d-headroom": dec["headroom"],
        "e-ceiling": calc.decode_vs_context(m, hw, L, batch=b)["tokens_per_s"],
        "f-promise-possible": dec["headroom"] >= g["promised_speedup"],
        "g-mfu-prefill": _pct(calc.prefill_utilization(m, hw, g["prefill_tokens_per_s"])["mfu"]),
    }


def _mistakes_17_4(g: dict) -> dict:
    s = _solve_17_4(g)
    hw, b, L, k = g["hardware"], g["batch"], g["context_tokens"], g["kv_bytes_per_token"]
    w, rate = g["weight_bytes"], g["decode_tokens_per_s"]
    step_bytes = w + b * L * k
    sparse = "divide by the dense BF16 peak, not the 2:4-sparse headline (2x)"
    out = {
        "a-bytes-per-token": [(_gb(step_bytes), "that is one step's bytes; a step emits B tokens, "
                                                "so divide the shared weight read by B")],
        "b-mbu": [(_pct(rate * step_bytes / hw.mem_bw_bytes_per_s),
                   "bytes per token are D_w / B + L k: each step's weight read serves B tokens")],
        "c-mfu-decode": [(s["c-mfu-decode"] / 2, sparse)],
        "d-headroom": [(s["b-mbu"] / 100, "headroom is 1 / MBU: how far the rate can still rise")],
        "g-mfu-prefill": [(s["g-mfu-prefill"] / 2, sparse)],
    }
    if L > 0:
        out["a-bytes-per-token"].append((_gb(w / b), "add each sequence's own live KV, L x k"))
        out["b-mbu"].append((_pct(rate * w / b / hw.mem_bw_bytes_per_s),
                             "the live KV is streamed too: add L x k per token"))
    return out


register(Exercise(
    id="17-4", title="Judge a deployment by MBU and MFU", section="17 §9",
    parts=(
        Part("a-bytes-per-token", "bytes streamed per output token", "GB", "rel", 0.005),
        Part("b-mbu", "decode MBU", "%", "rel", 0.005, points=2),
        Part("c-mfu-decode", "decode MFU", "%", "rel", 0.005),
        Part("d-headroom", "most the decode rate can still improve on this workload", "x",
             "rel", 0.005),
        Part("e-ceiling", "decode ceiling at this batch and context", "tok/s", "rel", 0.005),
        Part("f-promise-possible", "is the promised kernel speedup possible?", kind="bool"),
        Part("g-mfu-prefill", "prefill MFU", "%", "rel", 0.005, points=2),
    ),
    make_params=_params_17_4, solve=_solve_17_4, mistakes=_mistakes_17_4,
))


# --- 17-5: the TP latency floor (17 §7) --------------------------------------------------------

_LAYOUTS_17_5 = [(specs.LLAMA_70B, specs.H100_SXM, 2), (specs.LLAMA_70B, specs.H100_SXM, 8),
                 (specs.LLAMA_70B, specs.H200_SXM, 2), (specs.LLAMA_70B, specs.A100_80GB, 4),
                 (specs.LLAMA_70B, specs.A100_80GB, 8), (specs.LLAMA_405B, specs.H200_SXM, 8),
                 (specs.LLAMA_8B, specs.H100_SXM, 2), (SHAPE_14B, specs.A100_80GB, 2)]


def _params_17_5(seed: int) -> dict:
    c = _variant("17-5", seed,
                 dict(layout=(specs.LLAMA_70B, H100, ch17.TP),
                      nvlink_lat=ch17.COLLECTIVE_LATENCY_NVLINK_S,
                      pcie_lat=ch17.COLLECTIVE_LATENCY_PCIE_S),
                 dict(layout=_LAYOUTS_17_5, nvlink_lat=(3e-6, 5e-6, 8e-6),
                      pcie_lat=(15e-6, 25e-6, 40e-6)))
    m, hw, tp = c["layout"]
    return dict(model=m, hardware=hw, tp=tp, hidden_size=m.hidden_size, n_layers=m.n_layers,
                weight_bytes=m.weight_bytes, bytes_per_value=2,
                nvlink_bytes_per_s=hw.interconnect_bytes_per_s,
                nvlink_latency_s=c["nvlink_lat"], pcie_bytes_per_s=ch17.H100_PCIE_BYTES_PER_S,
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


def _solve_17_5(g: dict) -> dict:
    t = calc.tp_allreduce_traffic(g["model"], g["tp"], bytes_per_value=g["bytes_per_value"])
    nv, pcie = _tp_steps(g)
    return {
        "a-activation": t["activation_bytes"],
        "b-ring": t["ring_bytes"],
        "c-collectives": t["collectives"],
        "d-bytes-per-token": t["bytes_per_token"] / units.MB,
        "e-wire": nv["wire_s"] / units.us,
        "f-floor-nvlink": _ms(nv["latency_s"]),
        "g-read": _ms(nv["read_s"]),
        # "count latency, not bytes": the chapter's overhead is the latency floor over the read
        "h-overhead-nvlink": _pct(nv["latency_s"] / nv["read_s"]),
        # the chapter's step: read + latency floor (the wire time of (e) is within tolerance)
        "i-step": _ms(nv["read_s"] + nv["latency_s"]),
        "j-tok-s": 1.0 / (nv["read_s"] + nv["latency_s"]),
        "k-floor-pcie": _ms(pcie["latency_s"]),
        "l-overhead-pcie": _pct(pcie["latency_s"] / pcie["read_s"]),
    }


def _mistakes_17_5(g: dict) -> dict:
    s = _solve_17_5(g)
    p, act = g["tp"], s["a-activation"]
    nv, pcie = _tp_steps(g)
    two = ("two all-reduces per layer: one after attention's output projection, one after the "
           "MLP's down-projection")
    return {
        "b-ring": [((p - 1) / p * act, "a ring all-reduce is a reduce-scatter plus an "
                                       "all-gather: 2(p-1)/p of the vector per GPU"),
                   (act, "per GPU, a ring all-reduce sends 2(p-1)/p of the vector")],
        "c-collectives": [(g["n_layers"], two), (2 * g["n_layers"] * p,
                                                 "count per token on one GPU, not summed over "
                                                 "the GPUs")],
        "d-bytes-per-token": [(s["d-bytes-per-token"] / 1.024,
                               "the ring payload is in binary KB (1 KB = 1,024 B here): work in "
                               "bytes, then divide by 1e6 for MB"),
                              (s["d-bytes-per-token"] / 2, two)],
        "f-floor-nvlink": [(s["f-floor-nvlink"] / 2, two)],
        "g-read": [(s["g-read"] * p, "each GPU streams only 1/p of the weights")],
        "h-overhead-nvlink": [(_pct(nv["latency_s"] / nv["step_s"]),
                               "compare the floor with the read time, not with the whole step")],
        "i-step": [(s["g-read"], "add the collectives' latency floor to the read time")],
        "k-floor-pcie": [(s["k-floor-pcie"] / 2, two)],
        "l-overhead-pcie": [(_pct(pcie["comm_s"] / pcie["read_s"]),
                             "count latency, not bytes: the overhead here is the latency floor "
                             "over the read time (leave the wire time out, as in (h))")],
    }


register(Exercise(
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
        Part("i-step", "decode step at TP = p over NVLink", "ms", "rel", 0.005),
        Part("j-tok-s", "batch-1 decode ceiling at TP = p over NVLink", "tok/s", "rel", 0.005),
        Part("k-floor-pcie", "latency floor per token over PCIe", "ms", "rel", 0.005),
        Part("l-overhead-pcie", "PCIe latency floor as a share of the read time", "%", "rel",
             0.01),
    ),
    make_params=_params_17_5, solve=_solve_17_5, mistakes=_mistakes_17_5,
))


# --- 17-6: the pipeline bubble and the TP x PP layout (17 §7) ----------------------------------

# (model, stages) with whole layers per stage
_STAGES_17_6 = [(specs.LLAMA_70B, 2), (specs.LLAMA_70B, 4), (specs.LLAMA_70B, 8),
                (specs.LLAMA_8B, 2), (specs.LLAMA_8B, 4), (specs.LLAMA_405B, 3),
                (specs.LLAMA_405B, 6)]


def _params_17_6(seed: int) -> dict:
    c = _variant("17-6", seed,
                 dict(stages=(specs.LLAMA_70B, ch17.PP_STAGES), micro=ch17.PP_MICROBATCHES,
                      target=PP_TARGET_BUBBLE, hw=H100, reserve=ch17.RUNTIME_RESERVE_BYTES,
                      node=8),
                 # targets for which (p - 1)(1/target - 1) is never whole for p <= 8: at 2%, 5%
                 # or 10% the bubble at the answer would equal the target exactly at every p
                 dict(stages=_STAGES_17_6, micro=((8, 32), (16, 64), (12, 48), (32, 128)),
                      target=(0.045, 0.055, 0.065, 0.085), hw=CARDS, reserve=(2e9, 4e9, 6e9),
                      node=(4, 8)))
    model, stages = c["stages"]
    big = specs.LLAMA_405B
    return dict(model=model, n_layers=model.n_layers, hidden_size=model.hidden_size,
                stages=stages, microbatches=c["micro"], target_bubble=c["target"],
                big_model=big, big_weight_bytes=big.weight_bytes, hardware=c["hw"],
                gpus_per_node=c["node"], reserve_bytes=c["reserve"])


def _microbatches_for(stages: int, target: float) -> int:
    """Smallest m with pipeline_bubble(stages, m) <= target (a closed form, checked by calc)."""
    m = max(1, math.ceil((stages - 1) * (1 / target - 1) - 1e-9))
    while m > 1 and calc.pipeline_bubble(stages, m - 1) <= target * (1 + 1e-12):
        m -= 1
    while calc.pipeline_bubble(stages, m) > target * (1 + 1e-12):
        m += 1
    return m


def _solve_17_6(g: dict) -> dict:
    p, (m1, m2) = g["stages"], g["microbatches"]
    st1 = calc.pp_stages(g["model"], p, m1)
    big, hw, node = g["big_model"], g["hardware"], g["gpus_per_node"]
    one_node = calc.weights_per_gpu_bytes(big, node)
    layout = calc.parallel_layout(big, hw, reserve_bytes=g["reserve_bytes"], gpus_per_node=node)
    return {
        "a-layers": st1["layers_per_stage"],
        "b-boundaries": st1["boundaries"],
        "c-handoff": st1["handoff_bytes"],
        "d-bubble-m1": _pct(st1["bubble"]),
        "e-bubble-m2": _pct(calc.pipeline_bubble(p, m2)),
        "f-m-needed": _microbatches_for(p, g["target_bubble"]),
        "g-node-per-gpu": _gb(one_node),
        "h-node-fits": layout["pp"] == 1,
        "i-layout-gpus": layout["gpus"],
        "j-layout-per-gpu": _gb(layout["weight_bytes_per_gpu"]),
    }


def _mistakes_17_6(g: dict) -> dict:
    s = _solve_17_6(g)
    p, (m1, m2), t = g["stages"], g["microbatches"], g["target_bubble"]
    total = "the pipe runs m + p - 1 stage-steps: bubble = (p - 1) / (m + p - 1)"
    return {
        "b-boundaries": [(p, "p stages have p - 1 boundaries between them")],
        "c-handoff": [(s["c-handoff"] * (p - 1), "per boundary: one activation vector, "
                                                 "hidden x 2 bytes")],
        "d-bubble-m1": [(_pct((p - 1) / m1), total), (_pct((p - 1) / (m1 + p)), total)],
        "e-bubble-m2": [(_pct((p - 1) / m2), total), (_pct((p - 1) / (m2 + p)), total)],
        "f-m-needed": [(math.ceil((p - 1) / t - 1e-9),
                        "solve (p - 1) / (m + p - 1) <= target for m: m >= (p - 1)(1/target - 1)"),
                       (s["f-m-needed"] - 1, "round m up: one fewer microbatch misses the "
                                             "target")],
        "g-node-per-gpu": [(_gb(g["big_weight_bytes"]), "divide the weights over the node's "
                                                         "GPUs")],
        "h-node-fits": [(not s["h-node-fits"], "compare weights per GPU plus the reserve with "
                                               "one card's memory")],
        "i-layout-gpus": [(s["i-layout-gpus"] // 2, "the weights plus the reserve must fit: "
                                                    "take the next layout up")],
    }


def _bubble_on_target_17_6(g: dict) -> bool:
    """Does the bubble at the answer equal the target exactly, (p - 1)(1/target - 1) whole?"""
    edge = (g["stages"] - 1) * (1 / g["target_bubble"] - 1)
    return abs(edge - round(edge)) < 1e-6


def _screen_17_6(seed: int) -> str | None:
    g = _params_17_6(seed)
    # seed 0 keeps the chapter's 5% at p = 4, exactly on the edge: both m and m + 1 are
    # accepted there (_also_accepted_17_6); no other seed may sit on it
    if seed and _bubble_on_target_17_6(g):
        return ("the bubble at the fewest microbatches equals the target exactly, a "
                "floating-point knife edge")
    return screen_answers(EXERCISE_17_6, _solve_17_6(g))


def _also_accepted_17_6(g: dict) -> dict:
    # seed 0 keeps the chapter's 5% with p = 4: 57 microbatches give exactly 3/60 = 5%, which
    # meets the target; a floating-point comparison can land one microbatch higher
    if not _bubble_on_target_17_6(g):
        return {}
    m = _microbatches_for(g["stages"], g["target_bubble"])
    return {"f-m-needed": [(m + 1, "one more than needed: with one microbatch fewer the "
                                   "bubble equals the target exactly, which meets it, though "
                                   "floating point can put it a hair above")]}


EXERCISE_17_6 = register(Exercise(
    id="17-6", title="The pipeline bubble, and where TP stops and PP starts", section="17 §7",
    parts=(
        Part("a-layers", "layers per stage", "layers", "rel", 0.001),
        Part("b-boundaries", "stage boundaries a token crosses", "boundaries", "exact"),
        Part("c-handoff", "bytes handed across one boundary per token", "B", "rel", 0.001),
        Part("d-bubble-m1", "bubble with the first microbatch count", "%", "rel", 0.005),
        Part("e-bubble-m2", "bubble with the second microbatch count", "%", "rel", 0.005),
        Part("f-m-needed", "fewest microbatches that meet the bubble target", "microbatches",
             "exact", points=2),
        Part("g-node-per-gpu", "405B weights per GPU at TP over one whole node", "GB", "rel",
             0.005),
        Part("h-node-fits", "does one node (TP only) hold the 405B with the reserve?",
             kind="bool"),
        Part("i-layout-gpus", "GPUs in the smallest TP-first layout that fits", "GPUs", "exact"),
        Part("j-layout-per-gpu", "weights per GPU in that layout", "GB", "rel", 0.005),
    ),
    make_params=_params_17_6, solve=_solve_17_6, mistakes=_mistakes_17_6,
    conditions=("the bubble at the fewest microbatches is below the target, not equal to it "
                "(seed 0 keeps the chapter's 5%, where it is equal: one microbatch more is "
                "accepted there)",),
    screen=_screen_17_6, also_accepted=_also_accepted_17_6,
))


# --- 17-7: disaggregated pool sizing and the KV hop (17 §8) ------------------------------------

def _params_17_7(seed: int) -> dict:
    c = _variant("17-7", seed,
                 dict(rate=ch17.REQUEST_RATE_PER_S, prompt=MEAN_PROMPT_8, output=MEAN_OUTPUT_8,
                      pcap=ch17.PREFILL_TOK_PER_S_PER_GROUP,
                      dcap=ch17.DECODE_TOK_PER_S_PER_GROUP, model=specs.LLAMA_70B,
                      context=ch17.LONG_CONTEXT_TOKENS, hw=H100, rdma=RDMA_GBIT_PER_S),
                 dict(rate=(40, 60, 100, 150, 250), prompt=(800, 1_500, 2_000, 3_000, 6_000),
                      output=(150, 250, 400, 700), pcap=(8_000, 10_000, 12_000, 16_000),
                      dcap=(1_800, 2_500, 3_000, 4_000),
                      model=(specs.LLAMA_70B, specs.LLAMA_8B, specs.LLAMA_405B),
                      context=(4_000, 8_000, 16_000, 32_000),
                      hw=(specs.H100_SXM, specs.A100_80GB), rdma=(100, 200, 400)))
    m = c["model"]
    return dict(request_rate_per_s=c["rate"], mean_prompt_tokens=c["prompt"],
                mean_output_tokens=c["output"], prefill_tok_per_s_per_group=c["pcap"],
                decode_tok_per_s_per_group=c["dcap"], model=m, n_layers=m.n_layers,
                kv_bytes_per_token=calc.kv_bytes_per_token(m), context_tokens=c["context"],
                nvlink_bytes_per_s=c["hw"].interconnect_bytes_per_s,
                rdma_gbit_per_s=c["rdma"])


def _rdma_bytes_per_s(g: dict) -> float:
    return g["rdma_gbit_per_s"] * 1e9 / 8   # bits to bytes


def _solve_17_7(g: dict) -> dict:
    pools = calc.disaggregated_pools(g["request_rate_per_s"], g["mean_prompt_tokens"],
                                     g["mean_output_tokens"],
                                     prefill_tok_per_s_per_group=g["prefill_tok_per_s_per_group"],
                                     decode_tok_per_s_per_group=g["decode_tok_per_s_per_group"])
    m, L = g["model"], g["context_tokens"]
    rdma_s = calc.kv_transfer_s(m, L, _rdma_bytes_per_s(g))
    return {
        "a-prompt-demand": pools["prompt_tok_per_s"],
        "b-prefill-groups": pools["prefill_groups"],
        "c-output-demand": pools["output_tok_per_s"],
        "d-decode-groups": pools["decode_groups"],
        "e-ratio": pools["prefill_to_decode"],
        "f-kv": _gb(calc.kv_bytes(m, L, block_tokens=1)),
        "g-nvlink": _ms(calc.kv_transfer_s(m, L, g["nvlink_bytes_per_s"])),
        "h-rdma": _ms(rdma_s),
        "i-per-layer": _ms(rdma_s / g["n_layers"]),
    }


def _mistakes_17_7(g: dict) -> dict:
    s = _solve_17_7(g)
    floor = "a pool needs whole groups: round the division up"
    bits = "the NIC's 400 Gb/s-style rate is in bits: divide by 8 for bytes"
    return {
        "b-prefill-groups": [(math.floor(s["a-prompt-demand"] / g["prefill_tok_per_s_per_group"]),
                              floor)],
        "d-decode-groups": [(math.floor(s["c-output-demand"] / g["decode_tok_per_s_per_group"]),
                             floor)],
        "e-ratio": [(1 / s["e-ratio"], "prefill groups over decode groups")],
        "h-rdma": [(s["h-rdma"] / 8, bits)],
        "i-per-layer": [(s["i-per-layer"] / 8, bits)],
    }


register(Exercise(
    id="17-7", title="Size disaggregated prefill and decode pools", section="17 §8",
    parts=(
        Part("a-prompt-demand", "prompt tokens per second the prefill pool must absorb", "tok/s",
             "rel", 0.001),
        Part("b-prefill-groups", "prefill GPU groups", "groups", "exact", points=2),
        Part("c-output-demand", "output tokens per second the decode pool must produce", "tok/s",
             "rel", 0.001),
        Part("d-decode-groups", "decode GPU groups", "groups", "exact", points=2),
        Part("e-ratio", "prefill groups per decode group", "x", "rel", 0.005),
        Part("f-kv", "KV bytes one long request ships to the decode pool", "GB", "rel", 0.005),
        Part("g-nvlink", "that transfer over NVLink", "ms", "rel", 0.005),
        Part("h-rdma", "that transfer over RDMA", "ms", "rel", 0.005),
        Part("i-per-layer", "one layer's share of the RDMA transfer (shipped layer by layer)",
             "ms", "rel", 0.005),
    ),
    make_params=_params_17_7, solve=_solve_17_7, mistakes=_mistakes_17_7,
))

