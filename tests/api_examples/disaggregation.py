"""Good calls of 17 §8's one-way NVLink rate, the time a request spends in an M/M/c pool and
the goodput of a fleet shared or split (companion.formulas.parallelism and .queueing)."""

from companion.specs import H100_SXM, LLAMA_8B

EXAMPLES = {
    "nvlink_one_way_bytes_per_s": dict(hardware=H100_SXM),
    "pool_time_tail": dict(arrival_rate_per_s=100.0, mean_service_s=0.2, servers=23,
                           time_s=0.5),
    "fleet_goodput": dict(request_rate_per_s=10.0, gpus=8, layout="split", prefill_gpus=6,
                          model=LLAMA_8B, hardware=H100_SXM, mean_prompt_tokens=2000,
                          output_tokens=250, ttft_target_s=0.5, itl_target_s=0.02,
                          link_bytes_per_s=450e9, efficiency=0.5, percentile=90.0),
    "fleet_slo_rate": dict(gpus=2, layout="shared", tolerance_per_s=0.5),
    "best_split": dict(gpus=3),
}

ALLOW = {
    # a time of 0 is a valid question (everyone spends longer than that); percentile 0 is valid
    "pool_time_tail": {"time_s": ["zero"]},
    "fleet_goodput": {"percentile": ["zero"]},
}
