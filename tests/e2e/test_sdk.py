"""The generated Python SDK (`sdk/python`, package `infaas_client`) against the running suite: create an
app, register a model, wait for profiling, list variants and query — every call through the SDK."""

from __future__ import annotations

import contextlib
import io
import time
from typing import Any

import httpx
import numpy as np
import pytest
from infaas_client import AuthenticatedClient, Client
from infaas_client.api.default import (
    create_app,
    get_app,
    get_model,
    infer_app,
    infer_model,
    list_models,
    list_variants,
    register_model,
    update_app,
)
from infaas_client.api.oip import v2_infer, v2_live, v2_model_metadata, v2_model_ready
from infaas_client.models import (
    AppCreate,
    AppCreated,
    AppCreateSloPolicy,
    AppUpdate,
    BodyRegisterModel,
    ErrorBody,
    ErrorResponse,
    InferenceRequest,
    InferenceRequestParameters,
    InferenceResponse,
    InferRequest,
    InferResponse,
    Model,
    ModelAccepted,
    ModelMetadata,
    ModelReady,
    ModelStatus,
    RequestInput,
    RequestInputDatatype,
    Variant,
)
from infaas_client.types import File

from infaas.runtimes.onnx_runtime import OnnxRuntime
from infaas_cli.demo_models import DemoModel
from tests.e2e.conftest import RunningSuite

pytestmark = pytest.mark.e2e


def sdk(running: RunningSuite, key: str) -> AuthenticatedClient:
    return AuthenticatedClient(base_url=running.url, token=key, timeout=httpx.Timeout(60))


def artifact_outputs(running: RunningSuite, variant: Variant, x: np.ndarray) -> np.ndarray:
    path = running.settings.resolved_artifact_dir / variant.artifact_digest[:2] / variant.artifact_digest
    # With the worker's own session settings (threads, graph optimizations): a quantized variant's outputs
    # are steps of 1/255, and another summation order can land a value one step away.
    engine = OnnxRuntime(path, threads=variant.threads, optimization=variant.optimization)
    engine.load()
    step = variant.max_batch  # in chunks, as the worker runs a query larger than the variant's max batch
    return np.concatenate(
        [next(iter(engine.run({"x": x[i : i + step]}).values())) for i in range(0, len(x), step)]
    )


def wait_ready(client: AuthenticatedClient, name: str, timeout_s: float = 300) -> Model:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        model = get_model.sync(name, client=client)
        assert isinstance(model, Model), model
        if model.status in (ModelStatus.READY, ModelStatus.FAILED):
            return model
        time.sleep(0.5)
    raise AssertionError(f"{name} was not profiled in {timeout_s} s")


def test_register_and_query_through_the_generated_sdk(running: RunningSuite, small_model: DemoModel) -> None:
    with contextlib.ExitStack() as clients:
        admin = clients.enter_context(sdk(running, running.settings.admin_key))
        register_and_query(running, small_model, admin, clients)


def register_and_query(
    running: RunningSuite, small_model: DemoModel, admin: AuthenticatedClient, clients: contextlib.ExitStack
) -> None:
    created = create_app.sync(
        client=admin, body=AppCreate(name="sdk-app", slo_policy=AppCreateSloPolicy.BEST_EFFORT)
    )
    assert isinstance(created, AppCreated) and created.api_key
    app = clients.enter_context(sdk(running, created.api_key))

    accepted = register_model.sync(
        client=app,
        body=BodyRegisterModel(
            file=File(payload=io.BytesIO(small_model.onnx_path.read_bytes()), file_name="m.onnx"),
            validation=File(payload=io.BytesIO(small_model.validation_path.read_bytes()), file_name="v.npz"),
            metadata='{"name": "sdk-small", "app": "sdk-app", "task": "classification"}',
        ),
    )
    assert isinstance(accepted, ModelAccepted) and accepted.status.value == "registered"
    # Profiling takes seconds: right after registering, the protocol's readiness says "not yet" (400, the
    # protocol's 4xx for false).
    not_yet = v2_model_ready.sync_detailed("sdk-small", client=app)
    still_profiling = get_model.sync("sdk-small", client=app)
    assert isinstance(still_profiling, Model)
    assert not_yet.status_code == 400 or still_profiling.status == ModelStatus.READY
    model = wait_ready(app, "sdk-small")
    ready = v2_model_ready.sync("sdk-small", client=app)
    assert isinstance(ready, ModelReady) and ready.ready
    assert model.status == ModelStatus.READY, model.status_reason
    assert [t.name for t in model.signature.inputs] == ["x"]
    listed = list_models.sync(client=app)
    assert isinstance(listed, list) and [m.name for m in listed] == ["sdk-small"]  # only this app's
    found = get_app.sync("sdk-app", client=app)
    assert not isinstance(found, ErrorBody) and found is not None and found.models == ["sdk-small"]

    variants = list_variants.sync("sdk-small", client=app, hardware="cpu")
    assert isinstance(variants, list) and variants and all(isinstance(v, Variant) for v in variants)
    by_id = {v.id: v for v in variants}

    x = np.load(small_model.validation_path)["x"][440:444].astype(np.float32)
    named = infer_model.sync("sdk-small", client=app, body=InferRequest(inputs=x.tolist()))
    assert isinstance(named, InferResponse) and named.model == "sdk-small"
    np.testing.assert_allclose(
        np.asarray(named.outputs["probabilities"]),
        artifact_outputs(running, by_id[named.variant], x),
        rtol=1e-5,
        atol=1e-6,
    )
    model_less = infer_app.sync(
        "sdk-app", client=app, body=InferRequest(inputs=x[:2].tolist(), latency_ms=100, min_accuracy=0.5)
    )
    assert isinstance(model_less, InferResponse) and model_less.variant in by_id
    assert by_id[model_less.variant].accuracy is not None and by_id[model_less.variant].accuracy >= 0.5
    assert isinstance(model_less.slo_met, bool) and model_less.latency_ms.total > 0

    updated = update_app.sync("sdk-app", client=app, body=AppUpdate(default_latency_ms=250))
    assert not isinstance(updated, ErrorBody) and updated is not None and updated.default_latency_ms == 250

    # Open Inference Protocol through the same SDK.
    assert v2_live.sync(client=clients.enter_context(Client(base_url=running.url))) is not None
    meta = v2_model_metadata.sync("sdk-small", client=app)
    assert isinstance(meta, ModelMetadata) and meta.inputs[0].shape == [-1, 64]
    v2 = v2_infer.sync(
        "sdk-app",
        client=app,
        body=InferenceRequest(
            inputs=[
                RequestInput(
                    name="x", shape=[2, 64], datatype=RequestInputDatatype.FP32, data=x[2:].ravel().tolist()
                )
            ],
            parameters=InferenceRequestParameters(min_accuracy=0.5),
        ),
    )
    assert isinstance(v2, InferenceResponse) and v2.parameters.model == "sdk-small"
    out: Any = v2.outputs[0]
    np.testing.assert_allclose(
        np.asarray(out.data, dtype=np.float32).reshape(out.shape),
        artifact_outputs(running, by_id[v2.parameters.variant], x[2:]),
        rtol=1e-5,
        atol=1e-6,
    )


def test_errors_come_back_as_typed_error_bodies(running: RunningSuite) -> None:
    with sdk(running, running.settings.admin_key) as admin, Client(base_url=running.url) as anonymous_client:
        typed_errors(admin, anonymous_client)


def typed_errors(admin: AuthenticatedClient, anonymous_client: Client) -> None:
    missing = get_model.sync("no-such-model", client=admin)
    assert isinstance(missing, ErrorBody) and missing.error.code == "not_found"
    invalid = create_app.sync(client=admin, body=AppCreate(name="Bad Name!"))
    assert isinstance(invalid, ErrorBody) and invalid.error.code == "invalid_request"
    anonymous = get_model.sync_detailed("no-such-model", client=anonymous_client)
    assert anonymous.status_code == 401 and isinstance(anonymous.parsed, ErrorBody)
    v2_missing = v2_model_metadata.sync("no-such-model", client=admin)
    assert isinstance(v2_missing, ErrorResponse) and "no-such-model" in v2_missing.error
