"""Good calls of the fuller models of 17 §1-§5 (companion.formulas.fuller)."""

from companion.specs import H100_SXM, LLAMA_8B

EXAMPLES = {
    "achieved_rates": dict(hardware=H100_SXM, compute_efficiency=0.5, bandwidth_efficiency=0.7,
                           sweep_bytes=80e9),
    "decode_attention_intensity": dict(model=LLAMA_8B, batch=64, context_tokens=600,
                                       bytes_per_param=2, kv_bytes_per_value=2),
    "prefill_readings": dict(model=LLAMA_8B, hardware=H100_SXM, prompt_tokens=2048,
                             efficiency=0.5, bytes_per_param=2),
    "matmul_intensity": dict(model=LLAMA_8B, tokens=2048, intermediate_size=14336,
                             bytes_per_param=2, activation_bytes=2),
    "pass_roofline": dict(model=LLAMA_8B, hardware=H100_SXM, prompt_tokens=512,
                          history_tokens=512, decode_batch=57, decode_context_tokens=600,
                          efficiency=0.5, attention=True, kv_bytes_per_value=2),
    "head_of_line_readings": dict(model=LLAMA_8B, hardware=H100_SXM, prompt_tokens=8000,
                                  step_s=0.006, live_tokens=600, efficiency=0.5),
    "long_context_in_batch": dict(model=LLAMA_8B, hardware=H100_SXM, context_tokens=122_000,
                                  batch=57, live_tokens=600, kv_bytes_per_value=2),
    "block_rounded_capacity": dict(model=LLAMA_8B, hardware=H100_SXM, context_tokens=100,
                                   block_tokens=16, tp=1, reserve_bytes=4e9, bytes_per_value=2),
    "decode_roofline_batch": dict(model=LLAMA_8B, hardware=H100_SXM, batch=762, live_tokens=600,
                                  efficiency=0.5, kv_bytes_per_value=2),
    "decode_step_per_kernel": dict(model=LLAMA_8B, hardware=H100_SXM, batch=762,
                                   live_tokens=600, efficiency=1.0, kv_bytes_per_value=2),
}

ALLOW = {
    # an empty context, a pass without a cached prefix or decode batch, no reserve: meaningful
    "decode_attention_intensity": {"context_tokens": ["zero"]},
    "pass_roofline": {p: ["zero"] for p in ("prompt_tokens", "history_tokens", "decode_batch",
                                             "decode_context_tokens")},
    "long_context_in_batch": {"context_tokens": ["zero"]},
    "block_rounded_capacity": {"reserve_bytes": ["zero"]},
}
