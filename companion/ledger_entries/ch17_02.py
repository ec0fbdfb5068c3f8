"""Chapter 17 §2: roofline, decode and prefill intensity, batched and effective intensity."""

from __future__ import annotations

from companion import calc
from companion.chapters import ch17
from companion.ledger import Entry, entry
from companion.specs import H100_SXM, LLAMA_8B
from companion.units import GB, MB, ms, us

S = "17.2"


# the sections its entries lie in (or under): the ledger computes this module only for them
SECTIONS = (S,)


def entries() -> list[Entry]:
    hw, m = H100_SXM, LLAMA_8B
    sparse = hw.with_(peak_flops_per_s=ch17.H100_SPARSE_PEAK_FLOPS_PER_S)
    b1 = calc.decode_intensity(m)
    point = calc.roofline_point(b1, hw)
    split = calc.decode_time_split(m, hw)
    prefill_full_s = calc.prefill_compute_s(m, hw, ch17.PROMPT_TOKENS, efficiency=1.0)
    prefill_half_s = calc.prefill_compute_s(m, hw, ch17.PROMPT_TOKENS)
    chat = calc.decode_vs_context(m, hw, ch17.CHAT_LIVE_TOKENS, batch=ch17.BATCH)
    long = calc.decode_vs_context(m, hw, ch17.LONG_CONTEXT_TOKENS, batch=ch17.BATCH)
    i_chat = calc.decode_intensity(m, ch17.BATCH, ch17.CHAT_LIVE_TOKENS)
    i_long = calc.decode_intensity(m, ch17.BATCH, ch17.LONG_CONTEXT_TOKENS)
    achieved = 1e12  # any achieved FLOP/s: the MFU ratio does not depend on it
    return [
        entry("17.2/ridge", S, "ridge = 989e12 / 3.35e12 = 295 FLOP per byte", "295",
              "FLOP/byte", calc.ridge_point(hw)),
        entry("17.2/sparse-factor", S, "the sparse 1,979 TFLOPS gets it wrong by 2x", "2", "x",
              ch17.H100_SPARSE_PEAK_FLOPS_PER_S / hw.peak_flops_per_s),
        entry("17.2/sparse-ridge-halves", S, "quoting the sparse figure halves your ridge point",
              "0.5", "x dense ridge", calc.ridge_point(sparse) / calc.ridge_point(hw),
              note="Erratum (direction reversed). ridge = peak / bandwidth, so the 2x larger "
                   "sparse peak doubles the ridge: 1,979e12 / 3.35e12 = 591 vs 295."),
        entry("17.2/sparse-mfu-doubles", S, "quoting the sparse figure doubles your apparent MFU",
              "2", "x dense MFU", calc.mfu(achieved, sparse) / calc.mfu(achieved, hw),
              note="Erratum (direction reversed). MFU = achieved / peak, so the 2x larger sparse "
                   "denominator halves the apparent MFU (0.24% would read 0.12%)."),
        entry("17.2/decode-intensity-b1", S, "decode intensity at batch 1", "1", "FLOP/byte", b1),
        entry("17.2/attainable-b1", S, "attainable = min(989e12, 1 x 3.35e12)", "3.35e12",
              "FLOP/s", point["attainable_flops_per_s"]),
        entry("17.2/fraction-of-peak", S, "fraction of peak = 3.35e12 / 989e12", "0.34", "%",
              100 * point["fraction_of_peak"]),
        entry("17.2/weights-GB", S, "weights = 8e9 params x 2 B", "16", "GB",
              split["weight_bytes"] / GB),
        entry("17.2/stream-ms", S, "time to stream them = 16e9 / 3.35e12", "4.78", "ms",
              split["read_s"] / ms),
        entry("17.2/decode-ceiling", S, "decode ceiling = 1 / 0.00478", "209", "tok/s",
              split["tokens_per_s"]),
        entry("17.2/flops-per-token", S, "FLOPs per token = 2 x 8e9", "16", "GFLOP",
              split["flops_per_token"] / 1e9),
        entry("17.2/compute-us", S, "time to compute them = 16e9 / 989e12", "16.2", "µs",
              split["compute_s"] / us),
        entry("17.2/stream-us", S, "waiting-to-working numerator 4,780 µs", "4,780", "µs",
              split["read_s"] / us, sig=3,
              note="4.78 ms restated in µs: the exact stream time is 4,776 µs; the chapter "
                   "writes the 3-significant-figure value."),
        entry("17.2/wait-to-work", S, "waiting-to-working = 4,780 / 16.2 = 295 : 1", "295",
              "ratio", split["wait_to_work"]),
        entry("17.2/prefill-intensity", S, "2,048-token prompt: intensity ~ 2,048", "2,048",
              "FLOP/byte", calc.prefill_intensity(m, ch17.PROMPT_TOKENS)),
        entry("17.2/prefill-TFLOP", S, "prefill FLOPs (8B, 2,048 tokens) = 2 x 8e9 x 2,048",
              "32.8", "TFLOP", calc.matrix_flops(m, ch17.PROMPT_TOKENS) / 1e12),
        entry("17.2/prefill-full-roof-ms", S, "at the full 989 TFLOPS roof", "33", "ms",
              prefill_full_s / ms),
        entry("17.2/prefill-half-peak-ms", S, "at a realistic 50% of peak", "66", "ms",
              prefill_half_s / ms,
              note="The line divides by 494e12; 50% of 989e12 is 494.5e12. Both give 66 ms "
                   "(66.26 and 66.33)."),
        entry("17.2/prefill-memory-bound-below", S,
              "a prompt under ~295 tokens is still on the memory roof", "295", "tokens",
              calc.ridge_point(hw) / calc.prefill_intensity(m, 1)),
        entry("17.2/batch-intensity-64", S, "decode intensity at batch B ~ B (B = 64: 'not 64')",
              "64", "FLOP/byte", calc.decode_intensity(m, ch17.BATCH)),
        entry("17.2/break-even-batch", S, "break-even with the ridge: B ~ 295", "295", "sequences",
              calc.ridge_point(hw) / calc.decode_intensity(m, 1)),
        entry("17.2/chat-kv-MB", S, "600 live tokens, 78.6 MB each", "78.6", "MB",
              chat["kv_bytes"] / ch17.BATCH / MB),
        entry("17.2/chat-bytes", S, "bytes = 16e9 + 64 x 78.6e6", "21.0e9", "B",
              chat["step_bytes"]),
        entry("17.2/chat-intensity", S, "intensity = 64 x 16e9 / 21.0e9", "49", "FLOP/byte",
              i_chat),
        entry("17.2/long-kv-GB", S, "8,000 tokens, 1.05 GB each", "1.05", "GB",
              long["kv_bytes"] / ch17.BATCH / GB),
        entry("17.2/long-bytes", S, "bytes = 16e9 + 64 x 1.05e9", "83.2e9", "B",
              long["step_bytes"], tol=0.15e9,
              note="Rounded intermediate: 64 x 1.05e9 = 67.2e9 gives 83.2e9; with the exact "
                   "1,048,576,000 B per sequence it is 16e9 + 67.1e9 = 83.1e9. The intensity (12) "
                   "is the same either way."),
        entry("17.2/long-intensity", S, "intensity = 64 x 16e9 / 83.2e9", "12", "FLOP/byte",
              i_long),
        entry("17.2/quarter-intensity", S, "same batch, a quarter of the intensity", "0.25",
              "ratio", i_long / i_chat),
    ]
