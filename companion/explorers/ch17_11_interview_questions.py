"""The interview questions' explorer home (notebook 17_11_interview_questions): the batch-size
question.

Figure (plotly, deterministic): ``batch_window_traces`` (the batch between the ITL ceiling and
the KV-memory cap).

Panel: ``BatchSizePanel`` (the batch between the ITL ceiling and the KV-memory cap).
"""

from __future__ import annotations

import numpy as np

from companion import calc, specs, theme, units
from companion.chapters import ch17
from companion.explorers.base import Control, Panel, View
from companion.explorers.common import to_ms as _ms
from companion.explorers.presets import (
    SERVING_CARDS,
    SERVING_MENU,
    TP_DEGREES,
    card_control,
    choice_control,
    model_control,
    source_line,
)
from companion.serves import serves

__all__ = ["batch_window_traces", "BatchSizePanel"]

# the section this module serves (the notebook of its name): every @serves mark here is
# within it (tests/test_sections.py)
SECTION = "17.11"


# --- interview: what batch size? --------------------------------------------------------------

def batch_window_traces(batches, step_s, tokens_per_s, *, slo_s: float, caps: dict,
                        chosen=None) -> tuple[list, dict]:
    """Decode step time (ITL) and throughput against batch, the ITL target as a horizontal line
    and the KV-memory caps as vertical lines.

    ``caps``: {label: batch}; ``chosen``: (batch, step_s) marked.
    """
    xs = list(batches)
    step_ms = _ms(step_s)
    top = max(max(step_ms), slo_s / units.ms) * 1.1
    traces = [
        {"type": "scatter", "mode": "lines", "x": xs, "y": step_ms,
         "name": "decode step = ITL (memory roof)",
         "line": {"color": theme.SERVING_COLORS["read"], "width": 3}},
        {"type": "scatter", "mode": "lines", "x": xs, "y": list(tokens_per_s),
         "name": "throughput (tokens/s, right axis)", "yaxis": "y2",
         "line": {"color": theme.SERVING_COLORS["cap2"], "dash": "dot"}},
        {"type": "scatter", "mode": "lines", "x": [xs[0], xs[-1]], "y": [slo_s / units.ms] * 2,
         "name": "ITL target", "line": {"color": theme.SERVING_COLORS["slo"], "dash": "dash"}},
    ]
    colours = (theme.SERVING_COLORS["cap"], theme.SERVING_COLORS["cap2"], theme.SERVING_COLORS["comm"])
    for i, (label, b) in enumerate(caps.items()):
        if b >= 1:
            traces.append({"type": "scatter", "mode": "lines", "x": [b, b], "y": [0, top],
                           "name": f"{label}: {b:,}",
                           "line": {"color": colours[i % len(colours)], "width": 2,
                                    "dash": ("longdash", "dashdot", "longdashdot")[i % 3]}})
    if chosen is not None and chosen[0] >= 1:
        traces.append({"type": "scatter", "mode": "markers", "x": [chosen[0]],
                       "y": [chosen[1] / units.ms], "name": f"run at batch {chosen[0]:,}",
                       "marker": {"size": 13, "color": theme.INK, "symbol": "star"}})
    layout = {"xaxis": {"title": {"text": "batch (sequences decoding together)"},
                        "type": "log"},
              "yaxis": {"title": {"text": "decode step (ms)"}, "range": [0, top]},
              "yaxis2": {"title": {"text": "tokens/s"}, "overlaying": "y", "side": "right",
                         "rangemode": "tozero", "showgrid": False},
              "legend": {"orientation": "h", "y": -0.25}}
    return traces, layout


_BATCH_SWEEP = tuple(sorted({int(x) for x in np.geomspace(1, 4096, 49).round()}))


@serves("17.11")
class BatchSizePanel(Panel):
    """Interview: the batch is pinned between the ITL target (ceiling) and KV memory (cap)."""

    title = "What batch size should we run? (17, interview; §4-§5 arithmetic)"
    controls = (
        model_control(specs.LLAMA_8B.name, (specs.LLAMA_8B.name, specs.LLAMA_70B.name)),
        card_control(),
        choice_control("tp", "TP degree", 1, TP_DEGREES),
        Control("itl_target_ms", "ITL target (ms, assumed)", "float",
                ch17.ITL_TARGET_S / units.ms, 5.0, 100.0, 1.0),
        Control("live_tokens", "live KV per sequence (tokens)", "int",
                ch17.CHAT_LIVE_TOKENS, 100, 32_000, 100),
        Control("reservation_tokens", "worst-case reservation (tokens)", "int",
                ch17.LONG_CONTEXT_TOKENS, 1000, 32_000, 500),
    )
    main_control = "itl_target_ms"
    base_layout = {"height": 460}

    def compute(self, *, model, hardware, tp, itl_target_ms, live_tokens,
                reservation_tokens) -> View:
        m, hw = SERVING_MENU[model], SERVING_CARDS[hardware]
        reservation = max(reservation_tokens, live_tokens)
        w = calc.batch_window(m, hw, tp=tp, live_tokens=live_tokens,
                              reservation_tokens=reservation,
                              itl_target_s=itl_target_ms * units.ms)
        rows = [calc.tp_decode_step(m, hw, tp, batch=b, context_tokens=live_tokens)
                for b in _BATCH_SWEEP]
        caps = {"KV cap, paged (live tokens)": w["paged_cap"],
                f"KV cap, {reservation:,}-token reservations": w["reserved_cap"]}
        traces, layout = batch_window_traces(
            _BATCH_SWEEP, [r["step_s"] for r in rows], [r["tokens_per_s"] for r in rows],
            slo_s=itl_target_ms * units.ms, caps=caps,
            chosen=(w["run_batch"], w["run_step_s"]))
        numbers = {"itl_ceiling": w["itl_ceiling"], "paged_cap": w["paged_cap"],
                   "reserved_cap": w["reserved_cap"], "run_batch": w["run_batch"],
                   "binding": w["binding"], "run_step_ms": w["run_step_s"] / units.ms,
                   "run_tokens_per_s": w["run_tokens_per_s"],
                   "reserved_cap_step_ms": w["reserved_cap_step_s"] / units.ms,
                   "paged_cap_step_ms": w["paged_cap_step_s"] / units.ms,
                   "free_kv_GB": w["free_kv_bytes"] / units.GB}
        text = (f"free KV: {numbers['free_kv_GB']:.0f} GB (TP {tp})<br>"
                f"KV cap: <b>{w['paged_cap']:,}</b> paged, {w['reserved_cap']:,} with "
                f"{reservation:,}-token reservations<br>"
                f"ITL ceiling at {itl_target_ms:g} ms: <b>{w['itl_ceiling']:,}</b><br>"
                f"run at <b>{w['run_batch']:,}</b> ({w['binding']} binds): step "
                f"{numbers['run_step_ms']:.1f} ms, {numbers['run_tokens_per_s']:,.0f} tok/s"
                + source_line(m))
        return View(numbers=numbers, traces=traces, layout=layout, text=text)
