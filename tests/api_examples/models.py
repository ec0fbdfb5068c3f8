import json

from companion import models

TARGET = "companion.models"

EXAMPLES = {
    "model_from_hf_config": dict(path_or_dict=json.dumps(models.shelf_config("gemma-2b")),
                                 name="pasted Gemma-2B", bytes_per_param=2.0),
    "load": dict(key="deepseek-v3", bytes_per_param=1.0),
    "shelf": dict(bytes_per_param=2.0),
    "shelf_keys": dict(),
    "shelf_sources": dict(),
    "shelf_config": dict(key="mixtral-8x7b-v0.1"),
}

ALLOW = {
    # any non-empty string is a fine display name
    "model_from_hf_config": {"name": ["unknown-option"]},
}
