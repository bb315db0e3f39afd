"""Failures: detection and recovery on a whole suite (`infaas_cli.launcher.start_suite`), per dispatch mode.

Two executors serve the wine model (tests/e2e/wine.py): the variant the scheduler chose for the first
query, loaded on both; the app is queried over HTTP at an open-loop Poisson rate (bench/common/loadgen.py).
Phases, in order:

1. **False alarms** (`--stress-s`, 0 skips it): that long at `--rate` with `--hogs` busy-loop processes
   competing for the CPU. Counts the failure notices about these live executors, the planner's suspects
   (silent, but its probe found the port accepting: `infaas_failures_suspected_total`), and, from a
   recording copy of the planner's rule in a process of its own, the worst silence of every gap between
   two pulses: how many gaps silence alone would have declared at 2, 3, 4 misses.
2. **Staged false alarms** (`--staged`): `--kill-s` seconds of load, each live executor in turn declared
   failed a third of the way in (`declare_failure`, as a detector on a false alarm): queries not answered
   200, and how many the declared executor answered anyway.
3. **Stalls** (`--stalls`, 0 skips them): `executor` paused with SIGSTOP for 60, 100, 200 and 400 ms
   under load (each longer than two pulse intervals, shorter than `pulse_hung_s`): how many were
   declared, how many the planner's probe kept as suspects, queries not answered 200.
4. **Pulse cost** (`--cost-s`, 0 skips it): both executors restarted with pulses off, on, off, on; per
   block, latency at `--cost-rate`, then each executor's and the planner's CPU over `--cost-s` idle.
5. **Kills** (`--kills`): `executor` SIGKILLed a third into `--kill-s` seconds of load, then restarted
   (it rejoins): kill → failure notice (detection), notice → first answer from the survivor (the
   scheduler's `Recovery`: MTTR), and queries not answered 200.

    python -m bench.papers.failover_detect --modes push streams --kills 5 --cost-s 10 --hogs 2
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import multiprocessing
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import orjson
import psutil
import redis
import redis.asyncio as aioredis

from bench.common.loadgen import Target, encode_request, percentile, poisson_schedule, run_open_loop
from infaas.clients.executor import ExecutorClient
from infaas.core.config import Settings
from infaas.data import store
from infaas.data.failures import (
    FAILURES_CHANNEL,
    RECOVERIES_CHANNEL,
    FailureNotice,
    Recovery,
    declare_failure,
)
from infaas.data.pulses import Pulse
from infaas.processes.suite import Suite
from infaas_cli.launcher import start_suite
from services.planner.failure_watch import FailureWatch
from tests.e2e.conftest import _settings
from tests.e2e.wine import CHEM, register_wine
from tests.polling import wait_for

APP = "cellar"


class Margins(FailureWatch):
    """The planner's detection rule, recording instead of declaring: per gap between two pulses of a
    worker, the longest silence any echo measured in it (what the rule compares with the timeout),
    one line (ms) per gap appended to `out`."""

    def __init__(self, client: aioredis.Redis, *, interval_s: float, key: str, out: Any) -> None:
        super().__init__(client, None, interval_s=interval_s, misses=1, key=key)
        self.late_s = 0.0  # echo every interval (the planner echoes only while a worker is late)
        self.worst: dict[str, float] = {}
        self.out = out

    async def _check_silent(self, echo_sent_at: float) -> None:
        for worker, heard in self.heard.items():
            self.worst[worker] = max(self.worst.get(worker, 0.0), echo_sent_at - heard)

    def on_pulse(self, pulse: Pulse, now: float) -> None:
        if pulse.worker != self.me and pulse.worker in self.worst:
            self.out.write(f"{self.worst.pop(pulse.worker) * 1000:.3f}\n")
            self.out.flush()
        super().on_pulse(pulse, now)


def _margins_main(redis_url: str, interval_s: float, key: str, path: str) -> None:
    """Record until terminated (the file holds every gap so far)."""

    async def go() -> None:
        client = aioredis.Redis.from_url(redis_url)
        with open(path, "w") as out:
            watch = Margins(client, interval_s=interval_s, key=key, out=out)
            await watch.start()
            Path(path + ".ready").touch()
            await asyncio.Event().wait()

    asyncio.run(go())


def _error_bodies(result: Any) -> dict[int, str]:
    return {status: body.decode(errors="replace")[:300] for status, body in result.error_bodies.items()}


def _suspected(settings: Settings) -> float:
    """The planner's count of silent workers found alive by a probe (a stall, not declared)."""
    url = f"http://127.0.0.1:{settings.planner_port}/metrics"
    text = httpx.get(url, headers={"Authorization": f"Bearer {settings.internal_key}"}, timeout=10).text
    for line in text.splitlines():
        if line.startswith("infaas_failures_suspected_total "):
            return float(line.split()[1])
    return 0.0


def _hogs(n: int) -> list[subprocess.Popen[bytes]]:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def _request(url: str, key: str) -> Any:
    target = Target.parse(url)
    head = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}

    def make(i: int) -> bytes:
        row = [5.0 + (i % 9973) * 1e-4 + k * 0.1 for k in range(13)]  # distinct rows: no cache hit
        body = orjson.dumps({"inputs": {"chem": [row[:CHEM]], "color": [row[CHEM:]]}})
        return encode_request("POST", target.authority, f"/v1/apps/{APP}/infer", body, head)

    return target, make


async def _load(url: str, key: str, rate: float, seconds: float, seed: int) -> Any:
    target, make = _request(url, key)
    schedule = poisson_schedule(rate=rate, duration_s=seconds, seed=seed)
    return await run_open_loop(target, make, schedule, connections=64, duration_s=seconds, drain_s=15)


def _cpu(pids: dict[str, int]) -> dict[str, float]:
    out = {}
    for name, pid in pids.items():
        t = psutil.Process(pid).cpu_times()
        out[name] = t.user + t.system
    return out


def _worker(suite: Suite, name: str) -> str:
    import socket

    return f"cpu-{socket.gethostname()}-{suite.port(name)}"


async def _place(settings: Settings, suite: Suite, vids: list[str], names: tuple[str, ...]) -> None:
    client = ExecutorClient(internal_key=settings.internal_key)
    try:
        for name in names:
            for vid in vids:
                await client.load(f"http://127.0.0.1:{suite.port(name)}", vid)
    finally:
        await client.aclose()


def _serving(settings: Settings, suite: Suite, vids: list[str], names: tuple[str, ...]) -> bool:
    client = redis.Redis.from_url(settings.require_redis())
    try:
        for name in names:
            raw = client.hgetall(store.instances_key(_worker(suite, name)))
            states = {store.text(k): orjson.loads(v).get("state") for k, v in raw.items()}
            if any(states.get(v) != "active" for v in vids):
                return False
        return True
    finally:
        client.close()


def false_alarms(settings: Settings, url: str, key: str, args: argparse.Namespace) -> dict[str, Any]:
    path = tempfile.mktemp(prefix="margins-", suffix=".txt")
    margins = multiprocessing.get_context("spawn").Process(
        target=_margins_main,
        args=(settings.require_redis(), settings.pulse_interval_s, settings.internal_key, path),
        daemon=True,
    )
    margins.start()
    wait_for(lambda: Path(path + ".ready").exists(), what="the recorder", timeout_s=300, every_s=0.2)
    time.sleep(1.0)  # pulses heard from every executor
    notices: list[FailureNotice] = []
    suspected_before = _suspected(settings)
    hogs = _hogs(args.hogs)
    try:
        result = asyncio.run(
            _with_notices(_load(url, key, args.rate, args.stress_s, 1), settings, notices, [])
        )
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
        margins.terminate()
        margins.join()
    gaps = [float(line) / 1000 for line in Path(path).read_text().split()]
    interval = settings.pulse_interval_s
    return {
        "seconds": args.stress_s,
        "hogs": args.hogs,
        "load": result.summary(),
        "error_bodies": _error_bodies(result),
        "suspected": _suspected(settings) - suspected_before,
        "declared": [(n.worker, n.detector, n.reason) for n in notices],
        "gaps": len(gaps),
        "worst_silence_ms": round(max(gaps) * 1000, 1) if gaps else None,
        "p99_9_silence_ms": round(percentile(gaps, 99.9) * 1000, 1) if gaps else None,
        "would_declare": {k: sum(g > k * interval for g in gaps) for k in (2, 3, 4)},
    }


async def _with_notices(
    load: Any, settings: Settings, notices: list[FailureNotice], recoveries: list[Recovery]
) -> Any:
    client = aioredis.Redis.from_url(settings.require_redis())
    pubsub = client.pubsub()
    await pubsub.subscribe(FAILURES_CHANNEL, RECOVERIES_CHANNEL)

    async def collect() -> None:
        async for message in pubsub.listen():
            if message["type"] != "message":
                continue
            if message["channel"] == FAILURES_CHANNEL.encode():
                notices.append(FailureNotice.decode(message["data"]))
            else:
                recoveries.append(Recovery.decode(message["data"]))

    task = asyncio.create_task(collect())
    try:
        return await load
    finally:
        await asyncio.sleep(0.5)  # a recovery published just after the last answer
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await pubsub.aclose()
        await client.aclose()


def staged(
    settings: Settings, suite: Suite, url: str, key: str, name: str, args: argparse.Namespace
) -> dict[str, Any]:
    """`--kill-s` seconds of load; a third of the way in, the live executor `name` declared failed as a
    detector would on a false alarm (`declare_failure`). What the clients saw, and who answered."""
    victim = _worker(suite, name)

    async def scenario() -> Any:
        client = aioredis.Redis.from_url(settings.require_redis())
        incarnation = store.text(await client.hget(store.worker_key(victim), "incarnation") or b"")

        async def declare() -> None:
            await asyncio.sleep(args.kill_s / 3)
            now = time.time()
            notice = FailureNotice(
                worker=victim,
                reason="a false alarm staged by the benchmark",
                detected_at=now,
                last_seen_at=now,
                detector="planner",
                incarnation=incarnation,
            )
            assert await declare_failure(client, notice) is not None

        task = asyncio.create_task(declare())
        try:
            return await _load(url, key, args.rate, args.kill_s, 30)
        finally:
            await task
            await client.aclose()

    result = asyncio.run(scenario())
    answered_by: dict[str, int] = {}
    for body in result.bodies:
        worker = str(orjson.loads(body).get("worker"))
        answered_by[worker] = answered_by.get(worker, 0) + 1
    wait_for(lambda: _back(settings, victim), what="its heartbeat again", timeout_s=30)
    return {
        "declared": name,
        "sent": result.sent,
        "not_200": result.errors(),
        "error_bodies": _error_bodies(result),
        "answered_by": {("declared" if w == victim else "other"): n for w, n in answered_by.items()},
    }


def stalls(settings: Settings, suite: Suite, url: str, key: str, args: argparse.Namespace) -> dict[str, Any]:
    """Under load at `--rate`, `executor` paused (SIGSTOP, then SIGCONT) for 60, 100, 200 and 400 ms,
    `--stalls` times each, 1 s apart: a stall far past the pulse timeout, on demand. Silence alone
    declares each one; what does the planner do, and what do the clients see?"""
    pid = suite.procs["executor"].pid
    durations = [0.06, 0.1, 0.2, 0.4] * args.stalls
    paused: list[float] = []
    notices: list[FailureNotice] = []

    async def scenario() -> Any:
        async def pauses() -> None:
            await asyncio.sleep(1.0)
            for d in durations:
                start = time.monotonic()
                os.kill(pid, signal.SIGSTOP)
                await asyncio.sleep(d)
                os.kill(pid, signal.SIGCONT)
                paused.append(time.monotonic() - start)
                await asyncio.sleep(1.0)

        task = asyncio.create_task(pauses())
        try:
            return await _load(url, key, args.rate, 1.0 + sum(durations) + len(durations) + 0.5, 50)
        finally:
            await task

    before = _suspected(settings)
    result = asyncio.run(_with_notices(scenario(), settings, notices, []))
    victim = _worker(suite, "executor")
    return {
        "stalls": len(paused),
        "paused_ms": [round(p * 1000) for p in paused],
        "declared": len([n for n in notices if n.worker == victim]),
        "suspected": _suspected(settings) - before,
        "sent": result.sent,
        "not_200": result.errors(),
        "error_bodies": _error_bodies(result),
    }


def _back(settings: Settings, worker: str) -> bool:
    client = redis.Redis.from_url(settings.require_redis())
    try:
        return float(client.zscore(store.WORKERS, worker) or 0) > time.time() - 3
    finally:
        client.close()


def _executors(settings: Settings, suite: Suite, vids: list[str], *, pulses: bool) -> None:
    """Restart both executors, pulsing at the configured interval or not at all, serving `vids`."""
    names = ("executor", "executor-2")
    for name in names:
        suite.procs[name].terminate()
        suite.procs[name].wait()
    for name in names:
        env = {"INFAAS_EXECUTOR_PORT": str(suite.port(name))}
        env["INFAAS_PULSE_INTERVAL_S"] = str(settings.pulse_interval_s if pulses else 0.0)
        suite.start(name, ["serve", "executor"], env)
    suite.wait_healthy(names)
    asyncio.run(_place(settings, suite, vids, names))
    wait_for(lambda: _serving(settings, suite, vids, names), what="both executors", timeout_s=60)
    time.sleep(2.0)  # their heartbeats in the scheduler's snapshot


def pulse_cost(
    settings: Settings, suite: Suite, url: str, key: str, vids: list[str], args: argparse.Namespace
) -> list[dict[str, Any]]:
    """Blocks with pulses off and on, alternating: latency under load, then CPU idle."""
    blocks = []
    for n, pulses in enumerate((False, True, False, True)):
        _executors(settings, suite, vids, pulses=pulses)
        result = asyncio.run(_load(url, key, args.cost_rate, args.cost_s, 2 + n))
        pids = {name: suite.procs[name].pid for name in ("executor", "executor-2", "planner")}
        before = _cpu(pids)
        time.sleep(args.cost_s)
        after = _cpu(pids)
        blocks.append(
            {
                "pulses": "on" if pulses else "off",
                "p50_ms": round(percentile(result.ok_latencies_ms, 50), 2),
                "p99_ms": round(percentile(result.ok_latencies_ms, 99), 2),
                "errors": result.errors(),
                "idle_cpu_percent_of_a_core": {
                    name: round((after[name] - before[name]) / args.cost_s * 100, 2) for name in pids
                },
            }
        )
        print(f"  {blocks[-1]}", flush=True)
    return blocks


async def _load_and_kill(
    url: str, key: str, args: argparse.Namespace, pid: int, killed_at: list[float], *, seed: int
) -> Any:
    """`--kill-s` seconds of load; `pid` SIGKILLed a third of the way in (the time into `killed_at`)."""

    def kill() -> None:
        killed_at.append(time.time())
        os.kill(pid, signal.SIGKILL)

    asyncio.get_running_loop().call_later(args.kill_s / 3, kill)
    return await _load(url, key, args.rate, args.kill_s, seed)


def kills(
    settings: Settings, suite: Suite, url: str, key: str, vids: list[str], args: argparse.Namespace
) -> dict[str, Any]:
    victim = _worker(suite, "executor")
    rows = []
    for k in range(args.kills):
        notices: list[FailureNotice] = []
        recoveries: list[Recovery] = []
        killed_at: list[float] = []
        pid = suite.procs["executor"].pid

        scenario = _load_and_kill(url, key, args, pid, killed_at, seed=10 + k)
        result = asyncio.run(_with_notices(scenario, settings, notices, recoveries))
        about = [n for n in notices if n.worker == victim]
        rec = [r for r in recoveries if r.worker == victim]
        rows.append(
            {
                "declared": len(about),
                "detector": about[0].detector if about else None,
                "detection_ms": round((about[0].detected_at - killed_at[0]) * 1000, 1) if about else None,
                "mttr_ms": round(rec[0].mttr_s * 1000, 1) if rec else None,
                "sent": result.sent,
                "not_200": result.errors(),
                "error_bodies": _error_bodies(result),
                "others_declared": [n.worker for n in notices if n.worker != victim],
            }
        )
        print(f"  kill {k + 1}: {rows[-1]}", flush=True)
        suite.procs["executor"].wait()
        suite.restart("executor")
        suite.wait_healthy(("executor",))
        asyncio.run(_place(settings, suite, vids, ("executor",)))
        wait_for(
            lambda: _serving(settings, suite, vids, ("executor",)),
            what="the restarted executor",
            timeout_s=60,
        )
        time.sleep(2.0)  # its heartbeat in every scheduler's snapshot
    detection = [r["detection_ms"] for r in rows if r["detection_ms"] is not None]
    mttr = [r["mttr_ms"] for r in rows if r["mttr_ms"] is not None]
    return {
        "rows": rows,
        "detection_ms": _stats(detection),
        "mttr_ms": _stats(mttr),
        "lost": sum(sum(r["not_200"].values()) for r in rows),
        "sent": sum(r["sent"] for r in rows),
    }


def _stats(values: list[float]) -> dict[str, float] | None:
    if not values:
        return None
    return {
        "min": min(values),
        "median": round(statistics.median(values), 1),
        "max": max(values),
        "n": len(values),
    }


def run_mode(mode: str, args: argparse.Namespace) -> dict[str, Any]:
    var = Path(tempfile.mkdtemp(prefix=f"detect-{mode}-"))
    settings = _settings(var / "var").model_copy(update={"dispatch": mode})
    suite = start_suite(settings)
    url = f"http://127.0.0.1:{settings.gateway_port}"
    admin = httpx.Client(base_url=url, headers={"Authorization": f"Bearer {settings.admin_key}"}, timeout=120)
    try:
        created = admin.post("/v1/apps", json={"name": APP, "cache": False, "slo_policy": "best_effort"})
        assert created.status_code == 201, created.text
        key = created.json()["api_key"]
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=120) as client:
            assert register_wine(client, var, app=APP).status_code == 202
        wait_for(lambda: admin.get("/v1/models/wine").json()["status"] == "ready", what="wine", timeout_s=300)
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=120) as client:
            first = client.post(
                f"/v1/apps/{APP}/infer",
                content=_request(url, key)[1](0).split(b"\r\n\r\n", 1)[1],
                headers={"Content-Type": "application/json"},
            )
            assert first.status_code == 200, first.text
        vids = [first.json()["variant"]]  # the variant the scheduler chose: served by both executors
        names = ("executor", "executor-2")
        asyncio.run(_place(settings, suite, vids, names))
        wait_for(lambda: _serving(settings, suite, vids, names), what="wine on both executors", timeout_s=60)
        out: dict[str, Any] = {"mode": mode, "variants": vids}
        if args.stress_s > 0:
            print(
                f"[{mode}] false alarms: {args.stress_s:.0f} s at {args.rate}/s with {args.hogs} CPU hogs",
                flush=True,
            )
            out["false_alarms"] = false_alarms(settings, url, key, args)
            print(f"  {out['false_alarms']}", flush=True)
        if args.staged:
            print(f"[{mode}] a staged false alarm about each executor, at {args.rate}/s", flush=True)
            out["staged"] = [staged(settings, suite, url, key, name, args) for name in names]
            print(f"  {out['staged']}", flush=True)
        if args.stalls > 0:
            print(f"[{mode}] an executor paused for 60-400 ms, {args.stalls} times each", flush=True)
            out["stalls"] = stalls(settings, suite, url, key, args)
            print(f"  {out['stalls']}", flush=True)
            wait_for(
                lambda: _back(settings, _worker(suite, "executor")), what="it heartbeating", timeout_s=30
            )
        if args.cost_s > 0:
            print(f"[{mode}] pulse cost: {args.cost_s:.0f} s at {args.cost_rate}/s, then idle", flush=True)
            out["pulse_cost"] = pulse_cost(settings, suite, url, key, vids, args)
        print(f"[{mode}] {args.kills} kills at {args.rate}/s", flush=True)
        out["kills"] = kills(settings, suite, url, key, vids, args)
        return out
    finally:
        admin.close()
        suite.stop()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--modes", nargs="+", default=["push", "streams"], choices=["push", "streams"])
    parser.add_argument("--rate", type=float, default=200.0, help="queries/s offered under stress and kills")
    parser.add_argument("--stress-s", type=float, default=60.0, help="0 skips the false-alarm phase")
    parser.add_argument("--hogs", type=int, default=2, help="busy-loop processes during the stress phase")
    parser.add_argument("--cost-s", type=float, default=20.0, help="0 skips the pulse-cost phase")
    parser.add_argument("--cost-rate", type=float, default=100.0)
    parser.add_argument("--staged", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--stalls", type=int, default=3, help="pauses of each length; 0 skips them")
    parser.add_argument("--kills", type=int, default=5)
    parser.add_argument("--kill-s", type=float, default=6.0)
    parser.add_argument("--json", type=Path, help="write the results here too")
    args = parser.parse_args()
    results = [run_mode(mode, args) for mode in args.modes]
    text = json.dumps(results, indent=1, default=str)
    print(text)
    if args.json:
        args.json.write_text(text)


if __name__ == "__main__":
    main()
