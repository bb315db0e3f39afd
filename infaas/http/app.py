"""What every service's HTTP app shares: JSON errors, `/health`, `/metrics`, request ids, and (internal
services) the internal key."""

from __future__ import annotations

import logging
import math
import uuid

import orjson
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from infaas.core.errors import InfaasError
from infaas.core.logs import RequestIdMiddleware, request_id_var
from infaas.http.catch_all import CatchAll
from infaas.http.internal_auth import InternalAuth
from infaas.metrics.exposition import CONTENT_TYPE, exposition, forget_at_exit
from infaas.metrics.http import RequestMetrics

log = logging.getLogger("infaas")

REQUEST_ID = "x-request-id"


def json_response(body: object, status: int = 200) -> Response:
    return Response(orjson.dumps(body), status_code=status, media_type="application/json")


def error_body(code: str, message: str, **details: object) -> bytes:
    return orjson.dumps({"error": {"code": code, "message": message, **details}})


def error_response(status: int, code: str, message: str, **details: object) -> Response:
    return Response(error_body(code, message, **details), status_code=status, media_type="application/json")


DEFAULT_RETRY_AFTER = "1"
"""`Retry-After` of a 503 that names no time: what makes a service unavailable here heals in about a
second or two (a supervised restart, Redis reconnecting, a worker heartbeating again), so a client
should come back soon rather than give up or guess."""


def retry_after(exc: InfaasError) -> str | None:
    """The `Retry-After` value of an error that says when to come back (shed load; every 503): RFC 9110
    whole seconds, at least one."""
    retry = exc.details.get("retry_after_s")
    if retry is None:
        return DEFAULT_RETRY_AFTER if exc.status == 503 else None
    return str(max(1, math.ceil(float(retry))))


def internal_error_body(service: str) -> bytes:
    """The 500 answer to an unexpected exception (the traceback goes to the service's log)."""
    return error_body("internal", f"internal error in {service}")


def install_common(app: FastAPI, *, service: str, internal_key: str | None) -> None:
    """Error handlers, health and metrics routes, and request metrics for one service. An internal
    service passes its `internal_key` (empty: it refuses everything but `/health`); only the public
    gateway passes None."""
    # Innermost: an unexpected exception becomes the JSON 500 here, and never reaches the server.
    app.add_middleware(CatchAll, service=service, body=internal_error_body(service))
    if internal_key is not None:
        # Inside the request metrics and request ids: refusals are counted and carry a request id.
        app.add_middleware(InternalAuth, key=internal_key, service=service)
    app.add_middleware(RequestMetrics, service=service)
    app.add_middleware(RequestIdMiddleware)  # binds the id for logs, returns it as X-Request-Id
    forget_at_exit()

    @app.exception_handler(InfaasError)
    async def _infaas_error(_request: Request, exc: InfaasError) -> Response:
        response = json_response(exc.to_body(), exc.status)
        retry = retry_after(exc)
        if retry is not None:
            response.headers["Retry-After"] = retry
        return response

    @app.exception_handler(RequestValidationError)
    async def _validation(_request: Request, exc: RequestValidationError) -> Response:
        problems = [
            {"loc": [str(p) for p in e.get("loc", ())], "message": str(e.get("msg", ""))}
            for e in exc.errors()
        ]
        return error_response(
            422, "invalid_request", "the request does not match the schema", problems=problems
        )

    @app.exception_handler(StarletteHTTPException)
    async def _http(_request: Request, exc: StarletteHTTPException) -> Response:
        codes = {404: "not_found", 405: "method_not_allowed", 413: "payload_too_large"}
        code = codes.get(exc.status_code, "http_error")
        return error_response(exc.status_code, code, str(exc.detail))

    @app.get("/health", include_in_schema=False)
    async def health() -> dict[str, str]:
        return {"status": "ok", "service": service}

    @app.get("/metrics", include_in_schema=False)
    async def metrics() -> Response:
        return Response(exposition(), media_type=CONTENT_TYPE)  # all processes of this service


def request_id(request: Request) -> str:
    return request_id_var.get() or request.headers.get(REQUEST_ID) or uuid.uuid4().hex
