# ---
# jupyter:
#   jupytext:
#     notebook_metadata_filter: -jupytext.text_representation.jupytext_version
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 8.4 Compression and offloading
#
# **The question.** When nothing is left to deduplicate, there are two more ways to make
# weights and KV fit: store every value in fewer bytes (**quantization**), or keep part of the
# data off the accelerator and bring it in just before it is needed (**offloading**). What do
# they really save once the metadata of the formats is counted, and what do they cost in
# conversion time, link time and answer quality?
#
# Sections 8.4.1-8.4.2 count bytes and the time of reading fewer of them, 8.4.3 counts the
# time of moving weights every decode round, and 8.4.4 asks whether the answers stay right
# ([overview](08_0_overview.ipynb)).

# %%
import numpy as np

from companion import calc, ledger, plots, specs, units, widgets
from companion.formulas import compression as cm
from companion.formulas import kv_management as km

model = specs.QWEN3_8B
MiB, GiB, GB, ms = units.MiB, units.GiB, units.GB, units.ms

# %% [markdown]
# ## 8.4.1 Grouped quantization and its metadata
#
# A quantized tensor is cut into groups of $g$ values. Each value is stored as a short integer
# code of $b$ bits; each group also stores a little metadata (a scale, sometimes a minimum) that
# turns codes back into approximate values when they are used. One group therefore takes
#
# $$\text{group bytes} = \frac{g\,b}{8} + m, \qquad
# \text{bits per value} = \frac{8 \times \text{group bytes}}{g},$$
#
# and the metadata's share $m / \text{group bytes}$ grows as $b$ shrinks: the codes get
# smaller, the scale does not. GGML's Q2_K (2-bit codes in groups of 256 with 20 bytes of
# scales and minimums) and the two formats the chapter uses for KV, q8_0 and q4_0 (groups of
# 32 with one 2-byte scale):

# %%
formats = ["bf16", "fp8", "q8_0", "q4_0", "Q2_K"]
layouts = {f: calc.quant_format_layout(f) for f in formats}
print(f"{'format':6} {'values':>6} {'codes':>7} {'meta':>6} {'group':>7} {'bits/value':>10} "
      f"{'metadata':>9}")
for f, lay in layouts.items():
    print(f"{f:6} {lay.group_values:6} {lay.code_bytes:5g} B {lay.metadata_bytes:4g} B "
          f"{lay.group_bytes:5g} B {lay.bits_per_value:10.3f} {100 * lay.metadata_fraction:8.1f}%")
plots.bits_per_value_figure(layouts, title="Stored bits per value: codes and metadata").show()

# %% [markdown]
# ### What fits on a 96 GB M2 Max after loading a Q2_K model
#
# The chapter loads a Q2_K file of Qwen3-235B-A22B (mostly 2-bit codes, some tensors at other
# widths) on an Apple M2 Max with 96 GB (decimal) of unified memory, 8 GiB of which stay
# reserved for the system and the runtime. Footnote 27 gives the file's exact byte counts. The
# model's KV takes $2 \times 94 \times 4 \times 128 \times 2$ B = 188 KiB per token in BF16.

# %%
big = specs.QWEN3_235B_A22B
file_bytes = cm.Q2K_FILE_PAYLOAD_BYTES + cm.Q2K_FILE_METADATA_BYTES + cm.Q2K_FILE_HEADER_BYTES
xl_bytes = cm.UD_Q2K_XL_FILE_GIB * GiB
available = calc.memory_headroom_bytes(specs.M2_MAX.mem_bytes, cm.M2_SYSTEM_RESERVE_BYTES, 0)
left = calc.memory_headroom_bytes(specs.M2_MAX.mem_bytes, cm.M2_SYSTEM_RESERVE_BYTES, file_bytes)
print(f"Q2_K file: {cm.Q2K_FILE_PAYLOAD_BYTES / GiB:.2f} GiB codes and floats + "
      f"{cm.Q2K_FILE_METADATA_BYTES / GiB:.2f} GiB metadata + header = {file_bytes / GiB:.2f} GiB "
      f"({100 * cm.Q2K_FILE_METADATA_BYTES / file_bytes:.1f}% metadata)")
print(f"available: 96 GB - 8 GiB = {available / GiB:.2f} GiB; after the Q2_K file "
      f"{left / GiB:.2f} GiB; the UD-Q2_K_XL file ({cm.UD_Q2K_XL_FILE_GIB} GiB) is "
      f"{-calc.memory_headroom_bytes(specs.M2_MAX.mem_bytes, cm.M2_SYSTEM_RESERVE_BYTES, xl_bytes) / GiB:.2f} GiB short")
rows = []
for ctx in (cm.CONTEXT_8K_TOKENS, cm.CONTEXT_32K_TOKENS):
    kv = calc.kv_bytes(big, ctx, block_tokens=1)
    after = calc.memory_headroom_bytes(specs.M2_MAX.mem_bytes, cm.M2_SYSTEM_RESERVE_BYTES,
                                       file_bytes, kv)
    print(f"one {ctx:,}-token request: KV {kv / GiB:.2f} GiB, left {after / GiB:+.2f} GiB")
    rows.append((f"Q2_K + {ctx // 1024}K context",
                 [("codes + unquantized floats", cm.Q2K_FILE_PAYLOAD_BYTES / GiB, "weights"),
                  ("quantization metadata", cm.Q2K_FILE_METADATA_BYTES / GiB, "codes"),
                  ("header and padding", cm.Q2K_FILE_HEADER_BYTES / GiB, "header"),
                  ("system reserve", cm.M2_SYSTEM_RESERVE_BYTES / GiB, "reserve"),
                  ("KV of one request", kv / GiB, "kv")]))
rows.append(("UD-Q2_K_XL alone", [("weight file", xl_bytes / GiB, "weights"),
                                  ("system reserve", cm.M2_SYSTEM_RESERVE_BYTES / GiB, "reserve")]))
plots.memory_stack_figure(rows, specs.M2_MAX.mem_bytes / GiB,
                          title="M2 Max, 96 GB: weights, metadata, reserve, KV, headroom").show()

# %% [markdown]
# A 2.16 GiB difference between two files of the same model decides whether even one 8K
# request fits, and a 32K context does not fit at all. On unified memory the file is mapped
# into the address space and its pages are brought in only when touched, so "not fitting"
# shows up as pages being read in again and again rather than as an error: the cure is fewer
# bytes (a smaller format) or bringing in only what is needed when it is needed (8.4.3).

# %%
print(ledger.table("8.4.1"))

# %% tags=["nbval-ignore-output"]
fit = widgets.QuantizedFitPanel()
fit.show()

# %%
for ctx in (cm.CONTEXT_8K_TOKENS, cm.CONTEXT_32K_TOKENS):
    numbers = fit.update(context_tokens=ctx).numbers
    print(f"{ctx:,} tokens: KV {numbers['kv_per_request_GiB']:.2f} GiB per request, "
          f"{numbers['requests_that_fit']} request(s) fit, left after one "
          f"{numbers['left_after_kv_GiB']:+.2f} GiB")
_ = fit.reset()

# %% [markdown]
# ## 8.4.2 KV compression and what reading it costs
#
# The same grouping applies to KV, which, unlike the weights, grows with every token of every
# request. Along a head's 128 values, q8_0 keeps 32 one-byte codes plus a 2-byte scale per 32
# values (34 bytes where BF16 needs 64), q4_0 16 bytes of 4-bit codes plus the scale (18
# bytes):
#
# $$M_{q8} = 1152 \times \tfrac{34}{64} = 612\ \text{MiB}, \qquad
# M_{q4} = 1152 \times \tfrac{18}{64} = 324\ \text{MiB}$$
#
# for one 8K context. (Changing *what* is stored per token, as a compact MLA-style state does,
# is the other lever; see 9.2.2.)
#
# ### Figure 8-23: one group of 32 values as bytes
#
# Below, 32 **generated** values (seeded normal numbers standing in for one slice of a K row)
# are encoded the way GGML's reference quantizers do it: q8_0 stores $d = \max|x| / 127$ as a
# half float and the codes $\mathrm{round}(x/d)$; q4_0 stores $d = x_{\max}/(-8)$ ($x_{\max}$:
# the value of largest magnitude, sign kept) and 4-bit codes, two per byte. The byte values are
# printed in hex and shown in the cells; the scale (orange) is there in every row.

# %%
values = np.random.default_rng(0).normal(0.0, 1.0, 32)
q8 = calc.encode_q8_0_group(values)
q4 = calc.encode_q4_0_group(values)
bf16 = values.astype(np.float32).view(np.uint32) >> 16          # BF16: the top half of FP32
bf16_bytes = b"".join(int(x).to_bytes(2, "little") for x in bf16)
for name, data in (("BF16", bf16_bytes), ("q8_0", q8), ("q4_0", q4)):
    print(f"{name}: {len(data)} bytes  {data.hex(' ')}")
print(f"largest reconstruction error: q8_0 {np.abs(calc.decode_q8_0_group(q8) - values).max():.4f}, "
      f"q4_0 {np.abs(calc.decode_q4_0_group(q4) - values).max():.4f}  (values of size ~1)")
group_rows = [
    {"label": "BF16 (64 B)", "code_bytes": len(bf16_bytes), "plain": True,
     "hex": [f"{x:02x}" for x in bf16_bytes]},
    {"label": "q8_0 (34 B)", "metadata_bytes": layouts["q8_0"].metadata_bytes,
     "code_bytes": layouts["q8_0"].code_bytes, "hex": [f"{x:02x}" for x in q8]},
    {"label": "q4_0 (18 B)", "metadata_bytes": layouts["q4_0"].metadata_bytes,
     "code_bytes": layouts["q4_0"].code_bytes, "hex": [f"{x:02x}" for x in q4]},
]
plots.byte_layout_figure(group_rows, title="Figure 8-23: the same 32 values in three formats "
                         "(generated values)").show()

# %% [markdown]
# ### KV per format and what fits in 12 GiB
#
# The scale is per group, so the metadata grows with the KV itself: q8_0 averages 8.5 bits per
# value and q4_0 4.5, not 8 and 4. A finished long request reserves 8448 token slots
# (8192 + 255 rounded to 16-token blocks), 1188 MiB in BF16:

# %%
held = calc.held_tokens(km.LONG_PROMPT_TOKENS, km.OUTPUT_TOKENS)
print(f"{'format':6} {'B/value':>8} {'8K input':>10} {'finished':>12} {'16 finished':>12} "
      f"{'fit in 12 GiB':>14}")
for f in ("bf16", "fp8", "q8_0", "q4_0"):
    per_value = calc.kv_format_bytes_per_value(model, f)
    kv_in = calc.kv_quantized_bytes(model, km.LONG_PROMPT_TOKENS, f)
    kv_end = calc.kv_quantized_bytes(model, held, f)
    n = calc.max_concurrent_kv_format(km.KV_BUDGET_BYTES, model, km.LONG_PROMPT_TOKENS,
                                      km.OUTPUT_TOKENS, f)
    print(f"{f:6} {per_value:8.4f} {kv_in / MiB:6,.0f} MiB {kv_end / MiB:8,.3f} MiB "
          f"{16 * kv_end / GiB:8.2f} GiB {n:14}")

# %% [markdown]
# Sixteen independent long requests fit in 12 GiB in q8_0 (9.86 GiB), as they do in BF16 with
# the prefix shared (5.91 GiB, 8.3.2): compression shrinks every byte, sharing removes
# duplicate bytes, and the two combine.
#
# ### Reading less, converting more
#
# Compressed KV is read faster, but the codes must be turned back into numbers the attention
# kernel can use. If $\Delta D$ fewer bytes are read at effective bandwidth $\beta$ and the
# conversion adds $T_c$ of serial work,
#
# $$\Delta T = \frac{\Delta D}{\beta} - T_c .$$
#
# For an 8K context, q8_0 reads 540 MiB less. The effective bandwidth is the one measured in
# Experiment 8-1's read-bound batch-64 round, 34.46 GB in 29.63 ms, i.e. about 1.16 TB/s
# (printed as "65%" of 1792 GB/s; the measured 64.9% is what reproduces 0.487 ms).

# %%
saved = calc.kv_bytes(model, cm.CONTEXT_8K_TOKENS) - calc.kv_quantized_bytes(
    model, cm.CONTEXT_8K_TOKENS, "q8_0")
beta = cm.MEASURED_READ_BYTES / cm.MEASURED_ROUND_S
print(f"{saved / MiB:.0f} MiB fewer at {beta / units.TB:.3f} TB/s "
      f"({100 * calc.mbu(beta, specs.RTX_PRO_6000):.1f}% of peak): "
      f"{calc.compressed_read_saving_s(saved, beta, 0) / ms:.3f} ms")
for tc in cm.CONVERSION_S_CASES:
    net = calc.compressed_read_saving_s(saved, beta, tc)
    print(f"conversion {tc / ms:.1f} ms: net {'saving' if net >= 0 else 'loss'} "
          f"{abs(net) / ms:.3f} ms")

# %% tags=["nbval-ignore-output"]
reads = widgets.CompressedReadPanel()
reads.show()

# %%
for ctx in (2048, 8192, 32768):
    numbers = reads.update(context_tokens=ctx).numbers
    print(f"{ctx:6,} tokens: {numbers['saved_MiB']:,.0f} MiB fewer, worth "
          f"{numbers['read_saving_ms']:.3f} ms; net with 0.2 ms conversion "
          f"{numbers['net_saving_ms']:+.3f} ms")
_ = reads.reset()

# %% [markdown]
# ### The H100 crossover between BF16 and FP8 KV
#
# An early evaluation of Llama-3.1-8B on an H100 fitted straight lines to the output interval
# (footnote 15): BF16 $6.44 + 4.37\times10^{-5}L$ ms, FP8 $6.58 + 2.37\times10^{-5}L$ ms. FP8
# pays 0.14 ms more per step for its conversion and saves $2\times10^{-5}$ ms per context
# token, so the lines cross at $0.14 / (2\times10^{-5}) = 7000$ tokens: below it BF16 is
# faster, above it FP8.

# %%
fits = {"BF16": (cm.BF16_INTERVAL_FIXED_S, cm.BF16_INTERVAL_PER_TOKEN_S),
        "FP8": (cm.FP8_INTERVAL_FIXED_S, cm.FP8_INTERVAL_PER_TOKEN_S)}
crossover = calc.interval_crossover_tokens(*fits["BF16"], *fits["FP8"])
contexts = list(range(0, 32769, 512))
lines = {f"{name} KV: {a / ms:.2f} + {b / ms:.2e} L ms": [calc.fitted_interval_s(a, b, L) / ms
                                                          for L in contexts]
         for name, (a, b) in fits.items()}
marks = [(f"{name} {L // 1024}K", L, calc.fitted_interval_s(*fits[name], L) / ms)
         for name in fits for L in cm.FIT_CONTEXTS]
for name, L, t in marks:
    print(f"{name}: {t:.2f} ms")
print(f"crossover: {crossover:,.0f} tokens")
plots.interval_fit_figure(contexts, lines, crossover_tokens=crossover, marks=marks,
                          title="Llama-3.1-8B on H100: fitted output interval, BF16 vs FP8 KV"
                          ).show()

# %% [markdown]
# The same bookkeeping compares state *representations*: at an 8K context DeepSeek V4.1 keeps
# 6.953 MiB of global history and 2.578 MiB of effective sliding-window state, V4 30.521 MiB in
# total. The window is a fixed cost, so the gap is smaller than the 3.95x of the global history
# alone:

# %%
v41 = cm.DEEPSEEK_V41_GLOBAL_MIB + cm.DEEPSEEK_V41_SWA_MIB
print(f"V4.1: {v41:.3f} MiB; V4 / V4.1 = {cm.DEEPSEEK_V4_TOTAL_MIB / v41:.2f}x")
print(ledger.table("8.4.2"))

# %% [markdown]
# ## 8.4.3 Weight offloading, prefetch, and the copy every round
#
# Offloading keeps some weights in host memory and copies each set to the accelerator just
# before its layer runs; the space it frees holds more KV. The chapter offloads the FFN of one
# layer in four: 9 of Qwen3-8B's 36 layers, 288 MiB each (three $4096 \times 12288$ BF16
# matrices). The copies need landing space on the accelerator, a **prefetch buffer** per set
# in flight, which eats into the saving.
#
# Prefetching has two ordering rules: a layer may not compute before its weights have
# arrived, and a buffer may not be overwritten while the layer using it still computes. With
# one buffer, copy and compute take turns; with two, the next layer's copy overlaps the current
# layer's compute, at the price of another 288 MiB.

# %%
for buffers in (1, 2):
    plan = calc.ffn_offload(model, cm.OFFLOAD_EVERY_N_LAYERS, buffers)
    net = plan.net_saved_bytes
    print(f"{buffers} buffer set(s): offload {plan.offloaded_layers} x "
          f"{calc.ffn_weight_bytes_per_layer(model) / MiB:.0f} = {plan.offloaded_bytes / MiB:,.0f} "
          f"MiB, buffers {plan.buffer_bytes / MiB:,.0f} MiB, net {net / MiB:,.0f} MiB: "
          f"{calc.max_concurrent(net, model, km.LONG_PROMPT_TOKENS, 1)} more 8K inputs (1152 MiB) "
          f"or {calc.max_concurrent(net, model, km.LONG_PROMPT_TOKENS, km.OUTPUT_TOKENS)} more "
          f"complete request(s) (1188 MiB)")

# %% [markdown]
# The price is paid every decode round: all 2592 MiB (2.72 GB) cross the host link again for
# each new token. However well copies overlap with compute, a round cannot be shorter than the
# copy:
#
# $$T_\text{copy} \ge \frac{2.72\ \text{GB}}{64\ \text{GB/s}} \approx 42.5\ \text{ms}
# \;>\; 26.26\ \text{ms of compute per round}.$$

# %%
offloaded = calc.ffn_offload(model, cm.OFFLOAD_EVERY_N_LAYERS, 1).offloaded_bytes
for name, link in (("PCIe Gen5 x16", specs.PCIE_GEN5_X16_BYTES_PER_S),
                   ("GH200 NVLink-C2C", specs.NVLINK_C2C_BYTES_PER_S)):
    c = calc.offload_copy_bound(offloaded, link, cm.BATCH1_ROUND_S, batch=cm.OFFLOAD_BATCH,
                                rounds=cm.DECODE_ROUNDS)
    print(f"{name} ({link / GB:.0f} GB/s): copy {c.copy_s / ms:.1f} ms per round "
          f"({'hidden behind' if c.copy_hidden else 'longer than'} the {cm.BATCH1_ROUND_S / ms:.2f} ms "
          f"round); {cm.OFFLOAD_BATCH} requests get at most {c.tokens_per_s:.0f} tokens/s; "
          f"{cm.DECODE_ROUNDS} rounds copy for {c.total_copy_s:.2f} s")

# %% [markdown]
# Over PCIe, copying alone takes 10.8 s of the 7 s budget; over NVLink-C2C it fits inside the
# compute rounds. Prefetching changes *when* the bytes move, never *how many*.

# %% tags=["nbval-ignore-output"]
offload = widgets.OffloadPanel()
offload.show()

# %%
for layers, buffers in ((9, 1), (9, 2), (4, 1)):
    n = offload.update(layers=layers, prefetch_buffers=buffers).numbers
    print(f"{layers} layers, {buffers} buffer(s): net {n['net_saved_MiB']:,.0f} MiB "
          f"({n['extra_8k_inputs']} more 8K inputs or {n['extra_complete_requests']} complete), "
          f"copy {n['copy_ms']:.1f} ms per round, {n['total_copy_s']:.2f} s in total")
_ = offload.reset()

# %% [markdown]
# ### Compress before moving?
#
# Sending $S$ bytes compressed to $rS$ shortens the transfer, but the receiver must decompress
# them at some rate $R_\text{dec}$ (in original bytes per second):
#
# $$\frac{rS}{B} + \frac{S}{R_\text{dec}} < \frac{S}{B}
# \iff R_\text{dec} > \frac{B}{1 - r}.$$
#
# 96 MiB compressed to a quarter over PCIe Gen5 takes 0.39 ms instead of 1.57 ms; keeping that
# saving needs a decompressor faster than 64 / 0.75 = 85.3 GB/s. The faster the link, the
# harder it is for decompression to keep up.

# %%
size, r = cm.COMPRESS_EXAMPLE_BYTES, cm.COMPRESS_EXAMPLE_FRACTION
for name, link in (("PCIe Gen5 x16", specs.PCIE_GEN5_X16_BYTES_PER_S),
                   ("NVLink-C2C", specs.NVLINK_C2C_BYTES_PER_S)):
    direct = calc.link_transfer_s(size, link)
    moved = calc.compress_then_transfer_s(size, r, link)
    print(f"{name}: raw {direct / ms:.2f} ms, compressed transfer {moved / ms:.2f} ms "
          f"(saves {(direct - moved) / ms:.2f} ms) if decompression beats "
          f"{calc.min_decompress_bytes_per_s(link, r) / GB:.1f} GB/s")

# %% tags=["nbval-ignore-output"]
transfer = widgets.CompressTransferPanel()
transfer.show()

# %%
for rate in (50, 100):
    n = transfer.update(decompress_gb_per_s=rate).numbers
    print(f"decompressing at {rate} GB/s: {n['with_decompression_ms']:.2f} ms vs raw "
          f"{n['direct_ms']:.2f} ms: compression {'wins' if n['compression_wins'] else 'loses'}")
_ = transfer.reset()
print(ledger.table("8.4.3"))

# %% [markdown]
# ## 8.4.4 Capacity and speed under a quality constraint
#
# Every byte saved above changed the stored numbers, and a different attention kernel may also
# change the precision of the query or of its reductions. Whether the *answers* survive is a
# measurement, not a formula. The chapter's experiments (8.4.4, footnotes 19-20), quoted:
#
# - Qwen3-8B with BF16 weights, eight retrieval tasks (documents of 128 or 512 six-digit
#   records), each run twice at two concurrency levels: 32 runs per configuration.
# - BF16 KV: **28 of 32** correct. The original FP8 KV path: **26 of 32**. FP8 KV with the
#   query kept in BF16: **28 of 32** again, so the query's precision matters separately from
#   the KV's storage format. (With FP8 *weights* instead, footnote 19 reports 32 of 32 with a
#   BF16 query against 28 of 32 on the default path.)
# - The totals hide *which* tasks fail: task 5 fails all four runs with BF16 KV and passes all
#   four with FP8 KV + BF16 query; task 6 does exactly the opposite. Compare tasks, not totals.
# - In one recorded case, two retries fixed a wrong answer but added about 2.0 s of generation
#   and 92 tokens.
#
# **Retry accounting.** The time to a correct answer is every attempt, the failed ones
# included, plus each check; timing only the final, successful generation flatters a
# configuration that is fast but often wrong. If each attempt passes independently with
# probability $p$ (an assumption for exploring, not part of the measurements), a retry loop
# costs on average $(T + T_\text{check}) / p$. Taking the chapter's short request (about
# 6.95 s alone, 8.1.1) as one attempt:

# %%
t = calc.SHORT_REQUEST_S
print(f"counting only the successful attempt: {calc.time_to_correct_answer_s([t]):.2f} s; "
      f"with two failed attempts before it: {calc.time_to_correct_answer_s([t, t, t]):.2f} s")
for name, p in (("BF16 KV, 28/32", cm.ACCURACY_BF16_KV), ("FP8 KV, 26/32", cm.ACCURACY_FP8_KV)):
    print(f"{name}: expected {calc.expected_time_to_correct_s(t, p):.2f} s to a correct answer")

# %% tags=["nbval-ignore-output"]
retry = widgets.RetryCostPanel()
retry.show()

# %%
n = retry.update(speed_factor_b=0.9).numbers
print(f"B 10% faster per attempt: A {n['expected_a_s']:.2f} s, B {n['expected_b_s']:.2f} s, "
      f"B wins: {n['b_wins']}")
_ = retry.reset()

# %% [markdown]
# The two capacity routes of this chapter end up side by side: 16 independent long requests in
# q8_0 need 9.86 GiB, the same 16 in BF16 with the prefix shared 5.91 GiB. Which one to run
# also depends on conversion time, generation time and retries, which section 8.6 adds up.

# %%
print(ledger.table("8.4.4"))

# %% [markdown]
# ## Try this
#
# - In the M2 Max explorer, switch the KV format to q4_0. How long a context fits with the
#   Q2_K file now? And with the UD-Q2_K_XL file?
# - Q2_K spends about 24% of its bytes on metadata. With the same 20 bytes of metadata per
#   group, how large would groups have to be for metadata to fall under 10%?
# - In the compressed-read explorer, find the context length below which q8_0 cannot pay for
#   0.2 ms of conversion. Does q4_0 move it much?
# - On the H100 fit, how long must the context be for FP8 to save a full millisecond per step?
# - In the offload explorer, how many FFN layers can move over PCIe Gen5 before the copy no
#   longer hides behind the 26.26 ms round? What link would carry all nine within it?
# - In the transfer explorer, set the link to NVLink-C2C (450 GB/s). How fast must
#   decompression be now?
# - In the retry explorer, how much faster must the less accurate format's attempts be to
#   break even?
#
# **Exercises.** [Exercise 8-5](../../exercises/ex8_5.ipynb) (capacity freed by offloading vs
# the copy it adds) and [Exercise 8-6](../../exercises/ex8_6.ipynb) (KV compression,
# correctness item by item, and the real cost of retries). Next:
# [8.5 Speculative decoding](08_5_speculative_decoding.ipynb).
