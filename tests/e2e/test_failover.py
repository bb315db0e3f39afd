"""FailLite on real processes: a critical app gets a warm backup on another worker; when the worker
serving it is SIGKILLed, its queries are answered by the backup; a normal app that lost its only worker
in the same failure is failed over progressively (a cold backup loaded on a live worker), and every step
is an event with its reason."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
import redis

from infaas.clients.executor import ExecutorClient
from infaas.data.failures import claim_key
from infaas.processes.suite import free_port
from infaas_cli.launcher import start_suite
from tests.e2e.conftest import RunningSuite, _settings
from tests.e2e.wine import CHEM, register_wine
from tests.polling import wait_for

pytestmark = pytest.mark.e2e


@pytest.fixture(params=["notice", "snapshot"])
def three_workers(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[RunningSuite]:
    """Its own suite (SQLite + embedded Redis, three executors, nothing restarting them). `notice`: the
    default detectors (pulses, push connections) publish the failure; `snapshot`: none runs (no pulses,
    streams dispatch), so the failover loop sees the worker leave its snapshot when its heartbeat expires."""
    update: dict[str, object] = {"executors": 3, "executor_port": free_port(consecutive=3)}
    if request.param == "snapshot":
        update |= {"pulse_interval_s": 0.0, "dispatch": "streams"}
    settings = _settings(tmp_path / "var").model_copy(update=update)
    suite = start_suite(settings)
    url = f"http://127.0.0.1:{settings.gateway_port}"
    admin = httpx.Client(base_url=url, headers={"Authorization": f"Bearer {settings.admin_key}"}, timeout=60)
    try:
        yield RunningSuite(suite=suite, settings=settings, url=url, admin=admin)
    finally:
        admin.close()
        suite.stop()


def failover_events(running: RunningSuite) -> list[dict[str, Any]]:
    response = running.admin.get("/v1/events", params={"kind": "failover", "limit": 1000})
    assert response.status_code == 200, response.text
    events: list[dict[str, Any]] = response.json()["events"]
    return events


def find(events: list[dict[str, Any]], app: str, action: str, outcome: str = "done") -> dict[str, Any] | None:
    return next(
        (
            e
            for e in events
            if e["details"]["app"] == app and e["action"] == action and e["outcome"] == outcome
        ),
        None,
    )


def seen(running: RunningSuite, app: str, action: str) -> list[dict[str, Any]] | None:
    """The failover events once one of `action` for `app` is among them."""
    events = failover_events(running)
    return events if find(events, app, action) else None


def body() -> dict[str, object]:
    row = np.linspace(0.5, 5.0, 13, dtype=np.float32)
    return {"inputs": {"chem": [row[:CHEM].tolist()], "color": [row[CHEM:].tolist()]}}


def test_warm_backup_answers_for_a_killed_worker_and_a_normal_app_fails_over_cold(
    three_workers: RunningSuite, tmp_path: Path
) -> None:
    running, admin = three_workers, three_workers.admin
    keys = {}
    for app, criticality in (("cellar", "critical"), ("vineyard", "normal")):
        # No warm instance on ready and no prediction cache: instances are where the test loads them,
        # and every answer is computed by one.
        terms = {"criticality": criticality, "warm_instances": 0, "cache": False}
        created = admin.post("/v1/apps", json={"name": app, **terms})
        assert created.status_code == 201, created.text
        assert created.json()["criticality"] == criticality
        keys[app] = created.json()["api_key"]
        (tmp_path / app).mkdir()
        model = f"wine-{app}"
        assert register_wine(admin, tmp_path / app, app=app, name=model).status_code == 202
    bad = admin.patch("/v1/apps/vineyard", json={"criticality": "vital"})
    assert bad.status_code == 422 and "error" in bad.json()
    for app in keys:
        assert running.wait_ready(f"wine-{app}")["status"] == "ready"

    # Both apps' primaries on the first executor: every ready variant of each, whichever selection takes.
    first = f"http://127.0.0.1:{running.suite.port('executor')}"
    loaded = {}
    for app in keys:
        variants = admin.get(f"/v1/models/wine-{app}/variants").json()
        loaded[app] = {v["id"] for v in variants if v["status"] == "ready"}

    async def load_primaries() -> None:
        executors = ExecutorClient(internal_key=running.settings.internal_key)
        try:
            for vid in sorted(set().union(*loaded.values())):
                await executors.load(first, vid)
        finally:
            await executors.aclose()

    asyncio.run(load_primaries())
    clients = {app: running.client(key) for app, key in keys.items()}
    try:
        for app, client in clients.items():
            answer = client.post(f"/v1/apps/{app}/infer", json=body())
            assert answer.status_code == 200, answer.text
            assert "failover" not in answer.json()
            if app == "vineyard":  # (cellar's warm backup, once placed, is an active instance too)
                assert answer.json()["worker"].endswith(f"-{running.suite.port('executor')}")

        # The proactive ILP places cellar's warm backup, never beside its primary.
        wait_for(lambda: find(failover_events(running), "cellar", "warm_backup"), what="a warm backup")
        placed = find(failover_events(running), "cellar", "warm_backup")
        assert placed is not None
        backup_worker, backup_variant = placed["worker"], placed["variant"]
        assert not backup_worker.endswith(f"-{running.suite.port('executor')}")
        assert "critical app: warm backup" in placed["reason"]
        assert find(failover_events(running), "vineyard", "warm_backup") is None  # normal: cold only

        os.kill(running.suite.procs["executor"].pid, signal.SIGKILL)

        # cellar: once the failure is declared, its warm backup is its primary and answers (a query sent
        # before that goes to the dead worker and is re-sent by the scheduler: part of detection).
        events = wait_for(
            lambda: seen(running, "cellar", "warm_failover"), what="warm failover", timeout_s=60
        )
        warm = find(events, "cellar", "warm_failover")
        assert warm is not None and "now served by its warm backup" in warm["reason"]
        if running.settings.pulse_interval_s == 0:  # no detector ran: the loop's own fallback acted
            assert "left the planner's snapshot" in warm["reason"]
        assert (warm["variant"], warm["worker"]) == (backup_variant, backup_worker)
        assert find(events, "cellar", "progressive_failover", "decided") is None  # no cold load for it
        response = clients["cellar"].post("/v1/apps/cellar/infer", json=body())
        assert response.status_code == 200, response.text
        answered = response.json()
        # The promoted backup answers, or the backup the next plan places for it (on the one other live
        # worker: an active instance too, which selection may prefer when its variant is cheaper). Never
        # the killed worker, and never an instance cold-loaded for the query.
        rebacked = {
            (e["worker"], e["variant"])
            for e in failover_events(running)
            if e["details"]["app"] == "cellar" and e["action"] == "warm_backup" and e["outcome"] == "done"
            and e["id"] > warm["id"]
        }  # fmt: skip
        assert (answered["worker"], answered["variant"]) in {(backup_worker, backup_variant)} | rebacked, (
            answered["reason"],
            rebacked,
        )
        assert not answered["worker"].endswith(f"-{running.suite.port('executor')}")
        if "failover" in answered:  # another variant than the one that failed: it says so
            assert answered["failover"]["from"] in loaded["cellar"] - {backup_variant}

        # vineyard: Algorithm 1 placed a cold backup on a live worker, smallest first, and it answers.
        events = wait_for(lambda: seen(running, "vineyard", "upgraded"), what="cold failover", timeout_s=60)
        decided = find(events, "vineyard", "progressive_failover", "decided")
        assert decided is not None and "δ =" in decided["reason"]
        assert not decided["worker"].endswith(f"-{running.suite.port('executor')}")
        response = clients["vineyard"].post("/v1/apps/vineyard/infer", json=body())
        assert response.status_code == 200, response.text
        assert not response.json()["worker"].endswith(f"-{running.suite.port('executor')}")
    finally:
        for client in clients.values():
            client.close()


def declared(store: redis.Redis, worker: str) -> list[bytes]:
    return list(store.scan_iter(match=claim_key(worker, "*")))


@pytest.mark.parametrize("three_workers", ["notice"], indirect=True)
def test_a_failure_while_no_planner_runs_is_failed_over_by_the_planner_that_starts(
    three_workers: RunningSuite, tmp_path: Path
) -> None:
    """The planner is killed, then the worker serving an app: the gateway's scheduler declares the
    failure, which no planner hears. The planner started again finds it on taking the lead, records it,
    and fails the app over, saying why late."""
    running, admin, suite = three_workers, three_workers.admin, three_workers.suite
    created = admin.post("/v1/apps", json={"name": "orchard", "warm_instances": 0, "cache": False})
    assert created.status_code == 201, created.text
    assert register_wine(admin, tmp_path, app="orchard", name="wine-orchard").status_code == 202
    assert running.wait_ready("wine-orchard")["status"] == "ready"
    variants = admin.get("/v1/models/wine-orchard/variants").json()
    port = suite.port("executor")
    first = f"http://127.0.0.1:{port}"

    async def load_all() -> None:
        executors = ExecutorClient(internal_key=running.settings.internal_key)
        try:
            for vid in sorted(v["id"] for v in variants if v["status"] == "ready"):
                await executors.load(first, vid)
        finally:
            await executors.aclose()

    asyncio.run(load_all())
    store = redis.Redis.from_url(running.settings.require_redis())
    try:
        with running.client(created.json()["api_key"]) as client:
            answer = client.post("/v1/apps/orchard/infer", json=body())
            assert answer.status_code == 200, answer.text
            victim = answer.json()["worker"]
            assert victim.endswith(f"-{port}")  # its only instances are there

            suite.procs["planner"].kill()
            suite.procs["planner"].wait(timeout=30)
            suite.procs["executor"].kill()
            suite.procs["executor"].wait(timeout=30)
            # Declared by the scheduler (its push connection dropped; a query sent meanwhile is
            # answered by an instance it cold-loads elsewhere), heard by no planner.
            wait_for(lambda: declared(store, victim), what="the failure declared", timeout_s=30)

            suite.restart("planner")
            suite.wait_healthy(("planner",))
            events = wait_for(lambda: seen(running, "orchard", "upgraded"), what="failover", timeout_s=90)
            decided = find(events, "orchard", "progressive_failover", "decided")
            assert decided is not None and decided["reason"].startswith(f"{victim} failed")
            assert "found on taking the lead" in decided["reason"]
            assert not decided["worker"].endswith(f"-{port}")
            recorded = running.admin.get("/v1/events", params={"kind": "failure", "limit": 1000}).json()
            assert any(e["worker"] == victim and e["action"] == "declared" for e in recorded["events"]), (
                recorded
            )
            after = client.post("/v1/apps/orchard/infer", json=body())
            assert after.status_code == 200, after.text
            assert after.json()["worker"] != victim
    finally:
        store.close()
