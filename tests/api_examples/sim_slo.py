from companion.specs import H100_SXM, LLAMA_8B

TARGET = "companion.sim.slo"

EXAMPLES = {
    "slo_run": dict(rate_per_s=2.0, ttft_target_s=0.5, itl_target_s=0.02, model=LLAMA_8B,
                    hardware=H100_SXM, prompt_tokens=512, output_tokens=16,
                    prefill_efficiency=0.5, policy="chunked", chunk_tokens=128, n_requests=12,
                    max_running=8, seed=1),
}

ALLOW = {
    # seed 0 is a seed
    "slo_run": {"seed": ["zero"]},
}
