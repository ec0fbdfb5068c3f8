TARGET = "companion.sim.scenarios"

EXAMPLES = {
    "chapter_8_2_2_requests": dict(),
    "token_budget_sweep": dict(token_budgets=(512, 8192), n_requests=3, interarrival_s=0.08,
                               prompt_tokens=4096, output_tokens=4, max_running=3),
    "long_prompt_interference": dict(prompt_tokens=8000, chunk_tokens=512, decode_batch=4,
                                     warmup_rounds=2),
}

ALLOW = {
    # all requests arriving together is a meaningful sweep
    "token_budget_sweep": {"interarrival_s": ["zero"]},
}
