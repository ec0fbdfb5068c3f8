TARGET = "companion.sim.offload_pipeline"

EXAMPLES = {
    "spread_layers": dict(n_layers=36, offloaded=9),
    "offload_round": dict(n_layers=36, offloaded_layers=[3, 7, 11], compute_per_layer_s=7e-4,
                          copy_per_layer_s=4.7e-3, buffers=1, latency_s=1e-5, max_rounds=50),
}

ALLOW = {
    # no offloaded layers, no buffer (fetch on demand), an instant copy and no latency are
    # meaningful
    "spread_layers": {"offloaded": ["zero"]},
    "offload_round": {"offloaded_layers": ["empty"], "buffers": ["zero"],
                      "copy_per_layer_s": ["zero"], "latency_s": ["zero"]},
}
