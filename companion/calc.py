"""Every closed-form relation of Chapters 8 and 17, as pure validated functions.

This module is the public face; the formulas live in topic modules under
``companion.formulas`` and are re-exported here, so notebooks and exercises only ever write
``from companion import calc``. Importing it imports no plotting library.

  core           KV sizing, read volume, roofline, FLOP counts, quantised sizes, headline API
  batching       8.1-8.2: lifecycle timeline, memory budget, batching, LoRA, pairs, padding
  kv_management  8.3: paging, sharing, copy-on-write, prefix reuse, hybrid snapshots, retention
  compression    8.4: quantised weights and KV, compressed reads, offload, transfer
  speculative    8.5: expected output, per-token latency, draft cost, draft length
  serving        8.6: Little's law, admission, goodput, GPU-seconds, schemes A-E, energy
  performance    17 §1-§6, §9-§10: hierarchy, roofline, KV sizing, paging, batching, MBU/MFU, levers
  parallelism    17 §7-§8: tensor/pipeline parallelism, placement, disaggregated pools,
                 KV-aware routing; the interview's batch-size window
  moe            mixture-of-experts: experts a batch touches, streamed bytes vs batch, active
                 parameters
"""

from companion.formulas import (batching, compression, core, kv_management, moe, parallelism,
                                performance, serving, speculative)
from companion.formulas.core import *  # noqa: F401,F403
from companion.formulas.batching import *  # noqa: F401,F403
from companion.formulas.kv_management import *  # noqa: F401,F403
from companion.formulas.compression import *  # noqa: F401,F403
from companion.formulas.speculative import *  # noqa: F401,F403
from companion.formulas.serving import *  # noqa: F401,F403
from companion.formulas.performance import *  # noqa: F401,F403
from companion.formulas.parallelism import *  # noqa: F401,F403
from companion.formulas.moe import *  # noqa: F401,F403

_MODULES = (core, batching, kv_management, compression, speculative, serving, performance,
            parallelism, moe)
__all__ = [name for module in _MODULES for name in module.__all__]
