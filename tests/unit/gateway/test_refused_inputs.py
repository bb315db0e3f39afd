"""Inputs the gateway refuses itself, with a 4xx, before any internal call (each was a 500 before).

Path parameters: names outside the name pattern are refused, and whatever is forwarded is percent-encoded
whole (was: httpx's InvalidURL on a control character; `?` or `#` cut the internal URL short). Query
parameters: integers beyond bigint, filters outside their patterns. The registry here is a mock transport
that records what reached it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from gateway.app import create_app
from gateway.auth import Authenticator
from infaas.clients.base import segment
from infaas.clients.registry import AsyncRegistryClient
from infaas.core.config import Settings

ADMIN = {"Authorization": "Bearer adm_key"}


class Registry:
    def __init__(self) -> None:
        self.paths: list[bytes] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        if request.url.path == "/internal/keys/verify":
            return httpx.Response(200, json={"role": "admin"})
        self.paths.append(request.url.raw_path)
        return httpx.Response(404, json={"error": {"code": "not_found", "message": "unknown"}})


@pytest.fixture
def registry() -> Registry:
    return Registry()


@pytest.fixture
def gateway(registry: Registry, tmp_path: Path) -> Iterator[TestClient]:
    # No load sampler: it would ask the registry for the workers every few seconds on its own.
    app = create_app(Settings(var_dir=tmp_path, ui_load_sample_s=0))
    with TestClient(app, raise_server_exceptions=False) as client:
        state = app.state.gateway
        state.registry = AsyncRegistryClient(
            "http://registry", internal_key="", transport=httpx.MockTransport(registry)
        )
        state.auth = Authenticator(state.registry, ttl_s=5, failures_per_minute=30)
        yield client


@pytest.mark.parametrize("name", ["a\x01b", "a?b", "a#b", "a b", "a%b", "A", ".x", "a\n"])
@pytest.mark.parametrize(
    ("method", "template"),
    [
        ("GET", "/v1/apps/{}"),
        ("PATCH", "/v1/apps/{}"),
        ("GET", "/v1/models/{}"),
        ("GET", "/v1/models/{}/variants"),
        ("POST", "/v1/models/{}/profile"),
        ("DELETE", "/v1/models/{}"),
    ],
)
def test_a_name_outside_the_pattern_is_a_422_that_asks_nothing_of_the_registry(
    gateway: TestClient, registry: Registry, method: str, template: str, name: str
) -> None:
    kwargs = {"json": {}} if method == "PATCH" else {}
    response = gateway.request(method, template.format(segment(name)), headers=ADMIN, **kwargs)
    assert response.status_code == 422, response.text
    assert response.json()["error"]["code"] == "invalid_request"
    assert registry.paths == []


@pytest.mark.parametrize("template", ["/v1/apps/{}/infer", "/v1/models/{}/infer", "/v2/models/{}/ready"])
def test_a_query_to_a_name_outside_the_pattern_is_a_404(
    gateway: TestClient, registry: Registry, template: str
) -> None:
    method = "GET" if template.endswith("ready") else "POST"
    response = gateway.request(method, template.format("a%01b"), headers=ADMIN, json={"inputs": [[1.0]]})
    assert response.status_code == 404, response.text
    assert registry.paths == []


@pytest.mark.parametrize("job_id", ["a\x01b", "a?b", "a#b", "a/b", "a%", "..", "."])
@pytest.mark.parametrize(("method", "suffix"), [("GET", ""), ("DELETE", ""), ("GET", "/result")])
def test_a_job_id_is_forwarded_percent_encoded_whole(
    gateway: TestClient, registry: Registry, job_id: str, method: str, suffix: str
) -> None:
    response = gateway.request(method, f"/v1/jobs/{segment(job_id)}{suffix}", headers=ADMIN)
    assert response.status_code == 404, response.text
    if "/" not in job_id:  # an encoded slash is a slash to the router: no such route
        assert registry.paths == [f"/v1/jobs/{segment(job_id)}{suffix}".encode()]


@pytest.mark.parametrize(
    "params",
    [{"before": 2**63}, {"before": 10**30}, {"limit": 2**64}, {"model": "a\x00b"}, {"action": "a\x00"}],
)
def test_events_query_parameters_out_of_range_are_a_422(
    gateway: TestClient, params: dict[str, object]
) -> None:
    response = gateway.get("/v1/events", params=params, headers=ADMIN)
    assert response.status_code == 422, response.text


def test_segment_keeps_every_character_inside_one_path_segment() -> None:
    assert segment("a?b#c/d%e f\x01") == "a%3Fb%23c%2Fd%25e%20f%01"
    assert segment("..") == "%2E%2E" and segment(".") == "%2E" and segment("a.b") == "a.b"
    assert segment(7) == "7"
