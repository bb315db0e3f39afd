"""`/v1/pipelines`: register, list, show and delete pipelines (passed through to the registry), and
query one (`POST /v1/pipelines/{name}/infer`: its stages run through the scheduler under one deadline)."""

from __future__ import annotations

import numpy as np
import orjson
from fastapi import APIRouter, Request, Response
from pydantic import BaseModel, Field

from gateway.dataplane import pipelines, queries
from gateway.deps import NamePath, PrincipalDep, StateDep, state_of
from gateway.v1.passthrough import ERRORS, forward
from infaas.clients.base import segment
from infaas.clients.planner import PlannerClient
from infaas.core.errors import InfaasError, InvalidInput
from infaas.http.app import request_id
from infaas.schemas.pipelines import Pipeline, PipelineCreate

router = APIRouter(prefix="/v1")


@router.post("/pipelines", status_code=201, response_model=Pipeline, responses=ERRORS)
async def create_pipeline(body: PipelineCreate, request: Request, principal: PrincipalDep) -> Response:
    """Register a pipeline: stages over the app's models, edges that say how one stage's outputs become
    the next one's inputs (optionally only the rows of some predicted classes), an end-to-end P99 SLO.
    Unknown models, mismatched shapes or dtypes and cycles are refused (422) and nothing is stored.
    With `rate_qps`, the pipeline is planned for that rate at once (as `POST .../plan`); a plan that
    cannot be made leaves the pipeline stored and says why in `plan_error`."""
    created = await forward(request, principal, "POST", "/v1/pipelines", json=body.model_dump())
    if body.rate_qps is None:
        return created
    state = state_of(request)
    try:
        async with PlannerClient(
            state.settings.service_url("planner"), internal_key=state.settings.internal_key
        ) as planner:
            planned = await planner.plan_pipeline(body.name, rate_qps=body.rate_qps, cv=body.cv, apply=True)
    except InfaasError as exc:
        stored = Pipeline.model_validate_json(bytes(created.body))
        stored.plan_error = exc.to_body()["error"]
        planned = stored
    return Response(planned.model_dump_json(), status_code=201, media_type="application/json")


@router.get("/pipelines", response_model=list[Pipeline], responses=ERRORS)
async def list_pipelines(request: Request, principal: PrincipalDep) -> Response:
    return await forward(request, principal, "GET", "/v1/pipelines")


@router.get("/pipelines/{name}", response_model=Pipeline, responses=ERRORS)
async def get_pipeline(name: NamePath, request: Request, principal: PrincipalDep) -> Response:
    return await forward(request, principal, "GET", f"/v1/pipelines/{segment(name)}")


@router.delete("/pipelines/{name}", status_code=204, responses=ERRORS)
async def delete_pipeline(
    name: NamePath, request: Request, state: StateDep, principal: PrincipalDep
) -> Response:
    response = await forward(request, principal, "DELETE", f"/v1/pipelines/{segment(name)}")
    state.auth.pipelines.drop(name)
    return response


class PlanAsk(BaseModel):
    rate_qps: float = Field(gt=0, le=1_000_000, allow_inf_nan=False, description="Arrival rate to plan for.")
    cv: float = Field(1.0, gt=0, le=16, allow_inf_nan=False, description="CV of gamma inter-arrivals.")
    apply: bool = Field(True, description="Load the planned instances (False: plan and store only).")


@router.post("/pipelines/{name}/plan", response_model=Pipeline, responses=ERRORS)
async def plan_pipeline(name: NamePath, body: PlanAsk, state: StateDep, principal: PrincipalDep) -> Pipeline:
    """Plan the pipeline (InferLine's planner) for an arrival rate: per stage the variant, batch size and
    replicas of least cost whose estimated end-to-end P99 meets the SLO, with its predicted cost and P99;
    scale factors come from observed traffic. The plan is stored, applied (instances loaded, each an
    event) and pins the variant of each stage in the pipeline's queries."""
    await state.auth.pipeline(principal, name)  # 404 / 403 before any planning
    async with PlannerClient(
        state.settings.service_url("planner"), internal_key=state.settings.internal_key
    ) as planner:
        planned = await planner.plan_pipeline(name, rate_qps=body.rate_qps, cv=body.cv, apply=body.apply)
    state.auth.pipelines.drop(name)  # this gateway's queries pin the new plan at once
    return planned


@router.post("/pipelines/{name}/infer", responses=ERRORS)
async def infer_pipeline(
    name: NamePath, request: Request, state: StateDep, principal: PrincipalDep
) -> Response:
    """Query a pipeline with `{inputs}` for its root stage. The answer has every stage's outputs and the
    query rows that reached it, which variant ran it, its queue/compute/total ms, and whether the
    end-to-end SLO was met."""
    pipeline = await state.auth.pipeline(principal, name)
    data, _ = queries.parse_body(await request.body())
    if set(data) != {"inputs"}:
        raise InvalidInput(
            "a pipeline query carries only 'inputs': its SLO is the pipeline's", field="inputs"
        )
    app = await state.auth.app(principal, pipeline.app)
    models = {s.model: await state.auth.model(principal, s.model) for s in pipeline.stages}
    root = models[next(s.model for s in pipeline.stages if s.name == pipeline.order[0])]
    signature, _ = queries.signature_of(root.signature)
    max_rows = state.settings.max_query_rows
    tensors = queries.tensors_for(signature, data["inputs"], max_rows=max_rows)
    doc = await pipelines.run(
        pipeline,
        app,
        models,
        tensors,
        state.scheduler.infer,
        request_id=request_id(request),
        max_rows=max_rows,
    )
    body = orjson.dumps(doc, option=orjson.OPT_SERIALIZE_NUMPY, default=_as_list)
    return Response(body, media_type="application/json")


def _as_list(value: object) -> object:
    """Arrays orjson does not take natively (read-only or strided views of a stage's outputs)."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"not JSON-serializable: {type(value).__name__}")
