"""The registry app in-process (real Postgres, real Redis, real Celery producer), one transaction per test."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from infaas.config import Settings
from services.registry.app import create_app
from services.registry.deps import _session

ADMIN = {"x-infaas-role": "admin"}


def app_headers(app: str) -> dict[str, str]:
    return {"x-infaas-role": "app", "x-infaas-app": app}


@pytest.fixture
def registry(settings: Settings, db_session: Session) -> Iterator[TestClient]:
    app = create_app(settings)

    def session_override() -> Iterator[Session]:
        yield db_session

    app.dependency_overrides[_session] = session_override
    with TestClient(app) as client:
        yield client


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
