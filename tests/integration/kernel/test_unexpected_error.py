"""An unexpected exception in a service answers 500 (JSON) and leaves the kept-alive connection usable:
the next request on the same pooled connection, which may be another caller's, is answered."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
import uvicorn
from fastapi import FastAPI

from infaas.core.credentials import internal_headers
from infaas.http.app import install_common
from infaas.http.server import CoalescingHttpToolsProtocol
from infaas.processes.suite import free_port
from tests.integration.kernel.uvicorn_thread import serving

KEY = "internal-test-key"


def make_app() -> FastAPI:
    app = FastAPI()
    install_common(app, service="probe", internal_key=KEY)

    @app.get("/boom")
    async def boom() -> None:
        raise RuntimeError("a bug, not a bad request")

    @app.get("/fine")
    async def fine() -> dict[str, bool]:
        return {"ok": True}

    return app


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    port = free_port()
    config = uvicorn.Config(
        make_app(),
        host="127.0.0.1",
        port=port,
        http=CoalescingHttpToolsProtocol,
        log_config=None,  # as the services run it: a log level here would stay set on uvicorn's loggers
    )
    with serving(config):
        yield f"http://127.0.0.1:{port}"


def test_a_500_is_json_and_the_next_request_on_the_pooled_connection_is_answered(base_url: str) -> None:
    # One connection in the pool: every request goes over the connection the 500 came back on.
    limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
    with httpx.Client(base_url=base_url, headers=internal_headers(KEY), limits=limits) as client:
        failures = []
        for _ in range(200):
            boom = client.get("/boom")
            assert boom.status_code == 500
            assert boom.json()["error"] == {"code": "internal", "message": "internal error in probe"}
            try:
                assert client.get("/fine").status_code == 200
            except httpx.TransportError as exc:
                failures.append(type(exc).__name__)
        assert failures == []
