"""The fast scheduler engine: the reference schedule of ``companion.sim.scheduler``, computed
without looping over requests per round.

Per-request state is never looped over per round. Decoding requests are summarised by their
count and their total cached tokens (each decode step adds one token to every history, so a
round's pairs and KV reads follow from the sum); finishing rounds are known at the first token
(a request emits one token per round from then on) and kept in a heap. A stretch of pure
decode rounds in which nobody can join (until the next finish, or the next arrival when a slot
is free) is stepped with the model's round time as a line in the pair count
(``LinearRoundTime.decode_line``), or, when long, timed in one vectorised call (its pair counts
form an arithmetic progression) whose clock is one cumulative sum; both add in the same order as
a round-by-round loop, so results are bit-identical to the reference engine's
(tests/test_sim_scheduler.py holds them to it). Round ends are stored in numpy blocks,
per-round integer columns as one record per stretch (expanded when first read), emission times
as each request's first-token round (``Result.token_times`` builds lists on demand); the
arrivals to come are one sorted list. benchmarks/bench_sim_scheduler.py prints the figures.
"""

from __future__ import annotations

import bisect
import heapq
import math
from collections import deque

import numpy as np

from companion.sim.requests import Request, SchedulerBase, admission_decision, padder
from companion.sim.result import ROUND_COLUMNS, Result
from companion.sim.round_time import (RooflineRoundTime, RoundTimeModel, RoundWork,
                                      StepPlusPrefillRoundTime, round_duration)

__all__ = ["FastScheduler", "TRUSTED_MODELS"]

# The companion's own models: finite positive times, non-decreasing along a decode stretch,
# and a decode line (their arithmetic is LinearRoundTime.evaluate's, so shortcuts are exact).
TRUSTED_MODELS = (RoundTimeModel, RooflineRoundTime, StepPlusPrefillRoundTime)

# Below this many rounds a pure-decode stretch is stepped in Python (numpy's per-call overheads
# exceed the loop's); both give identical numbers.
VECTOR_MIN_ROUNDS = 48

# Where a request stands (Scheduler._state); "queued" is pending (not yet arrived) or waiting.
_QUEUED, _RUNNING, _FINISHED, _REJECTED, _CANCELLED, _PREEMPTED = range(6)
_STATE_NAMES = {_FINISHED: "finished", _REJECTED: "rejected", _CANCELLED: "cancelled",
                _PREEMPTED: "preempted"}


class FastScheduler(SchedulerBase):
    """The fast engine: the same schedule as ``companion.sim.scheduler.Scheduler`` (the
    reference), round for round and bit for bit, without looping over requests per round.

    The driving interface (``add``, ``add_many``, ``run``, ``step``, ``cancel``, ``preempt``,
    ``requeue_front``, the state queries, ``result``) is ``SchedulerBase``'s; see
    ``companion.sim.requests``.
    """

    def __init__(self, policy: str, *, max_running: int, round_time, chunk_tokens=None,
                 token_budget=None, captured_shapes=None, admit=None, on_finish=None):
        super().__init__(policy, max_running=max_running, round_time=round_time,
                         chunk_tokens=chunk_tokens, token_budget=token_budget,
                         captured_shapes=captured_shapes, admit=admit, on_finish=on_finish)
        rt = self._cfg.round_time
        self._pad = padder(self._cfg.shapes)
        self._static = self._cfg.policy == "static"
        self._vector = bool(getattr(rt, "vectorized", False))
        # the companion's own models give finite positive times, non-decreasing along a decode
        # stretch, and their round time as a line along one (LinearRoundTime.decode_line)
        self._trusted = type(rt) in TRUSTED_MODELS
        if self._trusted:
            self._round_s = rt.evaluate
        else:
            def round_s(*work):
                return round_duration(rt.time_s(RoundWork(*work)))
            self._round_s = round_s
        self._decode_fns: dict = {}            # decodes -> (rows, pairs -> round time)
        # per request (index = order of add)
        self._reqs: list[Request] = []         # (ids -> index: SchedulerBase._ids)
        self._state: list[int] = []
        self._first_token: list[int] = []      # round index of the first token, -1 before
        self._first_sched: list[int] = []      # round index of the first prompt chunk, -1 before
        self._admitted_s: list[float] = []
        self._rejected: dict[int, float] = {}
        self._cancelled: dict[int, float] = {}
        self._preempted: dict[int, float] = {}
        self._stopped_emitted: dict[int, int] = {}   # tokens emitted by a cancelled/preempted one
        # rounds: durations and ends of round j at index j + 1 of two growing numpy buffers
        # (index 0 is scratch), the latest scalar rounds in Python lists until the next
        # vectorised stretch (or a read) copies them in; the integer columns as one record per
        # mixed round or per decode stretch
        self._n_rounds = 0
        self._dur: list[float] = []
        self._end: list[float] = []
        self._dur_buf = np.empty(64)
        self._end_buf = np.empty(64)
        self._jumps: list[tuple] = []          # (round, start) of rounds that do not start at
        self._jumped = True                    # the previous round's end (after idle time)
        self._mixed: list[tuple] = []          # (round, decodes, prefill, rows, pairs, context,
        #                                         emitted, held slots) of rounds with prompt work
        self._stretches: list[tuple] = []      # (first round, rounds, decodes, first round's
        #                                         pairs, rows, held slots) of pure decode rounds
        self._chunks: list[tuple] = []         # (round, request, tokens, history) prompt chunks
        # state
        self._t = 0.0
        self._pend_t: list[float] = []         # not yet arrived, sorted by (arrival, add order):
        self._pend_i: list[int] = []           # arrival times and indices, consumed from
        self._pnext = 0                        # position _pnext on
        self._waiting: deque = deque()         # arrived, not admitted, arrival order
        self._blocked = False                  # the head was deferred
        self._retry_s = math.inf               # ... and asked to be retried at this time
        self._prefilling: list[list] = []      # [index, prompt tokens in the KV cache], by
        #                                         admission
        self._n_dec = 0                        # decoding requests
        self._sum_h = 0                        # their cached tokens, summed
        self._finish_heap: list[tuple] = []    # (round index of the last token, index)
        self._n_running = 0
        self._group = 0                        # static: slots the current group holds
        self._reserved = 0

    # -- state visible to callbacks and drivers --
    @property
    def now_s(self) -> float:
        """The current boundary (seconds)."""
        return self._t

    @property
    def running_count(self) -> int:
        return self._n_running

    @property
    def waiting_count(self) -> int:
        """Arrived requests not yet admitted."""
        return len(self._waiting)

    @property
    def reserved_tokens(self) -> int:
        """Sum of prompt + output - 1 over the running requests (8.1.2's end-of-life KV)."""
        return self._reserved

    @property
    def cached_tokens(self) -> int:
        """KV tokens the running requests hold now (cached and computed prompt tokens + outputs
        fed back)."""
        return self._sum_h + sum(done for _, done in self._prefilling)

    @property
    def rounds_done(self) -> int:
        """Rounds executed so far."""
        return self._n_rounds

    @property
    def next_event_s(self) -> float:
        """The earliest future time at which an admission could become possible: the next
        arrival, or the retry time a deferred head asked for; inf when there is none."""
        return self._next_event()

    def first_token_round(self, request_id) -> int:
        """Index of the round that emitted the request's first token (-1 before it)."""
        return self._first_token[self._index_of(request_id)]

    def request_state(self, request_id) -> str:
        """Where a request stands: "pending" (not yet arrived), "waiting", "prefilling",
        "decoding", "finished", "rejected", "cancelled" or "preempted"."""
        i = self._index_of(request_id)
        st = self._state[i]
        if st == _QUEUED:
            return "waiting" if i in self._waiting else "pending"
        if st == _RUNNING:
            return "decoding" if self._first_token[i] >= 0 else "prefilling"
        return _STATE_NAMES[st]

    def _register(self, reqs: list, *, pending: bool = True) -> None:
        """Append validated requests to the per-request state (and to the arrivals to come)."""
        start = len(self._reqs)
        n = len(reqs)
        self._reqs.extend(reqs)
        self._ids.update(zip([r.id for r in reqs], range(start, start + n)))
        self._state.extend([_QUEUED] * n)
        self._first_token.extend([-1] * n)
        self._first_sched.extend([-1] * n)
        self._admitted_s.extend([math.nan] * n)
        if not pending:
            self._waiting.extendleft(range(start + n - 1, start - 1, -1))
            self._blocked = False
            return
        if not n:
            return
        # merge with the arrivals still to come: a stable sort by arrival keeps ties in the
        # order of add (the earlier adds come first in the list)
        k = self._pnext
        times = self._pend_t[k:] + [r.arrival_s for r in reqs]
        idx = self._pend_i[k:] + list(range(start, start + n))
        if any(a > b for a, b in zip(times, times[1:])):
            order = sorted(range(len(times)), key=times.__getitem__)   # stable
            times = [times[x] for x in order]
            idx = [idx[x] for x in order]
        self._pend_t, self._pend_i, self._pnext = times, idx, 0

    # -- the hooks of SchedulerBase's interventions (between runs) --
    def _dequeue(self, request_id) -> None:
        """Take a queued (pending or waiting) request out of the queue."""
        i = self._index_of(request_id)
        try:
            self._waiting.remove(i)
            self._blocked = False              # a change in the queue: offer the head again
        except ValueError:
            k = self._pend_i.index(i, self._pnext)
            del self._pend_i[k], self._pend_t[k]

    def _mark(self, request_id, state: str) -> None:
        i = self._index_of(request_id)
        if state == "cancelled":
            self._state[i] = _CANCELLED
            self._cancelled[i] = self._t
        else:
            self._state[i] = _PREEMPTED
            self._preempted[i] = self._t

    def _stop_running(self, request_id) -> int:
        """Remove a running request from the running set; return the tokens it emitted."""
        i = self._index_of(request_id)
        r = self._reqs[i]
        for k, item in enumerate(self._prefilling):
            if item[0] == i:
                del self._prefilling[k]
                emitted = 0
                break
        else:
            f = self._first_token[i]
            emitted = self._n_rounds - f
            heap = self._finish_heap
            heap.remove((f + r.output_tokens - 1, i))
            heapq.heapify(heap)
            self._n_dec -= 1
            self._sum_h -= r.prompt_tokens + emitted - 1
        self._stopped_emitted[i] = emitted
        self._n_running -= 1
        self._reserved -= r.prompt_tokens + r.output_tokens - 1
        self._blocked = False                  # a slot was freed: offer the head again
        if self._n_running == 0:
            self._group = 0
        return emitted

    # -- admission and finishing --
    def _pull_arrivals(self, t: float) -> None:
        k, times = self._pnext, self._pend_t
        if k < len(times) and times[k] <= t:
            e = bisect.bisect_right(times, t, k)
            self._waiting.extend(self._pend_i[k:e])
            self._pnext = e
            self._blocked = False

    def _admit(self, t: float) -> None:
        cfg = self._cfg
        if self._static and self._n_running:
            return
        if self._blocked:
            if t < self._retry_s:
                return
            self._blocked = False
        free = cfg.max_running - self._n_running
        waiting = self._waiting
        admit = cfg.admit
        reqs, state = self._reqs, self._state
        admitted = 0
        while free > 0 and waiting:
            i = waiting[0]
            r = reqs[i]
            if admit is not None:
                answer = admit(r, t, self)
                if answer is None:                        # the common "wait": defer
                    self._blocked, self._retry_s = True, math.inf
                    break
                if answer is not True:
                    kind, retry = admission_decision(answer, t)
                    if kind == "reject":
                        waiting.popleft()
                        self._rejected[i] = t
                        state[i] = _REJECTED
                        continue
                    if kind == "defer":
                        self._blocked, self._retry_s = True, retry
                        break
            waiting.popleft()
            self._prefilling.append([i, r.cached_tokens])
            self._admitted_s[i] = t
            state[i] = _RUNNING
            self._n_running += 1
            self._reserved += r.prompt_tokens + r.output_tokens - 1
            free -= 1
            admitted += 1
        if self._static and admitted:
            self._group = self._n_running

    def _next_event(self) -> float:
        """Earliest future time at which an admission could become possible."""
        k = self._pnext
        e = self._pend_t[k] if k < len(self._pend_t) else math.inf
        if self._waiting and self._blocked and self._retry_s < e:
            e = self._retry_s
        return e

    def _pop_finishing(self, j: int) -> list[int]:
        """Indices of the decoding requests whose last token round j emitted, taken off the
        decoding summary."""
        heap, reqs, out = self._finish_heap, self._reqs, []
        while heap and heap[0][0] == j:
            i = heapq.heappop(heap)[1]
            r = reqs[i]
            self._n_dec -= 1
            self._sum_h -= r.prompt_tokens + r.output_tokens - 1
            out.append(i)
        return out

    def _finish(self, finished: list[int], end: float) -> None:
        """Requests that emitted their last token at ``end`` leave; then on_finish is called
        for each, in order of add."""
        finished.sort()
        reqs = self._reqs
        for i in finished:
            r = reqs[i]
            self._state[i] = _FINISHED
            self._n_running -= 1
            self._reserved -= r.prompt_tokens + r.output_tokens - 1
        self._blocked = False
        if self._n_running == 0:
            self._group = 0
        on_finish = self._cfg.on_finish
        if on_finish is not None:
            for i in finished:
                on_finish(reqs[i], end, self)

    # -- rounds --
    def _mixed_round(self, t: float) -> None:
        """One round with prompt work (and the decode steps of everyone already decoding)."""
        cfg = self._cfg
        j = self._n_rounds
        if self._jumped:
            self._jumps.append((j, t))
            self._jumped = False
        n_dec, sum_h = self._n_dec, self._sum_h
        budget = cfg.token_budget - n_dec
        chunk = cfg.chunk_tokens
        pairs = ctx = sum_h + n_dec
        pre = 0
        completed = []
        reqs = self._reqs
        first_sched = self._first_sched
        chunks_append = self._chunks.append
        for item in self._prefilling:
            if budget <= 0:
                break
            i, done = item
            p = reqs[i].prompt_tokens
            c = p - done
            if c > chunk:
                c = chunk
            if c > budget:
                c = budget
            pairs += c * done + c * (c + 1) // 2
            ctx += done + c
            pre += c
            budget -= c
            chunks_append((j, i, c, done))
            if first_sched[i] < 0:
                first_sched[i] = j
            item[1] = done + c
            if done + c == p:
                completed.append(item)
        rows = self._pad(n_dec + pre)
        emitted = n_dec + len(completed)
        d = self._round_s(n_dec, pre, rows, pairs, ctx, emitted)
        end = t + d
        self._dur.append(d)
        self._end.append(end)
        self._n_rounds = j + 1
        self._mixed.append((j, n_dec, pre, rows, pairs, ctx, emitted,
                            self._group if self._static else self._n_running))
        self._sum_h = sum_h + n_dec
        self._t = end
        finished = []
        if completed:
            prefilling = self._prefilling
            for item in completed:
                prefilling.remove(item)
                i = item[0]
                r = reqs[i]
                self._first_token[i] = j
                if r.output_tokens == 1:
                    finished.append(i)
                else:
                    self._n_dec += 1
                    self._sum_h += r.prompt_tokens
                    heapq.heappush(self._finish_heap, (j + r.output_tokens - 1, i))
        if self._finish_heap and self._finish_heap[0][0] == j:
            finished += self._pop_finishing(j)
        if finished:
            self._finish(finished, end)

    def _flush(self, room: int = 0) -> None:
        """Copy the Python round lists into the numpy buffers, which then have space for
        ``room`` more rounds."""
        m = len(self._end)
        need = self._n_rounds + 1 + room
        if need > self._end_buf.size:
            size = max(need, 2 * self._end_buf.size)
            for name in ("_dur_buf", "_end_buf"):
                old = getattr(self, name)
                new = np.empty(size)
                new[:old.size] = old
                setattr(self, name, new)
        if m:
            a = self._n_rounds + 1 - m
            self._dur_buf[a:a + m] = self._dur
            self._end_buf[a:a + m] = self._end
            self._dur, self._end = [], []

    def _decode_model(self, n: int) -> tuple:
        """(rows, pairs -> seconds) of a pure decode round of ``n`` requests (cached per n)."""
        rows = self._pad(n)
        rt = self._cfg.round_time
        if self._trusted:
            fn = rt.decode_fn(n, rows)
        else:
            def fn(pairs):
                return round_duration(rt.time_s(RoundWork(n, 0, rows, pairs, pairs, n)))
        self._decode_fns[n] = entry = (rows, fn)
        return entry

    def _decode_stretch(self, t: float, horizon: float) -> None:
        """Pure decode rounds until the first finish, or the first boundary at which an admission
        could happen (an arrival or retry time with a slot free), or the horizon."""
        j0 = self._n_rounds
        if self._jumped:
            self._jumps.append((j0, t))
            self._jumped = False
        n = self._n_dec
        k_finish = k_max = self._finish_heap[0][0] - j0 + 1
        cut = horizon
        if not self._static and self._n_running < self._cfg.max_running:
            e = self._next_event()
            if e < cut:
                cut = e
        rows, fn = self._decode_fns.get(n) or self._decode_model(n)
        base = self._sum_h + n
        rt = self._cfg.round_time
        linear = None
        if self._trusted:
            if k_max >= VECTOR_MIN_ROUNDS and cut < math.inf:
                # Round times only grow along a stretch (pairs grow), so the first round's time
                # bounds how many rounds can end before the cut. Stopping a stretch early changes
                # nothing: the next boundary admits nobody, since nothing has arrived yet.
                k_max = min(k_max, int((cut - t) / fn(base)) + 2)
        vectorised = self._vector and k_max >= VECTOR_MIN_ROUNDS
        if self._trusted and (vectorised or k_max >= 16):
            # the model's round time as (a + b pairs) / c + e over this stretch, when it is
            # (worth finding out for more than a few rounds)
            linear = rt.decode_line(n, rows, base, base + n * (k_max - 1))
        if vectorised:
            self._flush(k_max)
            durs, ends = self._dur_buf, self._end_buf
            d = durs[j0 + 1:j0 + 1 + k_max]               # rounds j0 ... j0 + k_max - 1
            if linear is not None:
                a, b, c, e = linear
                if type(b) is int:                        # b x pairs, exact, in one step
                    if b:
                        np.add(a, np.arange(b * base, b * (base + n * k_max), b * n), out=d)
                    else:
                        d.fill(a)                         # a + 0 = a
                else:
                    np.add(a, b * np.arange(base, base + n * k_max, n), out=d)
                np.divide(d, c, out=d)
                if e:
                    np.add(d, e, out=d)
            else:
                p = np.arange(base, base + n * k_max, n, dtype=np.int64)
                if self._trusted:
                    d[:] = rt.evaluate(n, 0, rows, p, p, n)
                else:
                    d[:] = rt.time_s(RoundWork(n, 0, rows, p, p, n))   # a constant broadcasts
                    ok = (d > 0) & (d < math.inf)
                    if not ok.all():
                        round_duration(d[~ok][0])
            # the clock: t, then t + d0, + d1, ... added in round order as a loop would, by a
            # cumulative sum that starts at slot j0 (the previous round's, restored after)
            keep_d, keep_e = durs[j0], ends[j0]
            durs[j0] = t
            durs[j0:j0 + 1 + k_max].cumsum(out=ends[j0:j0 + 1 + k_max])
            durs[j0], ends[j0] = keep_d, keep_e
            k = k_max
            if cut < math.inf:
                k = min(k_max, int(ends[j0 + 1:j0 + 1 + k_max].searchsorted(cut)) + 1)
            end = float(ends[j0 + k])
        else:
            dur_append, end_append = self._dur.append, self._end.append
            k = 0
            end = t
            p = base
            if linear is not None:
                a, b, c, e = linear
                while k < k_max:
                    d = (a + b * p) / c + e
                    end = t + d
                    dur_append(d)
                    end_append(end)
                    t = end
                    p += n
                    k += 1
                    if end >= cut:
                        break
            else:
                while k < k_max:
                    d = fn(p)
                    end = t + d
                    dur_append(d)
                    end_append(end)
                    t = end
                    p += n
                    k += 1
                    if end >= cut:
                        break
        self._n_rounds = j0 + k
        self._stretches.append((j0, k, n, base, rows,
                                self._group if self._static else self._n_running))
        self._sum_h += n * k
        self._t = end
        if k == k_finish:
            self._finish(self._pop_finishing(j0 + k - 1), end)

    def _run(self, horizon: float) -> None:
        while True:
            t = self._t
            if t >= horizon:
                break
            k = self._pnext
            if k < len(self._pend_t) and self._pend_t[k] <= t:
                self._pull_arrivals(t)
            if self._waiting:
                self._admit(t)
            if self._n_running == 0:
                e = self._next_event()
                if e == math.inf:
                    if self._waiting:
                        r = self._reqs[self._waiting[0]]
                        raise RuntimeError(f"admit: request {r.id!r} was deferred while nothing "
                                           f"is running and nothing else can arrive; reject it "
                                           f"or return a retry time")
                    break
                if e >= horizon:
                    break
                if e > t:
                    self._t = e
                    self._jumped = True
                continue
            if self._prefilling:
                self._mixed_round(t)
            else:
                self._decode_stretch(t, horizon)

    def _round_arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(start, duration, end) of every round so far."""
        self._flush()
        n = self._n_rounds
        ends, durs = self._end_buf[1:n + 1], self._dur_buf[1:n + 1]
        starts = np.empty(len(ends))
        starts[1:] = ends[:-1]
        for j, t in self._jumps:
            starts[j] = t
        return starts, durs, ends

    def round_times(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(start_s, duration_s, end_s) of every round so far, as read-only numpy arrays (what
        ``result()`` reports, without building per-request records)."""
        out = []
        for arr in self._round_arrays():
            view = arr.view()
            view.flags.writeable = False
            out.append(view)
        return tuple(out)

    def result(self) -> "Result":
        """The rounds and emissions so far, as a Result (arrival-ordered requests)."""
        reqs = self._reqs
        n_req = len(reqs)
        arrivals = [r.arrival_s for r in reqs]
        order = sorted(range(n_req), key=arrivals.__getitem__)   # stable: ties in order of add
        chunks = np.array(self._chunks, dtype=np.int64).reshape(-1, 4)
        if len(chunks):
            remap = np.empty(n_req, dtype=np.int64)
            remap[order] = np.arange(n_req)
            chunks[:, 1] = remap[chunks[:, 1]]
        starts, durs, ends = self._round_arrays()
        durs, ends = durs.copy(), ends.copy()             # the buffers go on growing
        n = len(ends)
        mixed, stretches = list(self._mixed), list(self._stretches)
        stopped = None
        if self._stopped_emitted:
            stopped = [self._stopped_emitted.get(i, -1) for i in order]
        first_token, first_sched, admitted = self._first_token, self._first_sched, self._admitted_s
        return Result(
            policy=self._cfg.policy,
            requests=[reqs[i] for i in order],
            round_start_s=starts, round_duration_s=durs, round_end_s=ends,
            columns=lambda: columns_from_blocks(
                n, np.array(mixed, dtype=np.int64).reshape(-1, 8),
                np.array(stretches, dtype=np.int64).reshape(-1, 6)),
            first_token_round=[first_token[i] for i in order],
            first_scheduled_round=[first_sched[i] for i in order],
            admitted_s=[admitted[i] for i in order],
            chunks=chunks,
            rejected={reqs[i].id: s for i, s in self._rejected.items()},
            cancelled={reqs[i].id: s for i, s in self._cancelled.items()},
            preempted={reqs[i].id: s for i, s in self._preempted.items()},
            stopped_emitted=stopped,
        )


def columns_from_blocks(n: int, mixed: np.ndarray, stretches: np.ndarray) -> dict:
    """Per-round integer columns from the fast engine's records (built when first asked for)."""
    cols = {name: np.zeros(n, dtype=np.int64) for name in ROUND_COLUMNS}
    if len(mixed):
        for c, name in enumerate(ROUND_COLUMNS, start=1):
            cols[name][mixed[:, 0]] = mixed[:, c]
    if len(stretches):
        lengths = stretches[:, 1].astype(np.intp)   # np.repeat counts: intp (int32 on wasm32)
        offsets = np.concatenate(([0], np.cumsum(lengths)[:-1]))
        local = np.arange(lengths.sum()) - np.repeat(offsets, lengths)
        pos = np.repeat(stretches[:, 0], lengths) + local
        dec = np.repeat(stretches[:, 2], lengths)
        pairs = np.repeat(stretches[:, 3], lengths) + dec * local
        cols["decodes"][pos] = dec
        cols["rows"][pos] = np.repeat(stretches[:, 4], lengths)
        cols["pairs"][pos] = pairs
        cols["context_tokens"][pos] = pairs
        cols["emitted"][pos] = dec
        cols["held_slots"][pos] = np.repeat(stretches[:, 5], lengths)
    return cols
