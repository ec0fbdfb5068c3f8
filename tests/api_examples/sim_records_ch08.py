"""Good calls for the generated exercise records (companion.sim.records_ch08)."""

TARGET = "companion.sim.records_ch08"

EXAMPLES = {
    "budget_replay": dict(seed=0),
    "agent_cache_replay": dict(seed=0),
    "precision_results": dict(seed=0),
    "retry_records": dict(seed=0),
    "scheme_load_runs": dict(seed=0, deadline_s=7.0, e_tokens_per_round=2.0, lookup_s=1e-4,
                             arrival_rate_per_s=6.0),
}

ALLOW = {
    # seed 0 is the chapter's own data; a zero lookup time is a free draft source
    **{name: {"seed": ["zero"]} for name in EXAMPLES},
    "scheme_load_runs": {"seed": ["zero"], "lookup_s": ["zero"]},
}
