"""The 8.5 and 8.6 explorers reproduce the chapter's printed numbers at their defaults.

Expected values are the chapter's printed numbers at their printed rounding (8.5.1-8.5.4,
8.6.1, 8.6.3, Exercise 8-7's stated round model), never copied from the code's output.
"""

import math

import pytest

from companion import plots, widgets
from tests.printed import rounds_to


def printed(value, text: str) -> bool:
    """``value`` rounds to the printed number ``text`` (half a unit in its last digit)."""
    return rounds_to(value, text, slack=1e-12)


# --- 8.5 ------------------------------------------------------------------------------------

def test_greedy_default_is_figure_8_29():
    # four drafts, the third diverges: two kept, one corrected, three outputs; the third and
    # fourth draft tokens are thrown away
    n = widgets.GreedyVerificationPanel().update().numbers
    assert (n["accepted_draft_tokens"], n["emitted_tokens"], n["discarded_draft_tokens"]) == (
        2, 3, 2)


def test_greedy_full_match_adds_a_bonus_and_steps_reveal():
    panel = widgets.GreedyVerificationPanel()
    n = panel.update(first_mismatch=5).numbers
    assert (n["accepted_draft_tokens"], n["emitted_tokens"], n["discarded_draft_tokens"]) == (
        4, 5, 0)
    assert panel.update(step=0).numbers["emitted_so_far"] == 0
    # K7 accepting one draft token discards six (8.5.4)
    n = panel.update(draft_len=7, first_mismatch=2, step=9).numbers
    assert n["discarded_draft_tokens"] == 6
    # a mismatch beyond m + 1 is clamped to a full match
    assert panel.update(draft_len=2, first_mismatch=9).numbers["emitted_tokens"] == 3


@pytest.mark.parametrize("q_a, acceptance, tokens", [(1.0, "0.25", "1.33"),
                                                     (0.0, "0.75", "3.05")])
def test_rejection_sampling_aaaa_bbbb(q_a, acceptance, tokens):
    n = widgets.RejectionSamplingPanel().update(q_a=q_a).numbers
    assert printed(n["acceptance"], acceptance)
    assert printed(n["expected_tokens"], tokens)
    # the emitted tokens follow p(A) = 1/4 whatever the draft (seeded, a few thousand tokens)
    assert abs(n["simulated_share_A"] - 0.25) < 0.03
    assert abs(n["simulated_tokens_per_round"] - float(tokens)) < 0.1


def test_rejection_sampling_is_seeded():
    a = widgets.RejectionSamplingPanel().update(seed=3).numbers
    b = widgets.RejectionSamplingPanel().update(seed=3).numbers
    assert a == b


def test_latency_panel_bbbb_and_aaaa():
    panel = widgets.SpeculativeLatencyPanel()
    n = panel.update().numbers                      # BBBB, 0.1 ms lookup, 2 s index (8.5.2)
    assert printed(n["latency_per_token_ms"], "8.64")
    assert printed(n["crossover_ms"], "53.9")
    assert printed(n["request_s"], "4.22")
    assert printed(n["plain_request_s"], "6.72")
    assert printed(n["break_even_tokens"], "114")
    n = panel.update(acceptance=0.25).numbers       # AAAA
    assert printed(n["latency_per_token_ms"], "19.8")
    assert printed(n["crossover_ms"], "8.7")
    assert printed(n["expected_tokens"], "1.33")


def test_latency_panel_parallel_drafting():
    # 8.5.3: a 3.57 ms parallel draft, 3 (then 2) tokens per round -> 9.9 (14.9) ms per token;
    # E[N] = 3 at m = 2 needs a = 1, E[N] = 2 at m = 1 likewise
    panel = widgets.SpeculativeLatencyPanel()
    n = panel.update(acceptance=1.0, draft_len=2, draft_ms=3.57).numbers
    assert printed(n["latency_per_token_ms"], "9.9")
    n = panel.update(acceptance=1.0, draft_len=1, draft_ms=3.57).numbers
    assert printed(n["latency_per_token_ms"], "14.9")
    n = panel.update(acceptance=1.0, draft_len=2, draft_ms=14.28).numbers
    assert printed(n["latency_per_token_ms"], "13.5")


def test_draft_length_panel_uses_exercise_8_7_round_model():
    # T_m = 26.3 + 3.6 m ms; padded to groups of 4: 26.3 + 3.6 x 4 ceil(m / 4) ms
    panel = widgets.DraftLengthPanel()
    assert printed(panel.update(draft_len=4).numbers["round_ms"], "40.7")
    assert printed(panel.update(draft_len=5).numbers["round_ms"], "44.3")
    assert printed(panel.update(group=4, draft_len=5).numbers["round_ms"], "55.1")
    assert printed(panel.update(group=4, draft_len=8).numbers["round_ms"], "55.1")
    n = panel.update(group=4, draft_len=5).numbers
    assert printed(n["added_ms"], "14.4")
    # a = 3/4: E[N_4] = 1 + 3/4 + 9/16 + 27/64 + 81/256
    assert printed(panel.update(draft_len=4, group=1).numbers["expected_tokens"], "3.05")


# --- 8.6 ------------------------------------------------------------------------------------

def test_admission_short_request():
    panel = widgets.AdmissionPanel()
    n = panel.update().numbers                      # 8.1.1 / 8.6.1: 0.196 s, 6.76 s, 6.95 s
    assert printed(n["ttft_s"], "0.196")
    assert printed(n["generation_s"], "6.76")
    assert printed(n["finish_s"], "6.95")
    assert n["admitted"] is True
    n = panel.update(queue_s=0.2).numbers           # another 0.1 s in the queue: 7.05 s, late
    assert printed(n["finish_s"], "7.05")
    assert n["admitted"] is False
    # Little's law, 8.6.1: 4 req/s x 0.5 s = 2
    assert panel.update(queue_s=0.1).numbers["requests_in_system"] == pytest.approx(4 * 6.9535)


def test_scheme_panel_chapter_setting():
    n = widgets.SchemePanel().update().numbers
    assert printed(n["B_memory_GiB"], "5.91")
    assert printed(n["C_memory_GiB"], "9.86")
    assert printed(n["D_memory_GiB"], "9.02")
    assert printed(n["A_memory_GiB"] * 1024, "19008")
    assert printed(n["B_total_s"], "9.01")
    assert printed(n["C_total_s"], "14.55")
    assert printed(n["D_total_s"], "4.56")
    assert [k for k in "ABCD" if n[f"{k}_feasible"]] == ["D"]
    assert n["best"] == "D"
    assert printed(n["D_gpu_s_per_result"], "0.285")
    assert printed(n["D_energy_J_per_result"], "171")
    assert math.isinf(n["B_gpu_s_per_result"])     # B: zero qualifying results


def test_scheme_panel_variants():
    panel = widgets.SchemePanel()
    n = panel.update(kv_budget_gib=6.0).numbers     # D no longer fits, B still late
    assert n["best"] is None
    assert not n["D_feasible"] and not n["B_feasible"]
    n = panel.update(kv_budget_gib=12.0, output_tokens=16).numbers
    assert printed(n["B_total_s"], "2.45")
    assert printed(n["D_total_s"], "2.37")
    assert n["B_feasible"] and n["D_feasible"]
    # E is Exercise 8-9's to work out: the explorer never shows it
    n = panel.update(output_tokens=256).numbers
    assert "E_total_s" not in n
    assert {c.name for c in panel.controls}.isdisjoint({"schemes", "e_tokens_per_round"})


def test_scheme_panel_prefix_and_acceptance_sliders():
    panel = widgets.SchemePanel()
    base = panel.update().numbers
    # fewer tokens per round -> more rounds -> D slower
    assert panel.update(d_tokens_per_round=2.0).numbers["D_total_s"] > base["D_total_s"]
    panel.reset()
    # no shared prefix: B and D hold as much KV as A (plus D's draft)
    n = panel.update(shared_prefix_tokens=0).numbers
    assert n["B_memory_GiB"] == pytest.approx(n["A_memory_GiB"])
    assert n["B_total_s"] > base["B_total_s"]


def test_amdahl_panel():
    panel = widgets.AmdahlPanel()
    n = panel.update().numbers                      # decode 50 of 100 s, 4x: 62.5 s, 1.6x
    assert printed(n["task_time_s"], "62.5") and printed(n["speedup"], "1.6")
    view = panel.update(decode_fraction=0.2)         # 20 of 100 s: 85 s, 1.18x
    n = view.numbers
    assert printed(n["task_time_s"], "85") and printed(n["speedup"], "1.18")
    # the readout names the fraction its break-even belongs to: 20 s - 5 s saved
    assert "f = 0.2" in view.text and "<b>15 s</b>" in view.text
    # the book's static slider stops at both of the chapter's fractions
    from companion.explorers.static import control_values
    fraction = next(c for c in panel.controls if c.name == "decode_fraction")
    assert {0.2, 0.5} <= set(control_values(fraction, include=[0.5]))


# --- figure builders --------------------------------------------------------------------------

def test_figure_builders_title_every_axis():
    from companion.sim.speculative import greedy_example

    figs = [plots.greedy_verification_figure(greedy_example()),
            widgets.SchemePanel().figure(), widgets.AmdahlPanel().figure(),
            widgets.RejectionSamplingPanel().figure(), widgets.AdmissionPanel().figure(),
            widgets.DraftLengthPanel().figure(), widgets.SpeculativeLatencyPanel().figure()]
    for fig in figs:
        layout = fig.to_plotly_json()["layout"]
        for axis in [k for k in layout if k.startswith(("xaxis", "yaxis"))]:
            if layout[axis].get("showticklabels") is False:
                continue
            assert layout[axis].get("title", {}).get("text"), (fig.layout.title.text, axis)
