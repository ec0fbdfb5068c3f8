"""The closed forms both chapters lean on: KV sizing, read volumes, roofline, FLOP counts.

Pure functions of validated arguments, base units in and out (bytes, seconds, FLOP, tokens).
Docstrings give the formula and where the chapters use it.
"""

from __future__ import annotations

import math
from typing import NamedTuple

from companion import validate as v
from companion.formulas.args import hardware_arg as _hardware
from companion.formulas.args import model_arg as _model
from companion.serves import serves
from companion.specs import Hardware, Model

__all__ = [
    "kv_bytes_per_token", "kv_tokens_allocated", "kv_bytes", "kv_bytes_at_context",
    "held_tokens", "max_concurrent",
    "read_bytes_per_output_token", "kv_crossover_batch", "ridge_point", "attention_pairs",
    "QUANT_FORMATS", "quantized_bytes", "bits_per_value", "speculative_expected_tokens",
    "pipeline_bubble", "static_batch_utilization", "amdahl_speedup", "cache_retention_value",
    "matrix_flops", "attention_flops_per_pair", "attention_flops", "prefill_flops",
    "flops_per_token_or_default", "expected_experts_touched", "moe_streamed_weight_bytes",
    "StepTimeParts", "decode_step_parts", "decode_step_time", "attainable_flops", "mbu", "mfu",
    "time_at_mfu", "measured_prefill_mfu",
]


def _as_int_if_whole(x: float):
    return int(round(x)) if abs(x - round(x)) < 1e-9 * max(1.0, abs(x)) else x


# --- KV sizing (8.1.2, 8.3.1-8.3.2, 17 §4-§5) ----------------------------------------------

@serves("8.1.2", "17.4")
def kv_bytes_per_token(model: Model, bytes_per_value: float = 2) -> int:
    """KV bytes one token holds in every layer: layers x values per layer x bytes_per_value.

    Values per layer are 2 (K and V) x KV heads x head_dim, or for MLA the compressed latent
    plus the rope key (kv_lora_rank + qk_rope_head_dim). Qwen3-8B in BF16: 2 x 36 x 8 x 128 x 2
    = 147,456 B = 144 KiB (8.1.2); the Chapter 17 8B shape: 131,072 B ("128 KB"), the 70B
    shape: 327,680 B (17 §4); DeepSeek-V3's latent: 61 x 576 x 2 = 70,272 B. A model with
    sliding-window layers holds this per token only while the context fits the window; see
    ``kv_bytes_at_context``. A fractional bytes_per_value (q8_0 is 34/32) gives a float when
    the product is not whole.

    >>> from companion import calc, specs, units
    >>> calc.kv_bytes_per_token(specs.QWEN3_8B)
    147456
    >>> calc.kv_bytes_per_token(specs.QWEN3_8B) / units.KiB
    144.0
    >>> calc.kv_bytes_per_token(specs.LLAMA_70B)
    327680
    """
    m = _model(model)
    b = v.positive("bytes_per_value", bytes_per_value)
    return _as_int_if_whole(m.n_layers * m.kv_values_per_layer * b)


@serves("8.3.1")
def kv_tokens_allocated(tokens: int, block_tokens: int = 16) -> int:
    """Token slots a paged allocator gives ``tokens`` tokens: ceil(tokens / p) x p (8.3.1)."""
    t = v.tokens("tokens", tokens)
    p = v.tokens("block_tokens", block_tokens, minimum=1)
    return -(-t // p) * p


def _held_token_layers(m: Model, tokens: int, block_tokens: int) -> int:
    """Sum over layers of the token slots each keeps: the whole context, or in a sliding layer
    the last W - 1 tokens (the next token attends to those and itself: W)."""
    if m.sliding_window is None:
        return m.n_layers * kv_tokens_allocated(tokens, block_tokens)
    return sum(kv_tokens_allocated(tokens if w is None else min(tokens, w - 1), block_tokens)
               for w in m.layer_windows)


@serves("8.1.2")
def kv_bytes(model: Model, tokens: int, *, block_tokens: int = 16, bytes_per_value: float = 2):
    """KV bytes for ``tokens`` tokens, rounded up to whole blocks (``block_tokens=1``: no rounding).

    2048 tokens of Qwen3-8B: 288 MiB; 2304 (= 2048 + 255 rounded to 16): 324 MiB (8.1.2).
    Sliding-window layers keep at most W - 1 tokens (see ``kv_bytes_at_context``).

    >>> from companion import calc, specs, units
    >>> calc.kv_bytes(specs.QWEN3_8B, 2048) / units.MiB
    288.0
    >>> calc.kv_bytes(specs.QWEN3_8B, 2048 + 255) / units.MiB   # 2303 tokens fill 144 blocks
    324.0
    """
    m = _model(model)
    held = _held_token_layers(m, v.tokens("tokens", tokens), block_tokens)
    b = v.positive("bytes_per_value", bytes_per_value)
    return _as_int_if_whole(held * m.kv_values_per_layer * b)


def kv_bytes_at_context(model: Model, context_tokens: int, *, bytes_per_value: float = 2):
    """KV one sequence holds after L tokens: sum over layers of min(L, W - 1) x values.

    Full-attention layers keep all L tokens; a layer with a sliding window W keeps the last
    W - 1, which the next token attends to together with itself (transformers' sliding cache
    holds exactly that; tests/test_models.py checks it against tools/reference_counts.py).
    Without windows this is L x ``kv_bytes_per_token``. Gemma-2-style alternating layers cost
    about half of a full cache at long context; Mistral-7B-v0.1's 4096-token window caps the
    whole cache at 4095 tokens. No block rounding (use ``kv_bytes`` for paged blocks).
    """
    return kv_bytes(model, v.tokens("context_tokens", context_tokens), block_tokens=1,
                    bytes_per_value=bytes_per_value)


@serves("8.1.2")
def held_tokens(prompt_tokens: int, output_tokens: int) -> int:
    """Tokens whose KV a request holds once all outputs are generated: prompt + output - 1.

    The last output token is returned but never fed back, so its KV is never written (8.1.2).
    """
    p = v.tokens("prompt_tokens", prompt_tokens)
    g = v.tokens("output_tokens", output_tokens, minimum=1)
    return p + g - 1


@serves("8.1.2", "8.3.2")
def max_concurrent(kv_budget_bytes: float, model: Model, prompt_tokens: int, output_tokens: int,
                   *, shared_prefix_tokens: int = 0, block_tokens: int = 16,
                   bytes_per_value: float = 2) -> int:
    """How many requests fit when each reserves its end-of-generation KV up front.

    Independent: floor(budget / kv_bytes(prompt + output - 1)), e.g. floor(12288 / 324) = 37
    short and floor(12288 / 1188) = 10 long requests in 12 GiB (8.1.2). With a shared prefix
    stored once: floor((budget - prefix) / private), e.g. (12288 - 864) / 324 -> 35 (8.3.2).
    Only whole blocks of the prefix are shared (8.3.2): a prefix that ends inside a block
    shares floor(prefix / p) blocks, and each request holds its own copy of the partial one.

    >>> from companion import calc, specs, units
    >>> calc.max_concurrent(12 * units.GiB, specs.QWEN3_8B, 8192, 256)
    10
    >>> calc.max_concurrent(12 * units.GiB, specs.QWEN3_8B, 8192, 256,
    ...                     shared_prefix_tokens=6144)
    35
    """
    budget = v.nonnegative("kv_budget_bytes", kv_budget_bytes)
    held = held_tokens(prompt_tokens, output_tokens)
    prefix = v.tokens("shared_prefix_tokens", shared_prefix_tokens)
    if prefix > v.tokens("prompt_tokens", prompt_tokens):
        raise ValueError(f"shared_prefix_tokens: {prefix} exceeds prompt_tokens={prompt_tokens}")
    kw = dict(block_tokens=block_tokens, bytes_per_value=bytes_per_value)
    # Only whole blocks are shared; a partly filled prefix block is each request's own copy.
    prefix -= prefix % v.tokens("block_tokens", block_tokens, minimum=1)
    prefix_bytes = kv_bytes(model, prefix, **kw) if prefix else 0
    private_bytes = kv_bytes(model, held - prefix, **kw)
    if private_bytes == 0:
        raise ValueError("shared_prefix_tokens: covers everything a request holds, so no "
                         "request needs private KV and the capacity is unbounded")
    if budget < prefix_bytes:
        return 0
    return int((budget - prefix_bytes) // private_bytes)


# --- read volume and batching (8.2.1) -----------------------------------------------------

@serves("8.2.1")
def read_bytes_per_output_token(weight_bytes: float, batch: int, context_tokens: int,
                                kv_bytes_per_token: float) -> float:
    """Bytes read per output token in one decode round: D_w / b + L k (8.2.1, Figure 8-3).

    Qwen3-8B at a 2K context reads 14.38 GiB per output token at batch 1 and 0.50 GiB at
    batch 64 (8.2.1):

    >>> from companion import calc, specs, units
    >>> d_w = specs.QWEN3_8B.streamed_weight_bytes
    >>> k = calc.kv_bytes_per_token(specs.QWEN3_8B)
    >>> round(calc.read_bytes_per_output_token(d_w, 1, 2048, k) / units.GiB, 2)
    14.38
    >>> round(calc.read_bytes_per_output_token(d_w, 64, 2048, k) / units.GiB, 2)
    0.5
    """
    w = v.positive("weight_bytes", weight_bytes)
    b = v.count("batch", batch)
    L = v.tokens("context_tokens", context_tokens)
    k = v.positive("kv_bytes_per_token", kv_bytes_per_token)
    return w / b + L * k


@serves("8.2.1")
def kv_crossover_batch(weight_bytes: float, context_tokens: int, kv_bytes_per_token: float) -> int:
    """Smallest batch whose KV reads reach the shared weight read: b_KV = ceil(D_w / (L k)).

    51 at 2K and 13 at 8K for Qwen3-8B (8.2.1).

    >>> from companion import calc, specs
    >>> d_w = specs.QWEN3_8B.streamed_weight_bytes
    >>> k = calc.kv_bytes_per_token(specs.QWEN3_8B)
    >>> calc.kv_crossover_batch(d_w, 2048, k), calc.kv_crossover_batch(d_w, 8192, k)
    (51, 13)
    """
    w = v.positive("weight_bytes", weight_bytes)
    L = v.tokens("context_tokens", context_tokens, minimum=1)
    k = v.positive("kv_bytes_per_token", kv_bytes_per_token)
    return math.ceil(w / (L * k))


# --- roofline (8.2.1, 17 §1-§2, §9) --------------------------------------------------------

def ridge_point(hardware: Hardware) -> float:
    """FLOP per byte at which compute and bandwidth roofs meet: peak / bandwidth (17 §2).

    989 TFLOP/s over 3.35 TB/s on the H100 SXM: about 295 FLOP per byte.

    >>> from companion import calc, specs
    >>> round(calc.ridge_point(specs.H100_SXM))
    295
    """
    hw = _hardware(hardware)
    return hw.peak_flops_per_s / hw.mem_bw_bytes_per_s


@serves("17.2")
def attainable_flops(intensity_flop_per_byte: float, hardware: Hardware) -> float:
    """Roofline: min(peak, intensity x bandwidth) in FLOP/s (17 §2)."""
    i = v.positive("intensity_flop_per_byte", intensity_flop_per_byte)
    hw = _hardware(hardware)
    return min(hw.peak_flops_per_s, i * hw.mem_bw_bytes_per_s)


@serves("8.2.3")
def attention_pairs(new_tokens: int, history_tokens: int) -> int:
    """Causal query-key pairs of c new tokens on h cached ones: c h + c(c+1)/2 (8.2.3).

    c = 512: 131,328 pairs at h = 0 and 4,063,488 at h = 7680 (Figure 8-8).

    >>> from companion import calc
    >>> calc.attention_pairs(512, 0), calc.attention_pairs(512, 7680)
    (131328, 4063488)
    """
    c = v.tokens("new_tokens", new_tokens)
    h = v.tokens("history_tokens", history_tokens)
    return c * h + c * (c + 1) // 2


@serves("8.6.3")
def matrix_flops(model: Model, tokens: int, *, include_lm_head: bool = False) -> float:
    """Matrix FLOPs for ``tokens`` new tokens: 2 x parameters x tokens.

    ``include_lm_head=False`` counts the transformer layers only (prefill, recomputation);
    True counts every read-once matrix, i.e. D_w / bytes_per_param (verification rows, 8.6.3).
    """
    m = _model(model)
    t = v.tokens("tokens", tokens)
    # an MoE token computes only through its k routed experts (active parameters)
    params = m.active_streamed_params if include_lm_head else m.active_layer_params
    return 2.0 * params * t


def attention_flops_per_pair(model: Model) -> float:
    """Attention FLOPs per causal query-key pair: 2 x (qk width + v width) x query heads x layers.

    (QK^T and PV each a multiply-add per element; 4 x head_dim x heads x layers when both widths
    are head_dim.) 589,824 for Qwen3-8B. MLA counts its expanded heads (192 + 128 wide).
    """
    m = _model(model)
    return 2.0 * (m.qk_head_dim + m.value_head_dim) * m.n_query_heads * m.n_layers


def attention_flops(model: Model, new_tokens: int, history_tokens: int = 0) -> float:
    """Attention FLOPs of c new tokens on h cached ones: pairs x FLOP per pair."""
    return attention_pairs(new_tokens, history_tokens) * attention_flops_per_pair(model)


@serves("8.3.4")
def prefill_flops(model: Model, new_tokens: int, history_tokens: int = 0) -> float:
    """Prefill FLOPs: layer matrices for the new tokens plus causal attention (8.3.4).

    Recomputing the 6144-token prefix of Qwen3-8B: 96.5 TFLOP.
    """
    c = v.tokens("new_tokens", new_tokens)
    h = v.tokens("history_tokens", history_tokens)
    return matrix_flops(model, c) + attention_flops(model, c, h)


@serves("8.2.1")
class StepTimeParts(NamedTuple):
    """The two roofline terms of one decode round, seconds (8.2.1)."""

    compute_s: float
    read_s: float

    @property
    def step_s(self) -> float:
        return max(self.compute_s, self.read_s)

    @property
    def bound(self) -> str:
        return "compute" if self.compute_s > self.read_s else "memory"


def _experts_touched(n_experts: int, experts_per_token: int, batch: int) -> float:
    # E (1 - (1 - k/E)^b): distinct experts b uniformly routed tokens touch (see formulas.moe)
    return n_experts * (1.0 - (1.0 - experts_per_token / n_experts) ** batch)


def _streamed_bytes_at_batch(m: Model, batch: int) -> float:
    """D_w of one decode step of ``batch`` sequences: all of it for a dense model; for an MoE
    the dense part plus the experts the batch touches (``calc.moe_streamed_weight_bytes``)."""
    if not m.is_moe:
        return m.streamed_weight_bytes
    touched = _experts_touched(m.n_experts, m.experts_per_token, batch)
    dense = m.streamed_params - m.routed_expert_params
    return (dense + m.moe_layers * touched * m.expert_params) * m.bytes_per_param


# the validated forms (calc.expected_experts_touched, calc.moe_streamed_weight_bytes; the
# rest of the MoE counting is companion.formulas.moe)

def expected_experts_touched(n_experts: int, experts_per_token: int, batch: int) -> float:
    """Distinct experts one layer reads for b tokens under uniform top-k routing.

    E (1 - (1 - k/E)^b): Qwen3-30B-A3B (E = 128, k = 8) touches 8 at b = 1, 51.6 at b = 8
    and 125.9 at b = 64; Mixtral (E = 8, k = 2) already 7.2 at b = 8.
    """
    e = v.count("n_experts", n_experts)
    k = v.count("experts_per_token", experts_per_token)
    if k > e:
        raise ValueError(f"experts_per_token: {k} exceeds n_experts={e}")
    return _experts_touched(e, k, v.count("batch", batch))


def moe_streamed_weight_bytes(model: Model, batch: int) -> float:
    """Weight bytes one decode step of b sequences reads: dense part + touched experts.

    D_w(b) = (streamed params - all routed experts + moe_layers x E_touched(b) x expert)
    x bytes_per_param. Equal to ``model.streamed_weight_bytes`` for a dense model at any batch;
    for an MoE it rises from the active weights at b = 1 to all of D_w as b grows.
    """
    return _streamed_bytes_at_batch(_model(model), v.count("batch", batch))


@serves("8.2.1")
def flops_per_token_or_default(model: Model, flops_per_token: float | None = None) -> float:
    """F, the FLOPs of one new token: ``flops_per_token`` when given (validated), else one
    token through every read-once matrix, ``matrix_flops(model, 1, include_lm_head=True)``
    (8.2.1)."""
    m = _model(model)
    if flops_per_token is None:
        return matrix_flops(m, 1, include_lm_head=True)
    return v.positive("flops_per_token", flops_per_token)


@serves("8.2.1")
def decode_step_parts(model: Model, hardware: Hardware, batch: int, context_tokens: int, *,
                      bytes_per_value: float = 2, flops_per_token: float | None = None,
                      weights_in_hbm: bool = True) -> StepTimeParts:
    """Compute and read terms of T_step ~ max(b F / P, (D_w + b L k) / beta) (8.2.1).

    F defaults to 2 x streamed params (one new token through every read-once matrix; an MoE's
    active ones), and an MoE's D_w is what the batch touches (``moe_streamed_weight_bytes``).
    ``.step_s`` is their max (``decode_step_time``); ``weights_in_hbm=False`` drops D_w from
    the read (Figure 8-4's ROM-served weights).
    """
    m = _model(model)
    hw = _hardware(hardware)
    b = v.count("batch", batch)
    L = v.tokens("context_tokens", context_tokens)
    F = flops_per_token_or_default(m, flops_per_token)
    k = kv_bytes_per_token(m, bytes_per_value)
    # each sequence's KV: L k, or what sliding-window layers keep of it (at most W - 1 tokens)
    kv = (L * k if m.sliding_window is None
          else kv_bytes_at_context(m, L, bytes_per_value=bytes_per_value))
    weights = _streamed_bytes_at_batch(m, b) if weights_in_hbm else 0.0
    return StepTimeParts(compute_s=b * F / hw.peak_flops_per_s,
                         read_s=(weights + b * kv) / hw.mem_bw_bytes_per_s)


@serves("8.2.1")
def decode_step_time(model: Model, hardware: Hardware, batch: int, context_tokens: int, *,
                     bytes_per_value: float = 2, flops_per_token: float | None = None) -> float:
    """Roofline lower bound of one decode round: max(b F / P, (D_w + b L k) / beta) seconds (8.2.1).

    The larger of ``decode_step_parts``' two terms; F defaults to 2 x streamed params.
    """
    return decode_step_parts(model, hardware, batch, context_tokens,
                             bytes_per_value=bytes_per_value,
                             flops_per_token=flops_per_token).step_s


@serves("8.6.3", "17.9")
def mbu(bytes_per_s: float, hardware: Hardware) -> float:
    """Model bandwidth utilisation: achieved bytes/s over peak bandwidth (17 §9, 8.6.3)."""
    return v.nonnegative("bytes_per_s", bytes_per_s) / _hardware(hardware).mem_bw_bytes_per_s


@serves("8.6.3", "17.9")
def mfu(flops_per_s: float, hardware: Hardware) -> float:
    """Model FLOPs utilisation: achieved model FLOP/s over dense peak (17 §9, 8.6.3)."""
    return v.nonnegative("flops_per_s", flops_per_s) / _hardware(hardware).peak_flops_per_s


@serves("8.5.2", "8.6.3")
def time_at_mfu(flops: float, hardware: Hardware, efficiency: float) -> float:
    """Compute time: FLOPs / (dense peak x efficiency) seconds (8.5.2, 8.6.3).

    A's 2137.5 TFLOP prefill at 57.77% of 503.8 TFLOP/s: 7.34 s; D's 2.56 TFLOP of
    verification: 8.8 ms.
    """
    f = v.nonnegative("flops", flops)
    hw = _hardware(hardware)
    e = v.probability("efficiency", efficiency, open_low=True)
    return f / (hw.peak_flops_per_s * e)


@serves("8.3.4", "8.6.3")
def measured_prefill_mfu(model: Model, hardware: Hardware, batch: int, new_tokens: int,
                         history_tokens: int, prefill_s: float) -> float:
    """MFU of a measured prefill: b x prefill FLOPs / time / peak (8.6.3, 8.3.4).

    16 x 2048 new tokens on a 6144-token cached prefix in 2.04 s: 593.8 TFLOP, 57.77% (printed
    58%); 2048 tokens at batch 1 in 94.8 ms: 62.2% (printed 62%).
    """
    b = v.count("batch", batch)
    v.tokens("new_tokens", new_tokens, minimum=1)
    t = v.positive("prefill_s", prefill_s)
    hw = _hardware(hardware)
    return b * prefill_flops(model, new_tokens, history_tokens) / t / hw.peak_flops_per_s


# --- quantised sizes (8.4.1-8.4.2, 17 §10) -------------------------------------------------

# format -> (values per group, bytes per group)
QUANT_FORMATS = {
    "fp32": (1, 4), "bf16": (1, 2), "fp16": (1, 2), "fp8": (1, 1), "int8": (1, 1),
    "q8_0": (32, 34),   # 32 one-byte codes + a 2-byte scale
    "q4_0": (32, 18),   # 32 four-bit codes + a 2-byte scale
    "Q2_K": (256, 84),  # 64 bytes of 2-bit codes + 20 bytes of scales and minimums
}


def quantized_bytes(n_values: int, fmt: str) -> int:
    """Bytes to store ``n_values`` values in ``fmt``; grouped formats round up to whole groups.

    ceil(n / group) x bytes per group: 32 values take 64 bytes in BF16, 34 in q8_0 (32 one-byte
    codes and a 2-byte scale) and 18 in q4_0 (8.4.2, Figure 8-23); a Q2_K group of 256 values
    takes 84 bytes (8.4.1). Formats: ``QUANT_FORMATS``.

    >>> from companion import calc
    >>> [calc.quantized_bytes(32, f) for f in ("bf16", "q8_0", "q4_0")]
    [64, 34, 18]
    >>> calc.quantized_bytes(256, "Q2_K")
    84
    """
    n = v.integer("n_values", n_values, minimum=0, what="a whole number of values")
    f = v.choice("fmt", fmt, QUANT_FORMATS)
    group, group_bytes = QUANT_FORMATS[f]
    return -(-n // group) * group_bytes


def bits_per_value(fmt: str) -> float:
    """Average stored bits per value, metadata included: q8_0 8.5, q4_0 4.5, Q2_K 2.625."""
    f = v.choice("fmt", fmt, QUANT_FORMATS)
    group, group_bytes = QUANT_FORMATS[f]
    return group_bytes * 8 / group


# --- speculative decoding (8.5.2, 8.5.4, 17 §10) -------------------------------------------

@serves("8.5.2", "17.10")
def speculative_expected_tokens(acceptance, draft_len: int | None = None) -> float:
    """Expected tokens per verification round: 1 + sum_{j<=m} prod_{i<=j} a_i.

    With a single acceptance a and draft_len m: 1 + a + ... + a^m (1.33 for a = 1/4, 3.05 for
    a = 3/4 at m = 4, 8.5.2; 2.77 for a = 0.7, k = 4, 17 §10). Or pass the conditional
    acceptances a_1..a_m as a sequence and omit draft_len.

    >>> from companion import calc
    >>> round(calc.speculative_expected_tokens(0.25, 4), 2)
    1.33
    >>> round(calc.speculative_expected_tokens(0.75, 4), 2)
    3.05
    >>> round(calc.speculative_expected_tokens(0.7, 4), 2)
    2.77
    """
    if draft_len is None:
        seq = v.sequence("acceptance", acceptance, min_len=0)
        probs = [v.probability(f"acceptance[{i}]", a) for i, a in enumerate(seq)]
    else:
        m = v.integer("draft_len", draft_len, minimum=0)
        a = v.probability("acceptance", acceptance)
        probs = [a] * m
    total, survive = 1.0, 1.0
    for a in probs:
        survive *= a
        total += survive
    return total


# --- scheduling, parallelism, Amdahl, cache value --------------------------------------------

@serves("17.7")
def pipeline_bubble(stages: int, microbatches: int) -> float:
    """Idle fraction of a pipeline: (p - 1) / (m + p - 1) (15.8% at p=4, m=16; 17 §7).

    >>> from companion import calc
    >>> round(calc.pipeline_bubble(4, 16), 3)
    0.158
    """
    p = v.count("stages", stages)
    m = v.count("microbatches", microbatches)
    return (p - 1) / (m + p - 1)


@serves("17.6")
def static_batch_utilization(output_lengths) -> float:
    """Useful fraction of slot-steps in a static batch: sum(lengths) / (n x max) (17 §6).

    Eight requests with 100, 200, ..., 800 output tokens: 3,600 / 6,400 = 56%.

    >>> from companion import calc
    >>> calc.static_batch_utilization([100, 200, 300, 400, 500, 600, 700, 800])
    0.5625
    """
    seq = v.sequence("output_lengths", output_lengths)
    lengths = [v.tokens(f"output_lengths[{i}]", x) for i, x in enumerate(seq)]
    longest = max(lengths)
    if longest == 0:
        raise ValueError("output_lengths: at least one request must produce a token")
    return sum(lengths) / (len(lengths) * longest)


@serves("8.6.3")
def amdahl_speedup(fraction: float, factor: float) -> float:
    """Whole-task speedup when a stage taking ``fraction`` of the time runs ``factor`` x faster.

    1 / ((1 - f) + f / s): 1.6x for f = 0.5, s = 4 (8.6.3, Figure 8-36).

    >>> from companion import calc
    >>> calc.amdahl_speedup(0.5, 4), round(calc.amdahl_speedup(0.2, 4), 2)
    (1.6, 1.18)
    """
    f = v.probability("fraction", fraction)
    s = v.positive("factor", factor)
    return 1.0 / ((1.0 - f) + f / s)


@serves("8.3.4")
def cache_retention_value(hit_prob: float, recompute_s: float, fetch_s: float,
                          maintain_s: float) -> float:
    """Expected net time saved by keeping a prefix, in seconds: V_h = p_h (T_r - T_f) - T_m.

    A 2048-token prefix that takes 94.7 ms to recompute, 4.7 ms to fetch and 4.7 ms to keep,
    reused half the time, saves 40.3 ms on average (8.3.4).

    >>> from companion import calc, units
    >>> v = calc.cache_retention_value(0.5, 94.7 * units.ms, 4.7 * units.ms, 4.7 * units.ms)
    >>> round(v / units.ms, 1)
    40.3
    """
    p = v.probability("hit_prob", hit_prob)
    tr = v.nonnegative("recompute_s", recompute_s)
    tf = v.nonnegative("fetch_s", fetch_s)
    tm = v.nonnegative("maintain_s", maintain_s)
    return p * (tr - tf) - tm
