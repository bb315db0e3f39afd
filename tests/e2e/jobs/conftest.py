"""The offline-jobs suite shared by this package's tests: real processes (Postgres, a Redis server
the tests can restart, Celery workers, two executors), started once for the package, and a check after
every test that none of its processes died."""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import psycopg
import pytest

from infaas.core.config import Settings
from infaas.processes.suite import free_port
from infaas_cli.demo_models import DemoModel
from infaas_cli.launcher import start_suite
from tests.conftest import libpq
from tests.e2e.conftest import register
from tests.e2e.jobs.helpers import MODEL, JobsSuite, _free_pair, _Running, _start_redis


@pytest.fixture(scope="package")
def jobs_suite(
    pg_admin_url: str, demo_models: list[DemoModel], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[JobsSuite]:
    var_dir = tmp_path_factory.mktemp("e2e-jobs")
    redis_dir = var_dir / "redis"
    redis_dir.mkdir()
    port = free_port()
    name = f"infaas_jobs_{uuid.uuid4().hex[:10]}"
    db_url = pg_admin_url.rsplit("/", 1)[0] + f"/{name}"
    executor_port = _free_pair()
    # Distinct ports (free_port() may hand out the same one twice once it is released again).
    taken = {port, executor_port, executor_port + 1}
    ports: list[int] = []
    while len(ports) < 5:
        candidate = free_port()
        if candidate not in taken:
            taken.add(candidate)
            ports.append(candidate)
    settings = Settings(
        var_dir=var_dir,
        admin_key="adm_e2e_" + uuid.uuid4().hex,
        database_url=db_url,
        redis_url=f"redis://127.0.0.1:{port}/0",
        gateway_host="127.0.0.1",
        gateway_port=ports[0],
        registry_port=ports[1],
        scheduler_port=ports[2],
        planner_port=ports[3],
        executor_port=executor_port,
        executors=2,
        profiler_metrics_port=ports[4],
        profile_seconds_per_point=0.05,
        profile_min_iterations=20,
        job_chunk_lease_s=5.0,
        job_tick_s=0.2,
        # Low thresholds: a few concurrent online clients on the large MLP must pause jobs here. Their
        # compute is a small share of each query's time (the gateway parses 512-row JSON bodies): three
        # clients keep the worker ~4-8 % busy, so 5 % was too close to the line.
        job_pause_utilization=0.02,
        job_resume_utilization=0.01,
    )
    with psycopg.connect(libpq(pg_admin_url), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    url = f"http://127.0.0.1:{settings.gateway_port}"
    holder = JobsSuite(None, settings, url, "", db_url, port, redis_dir, _start_redis(port, redis_dir))
    try:
        holder.suite = start_suite(settings)
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {settings.admin_key}"}) as admin:
            created = admin.post(
                "/v1/apps", json={"name": "batch", "default_min_accuracy": 0.5, "cache": False}
            )
            assert created.status_code == 201, created.text
            holder.key = created.json()["api_key"]
        small, large, _ = demo_models
        running = _Running(url, settings.admin_key)
        assert register(running, holder.key, large, MODEL, app="batch").status_code == 202  # type: ignore[arg-type]
        deadline = time.monotonic() + 180
        with holder.client() as client:
            while (status := client.get(f"/v1/models/{MODEL}").json()["status"]) not in ("ready", "failed"):
                assert time.monotonic() < deadline, "model was not profiled in time"
                time.sleep(0.25)
        assert status == "ready"
        yield holder
    finally:
        if holder.suite is not None:
            holder.suite.stop()
        holder.redis_proc.terminate()
        holder.redis_proc.wait(timeout=10)
        with psycopg.connect(libpq(pg_admin_url), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(autouse=True)
def _the_suite_survives(jobs_suite: JobsSuite) -> Iterator[None]:
    """After every test, whatever it did: no process of the shared suite died (a test that restarts one
    starts it again). A dead one is started again for the next test, and this test fails with its log."""
    yield
    assert jobs_suite.suite is not None
    dead = jobs_suite.suite.dead()
    logs = [(n, Path(jobs_suite.suite.log_dir / f"{n}.log").read_text()[-2000:]) for n in dead]
    for name in dead:
        jobs_suite.restart(name)
    assert dead == [], logs
    assert os.path.isdir(jobs_suite.settings.resolved_artifact_dir)
