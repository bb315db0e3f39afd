"""Parity models through the real product: a whole suite (gateway with the embedded dispatcher, registry,
profiler worker training the parity model, planner placing it, three executors), the breast-cancer MLP of
tests/e2e/test_parity.py, Poisson arrivals over HTTP, and stragglers: one of the three executors, drawn
at random, SIGSTOPped for `--pause-ms` about every `--pause-every-ms` (the same draws in every
configuration). Configurations: `none` (the model on two executors), `parity k=2` (the same two, and the
parity model, which the planner places on the third), `replica` (the model on all three: equal
resources). Reports median, p99, p99.9, the p99.9 − median gap and how many answers were reconstructed;
writes docs/img/parity_serving.json.

    .venv/bin/python -m bench.papers.parity_serving --queries 6000 --rate 100
"""

from __future__ import annotations

import argparse
import asyncio
import random
import signal
import socket
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import orjson
import redis

from infaas.clients.executor import ExecutorClient
from infaas.data import store
from infaas.policy.parity import PARITY_MARK
from infaas.processes.suite import free_port
from tests.e2e.conftest import RunningSuite, _settings, own_suite
from tests.e2e.test_parity import tumour_model, wait_parity
from tests.polling import wait_for

APP = "bench-ward"
EXECUTORS = ("executor", "executor-2", "executor-3")


def worker_id(running: RunningSuite, name: str) -> str:
    return f"cpu-{socket.gethostname()}-{running.suite.port(name)}"


async def offer(
    running: RunningSuite, key: str, rows: np.ndarray, args: argparse.Namespace, seed: int
) -> list[tuple[float, bool, int, str]]:
    """Open-loop Poisson arrivals; returns (latency ms, reconstructed, status, worker) per query."""
    rng = np.random.default_rng(seed)
    gaps = rng.exponential(1.0 / args.rate, size=args.queries)
    pauses = random.Random(seed)
    procs = [running.suite.procs[n] for n in EXECUTORS]
    out: list[tuple[float, bool, int, str]] = [(0.0, False, 0, "")] * args.queries
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    limits = httpx.Limits(max_connections=256)

    async def straggle(stop: asyncio.Event) -> None:
        while not stop.is_set():
            await asyncio.sleep(pauses.expovariate(1000.0 / args.pause_every_ms))
            victim = procs[pauses.randrange(len(procs))]
            victim.send_signal(signal.SIGSTOP)
            try:
                await asyncio.sleep(args.pause_ms / 1000)
            finally:
                victim.send_signal(signal.SIGCONT)

    async with httpx.AsyncClient(base_url=running.url, headers=headers, timeout=60, limits=limits) as client:

        async def one(i: int) -> None:
            body = orjson.dumps({"inputs": {"measurements": [rows[i % len(rows)].tolist()]}})
            t0 = time.perf_counter()
            try:
                r = await client.post(f"/v1/apps/{APP}/infer", content=body)
                doc = r.json() if r.status_code == 200 else {}
                ms = (time.perf_counter() - t0) * 1000
                out[i] = (ms, bool(doc.get("reconstructed")), r.status_code, str(doc.get("worker", "")))
            except httpx.HTTPError:
                out[i] = ((time.perf_counter() - t0) * 1000, False, 0, "")

        stop = asyncio.Event()
        stragglers = asyncio.create_task(straggle(stop))
        tasks = []
        start = time.perf_counter()
        due = start
        try:
            for i in range(args.queries):
                due += gaps[i]
                await asyncio.sleep(max(0.0, due - time.perf_counter()))
                tasks.append(asyncio.create_task(one(i)))
            await asyncio.gather(*tasks)
        finally:
            stop.set()
            await stragglers
            for p in procs:
                p.send_signal(signal.SIGCONT)
    return out


def summary(name: str, shots: list[tuple[float, bool, int, str]]) -> dict[str, Any]:
    ok = np.array([ms for ms, _, status, _ in shots if status == 200])
    p50, p99, p999 = (float(np.percentile(ok, q)) for q in (50, 99, 99.9))
    return {
        "configuration": name,
        "answered": int(len(ok)),
        "failed": len(shots) - int(len(ok)),
        "reconstructed": sum(r for _, r, _, _ in shots),
        "answered_by": dict(Counter(w for _, _, _, w in shots)),
        "median_ms": round(p50, 2),
        "p99_ms": round(p99, 2),
        "p999_ms": round(p999, 2),
        "gap_ms": round(p999 - p50, 2),
    }


def serving(running: RunningSuite, sync: redis.Redis, vid: str, want: int) -> None:
    """Wait until `vid` is active on `want` executors and stays so for 3 s (the dispatcher's snapshot
    sees it within its 0.5 s poll); the configuration is measured on what actually serves."""

    def active_on() -> int:
        return sum(
            orjson.loads(state).get("state") == "active"
            for w in EXECUTORS
            for v, state in sync.hgetall(store.instances_key(worker_id(running, w))).items()
            if store.text(v) == vid
        )

    def states() -> dict[str, str]:
        return {
            w: orjson.loads(state).get("state", "?")
            for w in EXECUTORS
            for v, state in sync.hgetall(store.instances_key(worker_id(running, w))).items()
            if store.text(v) == vid
        }

    wait_for(lambda: active_on() == want, what=f"{vid} active on {want} executors", timeout_s=90)
    time.sleep(3)
    assert active_on() == want, f"{vid} is active on {active_on()} executors, not {want}: {states()}"


def run(args: argparse.Namespace) -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory() as tmp:
        settings = _settings(Path(tmp) / "var").model_copy(
            update={"executors": 3, "executor_port": free_port(consecutive=3)}
        )
        with own_suite(settings) as running:
            return configurations(running, Path(tmp), args)


def configurations(running: RunningSuite, tmp: Path, args: argparse.Namespace) -> list[dict[str, Any]]:
    # The app's warm floor holds the instances each configuration needs: without it the planner scales
    # the model in to one instance at this load, and every own answer comes from one executor.
    created = running.admin.post(
        "/v1/apps", json={"name": APP, "cache": False, "slo_policy": "best_effort", "warm_instances": 2}
    )
    key = created.json()["api_key"]
    model, validation = tumour_model(tmp)
    rows = np.load(tmp / "tumour.npz")["x"]
    meta = orjson.dumps({"name": "bench-tumour", "app": APP, "task": "classification"}).decode()
    files = {"file": ("t.onnx", model), "validation": ("t.npz", validation)}
    with running.client(key) as client:
        assert client.post("/v1/models", files=files, data={"metadata": meta}).status_code == 202
        assert running.wait_ready("bench-tumour", timeout_s=300)["status"] == "ready"
        first = client.post(
            f"/v1/apps/{APP}/infer",
            content=orjson.dumps({"inputs": {"measurements": [rows[0].tolist()]}}),
        )
        vid = first.json()["variant"]
    sync = redis.Redis.from_url(running.settings.require_redis())

    async def place(names: tuple[str, ...]) -> None:
        executors = ExecutorClient(internal_key=running.settings.internal_key)
        try:
            for name in names:
                await executors.load(f"http://127.0.0.1:{running.suite.port(name)}", vid)
        finally:
            await executors.aclose()

    asyncio.run(place(EXECUTORS[:2]))
    serving(running, sync, vid, 2)
    results = [summary("none", asyncio.run(offer(running, key, rows, args, seed=7)))]
    print(results[-1], flush=True)
    with running.client(key) as client:
        assert (
            client.patch(f"/v1/apps/{APP}", json={"redundancy": {"kind": "parity", "k": 2}}).status_code
            == 200
        )
    status = wait_parity(running, "bench-tumour")
    assert status["state"] == "ready", status

    def parity_active() -> bool:  # the planner placed the parity model
        return any(
            PARITY_MARK in store.text(v) and orjson.loads(state).get("state") == "active"
            for w in EXECUTORS
            for v, state in sync.hgetall(store.instances_key(worker_id(running, w))).items()
        )

    wait_for(parity_active, what="the parity instance", timeout_s=60, every_s=0.2)
    serving(running, sync, vid, 2)
    results.append(summary("parity k=2", asyncio.run(offer(running, key, rows, args, seed=7))))
    results[-1]["degraded_accuracy"] = status["degraded_score"]
    print(results[-1], flush=True)

    with running.client(key) as client:  # parity off: the planner unloads the parity instance
        assert client.patch(f"/v1/apps/{APP}", json={"redundancy": {"kind": "none"}}).status_code == 200
    wait_for(lambda: not parity_active(), what="the parity instance unloaded", timeout_s=60, every_s=0.2)
    with running.client(key) as client:
        assert client.patch(f"/v1/apps/{APP}", json={"warm_instances": 3}).status_code == 200
    asyncio.run(place(EXECUTORS[2:]))
    serving(running, sync, vid, 3)
    results.append(summary("replica", asyncio.run(offer(running, key, rows, args, seed=7))))
    print(results[-1], flush=True)
    sync.close()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--queries", type=int, default=6000)
    parser.add_argument("--rate", type=float, default=100.0)
    parser.add_argument("--pause-ms", type=float, default=50.0)
    parser.add_argument("--pause-every-ms", type=float, default=500.0)
    parser.add_argument("--out", type=Path, default=Path("docs/img/parity_serving.json"))
    args = parser.parse_args()
    results = run(args)
    args.out.write_bytes(
        orjson.dumps({"args": {k: str(v) for k, v in vars(args).items()}, "results": results})
    )
    for r in results:
        print(r)


if __name__ == "__main__":
    main()
