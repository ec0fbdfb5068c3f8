from companion.specs import QWEN3_8B, RTX_PRO_6000

EXAMPLES = {
    "inserted_prefill_stall_s": dict(prefill_s=0.096, fused=True, shared_s=26.22e-3),
    "context_growth_intervals_s": dict(model=QWEN3_8B, interval_s=26.5e-3, prompt_tokens=2048,
                                       output_tokens=256, bytes_per_value=2),
    "kv_held_over_answer": dict(model=QWEN3_8B, kv_budget_bytes=12 * 2**30, prompt_tokens=2048,
                                output_tokens=256, block_tokens=16, bytes_per_value=2),
    "batch_cycle_throughput": dict(batch=64, output_tokens=256, prefill_s=6.5,
                                   round_s=29.63e-3),
    "floored_round_time": dict(model=QWEN3_8B, hardware=RTX_PRO_6000, decode_requests=64,
                               context_tokens=2048, new_tokens=512, history_tokens=1024,
                               bytes_per_value=2),
    "fit_undercut_batch": dict(model=QWEN3_8B, hardware=RTX_PRO_6000, context_tokens=2048,
                               max_batch=4096, bytes_per_value=2),
    "floored_token_budget": dict(itl_target_s=0.05, model=QWEN3_8B, hardware=RTX_PRO_6000,
                                 decode_requests=4, context_tokens=2048, history_tokens=1024,
                                 bytes_per_value=2),
    "spread_expected_tokens": dict(acceptance=0.75, spread=0.25, draft_len=4),
}

ALLOW = {
    # an empty pool, no shared pass, a prefill-only round, no cached history, no spread and a
    # draft of length 0 are all meaningful
    "inserted_prefill_stall_s": {"shared_s": ["zero"]},
    "kv_held_over_answer": {"kv_budget_bytes": ["zero"]},
    "batch_cycle_throughput": {"prefill_s": ["zero"]},
    "floored_round_time": {"decode_requests": ["zero"], "context_tokens": ["zero"],
                           "new_tokens": ["zero"], "history_tokens": ["zero"]},
    "fit_undercut_batch": {"context_tokens": ["zero"]},
    "floored_token_budget": {"decode_requests": ["zero"], "context_tokens": ["zero"],
                             "history_tokens": ["zero"]},
    "spread_expected_tokens": {"acceptance": ["zero"], "spread": ["zero"], "draft_len": ["zero"]},
}
