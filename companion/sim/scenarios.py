"""The chapters' scheduling scenarios, on the simulator of ``companion.sim.scheduler``.

Each builds requests from the chapters' stated inputs (``companion.chapters``) or from the
companion's own generated traces (labelled as such), runs them, and reads the numbers a
notebook, the ledger or an explorer's readout shows off the simulated rounds:

* ``chapter_8_2_2_requests``: 8.2.2's four requests; ``chapter_schedules``: them under the
  three policies (870 / 766 / 844 ms), or with another setting;
* ``token_budget_sweep``: a generated six-request replay under each per-round token budget (8.2.4);
* ``long_prompt_interference``: a long prompt admitted into a running decode batch (17 §3, §6);
  ``hol_scenario``: it beside the closed-form stall of ``calc.head_of_line_stall`` (17 §3);
* ``batching_trace_requests`` and ``batching_trace``: a queue with §6's output lengths under
  static and continuous batching (17 §6);
* ``itl_tail_trace``: long prompts arriving among chat streams, whole or chunked (17's
  interview question on a bad P99 ITL);
* ``timeline_scenario`` and ``stalled_interval_positions``: one request's Figure 8-2 timeline
  with other requests' prefills inserted into its output intervals (8.1.1).
"""

from __future__ import annotations

import math
import numbers
from functools import lru_cache

import numpy as np

from companion import calc
from companion import validate as v
from companion.chapters import ch08, ch17
from companion.formulas.batching import token_emission_times
from companion.serves import serves
from companion.sim.requests import Request
from companion.sim.round_time import (
    RoundTimeModel,
    StepPlusPrefillRoundTime,
    as_round_time,
    chapter17_round_time,
)
from companion.sim.scheduler import simulate

__all__ = ["chapter_8_2_2_requests", "chapter_schedule", "chapter_schedules", "token_budget_sweep",
           "TOKEN_BUDGETS",
           "long_prompt_interference", "hol_scenario", "batching_trace_requests",
           "batching_trace", "itl_tail_trace", "stalled_interval_positions", "timeline_scenario",
           "TRACE_REQUESTS", "TRACE_PROMPT_TOKENS", "CH17_STATIC_BATCH", "CH17_STATIC_SHORTEST",
           "CH17_STATIC_LONGEST",
           ]


@serves("8.2.2")
def chapter_8_2_2_requests() -> list[Request]:
    """8.2.2's four requests: r0, r1 at 0 s with 2048-token prompts and 8 and 2 outputs; r2 at
    20 ms with 8192 and 2; r3 at 30 ms with 2048 and 4."""
    return [Request(*r) for r in ch08.SCHEDULE_EXAMPLE_REQUESTS]


def _schedule_requests(long_prompt_tokens=None, requests=None) -> list:
    """8.2.2's four requests (or ``requests``), with r2's prompt replaced if asked."""
    reqs = list(chapter_8_2_2_requests() if requests is None else requests)
    if long_prompt_tokens is None:
        return reqs
    long_prompt_tokens = v.tokens("long_prompt_tokens", long_prompt_tokens, minimum=1)
    return [Request(r.id, r.arrival_s, long_prompt_tokens, r.output_tokens)
            if r.id == "r2" else r for r in reqs]


def _schedule_run(reqs, policy: str, max_running, chunk_tokens, token_budget):
    """One policy on ``reqs`` with 8.2.2's round model; None means the chapter's setting."""
    def chapter_if_none(value, chapter_value):
        return chapter_value if value is None else value
    kw = dict(max_running=chapter_if_none(max_running, ch08.SCHEDULE_EXAMPLE_MAX_RUNNING),
              round_time=RoundTimeModel.chapter8())
    if policy == "chunked":
        kw["chunk_tokens"] = chapter_if_none(chunk_tokens, ch08.SCHEDULE_EXAMPLE_CHUNK_TOKENS)
        kw["token_budget"] = chapter_if_none(token_budget, ch08.SCHEDULE_EXAMPLE_TOKEN_BUDGET)
    return simulate(reqs, policy, **kw)


@lru_cache(maxsize=512)
def chapter_schedule(policy: str, max_running=None, chunk_tokens=None, token_budget=None,
                     long_prompt_tokens=None):
    """8.2.2's four requests under one policy, None meaning the chapter's setting (cached: an
    explorer's slider usually changes one policy's run only)."""
    return _schedule_run(_schedule_requests(long_prompt_tokens), policy, max_running,
                         chunk_tokens, token_budget)


@serves("8.2.2")
def chapter_schedules(*, max_running: int | None = None, chunk_tokens: int | None = None,
                      token_budget: int | None = None, long_prompt_tokens: int | None = None,
                      requests=None) -> dict:
    """The 8.2.2 four-request example under the three policies: {policy: scheduler Result}.

    Defaults are the chapter's: at most 2 running, 2048-token chunks, a 4096-token budget and
    8.2.2's round model (26.22 ms + 30.4 us per token + 3 ns per pair). ``long_prompt_tokens``
    replaces r2's 8192-token prompt; ``requests`` replaces the four requests altogether.
    """
    policies = ("static", "continuous", "chunked")
    if requests is None:
        return {p: chapter_schedule(p, max_running, chunk_tokens if p == "chunked" else None,
                                    token_budget if p == "chunked" else None, long_prompt_tokens)
                for p in policies}
    reqs = _schedule_requests(long_prompt_tokens, requests)
    return {p: _schedule_run(reqs, p, max_running, chunk_tokens, token_budget) for p in policies}


# the per-round token budgets a sweep tries by default (8.2.4's replay, Figure 8-8)
TOKEN_BUDGETS = (512, 1024, 2048, 4096, 8192)


@serves("8.2.2", "8.2.4")
def token_budget_sweep(token_budgets=TOKEN_BUDGETS, *,
                       n_requests: int = ch08.REPLAY_REQUESTS,
                       interarrival_s: float = ch08.REPLAY_INTERARRIVAL_S, prompt_tokens=4096,
                       output_tokens: int = 64, max_running: int = 6,
                       round_time=None) -> list[dict]:
    """Rows of a generated arrival sweep (GENERATED by the companion's simulator; the chapter's
    replay data is not printed): ``n_requests`` requests every ``interarrival_s`` under chunked
    prefill with chunk = token budget, for each budget.

    Each row: token_budget, queue_later_mean_s / queue_later_max_s (arrival to the first round
    computing part of its prompt, over every request but the first), max_itl_s, makespan_s.
    8.2.4 describes the same trade on its six-request replay (as the budget rises from 512 to
    8192, later arrivals queue less and the longest output interval grows). The defaults
    (4096-token prompts, or one length per request; 64 outputs; 8.2.2's round model) are the
    companion's own choice.
    """
    seq = v.sequence("token_budgets", token_budgets)
    budgets = [v.tokens(f"token_budgets[{i}]", b, minimum=1) for i, b in enumerate(seq)]
    n = v.count("n_requests", n_requests)
    gap = v.nonnegative("interarrival_s", interarrival_s)
    if isinstance(prompt_tokens, numbers.Real):
        prompts = [v.tokens("prompt_tokens", prompt_tokens, minimum=1)] * n
    else:
        pseq = v.sequence("prompt_tokens", prompt_tokens)
        if len(pseq) != n:
            raise ValueError(f"prompt_tokens: give one length per request ({n}), got {len(pseq)}")
        prompts = [v.tokens(f"prompt_tokens[{i}]", x, minimum=1) for i, x in enumerate(pseq)]
    g = v.tokens("output_tokens", output_tokens, minimum=1)
    m = v.count("max_running", max_running)
    rt = RoundTimeModel.chapter8() if round_time is None else as_round_time(round_time)
    for b in budgets:
        if b < m:
            raise ValueError(f"token_budgets: {b} is smaller than max_running={m}")
    reqs = [Request(f"q{i}", i * gap, prompts[i], g) for i in range(n)]
    rows = []
    for b in budgets:
        res = simulate(reqs, "chunked", max_running=m, round_time=rt, chunk_tokens=b,
                       token_budget=b)
        queue = np.array([res.queue_s[r.id] for r in reqs[1:]]) if n > 1 else np.zeros(1)
        rows.append({"token_budget": b, "queue_later_mean_s": float(queue.mean()),
                     "queue_later_max_s": float(queue.max()), "max_itl_s": res.max_itl_s,
                     "makespan_s": res.makespan_s})
    return rows


@serves("17.3", "17.6")
def long_prompt_interference(prompt_tokens: int = ch17.LONG_CONTEXT_TOKENS,
                             chunk_tokens: int | None = None, *,
                             decode_batch: int = 8, round_time=None,
                             warmup_rounds: int = 4) -> dict:
    """A long prompt admitted into a running decode batch (17 §3, §6); returns a dict with
    worst_decode_itl_s, baseline_itl_s, long_ttft_s, long_prompt_rounds and the Result.

    ``decode_batch`` one-token-prompt requests start together and decode; the long request arrives
    exactly at the boundary after ``warmup_rounds`` decode rounds. Without ``chunk_tokens`` it is
    admitted whole (continuous batching: one round of decode step + whole prefill); with it,
    chunked prefill co-schedules one chunk per round with the decode steps. Default round model:
    17's 6.1 ms decode step + 2 x 8e9 FLOP per prompt token at 50% of 989 TFLOP/s.
    """
    p = v.tokens("prompt_tokens", prompt_tokens, minimum=1)
    chunk = None if chunk_tokens is None else v.tokens("chunk_tokens", chunk_tokens, minimum=1)
    b = v.count("decode_batch", decode_batch)
    w = v.count("warmup_rounds", warmup_rounds)
    rt = chapter17_round_time() if round_time is None else as_round_time(round_time)
    kw = dict(max_running=b + 1, round_time=rt)
    if chunk is None:
        policy = "continuous"
    else:
        policy, kw["chunk_tokens"] = "chunked", chunk
    # The boundary after `warmup_rounds` decode rounds, from the same simulator (identical
    # arithmetic, so the long request arrives exactly at a boundary and never queues).
    probe = simulate([Request(f"d{i}", 0.0, 1, 1 + w) for i in range(b)], policy, **kw)
    arrival = float(probe.round_end_s[w])
    long_req = Request("long", arrival, p, 1)
    outputs = 1 + w + (1 if chunk is None else math.ceil(p / chunk)) + 2
    decoders = [Request(f"d{i}", 0.0, 1, outputs) for i in range(b)]
    res = simulate(decoders + [long_req], policy, **kw)
    itls = np.concatenate([res.itl_s[r.id] for r in decoders])
    rounds_of_long = int(np.sum(res.chunks[:, 1] == res.position("long")))
    return {"worst_decode_itl_s": float(itls.max()), "baseline_itl_s": float(itls.min()),
            "long_ttft_s": res.ttft_s["long"], "long_prompt_rounds": rounds_of_long,
            "result": res}


# --- 8.1.1: one request's timeline, with inserted prefills -----------------------------------

@serves("17.3")
def hol_scenario(model, hardware, prompt_tokens: int, step_s: float, efficiency: float,
                 decode_batch: int) -> dict:
    """17 §3's stall twice: the closed form ``calc.head_of_line_stall`` and the companion's
    scheduler simulator (``sim.long_prompt_interference``, continuous batching, the
    whole prompt admitted in one round with the decode steps).

    The simulated round holds the decode step *and* the prefill, so its worst ITL is step +
    stall, one step more than the closed form's stall.
    """
    closed = calc.head_of_line_stall(model, hardware, prompt_tokens, step_s,
                                     efficiency=efficiency)
    rt = StepPlusPrefillRoundTime.from_hardware(model, hardware, decode_step_s=step_s,
                                                      mfu=efficiency)
    simulated = long_prompt_interference(prompt_tokens, decode_batch=decode_batch,
                                         round_time=rt)
    return {"closed_form": closed, "simulated": simulated}


# --- 17 §6: one queue under static and continuous batching -----------------------------------

# §6's batch: its size and output lengths (100, 200, ..., 800 tokens)
CH17_STATIC_BATCH = len(ch17.STATIC_OUTPUT_LENGTHS)
CH17_STATIC_SHORTEST = min(ch17.STATIC_OUTPUT_LENGTHS)
CH17_STATIC_LONGEST = max(ch17.STATIC_OUTPUT_LENGTHS)
# The queue behind §6's batch in the simulated trace: three batches' worth of the chapter's mix
# (with no queue there is nothing for continuous batching to admit), 256-token prompts.
TRACE_REQUESTS = 24
TRACE_PROMPT_TOKENS = 256


def _letters(i: int) -> str:
    """A, B, ..., Z, AA, AB, ...: request names like the chapter's figure."""
    s = ""
    i += 1
    while i:
        i, r = divmod(i - 1, 26)
        s = chr(65 + r) + s
    return s


@serves("17.6")
def batching_trace_requests(n_requests: int = TRACE_REQUESTS, slots: int = CH17_STATIC_BATCH,
                            shortest: int = CH17_STATIC_SHORTEST,
                            longest: int = CH17_STATIC_LONGEST, *,
                            prompt_tokens: int = TRACE_PROMPT_TOKENS,
                            arrival_gap_s: float = 0.0, seed: int = 0) -> list:
    """A queue of requests whose every group of ``slots`` has 17 §6's output lengths.

    Outputs of a group are ``slots`` evenly spaced lengths from ``shortest`` to ``longest``
    (100, 200, ..., 800 for 8 slots), in a shuffled order (numpy Generator seeded with
    ``seed``); requests arrive ``arrival_gap_s`` apart, named A, B, C, ...
    """
    n = v.count("n_requests", n_requests)
    b = v.count("slots", slots)
    lo = v.tokens("shortest", shortest, minimum=1)
    hi = v.tokens("longest", longest, minimum=1)
    p = v.tokens("prompt_tokens", prompt_tokens, minimum=1)
    gap = v.nonnegative("arrival_gap_s", arrival_gap_s)
    rng = np.random.default_rng(v.integer("seed", seed))
    lengths = np.rint(np.linspace(min(lo, hi), max(lo, hi), b)).astype(int)
    outputs = np.concatenate([rng.permutation(lengths) for _ in range(-(-n // b))])[:n]
    return [Request(_letters(i), i * gap, p, int(g)) for i, g in enumerate(outputs)]


def batching_trace(requests, slots: int = CH17_STATIC_BATCH, *, round_time=None) -> dict:
    """The same queue under "static" and "continuous" batching: {policy: Result}.

    Round time: Chapter 17's (a 6.1 ms decode step + 2 x 8e9 FLOP per prompt token at 50% of
    989 TFLOP/s), ``chapter17_round_time()``.
    """
    b = v.count("slots", slots)
    rt = chapter17_round_time() if round_time is None else round_time
    return {policy: simulate(requests, policy, max_running=b, round_time=rt)
            for policy in ("static", "continuous")}


# --- 17's interview: a P99 ITL tail from long prompts among chat streams ---------------------

@serves("17.11")
def itl_tail_trace(chunk_tokens: int | None = None, *, decoders: int = 8,
                   decode_outputs: int = 500, long_prompts: int = 6,
                   long_prompt_tokens: int = ch17.LONG_CONTEXT_TOKENS,
                   first_long_s: float = 0.2, long_every_s: float = 0.4,
                   round_time=None) -> dict:
    """A generated trace for the ITL-tail interview question, on the scheduler simulator.

    ``decoders`` chat streams (one-token prompts, ``decode_outputs`` tokens each) decode from
    t = 0 while ``long_prompts`` prompts of ``long_prompt_tokens`` tokens arrive every
    ``long_every_s`` from ``first_long_s``; every request runs at once (no queueing). Whole
    prompts (continuous batching) or ``chunk_tokens`` chunks; Chapter 17's round time. Returns
    the streams' ITL mean, median, 99th percentile and max (seconds, numpy's linear
    percentile), the long prompts' mean TTFT and the Result.
    """
    chunk = None if chunk_tokens is None else v.tokens("chunk_tokens", chunk_tokens, minimum=1)
    d = v.count("decoders", decoders)
    g = v.tokens("decode_outputs", decode_outputs, minimum=2)
    n_long = v.count("long_prompts", long_prompts, minimum=0)
    p = v.tokens("long_prompt_tokens", long_prompt_tokens, minimum=1)
    first = v.nonnegative("first_long_s", first_long_s)
    every = v.nonnegative("long_every_s", long_every_s)
    rt = chapter17_round_time() if round_time is None else round_time
    streams = [Request(f"chat{i}", 0.0, 1, g) for i in range(d)]
    longs = [Request(f"long{j}", first + j * every, p, 1) for j in range(n_long)]
    kw = dict(max_running=d + max(n_long, 1), round_time=rt)
    if chunk is None:
        res = simulate(streams + longs, "continuous", **kw)
    else:
        res = simulate(streams + longs, "chunked", chunk_tokens=chunk, **kw)
    itl = np.concatenate([res.itl_s[r.id] for r in streams])
    ttft = [res.ttft_s[r.id] for r in longs]
    return {"itl_mean_s": float(itl.mean()), "itl_p50_s": float(np.percentile(itl, 50)),
            "itl_p99_s": float(np.percentile(itl, 99)), "itl_max_s": float(itl.max()),
            "intervals": len(itl),
            "long_ttft_mean_s": float(np.mean(ttft)) if ttft else math.nan, "result": res}


@serves("8.1.1")
def stalled_interval_positions(output_tokens: int, inserted: int) -> list[int]:
    """1-based output intervals that ``inserted`` prefills stretch, spread evenly over G - 1.

    One insertion lands in the middle interval (128 of 255 for 256 tokens, as the ledger's
    8.1.1 entry); more are spaced evenly; at most one per interval.
    """
    gaps = v.tokens("output_tokens", output_tokens, minimum=1) - 1
    n = min(v.tokens("inserted", inserted), gaps)
    # floor((i + 1)(gaps + 1) / (n + 1)): strictly increasing within 1..gaps for n <= gaps
    return [(i + 1) * (gaps + 1) // (n + 1) for i in range(n)]


@serves("8.1.1")
def timeline_scenario(label: str, queue_s: float, prefill_s: float, interval_s: float,
                      output_tokens: int, *, stall_s: float = 0.0,
                      stalled_intervals=()) -> dict:
    """One Figure 8-2 timeline: emission times from ``calc.token_emission_times`` with each
    listed output interval (1-based) stretched by ``stall_s`` (an inserted prefill, 8.1.1).

    Returns the dict ``request_timeline_figure`` draws: label, queue_s, prefill_s,
    token_times_s and stalls [(start_s, duration_s)].
    """
    v.instance("label", label, str, "a text label")
    positions = sorted(v.tokens(f"stalled_intervals[{i}]", j, minimum=1)
                       for i, j in enumerate(v.sequence("stalled_intervals", stalled_intervals,
                                                        min_len=0)))
    first = positions[0] if positions else 1
    times = token_emission_times(queue_s, prefill_s, interval_s, output_tokens,
                                 stall_s=stall_s if positions else 0.0,
                                 stalled_interval=first)
    if len(positions) > 1:            # further stalls: shift every later token
        shifted = np.asarray(times)
        for j in positions[1:]:
            shifted[j:] += stall_s
        times = shifted.tolist()
    stalls = [(times[j - 1] + interval_s, stall_s) for j in positions]
    return {"label": label, "queue_s": queue_s, "prefill_s": prefill_s, "token_times_s": times,
            "stalls": stalls}
