"""Iteration-level simulators: scheduler, paged KV cache, speculative sampling, load.

Submodules: ``companion.sim.scheduler``, ``companion.sim.kvcache``,
``companion.sim.speculative``, ``companion.sim.load``.
"""
