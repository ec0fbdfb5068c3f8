"""Ledger: speculative decoding's verification and sampling numbers (8.5.1-8.5.2, 8.5.4,
17 §10), recomputed through ``companion.sim.speculative`` (source="sim").

The expected outputs per round are exact: each position's acceptance probability is
sum_x min(p(x), q(x)) over the simulator's distributions, fed to 1 + sum prod a_i. The tests
check the same numbers against a seeded Monte Carlo of the simulator.
"""

from __future__ import annotations

from companion.chapters import ch08, ch17
from companion.ledger import Entry, entry
from companion.sim.speculative import (acceptance_rate, expected_tokens_per_round,
                                       output_distribution, tokens_per_round_distribution,
                                       verify_greedy)

# Figure 8-29: four draft tokens, the third one differs from the target's choice (token ids
# are arbitrary labels).
FIG_8_29_DRAFT = (101, 102, 103, 104)  # not a chapter input (token labels)
FIG_8_29_TARGET = (101, 102, 999, 105, 106)

# 8.5.4: K7 and K15 rounds in which only the first draft token is accepted.
K7, K15 = 7, 15
ACCEPTED_8_5_4 = 1


def _one_accepted_round(m: int):
    """A greedy round of draft length m whose target agrees only at the first position."""
    draft = list(range(1, m + 1))
    target = [draft[0]] + [0] * m
    return verify_greedy(draft, target)


# the sections its entries lie in (or under): the ledger computes this module only for them
SECTIONS = ("8.5", "17.10")


def entries() -> list[Entry]:
    S = "sim"
    fig = verify_greedy(FIG_8_29_DRAFT, FIG_8_29_TARGET)
    k7, k15 = _one_accepted_round(K7), _one_accepted_round(K15)
    p17 = (ch17.SPEC_ACCEPTANCE, 1 - ch17.SPEC_ACCEPTANCE)
    reach17 = tokens_per_round_distribution(p17, ch08.TOY_DRAFT_ALWAYS_A,
                                            ch17.SPEC_DRAFT_LEN)[::-1].cumsum()[::-1]
    exact = "exact: the simulator's acceptance sum_x min(p, q) fed to 1 + a + ... + a^m"
    words = "printed in words"
    return [
        # --- 8.5.1 -------------------------------------------------------------------------
        entry("8.5.1/sim-fig-8-29-kept", "8.5.1", "Figure 8-29: matching draft tokens kept",
              "2", "tokens", fig.accepted, note=f"{words} ('keeps two matching draft tokens')",
              source=S),
        entry("8.5.1/sim-fig-8-29-outputs", "8.5.1", "Figure 8-29: outputs of one round", "3",
              "tokens", len(fig.output), note=f"{words} ('three outputs in total')", source=S),
        entry("8.5.1/sim-accept-draft-A", "8.5.1", "draft always A: acceptance probability",
              "0.25", "probability", acceptance_rate(ch08.TOY_TARGET_PROBS,
                                                     ch08.TOY_DRAFT_ALWAYS_A),
              note="printed as the fraction 1/4", source=S),
        entry("8.5.1/sim-reject-draft-A", "8.5.1", "draft always A: reject and output B",
              "0.75", "probability", 1 - acceptance_rate(ch08.TOY_TARGET_PROBS,
                                                         ch08.TOY_DRAFT_ALWAYS_A),
              note="printed as the fraction 3/4", source=S),
        entry("8.5.1/sim-accept-draft-B", "8.5.1", "draft always B: acceptance probability",
              "0.75", "probability", acceptance_rate(ch08.TOY_TARGET_PROBS,
                                                     ch08.TOY_DRAFT_ALWAYS_B),
              note="printed as the fraction 3/4", source=S),
        entry("8.5.1/sim-output-pA-draft-A", "8.5.1", "draft always A: P(output A) = p(A)",
              "0.25", "probability", output_distribution(ch08.TOY_TARGET_PROBS,
                                                         ch08.TOY_DRAFT_ALWAYS_A)[0],
              note="printed as the fraction 1/4 (the target's p(A), recovered by the "
                   "accept/resample mechanism)", source=S),
        entry("8.5.1/sim-output-pA-draft-B", "8.5.1", "draft always B: P(output A) = p(A)",
              "0.25", "probability", output_distribution(ch08.TOY_TARGET_PROBS,
                                                         ch08.TOY_DRAFT_ALWAYS_B)[0],
              note="printed as the fraction 1/4 (the target's p(A), recovered by the "
                   "accept/resample mechanism)", source=S),
        # --- 8.5.2 -------------------------------------------------------------------------
        entry("8.5.2/sim-expected-tokens-AAAA", "8.5.2", "draft AAAA: mean outputs per round",
              "1.33", "tokens",
              expected_tokens_per_round(ch08.TOY_TARGET_PROBS, ch08.TOY_DRAFT_ALWAYS_A,
                                        ch08.TOY_DRAFT_LEN),
              note=exact, source=S),
        entry("8.5.2/sim-expected-tokens-BBBB", "8.5.2", "draft BBBB: mean outputs per round",
              "3.05", "tokens",
              expected_tokens_per_round(ch08.TOY_TARGET_PROBS, ch08.TOY_DRAFT_ALWAYS_B,
                                        ch08.TOY_DRAFT_LEN),
              note=exact, source=S),
        # --- 8.5.4 -------------------------------------------------------------------------
        entry("8.5.4/sim-k7-discarded", "8.5.4", "K7 round accepting one draft: discarded",
              "6", "tokens", k7.discarded, note=f"{words} ('discards six draft tokens')",
              source=S),
        entry("8.5.4/sim-k15-discarded", "8.5.4", "K15 round accepting one draft: discarded",
              "14", "tokens", k15.discarded, note=f"{words} ('fourteen')", source=S),
        # --- 17 §10 ------------------------------------------------------------------------
        entry("17.10/sim-spec-term-a2", "17.10", "k=4, alpha=0.7: P(>= 3 tokens) = alpha^2",
              "0.49", "probability", reach17[2], source=S),
        entry("17.10/sim-spec-term-a3", "17.10", "k=4, alpha=0.7: P(>= 4 tokens) = alpha^3",
              "0.343", "probability", reach17[3], source=S),
        entry("17.10/sim-spec-term-a4", "17.10", "k=4, alpha=0.7: P(5 tokens) = alpha^4",
              "0.240", "probability", reach17[4], source=S),
        entry("17.10/sim-spec-expected-tokens", "17.10", "k=4, alpha=0.7: tokens per pass",
              "2.77", "tokens", expected_tokens_per_round(p17, ch08.TOY_DRAFT_ALWAYS_A,
                                                          ch17.SPEC_DRAFT_LEN),
              note=exact + "; alpha = 0.7 realised as p = (0.7, 0.3), q = (1, 0)", source=S),
        entry("17.10/sim-spec-speedup", "17.10", "up to ~2.8x lower single-stream latency",
              "2.8", "x", expected_tokens_per_round(p17, ch08.TOY_DRAFT_ALWAYS_A,
                                                    ch17.SPEC_DRAFT_LEN), source=S,
              note="the 2.77 tokens per pass rounded; 'up to' because it assumes the draft "
                   "and the wider verification pass cost nothing"),
    ]
