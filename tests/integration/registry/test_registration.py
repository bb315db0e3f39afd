"""Apps, keys and model registration against real Postgres and Redis."""

from __future__ import annotations

import hashlib
import io
from pathlib import Path

import numpy as np
import onnx
import orjson
import redis
from fastapi.testclient import TestClient
from onnx import TensorProto, helper
from sqlalchemy import select
from sqlalchemy.orm import Session

from infaas.core.config import Settings
from infaas.core.credentials import internal_headers
from infaas.data.db import ApiKeyRow, AppRow, ModelRow
from infaas_cli.demo_models import DemoModel
from tests.integration.registry.conftest import ADMIN, app_headers, upload


def make_app(registry: TestClient, name: str = "a1") -> str:
    response = registry.post("/v1/apps", json={"name": name}, headers=ADMIN)
    assert response.status_code == 201, response.text
    key: str = response.json()["api_key"]
    return key


def artifact_files(settings: Settings) -> list[Path]:
    root = settings.resolved_artifact_dir
    return [p for p in root.rglob("*") if p.is_file()] if root.exists() else []


def test_app_key_is_returned_once_and_stored_hashed(registry: TestClient, db_session: Session) -> None:
    key = make_app(registry)
    rows = db_session.scalars(select(ApiKeyRow).where(ApiKeyRow.role == "app")).all()
    assert len(rows) == 1
    assert rows[0].key_hash == hashlib.sha256(key.encode()).hexdigest()
    assert key not in {rows[0].key_hash, rows[0].prefix}
    shown = registry.get("/v1/apps/a1", headers=ADMIN).json()
    assert "api_key" not in shown
    # Listed by prefix only: enough to tell keys apart, never enough to use one.
    assert [(k["prefix"], k["role"]) for k in shown["keys"]] == [(key[:8], "app")]
    assert [a["keys"][0]["prefix"] for a in registry.get("/v1/apps", headers=ADMIN).json()] == [key[:8]]

    verified = registry.post("/internal/keys/verify", json={"key": key})
    assert verified.json() == {"role": "app", "app": "a1"}
    assert registry.post("/internal/keys/verify", json={"key": key + "x"}).status_code == 401
    admin = registry.post("/internal/keys/verify", json={"key": "adm_integration_test_key"})
    assert admin.json()["role"] == "admin"


def test_apps_need_admin_and_unique_names(registry: TestClient) -> None:
    make_app(registry)
    duplicate = registry.post("/v1/apps", json={"name": "a1"}, headers=ADMIN)
    assert duplicate.status_code == 409
    assert duplicate.json()["error"]["code"] == "conflict"
    assert registry.post("/v1/apps", json={"name": "a2"}, headers=app_headers("a1")).status_code == 403
    assert registry.post("/v1/apps", json={"name": "a2"}).status_code == 401
    assert registry.post("/v1/apps", json={"name": "Bad Name"}, headers=ADMIN).status_code == 422


def test_register_model_records_signature_and_enqueues_profiling(
    registry: TestClient, small_model: DemoModel, redis_client: redis.Redis, db_session: Session
) -> None:
    make_app(registry)
    response = registry.post(
        "/v1/models",
        headers=app_headers("a1"),
        **upload(small_model.onnx_path.read_bytes(), small_model.validation_path.read_bytes()),
    )
    assert response.status_code == 202, response.text
    body = response.json()
    assert body["status"] == "registered"
    assert body["status_url"] == "/v1/models/m1"
    assert body["signature"]["inputs"] == [{"name": "x", "dtype": "float32", "shape": [None, 64]}]
    assert body["signature"]["outputs"][0]["shape"] == [None, 10]
    assert body["validation_rows"] == len(np.load(small_model.validation_path)["y"])

    # The profiling task sits in the real broker's profile.cpu queue, by name, JSON-encoded.
    messages = redis_client.lrange("profile.cpu", 0, -1)
    assert len(messages) == 1
    message = orjson.loads(messages[0])
    assert message["headers"]["task"] == "infaas.profile_model"
    row = db_session.scalars(select(ModelRow)).one()
    assert message["headers"]["argsrepr"] == f"[{row.id}, 1]"  # the model and its profiling attempt
    assert registry.get("/v1/models/m1", headers=app_headers("a1")).json()["status"] == "registered"


def test_model_ownership(registry: TestClient, small_model: DemoModel) -> None:
    make_app(registry, "a1")
    make_app(registry, "a2")
    files = upload(small_model.onnx_path.read_bytes(), small_model.validation_path.read_bytes())
    assert registry.post("/v1/models", headers=app_headers("a2"), **files).status_code == 403
    unknown = upload(small_model.onnx_path.read_bytes(), small_model.validation_path.read_bytes(), app="zz")
    assert registry.post("/v1/models", headers=ADMIN, **unknown).status_code == 404
    assert registry.post("/v1/models", headers=app_headers("a1"), **files).status_code == 202
    assert registry.get("/v1/models/m1", headers=app_headers("a2")).status_code == 403
    assert registry.get("/v1/models/nope", headers=app_headers("a1")).status_code == 404
    assert registry.post("/v1/models", headers=app_headers("a1"), **files).status_code == 409
    assert [m["name"] for m in registry.get("/v1/models", headers=app_headers("a2")).json()] == []


def _bad_checker_model() -> bytes:
    # Parses as ONNX but references an input that does not exist: the checker must refuse it.
    node = helper.make_node("Relu", ["missing"], ["y"])
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 64])],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


def _npz(**arrays: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **arrays)  # type: ignore[arg-type]
    return buf.getvalue()


def _bomb(*, rows: int, width: int) -> bytes:
    """A compressed .npz of zeros: ~100 KB that would expand to ~100 MB."""
    buf = io.BytesIO()
    np.savez_compressed(buf, x=np.zeros((rows, width), np.float32), y=np.zeros(rows, np.int64))
    return buf.getvalue()


def test_bad_files_are_rejected_and_leave_nothing(
    registry: TestClient,
    small_model: DemoModel,
    settings: Settings,
    db_session: Session,
    redis_client: redis.Redis,
) -> None:
    make_app(registry)
    good_model = small_model.onnx_path.read_bytes()
    good_val = small_model.validation_path.read_bytes()
    x = np.load(small_model.validation_path)["x"]
    cases = {
        "garbage model": (b"\x00\x01not an onnx model" * 50, good_val),
        "checker failure": (_bad_checker_model(), good_val),
        "truncated model": (good_model[: len(good_model) // 2], good_val),
        "pickle in validation": (good_model, _npz(x=np.array([object()], dtype=object), y=np.arange(1))),
        "no labels": (good_model, _npz(x=x)),
        "wrong validation shape": (good_model, _npz(x=x[:, :10], y=np.zeros(len(x), dtype=np.int64))),
        "validation not npz": (good_model, b"hello"),
        "float labels": (good_model, _npz(x=x, y=np.zeros(len(x)))),
        "zip bomb validation": (good_model, _bomb(rows=400_000, width=x.shape[1])),
    }
    for label, (model_bytes, val_bytes) in cases.items():
        response = registry.post("/v1/models", headers=app_headers("a1"), **upload(model_bytes, val_bytes))
        assert response.status_code == 422, (label, response.text)
        assert response.json()["error"]["code"] in {"invalid_model", "invalid_input"}, label
    assert db_session.scalars(select(ModelRow)).all() == []
    assert artifact_files(settings) == []
    assert redis_client.llen("profile.cpu") == 0


def test_oversized_upload_is_413(settings: Settings, db_session: Session, small_model: DemoModel) -> None:
    from fastapi.testclient import TestClient

    from services.registry.app import create_app
    from services.registry.deps import _session

    app = create_app(settings.model_copy(update={"max_model_bytes": 1000}))
    app.dependency_overrides[_session] = lambda: (yield db_session)
    with TestClient(app, headers=internal_headers(settings.internal_key)) as client:
        make_app(client)
        files = upload(small_model.onnx_path.read_bytes(), small_model.validation_path.read_bytes())
        response = client.post("/v1/models", headers=app_headers("a1"), **files)
    assert response.status_code == 413
    assert db_session.scalars(select(ModelRow)).all() == []


def test_broker_down_registers_nothing(
    settings: Settings, db_session: Session, small_model: DemoModel
) -> None:
    from celery import Celery

    from services.registry.app import CeleryProfileQueue, create_app
    from services.registry.deps import _session

    app = create_app(settings)
    app.dependency_overrides[_session] = lambda: (yield db_session)
    with TestClient(app, headers=internal_headers(settings.internal_key)) as client:
        # A real Celery producer whose broker refuses connections (nothing listens on port 1).
        dead = Celery("dead", broker="redis://127.0.0.1:1/0")
        dead.conf.broker_connection_timeout = 0.2
        app.state.profile_queue = CeleryProfileQueue(dead)
        make_app(client)
        files = upload(small_model.onnx_path.read_bytes(), small_model.validation_path.read_bytes())
        response = client.post("/v1/models", headers=app_headers("a1"), **files)
    assert response.status_code == 503, response.text
    assert db_session.scalars(select(ModelRow)).all() == []
    assert artifact_files(settings) == []


def test_apps_listing_is_scoped(registry: TestClient, db_session: Session) -> None:
    make_app(registry, "a1")
    make_app(registry, "a2")
    assert [a["name"] for a in registry.get("/v1/apps", headers=ADMIN).json()] == ["a1", "a2"]
    assert [a["name"] for a in registry.get("/v1/apps", headers=app_headers("a2")).json()] == ["a2"]
    assert registry.get("/v1/apps/a1", headers=app_headers("a2")).status_code == 403
    assert registry.get("/v1/apps/zz", headers=ADMIN).status_code == 404
    assert len(db_session.scalars(select(AppRow)).all()) == 2


def test_onnx_checker_model_is_really_invalid() -> None:
    # Guard for the fixture above: if ONNX ever accepted it, the rejection test would prove nothing.
    import pytest

    with pytest.raises(onnx.checker.ValidationError):
        onnx.checker.check_model(onnx.load_model_from_string(_bad_checker_model()), full_check=True)


def test_delete_model_removes_rows_store_entries_and_artifacts(
    registry: TestClient,
    small_model: DemoModel,
    settings: Settings,
    db_session: Session,
    redis_client: redis.Redis,
) -> None:
    from infaas.data import store
    from infaas.schemas.api import VariantReport

    make_app(registry)
    files = upload(small_model.onnx_path.read_bytes(), small_model.validation_path.read_bytes())
    assert registry.post("/v1/models", headers=app_headers("a1"), **files).status_code == 202
    model = db_session.scalars(select(ModelRow)).one()
    report = VariantReport(
        id="m1.v",
        runtime="onnxruntime",
        optimization="basic",
        precision="fp32",
        hardware="cpu",
        max_batch=1,
        threads=1,
        artifact_digest=model.artifact_digest,
        status="ready",
        accuracy=0.9,
        load_ms=1.0,
        latency=[{"batch": 1, "p50_ms": 0.1, "p99_ms": 0.2}],
        saturation_qps=10.0,
        peak_memory_bytes=1000,
    )
    put = registry.put(f"/internal/models/{model.id}/variants", json=[report.model_dump(mode="json")])
    assert put.status_code == 204
    assert registry.get("/v1/models/m1", headers=ADMIN).json()["status"] == "ready"
    assert store.model_variants_by(redis_client, "m1", "latency") == ["m1.v"]
    assert len(artifact_files(settings)) == 2  # the model and its validation set

    assert registry.delete("/v1/models/m1", headers=app_headers("a2")).status_code == 403
    assert registry.delete("/v1/models/m1", headers=app_headers("a1")).status_code == 204
    assert registry.get("/v1/models/m1", headers=ADMIN).status_code == 404
    assert store.model_variants_by(redis_client, "m1", "latency") == []
    assert not redis_client.exists(store.variant_key("m1.v"))
    assert artifact_files(settings) == []


def test_ids_beyond_the_database_integers_are_refused_not_a_database_error(registry: TestClient) -> None:
    """Row ids and chunk indexes are 32-bit in Postgres: a larger one in an internal path is a 422."""
    for path in (
        f"/internal/models/{2**40}",
        f"/internal/models/{2**63}/variants",
        "/internal/models/0",
        f"/internal/jobs/j1/chunks/{2**40}",
    ):
        response = registry.get(path)
        assert response.status_code == 422, (path, response.text)
        assert response.json()["error"]["code"] == "invalid_request"
    assert registry.get(f"/internal/models/{2**31 - 1}").status_code == 404
