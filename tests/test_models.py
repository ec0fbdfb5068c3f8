"""Any model a student brings: shelf configs counted exactly, checked against references we did
not write.

- tests/data/reference_counts.json is made by tools/reference_counts.py from transformers (the
  models' own implementation): parameters it instantiates for each full config on the meta
  device, and the bytes its cache holds after a real forward through a shrunken copy.
- the weight index files (total_size) that the vendored copies ship, where they have one.
- a Monte Carlo of uniform top-k routing for the experts a batch touches.
"""

from __future__ import annotations

import json
import math
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pytest

from companion import calc, models, specs, units
from companion.formulas.core import (decode_step_parts, expected_experts_touched,
                                     moe_streamed_weight_bytes)
from companion.formulas.moe import active_params, decode_flops_per_token

REFERENCE = json.loads((Path(__file__).parent / "data" / "reference_counts.json").read_text())
SHELF = models.shelf_keys()


def quiet(cfg, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", models.ConfigFieldWarning)
        return models.model_from_hf_config(cfg, **kw)


# --- the shelf ------------------------------------------------------------------------------

def test_shelf_has_the_issue_and_chapter_models():
    want = {"qwen3-8b", "qwen3-30b-a3b", "qwen3-235b-a22b", "llama-2-7b", "llama-3.1-8b",
            "llama-3.1-70b", "llama-3.1-405b", "qwen2.5-7b-instruct", "mistral-7b-v0.1",
            "mixtral-8x7b-v0.1", "phi-3-mini-4k-instruct", "gemma-2b", "gemma-2-2b",
            "gemma-3-1b-it", "deepseek-v2-lite", "deepseek-v3"}
    assert want <= set(SHELF)
    assert set(REFERENCE["models"]) == set(SHELF), "rerun tools/reference_counts.py"


@pytest.mark.parametrize("key", SHELF)
def test_every_shelf_config_records_where_it_came_from(key):
    meta = models.shelf_sources()[key]
    # a byte copy of a config.json, or a transcription of a copy kept as code (said as such)
    assert ("vendored_from" in meta) != ("transcribed_from" in meta)
    origin = meta.get("vendored_from") or meta["transcribed_from"]
    assert meta["hf_repo"].count("/") == 1 and origin["repo"].count("/") == 1
    assert len(origin["commit"]) == 40
    m = models.load(key)
    assert meta["hf_repo"] in m.source and origin["commit"][:12] in m.source
    if "vendored_from" in meta:
        assert origin["path"].endswith(".json") and "copied from" in m.source
    else:
        assert origin["variable"] and "not a byte copy" in origin["kind"]
        assert len(origin["value_last_changed_in"]) == 40 and "transcribed from" in m.source


def test_shelf_and_load_give_the_same_models():
    by_name = models.shelf()
    assert list(by_name) == [models.load(k).name for k in SHELF]
    assert models.load("qwen3-30b-a3b") is models.load("qwen3-30b-a3b")  # cached


def test_unknown_shelf_key_is_named():
    with pytest.raises(ValueError, match="key"):
        models.load("gpt-5")


def test_load_takes_the_display_names_shelf_lists():
    # shelf() is keyed by display name; each of them loads the same model as its key
    for name, m in models.shelf().items():
        assert models.load(name) is models.load(name.upper()) is m
        assert models.shelf_config(name) == models.shelf_config(name.lower())


@pytest.mark.slow
def test_the_wheel_ships_the_shelf(tmp_path):
    """Build the wheel as pip does (setuptools from pyproject's build-system) and look inside:
    an installed companion finds its shelf only if package-data lists the files."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[1]
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path),
                    str(root)], check=True, capture_output=True)
    wheel, = tmp_path.glob("*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for key in SHELF:
        assert f"companion/data/hf_configs/{key}.json" in names
    assert "companion/data/hf_configs/SOURCES.json" in names


# --- parameter counts against transformers --------------------------------------------------

@pytest.mark.parametrize("key", SHELF)
def test_count_equals_what_transformers_instantiates(key):
    assert models.load(key).n_params == REFERENCE["models"][key]["params"]


@pytest.mark.parametrize("key", sorted(k for k, m in models.shelf_sources().items()
                                       if "checkpoint_index" in m))
def test_count_equals_the_checkpoint_index_total(key):
    # the same copy's weight index states its BF16 total in bytes
    total = models.shelf_sources()[key]["checkpoint_index"]["total_size_bytes"]
    assert models.load(key).weight_bytes == total


@pytest.mark.parametrize("key", sorted(REFERENCE["architecture_probes"]))
def test_architecture_probe_counts(key):
    probe = REFERENCE["architecture_probes"][key]
    assert quiet(probe["config"]).n_params == probe["params"]


def test_published_sizes_the_issue_quotes():
    # issue 12: Qwen3-30B-A3B has 30.5 B, Mixtral-8x7B 46.7 B (not 3.34 B / 7.24 B)
    assert round(models.load("qwen3-30b-a3b").n_params / 1e9, 1) == 30.5
    assert round(models.load("mixtral-8x7b-v0.1").n_params / 1e9, 1) == 46.7
    # active parameters: "A3B", "A22B", Mixtral 12.9 B, DeepSeek-V3 37 B of 671 B
    assert round(models.load("qwen3-30b-a3b").active_params / 1e9) == 3
    assert round(models.load("qwen3-235b-a22b").active_params / 1e9) == 22
    assert round(models.load("mixtral-8x7b-v0.1").active_params / 1e9, 1) == 12.9
    v3 = models.load("deepseek-v3")
    assert round(v3.n_params / 1e9) == 671 and 37e9 < v3.active_params < 38e9
    # the model cards' exact counts: Gemma-2-2B (not the 3.20 B of a reader that unties the
    # embeddings and keeps two norms per layer) and the text-only Gemma 3 1B
    assert models.load("gemma-2-2b").n_params == 2_614_341_888
    assert models.load("gemma-3-1b-it").n_params == 999_885_952


def test_qwen3_8b_from_the_shelf_reproduces_the_chapter_preset():
    m = models.load("qwen3-8b")
    assert m.n_params == specs.QWEN3_8B.n_params == 8_190_735_360
    assert m.streamed_weight_bytes == specs.QWEN3_8B.streamed_weight_bytes == 15_136_811_008
    assert m.layer_params == specs.QWEN3_8B.layer_params


# --- KV against the cache transformers fills ------------------------------------------------

def _probes():
    for key, entry in REFERENCE["models"].items():
        yield key, entry["kv_probe"]["config"], entry["kv_probe"]["contexts"]
    for key, entry in REFERENCE["architecture_probes"].items():
        yield key, entry["config"], entry["contexts"]


@pytest.mark.parametrize("key,cfg,contexts", list(_probes()), ids=[p[0] for p in _probes()])
def test_kv_at_context_equals_the_cache(key, cfg, contexts):
    # every layer's keys and values after a real forward of L tokens; for MLA the transformers
    # cache holds the compressed latent and the rope key (not expanded heads), as we count it;
    # for a sliding layer the last W - 1 tokens
    m = quiet(cfg)
    for L, got in contexts.items():
        assert calc.kv_bytes_at_context(m, int(L)) == got["cache_bytes"], L


@pytest.mark.parametrize("key", [k for k in SHELF if models.load(k).is_mla])
def test_mla_latent_is_the_down_projection_width(key):
    m = models.load(key)
    assert m.kv_values_per_layer == REFERENCE["models"][key]["mla_latent_width"]
    assert calc.kv_bytes_per_token(m) == m.n_layers * m.kv_values_per_layer * 2


def test_mla_state_for_8k_is_the_549_mib_of_8_4_2():
    # 8.4.2 quotes 9.2.2: MLA's compact state for an 8K context is 549 MiB (GQA: 1152 MiB)
    v3 = models.load("deepseek-v3")
    assert round(calc.kv_bytes(v3, 8192, block_tokens=1) / units.MiB) == 549
    assert calc.kv_bytes(specs.QWEN3_8B, 8192) / units.MiB == 1152


def test_sliding_window_caps_the_cache():
    mistral = models.load("mistral-7b-v0.1")
    per_token = calc.kv_bytes_per_token(mistral)
    assert calc.kv_bytes_at_context(mistral, 4000) == 4000 * per_token
    assert calc.kv_bytes_at_context(mistral, 32_768) == 4095 * per_token  # W - 1 kept
    phi = models.load("phi-3-mini-4k-instruct")
    assert calc.kv_bytes_at_context(phi, 4096) == 2046 * calc.kv_bytes_per_token(phi)


def test_real_gemma_windows_cap_their_sliding_layers():
    # Gemma-2-2B: 26 layers, every other one slides over 4096 tokens; 4 KV heads x 256 wide
    g2 = models.load("gemma-2-2b")
    per_layer_token = 2 * 4 * 256 * 2            # K and V, KV heads, head_dim, BF16 bytes
    assert calc.kv_bytes_per_token(g2) == 26 * per_layer_token
    assert calc.kv_bytes_at_context(g2, 32_768) == (13 * 32_768 + 13 * 4095) * per_layer_token
    # Gemma 3 1B: 26 layers, every 6th global (4 of them), the rest slide over 512; 1 KV head
    g3 = models.load("gemma-3-1b-it")
    per_layer_token = 2 * 1 * 256 * 2
    assert g3.layer_types.count("full_attention") == 4
    assert calc.kv_bytes_at_context(g3, 32_768) == (4 * 32_768 + 22 * 511) * per_layer_token
    assert calc.kv_bytes_at_context(g3, 500) == 26 * 500 * per_layer_token  # inside the window


def test_alternating_windows_halve_the_long_context_cache():
    cfg = REFERENCE["architecture_probes"]["gemma2-alternating"]["config"]
    m = quiet(dict(cfg, sliding_window=4096))
    full = m.with_(sliding_window=None, layer_types=None)
    long = 64_000
    ratio = calc.kv_bytes_at_context(m, long) / calc.kv_bytes_at_context(full, long)
    assert ratio == pytest.approx((long + 4095) / (2 * long))


# --- reading configs: defaults, errors, warnings --------------------------------------------

def test_accepts_path_folder_dict_and_pasted_text(tmp_path):
    cfg = models.shelf_config("mistral-7b-v0.1")
    folder = tmp_path / "Mistral-7B-v0.1"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(cfg))
    from_folder = models.model_from_hf_config(folder)
    from_file = models.model_from_hf_config(folder / "config.json")
    from_text = models.model_from_hf_config("\n  " + json.dumps(cfg, indent=2))
    from_dict = models.model_from_hf_config(cfg)
    assert from_folder.name == from_file.name == "Mistral-7B-v0.1"
    assert {m.n_params for m in (from_folder, from_file, from_text, from_dict)} == {7_241_732_096}
    assert specs.model_from_hf_config(cfg).n_params == 7_241_732_096


def test_gemma_ties_its_embeddings_by_default():
    cfg = models.shelf_config("gemma-2b")
    assert "tie_word_embeddings" not in cfg
    m = models.model_from_hf_config(cfg)
    assert m.tie_word_embeddings and any("tie_word_embeddings=True" in n for n in m.notes)
    untied = models.model_from_hf_config(dict(cfg, tie_word_embeddings=False))
    assert untied.n_params - m.n_params == cfg["vocab_size"] * cfg["hidden_size"]


def test_qwen2_keeps_its_qkv_biases():
    cfg = models.shelf_config("qwen2.5-7b-instruct")
    m = models.load("qwen2.5-7b-instruct")
    as_llama = quiet(dict(cfg, model_type="llama"))
    head_dim = cfg["hidden_size"] // cfg["num_attention_heads"]
    biases = cfg["num_hidden_layers"] * (cfg["hidden_size"]
                                         + 2 * cfg["num_key_value_heads"] * head_dim)
    assert m.n_params - as_llama.n_params == biases


def test_unknown_model_type_is_an_error_naming_it():
    with pytest.raises(ValueError, match="model_type: 'gpt_neox' is not supported"):
        models.model_from_hf_config(dict(models.shelf_config("llama-2-7b"),
                                         model_type="gpt_neox"))
    with pytest.raises(ValueError, match="model_type"):
        models.model_from_hf_config({"hidden_size": 8})


@pytest.mark.parametrize("key,field", [
    ("qwen3-30b-a3b", "moe_intermediate_size"), ("qwen3-30b-a3b", "num_experts_per_tok"),
    ("mixtral-8x7b-v0.1", "num_local_experts"), ("deepseek-v3", "kv_lora_rank"),
    ("deepseek-v3", "n_routed_experts"), ("llama-3.1-8b", "intermediate_size"),
    ("qwen3-8b", "vocab_size"),
])
def test_partial_config_names_the_missing_field(key, field):
    cfg = models.shelf_config(key)
    del cfg[field]
    with pytest.raises(ValueError, match=field):
        quiet(cfg)


def test_size_changing_field_not_understood_warns_naming_it():
    cfg = dict(models.shelf_config("llama-3.1-8b"), num_extra_heads=4)
    with pytest.warns(models.ConfigFieldWarning, match="num_extra_heads"):
        models.model_from_hf_config(cfg)
    with warnings.catch_warnings():
        warnings.simplefilter("error", models.ConfigFieldWarning)
        models.model_from_hf_config(models.shelf_config("llama-3.1-8b"))  # nothing to warn


def test_quantized_checkpoint_and_mtp_layers_are_said():
    with pytest.warns(models.ConfigFieldWarning, match="quantization_config"):
        m = models.model_from_hf_config(models.shelf_config("deepseek-v3"))
    assert any("multi-token-prediction" in n for n in m.notes)
    assert any("e_score_correction_bias" in n for n in m.notes)


def test_gemma3_wrapper_counts_the_text_model_and_applies_nested_defaults():
    probe = REFERENCE["architecture_probes"]["gemma3-text-pattern"]
    text = dict(probe["config"])
    del text["model_type"]
    wrapped = {"model_type": "gemma3", "text_config": text, "vision_config": {"hidden_size": 8}}
    with pytest.warns(models.ConfigFieldWarning, match="vision_config"):
        m = models.model_from_hf_config(wrapped)
    assert m.n_params == probe["params"]
    # a nested text_config omits Gemma3TextConfig's defaults, as transformers writes it
    sparse = {"model_type": "gemma3", "text_config": {"hidden_size": 2560,
                                                      "intermediate_size": 10240,
                                                      "num_hidden_layers": 34}}
    m = models.model_from_hf_config(sparse)
    assert (m.n_heads, m.n_kv_heads, m.head_dim, m.vocab_size) == (8, 4, 256, 262208)
    assert m.layer_types.count("full_attention") == 34 // 6
    assert any("defaults" in n for n in m.notes)


def test_bad_inputs_name_the_parameter(tmp_path):
    with pytest.raises(TypeError, match="path_or_dict"):
        models.model_from_hf_config(42)
    with pytest.raises(ValueError, match="path_or_dict"):
        models.model_from_hf_config(str(tmp_path / "missing.json"))
    with pytest.raises(ValueError, match="path_or_dict"):
        models.model_from_hf_config('{"model_type": "llama", ')
    with pytest.raises(ValueError, match="num_hidden_layers"):
        quiet(dict(models.shelf_config("llama-2-7b"), num_hidden_layers=31.5))


# --- MoE in the formulas --------------------------------------------------------------------

@pytest.mark.parametrize("E,k,b", [(128, 8, 1), (128, 8, 4), (128, 8, 16), (128, 8, 64),
                                   (8, 2, 3), (256, 8, 32), (64, 6, 10)])
def test_experts_touched_matches_a_monte_carlo_of_uniform_routing(E, k, b):
    rng = np.random.default_rng(E * 1000 + k * 10 + b)
    trials, touched = 3000, []
    for _ in range(trials // 500):
        # each token picks k distinct experts uniformly: the k smallest of E random keys
        keys = rng.random((500, b, E), dtype=np.float32)
        picks = np.argpartition(keys, k - 1, axis=-1)[..., :k]
        hit = np.zeros((500, E), dtype=bool)
        np.put_along_axis(hit, picks.reshape(500, -1), True, axis=1)
        touched.append(hit.sum(axis=1))
    touched = np.concatenate(touched)
    expected = expected_experts_touched(E, k, b)
    sem = touched.std(ddof=1) / math.sqrt(trials)
    assert abs(touched.mean() - expected) <= 4 * sem + 1e-9


def test_moe_streamed_bytes_grow_with_batch_from_active_to_all():
    m = models.load("qwen3-30b-a3b")
    one = moe_streamed_weight_bytes(m, 1)
    assert one == pytest.approx(m.active_streamed_params * m.bytes_per_param)
    reads = [moe_streamed_weight_bytes(m, b) for b in (1, 2, 8, 32, 128, 1024)]
    assert all(a < b for a, b in zip(reads, reads[1:]))
    assert reads[-1] == pytest.approx(m.streamed_weight_bytes)
    # per output token an MoE's read falls more slowly than a dense model's at small batch
    rows = calc.moe_read_curve(m, [1, 8])
    assert rows[1]["weight_read_per_token_bytes"] / rows[0]["weight_read_per_token_bytes"] > 1 / 8


def test_dense_models_read_the_same_weights_at_every_batch():
    q = specs.QWEN3_8B
    assert {moe_streamed_weight_bytes(q, b) for b in (1, 16, 256)} == {
        q.streamed_weight_bytes}
    parts = decode_step_parts(q, specs.RTX_PRO_6000, 16, 2048)
    assert parts.read_s == pytest.approx((q.streamed_weight_bytes + 16 * 2048 * 147456)
                                         / specs.RTX_PRO_6000.mem_bw_bytes_per_s)


def test_moe_flops_use_active_parameters():
    m = models.load("mixtral-8x7b-v0.1")
    assert decode_flops_per_token(m) == 2 * m.active_streamed_params
    assert calc.matrix_flops(m, 10) == 2 * m.active_layer_params * 10
    assert active_params(m) == m.active_params < m.n_params


# --- with_ keeps derived fields consistent (issue 11, item 5) --------------------------------

def test_with_recomputes_weight_bytes_from_a_new_parameter_count():
    m = specs.LLAMA_8B.with_(n_params=70e9)
    assert m.weight_bytes == 140e9 and m.streamed_weight_bytes == 140e9
    assert m.layer_params == 70e9


def test_with_keeps_the_structure_when_precision_changes():
    fp8 = specs.QWEN3_8B.with_(bytes_per_param=1)
    assert fp8.weight_bytes == 8_190_735_360
    assert fp8.streamed_weight_bytes == 15_136_811_008 / 2
    assert fp8.layer_params == specs.QWEN3_8B.layer_params


def test_with_lets_an_explicit_value_win_and_leaves_unrelated_fields():
    m = specs.QWEN3_8B.with_(n_params=9e9, weight_bytes=1e9)
    assert m.weight_bytes == 1e9 and m.streamed_weight_bytes == (9e9 - m.embedding_params) * 2
    same = specs.QWEN3_8B.with_(n_layers=40)
    assert same.weight_bytes == specs.QWEN3_8B.weight_bytes
    assert same.streamed_weight_bytes == specs.QWEN3_8B.streamed_weight_bytes
    explicit = specs.Model("x", 2, 1, 8, n_params=100, weight_bytes=300)
    assert explicit.with_(name="y").weight_bytes == 300  # no input changed: kept


def test_hardware_with_does_not_share_extra():
    hw = specs.H100_SXM.with_(extra={"label": "a"})
    other = hw.with_(name="copy")
    other.extra["label"] = "b"
    assert hw.extra["label"] == "a"


# --- the 8.6.3 comparison moved to another model ----------------------------------------------

def test_schemes_for_the_chapter_model_are_the_chapter_schemes():
    moved = calc.schemes_for_model(specs.QWEN3_8B)
    assert moved == dict(calc.SCHEMES)
    assert calc.instance_kv_budget_bytes(specs.QWEN3_8B) == 12 * units.GiB
    assert calc.best_scheme(list(moved.values())) == calc.best_scheme(
        [s for s in calc.SCHEMES.values() if s.name in "ABCD"]) == "D"


def test_schemes_for_a_bigger_model_read_more_per_round():
    m = models.load("llama-3.1-8b")
    moved = calc.schemes_for_model(m)
    # Llama-3.1-8B streams more weights but holds less KV per token than Qwen3-8B
    assert moved["B"].base_round_s != calc.SCHEMES["B"].base_round_s
    r = calc.scheme_result(moved["B"], model=m)
    read = calc.round_read_bytes(m, 16, 8192, shared_prefix_tokens=6144)
    assert r.read_bytes == read
    budget = calc.instance_kv_budget_bytes(m)
    assert budget == 32 * units.GiB - m.weight_bytes - (32 * units.GiB
                                                        - specs.QWEN3_8B.weight_bytes
                                                        - 12 * units.GiB)


def test_an_moe_speculative_round_reads_the_experts_its_verified_tokens_touch():
    m = models.load("qwen3-30b-a3b")
    d = calc.SCHEMES["D"]
    routed = 16 * d.verify_positions                       # 128 verified tokens per round
    plain = calc.round_read_bytes(m, 16, 8192, shared_prefix_tokens=6144)
    verified = calc.round_read_bytes(m, 16, 8192, shared_prefix_tokens=6144,
                                     routed_tokens=routed)
    extra = (expected_experts_touched(128, 8, routed) - expected_experts_touched(128, 8, 16))
    assert verified - plain == pytest.approx(extra * m.moe_layers * m.expert_params * 2)
    assert calc.scheme_result(d, model=m, kv_budget_bytes=20 * units.GiB).read_bytes == verified
    # a dense model reads all its weights whatever the routed tokens
    q = specs.QWEN3_8B
    assert calc.round_read_bytes(q, 16, 8192, routed_tokens=128) == calc.round_read_bytes(
        q, 16, 8192)


def test_the_two_transfers_bracket_the_moved_round():
    q = specs.QWEN3_8B
    # the chapter's own model: both transfers give the chapter's rounds
    table = calc.compare_schemes(list(calc.schemes_for_model(q).values()))
    spec = calc.compare_schemes(list(calc.schemes_for_model(q, transfer="bandwidth").values()))
    for name in table:
        assert spec[name].round_s == pytest.approx(table[name].round_s, rel=1e-12)
    # an MoE that reads more: the extra bytes at the card's bandwidth cost more than the
    # table's last segment (about 6.6 TB/s) says
    m = models.load("qwen3-30b-a3b")
    hw = specs.RTX_PRO_6000
    slow = calc.schemes_for_model(m, transfer="bandwidth")
    fast = calc.schemes_for_model(m)
    for name in "BDE":
        s = calc.SCHEMES[name]
        routed = 16 * s.verify_positions
        extra = (calc.round_read_bytes(m, 16, 8192, shared_prefix_tokens=6144,
                                       routed_tokens=routed)
                 - calc.round_read_bytes(q, 16, 8192, shared_prefix_tokens=6144))
        assert slow[name].base_round_s == pytest.approx(
            s.base_round_s + extra / hw.mem_bw_bytes_per_s)
        assert fast[name].base_round_s < slow[name].base_round_s
    assert slow["A"].base_round_s is not None and fast["A"].base_round_s is None
    with pytest.raises(ValueError, match="transfer"):
        calc.schemes_for_model(m, transfer="spec")
