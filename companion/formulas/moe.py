"""Mixture-of-experts in the byte and FLOP counts: which experts a decode step reads.

A dense model reads all of D_w once per decode step, whatever the batch (8.2.1). An MoE layer
routes each token to k of its E experts, so one token touches k experts but a batch of b tokens
touches the union of their choices. Under uniform, independent top-k routing each expert is
missed by one token with probability 1 - k/E, so a layer reads

    E_touched(b) = E (1 - (1 - k/E)^b)

distinct experts in expectation: k at b = 1, growing almost linearly while b k << E, then
saturating at E. The streamed bytes of a step are the dense part (attention, shared experts,
routers, norms, lm_head: always read) plus moe_layers x E_touched(b) x one expert's bytes.

Real routers are skewed: popular experts are chosen by many tokens, so fewer distinct experts
are touched than the uniform formula says and the read per step is smaller at a given batch
(the curve saturates later). The uniform value is therefore an upper bound on the expected
expert reads for a given batch of independent tokens; load-balancing losses during training
push real routing towards it. Tokens of one sequence are not independent either (a prompt's
tokens share topics), which skews the same way.

Base units in and out (bytes, FLOP, tokens).
"""

from __future__ import annotations

import math

from companion import validate as v
from companion.formulas.args import model_arg as _model
from companion.formulas.core import (expected_experts_touched, kv_bytes_at_context,
                                     moe_streamed_weight_bytes)
from companion.serves import serves
from companion.specs import Model

__all__ = [
    "moe_weight_read_per_token", "moe_read_curve", "active_params", "decode_flops_per_token",
    "moe_kv_crossover_batch",
]


@serves("8.2.1")
def moe_weight_read_per_token(model: Model, batch: int) -> float:
    """Weight bytes read per output token in one decode step: D_w(b) / b (8.2.1 for an MoE).

    For a dense model D_w / b falls as 1/b; for an MoE D_w(b) grows with b at first, so the
    per-token read falls more slowly at small batch and catches up once every expert is read.
    """
    b = v.count("batch", batch)
    return moe_streamed_weight_bytes(model, b) / b


def moe_read_curve(model: Model, batches) -> list[dict]:
    """One row per batch: batch, experts touched per layer, D_w(b), D_w(b) / b, and the same
    per-token read of a dense model of equal size (D_w / b), for plots and tables."""
    m = _model(model)
    seq = v.sequence("batches", batches)
    rows = []
    for i, b in enumerate(seq):
        b = v.count(f"batches[{i}]", b)
        touched = (expected_experts_touched(m.n_experts, m.experts_per_token, b)
                   if m.is_moe else None)
        read = moe_streamed_weight_bytes(m, b)
        rows.append(dict(batch=b, experts_touched=touched, weight_read_bytes=read,
                         weight_read_per_token_bytes=read / b,
                         dense_read_per_token_bytes=m.streamed_weight_bytes / b))
    return rows


def active_params(model: Model) -> float:
    """Parameters one token passes through: total minus the routed experts it skips.

    moe_layers x (E - k) x expert fewer than n_params: Qwen3-30B-A3B 3.35e9 of 30.5e9,
    Mixtral-8x7B 12.9e9 of 46.7e9, DeepSeek-V3 37.6e9 of 671e9; a dense model's n_params.
    """
    return _model(model).active_params


@serves("8.2.1")
def decode_flops_per_token(model: Model) -> float:
    """Matrix FLOPs of one new token through every read-once matrix: 2 x active streamed
    params (the F of 8.2.1's roofline; for an MoE only the k chosen experts compute)."""
    return 2.0 * _model(model).active_streamed_params


@serves("8.2.1")
def moe_kv_crossover_batch(model: Model, context_tokens: int, *, bytes_per_value: float = 2) -> int:
    """Smallest batch whose KV reads reach the weight reads they share: D_w(b) <= b KV(L).

    8.2.1's b_KV for any model. KV(L) is one sequence's cache at context L
    (``kv_bytes_at_context``: sliding layers keep at most W - 1 tokens). A dense model without
    windows gives ceil(D_w / (L k)), ``kv_crossover_batch`` (51 for Qwen3-8B at 2K). An MoE's
    D_w(b) grows with b (the experts the batch touches), so its KV reads catch up sooner than
    those of a dense model of the same total size: D_w(b) / b falls monotonically, and the
    smallest b is found by bisection.
    """
    m = _model(model)
    L = v.tokens("context_tokens", context_tokens, minimum=1)
    kv = kv_bytes_at_context(m, L, bytes_per_value=bytes_per_value)
    dense_bound = max(1, math.ceil(m.streamed_weight_bytes / kv))
    if not m.is_moe:
        return dense_bound
    lo, hi = 1, dense_bound
    while lo < hi:
        mid = (lo + hi) // 2
        if moe_streamed_weight_bytes(m, mid) <= mid * kv:
            hi = mid
        else:
            lo = mid + 1
    return lo
