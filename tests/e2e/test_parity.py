"""Parity models through the whole suite: an app turns on `redundancy: parity`, the profiler worker (a
real Celery worker) trains a parity model of the app's model, and its progress, loss curve and
degraded-mode accuracy are served by the gateway. The model is unlike the demo models: an MLP on
scikit-learn's breast-cancer data (30 features as input `measurements`, 2 classes), its weights from
scikit-learn's MLPClassifier written as MatMul/Add/Relu/Softmax. An app whose model takes two inputs
(the wine model) is refused with the reason."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import orjson
import pytest
from onnx import TensorProto, helper, numpy_helper
from sklearn.datasets import load_breast_cancer
from sklearn.neural_network import MLPClassifier
from sklearn.preprocessing import StandardScaler

from tests.e2e.conftest import RunningSuite
from tests.e2e.wine import register_wine

pytestmark = pytest.mark.e2e

# Stated degraded-mode accuracy at k=2 after the job's default 1,500 steps on the 427 validation rows not
# held out: measured 0.84-0.88 on the 142 held-out rows, where the deployed model scores 0.98-1.0.
MIN_DEGRADED_ACCURACY = 0.80


def tumour_model(directory: Path) -> tuple[bytes, bytes]:
    """The breast-cancer MLP 30 -> 16 -> 2 with a softmax over standardized measurements, and its
    validation set (`x` standardized features, `y` labels)."""
    raw, y = load_breast_cancer(return_X_y=True)
    x = StandardScaler().fit_transform(raw)
    clf = MLPClassifier(hidden_layer_sizes=(16,), max_iter=600, random_state=0).fit(x, y)
    w1, b1 = clf.coefs_[0].astype(np.float32), clf.intercepts_[0].astype(np.float32)
    # MLPClassifier has one logistic output for two classes: as two logits, (0, z).
    w2 = np.concatenate([np.zeros_like(clf.coefs_[1]), clf.coefs_[1]], axis=1).astype(np.float32)
    b2 = np.array([0.0, clf.intercepts_[1][0]], dtype=np.float32)
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["measurements", "w1"], ["h"]),
            helper.make_node("Add", ["h", "b1"], ["hb"]),
            helper.make_node("Relu", ["hb"], ["r"]),
            helper.make_node("MatMul", ["r", "w2"], ["z"]),
            helper.make_node("Add", ["z", "b2"], ["logits"]),
            helper.make_node("Softmax", ["logits"], ["malignancy"], axis=1),
        ],
        "tumour",
        [helper.make_tensor_value_info("measurements", TensorProto.FLOAT, [None, 30])],
        [helper.make_tensor_value_info("malignancy", TensorProto.FLOAT, [None, 2])],
        initializer=[
            numpy_helper.from_array(a, n) for a, n in ((w1, "w1"), (b1, "b1"), (w2, "w2"), (b2, "b2"))
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    path = directory / "tumour.npz"
    np.savez(path, x=x.astype(np.float32), y=y.astype(np.int64))
    return model.SerializeToString(), path.read_bytes()


def wait_parity(running: RunningSuite, name: str, timeout_s: float = 300) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        status: dict[str, Any] = running.admin.get(f"/v1/models/{name}/parity").json()
        if status["state"] in ("ready", "failed"):
            return status
        time.sleep(0.5)
    raise AssertionError(f"the parity model of {name} was not trained within {timeout_s} s")


def test_parity_trained_by_the_profiler_worker_and_served(running: RunningSuite, tmp_path: Path) -> None:
    created = running.admin.post("/v1/apps", json={"name": "clinic"})
    assert created.status_code == 201, created.text
    model, validation = tumour_model(tmp_path)
    metadata = orjson.dumps({"name": "tumour", "app": "clinic", "task": "classification"}).decode()
    files = {"file": ("tumour.onnx", model), "validation": ("tumour.npz", validation)}
    assert running.admin.post("/v1/models", files=files, data={"metadata": metadata}).status_code == 202
    assert running.wait_ready("tumour")["status"] == "ready"
    assert running.admin.get("/v1/models/tumour/parity").status_code == 404

    with running.client(created.json()["api_key"]) as client:  # the app's own key may turn it on
        turned = client.patch("/v1/apps/clinic", json={"redundancy": {"kind": "parity", "k": 2}})
    assert turned.status_code == 200, turned.text
    assert turned.json()["redundancy"] == {"kind": "parity", "k": 2}
    status = wait_parity(running, "tumour")
    assert status["state"] == "ready", status["reason"]
    assert status["steps_done"] == status["steps_total"] > 0
    losses = [loss for _, loss in status["losses"]]
    assert losses[-1] < losses[0]
    assert status["metric"] == "accuracy" and status["holdout_rows"] >= 140
    assert status["degraded_score"] >= MIN_DEGRADED_ACCURACY, status
    assert len(status["artifact_digest"]) == 64


def test_parity_refused_for_a_two_input_model(running: RunningSuite, tmp_path: Path) -> None:
    created = running.admin.post("/v1/apps", json={"name": "vineyard"})
    assert created.status_code == 201, created.text
    with running.client(created.json()["api_key"]) as client:
        assert register_wine(client, tmp_path, app="vineyard", name="vineyard-wine").status_code == 202
        refused = client.patch("/v1/apps/vineyard", json={"redundancy": {"kind": "parity", "k": 3}})
    assert refused.status_code == 422
    error = refused.json()["error"]
    assert "vineyard-wine: 2 inputs" in error["message"], error
    assert running.admin.get("/v1/apps/vineyard").json()["redundancy"] == {"kind": "none", "k": None}
