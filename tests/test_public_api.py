"""The public API promised to students and instructors, pinned name by name.

Every name of ``tests/architecture.py``'s ``PROMISED`` (the design's list: specs, calc, sim,
ledger, grading) is read from the module students import it from and called with the
chapters' own data; each expected value is a number the chapters print (section cited), never
one copied from the companion's output. A promised name without a pin here fails
``test_every_promised_name_is_pinned``.
"""

from __future__ import annotations

import warnings

import pytest

from companion import calc, grading, ledger, sim, specs
from companion.units import GB, GiB, KiB, MiB, ms, us
from tests.architecture import PROMISED

# Qwen3-8B's public config.json (book conventions; the chapters' byte counts follow from it)
QWEN3_8B_CONFIG = {
    "num_hidden_layers": 36, "num_key_value_heads": 8, "num_attention_heads": 32,
    "head_dim": 128, "hidden_size": 4096, "intermediate_size": 12288, "vocab_size": 151936,
    "tie_word_embeddings": False, "model_type": "qwen3",
}
D_W = 15_136_811_008          # 8.2.1 and Exercise 8-1: the weights a decode step reads once


def pin_specs_Model():
    m = specs.Model("Qwen3-8B", 36, 8, 128, 8.19e9)       # positional, as design §3 lists
    assert calc.kv_bytes_per_token(m) == 2 * 36 * 8 * 128 * 2 == 147_456          # 8.1.2


def pin_specs_Hardware():
    h = specs.Hardware("H100 SXM", 80 * GB, 3.35e12, 989e12)
    assert round(calc.ridge_point(h)) == 295                                        # 17 §2


def pin_specs_QWEN3_8B():
    m = specs.QWEN3_8B
    assert (m.n_layers, m.n_kv_heads, m.head_dim) == (36, 8, 128)                   # 8.1.2
    assert m.weight_bytes == 16_381_470_720 and m.streamed_weight_bytes == D_W
    assert "8.1.2" in m.source


def pin_specs_LLAMA_8B():
    assert calc.kv_bytes_per_token(specs.LLAMA_8B) == 128 * KiB    # "128 KB" per token, 17 §4
    assert specs.LLAMA_8B.source


def pin_specs_LLAMA_70B():
    assert calc.kv_bytes_per_token(specs.LLAMA_70B) == 327_680                     # 17 §4
    assert specs.LLAMA_70B.source


def pin_specs_RTX_PRO_6000():
    h = specs.RTX_PRO_6000         # 96 GB, 1792 GB/s, 503.8 dense BF16 TFLOP/s, 600 W (8.1)
    assert (h.mem_bytes, h.mem_bw_bytes_per_s, h.peak_flops_per_s, h.power_w) == (
        96e9, 1792e9, 503.8e12, 600)
    assert h.source


def pin_specs_H100_SXM():
    h = specs.H100_SXM             # 80 GB at 3.35 TB/s, 989 TFLOP/s, PCIe Gen5 64 GB/s (17)
    assert (h.mem_bytes, h.mem_bw_bytes_per_s, h.peak_flops_per_s,
            h.host_link_bytes_per_s) == (80e9, 3.35e12, 989e12, 64e9)
    assert h.source


def pin_specs_model_from_hf_config():
    m = specs.model_from_hf_config(QWEN3_8B_CONFIG)
    assert calc.kv_bytes_per_token(m) == 147_456                                    # 8.1.2
    assert m.weight_bytes == 16_381_470_720                     # book conventions, Qwen3-8B
    missing = {k: v for k, v in QWEN3_8B_CONFIG.items() if k != "num_key_value_heads"}
    missing.pop("num_attention_heads")
    with pytest.raises(ValueError, match="num_key_value_heads|num_attention_heads"):
        specs.model_from_hf_config(missing)


def pin_calc_kv_bytes_per_token():
    assert calc.kv_bytes_per_token(specs.QWEN3_8B) / KiB == 144                     # 8.1.2


def pin_calc_kv_bytes():
    # a request holds prompt + 255 tokens once done, in whole 16-token blocks (8.1.2)
    assert calc.kv_bytes(specs.QWEN3_8B, 2048 + 255) / MiB == 324
    assert calc.kv_bytes(specs.QWEN3_8B, 8192 + 255) / MiB == 1188
    assert calc.kv_bytes(specs.QWEN3_8B, 8192, block_tokens=1) / MiB == 1152


def pin_calc_max_concurrent():
    # 12 GiB, 8K prompts, 256 outputs, a 6144-token prefix stored once: 35 requests (8.3.2)
    assert calc.max_concurrent(12 * GiB, specs.QWEN3_8B, 8192, 256,
                               shared_prefix_tokens=6144) == 35


def pin_calc_read_bytes_per_output_token():
    k = calc.kv_bytes_per_token(specs.QWEN3_8B)
    # 2K context: 14.38 GiB per output token at batch 1, 0.50 GiB at batch 64 (8.2.1)
    assert round(calc.read_bytes_per_output_token(D_W, 1, 2048, k) / GiB, 2) == 14.38
    assert round(calc.read_bytes_per_output_token(D_W, 64, 2048, k) / GiB, 2) == 0.50


def pin_calc_kv_crossover_batch():
    k = calc.kv_bytes_per_token(specs.QWEN3_8B)
    assert calc.kv_crossover_batch(D_W, 2048, k) == 51                              # 8.2.1
    assert calc.kv_crossover_batch(D_W, 8192, k) == 13


def pin_calc_ridge_point():
    assert round(calc.ridge_point(specs.H100_SXM)) == 295                           # 17 §2


def pin_calc_attention_pairs():
    # c = 512: the first block 131,328 pairs, the last of an 8K input (h = 7680) 4,063,488
    assert calc.attention_pairs(512, 0) == 131_328                                  # 8.2.3
    assert calc.attention_pairs(512, 7680) == 4_063_488


def pin_calc_quantized_bytes():
    # every 32 BF16 values take 64 bytes; q8_0 34 and q4_0 18 (8.4.2, Figure 8-23);
    # a Q2_K group of 256 values 84 bytes (8.4.1)
    assert [calc.quantized_bytes(32, f) for f in ("bf16", "q8_0", "q4_0")] == [64, 34, 18]
    assert calc.quantized_bytes(256, "Q2_K") == 84
    assert calc.quantized_bytes(32, "fp8") == 32
    assert calc.quantized_bytes(33, "q8_0") == 68            # a partial group is a whole group


def pin_calc_speculative_expected_tokens():
    # a = 1/4 and 3/4 with 4 draft tokens: 1.33 and 3.05 (8.5.2); a = 0.7, k = 4: 2.77 (17 §10)
    assert round(calc.speculative_expected_tokens(0.25, 4), 2) == 1.33
    assert round(calc.speculative_expected_tokens(0.75, 4), 2) == 3.05
    assert round(calc.speculative_expected_tokens(0.7, 4), 2) == 2.77


def pin_calc_pipeline_bubble():
    assert round(calc.pipeline_bubble(4, 16) * 100, 1) == 15.8                      # 17 §7


def pin_calc_static_batch_utilization():
    # a batch of 8 with outputs 100, 200, ..., 800: 3,600 / 6,400 = 56% (17 §6)
    u = calc.static_batch_utilization(range(100, 900, 100))
    assert u == 3600 / 6400 and round(u * 100) == 56


def pin_calc_amdahl_speedup():
    assert calc.amdahl_speedup(0.5, 4) == 1.6                                       # 8.6.3
    assert round(calc.amdahl_speedup(0.2, 4), 2) == 1.18


def pin_calc_cache_retention_value():
    # 8.3.4: a 2048-token prefix, 94.7 ms to recompute, 4.7 ms to fetch and 4.7 ms to keep,
    # hit half the time: 40.3 ms saved; the 6144-token one (307.9, 14.2, 14.2 ms): 132.7 ms
    assert round(calc.cache_retention_value(0.5, 94.7 * ms, 4.7 * ms, 4.7 * ms) / ms, 1) == 40.3
    assert round(calc.cache_retention_value(0.5, 307.9 * ms, 14.2 * ms, 14.2 * ms) / ms) == 133


def _requests():
    """8.2.2's four requests, as the chapter states them."""
    return [sim.Request("r0", 0.0, 2048, 8), sim.Request("r1", 0.0, 2048, 2),
            sim.Request("r2", 20 * ms, 8192, 2), sim.Request("r3", 30 * ms, 2048, 4)]


def _model():
    return sim.RoundTimeModel(26.22 * ms, 30.4 * us, 3e-9)                         # 8.2.2


def pin_sim_Request():
    r = sim.Request("r2", 20 * ms, 8192, 2)
    assert (r.id, r.arrival_s, r.prompt_tokens, r.output_tokens) == ("r2", 0.02, 8192, 2)
    with pytest.raises(ValueError, match="prompt_tokens"):
        sim.Request("r", 0.0, 0, 2)


def pin_sim_RoundTimeModel():
    from companion.sim.round_time import round_work
    m = _model()
    assert (m.fixed_s, m.per_token_s, m.per_pair_s) == pytest.approx((26.22e-3, 30.4e-6, 3e-9))
    # a lone 2K prefill takes 94.8 ms and a decode on 2K cached tokens 26.26 ms (8.2.2)
    prefill = m.time_s(round_work(0, 0, [(2048, 0)], completing=1))
    decode = m.time_s(round_work(1, 2048))
    assert round(prefill / ms, 1) == 94.8 and round(decode / ms, 2) == 26.26


@pytest.mark.parametrize("policy, kw, total_ms, longest_ms", [
    ("static", {}, 870, 26), ("continuous", {}, 766, 376),
    ("chunked", dict(chunk_tokens=2048, token_budget=4096), 844, 133)])
def test_simulate_reproduces_8_2_2(policy, kw, total_ms, longest_ms):
    res = sim.simulate(_requests(), policy, max_running=2, round_time=_model(), **kw)
    assert round(res.makespan_s / ms) == total_ms
    assert round(res.max_itl_s / ms) == longest_ms


def pin_sim_simulate():
    test_simulate_reproduces_8_2_2("continuous", {}, 766, 376)


def pin_sim_Result():
    res = sim.simulate(_requests(), "continuous", max_running=2, round_time=_model())
    assert isinstance(res, sim.Result)
    # every request emits exactly its output tokens, in order, after it arrives
    for r in _requests():
        times = res.token_times[r.id]
        assert len(times) == r.output_tokens and times == sorted(times)
        assert res.ttft_s[r.id] == pytest.approx(times[0] - r.arrival_s)
    assert round(max(t for r in _requests() for t in res.token_times[r.id]) / ms) == 766
    assert round(max(max(res.itl_s[i], default=0) for i in res.ids) / ms) == 376  # 8.2.2
    first = res.rounds[0]
    assert first.start_s == 0 and round(first.duration_s / ms) > 0


def pin_ledger_entries():
    entries = {e.id: e for e in ledger.entries()}
    assert len(entries) > 500
    kv = [e for e in entries.values() if e.section == "8.1.2" and e.unit == "MiB"
          and e.printed == "288"]                       # 2048 tokens of KV: 288 MiB (8.1.2)
    assert kv and all(e.agrees and e.value == 288 for e in kv)
    assert all(e.agrees or e.note for e in entries.values())


def pin_grading_params():
    given = grading.params("8-1", 0)                    # seed 0: the chapter's own data
    assert given["weight_bytes"] == D_W and given["kv_bytes_per_token"] == 144 * KiB
    assert given["contexts"] == (2048, 8192) and given["batches"] == (1, 4, 16, 64)


def pin_grading_check():
    assert grading.check("8-1", "b-short", 51, quiet=True)                          # 8.2.1
    assert not grading.check("8-1", "b-short", 50, quiet=True)
    assert not grading.check("8-1", "b-long", None, quiet=True)


PINS = {name.removeprefix("pin_").replace("_", ".", 1): fn
        for name, fn in dict(globals()).items() if name.startswith("pin_")}


def test_every_promised_name_is_pinned():
    promised = {f"{m}.{n}" for m, names in PROMISED.items() for n in names}
    assert promised == set(PINS)


@pytest.mark.parametrize("name", sorted(PINS))
def test_promised_name(name):
    module, attr = name.split(".", 1)
    assert attr in dir(globals()[module])                # listed on its module, lazy or not
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)   # a promised name is not an alias
        PINS[name]()
