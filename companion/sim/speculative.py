"""Speculative decoding, simulated: greedy draft verification and speculative (rejection)
sampling on explicit probability vectors (8.5.1-8.5.2, 8.5.4, 17 §10).

* ``verify_greedy``: keep the draft's longest prefix that matches the target model's own
  choices, emit the target's token at the first mismatch (or one bonus token when every draft
  token matches), discard the rest (Figure 8-29).
* Rejection sampling: a draft token x ~ q is accepted with probability min(1, p(x)/q(x)); on
  rejection the output is drawn from the normalised residual [p - q]_+, so every emitted token
  follows the target p exactly (8.5.1). ``simulate_rounds`` runs many multi-token rounds at
  once with numpy (positions independent, as in the chapter's two-symbol example);
  ``speculative_round`` traces one round step by step.
* Exact counterparts: ``acceptance_rate`` (sum_x min(p, q)), ``output_distribution`` and
  ``tokens_per_round_distribution``; ``expected_tokens_per_round`` feeds the per-position
  acceptances to calc's 1 + sum prod a_i (1.33 for AAAA, 3.05 for BBBB).

Randomness always comes from a numpy Generator: pass ``rng`` or an integer ``seed``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from companion import validate as v
from companion.formulas.core import speculative_expected_tokens
from companion.serves import serves

__all__ = [
    "GreedyVerification", "verify_greedy", "acceptance_probabilities", "acceptance_rate",
    "residual_distribution", "output_distribution", "expected_tokens_per_round",
    "tokens_per_round_distribution", "SpeculativeRound", "speculative_round",
    "SpeculativeRuns", "simulate_rounds", "greedy_example", "VERIFICATION_WORDS", "MAX_DRAFT",
    "speculative_check",
]

_SUM_TOL = 1e-6  # a probability vector may miss 1 by float noise, not more


# --- greedy verification (8.5.1, Figure 8-29) ----------------------------------------------

@dataclass(frozen=True)
class GreedyVerification:
    """One greedy verification round: ``output`` = accepted draft tokens + one target token.

    ``correction`` is the target's token at the first mismatch, ``bonus`` the extra token when
    every draft token matched (None when absent); ``discarded`` draft tokens are rolled back;
    ``steps`` is a per-position trace for a notebook table.
    """

    draft: tuple
    target: tuple
    accepted: int
    correction: int | None
    bonus: int | None
    output: tuple
    discarded: int
    steps: tuple


def verify_greedy(draft_tokens, target_tokens) -> GreedyVerification:
    """Verify a greedy draft against the target model's choice at each position.

    ``target_tokens[i]`` is the token the target picks at draft position i (computed in one
    pass over the draft); an extra last entry is its pick after the whole draft. Output: the
    matching prefix, then the target's token at the first mismatch, or the bonus token if all
    m match: accepted + 1 tokens (Figure 8-29: 4 drafts, third diverges -> 2 + 1 = 3).
    """
    draft = v.token_ids("draft_tokens", draft_tokens)
    if not draft:
        raise ValueError("draft_tokens: needs at least 1 item")
    target = v.token_ids("target_tokens", target_tokens)
    m = len(draft)
    if len(target) not in (m, m + 1):
        raise ValueError(f"target_tokens: expected {m} (one per draft position) or {m + 1} "
                         f"(plus the token after the draft) items, got {len(target)}")
    accepted = next((i for i in range(m) if draft[i] != target[i]), m)
    correction = target[accepted] if accepted < m else None
    bonus = target[m] if accepted == m and len(target) > m else None
    extra = correction if correction is not None else bonus
    output = draft[:accepted] + (() if extra is None else (extra,))
    steps = []
    for i in range(m):
        if i < accepted:
            verdict = "accept"
        elif i == accepted:
            verdict = "reject: emit target's token"
        else:
            verdict = "discard: follows a rejected token"
        steps.append({"position": i + 1, "draft": draft[i], "target": target[i],
                      "verdict": verdict})
    if bonus is not None:
        steps.append({"position": m + 1, "draft": None, "target": bonus, "verdict": "bonus"})
    return GreedyVerification(draft, target, accepted, correction, bonus, output,
                              m - accepted, tuple(steps))


# --- distributions ----------------------------------------------------------------------------

def _distribution(name: str, value, ndim=(1,)) -> np.ndarray:
    """A probability vector (or rows of them): finite, >= 0, each summing to 1 (renormalised)."""
    v.sequence(name, value)
    try:
        arr = np.array(value, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"{name}: expected numbers (probabilities)") from None
    if arr.ndim not in ndim:
        raise ValueError(f"{name}: expected {' or '.join(map(str, ndim))} dimension(s), "
                         f"got shape {arr.shape}")
    if arr.size == 0 or arr.shape[-1] == 0:
        raise ValueError(f"{name}: is empty")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name}: contains NaN or infinity")
    if (arr < 0).any():
        raise ValueError(f"{name}: probabilities must be >= 0")
    sums = arr.sum(axis=-1)
    if (np.abs(sums - 1) > _SUM_TOL).any():
        raise ValueError(f"{name}: must sum to 1, sums to {np.round(sums, 9).tolist()}")
    return arr / sums[..., None]


def _pair(p, q) -> tuple[np.ndarray, np.ndarray]:
    pp = _distribution("p", p)
    qq = _distribution("q", q)
    if pp.shape != qq.shape:
        raise ValueError(f"q: {qq.size} symbols, but p has {pp.size}")
    return pp, qq


def _accept_ratio(pp: np.ndarray, qq: np.ndarray) -> np.ndarray:
    """min(1, p/q) per symbol (rows broadcast); 1 where q = 0 (never drafted)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(qq > 0, np.minimum(1.0, pp / np.where(qq > 0, qq, 1.0)), 1.0)


def _residual(pp: np.ndarray, qq: np.ndarray) -> np.ndarray:
    """Normalised [p - q]_+ per row; p itself where p = q (a rejection then never happens)."""
    r = np.maximum(pp - qq, 0.0)
    mass = r.sum(axis=-1, keepdims=True)
    return np.where(mass > 0, r / np.where(mass > 0, mass, 1.0), pp)


@serves("8.5.1")
def acceptance_probabilities(p, q) -> np.ndarray:
    """Per-symbol acceptance alpha(x) = min(1, p(x)/q(x)) (8.5.1).

    Two symbols, p = (1/4, 3/4): a draft that always says A is accepted with 1/4, one that
    always says B with 3/4. Symbols the draft never proposes (q = 0) get 1.
    """
    pp, qq = _pair(p, q)
    return _accept_ratio(pp, qq)


@serves("8.5.2")
def acceptance_rate(p, q) -> float:
    """Probability that a draft token x ~ q is accepted: sum_x q(x) alpha(x) = sum_x min(p, q).

    The per-position a of 8.5.2: 1/4 for the all-A draft, 3/4 for the all-B draft.
    """
    pp, qq = _pair(p, q)
    return float((qq * _accept_ratio(pp, qq)).sum())


@serves("8.5.1")
def residual_distribution(p, q) -> np.ndarray:
    """Distribution a rejected position resamples from: [p - q]_+ / sum [p - q]_+ (8.5.1).

    The all-A draft's residual puts everything on B; the all-B draft's on A.
    """
    pp, qq = _pair(p, q)
    return _residual(pp, qq)


@serves("8.5.1")
def output_distribution(p, q) -> np.ndarray:
    """Exact distribution of the token a position emits: min(p, q) + P(reject) x residual.

    P(reject) = sum_x q(x) (1 - alpha(x)); the sum equals p exactly (8.5.1's proof).
    """
    pp, qq = _pair(p, q)
    alpha = _accept_ratio(pp, qq)
    reject = float((qq * (1.0 - alpha)).sum())
    return qq * alpha + reject * _residual(pp, qq)


def _positions(p, q, m: int) -> tuple[np.ndarray, np.ndarray]:
    """p as (m+1, V) rows (the last for the bonus token) and q as (m, V) rows.

    A single vector means the same distribution at every position (the chapter's toy example,
    positions independent).
    """
    pp = _distribution("p", p, ndim=(1, 2))
    qq = _distribution("q", q, ndim=(1, 2))
    if pp.shape[-1] != qq.shape[-1]:
        raise ValueError(f"q: {qq.shape[-1]} symbols, but p has {pp.shape[-1]}")
    if pp.ndim == 1:
        pp = np.tile(pp, (m + 1, 1))
    elif len(pp) != m + 1:
        raise ValueError(f"p: expected draft_len + 1 = {m + 1} rows, got {len(pp)}")
    if qq.ndim == 1:
        qq = np.tile(qq, (m, 1))
    elif len(qq) != m:
        raise ValueError(f"q: expected draft_len = {m} rows, got {len(qq)}")
    return pp, qq


def _position_acceptances(p, q, draft_len) -> list[float]:
    m = v.integer("draft_len", draft_len, minimum=0)
    pp, qq = _positions(p, q, m)
    return [float(a) for a in (qq * _accept_ratio(pp[:m], qq)).sum(axis=1)]


@serves("8.5.2", "17.10")
def expected_tokens_per_round(p, q, draft_len: int) -> float:
    """E[X] = 1 + sum_j prod_{i<=j} a_i with a_i = sum_x min(p_i, q_i) from the distributions.

    Two symbols, p = (1/4, 3/4), draft length 4: AAAA 1.33, BBBB 3.05 (8.5.2); 17 §10's
    alpha = 0.7, k = 4: 2.77. Per-position rows of p (m+1) and q (m) are allowed.
    """
    return speculative_expected_tokens(_position_acceptances(p, q, draft_len))


@serves("17.10")
def tokens_per_round_distribution(p, q, draft_len: int) -> np.ndarray:
    """P(N = n) for n = 1 .. m+1 tokens emitted in one round.

    P(N = n) = a_1 ... a_{n-1} (1 - a_n) for n <= m and a_1 ... a_m for n = m + 1; the tail
    sums P(N >= j + 1) = a_1 ... a_j are 17 §10's terms 0.7, 0.49, 0.343, 0.240.
    """
    a = np.array(_position_acceptances(p, q, draft_len))
    reach = np.concatenate([[1.0], np.cumprod(a)])  # P(N >= n), n = 1 .. m+1
    return reach - np.concatenate([reach[1:], [0.0]])


# --- sampling ---------------------------------------------------------------------------------

def _generator(seed, rng) -> np.random.Generator:
    if rng is not None:
        return v.instance("rng", rng, np.random.Generator, "a numpy.random.Generator")
    return np.random.default_rng(v.integer("seed", seed, minimum=0))


def _cdf(rows: np.ndarray) -> np.ndarray:
    """Row-wise CDFs ending at exactly 1.0 (so u < 1 never lands past the last positive)."""
    c = np.cumsum(rows, axis=-1)
    return c / c[..., -1:]


@dataclass(frozen=True)
class _Batch:
    draft: np.ndarray       # (n, m) draft tokens
    alpha: np.ndarray       # (n, m) acceptance probability of each draft token
    u_accept: np.ndarray    # (n, m) uniforms compared with alpha
    accepted: np.ndarray    # (n,) draft tokens kept
    last: np.ndarray        # (n,) the correction or bonus token


def _run(pp: np.ndarray, qq: np.ndarray, n: int, gen: np.random.Generator) -> _Batch:
    """n independent rounds, vectorised over rounds (a loop only over the m + 1 positions)."""
    m = len(qq)
    draft = np.empty((n, m), dtype=np.int64)
    qcdf = _cdf(qq) if m else qq
    u_draft = gen.random((n, m))
    for j in range(m):
        draft[:, j] = np.searchsorted(qcdf[j], u_draft[:, j], side="right")
    ratio = _accept_ratio(pp[:m], qq)
    alpha = ratio[np.arange(m), draft] if m else np.empty((n, 0))
    u_accept = gen.random((n, m))
    ok = u_accept < alpha
    accepted = np.where(ok.all(axis=1), m, np.argmin(ok, axis=1)) if m else np.zeros(n, int)
    # the position after the accepted prefix draws from the residual (or p for the bonus)
    last_rows = np.vstack([_residual(pp[:m], qq), pp[m:m + 1]])
    last_cdf = _cdf(last_rows)
    u_last = gen.random(n)
    last = np.empty(n, dtype=np.int64)
    for j in range(m + 1):
        rows = accepted == j
        if rows.any():
            last[rows] = np.searchsorted(last_cdf[j], u_last[rows], side="right")
    return _Batch(draft, alpha, u_accept, accepted, last)


@dataclass(frozen=True)
class SpeculativeRound:
    """One traced round: the draft, each token's acceptance probability and uniform draw,
    how many were accepted, and the emitted tokens (accepted drafts + one target token)."""

    draft: tuple
    alpha: tuple
    uniforms: tuple
    accepted: int
    emitted: tuple
    steps: tuple


@serves("8.5.1")
def speculative_round(p, q, draft_len: int, *, seed: int = 0,
                      rng: np.random.Generator | None = None) -> SpeculativeRound:
    """Run one speculative-sampling round and return a step-by-step trace (8.5.1).

    Draft m tokens from q; accept token i while u_i < min(1, p(x_i)/q(x_i)); at the first
    rejection emit a token from the residual [p - q]_+, or after m acceptances a bonus from p.
    """
    m = v.integer("draft_len", draft_len, minimum=0)
    pp, qq = _positions(p, q, m)
    b = _run(pp, qq, 1, _generator(seed, rng))
    k = int(b.accepted[0])
    draft = tuple(int(x) for x in b.draft[0])
    steps = []
    for i in range(m):
        if i < k:
            verdict = "accept"
        elif i == k:
            verdict = "reject: resample from [p - q]+"
        else:
            verdict = "discard"
        steps.append({"position": i + 1, "draft": draft[i], "alpha": float(b.alpha[0, i]),
                      "u": float(b.u_accept[0, i]), "verdict": verdict})
    if k == m:
        steps.append({"position": m + 1, "draft": None, "alpha": None, "u": None,
                      "verdict": "bonus from p"})
    return SpeculativeRound(draft, tuple(float(x) for x in b.alpha[0]),
                            tuple(float(x) for x in b.u_accept[0]), k,
                            draft[:k] + (int(b.last[0]),), tuple(steps))


@dataclass(frozen=True)
class SpeculativeRuns:
    """Many independent rounds: ``draft`` (n, m), ``accepted`` (n,), ``emitted`` (n, m+1) with
    -1 after each round's last token, and ``tokens_per_round`` = accepted + 1."""

    draft: np.ndarray
    accepted: np.ndarray
    emitted: np.ndarray

    @property
    def tokens_per_round(self) -> np.ndarray:
        return self.accepted + 1

    @property
    def mean_tokens(self) -> float:
        """Monte Carlo estimate of E[X]."""
        return float(self.tokens_per_round.mean())

    @property
    def n_rounds(self) -> int:
        return len(self.accepted)

    def emitted_tokens(self) -> np.ndarray:
        """Every emitted token, round after round (each follows p when p is the same at every
        position)."""
        return self.emitted[self.emitted >= 0]

    def tokens_at(self, position: int) -> np.ndarray:
        """Tokens emitted at output position ``position`` (0-based) by rounds that reach it."""
        j = v.integer("position", position, minimum=0)
        if j >= self.emitted.shape[1]:
            raise ValueError(f"position: rounds emit at most {self.emitted.shape[1]} tokens")
        col = self.emitted[:, j]
        return col[col >= 0]


@serves("8.5.2")
def simulate_rounds(p, q, draft_len: int, n_rounds: int, *, seed: int = 0,
                    rng: np.random.Generator | None = None) -> SpeculativeRuns:
    """Run ``n_rounds`` independent speculative-sampling rounds with drafts of length m.

    Vectorised with numpy: a few hundred thousand rounds take a fraction of a second. The mean
    of ``tokens_per_round`` estimates E[X] (1.33 for AAAA, 3.05 for BBBB, 8.5.2).
    """
    m = v.integer("draft_len", draft_len, minimum=0)
    pp, qq = _positions(p, q, m)
    n = v.count("n_rounds", n_rounds)
    b = _run(pp, qq, n, _generator(seed, rng))
    emitted = np.full((n, m + 1), -1, dtype=np.int64)
    cols = np.arange(m + 1)
    keep = cols[None, :m] < b.accepted[:, None]
    emitted[:, :m][keep] = b.draft[keep]
    emitted[np.arange(n), b.accepted] = b.last
    return SpeculativeRuns(b.draft, b.accepted, emitted)


# --- Figure 8-29: a toy sentence through the greedy verifier -------------------------------------

# Figure 8-29's toy sentence (token ids are positions in VERIFICATION_WORDS): the draft's words
# and the target's corrections at each position
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
    which the verifier must still discard. ``first_mismatch`` = draft_len + 1 (or more) means
    every draft token matches and the target adds a bonus ".". Figure 8-29: 4 drafts, the third
    diverges: 2 kept + 1 corrected = 3 outputs, 1 discarded.
    """
    m = v.integer("draft_len", draft_len, minimum=1)
    if m > MAX_DRAFT:
        raise ValueError(f"draft_len: the toy sentence has {MAX_DRAFT} draft words, got {m}")
    # a mismatch past the draft means every draft token matches (an explorer's slider may
    # go beyond m + 1 when m shrinks)
    k = min(v.integer("first_mismatch", first_mismatch, minimum=1), m + 1)
    draft = [_ID[w] for w in _DRAFT[:m]]
    target = list(draft)
    if k <= m:
        target[k - 1] = _ID[_CORRECTION[k - 1]]
    target.append(_ID["."])           # the target's pick after the whole draft
    return verify_greedy(draft, target)


# --- 17 §10: the closed form checked against the exact distribution and a simulation --------

@serves("17.10")
def speculative_check(acceptance: float, draft_len: int, rounds: int = 5000, *,
                      seed: int = 0) -> dict:
    """Expected tokens per target pass three ways: ``speculative_expected_tokens``, the
    exact distribution and a seeded Monte Carlo run of ``simulate_rounds``.

    alpha is realised as two symbols, target p = (alpha, 1 - alpha), draft q = (1, 0), so each
    draft token is accepted with probability alpha (as in the ledger's 17 §10 entries).
    Returns expected, distribution (P(N = n), n = 1 .. k+1), simulated (frequencies), sim_mean.
    """
    a = v.probability("acceptance", acceptance)
    k = v.integer("draft_len", draft_len)
    n = v.count("rounds", rounds)
    p, q = (a, 1.0 - a), (1.0, 0.0)
    runs = simulate_rounds(p, q, k, n, seed=seed)
    freq = np.bincount(runs.tokens_per_round.astype(np.intp), minlength=k + 2)[1:] / n
    return {"expected": speculative_expected_tokens(a, k),
            "distribution": tokens_per_round_distribution(p, q, k),
            "simulated": freq, "sim_mean": runs.mean_tokens}
