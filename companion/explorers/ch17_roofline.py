"""Chapter 17 §2-§3 explorers: the roofline, a request's time budget, head-of-line blocking.

``RooflinePanel`` (17 §2): hardware, model, batch, live context per sequence, prompt length and
weight / KV precision -> decode at batch 1, batched decode (weights only and with each
sequence's KV), and prefill placed on the log-log roofline; the readout lists every plotted
number. Self-contained: everything it shows is computed in ``compute`` from ``companion.calc``.
``RequestBudgetPanel`` (17 §3): TTFT + output x ITL, and where the time goes.
``HeadOfLinePanel`` (17 §3): a long prompt admitted whole into a running decode batch, on the
companion's scheduler simulator, beside the chapter's closed form.
"""

from __future__ import annotations

import numpy as np

from companion import calc, specs, units
from companion.chapters import ch17
from companion.figures.ch17_roofline import (hol_timeline_layout, hol_timeline_traces,
                                             request_budget_traces, roofline_layout,
                                             roofline_traces)
from companion.explorers.base import Control, Panel, View
# the same hardware presets and KV precisions as the §1/§4/§5 explorers
from companion.explorers.ch17_memory import _HARDWARE, _KV_BYTES, _hardware_choice
from companion.sim import scenarios
from companion.sim import scheduler as sched

__all__ = ["RooflinePanel", "RequestBudgetPanel", "HeadOfLinePanel"]

_MODELS = {m.name: m for m in (specs.LLAMA_8B, specs.LLAMA_70B, specs.LLAMA_405B,
                               specs.QWEN3_8B)}
# bytes per stored weight (17 §2's FP32 aside, BF16 as served, §10's INT8/FP8, a 4-bit format)
_WEIGHT_BYTES = {"FP32 (4 B)": 4.0, "BF16 (2 B)": 2.0, "INT8 / FP8 (1 B)": 1.0,
                 "INT4 (0.5 B)": 0.5}


def _model_choice():
    return Control("model", "model", "choice", specs.LLAMA_8B.name,
                   options={name: name for name in _MODELS})


class RooflinePanel(Panel):
    """17 §2 live: where decode (batch 1), batched decode and prefill sit on a card's roofline."""

    title = "Roofline (17 §2): decode, batched decode and prefill"
    controls = (
        _hardware_choice(),
        _model_choice(),
        Control("batch", "decode batch B (sequences)", "int", ch17.BATCH, 1, 1024, 1),
        Control("context_tokens", "live KV per sequence (tokens)", "int",
                calc.CH17_CHAT_LIVE_TOKENS, 0, ch17.LONGEST_CONTEXT_TOKENS, 100),
        Control("prompt_tokens", "prefill prompt (tokens)", "int", calc.CH17_PROMPT_TOKENS,
                16, 32_768, 16),
        Control("weight_bytes", "weight precision", "choice", 2.0, options=_WEIGHT_BYTES),
        Control("kv_bytes", "KV precision", "choice", 2.0, options=_KV_BYTES),
    )
    base_layout = dict(roofline_layout(), height=560)

    def compute(self, *, hardware, model, batch, context_tokens, prompt_tokens, weight_bytes,
                kv_bytes) -> View:
        hw, m = _HARDWARE[hardware], _MODELS[model]
        kw = dict(bytes_per_param=weight_bytes)
        i_b1 = calc.decode_intensity(m, 1, **kw)
        i_weights = calc.decode_intensity(m, batch, **kw)
        i_kv = calc.decode_intensity(m, batch, context_tokens, kv_bytes_per_value=kv_bytes, **kw)
        i_prefill = calc.prefill_intensity(m, prompt_tokens, **kw)
        points = [
            dict(label="decode, batch 1", **calc.roofline_point(i_b1, hw)),
            dict(label=f"decode, batch {batch}, weights only",
                 **calc.roofline_point(i_weights, hw)),
            dict(label=f"decode, batch {batch}, + {context_tokens:,} live KV tokens each",
                 **calc.roofline_point(i_kv, hw)),
            dict(label=f"prefill, {prompt_tokens:,}-token prompt",
                 **calc.roofline_point(i_prefill, hw)),
        ]
        split = calc.decode_time_split(m, hw, **kw)
        step = calc.decode_vs_context(m, hw, context_tokens, batch=batch,
                                      kv_bytes_per_value=kv_bytes, **kw)
        ridge = calc.ridge_point(hw)
        numbers = {"ridge_flop_per_byte": ridge,
                   "peak_TFLOPs": hw.peak_flops_per_s / units.TFLOP,
                   "bandwidth_TBs": hw.mem_bw_bytes_per_s / units.TB}
        keys = ("decode_b1", "decode_batch_weights_only", "decode_batch_with_kv", "prefill")
        for key, p in zip(keys, points):
            numbers[f"{key}_intensity"] = p["intensity_flop_per_byte"]
            numbers[f"{key}_TFLOPs"] = p["attainable_flops_per_s"] / units.TFLOP
            numbers[f"{key}_pct_of_peak"] = 100 * p["fraction_of_peak"]
        numbers.update({
            "decode_b1_step_ms": split["step_s"] / units.ms,
            "decode_b1_tok_s": split["tokens_per_s"],
            "wait_to_work": split["wait_to_work"],
            "decode_batch_step_ms": step["step_s"] / units.ms,
            "decode_batch_tok_s": step["tokens_per_s"],
            "batch_to_reach_ridge": ridge / i_b1,
        })
        rows = "".join(
            f"<tr><td>{p['label']}</td><td align='right'>{p['intensity_flop_per_byte']:,.3g}"
            f"</td><td align='right'>{p['attainable_flops_per_s'] / units.TFLOP:,.4g}</td>"
            f"<td align='right'>{100 * p['fraction_of_peak']:.3g}%</td><td>{p['bound']}</td>"
            "</tr>" for p in points)
        text = (f"<b>{m.name}</b> on <b>{hw.name}</b>: ridge <b>{ridge:,.0f}</b> FLOP/B "
                f"({numbers['peak_TFLOPs']:,.4g} TFLOP/s / {numbers['bandwidth_TBs']:.3g} TB/s)"
                "<table><tr><th>point</th><th>FLOP/B</th><th>TFLOP/s</th><th>of peak</th>"
                f"<th>roof</th></tr>{rows}</table>"
                f"batch-1 decode: {numbers['decode_b1_step_ms']:.3g} ms per token = "
                f"<b>{numbers['decode_b1_tok_s']:,.0f} tok/s</b>, waiting : working = "
                f"{numbers['wait_to_work']:,.0f} : 1<br>"
                f"batch {batch}: {numbers['decode_batch_step_ms']:.3g} ms per step = "
                f"{numbers['decode_batch_tok_s']:,.0f} tok/s; a batch of "
                f"~{numbers['batch_to_reach_ridge']:,.0f} reaches the ridge (weights only)")
        traces = roofline_traces(hw, points, reference=specs.H100_SXM)
        return View(numbers=numbers, traces=traces, text=text)


# --- §3: a request's time budget --------------------------------------------------------------

_OUTPUT_SWEEP = np.unique(np.geomspace(1, 4096, 40).astype(int))


class RequestBudgetPanel(Panel):
    """17 §3 live: TTFT (prefill at a fraction of peak) + output tokens x ITL, and its split."""

    title = "A request's time budget (17 §3): where the wall clock goes"
    controls = (
        _hardware_choice(),
        _model_choice(),
        Control("prompt_tokens", "prompt (tokens)", "int", calc.CH17_PROMPT_TOKENS, 16,
                32_768, 16),
        Control("output_tokens", "output (tokens)", "int", 250, 1, 4096, 1),
        Control("itl_ms", "ITL: one decode step (ms)", "float",
                sched.CH17_HOL_DECODE_STEP_S / units.ms, 1.0, 100.0, 0.1),
        Control("efficiency_pct", "prefill at % of peak", "float",
                100 * calc.CH17_PREFILL_EFFICIENCY, 5.0, 100.0, 1.0),
    )
    base_layout = {
        "height": 460, "barmode": "overlay",
        "xaxis": {"title": {"text": "time since the request starts (ms)"}, "domain": [0, 1],
                  "anchor": "y", "rangemode": "tozero"},
        "yaxis": {"domain": [0.72, 1.0], "anchor": "x", "showticklabels": False},
        "xaxis2": {"title": {"text": "output tokens"}, "type": "log", "anchor": "y2"},
        "yaxis2": {"title": {"text": "decode share of the request (%)"}, "domain": [0, 0.5],
                   "range": [0, 100], "anchor": "x2"},
        "legend": {"orientation": "h", "y": -0.25},
    }

    def compute(self, *, hardware, model, prompt_tokens, output_tokens, itl_ms,
                efficiency_pct) -> View:
        hw, m = _HARDWARE[hardware], _MODELS[model]
        itl = itl_ms * units.ms
        ttft = calc.prefill_compute_s(m, hw, prompt_tokens, efficiency=efficiency_pct / 100)
        budget = calc.request_budget(ttft, output_tokens, itl)
        shares = [100 * calc.request_budget(ttft, int(g), itl)["decode_share"]
                  for g in _OUTPUT_SWEEP]
        numbers = {"ttft_ms": ttft / units.ms, "decode_ms": budget["decode_s"] / units.ms,
                   "total_s": budget["total_s"], "decode_share_pct": 100 * budget["decode_share"],
                   "prefill_share_pct": 100 * budget["prefill_share"]}
        traces = request_budget_traces(budget)
        traces += [
            {"type": "scatter", "mode": "lines+markers", "x": _OUTPUT_SWEEP.tolist() + [None,
             output_tokens], "y": shares + [None, numbers["decode_share_pct"]],
             "name": "decode share vs output length (marker: this request)",
             "marker": {"size": [0] * len(shares) + [0, 12], "color": "#0b3d91"},
             "xaxis": "x2", "yaxis": "y2"},
        ]
        text = (f"TTFT = prefill of {prompt_tokens:,} tokens at {efficiency_pct:g}% of peak: "
                f"<b>{numbers['ttft_ms']:,.0f} ms</b><br>"
                f"decode = {output_tokens:,} x {itl_ms:g} ms = "
                f"<b>{numbers['decode_ms']:,.0f} ms</b><br>"
                f"total <b>{numbers['total_s']:.3g} s</b>, "
                f"<b>{numbers['decode_share_pct']:.0f}%</b> of it decode "
                f"(prefill {numbers['prefill_share_pct']:.0f}%)")
        return View(numbers=numbers, traces=traces, text=text)


# --- §3: head-of-line blocking on the scheduler simulator ------------------------------------

def hol_scenario(model, hardware, prompt_tokens: int, step_s: float, efficiency: float,
                 decode_batch: int) -> dict:
    """17 §3's stall twice: the closed form ``calc.head_of_line_stall`` and the companion's
    scheduler simulator (``sim.scenarios.long_prompt_interference``, continuous batching, the
    whole prompt admitted in one round with the decode steps).

    The simulated round holds the decode step *and* the prefill, so its worst ITL is step +
    stall, one step more than the closed form's stall.
    """
    closed = calc.head_of_line_stall(model, hardware, prompt_tokens, step_s,
                                     efficiency=efficiency)
    rt = sched.StepPlusPrefillRoundTime.from_hardware(model, hardware, decode_step_s=step_s,
                                                      mfu=efficiency)
    simulated = scenarios.long_prompt_interference(prompt_tokens, decode_batch=decode_batch,
                                               round_time=rt)
    return {"closed_form": closed, "simulated": simulated}


class HeadOfLinePanel(Panel):
    """17 §3 live: an unchunked long prefill stalls every in-flight decode (simulated)."""

    title = "Head-of-line blocking (17 §3), on the companion's scheduler simulator"
    controls = (
        _hardware_choice(),
        _model_choice(),
        Control("prompt_tokens", "long prompt (tokens)", "int", calc.CH17_LONG_CONTEXT_TOKENS,
                256, 32_000, 256),
        Control("step_ms", "in-flight decode step (ms)", "float",
                sched.CH17_HOL_DECODE_STEP_S / units.ms, 1.0, 50.0, 0.1),
        Control("efficiency_pct", "prefill at % of peak", "float",
                100 * calc.CH17_PREFILL_EFFICIENCY, 5.0, 100.0, 1.0),
        Control("decode_batch", "in-flight decodes (rows drawn)", "int", 4, 1, 12, 1),
    )
    base_layout = dict(hol_timeline_layout(), height=420)

    def compute(self, *, hardware, model, prompt_tokens, step_ms, efficiency_pct,
                decode_batch) -> View:
        hw, m = _HARDWARE[hardware], _MODELS[model]
        step = step_ms * units.ms
        out = hol_scenario(m, hw, prompt_tokens, step, efficiency_pct / 100, decode_batch)
        closed, sim = out["closed_form"], out["simulated"]
        numbers = {
            "prefill_TFLOP": closed["prefill_flops"] / units.TFLOP,
            "stall_ms": closed["stall_s"] / units.ms,
            "worst_itl_over_step": closed["worst_itl_over_step"],
            "sim_baseline_itl_ms": sim["baseline_itl_s"] / units.ms,
            "sim_worst_itl_ms": sim["worst_decode_itl_s"] / units.ms,
            "sim_worst_over_baseline": sim["worst_decode_itl_s"] / sim["baseline_itl_s"],
            "sim_long_ttft_ms": sim["long_ttft_s"] / units.ms,
        }
        traces = hol_timeline_traces(sim["result"])
        text = (f"prefill of {prompt_tokens:,} tokens: {numbers['prefill_TFLOP']:,.1f} TFLOP at "
                f"{efficiency_pct:g}% of peak = <b>{numbers['stall_ms']:,.0f} ms</b> stall "
                f"= <b>{numbers['worst_itl_over_step']:,.0f}x</b> the {step_ms:g} ms step "
                "(closed form)<br>"
                f"simulated: smooth ITL {numbers['sim_baseline_itl_ms']:.3g} ms, worst ITL "
                f"<b>{numbers['sim_worst_itl_ms']:,.0f} ms</b> "
                f"({numbers['sim_worst_over_baseline']:,.0f}x: the stalled round also runs "
                f"the decode step); the long prompt's TTFT "
                f"{numbers['sim_long_ttft_ms']:,.0f} ms")
        return View(numbers=numbers, traces=traces, text=text)
