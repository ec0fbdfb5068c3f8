"""Ledger: 8.3.4's agent replay, Exercise 8-4's seed-0 record replayed through
``companion.sim.kvcache.PrefixCache`` (``companion.sim.records_ch08``) (source="sim").

Apart from the other paging numbers (sim_kvcache) because building the record takes most of a
second: only a notebook that lists 8.3.4 (or the whole ledger) pays for it."""

from __future__ import annotations

from companion.ledger import Entry, entry
from companion.sim.records_ch08 import agent_cache_replay


# the sections its entries lie in (or under): the ledger computes this module only for them
SECTIONS = ("8.3.4",)


def entries() -> list[Entry]:
    out: list[Entry] = []
    S = "sim"

    # --- 8.3.4: Exercise 8-4's seed-0 agent replay (12 rounds) through a PrefixCache -------
    replay = agent_cache_replay(0)
    total = sum(r.input_tokens for r in replay.rounds)
    large = sum(r.hit_tokens_large for r in replay.rounds)
    small = sum(r.hit_tokens_small for r in replay.rounds)
    built = ("Exercise 8-4's seed-0 record: the companion's agent trace with its turn and "
             "reply sizes built (records_ch08._built_plan) to the printed input and 6 GiB hit "
             "totals; the hits are those the PrefixCache replay serves with the other "
             "requests in between.")
    out += [
        entry("8.3.4/sim-replay-input-tokens", "8.3.4", "12 rounds of agent input contain",
              "19,556", "tokens", total, source=S, note=built),
        entry("8.3.4/sim-replay-hits-6GiB", "8.3.4", "a 6 GiB pool hits", "16,304", "tokens",
              large, source=S, note=built),
        entry("8.3.4/sim-replay-hit-ratio-6GiB", "8.3.4", "hit ratio with the 6 GiB pool",
              "83.4", "%", 100 * large / total, source=S,
              note="16,304 / 19,556; " + built),
        entry("8.3.4/sim-replay-reprocessed-6GiB", "8.3.4", "6 GiB pool: tokens reprocessed",
              "3,252", "tokens", total - large, source=S, note=built),
        entry("8.3.4/sim-replay-hits-1GiB", "8.3.4", "a 1 GiB pool has no hits", "0", "tokens",
              small, source=S, note=built),
    ]
    return out
