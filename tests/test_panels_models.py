"""Explorers that switch to any model (issue 12): every model dropdown offers the shelf, the
panels that size KV and weights read "your config.json" (a path or pasted text, dense, MoE,
MLA, sliding window) and show a bad one's error in the readout, and the read-volume and
roofline explorers show an MoE's streamed bytes as a function of batch.

Expected values are worked by hand from the config files' fields (layers, KV heads, head
width, latent rank, window) or from the uniform-routing formula E(1 - (1 - k/E)^b), not read
off the panels."""

from __future__ import annotations

import inspect
import json
import math

import pytest

from companion import calc, models, specs, units, widgets
from companion.explorers import static as S
from companion.explorers.base import Control, Panel
from companion.explorers.presets import CONFIG_CONTROL, SHELF_LABEL, config_examples
from companion.formulas.core import decode_step_parts, moe_streamed_weight_bytes
from companion.formulas.moe import moe_kv_crossover_batch
from companion.formulas.performance import decode_ridge_batch

PANELS = sorted((obj for obj in (getattr(widgets, n) for n in widgets.__all__)
                 if inspect.isclass(obj) and issubclass(obj, Panel) and obj is not Panel),
                key=lambda c: c.__name__)
WITH_MODEL = [c for c in PANELS if any(k.name == "model" for k in c.controls)]
WITH_CONFIG = [c for c in PANELS if any(k.name == CONFIG_CONTROL for k in c.controls)]
SIZING = {"MemoryBudgetPanel", "KVCapacityPanel", "KVSizingPanel", "DecodeBatchPanel",
          "RooflinePanel"}


def _text(key: str) -> str:
    return json.dumps(models.shelf_config(key))


def test_the_sizing_explorers_take_a_config():
    assert {c.__name__ for c in WITH_CONFIG} == SIZING
    assert len(WITH_MODEL) >= 12


@pytest.mark.parametrize("cls", WITH_MODEL, ids=lambda c: c.__name__)
def test_every_model_dropdown_offers_the_whole_shelf(cls):
    control = next(c for c in cls.controls if c.name == "model")
    for key in models.shelf_keys():
        name = models.shelf_sources()[key]["model"]
        assert control.options[f"{SHELF_LABEL}{name}"] == key
    # the chapter's presets stay first, the default among them
    assert not next(iter(control.options)).startswith(SHELF_LABEL)
    assert not control.default.startswith(SHELF_LABEL)


@pytest.mark.parametrize("cls", WITH_MODEL, ids=lambda c: c.__name__)
def test_a_shelf_model_is_drawn_with_its_source(cls):
    panel = cls()
    for key in ("qwen3-30b-a3b", "mistral-7b-v0.1"):
        model = models.load(key)
        view = panel.update(model=key)
        assert model.name in view.text and models.shelf_sources()[key]["hf_repo"] in view.text
        # by its label too, as the dropdown shows it
        assert panel.update(model=f"{SHELF_LABEL}{model.name}").text == view.text


# --- your config.json ---------------------------------------------------------------------

# KV bytes per token in BF16, worked from each config.json's fields
KV_PER_TOKEN = {
    "llama-3.1-8b": 2 * 32 * 8 * 128 * 2,          # 32 layers, 8 KV heads, head_dim 128
    "qwen3-30b-a3b": 2 * 48 * 4 * 128 * 2,         # 48 layers, 4 KV heads, head_dim 128
    "deepseek-v2-lite": 27 * (512 + 64) * 2,       # MLA: latent 512 + rope key 64 per layer
    "mistral-7b-v0.1": 2 * 32 * 8 * 128 * 2,       # full width while the context fits 4096
}


@pytest.mark.parametrize("key", sorted(KV_PER_TOKEN))
def test_kv_sizing_reads_a_pasted_config(key):
    panel = widgets.KVSizingPanel()
    view = panel.update(config_json=_text(key), context_tokens=32_000, tp=1)
    assert view.numbers["kv_per_token_KB"] * units.KiB == KV_PER_TOKEN[key]
    held = 4095 if key == "mistral-7b-v0.1" else 32_000   # the window keeps W - 1 tokens
    assert view.numbers["kv_per_sequence_GB"] * units.GB == pytest.approx(
        held * KV_PER_TOKEN[key])
    assert "your config.json" in view.text


def test_a_config_path_reads_like_its_text(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(_text("qwen3-30b-a3b"))
    panel = widgets.MemoryBudgetPanel()
    by_path = panel.update(config_json=str(path))
    by_text = panel.update(config_json=_text("qwen3-30b-a3b"))
    assert by_path.numbers == by_text.numbers
    assert by_path.numbers["weights_GiB"] * units.GiB == pytest.approx(
        2 * models.load("qwen3-30b-a3b").n_params)


@pytest.mark.parametrize("cls", WITH_CONFIG, ids=lambda c: c.__name__)
@pytest.mark.parametrize("key", ["qwen3-30b-a3b", "deepseek-v2-lite", "mistral-7b-v0.1",
                                 "llama-3.1-8b"])
def test_pasting_a_shelf_config_equals_choosing_it(cls, key):
    pasted = cls().update(config_json=_text(key)).numbers
    chosen = cls().update(model=key).numbers
    assert pasted == chosen


BAD = {
    "missing field": (json.dumps({k: v for k, v in models.shelf_config("llama-3.1-8b").items()
                                  if k != "hidden_size"}), "hidden_size"),
    "not JSON": ('{"model_type": "llama", "hidden_size": 4096,', "not valid JSON"),
    "unknown architecture": (json.dumps({"model_type": "bert"}), "model_type"),
    "no such file": ("/nonexistent/config.json", "no file"),
    "a bad value": (json.dumps(dict(models.shelf_config("qwen3-30b-a3b"),
                                    num_experts_per_tok=200)), "num_experts_per_tok"),
}


@pytest.mark.parametrize("cls", WITH_CONFIG, ids=lambda c: c.__name__)
@pytest.mark.parametrize("case", sorted(BAD))
def test_a_bad_config_is_named_in_the_readout(cls, case):
    text, field = BAD[case]
    panel = cls()
    chapter = panel.update()
    view = panel.update(config_json=text)
    assert field in view.text and "your config.json" in view.text
    assert "Traceback" not in view.text
    # the menu's model stays drawn meanwhile
    assert view.numbers == chapter.numbers and view.traces


def test_a_config_field_warning_reaches_the_readout():
    cfg = dict(models.shelf_config("llama-3.1-8b"), num_mystery_layers=3)
    view = widgets.KVCapacityPanel().update(config_json=json.dumps(cfg))
    assert "num_mystery_layers" in view.text and "warning" in view.text


def test_text_control_checks_its_value():
    control = Control("config_json", "your config.json", "text", "", options={"x": "{}"})
    assert control.check("{}") == "{}"
    with pytest.raises(TypeError, match="config_json"):
        control.check(3)
    assert control.corners() == ["", "{}"]


def test_config_examples_cover_the_architectures():
    kinds = set(config_examples())
    assert {"Llama-3.1-8B (dense)", "Qwen3-30B-A3B (MoE)", "DeepSeek-V2-Lite (MLA)",
            "Mistral-7B-v0.1 (sliding window)"} <= kinds


@pytest.mark.parametrize("cls", WITH_CONFIG, ids=lambda c: c.__name__)
def test_static_explorer_says_where_to_paste(cls):
    figure = cls().static_figure()
    others = figure["layout"]["meta"][S.META_KEY]["others"]
    box = next(o for o in others if o["label"].startswith("your config.json"))
    assert S.MOVE_ME in box["value"]
    assert S.stored_size(figure) <= S.BUDGET_BYTES


def test_static_explorer_of_an_moe_fits_its_budget():
    panel = widgets.DecodeBatchPanel(model="qwen3-30b-a3b")
    figure = panel.static_figure()
    assert S.stored_size(figure) <= S.BUDGET_BYTES
    assert "experts" in figure["layout"]["meta"][S.META_KEY]["readouts"][0]


# --- MoE in the read-volume and roofline explorers ------------------------------------------

def _touched(e, k, b):
    return e * (1 - (1 - k / e) ** b)


def test_read_volume_of_an_moe_follows_the_experts_touched():
    panel = widgets.DecodeBatchPanel()
    moe = models.load("qwen3-30b-a3b")            # 128 experts, 8 per token, 48 MoE layers
    cuts = {}
    for b in (1, 4, 8, 64, 128, 256):
        n = panel.update(model="qwen3-30b-a3b", batch=b).numbers
        assert n["experts_touched"] == pytest.approx(_touched(128, 8, b))
        dense_part = moe.streamed_params - 48 * 128 * moe.expert_params
        weights = (dense_part + 48 * _touched(128, 8, b) * moe.expert_params) * 2
        assert n["weight_share_GiB"] * units.GiB == pytest.approx(weights / b)
        cuts[b] = n["weight_read_cut_vs_b1"]
    # doubling a small batch barely cuts the read per token (the new requests bring experts
    # of their own); doubling a large one halves it, as for a dense model
    assert cuts[1] == pytest.approx(1)
    assert cuts[8] / cuts[4] < 1.3
    assert cuts[256] / cuts[128] > 1.95
    # and the MoE's read per token meets that of a dense model of its size (every expert)
    full = moe.streamed_weight_bytes / 256
    n = panel.update(batch=256).numbers
    assert n["weight_share_GiB"] * units.GiB == pytest.approx(full, rel=0.01)


def test_read_volume_draws_the_every_expert_reference_only_for_an_moe():
    panel = widgets.DecodeBatchPanel()
    dense = panel.update().traces
    moe = panel.update(model="mixtral-8x7b-v0.1").traces
    assert len(dense) == len(moe)   # updates in place
    ref = [t for t in moe if t["name"].startswith("if every expert")][0]
    assert ref["showlegend"] and len(ref["y"]) > 0
    assert not [t for t in dense if t["name"].startswith("if every expert")][0]["y"]


def test_kv_crossover_of_a_dense_model_is_the_chapters():
    # 8.2.1: b_KV = 51 at 2K and 13 at 8K for Qwen3-8B
    assert moe_kv_crossover_batch(specs.QWEN3_8B, 2048) == 51
    assert moe_kv_crossover_batch(specs.QWEN3_8B, 8192) == 13


@pytest.mark.parametrize("key", ["qwen3-30b-a3b", "mixtral-8x7b-v0.1", "deepseek-v2-lite"])
def test_kv_crossover_of_an_moe_is_the_smallest_such_batch(key):
    m = models.load(key)
    for L in (512, 2048, 8192):
        kv = calc.kv_bytes_at_context(m, L)
        b = moe_kv_crossover_batch(m, L)
        assert moe_streamed_weight_bytes(m, b) <= b * kv
        assert b == 1 or moe_streamed_weight_bytes(m, b - 1) > (b - 1) * kv
        assert b <= math.ceil(m.streamed_weight_bytes / kv)   # sooner than a dense model


def test_ridge_batch_of_a_dense_model_is_the_chapters():
    # 17 §2: "B ~ 295" for the 8B shape in BF16 on an H100
    assert decode_ridge_batch(specs.LLAMA_8B, specs.H100_SXM) == pytest.approx(295, abs=1)


@pytest.mark.parametrize("key", ["qwen3-30b-a3b", "mixtral-8x7b-v0.1"])
def test_ridge_batch_of_an_moe_is_the_smallest_such_batch(key):
    m, hw = models.load(key), specs.H100_SXM
    ridge = calc.ridge_point(hw)
    b = int(decode_ridge_batch(m, hw))
    assert calc.decode_intensity(m, b) >= ridge > calc.decode_intensity(m, b - 1)
    assert b > ridge / calc.decode_intensity(m, 1)   # later than a dense model


def test_roofline_shows_an_moe_lagging_then_catching_up():
    panel = widgets.RooflinePanel()
    view = panel.update(model="qwen3-30b-a3b")
    sweep, own, every = view.traces[-7:-4]   # the four workload points stay last
    batches = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]
    assert sweep["customdata"] == own["customdata"] == every["customdata"] == batches
    x = sweep["x"]
    # it starts on the "own experts" asymptote and ends on the "every expert" one
    assert x[0] == pytest.approx(own["x"][0])
    assert x[-1] == pytest.approx(every["x"][-1], rel=1e-6)
    # in between, doubling a small batch adds little intensity; doubling a large one doubles it
    assert x[3] / x[2] < 1.4
    assert x[-1] / x[-2] == pytest.approx(2, rel=1e-3)
    # every-expert asymptote: B x I(1) x active / all streamed weights, from the config's sizes
    moe = models.load("qwen3-30b-a3b")
    assert every["x"][0] / own["x"][0] == pytest.approx(
        moe.active_streamed_params / moe.streamed_params)
    n = view.numbers
    assert n["experts_touched"] == pytest.approx(_touched(128, 8, panel.params["batch"]))
    assert n["batch_to_reach_ridge"] > 3 * n["dense_batch_to_reach_ridge"]
    # a dense model draws no asymptotes (its sweep is both)
    plain = panel.update(model=specs.LLAMA_8B.name).traces
    assert len(plain) == len(view.traces) and plain[-5]["x"] == [] == plain[-6]["x"]


def test_a_sliding_window_caps_the_kv_a_decode_step_reads():
    # Mistral-7B-v0.1: 32 layers, 8 KV heads of 128, window 4096 -> each layer keeps 4095
    m, hw = models.load("mistral-7b-v0.1"), specs.H100_SXM
    held = 32 * 4095 * 2 * 8 * 128 * 2
    parts = decode_step_parts(m, hw, 8, 32_768)
    assert parts.read_s * hw.mem_bw_bytes_per_s == pytest.approx(
        m.streamed_weight_bytes + 8 * held)
    # the roofline's "with KV" point reads the same bytes
    flops = calc.matrix_flops(m, 8, include_lm_head=True)
    assert calc.decode_intensity(m, 8, 32_768) == pytest.approx(
        flops / (m.streamed_weight_bytes + 8 * held))
