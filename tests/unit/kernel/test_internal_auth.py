"""Internal authentication of a service's app (`infaas.http.internal_auth`, installed by `install_common`)."""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.testclient import TestClient

from infaas.http.app import install_common

KEY = "int_unit_key"


def _client(key: str | None) -> TestClient:
    app = FastAPI()
    install_common(app, service="probe", internal_key=key)

    @app.post("/internal/thing")
    async def thing() -> dict[str, bool]:
        return {"done": True}

    return TestClient(app)


def test_requests_without_the_key_are_refused_with_a_json_401() -> None:
    with _client(KEY) as client:
        for headers in ({}, {"x-infaas-internal": "wrong"}, {"authorization": "Bearer wrong"}):
            response = client.post("/internal/thing", headers=headers)
            assert response.status_code == 401, headers
            assert response.json()["error"]["code"] == "unauthorized"
        assert client.get("/metrics").status_code == 401


def test_the_key_in_its_header_or_as_a_bearer_token_passes() -> None:
    with _client(KEY) as client:
        assert client.post("/internal/thing", headers={"x-infaas-internal": KEY}).json() == {"done": True}
        # A caller's own bearer key ahead of the header does not hide the header.
        both = {"authorization": "Bearer app_key", "x-infaas-internal": KEY}
        assert client.post("/internal/thing", headers=both).status_code == 200
        assert client.get("/metrics", headers={"authorization": f"Bearer {KEY}"}).status_code == 200


def test_health_is_open_and_unknown_paths_are_refused_before_routing() -> None:
    with _client(KEY) as client:
        assert client.get("/health").status_code == 200
        assert client.get("/nowhere").status_code == 401


def test_an_empty_key_refuses_everything_but_health_and_says_why() -> None:
    with _client("") as client:
        response = client.post("/internal/thing", headers={"x-infaas-internal": ""})
        assert response.status_code == 401
        assert "no internal key configured" in response.json()["error"]["message"]
        assert client.get("/health").status_code == 200


def test_a_public_app_has_no_check() -> None:
    with _client(None) as client:
        assert client.post("/internal/thing").status_code == 200


def test_one_rule_for_every_http_surface() -> None:
    from infaas.core.credentials import carries_key

    key = KEY.encode()
    assert carries_key(key, None, key)
    assert carries_key(None, b"Bearer " + key, key)
    assert carries_key(None, b"bearer  " + key, key)  # scheme case-insensitive, spaces trimmed
    # The header, when present, decides alone: a right bearer does not rescue a wrong header.
    assert not carries_key(b"wrong", b"Bearer " + key, key)
    assert not carries_key(None, b"Basic " + key, key)
    assert not carries_key(None, None, key)
    assert not carries_key(b"", None, b"")  # no key configured: nothing matches
