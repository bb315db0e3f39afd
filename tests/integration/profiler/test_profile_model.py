"""Profiling a registered model end to end inside one process: real registry app on Postgres and Redis,
real ONNX Runtime measurements, results in Postgres and in the metadata store."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import onnxruntime as ort
import pytest
import redis
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from infaas import store
from infaas.artifacts import LocalArtifactStore
from infaas.clients.registry import RegistryClient
from infaas.config import Settings
from infaas.demo_models import DemoModel
from services.profiler import service
from services.registry.app import create_app
from services.registry.deps import _session
from tests.integration.registry.conftest import ADMIN, upload


@pytest.fixture
def registry(settings: Settings, db_session: Session) -> Iterator[TestClient]:
    app = create_app(settings)
    app.dependency_overrides[_session] = lambda: (yield db_session)
    with TestClient(app) as client:
        yield client


def test_profiling_generates_measures_and_publishes_variants(
    registry: TestClient, settings: Settings, small_model: DemoModel, redis_client: redis.Redis
) -> None:
    assert registry.post("/v1/apps", json={"name": "a1"}, headers=ADMIN).status_code == 201
    files = upload(small_model.onnx_path.read_bytes(), small_model.validation_path.read_bytes())
    accepted = registry.post("/v1/models", headers=ADMIN, **files)
    assert accepted.status_code == 202
    model_id = registry.get("/internal/models/by-name/m1").json()["id"]

    reports = service.profile_model(
        model_id,
        registry=RegistryClient("", http=registry),
        artifacts=LocalArtifactStore(settings.resolved_artifact_dir),
        settings=settings,
    )
    assert len(reports) == 8  # max batch {1,4,16,64} × threads {1,2} on this 2-core machine
    assert all(r.status == "ready" for r in reports)

    model = registry.get("/v1/models/m1", headers=ADMIN).json()
    assert model["status"] == "ready"
    assert model["progress"] == {"total": 8, "pending": 0, "profiling": 0, "ready": 8, "failed": 0}

    # Accuracy is measured on the validation set, not copied: compare with ONNX Runtime directly.
    data = np.load(small_model.validation_path)
    session = ort.InferenceSession(str(small_model.onnx_path), providers=["CPUExecutionProvider"])
    expected = float((session.run(None, {"x": data["x"]})[0].argmax(axis=1) == data["y"]).mean())

    variants = registry.get("/v1/models/m1/variants", headers=ADMIN).json()
    assert {v["max_batch"] for v in variants} == {1, 4, 16, 64}
    assert {v["threads"] for v in variants} == {1, 2}
    for v in variants:
        assert v["accuracy"] == pytest.approx(expected, abs=1e-6)
        batches = [p["batch"] for p in v["latency"]]
        assert batches == [b for b in (1, 2, 4, 8, 16, 32, 64) if b <= v["max_batch"]]
        assert all(0 < p["p50_ms"] <= p["p99_ms"] for p in v["latency"])
        assert v["saturation_qps"] > 0 and v["load_ms"] > 0 and v["peak_memory_bytes"] > 0
        best = max(p["batch"] * 1000 / p["p50_ms"] for p in v["latency"])
        assert v["saturation_qps"] == pytest.approx(best, rel=1e-3)

    # The metadata store holds every variant, and its latency index orders them as the profiles do.
    by_latency = store.model_variants_by(redis_client, "m1", "latency")
    assert sorted(by_latency) == sorted(v["id"] for v in variants)
    p50_at_1 = {v["id"]: v["latency"][0]["p50_ms"] for v in variants}
    assert [p50_at_1[i] for i in by_latency] == sorted(p50_at_1.values())
    assert [v["id"] for v in variants] == by_latency  # the API lists them in the same order
    assert redis_client.scard(store.app_variants_key("a1")) == 8
