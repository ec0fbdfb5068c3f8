"""8.1 explorers: one request's timeline against its deadline, and the instance's memory budget.

``RequestTimelinePanel``: queue time, prefill time, output interval, output length and inserted
prefills -> TTFT, longest interval, request time vs the 7 s deadline (Figure 8-2 live).
``MemoryBudgetPanel``: model, KV precision, prompt/output length, block size, KV budget and
instance size -> M_w + M_KV + rest <= C and how many requests' reserved KV fits (8.1.2).
"""

from __future__ import annotations

import numpy as np

from companion import calc, specs, units
from companion.figures.ch08_lifecycle import budget_traces, timeline_layout, timeline_traces
from companion.formulas import batching as bt
from companion.formulas import serving
from companion.explorers.base import Control, Panel, View

__all__ = ["RequestTimelinePanel", "MemoryBudgetPanel", "timeline_scenario",
           "stalled_interval_positions"]


def stalled_interval_positions(output_tokens: int, inserted: int) -> list[int]:
    """1-based output intervals that ``inserted`` prefills stretch, spread evenly over G - 1.

    One insertion lands in the middle interval (128 of 255 for 256 tokens, as the ledger's
    8.1.1 entry); more are spaced evenly; at most one per interval.
    """
    gaps = output_tokens - 1
    n = min(inserted, gaps)
    # floor((i + 1)(gaps + 1) / (n + 1)): strictly increasing within 1..gaps for n <= gaps
    return [(i + 1) * (gaps + 1) // (n + 1) for i in range(n)]


def timeline_scenario(label: str, queue_s: float, prefill_s: float, interval_s: float,
                      output_tokens: int, *, stall_s: float = 0.0,
                      stalled_intervals=()) -> dict:
    """One Figure 8-2 timeline: emission times from ``calc.token_emission_times`` with each
    listed output interval (1-based) stretched by ``stall_s`` (an inserted prefill, 8.1.1).

    Returns the dict ``request_timeline_figure`` draws: label, queue_s, prefill_s,
    token_times_s and stalls [(start_s, duration_s)].
    """
    positions = sorted(stalled_intervals)
    first = positions[0] if positions else 1
    times = calc.token_emission_times(queue_s, prefill_s, interval_s, output_tokens,
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


class RequestTimelinePanel(Panel):
    """Figure 8-2 live: how queueing, prefill, the output interval and inserted prefills move
    the first and the last token against the deadline (8.1.1, 8.1.3)."""

    title = "One request's timeline against its deadline (8.1.1, Figure 8-2)"
    controls = (
        Control("queue_ms", "queue before admission (ms)", "float", bt.QUEUE_S / units.ms,
                0.0, 3000.0, 10.0),
        Control("prefill_ms", "prefill + first token (ms)", "float", bt.PREFILL_S / units.ms,
                5.0, 3000.0, 1.0),
        Control("interval_ms", "output interval (ms)", "float", bt.CLIENT_ITL_S / units.ms,
                5.0, 100.0, 0.5),
        Control("output_tokens", "output (tokens)", "int", 256, 1, 1024, 1),
        Control("inserted_prefills", "other requests' prefills inserted", "int", 0, 0, 40, 1),
        Control("inserted_prefill_ms", "each inserted prefill (ms)", "float",
                bt.PREFILL_S / units.ms, 5.0, 3000.0, 1.0),
        Control("deadline_s", "deadline (s)", "float", serving.DEADLINE_S, 1.0, 30.0, 0.5),
    )
    base_layout = timeline_layout(["alone", "with inserted prefills"])

    def compute(self, *, queue_ms, prefill_ms, interval_ms, output_tokens, inserted_prefills,
                inserted_prefill_ms, deadline_s) -> View:
        q, p, itl = queue_ms * units.ms, prefill_ms * units.ms, interval_ms * units.ms
        stall = inserted_prefill_ms * units.ms
        positions = stalled_interval_positions(output_tokens, inserted_prefills)
        alone = timeline_scenario("alone", q, p, itl, output_tokens)
        busy = timeline_scenario("with inserted prefills", q, p, itl, output_tokens,
                                 stall_s=stall, stalled_intervals=positions)
        times = busy["token_times_s"]
        # t_G - t_a in closed form (equal to calc.request_time_s(times), without re-validating
        # every emission time): each applied insertion adds its prefill time once
        total = calc.lifecycle_request_time_s(q, p, itl, output_tokens,
                                              stall_s=stall * len(positions))
        intervals = calc.inter_token_intervals(times)
        longest = max(intervals) if intervals else 0.0
        base_total = calc.lifecycle_request_time_s(q, p, itl, output_tokens)
        fit = calc.insertable_prefills(q, p, itl, output_tokens, deadline_s, stall)
        numbers = {
            "ttft_s": calc.ttft_s(times),
            "request_time_s": total,
            "longest_interval_ms": longest / units.ms,
            "margin_s": deadline_s - total,
            "meets_deadline": total <= deadline_s,
            "inserted_prefills_applied": len(positions),
            "prefills_that_still_fit": fit,
        }
        traces, _ = timeline_traces([alone, busy], deadline_s)
        verdict = "meets" if numbers["meets_deadline"] else "<b>misses</b>"
        text = (f"TTFT: <b>{numbers['ttft_s']:.3f} s</b><br>"
                f"{output_tokens - 1} output intervals, longest "
                f"{numbers['longest_interval_ms']:.1f} ms<br>"
                f"request time: <b>{total:.2f} s</b> ({verdict} the {deadline_s:g} s deadline, "
                f"margin {numbers['margin_s']:+.2f} s)<br>"
                f"alone it takes {base_total:.2f} s; inserted prefills of "
                f"{inserted_prefill_ms:g} ms that still fit: {numbers['prefills_that_still_fit']}")
        return View(numbers=numbers, traces=traces, text=text)


# --- 8.1.2 memory budget ------------------------------------------------------------------------

MODELS = {m.name: m for m in (specs.QWEN3_8B, specs.LLAMA_8B, specs.LLAMA_70B)}
# bytes per stored K/V value, block metadata included (8.4.2: q8_0 is 34/32, q4_0 18/32)
KV_PRECISIONS = {"BF16": 2.0, "FP8": 1.0, "q8_0": calc.bits_per_value("q8_0") / 8,
                 "q4_0": calc.bits_per_value("q4_0") / 8}
_SWEEP_PROMPTS = np.unique(np.geomspace(128, 131072, 41).astype(int) // 16 * 16)


class MemoryBudgetPanel(Panel):
    """M_w + M_KV + M_a + M_u <= C for the chapter's 32 GiB instance, and how many requests'
    end-of-generation KV fits in the KV pool (8.1.2)."""

    title = "Memory budget and KV capacity (8.1.2)"
    controls = (
        Control("model", "model", "choice", specs.QWEN3_8B.name,
                options={name: name for name in MODELS}),
        Control("kv_precision", "KV format", "choice", 2.0, options=KV_PRECISIONS),
        Control("prompt_tokens", "prompt (tokens)", "int", 2048, 16, 131072, 16),
        Control("output_tokens", "output (tokens)", "int", 256, 1, 8192, 1),
        Control("block_tokens", "KV block (tokens)", "int", 16, 1, 256, 1),
        Control("kv_budget_gib", "KV pool M_KV (GiB)", "float",
                bt.KV_BUDGET_BYTES / units.GiB, 0.5, 80.0, 0.5),
        Control("instance_gib", "instance memory C (GiB)", "float",
                bt.INSTANCE_MEM_BYTES / units.GiB, 8.0, 89.0, 0.5),
    )
    base_layout = {
        "height": 560, "barmode": "stack",
        "xaxis": {"title": {"text": "memory (GiB)"}, "domain": [0, 1], "anchor": "y"},
        "yaxis": {"domain": [0.68, 1.0], "anchor": "x"},
        "xaxis2": {"title": {"text": "prompt length (tokens)"}, "type": "log", "anchor": "y2"},
        "yaxis2": {"title": {"text": "requests that fit"}, "domain": [0.0, 0.48],
                   "anchor": "x2", "rangemode": "tozero"},
        "legend": {"orientation": "h", "y": -0.18},
    }

    def compute(self, *, model, kv_precision, prompt_tokens, output_tokens, block_tokens,
                kv_budget_gib, instance_gib) -> View:
        m = MODELS[model]
        pool = kv_budget_gib * units.GiB
        kw = dict(block_tokens=block_tokens, bytes_per_value=kv_precision)
        budget = calc.memory_budget(instance_gib * units.GiB, m.weight_bytes, pool)
        row = calc.kv_capacity_row(m, pool, prompt_tokens, output_tokens, **kw)
        in_use = row["fit"] * row["final_kv_bytes"]
        traces, _ = budget_traces([(f"instance ({instance_gib:g} GiB)", budget)], [in_use])
        reserved = [calc.max_concurrent(pool, m, int(p), output_tokens, **kw)
                    for p in _SWEEP_PROMPTS]
        at_prefill = [int(pool // calc.kv_bytes(m, int(p), **kw)) for p in _SWEEP_PROMPTS]
        xs = _SWEEP_PROMPTS
        traces += [
            {"type": "scatter", "x": xs, "y": np.asarray(reserved), "mode": "lines", "xaxis": "x2",
             "yaxis": "y2", "name": "fit, reserving KV for the whole output",
             "line": {"shape": "hv", "color": "#55a868"}},
            {"type": "scatter", "x": xs, "y": np.asarray(at_prefill), "mode": "lines",
             "xaxis": "x2",
             "yaxis": "y2", "name": "fit if sized at prefill (runs out mid-generation)",
             "line": {"shape": "hv", "dash": "dot", "color": "#8c8c8c"}},
            {"type": "scatter", "x": [prompt_tokens], "y": [row["fit"]], "mode": "markers",
             "xaxis": "x2", "yaxis": "y2", "name": "this setting",
             "marker": {"size": 11, "color": "#0b3d91"}},
        ]
        per_token = calc.kv_bytes_per_token(m, kv_precision)
        numbers = {
            "kv_per_token_KiB": per_token / units.KiB,
            "after_prefill_MiB": row["prefill_kv_bytes"] / units.MiB,
            "held_tokens": row["computed_tokens"],
            "allocated_tokens": row["allocated_tokens"],
            "reserved_MiB": row["final_kv_bytes"] / units.MiB,
            "requests_that_fit": row["fit"],
            "fit_if_sized_at_prefill": row["fit_if_sized_at_prefill"],
            "those_at_the_end_MiB": row["final_bytes_if_sized_at_prefill"] / units.MiB,
            "weights_GiB": m.weight_bytes / units.GiB,
            "left_for_activations_GiB": budget.slack_bytes / units.GiB,
        }
        fits = "fits" if budget.fits else "<b>does not fit</b>"
        text = (f"<b>{m.name}</b>, KV {per_token / units.KiB:,.1f} KiB per token<br>"
                f"after prefill {numbers['after_prefill_MiB']:,.0f} MiB; holds "
                f"{row['computed_tokens']:,} tokens at the end -> {row['allocated_tokens']:,} in "
                f"{block_tokens}-token blocks = <b>{numbers['reserved_MiB']:,.0f} MiB</b><br>"
                f"fit in {kv_budget_gib:g} GiB: <b>{row['fit']}</b> (sized at prefill: "
                f"{row['fit_if_sized_at_prefill']}, which would grow to "
                f"{numbers['those_at_the_end_MiB']:,.0f} MiB)<br>"
                f"weights {numbers['weights_GiB']:.1f} GiB + KV {kv_budget_gib:g} GiB in "
                f"{instance_gib:g} GiB: {fits}, "
                f"{numbers['left_for_activations_GiB']:+.1f} GiB left for activations/graphs")
        return View(numbers=numbers, traces=traces, text=text)
