"""Internal authentication on a running suite: every internal port refuses callers without the suite's
internal key (HTTP routes, the executors' push port, the embedded Redis), and the gateway stops
answering an address that keeps sending unknown keys."""

from __future__ import annotations

import socket
import struct
from typing import Any
from urllib.parse import urlsplit

import httpx
import numpy as np
import pytest
import redis

from infaas.core.credentials import INTERNAL_HEADER
from infaas.data import store
from infaas.wire.handshake import encode_hello
from infaas.wire.messages import Reply
from tests.e2e.conftest import RunningSuite
from tests.orders import order
from tests.polling import wait_for

pytestmark = pytest.mark.e2e

# (process, method, path, request options): a sample of each internal service's routes.
ROUTES: list[tuple[str, str, str, dict[str, Any]]] = [
    ("registry", "POST", "/v1/apps", {"json": {"name": "intruder"}, "headers": {"x-infaas-role": "admin"}}),
    ("registry", "POST", "/internal/keys/verify", {"json": {"key": "adm_guess"}}),
    ("registry", "GET", "/internal/apps/shop", {}),
    ("registry", "GET", "/metrics", {}),
    ("executor", "POST", "/v1/drain", {"params": {"exit": "true"}}),
    ("executor", "POST", "/v1/instances", {"json": {"variant": "small.x"}}),
    ("executor-2", "GET", "/v1/instances", {}),
    ("executor-2", "POST", "/v1/instances/small.x/concurrency", {"json": {"concurrency": 8}}),
    ("executor-2", "POST", "/internal/offline/run", {"content": b"\0\0\0\0"}),
    ("planner", "GET", "/internal/events", {}),
    ("planner", "GET", "/internal/cluster", {}),
]
SCHEDULER_ROUTES: list[tuple[str, str, str, dict[str, Any]]] = [
    ("scheduler", "POST", "/internal/infer", {"content": b"\0\0\0\0"}),
    ("scheduler", "GET", "/internal/snapshot", {}),
]


def _url(running: RunningSuite, process: str) -> str:
    return f"http://127.0.0.1:{running.suite.port(process)}"


def test_every_internal_route_refuses_a_caller_without_the_internal_key(running: RunningSuite) -> None:
    routes = ROUTES + (SCHEDULER_ROUTES if running.settings.scheduler_mode == "remote" else [])
    for process, method, path, options in routes:
        for wrong in ({}, {INTERNAL_HEADER: "int_guess"}, {"authorization": "Bearer int_guess"}):
            headers = {**options.get("headers", {}), **wrong}
            request = {**options, "headers": headers}
            response = httpx.request(method, _url(running, process) + path, timeout=10, **request)
            assert response.status_code == 401, (process, method, path, wrong, response.text)
            assert response.json()["error"]["code"] == "unauthorized"
    # Nothing they asked for happened: the executor did not drain or exit, the app was not created.
    key = {INTERNAL_HEADER: running.settings.internal_key}
    for process in ("executor", "executor-2"):
        assert httpx.get(_url(running, process) + "/health", timeout=10).status_code == 200
        assert httpx.get(_url(running, process) + "/v1/instances", headers=key, timeout=10).status_code == 200
    assert "intruder" not in {a["name"] for a in running.admin.get("/v1/apps").json()}
    # With the key the same routes answer (what the suite's own services do).
    verified = httpx.post(
        _url(running, "registry") + "/internal/keys/verify",
        json={"key": running.settings.admin_key},
        headers=key,
        timeout=10,
    )
    assert verified.status_code == 200 and verified.json()["role"] == "admin"
    events = httpx.get(_url(running, "planner") + "/internal/events", headers=key, timeout=10)
    assert events.status_code == 200


def _push_address(running: RunningSuite) -> tuple[str, int]:
    client = redis.Redis.from_url(running.settings.redis_url)
    try:
        for wid in client.zrange(store.WORKERS, 0, -1):
            push = client.hget(store.worker_key(store.text(wid)), "push")
            if push:
                host, _, port = store.text(push).rpartition(":")
                return host, int(port)
    finally:
        client.close()
    raise AssertionError("no executor advertises a push address")


def _framed(frame: bytes) -> bytes:
    return struct.pack(">I", len(frame)) + frame


def _read_frame(conn: socket.socket) -> bytes:
    """One length-prefixed frame, or b"" once the executor closed the connection."""
    data = b""
    while len(data) < 4 or len(data) < 4 + struct.unpack(">I", data[:4])[0]:
        try:
            chunk = conn.recv(65536)
        except ConnectionResetError:
            return b""
        if not chunk:
            return b""
        data += chunk
    return data[4:]


def _refused_count(running: RunningSuite) -> float:
    """Push connections refused, over both executors."""
    total = 0.0
    for process in ("executor", "executor-2"):
        metrics = httpx.get(
            _url(running, process) + "/metrics",
            headers={INTERNAL_HEADER: running.settings.internal_key},
            timeout=10,
        ).text
        for line in metrics.splitlines():
            if line.startswith("infaas_executor_push_refused_connections_total "):
                total += float(line.split()[1])
    return total


def test_the_push_port_closes_a_connection_that_does_not_open_with_the_key(running: RunningSuite) -> None:
    address = _push_address(running)
    query = order("q-intruder", variant="small.none").encode({"x": np.zeros((1, 64), np.float32)})
    before = _refused_count(running)
    for opening in (b"", encode_hello("int_guess")):
        with socket.create_connection(address, timeout=10) as conn:
            conn.sendall((_framed(opening) if opening else b"") + _framed(query))
            assert _read_frame(conn) == b""  # closed, the query never read
    # With the hello the same query is read and answered (a refusal: no such instance there).
    with socket.create_connection(address, timeout=10) as conn:
        conn.sendall(_framed(encode_hello(running.settings.internal_key)) + _framed(query))
        reply, _ = Reply.decode(_read_frame(conn))
        assert reply.id == "q-intruder" and reply.outcome == "refused"
    # Counted once per connection refused; the executors serve on.
    assert _refused_count(running) == before + 2
    for process in ("executor", "executor-2"):
        assert httpx.get(_url(running, process) + "/health", timeout=10).status_code == 200


def test_the_embedded_redis_refuses_a_client_without_its_password(running: RunningSuite) -> None:
    if running.settings.database_url:
        pytest.skip("the postgres run uses the test Redis; the embedded run starts a Redis of its own")
    url = urlsplit(running.settings.redis_url)
    assert url.password  # the URL handed to every service carries it
    bare = redis.Redis(host=url.hostname or "127.0.0.1", port=url.port or 6379)
    try:
        with pytest.raises(redis.AuthenticationError):
            bare.ping()
    finally:
        bare.close()
    assert redis.Redis.from_url(running.settings.redis_url).ping()
    # No service logged the URL with its password.
    for log in running.suite.log_dir.glob("*.log"):
        assert url.password not in log.read_text(errors="replace"), log.name


def test_an_address_sending_unknown_keys_is_refused_for_a_while(running: RunningSuite) -> None:
    # The gateway trusts X-Forwarded-For from 127.0.0.1 (uvicorn's default), so this test's client stands
    # for two distant addresses and leaves 127.0.0.1's budget to the other tests.
    guesser, bystander = {"x-forwarded-for": "203.0.113.7"}, {"x-forwarded-for": "203.0.113.8"}
    budget = running.settings.auth_failures_per_minute
    with httpx.Client(base_url=running.url, timeout=30) as client:
        for i in range(budget):
            wrong = {**guesser, "authorization": f"Bearer app_guess_{i}"}
            assert client.get("/v1/apps", headers=wrong).status_code == 401
        for path, method in (("/v1/apps", "GET"), ("/v1/apps/shop/infer", "POST")):
            # The key is not even looked at: a right one gets the same answer.
            for key in ("app_guess_next", running.settings.admin_key):
                headers = {**guesser, "authorization": f"Bearer {key}"}
                response = client.request(method, path, headers=headers, json={"inputs": [[0.0]]})
                assert response.status_code == 429, (path, response.text)
                assert response.json()["error"]["code"] == "too_many_requests"
                assert int(response.headers["retry-after"]) >= 1
        # The UI's sign-in page says the same, as a page (not a JSON error), with the same Retry-After.
        page = client.post("/ui/login", headers=guesser, data={"key": running.settings.admin_key})
        assert page.status_code == 429 and page.headers["content-type"].startswith("text/html")
        assert int(page.headers["retry-after"]) >= 1 and "<form" in page.text
        ok = {**bystander, "authorization": f"Bearer {running.settings.admin_key}"}
        assert client.get("/v1/apps", headers=ok).status_code == 200


def test_the_profilers_metrics_port_answers_the_key_only(running: RunningSuite) -> None:
    url = _url(running, "profiler")

    def listening() -> bool:
        try:
            return httpx.get(url + "/health", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    wait_for(listening, what="the profiler's metrics port", timeout_s=60)
    for wrong in ({}, {INTERNAL_HEADER: "int_guess"}, {"authorization": "Bearer int_guess"}):
        refused = httpx.get(url + "/metrics", headers=wrong, timeout=10)
        assert refused.status_code == 401 and "server" not in refused.headers
    key = {"authorization": f"Bearer {running.settings.internal_key}"}  # as Prometheus scrapes it
    answered = httpx.get(url + "/metrics", headers=key, timeout=10)
    assert answered.status_code == 200 and answered.headers["content-type"].startswith("text/plain")
