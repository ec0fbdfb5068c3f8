"""Closed forms of speculative decoding (8.5): acceptance, expected output, latency, draft cost.

A round verifies a draft of m tokens (m + 1 positions) with one target pass and emits between 1
and m + 1 tokens. Everything here is per request at a fixed round time; how the round time
itself comes about (weights and KV read, verification FLOPs) is in ``verification_flops`` and in
``companion.formulas.serving``.
"""

from __future__ import annotations

import math
import numbers

from companion import validate as v
from companion.formulas.core import (attention_flops, matrix_flops,
                                     speculative_expected_tokens)
from companion.serves import serves
from companion.specs import Model

__all__ = [
    "mean_latency_per_token", "unweighted_round_latency", "speculative_acceptance_rate",
    "speculative_residual_distribution", "verification_outcome",
    "speculative_output_distribution", "speculative_expected_rounds", "speculative_request_time",
    "verification_flops", "verification_extra_flops", "speculative_latency_per_token",
    "draft_cost_crossover", "prep_break_even_tokens", "effective_read_bandwidth",
    "draft_forward_time", "draft_generation_time", "speculative_round_stages",
    "draft_round_time", "draft_length_table",
    "best_draft_length", "marginal_draft_gain", "draft_extension_helps",
    "verification_ridge_batch", "verification_under_load", "draft_kv_budget",
]


# --- averaging over rounds (8.5.2) ----------------------------------------------------------

def _rounds(round_times_s, round_tokens):
    times = v.sequence("round_times_s", round_times_s)
    toks = v.sequence("round_tokens", round_tokens)
    if len(times) != len(toks):
        raise ValueError(f"round_tokens: has {len(toks)} items but round_times_s has {len(times)}")
    t = [v.nonnegative(f"round_times_s[{i}]", x) for i, x in enumerate(times)]
    n = [v.tokens(f"round_tokens[{i}]", x, minimum=1) for i, x in enumerate(toks)]
    return t, n


@serves("8.5.2")
def mean_latency_per_token(round_times_s, round_tokens) -> float:
    """Average latency per output token over rounds: sum_r T_r / sum_r N_r seconds (8.5.2).

    Two 1.5 ms rounds emitting 1 and 5 tokens: 3 ms / 6 tokens = 0.5 ms per token.
    """
    t, n = _rounds(round_times_s, round_tokens)
    return sum(t) / sum(n)


@serves("8.5.2")
def unweighted_round_latency(round_times_s, round_tokens) -> float:
    """The *wrong* average: mean over rounds of T_r / N_r seconds (8.5.2's 0.9 ms, not 0.5).

    It weighs a round that emits one token the same as one that emits five.
    """
    t, n = _rounds(round_times_s, round_tokens)
    return sum(ti / ni for ti, ni in zip(t, n)) / len(t)


# --- acceptance (8.5.1) ----------------------------------------------------------------------

def _distribution(name: str, probs) -> list[float]:
    seq = v.sequence(name, probs)
    p = [v.probability(f"{name}[{i}]", x) for i, x in enumerate(seq)]
    if abs(sum(p) - 1.0) > 1e-9:
        raise ValueError(f"{name}: probabilities must sum to 1, got {sum(p)!r}")
    return p


def _two_distributions(target_probs, draft_probs):
    p = _distribution("target_probs", target_probs)
    q = _distribution("draft_probs", draft_probs)
    if len(p) != len(q):
        raise ValueError(f"draft_probs: has {len(q)} symbols but target_probs has {len(p)}")
    return p, q


@serves("8.5.1")
def speculative_acceptance_rate(target_probs, draft_probs) -> float:
    """Probability a draft token sampled from q is accepted: sum_x min(p(x), q(x)) (8.5.1).

    Each x is accepted with alpha(x) = min(1, p(x)/q(x)), so q(x) alpha(x) = min(p(x), q(x)).
    Target p = (1/4, 3/4): a draft that always says A is accepted 1/4 of the time, B 3/4.
    """
    p, q = _two_distributions(target_probs, draft_probs)
    return sum(min(pi, qi) for pi, qi in zip(p, q))


@serves("8.5.1")
def speculative_residual_distribution(target_probs, draft_probs) -> list[float]:
    """Distribution resampled after a rejection: [p(x) - q(x)]_+ normalised (8.5.1).

    Acceptance plus resampling gives exactly p. When q = p nothing is ever rejected and the
    residual is undefined; all zeros are returned then.
    """
    p, q = _two_distributions(target_probs, draft_probs)
    residual = [max(pi - qi, 0.0) for pi, qi in zip(p, q)]
    total = sum(residual)
    return [r / total for r in residual] if total > 1e-15 else [0.0] * len(p)


@serves("8.5.1", "8.5.4")
def verification_outcome(draft_len: int, accepted: int) -> tuple[int, int]:
    """(tokens emitted, draft tokens discarded) of one greedy verification round (8.5.1, 8.5.4).

    The first ``accepted`` draft tokens match: they are kept plus one token from the target (the
    correction, or the bonus token when all match); the rest of the draft is discarded.
    Figure 8-29: 4 drafts, the third diverges -> 2 + 1 = 3 outputs, 2 discarded; K7 and K15
    accepting one draft token discard 6 and 14.
    """
    m = v.tokens("draft_len", draft_len)
    k = v.tokens("accepted", accepted)
    if k > m:
        raise ValueError(f"accepted: {k} exceeds draft_len={m}")
    return k + 1, m - k


# --- expected output and rounds (8.5.2, 8.5.4) -----------------------------------------------

def _acceptances(acceptance, draft_len) -> list[float]:
    """Conditional acceptances a_1..a_m from a scalar with draft_len, or a sequence."""
    if draft_len is None:
        seq = v.sequence("acceptance", acceptance, min_len=0)
        return [v.probability(f"acceptance[{i}]", a) for i, a in enumerate(seq)]
    m = v.integer("draft_len", draft_len, minimum=0)
    return [v.probability("acceptance", acceptance)] * m


@serves("8.5.2", "8.5.4")
def speculative_output_distribution(acceptance, draft_len: int | None = None) -> list[float]:
    """P(N = k) for k = 1 .. m+1 tokens emitted by one round (8.5.2's geometric model, 8.5.4).

    P(N >= k+1) = a_1 ... a_k, so P(N = k) = a_1...a_{k-1} (1 - a_k) and P(N = m+1) = a_1...a_m.
    Its mean is ``speculative_expected_tokens``.
    """
    probs = _acceptances(acceptance, draft_len)
    dist, survive = [], 1.0
    for a in probs:
        dist.append(survive * (1.0 - a))
        survive *= a
    dist.append(survive)
    return dist


@serves("8.5.2")
def speculative_expected_rounds(output_tokens: int, acceptance,
                                draft_len: int | None = None) -> float:
    """Exact expected number of rounds until ``output_tokens`` tokens are out (8.5.2).

    The last round is cut off at the target length, so this is not G / E[X]: with
    R(g) = expected rounds for g tokens still to go, R(g <= 0) = 0 and
    R(g) = 1 + sum_k P(N = k) R(g - k). For G = 256 and BBBB (a = 3/4, m = 4): 84.39 rounds,
    against 256 / 3.05 = 83.91. Wald's identity bounds it: G / E[X] <= R(G) < (G + m) / E[X].
    """
    g_total = v.tokens("output_tokens", output_tokens, minimum=1)
    dist = speculative_output_distribution(acceptance, draft_len)
    if dist[0] >= 1.0:  # every round emits one token
        return float(g_total)
    rounds = [0.0] * (g_total + 1)
    for g in range(1, g_total + 1):
        rounds[g] = 1.0 + sum(p * rounds[max(g - k, 0)] for k, p in enumerate(dist, start=1))
    return rounds[g_total]


@serves("8.5.2")
def speculative_request_time(output_tokens: int, round_s: float, acceptance,
                             draft_len: int | None = None, *, prep_s: float = 0.0,
                             exact_rounds: bool = True) -> float:
    """Time for one request's G tokens: prep_s + rounds x round_s seconds (8.5.2).

    ``exact_rounds`` uses ``speculative_expected_rounds`` (the last round cut off at G: 4.22 s
    for the 256-token BBBB request after a 2 s index); False uses G / E[X] (4.21 s). With
    draft_len = 0 it is plain decode: G x round_s (256 x 26.26 ms = 6.72 s).
    """
    g = v.tokens("output_tokens", output_tokens, minimum=1)
    r = v.positive("round_s", round_s)
    prep = v.nonnegative("prep_s", prep_s)
    if exact_rounds:
        rounds = speculative_expected_rounds(g, acceptance, draft_len)
    else:
        rounds = g / speculative_expected_tokens(acceptance, draft_len)
    return prep + rounds * r


# --- verification work (8.5.2, 8.6.3) ------------------------------------------------------

@serves("8.6.3")
def verification_flops(model: Model, positions: int, context_tokens: int, batch: int = 1) -> float:
    """FLOPs of verifying ``positions`` rows per request: b (2 P_read positions + attention).

    Verification rows go through every read-once matrix, lm_head included (P_read = D_w / 2),
    plus causal attention of the rows on the cached context. Scheme D (8.6.3): 16 requests x
    8 positions on 8192 tokens = 2.56 TFLOP.
    """
    pos = v.tokens("positions", positions, minimum=1)
    ctx = v.tokens("context_tokens", context_tokens)
    b = v.count("batch", batch)
    return b * (matrix_flops(model, pos, include_lm_head=True)
                + attention_flops(model, pos, ctx))


@serves("8.5.2")
def verification_extra_flops(model: Model, positions: int, context_tokens: int,
                             batch: int = 1) -> float:
    """FLOPs that ``positions`` verification rows add over a plain one-row decode step (8.5.2).

    5 positions on a 2K context at batch 1: about 65 GFLOP for the 4 extra rows.
    """
    return (verification_flops(model, positions, context_tokens, batch)
            - verification_flops(model, 1, context_tokens, batch))


# --- latency, draft cost, break-even (8.5.2-8.5.3) -------------------------------------------

@serves("8.5.2", "8.5.3")
def speculative_latency_per_token(verify_s: float, expected_tokens: float,
                                  draft_s: float = 0.0) -> float:
    """Average latency per output token: (T_verify + T_draft) / E[X] seconds (8.5.2-8.5.3).

    (26.26 + 0.1) / 1.33 = 19.8 ms (AAAA) and / 3.05 = 8.64 ms (BBBB); serial drafting
    (4 x 3.57 + 26.26) / 3 = 13.5 ms, parallel (3.57 + 26.26) / 3 = 9.9 ms.
    """
    t = v.positive("verify_s", verify_s)
    n = v.number("expected_tokens", expected_tokens, at_least=1.0)
    d = v.nonnegative("draft_s", draft_s)
    return (t + d) / n


@serves("8.5.2")
def draft_cost_crossover(verify_s: float, expected_tokens: float,
                         plain_round_s: float | None = None) -> float:
    """Largest draft cost per round that still beats plain decode: E[X] T_plain - T_verify (8.5.2).

    A round must take less than E[X] plain rounds. With T_verify = T_plain = 26.26 ms:
    AAAA leaves 8.7 ms for the draft, BBBB 53.9 ms (Figure 8-32). Negative: never pays.
    """
    t = v.positive("verify_s", verify_s)
    n = v.number("expected_tokens", expected_tokens, at_least=1.0)
    plain = t if plain_round_s is None else v.positive("plain_round_s", plain_round_s)
    return n * plain - t


@serves("8.5.2")
def prep_break_even_tokens(prep_s: float, plain_token_s: float, spec_token_s: float) -> float:
    """Output tokens after which a one-off preparation pays off: T_prep / (t_plain - t_spec).

    8.5.2: a 2 s index / (26.26 - 8.64 ms) = about 114 tokens. Infinite when nothing is saved.
    """
    prep = v.nonnegative("prep_s", prep_s)
    plain = v.positive("plain_token_s", plain_token_s)
    spec = v.positive("spec_token_s", spec_token_s)
    saving = plain - spec
    return prep / saving if saving > 0 else math.inf


@serves("8.5.3")
def effective_read_bandwidth(read_bytes: float, round_s: float) -> float:
    """Bytes per second a measured round achieved: bytes read / round time (8.5.3).

    15.44 GB in 26.26 ms: about 588 GB/s at batch 1.
    """
    return v.positive("read_bytes", read_bytes) / v.positive("round_s", round_s)


@serves("8.5.3")
def draft_forward_time(draft_weight_bytes: float, read_bytes_per_s: float) -> float:
    """One draft forward pass, read-bound: draft bytes / effective bandwidth (8.5.3).

    2.10 GB at 588 GB/s: 3.57 ms.
    """
    w = v.positive("draft_weight_bytes", draft_weight_bytes)
    bw = v.positive("read_bytes_per_s", read_bytes_per_s)
    return w / bw


@serves("8.5.3")
def draft_generation_time(forward_s: float, draft_tokens: int, parallel: bool = False) -> float:
    """Time to draft m tokens: m forward passes one at a time, or one pass in parallel (8.5.3).

    4 x 3.57 = 14.28 ms serial, 3.57 ms DFlash-style parallel.
    """
    f = v.nonnegative("forward_s", forward_s)
    m = v.tokens("draft_tokens", draft_tokens)
    parallel = v.boolean("parallel", parallel)
    if m == 0:
        return 0.0
    return f if parallel else m * f


SPECULATIVE_STAGES = ("draft generation", "verification preparation", "target verification",
                      "output determination")


@serves("8.5.3")
def speculative_round_stages(draft_s: float, verify_s: float, prep_s: float = 0.0,
                             decide_s: float = 0.0) -> list[dict]:
    """One speculative round as its four stages in order, each with start and duration (8.5.3).

    The stages run one after another: draft generation (``draft_s``: m passes one at a time,
    or one parallel pass, see ``draft_generation_time``), verification preparation (placing
    the draft tokens into the target's batch, ``prep_s``), the target's verification pass
    (``verify_s``) and output determination (comparing, rolling back, sampling, ``decide_s``).
    The chapter times only the first and the third and counts the other two as zero: serial
    4 x 3.57 + 26.26 = 40.54 ms per round, parallel 3.57 + 26.26 = 29.83 ms. Returns dicts with
    ``stage``, ``start_s``, ``duration_s`` and ``end_s``; the last ``end_s`` is the round time.
    """
    durations = (v.nonnegative("draft_s", draft_s), v.nonnegative("prep_s", prep_s),
                 v.positive("verify_s", verify_s), v.nonnegative("decide_s", decide_s))
    stages, start = [], 0.0
    for name, duration in zip(SPECULATIVE_STAGES, durations):
        stages.append(dict(stage=name, start_s=start, duration_s=duration,
                           end_s=start + duration))
        start += duration
    return stages


# --- draft length (8.5.4, Exercise 8-7) ------------------------------------------------------

def draft_round_time(draft_len: int, verify_s: float, per_draft_s: float, group: int = 1) -> float:
    """Round time with an m-token serial draft: T_m = T_v + t_d x g ceil(m / g) seconds (Ex. 8-7).

    group = 1: T_m = 26.3 + 3.6 m ms; group = 4 pads a partial group of draft positions to a
    full one (26.3 + 3.6 x 4 ceil(m/4)), so m = 5 costs as much as m = 8.
    """
    m = v.tokens("draft_len", draft_len)
    t = v.positive("verify_s", verify_s)
    d = v.nonnegative("per_draft_s", per_draft_s)
    g = v.count("group", group)
    return t + d * g * -(-m // g)


def draft_length_table(acceptance: float, draft_lens, verify_s: float, per_draft_s: float,
                       group: int = 1) -> list[dict]:
    """For each draft length m: E[X_m], T_m and T_m / E[X_m] (seconds per token) (Ex. 8-7).

    Rows are dicts with keys draft_len, expected_tokens, round_s, latency_per_token_s.
    """
    a = v.probability("acceptance", acceptance)
    seq = v.sequence("draft_lens", draft_lens)
    lens = [v.tokens(f"draft_lens[{i}]", x) for i, x in enumerate(seq)]
    rows = []
    for m in lens:
        n = speculative_expected_tokens(a, m)
        t = draft_round_time(m, verify_s, per_draft_s, group)
        rows.append(dict(draft_len=m, expected_tokens=n, round_s=t, latency_per_token_s=t / n))
    return rows


def best_draft_length(acceptance: float, draft_lens, verify_s: float, per_draft_s: float,
                      group: int = 1) -> int:
    """The draft length among ``draft_lens`` with the lowest latency per output token (Ex. 8-7)."""
    rows = draft_length_table(acceptance, draft_lens, verify_s, per_draft_s, group)
    return min(rows, key=lambda r: (r["latency_per_token_s"], r["draft_len"]))["draft_len"]


@serves("8.5.4")
def draft_extension_helps(round_s: float, expected_tokens: float, added_s: float,
                          added_tokens: float) -> bool:
    """Whether lengthening the draft lowers latency per token: dT/dN < T/N (8.5.4).

    (T + dT) / (N + dN) < T / N rearranges to dT / dN < T / N: the new output must cost less
    per token than the current average.
    """
    t = v.positive("round_s", round_s)
    n = v.number("expected_tokens", expected_tokens, at_least=1.0)
    dt = v.nonnegative("added_s", added_s)
    dn = v.nonnegative("added_tokens", added_tokens)
    if dn == 0:
        return False
    return dt / dn < t / n


@serves("8.5.4")
def marginal_draft_gain(acceptance, draft_len: int, verify_s: float, per_draft_s: float,
                        group: int = 1) -> dict:
    """The marginal condition for going from draft length m - 1 to m (8.5.4, Ex. 8-7).

    dN = a_1 ... a_m, dT = T_m - T_{m-1}. Returns dict(added_s, added_tokens,
    marginal_s_per_token = dT/dN, current_s_per_token = T_{m-1}/N_{m-1}, helps). ``acceptance``
    is one a for every position, or the conditional a_1..a_m (then draft_len must be their count).
    """
    m = v.tokens("draft_len", draft_len, minimum=1)
    if isinstance(acceptance, numbers.Real) and not isinstance(acceptance, bool):
        probs = _acceptances(acceptance, m)
    else:
        probs = _acceptances(acceptance, None)
        if len(probs) != m:
            raise ValueError(f"acceptance: has {len(probs)} items but draft_len={m}")
    n_prev = speculative_expected_tokens(probs[:-1])
    added_tokens = speculative_expected_tokens(probs) - n_prev
    t_prev = draft_round_time(m - 1, verify_s, per_draft_s, group)
    added_s = draft_round_time(m, verify_s, per_draft_s, group) - t_prev
    marginal = added_s / added_tokens if added_tokens > 0 else math.inf
    return dict(added_s=added_s, added_tokens=added_tokens, marginal_s_per_token=marginal,
                current_s_per_token=t_prev / n_prev,
                helps=draft_extension_helps(t_prev, n_prev, added_s, added_tokens))


# --- 8.5.4 under load: where verification stops being free (the fuller model) ----------------
# The chapter argues at batch 1, where the m extra verification rows ride on compute that sits
# idle while the weights stream. With b requests in the batch a verification pass computes
# b (m + 1) rows; once that reaches the card's ridge the pass is compute-bound and every extra
# row costs time. The draft network's weights also live in the memory the KV budget is cut
# from.

@serves("8.5.4")
def verification_ridge_batch(model: Model, hardware, draft_len: int) -> float:
    """Batch at which a verification pass of b (m + 1) rows per step reaches the ridge (8.5.4).

    Rows computed = read-once FLOPs / bytes: 2 P (m + 1) b / D_w = ridge, so
    b = ridge x D_w / (2 P (m + 1)) (weights only; live KV would push it later). Qwen3-8B
    BF16 on the RTX PRO 6000 at m = 4: 281 FLOP/byte / 5 rows = ~56 requests.
    """
    from companion.formulas.args import hardware_arg, model_arg
    m = model_arg(model)
    hw = hardware_arg(hardware)
    d = v.tokens("draft_len", draft_len)
    per_row = matrix_flops(m, 1, include_lm_head=True) / m.streamed_weight_bytes
    return hw.peak_flops_per_s / hw.mem_bw_bytes_per_s / (per_row * (d + 1))


@serves("8.5.4")
def verification_under_load(model: Model, hardware, batch: int, draft_len: int,
                            context_tokens: int, *, bytes_per_value: float = 2) -> dict:
    """A verification pass of b requests x (m + 1) rows beside a plain decode step, both on the
    roofline (``core.decode_step_parts`` with F = the pass's FLOPs per request) (8.5.4, fuller).

    F counts each row's matrices and its attention over the context (``verification_flops``).
    Returns plain_s, verify_s, verify_over_plain (1 while the pass stays memory-bound, then
    rising towards m + 1), bound ("memory"/"compute"), ridge_batch (weights only) and
    compute_bound_from_batch: the batch from which the pass is compute-bound with each
    request's live KV read too (inf when the KV read grows as fast as the compute: at 2,048
    tokens of Qwen3-8B on the RTX PRO 6000 with m = 4 it never is).
    """
    from companion.formulas.args import hardware_arg, model_arg
    from companion.formulas.core import decode_step_parts
    m = model_arg(model)
    hw = hardware_arg(hardware)
    b = v.count("batch", batch)
    d = v.tokens("draft_len", draft_len)
    L = v.tokens("context_tokens", context_tokens)
    from companion.formulas.core import kv_bytes_per_token
    plain_f = verification_flops(m, 1, L)               # one row: matrices + its attention
    verify_f = verification_flops(m, d + 1, L)          # m + 1 rows per request
    plain = decode_step_parts(m, hw, b, L, bytes_per_value=bytes_per_value,
                              flops_per_token=plain_f)
    verify = decode_step_parts(m, hw, b, L, bytes_per_value=bytes_per_value,
                               flops_per_token=verify_f)
    # compute-bound once b F_v / peak >= (D_w + b L k) / beta; never if F_v / peak <= L k / beta
    per_req_read = L * kv_bytes_per_token(m, bytes_per_value) / hw.mem_bw_bytes_per_s
    per_req_compute = verify_f / hw.peak_flops_per_s
    weight_read = m.streamed_weight_bytes / hw.mem_bw_bytes_per_s
    from_batch = (weight_read / (per_req_compute - per_req_read)
                  if per_req_compute > per_req_read else math.inf)
    return dict(plain_s=plain.step_s, verify_s=verify.step_s,
                verify_over_plain=verify.step_s / plain.step_s, bound=verify.bound,
                ridge_batch=verification_ridge_batch(m, hw, d),
                compute_bound_from_batch=from_batch)


@serves("8.5.4")
def draft_kv_budget(kv_budget_bytes: float, draft_weight_bytes: float, model: Model,
                    prompt_tokens: int, output_tokens: int, *, block_tokens: int = 16) -> dict:
    """What a draft network resident beside the target takes from the KV budget (8.5.4).

    The draft's resident bytes come out of the budget: budget - draft bytes is left for KV,
    and ``core.max_concurrent`` counts the requests that fit before and after. Pass the
    weights alone (DFlash's 2.10 GB leaves ~10.04 GiB of 8.1's 12 GiB) or the whole measured
    footprint, weights plus the draft's KV and buffers (8.6.3 charges 3188 MiB, leaving
    ~8.89 GiB).
    """
    from companion.formulas.core import max_concurrent
    budget = v.positive("kv_budget_bytes", kv_budget_bytes)
    draft = v.nonnegative("draft_weight_bytes", draft_weight_bytes)
    left = max(budget - draft, 0.0)
    kw = dict(block_tokens=block_tokens)
    before = max_concurrent(budget, model, prompt_tokens, output_tokens, **kw)
    after = max_concurrent(left, model, prompt_tokens, output_tokens, **kw)
    return dict(kv_left_bytes=left, draft_share=draft / budget, requests_before=before,
                requests_after=after)
