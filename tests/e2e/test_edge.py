"""The public edge on real processes: the admin UI's server-side sessions (random ids, revoked on sign-out,
expiring), the gateway's `/metrics` behind the admin key, and no `server` header on any answer."""

from __future__ import annotations

import hashlib
import re
import subprocess
import sys
from collections.abc import Iterator
from http.cookies import Morsel, SimpleCookie
from pathlib import Path

import httpx
import pytest
import redis

from infaas.processes.suite import free_port
from tests.e2e.conftest import RunningSuite
from tests.polling import wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.parametrize("running", ["postgres"], indirect=True)]

COOKIE = "infaas_session"
SESSION_PREFIX = "infaas:ui:session:"
CSRF = re.compile(r'name="csrf" value="([^"]+)"')


def sign_in(url: str, key: str) -> Morsel[str]:
    """Sign in as a browser would (a form post); the session cookie the gateway set."""
    response = httpx.post(f"{url}/ui/login", data={"key": key}, follow_redirects=False, timeout=30)
    assert response.status_code == 303 and response.headers["location"] == "/ui/", response.text
    (header,) = response.headers.get_list("set-cookie")
    cookie: SimpleCookie = SimpleCookie()
    cookie.load(header)
    return cookie[COOKIE]


def as_browser(url: str, session_id: str) -> httpx.Client:
    """A raw client that replays a cookie value, whatever the gateway told the browser since."""
    return httpx.Client(base_url=url, headers={"Cookie": f"{COOKIE}={session_id}"}, timeout=30)


def session_ttl_ms(running: RunningSuite, session_id: str) -> int:
    """What Redis says of a session's entry: milliseconds to live, or -2 when there is none."""
    with redis.Redis.from_url(running.settings.redis_url) as store:
        return int(store.pttl(SESSION_PREFIX + hashlib.sha256(session_id.encode()).hexdigest()))


@pytest.fixture(scope="module")
def app_key(running: RunningSuite) -> str:
    """The key of an app of this module's own (no model needed)."""
    created = running.admin.post("/v1/apps", json={"name": "edge"})
    assert created.status_code == 201, created.text
    key: str = created.json()["api_key"]
    return key


def test_a_ui_session_is_a_random_id_revoked_on_sign_out(running: RunningSuite) -> None:
    admin_key = running.settings.admin_key
    first, second = sign_in(running.url, admin_key), sign_in(running.url, admin_key)
    assert first.value != second.value, "every sign-in gets an id of its own"
    for cookie in (first, second):
        assert admin_key not in cookie.value and len(cookie.value) >= 43  # 32 random bytes
        assert cookie["httponly"] and cookie["samesite"] == "strict" and cookie["path"] == "/ui"
        assert cookie["max-age"] == str(8 * 3600) and not cookie["secure"]  # plain http here
        # Redis keeps the id's hash, with the session's lifetime: no cookie can be read out of it.
        assert 0 < session_ttl_ms(running, cookie.value) <= 8 * 3600 * 1000
    with redis.Redis.from_url(running.settings.redis_url) as store:
        keys = store.keys(f"{SESSION_PREFIX}*")
    assert len(keys) >= 2 and not any(first.value.encode() in k or admin_key.encode() in k for k in keys)

    with as_browser(running.url, first.value) as browser:
        page = browser.get("/ui/models")
        assert page.status_code == 200 and "<h1>" in page.text
        assert browser.get("/ui/api/status").status_code == 200
        (csrf,) = CSRF.findall(page.text)
        # Sign-out is a form: without the session's CSRF token it changes nothing.
        refused = browser.post("/ui/logout", data={"csrf": "forged"})
        assert refused.status_code == 403 and "CSRF" in refused.text
        assert browser.get("/ui/models").status_code == 200
        out = browser.post("/ui/logout", data={"csrf": csrf})
        assert out.status_code == 303 and out.headers["location"] == "/ui/login"
        cleared: SimpleCookie = SimpleCookie()
        cleared.load(out.headers["set-cookie"])
        assert cleared[COOKIE].value == "" and cleared[COOKIE]["max-age"] == "0"
    assert session_ttl_ms(running, first.value) == -2  # gone from Redis

    # The same cookie value replayed after sign-out is refused everywhere; the other session lives on.
    with as_browser(running.url, first.value) as replayed:
        again = replayed.get("/ui/models")
        assert again.status_code == 303 and again.headers["location"] == "/ui/login"
        status = replayed.get("/ui/api/status")
        assert status.status_code == 401 and status.json()["error"]["code"] == "unauthorized"
    with as_browser(running.url, second.value) as other:
        assert other.get("/ui/models").status_code == 200
    # The admin key itself as the cookie (as the UI once kept it) opens nothing.
    with as_browser(running.url, admin_key) as keyed:
        assert keyed.get("/ui/models").status_code == 303


@pytest.fixture
def short_sessions_gateway(running: RunningSuite, tmp_path: Path) -> Iterator[str]:
    """A second gateway of the running suite whose UI sessions last 2 s (its own port and process)."""
    port = free_port()
    env = {
        **running.settings.child_env(),
        "INFAAS_GATEWAY_PORT": str(port),
        "INFAAS_GATEWAY_HOST": "127.0.0.1",
        "INFAAS_UI_SESSION_TTL_S": "2",
    }
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    url = f"http://127.0.0.1:{port}"
    with open(tmp_path / "gateway.log", "wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "infaas_cli.main", "serve", "gateway"], env=env, stdout=log, stderr=log
        )

    def healthy() -> bool:
        assert proc.poll() is None, (tmp_path / "gateway.log").read_text()
        try:
            return httpx.get(f"{url}/health", timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    try:
        wait_for(healthy, what="the second gateway answers /health", timeout_s=60, every_s=0.1)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=15)


def test_an_expired_ui_session_is_refused(running: RunningSuite, short_sessions_gateway: str) -> None:
    cookie = sign_in(short_sessions_gateway, running.settings.admin_key)
    assert cookie["max-age"] == "2"
    assert 0 < session_ttl_ms(running, cookie.value) <= 2000
    wait_for(lambda: session_ttl_ms(running, cookie.value) == -2, what="the session expired in Redis")
    with as_browser(short_sessions_gateway, cookie.value) as browser:
        page = browser.get("/ui/workers")
        assert page.status_code == 303 and page.headers["location"] == "/ui/login"
        assert f"{COOKIE}=" in page.headers["set-cookie"]  # the stale cookie is cleared


def test_the_gateways_metrics_answer_the_admin_key_only(running: RunningSuite, app_key: str) -> None:
    url = f"{running.url}/metrics"
    for headers in ({}, {"Authorization": "Bearer not-a-key"}, {"Authorization": "Basic abc"}):
        refused = httpx.get(url, headers=headers, timeout=10)
        assert refused.status_code == 401, headers
        assert refused.json()["error"]["code"] == "unauthorized"
        assert "infaas_" not in refused.text
    as_app = httpx.get(url, headers={"Authorization": f"Bearer {app_key}"}, timeout=10)
    assert as_app.status_code == 403 and as_app.json()["error"]["code"] == "forbidden"
    scraped = httpx.get(url, headers={"Authorization": f"Bearer {running.settings.admin_key}"}, timeout=10)
    assert scraped.status_code == 200
    assert scraped.headers["content-type"].startswith("text/plain; version=")
    assert "# TYPE infaas_gateway_http_requests_total counter" in scraped.text


def test_no_answer_names_the_server(running: RunningSuite, app_key: str) -> None:
    admin = {"Authorization": f"Bearer {running.settings.admin_key}"}
    answers = [
        httpx.get(f"{running.url}/health"),
        httpx.get(f"{running.url}/v1/models", headers=admin),
        httpx.get(f"{running.url}/no/such/route"),
        httpx.get(f"{running.url}/metrics"),
        httpx.get(f"{running.url}/ui/login"),
        # The query routes' direct lane writes its own heads (infaas/http/server.py).
        httpx.post(f"{running.url}/v1/apps/edge/infer", json={"inputs": [[0.0]]}),
        httpx.post(
            f"{running.url}/v1/apps/edge/infer",
            json={"inputs": [[0.0]]},
            headers={"Authorization": f"Bearer {app_key}"},
        ),
        # Internal services run under the same server options.
        httpx.get(f"http://127.0.0.1:{running.settings.registry_port}/health"),
    ]
    for answer in answers:
        assert "server" not in answer.headers, (answer.request.url, answer.headers)
        assert "date" in answer.headers, answer.request.url
    assert {a.status_code for a in answers} >= {200, 401, 404}
