"""`GET /v1/models/{name}/variants/{id}/capacity`: SERF's predicted curves from a stored concurrency
profile, against real Postgres and Redis."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session

from infaas.data.db import ModelRow
from infaas.policy.serf import predict
from infaas.schemas.api import ConcurrencyPoint, VariantReport
from infaas_cli.demo_models import DemoModel
from tests.integration.registry.conftest import ADMIN, app_headers, upload

MEAN_MS = [4.0, 5.0, 6.5]


def _report(vid: str, digest: str, **over: object) -> VariantReport:
    fields: dict[str, object] = {
        "id": vid,
        "runtime": "onnxruntime",
        "optimization": "basic",
        "precision": "fp32",
        "hardware": "cpu",
        "max_batch": 1,
        "threads": 1,
        "artifact_digest": digest,
        "status": "ready",
        "accuracy": 0.9,
        "load_ms": 1.0,
        "latency": [{"batch": 1, "p50_ms": 3.9, "p99_ms": 4.5}],
        "saturation_qps": 250.0,
        "peak_memory_bytes": 1000,
        "interference": [
            ConcurrencyPoint(
                concurrency=i + 1, p50_ms=m, p99_ms=m * 1.2, qps=1000 * (i + 1) / m, mean_ms=m, requests=10
            )
            for i, m in enumerate(MEAN_MS)
        ],
    }
    return VariantReport.model_validate({**fields, **over})


@pytest.fixture
def profiled(registry: TestClient, small_model: DemoModel, db_session: Session) -> None:
    assert registry.post("/v1/apps", json={"name": "a1"}, headers=ADMIN).status_code == 201
    files = upload(small_model.onnx_path.read_bytes(), small_model.validation_path.read_bytes())
    assert registry.post("/v1/models", headers=app_headers("a1"), **files).status_code == 202
    model = db_session.scalars(select(ModelRow)).one()
    reports = [
        _report("m1.v", model.artifact_digest),
        _report("m1.pending", model.artifact_digest, status="pending", interference=None, latency=None),
    ]
    put = registry.put(
        f"/internal/models/{model.id}/variants", json=[r.model_dump(mode="json") for r in reports]
    )
    assert put.status_code == 204


@pytest.mark.usefixtures("profiled")
def test_curves_come_from_the_stored_rates(registry: TestClient) -> None:
    r = registry.get("/v1/models/m1/variants/m1.v/capacity?slo_ms=12&points=5", headers=app_headers("a1"))
    assert r.status_code == 200, r.text
    body = r.json()
    rates = [1000 / m for m in MEAN_MS]
    assert body["service_rates"] == pytest.approx(rates, rel=1e-4)
    assert [c["concurrency"] for c in body["configurations"]] == [1, 2, 3]
    assert [p["mean_ms"] for p in body["measured"]] == MEAN_MS
    for cfg in body["configurations"]:
        c = cfg["concurrency"]
        assert cfg["saturation_rps"] == pytest.approx(c * rates[c - 1], rel=1e-4)
        assert len(cfg["curve"]) == 5
        assert cfg["curve"][0]["latency_ms"] == pytest.approx(MEAN_MS[0])  # idle: a request runs alone
        last = cfg["curve"][-1]
        assert last["latency_ms"] == pytest.approx(
            predict(rates[:c], last["arrival_rps"]).latency_ms, rel=1e-3
        )
        assert predict(rates[:c], cfg["slo_rps"]).latency_ms <= 12.0
        assert cfg["cost_per_s"] == pytest.approx(c * 0.048 / 3600)
    assert body["best"] in (1, 2, 3)


@pytest.mark.usefixtures("profiled")
def test_unknown_unprofiled_and_bad_requests(registry: TestClient) -> None:
    h = app_headers("a1")
    missing = registry.get("/v1/models/nope/variants/m1.v/capacity", headers=h)
    assert missing.status_code == 404 and missing.json()["error"]["code"]
    assert registry.get("/v1/models/m1/variants/nope/capacity", headers=h).status_code == 404
    pending = registry.get("/v1/models/m1/variants/m1.pending/capacity", headers=h)
    assert pending.status_code == 409 and "concurrency profile" in pending.json()["error"]["message"]
    for bad in ("slo_ms=-1", "slo_ms=nan", "points=1", "points=x"):
        r = registry.get(f"/v1/models/m1/variants/m1.v/capacity?{bad}", headers=h)
        assert r.status_code == 422, (bad, r.text)
    assert registry.get("/v1/models/m1/variants/m1.v/capacity", headers=app_headers("a2")).status_code in (
        403,
        404,
    )
