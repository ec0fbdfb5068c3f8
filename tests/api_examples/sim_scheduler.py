from companion.sim.scheduler import Request, RoundTimeModel

TARGET = "companion.sim.scheduler"

EXAMPLES = {
    "simulate": dict(requests=[Request("r0", 0.0, 2048, 8), Request("r1", 0.0, 2048, 2),
                               Request("r2", 0.020, 8192, 2), Request("r3", 0.030, 2048, 4)],
                     policy="chunked", max_running=2, round_time=RoundTimeModel.chapter8(),
                     chunk_tokens=2048, token_budget=4096, captured_shapes=(16, 32, 64),
                     engine="fast"),
    "chapter_8_2_2_requests": dict(),
    "chapter17_round_time": dict(decode_step_s=6.1e-3),
    "token_budget_sweep": dict(token_budgets=(512, 8192), n_requests=3, interarrival_s=0.08,
                               prompt_tokens=4096, output_tokens=4, max_running=3),
    "long_prompt_interference": dict(prompt_tokens=8000, chunk_tokens=512, decode_batch=4,
                                     warmup_rounds=2),
}

ALLOW = {
    # all requests arriving together is a meaningful sweep
    "token_budget_sweep": {"interarrival_s": ["zero"]},
}
