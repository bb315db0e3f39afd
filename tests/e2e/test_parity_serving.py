"""Serving with a parity model, on a whole suite: an app with `redundancy: parity` (k=2) and a real
trained parity model (the profiler worker trains it), its model served by both executors and its parity
model loaded by the planner; one executor is SIGSTOPped while queries flow open-loop, in both dispatch
modes. The queries stuck on it whose coding-group partner and parity query went to the other executor come
back reconstructed (`reconstructed: true`, counted in Prometheus), exactly the decoder's output; the others
with their own answers once it is continued; none is lost, each is answered once."""

from __future__ import annotations

import asyncio
import signal
import socket
import time
from pathlib import Path

import httpx
import numpy as np
import onnxruntime as ort
import orjson
import pytest
import redis

from infaas.clients.executor import ExecutorClient
from infaas.data import store
from infaas.data.artifacts import LocalArtifactStore
from tests.e2e.conftest import RunningSuite, _settings, own_suite
from tests.e2e.test_parity import tumour_model, wait_parity
from tests.polling import wait_for

pytestmark = pytest.mark.e2e

APP = "ward"
QUERIES = 128
BURST = 8
EVERY_S = 0.1
STOPPED_S = 0.6
RUNNING_S = 0.2


def _worker(running: RunningSuite, name: str) -> str:
    return f"cpu-{socket.gethostname()}-{running.suite.port(name)}"


def _states(client: redis.Redis, worker: str) -> dict[str, str]:
    raw = client.hgetall(store.instances_key(worker))
    return {store.text(k): orjson.loads(v).get("state") for k, v in raw.items()}


def _body(row: np.ndarray) -> bytes:
    return orjson.dumps({"inputs": {"measurements": [row.tolist()]}})


async def _offer_and_stop(
    running: RunningSuite, key: str, rows: np.ndarray, victim: str
) -> list[httpx.Response | Exception]:
    """Bursts of `BURST` queries at once every `EVERY_S` (open loop; a burst is whole coding groups, as
    the gap is longer than the group bound), while `victim` is paused for `STOPPED_S` out of every
    `STOPPED_S` + `RUNNING_S` from the third burst on. Bursts make both dispatch modes hand the paused
    executor queries: a push goes to the worker with the fewest in flight (ties to the same one), so a
    burst spreads over both; a stream entry goes to the consumer blocked longest, which the paused one
    is once it has come back from a pause."""
    results: list[httpx.Response | Exception] = [RuntimeError("not answered")] * len(rows)
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    limits = httpx.Limits(max_connections=len(rows))
    proc = running.suite.procs[victim]
    async with httpx.AsyncClient(base_url=running.url, headers=headers, timeout=60, limits=limits) as client:

        async def one(i: int) -> None:
            try:
                results[i] = await client.post(f"/v1/apps/{APP}/infer", content=_body(rows[i]))
            except httpx.HTTPError as exc:
                results[i] = exc

        tasks = []
        started = None
        try:
            for first in range(0, len(rows), BURST):
                if first == 2 * BURST:
                    started = time.monotonic()
                if started is not None:
                    phase = (time.monotonic() - started) % (STOPPED_S + RUNNING_S)
                    proc.send_signal(signal.SIGSTOP if phase < STOPPED_S else signal.SIGCONT)
                tasks += [asyncio.create_task(one(i)) for i in range(first, min(first + BURST, len(rows)))]
                await asyncio.sleep(EVERY_S)  # the offered rate: the scenario, not a wait
        finally:
            proc.send_signal(signal.SIGCONT)
        await asyncio.gather(*tasks)
    return results


@pytest.mark.parametrize("dispatch", ["push", "streams"])
def test_a_stopped_executors_queries_come_back_reconstructed(tmp_path: Path, dispatch: str) -> None:
    settings = _settings(tmp_path / "var", dispatch=dispatch)
    with own_suite(settings) as running:
        created = running.admin.post(
            "/v1/apps", json={"name": APP, "cache": False, "slo_policy": "best_effort"}
        )
        assert created.status_code == 201, created.text
        key = created.json()["api_key"]
        model, validation = tumour_model(tmp_path)
        metadata = orjson.dumps({"name": "tumour", "app": APP, "task": "classification"}).decode()
        files = {"file": ("tumour.onnx", model), "validation": ("tumour.npz", validation)}
        with running.client(key) as client:
            assert client.post("/v1/models", files=files, data={"metadata": metadata}).status_code == 202
            assert running.wait_ready("tumour", timeout_s=300)["status"] == "ready"
            turned = client.patch(f"/v1/apps/{APP}", json={"redundancy": {"kind": "parity", "k": 2}})
            assert turned.status_code == 200, turned.text
            status = wait_parity(running, "tumour")
            assert status["state"] == "ready", status
            x = np.load(tmp_path / "tumour.npz")["x"]
            first = client.post(f"/v1/apps/{APP}/infer", content=_body(x[0]))
            assert first.status_code == 200, first.text
            assert not first.json().get("reconstructed", False)
        vid = first.json()["variant"]

        async def place() -> None:  # the model's variant on both executors
            executors = ExecutorClient(internal_key=settings.internal_key)
            try:
                for name in ("executor", "executor-2"):
                    await executors.load(f"http://127.0.0.1:{running.suite.port(name)}", vid)
            finally:
                await executors.aclose()

        asyncio.run(place())
        sync = redis.Redis.from_url(settings.require_redis())
        names = {_worker(running, n): n for n in ("executor", "executor-2")}
        try:
            # The planner loads the parity model on a worker (once the model has an instance) and says so.
            def parity_on() -> str | None:
                with running.client(key) as client:
                    client.post(f"/v1/apps/{APP}/infer", content=_body(x[1]))
                for worker in names:
                    states = _states(sync, worker)
                    if states.get(vid) == "active" and any(
                        ".parity-k2-" in v and s == "active" for v, s in states.items()
                    ):
                        other = next(w for w in names if w != worker)
                        if _states(sync, other).get(vid) == "active":
                            return worker
                return None

            holder = wait_for(parity_on, what="the parity model active", timeout_s=60, every_s=0.5)
            victim = names[next(w for w in names if w != holder)]
            rows = x[:QUERIES]
            results = asyncio.run(_offer_and_stop(running, key, rows, victim))
        finally:
            sync.close()

        events = running.admin.get("/v1/events", params={"kind": "model_autoscaler", "limit": 1000}).json()
        loaded = [e for e in events["events"] if e["action"] == "load_parity" and e["outcome"] == "done"]
        assert loaded and loaded[0]["model"] == "tumour" and "parity redundancy k=2" in loaded[0]["reason"]
        errors = [
            r if isinstance(r, Exception) else r.text
            for r in results
            if not isinstance(r, httpx.Response) or r.status_code != 200
        ]
        assert not errors, f"{len(errors)} of {QUERIES} queries not answered: {errors[:3]}"
        answers = [r.json() for r in results if isinstance(r, httpx.Response)]
        assert len({a["request_id"] for a in answers}) == QUERIES  # each answered once
        expected = ort.InferenceSession(model).run(["malignancy"], {"measurements": rows})[0]
        got = np.array([a["outputs"]["malignancy"][0] for a in answers], dtype=np.float32)
        rebuilt = np.array([bool(a.get("reconstructed")) for a in answers])
        assert rebuilt.sum() >= 1, [a["worker"] for a in answers]
        for a in answers:
            if a.get("reconstructed"):
                assert a["worker"] == "parity" and "reconstructed from the parity model" in a["reason"]
        # Own answers from an fp32 form are exact. Under this load the planner may add another form as
        # accurate as the model on its validation set (an int8 one): its answers are close, not exact.
        # A reconstruction is the decoder's F_P(x_j + x_i) − F(x_i) for the query's coding-group partner i
        # (one of the other rows: the groups are formed in the dispatcher), F(x_i) being i's own answer,
        # computed here with the parity model the profiler trained.
        exact = ~rebuilt & np.array(["-fp32-" in a["variant"] for a in answers])
        np.testing.assert_allclose(got[exact], expected[exact], rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(got[~rebuilt & ~exact], expected[~rebuilt & ~exact], atol=0.1)
        own = np.where(rebuilt[:, None], expected, got)
        artifacts = LocalArtifactStore(settings.resolved_artifact_dir)
        parity_model = ort.InferenceSession(str(artifacts.path(status["artifact_digest"])))
        for j in np.flatnonzero(rebuilt):
            sums = (rows + rows[j]).astype(np.float32)
            decoded = parity_model.run(None, {"measurements": sums})[0] - own
            decoded[j] = np.inf  # a query is never its own partner
            assert np.abs(decoded - got[j]).max(axis=1).min() < 1e-4, (j, got[j])
        agree = (got[rebuilt].argmax(axis=1) == expected[rebuilt].argmax(axis=1)).mean()
        print(f"{rebuilt.sum()} of {QUERIES} reconstructed; class agrees with the model's on {agree:.2f}")
        text = running.scheduler_metrics()
        line = next(
            ln
            for ln in text.splitlines()
            if ln.startswith('infaas_scheduler_parity_total{outcome="reconstructed"}')
        )
        assert float(line.split()[-1]) >= rebuilt.sum()

        # The parity model is a hidden variant: published for executors, never listed as the model's.
        # Parity turned off: it is withdrawn at once.
        sync = redis.Redis.from_url(settings.require_redis())
        try:
            hidden = {store.text(v) for v in sync.smembers(store.PARITY_VARIANTS)}
            assert len(hidden) == 1 and ".parity-k2-" in next(iter(hidden)), hidden
            assert not hidden & {store.text(v) for v in sync.smembers(store.VARIANTS)}
            with running.client(key) as client:
                listed = {v["id"] for v in client.get("/v1/models/tumour/variants").json()}
                assert listed and not hidden & listed
                off = client.patch(f"/v1/apps/{APP}", json={"redundancy": {"kind": "none"}})
                assert off.status_code == 200, off.text
            assert sync.smembers(store.PARITY_VARIANTS) == set()
        finally:
            sync.close()

        # ... and the planner unloads its instance, and says so.
        def unloaded() -> list[dict[str, object]]:
            found = running.admin.get("/v1/events", params={"kind": "model_autoscaler", "limit": 1000})
            events: list[dict[str, object]] = found.json()["events"]
            return [e for e in events if e["action"] == "unload_parity" and e["outcome"] == "done"]

        assert wait_for(unloaded, what="the parity instance unloaded", timeout_s=30, every_s=0.5)
