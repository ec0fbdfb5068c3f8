"""Good calls of the Chapter 17 §7-§8 closed forms (companion.formulas.parallelism)."""

from companion.specs import H100_SXM, LLAMA_8B, LLAMA_70B, LLAMA_405B

EXAMPLES = {
    "tp_allreduce_traffic": dict(model=LLAMA_70B, tp=4, bytes_per_value=2),
    "tp_decode_step": dict(model=LLAMA_70B, hardware=H100_SXM, tp=4, collective_latency_s=5e-6,
                           link_bytes_per_s=900e9, batch=1, context_tokens=1000,
                           bytes_per_value=2),
    "pp_stages": dict(model=LLAMA_70B, stages=4, microbatches=16, bytes_per_value=2),
    "tp_layout_rows": dict(model=LLAMA_70B, hardware=H100_SXM, degrees=(1, 2, 4, 8), batch=4,
                           context_tokens=1000, nvlink_latency_s=5e-6, pcie_latency_s=25e-6),
    "pipeline_grid": dict(stages=4, microbatches=16),
    "weights_per_gpu_bytes": dict(model=LLAMA_405B, tp=8, pp=2),
    "placement_model": dict(params=405e9, bytes_per_param=2.0),
    "placement_candidates": dict(model=LLAMA_405B, gpus_per_node=8, max_pp=4),
    "layout_candidates": dict(gpus_per_node=8, max_pp=4),
    "parallel_layout": dict(model=LLAMA_405B, hardware=H100_SXM, reserve_bytes=4e9,
                            gpus_per_node=8, max_nodes=4, min_kv_bytes_per_gpu=1e9),
    "disaggregated_pools": dict(request_rate_per_s=100, mean_prompt_tokens=2000.0,
                                mean_output_tokens=250.0, prefill_tok_per_s_per_group=10000,
                                decode_tok_per_s_per_group=2500),
    "kv_transfer_s": dict(model=LLAMA_70B, context_tokens=8000, link_bytes_per_s=900e9,
                          bytes_per_value=2),
    "kv_routing_ttft": dict(model=LLAMA_8B, hardware=H100_SXM, turn=20, first_turn_tokens=6000,
                            tokens_per_turn=1200, efficiency=0.5),
    "routed_mean_ttft_s": dict(cold_s=0.932, warm_s=0.039, warm_share=0.9),
    "routed_ttft_percentile": dict(cold_s=0.932, warm_s=0.039, warm_share=0.9,
                                   percentile=99.0),
    "itl_batch_ceiling": dict(model=LLAMA_8B, hardware=H100_SXM, itl_target_s=0.025,
                              context_tokens=600, tp=1, max_batch=4096),
    "batch_window": dict(model=LLAMA_8B, hardware=H100_SXM, tp=1, live_tokens=600,
                         reservation_tokens=8000, itl_target_s=0.025, reserve_bytes=4e9),
}

ALLOW = {
    "tp_layout_rows": {"context_tokens": ["zero"], "nvlink_latency_s": ["zero"],
                       "pcie_latency_s": ["zero"]},
    "tp_decode_step": {"collective_latency_s": ["zero"], "context_tokens": ["zero"]},
    "parallel_layout": {"reserve_bytes": ["zero"], "min_kv_bytes_per_gpu": ["zero"]},
    "kv_transfer_s": {"context_tokens": ["zero"]},
    "routed_mean_ttft_s": {"warm_share": ["zero"]},
    "routed_ttft_percentile": {"warm_share": ["zero"], "percentile": ["zero"]},
    "itl_batch_ceiling": {"context_tokens": ["zero"]},
    "batch_window": {"reserve_bytes": ["zero"]},
}
