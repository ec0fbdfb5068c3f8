"""Every table a notebook shows, laid out from computed rows: 17 §6's batching decision table,
17 §10's levers, mechanism -> lever map and cheat sheet, 8.1.2's capacity table, 8.4.2's KV
formats, 8.5.4's verification under load, 8.6.3's decode efficiency and the schemes A-E, 17 §5's
two reservation readings and 17's two model shapes.

The rows come from ``companion.calc``; this module only lays them out in fixed-width columns (or
Markdown) in the chapters' display units. Headers that name a setting (the KV budget, the block
size, a batch, the deadline) are written from the argument, never typed, so a table follows its
inputs everywhere (``tests/test_tables.py`` changes each input and checks). No plotting
library, no widgets.
"""

from __future__ import annotations

import math
import re
import textwrap

from companion import calc, specs, units
from companion import validate as v
from companion.chapters import ch08, ch17
from companion.formulas.compression import kv_format_bytes_per_value
from companion.formulas.levers import mechanism_lever_map
from companion.formulas.performance import batching_decision_table
from companion.serves import serves

__all__ = ["text_table", "markdown_table", "columns", "decision_table_text",
           "decision_table_markdown", "levers_text", "mechanism_map_text", "cheat_sheet_text",
           "kv_capacity_text", "kv_format_text", "verification_load_text",
           "decode_efficiency_text", "scheme_definition_markdown", "scheme_text",
           "reservation_readings_markdown", "model_shapes_text"]


def _wrap(text: str, width: int) -> list[str]:
    return textwrap.wrap(text, width) or [""]


def text_table(headers, rows, widths) -> str:
    """A plain-text table whose cells wrap inside fixed column widths."""
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths)).rstrip(),
             "  ".join("-" * w for w in widths)]
    for row in rows:
        cells = [_wrap(str(c), w) for c, w in zip(row, widths)]
        for i in range(max(len(c) for c in cells)):
            lines.append("  ".join((c[i] if i < len(c) else "").ljust(w)
                                   for c, w in zip(cells, widths)).rstrip())
    return "\n".join(lines)


_DECISION_HEADERS = ("strategy", "who may join, when", "fixes", "costs", "fits")


def _decision_rows(**inputs) -> list[tuple]:
    return [(r["strategy"], r["joins"], r["fixes"], r["costs"], r["fits"])
            for r in batching_decision_table(**inputs)]


@serves("17.6")
def decision_table_text(**inputs) -> str:
    """``calc.batching_decision_table(**inputs)`` as a plain-text table (17 §6, re-derived)."""
    return text_table(_DECISION_HEADERS, _decision_rows(**inputs), (11, 22, 24, 26, 24))


# a cell that holds one number, with at most a short unit ("4.78 ms", "1,024", "0.25x",
# "**64**", "~295 tok/s", "12%"), or a few such split by " / ": its column is right-aligned
_NUMBER = r"[~≈<>≤≥±+\-−]?\s?\d[\d,.]*(e[+-]?\d+)?%?(\s?[A-Za-zµ×/%]+){0,2}"
# ... or a few of them, "94.7 / 307.9" (the chapter's and the fuller model's)
_NUMBER_CELL = re.compile(rf"{_NUMBER}(\s/\s{_NUMBER}){{0,3}}")
_NO_VALUE = {"", "-", "–", "—", "n/a"}


def _numeric_column(values) -> bool:
    """Whether every cell of a column that holds a value is a number (at least one does)."""
    cells = [str(x).strip().strip("*`").strip() for x in values]
    cells = [c for c in cells if c not in _NO_VALUE]
    return bool(cells) and all(_NUMBER_CELL.fullmatch(c) for c in cells)


def markdown_table(headers, rows) -> str:
    """A Markdown (pipe) table; a ``|`` inside a cell is escaped. A column of numbers is
    right-aligned, any other left-aligned (JupyterLab would right-align both)."""
    def cell(x):
        return str(x).replace("|", "\\|")
    rows = [tuple(r) for r in rows]
    align = ["---:" if _numeric_column(r[i] for r in rows if i < len(r)) else ":---"
             for i in range(len(headers))]
    lines = ["| " + " | ".join(cell(h) for h in headers) + " |",
             "|" + "|".join(align) + "|"]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def decision_table_markdown(**inputs) -> str:
    """``calc.batching_decision_table(**inputs)`` as a Markdown table, for ``display.md``."""
    return markdown_table(_DECISION_HEADERS, _decision_rows(**inputs))


def _display(value, unit) -> str:
    """A value of ``calc.levers_table`` / ``calc.cheat_sheet`` in the chapter's display units."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if unit == "s":
        return f"{value / units.ms:,.3g} ms"
    if unit in ("B", "B per token"):
        if 0 < value < 1e6:
            return f"{value / units.KiB:,.0f} KiB"
        return f"{value / units.GB:,.3g} GB"
    if unit is not None and unit.startswith("fraction"):
        return f"{100 * value:.2g}%"
    if unit == "x card memory":
        return f"{value:.2f}x card"
    if unit == "x":
        return f"{value:.2f}x"
    if unit in ("tok/s",):
        return f"{value:,.0f} tok/s"
    if value == 0 and unit in _COUNT_UNITS:
        return "none"                  # e.g. no sequence fits beside weights that do not fit
    if abs(value) >= 1e4:
        return f"{value:,.0f} {unit}"
    return f"{value:,.4g} {_singular(unit) if value == 1 else unit}"


# units that count things: "0 sequences" reads as "none", "1 GPUs" as "1 GPU"
_COUNT_UNITS = ("tokens", "GPUs", "sequences", "tokens per pass")


def _singular(unit: str) -> str:
    """``unit`` for exactly one thing: the plural "s" of its first word dropped."""
    if unit not in _COUNT_UNITS:
        return unit
    first, _, rest = unit.partition(" ")
    return " ".join(filter(None, (first[:-1], rest)))


@serves("17.10")
def levers_text(model, hardware) -> str:
    """``calc.levers_table(model, hardware)`` as text: symptom, lever, what it changes, and the
    chapter's arithmetic before -> after for this model and card (17 §10, re-derived)."""
    rows = []
    for r in calc.levers_table(model, hardware):
        if r["before"] is None and r["after"] is None:
            change = "-"
        elif r["before"] is None:
            change = _display(r["after"], r["unit"])
        else:
            change = f"{_display(r['before'], r['unit'])} -> {_display(r['after'], r['unit'])}"
        rows.append((r["symptom"], r["lever"], r["changes"], change, r["section"]))
    return text_table(("symptom", "lever", "what it changes", "arithmetic", "where"), rows,
                      (24, 24, 24, 24, 6))


@serves("17.10")
def mechanism_map_text() -> str:
    """``calc.mechanism_lever_map()`` as text (17 §10, re-derived)."""
    rows = [(r["mechanism"], r["lever"], r["section"]) for r in mechanism_lever_map()]
    return text_table(("mechanism", "lever", "where"), rows, (46, 40, 10))


@serves("17.10")
def cheat_sheet_text(models, hardware) -> str:
    """``calc.cheat_sheet`` for several models side by side, in display units (17 §10)."""
    seq = v.sequence("models", models)
    sheets = [calc.cheat_sheet(m, hardware) for m in seq]
    headers = ("quantity",) + tuple(m.name.split(" (")[0] for m in seq) + ("where",)
    rows = []
    for i, row in enumerate(sheets[0]):
        rows.append((row["quantity"],) + tuple(_display(s[i]["value"], s[i]["unit"])
                                               for s in sheets) + (row["section"],))
    widths = (44,) + (18,) * len(seq) + (6,)
    return text_table(headers, rows, widths)


# --- fixed-width tables whose headers follow their inputs --------------------------------------

def columns(headers, rows, left: int = 1) -> str:
    """A plain-text table sized to its cells: the first ``left`` columns left-aligned, the rest
    right-aligned (numbers), two spaces apart."""
    cells = [[str(h) for h in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]

    def line(row):
        return "  ".join(c.ljust(w) if i < left else c.rjust(w)
                         for i, (c, w) in enumerate(zip(row, widths))).rstrip()
    return "\n".join([line(cells[0])] + [line(r) for r in cells[1:]])


def _gib(x: float) -> str:
    return f"{x / units.GiB:g} GiB"


def _exact(x: float, decimals: int = 4) -> str:
    """``x`` to ``decimals`` places without trailing zeros: 1188, 631.125, 1.0625."""
    text = f"{x:,.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def _mib(n_bytes: float) -> str:
    return f"{_exact(n_bytes / units.MiB, 3)} MiB"


@serves("8.1.2")
def kv_capacity_text(model, kv_budget_bytes: float | None = None, requests=None, *,
                     block_tokens: int | None = None) -> str:
    """8.1.2's capacity table (``calc.kv_capacity_table``): per request type the prompt's KV,
    the tokens held at the end, those rounded to whole blocks, the reservation and how many fit
    in the budget. Defaults: the chapter's 12 GiB, 16-token blocks and its two request types."""
    budget = ch08.KV_BUDGET_BYTES if kv_budget_bytes is None else kv_budget_bytes
    block = ch08.BLOCK_TOKENS if block_tokens is None else block_tokens
    rows = calc.kv_capacity_table(model, budget, requests, block_tokens=block)
    return columns(("request", "prompt KV", "held", f"blocks of {block}", "reserved",
                    f"fit in {_gib(budget)}"),
                   [(r["name"], f"{r['prefill_kv_bytes'] / units.MiB:,.0f} MiB",
                     f"{r['computed_tokens']:,}", f"{r['allocated_tokens']:,}",
                     f"{r['final_kv_bytes'] / units.MiB:,.0f} MiB", r["fit"]) for r in rows])


@serves("8.4.2")
def kv_format_text(model, *, kv_budget_bytes: float | None = None,
                   prompt_tokens: int | None = None, output_tokens: int | None = None,
                   batch: int | None = None, formats=("bf16", "fp8", "q8_0", "q4_0")) -> str:
    """8.4.2's KV per format: bytes per value (scales included), the KV of one prompt, of one
    finished request, of ``batch`` finished requests, and how many fit in the budget.
    Defaults: the chapter's long request (8,192 + 256 tokens), 16 of them, 12 GiB."""
    budget = ch08.KV_BUDGET_BYTES if kv_budget_bytes is None else kv_budget_bytes
    n = ch08.LONG_PROMPT_TOKENS if prompt_tokens is None else prompt_tokens
    g = ch08.OUTPUT_TOKENS if output_tokens is None else output_tokens
    b = ch08.LONG_BATCH if batch is None else v.count("batch", batch)
    held = calc.held_tokens(n, g)
    rows = []
    for f in v.sequence("formats", formats):
        end = calc.kv_quantized_bytes(model, held, f)
        # MiB and GiB (8.4.2's units), as the other KV tables print them: whole MiB, unless a
        # group scale leaves a fraction (8.4.2's 631.125 MiB), which is then printed in full
        rows.append((f, _exact(kv_format_bytes_per_value(model, f)),
                     _mib(calc.kv_quantized_bytes(model, n, f)), _mib(end),
                     f"{b * end / units.GiB:.2f} GiB",
                     calc.max_concurrent_kv_format(budget, model, n, g, f)))
    return columns(("format", "B/value", f"{n:,}-token input", "finished", f"{b} finished",
                    f"fit in {_gib(budget)}"), rows)


@serves("8.5.4")
def verification_load_text(model, hardware, draft_len: int, contexts, batches=(64, 128)) -> str:
    """8.5.4 under load (``calc.verification_under_load``): per context, the batch from which a
    verification pass of ``draft_len + 1`` rows per request is compute-bound, and a pass's time
    over a plain step's at each of ``batches``."""
    bs = [v.count(f"batches[{i}]", b) for i, b in enumerate(v.sequence("batches", batches))]
    rows = []
    for L in v.sequence("contexts", contexts):
        runs = [calc.verification_under_load(model, hardware, b, draft_len, L) for b in bs]
        start = runs[0]["compute_bound_from_batch"]
        rows.append((f"{L:,}", "never" if math.isinf(start) else f"{start:.0f}",
                     *(f"{r['verify_over_plain']:.2f}x" for r in runs)))
    return columns(("context", "compute-bound from b",
                    *(f"verify / plain at b = {b}" for b in bs)), rows, left=0)


@serves("8.6.3")
def decode_efficiency_text(model=specs.QWEN3_8B, hardware=specs.RTX_PRO_6000, **kwargs) -> str:
    """Experiment 8-1's decode rows (``calc.decode_efficiency_table``): bytes a round reads,
    their time at the card's peak bandwidth (its value in the header), the measured round, MBU
    and the gap. Keyword arguments (batches, context_tokens, round_s) go to the table."""
    hw = hardware
    rows = calc.decode_efficiency_table(model, hardware, **kwargs)
    return columns(("batch", "read/round",
                    f"at {hw.mem_bw_bytes_per_s / units.GB:,.0f} GB/s", "measured", "MBU", "gap"),
                   [(r["batch"], f"{r['read_bytes'] / units.GB:.2f} GB",
                     f"{r['read_s'] / units.ms:.2f} ms", f"{r['round_s'] / units.ms:.2f} ms",
                     f"{r['mbu']:.0%}", f"{r['gap_s'] / units.ms:.1f} ms") for r in rows],
                   left=0)


def _scheme_kwargs(kwargs) -> dict:
    return {"kv_budget_bytes": kwargs.get("kv_budget_bytes", ch08.KV_BUDGET_BYTES),
            "deadline_s": kwargs.get("deadline_s", ch08.DEADLINE_S),
            "prompt_tokens": kwargs.get("prompt_tokens", ch08.LONG_PROMPT_TOKENS),
            "shared_prefix_tokens": kwargs.get("shared_prefix_tokens",
                                               ch08.SHARED_PREFIX_TOKENS)}


@serves("8.6.3")
def scheme_definition_markdown(schemes, **kwargs) -> str:
    """What each scheme of 8.6.3 changes, read off its ``calc.Scheme`` fields (a Markdown
    table): the KV format, whether the prefix is stored once, the draft and its costs."""
    kw = _scheme_kwargs(kwargs)
    new_tokens = kw["prompt_tokens"] - kw["shared_prefix_tokens"]
    rows = []
    for s in v.sequence("schemes", schemes):
        fmt = "BF16" if s.kv_format == "bf16" else f"{s.kv_format} KV"
        if s.kv_format != "bf16":
            layout = calc.quant_format_layout(s.kv_format)
            fmt += (f" ({layout.group_bytes:g} bytes per {layout.group_values} values)")
        state = fmt + (", the common prefix stored once and already cached" if s.shared_prefix
                       else ", every request keeps its own full context")
        changes = []
        if s.shared_prefix:
            changes.append(f"prefill only {new_tokens:,} new tokens each")
        if s.kv_format != "bf16":
            changes.append("a smaller cache, but the full prefill")
        if s.draft_bytes:
            state += (f", plus a draft network ({s.verify_positions - 1} drafts, "
                      f"{s.verify_positions} positions verified)")
            changes.append(f"{s.tokens_per_round:g} tokens per round; the draft's "
                           f"{s.draft_bytes / units.MiB:,.0f} MiB of extra peak memory and "
                           f"{s.prefill_factor:.2f}x the prefill, as measured in Experiment 8-5")
        elif s.tokens_per_round != 1:
            changes.append(f"{s.tokens_per_round:g} tokens per round")
        if s.round_extra_s:
            changes.append(f"{s.round_extra_s / units.ms:g} ms more per round")
        rows.append((s.name, state, "; ".join(changes) or "the baseline"))
    return markdown_table(("scheme", "state", "what changes"), rows)


@serves("8.6.3")
def scheme_text(schemes, **kwargs) -> str:
    """``calc.compare_schemes`` as a table: memory, prefill, round, rounds, decode, total, and
    whether each scheme fits the KV budget and meets the deadline (their values in the
    headers). Keyword arguments go to every ``calc.scheme_result``."""
    kw = _scheme_kwargs(kwargs)
    results = calc.compare_schemes(list(v.sequence("schemes", schemes)), **{**kwargs, **kw})
    return columns(("", "memory", "prefill", "round", "rounds", "decode", "total",
                    f"fits {_gib(kw['kv_budget_bytes'])}", f"within {kw['deadline_s']:g} s"),
                   [(r.name, f"{r.memory_gib:.2f} GiB", f"{r.prefill_s:.2f} s",
                     f"{r.round_ms:.2f} ms", r.rounds, f"{r.decode_s:.2f} s",
                     f"{r.total_s:.2f} s", r.fits_memory, r.meets_deadline)
                    for r in results.values()])


@serves("17.5")
def reservation_readings_markdown(model, hardware, *, chapter_tokens: int | None = None,
                                  max_len_tokens: int | None = None) -> str:
    """17 §5's two readings of the worst-case reservation (a Markdown table): the 8,000 tokens
    its arithmetic divides by and the model's maximum length it states, each with the naive
    batch, its step, tokens/s and paging's gain (``calc.paged_batch_gain``)."""
    readings = (
        (ch17.LONG_CONTEXT_TOKENS if chapter_tokens is None else chapter_tokens,
         "the chapter's arithmetic"),
        (ch17.MAX_LEN_TOKENS if max_len_tokens is None else max_len_tokens, "its own max_len"))
    rows = []
    for tokens, why in readings:
        gain = calc.paged_batch_gain(model, hardware, block_tokens=1, reservation_tokens=tokens)
        per_seq = calc.kv_bytes(model, tokens, block_tokens=1)
        rows.append((f"{tokens:,} tokens ({why})", f"{per_seq / units.GB:.2f} GB",
                     f"**{gain['naive']['batch']}**", f"{gain['naive']['step_s'] / units.ms:.2f} ms",
                     f"{gain['naive']['tokens_per_s']:,.0f}", f"{gain['throughput_gain']:.2f}x"))
    return markdown_table(("reservation", "per sequence", "naive batch", "step", "tokens/s",
                           "paged gain"), rows)


@serves("17.4")
def model_shapes_text(models, hardware, *, context_tokens: int | None = None) -> str:
    """Chapter 17's model shapes side by side: parameters, layers, widths and heads, bytes per
    value, weights, KV per token and per ``context_tokens`` sequence (default the chapter's
    8,000), and the weights over one card's memory."""
    ms = list(v.sequence("models", models))
    ctx = ch17.LONG_CONTEXT_TOKENS if context_tokens is None else context_tokens
    rows = (
        ("parameters", lambda m: f"{m.n_params / 1e9:.0f}e9"),
        ("layers", lambda m: f"{m.n_layers}"),
        ("hidden width", lambda m: f"{m.hidden_size:,}"),
        ("query heads", lambda m: f"{m.n_query_heads}"),
        ("KV heads (GQA)", lambda m: f"{m.n_kv_heads}"),
        ("head dimension", lambda m: f"{m.head_dim}"),
        ("bytes per parameter", lambda m: f"{m.bytes_per_param:g}"),
        ("weights", lambda m: f"{m.weight_bytes / units.GB:.0f} GB"),
        ("KV per token", lambda m: f"{calc.kv_bytes_per_token(m) / units.KiB:.0f} KB"),
        (f"KV per {ctx:,}-token sequence",
         lambda m: f"{calc.kv_bytes(m, ctx, block_tokens=1) / units.GB:.2f} GB"),
        (f"weights / one {hardware.name}", lambda m: f"{m.weight_bytes / hardware.mem_bytes:.2f}x"))
    return columns(("model shape",) + tuple(m.name.split(" (")[0] for m in ms),
                   [(label,) + tuple(get(m) for m in ms) for label, get in rows])
