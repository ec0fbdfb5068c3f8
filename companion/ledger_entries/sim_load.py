"""Ledger: numbers of 8.1.2 and 8.6.3 recomputed by running a simulated service
(``companion.sim.load``: arrivals, KV reservation at admission, the scheduler's rounds),
source="sim".

Only what follows from stated inputs is here. Section 8.6.2's throughputs and 8.6.3's energy per
qualifying result are measurements of a real service; the simulation does not reproduce them.
"""

from __future__ import annotations

import numpy as np

from companion.chapters import ch08
from companion.ledger import Entry, entry
from companion.sim.load import RequestShape, Workload, run_service, workload
from companion.sim.scheduler import StepPlusPrefillRoundTime
from companion.units import GiB, MiB

# 8.1.2: the short conversation (2048 in, 256 out) and a long request with independent context
# (8192 in, 256 out), offered many at once to a 12 GiB KV budget.
SHORT_OFFERED = 64          # more than fit: the reservation decides how many run together


def _peak_running(res) -> int:
    return int(res.running_at(res.round_start_s).max())


def _scheme_b(output_tokens: int):
    """8.6.3's scheme B as a service run: 16 long requests arrive together, their 6144-token
    prefix already cached; Experiment 8-1's measured prefill (32,768 new tokens in 2.04 s) and
    decode round (27.35 ms) time the rounds; continuous batching; 7 s deadline."""
    new_tokens = ch08.LONG_BATCH * (ch08.LONG_PROMPT_TOKENS - ch08.SHARED_PREFIX_TOKENS)
    rt = StepPlusPrefillRoundTime(decode_step_s=ch08.SHARED_ROUND_S,
                                  prefill_token_s=ch08.SHARED_PREFILL_S / new_tokens)
    shape = RequestShape(ch08.LONG_PROMPT_TOKENS, output_tokens, ch08.SHARED_PREFIX_TOKENS)
    wl = workload(np.zeros(ch08.LONG_BATCH), shape, deadline_s=ch08.DEADLINE_S)
    return run_service(wl, policy="continuous", max_running=ch08.LONG_BATCH, round_time=rt,
                       kv_budget_bytes=ch08.KV_BUDGET_BYTES)


def _generation_throughput(batch: int) -> float:
    """8.1.3: ``batch`` 2K requests decoding together, one round every Experiment 8-1 measured
    round time: tokens emitted per second from the end of their prefill to the last token."""
    step_s = ch08.EXP81_ROUND_S[ch08.EXP81_BATCHES.index(batch)]
    rt = StepPlusPrefillRoundTime(decode_step_s=step_s,
                                  prefill_token_s=ch08.PREFILL_ROUND_S / ch08.SHORT_PROMPT_TOKENS)
    wl = Workload(np.zeros(batch), ch08.SHORT_PROMPT_TOKENS, ch08.OUTPUT_TOKENS)
    first = run_service(wl, policy="continuous", max_running=batch, round_time=rt)
    window = (float(first.round_end_s[0]), float(first.round_end_s[-1]))
    return run_service(wl, policy="continuous", max_running=batch, round_time=rt,
                       window_s=window).output_tokens_per_s


# the sections its entries lie in (or under): the ledger computes this module only for them
SECTIONS = ("8.1", "8.6.3")


def entries() -> list[Entry]:
    out: list[Entry] = []
    S = "sim"

    # --- 8.1.3: generation throughput of a decoding batch ------------------------------------
    out += [
        entry("8.1.3/sim-load-throughput-b16", "8.1.3",
              "16 2K requests decoding together: tokens/s at 27.44 ms a round", "583", "tokens/s",
              _generation_throughput(16), source=S),
        entry("8.1.3/sim-load-throughput-b1", "8.1.3",
              "one request decoding alone: tokens/s at 26.26 ms a round", "38", "tokens/s",
              _generation_throughput(1), source=S),
    ]

    # --- 8.1.2: how many requests the reservation lets run together --------------------------
    short = run_service(Workload(np.zeros(SHORT_OFFERED), ch08.SHORT_PROMPT_TOKENS,
                                 ch08.OUTPUT_TOKENS),
                        policy="continuous", max_running=SHORT_OFFERED,
                        kv_budget_bytes=ch08.KV_BUDGET_BYTES)
    long = run_service(Workload(np.zeros(ch08.LONG_BATCH), ch08.LONG_PROMPT_TOKENS,
                                ch08.OUTPUT_TOKENS),
                       policy="continuous", max_running=ch08.LONG_BATCH,
                       kv_budget_bytes=ch08.KV_BUDGET_BYTES)
    out += [
        entry("8.1.2/sim-load-short-running", "8.1.2",
              "short requests running at once under 12 GiB (reserved at admission)", "37",
              "requests", _peak_running(short), source=S),
        entry("8.1.2/sim-load-long-running", "8.1.2",
              "long independent requests running at once under 12 GiB", "10", "requests",
              _peak_running(long), source=S),
    ]

    # --- 8.6.3: scheme B, simulated -----------------------------------------------------------
    b = _scheme_b(ch08.OUTPUT_TOKENS)
    peak_bytes = float(b.kv_used_blocks.max()) * b.kv_manager.block_bytes
    out += [
        entry("8.6.3/sim-load-B-total-s", "8.6.3", "B simulated: last request completes", "9.01",
              "s", float(np.max(b.finish_s)), source=S),
        entry("8.6.3/sim-load-B-decode-s", "8.6.3", "B simulated: first to last token", "6.97",
              "s", float(np.max(b.finish_s - b.first_token_s)), source=S),
        entry("8.6.3/sim-load-B-busy-s", "8.6.3", "B simulated: card occupied (busy seconds)",
              "9.01", "GPU-s", b.busy_s, source=S),
        entry("8.6.3/sim-load-B-memory-MiB", "8.6.3", "B simulated: peak KV blocks in use",
              "6048", "MiB", peak_bytes / MiB, source=S),
        entry("8.6.3/sim-load-B-memory-GiB", "8.6.3", "B simulated: peak KV in GiB", "5.91",
              "GiB", peak_bytes / GiB, source=S),
        entry("8.6.3/sim-load-B-good", "8.6.3", "B simulated: qualifying results under 7 s",
              "0", "requests", b.n_good, source=S,
              note="printed in words ('produces zero qualifying results')."),
    ]
    b16 = _scheme_b(ch08.SHORT_OUTPUT_VARIANT_TOKENS)
    out.append(entry("8.6.3/sim-load-16tok-B-total-s", "8.6.3",
                     "16 outputs: B simulated, last request completes", "2.45", "s",
                     float(np.max(b16.finish_s)), source=S))
    return out
