"""Good calls of the decode-round kernel timeline and Speed of Light (companion.sim.kernel_timeline)."""

from companion.sim.scenarios import batching_trace, batching_trace_requests
from companion.specs import H100_SXM, LLAMA_8B

TARGET = "companion.sim.kernel_timeline"

_TRACE = batching_trace(batching_trace_requests())["continuous"]

EXAMPLES = {
    "layer_kernels": dict(model=LLAMA_8B, hardware=H100_SXM, batch=4, context_tokens=600,
                          kernels_per_layer=12, min_kernel_s=2e-6),
    "decode_step_timeline": dict(model=LLAMA_8B, hardware=H100_SXM, batch=4, context_tokens=600,
                                 layers=32, cuda_graphs=False, kernels_per_layer=12,
                                 launch_overhead_s=20e-6, graph_launch_s=20e-6,
                                 min_kernel_s=2e-6),
    "round_timeline": dict(result=_TRACE, round_index=40, model=LLAMA_8B, hardware=H100_SXM),
    "speed_of_light": dict(model=LLAMA_8B, hardware=H100_SXM, batch=1, context_tokens=600,
                           roof_fraction=0.8, kernels_per_layer=12, min_kernel_s=2e-6),
}

ALLOW = {
    # no cached context, free launches and a zero kernel floor are meaningful settings; round 0
    # is a round like any other
    "layer_kernels": {"context_tokens": ["zero"], "min_kernel_s": ["zero"]},
    "decode_step_timeline": {"context_tokens": ["zero"], "launch_overhead_s": ["zero"],
                             "graph_launch_s": ["zero"], "min_kernel_s": ["zero"]},
    "round_timeline": {"round_index": ["zero"]},
    "speed_of_light": {"context_tokens": ["zero"], "min_kernel_s": ["zero"]},
}
