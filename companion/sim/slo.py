"""17 §3's latency targets under load: TTFT and ITL percentiles of a simulated service against
a TTFT p90 and an ITL p99 target, and the two ways of adding a request's time up.

The chapter states the targets ("TTFT p90 under ~500 ms, ITL p99 under a few tens of ms") and
checks them only without contention. ``slo_run`` puts a Poisson stream of the chapter's request
(a 2,048-token prompt, 250 output tokens, the 8B on the H100 SXM, prefill at 50% of peak)
through the companion's service simulator (``companion.sim.load.run_service``: continuous
batching by default, so a prefill stalls the running decodes of its round) and reads the
percentiles off the emitted tokens. It is the companion's own simulation, not a chapter result.

A request with G output tokens has its first token at TTFT and G - 1 intervals after it, so its
time is TTFT + (G - 1) x mean ITL (8.1.3); 17 §3 budgets TTFT + G x ITL, one interval more.
``slo_run`` reports both beside the simulated arrival-to-last-token time.
"""

from __future__ import annotations

import numpy as np

from companion import validate as v
from companion.chapters import ch17
from companion.serves import serves
from companion.sim.load import nearest_rank_percentile, run_service
from companion.sim.round_time import RooflineRoundTime
from companion.sim.workload import RequestShape, poisson_arrivals, workload
from companion.specs import H100_SXM, LLAMA_8B, Hardware, Model

__all__ = ["SLO_POLICIES", "SLO_PERCENTILES", "SLO_CHUNK_TOKENS", "slo_run", 
           ]

SLO_POLICIES = ("continuous", "chunked")
SLO_PERCENTILES = (50, 90, 99)
# chunk size of the "chunked" policy (assumed: the chapter's §6 discusses chunks of a few
# hundred tokens); each round's token budget is one chunk plus one token per running decode
SLO_CHUNK_TOKENS = 512


@serves("17.3")
def slo_run(rate_per_s: float, *, ttft_target_s: float = ch17.TTFT_P90_TARGET_S,
            itl_target_s: float = ch17.ITL_TARGET_S, model: Model = LLAMA_8B,
            hardware: Hardware = H100_SXM, prompt_tokens: int = ch17.PROMPT_TOKENS,
            output_tokens: int = ch17.OUTPUT_TOKENS,
            prefill_efficiency: float = ch17.PREFILL_EFFICIENCY,
            policy: str = "continuous", chunk_tokens: int = SLO_CHUNK_TOKENS,
            n_requests: int = 200, max_running: int = 256, seed=0) -> dict:
    """A Poisson stream at ``rate_per_s`` against 17 §3's targets (TTFT p90, ITL p99).

    Each of ``n_requests`` requests has ``prompt_tokens`` in and ``output_tokens`` out; the KV
    pool is the card's memory less the weights and the chapter's 4 GB runtime reserve; rounds are timed by
    ``RooflineRoundTime`` with compute at ``prefill_efficiency`` of peak. ``policy``
    "continuous" runs each prompt's prefill whole in one round (next to the running decodes);
    "chunked" splits it into ``chunk_tokens`` pieces, one per round. Returns the
    ``ServiceResult`` (``result``), the sorted TTFTs and output intervals of the completed
    requests (``ttft_s``, ``itl_s``), their p50/p90/p99 (``ttft_pct``, ``itl_pct``: nearest
    rank), ``ttft_ok`` (p90 within its target), ``itl_ok`` (p99 within its target), ``slo_met``
    (both), and the mean request time three ways: ``measured_mean_s`` (arrival to last token),
    ``intervals_mean_s`` (TTFT + (G - 1) x mean ITL, which equals it) and ``chapter_mean_s``
    (TTFT + G x mean ITL, 17 §3's sum).
    """
    rate = v.positive("rate_per_s", rate_per_s)
    ttft_target = v.positive("ttft_target_s", ttft_target_s)
    itl_target = v.positive("itl_target_s", itl_target_s)
    v.instance("model", model, Model, "a companion.specs.Model")
    v.instance("hardware", hardware, Hardware, "a companion.specs.Hardware")
    prompt = v.tokens("prompt_tokens", prompt_tokens, minimum=1)
    g = v.tokens("output_tokens", output_tokens, minimum=2)
    efficiency = v.probability("prefill_efficiency", prefill_efficiency, open_low=True)
    policy = v.choice("policy", policy, SLO_POLICIES)
    n = v.count("n_requests", n_requests)
    running = v.count("max_running", max_running)
    chunk = v.tokens("chunk_tokens", chunk_tokens, minimum=1)
    chunking = (dict(chunk_tokens=chunk, token_budget=chunk + running) if policy == "chunked"
                else {})
    kv_budget = hardware.mem_bytes - model.weight_bytes - ch17.RUNTIME_RESERVE_BYTES
    if kv_budget <= 0:
        raise ValueError(f"model: {model.name} leaves no KV space on one {hardware.name}")
    wl = workload(poisson_arrivals(rate, n, seed=seed), RequestShape(prompt, g, 0, "chat"))
    result = run_service(wl, policy=policy, max_running=running, model=model,
                         hardware=hardware, kv_budget_bytes=kv_budget,
                         round_time=RooflineRoundTime(model, hardware, mfu=efficiency),
                         **chunking)
    done = np.nonzero(result.completed)[0]
    if done.size == 0:
        raise ValueError(f"n_requests: none of the {n} requests completed")
    ttft = np.sort(result.ttft_s[done])
    intervals = [np.diff(result.token_times_s(int(i))) for i in done]
    itl = np.sort(np.concatenate(intervals))
    ttft_pct = {f"p{q}": nearest_rank_percentile(ttft, q) for q in SLO_PERCENTILES}
    itl_pct = {f"p{q}": nearest_rank_percentile(itl, q) for q in SLO_PERCENTILES}
    mean_itl = np.array([x.mean() for x in intervals])
    emitted = result.emitted[done].astype(float)
    return dict(
        rate_per_s=rate, policy=policy, result=result, completed=int(done.size),
        ttft_s=ttft, itl_s=itl, ttft_pct=ttft_pct, itl_pct=itl_pct,
        ttft_target_s=ttft_target, itl_target_s=itl_target,
        ttft_ok=bool(ttft_pct["p90"] <= ttft_target), itl_ok=bool(itl_pct["p99"] <= itl_target),
        slo_met=bool(ttft_pct["p90"] <= ttft_target and itl_pct["p99"] <= itl_target),
        measured_mean_s=float(result.latency_s[done].mean()),
        intervals_mean_s=float((result.ttft_s[done] + (emitted - 1) * mean_itl).mean()),
        chapter_mean_s=float((result.ttft_s[done] + emitted * mean_itl).mean()),
    )
