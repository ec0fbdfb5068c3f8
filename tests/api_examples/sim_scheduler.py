from companion.sim.scheduler import Request, RoundTimeModel

TARGET = "companion.sim.scheduler"

EXAMPLES = {
    "simulate": dict(requests=[Request("r0", 0.0, 2048, 8), Request("r1", 0.0, 2048, 2),
                               Request("r2", 0.020, 8192, 2), Request("r3", 0.030, 2048, 4)],
                     policy="chunked", max_running=2, round_time=RoundTimeModel.chapter8(),
                     chunk_tokens=2048, token_budget=4096, captured_shapes=(16, 32, 64),
                     engine="fast"),
    "chapter17_round_time": dict(decode_step_s=6.1e-3),
}
