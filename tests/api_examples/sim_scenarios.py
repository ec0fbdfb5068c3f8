from companion.specs import H100_SXM, LLAMA_8B

TARGET = "companion.sim.scenarios"

EXAMPLES = {
    "chapter_8_2_2_requests": dict(),
    "token_budget_sweep": dict(token_budgets=(512, 8192), n_requests=3, interarrival_s=0.08,
                               prompt_tokens=4096, output_tokens=4, max_running=3),
    "long_prompt_interference": dict(prompt_tokens=8000, chunk_tokens=512, decode_batch=4,
                                     warmup_rounds=2),
    "chapter_schedules": dict(max_running=2, chunk_tokens=1024, token_budget=2048,
                              long_prompt_tokens=4096),
    "hol_scenario": dict(model=LLAMA_8B, hardware=H100_SXM, prompt_tokens=4000, step_s=6e-3,
                         efficiency=0.5, decode_batch=2),
    "batching_trace_requests": dict(n_requests=10, slots=4, shortest=100, longest=400,
                                    prompt_tokens=64, arrival_gap_s=0.01, seed=1),
    "itl_tail_trace": dict(chunk_tokens=512, decoders=2, decode_outputs=20, long_prompts=1,
                           long_prompt_tokens=2000, first_long_s=0.01, long_every_s=0.4),
    "stalled_interval_positions": dict(output_tokens=8, inserted=2),
    "timeline_scenario": dict(label="one request", queue_s=0.1, prefill_s=0.096,
                              interval_s=0.0265, output_tokens=8, stall_s=0.05,
                              stalled_intervals=(2, 5)),
}

ALLOW = {
    # all requests arriving together is a meaningful sweep
    "token_budget_sweep": {"interarrival_s": ["zero"]},
    # a seed of 0, no gap, no long prompts, no inserted prefill are meaningful
    "batching_trace_requests": {"arrival_gap_s": ["zero"], "seed": ["zero"]},
    "itl_tail_trace": {"long_prompts": ["zero"], "first_long_s": ["zero"],
                       "long_every_s": ["zero"]},
    "stalled_interval_positions": {"inserted": ["zero"]},
    # a label is free text; no stalled interval is the plain timeline
    "timeline_scenario": {"label": ["unknown-option"], "queue_s": ["zero"], "stall_s": ["zero"],
                          "stalled_intervals": ["empty"]},
}
