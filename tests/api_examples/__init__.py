"""Good calls of every public function, per module, for the bad-input walker.

Each module here defines ``EXAMPLES = {"function_name": {kwargs of a valid call}, ...}`` and
optionally ``ALLOW = {"function_name": {"param": ["negative", "zero", ...]}}`` naming bad-value
kinds a parameter legitimately accepts (for example a signed difference may be negative).
"""
