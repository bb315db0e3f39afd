"""Helpers for driving the registry app (the `registry` fixture lives in tests/integration/conftest.py)."""

from __future__ import annotations

from typing import Any

ADMIN = {"x-infaas-role": "admin"}


def app_headers(app: str) -> dict[str, str]:
    return {"x-infaas-role": "app", "x-infaas-app": app}


def upload(model_bytes: bytes, validation_bytes: bytes, **meta: Any) -> dict[str, Any]:
    metadata = {"name": "m1", "app": "a1", "task": "classification", **meta}
    import orjson

    return {
        "files": {
            "file": ("model.onnx", model_bytes, "application/octet-stream"),
            "validation": ("val.npz", validation_bytes, "application/octet-stream"),
        },
        "data": {"metadata": orjson.dumps(metadata).decode()},
    }
