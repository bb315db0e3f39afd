"""Open Inference Protocol v2 at the gateway, driven by the official Triton client (`tritonclient[http]`).

Answers are compared with ONNX Runtime run directly on the artifact of the variant the system chose.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import numpy as np
import onnxruntime as ort
import orjson
import pytest
import tritonclient.http as triton
from tritonclient.http.auth import BasicAuth
from tritonclient.utils import InferenceServerException, np_to_triton_dtype

from infaas_cli.demo_models import DemoModel
from tests.e2e.conftest import RunningSuite

pytestmark = pytest.mark.e2e


@pytest.fixture
def client(running: RunningSuite) -> Iterator[triton.InferenceServerClient]:
    c = triton.InferenceServerClient(url=running.url.removeprefix("http://"), network_timeout=60)
    yield c
    c.close()


def auth(key: str) -> dict[str, str]:
    # A fresh dict per call: tritonclient's infer() adds Inference-Header-Content-Length to the dict it is
    # given, so a reused one would carry a stale header length into the next (JSON-only) request.
    return {"Authorization": f"Bearer {key}"}


def variants(running: RunningSuite, key: str) -> dict[str, dict[str, Any]]:
    with running.client(key) as http:
        return {v["id"]: v for m in ("small", "cnn") for v in http.get(f"/v1/models/{m}/variants").json()}


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


def rows(model: DemoModel, start: int, count: int) -> np.ndarray:
    return np.ascontiguousarray(np.load(model.validation_path)["x"][start : start + count], dtype=np.float32)


def tensor(x: np.ndarray, *, binary: bool) -> triton.InferInput:
    inp = triton.InferInput("x", list(x.shape), np_to_triton_dtype(x.dtype))
    inp.set_data_from_numpy(x, binary_data=binary)
    return inp


def server_error(call: Any) -> InferenceServerException:
    with pytest.raises(InferenceServerException) as info:
        call()
    return info.value


def test_health_server_and_model_metadata(
    running: RunningSuite, shop: dict[str, str], client: triton.InferenceServerClient
) -> None:
    assert client.is_server_live() and client.is_server_ready()  # probes need no key
    server = client.get_server_metadata()
    assert server["name"] == "infaas" and "binary_tensor_data" in server["extensions"]

    key = auth(shop["key"])
    meta = client.get_model_metadata("small", headers=key)
    assert meta["platform"] == "onnxruntime_onnx" and meta["parameters"]["kind"] == "model"
    assert meta["inputs"] == [{"name": "x", "datatype": "FP32", "shape": [-1, 64]}]
    assert meta["outputs"] == [{"name": "probabilities", "datatype": "FP32", "shape": [-1, 10]}]
    app = client.get_model_metadata("shop", headers=key)
    assert app["parameters"]["kind"] == "app" and set(app["parameters"]["models"]) == {"small", "cnn"}
    assert app["inputs"] == meta["inputs"]
    assert client.is_model_ready("small", headers=key) and client.is_model_ready("shop", headers=key)
    assert not client.is_model_ready("no-such-model", headers=key)
    empty = running.admin.post("/v1/apps", json={"name": "empty-shop"})
    assert empty.status_code == 201, empty.text
    not_ready = running.admin.get("/v2/models/empty-shop/ready")  # an app with no model: false, not a 5xx
    assert not_ready.status_code == 400 and not_ready.json()["code"] == "not_ready", not_ready.text

    missing = server_error(lambda: client.get_model_metadata("no-such-model", headers=key))
    assert missing.status() == "404" and "no model or app named 'no-such-model'" in missing.message()
    assert server_error(lambda: client.get_model_metadata("small")).status() == "401"
    other = server_error(lambda: client.get_model_metadata("small", headers=auth(shop["other"])))
    assert other.status() == "403" and "another app" in other.message()


def test_named_model_query_with_json_tensors_matches_onnx_runtime(
    running: RunningSuite, shop: dict[str, str], client: triton.InferenceServerClient, small_model: DemoModel
) -> None:
    x = rows(small_model, 200, 5)
    out = triton.InferRequestedOutput("probabilities", binary_data=False)
    result = client.infer(
        "small",
        [tensor(x, binary=False)],
        outputs=[out],
        headers=auth(shop["key"]),
        request_id="q-json",
        parameters={"content_type": "np"},  # MLServer clients' codec hint: accepted, and without effect
    )
    response = result.get_response()
    assert response["model_name"] == "small" and response["id"] == "q-json"
    assert "data" in response["outputs"][0]  # JSON, as asked
    params = response["parameters"]
    chosen = variants(running, shop["key"])[params["variant"]]
    assert params["model"] == "small" and chosen["model"] == "small"
    assert params["hardware"] == "cpu" and params["worker"].startswith("cpu-") and params["reason"]
    assert params["total_ms"] >= params["compute_ms"] > 0 and params["cached"] is False
    assert "slo_met" not in params  # no SLO was asked for
    probabilities = result.as_numpy("probabilities")
    assert probabilities.dtype == np.float32 and probabilities.shape == (5, 10)
    np.testing.assert_allclose(probabilities, variant_outputs(running, chosen, x), rtol=1e-5, atol=1e-6)


def test_model_less_query_on_an_app_with_binary_tensors_and_requirements(
    running: RunningSuite, shop: dict[str, str], client: triton.InferenceServerClient, small_model: DemoModel
) -> None:
    x = rows(small_model, 300, 7)
    # tritonclient's defaults: binary inputs, and every output as binary data.
    result = client.infer(
        "shop",
        [tensor(x, binary=True)],
        headers=auth(shop["key"]),
        parameters={"latency_ms": 50, "min_accuracy": 0.99},
    )
    response = result.get_response()
    assert response["model_name"] == "shop"
    assert response["outputs"][0]["parameters"]["binary_data_size"] == 7 * 10 * 4
    params = response["parameters"]
    chosen = variants(running, shop["key"])[params["variant"]]
    # Only the CNN reaches 0.99 on the validation set.
    assert params["model"] == "cnn" and chosen["accuracy"] >= 0.99
    assert isinstance(params["slo_met"], bool)
    np.testing.assert_allclose(
        result.as_numpy("probabilities"), variant_outputs(running, chosen, x), rtol=1e-5, atol=1e-6
    )

    # The same query again is a prediction-cache hit, and says so.
    again = client.infer(
        "shop",
        [tensor(x, binary=True)],
        headers=auth(shop["key"]),
        parameters={"latency_ms": 50, "min_accuracy": 0.99},
    )
    assert again.get_response()["parameters"]["cached"] is True
    np.testing.assert_array_equal(again.as_numpy("probabilities"), result.as_numpy("probabilities"))


def test_large_batches_fit_as_binary_where_json_is_too_large(
    running: RunningSuite, shop: dict[str, str], client: triton.InferenceServerClient
) -> None:
    # 1,000 rows: 256,000 bytes as binary, under the suite's 256 KiB body limit; as JSON text, far over it.
    x = np.random.default_rng(7).random((1000, 64), dtype=np.float32) * 16
    binary = client.infer("small", [tensor(x, binary=True)], headers=auth(shop["key"]))
    chosen = variants(running, shop["key"])[binary.get_response()["parameters"]["variant"]]
    np.testing.assert_allclose(
        binary.as_numpy("probabilities"), variant_outputs(running, chosen, x), rtol=1e-5, atol=1e-6
    )
    too_large = server_error(
        lambda: client.infer("small", [tensor(x, binary=False)], headers=auth(shop["key"]))
    )
    assert too_large.status() == "413" and "larger than" in too_large.message()
    # Compressed bodies (tritonclient's request_compression_algorithm) are inflated on arrival.
    head = np.ascontiguousarray(x[:100])
    gzipped = client.infer(
        "small", [tensor(head, binary=False)], headers=auth(shop["key"]), request_compression_algorithm="gzip"
    )
    chosen = variants(running, shop["key"])[gzipped.get_response()["parameters"]["variant"]]
    np.testing.assert_allclose(
        gzipped.as_numpy("probabilities"), variant_outputs(running, chosen, head), rtol=1e-5, atol=1e-6
    )


def test_keys_may_come_as_http_basic_credentials(
    running: RunningSuite, shop: dict[str, str], small_model: DemoModel
) -> None:
    client = triton.InferenceServerClient(url=running.url.removeprefix("http://"))
    try:
        client.register_plugin(BasicAuth("infaas", shop["key"]))
        result = client.infer("small", [tensor(rows(small_model, 400, 1), binary=True)])
        assert result.as_numpy("probabilities").shape == (1, 10)
        client.unregister_plugin()
        client.register_plugin(BasicAuth("infaas", "not-a-key"))
        assert server_error(lambda: client.get_model_metadata("small")).status() == "401"
    finally:
        client.close()


def test_bad_queries_are_refused_with_the_protocols_error_shape(
    running: RunningSuite, shop: dict[str, str], client: triton.InferenceServerClient, small_model: DemoModel
) -> None:
    x = rows(small_model, 500, 2)
    cases: list[tuple[str, list[triton.InferInput], dict[str, Any] | None, str, str]] = [
        ("small", [tensor(x.astype(np.float64), binary=True)], None, "422", "must hold float32"),
        ("small", [tensor(x[:, :63].copy(), binary=False)], None, "422", "must have shape"),
        (
            "shop",
            [tensor(x, binary=True)],
            {"latency_ms": 0.0001, "min_accuracy": 0.999},
            "422",
            "no variant",
        ),
        ("shop", [tensor(x, binary=True)], {"latency": 20}, "422", "unknown request parameters"),
        ("shop", [tensor(x, binary=True)], {"max_cost": 0}, "422", "cost <= $0"),  # every variant costs
        ("shop", [tensor(x, binary=True)], {"max_cost": -1}, "422", "max_cost must be a number >= 0"),
        ("shop", [tensor(x, binary=True)], {"variant": "x"}, "422", "named-model query only"),
        ("small", [tensor(x, binary=True)], {"min_accuracy": 2}, "422", "min_accuracy"),
        ("nobody", [tensor(x, binary=True)], None, "404", "no model, app or pipeline named 'nobody'"),
    ]
    for target, inputs, params, status, message in cases:
        error = server_error(
            lambda t=target, i=inputs, p=params: client.infer(t, i, headers=auth(shop["key"]), parameters=p)
        )
        assert error.status() == status, (target, params, error.message())
        assert message in error.message(), (message, error.message())
    wrong_output = server_error(
        lambda: client.infer(
            "small",
            [tensor(x, binary=True)],
            outputs=[triton.InferRequestedOutput("logits")],
            headers=auth(shop["key"]),
        )
    )
    assert wrong_output.status() == "400" and "unknown outputs ['logits']" in wrong_output.message()

    # Framing errors, sent by hand: the protocol's `{"error": "<message>"}` with our code beside it.
    head = orjson.dumps(
        {
            "inputs": [
                {"name": "x", "shape": [1, 64], "datatype": "FP32", "parameters": {"binary_data_size": 256}}
            ]
        }
    )
    with running.client(shop["key"]) as http:
        short = http.post(
            "/v2/models/small/infer",
            content=head + b"\0" * 100,
            headers={"Inference-Header-Content-Length": str(len(head))},
        )
        assert short.status_code == 400
        assert short.json()["error"] == "input 'x': binary data ends before its binary_data_size"
        assert short.json()["code"] == "bad_request"
        bad_json = http.post("/v2/models/small/infer", content=b"{")
        assert bad_json.status_code == 400 and isinstance(bad_json.json()["error"], str)
        unmet = http.post(
            "/v2/models/shop/infer",
            json={
                "inputs": [{"name": "x", "shape": [1, 64], "datatype": "FP32", "data": x[0].tolist()}],
                "parameters": {"latency_ms": 0.0001, "min_accuracy": 0.999},
            },
        ).json()
        assert unmet["code"] == "requirements_unmet" and "closest" in unmet["details"]
    with httpx.Client(base_url=running.url) as anonymous:
        missing = anonymous.post("/v2/models/small/infer", content=head)
        assert missing.status_code == 401 and "API key" in missing.json()["error"]
