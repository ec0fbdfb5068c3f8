"""Published measurements of LLM serving, and the chapters' models held against them.

The reference set lives in ``companion/data/measurements/*.csv``, one file per publication,
each row a number read in the source with its setting (model, GPUs, precision, batch, input
and output lengths, metric, where in the source). ``rows()`` loads and validates it: a row
without a source or with an empty setting field raises ``ValueError`` naming it (a field the
source does not give says "not stated").

For each row three predictions:

- ``chapter``: the chapters' back-of-envelope model at that setting. A decode step is the bytes
  it streams over peak bandwidth, (D_w + b L k) / beta, or the FLOPs at peak if larger
  (``calc.decode_step_time``, 17 §2, 8.2.1); a prefill is 17 §2's roofline, max(D_w / beta,
  2 N n at 50% of peak) (``chapter_parts``); tensor parallelism splits the reads over p GPUs and
  adds the chapter's flat all-reduce floor (``calc.tp_decode_step``, 17 §7); an offline
  throughput is 0.5 x peak over one output token's FLOPs (17 §5), blind to the input tokens,
  so such a row is not ``modelled`` (left out of every statistic and fit).
- ``fuller``: the companion's fuller model where one exists: the roofline max of bytes and
  FLOPs with attention and compute at 50% (``formulas.fuller.pass_roofline``), ring
  all-reduces (``formulas.communication.tp_step_fuller``), quantisation group scales counted in
  the bytes.
- ``calibrated``: the fuller pass counts with three fitted constants a practitioner would
  use: the share of peak bandwidth the reads reach once a fixed cost is taken out, the share
  of peak compute, and that fixed cost per forward pass (``calibrate``), fitted with one
  publisher held out at a time (``publisher_folds``, ``held_out_prediction``); ``calibrate()``
  alone fits ``split``'s fixed half of the rows.

Errors are time ratios (``time_ratio``, a rate's inverted: below 1 the model promised less
time than measured); ``miss`` is the factor either way (``miss_table``, ``median_miss``,
``accuracy_sentence``). ``Prediction.error_pct`` and ``stated_accuracy`` are signed
percentages in each row's own unit.

Units inside are bytes, seconds, FLOP; ``Prediction`` converts to the row's unit.
"""

from __future__ import annotations

import csv
import hashlib
import math
import re
import statistics
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from companion import specs
from companion.formulas.communication import tp_step_fuller
from companion.formulas.core import (decode_step_parts, kv_bytes_per_token, kv_tokens_allocated,
                                     matrix_flops, moe_streamed_weight_bytes)
from companion.formulas.performance import prefill_compute_s
from companion.formulas.fuller import pass_roofline
from companion.formulas.parallelism import tp_allreduce_traffic, tp_decode_step
from companion.models import model_from_hf_config
from companion.spec_types import Hardware, Model

DATA_DIR = Path(__file__).parent / "data" / "measurements"
NOT_STATED = "not stated"

FIELDS = ("id", "source_id", "title", "where", "url", "model", "gpus", "precision", "batch",
          "input_tokens", "output_tokens", "metric", "value", "unit", "notes")
SETTING_FIELDS = ("model", "gpus", "precision", "batch", "input_tokens", "output_tokens",
                  "metric", "unit")
SOURCE_FIELDS = ("source_id", "title", "where", "url")

# metric -> unit it must carry, and whether a larger prediction means a faster system
METRICS = {
    "decode_tokens_per_s": "tokens/s",          # per user, one decode step per token
    "decode_ms_per_token": "ms",
    "ttft_ms": "ms",                            # time to first token = one prefill pass
    "request_latency_ms": "ms",                 # prefill + (output - 1) decode steps
    "output_tokens_per_s_per_gpu": "tokens/s",  # static batch: b x out / (prefill + steps) / p
    "output_tokens_per_s": "tokens/s",          # static batch, whole system: b x out / time
    "offline_output_tokens_per_s": "tokens/s",  # whole system, batch not stated
    "kv_bytes_per_sequence": "GB",              # KV cache of one sequence (8.1.2, 17 §5)
}
# metrics whose measured span starts with the prompt's prefill
PREFILL_METRICS = ("ttft_ms", "request_latency_ms", "output_tokens_per_s_per_gpu",
                   "output_tokens_per_s")
RATE_METRICS = {"decode_tokens_per_s", "output_tokens_per_s_per_gpu", "output_tokens_per_s",
                "offline_output_tokens_per_s"}
# metrics that are arithmetic on the model alone: no chip, no time, nothing to calibrate
CAPACITY_METRICS = {"kv_bytes_per_sequence"}
# What sets the time in the chapter's own prediction for the row (``regime``), in the chapters'
# words (17 §2); KV arithmetic rows have no time.
REGIMES = ("memory-bound", "compute-bound", "communication-bound", "KV arithmetic")
# other names for the first two (the phase that is usually in them), accepted wherever a
# regime is asked for
REGIME_ALIASES = {"decode-bound": "memory-bound", "prefill-bound": "compute-bound"}
# metrics whose setting the sources leave too open to model (input and output lengths unknown)
UNMODELLED_METRICS = {"offline_output_tokens_per_s"}
# a row is communication-bound when collectives are at least this share of the chapter's time
COMM_BOUND_SHARE = 0.2


# --- hardware and models the chapters' presets lack --------------------------------------------

TPU_V4 = Hardware(
    "Google TPU v4", mem_bytes=32 * 2**30, mem_bw_bytes_per_s=1200e9, peak_flops_per_s=275e12,
    source="Google Cloud TPU v4 documentation (System architecture table): 275 TFLOP/s per "
           "chip (bf16 or int8), 32 GiB HBM2 at 1200 GBps",
)
# dense FP8 peak over dense BF16 peak (NVIDIA H100 SXM datasheet: 1,979 vs 989 TFLOP/s). The A100
# and the TPU v4 have no FP8; int8 weight-only kernels compute in bf16.
FP8_SPEEDUP = {"H100 SXM": 2.0}

GPU_TYPES = {
    "A100-80GB": specs.A100_80GB, "A100-SXM4-80GB": specs.A100_80GB,
    "H100-SXM-80GB": specs.H100_SXM, "TPU-v4": TPU_V4,
}

# Where each preset's peaks come from (its vendor's own document), for the notebook's table.
HARDWARE_SOURCES = {
    "A100 SXM 80GB": ("NVIDIA", "NVIDIA A100 Tensor Core GPU datasheet (80 GB SXM: 2,039 GB/s, 312 dense "
                       "BF16/FP16 TFLOP/s)"),
    "H100 SXM": ("NVIDIA", "NVIDIA H100 Tensor Core GPU datasheet (SXM: 3.35 TB/s, 989 dense BF16 "
                           "TFLOP/s, 1,979 dense FP8), as Chapter 17 assumes"),
    "Google TPU v4": ("Google", "Google Cloud TPU v4 documentation, system architecture table "
                                "(275 TFLOP/s, 32 GiB HBM2 at 1,200 GBps)"),
}

# Every source_id, with who published it and what kind of document it is. Two source_ids from
# the same publisher count once towards independence (``publishers``).
SOURCES = {
    "gpt-fast": ("PyTorch team (Meta)", "engine documentation"),
    "trtllm-perf": ("NVIDIA", "engine documentation"),
    "nemo-perf": ("NVIDIA", "engine documentation"),
    "mlperf-v4.1-hpe": ("MLCommons (HPE submission)", "official result table"),
    "palm-inference": ("Google", "paper"),
    "lmdeploy-a100-fp16": ("InternLM / Shanghai AI Laboratory (LMDeploy)", "engine documentation"),
    "vllm-blog": ("vLLM team, UC Berkeley", "engine documentation"),
}


def _llama2_70b() -> Model:
    """Llama-2-70B: the Llama-3.1-70B config.json with Llama 2's 32,000-token vocabulary (the
    two share layers, widths, heads and GQA; meta-llama/Llama-2-70b-hf config)."""
    import json
    cfg = json.loads((Path(__file__).parent / "data" / "hf_configs" / "llama-3.1-70b.json")
                     .read_text())
    cfg.update(vocab_size=32000, max_position_embeddings=4096, rope_scaling=None,
               rope_theta=10000.0, bos_token_id=1, eos_token_id=2)
    return model_from_hf_config(cfg, name="Llama-2-70B")


# meta-llama/Llama-2-13b-hf config.json, the fields the arithmetic uses (as transcribed in
# mlc-ai/mlc-llm python/mlc_llm/model/model_preset.py, "llama2_13b"). LLaMA-13B (the first
# LLaMA, 2,048-token context) has the same layers, widths and heads.
LLAMA2_13B_CONFIG = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_act": "silu",
    "hidden_size": 5120, "intermediate_size": 13824, "max_position_embeddings": 4096,
    "num_attention_heads": 40, "num_hidden_layers": 40, "num_key_value_heads": 40,
    "rms_norm_eps": 1e-05, "tie_word_embeddings": False, "torch_dtype": "float16",
    "vocab_size": 32000,
}


# the longest sequence each model takes (config.json's max_position_embeddings): the length a
# capacity row assumes where the source says "a single sequence" without one
MAX_CONTEXT = {"LLaMA-13B": 2048, "Llama-2-13B": 4096}


@lru_cache(maxsize=None)
def models() -> dict[str, Model]:
    """The models the reference rows name, at 2 bytes per parameter."""
    cfg = Path(__file__).parent / "data" / "hf_configs"
    palm = Model(
        "PaLM-540B", n_layers=118, n_kv_heads=1, head_dim=256, n_params=540e9,
        hidden_size=18432, n_heads=48,
        source="Chowdhery et al. 2022 (PaLM), Table 1: 118 layers, d_model 18432, 48 heads of "
               "256, multi-query attention (one KV head); 540e9 parameters",
    )
    return {
        "Llama-2-7B": model_from_hf_config(cfg / "llama-2-7b.json", name="Llama-2-7B"),
        "Llama-2-70B": _llama2_70b(),
        "Mixtral-8x7B": model_from_hf_config(cfg / "mixtral-8x7b-v0.1.json",
                                             name="Mixtral-8x7B"),
        "Llama-2-13B": model_from_hf_config(dict(LLAMA2_13B_CONFIG), name="Llama-2-13B"),
        "LLaMA-13B": model_from_hf_config(dict(LLAMA2_13B_CONFIG, max_position_embeddings=2048),
                                          name="LLaMA-13B"),
        "PaLM-540B": palm,
    }


# --- rows ----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Row:
    """One published number with its setting (strings as the source gives them)."""

    id: str
    source_id: str
    title: str
    where: str
    url: str
    model: str
    gpus: str
    precision: str
    batch: str
    input_tokens: str
    output_tokens: str
    metric: str
    value: float
    unit: str
    notes: str
    file: str = field(default="", compare=False)

    @property
    def gpu_count(self) -> int:
        if self.gpus.startswith(NOT_STATED):
            return 1
        return int(self.gpus.split("x", 1)[0])

    @property
    def gpu_type(self) -> str:
        return self.gpus.split("x", 1)[1].strip()

    @property
    def hardware(self) -> Hardware:
        return GPU_TYPES[self.gpu_type]

    def _int(self, name: str, default: int | None) -> int | None:
        text = getattr(self, name)
        head = text.split(" ", 1)[0]
        return int(head) if head.isdigit() else default

    @property
    def batch_size(self) -> int | None:
        """The batch as an int; None where the source does not state it."""
        return self._int("batch", None)

    @property
    def input_len(self) -> int | None:
        return self._int("input_tokens", None)

    @property
    def output_len(self) -> int | None:
        return self._int("output_tokens", None)

    @property
    def regime(self) -> str:
        """What sets the time in the chapter's prediction for this row: ``communication-bound``
        when collectives are at least ``COMM_BOUND_SHARE`` of it, else ``memory-bound`` when
        streaming bytes outweighs FLOPs (most decode, and prompts too short to pass the ridge),
        else ``compute-bound`` (long prompts, very large batches, an offline run); ``KV
        arithmetic`` for a row with no time (17 §2's words)."""
        return regime_of(self)


def _validate(raw: dict, where: str) -> Row:
    missing = [f for f in FIELDS if f not in raw]
    if missing:
        raise ValueError(f"{where}: missing columns {missing}")
    rid = (raw["id"] or "").strip()
    if not rid:
        raise ValueError(f"{where}: a row has no id")
    for f in SOURCE_FIELDS:
        if not (raw[f] or "").strip():
            raise ValueError(f"{where}: row {rid!r} has no {f} (every row needs its source)")
    if not raw["url"].startswith("https://"):
        raise ValueError(f"{where}: row {rid!r}: url must be an https address")
    for f in SETTING_FIELDS:
        if not (raw[f] or "").strip():
            raise ValueError(f"{where}: row {rid!r} has an empty setting field {f!r} "
                             f"(write '{NOT_STATED}' where the source does not give it)")
    if raw["metric"] not in METRICS:
        raise ValueError(f"{where}: row {rid!r}: unknown metric {raw['metric']!r}")
    if raw["unit"] != METRICS[raw["metric"]]:
        raise ValueError(f"{where}: row {rid!r}: metric {raw['metric']} is in "
                         f"{METRICS[raw['metric']]}, not {raw['unit']!r}")
    try:
        value = float(raw["value"])
    except ValueError:
        raise ValueError(f"{where}: row {rid!r}: value {raw['value']!r} is not a number")
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{where}: row {rid!r}: value must be positive, got {value}")
    row = Row(**{f: raw[f].strip() for f in FIELDS if f != "value"}, value=value, file=where)
    if row.model not in models():
        raise ValueError(f"{where}: row {rid!r}: unknown model {row.model!r}")
    if row.source_id not in SOURCES:
        raise ValueError(f"{where}: row {rid!r}: source_id {row.source_id!r} has no publisher "
                         f"in measurements.SOURCES")
    if row.metric in CAPACITY_METRICS and row.gpus.startswith(NOT_STATED):
        return row
    try:
        count, kind = row.gpu_count, row.gpu_type
    except (ValueError, IndexError):
        raise ValueError(f"{where}: row {rid!r}: gpus must read '<count>x <type>', "
                         f"got {row.gpus!r}")
    if count < 1 or kind not in GPU_TYPES:
        raise ValueError(f"{where}: row {rid!r}: unknown GPU {row.gpus!r}")
    return row


def load(directory: Path | str = DATA_DIR) -> list[Row]:
    """Every row of every CSV in ``directory``, validated; ids must be unique."""
    out, seen = [], set()
    for path in sorted(Path(directory).glob("*.csv")):
        with path.open(newline="", encoding="utf-8") as fh:
            for i, raw in enumerate(csv.DictReader(fh), start=2):
                row = _validate(raw, f"{path.name}:{i}")
                if row.id in seen:
                    raise ValueError(f"{path.name}:{i}: duplicate id {row.id!r}")
                seen.add(row.id)
                out.append(row)
    if not out:
        raise ValueError(f"{directory}: no measurement rows")
    return out


@lru_cache(maxsize=1)
def _rows() -> tuple[Row, ...]:
    return tuple(load())


def rows() -> list[Row]:
    """The reference set (validated on first load)."""
    return list(_rows())


def sources() -> dict[str, str]:
    """source_id -> title of the first row citing it."""
    out: dict[str, str] = {}
    for r in rows():
        out.setdefault(r.source_id, r.title)
    return out


def publishers(rs: list[Row] | None = None) -> dict[str, list[str]]:
    """Independent publisher -> the source_ids of ``rs`` (default: every row) it published."""
    out: dict[str, list[str]] = {}
    for r in (rows() if rs is None else rs):
        ids = out.setdefault(SOURCES[r.source_id][0], [])
        if r.source_id not in ids:
            ids.append(r.source_id)
    return out


# --- the setting as the models need it ------------------------------------------------------------

@dataclass(frozen=True)
class Setting:
    """What the predictions use, with the assumptions made where the source is silent."""

    model: Model             # at the weight bytes per parameter the chapter would use
    fuller_model: Model      # with quantisation group scales counted
    hw: Hardware             # one chip, peak compute at the row's precision
    chips: int
    kv_bytes_per_value: float
    batch: int
    input_tokens: int
    output_tokens: int
    assumptions: tuple[str, ...]


def _precision(row: Row, hw: Hardware) -> tuple[float, float, float, float, list[str]]:
    """(chapter bytes/param, fuller bytes/param, compute multiplier, KV bytes, assumptions)."""
    p, notes = row.precision.lower(), []
    if p.startswith(NOT_STATED):
        if row.metric == "offline_output_tokens_per_s":
            notes.append("precision not stated: FP8 weights, KV and compute assumed")
            return 1.0, 1.0, FP8_SPEEDUP.get(hw.name, 1.0), 1.0, notes
        notes.append("precision not stated: 16-bit weights and KV assumed")
        return 2.0, 2.0, 1.0, 2.0, notes
    if p.startswith("fp8"):
        return 1.0, 1.0, FP8_SPEEDUP.get(hw.name, 1.0), (1.0 if "kv" in p else 2.0), notes
    if p.startswith("int8"):
        # weight-only int8 (gpt-fast) keeps a bf16 scale per output channel: negligible
        return 1.0, 1.0, 1.0, 2.0, notes
    if p.startswith("int4"):
        # group 32 with a bf16 scale and a bf16 zero per group: 4 more bytes per 32 weights
        return 0.5, 0.5 + 4 / 32, 1.0, 2.0, notes
    return 2.0, 2.0, 1.0, 2.0, notes


def setting(row: Row) -> Setting:
    """The model, chip and lengths a prediction for ``row`` uses."""
    base = models()[row.model]
    hw0 = row.hardware
    bpp, bpp_full, speed, kvb, notes = _precision(row, hw0)
    hw = hw0.with_(peak_flops_per_s=hw0.peak_flops_per_s * speed) if speed != 1.0 else hw0
    b = row.batch_size
    if b is None:
        b = 1
        if row.metric != "offline_output_tokens_per_s":
            notes.append("batch not stated: batch 1 assumed")
    n_in = row.input_len
    if n_in is None:
        n_in = 2048 if row.model == "PaLM-540B" else 0
        if row.metric != "offline_output_tokens_per_s":
            notes.append(f"input length not stated: {n_in} tokens of context assumed")
    n_out = row.output_len or 1
    def at(bytes_per_param):
        return base.with_(bytes_per_param=bytes_per_param,
                          weight_bytes=base.n_params * bytes_per_param,
                          streamed_weight_bytes=base.streamed_params * bytes_per_param)
    return Setting(model=at(bpp), fuller_model=at(bpp_full), hw=hw, chips=row.gpu_count,
                   kv_bytes_per_value=kvb, batch=b, input_tokens=n_in, output_tokens=n_out,
                   assumptions=tuple(notes))


def _scaled(hw: Hardware, chips: int) -> Hardware:
    """``chips`` chips seen as one: peak and bandwidth times the count (the chapter's split)."""
    if chips == 1:
        return hw
    return hw.with_(peak_flops_per_s=hw.peak_flops_per_s * chips,
                    mem_bw_bytes_per_s=hw.mem_bw_bytes_per_s * chips,
                    mem_bytes=hw.mem_bytes * chips)


# --- the work of a row: passes of (count, bytes, FLOPs) plus communication ---------------------

@dataclass(frozen=True)
class Pass:
    """``count`` identical forward passes, each reading ``bytes`` and doing ``flops`` over all
    chips, plus ``comm_s`` of collectives per pass."""

    count: float
    bytes: float
    flops: float
    comm_s: float = 0.0


def _collectives_s(s: Setting, batch: int, *, ring: bool) -> float:
    """All-reduce time of one decode pass on ``s.chips`` chips (0 on one)."""
    if s.chips == 1:
        return 0.0
    m, hw = s.fuller_model, s.hw
    if hw.interconnect_bytes_per_s is None:
        # no link bandwidth in the preset's source (TPU v4): the chapter's latency floor only
        return tp_allreduce_traffic(m, s.chips)["collectives"] * 5e-6
    if ring:
        return tp_step_fuller(m, hw, s.chips, batch=batch)["comm_s"]
    return tp_decode_step(m, hw, s.chips, batch=batch)["comm_s"]


def _decode_steps(s: Setting, row: Row) -> tuple[int, int]:
    """(steps, mean context) of the decode part of a row."""
    if row.metric in ("decode_tokens_per_s", "decode_ms_per_token"):
        return 1, s.input_tokens
    steps = max(s.output_tokens - 1, 0)
    return steps, s.input_tokens + steps // 2


def work(row: Row) -> list[Pass]:
    """The passes a row's measured time covers, counted the fuller way (attention in the FLOPs,
    the weight read in every pass, group scales in the bytes); what ``calibrate`` fits on."""
    s = setting(row)
    m, kvb = s.fuller_model, s.kv_bytes_per_value
    if row.metric == "offline_output_tokens_per_s":
        # batch and lengths unknown: one output token's FLOPs (the compute ceiling)
        return [Pass(1, 0.0, matrix_flops(m, 1, include_lm_head=True))]
    passes = []
    if row.metric in PREFILL_METRICS:
        one = pass_roofline(m, s.hw, prompt_tokens=max(s.input_tokens, 1), efficiency=1.0,
                            kv_bytes_per_value=kvb)
        weights = moe_streamed_weight_bytes(m, s.batch * s.input_tokens)
        kv_new = (one["bytes"] - moe_streamed_weight_bytes(m, s.input_tokens))
        passes.append(Pass(1, weights + s.batch * kv_new, s.batch * one["flops"]))
    steps, ctx = _decode_steps(s, row)
    if steps:
        d = pass_roofline(m, s.hw, decode_batch=s.batch, decode_context_tokens=ctx,
                          efficiency=1.0, kv_bytes_per_value=kvb)
        passes.append(Pass(steps, d["bytes"], d["flops"],
                           _collectives_s(s, s.batch, ring=True)))
    return passes


def _time(passes: list[Pass], s: Setting, *, bandwidth_eff: float, compute_eff: float,
          overhead_s: float) -> float:
    bw = s.hw.mem_bw_bytes_per_s * s.chips * bandwidth_eff
    fl = s.hw.peak_flops_per_s * s.chips * compute_eff
    return sum(p.count * (max(p.bytes / bw, p.flops / fl) + overhead_s + p.comm_s)
               for p in passes)


# --- predictions --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Prediction:
    """Measured and predicted values of one row, in the row's unit."""

    row: Row
    measured: float
    chapter: float
    fuller: float | None
    assumptions: tuple[str, ...]

    @staticmethod
    def error_pct(predicted: float | None, measured: float) -> float | None:
        return None if predicted is None else 100.0 * (predicted - measured) / measured

    @property
    def chapter_error_pct(self) -> float:
        return self.error_pct(self.chapter, self.measured)

    @property
    def fuller_error_pct(self) -> float | None:
        return self.error_pct(self.fuller, self.measured)

    @property
    def chapter_ratio(self) -> float:
        """The chapter's ``time_ratio`` (below 1: it promised less time than was measured)."""
        return time_ratio(self.row, self.chapter)

    @property
    def fuller_ratio(self) -> float | None:
        return None if self.fuller is None else time_ratio(self.row, self.fuller)


def time_ratio(row: Row, predicted: float) -> float:
    """Predicted over measured, read as time: predicted / measured for a time or a size, and
    measured / predicted for a rate (tokens/s), so a value below 1 always means the model
    promised less time (a faster system) than was measured, and 1 / r is as far off as r."""
    p = float(predicted)
    if not math.isfinite(p) or p <= 0:
        raise ValueError(f"predicted: must be a positive number, got {predicted!r}")
    return row.value / p if row.metric in RATE_METRICS else p / row.value


def miss(ratio: float) -> float:
    """How far a ``time_ratio`` is from 1 as a factor either way: max(r, 1/r) (1 is exact)."""
    r = float(ratio)
    if not math.isfinite(r) or r <= 0:
        raise ValueError(f"ratio: must be a positive number, got {ratio!r}")
    return max(r, 1.0 / r)


def modelled(row: Row) -> bool:
    """Whether the row's setting is known well enough to predict its time: False for a KV
    arithmetic row (no time) and for a metric in ``UNMODELLED_METRICS`` (an offline run whose
    input and output lengths the source does not give). Statistics and fits use modelled
    rows only."""
    return row.metric not in CAPACITY_METRICS and row.metric not in UNMODELLED_METRICS


def _to_metric(row: Row, s: Setting, seconds: float) -> float:
    """A predicted time (the whole measured span) in the row's metric."""
    if row.metric == "decode_tokens_per_s":
        return 1.0 / seconds                    # per user: one token per step
    if row.metric in ("decode_ms_per_token", "ttft_ms", "request_latency_ms"):
        return seconds * 1e3
    if row.metric == "output_tokens_per_s_per_gpu":
        return s.batch * s.output_tokens / seconds / s.chips
    if row.metric == "output_tokens_per_s":
        return s.batch * s.output_tokens / seconds
    if row.metric == "offline_output_tokens_per_s":
        return 1.0 / seconds                    # seconds per output token, whole system
    raise ValueError(f"metric: {row.metric!r}")


def chapter_parts(row: Row) -> dict[str, float]:
    """The chapter's time for the row's span, split into ``compute_s`` (compute-bound prefill
    and decode steps), ``read_s`` (memory-bound ones) and ``comm_s`` (collectives);
    ``chapter_seconds`` is their sum and ``regime_of`` reads their shares.

    A prefill of n = b x input tokens is 17 §2's roofline: max(D_w / beta, 2 N n / (0.5 x
    peak)), D_w the streamed weights (an MoE's: the experts n tokens touch), over all chips."""
    if row.metric in CAPACITY_METRICS:
        raise ValueError(f"row {row.id!r}: {row.metric} has no time")
    s = setting(row)
    m, hw, p, kvb = s.model, s.hw, s.chips, s.kv_bytes_per_value
    big = _scaled(hw, p)
    parts = dict(compute_s=0.0, read_s=0.0, comm_s=0.0)
    if row.metric == "offline_output_tokens_per_s":
        # 17 §5: throughput stops at efficiency x peak over one token's FLOPs
        parts["compute_s"] = (matrix_flops(m, 1, include_lm_head=True)
                              / (0.5 * big.peak_flops_per_s))
        return parts
    if row.metric in PREFILL_METRICS:
        n = s.batch * max(s.input_tokens, 1)
        compute = prefill_compute_s(m, big, n)
        read = moe_streamed_weight_bytes(m, n) / big.mem_bw_bytes_per_s
        if read > compute:
            parts["read_s"] += read
        else:
            parts["compute_s"] += compute
    steps, ctx = _decode_steps(s, row)
    if steps:
        comm = 0.0
        if p == 1:
            d = decode_step_parts(m, hw, s.batch, ctx, bytes_per_value=kvb)
            read, compute = d.read_s, d.compute_s
        else:
            compute = s.batch * matrix_flops(m, 1, include_lm_head=True) / big.peak_flops_per_s
            if hw.interconnect_bytes_per_s is None:
                read = (moe_streamed_weight_bytes(m, s.batch)
                        + s.batch * ctx * kv_bytes_per_token(m, kvb)) / big.mem_bw_bytes_per_s
                comm = _collectives_s(s, s.batch, ring=False)
            else:
                tp = tp_decode_step(m, hw, p, batch=s.batch, context_tokens=ctx,
                                    bytes_per_value=kvb)
                read, comm = tp["read_s"], tp["comm_s"]
        if read >= compute:
            parts["read_s"] += steps * read
        else:
            parts["compute_s"] += steps * compute
        parts["comm_s"] += steps * comm
    return parts


def chapter_seconds(row: Row) -> float:
    """The chapter's time for the row's span (see the module docstring)."""
    parts = chapter_parts(row)
    return parts["compute_s"] + parts["read_s"] + parts["comm_s"]


def regime_of(row: Row) -> str:
    """See ``Row.regime``."""
    if row.metric in CAPACITY_METRICS:
        return "KV arithmetic"
    parts = chapter_parts(row)
    total = sum(parts.values())
    if parts["comm_s"] >= COMM_BOUND_SHARE * total:
        return "communication-bound"
    return "memory-bound" if parts["read_s"] >= parts["compute_s"] else "compute-bound"


def capacity_value(row: Row, *, blocks: bool) -> float:
    """A KV arithmetic row's value in its unit: L tokens x k bytes per token (8.1.2, 17 §5),
    with ``blocks`` the tokens rounded up to whole 16-token blocks first (8.3.1)."""
    m = models()[row.model]
    kvb = 1.0 if row.precision.lower().startswith("fp8") else 2.0
    n = row.input_len
    if n is None:
        n = MAX_CONTEXT.get(row.model, 0)
    if not n:
        raise ValueError(f"row {row.id!r}: no sequence length")
    tokens = kv_tokens_allocated(n, 16) if blocks else n
    return kv_bytes_per_token(m, kvb) * tokens / 1e9


def fuller_seconds(row: Row) -> float | None:
    """The fuller model's time: the passes of ``work`` on the roofline with compute at 50% of
    peak and ring collectives; None where the companion has nothing beyond the chapter."""
    if row.metric == "offline_output_tokens_per_s" or row.metric in CAPACITY_METRICS:
        return None
    s = setting(row)
    return _time(work(row), s, bandwidth_eff=1.0, compute_eff=0.5, overhead_s=0.0)


@dataclass(frozen=True)
class Calibration:
    """Achieved fraction of peak bandwidth and compute, and a fixed overhead per pass."""

    bandwidth_eff: float
    compute_eff: float
    overhead_s: float
    fitted_on: tuple[str, ...] = ()

    def seconds(self, row: Row) -> float:
        s = setting(row)
        passes = work(row)
        if row.metric == "offline_output_tokens_per_s":
            return _time(passes, s, bandwidth_eff=self.bandwidth_eff,
                         compute_eff=self.compute_eff, overhead_s=0.0)
        return _time(passes, s, bandwidth_eff=self.bandwidth_eff,
                     compute_eff=self.compute_eff, overhead_s=self.overhead_s)

    def predict(self, row: Row) -> float:
        if row.metric in CAPACITY_METRICS:
            return capacity_value(row, blocks=True)     # nothing to calibrate
        return _to_metric(row, setting(row), self.seconds(row))


def predict(row: Row) -> Prediction:
    """The chapter's and the fuller model's values for ``row``, in its unit."""
    if row.metric in CAPACITY_METRICS:
        return Prediction(row=row, measured=row.value,
                          chapter=capacity_value(row, blocks=False),
                          fuller=capacity_value(row, blocks=True), assumptions=(
                              () if row.input_len is not None else
                              ("sequence length not stated: the model's maximum context "
                               "assumed",)))
    s = setting(row)
    full = fuller_seconds(row)
    return Prediction(row=row, measured=row.value,
                      chapter=_to_metric(row, s, chapter_seconds(row)),
                      fuller=None if full is None else _to_metric(row, s, full),
                      assumptions=s.assumptions)


# --- fit and held-out check ----------------------------------------------------------------------

def in_fit_half(row: Row) -> bool:
    """The deterministic split: a row is fitted on when the first byte of sha256(id) is even."""
    return hashlib.sha256(row.id.encode()).digest()[0] % 2 == 0


def split(rs: list[Row] | None = None) -> tuple[list[Row], list[Row]]:
    """(fit rows, held-out rows): disjoint, together every row."""
    rs = rows() if rs is None else list(rs)
    return [r for r in rs if in_fit_half(r)], [r for r in rs if not in_fit_half(r)]


def _grid(lo: float, hi: float, step: float) -> list[float]:
    n = int(round((hi - lo) / step))
    return [round(lo + i * step, 10) for i in range(n + 1)]


BANDWIDTH_GRID = _grid(0.30, 1.00, 0.02)
COMPUTE_GRID = _grid(0.10, 1.00, 0.02)
OVERHEAD_GRID_S = [i * 50e-6 for i in range(0, 61)]  # 0 ... 3 ms per pass


def _loss(prepared, eb: float, ec: float, t0: float) -> float:
    """The fit's loss at one grid point: sum of log(predicted / measured) squared."""
    loss = 0.0
    for r, s, passes in prepared:
        over = 0.0 if r.metric == "offline_output_tokens_per_s" else t0
        t = _time(passes, s, bandwidth_eff=eb, compute_eff=ec, overhead_s=over)
        loss += math.log(_to_metric(r, s, t) / r.value) ** 2
    return loss


def _loss_grid(prepared):
    """The loss at every (bandwidth, compute, overhead) grid point at once, shape (len(
    BANDWIDTH_GRID), len(COMPUTE_GRID), len(OVERHEAD_GRID_S)), computed as ``_loss`` does."""
    import numpy as np

    eb = np.asarray(BANDWIDTH_GRID)[:, None, None]
    ec = np.asarray(COMPUTE_GRID)[None, :, None]
    t0 = np.asarray(OVERHEAD_GRID_S)[None, None, :]
    loss = np.zeros((eb.size, ec.size, t0.size))
    for r, s, passes in prepared:
        over = 0.0 * t0 if r.metric == "offline_output_tokens_per_s" else t0
        bw = s.hw.mem_bw_bytes_per_s * s.chips * eb
        fl = s.hw.peak_flops_per_s * s.chips * ec
        t = 0.0
        for p in passes:
            t = t + p.count * (np.maximum(p.bytes / bw, p.flops / fl) + over + p.comm_s)
        loss = loss + np.log(_to_metric(r, s, t) / r.value) ** 2
    return loss


def calibrate(rs: list[Row] | None = None) -> Calibration:
    """Fit (bandwidth fraction, compute fraction, per-pass overhead) on ``rs`` (default: the fit
    half of ``split``) by least squares on log(predicted / measured), over a fixed grid (no
    randomness: the same rows give the same constants). The grid is searched in one array
    pass; the few points within a hair of the best are then compared one by one, smallest
    loss (to 12 decimals) first, ties to the smaller constants."""
    rs = split()[0] if rs is None else list(rs)
    fitted = [r.id for r in rs]
    rs = [r for r in rs if r.metric not in CAPACITY_METRICS]     # nothing to fit there
    if not rs:
        raise ValueError("rs: nothing to fit on")
    prepared = [(r, setting(r), work(r)) for r in rs]
    import numpy as np

    grid = _loss_grid(prepared)
    near = np.argwhere(grid <= grid.min() + 1e-9 * max(1.0, float(grid.min())))
    best_key = None
    for i, j, k in near:
        eb, ec, t0 = BANDWIDTH_GRID[i], COMPUTE_GRID[j], OVERHEAD_GRID_S[k]
        key = (round(_loss(prepared, eb, ec, t0), 12), eb, ec, t0)
        if best_key is None or key < best_key:
            best_key = key
    _, eb, ec, t0 = best_key
    return Calibration(eb, ec, t0, fitted_on=tuple(fitted))


def error_table(rs: list[Row] | None = None, calibration: Calibration | None = None, *,
                by: tuple[str, ...] = ("model", "regime")) -> list[dict]:
    """Median and worst absolute error (%, in each row's own unit) per group of rows, for the
    chapter's model, the fuller one and the calibrated one. Default: the held-out half of
    ``split``, calibrated on the fit half. Each dict: the group's keys, ``n``, and
    ``{chapter,fuller,calibrated}_{median,worst}`` (fuller ones None when no row has a fuller
    model); a last row with every key ``"all"``. ``miss_table`` is the symmetric counterpart."""
    fit, held = split()
    rs = held if rs is None else list(rs)
    cal = calibrate(fit) if calibration is None else calibration
    groups: dict[tuple, list[Row]] = {}
    for r in rs:
        groups.setdefault(tuple(getattr(r, k) for k in by), []).append(r)
    out = []
    for key, members in sorted(groups.items()) + [(("all",) * len(by), rs)]:
        preds = [predict(r) for r in members]
        row = dict(zip(by, key), n=len(members))
        for name, errors in (
                ("chapter", [p.chapter_error_pct for p in preds]),
                ("fuller", [p.fuller_error_pct for p in preds if p.fuller is not None]),
                ("calibrated", [Prediction.error_pct(cal.predict(r), r.value) for r in members])):
            mags = [abs(e) for e in errors]
            row[f"{name}_median"] = statistics.median(mags) if mags else None
            row[f"{name}_worst"] = max(mags) if mags else None
        out.append(row)
    return out


def prediction_table(rs: list[Row] | None = None,
                     calibration: Calibration | None = None) -> list[dict]:
    """One dict per row: id, source, publisher, setting, metric, measured, chapter, fuller,
    calibrated (``calibration``, default ``calibrate()``) and their errors in %, the same
    models' ``time_ratio`` (``*_ratio``), ``held_out`` (the value predicted by the publisher
    fold that did not see the row, None where the row is not ``modelled``) and its ratio,
    regime, ``modelled``, whether it was in ``split``'s fit half, and the assumptions made."""
    rs = rows() if rs is None else list(rs)
    cal = calibrate() if calibration is None else calibration
    out = []
    for r in rs:
        p = predict(r)
        k = cal.predict(r)
        held = held_out_prediction(r) if modelled(r) else None
        out.append(dict(
            id=r.id, source_id=r.source_id, publisher=SOURCES[r.source_id][0], model=r.model,
            gpus=r.gpus, precision=r.precision,
            batch=r.batch, input_tokens=r.input_tokens, output_tokens=r.output_tokens,
            metric=r.metric, unit=r.unit, regime=r.regime, fit=in_fit_half(r),
            modelled=modelled(r),
            measured=r.value, chapter=p.chapter, fuller=p.fuller, calibrated=k,
            chapter_error_pct=p.chapter_error_pct, fuller_error_pct=p.fuller_error_pct,
            calibrated_error_pct=Prediction.error_pct(k, r.value),
            chapter_ratio=p.chapter_ratio, fuller_ratio=p.fuller_ratio,
            calibrated_ratio=time_ratio(r, k), held_out=held,
            held_out_ratio=None if held is None else time_ratio(r, held),
            assumptions="; ".join(p.assumptions)))
    return out


# --- fit without a publisher, judge on it -----------------------------------------------------------

@dataclass(frozen=True)
class Fold:
    """One publisher held out: ``calibration`` fitted on every other publisher's modelled rows,
    ``held`` the ids of this publisher's modelled rows it is judged on."""

    publisher: str
    held: tuple[str, ...]
    calibration: Calibration


@lru_cache(maxsize=1)
def publisher_folds() -> tuple[Fold, ...]:
    """One ``Fold`` per independent publisher (``publishers``) with a modelled row, in name
    order. Rows of one publisher share an engine, a harness and often a table, so holding out
    a whole publisher tests what a calibration carries to an engine it never saw."""
    timed = [r for r in rows() if modelled(r)]
    by_pub = {pub: [r for r in timed if SOURCES[r.source_id][0] == pub]
              for pub in sorted(publishers())}
    return tuple(Fold(pub, tuple(r.id for r in held),
                      calibrate([r for r in timed if SOURCES[r.source_id][0] != pub]))
                 for pub, held in by_pub.items() if held)


@lru_cache(maxsize=1)
def calibrate_all() -> Calibration:
    """The three constants fitted on every modelled row."""
    return calibrate([r for r in rows() if modelled(r)])


def held_out_prediction(row: Row) -> float:
    """``row``'s value (its unit) as predicted by the calibration of the publisher fold that
    held it out; ValueError for a row that is not ``modelled``."""
    if not modelled(row):
        raise ValueError(f"row {row.id!r}: {row.metric} is not modelled")
    for fold in publisher_folds():
        if row.id in fold.held:
            return fold.calibration.predict(row)
    raise ValueError(f"row {row.id!r}: not in the reference set")


def _misses(ratios: list[float]) -> dict:
    """median and worst ``miss`` of ``ratios`` and how many were optimistic (below 1)."""
    m = [miss(x) for x in ratios]
    return dict(median=statistics.median(m), worst=max(m),
                optimistic=sum(1 for x in ratios if x < 1))


def _canonical(regime: str) -> str:
    """``regime`` as one of ``REGIMES`` (or "all"), an alias read as its regime."""
    regime = REGIME_ALIASES.get(regime, regime)
    if regime not in REGIMES and regime != "all":
        raise ValueError(f"regime: {regime!r} is not one of {REGIMES} or 'all'")
    return regime


def _group_misses(members: list[Row], calibrated: bool) -> dict:
    preds = [predict(r) for r in members]
    series = [("chapter", [p.chapter_ratio for p in preds]),
              ("fuller", [p.fuller_ratio for p in preds if p.fuller is not None])]
    if calibrated:
        series.append(("calibrated", [time_ratio(r, held_out_prediction(r)) for r in members]))
    out = dict(n=len(members))
    for name, ratios in series:
        got = _misses(ratios) if ratios else dict(median=None, worst=None, optimistic=None)
        out.update({f"{name}_{k}": v for k, v in got.items()})
    return out


def miss_table(rs: list[Row] | None = None, *, by: tuple[str, ...] = ("regime",),
               calibrated: bool = True) -> list[dict]:
    """Per group of the ``modelled`` rows of ``rs`` (default: every row): ``n`` and, for the
    chapter's, the fuller and (with ``calibrated``) the publisher-held-out calibrated model,
    ``*_median`` and ``*_worst`` ``miss`` (factors, 1 is exact) and ``*_optimistic``, how many
    rows it promised less time than measured (fuller values None where no row has a fuller
    model); a last row with every key ``"all"``."""
    rs = [r for r in (rows() if rs is None else rs) if modelled(r)]
    if not rs:
        raise ValueError("rs: no modelled row")
    groups: dict[tuple, list[Row]] = {}
    for r in rs:
        groups.setdefault(tuple(getattr(r, k) for k in by), []).append(r)
    return [dict(zip(by, key), **_group_misses(members, calibrated))
            for key, members in sorted(groups.items()) + [(("all",) * len(by), rs)]]


@lru_cache(maxsize=None)
def _regime_misses(calibrated: bool) -> dict[str, dict]:
    return {t["regime"]: t for t in miss_table(calibrated=calibrated)}


def median_miss(regime: str, model: str = "chapter") -> float:
    """The median ``miss`` (a factor, 1 is exact) of ``model`` ("chapter", "fuller" or
    "calibrated", the last held out by publisher) over the modelled published measurements of
    ``regime`` (one of ``REGIMES``, a ``REGIME_ALIASES`` name, or "all")."""
    regime = _canonical(regime)
    if model not in ("chapter", "fuller", "calibrated"):
        raise ValueError(f"model: {model!r} is not 'chapter', 'fuller' or 'calibrated'")
    t = _regime_misses(model == "calibrated").get(regime)
    if t is None:
        raise ValueError(f"regime {regime!r} has no modelled row")
    if t[f"{model}_median"] is None:
        raise ValueError(f"the {model} model has no prediction in regime {regime!r}")
    return t[f"{model}_median"]


def factor(x: float) -> str:
    """A ``miss`` or a ``time_ratio`` for a sentence or a table: 1.53 -> "1.53x"."""
    return f"{x:.2f}x" if x < 10 else f"{x:.3g}x"


# --- what an engine reaches: MBU of a measured decode step (17 §9) ------------------------------------

def reported_bandwidth(row: Row) -> float | None:
    """The achieved bandwidth (bytes/s) the source itself reports for the row, as its notes
    transcribe it ("... 1397.31 GB/s achieved", "1069.20 GB/s reported"); None where the source
    gives none."""
    m = re.search(r"([0-9][0-9,]*\.?[0-9]*) GB/s (?:achieved|reported)", row.notes)
    return None if m is None else float(m.group(1).replace(",", "")) * 1e9


def decode_step_bytes(row: Row) -> float | None:
    """Bytes one decode step of a per-token decode row streams over all chips, counted the
    fuller way (weights but the input table, group scales, the context's KV); else None."""
    if row.metric not in ("decode_tokens_per_s", "decode_ms_per_token"):
        return None
    return work(row)[-1].bytes


def measured_mbu(row: Row) -> float | None:
    """17 §9's MBU of a per-token decode row: step bytes x steps per second over the chips'
    datasheet bandwidth (gross: every cost of the step is in the measured time); None for
    other rows."""
    b = decode_step_bytes(row)
    if b is None:
        return None
    step_s = 1.0 / row.value if row.metric == "decode_tokens_per_s" else row.value / 1e3
    return b / step_s / (row.hardware.mem_bw_bytes_per_s * row.gpu_count)


# --- the accuracy a panel can state ----------------------------------------------------------------

@lru_cache(maxsize=None)
def _held_out_pct() -> dict[str, dict]:
    """regime -> ``error_table``'s row of that regime (held-out half, calibrated on the other)."""
    return {t["regime"]: t for t in error_table(by=("regime",))}


def stated_accuracy(regime: str, model: str = "chapter") -> float:
    """The median absolute error (%, in each row's own unit: a rate's and a time's errors are
    not symmetric, see ``median_miss``) of ``model`` ("chapter", "fuller" or "calibrated") on
    the held-out half of ``split`` in ``regime`` (one of ``REGIMES``, a ``REGIME_ALIASES``
    name, or "all")."""
    regime = _canonical(regime)
    if model not in ("chapter", "fuller", "calibrated"):
        raise ValueError(f"model: {model!r} is not 'chapter', 'fuller' or 'calibrated'")
    t = _held_out_pct().get(regime)
    if t is None:
        raise ValueError(f"regime {regime!r} has no held-out row")
    value = t[f"{model}_median"]
    if value is None:
        raise ValueError(f"the {model} model has no prediction in regime {regime!r}")
    return value


def accuracy_sentence(regime: str, model: str = "chapter") -> str:
    """One sentence an explorer can show under a prediction: how far ``model`` has missed the
    modelled published measurements of ``regime`` (``median_miss``, the worst ``miss``, how
    many rows it was optimistic on, and the count), in time, as a factor either way."""
    median = median_miss(regime, model)
    regime = _canonical(regime)
    t = _regime_misses(model == "calibrated")[regime]
    n, worst, opt = t["n"], t[f"{model}_worst"], t[f"{model}_optimistic"]
    label = {"chapter": "the chapter's arithmetic", "fuller": "the companion's fuller model",
             "calibrated": "the calibrated model (fitted without the row's publisher)"}[model]
    kind = "published measurements" if regime == "all" else f"published {regime} measurements"
    return (f"Against {n} {kind}, {label} missed the measured time by a median factor of "
            f"{factor(median)} (worst {factor(worst)}) and promised too little time in "
            f"{opt} of the {n}.")
