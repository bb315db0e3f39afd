"""The two `/v1` query routes as the API documents them (OpenAPI and the generated SDKs).

Their templates come from `gateway.dataplane.routes.QUERY_ROUTES`; the app serves them through its
`FAST_ROUTES` (same handler, matched first), and the served gateway takes them in its lane before that.
"""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from gateway.dataplane.routes import APP_QUERY, MODEL_QUERY, answer_query
from gateway.deps import AuthHeader
from gateway.v1.passthrough import ERRORS
from infaas.clients.envelope import InferRequest, InferResponse

router = APIRouter()  # the templates come whole from the route table

_INFER_BODY = {
    "requestBody": {
        "required": True,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/InferRequest"}}},
    }
}


@router.post(APP_QUERY.template, response_model=InferResponse, responses=ERRORS, openapi_extra=_INFER_BODY)
async def infer_app(app: str, request: Request, authorization: AuthHeader = None) -> Response:  # noqa: ARG001
    """Model-less query: state the requirements, the system picks the variant and the worker."""
    return await answer_query(request, APP_QUERY)


@router.post(MODEL_QUERY.template, response_model=InferResponse, responses=ERRORS, openapi_extra=_INFER_BODY)
async def infer_model(name: str, request: Request, authorization: AuthHeader = None) -> Response:  # noqa: ARG001
    """Query a named model; the system still picks its variant and worker."""
    return await answer_query(request, MODEL_QUERY)


INFER_SCHEMAS = (InferRequest,)
