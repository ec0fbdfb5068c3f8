"""One meaning per symbol: the notation every notebook, exercise and solution writes formulas in.

``SYMBOLS`` is the table: each symbol once, with its one meaning, the unit the companion keeps
it in, the section that introduces it and, where the chapters write another letter for the same
quantity (or the same letter for another one), what they write. The notation page
(``notebooks/notation.py``) renders ``markdown_table()``; ``tests/test_notation.py`` reads the
maths of every Markdown cell and every ``display.md``/``answer`` text of ``notebooks/``,
``solutions/``, ``exercises/`` and ``dashboards/`` and fails on a symbol the table lacks, a
symbol given another entry's meaning, or one meaning written with two symbols.

Each entry's ``cues`` are the words that, written right next to a symbol ("the hit probability
$p_h$", "where $T_r$ recomputes it", "over $p$ GPUs"), say which quantity the text means; the
test matches them against the words around each symbol that the text defines. Symbols are
compared in the canonical spelling of ``companion.notation_tex`` (``b_{KV}`` = ``b_\\text{KV}``;
an index subscript ``i``, ``j``, a digit or ``j+1`` reads as ``i``).

Chapter 8 writes several letters that Chapter 17 uses for something else, and the reverse; the
companion keeps the letter of whichever reading it met first and renames the other (the
``chapter`` column says what the chapter itself writes). No plotting, no numpy.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from companion.notation_tex import base_of, canonical, symbols_in

__all__ = ["Symbol", "SYMBOLS", "NOTEBOOKS", "lookup", "entry_for", "section_label",
           "notebook_of", "markdown_table", "symbols_in", "canonical"]


@dataclass(frozen=True)
class Symbol:
    """One row of the notation table.

    ``tex``: the symbol as the notebooks write it (inside ``$...$``); ``meaning``: its one
    meaning; ``unit``: the unit the companion keeps it in ("-" for a pure number);
    ``section``: the section that first needs it ("8.3.4", "17.7"); ``chapter``: what the
    chapters write instead, with the section, where that differs; ``cues``: regular
    expressions for words that name this meaning next to a symbol; ``also``: further spellings
    of the same entry (variants written with another subscript, such as ``M_{q4}`` beside
    ``M_{q8}``); ``written``: a regular expression every maths span that uses the symbol must
    match, for a letter the table reserves for one form (``P(...)``, a probability; ``q(A)``,
    a token as an argument).
    """

    tex: str
    meaning: str
    unit: str
    section: str
    chapter: str = ""
    cues: tuple[str, ...] = ()
    also: tuple[str, ...] = ()
    written: str = ""

    @property
    def keys(self) -> tuple[str, ...]:
        """The canonical spellings this entry answers to."""
        return (canonical(self.tex),) + tuple(canonical(t) for t in self.also)

    def names(self, text: str) -> bool:
        """Whether ``text`` (words next to a symbol) names this entry's meaning."""
        return any(re.search(c, text, re.I) for c in self.cues)


def _s(tex, meaning, unit, section, chapter="", cues=(), also=(), written="") -> Symbol:
    return Symbol(tex, meaning, unit, section, chapter, tuple(cues), tuple(also), written)


# Ordered by the section that introduces each symbol, Chapter 8 first.
SYMBOLS: tuple[Symbol, ...] = (
    # --- 8.1: one request, one card ------------------------------------------------------------
    _s("n", "prompt tokens of a request (its input)", "tokens", "8.1.1",
       cues=[r"prompt @", r"@ prompt tokens", r"prompt of @", r"@ input tokens", r"prefill of @"]),
    _s("G", "output tokens a request generates", "tokens", "8.1.1",
       cues=[r"@ output tokens", r"@ outputs\b", r"output tokens @"]),
    _s("T", "end-to-end time of one request (one attempt)", "s", "8.1.1",
       cues=[r"end.to.end", r"wall clock"]),
    _s("i", "an index: a position, a token, a request or a step ($j$ another one)", "-",
       "8.1.1", also=["j"]),
    _s("t_a", "time a request arrives", "s", "8.1.1",
       cues=[r"arrival time @", r"arrives at @", r"time a request arrives"]),
    _s("t_i", "time at which output token $i$ is returned ($t_1$ the first, $t_G$ the last)",
       "s", "8.1.1", also=["t_G"],
       cues=[r"returned at @", r"is returned"]),
    _s(r"t_\text{queue}", "time a request waits in the queue before its prefill", "s", "8.1.1",
       cues=[r"waits? in the queue"]),
    _s(r"t_\text{prefill}", "time the prefill of a request takes", "s", "8.1.1"),
    _s("N", "parameters of the model, all of them", "parameters", "8.1.2",
       chapter="$P$ (17 §2)",
       cues=[r"@ parameters", r"parameters @", r"parameter count"]),
    _s("D_w", "bytes of weights one decode step streams from memory", "bytes", "8.1.2",
       cues=[r"weight bytes @", r"bytes of (the )?weights @", r"bytes of weights one decode step"]),
    _s("k", "KV bytes one token of context keeps, summed over layers ($k_\\text{FP8}$: with "
       "the values stored in FP8)", "bytes/token", "8.1.2", also=[r"k_\text{FP8}"],
       cues=[r"@ (is )?(the )?(KV )?bytes per token", r"KV bytes one token", r"tokens? of @ bytes"]),
    _s(r"n_\text{layers}", "transformer layers of the model", "-", "8.1.2",
       cues=[r"@ layers", r"layers @", r"transformer layers"]),
    _s(r"n_\text{kv}", "KV heads per layer", "-", "8.1.2",
       cues=[r"KV heads @", r"@ KV heads"]),
    _s(r"d_\text{head}", "size of one attention head", "values", "8.1.2",
       cues=[r"head (dim|size) @", r"size of one (attention )?head"]),
    _s(r"s_\text{value}", "bytes that store one KV value (2 in BF16)", "bytes", "8.1.2",
       cues=[r"bytes per (KV )?value @", r"store one KV value"]),
    _s("M_w", "memory the resident weights take", "bytes", "8.1.2",
       cues=[r"resident weights"]),
    _s(r"M_{KV}", "memory of the KV pool (its blocks)", "bytes", "8.1.2",
       cues=[r"KV (pool|budget) @", r"memory of the KV pool"]),
    _s("M_a", "memory for activations", "bytes", "8.1.2",
       cues=[r"activations @", r"memory for activations"]),
    _s("M_u", "memory for other buffers and the runtime", "bytes", "8.1.2",
       cues=[r"other buffers"]),
    _s("C", "memory capacity the parts must fit", "bytes", "8.1.2",
       cues=[r"capacity @", r"memory capacity"]),
    # --- 8.2: batching and scheduling ---------------------------------------------------------
    _s(r"\mathbf{W}", "a weight matrix", "-", "8.2.1",
       cues=[r"weight matrix @", r"a weight matrix"]),
    _s(r"\mathbf{X}", "the activations a matrix product reads, one row per token", "-", "8.2.1",
       also=[r"\mathbf{Y}"]),
    _s("s", "bytes that store one parameter (2 for BF16, 1 for FP8)", "bytes", "8.2.1",
       chapter="$s_w$ (8.2.1)",
       cues=[r"bytes (per|each) (param|weight)", r"parameters? of @ bytes", r"store one parameter"]),
    _s(r"I", "arithmetic intensity: FLOPs per byte read", "FLOP/byte", "8.2.1",
       also=[r"I_\text{weight}", r"I_\text{decode}", r"I_\text{prefill}", r"I_\text{eff}"],
       cues=[r"intensity @", r"arithmetic intensity"]),
    _s(r"I^\star", "the ridge point, $\\pi/\\beta$: the intensity at which compute becomes the "
       "limit", "FLOP/byte", "8.2.1",
       cues=[r"ridge point @", r"the ridge point"]),
    _s(r"\mathbf{A}", "the two low-rank factors of a LoRA adapter, $\\mathbf{B}\\mathbf{A}$",
       "-", "8.2.1", also=[r"\mathbf{B}"]),
    _s("R", "rank of a LoRA adapter", "-", "8.2.1",
       cues=[r"(?<!-)\brank @", r"rank of a LoRA"]),
    _s(r"d_\text{in}", "input and output widths of a projection", "values", "8.2.1",
       also=[r"d_\text{out}"]),
    _s("E", "experts in one MoE layer", "experts", "8.2.1",
       cues=[r"@ experts\b", r"experts in one MoE"]),
    _s("r", "experts each token is sent to (top-$r$)", "experts", "8.2.1",
       cues=[r"@ chosen per token", r"each token is sent to", r"top-"]),
    _s("L", "context a sequence holds in the cache (its live KV)", "tokens", "8.2.1",
       cues=[r"context @", r"@ live tokens", r"(in|holds in) the cache"]),
    _s("b", "batch: sequences advanced by one decode step", "sequences", "8.2.1",
       chapter="$B$ (17 §2)",
       cues=[r"batch @", r"batch of @", r"batch:"]),
    _s(r"b_\text{KV}", "smallest batch whose KV reads match the weight read, "
       "$\\lceil D_w/(Lk)\\rceil$", "sequences", "8.2.1"),
    _s("D", "bytes one decode step reads, $D_w + bLk$", "bytes", "8.2.1",
       cues=[r"bytes one decode step reads"]),
    _s("d", "bytes read per output token, $D_w/b + Lk$", "bytes/token", "8.2.1",
       cues=[r"bytes read per output token"]),
    _s("F", "FLOPs of one sequence's decode step", "FLOP", "8.2.1"),
    _s(r"\pi", "peak dense compute of one card", "FLOP/s", "8.2.1",
       cues=[r"peak @", r"peak dense compute"]),
    _s(r"\beta", "memory bandwidth of one card", "bytes/s", "8.2.1",
       cues=[r"bandwidth @", r"memory bandwidth"]),
    _s("T_r", "time of one round (one pass of the scheduler; a speculative round)", "s",
       "8.2.2", chapter="$T_r$ (8.5.2), $T_m$ (Exercise 8-7); 8.3.4 writes $T_r$ for "
       "$T_\\text{rec}$",
       cues=[r"round takes @", r"time of (a|one) round", r"round at @"]),
    _s(r"t_\text{fixed}", "fixed cost of a round in 8.2.4's round-time model", "s", "8.2.4",
       cues=[r"fixed cost"]),
    _s(r"t_\text{token}", "cost of one new token in 8.2.4's round-time model", "s", "8.2.4"),
    _s(r"t_\text{pair}", "cost of one query-key pair in 8.2.4's round-time model", "s",
       "8.2.4"),
    _s("c", "tokens a round adds (a chunk of a prompt)", "tokens", "8.2.3",
       cues=[r"chunks? of @", r"chunk @", r"tokens a round adds"]),
    _s("h", "tokens already cached before that round", "tokens", "8.2.3",
       cues=[r"@ cached ones", r"already cached"]),
    _s("a", "FLOPs of attention for one query-key pair", "FLOP", "8.2.3",
       cues=[r"query.key pair", r"@ FLOPs each"]),
    # --- 8.3: the KV cache --------------------------------------------------------------------
    _s("p", "token slots in one KV block (the page size)", "tokens", "8.3.1",
       cues=[r"block size @", r"@ slots", r"token slots", r"page size"]),
    _s("n_s", "prompt tokens that several requests share (a common prefix)", "tokens", "8.3.2",
       cues=[r"shared prefix @", r"common prefix", r"prompt tokens that several requests share"]),
    _s(r"n_\text{br}", "branches that share one prefix", "-", "8.3.2",
       cues=[r"@ branches", r"branches that share"]),
    _s("B_s", "blocks of the prefix the branches share", "blocks", "8.3.2"),
    _s("B_p", "private blocks of each branch", "blocks", "8.3.2"),
    _s(r"n_\text{match}", "length of the matched prefix", "tokens", "8.3.3",
       cues=[r"matched prefix"]),
    _s("s_i", "positions of the recurrent-state snapshots", "tokens", "8.3.3",
       cues=[r"snapshots? (at|positions?) @", r"positions of the recurrent"]),
    _s("s^*", "the snapshot a restore starts from: the last $s_i$ at or before $n_\\text{match}$",
       "tokens", "8.3.3"),
    _s(r"\rho", "probability that a kept prefix is used again ($\\rho_A$: prefix A's, in "
       "Exercise 8-4)", "-", "8.3.4", also=[r"\rho_A"],
       chapter="$p_h$ (8.3.4)",
       cues=[r"hit probability", r"reuse probability", r"probability that a kept prefix"]),
    _s("V", "expected net saving of keeping a prefix ($V_B$: of all the B prefixes together, "
       "in Exercise 8-4)", "s", "8.3.4", chapter="$V_h$ (8.3.4)", also=["V_B"],
       cues=[r"saving @", r"@ saves", r"expected net saving"]),
    _s(r"T_\text{rec}", "time to recompute a prefix by prefill", "s", "8.3.4",
       chapter="$T_r$ (8.3.4)",
       cues=[r"recomput"]),
    _s("T_f", "time to fetch a kept prefix back and prepare it", "s", "8.3.4",
       cues=[r"@ fetch", r"fetch(ing)? (it|a kept prefix) back", r"time to fetch"]),
    _s("T_m", "time to keep a prefix (maintaining the cache: writing it out)", "s", "8.3.4",
       cues=[r"@ maintain", r"maintaining the cache", r"upkeep"]),
    _s(r"F_\text{prefill}", "FLOPs of the prefill of $n$ tokens, attention included", "FLOP",
       "8.3.4", cues=[r"FLOPs of the prefill"]),
    _s(r"N_\text{blocks}", "parameters of the transformer blocks: every layer, without the "
       "embedding table and the output head", "parameters", "8.3.4",
       cues=[r"parameters in (its|the) (transformer )?(blocks|layers)", r"transformer blocks"]),
    _s("u", "fraction of the card's peak FLOP/s a pass reaches (its MFU)", "-", "8.3.4",
       cues=[r"fraction @ of the (card's )?peak", r"fraction @ of the card's", r"\bMFU\b",
             r"fraction of the card's peak"]),
    _s(r"n_\text{pieces}", "contiguous pieces a transfer is cut into (for a paged prefix: one "
       "per block, layer, key and value)", "-", "8.3.4",
       cues=[r"@ pieces", r"pieces a transfer", r"(equal|contiguous) (chunks|pieces)"]),
    _s(r"t_\text{piece}", "fixed cost each piece of a transfer adds", "s", "8.3.4",
       cues=[r"carries a fixed cost @", r"each piece of a transfer", r"cost per piece"]),
    # --- 8.4: compression and offloading -------------------------------------------------------
    _s(r"n_\text{grp}", "values in one quantization group", "-", "8.4.1",
       cues=[r"values in (one|a|each) (quantization )?group", r"groups? of @ values"]),
    _s("w", "bits of each value's code", "bits", "8.4.1",
       cues=[r"@ bits", r"bits of each value"]),
    _s(r"M_\text{meta}", "metadata bytes per quantization group (scale, offset)", "bytes",
       "8.4.1",
       cues=[r"metadata"]),
    _s(r"\delta", "the scale a q8_0 or q4_0 group stores", "-", "8.4.2",
       cues=[r"scale @", r"@ as a half float", r"the scale a q8_0"]),
    _s("v", "one value of a quantization group ($v_\\max$: the one of largest magnitude)", "-",
       "8.4.2", also=[r"v_\max"]),
    _s(r"M_{q8}", "KV bytes of the same context in q8_0 ($M_{q4}$: in q4_0)", "bytes",
       "8.4.2", also=[r"M_{q4}"]),
    _s(r"\Delta D", "bytes a round no longer reads once the KV is compressed", "bytes",
       "8.4.2"),
    _s("T_c", "time to convert compressed KV back to numbers, per round", "s", "8.4.2",
       cues=[r"conversion", r"convert compressed"]),
    _s(r"a_\text{BF16}", "intercept of the output interval fitted against context, per KV "
       "format ($a_\\text{FP8}$ likewise)", "s", "8.4.2", also=[r"a_\text{FP8}"]),
    _s(r"b_\text{BF16}", "slope of the output interval fitted against context, per KV format "
       "($b_\\text{FP8}$ likewise)", "s/token", "8.4.2", also=[r"b_\text{FP8}"]),
    _s(r"D_\text{off}", "weight or KV bytes kept off the card and copied in every round",
       "bytes", "8.4.3",
       cues=[r"off the card", r"offloaded bytes @"]),
    _s(r"T_\text{copy}", "time to copy the offloaded bytes in, per round", "s", "8.4.3"),
    _s(r"D_\text{link}", "bytes sent over a link", "bytes", "8.4.3", chapter="$S$ (8.4.3)",
       cues=[r"sending @", r"sent over a link"]),
    _s(r"\beta_\text{link}", "bandwidth of a link between two memories (PCIe, NVLink, network)",
       "bytes/s", "8.4.3", chapter="$B_\\text{link}$ (8.4.3)",
       cues=[r"link bandwidth", r"bandwidth of a link"]),
    _s("f_c", "size after compression as a fraction of the original", "-", "8.4.3",
       chapter="$r$ (8.4.3)",
       cues=[r"compressed to a fraction", r"after compression"]),
    _s(r"R_\text{dec}", "decompression rate (original bytes per second)", "bytes/s", "8.4.3",
       cues=[r"decompress"]),
    _s(r"d_\text{ff}", "inner width of a feed-forward (MLP) block", "values", "8.4.3",
       cues=[r"inner width", r"FFN's inner"]),
    _s(r"T_\text{budget}", "time allowed for all of one request's weight copies", "s", "8.4.3",
       cues=[r"time budget", r"time allowed for all"]),
    _s(r"P_\text{ok}", "probability that one attempt succeeds (an assumption for exploring "
       "retries)", "-", "8.4.4",
       cues=[r"attempt succeeds"]),
    _s(r"T_\text{check}", "time to check one attempt's answer", "s", "8.4.4"),
    # --- 8.5: speculative decoding ------------------------------------------------------------
    _s("m", "draft length: tokens proposed in one round", "tokens", "8.5.1",
       chapter="$k$ (17 §10)",
       cues=[r"draft length @", r"draft of @", r"propos\w* @ tokens", r"@ draft tokens", r"tokens proposed in one round"]),
    _s("q", "the draft model's next-token distribution", "-", "8.5.1", also=["q_A"],
       cues=[r"drafter's @", r"the draft model's next"]),
    _s(r"p_\theta", "the target model's next-token distribution", "-", "8.5.1",
       chapter="$p$ (8.5.1)",
       cues=[r"target's @", r"target model's"]),
    _s("x", "a token of the vocabulary ($y$ another one)", "-", "8.5.1", also=["y"]),
    _s("A", "the two tokens of 8.5's toy vocabulary, A and B", "-", "8.5.1", also=["B"],
       written=r"\(\s*[AB]\s*\)"),
    _s("P", "probability of an event", "-", "8.5.2", written=r"P\s*(\\[a-zA-Z]+\s*)?\("),
    _s("a_i", "probability that draft token $i$ is accepted, given that the earlier ones were",
       "-", "8.5.2", chapter="$a$, $a_j$ (8.5.2, 8.5.4)",
       cues=[r"@ for the chance", r"chance that", r"accepted, given"]),
    _s(r"\alpha", "one acceptance probability for every draft position", "-", "8.5.2",
       chapter="$a$ (8.5.2); $\\alpha$ (17 §10)",
       cues=[r"acceptance (rate|probability) @", r"accepted with (the same )?probability @",
             r"same probability @", r"surviv\w* with probability @", r"one acceptance probability"]),
    _s("X", "tokens one speculative round emits (a random count)", "tokens", "8.5.2",
       chapter="$N$ (8.5.2)",
       cues=[r"round emits @", r"@ tokens (per|a) round", r"tokens one speculative round emits"]),
    _s(r"\mathbb{E}", "expected value: $\\mathbb{E}[X]$ is the mean number of tokens a round "
       "emits", "-", "8.5.2", chapter="$\\mathbb E[N]$, $\\mathbb E[N_m]$ (8.5.2, 8.5.4)"),
    _s("X_r", "tokens round $r$ actually emitted (one draw of $X$)", "tokens", "8.5.2",
       chapter="$N_r$ (8.5.2)",
       cues=[r"@ they emit", r"round \$?r\$? actually emitted"]),
    _s(r"\bar t_\text{spec}", "mean latency per output token with speculation: total time over "
       "total tokens", "s/token", "8.5.2",
       cues=[r"latency per (output )?token @", r"mean latency per output token"]),
    _s("T_v", "time of the verification pass of a round", "s", "8.5.2",
       cues=[r"verification @", r"verification pass of a round"]),
    _s("T_d", "time of a round's draft", "s", "8.5.2",
       cues=[r"the draft @", r"round's draft"]),
    _s("t_d", "time of one draft token (one serial draft pass)", "s", "8.5.3",
       cues=[r"per draft token", r"one draft token"]),
    _s(r"T_\text{step}", "time of one plain decode step (no draft, no prompt chunk)", "s",
       "8.5.2",
       cues=[r"plain (decode )?step @", r"decode step @", r"plain decode step"]),
    _s(r"T_\text{prep}", "one-off time to prepare a drafter (build its index)", "s", "8.5.2",
       cues=[r"prepare a drafter"]),
    _s(r"m_\text{grp}", "draft positions an engine pads to (one execution group)", "positions",
       "8.5.4",
       cues=[r"pads? to", r"padded to"]),
    # --- 8.6: load and configuration ----------------------------------------------------------
    _s(r"\lambda", "rate at which requests arrive", "requests/s", "8.6.1",
       cues=[r"arriv\w* at rate @", r"arrival rate", r"rate at which requests arrive"]),
    _s(r"n_\text{new}", "input tokens of a request that are not already cached", "tokens",
       "8.6.1",
       cues=[r"uncached", r"not (already )?cached", r"@ new input"]),
    _s(r"T_\text{obs}", "length of an observation window", "s", "8.6.1",
       cues=[r"observation window", r"window @"]),
    _s(r"\bar n_\text{sys}", "mean number of requests in the system, $\\lambda \\bar T$",
       "requests", "8.6.1", chapter="$\\bar n$ (8.6.1)",
       cues=[r"in the system"]),
    _s(r"t_\text{slack}", "longest a request may wait in the queue and still meet its "
       "deadline or TTFT target", "s", "8.6.1",
       cues=[r"slack", r"still meet its"]),
    _s(r"\kappa_i", "1 if request $i$ was answered correctly", "-", "8.6.2",
       cues=[r"answered correctly"]),
    _s(r"\tau_i", "1 if request $i$ finished on time", "-", "8.6.2",
       cues=[r"finished on time"]),
    _s(r"R_\text{good}", "requests per second that were correct and on time", "requests/s",
       "8.6.2",
       cues=[r"goodput", r"per second that were correct"]),
    _s(r"R_\text{done}", "requests completed per second", "requests/s", "8.6.2",
       cues=[r"completed per second"]),
    _s(r"\mu_p", "prefill tokens per second one card or GPU group sustains", "tokens/s",
       "8.6.3", chapter="$r_P$ (8.6.3)",
       cues=[r"prefill (speed|rate) @", r"prefill tokens per second", r"@ prompt tokens/s"]),
    _s(r"\mu_d", "decode tokens per second one card or GPU group sustains", "tokens/s",
       "8.6.3", chapter="$r_D$ (8.6.3)",
       cues=[r"decode (speed|rate) @", r"decode tokens per second", r"@ output tokens/s"]),
    _s(r"t_\text{GPU}", "GPU-seconds one request occupies", "s", "8.6.3",
       cues=[r"GPU.seconds"]),
    _s("f", "fraction of a task's time that an improvement speeds up (Amdahl)", "-", "8.6.3",
       cues=[r"fraction @", r"fraction of a task"]),
    _s(r"\sigma", "factor by which that part gets faster", "-", "8.6.3",
       cues=[r"@ times faster", r"gets faster", r"speed(ing)? up .* by @"]),
    _s(r"t_\text{stage}", "time one stage takes ($t_\\text{stage}(i)$: stage $i$'s): a stage of "
       "an agent task, or of a pipeline per microbatch (17 §7)", "s", "8.6.3",
       cues=[r"stage times?", r"time one stage takes"]),
    _s(r"n_\text{good}", "results that were correct and on time", "results", "8.6.3"),
    # --- Chapter 17 ---------------------------------------------------------------------------
    _s(r"t_\text{sweep}", "time to read a card's whole memory once", "s", "17.1",
       cues=[r"sweep", r"whole memory"]),
    _s(r"\mathbf{Q}", "attention's query, key and value matrices", "-", "17.1",
       also=[r"\mathbf{K}", r"\mathbf{V}"]),
    _s("n_q", "query heads per layer", "-", "17.2",
       cues=[r"query heads @", r"@ query heads", r"query heads per layer"]),
    _s(r"t_\text{stall}", "how long one prompt's prefill stalls the running decodes", "s",
       "17.3",
       cues=[r"stall"]),
    _s("g", "GPUs in one tensor-parallel group (the TP degree)", "GPUs", "17.4",
       chapter="$p$ (17 §7)",
       cues=[r"@ GPUs\b", r"TP degree", r"tensor.parallel group"]),
    _s(r"L_\text{max}", "longest sequence a request may grow to (the server's max_len)", "tokens",
       "17.5", cues=[r"longest sequence", r"max_len"]),
    _s(r"L_\text{res}", "tokens a worst-case allocator reserves for each sequence", "tokens",
       "17.5", cues=[r"reservations? of @", r"reservation of @", r"reserves for each sequence"]),
    _s(r"L_\text{turn}", "tokens a short chat turn holds", "tokens", "17.5",
       cues=[r"holds only @", r"chat turn"]),
    _s(r"b_\text{res}", "largest batch whose worst-case reservations fit in the KV memory",
       "sequences", "17.5", cues=[r"worst-case reservations fit"]),
    _s(r"b_\text{paged}", "largest batch whose live KV fits in the KV memory (paged, no block "
       "rounding)", "sequences", "17.5", cues=[r"live KV fits"]),
    _s(r"b_\text{ITL}", "largest batch whose decode step meets the ITL target", "sequences",
       "17.5", cues=[r"meets the ITL target"]),
    _s(r"n_\text{users}", "users that share one system prompt", "users", "17.5",
       cues=[r"@ users", r"users that share"]),
    _s(r"T_\text{chunk}", "compute time of one prompt chunk, as 17 §6 prices it", "s", "17.6"),
    _s(r"T_\text{pass}", "time of one fused forward pass (decode tokens and a chunk together)",
       "s", "17.6",
       cues=[r"fused forward pass"]),
    _s("S", "pipeline stages", "stages", "17.7", chapter="$p$ (17 §7)",
       cues=[r"@ stages", r"stage @", r"pipeline stages"]),
    _s("M", "microbatches in flight in a pipeline", "microbatches", "17.7",
       chapter="$m$ (17 §7)",
       cues=[r"@ microbatch", r"microbatches in flight"]),
    _s(r"d_\text{model}", "width of the hidden state a token carries between layers", "values",
       "17.7",
       cues=[r"hidden (size|state) @", r"width of the hidden"]),
    _s(r"n_\text{coll}", "collectives per step ($2\\,n_\\text{layers}$ for tensor parallelism)",
       "-", "17.7",
       cues=[r"collectives per step", r"@ collectives"]),
    _s(r"T_\text{floor}", "fixed latency of one collective", "s", "17.7",
       cues=[r"latency floor", r"fixed latency"]),
    _s(r"t_\text{msg}", "latency of one message between two GPUs (one step of a ring)", "s",
       "17.7", cues=[r"pays a latency @", r"latency of one message"]),
    _s(r"T_\text{ring}", "time of one ring all-reduce", "s", "17.7",
       cues=[r"ring all-reduce"]),
    _s(r"g_\text{node}", "GPUs in one node (one NVLink domain)", "GPUs", "17.7",
       cues=[r"node of @", r"GPUs (per|in one) node"]),
    _s(r"T_\text{pipe}", "time until the last of $M$ microbatches leaves the pipeline", "s",
       "17.7", cues=[r"last microbatch leaves", r"leaves the pipeline"]),
    _s(r"g_\text{prefill}", "GPU groups in the prefill pool ($g_\\text{decode}$: in the decode "
       "pool)", "groups", "17.8", also=[r"g_\text{decode}"]),
    _s(r"T_\text{ship}", "time to move a request's KV from the prefill pool to the decode pool",
       "s", "17.8",
       cues=[r"\bship", r"move a request's KV"]),
    _s("t", "number of a conversation's turn", "-", "17.8",
       cues=[r"turn @", r"number of a conversation's turn"]),
    _s("L_t", "context at turn $t$", "tokens", "17.8"),
    _s(r"T_\text{cold}", "TTFT of a turn on a worker without its prefix ($T_\\text{warm}$: with "
       "it)", "s", "17.8", also=[r"T_\text{warm}"]),
    _s(r"f_\text{warm}", "share of turns that land on a warm worker", "-", "17.8",
       cues=[r"land(ing|s)? (on a )?warm"]),
    _s(r"N_\text{draft}", "parameters of the draft model", "parameters", "17.10",
       cues=[r"parameters of the draft", r"draft model's parameters"]),
)

# section -> notebook (relative to notebooks/)
NOTEBOOKS = {
    "8.1": "ch08_inference_optimization/08_1_request_lifecycle.ipynb",
    "8.2": "ch08_inference_optimization/08_2_batching_and_scheduling.ipynb",
    "8.3": "ch08_inference_optimization/08_3_kv_cache.ipynb",
    "8.4": "ch08_inference_optimization/08_4_compression_and_offloading.ipynb",
    "8.5": "ch08_inference_optimization/08_5_speculative_decoding.ipynb",
    "8.6": "ch08_inference_optimization/08_6_load_and_configuration.ipynb",
    "17.1": "ch17_performance/17_01_memory_hierarchy.ipynb",
    "17.2": "ch17_performance/17_02_roofline.ipynb",
    "17.3": "ch17_performance/17_03_prefill_vs_decode.ipynb",
    "17.4": "ch17_performance/17_04_kv_sizing.ipynb",
    "17.5": "ch17_performance/17_05_paged_attention.ipynb",
    "17.6": "ch17_performance/17_06_batching_strategies.ipynb",
    "17.7": "ch17_performance/17_07_parallelism.ipynb",
    "17.8": "ch17_performance/17_08_disaggregation_and_routing.ipynb",
    "17.9": "ch17_performance/17_09_measuring.ipynb",
    "17.10": "ch17_performance/17_10_levers.ipynb",
}


def _index() -> dict[str, Symbol]:
    index: dict[str, Symbol] = {}
    for s in SYMBOLS:
        for key in s.keys:
            if key in index:
                raise ValueError(f"notation: {key!r} is in the table twice")
            index[key] = s
    return index


_INDEX = _index()


def lookup(symbol: str) -> Symbol | None:
    """The table's entry for a canonical symbol (``notation_tex.symbols_in``), or None.

    A symbol the table lacks is still read as an entry when it is that entry with an index
    (``G_i``: the output tokens of request $i$), a change (``\\Delta T_r``) or a mean
    (``\\bar T``); its own row wins where it has one (``t_i``, ``\\Delta D``)."""
    if symbol in _INDEX:
        return _INDEX[symbol]
    base = base_of(symbol)
    if base != symbol:
        return lookup(base)
    if symbol.endswith("_i") and symbol[:-2] in _INDEX:
        return _INDEX[symbol[:-2]]
    return None


def entry_for(tex: str) -> Symbol:
    """The entry of a symbol written in TeX (``entry_for(r"T_\\text{rec}")``)."""
    found = lookup(canonical(tex))
    if found is None:
        raise ValueError(f"tex: {tex!r} is not in the notation table")
    return found


def section_label(section: str) -> str:
    """"8.3.4" as written, "17.7" as "17 §7"."""
    if section.startswith("17."):
        return "17 §" + section.split(".", 1)[1]
    return section


def notebook_of(section: str) -> str:
    """The notebook (relative to ``notebooks/``) of the section that introduces a symbol."""
    parts = section.split(".")
    return NOTEBOOKS[".".join(parts[:2])]


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def markdown_table() -> str:
    """The table as Markdown, for the notation page: symbol, meaning, unit, where it is
    introduced (a link to the notebook) and what the chapters write instead."""
    lines = ["| symbol | meaning | unit | introduced | the chapters write |",
             "|---|---|---|---|---|"]
    for s in SYMBOLS:
        shown = ", ".join(f"${t}$" for t in (s.tex,) + s.also)
        label = section_label(s.section)
        link = f"[{label}]({notebook_of(s.section)})"
        lines.append(f"| {_cell(shown)} | {_cell(s.meaning)} | {s.unit} | {link} | "
                     f"{_cell(s.chapter) or '-'} |")
    return "\n".join(lines)
