"""8.4.3's weight offload scheduled layer by layer: copies, prefetch buffers and compute.

The chapter bounds a decode round with offloaded weights from below by the copy alone,
T_round >= D_off / B_link, "even if all other computation can fully overlap with the copy".
Whether it can depends on the prefetch buffers, and this simulator plays it out (footnote 16
takes the same per-layer compute, the batch-1 round over 36 layers):

- Layers run in order, round after round; each takes ``compute_per_layer_s``. An offloaded
  layer may start only when its weights have arrived.
- The link carries one copy at a time, in the order the offloaded layers are used (one
  direction of the host link); a copy takes ``latency_s`` + bytes / link.
- ``buffers`` landing buffers, one FFN set each. With k >= 1 buffers the copy for an
  offloaded layer may start once the layer k offloaded layers earlier has finished computing
  (its buffer is free again) and the link is free. With k = 0 nothing is fetched ahead: the
  copy starts when the layer before it has finished, and the layer waits for all of it.

``offload_round`` runs rounds until two consecutive rounds take the same time and returns that
steady round, its copies and its layers (for a timeline), beside the chapter's bound
max(copies, compute). One buffer and a copy longer than the three resident layers between
offloaded ones cannot reach the bound: each copy waits for the previous offloaded layer to
finish, so the round pays copy + one layer per offloaded layer.
"""

from __future__ import annotations

from typing import NamedTuple

from companion import validate as v
from companion.serves import serves

__all__ = ["spread_layers", "OffloadRound", "offload_round"]


@serves("8.4.3")
def spread_layers(n_layers: int, offloaded: int) -> tuple:
    """Which of ``n_layers`` layers (0-based) are offloaded when ``offloaded`` are spread evenly.

    Layer ceil((j + 1) n / m) - 1 for j = 0 .. m - 1: one in every four of 36 gives 3, 7, ..., 35
    (the last layer of each group of four), so each offloaded layer follows resident ones.
    """
    n = v.count("n_layers", n_layers)
    m = v.count("offloaded", offloaded, minimum=0)
    if m > n:
        raise ValueError(f"offloaded: {m} exceeds n_layers={n}")
    return tuple(-(-(j + 1) * n // m) - 1 for j in range(m))


class OffloadRound(NamedTuple):
    round_s: float           # the steady round: end of one round's last layer to the next's
    compute_s: float         # layers x compute per layer: the round with nothing offloaded
    copy_s: float            # offloaded layers x one copy: the chapter's T_copy
    bound_s: float           # max(copy_s, compute_s): the chapter's lower bound
    stall_s: float           # round_s - compute_s: time layers wait for weights
    rounds_simulated: int
    layers: tuple            # (layer, start_s, end_s) of the steady round, from its start
    copies: tuple            # (layer, start_s, end_s) of the copies its layers used


@serves("8.4.3")
def offload_round(n_layers: int, offloaded_layers, compute_per_layer_s: float,
                  copy_per_layer_s: float, *, buffers: int = 1, latency_s: float = 0.0,
                  max_rounds: int = 200) -> OffloadRound:
    """The steady decode round when ``offloaded_layers`` are copied in every round (8.4.3).

    Event by event as described in the module docstring. Nine of 36 layers, 0.7294 ms of
    compute each (26.26 ms / 36), 4.72 ms per 288 MiB copy over 64 GB/s: one buffer gives
    9 x (4.72 + 0.73) = 49.0 ms, two buffers the chapter's 42.5 ms; over 450 GB/s (0.67 ms per
    copy) both hide behind the 26.26 ms of compute.
    """
    n = v.count("n_layers", n_layers)
    layers_off = sorted({v.integer(f"offloaded_layers[{i}]", x)
                         for i, x in enumerate(v.sequence("offloaded_layers", offloaded_layers,
                                                          min_len=0))})
    if layers_off and layers_off[-1] >= n:
        raise ValueError(f"offloaded_layers: layer {layers_off[-1]} is not below n_layers={n}")
    t = v.positive("compute_per_layer_s", compute_per_layer_s)
    c = v.nonnegative("copy_per_layer_s", copy_per_layer_s)
    k = v.count("buffers", buffers, minimum=0)
    lat = v.nonnegative("latency_s", latency_s)
    limit = v.count("max_rounds", max_rounds, minimum=2)
    one_copy = lat + c
    compute = n * t
    copy_total = len(layers_off) * one_copy
    bound = max(compute, copy_total)
    if not layers_off:
        rows = tuple((i, i * t, (i + 1) * t) for i in range(n))
        return OffloadRound(round_s=compute, compute_s=compute, copy_s=0.0, bound_s=bound,
                            stall_s=0.0, rounds_simulated=1, layers=rows, copies=())

    is_off = set(layers_off)
    copy_end = 0.0             # when the link finishes the previous copy
    layer_end = 0.0            # end of the previous layer's compute (across rounds)
    off_ends = []              # compute end of every offloaded layer so far, in order of use
    ends, last = [], None
    for r in range(limit):
        start = layer_end
        rows, copies = [], []
        for layer in range(n):
            begin = layer_end
            if layer in is_off:
                j = len(off_ends)
                if k == 0:
                    ready = layer_end            # fetched only when its layer is reached
                else:
                    ready = off_ends[j - k] if j >= k else 0.0   # its buffer is free again
                c0 = max(copy_end, ready)
                copy_end = c0 + one_copy
                copies.append((layer, c0 - start, copy_end - start))
                begin = max(layer_end, copy_end)
            end = begin + t
            if layer in is_off:
                off_ends.append(end)
            rows.append((layer, begin - start, end - start))
            layer_end = end
        ends.append(layer_end)
        last = (ends[-1] - (ends[-2] if len(ends) > 1 else 0.0), rows, copies, r + 1)
        if len(ends) >= 3:
            d1, d2 = ends[-1] - ends[-2], ends[-2] - ends[-3]
            if abs(d1 - d2) <= 1e-12 * max(1.0, d1):
                break
    round_s, rows, copies, done = last
    return OffloadRound(round_s=round_s, compute_s=compute, copy_s=copy_total, bound_s=bound,
                        stall_s=round_s - compute, rounds_simulated=done, layers=tuple(rows),
                        copies=tuple(copies))
