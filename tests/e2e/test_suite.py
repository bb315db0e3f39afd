"""Register → profile → query through real processes: gateway, registry, scheduler, executor, planner,
and a Celery profiler worker."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort
import pytest

from infaas_cli.demo_models import DemoModel
from tests.e2e.conftest import RunningSuite

pytestmark = pytest.mark.e2e


def ort_outputs(model: DemoModel, x: np.ndarray) -> np.ndarray:
    session = ort.InferenceSession(str(model.onnx_path), providers=["CPUExecutionProvider"])
    return np.asarray(session.run(None, {"x": x})[0])


def variant_outputs(running: RunningSuite, variant: dict[str, Any], x: np.ndarray) -> np.ndarray:
    """The variant's artifact run directly, as its worker runs it: at the variant's graph optimization
    level (ORT's `all` fuses QDQ pairs, changing int8-static numbers) and in chunks of its max batch
    (dynamic quantization scales by the whole batch)."""
    digest = variant["artifact_digest"]
    path = running.settings.resolved_artifact_dir / digest[:2] / digest
    options = ort.SessionOptions()
    options.graph_optimization_level = {
        "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
        "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
    }.get(variant["optimization"], ort.GraphOptimizationLevel.ORT_ENABLE_ALL)
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    step = variant["max_batch"]
    return np.concatenate([session.run(None, {"x": x[i : i + step]})[0] for i in range(0, len(x), step)])


def artifact_files(running: RunningSuite) -> set[Path]:
    root = running.settings.resolved_artifact_dir
    return {p for p in root.rglob("*") if p.is_file()} if root.exists() else set()


def test_model_less_query_is_answered_by_a_variant_meeting_the_requirements(
    running: RunningSuite, shop: dict[str, str], demo_models: list[DemoModel]
) -> None:
    small, _, cnn = demo_models
    x = np.load(small.validation_path)["x"][:5]
    with running.client(shop["key"]) as client:
        variants = {
            v["id"]: v for name in ("small", "cnn") for v in client.get(f"/v1/models/{name}/variants").json()
        }
        cpu = [v for v in variants.values() if v["hardware"] == "cpu"]
        assert len(cpu) == 80 and all(v["status"] == "ready" for v in cpu)  # 2 models × 40
        gpu = [v for v in variants.values() if v["hardware"] != "cpu"]
        assert gpu and all(v["status"] == "pending" and v["status_reason"] for v in gpu)
        kinds = {k["kind"]: k for k in client.get("/v1/hardware").json()}
        assert kinds["cpu"]["available"] and kinds["cpu"]["workers"] == 2 and kinds["cpu"]["profilers"] == 1
        assert not kinds["cuda"]["available"] and "nvidia-smi" in kinds["cuda"]["reason"]

        answer = client.post(
            "/v1/apps/shop/infer", json={"inputs": x.tolist(), "latency_ms": 20, "min_accuracy": 0.9}
        )
        assert answer.status_code == 200, answer.text
        body = answer.json()
        chosen = variants[body["variant"]]
        assert chosen["accuracy"] >= 0.9
        assert next(p for p in chosen["latency"] if p["batch"] >= 5)["p99_ms"] <= 20
        # The answer is the chosen variant's real prediction: its own artifact, run directly.
        np.testing.assert_allclose(
            np.asarray(body["outputs"]["probabilities"]),
            variant_outputs(running, chosen, x),
            rtol=1e-5,
            atol=1e-6,
        )
        # …and the model's prediction: same classes as the registered model gives.
        original = ort_outputs(small if body["model"] == "small" else cnn, x)
        agree = (np.asarray(body["outputs"]["probabilities"]).argmax(1) == original.argmax(1)).mean()
        assert agree >= 0.8
        assert body["worker"].startswith("cpu-") and body["hardware"] == "cpu"
        assert set(body["latency_ms"]) == {"queue", "compute", "total"}
        assert body["latency_ms"]["total"] >= body["latency_ms"]["compute"] > 0
        assert isinstance(body["slo_met"], bool) and body["cached"] is False and body["reason"]

        # Only the CNN reaches 0.99 on the validation set: a stricter query must move to it.
        strict = client.post(
            "/v1/apps/shop/infer", json={"inputs": x.tolist(), "latency_ms": 50, "min_accuracy": 0.99}
        ).json()
        assert strict["model"] == "cnn" and variants[strict["variant"]]["accuracy"] >= 0.99
        np.testing.assert_allclose(
            np.asarray(strict["outputs"]["probabilities"]),
            variant_outputs(running, variants[strict["variant"]], x),
            rtol=1e-5,
            atol=1e-6,
        )

        named = client.post("/v1/models/small/infer", json={"inputs": x[:1].tolist()})
        assert named.status_code == 200 and named.json()["model"] == "small"
        assert named.json()["slo_met"] is None  # no SLO was asked for

        unmet = client.post(
            "/v1/apps/shop/infer", json={"inputs": x.tolist(), "latency_ms": 0.0001, "min_accuracy": 0.999}
        )
        assert unmet.status_code == 422
        error = unmet.json()["error"]
        assert error["code"] == "requirements_unmet"
        best = max(v["accuracy"] for v in cpu)
        assert error["closest"]["best_accuracy"] == pytest.approx(best, abs=1e-4)
        # Whichever requirement no variant meets, the refusal names real numbers: the fastest
        # variant's latency and accuracy, the most accurate one's accuracy and latency.
        for asked, unmet_names in (
            ({"latency_ms": 0.0001, "min_accuracy": 0.999}, ["latency", "accuracy"]),
            ({"latency_ms": 0.0001}, ["latency"]),
            ({"min_accuracy": 0.999}, ["accuracy"]),
        ):
            refused = client.post("/v1/apps/shop/infer", json={"inputs": x.tolist(), **asked})
            assert refused.status_code == 422, refused.text
            closest = refused.json()["error"]["closest"]
            assert closest["unmet"] == unmet_names
            assert closest["most_accurate"]["accuracy"] == pytest.approx(best, abs=1e-4)
            for end in ("fastest", "most_accurate"):
                assert closest[end]["variant"] in variants
                assert closest[end]["latency_ms"] > 0 and closest[end]["accuracy"] > 0
            assert "None" not in refused.json()["error"]["message"]

    workers = running.admin.get("/v1/workers").json()
    assert len(workers) == 2 and all(w["live"] and w["cores"] >= 1 for w in workers)  # two executors
    assert "active" in [state for w in workers for state in w["instances"].values()]


def test_gateway_rejects_bad_requests_before_queueing(running: RunningSuite, shop: dict[str, str]) -> None:
    row = [0.0] * 64
    with running.client(None) as anonymous:
        assert anonymous.post("/v1/apps/shop/infer", json={"inputs": [row]}).status_code == 401
    with running.client("not-a-key") as wrong:
        assert wrong.post("/v1/apps/shop/infer", json={"inputs": [row]}).status_code == 401
    with running.client(shop["other"]) as other:
        forbidden = other.post("/v1/apps/shop/infer", json={"inputs": [row]})
        assert forbidden.status_code == 403 and forbidden.json()["error"]["code"] == "forbidden"
        assert other.post("/v1/models/small/infer", json={"inputs": [row]}).status_code == 403
    with running.client(shop["key"]) as client:
        assert client.post("/v1/apps/nope/infer", json={"inputs": [row]}).status_code == 404
        assert client.post("/v1/models/nope/infer", json={"inputs": [row]}).status_code == 404
        for bad in (
            {"inputs": [[0.0] * 63]},
            {"inputs": [["a"] * 64]},
            {"inputs": [row, row[:-1]]},
            {"inputs": []},
            {"inputs": [row], "latency_ms": -1},
            {"rows": [row]},
        ):
            response = client.post("/v1/apps/shop/infer", json=bad)
            assert response.status_code == 422, (bad, response.text)
            assert "error" in response.json()
        assert client.post("/v1/apps/shop/infer", content=b"{not json").status_code == 400
        huge = b'{"inputs": [[' + b"0.0," * 200_000 + b"0.0]]}"
        too_big = client.post("/v1/apps/shop/infer", content=huge)
        assert too_big.status_code == 413 and too_big.json()["error"]["code"] == "payload_too_large"

        def chunked() -> Iterator[bytes]:  # no Content-Length: refused once the bytes pass the limit
            for i in range(0, len(huge), 64 * 1024):
                yield huge[i : i + 64 * 1024]

        too_big = client.post("/v1/models/small/infer", content=chunked())
        assert too_big.status_code == 413 and too_big.json()["error"]["code"] == "payload_too_large"
        traced = client.post(
            "/v1/apps/shop/infer", json={"inputs": [row]}, headers={"X-Request-Id": "trace-42"}
        )
        assert traced.status_code == 200 and traced.headers["x-request-id"] == "trace-42"
        assert traced.json()["request_id"] == "trace-42"
        missing = client.post("/v1/apps/nope/infer", json={"inputs": [row]}, headers={"X-Request-Id": "t-43"})
        assert missing.headers["x-request-id"] == "t-43" and missing.json()["error"]["code"] == "not_found"


def test_corrupt_model_is_rejected_and_leaves_no_row_and_no_artifact(
    running: RunningSuite, shop: dict[str, str], small_model: DemoModel
) -> None:
    before = artifact_files(running)
    with running.client(shop["key"]) as client:
        corrupt = small_model.onnx_path.read_bytes()[:-200] + b"\xff" * 200
        response = client.post(
            "/v1/models",
            files={
                "file": ("m.onnx", corrupt),
                "validation": ("v.npz", small_model.validation_path.read_bytes()),
            },
            data={"metadata": '{"name": "broken", "app": "shop", "task": "classification"}'},
        )
        assert response.status_code == 422, response.text
        assert response.json()["error"]["code"] == "invalid_model"
        assert client.get("/v1/models/broken").status_code == 404
        assert "broken" not in [m["name"] for m in client.get("/v1/models").json()]
    assert artifact_files(running) == before


@pytest.mark.usefixtures("shop")  # queries have run, so the scheduler has decisions to count
def test_every_service_exposes_metrics_and_the_gateway_one_openapi(running: RunningSuite) -> None:
    import httpx

    settings = running.settings
    services = ["gateway", "registry", "executor", "planner", "profiler"]
    if settings.scheduler_mode == "remote":
        services.append("scheduler")
    for service in services:
        text = running.metrics(service)
        assert "infaas_" in text or "python_info" in text, service
    scheduler = running.scheduler_metrics()
    assert 'infaas_scheduler_decisions_total{action="active"}' in scheduler
    gateway = running.metrics("gateway")
    assert (
        'infaas_gateway_http_requests_total{code="200",method="POST",route="/v1/apps/{app}/infer"}' in gateway
    )
    spec = httpx.get(f"{running.url}/openapi.json").json()
    for path in (
        "/v1/apps",
        "/v1/models",
        "/v1/models/{name}/variants",
        "/v1/apps/{app}/infer",
        "/v1/models/{name}/infer",
        "/v1/workers",
        "/v1/hardware",
        "/v1/models/{name}/profile",
    ):
        assert path in spec["paths"], path
    assert "InferRequest" in spec["components"]["schemas"]
    assert "InferResponse" in spec["components"]["schemas"]
    assert not any(p.startswith("/internal") for p in spec["paths"])
