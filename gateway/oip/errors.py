"""Errors of the Open Inference Protocol routes: `{"error": "<message>"}` (the protocol's shape, which its
clients read as the message) plus this system's `code` and `details`, with the status `/v1` would use."""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine
from typing import Any

import orjson
from fastapi import Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from starlette.exceptions import HTTPException as StarletteHTTPException

from infaas.core.errors import InfaasError
from infaas.http.app import retry_after

log = logging.getLogger("infaas.gateway.oip")


def error_response(status: int, message: str, code: str | None = None, **details: Any) -> Response:
    body: dict[str, Any] = {"error": message}
    if code:
        body["code"] = code
    if details:
        body["details"] = details
    return Response(orjson.dumps(body, default=str), status_code=status, media_type="application/json")


class OipRoute(APIRoute):
    """Renders every error of a `/v2` route in the protocol's shape (the app-wide handlers use `/v1`'s)."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def route(request: Request) -> Response:
            try:
                return await handler(request)
            except InfaasError as exc:
                response = error_response(exc.status, exc.message, exc.code, **exc.details)
                retry = retry_after(exc)
                if retry is not None:
                    response.headers["Retry-After"] = retry
                return response
            except RequestValidationError as exc:
                problems = [
                    {"loc": [str(p) for p in e.get("loc", ())], "message": e.get("msg")} for e in exc.errors()
                ]
                return error_response(
                    400, "the request does not match the schema", "invalid_request", problems=problems
                )
            except StarletteHTTPException as exc:  # e.g. the body limit, raised while the body is read
                return error_response(exc.status_code, str(exc.detail))
            except Exception:
                log.exception("unhandled error in an Open Inference Protocol route")
                return error_response(500, "internal error in gateway", "internal")

        return route
