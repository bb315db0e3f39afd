"""A pipeline under the Open Inference Protocol: `/v2/models/{pipeline}/infer` (the pipeline's name is
its model name, unique among models and apps) runs it as `/v1/pipelines/{name}/infer` does. Every stage's
outputs come back as tensors named `<stage>.<output>`, with `<stage>.rows` (INT64: the query rows that
reached a stage after a conditional edge); what ran and the end-to-end SLO are in `parameters`."""

from __future__ import annotations

from typing import Any

import numpy as np
import orjson
from fastapi import Response

from gateway.dataplane import pipelines, queries
from gateway.oip import codec as oip_codec
from gateway.state import GatewayState
from infaas.core.errors import BadRequest, InvalidInput
from infaas.schemas.api import Principal
from infaas.schemas.pipelines import Pipeline


async def infer(
    state: GatewayState,
    principal: Principal,
    pipeline: Pipeline,
    req: oip_codec.InferRequestV2,
    *,
    request_id: str,
) -> Response:
    unknown = set(req.parameters) - {"binary_data_output"}
    if unknown:
        raise InvalidInput(
            f"a pipeline query takes no parameters (its SLO is the pipeline's): {sorted(unknown)}"
        )
    app = await state.auth.app(principal, pipeline.app)
    models = {s.model: await state.auth.model(principal, s.model) for s in pipeline.stages}
    root = models[next(s.model for s in pipeline.stages if s.name == pipeline.order[0])]
    signature, _ = queries.signature_of(root.signature)
    max_rows = state.settings.max_query_rows
    tensors = queries.arrays_for(signature, req.inputs, max_rows=max_rows)
    doc = await pipelines.run(
        pipeline, app, models, tensors, state.scheduler.infer, request_id=request_id, max_rows=max_rows
    )
    produced: dict[str, np.ndarray] = {}
    for stage, outputs in doc["outputs"].items():
        for name, values in outputs.items():
            produced[f"{stage}.{name}"] = np.asarray(values)
        produced[f"{stage}.rows"] = np.asarray(doc["rows"][stage], dtype=np.int64)
    wanted = req.outputs or [oip_codec.RequestedOutput(n, req.binary_output) for n in produced]
    missing = [o.name for o in wanted if o.name not in produced]
    if missing:
        raise BadRequest(f"unknown outputs {missing}; this query produced {sorted(produced)}")
    out: list[dict[str, Any]] = []
    for o in wanted:
        array = produced[o.name]
        out.append(
            {
                "name": o.name,
                "datatype": oip_codec.datatype_of(array.dtype),
                "shape": list(array.shape),
                "data": oip_codec.encode_json(array),
            }
        )
    parameters: dict[str, Any] = {
        "pipeline": pipeline.name,
        "total_ms": doc["latency_ms"]["total"],
        "slo_ms": pipeline.slo_ms,
        "slo_met": doc["slo_met"],
        "planned": doc["planned"],
        "request_id": request_id,
    }
    for stage in doc["stages"]:
        parameters[f"{stage['stage']}.variant"] = stage["variant"]
        parameters[f"{stage['stage']}.total_ms"] = stage["latency_ms"]["total"]
    body: dict[str, Any] = {"model_name": pipeline.name, "parameters": parameters, "outputs": out}
    if req.id is not None:
        body["id"] = req.id
    return Response(orjson.dumps(body), media_type="application/json")
