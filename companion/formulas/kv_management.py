"""Closed forms of 8.3: paging, branch sharing, copy-on-write, prefix reuse, hybrid snapshots,
and the economics of keeping a prefix in cache.

Base units in and out (bytes, seconds, FLOP, tokens); the chapter's MiB/ms/% are display only.
"""

from __future__ import annotations

import math
from typing import NamedTuple

from companion import validate as v
from companion.chapters import ch08
from companion.formulas.args import hardware_arg as _hardware
from companion.formulas.args import model_arg as _model
from companion.formulas.core import (cache_retention_value, held_tokens, kv_bytes,
                                     kv_bytes_at_context, kv_bytes_per_token, kv_tokens_allocated,
                                     matrix_flops, measured_prefill_mfu, prefill_flops)
from companion.serves import serves
from companion.specs import QWEN3_8B, RTX_PRO_6000, Hardware, Model

__all__ = [
    # 8.3.1 paging
    "kv_blocks_needed", "kv_tail_waste_tokens", "PagedAllocation", "paged_allocation",
    "shared_prefix_blocks_saved",
    # 8.3.2 branch sharing, shared-prefix batches, copy-on-write
    "BranchSharing", "branch_block_sharing", "prefix_shared_kv_bytes", "CopyOnWrite",
    "copy_on_write",
    # 8.3.3 prefix reuse, hybrid-state snapshots, tiered caches
    "reusable_prefix_tokens", "RestorePoint", "hybrid_restore_point", "snapshot_storage_bytes",
    "long_term_cache_fraction", "decode_kv_read_bytes", "SwaRestore", "swa_restore_plan",
    "stacked_window_reach_tokens",
    # 8.3.4 retention economics
    "link_transfer_s", "prefix_recompute_s", "retention_break_even_hit_prob", "PrefixRetention",
    "prefix_retention", "CacheReplay", "cache_replay_hits",
]


def _token_list(name: str, values, *, min_len: int = 1) -> list[int]:
    seq = v.sequence(name, values, min_len=min_len)
    return [v.tokens(f"{name}[{i}]", x) for i, x in enumerate(seq)]


# --- 8.3.1 paged allocation -----------------------------------------------------------------

@serves("8.3.1")
def kv_blocks_needed(tokens: int, block_tokens: int = 16) -> int:
    """Blocks (= block-table entries) a sequence of L tokens needs: ceil(L / p) (8.3.1).

    Lengths 9, 13, 5, 15 with p = 4 need 3, 4, 2, 4 blocks.
    """
    t = v.tokens("tokens", tokens)
    p = v.tokens("block_tokens", block_tokens, minimum=1)
    return kv_tokens_allocated(t, p) // p


@serves("8.3.1")
def kv_tail_waste_tokens(tokens: int, block_tokens: int = 16) -> int:
    """Unused slots in a sequence's last block: p ceil(L / p) - L, always < p (8.3.1).

    Lengths 9, 13, 5, 15 with p = 4 waste 3, 3, 3, 1 slots.
    """
    t = v.tokens("tokens", tokens)
    p = v.tokens("block_tokens", block_tokens, minimum=1)
    return kv_tokens_allocated(t, p) - t


class PagedAllocation(NamedTuple):
    """Per-sequence and total figures of paging a set of sequences (all counts in tokens)."""

    blocks_per_sequence: tuple[int, ...]
    allocated_per_sequence: tuple[int, ...]
    tail_waste_per_sequence: tuple[int, ...]
    allocated_tokens: int         # sum of p ceil(L / p)
    stored_tokens: int            # sum of L
    unused_tokens: int            # allocated - stored
    table_entries: int            # sum of ceil(L / p)
    reserved_tokens: int | None   # n x max_tokens under full-span reservation (None if not given)
    reserved_unused_tokens: int | None


@serves("8.3.1")
def paged_allocation(lengths, block_tokens: int = 16, *, max_tokens: int | None = None
                     ) -> PagedAllocation:
    """Blocks, allocated slots, tail waste and table entries of paging ``lengths`` (8.3.1).

    Allocated = sum p ceil(L_i / p); unused = allocated - sum L_i. With ``max_tokens`` the
    full-span reservation n x max_tokens is reported for comparison. Worked example: lengths
    9, 13, 5, 15, max 16, p = 4: 64 reserved -> 12 + 16 + 8 + 16 = 52 allocated, 42 stored,
    unused 22 -> 10 (Exercise 8-3 repeats it for p = 2 and 8).
    """
    lens = _token_list("lengths", lengths)
    p = v.tokens("block_tokens", block_tokens, minimum=1)
    reserved = None
    if max_tokens is not None:
        cap = v.tokens("max_tokens", max_tokens, minimum=1)
        longest = max(lens)
        if longest > cap:
            raise ValueError(f"max_tokens: {cap} is shorter than the longest sequence ({longest})")
        reserved = cap * len(lens)
    allocated = tuple(kv_tokens_allocated(L, p) for L in lens)
    blocks = tuple(a // p for a in allocated)
    waste = tuple(a - L for a, L in zip(allocated, lens))
    stored = sum(lens)
    return PagedAllocation(
        blocks_per_sequence=blocks, allocated_per_sequence=allocated,
        tail_waste_per_sequence=waste, allocated_tokens=sum(allocated), stored_tokens=stored,
        unused_tokens=sum(allocated) - stored, table_entries=sum(blocks),
        reserved_tokens=reserved,
        reserved_unused_tokens=None if reserved is None else reserved - stored)


@serves("8.3.1")
def shared_prefix_blocks_saved(prefix_tokens: int, sharers: int, block_tokens: int = 16) -> int:
    """Physical blocks saved when ``sharers`` sequences share an identical prefix (8.3.1).

    Only full blocks are shared (a partly filled block would be written by each sharer):
    (sharers - 1) x floor(prefix / p). A and B sharing 8 tokens with p = 4: 2 blocks, so the
    worked example's 52 allocated slots drop to 44.
    """
    prefix = v.tokens("prefix_tokens", prefix_tokens)
    n = v.count("sharers", sharers)
    p = v.tokens("block_tokens", block_tokens, minimum=1)
    return (n - 1) * (prefix // p)


# --- 8.3.2 branch sharing and copy-on-write --------------------------------------------------

class BranchSharing(NamedTuple):
    references: int          # block-table entries over all branches: n (s + q)
    physical_blocks: int     # s + n q
    private_blocks: int      # n q, still growing with the number of branches
    saved_blocks: int        # references - physical = (n - 1) s
    saved_fraction: float    # saved / references


@serves("8.3.2")
def branch_block_sharing(branches: int, shared_blocks: int, private_blocks: int) -> BranchSharing:
    """References vs physical blocks when n branches share s prefix blocks and own q each (8.3.2).

    Four branches, 95 shared + 9 private: 4 (95 + 9) = 416 references, 95 + 4 x 9 = 131
    physical blocks, about 69% saved; the 36 private blocks grow with the branches.
    """
    n = v.count("branches", branches)
    s = v.integer("shared_blocks", shared_blocks, minimum=0)
    q = v.integer("private_blocks", private_blocks, minimum=0)
    refs = n * (s + q)
    physical = s + n * q
    return BranchSharing(references=refs, physical_blocks=physical, private_blocks=n * q,
                         saved_blocks=refs - physical,
                         saved_fraction=(refs - physical) / refs if refs else 0.0)


@serves("8.3.2")
def prefix_shared_kv_bytes(model: Model, requests: int, prompt_tokens: int, output_tokens: int,
                           *, shared_prefix_tokens: int = 0, block_tokens: int = 16,
                           bytes_per_value: float = 2):
    """KV bytes of ``requests`` requests once generation ends, a common prefix stored once (8.3.2).

    M_KV = kv(prefix) + b x kv(prompt + output - 1 - prefix), each rounded to whole blocks (the
    same reservation ``max_concurrent`` divides the budget by); only whole prefix blocks are
    shared, a partly filled one is private to each request. 16 long Qwen3-8B requests with a
    6144-token prefix: 864 + 16 x 324 = 6048 MiB instead of 16 x 1188 = 19008 MiB.
    """
    m = _model(model)
    b = v.count("requests", requests, minimum=0)
    prompt = v.tokens("prompt_tokens", prompt_tokens)
    held = held_tokens(prompt, output_tokens)
    prefix = v.tokens("shared_prefix_tokens", shared_prefix_tokens)
    if prefix > prompt:
        raise ValueError(f"shared_prefix_tokens: {prefix} exceeds prompt_tokens={prompt}")
    kw = dict(block_tokens=block_tokens, bytes_per_value=bytes_per_value)
    # Only whole blocks are shared; a partly filled prefix block is each request's own copy.
    prefix -= prefix % v.tokens("block_tokens", block_tokens, minimum=1)
    prefix_bytes = kv_bytes(m, prefix, **kw) if prefix else 0
    return prefix_bytes + b * kv_bytes(m, held - prefix, **kw)


class CopyOnWrite(NamedTuple):
    shared_full_blocks: int   # read-only blocks every branch keeps referencing
    partial_tail_tokens: int  # tokens in the shared, partly filled tail block
    block_copies: int         # private copies made when the branches write: n - 1
    copied_tokens: int        # block_copies x partial_tail_tokens


@serves("8.3.2")
def copy_on_write(shared_tokens: int, branches: int, block_tokens: int = 16) -> CopyOnWrite:
    """Copies made when n branches start writing after ``shared_tokens`` common tokens (8.3.2).

    Full blocks stay shared read-only. A partly filled tail block would make the branches
    contend for its free slots, so each writer whose block is still referenced by another
    first copies it; the last one writes in place: n - 1 copies of (shared mod p) tokens.
    A 4-token block holding 3 shared tokens, two branches: one copy of 3 tokens.
    """
    t = v.tokens("shared_tokens", shared_tokens)
    n = v.count("branches", branches)
    p = v.tokens("block_tokens", block_tokens, minimum=1)
    tail = t % p
    copies = (n - 1) if tail else 0
    return CopyOnWrite(shared_full_blocks=t // p, partial_tail_tokens=tail,
                       block_copies=copies, copied_tokens=copies * tail)


# --- 8.3.3 prefix reuse and hybrid-state snapshots -------------------------------------------

@serves("8.3.3")
def reusable_prefix_tokens(cached_sequence, new_sequence, *, block_tokens: int = 1) -> int:
    """Tokens of ``new_sequence`` whose cached KV can be reused: its common prefix with the cache.

    Reuse stops at the first differing token even if the text matches again later, because
    every later token's KV depends on all earlier ones (8.3.3): two prompts that differ at the
    101st token reuse 100. With ``block_tokens`` > 1 only whole cached blocks count
    (floor(match / p) x p), as in block-granular prefix caches.
    """
    cached = _token_list("cached_sequence", cached_sequence, min_len=0)
    new = _token_list("new_sequence", new_sequence, min_len=0)
    p = v.tokens("block_tokens", block_tokens, minimum=1)
    match = 0
    for a, b in zip(cached, new):
        if a != b:
            break
        match += 1
    return match // p * p


class RestorePoint(NamedTuple):
    restore_from: int       # token position of the latest usable snapshot (0: none)
    recompute_tokens: int   # matched - restore_from


@serves("8.3.3")
def hybrid_restore_point(matched_tokens: int, snapshot_positions) -> RestorePoint:
    """Where a hybrid (full + recurrent) model restores a matched prefix, and what it recomputes.

    Recurrent layers keep only the current state, so the matched prefix can be resumed only
    from the latest snapshot at or before the match: match at 10,752 with snapshots at 4096
    and 8192 restores from 8192 and recomputes 2560 tokens (8.3.3).
    """
    matched = v.tokens("matched_tokens", matched_tokens)
    positions = _token_list("snapshot_positions", snapshot_positions, min_len=0)
    usable = [s for s in positions if s <= matched]
    start = max(usable, default=0)
    return RestorePoint(restore_from=start, recompute_tokens=matched - start)


@serves("8.3.3")
def snapshot_storage_bytes(snapshot_bytes: float, snapshots: int) -> float:
    """State kept for ``snapshots`` recurrent-state snapshots of ``snapshot_bytes`` each (8.3.3).

    About 53.6 MiB per card per snapshot at TP = 8: 2 snapshots ~107 MiB, 32 ~1714 MiB.
    """
    size = v.positive("snapshot_bytes", snapshot_bytes)
    n = v.count("snapshots", snapshots, minimum=0)
    return n * size


@serves("8.3.3")
def long_term_cache_fraction(local_state_share: float, global_kv_fraction: float) -> float:
    """Long-term cache volume relative to before: (1 - local share) x global compression (8.3.3).

    DeepSeek V4.1 moves the SWA state (about half of V4's long-term cache) out and compresses
    the global KV to about a quarter: 1/2 x 1/4 = 1/8.
    """
    share = v.probability("local_state_share", local_state_share)
    frac = v.number("global_kv_fraction", global_kv_fraction, positive=True)
    return (1.0 - share) * frac


@serves("8.3.3")
def decode_kv_read_bytes(model: Model, context_tokens: int, output_tokens: int, *,
                         bytes_per_value: float = 2) -> float:
    """KV bytes the next ``output_tokens`` decode steps read after a context of L tokens (8.3.3).

    Step j (j = 0 ... G - 1) attends over the L + j tokens cached before it, so without
    sliding windows the G steps read k (G L + G (G - 1) / 2) bytes: a longer context costs on
    every later step, which is why organising the context changes more than the prefill.
    Sliding-window layers cap each step's read (``kv_bytes_at_context``).
    """
    L = v.tokens("context_tokens", context_tokens)
    g = v.tokens("output_tokens", output_tokens)
    b = v.positive("bytes_per_value", bytes_per_value)
    if g == 0:
        return 0
    per_token = kv_bytes_per_token(model, b)
    if kv_bytes_at_context(model, L + g - 1, bytes_per_value=b) == (L + g - 1) * per_token:
        # no window is reached by the last step, so every step reads L + j whole tokens
        return _as_whole(per_token * (g * L + g * (g - 1) // 2))
    return sum(kv_bytes_at_context(model, L + j, bytes_per_value=b) for j in range(g))


def _as_whole(x: float):
    return int(round(x)) if abs(x - round(x)) < 1e-6 else x


@serves("8.3.3")
class SwaRestore(NamedTuple):
    """What a CED model (encoder and decoder with sliding-window state) recomputes to continue
    a cached prefix (8.3.3): tokens through the encoder (replayed prefix + new suffix), tokens
    replayed through the decoder, and whether each rebuilt local state is approximate."""

    encoder_replay_tokens: int    # cached-prefix tokens re-run to rebuild the encoder SWA
    encoder_tokens: int           # all tokens the encoder processes this round
    decoder_replay_tokens: int    # last tokens of the prompt run through the decoder layers
    prefix_recomputed_tokens: int # prefix tokens recomputed from scratch (global KV missed)
    encoder_state_approximate: bool
    decoder_state_approximate: bool


@serves("8.3.3")
def swa_restore_plan(prefix_tokens: int, suffix_tokens: int, *, global_kv_hit: bool,
                     encoder_swa_hit: bool,
                     window_tokens: int = ch08.DEEPSEEK_REPLAY_WINDOW_TOKENS) -> SwaRestore:
    """DeepSeek V4.1's three cases for continuing a cached prefix of ``prefix_tokens`` with
    ``suffix_tokens`` new ones (8.3.3).

    - global KV and encoder SWA both cached: the encoder only processes the suffix;
    - only the global KV cached: the encoder replays the last min(window, prefix) prefix tokens
      with the suffix, rebuilding its SWA from a window boundary (an approximation);
    - global KV missed: the whole prefix is recomputed with the suffix.

    In every case the decoder replays the last min(window, prompt) tokens to rebuild its own
    SWA, which is never cached, so the decoder's local state is always approximate.
    """
    prefix = v.tokens("prefix_tokens", prefix_tokens)
    suffix = v.tokens("suffix_tokens", suffix_tokens)
    global_hit = v.boolean("global_kv_hit", global_kv_hit)
    swa_hit = v.boolean("encoder_swa_hit", encoder_swa_hit)
    window = v.count("window_tokens", window_tokens)
    if swa_hit and not global_hit:
        raise ValueError("encoder_swa_hit: the encoder SWA is reused only together with the "
                         "global KV (set global_kv_hit=True or encoder_swa_hit=False)")
    if not global_hit:
        replay, recomputed = 0, prefix
    elif swa_hit:
        replay, recomputed = 0, 0
    else:
        replay, recomputed = min(window, prefix), 0
    return SwaRestore(
        encoder_replay_tokens=replay,
        encoder_tokens=recomputed + replay + suffix,
        decoder_replay_tokens=min(window, prefix + suffix),
        prefix_recomputed_tokens=recomputed,
        encoder_state_approximate=replay > 0,
        decoder_state_approximate=prefix + suffix > 0,
    )


@serves("8.3.3")
def stacked_window_reach_tokens(layers: int,
                                window_tokens: int = ch08.DEEPSEEK_REPLAY_WINDOW_TOKENS) -> int:
    """Earlier tokens that the top of ``layers`` stacked sliding-window layers still depends on.

    Each layer sees the previous layer's outputs for the last ``window_tokens`` positions (its
    own included), so the reach grows by window - 1 per layer: layers x (window - 1). A replay
    of only the last window rebuilds the state without that older history, which is why 8.3.3
    calls the rebuilt state approximate. Twenty decoder layers with a 128-token window reach
    back 2540 tokens.
    """
    n = v.count("layers", layers)
    w = v.count("window_tokens", window_tokens)
    return n * (w - 1)


# --- 8.3.4 retention economics ---------------------------------------------------------------

@serves("8.3.4", "8.4.3")
def link_transfer_s(size_bytes: float, link_bytes_per_s: float) -> float:
    """Lower bound of moving ``size_bytes`` over a link at its nominal rate: S / B (8.3.4, 8.4.3).

    864 MiB (0.906 GB) over PCIe Gen5 x16 at 64 GB/s: 14.2 ms; at Gen4's 32 GB/s: 28.3 ms.
    """
    size = v.nonnegative("size_bytes", size_bytes)
    bw = v.positive("link_bytes_per_s", link_bytes_per_s)
    return size / bw


@serves("8.3.4")
def prefix_recompute_s(model: Model, hardware: Hardware, prefix_tokens: int, efficiency: float,
                       *, history_tokens: int = 0, attention: bool = True) -> float:
    """Seconds to recompute a prefix by prefill: prefill FLOPs / (efficiency x peak) (8.3.4).

    FLOPs are layer matrices plus causal attention (``prefill_flops``): 96.5 TFLOP for the
    6144-token Qwen3-8B prefix, 307.9 ms at 62.2% of 503.8 TFLOP/s; 94.7 ms for 2048 tokens.
    ``attention=False`` counts the layer matrices alone, which grow linearly with the prefix.
    """
    m = _model(model)
    hw = _hardware(hardware)
    n = v.tokens("prefix_tokens", prefix_tokens)
    eff = v.probability("efficiency", efficiency, open_low=True)
    h = v.tokens("history_tokens", history_tokens)
    if not isinstance(attention, bool):
        raise TypeError(f"attention: expected True or False, got {attention!r}")
    flops = prefill_flops(m, n, h) if attention else matrix_flops(m, n)
    return flops / (eff * hw.peak_flops_per_s)


@serves("8.3.4")
def retention_break_even_hit_prob(recompute_s: float, fetch_s: float, maintain_s: float, *,
                                  target_value_s: float = 0.0) -> float:
    """Hit probability at which keeping a prefix is worth ``target_value_s``: (V + T_m)/(T_r - T_f).

    With the default target 0 this is the break-even p_h > T_m / (T_r - T_f) of 8.3.4
    (14.2 / 293.7 = 4.8% over PCIe Gen5, 10.1% over Gen4). With target_value_s set to the
    value of an alternative (three B prefixes, 120.9 ms) it is the hit probability below which
    that alternative wins (Exercise 8-4). A result above 1 means no probability suffices;
    inf when a hit saves nothing (T_r <= T_f).
    """
    tr = v.nonnegative("recompute_s", recompute_s)
    tf = v.nonnegative("fetch_s", fetch_s)
    tm = v.nonnegative("maintain_s", maintain_s)
    target = v.number("target_value_s", target_value_s)
    if tr <= tf:
        return math.inf
    return (target + tm) / (tr - tf)


class PrefixRetention(NamedTuple):
    kv_bytes: float            # the prefix's KV, block-rounded
    recompute_s: float         # T_r
    fetch_s: float             # T_f: one transfer back over the link
    maintain_s: float          # T_m: maintain_transfers x one transfer (the swap-out)
    saving_per_hit_s: float    # T_r - T_f
    value_s: float             # V_h = p_h (T_r - T_f) - T_m
    break_even_hit_prob: float  # T_m / (T_r - T_f)
    value_s_per_byte: float    # V_h / kv_bytes, to rank prefixes of different sizes


@serves("8.3.4")
def prefix_retention(model: Model, hardware: Hardware, prefix_tokens: int, *, hit_prob: float,
                     efficiency: float, link_bytes_per_s: float | None = None,
                     maintain_transfers: float = 1.0, block_tokens: int = 16,
                     bytes_per_value: float = 2, attention: bool = True) -> PrefixRetention:
    """The expected net saving of keeping one prefix, with every term of 8.3.4.

    T_r from prefill FLOPs at ``efficiency`` of the hardware's peak; T_f = KV bytes / link
    (default: the hardware's host link); T_m = ``maintain_transfers`` x T_f (the chapter: one
    swap-out). Prefix A (6144 tokens, 864 MiB) at p_h = 0.5 over PCIe Gen5: 307.9 - 14.2 ms per
    hit, V_h = 132.7 ms, 0.154 ms per MiB; prefix B (2048 tokens, 288 MiB): 40.3 ms, 0.140 ms/MiB.
    ``attention=False`` prices T_r by the layer matrices alone: then every term is proportional
    to the prefix length, and one A is worth exactly three B.
    """
    m = _model(model)
    hw = _hardware(hardware)
    n = v.tokens("prefix_tokens", prefix_tokens, minimum=1)
    p = v.probability("hit_prob", hit_prob)
    if link_bytes_per_s is None:
        if hw.host_link_bytes_per_s is None:
            raise ValueError("link_bytes_per_s: not given, and hardware has no "
                             "host_link_bytes_per_s")
        link_bytes_per_s = hw.host_link_bytes_per_s
    transfers = v.nonnegative("maintain_transfers", maintain_transfers)
    size = kv_bytes(m, n, block_tokens=block_tokens, bytes_per_value=bytes_per_value)
    tr = prefix_recompute_s(m, hw, n, efficiency, attention=attention)
    tf = link_transfer_s(size, link_bytes_per_s)
    tm = transfers * tf
    value = cache_retention_value(p, tr, tf, tm)
    return PrefixRetention(kv_bytes=size, recompute_s=tr, fetch_s=tf, maintain_s=tm,
                           saving_per_hit_s=tr - tf, value_s=value,
                           break_even_hit_prob=retention_break_even_hit_prob(tr, tf, tm),
                           value_s_per_byte=value / size)


class CacheReplay(NamedTuple):
    reprocessed_tokens: int  # input - hit
    hit_ratio: float         # hit / input


@serves("8.3.4")
def cache_replay_hits(input_tokens: int, hit_tokens: int) -> CacheReplay:
    """Tokens a replay must still prefill, and its hit ratio, from its input and hit counts (8.3.4).

    The 12-round agent replay: 19,556 input tokens, 16,304 hit in a 6 GiB pool, so 3,252
    reprocessed (hit ratio 83%); a 1 GiB pool hits none and reprocesses all 19,556.
    """
    total = v.tokens("input_tokens", input_tokens, minimum=1)
    hit = v.tokens("hit_tokens", hit_tokens)
    if hit > total:
        raise ValueError(f"hit_tokens: {hit} exceeds input_tokens={total}")
    return CacheReplay(reprocessed_tokens=total - hit, hit_ratio=hit / total)


# --- 8.3.4: the prefill efficiency of a recomputation ----------------------------------------

# 8.3.4: the recomputation runs at the batch-1 prefill MFU of Experiment 8-1, derived from its
# measured 2048-token prefill (94.8 ms, footnote 5): 62.16%, which the chapter prints as "62%".
# (Its 307.9 ms needs 62.2%; the ledger's 8.3.4 entries say so.)
RECOMPUTE_EFFICIENCY = measured_prefill_mfu(QWEN3_8B, RTX_PRO_6000, 1, ch08.SHORT_PROMPT_TOKENS, 0,
                                            ch08.PREFILL_ROUND_S)
