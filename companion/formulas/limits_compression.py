"""Where 8.4's simplified models stop holding: fuller versions beside the chapter's.

The chapter's formulas stay in ``compression``; this module adds what they leave out:

- 8.4.2 prices the bytes a compressed KV read saves at one effective bandwidth, as if the whole
  decode round were reading. Experiment 8-1's measured rounds (8.6.3) grow far more slowly
  than their bytes: most of a round is a nearly fixed cost, and a byte less saves only the
  measured slope (``read_saving_from_rounds_s``, ``marginal_read_bandwidth``), the same
  interpolation 8.6.3 uses for scheme C.
- 8.4.4's retry accounting (and the notebook's independent-attempt model) gives every task the
  same chance per attempt. The chapter's own tasks fail systematically: task 5 fails every
  BF16-KV run. With the same average accuracy spread unevenly over tasks, retries rescue less
  and cost more (``retry_outcome``, ``systematic_success_probs``).

- 8.4.3 adds the decompression after the whole transfer, rS/B + S/R. Sent in chunks, the
  decompressor works on one chunk while the next crosses the link, and the time tends to the
  slower of the two, max(rS/B, S/R) (``compress_transfer_pipelined_s``): compression then pays
  once R beats the link, not B / (1 - r).

(8.4.3's copy that prefetch is said to hide is scheduled layer by layer in
``companion.sim.offload_pipeline``.) Base units in and out (bytes, seconds).
"""

from __future__ import annotations

import math
from typing import NamedTuple

from companion import validate as v
from companion.formulas.serving import decode_efficiency_table, round_time_from_reads
from companion.serves import serves

__all__ = [
    "read_saving_from_rounds_s", "marginal_read_bandwidth", "RetryOutcome", "retry_outcome",
    "systematic_success_probs", "compress_transfer_pipelined_s",
    "min_decompress_pipelined_bytes_per_s",
]


# --- 8.4.2: a read saving priced by the measured rounds ----------------------------------------

@serves("8.4.2")
def read_saving_from_rounds_s(saved_bytes: float, read_bytes: float) -> float:
    """Round time saved by reading ``saved_bytes`` fewer, on Experiment 8-1's measured rounds (8.4.2).

    T(D) - T(D - dD), with T the measured round against bytes read, linear between the table's
    columns (``round_time_from_reads``, as 8.6.3 prices scheme C). The chapter's 8.4.2 prices
    the same bytes at one effective bandwidth, dD / beta; the measured rounds say what a byte
    less actually saved on that engine. One 8K context at batch 1 reads D_w + 8192 k = 16.34 GB;
    q8_0 reads 540 MiB less, which the table prices at 0.225 ms (8.4.2's 0.487 ms).
    """
    d = v.positive("read_bytes", read_bytes)
    saved = v.nonnegative("saved_bytes", saved_bytes)
    if saved > d:
        raise ValueError(f"saved_bytes: {saved} exceeds read_bytes={d}")
    return round_time_from_reads(d) - round_time_from_reads(d - saved)


@serves("8.4.2", "8.6.3")
def marginal_read_bandwidth(read_bytes: float) -> float:
    """Bytes per second a round's time grows by, at ``read_bytes``: the slope of Experiment 8-1.

    1 / (dT/dD) on the segment of the measured table (8.6.3) that holds ``read_bytes`` (the
    nearest end segment outside it). Above the card's 1792 GB/s everywhere in the table: extra
    bytes mostly fill time the GPU was waiting for the host, because the rounds ran without
    CUDA Graphs (8.6.3).
    """
    d = v.positive("read_bytes", read_bytes)
    rows = decode_efficiency_table()
    xs = [r["read_bytes"] for r in rows]
    ys = [r["round_s"] for r in rows]
    i = 1
    while i < len(xs) - 1 and d > xs[i]:
        i += 1
    return (xs[i] - xs[i - 1]) / (ys[i] - ys[i - 1])


# --- 8.4.4: retries when failures stick to tasks -----------------------------------------------

class RetryOutcome(NamedTuple):
    answered_share: float       # share of tasks with a correct answer within the attempts
    attempts_per_task: float    # expected attempts spent per task (failed tasks included)
    time_per_task_s: float      # attempts_per_task x (attempt + check)
    time_per_correct_s: float   # all time spent / correct answers (inf if none)


@serves("8.4.4")
def retry_outcome(attempt_s: float, success_probs, *, weights=None,
                  max_attempts: int | None = None, check_s: float = 0.0) -> RetryOutcome:
    """Retrying each task until it passes, at most ``max_attempts`` times, when tasks differ.

    Task i passes each attempt independently with probability p_i (``success_probs``, in the
    proportions ``weights``, equal by default). With R attempts it is answered with probability
    1 - (1 - p_i)^R after (1 - (1 - p_i)^R) / p_i attempts on average (R if p_i = 0); unlimited
    attempts give 1 and 1 / p_i (inf if p_i = 0). Time per correct answer = all the time spent
    / the answers that pass: for one shared p it is (T + c) / p at every R (8.4.4's retry loop);
    when the same average is concentrated on tasks that always fail, every extra attempt on
    them is spent for nothing.
    """
    t = v.positive("attempt_s", attempt_s)
    c = v.nonnegative("check_s", check_s)
    seq = v.sequence("success_probs", success_probs)
    probs = [v.probability(f"success_probs[{i}]", p) for i, p in enumerate(seq)]
    if weights is None:
        w = [1.0] * len(probs)
    else:
        wseq = v.sequence("weights", weights)
        if len(wseq) != len(probs):
            raise ValueError(f"weights: has {len(wseq)} items but success_probs has "
                             f"{len(probs)}")
        w = [v.nonnegative(f"weights[{i}]", x) for i, x in enumerate(wseq)]
        if sum(w) <= 0:
            raise ValueError("weights: must not all be zero")
    r = None if max_attempts is None else v.count("max_attempts", max_attempts)
    total_w = sum(w)
    answered = attempts = 0.0
    for p, wi in zip(probs, w):
        if wi == 0:
            continue
        if r is None:
            a, s = (math.inf, 0.0) if p == 0 else (1.0 / p, 1.0)
        else:
            miss = (1.0 - p) ** r
            a, s = (float(r), 0.0) if p == 0 else ((1.0 - miss) / p, 1.0 - miss)
        answered += wi * s
        attempts += wi * a
    answered /= total_w
    attempts /= total_w
    per_task = attempts * (t + c)
    per_correct = per_task / answered if answered > 0 else math.inf
    return RetryOutcome(answered_share=answered, attempts_per_task=attempts,
                        time_per_task_s=per_task, time_per_correct_s=per_correct)


@serves("8.4.4")
def systematic_success_probs(mean_success: float, systematic_share: float) -> tuple:
    """Per-task pass chances with a given mean when a share of the failures is systematic.

    A fraction q = s (1 - p) of the tasks never pass (their failures are systematic); the rest
    pass each attempt with p / (1 - q), so the mean stays p. Returns ((0, p / (1 - q)),
    (q, 1 - q)): chances and weights for ``retry_outcome``. s = 0 is one chance p for every
    task (the independent model); s = 1 puts every failure on fixed tasks, as 8.4.4's task 5
    under BF16 KV (28 of 32 right, its four runs the four wrong ones).
    """
    p = v.probability("mean_success", mean_success, open_low=True)
    s = v.probability("systematic_share", systematic_share)
    q = s * (1.0 - p)
    return (0.0, p / (1.0 - q)), (q, 1.0 - q)


# --- 8.4.3: compress, send and decompress in chunks --------------------------------------------

@serves("8.4.3")
def compress_transfer_pipelined_s(size_bytes: float, compressed_fraction: float,
                                  link_bytes_per_s: float, decompress_bytes_per_s: float, *,
                                  chunks: int | None = None) -> float:
    """Time to send S bytes compressed to rS and decompress them, in k equal chunks (8.4.3).

    A two-stage pipeline (link, then decompressor), each chunk taking a = rS / (k B) on the link
    and d = S / (k R) to decompress: a + d + (k - 1) max(a, d). One chunk (k = 1) is 8.4.3's
    serial rS/B + S/R; ``chunks=None`` is the limit of fine chunks, max(rS/B, S/R).
    """
    size = v.nonnegative("size_bytes", size_bytes)
    r = v.probability("compressed_fraction", compressed_fraction, open_low=True)
    bw = v.positive("link_bytes_per_s", link_bytes_per_s)
    dec = v.positive("decompress_bytes_per_s", decompress_bytes_per_s)
    link_s, dec_s = r * size / bw, size / dec
    if chunks is None:
        return max(link_s, dec_s)
    k = v.count("chunks", chunks)
    a, d = link_s / k, dec_s / k
    return a + d + (k - 1) * max(a, d)


@serves("8.4.3")
def min_decompress_pipelined_bytes_per_s(link_bytes_per_s: float,
                                         compressed_fraction: float) -> float:
    """Decompression rate above which fine-chunked compress-and-send beats sending raw.

    max(rS/B, S/R) < S/B holds for any r < 1 once R > B: the link's own rate (64 GB/s over PCIe
    Gen5), against 8.4.3's B / (1 - r) = 85.3 GB/s for the serial order at r = 1/4.
    """
    bw = v.positive("link_bytes_per_s", link_bytes_per_s)
    v.probability("compressed_fraction", compressed_fraction, open_low=True, open_high=True)
    return bw
