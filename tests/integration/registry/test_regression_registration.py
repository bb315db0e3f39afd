"""Registering a regression model through the registry on real Postgres: accepted with its task, and
refused with a 422 (nothing stored) for constant targets or an output that does not fit them."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
from fastapi.testclient import TestClient
from onnx import TensorProto, helper, numpy_helper
from sqlalchemy import select
from sqlalchemy.orm import Session

from infaas.core.config import Settings
from infaas.data.db import ModelRow, PipelineRow
from tests.diabetes import diabetes_models
from tests.integration.registry.conftest import app_headers, upload
from tests.integration.registry.test_registration import artifact_files, make_app


def test_a_regression_model_is_registered_with_its_task(
    registry: TestClient, db_session: Session, tmp_path: Path
) -> None:
    make_app(registry)
    onnx_path, npz_path = diabetes_models(tmp_path)["diabetes"]
    response = registry.post(
        "/v1/models",
        headers=app_headers("a1"),
        **upload(onnx_path.read_bytes(), npz_path.read_bytes(), task="regression"),
    )
    assert response.status_code == 202, response.text
    body = response.json()
    assert body["task"] == "regression" and body["validation_rows"] == 142
    assert body["signature"]["outputs"] == [{"name": "prediction", "dtype": "float32", "shape": [None, 1]}]
    row = db_session.scalars(select(ModelRow).where(ModelRow.name == "m1")).one()
    assert row.task == "regression"


def test_bad_regression_uploads_are_a_422_and_store_nothing(
    registry: TestClient, db_session: Session, settings: Settings, tmp_path: Path
) -> None:
    make_app(registry)
    models = diabetes_models(tmp_path)
    onnx_path, npz_path = models["diabetes"]
    x = np.load(npz_path, allow_pickle=False)["x"]
    constant = io.BytesIO()
    np.savez(constant, x=x, y=np.full(len(x), 150.0))
    before = artifact_files(settings)
    cases = [
        (onnx_path.read_bytes(), constant.getvalue(), "constant"),
        (models["diabetes-high"][0].read_bytes(), npz_path.read_bytes(), "regression model must output"),
    ]
    for model_bytes, validation, message in cases:
        response = registry.post(
            "/v1/models", headers=app_headers("a1"), **upload(model_bytes, validation, task="regression")
        )
        assert response.status_code == 422, response.text
        assert message in response.json()["error"]["message"]
    assert db_session.scalars(select(ModelRow)).all() == []
    assert artifact_files(settings) == before


def triage_model() -> tuple[bytes, bytes]:
    """A classifier over one predicted value (input `value`, (batch, 1) float32 → 2 logits): the stage
    a regression model's prediction may feed."""
    w = numpy_helper.from_array(np.array([[0.02, -0.02]], dtype=np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["value", "w"], ["logits"])],
        "triage",
        [helper.make_tensor_value_info("value", TensorProto.FLOAT, [None, 1])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [None, 2])],
        initializer=[w],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    values = np.linspace(25, 346, 60, dtype=np.float32).reshape(-1, 1)
    validation = io.BytesIO()
    np.savez(validation, x=values, y=(values[:, 0] > 150).astype(np.int64))
    serialized: bytes = model.SerializeToString()
    return serialized, validation.getvalue()


def test_a_pipeline_may_feed_a_regression_stage_on_but_not_branch_on_its_classes(
    registry: TestClient, db_session: Session, tmp_path: Path
) -> None:
    make_app(registry)
    onnx_path, npz_path = diabetes_models(tmp_path)["diabetes"]
    for name, task, (model_bytes, validation) in (
        ("progression", "regression", (onnx_path.read_bytes(), npz_path.read_bytes())),
        ("triage", "classification", triage_model()),
    ):
        response = registry.post(
            "/v1/models",
            headers=app_headers("a1"),
            **upload(model_bytes, validation, name=name, task=task),
        )
        assert response.status_code == 202, response.text
    edge = {"source": "progression", "target": "triage", "inputs": {"value": "prediction"}}
    spec = {
        "name": "clinic",
        "app": "a1",
        "slo_ms": 80,
        "stages": [{"name": "progression", "model": "progression"}, {"name": "triage", "model": "triage"}],
    }
    branch = {**edge, "when": {"output": "prediction", "classes": [0]}}
    refused = registry.post("/v1/pipelines", json={**spec, "edges": [branch]}, headers=app_headers("a1"))
    assert refused.status_code == 422, refused.text
    error = refused.json()["error"]
    assert "needs a classification stage" in error["message"] and error["edge"] == ["progression", "triage"]
    assert db_session.scalars(select(PipelineRow)).all() == []
    created = registry.post("/v1/pipelines", json={**spec, "edges": [edge]}, headers=app_headers("a1"))
    assert created.status_code == 201, created.text
    assert created.json()["order"] == ["progression", "triage"]
