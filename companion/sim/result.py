"""A simulated schedule: its rounds, and every request's token emission times.

``Result`` is what both scheduler engines return (``companion.sim.scheduler``'s reference
engine and ``companion.sim.fast_scheduler``): per round numpy arrays (start, duration, end and
the integer columns of ``ROUND_COLUMNS``), per request the round of its first token and how many
tokens it emitted, from which token times, TTFT, output intervals, Gantt rows and summaries
follow on demand. A request emits one token in every round from its first token on, so
``first_token_round`` and the count of emitted tokens locate all of them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import NamedTuple

import numpy as np

from companion import validate as v

__all__ = ["Segment", "Round", "Result", "ROUND_COLUMNS"]

# Per-round integer columns, in the order the engines record them.
ROUND_COLUMNS = ("decodes", "prefill_tokens", "rows", "pairs", "context_tokens", "emitted",
                 "held_slots")


class Segment(NamedTuple):
    """One request's share of a round."""

    request_id: object
    kind: str              # "decode" or "prefill"
    new_tokens: int
    history_tokens: int    # tokens already cached before this segment
    emits: bool            # whether the segment emits a token at the round's end


class Round(NamedTuple):
    """One scheduling round."""

    index: int
    start_s: float
    duration_s: float
    segments: tuple
    rows: int
    padding_rows: int
    pairs: int

    @property
    def end_s(self) -> float:
        return self.start_s + self.duration_s


class _TokenTimes(Mapping):
    """request id -> list of its tokens' emission times (seconds), built on access."""

    def __init__(self, result: "Result"):
        self._r = result

    def __getitem__(self, rid):
        k = self._r._index[rid]
        f, e = int(self._r._first[k]), int(self._r._emitted_count[k])
        return self._r.round_end_s[f:f + e].tolist() if e else []

    def __iter__(self):
        return iter(self._r.ids)

    def __len__(self):
        return len(self._r.ids)


class _Itls(Mapping):
    """request id -> numpy array of its output intervals (seconds)."""

    def __init__(self, result: "Result"):
        self._r = result

    def __getitem__(self, rid):
        k = self._r._index[rid]
        f, e = int(self._r._first[k]), int(self._r._emitted_count[k])
        return np.diff(self._r.round_end_s[f:f + e]) if e > 1 else np.empty(0)

    def __iter__(self):
        return iter(self._r.ids)

    def __len__(self):
        return len(self._r.ids)


class Result:
    """A simulated schedule: its rounds and every request's token emission times.

    Per request (``ids`` in arrival order): ``token_times`` (id -> list of seconds), ``ttft_s``
    (id -> first token - arrival), ``itl_s`` (id -> array of output intervals), and
    ``requests_table()``; ``first_token_round`` (round index of each first token, -1 if none),
    ``rejected``, ``cancelled`` and ``preempted`` (id -> when); overall: ``makespan_s``,
    ``max_itl_s``; per round: the ``round_*`` arrays, ``rounds`` (Round objects with their
    Segments), ``gantt_rows()``, ``summary()``. Times are seconds.

    8.2.2's four requests under continuous batching: every token of r0 is emitted once, the
    last one 766 ms in, and the longest output interval is 376 ms:

    >>> from companion import sim, units
    >>> ms = units.ms
    >>> requests = [sim.Request("r0", 0, 2048, 8), sim.Request("r1", 0, 2048, 2),
    ...             sim.Request("r2", 20 * ms, 8192, 2), sim.Request("r3", 30 * ms, 2048, 4)]
    >>> model = sim.RoundTimeModel(26.22 * ms, 30.4 * units.us, 3 * units.ns)
    >>> res = sim.simulate(requests, "continuous", max_running=2, round_time=model)
    >>> len(res.token_times["r0"]), round(res.makespan_s / ms), round(res.max_itl_s / ms)
    (8, 766, 376)
    """

    def __init__(self, *, policy, requests, round_start_s, round_duration_s, round_end_s,
                 columns, first_token_round, first_scheduled_round, admitted_s, chunks,
                 rejected, cancelled=None, preempted=None, stopped_emitted=None,
                 recorded_token_times=None):
        self.policy = policy
        self.requests = list(requests)
        self.ids = [r.id for r in self.requests]
        self._index = {rid: k for k, rid in enumerate(self.ids)}
        f64, i64 = np.float64, np.int64
        self.round_start_s = np.asarray(round_start_s, dtype=f64)
        self.round_duration_s = np.asarray(round_duration_s, dtype=f64)
        self.round_end_s = np.asarray(round_end_s, dtype=f64)
        self._columns = columns          # dict of per-round integer arrays, or a maker of one
        self.arrival_s = np.array([r.arrival_s for r in self.requests], dtype=f64)
        self.prompt_tokens = np.array([r.prompt_tokens for r in self.requests], dtype=i64)
        self.output_tokens = np.array([r.output_tokens for r in self.requests], dtype=i64)
        self.cached_tokens = np.array([r.cached_tokens for r in self.requests], dtype=i64)
        self._first = np.asarray(first_token_round, dtype=i64).reshape(-1)
        self._first_sched = np.asarray(first_scheduled_round, dtype=i64).reshape(-1)
        self.admitted_s = np.asarray(admitted_s, dtype=f64).reshape(-1)
        self._chunks = np.asarray(chunks, dtype=i64).reshape(-1, 4)
        self.rejected = dict(rejected)
        self.cancelled = dict(cancelled or {})
        self.preempted = dict(preempted or {})
        # the reference engine also records every emission as it happens (id -> list of times),
        # which tests compare with the token times derived from the first-token rounds
        self.recorded_token_times = recorded_token_times
        n_rounds = len(self.round_end_s)
        started = self._first >= 0
        self._emitted_count = np.where(
            started, np.minimum(self.output_tokens, n_rounds - self._first), 0)
        if stopped_emitted is not None:
            # requests cancelled or preempted while running emitted only this many tokens
            stopped = np.asarray(stopped_emitted, dtype=i64).reshape(-1)
            self._emitted_count = np.where(stopped >= 0, stopped, self._emitted_count)
        self.token_times: Mapping = _TokenTimes(self)
        self.itl_s: Mapping = _Itls(self)

    @property
    def first_token_round(self) -> np.ndarray:
        """Index of the round that emitted each request's first token (-1 if none), arrival
        order."""
        return self._first.copy()

    def position(self, request_id) -> int:
        """Index of a request in the arrival-ordered arrays (``ids``, ``arrival_s``, ...)."""
        try:
            return self._index[request_id]
        except (KeyError, TypeError):
            raise ValueError(f"request_id: no request {request_id!r} in this result") from None

    @property
    def chunks(self) -> np.ndarray:
        """(round, request position, tokens, history) of every prompt chunk, as an int array."""
        return self._chunks.copy()

    @property
    def emitted(self) -> np.ndarray:
        """Tokens each request has emitted (arrival order)."""
        return self._emitted_count.copy()

    # -- per-round integer columns (built on first access) --
    def _col(self, name: str) -> np.ndarray:
        if callable(self._columns):
            self._columns = self._columns()
        return np.asarray(self._columns[name], dtype=np.int64)

    @property
    def round_decodes(self) -> np.ndarray:
        """Decode steps in each round."""
        return self._col("decodes")

    @property
    def round_prefill_tokens(self) -> np.ndarray:
        """Prompt tokens computed in each round."""
        return self._col("prefill_tokens")

    @property
    def round_new_tokens(self) -> np.ndarray:
        """Tokens computed in each round (decode steps + prompt tokens), before padding."""
        return self.round_decodes + self.round_prefill_tokens

    @property
    def round_rows(self) -> np.ndarray:
        """Rows executed in each round (new tokens padded to a captured graph shape)."""
        return self._col("rows")

    @property
    def round_padding_rows(self) -> np.ndarray:
        """Rows executed only for CUDA-graph padding, per round (8.2.4)."""
        return self.round_rows - self.round_new_tokens

    @property
    def round_pairs(self) -> np.ndarray:
        """Causal query-key pairs of each round."""
        return self._col("pairs")

    @property
    def round_context_tokens(self) -> np.ndarray:
        """KV tokens each round's attention reads (sum of h + c over its segments)."""
        return self._col("context_tokens")

    @property
    def round_emitted(self) -> np.ndarray:
        """Tokens emitted at the end of each round."""
        return self._col("emitted")

    @property
    def round_held_slots(self) -> np.ndarray:
        """Slots held in each round (static: the whole group until it drains)."""
        return self._col("held_slots")

    # -- per request --
    def _at_round(self, rounds: np.ndarray, which: np.ndarray) -> np.ndarray:
        out = np.full(len(rounds), np.nan)
        ok = rounds >= 0
        out[ok] = which[rounds[ok]]
        return out

    @property
    def first_token_s(self) -> np.ndarray:
        """Emission time of each request's first token (NaN if none yet), arrival order."""
        return self._at_round(self._first, self.round_end_s)

    @property
    def first_scheduled_s(self) -> np.ndarray:
        """Start of the first round computing part of each request's prompt (NaN if none)."""
        return self._at_round(self._first_sched, self.round_start_s)

    @property
    def finish_s(self) -> np.ndarray:
        """Emission time of each request's last token (NaN until it has finished)."""
        done = (self._first >= 0) & (self._emitted_count == self.output_tokens)
        last = np.where(done, self._first + self.output_tokens - 1, -1)
        return self._at_round(last, self.round_end_s)

    @property
    def finished(self) -> np.ndarray:
        """Whether each request has emitted all its tokens."""
        return (self._first >= 0) & (self._emitted_count == self.output_tokens)

    @property
    def ttft_s(self) -> dict:
        """id -> time to first token (first token - arrival; NaN if none yet)."""
        return dict(zip(self.ids, (self.first_token_s - self.arrival_s).tolist()))

    @property
    def queue_s(self) -> dict:
        """id -> time from arrival to the first round that computes part of its prompt."""
        return dict(zip(self.ids, (self.first_scheduled_s - self.arrival_s).tolist()))

    @property
    def makespan_s(self) -> float:
        """End of the round that emits the last token (seconds from t = 0)."""
        last = self._first + self._emitted_count - 1
        last = last[self._emitted_count > 0]
        return float(self.round_end_s[last.max()]) if len(last) else 0.0

    def _itl_windows(self):
        """Per request, the range [a, b) of round_end differences that are its ITLs."""
        a = self._first
        b = self._first + self._emitted_count - 1
        ok = (a >= 0) & (b > a)
        return a[ok], b[ok], np.nonzero(ok)[0]

    @property
    def max_itl_s(self) -> float:
        """Longest output interval of any request (NaN when no request has two tokens)."""
        a, b, _ = self._itl_windows()
        if not len(a):
            return math.nan
        gaps = np.diff(self.round_end_s)
        cover = np.zeros(len(gaps) + 1, dtype=np.int64)
        np.add.at(cover, a, 1)
        np.add.at(cover, b, -1)
        inside = np.cumsum(cover)[:-1] > 0
        return float(gaps[inside].max())

    def itl_values_s(self) -> np.ndarray:
        """Every output interval of every request, concatenated (arrival order)."""
        a, b, _ = self._itl_windows()
        if not len(a):
            return np.empty(0)
        lengths = (b - a).astype(np.intp)   # np.repeat counts: intp (int32 on wasm32)
        offsets = np.repeat(a - np.concatenate(([0], np.cumsum(lengths)[:-1])), lengths)
        idx = np.arange(lengths.sum()) + offsets
        return np.diff(self.round_end_s)[idx]

    def max_itl_by_request_s(self) -> np.ndarray:
        """Each request's longest output interval (NaN with fewer than two tokens)."""
        out = np.full(len(self.ids), np.nan)
        a, b, k = self._itl_windows()
        if not len(a):
            return out
        # max over gaps[a:b] per request in one pass: reduceat over the index pairs (a, b),
        # with a sentinel so that b may equal the number of gaps
        gaps = np.append(np.diff(self.round_end_s), -np.inf)
        bounds = np.empty(2 * len(a), dtype=np.intp)   # reduceat indices: intp (int32 on wasm32)
        bounds[0::2], bounds[1::2] = a, b
        out[k] = np.maximum.reduceat(gaps, bounds)[0::2]
        return out

    def requests_table(self) -> dict:
        """Per-request numpy arrays in arrival order: id, arrival_s, prompt_tokens,
        output_tokens, admitted_s, first_scheduled_s, first_token_s, finish_s, queue_s, ttft_s,
        tpot_s (mean ITL), max_itl_s, emitted, rejected."""
        first, finish = self.first_token_s, self.finish_s
        g = self.output_tokens
        with np.errstate(invalid="ignore", divide="ignore"):
            tpot = np.where(g > 1, (finish - first) / np.maximum(g - 1, 1), np.nan)
        return {
            "id": np.array(self.ids, dtype=object), "arrival_s": self.arrival_s,
            "prompt_tokens": self.prompt_tokens, "output_tokens": g,
            "admitted_s": self.admitted_s, "first_scheduled_s": self.first_scheduled_s,
            "first_token_s": first, "finish_s": finish,
            "queue_s": self.first_scheduled_s - self.arrival_s, "ttft_s": first - self.arrival_s,
            "tpot_s": tpot, "max_itl_s": self.max_itl_by_request_s(),
            "emitted": self._emitted_count.copy(),
            "rejected": np.array([rid in self.rejected for rid in self.ids]),
        }

    # -- rounds --
    @property
    def n_rounds(self) -> int:
        return len(self.round_end_s)

    @property
    def padding_rows_total(self) -> int:
        """Rows executed only because of CUDA-graph padding, over all rounds (8.2.4)."""
        return int(self.round_padding_rows.sum())

    def slot_steps(self) -> tuple[int, int]:
        """(slot-steps run, slot-steps useful): slots held and tokens emitted, summed over rounds.

        Static batching holds a group's slots until it drains: 8 x 800 = 6,400 run, 3,600 useful
        for outputs 100, 200, ..., 800 (17 §6).
        """
        return int(self.round_held_slots.sum()), int(self.round_emitted.sum())

    def utilization(self) -> float:
        """Useful over run slot-steps (17 §6's static-batch utilisation)."""
        run, useful = self.slot_steps()
        return useful / run if run else math.nan

    def _segments_by_round(self, lo: int = 0, hi: int | None = None) -> list[list[Segment]]:
        hi = self.n_rounds if hi is None else hi
        out: list[list[Segment]] = [[] for _ in range(hi - lo)]
        for k, rid in enumerate(self.ids):
            f, e = int(self._first[k]), int(self._emitted_count[k])
            p = int(self.prompt_tokens[k])
            for j in range(max(f + 1, lo), min(f + e, hi)):
                out[j - lo].append(Segment(rid, "decode", 1, p + (j - f) - 1, True))
        for j, k, c, h in self._chunks.tolist():
            if lo <= j < hi:
                out[j - lo].append(Segment(self.ids[k], "prefill", c, h,
                                           h + c == int(self.prompt_tokens[k])))
        return out

    def round(self, index: int) -> Round:
        """One round with its segments (decode steps, then prompt chunks, arrival order)."""
        j = v.integer("index", index, minimum=0)
        if j >= self.n_rounds:
            raise ValueError(f"index: there are {self.n_rounds} rounds, got {index}")
        return self._make_round(j, self._segments_by_round(j, j + 1)[0])

    def _make_round(self, j: int, segs: list) -> Round:
        return Round(j, float(self.round_start_s[j]), float(self.round_duration_s[j]),
                     tuple(segs), int(self.round_rows[j]), int(self.round_padding_rows[j]),
                     int(self.round_pairs[j]))

    @property
    def rounds(self) -> list[Round]:
        """Every round with its segments (built on access: O(tokens) for a long run)."""
        return [self._make_round(j, s) for j, s in enumerate(self._segments_by_round())]

    def gantt_rows(self, *, merge_decode: bool = False, include_queue: bool = True) -> list[tuple]:
        """(request id, start_s, end_s, kind) segments for a Gantt chart; kind is "queued"
        (arrival to its first prompt round), "prefill" or "decode". ``merge_decode`` joins each
        request's consecutive decode rounds into one segment."""
        rows = []
        if include_queue:
            sched = self.first_scheduled_s
            for k, rid in enumerate(self.ids):
                if not math.isnan(sched[k]) and sched[k] > self.arrival_s[k]:
                    rows.append((rid, float(self.arrival_s[k]), float(sched[k]), "queued"))
        for j, k, c, h in self._chunks.tolist():
            rows.append((self.ids[k], float(self.round_start_s[j]), float(self.round_end_s[j]),
                         "prefill"))
        for k, rid in enumerate(self.ids):
            f, e = int(self._first[k]), int(self._emitted_count[k])
            if e <= 1:
                continue
            if merge_decode:
                rows.append((rid, float(self.round_start_s[f + 1]),
                             float(self.round_end_s[f + e - 1]), "decode"))
            else:
                rows.extend((rid, float(self.round_start_s[j]), float(self.round_end_s[j]),
                             "decode") for j in range(f + 1, f + e))
        rows.sort(key=lambda r: (self._index[r[0]], r[1]))
        return rows

    def summary(self) -> str:
        """A plain-text table: one line per request, then totals."""
        table = self.requests_table()
        ms = 1e3
        lines = [f"policy {self.policy}: {self.n_rounds} rounds, total "
                 f"{self.makespan_s * ms:.1f} ms, longest output interval "
                 f"{self.max_itl_s * ms:.1f} ms"]
        if self.padding_rows_total:
            lines[0] += f", padding {self.padding_rows_total} rows"
        lines.append(f"{'id':>8} {'arrive ms':>10} {'queue ms':>9} {'TTFT ms':>9} "
                     f"{'finish ms':>10} {'max ITL ms':>11}")
        for k, rid in enumerate(self.ids):
            lines.append(f"{str(rid):>8} {table['arrival_s'][k] * ms:10.1f} "
                         f"{table['queue_s'][k] * ms:9.1f} {table['ttft_s'][k] * ms:9.1f} "
                         f"{table['finish_s'][k] * ms:10.1f} {table['max_itl_s'][k] * ms:11.1f}")
        if self.rejected:
            lines.append(f"rejected: {sorted(map(str, self.rejected))}")
        return "\n".join(lines)

    def __repr__(self):
        return (f"<Result {self.policy}: {len(self.ids)} requests, {self.n_rounds} rounds, "
                f"makespan {self.makespan_s:.4g} s, max ITL {self.max_itl_s:.4g} s>")
