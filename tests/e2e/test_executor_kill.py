"""A serving executor SIGKILLed under open-loop load, on a whole supervised suite, in both dispatch modes:
every query is answered with its own row's logits (the app's SLO policy is `best_effort`: an answer late
for its SLO is still the answer, said by `slo_met`; none is an error or a default), each once; the
failure is one `failure`/`declared` event and the survivor's first answer a `failure`/`recovered` event
with its MTTR; the supervisor restarts the executor, which rejoins as a new incarnation."""

from __future__ import annotations

import asyncio
import signal
import socket
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import onnxruntime as ort
import orjson
import pytest
import redis

from infaas.clients.executor import ExecutorClient
from infaas.data import store
from tests.e2e.conftest import RunningSuite, _settings, own_suite
from tests.e2e.wine import CHEM, register_wine, wine_body, wine_rows
from tests.polling import wait_for

pytestmark = pytest.mark.e2e

APP = "cellar"
QUERIES = 300


def _worker(running: RunningSuite, name: str) -> str:
    return f"cpu-{socket.gethostname()}-{running.suite.port(name)}"


def _incarnation(client: redis.Redis, worker: str) -> str:
    return store.text(client.hget(store.worker_key(worker), "incarnation") or b"")


def _active(client: redis.Redis, worker: str, vid: str) -> bool:
    raw = client.hget(store.instances_key(worker), vid)
    return raw is not None and orjson.loads(raw).get("state") == "active"


async def _offer_and_kill(
    running: RunningSuite, key: str, rows: np.ndarray
) -> list[httpx.Response | Exception]:
    """One query per row, 10 ms apart whatever the answers (open loop); `executor` is SIGKILLed once a
    third of them were sent."""
    results: list[httpx.Response | Exception] = [RuntimeError("not answered")] * len(rows)
    limits = httpx.Limits(max_connections=len(rows))
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    async with httpx.AsyncClient(base_url=running.url, headers=headers, timeout=60, limits=limits) as client:

        async def one(i: int) -> None:
            try:
                results[i] = await client.post(f"/v1/apps/{APP}/infer", content=wine_body(rows[i]))
            except httpx.HTTPError as exc:
                results[i] = exc

        tasks = []
        for i in range(len(rows)):
            tasks.append(asyncio.create_task(one(i)))
            if i == len(rows) // 3:
                running.suite.procs["executor"].send_signal(signal.SIGKILL)
            await asyncio.sleep(0.01)  # the offered rate: the scenario, not a wait
        await asyncio.gather(*tasks)
    return results


def _failure_events(running: RunningSuite) -> list[dict[str, Any]]:
    response = running.admin.get("/v1/events", params={"kind": "failure", "limit": 1000})
    assert response.status_code == 200, response.text
    events: list[dict[str, Any]] = response.json()["events"]
    return events


@pytest.mark.parametrize("dispatch", ["push", "streams"])
def test_a_serving_executor_killed_under_load_answers_every_query_once_and_rejoins(
    tmp_path: Path, dispatch: str
) -> None:
    settings = _settings(tmp_path / "var", dispatch=dispatch)
    with own_suite(settings, supervised=True, events=True) as running:
        created = running.admin.post(
            "/v1/apps", json={"name": APP, "cache": False, "slo_policy": "best_effort"}
        )
        assert created.status_code == 201, created.text
        key = created.json()["api_key"]
        with running.client(key) as client:
            assert register_wine(client, tmp_path, app=APP).status_code == 202
            assert running.wait_ready("wine", timeout_s=300)["status"] == "ready"
            first = client.post(f"/v1/apps/{APP}/infer", content=wine_body(wine_rows(1)[0]))
            assert first.status_code == 200, first.text
        vid = first.json()["variant"]

        # The chosen variant served by both executors: the victim's queries have a survivor to go to.
        async def place() -> None:
            executors = ExecutorClient(internal_key=settings.internal_key)
            try:
                for name in ("executor", "executor-2"):
                    await executors.load(f"http://127.0.0.1:{running.suite.port(name)}", vid)
            finally:
                await executors.aclose()

        asyncio.run(place())
        victim, survivor = _worker(running, "executor"), _worker(running, "executor-2")
        sync = redis.Redis.from_url(settings.require_redis())
        try:
            wait_for(
                lambda: _active(sync, victim, vid) and _active(sync, survivor, vid),
                what=f"{vid} active on both executors",
                timeout_s=60,
                every_s=0.1,
            )
            before = _incarnation(sync, victim)
            assert before

            rows = wine_rows(QUERIES)
            results = asyncio.run(_offer_and_kill(running, key, rows))

            errors = [
                r if isinstance(r, Exception) else r.text
                for r in results
                if not isinstance(r, httpx.Response) or r.status_code != 200
            ]
            assert not errors, f"{len(errors)} of {QUERIES} queries not answered: {errors[:3]}"
            answers = [r.json() for r in results if isinstance(r, httpx.Response)]
            expected = ort.InferenceSession(str(tmp_path / "wine.onnx")).run(
                ["logits"], {"chem": rows[:, :CHEM], "color": rows[:, CHEM:]}
            )[0]
            got = np.array([a["outputs"]["logits"][0] for a in answers], dtype=np.float32)
            # Each answer is its own row's (the nearest of all rows' expected logits: no query got
            # another's), and close to ONNX Runtime's (loosely: the chosen variant may be int8).
            nearest = np.linalg.norm(got[:, None, :] - expected[None, :, :], axis=2).argmin(axis=1)
            assert (nearest == np.arange(QUERIES)).all()
            np.testing.assert_allclose(got, expected, rtol=0.05, atol=0.25)
            assert not any(a["default"] for a in answers)  # the model answered, not the app's default
            assert len({a["request_id"] for a in answers}) == QUERIES  # each query answered once
            served = [a["worker"] for a in answers]
            assert victim in served[: QUERIES // 3] and survivor in served, served  # killed while serving

            # The failure and the recovery, as events: one declaration, and the MTTR.
            def recorded() -> list[dict[str, Any]]:
                events = [
                    e
                    for e in _failure_events(running)
                    if victim in (e["worker"], (e["details"] or {}).get("failed_worker"))
                ]
                return events if any(e["action"] == "recovered" for e in events) else []

            events = wait_for(recorded, what="the failure's events", timeout_s=30, every_s=0.2)
            declared = [e for e in events if e["action"] == "declared"]
            assert len(declared) == 1, declared
            assert declared[0]["details"]["detector"] in ("planner", "scheduler", "provider")
            assert declared[0]["details"]["incarnation"] == before
            recovered = next(e for e in events if e["action"] == "recovered")
            assert recovered["worker"] == survivor and recovered["model"] == "wine"
            assert recovered["details"]["mttr_ms"] >= 0 and "MTTR" in recovered["reason"]

            # The supervisor restarted it: a new incarnation heartbeats under the same worker id.
            after = wait_for(
                lambda: (inc := _incarnation(sync, victim)) != before and inc,
                what="the restarted executor's heartbeat",
                timeout_s=60,
                every_s=0.1,
            )
            assert after and running.suite.restarts.get("executor") == 1
            restarts = running.admin.get("/v1/events", params={"kind": "supervisor", "limit": 100}).json()
            assert any(
                e["action"] == "restarted" and (e["details"] or {}).get("service") == "executor"
                for e in restarts["events"]
            )
        finally:
            sync.close()
