"""Chapter 17 §10: weight quantization and speculative decoding arithmetic."""

from __future__ import annotations

from companion import calc
from companion.chapters import ch17
from companion.ledger import Entry, entry
from companion.specs import H100_SXM, LLAMA_8B
from companion.units import GB, ms

S = "17.10"


def _term(j: int) -> float:
    """The j-th term alpha^j of 1 + alpha + ... + alpha^k, as a difference of expectations."""
    return (calc.speculative_expected_tokens(ch17.SPEC_ACCEPTANCE, j)
            - calc.speculative_expected_tokens(ch17.SPEC_ACCEPTANCE, j - 1))


# the sections its entries lie in (or under): the ledger computes this module only for them
SECTIONS = (S,)


def entries() -> list[Entry]:
    hw, m = H100_SXM, LLAMA_8B
    q = calc.quantization_ceiling(m, hw, ch17.INT8_BYTES_PER_PARAM)
    expected = calc.speculative_expected_tokens(ch17.SPEC_ACCEPTANCE, ch17.SPEC_DRAFT_LEN)
    decode_fraction = calc.roofline_point(calc.decode_intensity(m), hw)["fraction_of_peak"]
    return [
        entry("17.10/int8-weights-GB", S, "8B in INT8: weights = 8e9 x 1 B", "8", "GB",
              q["weight_bytes"] / GB),
        entry("17.10/int8-ms", S, "time per token = 8e9 / 3.35e12", "2.39", "ms",
              q["step_s"] / ms),
        entry("17.10/int8-tok-s", S, "decode ceiling = 1 / 0.00239", "419", "tok/s",
              q["tokens_per_s"]),
        entry("17.10/bf16-tok-s", S, "(was 209)", "209", "tok/s", q["baseline_tokens_per_s"]),
        entry("17.10/int8-intensity", S, "intensity = 2 FLOPs / 1 byte", "2", "FLOP/byte",
              q["intensity_flop_per_byte"]),
        entry("17.10/int8-speedup", S, "halve the bytes and the ceiling doubles (the 2x)", "2",
              "x", q["speedup"]),
        entry("17.10/spec-term-2", S, "alpha^2", "0.49", "tokens", _term(2)),
        entry("17.10/spec-term-3", S, "alpha^3", "0.343", "tokens", _term(3)),
        entry("17.10/spec-term-4", S, "alpha^4", "0.240", "tokens", _term(4)),
        entry("17.10/spec-expected", S, "k = 4, alpha = 0.7: 2.77 tokens per pass", "2.77",
              "tokens", expected),
        entry("17.10/spec-latency-x", S, "up to ~2.8x lower single-stream latency", "2.8", "x",
              expected),
        entry("17.10/idle-arithmetic", S, "a machine that is 99.7% idle arithmetic", "99.7", "%",
              100 * (1 - decode_fraction)),
    ]
