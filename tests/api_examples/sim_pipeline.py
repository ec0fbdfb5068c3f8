TARGET = "companion.sim.pipeline"

EXAMPLES = {
    "pipeline_run": dict(stage_times_s=[1.0, 2.0, 1.5], jobs=8),
}
