"""Closed forms of 8.4: grouped quantisation layouts and GGML's q8_0/q4_0 encoding of one group
(Figure 8-23), what fits after loading quantised weights, compressed KV and its read saving,
weight offload and its per-round copy, compress-then-transfer, and the time a retried answer
really costs.

Base units in and out (bytes, seconds, tokens); the chapter's MiB/GiB/ms are display only.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from companion import validate as v
from companion.chapters import ch08
from companion.formulas.args import model_arg as _model
from companion.formulas.core import (QUANT_FORMATS, kv_bytes, kv_bytes_per_token, max_concurrent)
from companion.formulas.kv_management import link_transfer_s
from companion.serves import serves
from companion.specs import QWEN3_8B, Model

__all__ = [
    # 8.4.1 grouped formats and memory headroom
    "QUANT_CODE_BITS", "QuantLayout", "quant_group_layout", "quant_format_layout",
    "q2k_file_bytes", "memory_headroom_bytes",
    # 8.4.2 GGML's q8_0 / q4_0 encoding of one group (Figure 8-23)
    "encode_q8_0_group", "decode_q8_0_group", "encode_q4_0_group", "decode_q4_0_group",
    # 8.4.2 compressed KV and its read cost
    "kv_format_bytes_per_value", "kv_quantized_bytes", "max_concurrent_kv_format",
    "compressed_read_saving_s", "fitted_interval_s", "interval_crossover_tokens",
    # 8.4.3 weight offload and transfer
    "ffn_weight_bytes_per_layer", "FfnOffload", "ffn_offload", "OffloadCopy",
    "offload_copy_bound", "min_link_bytes_per_s", "compress_then_transfer_s",
    "min_decompress_bytes_per_s",
    # 8.4.4 retries
    "time_to_correct_answer_s", "expected_time_to_correct_s",
]

# Width of the stored code of each format in core.QUANT_FORMATS; the rest of a group's bytes is
# metadata (scales, minimums). Plain formats store the value itself and no metadata.
QUANT_CODE_BITS = {
    "fp32": 32, "bf16": 16, "fp16": 16, "fp8": 8, "int8": 8,
    "q8_0": 8,   # 32 one-byte codes + a 2-byte scale (8.4.2)
    "q4_0": 4,   # 32 four-bit codes + a 2-byte scale (8.4.2)
    "Q2_K": 2,   # 256 two-bit codes + 20 bytes of scales and minimums (8.4.1)
}


# --- 8.4.1 grouped quantisation ------------------------------------------------------------

class QuantLayout(NamedTuple):
    group_values: int
    code_bytes: float        # group_values x code_bits / 8
    metadata_bytes: float
    group_bytes: float       # code + metadata
    bits_per_value: float    # group_bytes x 8 / group_values
    metadata_fraction: float  # metadata / group_bytes


@serves("8.4.1")
def quant_group_layout(group_values: int, code_bits: float, metadata_bytes: float) -> QuantLayout:
    """Byte layout of one quantisation group: codes, metadata, average bits per value (8.4.1).

    Q2_K: 256 x 2 / 8 = 64 code bytes + 20 = 84 bytes, 84 x 8 / 256 = 2.625 bits, metadata about
    24%; q8_0: 32 + 2 = 34 bytes (8.5 bits); q4_0: 16 + 2 = 18 bytes (4.5 bits, Figure 8-23).
    """
    n = v.count("group_values", group_values)
    bits = v.positive("code_bits", code_bits)
    meta = v.nonnegative("metadata_bytes", metadata_bytes)
    code = n * bits / 8
    total = code + meta
    return QuantLayout(group_values=n, code_bytes=code, metadata_bytes=meta, group_bytes=total,
                       bits_per_value=total * 8 / n, metadata_fraction=meta / total)


def quant_format_layout(fmt: str) -> QuantLayout:
    """``quant_group_layout`` of a named format of ``core.QUANT_FORMATS`` ("Q2_K", "q8_0", ...)."""
    f = v.choice("fmt", fmt, QUANT_FORMATS)
    group, group_bytes = QUANT_FORMATS[f]
    # a format without a listed code width is taken as plain (no metadata)
    code_bits = QUANT_CODE_BITS.get(f, 8 * group_bytes / group)
    return quant_group_layout(group, code_bits, group_bytes - group * code_bits / 8)


def q2k_file_bytes() -> int:
    """Bytes of 8.4.1's Q2_K file of Qwen3-235B-A22B: codes and floats + metadata + header."""
    return ch08.Q2K_FILE_PAYLOAD_BYTES + ch08.Q2K_FILE_METADATA_BYTES + ch08.Q2K_FILE_HEADER_BYTES


@serves("8.4.1")
def memory_headroom_bytes(mem_bytes: float, reserved_bytes: float, weight_bytes: float,
                          kv_cache_bytes: float = 0.0) -> float:
    """Memory left after a reserve, the weights and some KV: M - reserve - W - KV (8.4.1).

    Negative means it does not fit. M2 Max: 96 GB - 8 GiB = 81.41 GiB; the 79.81 GiB Q2_K file
    leaves 1.60 GiB, one 8K request's 1.47 GiB of KV then leaves 0.13 GiB; the 81.97 GiB
    UD-Q2_K_XL file is 0.56 GiB short.
    """
    mem = v.positive("mem_bytes", mem_bytes)
    reserve = v.nonnegative("reserved_bytes", reserved_bytes)
    weights = v.nonnegative("weight_bytes", weight_bytes)
    kv = v.nonnegative("kv_cache_bytes", kv_cache_bytes)
    return mem - reserve - weights - kv


# --- 8.4.2 one group in GGML's q8_0 / q4_0 (Figure 8-23) -------------------------------------

def _one_group(fmt: str, values) -> np.ndarray:
    group = QUANT_FORMATS[fmt][0]
    x = np.asarray(v.sequence("values", values), dtype=float)
    if x.shape != (group,) or not np.isfinite(x).all():
        raise ValueError(f"values: expected {group} finite numbers, got shape {x.shape}")
    return x


def _block_scale_and_codes(fmt: str, block) -> tuple[float, bytes]:
    group_bytes = QUANT_FORMATS[fmt][1]
    if not isinstance(block, (bytes, bytearray)) or len(block) != group_bytes:
        raise ValueError(f"block: expected the {group_bytes} bytes of one {fmt} block")
    return float(np.frombuffer(block[:2], dtype=np.float16)[0]), block[2:]


def _float32_group(fmt: str, values) -> np.ndarray:
    # ggml quantises float32 rows: round the inputs to float32 first, as its callers do
    x = _one_group(fmt, values).astype(np.float32)
    if not np.isfinite(x).all():
        raise ValueError("values: a value lies outside float32's range (ggml quantises float32)")
    return x


def _reciprocal_scale(d: np.float32) -> np.float32:
    """ggml's id = d ? 1.0f/d : 0.0f, in float32 (it multiplies by 1/d, it does not divide)."""
    if d == 0:
        return np.float32(0.0)
    with np.errstate(over="ignore"):
        inv = np.float32(1.0) / d
    if not np.isfinite(inv):
        raise ValueError("values: the block's scale is so small that 1/scale overflows float32, "
                         "where ggml's reference quantizer is undefined")
    return inv


def _half(d: np.float32) -> bytes:
    """The scale as IEEE half, rounded to nearest even (GGML_FP32_TO_FP16); beyond 65504 it is
    stored as infinity, as ggml stores it."""
    with np.errstate(over="ignore"):
        return np.float16(d).tobytes()


def _roundf(x: np.ndarray) -> np.ndarray:
    """C's roundf in float32: halves away from zero (floor(|x|) + floor(2 frac(|x|)), signed)."""
    a = np.abs(x)
    floored = np.floor(a)
    return np.sign(x) * (floored + np.floor(2 * (a - floored)))


@serves("8.4.2")
def encode_q8_0_group(values) -> bytes:
    """GGML q8_0 block of 32 values: 2-byte half scale d = max|x| / 127, then 32 int8 codes
    round(x x (1/d)) (halves away from zero). 34 bytes (8.4.2, Figure 8-23).

    Bit-exact with ggml's reference quantizer (quantize_row_q8_0_ref, and the gguf package's
    Python copy of it): the inputs are float32, and d, 1/d and every product are computed in
    float32, so a code never lands one off at a rounding boundary. An all-zero block has d = 0
    and codes 0.
    """
    x = _float32_group("q8_0", values)
    d = np.abs(x).max() / np.float32(127)
    q = _roundf(x * _reciprocal_scale(d))
    return _half(d) + q.astype(np.int8).tobytes()


@serves("8.4.2")
def decode_q8_0_group(block: bytes) -> np.ndarray:
    """The 32 values a q8_0 block stands for: code x scale (8.4.2)."""
    d, codes = _block_scale_and_codes("q8_0", block)
    return np.frombuffer(codes, dtype=np.int8).astype(float) * d


@serves("8.4.2")
def encode_q4_0_group(values) -> bytes:
    """GGML q4_0 block of 32 values: 2-byte half scale d = m / -8 (m: the value of largest
    magnitude, with its sign; the first one on a tie), then 16 bytes of 4-bit codes
    min(15, trunc(x x (1/d) + 8.5)), value j in the low nibble and value j + 16 in the high
    nibble of byte j. 18 bytes (8.4.2).

    Bit-exact with ggml's reference quantizer (quantize_row_q4_0_ref): float32 inputs, d and
    1/d in float32. An all-zero block has d = 0 (signed as gguf signs it) and every code 8
    (the value 0).
    """
    x = _float32_group("q4_0", values)
    # the value of largest magnitude, with its sign, the first one on a tie, as gguf's
    # quantize_blocks takes it. In a block of zeros that is x[0], so a leading -0.0 gives
    # d = +0.0: gguf's bytes. (ggml's C loop starts from max = +0.0f and would store d = -0.0
    # there; the two references differ only in that sign bit, and the codes are the same.)
    m = x[int(np.argmax(np.abs(x)))]
    d = m / np.float32(-8)
    q = np.minimum(15, np.trunc(x * _reciprocal_scale(d) + np.float32(8.5))).astype(np.uint8)
    half = x.size // 2
    packed = (q[:half] | (q[half:] << 4)).astype(np.uint8)
    return _half(d) + packed.tobytes()


@serves("8.4.2")
def decode_q4_0_group(block: bytes) -> np.ndarray:
    """The 32 values a q4_0 block stands for: (code - 8) x scale (8.4.2)."""
    d, codes = _block_scale_and_codes("q4_0", block)
    packed = np.frombuffer(codes, dtype=np.uint8)
    q = np.concatenate([packed & 0x0F, packed >> 4]).astype(float)
    return (q - 8.0) * d


# --- 8.4.2 compressed KV ---------------------------------------------------------------------

@serves("8.4.2")
def kv_format_bytes_per_value(model: Model, fmt: str) -> float:
    """Average stored bytes per KV value in ``fmt``, scales included (8.4.2).

    Groups run along head_dim, so a head row of d values takes ceil(d / g) groups:
    bytes per value = ceil(d / g) x group_bytes / d (for MLA the row is the 576-value latent). Qwen3-8B (d = 128): q8_0 34/32, q4_0 18/32,
    i.e. 34/64 and 18/64 of BF16.
    """
    m = _model(model)
    f = v.choice("fmt", fmt, QUANT_FORMATS)
    group, group_bytes = QUANT_FORMATS[f]
    row = m.kv_row_values  # a head's head_dim, or MLA's latent + rope key
    return math.ceil(row / group) * group_bytes / row


@serves("8.4.2")
def kv_quantized_bytes(model: Model, tokens: int, fmt: str, *, block_tokens: int = 16):
    """KV bytes of ``tokens`` tokens stored in ``fmt``, rounded up to whole blocks (8.4.2).

    Qwen3-8B at 8K: 1152 MiB in BF16, 612 MiB in q8_0, 324 MiB in q4_0; a finished long request
    (8448 slots): 1188 MiB in BF16, 1188 x 34/64 = 631.125 MiB in q8_0.
    """
    return kv_bytes(model, tokens, block_tokens=block_tokens,
                    bytes_per_value=kv_format_bytes_per_value(model, fmt))


def max_concurrent_kv_format(kv_budget_bytes: float, model: Model, prompt_tokens: int,
                             output_tokens: int, fmt: str, *, shared_prefix_tokens: int = 0,
                             block_tokens: int = 16) -> int:
    """``max_concurrent`` with the KV stored in ``fmt`` (Exercise 8-6).

    12 GiB holds 10 finished long requests in BF16, 19 in q8_0 (631.125 MiB each), 36 in q4_0.
    """
    return max_concurrent(kv_budget_bytes, model, prompt_tokens, output_tokens,
                          shared_prefix_tokens=shared_prefix_tokens, block_tokens=block_tokens,
                          bytes_per_value=kv_format_bytes_per_value(model, fmt))


@serves("8.4.2")
def compressed_read_saving_s(saved_bytes: float, effective_bytes_per_s: float,
                             conversion_s: float) -> float:
    """Net time a compressed read saves: dT = dD / beta - T_c; negative means it costs (8.4.2).

    540 MiB fewer at the measured ~1.16 TB/s: 0.487 ms; with 0.2 ms of conversion 0.287 ms
    saved, with 0.8 ms 0.313 ms lost.
    """
    saved = v.nonnegative("saved_bytes", saved_bytes)
    beta = v.positive("effective_bytes_per_s", effective_bytes_per_s)
    tc = v.nonnegative("conversion_s", conversion_s)
    return saved / beta - tc


@serves("8.4.2")
def fitted_interval_s(fixed_s: float, per_context_token_s: float, context_tokens: int) -> float:
    """A linear fit of the output interval: a + b L seconds (8.4.2).

    Llama-3.1-8B on H100: BF16 6.44 + 4.37e-5 L ms (6.53 ms at 2K, 7.16 ms at 16K = 16,384),
    FP8 6.58 + 2.37e-5 L ms (6.63 and 6.97 ms).
    """
    a = v.nonnegative("fixed_s", fixed_s)
    b = v.nonnegative("per_context_token_s", per_context_token_s)
    L = v.tokens("context_tokens", context_tokens)
    return a + b * L


@serves("8.4.2")
def interval_crossover_tokens(fixed_a_s: float, per_token_a_s: float, fixed_b_s: float,
                              per_token_b_s: float) -> float:
    """Context length where two linear fits a + b L meet: (a_B - a_A) / (b_A - b_B) (8.4.2).

    BF16 vs FP8: 0.14 ms / 2e-5 ms per token = 7000 tokens; beyond it FP8 is faster. inf when
    the slopes are equal; a negative result means they do not cross at any positive length.
    """
    a1 = v.nonnegative("fixed_a_s", fixed_a_s)
    b1 = v.nonnegative("per_token_a_s", per_token_a_s)
    a2 = v.nonnegative("fixed_b_s", fixed_b_s)
    b2 = v.nonnegative("per_token_b_s", per_token_b_s)
    if b1 == b2:
        return math.inf
    return (a2 - a1) / (b1 - b2)


# --- 8.4.3 weight offload --------------------------------------------------------------------

@serves("8.4.3")
def ffn_weight_bytes_per_layer(model: Model) -> float:
    """Bytes of one layer's SwiGLU FFN (gate, up, down): 3 x hidden x intermediate x bytes (8.4.3).

    Qwen3-8B: 3 x 4096 x 12288 x 2 B = 288 MiB.
    """
    m = _model(model)
    if m.hidden_size is None or m.intermediate_size is None:
        raise ValueError(f"model: {m.name} lacks hidden_size or intermediate_size")
    return 3 * m.hidden_size * m.intermediate_size * m.bytes_per_param


class FfnOffload(NamedTuple):
    offloaded_layers: int
    offloaded_bytes: float   # layers x FFN bytes
    buffer_bytes: float      # prefetch buffers, one FFN set each
    net_saved_bytes: float   # offloaded - buffers (negative: the buffers cost more than it frees)


@serves("8.4.3")
def ffn_offload(model: Model, every_n_layers: int | None = None, prefetch_buffers: int = 0, *,
                layers: int | None = None) -> FfnOffload:
    """Accelerator memory freed by offloading FFN weights, net of prefetch buffers (8.4.3).

    Offloaded layers: one in every ``every_n_layers`` (floor(layers / n)), or exactly ``layers``
    of them (give one of the two); freed = offloaded x FFN bytes, spent = buffers x FFN bytes.
    Qwen3-8B, 1 in 4 of 36 layers: 9 x 288 = 2592 MiB; one buffer set: net 2304 MiB (two more
    1152-MiB inputs), two sets: 2016 MiB (8.4.3, Exercise 8-5).
    """
    m = _model(model)
    if (every_n_layers is None) == (layers is None):
        raise TypeError("every_n_layers: give either every_n_layers or layers, not both or "
                        "neither")
    if layers is None:
        n = m.n_layers // v.count("every_n_layers", every_n_layers)
    else:
        n = v.count("layers", layers, minimum=0)
        if n > m.n_layers:
            raise ValueError(f"layers: {n} exceeds the model's {m.n_layers} layers")
    buffers = v.count("prefetch_buffers", prefetch_buffers, minimum=0)
    per_layer = ffn_weight_bytes_per_layer(m)
    offloaded = n * per_layer
    buffer_bytes = buffers * per_layer
    return FfnOffload(offloaded_layers=n, offloaded_bytes=offloaded,
                      buffer_bytes=buffer_bytes, net_saved_bytes=offloaded - buffer_bytes)


class OffloadCopy(NamedTuple):
    copy_s: float          # bytes per round / link
    round_s: float         # max(copy, compute): prefetch can at best hide one behind the other
    tokens_per_s: float    # batch / round_s, an upper bound
    total_copy_s: float    # rounds x copy_s
    copy_hidden: bool      # copy_s <= compute_round_s: prefetch can mask the copy entirely


@serves("8.4.3")
def offload_copy_bound(copy_bytes_per_round: float, link_bytes_per_s: float,
                       compute_round_s: float, *, batch: int = 1, rounds: int = 1) -> OffloadCopy:
    """Per-round lower bound when offloaded weights are copied in every decode round (8.4.3).

    2592 MiB (2.72 GB) over 64 GB/s: 42.5 ms > the 26.26 ms compute round, so 4 requests get at
    most ~94 tokens/s and 255 rounds spend 10.8 s copying; over NVLink-C2C (450 GB/s): 6.0 ms,
    1.54 s, hidden behind compute.
    """
    copy_s = link_transfer_s(v.positive("copy_bytes_per_round", copy_bytes_per_round),
                             link_bytes_per_s)
    compute = v.nonnegative("compute_round_s", compute_round_s)
    b = v.count("batch", batch)
    n = v.count("rounds", rounds)
    round_s = max(copy_s, compute)
    return OffloadCopy(copy_s=copy_s, round_s=round_s, tokens_per_s=b / round_s,
                       total_copy_s=n * copy_s, copy_hidden=copy_s <= compute)


def min_link_bytes_per_s(bytes_per_round: float, rounds: int, budget_s: float) -> float:
    """Smallest one-way bandwidth moving ``rounds`` x ``bytes_per_round`` in ``budget_s`` (Ex. 8-5).

    rounds x S / budget: 255 x 2.72 GB in 1 s needs about 693 GB/s.
    """
    size = v.positive("bytes_per_round", bytes_per_round)
    n = v.count("rounds", rounds)
    budget = v.positive("budget_s", budget_s)
    return n * size / budget


@serves("8.4.3")
def compress_then_transfer_s(size_bytes: float, compressed_fraction: float,
                             link_bytes_per_s: float, decompress_bytes_per_s: float | None = None
                             ) -> float:
    """Time to send ``size_bytes`` compressed to r of their size, then decompress them (8.4.3).

    rS/B + S/R, against S/B sent raw. ``decompress_bytes_per_s`` R counts original (output) bytes; None leaves decompression out
    (the transfer alone). 96 MiB at r = 1/4 over 64 GB/s: 0.39 ms of transfer vs 1.57 ms direct.
    """
    size = v.nonnegative("size_bytes", size_bytes)
    r = v.probability("compressed_fraction", compressed_fraction, open_low=True)
    transfer = link_transfer_s(size * r, link_bytes_per_s)
    if decompress_bytes_per_s is None:
        return transfer
    return transfer + size / v.positive("decompress_bytes_per_s", decompress_bytes_per_s)


@serves("8.4.3")
def min_decompress_bytes_per_s(link_bytes_per_s: float, compressed_fraction: float) -> float:
    """Decompression rate above which compress-then-transfer beats sending raw: B / (1 - r) (8.4.3).

    From rS/B + S/R < S/B. PCIe Gen5 (64 GB/s) at r = 1/4: 85.3 GB/s; the faster the link, the
    faster decompression must be.
    """
    bw = v.positive("link_bytes_per_s", link_bytes_per_s)
    r = v.probability("compressed_fraction", compressed_fraction, open_low=True, open_high=True)
    return bw / (1.0 - r)


# --- 8.4.4 retries ---------------------------------------------------------------------------

@serves("8.4.4")
def time_to_correct_answer_s(attempt_s, check_s: float = 0.0) -> float:
    """Total time to a correct answer: every attempt (failed ones too) plus each check (8.4.4).

    sum(attempt_s) + len(attempt_s) x check_s. Counting only the final, successful generation
    understates it; a faster but more error-prone first answer can take longer overall.
    """
    seq = v.sequence("attempt_s", attempt_s)
    attempts = [v.nonnegative(f"attempt_s[{i}]", t) for i, t in enumerate(seq)]
    check = v.nonnegative("check_s", check_s)
    return sum(attempts) + len(attempts) * check


@serves("8.4.4")
def expected_time_to_correct_s(attempt_s: float, success_prob: float,
                               check_s: float = 0.0) -> float:
    """Expected time until an answer passes its check when every attempt (with its check) costs
    the same and passes independently with probability p: (T + c) / p (8.4.4).

    A geometric retry loop takes 1 / p attempts on average, each costing
    ``time_to_correct_answer_s([T], c)``. An assumption for exploring, not the chapter's
    measurement (which records individual retries): 6.95 s at 28/32 -> 7.95 s.
    """
    p = v.probability("success_prob", success_prob, open_low=True)
    return time_to_correct_answer_s([v.nonnegative("attempt_s", attempt_s)], check_s) / p


# --- derived from the chapter's inputs -------------------------------------------------------------

# 8.4.2's read-bound effective bandwidth (about 1.16 TB/s, "65%" of peak) is Experiment 8-1's
# batch-64 round (8.6.3): D_w + 64 x 2048 x k bytes (printed 34.46 GB) read in 29.63 ms.
MEASURED_READ_BYTES = (QWEN3_8B.streamed_weight_bytes
                       + ch08.EXP81_BATCHES[-1] * ch08.SHORT_PROMPT_TOKENS
                       * kv_bytes_per_token(QWEN3_8B))
MEASURED_ROUND_S = ch08.EXP81_ROUND_S[-1]
DECODE_ROUNDS = ch08.OUTPUT_TOKENS - 1          # 256 outputs: 255 forward passes after the first
