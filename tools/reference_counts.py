"""Reference counts from the models' own implementation: transformers builds every shelf model.

Writes tests/data/reference_counts.json, which tests/test_models.py compares companion's counts
against. Run it in a throwaway venv that has torch and transformers (they are NOT project
dependencies):

    python3 -m venv /tmp/refvenv
    /tmp/refvenv/bin/pip install torch transformers   # a CPU torch wheel is enough
    /tmp/refvenv/bin/python tools/reference_counts.py

For each config in companion/data/hf_configs/ it records
- params: the parameters transformers instantiates for the full config on the meta device
  (no memory is allocated); tied weights are counted once, as model.parameters() yields them;
- buffers_not_counted: persistent buffers that are not parameters (DeepSeek-V3's router bias);
- mla_latent_width: for MLA models, kv_a_proj_with_mqa's output width (latent + rope key);
- kv_probe: a real forward on CPU through a shrunken copy of the config (hidden size,
  intermediate sizes, vocabulary, experts and query heads made small; layers, KV heads, head
  widths and which layers slide kept, windows shortened so that a short prompt passes them), with the bytes the returned cache
  holds at each probed context. The shrunken config is stored so the test can feed the very
  same dict to companion.models.model_from_hf_config.
"""

from __future__ import annotations

import json
import pathlib
import platform
import sys

import torch
import transformers
from transformers import AutoConfig, AutoModelForCausalLM

ROOT = pathlib.Path(__file__).resolve().parents[1]
SHELF = ROOT / "companion" / "data" / "hf_configs"
OUT = ROOT / "tests" / "data" / "reference_counts.json"

PROBE_WINDOW = 8             # windows shortened to this many tokens in the probe
PROBE_CONTEXTS = (5, 20)     # one context inside the window, one past it
PROBE_MAX_HEADS = 8          # MLA probe: fewer heads (the latent does not depend on them)


def _config(raw: dict):
    cfg = dict(raw)
    cfg.pop("auto_map", None)            # use transformers' own implementation, no remote code
    cfg.pop("quantization_config", None)  # count parameters, not a quantized checkpoint
    return AutoConfig.for_model(cfg.pop("model_type"), **cfg)


def full_counts(raw: dict) -> dict:
    config = _config(raw)
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config)
    params = sum(p.numel() for p in model.parameters())
    buffers = {name: b.numel() for name, b in model.named_buffers()
               if not name.endswith("inv_freq") and "rotary" not in name}
    out = {"params": params, "buffers_not_counted": sum(buffers.values()),
           "buffer_names_sample": sorted(buffers)[:3], "class": type(model).__name__}
    mla = [m for n, m in model.named_modules() if n.endswith("kv_a_proj_with_mqa")]
    if mla:
        out["mla_latent_width"] = mla[0].out_features
    return out


def shrunken(raw: dict) -> dict:
    """The config with tiny widths; the KV-relevant shape (layers, KV heads, head widths,
    which layers slide) kept, windows shortened to PROBE_WINDOW."""
    cfg = dict(raw)
    cfg.pop("auto_map", None)
    cfg.pop("quantization_config", None)
    heads = cfg["num_attention_heads"]
    kv = cfg.get("num_key_value_heads") or heads
    if "kv_lora_rank" in cfg:  # MLA: fewer heads keep kv_b_proj small
        heads = kv = min(heads, PROBE_MAX_HEADS)
    else:  # the cache depends on the KV heads, not on how many query heads share them
        heads = kv
    cfg["num_key_value_heads"] = kv
    cfg["num_attention_heads"] = heads
    if "head_dim" not in cfg and "kv_lora_rank" not in cfg:
        cfg["head_dim"] = raw["hidden_size"] // raw["num_attention_heads"]
    cfg["hidden_size"] = 4 * heads  # a multiple of the heads, as some configs require
    cfg["intermediate_size"] = 32
    for key in ("moe_intermediate_size",):
        if key in cfg:
            cfg[key] = 16
    for key in ("num_experts", "num_local_experts", "n_routed_experts"):  # KV does not depend
        if cfg.get(key):                                                  # on the experts
            cfg[key] = max(8, cfg.get("num_experts_per_tok") or 1)
    if cfg.get("n_group"):
        cfg["n_group"], cfg["topk_group"] = 1, 1
    cfg["vocab_size"] = 256
    # token ids inside the tiny vocabulary (a popped pad id would fall back to the model
    # type's default, e.g. Phi-3's 32000)
    cfg.update(pad_token_id=0, bos_token_id=1, eos_token_id=2)
    if cfg.get("q_lora_rank"):
        cfg["q_lora_rank"] = 32
    if cfg.get("sliding_window"):
        cfg["sliding_window"] = PROBE_WINDOW
        if cfg.get("use_sliding_window") is False:
            cfg["sliding_window"] = None
    if cfg.get("max_position_embeddings", 0) < 64:
        cfg["max_position_embeddings"] = 64
    return cfg


def cache_bytes(cache) -> list[int]:
    """Bytes of keys and values each cache layer holds (transformers >= 4.56 layer objects)."""
    per_layer = []
    for layer in cache.layers:
        total = 0
        for name in ("keys", "values"):
            t = getattr(layer, name, None)
            if isinstance(t, torch.Tensor):
                total += t.numel() * t.element_size()
        per_layer.append(total)
    return per_layer


def kv_probe(raw: dict) -> dict:
    small = shrunken(raw)
    model_type = small["model_type"]
    config = _config(dict(small))
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16).eval()
    results = {}
    for L in PROBE_CONTEXTS:
        ids = torch.randint(0, small["vocab_size"], (1, L))
        with torch.no_grad():
            out = model(input_ids=ids, use_cache=True)
        per_layer = cache_bytes(out.past_key_values)
        results[str(L)] = {"cache_bytes": sum(per_layer), "per_layer_bytes": per_layer,
                           "cache_class": type(out.past_key_values).__name__}
    return {"config": dict(small, model_type=model_type), "contexts": results}


# Architectures the shelf has no real config for, given as small synthetic configs (labelled as
# such in the output) so that their counting rules and caches are still checked against the
# implementation: biases switched on, Gemma 2's alternating windows, Gemma 3's 5:1 pattern and
# q/k norms, Qwen's optional sliding layers, a Qwen3-MoE with dense layers in between.
ARCHITECTURE_PROBES = {
    "llama-biases": dict(model_type="llama", hidden_size=64, intermediate_size=48,
                         num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=2,
                         vocab_size=256, attention_bias=True, mlp_bias=True),
    "gemma2-alternating": dict(model_type="gemma2", hidden_size=64, intermediate_size=48,
                               num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2,
                               head_dim=16, vocab_size=256, sliding_window=PROBE_WINDOW),
    "gemma3-text-pattern": dict(model_type="gemma3_text", hidden_size=64, intermediate_size=48,
                                num_hidden_layers=7, num_attention_heads=4,
                                num_key_value_heads=1, head_dim=16, vocab_size=256,
                                sliding_window=PROBE_WINDOW),
    "qwen2-sliding-layers": dict(model_type="qwen2", hidden_size=64, intermediate_size=48,
                                 num_hidden_layers=4, num_attention_heads=4,
                                 num_key_value_heads=2, vocab_size=256, use_sliding_window=True,
                                 sliding_window=PROBE_WINDOW, max_window_layers=2),
    "qwen3-moe-mixed": dict(model_type="qwen3_moe", hidden_size=64, intermediate_size=48,
                            moe_intermediate_size=16, num_hidden_layers=4, num_attention_heads=4,
                            num_key_value_heads=2, head_dim=16, vocab_size=256, num_experts=8,
                            num_experts_per_tok=2, decoder_sparse_step=2, mlp_only_layers=[3]),
    "deepseek-v3-no-q-lora": dict(model_type="deepseek_v3", hidden_size=64,
                                  intermediate_size=48, moe_intermediate_size=16,
                                  num_hidden_layers=3, num_attention_heads=4,
                                  num_key_value_heads=4, vocab_size=256, q_lora_rank=None,
                                  kv_lora_rank=32, qk_rope_head_dim=8, qk_nope_head_dim=16,
                                  v_head_dim=16, n_routed_experts=8, n_shared_experts=2,
                                  num_experts_per_tok=2, first_k_dense_replace=1, n_group=1,
                                  topk_group=1, attention_bias=True),
}


def probe_counts(cfg: dict) -> dict:
    """A small config as is: its parameters and its cache at the probe contexts."""
    config = _config(dict(cfg))
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16).eval()
    contexts = {}
    for L in PROBE_CONTEXTS:
        ids = torch.randint(0, cfg["vocab_size"], (1, L))
        with torch.no_grad():
            out = model(input_ids=ids, use_cache=True)
        per_layer = cache_bytes(out.past_key_values)
        contexts[str(L)] = {"cache_bytes": sum(per_layer), "per_layer_bytes": per_layer}
    return {"config": cfg, "synthetic": True, "class": type(model).__name__,
            "params": sum(p.numel() for p in model.parameters()), "contexts": contexts}


def main() -> int:
    sources = json.loads((SHELF / "SOURCES.json").read_text())["configs"]
    out = {"made_by": "tools/reference_counts.py",
           "versions": {"transformers": transformers.__version__, "torch": torch.__version__,
                        "python": platform.python_version()},
           "probe": {"window": PROBE_WINDOW, "contexts": list(PROBE_CONTEXTS),
                     "dtype": "bfloat16"},
           "models": {}}
    # --resume keeps the entries of an earlier run (each model takes minutes on a loaded CPU)
    done = {}
    if "--resume" in sys.argv and OUT.exists():
        done = json.loads(OUT.read_text()).get("models", {})
    for key in sources:
        raw = json.loads((SHELF / f"{key}.json").read_text())
        if key in done:
            out["models"][key] = done[key]
            continue
        entry = full_counts(raw)
        entry["kv_probe"] = kv_probe(raw)
        out["models"][key] = entry
        OUT.write_text(json.dumps(out, indent=1) + "\n")
        print(f"{key:26s} {entry['params']:>16,} params  {entry['class']}", flush=True)
    out["architecture_probes"] = {}
    for key, cfg in ARCHITECTURE_PROBES.items():
        out["architecture_probes"][key] = probe_counts(cfg)
        print(f"{key:26s} {out['architecture_probes'][key]['params']:>16,} params (synthetic)")
    OUT.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
