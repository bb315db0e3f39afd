"""Open Inference Protocol v2 (KServe / Triton REST) over the same query path as `/v1`.

`{m}` in `/v2/models/{m}` is a model (a named-model query) or, when no model has that name, an app (a
model-less query: the requirements `latency_ms` and `min_accuracy` travel in the request's `parameters`).
Queries become the same `Query` as `/v1` (`gateway/dataplane/queries.py`) and go to the same
scheduler; its `Answer`'s arrays are rendered as OIP tensors, JSON or binary (the binary tensor
extension), with what the system did in the response's `parameters`. Errors use the protocol's shape
`{"error": "<message>"}` (plus our `code` and `details`) with the same status codes as `/v1`.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Annotated, Any

import httpx
import numpy as np
import orjson
from fastapi import APIRouter, Depends, Header, Request, Response

from gateway.dataplane import queries
from gateway.deps import AuthHeader, StateDep, client_address, state_of
from gateway.oip import codec as oip_codec
from gateway.oip import pipelines as oip_pipelines
from gateway.oip.errors import OipRoute, error_response
from gateway.oip.schemas import (
    ErrorResponse,
    InferenceResponse,
    ModelMetadata,
    ModelReady,
    ServerLive,
    ServerMetadata,
    ServerReady,
)
from gateway.state import GatewayState
from gateway.ttl_cache import TTLCache
from infaas.clients.base import principal_headers, raise_for_error, segment
from infaas.clients.envelope import OIP_PARAMETERS, Answer
from infaas.core.errors import BadRequest, InvalidInput, NotFound, Unavailable
from infaas.http.app import request_id
from infaas.schemas.api import NAME_PATTERN, AppInternal, ModelInternal, Principal
from infaas.schemas.pipelines import Pipeline
from infaas.wire.tensors import Signature, TensorSpec

HEADER_LENGTH = "Inference-Header-Content-Length"
EXTENSIONS = ["binary_tensor_data", "model_less_parameters"]
_NAME = re.compile(NAME_PATTERN)
_PLATFORMS = {
    "onnx": "onnxruntime_onnx",
    "torchscript": "pytorch_libtorch",
    "torch_export": "pytorch_libtorch",
}
# MLServer's clients tag requests with a codec hint; tensors are decoded by their datatype here.
_IGNORED_PARAMETERS = frozenset({"content_type"})


router = APIRouter(
    prefix="/v2",
    tags=["oip"],
    route_class=OipRoute,
    generate_unique_id_function=lambda route: f"v2_{route.name}",
)

_ERRORS: dict[int | str, dict[str, Any]] = {
    s: {"model": ErrorResponse, "description": d}
    for s, d in (
        (400, "malformed request or tensor"),
        (401, "missing or unknown API key"),
        (403, "the key belongs to another app"),
        (404, "unknown model or app"),
        (422, "the tensors do not fit the model, or no variant meets the requirements"),
    )
}
_INFER_ERRORS: dict[int | str, dict[str, Any]] = {
    **_ERRORS,
    **{
        s: {"model": ErrorResponse, "description": d}
        for s, d in (
            (413, "body too large"),
            (429, "the app has too many queries in flight (Retry-After)"),
            (503, "overloaded or a service is unreachable (Retry-After)"),
            (504, "the SLO passed (app policy `error`)"),
        )
    },
}
_INFER_OPENAPI: dict[str, Any] = {
    "requestBody": {
        "required": True,
        # One content type: generators handle one well. The binary tensor extension sends the same
        # JSON followed by the tensors' bytes (its length in `Inference-Header-Content-Length`).
        "description": f"JSON, or (binary tensor extension) JSON then the tensors' bytes in input order, "
        f"with the JSON's length in `{HEADER_LENGTH}`.",
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/InferenceRequest"}}},
    }
}


async def _caller(request: Request, authorization: AuthHeader = None) -> Principal:
    """Bearer keys as on `/v1`; also HTTP Basic (tritonclient's `BasicAuth` plugin) with the key as the
    password, or as the user name when the password is empty."""
    if authorization and authorization[:6].lower() == "basic ":
        try:
            user, _, password = (
                base64.b64decode(authorization[6:].strip(), validate=True).decode().partition(":")
            )
        except (binascii.Error, UnicodeDecodeError):
            user, password = "", ""
        authorization = f"Bearer {password or user}"
    return await state_of(request).auth.principal(authorization, client_address(request))


CallerDep = Annotated[Principal, Depends(_caller)]


async def _resolve(
    request: Request, principal: Principal, name: str
) -> tuple[ModelInternal | None, AppInternal]:
    """A model by that name, with its app; else the app by that name (model-less). 404 if neither."""
    if not _NAME.fullmatch(name):
        raise NotFound(f"no model or app named {name!r}")
    state = state_of(request)
    auth = state.auth
    kinds: TTLCache[bool] | None = getattr(request.app.state, "oip_kinds", None)
    if kinds is None:
        # Whether a name is a model, remembered like keys and apps: an app's queries would otherwise
        # ask the registry for a model of that name (and get a 404) every time.
        kinds = request.app.state.oip_kinds = TTLCache(state.settings.auth_cache_ttl_s)

    async def is_model() -> bool:
        try:
            await auth.models.get(name, lambda: state.registry.model_by_name(name))
        except NotFound:
            return False
        return True

    if await kinds.get(name, is_model):
        try:
            model = await auth.model(principal, name)
        except NotFound:
            pass  # deleted since: it may still be an app
        else:
            return model, await auth.app_of(model)
    try:
        return None, await auth.app(principal, name)
    except NotFound:
        raise NotFound(f"no model or app named {name!r}", name=name) from None


@router.get("/health/live", response_model=ServerLive, responses={})
async def live() -> ServerLive:
    """The gateway process is up (no key needed: this is a probe)."""
    return ServerLive(live=True)


@router.get("/health/ready", response_model=ServerReady, responses={503: {"model": ErrorResponse}})
async def ready(state: StateDep) -> ServerReady:
    """The gateway can reach the registry (to authenticate and route) and, when the scheduler runs as its
    own service, the scheduler (no key needed: this is a probe)."""
    services = {"registry": "/health"}
    if state.settings.scheduler_mode == "remote":
        services["scheduler"] = state.settings.service_url("scheduler").rstrip("/") + "/health"
    for service, url in services.items():
        try:
            response = await state.registry.http.get(url)  # an absolute URL leaves the registry's base
        except httpx.HTTPError as exc:
            raise Unavailable(
                f"the {service} is unreachable", service=service, reason=type(exc).__name__
            ) from exc
        if response.status_code != 200:
            raise Unavailable(f"the {service} is not healthy", service=service, status=response.status_code)
    return ServerReady(ready=True)


@router.get("", response_model=ServerMetadata)
async def server_metadata(request: Request) -> ServerMetadata:
    """Server name, version and the protocol extensions it supports."""
    return ServerMetadata(name="infaas", version=request.app.version, extensions=EXTENSIONS)


def _tensors(specs: tuple[TensorSpec, ...]) -> list[dict[str, Any]]:
    return [
        {
            "name": s.name,
            "datatype": oip_codec.datatype_of(s.dtype),
            "shape": [-1 if d is None else d for d in s.shape],
        }
        for s in specs
    ]


def _usable(app: AppInternal) -> list[ModelInternal]:
    return [m for m in app.models if m.status != "failed"]


@router.get("/models/{m}", response_model=ModelMetadata, responses=_ERRORS)
async def model_metadata(m: str, request: Request, principal: CallerDep) -> ModelMetadata:
    """A model's inputs and outputs; for an app, those of its models (the first one's when they differ)."""
    model, app = await _resolve(request, principal, m)
    if model is not None:
        sig = Signature.from_json(model.signature)
        platform = _PLATFORMS.get(model.format, model.format)
        params = {"kind": "model", "app": app.name, "models": [model.name], "status": model.status}
    else:
        usable = _usable(app)
        if not usable:
            raise NotFound(f"app {m!r} has no registered model", app=m)
        sig = Signature.from_json(usable[0].signature)
        platform = "infaas_modelless"
        status = "ready" if any(x.status == "ready" for x in usable) else usable[0].status
        params = {"kind": "app", "app": app.name, "models": [x.name for x in usable], "status": status}
    return ModelMetadata.model_validate(
        {
            "name": m,
            "platform": platform,
            "inputs": _tensors(sig.inputs),
            "outputs": _tensors(sig.outputs),
            "parameters": params,
        }
    )


@router.get(
    "/models/{m}/ready",
    response_model=ModelReady,
    responses={
        **_ERRORS,
        400: {"model": ErrorResponse, "description": "not ready (e.g. profiling, or no models)"},
    },
)
async def model_ready(m: str, request: Request, state: StateDep, principal: CallerDep) -> Response:
    """200 when the model (or, for an app, one of its models) has a ready variant; 400 while not — the
    protocol's "a 4xx status code indicating false" (as Triton answers), not a server error."""
    model, app = await _resolve(request, principal, m)
    # Ask the registry, not the cache: readiness must flip as soon as profiling ends.
    headers = principal_headers(principal)
    names = [model.name] if model is not None else [x.name for x in _usable(app)]
    statuses = {}
    for name in names:
        response = await state.registry.http.get(f"/v1/models/{segment(name)}", headers=headers)
        raise_for_error(response)
        statuses[name] = response.json()["status"]
    if "ready" in statuses.values():
        return Response(ModelReady(name=m, ready=True).model_dump_json(), media_type="application/json")
    return error_response(400, f"{m!r} is not ready: {statuses or 'no models'}", "not_ready", models=statuses)


@router.post(
    "/models/{m}/infer",
    response_model=InferenceResponse,
    responses=_INFER_ERRORS,
    openapi_extra=_INFER_OPENAPI,
)
async def infer(
    m: str,
    request: Request,
    state: StateDep,
    principal: CallerDep,
    header_length: Annotated[str | None, Header(alias=HEADER_LENGTH, include_in_schema=False)] = None,
) -> Response:
    """Inference on a model (named-model query) or an app (model-less query, requirements in
    `parameters`). Tensors in JSON or, with `Inference-Header-Content-Length`, as binary data."""
    pipeline: Pipeline | None = None
    try:
        model, app = await _resolve(request, principal, m)
    except NotFound:
        pipeline = await _pipeline(state, principal, m)  # a pipeline's name is its model name
    body = oip_codec.decompress(
        await request.body(), request.headers.get("content-encoding"), limit=state.settings.max_request_bytes
    )
    json_part, binary = oip_codec.split_body(body, header_length)
    req = oip_codec.parse_request(json_part, binary, orjson.loads)
    if pipeline is not None:
        return await oip_pipelines.infer(state, principal, pipeline, req, request_id=request_id(request))
    asked = _stated(req.parameters, model_less=model is None)
    max_rows = state.settings.max_query_rows
    query = queries.build(
        app,
        model,
        lambda signature: queries.arrays_for(signature, req.inputs, max_rows=max_rows),
        asked.requirements,
        variant=asked.variant,
        request_id=request_id(request),
        task=asked.task,
    )
    answer = await state.scheduler.infer(query)
    return _response(m, req, answer, _output_specs(model, app, answer.model))


async def _pipeline(state: GatewayState, principal: Principal, name: str) -> Pipeline:
    try:
        return await state.auth.pipeline(principal, name)
    except NotFound:
        raise NotFound(f"no model, app or pipeline named {name!r}", name=name) from None


def _stated(params: dict[str, Any], *, model_less: bool) -> queries.Stated:
    """What the request parameters state, checked as `/v1` checks its fields (`queries.stated`)."""
    unknown = params.keys() - OIP_PARAMETERS - _IGNORED_PARAMETERS
    if unknown:
        raise InvalidInput(
            f"unknown request parameters: {sorted(unknown)}",
            allowed=sorted(OIP_PARAMETERS | _IGNORED_PARAMETERS | {"binary_data_output"}),
        )
    asked = queries.stated(params)
    if asked.variant is not None and model_less:
        raise InvalidInput("variant pins a variant id on a named-model query only", field="variant")
    return asked


def _output_specs(model: ModelInternal | None, app: AppInternal, answered_by: str) -> dict[str, str]:
    """Output name → dtype of the model that answered (an app's answer names its model)."""
    source = model if model is not None else next((x for x in app.models if x.name == answered_by), None)
    if source is None:
        return {}
    signature, _ = queries.signature_of(source.signature)  # parsed once per model record, not per query
    return {s.name: s.dtype for s in signature.outputs}


def _response(target: str, req: oip_codec.InferRequestV2, answer: Answer, dtypes: dict[str, str]) -> Response:
    produced = answer.outputs
    wanted = req.outputs or [oip_codec.RequestedOutput(n, req.binary_output) for n in produced]
    unknown = [o.name for o in wanted if o.name not in produced]
    if unknown:
        raise BadRequest(f"unknown outputs {unknown}; the model has {sorted(produced)}")
    outputs: list[dict[str, Any]] = []
    blobs: list[bytes] = []
    for out in wanted:
        array = _as_array(produced[out.name], dtypes.get(out.name))
        tensor: dict[str, Any] = {
            "name": out.name,
            "datatype": oip_codec.datatype_of(array.dtype),
            "shape": list(array.shape),
        }
        if out.binary or req.binary_output:
            blob = oip_codec.encode_binary(array)
            tensor["parameters"] = {"binary_data_size": len(blob)}
            blobs.append(blob)
        else:
            tensor["data"] = oip_codec.encode_json(array)
        outputs.append(tensor)
    parameters = {
        "model": answer.model,
        "variant": answer.variant,
        "worker": answer.worker,
        "hardware": answer.hardware,
        "queue_ms": answer.queue_ms,
        "compute_ms": answer.compute_ms,
        "total_ms": answer.total_ms,
        "cached": answer.cached,
        "default": answer.default,
        "reason": answer.reason,
        "request_id": answer.request_id,
    }
    if answer.slo_met is not None:  # protocol parameters are bool, number or string: never null
        parameters["slo_met"] = answer.slo_met
    if answer.failover is not None:
        parameters["failover_from"] = answer.failover["from"]
        parameters["failover_reason"] = answer.failover["reason"]
    if answer.reconstructed:
        parameters["reconstructed"] = True
    body: dict[str, Any] = {"model_name": target, "parameters": parameters, "outputs": outputs}
    if req.id is not None:
        body["id"] = req.id
    head = orjson.dumps(body)
    if not blobs:
        return Response(head, media_type="application/json")
    return Response(
        b"".join([head, *blobs]),
        media_type="application/octet-stream",
        headers={HEADER_LENGTH: str(len(head))},
    )


def _as_array(values: np.ndarray, dtype: str | None) -> np.ndarray:
    """An output as the answering model's dtype (the outputs of an app's default, from JSON values, may
    be of another type)."""
    if dtype is not None:
        try:
            return np.asarray(values, dtype=dtype)
        except (TypeError, ValueError):
            pass  # e.g. an app's default output of another type: answer it as it is
    return np.asarray(values)
