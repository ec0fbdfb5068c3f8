"""Iteration-level scheduling simulator: static, continuous and chunked-prefill batching.

Reproduces 8.2.2's four-request example round by round (870 / 766 / 844 ms; longest output
intervals 26 / 376 / 133 ms), 8.2.4's token budget and CUDA-graph padding, and Chapter 17's
head-of-line stall (§3), static-batch utilisation and chunked prefill (§6).

Semantics (design.md §4, followed literally)
--------------------------------------------
* A *round* computes some new tokens for the running requests; its duration comes from a
  round-time model (``companion.sim.round_time``). Rounds run back to back; when nothing is
  running the clock jumps to the next arrival. Requests join and leave only at round
  boundaries, in arrival order.
* The round that computes the last prompt token emits the request's first token at the round's
  end; every later round gives the request one decode step (c = 1 new token on h cached tokens),
  which emits one token. The request leaves after its ``output_tokens``-th token.
* A request whose first ``cached_tokens`` prompt tokens are already in the KV cache (a cached
  shared prefix) computes only the rest, but its chunks attend to the cached history: c new
  tokens after h cached or computed ones add c h + c(c+1)/2 pairs and read h + c tokens of KV.
  With ``cached_tokens = 0`` (the default) this is the plain prefill above.
* ``"static"``: a group starts only when nothing is running; its prompts are prefilled together
  in one round; finished members drop out, but their slots stay idle until the group drains.
* ``"continuous"``: a freed slot is refilled at the next boundary; the newcomer's whole prompt
  runs in the same round as the others' decode steps.
* ``"chunked"``: each round first schedules one decode token per decoding request (each uses one
  token of ``token_budget``), then, in arrival order, gives each request still prefilling one
  chunk of min(chunk_tokens, its remaining prompt, budget left) tokens, skipping it when no budget
  is left.
* Output interval (ITL) = gap between consecutive tokens of one request (TTFT is not one). Total
  time (``makespan_s``) = end of the round that emits the last token, measured from t = 0.

The engines
-----------
:class:`Scheduler`, here, is the reference: it does exactly what the list above says, request by
request and round by round, and is the one to read. ``companion.sim.fast_scheduler.FastScheduler``
computes the same schedule bit for bit without looping over requests per round (for 10,000-request
service runs); a differential test holds it to this one. Both implement the driving interface of
``companion.sim.requests.SchedulerBase`` (add, add_many, run, step, cancel, preempt,
requeue_front, the admission and finish callbacks, the state queries), through which
``companion.sim.load`` drives either. :func:`simulate` is the one-shot wrapper (``engine="fast"``
by default). The chapters' scenarios built on it are in ``companion.sim.scenarios``.
"""

from __future__ import annotations

import bisect
import math
from collections import deque

import numpy as np

from companion import validate as v
from companion.serves import serves
from companion.sim.fast_scheduler import FastScheduler
from companion.sim.requests import (POLICIES, Request, SchedulerBase, admission_decision,
                                    check_requests, padder)
from companion.sim.result import ROUND_COLUMNS, Result, Round, Segment
from companion.sim.round_time import (
    LinearRoundTime, RooflineRoundTime, RoundTime, RoundTimeModel, RoundWork,
    StepPlusPrefillRoundTime, chapter17_round_time, round_duration, round_work)

__all__ = [
    "Request", "RoundWork", "RoundTime", "LinearRoundTime", "RoundTimeModel",
    "RooflineRoundTime", "StepPlusPrefillRoundTime", "Segment", "Round", "Result",
    "SchedulerBase", "Scheduler", "FastScheduler", "simulate", "ENGINES", "POLICIES",
    "chapter17_round_time",
]


class _Job:
    """One request and where it stands."""

    __slots__ = ("request", "index", "state", "done", "emitted", "times", "first_token_round",
                 "first_scheduled_round", "admitted_s")

    def __init__(self, request: Request, index: int):
        self.request = request
        self.index = index                     # order of add
        self.state = "pending"                 # -> waiting -> running -> finished | rejected
        self.done = request.cached_tokens      # prompt tokens in the KV cache (cached, computed)
        self.emitted = 0                       # tokens emitted
        self.times: list[float] = []           # their emission times
        self.first_token_round = -1
        self.first_scheduled_round = -1
        self.admitted_s = math.nan

    @property
    def prefilling(self) -> bool:
        return self.done < self.request.prompt_tokens

    @property
    def held_tokens(self) -> int:
        """KV tokens it holds: prompt tokens computed, plus the outputs fed back."""
        return self.done + max(self.emitted - 1, 0)


class Scheduler(SchedulerBase):
    """The reference engine: the semantics of the module docstring, request by request.

    Every round it lists its segments (one decode step for each decoding request, then one
    prompt chunk for each request still prefilling, in admission order, within the token
    budget), sums their work, asks the round-time model how long that takes, and emits tokens at
    the round's end. The driving interface is ``SchedulerBase``'s (``companion.sim.requests``).
    """

    def __init__(self, policy: str, *, max_running: int, round_time, chunk_tokens=None,
                 token_budget=None, captured_shapes=None, admit=None, on_finish=None):
        super().__init__(policy, max_running=max_running, round_time=round_time,
                         chunk_tokens=chunk_tokens, token_budget=token_budget,
                         captured_shapes=captured_shapes, admit=admit, on_finish=on_finish)
        self._pad = padder(self._cfg.shapes)
        self._jobs: list[_Job] = []            # in order of add
        self._pending: list[tuple] = []        # (arrival, index) of requests not yet arrived
        self._waiting: deque[_Job] = deque()   # arrived, not admitted, in arrival order
        self._running: list[_Job] = []         # in admission order
        self._blocked = False                  # the head of the queue was deferred ...
        self._retry_s = math.inf               # ... and asked to be retried at this time
        self._group = 0                        # static: the slots the current group holds
        self._t = 0.0
        self._rounds: list[tuple] = []         # (start, duration, end, *ROUND_COLUMNS)
        self._chunks: list[tuple] = []         # (round, request index, tokens, history)
        self._left: dict[str, dict] = {"rejected": {}, "cancelled": {}, "preempted": {}}
        self._stopped: dict[int, int] = {}     # tokens emitted by a cancelled/preempted request

    # -- state visible to callbacks and drivers --
    @property
    def now_s(self) -> float:
        """The current boundary (seconds)."""
        return self._t

    @property
    def running_count(self) -> int:
        return len(self._running)

    @property
    def waiting_count(self) -> int:
        """Arrived requests not yet admitted."""
        return len(self._waiting)

    @property
    def reserved_tokens(self) -> int:
        """Sum of prompt + output - 1 over the running requests (8.1.2's end-of-life KV)."""
        return sum(j.request.prompt_tokens + j.request.output_tokens - 1 for j in self._running)

    @property
    def cached_tokens(self) -> int:
        """KV tokens the running requests hold now (cached and computed prompt tokens + outputs
        fed back)."""
        return sum(j.held_tokens for j in self._running)

    @property
    def rounds_done(self) -> int:
        """Rounds executed so far."""
        return len(self._rounds)

    @property
    def next_event_s(self) -> float:
        """The earliest future time at which an admission could become possible: the next
        arrival, or the retry time a deferred head asked for; inf when there is none."""
        e = self._pending[0][0] if self._pending else math.inf
        if self._waiting and self._blocked and self._retry_s < e:
            e = self._retry_s
        return e

    def first_token_round(self, request_id) -> int:
        """Index of the round that emitted the request's first token (-1 before it)."""
        return self._jobs[self._index_of(request_id)].first_token_round

    def request_state(self, request_id) -> str:
        """Where a request stands: "pending" (not yet arrived), "waiting", "prefilling",
        "decoding", "finished", "rejected", "cancelled" or "preempted"."""
        job = self._jobs[self._index_of(request_id)]
        if job.state == "running":
            return "prefilling" if job.prefilling else "decoding"
        return job.state

    # -- input and interventions (SchedulerBase's hooks) --
    def _register(self, requests: list, *, pending: bool = True) -> None:
        for r in requests:
            job = _Job(r, len(self._jobs))
            self._jobs.append(job)
            self._ids[r.id] = job.index
            if pending:
                bisect.insort(self._pending, (r.arrival_s, job.index))
            else:                              # requeue_front: it has arrived; it goes first
                job.state = "waiting"
                self._waiting.appendleft(job)
                self._blocked = False

    def _dequeue(self, request_id) -> None:
        job = self._jobs[self._index_of(request_id)]
        if job.state == "waiting":
            self._waiting.remove(job)
            self._blocked = False              # a change in the queue: offer the head again
        else:
            self._pending.remove((job.request.arrival_s, job.index))

    def _stop_running(self, request_id) -> int:
        job = self._jobs[self._index_of(request_id)]
        self._running.remove(job)
        self._stopped[job.index] = job.emitted
        self._blocked = False                  # a slot was freed: offer the head again
        if not self._running:
            self._group = 0
        return job.emitted

    def _mark(self, request_id, state: str) -> None:
        job = self._jobs[self._index_of(request_id)]
        job.state = state
        self._left[state][job.index] = self._t

    # -- the loop --
    def _run(self, horizon: float) -> None:
        while self._t < horizon:
            t = self._t
            self._arrive(t)
            if self._waiting:
                self._admit(t)
            if not self._running:
                e = self.next_event_s
                if e == math.inf:
                    if self._waiting:
                        raise RuntimeError(f"admit: request {self._waiting[0].request.id!r} was "
                                           f"deferred while nothing is running and nothing else "
                                           f"can arrive; reject it or return a retry time")
                    return
                if e >= horizon:
                    return
                self._t = max(t, e)
                continue
            self._round(t)

    def _arrive(self, t: float) -> None:
        """Requests whose arrival time has come join the waiting queue."""
        arrived = False
        while self._pending and self._pending[0][0] <= t:
            _, i = self._pending.pop(0)
            job = self._jobs[i]
            job.state = "waiting"
            self._waiting.append(job)
            arrived = True
        if arrived:
            self._blocked = False

    def _admit(self, t: float) -> None:
        """Offer the head of the queue a free slot, as long as there is one (static: only when
        nothing runs), until it is deferred."""
        cfg = self._cfg
        static = cfg.policy == "static"
        if static and self._running:
            return
        if self._blocked:
            if t < self._retry_s:
                return
            self._blocked = False
        admitted = 0
        while len(self._running) < cfg.max_running and self._waiting:
            job = self._waiting[0]
            kind, retry = ("admit", math.inf) if cfg.admit is None else admission_decision(
                cfg.admit(job.request, t, self), t)
            if kind == "defer":
                self._blocked, self._retry_s = True, retry
                break
            self._waiting.popleft()
            if kind == "reject":
                job.state = "rejected"
                self._left["rejected"][job.index] = t
                continue
            job.state, job.admitted_s = "running", t
            self._running.append(job)
            admitted += 1
        if static and admitted:
            self._group = len(self._running)

    def _round(self, t: float) -> None:
        """One round: its segments, its work, its time; then the tokens it emits."""
        cfg = self._cfg
        j = len(self._rounds)
        budget = cfg.token_budget
        decoding = [job for job in self._running if not job.prefilling]
        budget -= len(decoding)                     # one decode token each, scheduled first
        chunks = []                                 # (job, new tokens c, history h)
        for job in self._running:
            if job.prefilling and budget > 0:
                c = min(cfg.chunk_tokens, job.request.prompt_tokens - job.done, budget)
                chunks.append((job, c, job.done))
                budget -= c
        completing = [job for job, c, h in chunks if h + c == job.request.prompt_tokens]
        prefill = sum(c for _, c, _ in chunks)
        work = round_work(len(decoding), sum(job.held_tokens for job in decoding),
                          [(c, h) for _, c, h in chunks], completing=len(completing),
                          rows=self._pad(len(decoding) + prefill))
        duration = round_duration(cfg.round_time.time_s(work))
        end = t + duration
        held = self._group if cfg.policy == "static" else len(self._running)
        self._rounds.append((t, duration, end) + tuple(work) + (held,))
        # the round's end: decode steps emit a token, completed prompts their first
        for job, c, h in chunks:
            self._chunks.append((j, job.index, c, h))
            if job.first_scheduled_round < 0:
                job.first_scheduled_round = j
            job.done += c
        for job in decoding + completing:
            if job.emitted == 0:
                job.first_token_round = j
            job.emitted += 1
            job.times.append(end)
        self._t = end
        finished = sorted((job for job in self._running
                           if job.emitted == job.request.output_tokens), key=lambda x: x.index)
        if finished:
            for job in finished:
                job.state = "finished"
                self._running.remove(job)
            self._blocked = False
            if not self._running:
                self._group = 0
            if cfg.on_finish is not None:
                for job in finished:
                    cfg.on_finish(job.request, end, self)

    # -- output --
    def round_times(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(start_s, duration_s, end_s) of every round so far, as read-only numpy arrays."""
        cols = np.array([r[:3] for r in self._rounds], dtype=np.float64).reshape(-1, 3)
        out = []
        for k in range(3):
            arr = cols[:, k].copy()
            arr.flags.writeable = False
            out.append(arr)
        return tuple(out)

    def result(self) -> Result:
        """The rounds and emissions so far, as a Result (arrival-ordered requests)."""
        jobs = sorted(self._jobs, key=lambda job: (job.request.arrival_s, job.index))
        position = {job.index: k for k, job in enumerate(jobs)}
        rounds = np.array([r[3:] for r in self._rounds], dtype=np.int64).reshape(
            -1, len(ROUND_COLUMNS))
        times = np.array([r[:3] for r in self._rounds], dtype=np.float64).reshape(-1, 3)
        chunks = np.array([(j, position[i], c, h) for j, i, c, h in self._chunks],
                          dtype=np.int64).reshape(-1, 4)
        ids = {job.index: job.request.id for job in self._jobs}
        left = {state: {ids[i]: s for i, s in d.items()} for state, d in self._left.items()}
        stopped = None
        if self._stopped:
            stopped = [self._stopped.get(job.index, -1) for job in jobs]
        return Result(
            policy=self._cfg.policy, requests=[job.request for job in jobs],
            round_start_s=times[:, 0], round_duration_s=times[:, 1], round_end_s=times[:, 2],
            columns={name: rounds[:, k] for k, name in enumerate(ROUND_COLUMNS)},
            first_token_round=[job.first_token_round for job in jobs],
            first_scheduled_round=[job.first_scheduled_round for job in jobs],
            admitted_s=[job.admitted_s for job in jobs], chunks=chunks,
            rejected=left["rejected"], cancelled=left["cancelled"],
            preempted=left["preempted"], stopped_emitted=stopped,
            recorded_token_times={job.request.id: list(job.times) for job in jobs})


ENGINES = {"fast": FastScheduler, "reference": Scheduler}


@serves("8.2.2", "8.2.4")
def simulate(requests, policy: str, *, max_running: int, round_time, chunk_tokens=None,
             token_budget=None, captured_shapes=None, admit=None, on_finish=None,
             engine: str = "fast") -> Result:
    """Simulate ``requests`` under ``policy`` ("static", "continuous", "chunked"); returns a Result.

    Round time = ``round_time.time_s(RoundWork)`` (``round_time`` may also be a plain function of
    the RoundWork); 8.2.2's model: fixed + per_token x rows + per_pair x (c h + c(c+1)/2 summed).
    The four requests of 8.2.2, at most 2 running, give totals 870 / 766 / 844 ms and longest
    output intervals 26 / 376 / 133 ms (static, continuous, chunked with 2048-token chunks and a
    4096-token budget). ``captured_shapes`` pads each round's rows up to the next captured
    CUDA-graph shape for timing (8.2.4: 17 rows run as 32). ``engine="reference"`` runs
    :class:`Scheduler`, the readable per-request engine (same results, slower). ``admit`` and
    ``on_finish`` are the callbacks of ``companion.sim.requests``.

    >>> from companion import sim, units
    >>> ms = units.ms
    >>> requests = [sim.Request("r0", 0, 2048, 8), sim.Request("r1", 0, 2048, 2),
    ...             sim.Request("r2", 20 * ms, 8192, 2), sim.Request("r3", 30 * ms, 2048, 4)]
    >>> model = sim.RoundTimeModel(26.22 * ms, 30.4 * units.us, 3 * units.ns)
    >>> for policy, extra in [("static", {}), ("continuous", {}),
    ...                       ("chunked", dict(chunk_tokens=2048, token_budget=4096))]:
    ...     res = sim.simulate(requests, policy, max_running=2, round_time=model, **extra)
    ...     print(policy, round(res.makespan_s / ms), round(res.max_itl_s / ms))
    static 870 26
    continuous 766 376
    chunked 844 133
    """
    reqs = check_requests("requests", requests)
    engine = v.choice("engine", engine, ENGINES)
    sched = ENGINES[engine](policy, max_running=max_running, round_time=round_time,
                            chunk_tokens=chunk_tokens, token_budget=token_budget,
                            captured_shapes=captured_shapes, admit=admit, on_finish=on_finish)
    sched.add(reqs)
    return sched.run().result()
