"""The published-measurement reference set and the chapters' models held against it
(companion.measurements)."""

import csv
import shutil

import pytest

from companion import measurements as M

# --- the set itself ------------------------------------------------------------------------------


def test_set_is_large_enough_and_diverse():
    rs = M.rows()
    assert len(rs) >= 25
    assert len({r.source_id for r in rs}) >= 6
    assert len({r.id for r in rs}) == len(rs)
    assert {r.regime for r in rs} == set(M.REGIMES)


def test_every_raw_row_has_a_source_and_a_setting():
    """Read the CSVs directly (not through the loader) and check every field is filled."""
    files = sorted(M.DATA_DIR.glob("*.csv"))
    assert files
    for path in files:
        with path.open(newline="", encoding="utf-8") as fh:
            reader = csv.DictReader(fh)
            assert tuple(reader.fieldnames) == M.FIELDS, path.name
            for raw in reader:
                for f in M.FIELDS:
                    if f == "notes":
                        continue
                    assert (raw[f] or "").strip(), f"{path.name} {raw['id']}: empty {f}"
                assert raw["url"].startswith("https://"), raw["id"]
                assert float(raw["value"]) > 0


def _write(tmp_path, edit):
    src = M.DATA_DIR / "gpt_fast.csv"
    dst = tmp_path / "one.csv"
    shutil.copy(src, dst)
    with dst.open(newline="", encoding="utf-8") as fh:
        data = list(csv.DictReader(fh))
    edit(data[0])
    with dst.open("w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=M.FIELDS)
        w.writeheader()
        w.writerows(data)
    return tmp_path


@pytest.mark.parametrize("field", ["source_id", "url", "title", "where"])
def test_a_row_without_its_source_fails_loudly(tmp_path, field):
    d = _write(tmp_path, lambda r: r.update({field: ""}))
    with pytest.raises(ValueError, match=field):
        M.load(d)


@pytest.mark.parametrize("field", ["model", "gpus", "precision", "batch", "input_tokens",
                                   "output_tokens", "metric", "unit"])
def test_a_row_with_an_empty_setting_field_fails_loudly(tmp_path, field):
    d = _write(tmp_path, lambda r: r.update({field: "  "}))
    with pytest.raises(ValueError, match=field):
        M.load(d)


def test_a_wrong_unit_or_a_bad_value_fails(tmp_path):
    with pytest.raises(ValueError, match="tokens/s"):
        M.load(_write(tmp_path, lambda r: r.update(unit="ms")))
    with pytest.raises(ValueError, match="value"):
        M.load(_write(tmp_path, lambda r: r.update(value="fast")))


def test_not_stated_fields_are_allowed_and_flagged():
    r = {x.id: x for x in M.rows()}["palm540b-decode-29ms"]
    assert r.batch.startswith(M.NOT_STATED)
    p = M.predict(r)
    assert any("batch not stated" in a for a in p.assumptions)


# --- the chapter's model, by hand ------------------------------------------------------------------

A100_BW = 2.039e12          # B/s, NVIDIA A100 80GB datasheet (specs.A100_80GB)
A100_PEAK = 312e12          # dense BF16/FP16 FLOP/s
H100_PEAK_FP8 = 2 * 989e12  # 17's 989 dense BF16 TFLOP/s, doubled for dense FP8
# Llama-2-7B: 32 layers of hidden 4096 (MHA), SwiGLU 11008, vocabulary 32000, untied head
L7_LAYERS = 32 * (4 * 4096 * 4096 + 3 * 4096 * 11008 + 2 * 4096)
L7_HEAD = 32000 * 4096 + 4096          # lm_head + final norm
L7_STREAMED = L7_LAYERS + L7_HEAD      # every weight but the input table


def _row(rid):
    return {r.id: r for r in M.rows()}[rid]


def test_decode_llama2_7b_fp16_one_a100_batch1():
    """2 x 6.74e9 bytes over 2.039e12 B/s: the weights streamed once per token."""
    assert L7_LAYERS == 6_476_267_520
    kv = 2 * 32 * 32 * 128 * 2 * 5     # K and V, 32 layers x 32 heads x 128, 5 prompt tokens
    step = (2 * L7_STREAMED + kv) / A100_BW
    p = M.predict(_row("gf-7b-bf16-tp1"))
    assert p.chapter == pytest.approx(1 / step, rel=1e-9)
    assert p.chapter == pytest.approx(A100_BW / (2 * 6.74e9), rel=0.03)   # the brief's rounding
    assert p.measured == 104.9
    assert p.chapter_error_pct == pytest.approx(100 * (1 / step - 104.9) / 104.9)


def test_prefill_llama2_7b_2048_tokens_one_a100_at_half_peak():
    """2 N n FLOPs (layer matrices, 17 §2) at 50% of 312 TFLOP/s."""
    t = 2 * L7_LAYERS * 2048 / (0.5 * A100_PEAK)
    p = M.predict(_row("trt-a100-7b-ttft-i2048"))
    assert p.chapter == pytest.approx(t * 1e3, rel=1e-9)
    assert p.chapter == pytest.approx(170.0, abs=0.5)


def test_tp4_decode_llama2_70b_reads_split_plus_the_flat_allreduce_floor():
    """17 §7: D_w / p / beta + 2 all-reduces per layer at 5 us + ring bytes over NVLink."""
    layers = 80 * (8192 * 8192 * 2 + 2 * 8192 * 1024 + 3 * 8192 * 28672 + 2 * 8192)
    streamed = (layers + 32000 * 8192 + 8192) * 2
    read = (streamed + 2 * 80 * 8 * 128 * 2 * 5) / 4 / A100_BW
    collectives = 2 * 80
    wire = collectives * (2 * 3 / 4 * 8192 * 2) / 600e9
    step = read + collectives * 5e-6 + wire
    p = M.predict(_row("gf-70b-bf16-tp4"))
    assert p.chapter == pytest.approx(1 / step, rel=1e-9)


def test_offline_ceiling_llama2_70b_eight_h100_fp8():
    """17 §5's compute ceiling: 8 GPUs x 50% of the FP8 peak over 2 x (streamed params)."""
    m = M.models()["Llama-2-70B"]
    ceiling = 8 * 0.5 * H100_PEAK_FP8 / (2 * m.streamed_params)
    p = M.predict(_row("mlperf41-hpe-h100x8-llama2-70b-offline"))
    assert p.chapter == pytest.approx(ceiling, rel=1e-9)
    assert p.fuller is None


def test_request_latency_is_prefill_plus_output_minus_one_steps():
    """NeMo's 128 in / 20 out at batch 1: one prefill, then 19 decode steps (the chapter)."""
    kv_tok = 2 * 32 * 32 * 128 * 2
    prefill = 2 * L7_LAYERS * 128 / (0.5 * A100_PEAK)
    step = (2 * L7_STREAMED + (128 + 9) * kv_tok) / A100_BW
    p = M.predict(_row("nemo-7b-a100-tp1-b1"))
    assert p.chapter == pytest.approx((prefill + 19 * step) * 1e3, rel=1e-9)


def test_every_row_has_finite_positive_predictions():
    for r in M.rows():
        p = M.predict(r)
        assert p.chapter > 0 and p.chapter == p.chapter
        assert p.fuller is None or p.fuller > 0


def test_fuller_counts_int4_group_scales():
    p = M.predict(_row("gf-7b-int4-tp1"))
    assert p.fuller < p.chapter            # more bytes per step: a slower prediction


# --- fit on one half, judge on the other ---------------------------------------------------------

@pytest.fixture(scope="module")
def calibration():
    return M.calibrate()


def test_split_is_disjoint_complete_and_deterministic():
    fit, held = M.split()
    ids_fit, ids_held = {r.id for r in fit}, {r.id for r in held}
    assert not ids_fit & ids_held
    assert ids_fit | ids_held == {r.id for r in M.rows()}
    assert fit and held
    assert [r.id for r in M.split()[0]] == [r.id for r in fit]


def test_calibration_is_fitted_on_the_fit_half_only(calibration):
    fit, held = M.split()
    assert set(calibration.fitted_on) == {r.id for r in fit}
    assert not set(calibration.fitted_on) & {r.id for r in held}
    assert 0 < calibration.bandwidth_eff <= 1 and 0 < calibration.compute_eff <= 1
    assert calibration.overhead_s >= 0


def test_error_table_reports_held_out_rows(calibration):
    held = M.split()[1]
    table = M.error_table(calibration=calibration, by=("regime",))
    total = table[-1]
    assert total["regime"] == "all" and total["n"] == len(held)
    assert sum(t["n"] for t in table[:-1]) == len(held)
    for t in table:
        assert t["chapter_worst"] >= t["chapter_median"] >= 0
        assert t["calibrated_worst"] >= t["calibrated_median"] >= 0
    # the calibration must help on held-out rows overall
    assert total["calibrated_median"] < total["chapter_median"]


def test_prediction_table_covers_every_row(calibration):
    table = M.prediction_table(calibration=calibration)
    assert len(table) == len(M.rows())
    assert {t["id"] for t in table if t["fit"]} == set(calibration.fitted_on)


# --- independence, vendors, regimes ----------------------------------------------------------------

def test_at_least_six_independent_publishers_of_primary_documents():
    pubs = M.publishers()
    assert len(pubs) >= 6, pubs
    assert {r.source_id for r in M.rows()} <= set(M.SOURCES)
    kinds = {kind for _, kind in M.SOURCES.values()}
    assert kinds <= {"paper", "official result table", "engine documentation"}


def test_a_row_from_an_unregistered_source_fails(tmp_path):
    d = _write(tmp_path, lambda r: r.update(source_id="some-aggregator"))
    with pytest.raises(ValueError, match="publisher"):
        M.load(d)


def test_every_chip_a_row_uses_cites_its_vendor():
    for r in M.rows():
        if r.gpus.startswith(M.NOT_STATED):
            continue
        vendor, doc = M.HARDWARE_SOURCES[r.hardware.name]
        assert vendor and doc


def test_regimes_follow_the_chapter_terms():
    assert _row("gf-7b-bf16-tp1").regime == "memory-bound"
    assert _row("trt-a100-7b-ttft-i2048").regime == "compute-bound"
    # 7B over 8 GPUs: the 2 x 32 all-reduce floor is over a fifth of the step
    parts = M.chapter_parts(_row("gf-7b-bf16-tp8"))
    assert parts["comm_s"] >= M.COMM_BOUND_SHARE * sum(parts.values())
    assert _row("gf-7b-bf16-tp8").regime == "communication-bound"
    assert _row("vllm-blog-kv-llama13b-seq").regime == "KV arithmetic"


def test_chapter_seconds_is_the_sum_of_its_parts():
    for r in M.rows():
        if r.metric in M.CAPACITY_METRICS:
            continue
        assert M.chapter_seconds(r) == pytest.approx(sum(M.chapter_parts(r).values()), rel=1e-12)


def test_kv_bytes_of_one_llama_13b_sequence_by_hand():
    """K and V x 40 layers x 5120 values x 2 bytes x 2048 tokens = 1.678 GB (vLLM: 'up to 1.7GB')."""
    p = M.predict(_row("vllm-blog-kv-llama13b-seq"))
    assert p.chapter == pytest.approx(2 * 40 * 5120 * 2 * 2048 / 1e9, rel=1e-12)
    assert p.fuller == p.chapter                       # 2048 is whole 16-token blocks
    assert abs(p.chapter_error_pct) < 2


def test_static_batch_throughput_is_batch_times_output_over_the_span():
    """LMDeploy batch 64, 128 in / 128 out on one A100: b x out / (prefill + 127 steps)."""
    r = _row("lmd-7b-b64-i128-o128")
    p = M.predict(r)
    assert p.chapter == pytest.approx(64 * 128 / M.chapter_seconds(r), rel=1e-12)


def test_stated_accuracy_is_the_held_out_median_of_the_chapter_model():
    table = {t["regime"]: t for t in M.error_table(by=("regime",))}
    for regime in M.REGIMES:
        assert M.stated_accuracy(regime) == pytest.approx(table[regime]["chapter_median"])
    assert M.stated_accuracy("decode-bound", "calibrated") < M.stated_accuracy("decode-bound")
    with pytest.raises(ValueError, match="regime"):
        M.stated_accuracy("decode")


def test_accuracy_sentence_states_the_median_miss_and_the_worst():
    table = {t["regime"]: t for t in M.miss_table()}
    for regime in ("memory-bound", "compute-bound", "communication-bound"):
        t = table[regime]
        s = M.accuracy_sentence(regime)
        assert s.startswith(f"Against {t['n']} published {regime} measurements, the chapter's")
        assert f"median factor of {M.factor(t['chapter_median'])}" in s
        assert f"(worst {M.factor(t['chapter_worst'])})" in s
        assert f"in {t['chapter_optimistic']} of the {t['n']}" in s
        assert M.median_miss(regime) == t["chapter_median"]
    # the phase names an explorer passes read as the chapter's regimes
    assert M.accuracy_sentence("decode-bound") == M.accuracy_sentence("memory-bound")
    assert M.accuracy_sentence("prefill-bound") == M.accuracy_sentence("compute-bound")
    with pytest.raises(ValueError, match="regime"):
        M.median_miss("KV arithmetic")
    with pytest.raises(ValueError, match="model"):
        M.median_miss("memory-bound", "oracle")


def test_short_prompt_prefill_is_priced_on_the_memory_roof():
    """17 §2: a prompt below the ridge is on the memory roof. 128 tokens of the 7B in FP8 on one
    H100: the streamed weights (1 byte each) over 3.35 TB/s beat 2 N n FLOPs at 50% of the FP8
    peak, so the chapter's TTFT is the weight read."""
    read = L7_STREAMED * 1 / 3.35e12
    compute = 2 * L7_LAYERS * 128 / (0.5 * H100_PEAK_FP8)
    assert read > compute
    r = _row("trt-h100-7b-ttft-i128")
    assert M.predict(r).chapter == pytest.approx(read * 1e3, rel=1e-9)
    assert r.regime == "memory-bound"
    assert M.chapter_parts(r)["compute_s"] == 0


# --- errors as time ratios -------------------------------------------------------------------------

def test_time_ratio_reads_rates_and_times_alike():
    """A rate predicted too high and a time predicted too low are both optimistic (below 1), and
    a miss is the same factor either way."""
    rate = _row("gf-7b-bf16-tp1")                       # tokens/s
    time = _row("trt-h100-7b-ttft-i128")                # ms
    assert M.time_ratio(rate, 2 * rate.value) == pytest.approx(0.5)
    assert M.time_ratio(time, 0.5 * time.value) == pytest.approx(0.5)
    assert M.miss(0.5) == M.miss(2.0) == 2.0
    assert M.miss(1.0) == 1.0
    p = M.predict(rate)
    assert p.chapter_ratio == pytest.approx(rate.value / p.chapter)
    with pytest.raises(ValueError, match="predicted"):
        M.time_ratio(rate, 0)
    with pytest.raises(ValueError, match="ratio"):
        M.miss(float("nan"))


def test_rows_without_a_modelled_time_stay_out_of_the_statistics():
    assert not M.modelled(_row("mlperf41-hpe-h100x8-llama2-70b-offline"))
    assert not M.modelled(_row("vllm-blog-kv-llama13b-seq"))
    table = M.miss_table(calibrated=False)
    assert table[-1]["regime"] == "all"
    assert table[-1]["n"] == sum(1 for r in M.rows() if M.modelled(r))
    assert "KV arithmetic" not in {t["regime"] for t in table}
    for t in table:
        assert t["chapter_worst"] >= t["chapter_median"] >= 1
        assert 0 <= t["chapter_optimistic"] <= t["n"]


# --- held out by publisher -------------------------------------------------------------------------

def test_each_publisher_is_held_out_once_and_never_fitted_on():
    folds = M.publisher_folds()
    timed = {r.id for r in M.rows() if M.modelled(r)}
    held = [i for f in folds for i in f.held]
    assert sorted(held) == sorted(timed)                 # every modelled row, exactly once
    for f in folds:
        pub_rows = {r.id for r in M.rows() if M.SOURCES[r.source_id][0] == f.publisher}
        assert set(f.held) == pub_rows & timed
        assert not set(f.calibration.fitted_on) & pub_rows
        assert set(f.calibration.fitted_on) == timed - pub_rows
        r = _row(f.held[0])
        assert M.held_out_prediction(r) == f.calibration.predict(r)
    with pytest.raises(ValueError, match="not modelled"):
        M.held_out_prediction(_row("vllm-blog-kv-llama13b-seq"))


def test_the_array_search_finds_the_grid_point_a_loop_would():
    """``calibrate`` searches the grid in one array pass; on a few rows, a plain loop over every
    grid point agrees."""
    rs = [_row("gf-7b-bf16-tp1"), _row("trt-a100-7b-ttft-i2048"), _row("nemo-7b-a100-tp1-b1")]
    prepared = [(r, M.setting(r), M.work(r)) for r in rs]
    best = min((round(M._loss(prepared, eb, ec, t0), 12), eb, ec, t0)
               for eb in M.BANDWIDTH_GRID[::5] for ec in M.COMPUTE_GRID[::5]
               for t0 in M.OVERHEAD_GRID_S[::5])
    import numpy as np
    grid = M._loss_grid(prepared)[::5, ::5, ::5]
    i, j, k = np.unravel_index(np.argmin(grid), grid.shape)
    assert (M.BANDWIDTH_GRID[::5][i], M.COMPUTE_GRID[::5][j], M.OVERHEAD_GRID_S[::5][k]) == best[1:]
    assert float(grid[i, j, k]) == pytest.approx(best[0], rel=1e-9)


# --- MBU of the measured steps (17 §9) --------------------------------------------------------------

def test_measured_mbu_of_gpt_fast_7b_by_hand():
    """Bytes of one step (streamed weights and 5 tokens of KV) x 104.9 steps/s over 2,039 GB/s;
    gpt-fast's own figure, 1397.31 GB/s, is read from the row's notes."""
    r = _row("gf-7b-bf16-tp1")
    step = 2 * L7_STREAMED + 2 * 32 * 32 * 128 * 2 * 5
    assert M.decode_step_bytes(r) == pytest.approx(step, rel=1e-12)
    assert M.measured_mbu(r) == pytest.approx(step * 104.9 / A100_BW, rel=1e-12)
    assert M.reported_bandwidth(r) == pytest.approx(1397.31e9)
    assert M.reported_bandwidth(_row("gf-7b-bf16-tp2")) is None
    assert M.measured_mbu(_row("trt-a100-7b-ttft-i2048")) is None
    # LMDeploy's 13B median token: about 70% of the datasheet, kernel efficiency
    assert M.measured_mbu(_row("lmd-13b-b1-tok-i128-o2048")) == pytest.approx(0.70, abs=0.01)


# --- the notebook shows what the package computes ----------------------------------------------------

def _notebook_row_table():
    import json
    from pathlib import Path
    nb = Path(__file__).resolve().parents[1] / "notebooks" / "how_good_are_these_models.ipynb"
    cells = json.loads(nb.read_text())["cells"]
    for c in cells:
        for out in c.get("outputs", []):
            text = "".join(out.get("data", {}).get("text/markdown", ""))
            if text.startswith("| row | setting |"):
                rows = {}
                for line in text.splitlines()[2:]:
                    f = [x.strip() for x in line.strip("|").split("|")]
                    rows[f[0]] = f
                return rows
    raise AssertionError("the notebook's row-by-row table is missing from its stored outputs")


def test_every_row_prediction_is_the_value_the_notebook_shows():
    shown = _notebook_row_table()
    assert set(shown) == {r.id for r in M.rows()}
    for r in M.rows():
        p = M.predict(r)
        f = shown[r.id]
        held = M.held_out_prediction(r) if M.modelled(r) else None
        assert f[3] == format(r.value, ".4g"), r.id
        assert f[4] == format(p.chapter, ".4g"), r.id
        assert f[5] == ("-" if p.fuller is None else format(p.fuller, ".4g")), r.id
        assert f[6] == ("-" if held is None else format(held, ".4g")), r.id
        assert f[7] == M.factor(p.chapter_ratio), r.id
        assert f[8] == ("-" if held is None else M.factor(M.time_ratio(r, held))), r.id


def test_stated_accuracy_agrees_with_the_error_table():
    """The explorers' quick path (no calibration) gives the error table's held-out figures."""
    table = {t["regime"]: t for t in M.error_table(by=("regime",))}
    for regime, t in table.items():
        assert M.stated_accuracy(regime) == pytest.approx(t["chapter_median"])
        if t["fuller_median"] is not None:
            assert M.stated_accuracy(regime, "fuller") == pytest.approx(t["fuller_median"])
        assert M.stated_accuracy(regime, "calibrated") == pytest.approx(t["calibrated_median"])
    with pytest.raises(ValueError, match="regime"):
        M.stated_accuracy("memory")


@pytest.mark.parametrize("panel, regime", [("RooflinePanel", "memory-bound"),
                                           ("DecodeBatchPanel", "memory-bound"),
                                           ("RequestBudgetPanel", "compute-bound"),
                                           ("TensorParallelPanel", "communication-bound")])
def test_explorers_that_predict_a_time_state_how_close_it_lands(panel, regime):
    """An explorer that predicts a step time, a rate or a TTFT says, in its readout, how far
    that kind of prediction has landed from the held-out published measurements."""
    from companion import widgets

    text = getattr(widgets, panel)().at().text
    assert M.accuracy_sentence(regime) in text
    assert f"published {regime} measurements" in text
