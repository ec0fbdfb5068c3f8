from companion.formulas.serving import SCHEMES

EXAMPLES = {
    "md1_mean_wait_s": dict(arrival_rate_per_s=0.07, service_s=6.85),
    "md1_wait_cdf": dict(wait_s=0.15, arrival_rate_per_s=0.07, service_s=6.85),
    "dd1_wait_s": dict(arrival_rate_per_s=0.07, service_s=6.85),
    "queue_on_time": dict(arrival_rate_per_s=0.07, service_s=6.85, slack_s=0.15,
                          arrivals="poisson"),
    "acceptance_for_tokens_per_round": dict(tokens_per_round=3.0, draft_len=7),
    "tokens_per_round_pmf": dict(acceptance=0.68, draft_len=7),
    "speculative_rounds_pmf": dict(tokens_needed=255, acceptance=0.68, draft_len=7),
    "batch_rounds_cdf": dict(tokens_needed=255, acceptance=0.68, draft_len=7, batch=16),
    "batch_rounds": dict(tokens_needed=255, tokens_per_round=3.0, draft_len=7, batch=16),
    "scheme_result_slowest": dict(scheme=SCHEMES["D"], output_tokens=256, deadline_s=7.0,
                                  batch=16),
}

ALLOW = {
    # no arrivals, no wait, no slack and no acceptance are meaningful
    "md1_mean_wait_s": {"arrival_rate_per_s": ["zero"]},
    "md1_wait_cdf": {"wait_s": ["zero"], "arrival_rate_per_s": ["zero"]},
    "dd1_wait_s": {"arrival_rate_per_s": ["zero"]},
    "queue_on_time": {"arrival_rate_per_s": ["zero"], "slack_s": ["zero"]},
    "tokens_per_round_pmf": {"acceptance": ["zero"]},
    "speculative_rounds_pmf": {"tokens_needed": ["zero"], "acceptance": ["zero"]},
    "batch_rounds_cdf": {"tokens_needed": ["zero"], "acceptance": ["zero"]},
}
