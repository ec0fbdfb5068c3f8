"""What several of Chapter 8's exercises share: the models their variants draw from."""

from __future__ import annotations

from companion import specs

__all__ = ["VARIANT_MODELS"]

# the models of 8-1's and 8-3's variants (seed 0 keeps the chapter's Qwen3-8B)
VARIANT_MODELS = [specs.QWEN3_8B, specs.LLAMA_8B, specs.LLAMA_70B]
