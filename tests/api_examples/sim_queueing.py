TARGET = "companion.sim.queueing"

EXAMPLES = {
    "pool_run": dict(arrival_rate_per_s=4.0, mean_service_s=1.0, servers=5, n_requests=2000,
                     seed=1, warmup=100),
}

ALLOW = {
    # seed 0 and no warm-up are valid
    "pool_run": {"seed": ["zero"], "warmup": ["zero"]},
}
