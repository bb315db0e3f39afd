"""Generating and profiling a registered model inside one process: the real registry app on Postgres and
Redis, real variant generators (graph optimizations, int8 dynamic and static, GPU forms), real ONNX
Runtime measurements, results in Postgres and in the metadata store."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import onnxruntime as ort
import pytest
import redis
from fastapi.testclient import TestClient

from infaas.clients.profiler import ProfileLease, take_lease
from infaas.clients.registry import RegistryClient
from infaas.core.config import Settings
from infaas.data import store
from infaas.data.artifacts import LocalArtifactStore
from infaas_cli.demo_models import DemoModel
from services.profiler import service
from tests.integration.registry.conftest import ADMIN, upload

# How far a variant's outputs (class probabilities) may stray from the original model's.
TOLERANCE = {"fp32": 1e-5, "int8-dynamic": 0.15, "int8-static": 0.25}


@pytest.fixture
def profiled(registry: TestClient, settings: Settings, demo_models: list[DemoModel]) -> dict[str, Any]:
    """The CNN (convolutions exercise every generator) registered and profiled; no GPU profiler live."""
    cnn = demo_models[2]
    assert registry.post("/v1/apps", json={"name": "a1"}, headers=ADMIN).status_code == 201
    files = upload(cnn.onnx_path.read_bytes(), cnn.validation_path.read_bytes())
    assert registry.post("/v1/models", headers=ADMIN, **files).status_code == 202
    model_id = registry.get("/internal/models/by-name/m1").json()["id"]
    dispatched: list[tuple[int, str]] = []
    reports = service.profile_model(
        model_id,
        registry=RegistryClient("", internal_key="", http=registry),
        artifacts=LocalArtifactStore(settings.resolved_artifact_dir),
        settings=settings,
        live_kinds=lambda: set(),
        dispatch=lambda m, k: dispatched.append((m, k)),
    )
    return {"model": cnn, "reports": reports, "dispatched": dispatched}


LEVELS = {
    "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
    "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
    "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
}


def run(path: str, x: np.ndarray, optimization: str = "all") -> np.ndarray:
    options = ort.SessionOptions()
    options.graph_optimization_level = LEVELS[optimization]
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    return np.asarray(session.run(None, {"x": x})[0])


def test_generated_variants_are_measured_and_agree_with_the_original(
    registry: TestClient, settings: Settings, profiled: dict[str, Any]
) -> None:
    cnn: DemoModel = profiled["model"]
    data = np.load(cnn.validation_path)
    x, y = data["x"], data["y"]
    original = run(str(cnn.onnx_path), x)
    parent_accuracy = float((original.argmax(axis=1) == y).mean())

    model = registry.get("/v1/models/m1", headers=ADMIN).json()
    assert model["status"] == "ready", model
    variants = registry.get("/v1/models/m1/variants", headers=ADMIN).json()
    cpu = [v for v in variants if v["hardware"] == "cpu"]
    # 3 graph optimization levels + int8 dynamic + int8 static, × max batch {1,4,16,64} × threads {1,2}.
    assert len(cpu) == 40 and all(v["status"] == "ready" for v in cpu)
    assert {(v["optimization"], v["precision"]) for v in cpu} == {
        ("basic", "fp32"),
        ("extended", "fp32"),
        ("all", "fp32"),
        ("basic", "int8-dynamic"),
        ("basic", "int8-static"),
    }
    artifacts = LocalArtifactStore(settings.resolved_artifact_dir)
    for digest in {v["artifact_digest"] for v in cpu}:
        group = [v for v in cpu if v["artifact_digest"] == digest]
        precision = group[0]["precision"]
        outputs = run(str(artifacts.path(digest)), x)
        assert np.abs(outputs - original).max() <= TOLERANCE[precision], precision
        # Accuracy is what the validation set gives for this very artifact — not copied from the parent.
        # Measured as the profiler does: at the variant's graph optimization level (ORT's `all` level
        # fuses QDQ pairs, which changes int8-static numerics) and in chunks of 64 rows (int8-dynamic
        # scales depend on which rows share a run).
        (level,) = {v["optimization"] for v in group}
        path = str(artifacts.path(digest))
        chunked = np.concatenate([run(path, x[i : i + 64], level) for i in range(0, len(x), 64)])
        measured = float((chunked.argmax(axis=1) == y).mean())
        for v in group:
            assert v["accuracy"] == pytest.approx(measured, abs=1e-6), (v["id"], precision)
        if precision == "fp32":
            assert measured == pytest.approx(parent_accuracy, abs=1e-6)

    for v in cpu:
        assert [p["batch"] for p in v["latency"]] == [
            b for b in (1, 2, 4, 8, 16, 32, 64) if b <= v["max_batch"]
        ]
        assert all(0 < p["p50_ms"] <= p["p99_ms"] for p in v["latency"])
        assert [c["concurrency"] for c in v["interference"]] == [1, 2]  # 2 cores here
        assert all(c["qps"] > 0 and c["mean_ms"] > 0 and c["requests"] >= 10 for c in v["interference"])
        assert v["cost_per_s"] == pytest.approx(v["threads"] * 0.048 / 3600)
        assert v["cost_per_query"] == pytest.approx(v["cost_per_s"] / v["saturation_qps"])


def test_gpu_variants_wait_with_a_reason_when_no_gpu_profiler_is_live(
    registry: TestClient, profiled: dict[str, Any]
) -> None:
    pending = registry.get("/v1/models/m1/variants", params={"hardware": "cuda"}, headers=ADMIN).json()
    assert pending, "CUDA (fp32, fp16) and TensorRT variants are generated even without a GPU"
    assert {v["precision"] for v in pending} >= {"fp32", "fp16"}
    for v in pending:
        assert v["status"] == "pending"
        assert "no profiler worker with cuda hardware" in v["status_reason"]
    assert profiled["dispatched"] == []
    kinds = {k["kind"]: k for k in registry.get("/v1/hardware", headers=ADMIN).json()}
    assert kinds["cpu"]["available"] is False or kinds["cpu"]["workers"] >= 0
    assert kinds["cuda"]["available"] is False and kinds["cuda"]["reason"]
    assert kinds["neuron"]["available"] is False and kinds["neuron"]["reason"]


@pytest.mark.usefixtures("profiled")
def test_metadata_store_order_matches_the_profiles(registry: TestClient, redis_client: redis.Redis) -> None:
    ready = [
        v for v in registry.get("/v1/models/m1/variants", headers=ADMIN).json() if v["status"] == "ready"
    ]
    by_id = {v["id"]: v for v in ready}
    for index, value in (
        ("latency", lambda v: v["latency"][0]["p50_ms"]),
        ("accuracy", lambda v: v["accuracy"]),
        ("cost", lambda v: v["cost_per_query"]),
    ):
        order = store.model_variants_by(redis_client, "m1", index)
        assert sorted(order) == sorted(by_id), index
        values = [value(by_id[i]) for i in order]
        assert values == sorted(values), index
    assert redis_client.scard(store.app_variants_key("a1")) == len(ready)
    # Dominated variants are marked, kept in the store, and carry the flag selection skips.
    dominated = [v for v in ready if v["dominated"]]
    assert dominated and len(dominated) < len(ready)


@pytest.mark.usefixtures("profiled")
def test_variant_listing_filters_and_sorts(registry: TestClient) -> None:
    get = lambda **params: registry.get("/v1/models/m1/variants", params=params, headers=ADMIN).json()  # noqa: E731
    by_cost = get(status="ready", sort="cost")
    costs = [v["cost_per_query"] for v in by_cost]
    assert costs == sorted(costs)
    by_accuracy = get(status="ready", sort="accuracy", descending=True)
    assert [v["accuracy"] for v in by_accuracy] == sorted((v["accuracy"] for v in by_accuracy), reverse=True)
    at_16 = get(status="ready", batch=16, sort="latency")

    def at16(v: dict[str, Any]) -> float:
        if v["max_batch"] >= 16:
            return float(next(p["p50_ms"] for p in v["latency"] if p["batch"] >= 16))
        return -(-16 // v["max_batch"]) * float(v["latency"][-1]["p50_ms"])  # whole batches back to back

    lat16 = [at16(v) for v in at_16]
    assert lat16 == sorted(lat16)
    int8 = get(precision="int8-static")
    assert int8 and {v["precision"] for v in int8} == {"int8-static"}
    assert all(not v["dominated"] for v in get(include_dominated=False))
    fast = get(status="ready", max_latency_ms=0.2, min_accuracy=0.9)
    assert all(v["latency"][0]["p50_ms"] <= 0.2 and v["accuracy"] >= 0.9 for v in fast)
    assert (
        registry.get("/v1/models/m1/variants", params={"sort": "nonsense"}, headers=ADMIN).status_code == 422
    )


@pytest.mark.usefixtures("profiled")
def test_reprofiling_regenerates_the_same_variants(
    registry: TestClient, settings: Settings, redis_client: redis.Redis
) -> None:
    before = {v["id"]: v for v in registry.get("/v1/models/m1/variants", headers=ADMIN).json()}
    again = registry.post("/v1/models/m1/profile", headers=ADMIN)
    assert again.status_code == 202 and again.json()["status"] == "profiling"
    model_id = registry.get("/internal/models/by-name/m1").json()["id"]
    # A profiler at work on the new attempt (2) holds its lease: one profile at a time.
    lease = ProfileLease(
        model_id=model_id, hardware="cpu", worker="profiler-cpu@it", attempt=2, since=time.time()
    )
    assert take_lease(redis_client, lease, ttl_s=30) is None
    busy = registry.post("/v1/models/m1/profile", headers=ADMIN)
    assert busy.status_code == 409 and "being profiled by profiler-cpu@it" in busy.text
    assert redis_client.llen("profile.cpu") == 2  # registration's task and the re-profile

    service.profile_model(
        model_id,
        registry=RegistryClient("", internal_key="", http=registry),
        artifacts=LocalArtifactStore(settings.resolved_artifact_dir),
        settings=settings,
        live_kinds=lambda: set(),
        dispatch=lambda _m, _k: None,
    )
    assert registry.get("/v1/models/m1", headers=ADMIN).json()["status"] == "ready"
    after = {v["id"]: v for v in registry.get("/v1/models/m1/variants", headers=ADMIN).json()}
    assert after.keys() == before.keys()
    for vid, v in after.items():
        # Generation is deterministic (same bytes) and accuracy is a property of those bytes.
        assert v["artifact_digest"] == before[vid]["artifact_digest"], vid
        assert v["accuracy"] == before[vid]["accuracy"], vid
