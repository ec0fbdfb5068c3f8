"""8.5 explorers: speculative decoding.

``GreedyVerificationPanel``: Figure 8-29 stepped through by the simulator's greedy verifier.
``RejectionSamplingPanel``: the simulator's rejection sampling on two symbols, emitted
frequencies against the target p (seeded), and tokens per round against the exact law.
``SpeculativeLatencyPanel``: acceptance, draft length, draft and verification cost ->
latency per token, the draft-cost crossover (Figure 8-32), a request's time with an index.
``DraftLengthPanel``: Exercise 8-7's serial-draft setting, T_m = T_v + t_d g ceil(m / g),
the best draft length and the marginal condition dT / dN < T / N.
"""

from __future__ import annotations

import math

import numpy as np

from companion import calc, units
from companion.chapters import ch08
from companion.figures.ch08_speculative import (DRAFT_COST_LAYOUT, DRAFT_LENGTH_LAYOUT,
                                                REJECTION_LAYOUT, REJECTION_ROUNDS_AXES,
                                                draft_cost_traces, draft_length_traces,
                                                greedy_verification_layout,
                                                greedy_verification_traces,
                                                rejection_sampling_traces)
from companion.formulas import speculative as sp
from companion.explorers.base import Control, Panel, View
from companion.sim import speculative as sim

__all__ = ["GreedyVerificationPanel", "RejectionSamplingPanel", "SpeculativeLatencyPanel",
           "DraftLengthPanel", "greedy_example", "VERIFICATION_WORDS"]

# --- Figure 8-29 ------------------------------------------------------------------------------
# A toy vocabulary so the figure shows words instead of token ids. The draft proposes
# _DRAFT; at the first mismatch the target prefers _CORRECTION; after a full match it adds ".".
_DRAFT = ("the", "cat", "sat", "on", "the", "warm", "mat", "today")
_CORRECTION = ("a", "dog", "lay", "in", "a", "soft", "rug", "again")
VERIFICATION_WORDS = tuple(dict.fromkeys(_DRAFT + _CORRECTION + (".",)))
_ID = {w: i for i, w in enumerate(VERIFICATION_WORDS)}
MAX_DRAFT = len(_DRAFT)


def greedy_example(draft_len: int = 4, first_mismatch: int = 3):
    """Run ``companion.sim.speculative.verify_greedy`` on the toy sentence of Figure 8-29.

    The draft is the first ``draft_len`` words of "the cat sat on the warm mat today"; the
    target agrees up to position ``first_mismatch`` - 1, prefers another word there, and (its
    later choices being conditioned on the rejected word) agrees with the draft again after it,
    which the verifier must still discard. ``first_mismatch`` = draft_len + 1 means every
    draft token matches and the target adds a bonus ".". Figure 8-29: 4 drafts, the third
    diverges: 2 kept + 1 corrected = 3 outputs, 1 discarded.
    """
    m = max(1, min(int(draft_len), MAX_DRAFT))
    k = max(1, min(int(first_mismatch), m + 1))
    draft = [_ID[w] for w in _DRAFT[:m]]
    target = list(draft)
    if k <= m:
        target[k - 1] = _ID[_CORRECTION[k - 1]]
    target.append(_ID["."])           # the target's pick after the whole draft
    return sim.verify_greedy(draft, target)


class GreedyVerificationPanel(Panel):
    """Figure 8-29 live: move the first mismatch and read the verification step by step."""

    title = "Greedy verification, position by position (8.5.1, Figure 8-29)"
    controls = (
        Control("draft_len", "draft length m (tokens)", "int", 4, 1, MAX_DRAFT, 1),
        Control("first_mismatch", "first mismatching position (m + 1: all match)", "int", 3,
                1, MAX_DRAFT + 1, 1),
        Control("step", "positions read so far", "int", 4, 0, MAX_DRAFT + 1, 1),
    )
    base_layout = dict(greedy_verification_layout(MAX_DRAFT + 1), height=360)

    def compute(self, *, draft_len, first_mismatch, step) -> View:
        ver = greedy_example(draft_len, first_mismatch)
        shown = min(step, len(ver.steps))
        traces = greedy_verification_traces(ver, shown, VERIFICATION_WORDS)
        read = ver.steps[:shown]
        kept = sum(s["verdict"] == "accept" for s in read)
        emitted = sum(s["verdict"] in ("accept", "bonus") or s["verdict"].startswith("reject")
                      for s in read)
        numbers = {"accepted_draft_tokens": ver.accepted, "emitted_tokens": len(ver.output),
                   "discarded_draft_tokens": ver.discarded, "positions_read": shown,
                   "emitted_so_far": emitted}
        words = " ".join(VERIFICATION_WORDS[t] for t in ver.output)
        last = ("correction" if ver.correction is not None else "bonus token")
        text = (f"draft: <i>{' '.join(VERIFICATION_WORDS[t] for t in ver.draft)}</i><br>"
                f"read {shown} of {len(ver.steps)} positions; kept so far: {kept}<br>"
                f"round result: <b>{ver.accepted}</b> draft tokens kept + 1 {last} = "
                f"<b>{len(ver.output)}</b> outputs (<i>{words}</i>)<br>"
                f"discarded: <b>{ver.discarded}</b> draft token(s)")
        return View(numbers=numbers, traces=traces, text=text)


# --- 8.5.1 rejection sampling ------------------------------------------------------------------

class RejectionSamplingPanel(Panel):
    """Draft from q, accept with min(1, p/q), resample [p - q]+ on rejection: the emitted
    tokens follow p whatever q is; q only changes how many tokens a round yields."""

    title = "Rejection sampling on two symbols (8.5.1-8.5.2), simulated"
    controls = (
        Control("p_a", "target p(A)", "float", sp.TOY_TARGET_PROBS[0], 0.0, 1.0, 0.01),
        Control("q_a", "draft q(A)", "float", sp.TOY_DRAFT_ALWAYS_A[0], 0.0, 1.0, 0.01),
        Control("draft_len", "draft length m (tokens)", "int", sp.TOY_DRAFT_LEN, 0, 8, 1),
        Control("rounds", "simulated rounds", "int", 4000, 100, 20000, 100),
        Control("seed", "random seed", "int", 0, 0, 99, 1),
    )
    base_layout = dict(REJECTION_LAYOUT, **REJECTION_ROUNDS_AXES)

    def compute(self, *, p_a, q_a, draft_len, rounds, seed) -> View:
        p, q = [p_a, 1.0 - p_a], [q_a, 1.0 - q_a]
        runs = sim.simulate_rounds(p, q, draft_len, rounds, seed=seed)
        emitted = runs.emitted_tokens()
        sampled = np.bincount(emitted, minlength=2)[:2] / len(emitted)
        exact = sim.output_distribution(p, q)
        per_round = np.bincount(runs.tokens_per_round, minlength=draft_len + 2)[1:] / rounds
        per_round_exact = sim.tokens_per_round_distribution(p, q, draft_len)
        acceptance = calc.speculative_acceptance_rate(p, q)
        expected = calc.speculative_expected_tokens(acceptance, draft_len)
        # the exact output distribution equals p (the readout checks it); not drawn twice
        traces, _ = rejection_sampling_traces(
            ["A", "B"], p, q, sampled.tolist(), rounds_hist=per_round.tolist(),
            rounds_exact=per_round_exact.tolist(), samples=rounds)
        numbers = {"acceptance": acceptance, "expected_tokens": expected,
                   "exact_output_A": float(exact[0]),
                   "simulated_tokens_per_round": runs.mean_tokens,
                   "simulated_share_A": float(sampled[0]), "target_share_A": p_a,
                   "emitted_tokens": int(len(emitted))}
        text = (f"acceptance a = &Sigma; min(p, q) = <b>{acceptance:.3f}</b><br>"
                f"E[N] = 1 + a + ... + a<sup>{draft_len}</sup> = <b>{expected:.2f}</b> tokens "
                f"per round; simulated {runs.mean_tokens:.2f}<br>"
                f"emitted A: {sampled[0]:.3f} simulated ({len(emitted):,} tokens), "
                f"{exact[0]:.3f} exact, vs p(A) = {p_a:.2f}<br><i>seeded: seed {seed}</i>")
        return View(numbers=numbers, traces=traces, text=text)


# --- 8.5.2 latency per token and Figure 8-32 ---------------------------------------------------

_CHAPTER_DRAFTS = (("AAAA (a = 1/4)", 0.25), ("BBBB (a = 3/4)", 0.75))


class SpeculativeLatencyPanel(Panel):
    """Latency per output token (T_verify + T_draft) / E[N] against plain decode, the largest
    draft cost that still pays (Figure 8-32), and one request's time after a one-off index."""

    title = "Latency per token and the draft-cost crossover (8.5.2, Figure 8-32)"
    controls = (
        Control("acceptance", "acceptance a per position", "float", 0.75, 0.0, 1.0, 0.01),
        Control("draft_len", "draft length m (tokens)", "int", sp.TOY_DRAFT_LEN, 0, 12, 1),
        Control("draft_ms", "draft cost per round (ms)", "float",
                sp.DRAFT_QUERY_S / units.ms, 0.0, 100.0, 0.1),
        Control("verify_ms", "verification round (ms)", "float",
                sp.DECODE_ROUND_S_BATCH1_2K / units.ms, 5.0, 60.0, 0.01),
        Control("plain_ms", "plain decode round (ms)", "float",
                sp.DECODE_ROUND_S_BATCH1_2K / units.ms, 5.0, 60.0, 0.01),
        Control("prep_s", "one-off preparation, e.g. index build (s)", "float",
                sp.INDEX_BUILD_S, 0.0, 10.0, 0.1),
        Control("output_tokens", "request output (tokens)", "int", sp.TOY_OUTPUT_TOKENS,
                1, 1024, 1),
    )
    base_layout = DRAFT_COST_LAYOUT

    def compute(self, *, acceptance, draft_len, draft_ms, verify_ms, plain_ms, prep_s,
                output_tokens) -> View:
        verify, draft, plain = verify_ms * units.ms, draft_ms * units.ms, plain_ms * units.ms
        n = calc.speculative_expected_tokens(acceptance, draft_len)
        latency = calc.speculative_latency_per_token(verify, n, draft)
        crossover = calc.draft_cost_crossover(verify, n, plain)
        spec_s = calc.speculative_request_time(output_tokens, verify + draft, acceptance,
                                               draft_len, prep_s=prep_s)
        plain_s = calc.speculative_request_time(output_tokens, plain, 0.0, 0)
        break_even = calc.prep_break_even_tokens(prep_s, plain, latency)
        refs = [(label, calc.speculative_expected_tokens(a, sp.TOY_DRAFT_LEN))
                for label, a in _CHAPTER_DRAFTS]
        mine = f"this setting (a = {acceptance:.2f}, m = {draft_len})"
        crossings = [(label, calc.draft_cost_crossover(verify, en, plain)) for label, en in refs]
        crossings.append(("this setting", crossover))
        x_max = max(60 * units.ms, 1.15 * max(c for _, c in crossings), 1.2 * draft)
        xs = [0.0, x_max]
        curves = {f"{label}, m = {sp.TOY_DRAFT_LEN}":
                  [calc.speculative_latency_per_token(verify, en, d) for d in xs]
                  for label, en in refs}
        curves[mine] = [calc.speculative_latency_per_token(verify, n, d) for d in xs]
        traces, _ = draft_cost_traces(
            xs, curves, plain, [c for c in crossings if c[1] >= 0],
            (draft, latency, "this setting's draft cost"))
        numbers = {"expected_tokens": n, "latency_per_token_ms": latency / units.ms,
                   "speedup_vs_plain": plain / latency, "crossover_ms": crossover / units.ms,
                   "request_s": spec_s, "plain_request_s": plain_s,
                   "break_even_tokens": break_even}
        pays = "pays" if crossover > draft else "<b>does not pay</b>"
        be = "never" if math.isinf(break_even) else f"{break_even:,.0f} tokens"
        text = (f"E[N] = <b>{n:.2f}</b> tokens per round<br>"
                f"latency per token: <b>{latency / units.ms:.2f} ms</b> vs plain "
                f"{plain_ms:.2f} ms ({plain / latency:.2f}x)<br>"
                f"draft may cost up to <b>{crossover / units.ms:.1f} ms</b> per round "
                f"(now {draft_ms:g} ms: {pays})<br>"
                f"{output_tokens}-token request: {plain_s:.2f} s plain, <b>{spec_s:.2f} s</b> "
                f"with {prep_s:g} s of preparation<br>"
                f"preparation is paid back after {be}")
        return View(numbers=numbers, traces=traces, text=text)


# --- 8.5.4 / Exercise 8-7: draft length and padding --------------------------------------------

_LENGTHS = list(range(0, 17))


class DraftLengthPanel(Panel):
    """Latency per token T_m / E[N_m] for serial drafts of length m, with the draft's positions
    padded to groups of g, and the marginal test for the length under study (8.5.4)."""

    title = "Draft length, shape padding and the marginal condition (8.5.4, Exercise 8-7)"
    controls = (
        Control("acceptance", "acceptance a per position", "float", ch08.EXERCISE_8_7_ACCEPTANCE,
                0.0, 1.0, 0.01),
        Control("verify_ms", "verification round T_v (ms)", "float",
                units.to_unit(ch08.EXERCISE_8_7_VERIFY_S, "ms"), 5.0, 60.0, 0.1),
        Control("per_draft_ms", "draft cost per position t_d (ms)", "float",
                units.to_unit(ch08.EXERCISE_8_7_PER_DRAFT_S, "ms"), 0.0, 20.0, 0.1),
        Control("group", "draft positions padded to groups of g", "int", 1, 1, 8, 1),
        Control("draft_len", "draft length under study m (tokens)", "int", 4, 1, 16, 1),
    )
    base_layout = DRAFT_LENGTH_LAYOUT

    def compute(self, *, acceptance, verify_ms, per_draft_ms, group, draft_len) -> View:
        verify, per_draft = verify_ms * units.ms, per_draft_ms * units.ms
        plain_rows = calc.draft_length_table(acceptance, _LENGTHS, verify, per_draft, 1)
        padded_rows = calc.draft_length_table(acceptance, _LENGTHS, verify, per_draft, group)
        best_plain = calc.best_draft_length(acceptance, _LENGTHS, verify, per_draft, 1)
        best_padded = calc.best_draft_length(acceptance, _LENGTHS, verify, per_draft, group)
        gain = calc.marginal_draft_gain(acceptance, draft_len, verify, per_draft, group)
        row = padded_rows[draft_len]
        tables = {"one draft position at a time (g = 1)": plain_rows,
                  f"padded to groups of {group}": padded_rows}
        best = {"g = 1": (best_plain, plain_rows[best_plain]["latency_per_token_s"]),
                f"g = {group}": (best_padded, padded_rows[best_padded]["latency_per_token_s"])}
        traces, _ = draft_length_traces(tables, examined=(draft_len, row["latency_per_token_s"]),
                                        best=best)
        numbers = {"expected_tokens": row["expected_tokens"], "round_ms": row["round_s"] / units.ms,
                   "latency_per_token_ms": row["latency_per_token_s"] / units.ms,
                   "added_ms": gain["added_s"] / units.ms, "added_tokens": gain["added_tokens"],
                   "marginal_ms_per_token": gain["marginal_s_per_token"] / units.ms,
                   "current_ms_per_token": gain["current_s_per_token"] / units.ms,
                   "extension_helps": gain["helps"], "best_draft_len": best_padded,
                   "best_draft_len_ungrouped": best_plain}
        verdict = "helps" if gain["helps"] else "<b>does not help</b>"
        text = (f"m = {draft_len}, g = {group}: E[N] = {row['expected_tokens']:.3f}, "
                f"T = {row['round_s'] / units.ms:.1f} ms, "
                f"<b>{row['latency_per_token_s'] / units.ms:.2f} ms/token</b><br>"
                f"going from m = {draft_len - 1} to {draft_len}: dT = "
                f"{gain['added_s'] / units.ms:.1f} ms for dN = {gain['added_tokens']:.3f} "
                f"tokens<br>dT/dN = {gain['marginal_s_per_token'] / units.ms:.1f} ms vs T/N = "
                f"{gain['current_s_per_token'] / units.ms:.2f} ms: the extra position "
                f"{verdict}<br>best length: {best_plain} (g = 1), {best_padded} (g = {group})")
        return View(numbers=numbers, traces=traces, text=text)
