"""17 §8's explorer home (notebook 17_08_disaggregation_and_routing): disaggregated prefill and
decode pools, and KV-aware routing.

Figures (plotly, deterministic): ``pool_sizing_traces``, ``kv_transfer_figure``,
``routing_traces``, ``disaggregation_diagram_traces`` and ``goodput_figure`` (a fleet shared
with chunked prefill against the same GPUs split into two pools).

Panels: ``PoolSizingPanel`` (prefill and decode pool sizes from the request mix),
``KVRoutingPanel`` (cold vs warm TTFT per turn of a conversation),
``DisaggregationDiagramPanel`` (the two pools and the KV transfer between them). Every number
comes from ``companion.calc``.
"""

from __future__ import annotations

import math
from functools import lru_cache

from companion import calc, specs, theme, units
from companion.chapters import ch08
from companion.chapters import ch17
from companion.explorers.base import Control, Panel, View
from companion.explorers.common import titled_figure as _fig
from companion.explorers.common import to_ms as _ms
from companion.explorers.presets import SERVING_MENU, choice_control, model_control, source_line
from companion.serves import serves

__all__ = [
    "pool_sizing_traces", "kv_transfer_figure", "routing_traces", "PoolSizingPanel",
    "KVRoutingPanel", "KV_LINKS", "KV_HOPS", "disaggregation_diagram_traces",
    "DisaggregationDiagramPanel", "goodput_figure",
]

# the section this module serves (the notebook of its name): every @serves mark here is
# within it (tests/test_sections.py)
SECTION = "17.8"


# --- §8 disaggregated pools and KV-aware routing ----------------------------------------------

def pool_sizing_traces(rates, prefill_groups, decode_groups, selected: dict, *,
                       queued_groups=None, queued_label: str = "") -> tuple[list, dict]:
    """Prefill and decode groups needed against the request rate (step lines), with the
    selected workload marked. ``selected``: rate, prefill_groups, decode_groups.
    ``queued_groups``: the fuller model's prefill groups per rate (``calc.prefill_pool_for_ttft``,
    None where no pool meets the target), dashed, named ``queued_label``."""
    xs = list(rates)
    traces = [
        {"type": "scatter", "mode": "lines", "x": xs, "y": list(prefill_groups),
         "name": "prefill groups (prompt tok/s / capacity)",
         "line": {"shape": "hv", "color": theme.SERVING_COLORS["prefill"], "width": 3}},
        {"type": "scatter", "mode": "lines", "x": xs, "y": list(decode_groups),
         "name": "decode groups (output tok/s / capacity)",
         "line": {"shape": "hv", "color": theme.SERVING_COLORS["decode"], "width": 3,
                  "dash": "dot"}},
    ]
    if queued_groups is not None:
        traces.append({"type": "scatter", "mode": "lines", "x": xs, "y": list(queued_groups),
                       "name": queued_label, "connectgaps": False,
                       "line": {"shape": "hv", "color": theme.SERVING_COLORS["prefill"],
                                "width": 2, "dash": "dash"}})
    # each marked point its own trace, its number in its legend entry (two labels beside the
    # points would collide wherever the two pools need about the same number of groups)
    for kind, symbol in (("prefill", "circle"), ("decode", "diamond")):
        n = selected[f"{kind}_groups"]
        traces.append({"type": "scatter", "mode": "markers", "x": [selected["rate"]], "y": [n],
                       "name": f"this workload: {n} {kind} group{'s' if n != 1 else ''}",
                       "marker": {"size": 12, "color": theme.SERVING_COLORS[kind], "symbol": symbol,
                                  "line": {"color": theme.INK, "width": 2}},
                       "hovertemplate": f"{kind}: %{{y}} groups at %{{x:g}} req/s<extra></extra>"})
    layout = {"xaxis": {"title": {"text": "request rate (requests/s)"}},
              "yaxis": {"title": {"text": "GPU groups"}, "rangemode": "tozero"},
              "legend": {"orientation": "h", "y": -0.25}}
    return traces, layout


@serves("17.8")
def kv_transfer_figure(contexts, curves, *, marks=None, exposed=None, exposed_note: str = "",
                       title: str = "Shipping one sequence's KV from prefill to decode (17 §8)"):
    """Transfer time (ms) against context for each link: ``curves`` {label: seconds list};
    ``marks``: {label: (context, seconds)} points to label (the chapter's 8,000 tokens);
    ``exposed``: {label: seconds list}, the fuller model's time left after the prefill when
    the KV ships layer by layer (``calc.kv_layered_transfer``), dashed in the link's colour,
    each entry named with ``exposed_note``."""
    xs = list(contexts)
    marks = dict(marks or {})
    # a mark's number goes into the legend entry of its link (labels beside the points would
    # print over each other where two links' times are close)
    mark_text = {label: f"{s / units.ms:,.0f} ms at {ctx:,} tokens"
                 for label, (ctx, s) in marks.items()}
    traces = []
    for i, (label, secs) in enumerate(curves.items()):
        name = f"{label}: {mark_text[label]}" if label in mark_text else label
        # each link its own marker symbol as well as its colour
        traces.append({"type": "scatter", "mode": "lines+markers", "x": xs, "y": _ms(secs),
                       "name": name, "legendgroup": label,
                       "line": {"color": theme.REQUEST_PALETTE[i % len(theme.REQUEST_PALETTE)], "width": 3},
                       "marker": {"symbol": theme.SYMBOLS[i % len(theme.SYMBOLS)], "size": 7,
                                  "maxdisplayed": 10}})
    for i, (label, secs) in enumerate((exposed or {}).items()):
        traces.append({"type": "scatter", "mode": "lines+markers", "x": xs, "y": _ms(secs),
                       "name": f"{label}, {exposed_note}" if exposed_note else label,
                       "line": {"color": theme.REQUEST_PALETTE[i % len(theme.REQUEST_PALETTE)],
                                "width": 2, "dash": "dash"},
                       "marker": {"symbol": theme.SYMBOLS[i % len(theme.SYMBOLS)], "size": 6,
                                  "maxdisplayed": 10}})
    for i, (label, (ctx, s)) in enumerate(marks.items()):
        traces.append({"type": "scatter", "mode": "markers", "x": [ctx], "y": [s / units.ms],
                       "name": f"{label}: {mark_text[label]}", "legendgroup": label,
                       "showlegend": label not in curves,
                       "hovertemplate": f"{label}: %{{y:,.1f}} ms at %{{x:,}} tokens"
                                        "<extra></extra>",
                       "marker": {"size": 10, "color": theme.REQUEST_PALETTE[i % len(theme.REQUEST_PALETTE)],
                                  "symbol": theme.SYMBOLS[i % len(theme.SYMBOLS)]}})
    layout = {"height": 420,
              "xaxis": {"title": {"text": "context shipped (tokens)"}, "type": "log"},
              "yaxis": {"title": {"text": "transfer time (ms)"}, "type": "log"},
              "legend": {"orientation": "h", "y": -0.25}}
    if exposed:
        # twice the entries: the legend in its own rows at the foot, two entries to a row
        rows = -(-(len(curves) + len(exposed)) // 2)
        foot = 60 + 24 * rows + 8
        layout.update(height=340 + foot, legend=theme.foot_legend(),
                      margin={"t": 60, "b": foot})
    return _fig(traces, layout, title)


@serves("17.8")
def goodput_figure(fleets: dict, *,
                   title: str = "Goodput of the same GPUs, shared or split (17 §8)"):
    """Goodput per GPU against the offered request rate per GPU, for each fleet size shared
    (one colour) and split (another), one dash per fleet size, over the line where every
    request meets both targets.

    ``fleets``: {GPUs: {"rates": req/s, "shared": goodput req/s, "split": goodput req/s,
    "split_label": how the split divides the GPUs}} (``calc.fleet_goodput`` per rate)."""
    traces = []
    top = 0.0
    colours = {"shared": theme.REQUEST_PALETTE[0], "split": theme.REQUEST_PALETTE[1]}
    for i, (gpus, f) in enumerate(sorted(fleets.items())):
        xs = [r / gpus for r in f["rates"]]
        top = max(top, max(xs))
        dash = theme.DASHES[(i + 1) % len(theme.DASHES)] if i else "solid"
        for kind in ("shared", "split"):
            name = (f"{gpus} GPUs shared, chunked prefill" if kind == "shared" else
                    f"{gpus} GPUs split: {f['split_label']}")
            # shared and split differ by marker as well as by colour
            traces.append({"type": "scatter", "mode": "lines+markers", "x": xs,
                           "y": [g / gpus for g in f[kind]], "name": name,
                           "line": {"color": colours[kind], "width": 3, "dash": dash},
                           "marker": {"symbol": {"shared": "circle", "split": "square"}[kind],
                                      "size": 7, "maxdisplayed": 12},
                           "hovertemplate": f"{name}<br>%{{x:.2f}} req/s per GPU offered, "
                                            "%{y:.2f} good<extra></extra>"})
    traces.insert(0, {"type": "scatter", "mode": "lines", "x": [0.0, top], "y": [0.0, top],
                      "name": "every request within both targets", "legendrank": 2000,
                      # "dash": no fleet takes it
                      "line": {"color": theme.GREY, "width": 1.5, "dash": "dash"},
                      "hoverinfo": "skip"})
    rows = -(-len(traces) // 2)
    foot = 60 + 24 * rows + 8
    layout = {"height": 360 + foot, "legend": theme.foot_legend(),
              "margin": {"t": 60, "b": foot},
              "xaxis": {"title": {"text": "offered request rate per GPU (requests/s)"},
                        "rangemode": "tozero"},
              "yaxis": {"title": {"text": "goodput per GPU (requests/s)"},
                        "rangemode": "tozero"}}
    return _fig(traces, layout, title)


def routing_traces(turns, cold_s, warm_s, *, mixed_s=None, mixed_label: str = "",
                   selected=None, attention=None) -> tuple[list, dict]:
    """TTFT per turn of a multi-turn conversation on a cold and a warm worker (log ms), and
    optionally the mean for a router landing a given share of turns warm.
    ``selected``: (turn, cold_s, warm_s) marked; ``attention``: (cold_s, warm_s) per turn with
    the attention FLOPs counted (``calc.kv_routing_ttft(..., attention=True)``), dotted."""
    xs = list(turns)
    traces = [
        # cold's markers are circles and warm's diamonds, as at the marked turn below
        {"type": "scatter", "mode": "lines+markers", "x": xs, "y": _ms(cold_s),
         "name": "cold worker: re-prefill the whole conversation",
         "line": {"color": theme.SERVING_COLORS["cold"], "width": 3},
         "marker": {"symbol": "circle", "size": 6, "maxdisplayed": 12}},
        {"type": "scatter", "mode": "lines+markers", "x": xs, "y": _ms(warm_s),
         "name": "warm worker: prefill the new message only",
         "line": {"color": theme.SERVING_COLORS["warm"], "width": 3},
         "marker": {"symbol": "diamond", "size": 7, "maxdisplayed": 12}},
    ]
    if attention is not None:
        for worker, secs in (("cold", attention[0]), ("warm", attention[1])):
            traces.append({"type": "scatter", "mode": "lines+markers", "x": xs, "y": _ms(secs),
                           "name": f"{worker}, attention FLOPs counted",
                           "line": {"color": theme.SERVING_COLORS[worker], "width": 2,
                                    "dash": "dot"},
                           "marker": {"symbol": {"cold": "circle-open",
                                                 "warm": "diamond-open"}[worker], "size": 6,
                                      "maxdisplayed": 12}})
    if mixed_s is not None:
        traces.append({"type": "scatter", "mode": "lines", "x": xs, "y": _ms(mixed_s),
                       "name": mixed_label, "line": {"color": theme.SERVING_COLORS["mix"],
                                                     "dash": "dash"}})
    if selected is not None:
        # each marked point its own trace, its number in its legend entry (at turn 1 the two
        # are the same point)
        t, c, w = selected
        for worker, secs, symbol in (("cold", c, "circle"), ("warm", w, "diamond")):
            traces.append({"type": "scatter", "mode": "markers", "x": [t], "y": [secs / units.ms],
                           "name": f"turn {t}, {worker}: {secs / units.ms:,.0f} ms",
                           "marker": {"size": 12, "color": theme.SERVING_COLORS[worker],
                                      "symbol": symbol, "line": {"color": theme.INK, "width": 2}},
                           "hovertemplate": f"turn {t}, {worker}: %{{y:,.1f}} ms<extra></extra>"})
    layout = {"xaxis": {"title": {"text": "turn of the conversation"}},
              "yaxis": {"title": {"text": "TTFT from prefill (ms)"}, "type": "log"},
              "legend": {"orientation": "h", "y": -0.25}}
    return traces, layout


_RATE_SWEEP = tuple(range(5, 505, 5))


@serves("17.8")
class PoolSizingPanel(Panel):
    """17 §8: prefill groups from prompt tokens/s, decode groups from output tokens/s."""

    title = "Disaggregated serving: sizing the two pools (17 §8)"
    controls = (
        Control("request_rate", "request rate (req/s)", "float",
                float(ch17.REQUEST_RATE_PER_S), 1.0, 500.0, 1.0),
        Control("mean_prompt_tokens", "mean prompt (tokens)", "int", ch17.MEAN_PROMPT_TOKENS,
                100, 32_000, 100),
        Control("mean_output_tokens", "mean output (tokens)", "int", ch17.MEAN_OUTPUT_TOKENS,
                10, 4000, 10),
        Control("prefill_capacity", "prefill capacity per group (tok/s)", "float",
                float(ch17.PREFILL_TOK_PER_S_PER_GROUP), 1000.0, 50_000.0, 500.0),
        Control("decode_capacity", "decode capacity per group (tok/s)", "float",
                float(ch17.DECODE_TOK_PER_S_PER_GROUP), 250.0, 20_000.0, 250.0),
        Control("ttft_p90_target_ms", "TTFT p90 target for the queueing model (ms)", "float",
                ch17.TTFT_P90_TARGET_S / units.ms, 100.0, 5000.0, 50.0),
    )
    main_control = "request_rate"
    base_layout = {"height": 420}

    def compute(self, *, request_rate, mean_prompt_tokens, mean_output_tokens, prefill_capacity,
                decode_capacity, ttft_p90_target_ms) -> View:
        kw = dict(prefill_tok_per_s_per_group=prefill_capacity,
                  decode_tok_per_s_per_group=decode_capacity)
        pools = calc.disaggregated_pools(request_rate, mean_prompt_tokens, mean_output_tokens,
                                         **kw)
        sweep = [calc.disaggregated_pools(r, mean_prompt_tokens, mean_output_tokens, **kw)
                 for r in _RATE_SWEEP]
        qkw = dict(prefill_tok_per_s_per_group=prefill_capacity,
                   ttft_p90_target_s=ttft_p90_target_ms * units.ms)
        queued = calc.prefill_pool_for_ttft(request_rate, mean_prompt_tokens, **qkw)
        queued_sweep = [calc.prefill_pool_for_ttft(r, mean_prompt_tokens, **qkw)["groups"]
                        for r in _RATE_SWEEP]
        traces, layout = pool_sizing_traces(
            _RATE_SWEEP, [s["prefill_groups"] for s in sweep], [s["decode_groups"] for s in sweep],
            {"rate": request_rate, "prefill_groups": pools["prefill_groups"],
             "decode_groups": pools["decode_groups"]},
            # no line (and no legend entry) where no pool size meets the target at any rate
            queued_groups=queued_sweep if any(g is not None for g in queued_sweep) else None,
            queued_label=f"prefill groups for a p90 TTFT of {ttft_p90_target_ms:,.0f} ms "
                         f"(queueing, M/M/c)")
        numbers = {k: pools[k] for k in ("prompt_tok_per_s", "output_tok_per_s",
                                         "prefill_groups", "decode_groups", "prefill_to_decode")}
        chapter_q = queued["chapter"]
        numbers.update({
            "prefill_load_pct": 100 * chapter_q["utilization"],
            "queued_prefill_groups": queued["groups"] or 0,
            "queued_p90_wait_ms": (queued["fuller"]["percentile_wait_s"] / units.ms
                                   if queued["groups"] else 0.0),
            "queued_p90_ttft_ms": (queued["fuller"]["percentile_time_s"] / units.ms
                                   if queued["groups"] else 0.0),
            "prefill_p90_ms": queued["service_percentile_s"] / units.ms})
        if queued["groups"] is None:
            fuller = (f"the prefill alone has a p90 of {numbers['prefill_p90_ms']:,.0f} ms "
                      f"(prompts spread around a {queued['service_s'] / units.ms:,.0f} ms mean), "
                      f"over the {ttft_p90_target_ms:,.0f} ms target: no pool size meets it")
        else:
            fuller = (f"{queued['groups']} groups keep the p90 TTFT (wait plus prefill) at "
                      f"{numbers['queued_p90_ttft_ms']:,.0f} ms, within the "
                      f"{ttft_p90_target_ms:,.0f} ms target")
        wait = ("the queue grows without bound" if not chapter_q["stable"] else
                f"p90 TTFT {chapter_q['percentile_time_s'] / units.ms:,.0f} ms")
        text = (f"prompt demand {pools['prompt_tok_per_s']:,.0f} tok/s -> "
                f"<b>{pools['prefill_groups']} prefill groups</b><br>"
                f"output demand {pools['output_tok_per_s']:,.0f} tok/s -> "
                f"<b>{pools['decode_groups']} decode groups</b><br>"
                f"ratio {pools['prefill_to_decode']:.2g} : 1<br>"
                f"<i>queueing (M/M/c): at {pools['prefill_groups']} groups the prefill pool runs "
                f"at {numbers['prefill_load_pct']:.0f}% load ({wait}); {fuller}</i>")
        return View(numbers=numbers, traces=traces, layout=layout, text=text)


_TURNS = tuple(range(1, 61))


@lru_cache(maxsize=64)
def _routing_curves(model: str, first_turn_tokens: int, tokens_per_turn: int,
                    efficiency: float, attention: bool = False) -> tuple:
    """Cold and warm TTFT (s) for every turn of ``_TURNS`` (cached while the turn and the warm
    share move); ``attention`` counts the attention FLOPs (the fuller model)."""
    rows = [calc.kv_routing_ttft(SERVING_MENU[model], specs.H100_SXM, t,
                                 first_turn_tokens=first_turn_tokens,
                                 tokens_per_turn=tokens_per_turn, efficiency=efficiency,
                                 attention=attention)
            for t in _TURNS]
    return tuple(x["cold_s"] for x in rows), tuple(x["warm_s"] for x in rows)


@serves("17.8")
class KVRoutingPanel(Panel):
    """17 §8: turn t re-sends the whole conversation; a warm worker prefills only the new part."""

    title = "KV-aware routing: TTFT per turn, cold vs warm worker (17 §8)"
    controls = (
        # the three maxima together reach 10,000 + 59 x 2,000 = 128,000 tokens at the last
        # turn: 17 §4's longest context, whose 8B KV (16.8 GB) fits one H100's 60 GB free
        Control("turn", "turn", "int", 20, 1, _TURNS[-1], 1),
        Control("first_turn_tokens", "first turn (tokens, system + tools)", "int",
                ch17.AGENT_FIRST_TURN_TOKENS, 500, 10_000, 500),
        Control("tokens_per_turn", "added per turn (tokens)", "int",
                ch17.AGENT_TOKENS_PER_TURN, 100, 2_000, 100),
        Control("warm_share_pct", "turns the router lands warm (%)", "float",
                100 * ch17.ROUTER_WARM_SHARES[0], 0.0, 100.0, 5.0),
        Control("efficiency_pct", "prefill at % of peak", "float",
                100 * ch17.PREFILL_EFFICIENCY, 10.0, 100.0, 5.0),
        model_control(specs.LLAMA_8B.name, (specs.LLAMA_8B.name, specs.LLAMA_70B.name)),
    )
    main_control = "turn"
    base_layout = {"height": 420}

    def compute(self, *, turn, first_turn_tokens, tokens_per_turn, warm_share_pct,
                efficiency_pct, model) -> View:
        m, eff, share = SERVING_MENU[model], efficiency_pct / 100, warm_share_pct / 100
        kw = dict(first_turn_tokens=first_turn_tokens, tokens_per_turn=tokens_per_turn,
                  efficiency=eff)
        cold, warm = _routing_curves(model, first_turn_tokens, tokens_per_turn, eff)
        r = calc.kv_routing_ttft(m, specs.H100_SXM, turn, **kw)
        full = calc.kv_routing_ttft(m, specs.H100_SXM, turn, attention=True, **kw)
        mixed = calc.routed_mean_ttft_s(cold, warm, share).tolist()
        traces, layout = routing_traces(
            _TURNS, cold, warm, mixed_s=mixed,
            mixed_label=f"mean with {warm_share_pct:.0f}% of turns warm",
            selected=(turn, r["cold_s"], r["warm_s"]),
            attention=_routing_curves(model, first_turn_tokens, tokens_per_turn, eff, True))
        pct = {q: calc.routed_ttft_percentile(r["cold_s"], r["warm_s"], share, q)
               for q in (50, 90, 99)}
        weak = ch17.ROUTER_WARM_SHARES[1]
        mean_s = calc.routed_mean_ttft_s(r["cold_s"], r["warm_s"], share)
        weak_mean_s = calc.routed_mean_ttft_s(r["cold_s"], r["warm_s"], weak)
        kv_gb = calc.kv_bytes(m, r["context_tokens"], block_tokens=1) / units.GB
        numbers = {"context_tokens": r["context_tokens"], "kv_GB": kv_gb,
                   "cold_TFLOP": r["cold_flops"] / 1e12,
                   "cold_ms": r["cold_s"] / units.ms, "warm_TFLOP": r["warm_flops"] / 1e12,
                   "warm_ms": r["warm_s"] / units.ms, "speedup": r["speedup"],
                   "mean_ms": mean_s / units.ms, "mean_ms_at_30pct": weak_mean_s / units.ms,
                   "p50_ms": pct[50] / units.ms, "p90_ms": pct[90] / units.ms,
                   "p99_ms": pct[99] / units.ms, "cold_attention_ms": full["cold_s"] / units.ms,
                   "warm_attention_ms": full["warm_s"] / units.ms,
                   "speedup_attention": full["speedup"]}
        text = (f"turn {turn}: context {r['context_tokens']:,} tokens "
                f"({kv_gb:,.1f} GB of KV held)<br>"
                f"cold: {numbers['cold_TFLOP']:,.1f} TFLOP -> <b>{numbers['cold_ms']:,.0f} ms"
                f"</b>; warm: {numbers['warm_TFLOP']:,.1f} TFLOP -> "
                f"<b>{numbers['warm_ms']:,.0f} ms</b> ({numbers['speedup']:.0f}x)<br>"
                f"mean TTFT at {warm_share_pct:.0f}% warm: {numbers['mean_ms']:,.0f} ms "
                f"(at {100 * weak:.0f}% warm: {numbers['mean_ms_at_30pct']:,.0f} ms)<br>"
                f"<i>percentiles at {warm_share_pct:.0f}% warm: p50 {numbers['p50_ms']:,.0f}, "
                f"p90 {numbers['p90_ms']:,.0f}, p99 {numbers['p99_ms']:,.0f} ms; attention "
                f"counted: cold {numbers['cold_attention_ms']:,.0f} ms, warm "
                f"{numbers['warm_attention_ms']:,.0f} ms "
                f"({numbers['speedup_attention']:.0f}x)</i>" + source_line(m))
        return View(numbers=numbers, traces=traces, layout=layout, text=text)


# --- §8 the router and the two pools, drawn from the pool-sizing formulas ---------------------

# the fuller model's toggle: the chapter's hop first
KV_HOPS = {"whole cache after the prefill (chapter)": "whole",
           "layer by layer during the prefill": "layered"}


def prefill_tp(model) -> int:
    """The GPUs a prefill group splits the model over: one when the weights fit a card with
    the chapter's reserve, else the chapter's TP = 4 (17 §4, §7)."""
    return 1 if calc.tp_kv_capacity(model, specs.H100_SXM)["fits"] else ch17.TP


# each link at its one-way rate, the direction a KV hop travels: NVLink's spec figure (900 GB/s)
# adds both directions, so one way is half; PCIe's 64 GB/s and a NIC's 400 Gb/s are per direction
KV_LINKS = {"400 Gb RDMA (50 GB/s)": ch17.RDMA_400G_BYTES_PER_S,
            "PCIe Gen5 x16 (64 GB/s)": ch08.PCIE_GEN5_X16_BYTES_PER_S,
            "NVLink, one way (450 GB/s)": calc.nvlink_one_way_bytes_per_s(specs.H100_SXM)}


def _pool_cells(n: int, x0: float, x1: float, y0: float, y1: float) -> tuple[list, list, float]:
    """Centres of ``n`` squares in a grid filling the box, and a marker size for them."""
    cols = max(1, math.ceil(math.sqrt(n * (x1 - x0) / (y1 - y0))))
    rows = max(1, math.ceil(n / cols))
    dx, dy = (x1 - x0) / cols, (y1 - y0) / rows
    xs = [x0 + dx * (i % cols + 0.5) for i in range(n)]
    ys = [y1 - dy * (i // cols + 0.5) for i in range(n)]
    return xs, ys, max(4.0, min(28.0, 240 * min(dx, dy) / (x1 - x0 + y1 - y0)))


def disaggregation_diagram_traces(pools: dict, flows: dict) -> tuple[list, dict]:
    """Router, prefill pool, decode pool and the KV hop, with one square per GPU group.

    ``pools``: prefill_groups, decode_groups (``calc.disaggregated_pools``); ``flows``: rate
    (req/s), prompt_tok_s, output_tok_s, kv_bytes_s, ship_ms and link (label)."""
    boxes = {"prefill": (3.2, 6.0, 3.4, 6.0), "decode": (6.6, 9.4, 0.2, 2.8)}
    shapes = [
        {"type": "rect", "x0": 0.0, "x1": 1.2, "y0": 2.5, "y1": 3.5, "line": {"width": 1.5},
         "fillcolor": theme.FAINT_GREY},
        {"type": "rect", "x0": 1.7, "x1": 2.9, "y0": 2.5, "y1": 3.5, "line": {"width": 1.5},
         "fillcolor": theme.TINT_GREEN},
    ]
    tints = {"prefill": theme.TINT_ORANGE, "decode": theme.TINT_BLUE}
    for kind, (x0, x1, y0, y1) in boxes.items():
        shapes.append({"type": "rect", "x0": x0, "x1": x1, "y0": y0, "y1": y1,
                       "line": {"color": theme.SERVING_COLORS[kind], "width": 2},
                       "fillcolor": tints[kind], "layer": "below"})
    traces = []
    for kind, key in (("prefill", "prefill_groups"), ("decode", "decode_groups")):
        x0, x1, y0, y1 = boxes[kind]
        xs, ys, size = _pool_cells(pools[key], x0 + 0.1, x1 - 0.1, y0 + 0.1, y1 - 0.45)
        traces.append({"type": "scatter", "mode": "markers", "x": xs, "y": ys,
                       "name": f"{kind} pool: {pools[key]} GPU groups",
                       "marker": {"symbol": "square", "size": size,
                                  "color": theme.SERVING_COLORS[kind]},
                       "hovertemplate": f"{kind} group<extra></extra>"})

    def arrow(x, y, ax, ay, colour=theme.INK):
        return {"x": x, "y": y, "ax": ax, "ay": ay, "xref": "x", "yref": "y", "axref": "x",
                "ayref": "y", "showarrow": True, "arrowhead": 3, "arrowwidth": 2,
                "arrowcolor": colour, "text": "", "standoff": 2, "startstandoff": 2}

    def label(x, y, text, colour=theme.INK):
        return {"x": x, "y": y, "text": text, "showarrow": False, "font": {"size": 11,
                                                                          "color": colour}}

    notes = [
        {"x": 0.6, "y": 3.0, "text": f"requests<br>{flows['rate']:,.0f} req/s", "showarrow": False},
        {"x": 2.3, "y": 3.0, "text": "router<br>(KV-aware)", "showarrow": False},
        {"x": 4.6, "y": 5.8, "text": f"<b>prefill pool</b>: {pools['prefill_groups']} groups",
         "showarrow": False},
        {"x": 8.0, "y": 2.6, "text": f"<b>decode pool</b>: {pools['decode_groups']} groups",
         "showarrow": False},
        arrow(1.7, 3.0, 1.2, 3.0),
        arrow(3.2, 4.4, 2.6, 3.5),
        label(2.1, 4.3, f"{flows['prompt_tok_s']:,.0f}<br>prompt tok/s"),
        arrow(6.9, 2.8, 5.6, 3.4, colour=theme.SERVING_COLORS["comm"]),
        # the total is spread over the prefill groups' own links: each sends its share
        label(7.9, 3.9, f"KV hop: {flows['kv_bytes_s'] / units.GB:,.1f} GB/s in all,<br>"
                        f"{flows['kv_bytes_s'] / pools['prefill_groups'] / units.GB:,.1f} GB/s "
                        f"from each prefill group,<br>"
                        f"{flows['ship_ms']:.{0 if flows['ship_ms'] >= 10 else 1}f} ms "
                        f"{flows.get('hop', 'per request')}<br>({flows['link']})",
              colour=theme.SERVING_COLORS["comm"]),
        arrow(6.6, 1.0, 2.6, 2.5, colour=theme.SERVING_COLORS["warm"]),
        # the warm arrow's green is too light for text: its label in the darker green
        label(3.9, 1.2, "a turn whose prefix is<br>already warm on a decode GPU",
              colour=theme.FOREST),
        arrow(10.4, 1.5, 9.4, 1.5),
        label(10.1, 0.6, f"{flows['output_tok_s']:,.0f}<br>output tok/s"),
    ]
    layout = {"shapes": shapes, "annotations": notes, "showlegend": True,
              "xaxis": {"range": [-0.1, 10.9], "visible": False},
              "yaxis": {"range": [-0.1, 6.3], "visible": False},
              "legend": {"orientation": "h", "y": -0.05}}
    return traces, layout


@serves("17.8")
class DisaggregationDiagramPanel(Panel):
    """17 §8 as a picture: the router, the prefill pool, the KV hop and the decode pool, sized by
    ``calc.disaggregated_pools`` and the KV transfer arithmetic."""

    title = "Router, prefill pool, KV hop, decode pool (17 §8)"
    controls = (
        Control("request_rate", "request rate (req/s)", "float",
                float(ch17.REQUEST_RATE_PER_S), 1.0, 500.0, 1.0),
        Control("mean_prompt_tokens", "mean prompt (tokens)", "int", ch17.MEAN_PROMPT_TOKENS,
                100, 32_000, 100),
        Control("mean_output_tokens", "mean output (tokens)", "int", ch17.MEAN_OUTPUT_TOKENS,
                10, 4000, 10),
        model_control(specs.LLAMA_70B.name, (specs.LLAMA_8B.name, specs.LLAMA_70B.name)),
        choice_control("link", "KV link", "400 Gb RDMA (50 GB/s)", {k: k for k in KV_LINKS}),
        choice_control("kv_hop", "KV hop", "whole", KV_HOPS),
    )
    main_control = "request_rate"
    base_layout = {"height": 460}

    def compute(self, *, request_rate, mean_prompt_tokens, mean_output_tokens, model,
                link, kv_hop) -> View:
        m = SERVING_MENU[model]
        pools = calc.disaggregated_pools(request_rate, mean_prompt_tokens, mean_output_tokens)
        kv_request = calc.kv_bytes(m, mean_prompt_tokens, block_tokens=1)
        ship = calc.kv_transfer_s(m, mean_prompt_tokens, KV_LINKS[link])
        layered = calc.kv_layered_transfer(m, specs.H100_SXM, mean_prompt_tokens,
                                           KV_LINKS[link], tp=prefill_tp(m))
        shown = ship if kv_hop == "whole" else layered["exposed_s"]
        flows = {"rate": request_rate, "prompt_tok_s": pools["prompt_tok_per_s"],
                 "output_tok_s": pools["output_tok_per_s"],
                 "kv_bytes_s": request_rate * kv_request, "ship_ms": shown / units.ms,
                 "link": link, "hop": ("per request" if kv_hop == "whole"
                                       else "left after the prefill")}
        traces, layout = disaggregation_diagram_traces(pools, flows)
        numbers = {"prefill_groups": pools["prefill_groups"],
                   "decode_groups": pools["decode_groups"],
                   "prefill_to_decode": pools["prefill_to_decode"],
                   "kv_bytes_per_request": kv_request, "kv_GB_per_s": flows["kv_bytes_s"] / units.GB,
                   "kv_GB_per_s_per_prefill_group": (flows["kv_bytes_s"] / pools["prefill_groups"]
                                                     / units.GB),
                   "ship_ms": ship / units.ms, "exposed_ms": layered["exposed_s"] / units.ms,
                   "hop_ms": shown / units.ms}
        overlap = (f"<br><i>shipped layer by layer while the prefill ({prefill_tp(m)} GPU"
                   f"{'s' if prefill_tp(m) > 1 else ''}, {layered['prefill_s'] / units.ms:,.0f}"
                   f" ms) computes: {layered['exposed_s'] / units.ms:,.2f} ms left after it</i>")
        text = (f"<b>{pools['prefill_groups']} prefill</b> and <b>{pools['decode_groups']} "
                f"decode</b> groups (ratio {pools['prefill_to_decode']:.2g} : 1)<br>"
                f"KV per mean request {kv_request / units.GB:.2f} GB, {ship / units.ms:.0f} ms "
                f"over {link}; {flows['kv_bytes_s'] / units.GB:,.1f} GB/s between the pools, "
                f"{numbers['kv_GB_per_s_per_prefill_group']:,.1f} GB/s from each prefill group"
                + overlap + source_line(m))
        return View(numbers=numbers, traces=traces, layout=layout, text=text)
