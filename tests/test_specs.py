"""Model/Hardware presets and model_from_hf_config, checked against published figures."""

import json
import math
from pathlib import Path

import pytest

from companion import calc, specs, units

CONFIGS = Path(__file__).parent / "data" / "hf_configs"


def test_qwen3_8b_preset_matches_chapter_8_byte_counts():
    # Chapter 8 footnote 1: 16,381,470,720 B of BF16 weights, D_w = 15,136,811,008 B.
    q = specs.QWEN3_8B
    assert q.weight_bytes == 16_381_470_720
    assert q.streamed_weight_bytes == 15_136_811_008
    # "about 15.3 GiB" of weights (chapter opening) and "about 14.1 GiB" of matrix weights (8.2.1)
    assert round(q.weight_bytes / units.GiB, 1) == 15.3
    assert round(q.streamed_weight_bytes / units.GiB, 1) == 14.1


@pytest.mark.parametrize("fname,published_params,kv_per_token,attention", [
    # published parameter counts: Qwen3-8B 8.19B, Llama-3-8B 8.03B, Llama-3-70B 70.6B,
    # Llama-2-7B 6.74B, Gemma-2B 2.51B
    ("qwen3-8b.json", 8.19e9, 147_456, "GQA"),
    ("llama-3-8b.json", 8.03e9, 131_072, "GQA"),
    ("llama-3-70b.json", 70.6e9, 327_680, "GQA"),
    ("llama-2-7b-mha.json", 6.74e9, 524_288, "MHA"),
    ("gemma-2b-mqa.json", 2.51e9, 18_432, "MQA"),
])
def test_model_from_hf_config(fname, published_params, kv_per_token, attention):
    m = specs.model_from_hf_config(CONFIGS / fname)
    assert m.n_params == pytest.approx(published_params, rel=0.005)
    assert calc.kv_bytes_per_token(m) == kv_per_token
    assert m.attention_type == attention


def test_hf_config_for_qwen3_reproduces_preset_exactly():
    m = specs.model_from_hf_config(CONFIGS / "qwen3-8b.json")
    assert m.n_params == specs.QWEN3_8B.n_params == 8_190_735_360
    assert m.streamed_weight_bytes == specs.QWEN3_8B.streamed_weight_bytes


def test_hf_config_accepts_a_dict_and_head_dim_fallback():
    cfg = json.loads((CONFIGS / "llama-3-8b.json").read_text())
    assert "head_dim" not in cfg
    m = specs.model_from_hf_config(cfg, name="llama")
    assert m.head_dim == 128 and m.name == "llama"


@pytest.mark.parametrize("missing", ["num_hidden_layers", "hidden_size", "num_attention_heads",
                                     "intermediate_size", "vocab_size"])
def test_hf_config_missing_field_is_named(missing):
    cfg = json.loads((CONFIGS / "qwen3-8b.json").read_text())
    del cfg[missing]
    if missing == "num_attention_heads":
        cfg.pop("head_dim")
    with pytest.raises(ValueError, match=missing):
        specs.model_from_hf_config(cfg)


def test_hf_config_bad_types():
    with pytest.raises(TypeError, match="path_or_dict"):
        specs.model_from_hf_config(42)
    cfg = json.loads((CONFIGS / "qwen3-8b.json").read_text())
    cfg["num_hidden_layers"] = 36.5
    with pytest.raises(ValueError, match="num_hidden_layers"):
        specs.model_from_hf_config(cfg)
    cfg = json.loads((CONFIGS / "qwen3-8b.json").read_text())
    cfg["num_key_value_heads"] = 7
    with pytest.raises(ValueError, match="n_kv_heads"):
        specs.model_from_hf_config(cfg)


def test_every_preset_has_a_source():
    for preset in list(specs.MODELS.values()) + list(specs.HARDWARE.values()):
        assert preset.source, preset.name


@pytest.mark.parametrize("field,bad,exc", [
    ("n_layers", 0, ValueError), ("n_layers", 2.5, ValueError), ("n_kv_heads", -1, ValueError),
    ("head_dim", "128", TypeError), ("n_params", math.nan, ValueError),
    ("n_params", math.inf, ValueError), ("bytes_per_param", 0, ValueError),
])
def test_model_rejects_bad_fields(field, bad, exc):
    with pytest.raises(exc, match=field):
        specs.QWEN3_8B.with_(**{field: bad})


@pytest.mark.parametrize("field,bad,exc", [
    ("mem_bytes", 0, ValueError), ("mem_bw_bytes_per_s", -1, ValueError),
    ("peak_flops_per_s", math.nan, ValueError), ("power_w", "600", TypeError),
    ("sm_count", 1.5, ValueError),
])
def test_hardware_rejects_bad_fields(field, bad, exc):
    with pytest.raises(exc, match=field):
        specs.H100_SXM.with_(**{field: bad})


def test_units_formatting():
    assert units.fmt_bytes(147_456, "KiB") == "144 KiB"
    assert units.fmt_bytes(12 * units.GiB, "GiB", 2) == "12.00 GiB"
    assert units.to_unit(80e9, "GB") == 80
    with pytest.raises(ValueError, match="unit"):
        units.fmt_bytes(1, "parsecs")
