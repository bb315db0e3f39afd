"""Registering a regression model through the registry on real Postgres: accepted with its task, and
refused with a 422 (nothing stored) for constant targets or an output that does not fit them."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session

from infaas.core.config import Settings
from infaas.data.db import ModelRow
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
