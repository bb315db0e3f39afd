"""Parity models (ParM) end to end inside the registry and a profiler's training job: an app turns parity
on (PATCH), the training is queued on the profiler's CPU queue in Redis, the job trains a real parity model
of the deployed digits MLP on its validation set, reports progress and its degraded-mode accuracy, and the
exported ONNX parity model reconstructs the deployed model's outputs under ONNX Runtime."""

from __future__ import annotations

import base64
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import orjson
import redis
from fastapi.testclient import TestClient
from onnx import TensorProto, helper, numpy_helper

from infaas.clients.profiler import TRAIN_PARITY, profile_queue
from infaas.clients.registry import RegistryClient
from infaas.core.config import Settings
from infaas.data.artifacts import LocalArtifactStore
from infaas.policy.parity import decode, encode
from infaas_cli.demo_models import DemoModel
from services.profiler import parity_job
from tests.integration.registry.conftest import ADMIN, upload

# Stated degraded-mode accuracy at k=2 after the default 1,500 steps on the 405 validation rows not held
# out (the paper: within 6.5 points of the deployed model with far more training data). Measured 0.86-0.91
# against the deployed model's 0.98 on the 134 held-out rows (docs/benchmarks.md).
MIN_DEGRADED_ACCURACY = 0.80


def queued_parity_tasks(r: redis.Redis) -> list[list[int]]:
    """The args of every parity training waiting in the CPU profiler's queue."""
    out = []
    for raw in r.lrange(profile_queue("cpu"), 0, -1):
        message = orjson.loads(raw)
        if message["headers"]["task"] == TRAIN_PARITY:
            body = orjson.loads(base64.b64decode(message["body"]))
            out.append(body[0])
    return out


def test_parity_trained_by_the_job_reconstructs_the_deployed_models_outputs(
    registry: TestClient, settings: Settings, redis_client: redis.Redis, demo_models: list[DemoModel]
) -> None:
    mlp = demo_models[1]
    assert registry.post("/v1/apps", json={"name": "a1"}, headers=ADMIN).status_code == 201
    files = upload(mlp.onnx_path.read_bytes(), mlp.validation_path.read_bytes())
    assert registry.post("/v1/models", headers=ADMIN, **files).status_code == 202
    assert registry.get("/v1/models/m1/parity", headers=ADMIN).status_code == 404  # parity is opt-in

    answer = registry.patch("/v1/apps/a1", json={"redundancy": {"kind": "parity", "k": 2}}, headers=ADMIN)
    assert answer.status_code == 200, answer.text
    assert answer.json()["redundancy"] == {"kind": "parity", "k": 2}
    status = registry.get("/v1/models/m1/parity", headers=ADMIN).json()
    assert (status["state"], status["k"], status["generation"]) == ("queued", 2, 1)
    model_id = registry.get("/internal/models/by-name/m1").json()["id"]
    assert queued_parity_tasks(redis_client) == [[model_id, 2, 1]]
    # Asking again for the same k queues nothing more: the training is under way.
    registry.patch("/v1/apps/a1", json={"redundancy": {"kind": "parity", "k": 2}}, headers=ADMIN)
    assert queued_parity_tasks(redis_client) == [[model_id, 2, 1]]

    artifacts = LocalArtifactStore(settings.resolved_artifact_dir)
    report = parity_job.train_for_model(
        model_id,
        2,
        1,
        registry=RegistryClient("", internal_key="", http=registry),
        artifacts=artifacts,
        settings=settings,
    )
    assert report.state == "ready", report.reason
    status = registry.get("/v1/models/m1/parity", headers=ADMIN).json()
    assert status["state"] == "ready" and status["steps_done"] == status["steps_total"] == 1500
    losses = [loss for _, loss in status["losses"]]
    assert len(losses) == 30 and losses[-1] < losses[0] / 10
    assert status["metric"] == "accuracy" and status["holdout_rows"] == 134
    assert status["degraded_score"] >= MIN_DEGRADED_ACCURACY
    assert status["deployed_score"] - status["degraded_score"] <= 0.15

    # The artifact served: the deployed graph with new weights and no final softmax, run by ONNX Runtime.
    parity_bytes = artifacts.get(status["artifact_digest"])
    deployed, parity = onnx.load(str(mlp.onnx_path)), onnx.load_model_from_string(parity_bytes)
    assert [n.op_type for n in parity.graph.node] == [
        "Identity" if n.op_type == "Softmax" else n.op_type for n in deployed.graph.node
    ]
    x = np.load(mlp.validation_path)["x"][:64]
    run_deployed = ort.InferenceSession(mlp.onnx_path.read_bytes(), providers=["CPUExecutionProvider"])
    run_parity = ort.InferenceSession(parity_bytes, providers=["CPUExecutionProvider"])
    outputs = run_deployed.run(None, {"x": x})[0]
    # Groups of two queries of 32 rows each (a query is a batch): the first member reconstructed.
    parity_out = run_parity.run(None, {"x": encode([x[:32], x[32:]])})[0]
    rebuilt = decode(parity_out, [outputs[32:]])
    assert np.mean(np.argmax(rebuilt, axis=1) == np.argmax(outputs[:32], axis=1)) >= MIN_DEGRADED_ACCURACY

    # A report of a superseded training is refused; another k starts a new generation.
    registry.patch("/v1/apps/a1", json={"redundancy": {"kind": "parity", "k": 3}}, headers=ADMIN)
    stale = registry.put(f"/internal/models/{model_id}/parity", json={"generation": 1, "state": "training"})
    assert stale.status_code == 409
    assert registry.get("/v1/models/m1/parity", headers=ADMIN).json()["generation"] == 2
    assert not artifacts.exists(status["artifact_digest"])  # the k=2 parity model is gone with its k
    # A model registered into the app while parity is on gets its parity training queued at once.
    small = demo_models[0]
    files = upload(small.onnx_path.read_bytes(), small.validation_path.read_bytes(), name="m2")
    assert registry.post("/v1/models", headers=ADMIN, **files).status_code == 202
    assert registry.get("/v1/models/m2/parity", headers=ADMIN).json()["state"] == "queued"
    m2 = registry.get("/internal/models/by-name/m2").json()["id"]
    assert [m2, 3, 1] in queued_parity_tasks(redis_client)
    off = registry.patch("/v1/apps/a1", json={"redundancy": {"kind": "none"}}, headers=ADMIN)
    assert off.json()["redundancy"] == {"kind": "none", "k": None}
    # Deleting a model takes its parity model (and its artifact, once trained) with it.
    assert registry.delete("/v1/models/m1", headers=ADMIN).status_code == 204
    assert registry.get("/v1/models/m1/parity", headers=ADMIN).status_code == 404
    trained = parity_job.train_for_model(
        m2,
        3,
        1,
        registry=RegistryClient("", internal_key="", http=registry),
        artifacts=artifacts,
        settings=settings.model_copy(update={"parity_train_steps": 100}),
    )
    assert trained.state == "ready" and trained.artifact_digest and artifacts.exists(trained.artifact_digest)
    assert registry.delete("/v1/models/m2", headers=ADMIN).status_code == 204
    assert not artifacts.exists(trained.artifact_digest)


def two_input_model(directory: Path) -> tuple[bytes, bytes]:
    """A two-input classifier (features `a` and `b` concatenated): no single tensor to sum."""
    rng = np.random.default_rng(0)
    graph = helper.make_graph(
        [
            helper.make_node("Concat", ["a", "b"], ["ab"], axis=1),
            helper.make_node("MatMul", ["ab", "w"], ["y"]),
        ],
        "two",
        [
            helper.make_tensor_value_info("a", TensorProto.FLOAT, [None, 2]),
            helper.make_tensor_value_info("b", TensorProto.FLOAT, [None, 2]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 3])],
        initializer=[numpy_helper.from_array(rng.normal(size=(4, 3)).astype(np.float32), "w")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = directory / "v.npz"
    a, b = rng.normal(size=(20, 2)).astype(np.float32), rng.normal(size=(20, 2)).astype(np.float32)
    np.savez(path, a=a, b=b, y=rng.integers(0, 3, size=20))
    return model.SerializeToString(), path.read_bytes()


def test_parity_refused_with_reasons_and_nothing_changed(
    registry: TestClient, redis_client: redis.Redis, tmp_path: Path
) -> None:
    assert registry.post("/v1/apps", json={"name": "a2"}, headers=ADMIN).status_code == 201
    model, validation = two_input_model(tmp_path)
    files = upload(model, validation, name="two", app="a2")
    assert registry.post("/v1/models", headers=ADMIN, **files).status_code == 202

    refused = registry.patch("/v1/apps/a2", json={"redundancy": {"kind": "parity", "k": 2}}, headers=ADMIN)
    assert refused.status_code == 422
    error = refused.json()["error"]
    assert "two: 2 inputs" in error["message"] and "two" in error["models"]
    assert registry.get("/v1/apps/a2", headers=ADMIN).json()["redundancy"] == {"kind": "none", "k": None}
    assert queued_parity_tasks(redis_client) == []

    # An app with parity on takes no model that cannot have a parity model; nothing is stored.
    assert registry.post("/v1/apps", json={"name": "a3"}, headers=ADMIN).status_code == 201
    assert registry.patch(
        "/v1/apps/a3", json={"redundancy": {"kind": "parity", "k": 2}}, headers=ADMIN
    ).is_success
    files = upload(model, validation, name="two-b", app="a3")
    refused = registry.post("/v1/models", headers=ADMIN, **files)
    assert (
        refused.status_code == 422
        and "cannot have a parity model: 2 inputs" in refused.json()["error"]["message"]
    )
    assert registry.get("/v1/models/two-b", headers=ADMIN).status_code == 404

    for body in (
        {"kind": "parity"},  # no k
        {"kind": "parity", "k": 5},
        {"kind": "parity", "k": 1},
        {"kind": "none", "k": 2},
        {"kind": "replicas", "k": 2},
        None,
    ):
        answer = registry.patch("/v1/apps/a2", json={"redundancy": body}, headers=ADMIN)
        assert answer.status_code == 422, body
