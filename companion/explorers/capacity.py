"""8.1.2 / 8.3.2 explorer: how many requests' KV fits in a budget (independent vs shared prefix)."""

from __future__ import annotations

import numpy as np

from companion import calc, specs, units
from companion.chapters import ch08
from companion.explorers.base import Control, Panel, View
# the same models and KV formats (bytes per stored value, metadata included) as 8.1.2's budget
from companion.explorers.ch08_lifecycle import KV_PRECISIONS as PRECISIONS
from companion.explorers.ch08_lifecycle import MODELS as _MODELS

__all__ = ["KVCapacityPanel", "PRECISIONS"]

_SWEEP_PROMPTS = np.unique(np.geomspace(256, 65536, 49).astype(int) // 16 * 16)


class KVCapacityPanel(Panel):
    """Requests that fit in the KV budget as the prompt grows, with and without a shared prefix."""

    title = "KV capacity: requests that fit in the budget (8.1.2, 8.3.2)"
    controls = (
        Control("model", "model", "choice", specs.QWEN3_8B.name,
                options={name: name for name in _MODELS}),
        Control("precision", "KV format", "choice", 2.0, options=PRECISIONS),
        Control("prompt_tokens", "prompt (tokens)", "int", ch08.LONG_PROMPT_TOKENS, 256, 65536,
                256),
        Control("output_tokens", "output (tokens)", "int", ch08.OUTPUT_TOKENS, 1, 4096, 1),
        Control("shared_prefix_tokens", "shared prefix (tokens)", "int",
                ch08.SHARED_PREFIX_TOKENS, 0, 65536, 256),
        Control("block_tokens", "block size (tokens)", "int", ch08.BLOCK_TOKENS, 1, 256, 1),
        Control("kv_budget_gib", "KV budget (GiB)", "float",
                units.to_unit(ch08.KV_BUDGET_BYTES, "GiB"), 1.0, 80.0, 0.5),
    )
    base_layout = {
        "xaxis": {"title": {"text": "prompt length (tokens)"}, "type": "log"},
        "yaxis": {"title": {"text": "requests that fit (reserved for the full output)"}},
        "legend": {"orientation": "h", "y": -0.2},
    }

    def compute(self, *, model, precision, prompt_tokens, output_tokens, shared_prefix_tokens,
                block_tokens, kv_budget_gib) -> View:
        m = _MODELS[model]
        budget = kv_budget_gib * units.GiB
        # a request always keeps at least one private token (its newest), so cap the prefix
        prefix = min(shared_prefix_tokens, prompt_tokens - 1)
        kw = dict(block_tokens=block_tokens, bytes_per_value=precision)
        independent = [calc.max_concurrent(budget, m, int(p), output_tokens, **kw)
                       for p in _SWEEP_PROMPTS]
        shared = [calc.max_concurrent(budget, m, int(p), output_tokens,
                                      shared_prefix_tokens=min(prefix, int(p) - 1), **kw)
                  for p in _SWEEP_PROMPTS]
        n_ind = calc.max_concurrent(budget, m, prompt_tokens, output_tokens, **kw)
        n_shared = calc.max_concurrent(budget, m, prompt_tokens, output_tokens,
                                       shared_prefix_tokens=prefix, **kw)
        per_token = calc.kv_bytes_per_token(m, precision)
        after_prefill = calc.kv_bytes(m, prompt_tokens, **kw)
        after_generation = calc.kv_bytes(m, calc.held_tokens(prompt_tokens, output_tokens), **kw)
        numbers = {
            "kv_per_token_KiB": per_token / units.KiB,
            "after_prefill_MiB": after_prefill / units.MiB,
            "after_generation_MiB": after_generation / units.MiB,
            "independent_requests": n_ind,
            "shared_prefix_requests": n_shared,
        }
        text = (f"<b>{m.name}</b><br>KV per token: {numbers['kv_per_token_KiB']:,.1f} KiB<br>"
                f"one request after prefill: {numbers['after_prefill_MiB']:,.0f} MiB<br>"
                f"after {output_tokens} outputs (reserved): "
                f"{numbers['after_generation_MiB']:,.0f} MiB<br>"
                f"fit in {kv_budget_gib:g} GiB: <b>{n_ind}</b> independent, "
                f"<b>{n_shared}</b> with a {prefix:,}-token shared prefix")
        traces = [
            {"type": "scatter", "x": _SWEEP_PROMPTS.tolist(), "y": independent,
             "mode": "lines", "name": "independent contexts", "line": {"shape": "hv"}},
            {"type": "scatter", "x": _SWEEP_PROMPTS.tolist(), "y": shared, "mode": "lines",
             "name": f"shared prefix ({prefix:,} tokens)", "line": {"shape": "hv", "dash": "dash"}},
            {"type": "scatter", "x": [prompt_tokens, prompt_tokens], "y": [n_ind, n_shared],
             "mode": "markers", "name": "this setting", "marker": {"size": 11}},
        ]
        return View(numbers=numbers, traces=traces, text=text)
