"""Ledger entries of 8.4 (Compression and offloading), footnotes 14-17, 27, Exercises 8-5, 8-6."""

from __future__ import annotations

from companion import calc, models
from companion.chapters import ch08
from companion.formulas import compression as cm
from companion.formulas.core import quantized_bytes
from companion.ledger import Entry, entry
from companion.specs import M2_MAX, QWEN3_8B, QWEN3_235B_A22B, RTX_PRO_6000
from companion.units import GB, GiB, MiB, TB, ms


def _weight_quantization() -> list[Entry]:
    s = "8.4.1"
    q2k = calc.quant_format_layout("Q2_K")
    file_bytes = calc.q2k_file_bytes()
    xl_bytes = ch08.UD_Q2K_XL_FILE_GIB * GiB
    available = calc.memory_headroom_bytes(M2_MAX.mem_bytes, ch08.M2_SYSTEM_RESERVE_BYTES, 0)
    left = calc.memory_headroom_bytes(M2_MAX.mem_bytes, ch08.M2_SYSTEM_RESERVE_BYTES, file_bytes)
    xl_left = calc.memory_headroom_bytes(M2_MAX.mem_bytes, ch08.M2_SYSTEM_RESERVE_BYTES, xl_bytes)
    big = QWEN3_235B_A22B
    kv_8k = calc.kv_bytes(big, ch08.LONG_PROMPT_TOKENS, block_tokens=1)
    kv_32k = calc.kv_bytes(big, ch08.CONTEXT_32K_TOKENS, block_tokens=1)
    left_after_kv = calc.memory_headroom_bytes(M2_MAX.mem_bytes, ch08.M2_SYSTEM_RESERVE_BYTES,
                                               file_bytes, kv_8k)
    fits_8k = calc.max_concurrent(left, big, ch08.LONG_PROMPT_TOKENS, 1, block_tokens=1)
    return [
        entry(f"{s}/q2k-code-bytes", s, "Q2_K codes per group: 256 x 2 / 8", "64", "bytes",
              q2k.code_bytes),
        entry(f"{s}/q2k-group-bytes", s, "Q2_K group: 64 + 20 bytes", "84", "bytes",
              q2k.group_bytes),
        entry(f"{s}/q2k-bits-per-value", s, "Q2_K average: 84 x 8 / 256", "2.625", "bits",
              q2k.bits_per_value),
        entry(f"{s}/q2k-metadata-pct", s, "metadata share of a Q2_K group", "24", "%",
              100 * q2k.metadata_fraction, note="20 / 84 = 23.8%, printed 'about 24%'."),
        entry(f"{s}/q2k-file-total-bytes", s, "footnote 27: payload + metadata + header",
              "85,691,002,112", "B", file_bytes),
        entry(f"{s}/q2k-file-payload-GiB", s, "codes + unquantised floats of the Q2_K file",
              "64.43", "GiB", ch08.Q2K_FILE_PAYLOAD_BYTES / GiB),
        entry(f"{s}/q2k-file-metadata-GiB", s, "quantisation metadata of the Q2_K file", "15.37",
              "GiB", ch08.Q2K_FILE_METADATA_BYTES / GiB),
        entry(f"{s}/q2k-file-total-GiB", s, "Q2_K file of Qwen3-235B-A22B", "79.81", "GiB",
              file_bytes / GiB),
        entry(f"{s}/m2-available-GiB", s, "M2 Max: 96 GB minus 8 GiB", "81.41", "GiB",
              available / GiB),
        entry(f"{s}/m2-left-after-q2k-GiB", s, "left after loading the Q2_K file", "1.60", "GiB",
              left / GiB),
        entry(f"{s}/ud-q2k-xl-excess-GiB", s, "UD-Q2_K_XL exceeds the available memory by",
              "0.56", "GiB", -xl_left / GiB),
        entry(f"{s}/kv-8k-GiB", s, "Qwen3-235B-A22B BF16 KV at 8K (8192 tokens)", "1.47", "GiB",
              kv_8k / GiB,
              note="2 x 94 layers x 4 KV heads x 128 x 2 B = 188 KiB per token; 8K = 8192 tokens "
                   "(8000 would give 1.43 GiB)."),
        entry(f"{s}/requests-fit-8k", s, "the Q2_K scheme still handles one 8K request", "1",
              "requests", fits_8k),
        entry(f"{s}/left-after-8k-kv-GiB", s, "left over after one 8K request's KV", "0.13",
              "GiB", left_after_kv / GiB),
        entry(f"{s}/kv-32k-GiB", s, "the same model's KV at 32K (32,768 tokens)", "5.88", "GiB",
              kv_32k / GiB),
        entry(f"{s}/file-size-difference-GiB", s, "the two files differ by", "2.16", "GiB",
              (xl_bytes - file_bytes) / GiB,
              note="81.97 GiB (given only to two decimals) - 79.806 GiB = 2.164 GiB; the "
                   "printed 81.97 - 79.81 = 2.16 as well."),
    ]


def _kv_compression() -> list[Entry]:
    s = "8.4.2"
    m = QWEN3_8B
    q8, q4 = calc.quant_format_layout("q8_0"), calc.quant_format_layout("q4_0")
    bf16_8k = calc.kv_bytes(m, ch08.LONG_PROMPT_TOKENS)
    q8_8k = calc.kv_quantized_bytes(m, ch08.LONG_PROMPT_TOKENS, "q8_0")
    q4_8k = calc.kv_quantized_bytes(m, ch08.LONG_PROMPT_TOKENS, "q4_0")
    held = calc.held_tokens(ch08.LONG_PROMPT_TOKENS, ch08.OUTPUT_TOKENS)
    bf16_long = calc.kv_bytes(m, held)
    q8_long = calc.kv_quantized_bytes(m, held, "q8_0")
    # the read-bound effective bandwidth: Experiment 8-1's batch-64 round (8.6.3)
    beta = cm.MEASURED_READ_BYTES / cm.MEASURED_ROUND_S
    saved = bf16_8k - q8_8k
    read_s = calc.compressed_read_saving_s(saved, beta, 0)
    net = [calc.compressed_read_saving_s(saved, beta, tc) for tc in ch08.CONVERSION_S_CASES]
    at_65 = [calc.compressed_read_saving_s(saved, 0.65 * RTX_PRO_6000.mem_bw_bytes_per_s, tc)
             for tc in (0.0,) + ch08.CONVERSION_S_CASES]
    mbu_note = (f"Unstated efficiency: the text prints '65%' but uses the measured MBU "
                f"19.23 / 29.63 = {calc.mbu(beta, RTX_PRO_6000):.4f} (34.46 GB in 29.63 ms, "
                f"beta = {beta / TB:.4f} TB/s): {read_s / ms:.4f}, {net[0] / ms:.4f} and "
                f"{-net[1] / ms:.4f} ms. At exactly 65% (1.1648 TB/s) they would print "
                f"{at_65[0] / ms:.3f}, {at_65[1] / ms:.3f} and {-at_65[2] / ms:.3f}.")
    fits = {}
    for name, a, b in (("bf16", ch08.BF16_INTERVAL_FIXED_S, ch08.BF16_INTERVAL_PER_TOKEN_S),
                       ("fp8", ch08.FP8_INTERVAL_FIXED_S, ch08.FP8_INTERVAL_PER_TOKEN_S)):
        for L in ch08.FIT_CONTEXTS:
            fits[name, L] = calc.fitted_interval_s(a, b, L) / ms
    crossover = calc.interval_crossover_tokens(ch08.BF16_INTERVAL_FIXED_S,
                                               ch08.BF16_INTERVAL_PER_TOKEN_S,
                                               ch08.FP8_INTERVAL_FIXED_S,
                                               ch08.FP8_INTERVAL_PER_TOKEN_S)
    v41_total = ch08.DEEPSEEK_V41_GLOBAL_MIB + ch08.DEEPSEEK_V41_SWA_MIB
    # 9.2.2's MLA state, cited here: DeepSeek-V3's config (61 layers, latent 512 + rope key 64)
    mla_8k = calc.kv_bytes(models.load("deepseek-v3"), ch08.LONG_PROMPT_TOKENS, block_tokens=1)
    return [
        entry(f"{s}/bf16-8k-kv-MiB", s, "BF16 KV of one 8K context", "1152", "MiB",
              bf16_8k / MiB),
        entry(f"{s}/mla-8k-state-MiB", s, "MLA's compact state for the same 8K (9.2.2)", "549",
              "MiB", mla_8k / MiB,
              note="The chapter cites 9.2.2 without naming the model; DeepSeek-V3's shipped "
                   "config.json gives it: 61 layers x (512 + 64) latent values x 2 B x 8192 "
                   "tokens, no block rounding."),
        entry(f"{s}/bf16-32-values-bytes", s, "32 BF16 values occupy", "64", "bytes",
              quantized_bytes(32, "bf16")),
        entry(f"{s}/q8_0-code-bytes", s, "q8_0 codes per 32 values", "32", "bytes",
              q8.code_bytes),
        entry(f"{s}/q4_0-code-bytes", s, "q4_0 codes per 32 values", "16", "bytes",
              q4.code_bytes),
        entry(f"{s}/q8_0-kv-8k-MiB", s, "M_q8 = 1152 x 34/64", "612", "MiB", q8_8k / MiB),
        entry(f"{s}/q4_0-kv-8k-MiB", s, "M_q4 = 1152 x 18/64", "324", "MiB", q4_8k / MiB),
        entry(f"{s}/q8_0-saves-MiB", s, "q8_0 saves vs BF16", "540", "MiB",
              (bf16_8k - q8_8k) / MiB),
        entry(f"{s}/q4_0-saves-MiB", s, "q4_0 saves vs BF16", "828", "MiB",
              (bf16_8k - q4_8k) / MiB),
        entry(f"{s}/q8_0-bits", s, "q8_0 average bits per value with the scale", "8.5", "bits",
              calc.bits_per_value("q8_0")),
        entry(f"{s}/q4_0-bits", s, "q4_0 average bits per value with the scale", "4.5", "bits",
              calc.bits_per_value("q4_0")),
        entry(f"{s}/fig8-23-q8_0-row-bytes", s, "Figure 8-23: q8_0 row of 32 values", "34",
              "bytes", q8.group_bytes),
        entry(f"{s}/fig8-23-q4_0-row-bytes", s, "Figure 8-23: q4_0 row of 32 values", "18",
              "bytes", q4.group_bytes),
        entry(f"{s}/long-request-bf16-MiB", s, "finished long request, block-allocated BF16",
              "1188", "MiB", bf16_long / MiB),
        entry(f"{s}/long-request-q8_0-MiB", s, "the same in q8_0: 1188 x 34/64", "631.125", "MiB",
              q8_long / MiB),
        entry(f"{s}/16-long-q8_0-GiB", s, "16 independent long requests in q8_0", "9.86", "GiB",
              ch08.LONG_BATCH * q8_long / GiB),
        entry(f"{s}/read-saving-MiB", s, "BF16 -> q8_0 reads 540 MiB fewer at 8K", "540", "MiB",
              saved / MiB),
        entry(f"{s}/effective-bandwidth-TBps", s, "read-bound effective bandwidth", "1.16",
              "TB/s", beta / TB),
        entry(f"{s}/effective-bandwidth-pct", s, "effective bandwidth as a share of 1792 GB/s",
              "65", "%", 100 * calc.mbu(beta, RTX_PRO_6000)),
        entry(f"{s}/read-saving-ms", s, "time saved reading 540 MiB fewer", "0.487", "ms",
              read_s / ms, note=mbu_note),
        entry(f"{s}/net-saving-0.2ms-conversion", s, "net saving with 0.2 ms of conversion",
              "0.287", "ms", net[0] / ms, note=mbu_note),
        entry(f"{s}/net-loss-0.8ms-conversion", s, "net loss with 0.8 ms of conversion", "0.313",
              "ms", -net[1] / ms, note=mbu_note),
        entry(f"{s}/fp8-fixed-term-larger-ms", s, "FP8's fixed term is larger by", "0.14", "ms",
              (ch08.FP8_INTERVAL_FIXED_S - ch08.BF16_INTERVAL_FIXED_S) / ms),
        entry(f"{s}/fp8-slope-smaller-ms", s, "FP8's per-context-token term is smaller by",
              "2e-5", "ms/token",
              (ch08.BF16_INTERVAL_PER_TOKEN_S - ch08.FP8_INTERVAL_PER_TOKEN_S) / ms,
              note="Printed as 2 x 10^-5 ms."),
        entry(f"{s}/bf16-fp8-crossover-tokens", s, "BF16/FP8 crossover 0.14 / 2e-5", "7000",
              "tokens", crossover),
        entry(f"{s}/bf16-interval-2k-ms", s, "BF16 fit at 2K (2048)", "6.53", "ms",
              fits["bf16", 2048]),
        entry(f"{s}/fp8-interval-2k-ms", s, "FP8 fit at 2K (2048)", "6.63", "ms",
              fits["fp8", 2048]),
        entry(f"{s}/bf16-interval-16k-ms", s, "BF16 fit at 16K (16,384)", "7.16", "ms",
              fits["bf16", 16_384],
              note="16K = 16,384 tokens: 6.44 + 0.716 = 7.156 ms; 16,000 would give 7.14."),
        entry(f"{s}/fp8-interval-16k-ms", s, "FP8 fit at 16K (16,384)", "6.97", "ms",
              fits["fp8", 16_384]),
        entry(f"{s}/deepseek-v41-state-MiB", s, "V4.1 global history + SWA at 8K", "9.531", "MiB",
              v41_total),
        entry(f"{s}/deepseek-v4-vs-v41", s, "V4's 30.521 MiB relative to V4.1's total", "3.20",
              "x", ch08.DEEPSEEK_V4_TOTAL_MIB / v41_total),
    ]


def _offload() -> list[Entry]:
    s = "8.4.3"
    m = QWEN3_8B
    per_layer = calc.ffn_weight_bytes_per_layer(m)
    one, two = (calc.ffn_offload(m, ch08.OFFLOAD_EVERY_N_LAYERS, k) for k in (1, 2))
    input_8k = calc.kv_bytes(m, ch08.LONG_PROMPT_TOKENS)
    long_req = calc.kv_bytes(m, calc.held_tokens(ch08.LONG_PROMPT_TOKENS, ch08.OUTPUT_TOKENS))
    rounds = ch08.OUTPUT_TOKENS - 1  # the first output comes from prefill; decode passes follow
    pcie = calc.offload_copy_bound(one.offloaded_bytes, ch08.PCIE_GEN5_X16_BYTES_PER_S,
                                   ch08.ROUND_B1_S, batch=ch08.OFFLOAD_BATCH, rounds=rounds)
    c2c = calc.offload_copy_bound(one.offloaded_bytes, ch08.NVLINK_C2C_BYTES_PER_S,
                                  ch08.ROUND_B1_S, batch=ch08.OFFLOAD_BATCH, rounds=rounds)
    size, r = ch08.COMPRESS_EXAMPLE_BYTES, ch08.COMPRESS_EXAMPLE_FRACTION
    direct = calc.link_transfer_s(size, ch08.PCIE_GEN5_X16_BYTES_PER_S)
    compressed = calc.compress_then_transfer_s(size, r, ch08.PCIE_GEN5_X16_BYTES_PER_S)
    return [
        entry(f"{s}/ffn-layer-MiB", s, "three BF16 FFN matrices of one Qwen3-8B layer", "288",
              "MiB", per_layer / MiB, note="3 x 4096 x 12288 x 2 B = 301,989,888 B."),
        entry(f"{s}/offloaded-sets", s, "one layer in four of 36: FFN sets offloaded", "9",
              "sets", one.offloaded_layers),
        entry(f"{s}/offloaded-MiB", s, "memory freed by offloading nine FFN sets", "2592", "MiB",
              one.offloaded_bytes / MiB),
        entry(f"{s}/one-buffer-MiB", s, "one prefetch buffer set", "288", "MiB",
              one.buffer_bytes / MiB),
        entry(f"{s}/net-one-buffer-MiB", s, "net saving with one buffer set", "2304", "MiB",
              one.net_saved_bytes / MiB),
        entry(f"{s}/two-buffers-MiB", s, "two prefetch buffer sets", "576", "MiB",
              two.buffer_bytes / MiB),
        entry(f"{s}/net-two-buffers-MiB", s, "net saving with two buffer sets", "2016", "MiB",
              two.net_saved_bytes / MiB),
        entry(f"{s}/extra-8k-inputs-one-buffer", s, "extra 1152-MiB inputs, one buffer set", "2",
              "requests", one.net_saved_bytes // input_8k),
        entry(f"{s}/extra-8k-inputs-two-buffers", s, "extra 1152-MiB inputs, two buffer sets",
              "1", "requests", two.net_saved_bytes // input_8k),
        entry(f"{s}/extra-complete-one-buffer", s, "extra 1188-MiB requests, one buffer set", "1",
              "requests", one.net_saved_bytes // long_req),
        entry(f"{s}/extra-complete-two-buffers", s, "extra 1188-MiB requests, two buffer sets",
              "1", "requests", two.net_saved_bytes // long_req),
        entry(f"{s}/copy-per-round-GB", s, "2592 MiB per round in decimal GB", "2.72", "GB",
              one.offloaded_bytes / GB),
        entry(f"{s}/copy-pcie-ms", s, "T_copy >= 2.72 GB / 64 GB/s", "42.5", "ms",
              pcie.copy_s / ms),
        entry(f"{s}/throughput-4-requests", s, "4 requests: at most 4 / 0.0425 tokens/s", "94",
              "tokens/s", pcie.tokens_per_s),
        entry(f"{s}/interval-pcie-ms", s, "each request's output interval at least", "42.5", "ms",
              pcie.round_s / ms),
        entry(f"{s}/decode-forward-passes", s, "256 outputs need 255 further forward passes",
              "255", "rounds", rounds),
        entry(f"{s}/copy-255-pcie-s", s, "weight movement alone over 255 rounds, PCIe", "10.8",
              "s", pcie.total_copy_s),
        entry(f"{s}/copy-c2c-ms", s, "2.72 GB over NVLink-C2C at 450 GB/s", "6.0", "ms",
              c2c.copy_s / ms),
        entry(f"{s}/copy-255-c2c-s", s, "255 rounds over NVLink-C2C", "1.54", "s",
              c2c.total_copy_s),
        entry(f"{s}/compress-direct-ms", s, "96 MiB directly over PCIe Gen5 x16", "1.57", "ms",
              direct / ms),
        entry(f"{s}/compress-transfer-ms", s, "the quarter-size compressed data", "0.39", "ms",
              compressed / ms),
        entry(f"{s}/compress-saving-ms", s, "transfer time saved by compressing", "1.18", "ms",
              (direct - compressed) / ms,
              note="1.5729 - 0.3932 = 1.1796 ms (the printed 1.57 - 0.39 = 1.18 as well)."),
        entry(f"{s}/min-decompress-GBps", s, "R_dec > 64 / (1 - 1/4)", "85.3", "GB/s",
              calc.min_decompress_bytes_per_s(ch08.PCIE_GEN5_X16_BYTES_PER_S, r) / GB),
        entry(f"{s}/ex8-5-ffn-sets", s, "Exercise 8-5: nine FFN sets offloaded", "9", "sets",
              one.offloaded_layers),
        entry(f"{s}/ex8-5-ffn-set-MiB", s, "Exercise 8-5: each FFN set occupies", "288", "MiB",
              per_layer / MiB),
        entry(f"{s}/ex8-5-steps", s, "Exercise 8-5: 255 steps of copying", "255", "rounds",
              rounds),
    ]


def _quality() -> list[Entry]:
    s = "8.4.4"
    m = QWEN3_8B
    held = calc.held_tokens(ch08.LONG_PROMPT_TOKENS, ch08.OUTPUT_TOKENS)
    q8_batch = ch08.LONG_BATCH * calc.kv_quantized_bytes(m, held, "q8_0")
    shared = calc.prefix_shared_kv_bytes(m, ch08.LONG_BATCH, ch08.LONG_PROMPT_TOKENS,
                                         ch08.OUTPUT_TOKENS,
                                         shared_prefix_tokens=ch08.SHARED_PREFIX_TOKENS)
    return [
        entry(f"{s}/16-long-q8_0-GiB", s, "16 independent long requests in q8_0", "9.86", "GiB",
              q8_batch / GiB),
        entry(f"{s}/16-long-shared-bf16-GiB", s, "16 long requests with a shared BF16 prefix",
              "5.91", "GiB", shared / GiB),
    ]


# the sections its entries lie in (or under): the ledger computes this module only for them
SECTIONS = ("8.4",)


def entries() -> list[Entry]:
    return _weight_quantization() + _kv_compression() + _offload() + _quality()
