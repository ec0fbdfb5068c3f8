"""Exercise 17-13: KV-aware routing (17 §8)."""

from __future__ import annotations

from companion import calc, specs, units
from companion.chapters import ch17
from companion.exercises import common_ch17
from companion.exercises.variants import ms, variant
from companion.grading import Exercise, Part


def _params(seed: int) -> dict:
    c = variant("17-13", seed,
                dict(model=specs.LLAMA_8B, hw=specs.H100_SXM, eff=ch17.PREFILL_EFFICIENCY,
                     turn=ch17.ROUTING_TURN,
                     first=ch17.AGENT_FIRST_TURN_TOKENS,
                     per_turn=ch17.AGENT_TOKENS_PER_TURN, hits=ch17.ROUTER_WARM_SHARES),
                dict(model=common_ch17.ROUND_SMALL, hw=common_ch17.CARDS, eff=(0.4, 0.5, 0.6),
                     turn=(5, 10, 20, 30), first=(2_000, 4_000, 6_000),
                     per_turn=(400, 800, 1_200, 2_000),
                     hits=((0.9, 0.3), (0.95, 0.5), (0.8, 0.2))))
    m = c["model"]
    return dict(model=m, hardware=c["hw"], params=m.n_params, efficiency=c["eff"],
                turn=c["turn"], first_turn_tokens=c["first"], tokens_per_turn=c["per_turn"],
                hit_rates=c["hits"])


# the percentile the tail parts ask for: the smallest TTFT that fewer than 10% of turns exceed
P90_TAIL = 0.10


def p90_is_cold(warm_share: float) -> bool:
    """Is a router's p90 TTFT a full cold prefill? Yes unless fewer than 10% of turns land
    cold, i.e. whenever the warm share is at most 90%."""
    return 1 - warm_share >= P90_TAIL - 1e-12


def _solve(g: dict) -> dict:
    r = calc.kv_routing_ttft(g["model"], g["hardware"], g["turn"],
                             first_turn_tokens=g["first_turn_tokens"],
                             tokens_per_turn=g["tokens_per_turn"], efficiency=g["efficiency"])
    good, poor = g["hit_rates"]

    def expectedms(hit: float) -> float:
        return ms(hit * r["warm_s"] + (1 - hit) * r["cold_s"])

    def p90ms(hit: float) -> float:
        return ms(r["cold_s"] if p90_is_cold(hit) else r["warm_s"])

    return {
        "a-context": r["context_tokens"],
        "b-cold-flop": r["cold_flops"] / units.TFLOP,
        "c-cold": ms(r["cold_s"]),
        "d-warm": ms(r["warm_s"]),
        "e-ratio": r["speedup"],
        "f-expected-good": expectedms(good),
        "g-expected-poor": expectedms(poor),
        "h-p90-good": p90ms(good),
        "i-p90-poor": p90ms(poor),
    }


def _mistakes(g: dict) -> dict:
    s = _solve(g)
    t, first, per = g["turn"], g["first_turn_tokens"], g["tokens_per_turn"]
    good, poor = g["hit_rates"]
    swapped = "a warm hit costs the warm TTFT: hit x warm + (1 - hit) x cold"
    mean = ("that is the mean; the p90 is one of the two TTFTs: cold unless fewer than 10% of "
            "turns land cold")
    edge = ("at a 90% warm share exactly one turn in ten is cold, which is not fewer than 10%: "
            "the p90 is the cold TTFT")
    tail = {}
    for part, mean_part, hit in (("h-p90-good", "f-expected-good", good),
                                 ("i-p90-poor", "g-expected-poor", poor)):
        other = s["d-warm"] if s[part] == s["c-cold"] else s["c-cold"]
        why = edge if abs(hit - (1 - P90_TAIL)) < 1e-9 else (
            "the p90 is the cold TTFT when at least 10% of turns land cold (a warm share of at "
            "most 90%), else the warm one")
        tail[part] = [(s[mean_part], mean), (other, why)]
    return {
        **tail,
        "b-cold-flop": [(s["b-cold-flop"] * 1e12, "give TFLOP, not FLOP: divide 2 N L_t by "
                                                  "10^12")],
        "e-ratio": [(1 / s["e-ratio"], "cold over warm, not warm over cold: the ratio is "
                                       "L_t / Delta n, above 1")],
        "a-context": [(first + t * per, "turn t adds t - 1 messages to the first turn's prompt")],
        "c-cold": [(s["c-cold"] * g["efficiency"], "prefill runs at the assumed fraction of "
                                                   "peak")],
        "f-expected-good": [(good * s["c-cold"] + (1 - good) * s["d-warm"], swapped)],
        "g-expected-poor": [(poor * s["c-cold"] + (1 - poor) * s["d-warm"], swapped)],
    }


def exercises() -> list[Exercise]:
    return [Exercise(
        id="17-13", title="What KV-aware routing is worth on a multi-turn conversation",
        section="17 §8",
        parts=(
            Part("a-context", "tokens in the conversation at the given turn", "tokens", "exact"),
            Part("b-cold-flop", "prefill FLOPs on a cold worker", "TFLOP", "rel", 0.005),
            Part("c-cold", "TTFT (no queueing) on a cold worker", "ms", "rel", 0.005),
            Part("d-warm", "TTFT (no queueing) on a warm worker", "ms", "rel", 0.005),
            Part("e-ratio", "cold over warm TTFT", "x", "rel", 0.005),
            Part("f-expected-good", "expected TTFT (no queueing) of turn t, router with the "
                 "higher warm-hit rate", "ms", "rel", 0.005),
            Part("g-expected-poor", "expected TTFT (no queueing) of turn t, router with the "
                 "lower warm-hit rate", "ms", "rel", 0.005),
            Part("h-p90-good", "p90 TTFT (no queueing) of turn t, router with the higher "
                 "warm-hit rate", "ms", "rel", 0.005),
            Part("i-p90-poor", "p90 TTFT (no queueing) of turn t, router with the lower "
                 "warm-hit rate", "ms", "rel", 0.005),
        ),
        make_params=_params, solve=_solve, mistakes=_mistakes,
    )]
