import numpy as np

from companion.sim.load import LONG_REQUEST, SHORT_REQUEST, Workload
from companion.specs import QWEN3_8B, RTX_PRO_6000

TARGET = "companion.sim.load"

_wl = Workload(np.array([0.0, 0.1, 0.2, 0.3]), 256, 16, deadline_s=7.0,
               cancel_s=[np.inf, np.inf, 0.25, np.inf])

EXAMPLES = {
    "poisson_arrivals": dict(rate_per_s=4.0, n_requests=10, seed=1, start_s=1.0),
    "trace_arrivals": dict(times=[0.0, 0.5, 1.0]),
    "workload": dict(arrival_s=[0.0, 0.5], shapes=[SHORT_REQUEST, LONG_REQUEST],
                     weights=[3.0, 1.0], seed=1, deadline_s=7.0, ttft_slo_s=1.0,
                     itl_slo_s=0.1, correct_prob=0.9, cancel_s=[5.0, 6.0]),
    "run_service": dict(workload=_wl, policy="chunked", max_running=4, model=QWEN3_8B,
                        hardware=RTX_PRO_6000, chunk_tokens=128, token_budget=256,
                        kv_budget_bytes=2**30, block_tokens=16, bytes_per_value=2,
                        kv_policy="on_demand", seed=1, busy_power_w=600.0, idle_power_w=30.0,
                        window_s=[0.0, 100.0]),
    "goodput_sweep": dict(rates_per_s=[2.0, 8.0], n_requests=20, deadline_s=7.0,
                          correct_prob=0.9, seed=1),
    "nearest_rank_percentile": dict(values=[1.0, 2.0, 3.0], q=50.0),
}

ALLOW = {
    # seed 0 is a seed; a trace may start at 0; idle power may be 0 W; correctness may be 0;
    # the 0th percentile is the minimum and no values give NaN
    "poisson_arrivals": {"seed": ["zero"], "start_s": ["zero"]},
    "workload": {"seed": ["zero"], "correct_prob": ["zero"]},
    "run_service": {"seed": ["zero"], "idle_power_w": ["zero"]},
    "goodput_sweep": {"seed": ["zero"], "correct_prob": ["zero"]},
    "nearest_rank_percentile": {"q": ["zero"], "values": ["empty"]},
}
