"""The profiler's metrics port (a WSGI server, no HTTP app of its own) behind the internal key, on a real
socket: 401 without it, the exposition with it (header or bearer), `/health` open, no `Server` header."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from prometheus_client import CollectorRegistry, Counter

from infaas.core.credentials import internal_headers
from infaas.metrics.keyed_server import start_keyed_metrics_server
from infaas.processes.suite import free_port

KEY = "int_metrics_test"


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    registry = CollectorRegistry()
    Counter("probe_total", "a counter only this test has", registry=registry).inc(3)
    port = free_port()
    server, thread = start_keyed_metrics_server(port, addr="127.0.0.1", registry=registry, key=KEY)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def test_without_the_key_nothing_is_exposed(url: str) -> None:
    for headers in ({}, internal_headers("wrong"), {"Authorization": "Bearer wrong"}):
        response = httpx.get(f"{url}/metrics", headers=headers)
        assert response.status_code == 401
        assert response.json()["error"]["code"] == "unauthorized"
        assert "probe_total" not in response.text


def test_with_the_key_the_exposition_and_no_server_header(url: str) -> None:
    for headers in (internal_headers(KEY), {"Authorization": f"Bearer {KEY}"}):
        response = httpx.get(f"{url}/metrics", headers=headers)
        assert response.status_code == 200 and "probe_total 3.0" in response.text
        assert "server" not in response.headers
    health = httpx.get(f"{url}/health")
    assert health.status_code == 200 and "server" not in health.headers
