"""Chapter 17, "What interviewers probe": only the numbers the sections do not already print in
the same form (the rest restate §2-§10 and are covered there)."""

from __future__ import annotations

from companion import calc
from companion.chapters import ch17
from companion.ledger import Entry, entry
from companion.specs import H100_SXM, LLAMA_8B, LLAMA_70B
from companion.units import ms


# the sections its entries lie in (or under): the ledger computes this module only for them
SECTIONS = ("17.4", "17.5")


def entries() -> list[Entry]:
    hw = H100_SXM
    gain = calc.paged_batch_gain(LLAMA_8B, hw, block_tokens=1)
    return [
        entry("17.4/interview-about-sixty", "17.4",
              "interview: at TP=4 about sixty 8K conversations", "60", "sequences",
              calc.tp_kv_capacity(LLAMA_70B, hw, tp=ch17.TP)["max_sequences"], sig=1,
              note="§4's 62 sequences, rounded in words to 'about sixty'."),
        entry("17.5/interview-step-6ms", "17.5",
              "interview: batch 57 -> 760 takes the step from 6 ...", "6", "ms",
              gain["naive"]["step_s"] / ms),
        entry("17.5/interview-step-23ms", "17.5", "interview: ... to 23 ms", "23", "ms",
              gain["paged"]["step_s"] / ms),
    ]
