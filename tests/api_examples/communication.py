"""Good calls of the fuller §7-§8 models (companion.formulas.communication and .queueing)."""

from companion.specs import H100_SXM, LLAMA_70B

EXAMPLES = {
    "ring_allreduce_s": dict(message_bytes=16384.0, gpus=4, hop_latency_s=1e-6,
                             link_bytes_per_s=900e9),
    "ring_hop_latency_s": dict(collective_latency_s=5e-6, at_tp=4),
    "tp_step_fuller": dict(model=LLAMA_70B, hardware=H100_SXM, tp=8, collectives="ring",
                           overlap=False, collective_latency_s=5e-6, link_bytes_per_s=900e9,
                           batch=2, context_tokens=1000, calibration_tp=4),
    "stage_weight_bytes": dict(model=LLAMA_70B, stages=4),
    "uneven_pipeline": dict(stage_times_s=[1.0, 2.0, 1.5], microbatches=16),
    "pp_decode_bubble": dict(model=LLAMA_70B, hardware=H100_SXM, stages=4, microbatches=16),
    "kv_layered_transfer": dict(model=LLAMA_70B, hardware=H100_SXM, context_tokens=8000,
                                link_bytes_per_s=50e9, tp=4, links=2, efficiency=0.5),
    "erlang_c": dict(servers=21, offered_load=20.0),
    "pool_wait": dict(arrival_rate_per_s=100.0, mean_service_s=0.2, servers=22,
                      percentile=90.0),
    "prefill_pool_for_ttft": dict(request_rate_per_s=100.0, mean_prompt_tokens=2000.0,
                                  prefill_tok_per_s_per_group=10000.0, ttft_p90_target_s=0.5,
                                  percentile=90.0, max_groups=1000),
}

ALLOW = {
    "ring_allreduce_s": {"message_bytes": ["zero"], "hop_latency_s": ["zero"]},
    "ring_hop_latency_s": {"collective_latency_s": ["zero"]},
    "tp_step_fuller": {"collective_latency_s": ["zero"], "context_tokens": ["zero"]},
    "erlang_c": {"offered_load": ["zero"]},
    "pool_wait": {"percentile": ["zero"]},
    "prefill_pool_for_ttft": {"percentile": ["zero"]},
}
