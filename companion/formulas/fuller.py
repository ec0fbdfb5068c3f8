"""Where Chapter 17 §1-§5's simplified models stop holding: the fuller models beside them.

Chapter 17 keeps its arithmetic within a calculator's reach. It takes the spec sheet's peaks as
the rates a card reaches, counts 2 FLOPs per parameter and leaves attention out, prices a
prefill by its compute at 50% of peak whatever the prompt's length, prices a decode step by its
bytes alone, lets batch 1 stand for a serving batch and one context for every sequence. Each
function here keeps the chapter's inputs, returns the chapter's number next to the fuller one
and adds the term the chapter dropped, so that a notebook can show both:

  §1  achieved_rates             ridge and memory sweep at the rates 17 §9 measures (MBU, MFU)
  §2  decode_attention_intensity decode FLOPs with attention over each sequence's context
  §2  prefill_readings           prefill: the chapter's compute price, with attention, and the
                                 roofline's max with the weight read (short prompts)
  §2  matmul_intensity           a pass's weight products with their activations read and
                                 written, beside the weights-only count (long prompts)
  §3  head_of_line_readings      the stall: the prefill alone (chapter), decode step + prefill
                                 (the simulator's round), one fused pass on the roofline
  §4  long_context_in_batch      one long conversation in a serving batch: every sequence waits
  §4  block_rounded_capacity     sequences that fit when each holds whole blocks
  §5  decode_roofline_batch      a decode step as max(bytes / beta, FLOPs / (e x peak))
  §5  decode_step_per_kernel     the same step with the weight products and attention priced
                                 as the separate kernels engines run (their times add)

Attention FLOPs follow ``core.attention_flops_per_pair`` (2 x (qk + v width) x query heads per
layer and causal pair); a sliding-window layer lets a query see at most W keys, itself included,
as ``core.kv_bytes_at_context`` keeps W - 1 cached tokens. Reads run at the full bandwidth unless
a function says otherwise; compute runs at ``efficiency`` x peak.
"""

from __future__ import annotations

from companion import validate as v
from companion.chapters import ch17
from companion.formulas.args import hardware_arg as _hardware
from companion.formulas.args import model_arg as _model
from companion.formulas.core import (attention_flops_per_pair, attention_pairs, kv_bytes,
                                     kv_bytes_at_context, kv_bytes_per_token, matrix_flops,
                                     moe_streamed_weight_bytes, ridge_point)
from companion.formulas.performance import (decode_batch_for_step, decode_intensity,
                                            decode_vs_context, memory_sweep_s,
                                            prefill_compute_s, prefill_intensity, tp_kv_capacity)
from companion.serves import serves
from companion.specs import Hardware, Model

__all__ = [
    "achieved_rates", "decode_attention_intensity", "prefill_readings", "matmul_intensity",
    "pass_roofline",
    "head_of_line_readings", "long_context_in_batch", "block_rounded_capacity",
    "decode_roofline_batch", "decode_step_per_kernel",
]


def _efficiency(name: str, value) -> float:
    return v.probability(name, value, open_low=True)


def _at_precision(model: Model, bytes_per_param) -> Model:
    """The model with its weights stored at ``bytes_per_param`` (None: as the preset has them)."""
    if bytes_per_param is None:
        return model
    b = v.positive("bytes_per_param", bytes_per_param)
    return model.with_(bytes_per_param=b, weight_bytes=model.n_params * b,
                       streamed_weight_bytes=model.streamed_params * b)


def _windowed_pairs(new_tokens: int, history_tokens: int, window) -> int:
    """Causal query-key pairs of ``new_tokens`` queries after ``history_tokens`` cached ones,
    each query seeing at most ``window`` keys (itself included; None: every earlier key).

    Query i (1-based over the whole sequence) sees min(i, W) keys; without a window this is
    ``attention_pairs``: c h + c (c + 1) / 2."""
    if window is None:
        return attention_pairs(new_tokens, history_tokens)
    lo, hi = history_tokens + 1, history_tokens + new_tokens
    top = min(hi, window)
    pairs = (lo + top) * (top - lo + 1) // 2 if top >= lo else 0
    return pairs + window * max(0, hi - max(lo - 1, window))


def _attention_flops(m: Model, new_tokens: int, history_tokens: int) -> float:
    """Attention FLOPs of one sequence's ``new_tokens`` on ``history_tokens``, layer by layer
    (a sliding-window layer caps the keys each query sees)."""
    per_layer = attention_flops_per_pair(m) / m.n_layers
    return per_layer * sum(_windowed_pairs(new_tokens, history_tokens, w)
                           for w in m.layer_windows)


# --- §1: the rates a card reaches ------------------------------------------------------------

@serves("17.1")
def achieved_rates(hardware: Hardware, *, compute_efficiency: float = 1.0,
                   bandwidth_efficiency: float = 1.0, sweep_bytes: float | None = None) -> dict:
    """The ridge and the memory sweep at achieved rates beside the spec sheet's (17 §1, fuller).

    17 §1 divides the peaks: ridge = pi / beta (295 FLOP/B on the H100 SXM), sweep = bytes /
    beta (80 GB in 24 ms). A card reaches a fraction of each: MFU x pi and MBU x beta (17 §9
    measures 70% MBU on a healthy batch-1 decode and 32% MFU on a loaded prefill). Then

        ridge = (MFU x pi) / (MBU x beta),   sweep = bytes / (MBU x beta).

    At the chapter's own pair of assumptions, 50% of peak compute (§2) and 70% of peak
    bandwidth (§9), the ridge is 211 FLOP/B and the 80 GB sweep 34 ms. ``sweep_bytes``
    defaults to the card's memory. Returns the peak and achieved ridge, rates, sweep times and
    steps per second, and ``ridge_ratio`` (achieved / peak ridge).
    """
    hw = _hardware(hardware)
    ec = _efficiency("compute_efficiency", compute_efficiency)
    eb = _efficiency("bandwidth_efficiency", bandwidth_efficiency)
    n = hw.mem_bytes if sweep_bytes is None else v.positive("sweep_bytes", sweep_bytes)
    peak_sweep = memory_sweep_s(hw, n)
    sweep = peak_sweep / eb
    peak_ridge = ridge_point(hw)
    ridge = peak_ridge * ec / eb
    return dict(peak_ridge_flop_per_byte=peak_ridge, ridge_flop_per_byte=ridge,
                ridge_ratio=ridge / peak_ridge,
                flops_per_s=ec * hw.peak_flops_per_s, bytes_per_s=eb * hw.mem_bw_bytes_per_s,
                peak_sweep_s=peak_sweep, sweep_s=sweep, peak_steps_per_s=1.0 / peak_sweep,
                steps_per_s=1.0 / sweep)


# --- §2: attention in the FLOPs, the weight read under short prompts --------------------------

@serves("17.2")
def decode_attention_intensity(model: Model, batch: int = 1, context_tokens: int = 0, *,
                               bytes_per_param: float | None = None,
                               kv_bytes_per_value: float = 2) -> dict:
    """Decode intensity with attention's FLOPs counted beside the matrices' (17 §2, fuller).

    The chapter's intensity (``decode_intensity``) is b x 2P over D_w + b L k: the step reads
    each sequence's cache but does no arithmetic with it. Attention does: each new token meets
    its L cached tokens and itself, a (L + 1) FLOPs with a = ``attention_flops_per_pair``, so

        I = b (2P + a (L + 1)) / (D_w + b L k).

    As L grows the matrices fade and I tends to a / k, the attention's own intensity: the
    query heads per KV head (x 2 / bytes per value), 4 FLOP/B for the 8B shape. At b = 64 the
    chapter's 49 (600 tokens) and 12 (8,000) become 50 and 15. The step time does not change
    (decode stays on the memory roof). Returns matrix_flops, attention_flops, bytes,
    chapter_intensity, intensity, attention_share (of all FLOPs) and long_context_limit (a / k
    for a model without sliding windows, else None).
    """
    m = _at_precision(_model(model), bytes_per_param)
    b = v.count("batch", batch)
    L = v.tokens("context_tokens", context_tokens)
    v.positive("kv_bytes_per_value", kv_bytes_per_value)
    matrices = matrix_flops(m, b, include_lm_head=True)
    attention = b * _attention_flops(m, 1, L)
    n_bytes = (moe_streamed_weight_bytes(m, b)
               + b * kv_bytes_at_context(m, L, bytes_per_value=kv_bytes_per_value))
    limit = (attention_flops_per_pair(m) / kv_bytes_per_token(m, kv_bytes_per_value)
             if m.sliding_window is None else None)
    return dict(matrix_flops=matrices, attention_flops=attention, bytes=n_bytes,
                chapter_intensity=decode_intensity(m, b, L, kv_bytes_per_value=kv_bytes_per_value),
                intensity=(matrices + attention) / n_bytes,
                attention_share=attention / (matrices + attention), long_context_limit=limit)


@serves("17.2", "17.3", "17.5", "17.6")
def pass_roofline(model: Model, hardware: Hardware, *, prompt_tokens: int = 0,
                  history_tokens: int = 0, decode_batch: int = 0, decode_context_tokens: int = 0,
                  efficiency: float = ch17.PREFILL_EFFICIENCY, attention: bool = True,
                  kv_bytes_per_value: float = 2) -> dict:
    """One forward pass on the roofline: ``prompt_tokens`` of prefill on ``history_tokens``
    cached ones plus one decode token for each of ``decode_batch`` sequences of
    ``decode_context_tokens`` (17 §2-§6, fuller).

    bytes = D_w (what the pass's tokens touch, for an MoE) + the decode sequences' and the
    prompt's cached KV + the prompt's new KV; FLOPs = 2 P per prompt token (layer matrices, as
    the chapter's prefill) and per decode token (every read-once matrix, as its decode) plus,
    with ``attention``, the attention of every query (a sliding-window layer caps its keys).
    Time = max(bytes / beta, FLOPs / (efficiency x peak)): the roofline's max, not the sum.
    ``calc.fused_step_parts`` is the same pass for a full-attention model. Returns bytes, flops,
    attention_flops, memory_s, compute_s, step_s, bound ("memory" or "compute").
    """
    m = _model(model)
    hw = _hardware(hardware)
    c = v.tokens("prompt_tokens", prompt_tokens)
    h = v.tokens("history_tokens", history_tokens)
    b = v.tokens("decode_batch", decode_batch)
    L = v.tokens("decode_context_tokens", decode_context_tokens)
    e = _efficiency("efficiency", efficiency)
    v.positive("kv_bytes_per_value", kv_bytes_per_value)
    if c + b == 0:
        raise ValueError("prompt_tokens: a pass needs prompt tokens or a decode batch")
    kv = dict(bytes_per_value=kv_bytes_per_value)
    n_bytes = (moe_streamed_weight_bytes(m, c + b) + b * kv_bytes_at_context(m, L, **kv)
               + kv_bytes_at_context(m, h, **kv) + c * kv_bytes_per_token(m, kv_bytes_per_value))
    attn = (_attention_flops(m, c, h) + b * _attention_flops(m, 1, L)) if attention else 0.0
    flops = matrix_flops(m, c) + matrix_flops(m, b, include_lm_head=True) + attn
    memory_s = n_bytes / hw.mem_bw_bytes_per_s
    compute_s = flops / (e * hw.peak_flops_per_s)
    return dict(bytes=n_bytes, flops=flops, attention_flops=attn, memory_s=memory_s,
                compute_s=compute_s, step_s=max(memory_s, compute_s),
                bound="compute" if compute_s > memory_s else "memory")


@serves("17.2", "17.3")
def prefill_readings(model: Model, hardware: Hardware, prompt_tokens: int, *,
                     efficiency: float = ch17.PREFILL_EFFICIENCY,
                     bytes_per_param: float | None = None) -> dict:
    """A prefill priced three ways (17 §2-§3, fuller).

    - ``chapter_s``: 2 P n / (efficiency x peak), the matrices' compute alone
      (``prefill_compute_s``): 66 ms for 2,048 tokens of the 8B, 259 ms for 8,000;
    - ``attention_s``: the same with attention's c (c + 1) / 2 pairs added to the FLOPs
      (3% more at 2,048 tokens, 13% at 8,000, about half again at 32,000);
    - ``roofline_s``: the roofline's max of that compute and the pass's reads (weights once,
      the new KV): below about ridge x efficiency tokens (148 at 50% on the H100) the weight
      read sets the time, 4.8 ms for the 8B however short the prompt, where the chapter's
      price falls towards zero.

    Also ``matrix_flops``, ``attention_flops``, ``memory_s``, ``bound``, ``attention_share``
    (of the FLOPs), each reading over the
    chapter's (``attention_over_chapter``, ``roofline_over_chapter``), and the pass's intensity
    with attention (``intensity``: its FLOPs over its bytes, the new KV written included)
    beside the chapter's ``prefill_intensity`` (``chapter_intensity``).
    """
    m = _at_precision(_model(model), bytes_per_param)
    hw = _hardware(hardware)
    n = v.tokens("prompt_tokens", prompt_tokens, minimum=1)
    chapter = prefill_compute_s(m, hw, n, efficiency=efficiency)
    full = pass_roofline(m, hw, prompt_tokens=n, efficiency=efficiency)
    return dict(chapter_s=chapter, attention_s=full["compute_s"], memory_s=full["memory_s"],
                roofline_s=full["step_s"], bound=full["bound"],
                chapter_intensity=prefill_intensity(m, n), intensity=full["flops"] / full["bytes"],
                matrix_flops=full["flops"] - full["attention_flops"],
                attention_flops=full["attention_flops"],
                attention_share=full["attention_flops"] / full["flops"],
                attention_over_chapter=full["compute_s"] / chapter,
                roofline_over_chapter=full["step_s"] / chapter)


@serves("17.2")
def matmul_intensity(model: Model, tokens: int, *, intermediate_size: int | None = None,
                     bytes_per_param: float | None = None,
                     activation_bytes: float = 2) -> dict:
    """Intensity of a pass's weight products with their activations counted (17 §2, fuller).

    The chapter counts only the weights as bytes, so t tokens through them give
    I = 2 P t / (P x bytes_per_param) = t in BF16. Each product of a d_in x d_out weight also
    reads its t x d_in input X and writes its t x d_out output Y, which grow with t as the FLOPs
    do. Per layer of a dense transformer with a gated MLP (q, k, v, o; gate, up, down), with
    S = sum of d_in d_out and T = sum of (d_in + d_out) over those seven products,

        I = 2 t S / (bytes_per_param x S + activation_bytes x t T)  ->  2 S / (activation_bytes x T),

    close to the chapter's t while t is small next to d_model and d_ff, levelling off past them.
    For the 8B shape (hidden 4,096, d_ff 14,336): 1,158 FLOP/B at 2,048 tokens, 2,462 at 32,768,
    2,662 however long, still far right of the 295 ridge; weights-only decode reaches the ridge
    at t = 333 instead of 295. Each product is its own kernel here; engines that fuse q/k/v and
    gate/up read X once per group and sit a little higher. Embedding, head and attention's own
    work are left out. ``intermediate_size`` defaults to the model's (a shape without one must
    give it). Returns flops, weight_bytes, activation_bytes, chapter_intensity (FLOPs over the
    weight bytes), intensity, activation_share (of the bytes) and long_prompt_limit.

    >>> from companion.specs import LLAMA_8B
    >>> r = matmul_intensity(LLAMA_8B, 2048, intermediate_size=14336)
    >>> round(r["chapter_intensity"]), round(r["intensity"]), round(r["long_prompt_limit"])
    (2048, 1158, 2662)
    """
    m = _at_precision(_model(model), bytes_per_param)
    t = v.tokens("tokens", tokens, minimum=1)
    act = v.positive("activation_bytes", activation_bytes)
    f = m.intermediate_size if intermediate_size is None else v.count("intermediate_size",
                                                                      intermediate_size)
    if m.is_moe or m.is_mla:
        raise ValueError(f"model: {m.name} routes experts or compresses its KV (MLA); "
                         "matmul_intensity counts a dense grouped-query layer")
    if m.hidden_size is None or f is None:
        raise ValueError(f"intermediate_size: {m.name} gives no hidden_size or intermediate_size; "
                         "pass intermediate_size (and use a model with hidden_size)")
    d, q, kv = m.hidden_size, m.n_query_heads * m.head_dim, m.n_kv_heads * m.head_dim
    shapes = ((d, q), (d, kv), (d, kv), (q, d), (d, f), (d, f), (f, d))
    s_sum = sum(a * b for a, b in shapes)
    t_sum = sum(a + b for a, b in shapes)
    flops = 2.0 * t * s_sum * m.n_layers
    weights = m.bytes_per_param * s_sum * m.n_layers
    acts = act * t * t_sum * m.n_layers
    return dict(flops=flops, weight_bytes=weights, activation_bytes=acts,
                chapter_intensity=flops / weights, intensity=flops / (weights + acts),
                activation_share=acts / (weights + acts),
                long_prompt_limit=2.0 * s_sum / (act * t_sum))


# --- §3: the head-of-line stall, three ways ---------------------------------------------------

@serves("17.3")
def head_of_line_readings(model: Model, hardware: Hardware, prompt_tokens: int, step_s: float,
                          *, live_tokens: int = ch17.CHAT_LIVE_TOKENS,
                          efficiency: float = ch17.PREFILL_EFFICIENCY) -> dict:
    """The round that admits a whole long prompt into a running decode batch, three ways
    (17 §3, fuller).

    - ``chapter_s``: the prefill's matrices at ``efficiency`` x peak, alone (259 ms for
      8,000 tokens of the 8B): the stall the chapter divides by the step;
    - ``additive_s``: the decode step plus that prefill, which is how the companion's scheduler
      simulator prices the round (two passes one after the other);
    - ``fused_s``: one forward pass carrying the prompt and the batch's decode tokens
      (``pass_roofline``, attention counted): the weights are read once, the time is the
      roofline's max. The batch is the one whose memory-bound step is ``step_s`` with
      ``live_tokens`` each (``decode_batch_for_step``: 53 for 6 ms at 600 tokens).

    Each ``*_over_step`` is that round over the step (the worst ITL in steps).
    """
    m = _model(model)
    hw = _hardware(hardware)
    n = v.tokens("prompt_tokens", prompt_tokens, minimum=1)
    step = v.positive("step_s", step_s)
    L = v.tokens("live_tokens", live_tokens, minimum=1)
    chapter = prefill_compute_s(m, hw, n, efficiency=efficiency)
    batch = decode_batch_for_step(m, hw, step, live_tokens=L)
    fused = pass_roofline(m, hw, prompt_tokens=n, decode_batch=batch, decode_context_tokens=L,
                          efficiency=efficiency)
    return dict(decode_batch=batch, chapter_s=chapter, additive_s=step + chapter,
                fused_s=fused["step_s"], fused_bound=fused["bound"],
                attention_share=fused["attention_flops"] / fused["flops"],
                chapter_over_step=chapter / step, additive_over_step=(step + chapter) / step,
                fused_over_step=fused["step_s"] / step)


# --- §4: a long context is paid by the whole batch; whole blocks ---------------------------------

@serves("17.4")
def long_context_in_batch(model: Model, hardware: Hardware, context_tokens: int, *,
                          batch: int, live_tokens: int = ch17.CHAT_LIVE_TOKENS,
                          kv_bytes_per_value: float = 2) -> dict:
    """One sequence of ``context_tokens`` joining a decode batch of ``batch`` sequences of
    ``live_tokens`` (17 §4, fuller).

    17 §4 runs the step at batch 1, (D_w + L k) / beta, so a long context looks like its own
    sequence's cost (``own_slowdown``: twice the weights-only step at 122,000 tokens for the
    8B). In a batch every sequence waits for the same step, (D_w + b L0 k + L k) / beta, so the
    long context's bytes lengthen the ITL of all b + 1 sequences (``batch_slowdown`` = that
    step over the batch's step without it): at 122,000 tokens the chapter's batch of 57 chats
    goes from 6.1 ms to 10.9 ms. Steps are ``decode_vs_context``'s roofline bound (the larger of
    the byte and FLOP times at peak). Returns alone_step_s (batch 1 at L), weights_step_s,
    own_slowdown, batch_step_s (without it), mixed_step_s (with it), batch_slowdown,
    long_byte_share (its share of the mixed step's bytes).
    """
    m = _model(model)
    hw = _hardware(hardware)
    L = v.tokens("context_tokens", context_tokens)
    b = v.count("batch", batch)
    L0 = v.tokens("live_tokens", live_tokens, minimum=1)
    kv = dict(kv_bytes_per_value=kv_bytes_per_value)
    alone = decode_vs_context(m, hw, L, **kv)["step_s"]
    weights = decode_vs_context(m, hw, 0, **kv)["step_s"]
    base = decode_vs_context(m, hw, L0, batch=b, **kv)
    long_bytes = L * kv_bytes_per_token(m, kv_bytes_per_value)
    mixed_bytes = base["step_bytes"] + long_bytes
    # the roofline bound of the mixed step: bytes or the b + 1 tokens' FLOPs at peak
    compute_s = (b + 1) * matrix_flops(m, 1, include_lm_head=True) / hw.peak_flops_per_s
    mixed = max(mixed_bytes / hw.mem_bw_bytes_per_s, compute_s)
    return dict(alone_step_s=alone, weights_step_s=weights, own_slowdown=alone / weights,
                batch_step_s=base["step_s"], mixed_step_s=mixed,
                batch_slowdown=mixed / base["step_s"], long_byte_share=long_bytes / mixed_bytes)


@serves("17.4", "17.5")
def block_rounded_capacity(model: Model, hardware: Hardware, *,
                           context_tokens: int = ch17.LONG_CONTEXT_TOKENS,
                           block_tokens: int = ch17.BLOCK_TOKENS, tp: int = 1,
                           reserve_bytes: float = ch17.RUNTIME_RESERVE_BYTES,
                           bytes_per_value: float = 2) -> dict:
    """Sequences that fit when each holds whole blocks of ``block_tokens`` (17 §4-§5, fuller).

    17 §4 divides the KV space by L x k; a paged engine hands out whole blocks, so a sequence
    holds ceil(L / p) x p tokens. At the chapter's 8,000 tokens (500 blocks of 16) the two
    agree exactly; at 100 tokens a sequence holds 112 and 11% fewer fit. Returns
    chapter_sequences (``tp_kv_capacity``), sequences, held_tokens and lost_share (the
    fraction of the chapter's count that whole blocks cost).
    """
    m = _model(model)
    L = v.tokens("context_tokens", context_tokens, minimum=1)
    p = v.tokens("block_tokens", block_tokens, minimum=1)
    cap = tp_kv_capacity(m, hardware, tp=tp, context_tokens=L, reserve_bytes=reserve_bytes,
                         bytes_per_value=bytes_per_value)
    per_seq = kv_bytes(m, L, block_tokens=p, bytes_per_value=bytes_per_value)
    fit = int(cap["free_kv_bytes"] // per_seq) if cap["free_kv_bytes"] > 0 else 0
    chapter = cap["max_sequences"]
    return dict(chapter_sequences=chapter, sequences=fit, held_tokens=-(-L // p) * p,
                lost_share=(chapter - fit) / chapter if chapter else 0.0)


# --- §5: the compute roof under a large decode batch ------------------------------------------

@serves("17.5")
def decode_roofline_batch(model: Model, hardware: Hardware, batch: int, *,
                          live_tokens: int = ch17.CHAT_LIVE_TOKENS,
                          efficiency: float = ch17.PREFILL_EFFICIENCY,
                          kv_bytes_per_value: float = 2) -> dict:
    """A decode step of ``batch`` sequences priced by bytes (17 §5) and by the roofline with its
    compute at ``efficiency`` x peak (fuller).

    The chapter's step is (D_w + b L k) / beta (``decode_vs_context``; its FLOPs at the full
    peak never bind). But b tokens also cost b (2P + a (L + 1)) FLOPs, and a matrix product of
    a few hundred rows runs nearer the 50% of peak the chapter grants a prefill than the roof:
    at that rate the paged batch of 17 §5 (760 sequences of 600 tokens) needs 25 ms of compute
    against 22.6 ms of reads, and the step is compute-bound. Returns chapter_step_s,
    memory_s, compute_s, step_s (their max), bound, chapter_tokens_per_s, tokens_per_s and
    compute_ceiling_tokens_per_s (efficiency x peak over one token's FLOPs: where throughput
    stops however large the batch).
    """
    m = _model(model)
    hw = _hardware(hardware)
    b = v.count("batch", batch)
    L = v.tokens("live_tokens", live_tokens, minimum=1)
    e = _efficiency("efficiency", efficiency)
    chapter = decode_vs_context(m, hw, L, batch=b, kv_bytes_per_value=kv_bytes_per_value)
    full = pass_roofline(m, hw, decode_batch=b, decode_context_tokens=L, efficiency=e,
                         kv_bytes_per_value=kv_bytes_per_value)
    per_token = full["flops"] / b
    return dict(chapter_step_s=chapter["step_s"], memory_s=full["memory_s"],
                compute_s=full["compute_s"], step_s=full["step_s"], bound=full["bound"],
                chapter_tokens_per_s=chapter["tokens_per_s"], tokens_per_s=b / full["step_s"],
                compute_ceiling_tokens_per_s=e * hw.peak_flops_per_s / per_token)


@serves("17.5")
def decode_step_per_kernel(model: Model, hardware: Hardware, batch: int, *,
                           live_tokens: int = ch17.CHAT_LIVE_TOKENS, efficiency: float = 1.0,
                           kv_bytes_per_value: float = 2) -> dict:
    """A decode step of ``batch`` sequences priced kernel by kernel (17 §2, §5, fuller).

    ``decode_roofline_batch`` takes one max over the whole step's bytes and FLOPs, as if the
    weight matrices' products ran at the same time as attention's KV reads. Engines run them
    one after the other, so each kernel gets its own roofline and the times add:

        step = max(D_w / beta, b 2P / (e pi))  +  max(b L k / beta, b a (L + 1) / (e pi))
               (weight products)                  (attention over the KV)

    Past b = e x ridge (295 on the H100 SXM at full peak, 17 §2) the weight products are
    compute-bound. Returns weights_read_s, weights_compute_s, weights_s, kv_read_s,
    attention_compute_s, attention_s, step_s, tokens_per_s, weights_bound ("memory" or
    "compute"), and for comparison chapter_step_s / chapter_tokens_per_s (bytes alone) and
    overlapped_step_s (``decode_roofline_batch``'s single max at the same efficiency).

    >>> from companion import calc, specs
    >>> r = calc.decode_step_per_kernel(specs.LLAMA_8B, specs.H100_SXM, 762)
    >>> round(r["weights_compute_s"] * 1e3, 1), round(r["kv_read_s"] * 1e3, 1)
    (12.3, 17.9)
    >>> round(r["step_s"] * 1e3, 1), r["weights_bound"]
    (30.2, 'compute')
    """
    m = _model(model)
    hw = _hardware(hardware)
    b = v.count("batch", batch)
    L = v.tokens("live_tokens", live_tokens, minimum=1)
    e = _efficiency("efficiency", efficiency)
    v.positive("kv_bytes_per_value", kv_bytes_per_value)
    rate, beta = e * hw.peak_flops_per_s, hw.mem_bw_bytes_per_s
    w_read = moe_streamed_weight_bytes(m, b) / beta
    w_compute = matrix_flops(m, b, include_lm_head=True) / rate
    kv_read = b * kv_bytes_at_context(m, L, bytes_per_value=kv_bytes_per_value) / beta
    a_compute = b * _attention_flops(m, 1, L) / rate
    step = max(w_read, w_compute) + max(kv_read, a_compute)
    chapter = decode_vs_context(m, hw, L, batch=b, kv_bytes_per_value=kv_bytes_per_value)
    overlapped = pass_roofline(m, hw, decode_batch=b, decode_context_tokens=L, efficiency=e,
                               kv_bytes_per_value=kv_bytes_per_value)
    return dict(weights_read_s=w_read, weights_compute_s=w_compute,
                weights_s=max(w_read, w_compute), kv_read_s=kv_read,
                attention_compute_s=a_compute, attention_s=max(kv_read, a_compute),
                step_s=step, tokens_per_s=b / step,
                weights_bound="compute" if w_compute > w_read else "memory",
                chapter_step_s=chapter["step_s"], chapter_tokens_per_s=chapter["tokens_per_s"],
                overlapped_step_s=overlapped["step_s"])
