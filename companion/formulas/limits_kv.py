"""Where 8.3's simplified models stop holding: fuller versions beside the chapter's.

The chapter's own formulas stay in ``kv_management``; this module adds what they leave out, so a
notebook can show both side by side:

- 8.3.1 states the tail waste of paging as a bound, at most p - 1 slots per sequence. When
  lengths fall anywhere within a block, the waste is spread evenly over 0..p - 1; a batch's
  total is a sum of such spreads (``tail_waste_distribution``).
- 8.3.4 prices a recomputation at one prefill efficiency whatever its length, a transfer at the
  link's nominal rate, and the swap-out as time the request waits for. A prefill can never be
  faster than one read of the weights (the roofline's max of compute and memory,
  ``prefix_recompute_roofline``); a paged prefix crosses the link as one piece per block per
  layer, each of which may carry a fixed cost (``kv_transfer_pieces``); and a write-back that
  runs on the copy engine while the GPU keeps computing costs no GPU time
  (``prefix_retention_fuller``).

Base units in and out (bytes, seconds, FLOP, tokens).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from companion import validate as v
from companion.formulas.args import hardware_arg as _hardware
from companion.formulas.args import model_arg as _model
from companion.formulas.core import cache_retention_value, kv_bytes, prefill_flops
from companion.formulas.kv_management import (PrefixRetention, kv_blocks_needed, link_transfer_s,
                                              retention_break_even_hit_prob)
from companion.serves import serves
from companion.specs import Hardware, Model

__all__ = [
    "WasteDistribution", "tail_waste_distribution",
    "RecomputeParts", "prefix_recompute_roofline", "kv_transfer_pieces",
    "piece_cost_doubling_fetch_s", "prefix_retention_fuller",
]


# --- 8.3.1: the tail waste of paging as a distribution ----------------------------------------

class WasteDistribution(NamedTuple):
    sequences: int
    block_tokens: int
    bound_tokens: int      # n (p - 1): every sequence one slot short of a full last block
    mean_tokens: float     # n (p - 1) / 2
    std_tokens: float      # sqrt(n (p^2 - 1) / 12)
    pmf: tuple             # P(total waste = w) for w = 0 .. n (p - 1)

    def quantile(self, q: float) -> int:
        """The smallest total waste w with P(waste <= w) >= q."""
        qq = v.probability("q", q)
        cdf = np.cumsum(self.pmf)
        return int(min(np.searchsorted(cdf, qq - 1e-12), len(cdf) - 1))


@serves("8.3.1")
def tail_waste_distribution(block_tokens: int, sequences: int = 1) -> WasteDistribution:
    """The total tail waste of ``sequences`` paged sequences whose lengths land anywhere in a block.

    8.3.1 bounds one sequence's waste, p ceil(L / p) - L, by p - 1. When L mod p is equally
    likely to be any of 0..p - 1 (lengths not tied to the block size), each sequence's waste is
    uniform on 0..p - 1: mean (p - 1) / 2, variance (p^2 - 1) / 12, half the bound on average.
    The waste of n independent sequences is the n-fold convolution of that uniform
    distribution: mean n (p - 1) / 2, standard deviation sqrt(n (p^2 - 1) / 12), never above
    n (p - 1). Four sequences in blocks of 4: bound 12, mean 6.
    """
    p = v.count("block_tokens", block_tokens)
    n = v.count("sequences", sequences)
    one = np.full(p, 1.0 / p)
    pmf = np.array([1.0])
    for _ in range(n):
        pmf = np.convolve(pmf, one)
    return WasteDistribution(sequences=n, block_tokens=p, bound_tokens=n * (p - 1),
                             mean_tokens=n * (p - 1) / 2,
                             std_tokens=math.sqrt(n * (p * p - 1) / 12),
                             pmf=tuple(float(x) for x in pmf))


# --- 8.3.4: a recomputation priced on the roofline ---------------------------------------------

class RecomputeParts(NamedTuple):
    compute_s: float       # prefill FLOPs / (efficiency x peak): the chapter's T_rec
    memory_s: float        # (weights read once + the prefix's KV written) / bandwidth
    time_s: float          # max(compute_s, memory_s)
    memory_bound: bool     # memory_s > compute_s: the chapter's price is too low


@serves("8.3.4")
def prefix_recompute_roofline(model: Model, hardware: Hardware, prefix_tokens: int,
                              efficiency: float, *, bandwidth_efficiency: float = 1.0,
                              history_tokens: int = 0, block_tokens: int = 16,
                              bytes_per_value: float = 2) -> RecomputeParts:
    """A prefix's recomputation as the roofline's max of its compute and its memory time (8.3.4).

    compute = prefill FLOPs (layer matrices plus causal attention) / (efficiency x peak), the
    chapter's T_rec; memory = (D_w + the prefix's KV) / (bandwidth_efficiency x bandwidth): a
    prefill pass reads every streamed weight once and writes the KV it produces, however short
    it is. The chapter prices only the first term, which is right while the prefill is
    compute-bound; a short prefix falls below the ridge and costs at least one weight read.
    """
    m = _model(model)
    hw = _hardware(hardware)
    n = v.tokens("prefix_tokens", prefix_tokens, minimum=1)
    eff = v.probability("efficiency", efficiency, open_low=True)
    bw_eff = v.probability("bandwidth_efficiency", bandwidth_efficiency, open_low=True)
    h = v.tokens("history_tokens", history_tokens)
    compute = prefill_flops(m, n, h) / (eff * hw.peak_flops_per_s)
    written = kv_bytes(m, n, block_tokens=block_tokens, bytes_per_value=bytes_per_value)
    memory = (m.streamed_weight_bytes + written) / (bw_eff * hw.mem_bw_bytes_per_s)
    return RecomputeParts(compute_s=compute, memory_s=memory, time_s=max(compute, memory),
                          memory_bound=memory > compute)


# --- 8.3.4: a paged prefix on the host link ----------------------------------------------------

@serves("8.3.4")
def kv_transfer_pieces(model: Model, prefix_tokens: int, *, block_tokens: int = 16,
                       pieces_per_block_layer: int = 2) -> int:
    """Contiguous pieces a paged prefix's KV is made of: blocks x layers x pieces per block-layer.

    A paged cache keeps each layer's keys and values per block, so swapping a prefix out or in
    moves one piece per block per layer (two where K and V are stored apart, as in a
    [2, blocks, p, heads, dim] layer tensor). The 6144-token prefix in 16-token blocks of
    Qwen3-8B: 384 blocks x 36 layers x 2 = 27,648 pieces of 32 KiB each.
    """
    m = _model(model)
    n = v.tokens("prefix_tokens", prefix_tokens, minimum=1)
    p = v.count("block_tokens", block_tokens)
    k = v.count("pieces_per_block_layer", pieces_per_block_layer)
    return kv_blocks_needed(n, p) * m.n_layers * k


@serves("8.3.4")
def piece_cost_doubling_fetch_s(model: Model, prefix_tokens: int, link_bytes_per_s: float, *,
                                block_tokens: int = 16, pieces_per_block_layer: int = 2,
                                bytes_per_value: float = 2) -> float:
    """The fixed cost per piece at which a fetch takes twice its nominal-rate time: (S / B) / pieces.

    The chapter's T_f = S / B is the fetch with no cost per piece (footnote 28 calls it a lower
    bound). With a cost alpha per piece it becomes S / B + pieces x alpha, which doubles once
    alpha reaches (S / B) / pieces: about 0.51 us for the 864 MiB prefix over 64 GB/s.
    """
    m = _model(model)
    n = v.tokens("prefix_tokens", prefix_tokens, minimum=1)
    size = kv_bytes(m, n, block_tokens=block_tokens, bytes_per_value=bytes_per_value)
    pieces = kv_transfer_pieces(m, n, block_tokens=block_tokens,
                                pieces_per_block_layer=pieces_per_block_layer)
    return link_transfer_s(size, link_bytes_per_s) / pieces


@serves("8.3.4")
def prefix_retention_fuller(model: Model, hardware: Hardware, prefix_tokens: int, *,
                            hit_prob: float, efficiency: float,
                            link_bytes_per_s: float | None = None, piece_cost_s: float = 0.0,
                            blocking_writeback: bool = False, roofline_floor: bool = True,
                            block_tokens: int = 16, pieces_per_block_layer: int = 2,
                            bytes_per_value: float = 2) -> PrefixRetention:
    """8.3.4's expected saving V = p (T_rec - T_f) - T_m with the three terms priced more fully.

    T_rec: ``prefix_recompute_roofline`` (max of compute at ``efficiency`` and one weight read
    at peak bandwidth) when ``roofline_floor``, else the chapter's compute alone.
    T_f: S / B + pieces x ``piece_cost_s`` (``kv_transfer_pieces``), B defaulting to the
    hardware's host link.
    T_m: the swap-out. ``blocking_writeback=True`` charges it as the chapter does, one more
    transfer (S / B + pieces x cost) of waiting; False (default) lets it run on the copy engine
    in the device-to-host direction while the GPU keeps computing, so it costs link time but no
    GPU time: T_m = 0, and keeping the prefix pays at any hit probability above zero.
    With roofline_floor=False, piece_cost_s=0 and blocking_writeback=True this is the chapter's
    ``prefix_retention`` exactly (132.7 ms for prefix A at 50%).
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
    alpha = v.nonnegative("piece_cost_s", piece_cost_s)
    blocking = v.boolean("blocking_writeback", blocking_writeback)
    floor = v.boolean("roofline_floor", roofline_floor)
    parts = prefix_recompute_roofline(m, hw, n, efficiency, block_tokens=block_tokens,
                                      bytes_per_value=bytes_per_value)
    tr = parts.time_s if floor else parts.compute_s
    size = kv_bytes(m, n, block_tokens=block_tokens, bytes_per_value=bytes_per_value)
    pieces = kv_transfer_pieces(m, n, block_tokens=block_tokens,
                                pieces_per_block_layer=pieces_per_block_layer)
    tf = link_transfer_s(size, link_bytes_per_s) + pieces * alpha
    tm = tf if blocking else 0.0
    value = cache_retention_value(p, tr, tf, tm)
    return PrefixRetention(kv_bytes=size, recompute_s=tr, fetch_s=tf, maintain_s=tm,
                           saving_per_hit_s=tr - tf, value_s=value,
                           break_even_hit_prob=retention_break_even_hit_prob(tr, tf, tm),
                           value_s_per_byte=value / size)

