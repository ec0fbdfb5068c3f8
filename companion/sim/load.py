"""A service under load: arrivals, admission, cancellation, goodput and energy (8.1.3, 8.6.1-8.6.3,
17 §8), built on the iteration-level scheduler (``companion.sim.scheduler``) and the paged KV
block manager (``companion.sim.kvcache``).

This is the companion's own simulation. Section 8.6.2's throughputs (0.90, 1.22, 2.33, 2.38 req/s
...) are measurements of a real retrieval service and are NOT reproduced here; what the
simulation shows is their shape: as the arrival rate rises, completion throughput flattens at
the instance's capacity while effective throughput rises, peaks and falls (``goodput_sweep``).

Pieces
------
* Arrivals: ``poisson_arrivals`` (exponential gaps from a seeded numpy Generator) and
  ``trace_arrivals`` (a fixed list of times). A ``Workload`` holds one column per request
  attribute (arrival, prompt and output tokens, a shared prefix, deadline and 17 §8's TTFT/ITL
  SLOs, correctness flag or probability, cancellation time), validated once; ``workload`` builds
  one from arrivals and request shapes (the chapter's ``SHORT_REQUEST`` 2048/256 and
  ``LONG_REQUEST`` 8192/256 with a 6144-token shared prefix), drawn by weight with a seed.
* ``run_service`` runs a workload through the scheduler with a KV pool of ``kv_budget_bytes``
  and returns a ``ServiceResult``: per-request records and the aggregates below.

Admission (at a round boundary, in arrival order, when the scheduler has a free slot)
------------------------------------------------------------------------------------
1. A request whose cancellation time has passed is dropped (status "cancelled").
2. ``deadline_admission=True``: 8.6.1's rule. The request is rejected (reason "deadline") when
   queue so far + predicted prefill + (G - 1) x predicted round > its deadline
   (``companion.formulas.serving.admit_request``). Predictions come from the round-time model
   at the current state: the prefill rounds run the prompt's chunks next to one decode step per
   running request, and the interval is a decode round of the running requests plus this one at
   their current contexts. An estimate: it ignores later arrivals and growth, so a request can
   still finish late; its record says what actually happened.
3. KV space (``kv_policy``):
   * ``"reserve"`` (8.1.2): allocate, at admission, the blocks the request holds when generation
     ends, prompt + output - 1 tokens rounded up to blocks (a shared prefix's blocks are shared).
     If the pool is short the request waits (the head of the queue blocks the queue) until a
     request leaves. Nothing is ever preempted.
   * ``"on_demand"`` (vLLM-style): allocate the prompt's blocks at admission, then one block
     whenever a decode step needs a new one. When the pool cannot supply the blocks the next
     round needs, the most recently admitted running request is preempted by recompute (8.3.2):
     its blocks are freed and it goes back to the head of the queue; when readmitted its prompt
     plus the tokens it had emitted are prefilled again and it continues where it stopped.
   A request whose end-of-generation KV exceeds the whole pool (less shared prefixes) can never
   finish: it is rejected (reason "kv").

Cancellation: at the first round boundary at or after a request's ``cancel_s`` it stops being
scheduled and its blocks return to the pool (the in-flight round completes, 8.6.1); a waiting
request simply leaves the queue at ``cancel_s``.

Shared prefixes are cached before the run (8.6.3: "the sharing scheme has already cached the
common prefix before the requests arrive"): each prefix's full blocks are allocated once at
the start and released at the end. Each request prefills only the tokens after the cached
full blocks (the scheduler's ``Request.cached_tokens``), while its rounds still charge the
attention pairs over the cached history and its KV reads (c h + c(c+1)/2 pairs, h + c tokens
read, h counting the cached prefix).

Aggregates (over an observation window, default from 0 to the last event)
--------------------------------------------------------------------------
* completion throughput = completed / T_obs; effective throughput R_good = sum_i Q_i D_i / T_obs
  (8.6.2): Q_i correct (a given flag, or drawn with probability ``correct_prob`` from ``seed``),
  D_i on time: completed within its deadline and, where given, TTFT and longest output interval
  within 17 §8's SLOs (DistServe's goodput).
* TTFT, output interval (ITL) and latency percentiles p50/p90/p99 by nearest rank (footnote 24:
  "at the ceiling of the sorted position"), over completed requests.
* KV blocks in use over time, preemptions over time, busy (GPU) seconds = sum of round times,
  energy = busy power x busy time + idle power x idle time (the 600 W cap of the RTX PRO 6000
  is an upper bound on busy power, 8.6.3), GPU-seconds and energy per qualifying result
  (T_GPU / N_g and E_obs / N_g, 8.6.3).
* Little's law (8.6.1): ``mean_in_system()`` integrates the number of requests present over
  time; with Poisson arrivals it matches rate x ``mean_residence_s`` within sampling error.

Performance: per request the service does O(1) Python work per event (arrival, admission,
finish, cancellation, block growth in on-demand mode); tokens are never looped over, and
blocks only inside the block manager's array operations. The "reserve" policy keeps the
scheduler's vectorised decode stretches; "on_demand" steps the scheduler one round at a time (it
must look at the pool before every round). benchmarks/bench_sim_load.py prints the figures.

The service drives a scheduler engine (``engine="fast"`` by default, or the reference
``companion.sim.scheduler.Scheduler``) through the public interface of
``companion.sim.requests.SchedulerBase`` only: ``add_many`` queues the workload, the
``admit``/``on_finish`` callbacks allocate and free KV, ``run(until_s)`` or ``step()`` advance
it, and between them ``cancel``, ``preempt`` + ``requeue_front`` (recompute preemption),
``first_token_round``, ``rounds_done`` and ``round_times``.
"""

from __future__ import annotations

import heapq
import math
from functools import cached_property

import numpy as np

from companion import validate as v
from companion.chapters import ch08
from companion.formulas.serving import (
    admit_request, completion_throughput, effective_throughput, per_qualifying_result)
from companion.serves import serves
from companion.sim.kvcache import BlockManager
from companion.sim.requests import POLICIES, Request
from companion.sim.round_time import RooflineRoundTime, round_work
# the workload side (re-exported: load.workload, load.poisson_arrivals, load.SHORT_REQUEST, ...)
from companion.sim.workload import (LONG_REQUEST, SHORT_REQUEST, RequestShape, Workload,
                                    poisson_arrivals, seed_rng, trace_arrivals, workload)
from companion.sim.scheduler import ENGINES
from companion.specs import QWEN3_8B, RTX_PRO_6000, Hardware, Model

__all__ = [
    "RequestShape", "SHORT_REQUEST", "LONG_REQUEST", "KV_POLICIES",
    "Workload", "poisson_arrivals", "trace_arrivals", "workload", "ServiceResult", "run_service",
    "goodput_sweep", "nearest_rank_percentile",
]

KV_POLICIES = ("reserve", "on_demand")


# 8.6.2: the share of the retrieval experiment's responses that were correct (294 of 336), the
# default correctness probability of goodput_sweep (an input the section states, not a result).
SWEEP_CORRECT_PROB = ch08.QUALITY_CORRECT / ch08.QUALITY_RESPONSES

# --- percentiles -----------------------------------------------------------------------------

def nearest_rank_percentile(values, q: float) -> float:
    """The q-th percentile by nearest rank: the value at sorted position ceil(q/100 x n)
    (footnote 24: "p95 is computed at the ceiling of the sorted position"; with 16 values p95 is
    the maximum). NaN for no values."""
    seq = v.sequence("values", values, min_len=0)
    arr = np.asarray(seq, dtype=np.float64).reshape(-1)
    if np.isnan(arr).any():
        raise ValueError(f"values[{int(np.argmax(np.isnan(arr)))}]: is NaN")
    pct = v.number("q", q, at_least=0.0, at_most=100.0)
    return _nearest_rank(np.sort(arr), None, pct)


def _nearest_rank(sorted_values: np.ndarray, weights: np.ndarray | None, q: float) -> float:
    """Nearest rank on sorted values, optionally each counted ``weights`` times."""
    if weights is None:
        n = sorted_values.size
        if n == 0:
            return math.nan
        k = max(1, math.ceil(q / 100.0 * n - 1e-9))
        return float(sorted_values[min(k, n) - 1])
    cum = np.cumsum(weights)
    total = int(cum[-1]) if cum.size else 0
    if total == 0:
        return math.nan
    k = max(1, math.ceil(q / 100.0 * total - 1e-9))
    return float(sorted_values[int(np.searchsorted(cum, min(k, total), side="left"))])


_PCTS = (50, 90, 99)


# --- the service run ---------------------------------------------------------------------------

class ServiceResult:
    """A service run: per-request records (workload order) and the aggregates of 8.6.

    Per request (numpy arrays): ``ids``, ``arrival_s``, ``prompt_tokens``, ``output_tokens``,
    ``status`` ("completed", "rejected" or "cancelled"), ``reason`` ("", "deadline", "kv",
    "cancelled"), ``admitted_s`` (first admission; NaN if never), ``first_token_s``, ``finish_s``
    (NaN unless completed), ``leave_s`` (completion, rejection or cancellation), ``emitted``
    (tokens emitted), ``preemptions``, ``ttft_s``, ``latency_s``, ``max_itl_s``, ``correct`` (Q),
    ``on_time`` (D), ``good`` (Q D). Per round: ``round_start_s``, ``round_end_s``,
    ``round_duration_s`` (``n_rounds`` of them). Per admission ("segment": a preempted request
    has one per admission): ``seg_owner`` (request index), ``seg_admit_s``, ``seg_end_s``,
    ``seg_first_round`` (round of its first token, -1 if none), ``seg_emitted``. Over time:
    ``kv_time_s`` / ``kv_used_blocks`` (blocks in use after each change, of ``kv_blocks``; the
    pool is ``kv_manager``), ``preemption_s`` (when each preemption happened). Scalars:
    ``busy_s`` (sum of round times inside the window), ``busy_power_w``, ``idle_power_w``,
    ``window_s`` (start, end), ``tokens_emitted``, ``kv_policy``. ``summary()`` collects the
    aggregates in a dict; ``table()`` the per-request columns.
    """

    def __init__(self, **fields):
        self.__dict__.update(fields)

    # -- counts --
    @property
    def n_requests(self) -> int:
        return len(self.ids)

    def _in_window(self, times: np.ndarray) -> np.ndarray:
        """Events (completions, emissions) inside the window (start, end]."""
        a, b = self.window_s
        return (times > a) & (times <= b)

    def _done_in_window(self) -> np.ndarray:
        return self.completed & self._in_window(np.nan_to_num(self.finish_s, nan=-math.inf))

    @property
    def observation_s(self) -> float:
        """T_obs, the window's length."""
        return self.window_s[1] - self.window_s[0]

    @property
    def completed(self) -> np.ndarray:
        return self.status == "completed"

    @property
    def n_completed(self) -> int:
        """Requests completed inside the window."""
        return int(self._done_in_window().sum())

    @property
    def n_good(self) -> int:
        """Correct and on-time requests completed inside the window (N_g)."""
        return int((self.good & self._done_in_window()).sum())

    # -- 8.6.2 --
    @property
    def completion_throughput(self) -> float:
        """Completed requests per second of the window (8.6.2)."""
        return completion_throughput(self.n_completed, self.observation_s)

    @cached_property
    def effective_throughput(self) -> float:
        """R_good = sum_i Q_i D_i / T_obs over requests completed in the window (8.6.2)."""
        done = self._done_in_window()
        if not done.any():
            return 0.0
        return effective_throughput(self.correct[done].tolist(), self.on_time[done].tolist(),
                                    self.observation_s)

    @cached_property
    def round_emitted(self) -> np.ndarray:
        """Tokens emitted at the end of each round (every admission emits one per round from
        its first token on)."""
        change = np.zeros(self.n_rounds + 1, dtype=np.int64)
        on = self.seg_emitted > 0
        np.add.at(change, self.seg_first_round[on], 1)
        np.add.at(change, self.seg_first_round[on] + self.seg_emitted[on], -1)
        return np.cumsum(change)[:-1]

    @cached_property
    def output_tokens_per_s(self) -> float:
        """Tokens emitted inside the window per second of it (every request, on time or not;
        8.1.3's generation throughput)."""
        inside = self._in_window(self.round_end_s)
        return float(self.round_emitted[inside].sum()) / self.observation_s

    # -- 8.6.3 --
    @property
    def idle_s(self) -> float:
        return max(self.observation_s - self.busy_s, 0.0)

    @property
    def energy_j(self) -> float:
        """E_obs = busy power x busy time + idle power x idle time."""
        return self.busy_power_w * self.busy_s + self.idle_power_w * self.idle_s

    @property
    def gpu_s_per_good(self) -> float:
        """T_GPU / N_g (8.6.3); inf with no qualifying result."""
        return per_qualifying_result(self.busy_s, self.n_good)

    @property
    def energy_j_per_good(self) -> float:
        """E_obs / N_g (8.6.3); inf with no qualifying result."""
        return per_qualifying_result(self.energy_j, self.n_good)

    # -- 8.6.1 --
    def in_system(self) -> tuple[np.ndarray, np.ndarray]:
        """(times, counts): the number of requests present (arrived, not yet left) as a step
        function; counts[k] holds from times[k] to times[k + 1]."""
        t = np.concatenate((self.arrival_s, self.leave_s))
        d = np.concatenate((np.ones(self.n_requests, np.int64),
                            -np.ones(self.n_requests, np.int64)))
        order = np.lexsort((-d, t))   # at equal times count arrivals first
        return t[order], np.cumsum(d[order])

    def mean_in_system(self, start_s: float | None = None, end_s: float | None = None) -> float:
        """Time average of the number of requests present over [start_s, end_s] (the window by
        default), by integrating the step function of ``in_system()`` (8.6.1)."""
        a = self.window_s[0] if start_s is None else v.nonnegative("start_s", start_s)
        b = self.window_s[1] if end_s is None else v.nonnegative("end_s", end_s)
        if b <= a:
            raise ValueError(f"end_s: {b} must be after start_s {a}")
        t, n = self.in_system()
        edges = np.clip(np.append(t, b), a, b)
        return float(np.sum(n * np.diff(edges)) / (b - a))

    @property
    def mean_residence_s(self) -> float:
        """Mean time from arrival to leaving (completion, rejection or cancellation)."""
        return float(np.mean(self.leave_s - self.arrival_s))

    @property
    def arrival_rate_per_s(self) -> float:
        """Arrivals inside the window per second of it."""
        a, b = self.window_s
        return float(((self.arrival_s >= a) & (self.arrival_s <= b)).sum()) / self.observation_s

    # -- distributions --
    def _pct(self, values: np.ndarray) -> dict:
        s = np.sort(values[~np.isnan(values)])
        return {f"p{q}": _nearest_rank(s, None, q) for q in _PCTS}

    def ttft_percentiles(self) -> dict:
        """p50/p90/p99 of TTFT over completed requests (nearest rank)."""
        return self._pct(self.ttft_s[self.completed])

    def latency_percentiles(self) -> dict:
        """p50/p90/p99 of arrival-to-last-token time over completed requests."""
        return self._pct(self.latency_s[self.completed])

    def itl_percentiles(self) -> dict:
        """p50/p90/p99 over every output interval of every completed request."""
        values, weights = self._itl_values
        return {f"p{q}": _nearest_rank(values, weights, q) for q in _PCTS}

    def token_times_s(self, index: int) -> np.ndarray:
        """Emission times of request ``index``'s tokens (workload order), across preemptions."""
        k = v.integer("index", index, minimum=0)
        if k >= self.n_requests:
            raise ValueError(f"index: there are {self.n_requests} requests, got {index}")
        segs = np.nonzero(self.seg_owner == k)[0]
        parts = [self.round_end_s[f:f + e] for f, e in
                 zip(self.seg_first_round[segs].tolist(), self.seg_emitted[segs].tolist()) if e]
        return np.concatenate(parts) if parts else np.empty(0)

    def running_at(self, times_s) -> np.ndarray:
        """How many requests hold a scheduler slot at each of ``times_s`` (admitted, not yet
        finished, cancelled or preempted); e.g. ``running_at(result.round_start_s)``."""
        t = np.asarray(v.sequence("times_s", times_s, min_len=0), dtype=np.float64)
        ok = ~np.isnan(self.seg_admit_s)
        a = np.sort(self.seg_admit_s[ok])
        e = np.sort(self.seg_end_s[ok])
        return np.searchsorted(a, t, side="right") - np.searchsorted(e, t, side="right")

    def summary(self) -> dict:
        """The aggregates as one flat dict (for a table or a sweep row)."""
        status = self.status
        out = {
            "requests": self.n_requests, "window_s": self.observation_s,
            "completed": int((status == "completed").sum()),
            "rejected": int((status == "rejected").sum()),
            "cancelled": int((status == "cancelled").sum()),
            "good": self.n_good,
            "late": int((self._done_in_window() & ~self.on_time).sum()),
            "wrong": int((self._done_in_window() & ~self.correct).sum()),
            "completion_throughput": self.completion_throughput,
            "effective_throughput": self.effective_throughput,
            "output_tokens_per_s": self.output_tokens_per_s,
            "preemptions": int(self.preemptions.sum()), "rounds": self.n_rounds,
            "busy_s": self.busy_s, "energy_j": self.energy_j,
            "gpu_s_per_good": self.gpu_s_per_good, "energy_j_per_good": self.energy_j_per_good,
            "mean_in_system": self.mean_in_system(), "mean_residence_s": self.mean_residence_s,
            "peak_kv_blocks": int(self.kv_used_blocks.max(initial=0)),
            "kv_blocks": self.kv_blocks,
        }
        for name, pct in (("ttft", self.ttft_percentiles()), ("itl", self.itl_percentiles()),
                          ("latency", self.latency_percentiles())):
            for k, val in pct.items():
                out[f"{name}_{k}_s"] = val
        return out

    def table(self) -> dict:
        """Per-request columns as a dict of arrays (pandas.DataFrame(result.table()) works)."""
        names = ("ids", "arrival_s", "prompt_tokens", "output_tokens", "status", "reason",
                 "admitted_s", "first_token_s", "finish_s", "leave_s", "emitted", "preemptions",
                 "ttft_s", "latency_s", "max_itl_s", "correct", "on_time", "good")
        return {n: getattr(self, n) for n in names}

    def __repr__(self):
        return (f"<ServiceResult: {self.n_requests} requests, {self.n_completed} completed, "
                f"{self.n_good} good in {self.observation_s:.4g} s; R_good "
                f"{self.effective_throughput:.4g}/s, completion {self.completion_throughput:.4g}/s>")


def _predicted_time_s(rt, policy: str, chunk: float, budget: float, running: int,
                      cached: int, prompt: int, prompt_cached: int = 0):
    """(prefill_s, interval_s) predicted for a request admitted now (8.6.1's admission rule).

    Prefill: the prompt's uncached tokens (after its first ``prompt_cached``) in chunks, each in
    a round with one decode step per running request (the whole rest of the prompt in one round
    for continuous and static batching); interval: a decode round of the running requests
    (holding ``cached`` KV tokens) plus this one at their current contexts.
    """
    decodes = running if policy != "static" else 0
    step = prompt if policy != "chunked" else max(1, int(min(chunk, budget - decodes)))
    prefill_s, done = 0.0, prompt_cached
    while done < prompt:
        c = min(step, prompt - done)
        work = round_work(decodes, cached, [(c, done)], completing=int(done + c == prompt))
        prefill_s += float(rt.time_s(work))
        done += c
    interval_s = float(rt.time_s(round_work(running + 1, cached + prompt)))
    return prefill_s, interval_s


@serves("8.1.2", "8.2.2", "8.6.1")
def run_service(workload: Workload, *, policy: str = "chunked", max_running: int = 64,
                round_time=None, model: Model = QWEN3_8B, hardware: Hardware = RTX_PRO_6000,
                chunk_tokens: int | None = None, token_budget: int | None = None,
                kv_budget_bytes: float = ch08.KV_BUDGET_BYTES, block_tokens: int = 16,
                bytes_per_value: float = 2, kv_policy: str = "reserve",
                deadline_admission: bool = False, seed=0, busy_power_w: float | None = None,
                idle_power_w: float = 0.0, window_s=None,
                check_invariants: bool = False, engine: str = "fast") -> ServiceResult:
    """Run ``workload`` through the scheduler with a paged KV pool; returns a ServiceResult.

    ``policy``/``max_running``/``chunk_tokens``/``token_budget`` are the scheduler's (chunked
    defaults: 8.2.2's 2048-token chunks and 4096-token budget, raised to max_running if that is
    larger); ``round_time`` defaults to
    ``RooflineRoundTime(model, hardware)``. The pool holds floor(kv_budget_bytes / (block_tokens
    x KV bytes per token)) blocks of ``model``'s KV (12 GiB of Qwen3-8B: 5461 blocks, 8.1.2).
    ``kv_policy`` "reserve" or "on_demand" and ``deadline_admission`` (8.6.1) are described in
    the module docstring. ``seed`` (an integer or a numpy Generator) draws the correctness of
    requests without a given flag.
    Energy: busy_power_w (default the hardware's power cap, 600 W for the RTX PRO 6000) x busy
    time + idle_power_w x idle time over the window (``window_s`` = (start, end); default from 0
    to the last event). ``check_invariants`` checks the block manager after every KV event
    (for tests; slow). ``engine`` is the scheduler engine that runs the rounds ("fast", or
    "reference": the same results, slower; ``companion.sim.scheduler``).

    A shared prefix's cached full blocks are not prefilled again, but the rounds charge their
    attention pairs and KV reads (``Request.cached_tokens``); its blocks are counted in the
    pool once.
    """
    v.instance("workload", workload, Workload, "a Workload (see load.workload())")
    policy = v.choice("policy", policy, POLICIES)
    max_running = v.count("max_running", max_running)
    v.instance("model", model, Model, "a companion.specs.Model")
    v.instance("hardware", hardware, Hardware, "a companion.specs.Hardware")
    if policy == "chunked" and chunk_tokens is None and token_budget is None:
        chunk_tokens, token_budget = (ch08.SCHEDULE_EXAMPLE_CHUNK_TOKENS,
                                      ch08.SCHEDULE_EXAMPLE_TOKEN_BUDGET)
        token_budget = max(token_budget, max_running)
    if chunk_tokens is not None:
        chunk_tokens = v.tokens("chunk_tokens", chunk_tokens, minimum=1)
    if token_budget is not None:
        token_budget = v.tokens("token_budget", token_budget, minimum=1)
    budget_bytes = v.positive("kv_budget_bytes", kv_budget_bytes)
    block = v.tokens("block_tokens", block_tokens, minimum=1)
    bpv = v.positive("bytes_per_value", bytes_per_value)
    kv_policy = v.choice("kv_policy", kv_policy, KV_POLICIES)
    v.boolean("deadline_admission", deadline_admission)
    rng = seed_rng("seed", seed)
    if busy_power_w is None:
        if hardware.power_w is None:
            raise ValueError(f"busy_power_w: {hardware.name} has no power_w; give busy_power_w")
        busy_power = float(hardware.power_w)
    else:
        busy_power = v.positive("busy_power_w", busy_power_w)
    idle_power = v.nonnegative("idle_power_w", idle_power_w)
    if window_s is not None:
        w = v.sequence("window_s", window_s, min_len=2)
        if len(w) != 2:
            raise ValueError(f"window_s: expected (start, end), got {len(w)} items")
        window = (v.nonnegative("window_s[0]", w[0]), v.nonnegative("window_s[1]", w[1]))
        if window[1] <= window[0]:
            raise ValueError(f"window_s: end {window[1]} must be after start {window[0]}")
    else:
        window = None
    v.boolean("check_invariants", check_invariants)
    scheduler_class = ENGINES[v.choice("engine", engine, ENGINES)]
    rt = RooflineRoundTime(model, hardware) if round_time is None else round_time
    kv = BlockManager.for_budget(budget_bytes, model, block_tokens=block, bytes_per_value=bpv)
    # The garbage collector is left alone: disabling it saved nothing measurable on a
    # 10,000-request run, and a library must not change process-wide state.
    run = _Service(workload, kv, rt, scheduler_class, policy=policy, max_running=max_running,
                   chunk=chunk_tokens, budget=token_budget, kv_policy=kv_policy,
                   deadline_admission=deadline_admission, check=check_invariants)
    return run.execute(rng, busy_power, idle_power, window)


class _Service:
    """The state of one service run: requests (owners), their admissions (segments), the pool."""

    def __init__(self, wl: Workload, kv: BlockManager, rt, scheduler_class, *, policy,
                 max_running, chunk, budget, kv_policy, deadline_admission, check):
        self.sched = scheduler_class(policy, max_running=max_running, round_time=rt, chunk_tokens=chunk,
                               token_budget=budget, admit=self.admit, on_finish=self.finish)
        # a plain function given as round_time comes back as a model with time_s(work)
        self.wl, self.kv, self.rt = wl, kv, self.sched.round_time
        self.policy, self.kv_policy, self.check = policy, kv_policy, check
        self.chunk = math.inf if chunk is None else chunk
        self.budget = math.inf if budget is None else budget
        self.deadline_admission = deadline_admission
        n = len(wl)
        B = kv.block_tokens
        self.order = np.argsort(wl.arrival_s, kind="stable")
        # the segment each owner has in the queue (the first: its place in arrival order)
        self.queued_seg = np.empty(n, dtype=np.int64)
        self.queued_seg[self.order] = np.arange(n)
        self.queued_seg = self.queued_seg.tolist()
        # shared prefixes: their full blocks, allocated once before any request arrives as a
        # sequence ("prefix", id) that each request's allocation shares (share_from)
        self.cached_tokens = (wl.prefix_tokens // B) * B
        self.prefix_blocks: dict[int, list] = {}
        for pid in np.unique(wl.prefix_id[wl.prefix_id >= 0]).tolist():
            k = int(np.argmax(wl.prefix_id == pid))
            tokens = int(self.cached_tokens[k])
            if tokens == 0:
                continue
            if not kv.can_allocate(tokens):
                raise ValueError(f"kv_budget_bytes: the pool of {kv.num_blocks} blocks cannot "
                                 f"hold shared prefix {pid} ({tokens} tokens)")
            self.prefix_blocks[pid] = kv.allocate(("prefix", pid), tokens)
        held = kv.used_blocks
        self.capacity = kv.num_blocks - held            # blocks requests can ever get
        shared = np.zeros(n, dtype=np.int64)          # blocks each request shares
        for pid, blocks in self.prefix_blocks.items():
            shared[wl.prefix_id == pid] = len(blocks)
        end_tokens = wl.prompt_tokens + wl.output_tokens - 1
        self.end_private_blocks = -(-end_tokens // B) - shared   # 8.1.2's reservation
        self.never_fits = (self.end_private_blocks > self.capacity).tolist()
        # plain lists: the callbacks read one item at a time
        self.reserve = kv_policy == "reserve"
        self.end_tokens = end_tokens.tolist()
        self.end_private_blocks = self.end_private_blocks.tolist()
        self.shared = shared.tolist()
        self.prefix_seq = [("prefix", pid) if pid in self.prefix_blocks else None
                           for pid in wl.prefix_id.tolist()]
        self.prompt_kv = wl.prompt_tokens.tolist()
        self.cancel_at = wl.cancel_s.tolist()
        self.deadline = wl.deadline_s.tolist()
        self.arrival = wl.arrival_s.tolist()
        # per owner (workload index)
        self.status = [""] * n
        self.reason = [""] * n
        self.admitted_s = [math.nan] * n
        self.leave_s = [math.nan] * n
        self.preemptions = [0] * n
        self.owner_emitted = [0] * n        # tokens emitted by finished/evicted segments
        self.owner_segs: list[list[int]] = [[] for _ in range(n)]
        self.running_seg = [-1] * n
        # per segment (scheduler index): owner, start token count, KV tokens at admission,
        # admission time, end time, tokens emitted (set when it ends)
        self.seg_owner: list[int] = self.order.tolist()
        self.admissions = [0] * n
        self.seg_admit: list[float] = [math.nan] * n
        self.seg_end: list[float] = [math.nan] * n
        self.seg_emitted: list[int] = [-1] * n
        self.seg_kv: list[int] = [0] * n
        self.kv_t: list[float] = [0.0]
        self.kv_used: list[int] = [kv.used_blocks]
        self.preempt_t: list[float] = []
        self.admission_order: dict[int, None] = {}   # running segments, oldest first
        # on-demand growth: heap of (round index needing a new block, segment, generation)
        self.grow_heap: list[tuple] = []
        self.prefilling: list[int] = []
        self.seg_first: dict[int, int] = {}     # first-token round of decoding segments
        self.seg_tokens: dict[int, int] = {}    # tokens the manager holds for a segment
        self.seg_out: dict[int, int] = {}       # a segment's output tokens
        self.gen = [0] * n

    # -- KV bookkeeping --
    def _kv_event(self, t: float) -> None:
        self.kv_t.append(t)
        self.kv_used.append(self.kv.used_blocks)
        if self.check:
            self.kv.check_invariants()

    def _free(self, owner: int, t: float) -> None:
        if owner in self.kv:
            self.kv.free_count(owner)
            self._kv_event(t)

    # -- callbacks --
    def admit(self, req: Request, now: float, sched) -> object:
        s = req.id
        o = self.seg_owner[s]
        if self.cancel_at[o] <= now:
            self._leave(o, "cancelled", "cancelled", self.cancel_at[o])
            return False
        first_seg = not self.admissions[o]
        if first_seg:
            if self.never_fits[o]:
                self._leave(o, "rejected", "kv", now)
                return False
            if self.deadline_admission and self.deadline[o] < math.inf:
                prefill_s, interval_s = _predicted_time_s(
                    self.rt, self.policy, self.chunk, self.budget, sched.running_count,
                    sched.cached_tokens, req.prompt_tokens, req.cached_tokens)
                if not admit_request(now - self.arrival[o], prefill_s, interval_s,
                                     req.output_tokens, self.deadline[o]):
                    self._leave(o, "rejected", "deadline", now)
                    return False
        kv = self.kv
        if self.reserve:
            tokens = self.end_tokens[o]
            need = self.end_private_blocks[o]
        else:
            tokens = self.prompt_kv[o] + self.owner_emitted[o]
            need = -(-tokens // kv.block_tokens) - self.shared[o]
        if need > kv.free_blocks:
            return None                       # wait for blocks (the queue's head blocks it)
        kv.allocate_count(o, tokens, share_from=self.prefix_seq[o])
        self.kv_t.append(now)
        self.kv_used.append(kv.used_blocks)
        if self.check:
            kv.check_invariants()
        self.seg_kv[s] = tokens
        self.seg_admit[s] = now
        self.running_seg[o] = s
        self.admissions[o] += 1
        if first_seg:
            self.admitted_s[o] = now
        if not self.reserve:
            self.owner_segs[o].append(s)
            self.admission_order[s] = None
            self.prefilling.append(s)
            self.seg_tokens[s] = tokens
            self.seg_out[s] = req.output_tokens
        return True

    def finish(self, req: Request, now: float, sched) -> None:
        s = req.id
        o = self.seg_owner[s]
        g = req.output_tokens
        self.seg_emitted[s] = g
        self.seg_end[s] = now
        self.owner_emitted[o] += g
        self.running_seg[o] = -1
        if not self.reserve:
            del self.admission_order[s]
            self.seg_first.pop(s, None)
        kv = self.kv
        kv.free_count(o)
        self.kv_t.append(now)
        self.kv_used.append(kv.used_blocks)
        if self.check:
            kv.check_invariants()
        self.status[o] = "completed"
        self.leave_s[o] = now

    def _leave(self, o: int, status: str, reason: str, t: float) -> None:
        self.status[o] = status
        self.reason[o] = reason
        self.leave_s[o] = t

    # -- evictions (cancellation, preemption) --
    def _evict(self, o: int, t: float, *, preempt: bool) -> int:
        s = self.running_seg[o]
        emitted = self.sched.preempt(s) if preempt else self.sched.cancel(s)
        self.seg_emitted[s] = emitted
        self.seg_end[s] = t
        self.owner_emitted[o] += emitted
        self.running_seg[o] = -1
        self.gen[s] += 1
        self.admission_order.pop(s, None)
        if s in self.seg_first:
            del self.seg_first[s]
        self._free(o, t)
        return emitted

    def cancel_due(self, cancels: list, ci: int, now: float) -> int:
        """Cancel every request whose cancel time is <= now; return the next index."""
        while ci < len(cancels) and cancels[ci][0] <= now:
            t_c, o = cancels[ci]
            ci += 1
            if self.status[o]:
                continue                      # already completed, rejected or cancelled
            if self.running_seg[o] >= 0:
                if self.running_seg[o] in self.prefilling:
                    self.prefilling.remove(self.running_seg[o])
                self._evict(o, now, preempt=False)
                self._leave(o, "cancelled", "cancelled", now)
            else:                             # still queued: it leaves at cancel_s
                self.sched.cancel(self.queued_seg[o])
                self._leave(o, "cancelled", "cancelled", t_c)
        return ci

    def preempt(self, o: int, now: float) -> None:
        """Preempt owner o by recompute and put it back at the head of the queue (8.3.2)."""
        s_old = self.running_seg[o]
        if s_old in self.prefilling:
            self.prefilling.remove(s_old)
        self._evict(o, now, preempt=True)
        self.preemptions[o] += 1
        self.preempt_t.append(now)
        wl = self.wl
        e = self.owner_emitted[o]
        s = len(self.seg_owner)
        self.seg_owner.append(o)
        self.seg_emitted.append(-1)
        self.seg_admit.append(math.nan)
        self.seg_end.append(math.nan)
        self.seg_kv.append(0)
        self.gen.append(0)
        # recompute: the prompt and the tokens emitted so far are prefilled again (all but the
        # cached prefix, which stays in the pool), and only the remaining tokens are generated
        self.queued_seg[o] = s
        self.sched.requeue_front(Request(s, now, int(wl.prompt_tokens[o]) + e,
                                         int(wl.output_tokens[o]) - e,
                                         int(self.cached_tokens[o])))

    # -- on-demand growth --
    def grow(self, now: float) -> None:
        """Before the next round: give every decoding request that needs a new block one,
        preempting the most recently admitted running requests while the pool is short."""
        sched, kv, B = self.sched, self.kv, self.kv.block_tokens
        j = sched.rounds_done
        if self.prefilling:
            still = []
            for s in self.prefilling:
                f = sched.first_token_round(s)
                if f < 0:
                    still.append(s)
                    continue
                self.seg_first[s] = f
                j1 = f + 1 + (-self.seg_kv[s]) % B
                if j1 <= f + self.seg_out[s] - 1:
                    heapq.heappush(self.grow_heap, (j1, s, self.gen[s]))
            self.prefilling = still
        heap = self.grow_heap
        needs = []
        while heap and heap[0][0] <= j:
            _, s, gen = heapq.heappop(heap)
            if gen == self.gen[s] and self.running_seg[self.seg_owner[s]] == s:
                needs.append(s)
        if not needs:
            return
        while len(needs) > kv.free_blocks:
            victim = next(reversed(self.admission_order))
            self.preempt(self.seg_owner[victim], now)
            if victim in needs:
                needs.remove(victim)
        for s in needs:
            f = self.seg_first[s]
            target = self.seg_kv[s] + (j - f)          # the slot round j writes, and before
            kv.append(self.seg_owner[s], target - self.seg_tokens[s])
            self.seg_tokens[s] = target
            nxt = j + B
            if nxt <= f + self.seg_out[s] - 1:
                heapq.heappush(heap, (nxt, s, self.gen[s]))
        self._kv_event(now)

    # -- the run --
    def execute(self, rng, busy_power: float, idle_power: float, window) -> ServiceResult:
        wl, sched = self.wl, self.sched
        order = self.order
        # scheduler ids 0, 1, ... are the first segments, in arrival order
        sched.add_many(wl.arrival_s[order], wl.prompt_tokens[order], wl.output_tokens[order],
                       cached_tokens=self.cached_tokens[order])
        finite = np.isfinite(wl.cancel_s)
        cancels = sorted(zip(wl.cancel_s[finite].tolist(), np.nonzero(finite)[0].tolist()))
        ci = 0
        if self.kv_policy == "reserve":
            # the scheduler's own fast path, stopped only at cancellation times
            while ci < len(cancels):
                t_c = cancels[ci][0]
                sched.run(until_s=t_c)
                ci = self.cancel_due(cancels, ci, max(sched.now_s, t_c))
            sched.run()
        else:
            # one round at a time: the pool is checked before every round
            while True:
                now = sched.now_s
                ci = self.cancel_due(cancels, ci, now)
                if sched.running_count:
                    self.grow(now)
                if not sched.step():
                    break
        return self._result(rng, busy_power, idle_power, window)

    def _result(self, rng, busy_power, idle_power, window) -> ServiceResult:
        wl, sched, kv = self.wl, self.sched, self.kv
        n = len(wl)
        # release the shared prefixes: the pool must be full again
        for pid in list(self.prefix_blocks):
            kv.free(("prefix", pid))
        starts, durs, ends = sched.round_times()
        n_rounds = ends.size
        gaps = np.diff(ends)
        # segments: first-token round and tokens emitted
        n_seg = len(self.seg_owner)
        seg_owner = np.array(self.seg_owner, dtype=np.int64)
        seg_first = np.fromiter(map(sched.first_token_round, range(n_seg)), dtype=np.int64,
                                count=n_seg)
        seg_emitted = np.array(self.seg_emitted, dtype=np.int64)
        seg_emitted = np.where(seg_emitted < 0, 0, seg_emitted)
        seg_emitted = np.where(seg_first < 0, 0, seg_emitted)
        unfinished = [o for o in range(n) if not self.status[o]]
        if unfinished:   # cannot happen: every request is admitted or dropped eventually
            raise RuntimeError(f"service: requests {unfinished[:5]} never left the system")
        status = np.array(self.status, dtype=str)
        emitted = np.bincount(seg_owner.astype(np.intp), weights=seg_emitted, minlength=n).astype(np.int64)
        # first token: the owner's first segment; finish: its last segment's last token
        has = seg_emitted > 0
        idx = np.nonzero(has)[0]
        first_seg = np.full(n, n_seg, dtype=np.int64)
        np.minimum.at(first_seg, seg_owner[idx], idx)
        first_seg[first_seg == n_seg] = -1
        last_seg = np.full(n, -1, dtype=np.int64)
        np.maximum.at(last_seg, seg_owner[idx], idx)
        first_token_s = np.full(n, math.nan)
        ok = first_seg >= 0
        first_token_s[ok] = ends[seg_first[first_seg[ok]]]
        completed = status == "completed"
        finish_s = np.full(n, math.nan)
        last_round = seg_first[last_seg[completed]] + seg_emitted[last_seg[completed]] - 1
        finish_s[completed] = ends[last_round]
        leave_s = np.array(self.leave_s, dtype=np.float64)
        # output intervals: inside segments they are round gaps, counted once per segment that
        # spans them; across a preemption the gap from the last token to the next first token
        cover = np.zeros(max(n_rounds, 1), dtype=np.int64)
        done_seg = completed[seg_owner] & has
        a = seg_first[done_seg]
        b = a + seg_emitted[done_seg] - 1
        multi = b > a
        np.add.at(cover, a[multi], 1)
        np.add.at(cover, b[multi], -1)
        weights = np.cumsum(cover)[:-1] if n_rounds > 1 else np.zeros(0, np.int64)
        max_itl = _range_max(gaps, seg_first[has], seg_first[has] + seg_emitted[has] - 1,
                             seg_owner[has], n)
        extra = []
        for o in np.nonzero(self._preempted_mask())[0].tolist():
            segs = [s for s in self.owner_segs[o] if seg_emitted[s] > 0]
            for s_prev, s_next in zip(segs, segs[1:]):
                gap = (ends[seg_first[s_next]]
                       - ends[seg_first[s_prev] + seg_emitted[s_prev] - 1])
                max_itl[o] = np.fmax(max_itl[o], gap)
                if completed[o]:
                    extra.append(gap)
        values = np.concatenate((gaps, np.array(extra)))
        wts = np.concatenate((weights, np.ones(len(extra), dtype=np.int64)))
        srt = np.argsort(values, kind="stable")
        itl_values = (values[srt], wts[srt])
        # correctness and timeliness (8.6.2, 17 §8)
        draws = rng.random(n)
        correct = np.where(wl.correct >= 0, wl.correct == 1, draws < wl.correct_prob)
        ttft = first_token_s - wl.arrival_s
        latency = finish_s - wl.arrival_s
        with np.errstate(invalid="ignore"):
            on_time = (completed & (latency <= wl.deadline_s) & (ttft <= wl.ttft_slo_s)
                       & ~(np.nan_to_num(max_itl, nan=0.0) > wl.itl_slo_s))
        busy_s = float(durs.sum())
        last_event = max(float(np.nanmax(leave_s)) if n else 0.0,
                         float(ends[-1]) if n_rounds else 0.0, float(wl.arrival_s.max()))
        if window is None:
            window = (0.0, last_event if last_event > 0 else 1.0)
        else:
            # busy time inside the window only
            busy_s = float(np.clip(np.minimum(ends, window[1]) - np.maximum(starts, window[0]),
                                   0, None).sum())
        if kv.free_blocks != kv.num_blocks:
            raise RuntimeError(f"service: {kv.used_blocks} KV blocks still in use after the run")
        return ServiceResult(
            ids=wl.ids, arrival_s=wl.arrival_s, prompt_tokens=wl.prompt_tokens,
            output_tokens=wl.output_tokens, status=status,
            reason=np.array(self.reason, dtype=str), admitted_s=np.array(self.admitted_s),
            first_token_s=first_token_s, finish_s=finish_s, leave_s=leave_s, emitted=emitted,
            preemptions=np.array(self.preemptions, dtype=np.int64), ttft_s=ttft,
            latency_s=latency, max_itl_s=max_itl, correct=correct, on_time=on_time,
            good=correct & on_time, round_start_s=starts, round_end_s=ends,
            round_duration_s=durs, n_rounds=n_rounds, kv_time_s=np.array(self.kv_t),
            kv_used_blocks=np.array(self.kv_used, dtype=np.int64), kv_blocks=kv.num_blocks,
            preemption_s=np.array(self.preempt_t), busy_s=busy_s, busy_power_w=busy_power,
            idle_power_w=idle_power, window_s=window, tokens_emitted=int(emitted.sum()),
            _itl_values=itl_values, kv_manager=kv, kv_policy=self.kv_policy,
            seg_owner=seg_owner, seg_first_round=seg_first, seg_emitted=seg_emitted,
            seg_admit_s=np.array(self.seg_admit), seg_end_s=np.array(self.seg_end))

    def _preempted_mask(self) -> np.ndarray:
        return np.array(self.preemptions) > 0


def _range_max(gaps: np.ndarray, a: np.ndarray, b: np.ndarray, owner: np.ndarray,
               n: int) -> np.ndarray:
    """Per owner, the largest gaps[a:b] over its segments (NaN where no segment has a gap):
    a sparse table of range maxima, O(rounds log rounds + segments)."""
    out = np.full(n, math.nan)
    ok = b > a
    a, b, owner = a[ok], b[ok], owner[ok]
    if not a.size:
        return out
    level = np.floor(np.log2(b - a)).astype(np.int64)
    table = [gaps]                    # table[lv][i] = max(gaps[i : i + 2**lv])
    span = 1
    for _ in range(int(level.max())):
        prev = table[-1]
        table.append(np.maximum(prev[:-span], prev[span:]))
        span *= 2
    seg_max = np.empty(a.size)
    for lv in np.unique(level).tolist():
        sel = level == lv
        t = table[lv]
        seg_max[sel] = np.maximum(t[a[sel]], t[b[sel] - (1 << lv)])
    np.fmax.at(out, owner, seg_max)
    return out


# --- 8.6.2's shape: a sweep over the arrival rate ------------------------------------------

@serves("8.6.2")
def goodput_sweep(rates_per_s, *, n_requests: int = 300, shapes=SHORT_REQUEST, weights=None,
                  deadline_s: float = ch08.DEADLINE_S, ttft_slo_s=None, itl_slo_s=None,
                  correct_prob: float = SWEEP_CORRECT_PROB, seed: int = 0,
                  **service_kwargs) -> list[dict]:
    """One row per arrival rate: ``summary()`` of a seeded Poisson service run plus ``rate_per_s``.

    The companion's simulation, not the chapter's measurements: 8.6.2's measured 0.90 / 1.02 /
    0.60 req/s are not reproduced. It shows the shape: completion throughput rises and then
    flattens at the instance's capacity, while effective throughput (correct and within
    ``deadline_s``) rises, peaks and falls as queueing makes responses late. Every rate uses the
    same seed: the same unit exponential gaps (scaled by 1 / rate), request mix and correctness
    draws (default probability 294 / 336, the retrieval experiment's share of correct answers).
    ``service_kwargs`` go to ``run_service`` (policy, kv_policy, deadline_admission, ...).
    """
    seq = v.sequence("rates_per_s", rates_per_s)
    rates = [v.positive(f"rates_per_s[{i}]", r) for i, r in enumerate(seq)]
    n = v.count("n_requests", n_requests)
    deadline = v.positive("deadline_s", deadline_s)
    p = v.probability("correct_prob", correct_prob)
    sd = v.count("seed", seed, minimum=0)
    rows = []
    for rate in rates:
        arrivals = poisson_arrivals(rate, n, seed=sd)
        wl = workload(arrivals, shapes, weights=weights, seed=sd + 1, deadline_s=deadline,
                      ttft_slo_s=ttft_slo_s, itl_slo_s=itl_slo_s, correct_prob=p)
        res = run_service(wl, seed=sd + 2, **service_kwargs)
        rows.append({"rate_per_s": rate, **res.summary()})
    return rows
