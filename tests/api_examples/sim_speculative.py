TARGET = "companion.sim.speculative"

_P = [0.25, 0.75]   # 8.5.1's two-symbol target
_Q = [1.0, 0.0]     # a draft that always proposes A

EXAMPLES = {
    "verify_greedy": dict(draft_tokens=[101, 102, 103, 104],
                          target_tokens=[101, 102, 999, 105, 106]),
    "acceptance_probabilities": dict(p=_P, q=_Q),
    "acceptance_rate": dict(p=_P, q=_Q),
    "residual_distribution": dict(p=_P, q=_Q),
    "output_distribution": dict(p=_P, q=_Q),
    "expected_tokens_per_round": dict(p=_P, q=_Q, draft_len=4),
    "tokens_per_round_distribution": dict(p=_P, q=_Q, draft_len=4),
    "speculative_round": dict(p=_P, q=_Q, draft_len=4, seed=7),
    "simulate_rounds": dict(p=_P, q=_Q, draft_len=4, n_rounds=1000, seed=7),
    "speculative_check": dict(acceptance=0.7, draft_len=4, rounds=500, seed=7),
    "greedy_example": dict(draft_len=4, first_mismatch=3),
}

ALLOW = {
    # a draft of length 0 is ordinary decode; seed 0 is a seed like any other
    "expected_tokens_per_round": {"draft_len": ["zero"]},
    "tokens_per_round_distribution": {"draft_len": ["zero"]},
    "speculative_round": {"draft_len": ["zero"], "seed": ["zero"]},
    "simulate_rounds": {"draft_len": ["zero"], "seed": ["zero"]},
    "speculative_check": {"acceptance": ["zero"], "draft_len": ["zero"], "seed": ["zero"]},
}
