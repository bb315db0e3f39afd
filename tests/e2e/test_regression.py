"""A regression model served end to end (tests/diabetes.py): registered, profiled with R² as its
accuracy, answered as ONNX Runtime answers, and kept apart from a classifier with the same input in
its app's model-less queries."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import numpy as np
import onnxruntime as ort
import orjson
import pytest

from tests.diabetes import diabetes_models, r2
from tests.e2e.conftest import RunningSuite

pytestmark = pytest.mark.e2e

APP = "diabetes-clinic"
TASKS = {"diabetes": "regression", "diabetes-high": "classification"}


@pytest.fixture(scope="module")
def clinic(running: RunningSuite, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """App `diabetes-clinic` with the regression model and the same-input classifier, both profiled."""
    created = running.admin.post("/v1/apps", json={"name": APP})
    assert created.status_code == 201, created.text
    key = created.json()["api_key"]
    files = diabetes_models(tmp_path_factory.mktemp("diabetes"))
    with running.client(key) as client:
        for name, (onnx_path, npz_path) in files.items():
            response = client.post(
                "/v1/models",
                files={
                    "file": ("m.onnx", onnx_path.read_bytes()),
                    "validation": ("v.npz", npz_path.read_bytes()),
                },
                data={"metadata": orjson.dumps({"name": name, "app": APP, "task": TASKS[name]}).decode()},
            )
            assert response.status_code == 202, response.text
    for name in files:
        assert running.wait_ready(name)["status"] == "ready"
    return {"key": key, "files": files}


def ort_outputs(onnx_path: Path, x: np.ndarray) -> np.ndarray:
    session = ort.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
    return np.asarray(session.run(None, {"features": x})[0])


def post(running: RunningSuite, key: str, path: str, body: dict[str, Any]) -> httpx.Response:
    with running.client(key) as client:
        return client.post(path, json=body)


def test_a_regression_models_accuracy_is_its_r2(running: RunningSuite, clinic: dict[str, Any]) -> None:
    onnx_path, npz_path = clinic["files"]["diabetes"]
    data = np.load(npz_path, allow_pickle=False)
    expected = r2(ort_outputs(onnx_path, data["x"]), data["y"])
    assert 0.3 < expected < 1.0
    model = running.admin.get("/v1/models/diabetes").json()
    assert model["task"] == "regression"
    variants = running.admin.get("/v1/models/diabetes/variants", params={"status": "ready"}).json()
    assert variants and all(0.0 <= v["accuracy"] <= 1.0 for v in variants)
    fp32 = [v for v in variants if v["precision"] == "fp32" and v["hardware"] == "cpu"]
    assert fp32, [v["id"] for v in variants]
    for v in fp32:
        assert v["accuracy"] == pytest.approx(expected, abs=1e-3), v["id"]
    assert model["reference_accuracy"] == pytest.approx(expected, abs=1e-3)


def test_a_named_query_answers_as_onnx_runtime(running: RunningSuite, clinic: dict[str, Any]) -> None:
    onnx_path, npz_path = clinic["files"]["diabetes"]
    x = np.load(npz_path, allow_pickle=False)["x"][:5]
    variants = running.admin.get("/v1/models/diabetes/variants", params={"status": "ready"}).json()
    fp32 = next(v["id"] for v in variants if v["precision"] == "fp32" and v["hardware"] == "cpu")
    body = {"inputs": {"features": x.tolist()}, "variant": fp32}
    answer = post(running, clinic["key"], "/v1/models/diabetes/infer", body)
    assert answer.status_code == 200, answer.text
    got = np.asarray(answer.json()["outputs"]["prediction"], dtype=np.float32)
    assert got.shape == (5, 1)
    np.testing.assert_allclose(got, ort_outputs(onnx_path, x), rtol=1e-5, atol=1e-4)


def test_model_less_queries_go_only_to_the_stated_task(running: RunningSuite, clinic: dict[str, Any]) -> None:
    x = np.load(clinic["files"]["diabetes"][1], allow_pickle=False)["x"][:3]
    path = f"/v1/apps/{APP}/infer"
    rows = {"inputs": {"features": x.tolist()}}
    ambiguous = post(running, clinic["key"], path, rows)
    assert ambiguous.status_code == 422, ambiguous.text
    assert ambiguous.json()["error"]["tasks"] == ["classification", "regression"]
    for _ in range(3):  # more than once: no answer may come from the other task's model
        regression = post(running, clinic["key"], path, {**rows, "task": "regression"})
        assert regression.status_code == 200, regression.text
        assert regression.json()["model"] == "diabetes"
        assert np.asarray(regression.json()["outputs"]["prediction"]).shape == (3, 1)
        classification = post(running, clinic["key"], path, {**rows, "task": "classification"})
        assert classification.status_code == 200, classification.text
        assert classification.json()["model"] == "diabetes-high"
        assert np.asarray(classification.json()["outputs"]["logits"]).shape == (3, 2)
    oip = post(
        running,
        clinic["key"],
        f"/v2/models/{APP}/infer",
        {
            "parameters": {"task": "regression"},
            "inputs": [
                {"name": "features", "shape": [3, 10], "datatype": "FP32", "data": x.ravel().tolist()}
            ],
        },
    )
    assert oip.status_code == 200, oip.text
    assert oip.json()["model_name"] == APP and [o["name"] for o in oip.json()["outputs"]] == ["prediction"]
