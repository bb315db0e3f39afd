"""Which requests the gateway's query lane takes; everything else goes to the app's router."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import httpx
import pytest
from fastapi import FastAPI, Request

from gateway.dataplane.lane import QueryLane, _match
from gateway.dataplane.routes import app_query, model_query


def scope(method: str, path: str) -> dict[str, object]:
    return {"type": "http", "method": method, "path": path}


def test_the_two_query_routes_are_taken_with_their_name() -> None:
    assert _match(scope("POST", "/v1/apps/shop/infer")) == ("/v1/apps/{app}/infer", app_query, "shop")
    assert _match(scope("POST", "/v1/models/digits-mlp-small/infer")) == (
        "/v1/models/{name}/infer",
        model_query,
        "digits-mlp-small",
    )


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/v1/apps/shop/infer"),  # the router answers 405
        ("POST", "/v1/apps/shop/infer/"),  # and redirects or 404s these
        ("POST", "/v1/apps//infer"),
        ("POST", "/v1/apps/shop/x/infer"),
        ("POST", "/v1/jobs/shop/infer"),
        ("POST", "/v2/models/shop/infer"),  # the Open Inference Protocol has its own routes
        ("POST", "/v1/apps"),
        ("POST", "v1/apps/shop/infer"),
    ],
)
def test_anything_else_goes_to_the_app(method: str, path: str) -> None:
    assert _match(scope(method, path)) is None


def test_the_app_behind_the_lane_sees_forwarded_headers_from_trusted_proxies() -> None:
    """The server runs the gateway without uvicorn's proxy-headers middleware; the lane applies it to
    what it hands the app, so a TLS-terminating proxy's scheme and client address still arrive."""
    app = FastAPI()

    @app.get("/where")
    async def where(request: Request) -> dict[str, object]:
        return {"scheme": request.url.scheme, "client": request.client.host if request.client else None}

    headers = {"x-forwarded-proto": "https", "x-forwarded-for": "203.0.113.7"}

    async def ask(trusted: str | None) -> dict[str, object]:
        lane = QueryLane(app, max_body_bytes=1024, forwarded_allow_ips=trusted)
        transport = httpx.ASGITransport(app=lane, client=("127.0.0.1", 5000))
        async with httpx.AsyncClient(transport=transport, base_url="http://gw") as client:
            answer: dict[str, object] = (await client.get("/where", headers=headers)).json()
            return answer

    assert asyncio.run(ask("127.0.0.1")) == {"scheme": "https", "client": "203.0.113.7"}
    assert asyncio.run(ask("10.0.0.1")) == {"scheme": "http", "client": "127.0.0.1"}  # not a trusted proxy


def test_the_lane_refuses_an_oversized_query_through_asgi_too() -> None:
    """Where the server has no direct lane (here a test client), the ASGI entry refuses the same way:
    by the declared length, and by the bytes once a body without one passes the limit."""

    async def chunks() -> AsyncIterator[bytes]:
        for _ in range(3):
            yield b"x" * 512

    async def ask() -> list[httpx.Response]:
        lane = QueryLane(FastAPI(), max_body_bytes=1024)
        transport = httpx.ASGITransport(app=lane)
        async with httpx.AsyncClient(transport=transport, base_url="http://gw") as client:
            declared = await client.post("/v1/models/m/infer", content=b"x" * 2048)
            streamed = await client.post("/v1/apps/a/infer", content=chunks())
            return [declared, streamed]

    for response in asyncio.run(ask()):
        assert response.status_code == 413
        assert response.json()["error"]["code"] == "payload_too_large"
        assert response.headers["x-request-id"]
