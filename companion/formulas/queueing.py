"""Where 17 §8's pool sizing stops holding: a pool sized by dividing mean demand by capacity
runs at 100% of its capacity when the division comes out whole, and a pool that busy queues
without bound. The fuller model treats a prefill pool as c servers, one prompt at a time each,
fed by Poisson arrivals with exponentially distributed service (an M/M/c queue: the chapter
gives only a mean prompt, and exponential prompt lengths are the standard, somewhat
pessimistic stand-in for their spread that keeps a closed form). Erlang's C formula (Erlang
1917; any queueing text, e.g. Gross and Harris, "Fundamentals of Queueing Theory", ch. 2)
gives the wait, and the wait plus the request's own service (its time in the pool, which is
its TTFT) has a closed-form tail too:

  P(wait > 0) = C(c, a),  P(wait > t) = C(c, a) exp(-(c mu - lambda) t),
  mean wait = C(c, a) / (c mu - lambda),
  P(wait + service > t) = (1 - C) e^(-mu t) + C [e^(-theta t) + theta e^(-mu t)
                          (1 - e^(-(theta - mu) t)) / (theta - mu)],  theta = c mu - lambda,

with offered load a = lambda / mu (in servers) and C computed through Erlang's B recursion (the
last line: an exponential service added to a wait that is zero with probability 1 - C and
exponential at rate theta otherwise). A pool is sized by a percentile of that total time.
``companion.sim.queueing.pool_run`` simulates the same pool for the tests.

The same closed forms compare a fleet of N GPUs shared with chunked prefill against the same N
GPUs split into a prefill and a decode pool (17 §8's goodput claim): ``fleet_goodput``.
"""

from __future__ import annotations

import math

from companion import validate as v
from companion.chapters import ch17
from companion.formulas.args import hardware_arg as _hardware
from companion.formulas.args import model_arg as _model
from companion.formulas.core import decode_step_time
from companion.formulas.communication import kv_layered_transfer
from companion.formulas.parallelism import kv_transfer_s, nvlink_one_way_bytes_per_s
from companion.formulas.performance import (chunked_prefill_trade, prefill_compute_s,
                                            tp_kv_capacity)
from companion.serves import serves
from companion.specs import H100_SXM, LLAMA_8B, Hardware, Model

__all__ = ["erlang_c", "pool_wait", "pool_time_tail", "prefill_pool_for_ttft", "FLEET_LAYOUTS",
           "fleet_goodput", "fleet_slo_rate", "best_split"]


@serves("17.8")
def erlang_c(servers: int, offered_load: float) -> float:
    """Probability that an arrival waits in an M/M/c queue: Erlang's C formula (17 §8, fuller).

    B(0) = 1, B(k) = a B(k-1) / (k + a B(k-1)) (Erlang B), C = c B / (c - a (1 - B)).
    1.0 when the load reaches the servers (a >= c: the queue never empties). M/M/1: C = rho;
    two servers at a = 1: 1/3.
    """
    c = v.count("servers", servers)
    a = v.nonnegative("offered_load", offered_load)
    if a >= c:
        return 1.0
    b = 1.0
    for k in range(1, c + 1):
        b = a * b / (k + a * b)
    return c * b / (c - a * (1.0 - b))


def _time_tail(lam: float, service: float, servers: int, wait_prob: float, t: float) -> float:
    """P(wait + service > t) in a stable M/M/c pool whose P(wait > 0) is ``wait_prob``.

    Service ~ Exp(mu); the wait is 0 with probability 1 - C and Exp(theta) otherwise, theta =
    c mu - lambda; the sum of the two exponentials has the tail e^(-theta t) + theta e^(-mu t)
    (1 - e^(-d t)) / d with d = theta - mu (t e^(-mu t) theta at d = 0).
    """
    if t <= 0.0:
        return 1.0
    mu = 1.0 / service
    theta = servers * mu - lam
    d = theta - mu
    x = d * t
    if x == 0.0:
        mix = theta * t * math.exp(-mu * t)
    elif abs(x) > 1.0:                      # no cancellation: the difference of the two decays
        mix = theta * (math.exp(-mu * t) - math.exp(-theta * t)) / d
    else:                                   # expm1 keeps the small-d case exact
        mix = theta * math.exp(-mu * t) * (-math.expm1(-x)) / d
    tail = (1.0 - wait_prob) * math.exp(-mu * t) + wait_prob * (math.exp(-theta * t) + mix)
    return min(1.0, max(0.0, tail))


def _time_percentile(lam: float, service: float, servers: int, wait_prob: float,
                     tail: float) -> float:
    """The t with P(wait + service > t) = ``tail`` (bisection; the tail falls as t grows)."""
    if tail >= 1.0:
        return 0.0
    if tail <= 0.0:
        return math.inf
    lo, hi = 0.0, service
    while _time_tail(lam, service, servers, wait_prob, hi) > tail:
        lo, hi = hi, 2.0 * hi
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if _time_tail(lam, service, servers, wait_prob, mid) > tail:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-12 * hi:
            break
    return hi


@serves("17.8")
def pool_wait(arrival_rate_per_s: float, mean_service_s: float, servers: int, *,
              percentile: float = 90.0) -> dict:
    """Queueing wait and time in an M/M/c pool: utilization, P(wait), mean and a percentile of
    the wait, and mean and a percentile of the time in the pool, wait plus service (17 §8).

    a = lambda x service; rho = a / c; mean wait = C / (c mu - lambda); the q-th percentile of
    the wait solves C exp(-(c mu - lambda) t) = 1 - q/100 (0 when C is already below
    1 - q/100); that of the time in the pool solves ``pool_time_tail`` = 1 - q/100. Unstable
    (rho >= 1): every wait grows without bound, reported as inf.

    >>> out = pool_wait(100, 0.2, 22)                  # 17 §8's prefill pool, 22 groups
    >>> round(out["percentile_wait_s"] * 1e3), round(out["percentile_time_s"] * 1e3)
    (174, 546)
    """
    lam = v.positive("arrival_rate_per_s", arrival_rate_per_s)
    s = v.positive("mean_service_s", mean_service_s)
    c = v.count("servers", servers)
    q = v.number("percentile", percentile, at_least=0.0, at_most=100.0)
    a = lam * s
    rho = a / c
    if rho >= 1.0:
        return dict(utilization=rho, wait_prob=1.0, mean_wait_s=math.inf,
                    percentile_wait_s=math.inf, mean_time_s=math.inf,
                    percentile_time_s=math.inf, stable=False)
    prob = erlang_c(c, a)
    drain = c / s - lam                    # c mu - lambda, per second
    tail = 1.0 - q / 100.0
    pct = 0.0 if prob <= tail else (math.log(prob / tail) / drain if tail > 0 else math.inf)
    return dict(utilization=rho, wait_prob=prob, mean_wait_s=prob / drain,
                percentile_wait_s=pct, mean_time_s=prob / drain + s,
                percentile_time_s=_time_percentile(lam, s, c, prob, tail), stable=True)


@serves("17.8")
def pool_time_tail(arrival_rate_per_s: float, mean_service_s: float, servers: int,
                   time_s: float) -> float:
    """P(wait + service > t) in an M/M/c pool: the share of requests whose time in the pool
    (a prefill pool's TTFT) exceeds ``time_s`` (17 §8, fuller); 1.0 when the pool is unstable.

    (1 - C) e^(-mu t) + C [e^(-theta t) + theta e^(-mu t) (1 - e^(-(theta - mu) t)) /
    (theta - mu)], theta = c mu - lambda. One server is M/M/1, whose time in system is
    exponential at rate mu - lambda: 4 req/s on a 0.2 s server exceed 0.5 s with e^(-0.5).

    >>> round(pool_time_tail(4, 0.2, 1, 0.5), 4)
    0.6065
    """
    lam = v.positive("arrival_rate_per_s", arrival_rate_per_s)
    s = v.positive("mean_service_s", mean_service_s)
    c = v.count("servers", servers)
    t = v.nonnegative("time_s", time_s)
    a = lam * s
    if a >= c:
        return 1.0
    return _time_tail(lam, s, c, erlang_c(c, a), t)


@serves("17.8")
def prefill_pool_for_ttft(request_rate_per_s: float, mean_prompt_tokens: float, *,
                          prefill_tok_per_s_per_group: float = ch17.PREFILL_TOK_PER_S_PER_GROUP,
                          ttft_p90_target_s: float = ch17.TTFT_P90_TARGET_S,
                          percentile: float = 90.0, max_groups: int = 100_000) -> dict:
    """Prefill groups sized by the chapter's division and by a TTFT percentile (17 §8).

    A group prefills one prompt at a time at the given tok/s, so a mean prompt takes
    service = prompt / capacity. The chapter's count is ceil(lambda x service). The fuller
    count is the smallest c of an M/M/c pool whose ``percentile`` of the time in the pool,
    wait plus prefill (the TTFT), is within the target: ``pool_time_tail`` at the target <=
    1 - q/100. No pool size can beat the prefill's own percentile, service x ln(1 / (1 -
    q/100)) (``service_percentile_s``): groups is None when that exceeds the target. Returns
    service_s, offered_load, service_percentile_s, chapter_groups and its pool (``chapter``,
    ``pool_wait``), groups and its pool (``fuller``).

    >>> out = prefill_pool_for_ttft(100, 2000)          # 17 §8's traffic, p90 under 500 ms
    >>> out["chapter_groups"], out["groups"], round(out["fuller"]["percentile_time_s"] * 1e3)
    (20, 23, 498)
    """
    lam = v.positive("request_rate_per_s", request_rate_per_s)
    prompt = v.positive("mean_prompt_tokens", mean_prompt_tokens)
    cap = v.positive("prefill_tok_per_s_per_group", prefill_tok_per_s_per_group)
    target = v.positive("ttft_p90_target_s", ttft_p90_target_s)
    top = v.count("max_groups", max_groups)
    percentile = v.number("percentile", percentile, at_least=0.0, at_most=100.0)
    service = prompt / cap
    load = lam * service
    chapter_groups = max(1, math.ceil(load - 1e-9))
    tail = 1.0 - percentile / 100.0
    alone = service * math.log(1.0 / tail) if tail > 0 else math.inf
    groups, fuller = None, None
    if alone < target:
        c = max(1, math.floor(load) + 1)            # the fewest that are stable
        b = 1.0
        for k in range(1, c + 1):                   # Erlang B up to c, then one step per c
            b = load * b / (k + load * b)
        while c <= top:
            prob = c * b / (c - load * (1.0 - b))
            if _time_tail(lam, service, c, prob, target) <= tail:
                groups, fuller = c, pool_wait(lam, service, c, percentile=percentile)
                break
            c += 1
            b = load * b / (c + load * b)
    return dict(service_s=service, offered_load=load, service_percentile_s=alone,
                chapter_groups=chapter_groups,
                chapter=pool_wait(lam, service, chapter_groups, percentile=percentile),
                groups=groups, fuller=fuller)


# --- goodput: N GPUs shared with chunked prefill, or split into two pools --------------------

FLEET_LAYOUTS = ("shared", "split")

# how the split's KV hop travels: the whole cache after the prefill (the chapter's reading), or
# layer by layer while the prefill still runs (``kv_layered_transfer``: only its exposed tail)
_FLEET_HOPS = ("whole", "layered")


def _decode_batch(per_gpu_rate: float, decode_tokens: int, round_s, cap: int):
    """The least whole batch B with B >= rate x decode tokens x round_s(B) (Little's law: a
    stream holds its place for that many rounds), iterated up from 1; None past ``cap``.
    ``round_s(B)`` returns the mean round (s), or None where no round is possible."""
    b = 1
    while True:
        r = round_s(b)
        if r is None:
            return None, None
        need = max(1, math.ceil(per_gpu_rate * decode_tokens * r - 1e-9))
        if need <= b:
            return b, r
        if need > cap:
            return None, None
        b = need


@serves("17.8")
def fleet_goodput(request_rate_per_s: float, gpus: int, *, layout: str = "shared",
                  prefill_gpus: int | None = None, model: Model = LLAMA_8B,
                  hardware: Hardware = H100_SXM,
                  mean_prompt_tokens: int = ch17.MEAN_PROMPT_TOKENS,
                  output_tokens: int = ch17.MEAN_OUTPUT_TOKENS,
                  ttft_target_s: float = ch17.TTFT_P90_TARGET_S,
                  itl_target_s: float = ch17.ITL_TARGET_S,
                  link_bytes_per_s: float | None = None, kv_hop: str = "whole",
                  efficiency: float = ch17.PREFILL_EFFICIENCY, percentile: float = 90.0) -> dict:
    """Goodput of ``gpus`` GPUs at a Poisson request rate: the requests per second that meet
    both the TTFT and the ITL target (17 §8's measure, after DistServe), an analytic model.

    Each request brings an exponentially distributed prompt of mean n (as in
    ``prefill_pool_for_ttft``) and ``output_tokens`` outputs. Prefill costs
    ``prefill_compute_s`` per token; a decode round costs ``decode_step_time`` at the GPU's
    batch B, which holds each stream for its G - 1 rounds after the first token (Little's law,
    solved for the least whole B; a stream's context is taken at n + G/2, the KV limit at
    ``tp_kv_capacity`` for n + G tokens). Waiting prompts form one first-come-first-served
    queue, so each stage is an M/M/c pool (``pool_time_tail``).

    - "shared": every GPU decodes its streams and adds one prefill chunk per round, the
      chapter's §6 iteration (``chunked_prefill_trade``); the chunk is the largest that keeps
      the round within the ITL target (the token budget), so ITL holds by construction and a
      prompt of n tokens takes n / c rounds. TTFT: the time in an M/M/N pool of that service.
    - "split": ``prefill_gpus`` GPUs prefill whole prompts, the rest decode. The prefill GPU
      streams token 1 (the prompt's last position yields it), so TTFT is the time in an M/M/P
      pool; the KV hop of a mean prompt (``link_bytes_per_s``, default NVLink one way) delays
      token 2: the first inter-token gap is the hop plus a decode step, and it must stay
      within the ITL target like every later step. ``kv_hop`` "whole" ships the cache after
      the prefill (``kv_transfer_s``, the chapter's reading); "layered" ships it layer by layer
      during the prefill, leaving only ``kv_layered_transfer``'s exposed tail.

    A request meets its TTFT target with the pool's probability; ITL is met by every stream or
    by none (one mean batch per GPU). goodput = rate x P(TTFT <= target) when ITL holds and the
    queues are stable, else 0. Returns goodput_per_s, ttft_met_share, ttft_percentile_s (the
    ``percentile``-th TTFT), itl_met, slo_met (TTFT percentile and ITL both within target),
    stable, decode_batch, step_s, round_s (the longest round a stream sees), first_gap_s (the
    first inter-token gap: the hop plus a step when split, a round when shared), chunk_tokens
    (shared), prefill_service_s, prefill_utilization, hop_s, prefill_gpus, decode_gpus and
    limit (what fails first, "" when nothing does).

    >>> low = fleet_goodput(1.0, 2)                         # a trickle: both targets hold
    >>> round(low["goodput_per_s"], 2), low["itl_met"]
    (1.0, True)
    """
    lam = v.positive("request_rate_per_s", request_rate_per_s)
    n_gpus = v.count("gpus", gpus)
    kind = v.choice("layout", layout, FLEET_LAYOUTS)
    m = _model(model)
    hw = _hardware(hardware)
    n = v.tokens("mean_prompt_tokens", mean_prompt_tokens, minimum=1)
    g = v.tokens("output_tokens", output_tokens, minimum=2)
    ttft_target = v.positive("ttft_target_s", ttft_target_s)
    itl_target = v.positive("itl_target_s", itl_target_s)
    e = v.probability("efficiency", efficiency, open_low=True)
    q = v.number("percentile", percentile, at_least=0.0, at_most=100.0)
    link = (nvlink_one_way_bytes_per_s(hw) if link_bytes_per_s is None
            else v.positive("link_bytes_per_s", link_bytes_per_s))
    hop_kind = v.choice("kv_hop", kv_hop, _FLEET_HOPS)
    if kind == "split":
        if n_gpus < 2:
            raise ValueError(f"gpus: a split fleet needs at least 2 GPUs, got {gpus!r}")
        p = v.count("prefill_gpus", n_gpus // 2 if prefill_gpus is None else prefill_gpus)
        if p >= n_gpus:
            raise ValueError(f"prefill_gpus: must leave a decode GPU of the {n_gpus}, got {p}")
    else:
        p = n_gpus
    context = n + g // 2
    cap = tp_kv_capacity(m, hw, context_tokens=n + g)["max_sequences"]
    per_token = prefill_compute_s(m, hw, 1, efficiency=e)
    out = dict(rate_per_s=lam, layout=kind, gpus=n_gpus, prefill_gpus=p,
               decode_gpus=n_gpus if kind == "shared" else n_gpus - p, goodput_per_s=0.0,
               ttft_met_share=0.0, ttft_percentile_s=math.inf, itl_met=False, slo_met=False,
               stable=False, decode_batch=None, step_s=None, round_s=None, first_gap_s=None,
               chunk_tokens=None,
               prefill_service_s=None, prefill_utilization=None, hop_s=0.0, limit="")

    def step(b):
        return decode_step_time(m, hw, b, context)

    if kind == "shared":
        per_gpu = lam / n_gpus
        found = {}

        def round_s(b):
            st = step(b)
            c = min(n, math.floor((itl_target - st) / per_token + 1e-9))
            while c >= 1 and st + prefill_compute_s(m, hw, c, efficiency=e) > itl_target:
                c -= 1
            if c < 1:
                found["limit"] = "decode step over the ITL target"
                return None
            trade = chunked_prefill_trade(m, hw, n, c, st, efficiency=e)
            service = n / c * trade["iteration_s"]
            busy = per_gpu * service
            if busy >= 1.0:
                found["limit"] = "prefill queue unstable"
                return None
            found.update(step=st, chunk=c, iteration=trade["iteration_s"], service=service,
                         busy=busy)
            return st + busy * trade["chunk_s"]

        batch, _ = _decode_batch(per_gpu, g - 1, round_s, cap)
        if batch is None:
            out["limit"] = found.get("limit") or "KV cache full"
            return out
        service = found["service"]
        out.update(decode_batch=batch, step_s=found["step"], round_s=found["iteration"],
                   first_gap_s=found["iteration"], chunk_tokens=found["chunk"])
    else:
        d = n_gpus - p
        service = prefill_compute_s(m, hw, n, efficiency=e)
        hop = (kv_transfer_s(m, n, link) if hop_kind == "whole" else
               kv_layered_transfer(m, hw, n, link, efficiency=e)["exposed_s"])
        out.update(hop_s=hop, prefill_service_s=service, prefill_utilization=lam * service / p)
        if lam * service >= p:
            out["limit"] = "prefill queue unstable"
            return out
        batch, st = _decode_batch(lam / d, g - 1, step, cap)
        if batch is None:
            out["limit"] = "KV cache full"
            return out
        # token 1 left with the prefill; token 2 waits for the hop, then a decode step
        out.update(decode_batch=batch, step_s=st, round_s=st, first_gap_s=hop + st)
        if hop + st > itl_target:
            out["limit"] = ("decode step over the ITL target" if st > itl_target else
                            "KV hop and first step over the ITL target")
            return out
    prob = erlang_c(p, lam * service)
    met = 1.0 - _time_tail(lam, service, p, prob, ttft_target)
    ttft_q = _time_percentile(lam, service, p, prob, 1.0 - q / 100.0)
    out.update(goodput_per_s=lam * met, ttft_met_share=met, ttft_percentile_s=ttft_q,
               itl_met=True, slo_met=ttft_q <= ttft_target, stable=True,
               prefill_service_s=service, prefill_utilization=lam * service / p)
    if not out["slo_met"]:
        out["limit"] = "TTFT percentile over its target"
    return out


@serves("17.8")
def fleet_slo_rate(gpus: int, *, layout: str = "shared", prefill_gpus: int | None = None,
                   tolerance_per_s: float = 0.01, **kw) -> float:
    """The highest request rate at which a fleet still meets both targets, the TTFT at its
    percentile and the ITL (``fleet_goodput``'s slo_met): DistServe's per-fleet goodput.

    Bisection over the rate, below the prefill stage's capacity (its GPUs over the mean
    prompt's prefill time), to ``tolerance_per_s``; ``kw`` goes to ``fleet_goodput``.
    """
    n_gpus = v.count("gpus", gpus)
    tol = v.positive("tolerance_per_s", tolerance_per_s)

    def ok(rate):
        return fleet_goodput(rate, n_gpus, layout=layout, prefill_gpus=prefill_gpus,
                             **kw)["slo_met"]

    probe = fleet_goodput(tol, n_gpus, layout=layout, prefill_gpus=prefill_gpus, **kw)
    if not probe["slo_met"]:
        return 0.0
    per_token = prefill_compute_s(kw.get("model", LLAMA_8B), kw.get("hardware", H100_SXM), 1,
                                  efficiency=kw.get("efficiency", ch17.PREFILL_EFFICIENCY))
    lo = tol
    hi = probe["prefill_gpus"] / (per_token * kw.get("mean_prompt_tokens",
                                                     ch17.MEAN_PROMPT_TOKENS))
    while hi - lo > tol:
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if ok(mid) else (lo, mid)
    return lo


@serves("17.8")
def best_split(gpus: int, **kw) -> dict:
    """The prefill : decode split of ``gpus`` GPUs with the highest ``fleet_slo_rate``: returns
    prefill_gpus, decode_gpus and slo_rate_per_s (ties go to the fewer prefill GPUs)."""
    n_gpus = v.count("gpus", gpus, minimum=2)
    best = None
    for p in range(1, n_gpus):
        rate = fleet_slo_rate(n_gpus, layout="split", prefill_gpus=p, **kw)
        if best is None or rate > best[1]:
            best = (p, rate)
    return dict(prefill_gpus=best[0], decode_gpus=n_gpus - best[0], slo_rate_per_s=best[1])
