"""The two `/v1` query routes as the API documents them (OpenAPI and the generated SDKs).

The app serves them through `gateway.dataplane.routes.FAST_ROUTES` (same handlers, matched first), and
the served gateway takes them in its query lane before that.
"""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from gateway.dataplane.routes import query_app, query_model
from gateway.deps import AuthHeader
from gateway.v1.passthrough import ERRORS
from infaas.schemas.api import InferRequest, InferResponse

router = APIRouter(prefix="/v1")

_INFER_BODY = {
    "requestBody": {
        "required": True,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/InferRequest"}}},
    }
}


@router.post("/apps/{app}/infer", response_model=InferResponse, responses=ERRORS, openapi_extra=_INFER_BODY)
async def infer_app(app: str, request: Request, authorization: AuthHeader = None) -> Response:  # noqa: ARG001
    """Model-less query: state the requirements, the system picks the variant and the worker."""
    return await query_app(request)


@router.post(
    "/models/{name}/infer", response_model=InferResponse, responses=ERRORS, openapi_extra=_INFER_BODY
)
async def infer_model(name: str, request: Request, authorization: AuthHeader = None) -> Response:  # noqa: ARG001
    """Query a named model; the system still picks its variant and worker."""
    return await query_model(request)


INFER_SCHEMAS = (InferRequest,)
