"""What every scheduler engine shares: the request, the configuration, the admission answers,
CUDA-graph padding, and the public driving interface (``SchedulerBase``).

Two engines implement the interface with the same results, round for round and bit for bit:
``companion.sim.scheduler.Scheduler``, the reference (design.md §4 read literally, request by
request), and ``companion.sim.fast_scheduler.FastScheduler``, which summarises the decoding
requests and steps stretches of pure decode rounds at once. A differential test holds the fast
one to the reference (tests/test_sim_scheduler.py).

Driving a scheduler::

    sched = Scheduler("chunked", max_running=64, round_time=RooflineRoundTime(QWEN3_8B, RTX_PRO_6000),
                      chunk_tokens=2048, token_budget=8192, admit=my_admit, on_finish=my_finish)
    sched.add(requests)          # any order; ids unique over the whole run
    sched.add_many(arrival_s, prompt_tokens, output_tokens, cached_tokens=0)  # columns, bulk
    sched.run(until_s=10.0)      # executes every round that starts before 10 s
    sched.step()                 # or one round at a time (the clock jumps over idle time)
    sched.add(more_requests)     # arrivals must be >= the last until_s (the past is decided)
    sched.run()                  # to completion
    result = sched.result()      # a Result (also valid mid-run: tokens emitted so far)

* Admission is strictly in arrival order (ties: order of ``add``). At each boundary where a slot
  is free (static: when nothing is running) the head of the waiting queue is offered to
  ``admit(request, now_s, scheduler)``, which returns ``True``/``"admit"`` (admit it),
  ``False``/``"reject"`` (drop it; ``Result.rejected`` records when), ``None``/``"defer"`` (keep
  it at the head and stop admitting at this boundary), or a number ``retry_s > now_s`` (defer;
  also retry at the first boundary at or after ``retry_s``). A deferred head is offered again at
  the next boundary after any event: an arrival, a request finishing, or its retry time.
  Without ``admit`` every request is admitted as soon as a slot is free.
* ``on_finish(request, now_s, scheduler)`` is called for every request whose last token a
  round emitted (``now_s`` is that emission time), in order of ``add``, once the round's
  finished requests have all left the running set.
* While inside a callback, ``scheduler.running_count``, ``waiting_count``, ``now_s``,
  ``reserved_tokens`` (sum of prompt + output - 1 over running requests: the 8.1.2 end-of-life
  reservation, unrounded) and ``cached_tokens`` (KV tokens the running requests hold now)
  describe the state. A head deferred while nothing runs and nothing else can happen raises
  RuntimeError.
* Between ``run``/``step`` calls (not from inside a callback) a driver may also change the
  schedule at the current boundary ``now_s``: ``cancel(id)``, ``preempt(id)`` (a running request
  leaves the GPU; to resume it by recompute, ``requeue_front`` its continuation) and
  ``requeue_front(request)``; and read ``first_token_round(id)``, ``request_state(id)``,
  ``rounds_done``, ``next_event_s`` and ``round_times()``.
"""

from __future__ import annotations

import bisect
import math
import numbers
from dataclasses import dataclass

from companion import validate as v
from companion.serves import serves
from companion.sim.round_time import as_round_time

__all__ = ["Request", "POLICIES", "SchedulerConfig", "SchedulerBase", "check_requests",
           "admission_decision", "padder"]

POLICIES = ("static", "continuous", "chunked")


@serves("8.3.3", "8.6.3")
@dataclass(frozen=True)
class Request:
    """One request: id, arrival time (s), prompt tokens (>= 1), output tokens (>= 1), and how many
    leading prompt tokens are already in the KV cache (``cached_tokens``, default 0).

    A request with ``cached_tokens`` = C prefills only its last prompt_tokens - C tokens; their
    attention still covers the cached history (c h + c(c+1)/2 pairs with h counting the C cached
    tokens, and the KV reads of h + c tokens), as with a cached shared prefix (8.3.3, 8.6.3).
    C < prompt_tokens: the last prompt token is always computed, since its output is the first
    token.

    8.2.2's r2 arrives at 20 ms with an 8192-token prompt and asks for 2 output tokens:

    >>> from companion import sim, units
    >>> r2 = sim.Request("r2", 20 * units.ms, 8192, 2)
    >>> r2.prompt_tokens, r2.output_tokens
    (8192, 2)
    """

    id: object
    arrival_s: float
    prompt_tokens: int
    output_tokens: int
    cached_tokens: int = 0

    def __post_init__(self):
        object.__setattr__(self, "id", request_id("id", self.id))
        object.__setattr__(self, "arrival_s", v.nonnegative("arrival_s", self.arrival_s))
        object.__setattr__(self, "prompt_tokens",
                           v.tokens("prompt_tokens", self.prompt_tokens, minimum=1))
        object.__setattr__(self, "output_tokens",
                           v.tokens("output_tokens", self.output_tokens, minimum=1))
        cached = v.tokens("cached_tokens", self.cached_tokens)
        if cached >= self.prompt_tokens:
            raise ValueError(f"cached_tokens: {cached} must be < prompt_tokens="
                             f"{self.prompt_tokens} (the last prompt token is always computed: "
                             f"its output is the first token)")
        object.__setattr__(self, "cached_tokens", cached)

    @classmethod
    def trusted(cls, rid, arrival_s: float, prompt: int, output: int, cached: int) -> "Request":
        """A Request from values already validated (in bulk, by ``add_many``)."""
        r = object.__new__(cls)
        r.__dict__.update(id=rid, arrival_s=arrival_s, prompt_tokens=prompt, output_tokens=output,
                          cached_tokens=cached)
        return r


def request_id(name: str, rid):
    """A request id: a str or an int (numpy integers become ints)."""
    if isinstance(rid, bool) or not isinstance(rid, (str, numbers.Integral)):
        raise TypeError(f"{name}: expected a str or int request id, got "
                        f"{type(rid).__name__} {rid!r}")
    return rid if isinstance(rid, str) else int(rid)


def check_requests(name: str, requests, *, min_len: int = 1) -> list[Request]:
    """A sequence of Requests with unique ids."""
    seq = v.sequence(name, requests, min_len=min_len)
    out, seen = [], set()
    for i, r in enumerate(seq):
        v.instance(f"{name}[{i}]", r, Request, "a companion.sim.Request")
        if r.id in seen:
            raise ValueError(f"{name}: duplicate request id {r.id!r} (at index {i})")
        seen.add(r.id)
        out.append(r)
    return out


@dataclass(frozen=True)
class SchedulerConfig:
    """A scheduler's settings, validated (``chunk_tokens``/``token_budget`` inf when unlimited)."""

    policy: str
    max_running: int
    round_time: object
    chunk_tokens: float
    token_budget: float
    shapes: tuple
    admit: object
    on_finish: object

    @classmethod
    def make(cls, policy, max_running, round_time, chunk_tokens=None, token_budget=None,
             captured_shapes=None, admit=None, on_finish=None) -> "SchedulerConfig":
        policy = v.choice("policy", policy, POLICIES)
        max_running = v.count("max_running", max_running)
        rt = as_round_time(round_time)
        chunk = (math.inf if chunk_tokens is None
                 else v.tokens("chunk_tokens", chunk_tokens, minimum=1))
        budget = (math.inf if token_budget is None
                  else v.tokens("token_budget", token_budget, minimum=1))
        shapes: tuple = ()
        if captured_shapes is not None:
            seq = v.sequence("captured_shapes", captured_shapes)
            shapes = tuple(sorted({v.count(f"captured_shapes[{i}]", s)
                                   for i, s in enumerate(seq)}))
        if policy == "chunked":
            if chunk_tokens is None and token_budget is None:
                raise ValueError("chunk_tokens: policy 'chunked' needs chunk_tokens and/or "
                                 "token_budget")
            if budget < max_running:
                raise ValueError(f"token_budget: {token_budget} is smaller than max_running="
                                 f"{max_running}; every running request's decode token must fit")
        else:
            if chunk_tokens is not None:
                raise ValueError(f"chunk_tokens: only policy 'chunked' splits prompts (policy is "
                                 f"{policy!r})")
            if token_budget is not None:
                raise ValueError(f"token_budget: only policy 'chunked' uses a token budget "
                                 f"(policy is {policy!r})")
        if admit is not None and not callable(admit):
            raise TypeError(f"admit: expected a callable or None, got {type(admit).__name__}")
        if on_finish is not None and not callable(on_finish):
            raise TypeError(f"on_finish: expected a callable or None, got "
                            f"{type(on_finish).__name__}")
        return cls(policy, max_running, rt, chunk, budget, shapes, admit, on_finish)


def padder(shapes: tuple):
    """rows -> rows executed: the smallest captured shape >= rows; beyond the largest, unpadded."""
    if not shapes:
        return lambda n: n
    cache: dict = {}
    top = shapes[-1]

    def pad(n):
        r = cache.get(n)
        if r is None:
            r = shapes[bisect.bisect_left(shapes, n)] if n <= top else n
            cache[n] = r
        return r
    return pad


def admission_decision(value, now_s: float):
    """Normalise an admit() answer to ("admit"|"reject"|"defer", retry_s)."""
    if isinstance(value, bool) or type(value).__name__ == "bool_":
        return ("admit" if value else "reject"), math.inf
    if value is None:
        return "defer", math.inf
    if isinstance(value, str) and value in ("admit", "reject", "defer"):
        return value, math.inf
    if isinstance(value, numbers.Real):
        retry = float(value)
        if not retry > now_s or math.isnan(retry):
            raise ValueError(f"admit: returned retry time {value!r}, which is not after now_s="
                             f"{now_s!r}")
        return "defer", retry
    raise ValueError(f"admit: expected True/'admit', False/'reject', None/'defer' or a retry "
                     f"time, got {value!r}")


class SchedulerBase:
    """The driving interface both engines implement (see the module docstring).

    Subclasses keep their own state and implement ``_register(requests, pending)``,
    ``_run(horizon)``, ``_stop_running(request_id, state)``, ``_dequeue(request_id)``, the
    read-only properties and ``result()``; the checks, ``add``, ``add_many``, ``run``,
    ``step``, ``cancel``, ``preempt`` and ``requeue_front`` are here, once.
    """

    def __init__(self, policy: str, *, max_running: int, round_time, chunk_tokens=None,
                 token_budget=None, captured_shapes=None, admit=None, on_finish=None):
        self._cfg = SchedulerConfig.make(policy, max_running, round_time, chunk_tokens,
                                         token_budget, captured_shapes, admit, on_finish)
        self._horizon = 0.0
        self._in_run = False
        self._ids: dict = {}                   # id -> index in order of add

    # -- what subclasses provide --
    def _register(self, requests: list, *, pending: bool = True) -> None:
        raise NotImplementedError

    def _run(self, horizon: float) -> None:
        raise NotImplementedError

    @property
    def now_s(self) -> float:
        raise NotImplementedError

    @property
    def running_count(self) -> int:
        raise NotImplementedError

    @property
    def waiting_count(self) -> int:
        raise NotImplementedError

    @property
    def next_event_s(self) -> float:
        raise NotImplementedError

    @property
    def round_time(self):
        """The round-time model in use (a plain function given as round_time comes wrapped in
        an object with ``time_s(work)``)."""
        return self._cfg.round_time

    @property
    def policy(self) -> str:
        return self._cfg.policy

    # -- input --
    def _index_of(self, request_id) -> int:
        try:
            return self._ids[request_id]
        except (KeyError, TypeError):
            raise ValueError(f"request_id: no request {request_id!r} was added") from None

    def add(self, requests) -> None:
        """Queue requests (a Request or a sequence of them); arrivals must not precede the
        horizon of the last ``run(until_s)``, and ids must be new. May be called from a
        callback (a closed-loop client adding its next request when one finishes)."""
        if isinstance(requests, Request):
            requests = [requests]
        reqs = check_requests("requests", requests, min_len=0)
        seen = set()
        for r in reqs:
            if r.id in self._ids or r.id in seen:
                raise ValueError(f"requests: duplicate request id {r.id!r}")
            seen.add(r.id)
            if r.arrival_s < self._horizon:
                raise ValueError(f"requests: request {r.id!r} arrives at {r.arrival_s} s, before "
                                 f"the simulated horizon {self._horizon} s")
        self._register(reqs)

    def add_many(self, arrival_s, prompt_tokens, output_tokens, *, cached_tokens=0,
                 ids=None) -> list:
        """Queue many requests given as columns (numpy arrays or sequences; a scalar token
        count applies to all); return their ids, by default consecutive integers from the
        number of requests added so far.

        Validated as whole columns (the same rules as Request's, and those of ``add``), so a
        10,000-request trace is queued without checking 10,000 Requests one field at a time.
        """
        if isinstance(arrival_s, numbers.Real) and not isinstance(arrival_s, bool):
            raise TypeError(f"arrival_s: expected a sequence, got {type(arrival_s).__name__}")
        arrivals = v.column("arrival_s", arrival_s, minimum=0.0, min_len=0)
        n = arrivals.size
        kw = dict(whole=True, length_of="arrival_s", what="a whole number of tokens", min_len=0)
        prompts = v.column("prompt_tokens", prompt_tokens, n, minimum=1, **kw)
        outputs = v.column("output_tokens", output_tokens, n, minimum=1, **kw)
        cached = v.column("cached_tokens", cached_tokens, n, minimum=0, **kw)
        over = cached >= prompts
        if over.any():
            k = int(over.argmax())
            raise ValueError(f"cached_tokens[{k}]: {cached[k]} must be < prompt_tokens="
                             f"{prompts[k]} (the last prompt token is always computed)")
        early = arrivals < self._horizon
        if early.any():
            k = int(early.argmax())
            raise ValueError(f"arrival_s[{k}]: {arrivals[k]!r} s is before the simulated "
                             f"horizon {self._horizon} s")
        if ids is None:
            start = len(self._ids)
            id_list = list(range(start, start + n))
        else:
            seq = v.sequence("ids", ids, min_len=0)
            if len(seq) != n:
                raise ValueError(f"ids: has {len(seq)} items but arrival_s has {n}")
            id_list = [request_id(f"ids[{k}]", rid) for k, rid in enumerate(seq)]
            if len(set(id_list)) != n:
                raise ValueError("ids: duplicate request id")
        clash = next((rid for rid in id_list if rid in self._ids), None)
        if clash is not None:
            raise ValueError(f"ids: duplicate request id {clash!r} (already added)")
        reqs = list(map(Request.trusted, id_list, arrivals.tolist(), prompts.tolist(),
                        outputs.tolist(), cached.tolist()))
        self._register(reqs)
        return id_list

    # -- running --
    def _check_not_running(self, what: str) -> None:
        if self._in_run:
            raise RuntimeError(f"{what}: not allowed inside a callback while run() executes; "
                               f"stop the run (run(until_s=...)) and call it between runs")

    def run(self, until_s: float | None = None):
        """Execute rounds (all of them, or those starting before ``until_s``); returns self."""
        horizon = math.inf if until_s is None else v.nonnegative("until_s", until_s)
        self._check_not_running("run")
        self._in_run = True
        try:
            self._run(horizon)
        finally:
            self._in_run = False
        if until_s is not None:
            self._horizon = max(self._horizon, horizon)
        return self

    def step(self) -> bool:
        """Execute the next round: the one that starts at the current boundary (after admitting
        there), or, when nothing can run now, the one at the next arrival or retry time. Returns
        False (and does nothing) when no request is left to run."""
        now = self.now_s
        if self.running_count or self.waiting_count:
            self.run(until_s=math.nextafter(now, math.inf))
            return True
        e = self.next_event_s
        if e == math.inf:
            return False
        self.run(until_s=math.nextafter(max(e, now), math.inf))
        return True

    # -- a driver's interventions (between runs) --
    def cancel(self, request_id) -> int:
        """Remove a request that has not finished, at the current boundary; return the tokens
        it had emitted (0 unless it was decoding).

        A queued request leaves the queue; a running one stops being scheduled (its slot is
        free for the next admission; the round that just ended counted in full). Its tokens so
        far stay in the Result; ``Result.cancelled`` records when. 8.6.1's cancellation.
        """
        self._check_not_running("cancel")
        self._index_of(request_id)
        state = self.request_state(request_id)
        if state in ("pending", "waiting"):
            self._dequeue(request_id)
            emitted = 0
        elif state in ("prefilling", "decoding"):
            emitted = self._stop_running(request_id)
        else:
            raise ValueError(f"request_id: request {request_id!r} is {state}; only a queued or "
                             f"running request can be cancelled")
        self._mark(request_id, "cancelled")
        return emitted

    def preempt(self, request_id) -> int:
        """Take a running request off the GPU at the current boundary; return the tokens it had
        emitted.

        Its slot is freed and nothing of it is rescheduled: to resume it by recompute (8.3.2,
        17 §5) queue a new request with ``requeue_front``, whose prompt is the old prompt plus
        the emitted tokens and whose output is what remains. ``Result.preempted`` records when.
        """
        self._check_not_running("preempt")
        self._index_of(request_id)
        state = self.request_state(request_id)
        if state not in ("prefilling", "decoding"):
            raise ValueError(f"request_id: request {request_id!r} is not running ({state}); "
                             f"only a running request can be preempted")
        emitted = self._stop_running(request_id)
        self._mark(request_id, "preempted")
        return emitted

    def requeue_front(self, request: Request) -> None:
        """Queue a new request that has already arrived (arrival_s <= now_s) at the head of
        the waiting queue, ahead of earlier arrivals: it is offered first at the next boundary.

        The way back for a preempted request (``preempt``), as recompute preemption does.
        """
        self._check_not_running("requeue_front")
        v.instance("request", request, Request, "a companion.sim.Request")
        if request.id in self._ids:
            raise ValueError(f"request: duplicate request id {request.id!r}")
        if request.arrival_s > self.now_s:
            raise ValueError(f"request: arrives at {request.arrival_s} s, after now_s="
                             f"{self.now_s} s; requeue_front queues a request that has arrived")
        self._register([request], pending=False)
