TARGET = "companion.sim.queueing"

EXAMPLES = {
    "fifo_waits": dict(arrival_s=[0.0, 1.0, 2.0], service_s=1.5),
    "md1_waits": dict(arrival_rate_per_s=0.5, service_s=1.0, n_requests=100, seed=1,
                      arrivals="poisson"),
    "pool_run": dict(arrival_rate_per_s=4.0, mean_service_s=1.0, servers=5, n_requests=2000,
                     seed=1, warmup=100),
}

ALLOW = {
    # arrivals may start at 0 and services may be instant; seed 0 is a seed; no warm-up is valid
    "fifo_waits": {"arrival_s": ["zero"], "service_s": ["zero"]},
    "md1_waits": {"service_s": ["zero"], "seed": ["zero"]},
    "pool_run": {"seed": ["zero"], "warmup": ["zero"]},
}
