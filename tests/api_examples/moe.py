from companion import models

MOE = models.load("qwen3-30b-a3b")

EXAMPLES = {
    "expected_experts_touched": dict(n_experts=128, experts_per_token=8, batch=16),
    "moe_streamed_weight_bytes": dict(model=MOE, batch=16),
    "moe_weight_read_per_token": dict(model=MOE, batch=16),
    "moe_read_curve": dict(model=MOE, batches=[1, 4, 16, 64]),
    "active_params": dict(model=MOE),
    "decode_flops_per_token": dict(model=MOE),
    "moe_kv_crossover_batch": dict(model=MOE, context_tokens=2048, bytes_per_value=2),
}
