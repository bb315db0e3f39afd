"""Faults under load: for each kind of fault, open-loop queries before, during and after it, counted as
sent / answered / failed, and the time from the fault to full service.

It starts `infaas run --no-demo` from a checkout (default: this one; `--checkout DIR` runs another, e.g.
an older commit for a before/after comparison: its packages come first on PYTHONPATH) with two executors
on its own Redis server, registers a two-input model (scikit-learn's wine data, tests/e2e/wine.py),
and then, per fault, sends `--rate` queries a second for `--seconds`, injecting the fault at
`--fault-at`. Each query's input is unique (no prediction-cache answers): every one takes the whole path.

Faults (`--faults`, comma-separated, default all):
  executor      SIGKILL the executor that holds the model (the other one can serve it)
  registry      SIGKILL the registry
  registry_down SIGSTOP the registry for `--down-s` (10 s; down, not dead: nothing restarts it), then
                SIGCONT
  planner, profiler, jobs   SIGKILL that service
  gateway       SIGKILL the gateway (the one public port: queries fail until it is back)
  redis_blip    SIGSTOP Redis for 2 s (unreachable, data kept), then SIGCONT
  redis_empty   restart Redis empty (SIGKILL, then a new server on the same port without the data)
  redis_empty_fresh_reader  Redis restarted empty, then the gateway SIGKILLed 2 s later: its restarted
                scheduler reads the published state fresh from Redis (a reader that kept its copy hides
                what Redis lost)

"Time to full service": from the fault to the send time of the first query after which every query was
answered (0 when none failed; `None` when service never came back within the run).

    python -m bench.diagnostics.chaos --out var/chaos-after.json
    git worktree add /tmp/before <commit>
    python -m bench.diagnostics.chaos --checkout /tmp/before --out var/chaos-before.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import zlib
from dataclasses import asdict, dataclass
from pathlib import Path

import httpx
import numpy as np
import psutil

from bench.common.paths import ROOT
from infaas.processes.suite import free_port
from tests.e2e.wine import CHEM, register_wine

FAULTS = (
    "executor",
    "registry",
    "registry_down",
    "planner",
    "profiler",
    "jobs",
    "gateway",
    "redis_blip",
    "redis_empty",
    "redis_empty_fresh_reader",
)


@dataclass
class Outcome:
    fault: str
    sent: int
    answered: int
    failed: int
    failures: dict[str, int]
    time_to_full_service_s: float | None
    p99_ms_after_fault: float | None
    p999_ms_after_fault: float | None = None
    max_ms_after_fault: float | None = None


class System:
    """One `infaas run` and the Redis server it uses."""

    def __init__(self, checkout: Path, var: Path) -> None:
        self.var = var
        self.redis_port = free_port()
        self.redis = self._start_redis()
        ports = {s: free_port() for s in ("gateway", "registry", "scheduler", "planner", "profiler_metrics")}
        self.gateway_port = ports["gateway"]
        env = {
            **os.environ,
            "PYTHONPATH": str(checkout),
            "INFAAS_VAR_DIR": str(var),
            "INFAAS_REDIS_URL": f"redis://127.0.0.1:{self.redis_port}/0",
            "INFAAS_EXECUTORS": "2",
            "INFAAS_EXECUTOR_PORT": str(free_port(consecutive=2)),
            "INFAAS_GATEWAY_HOST": "127.0.0.1",
            "INFAAS_PROFILE_SECONDS_PER_POINT": "0.05",
            "INFAAS_PROFILE_MIN_ITERATIONS": "20",
            **{f"INFAAS_{name.upper()}_PORT": str(port) for name, port in ports.items()},
        }
        self.log = open(var / "launcher.log", "ab")  # noqa: SIM115 (open for the launcher's lifetime)
        self.launcher = subprocess.Popen(
            [sys.executable, "-m", "infaas_cli.main", "run", "--no-demo"],
            cwd=checkout,
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        self.url = f"http://127.0.0.1:{self.gateway_port}"
        wait(lambda: self.healthy(), "the gateway", 120)
        self.key = (var / "admin.key").read_text().strip()

    def _start_redis(self) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            [
                "redis-server",
                "--port",
                str(self.redis_port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ],
            stdout=subprocess.DEVNULL,
        )

    def healthy(self) -> bool:
        try:
            return httpx.get(f"{self.url}/health", timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    def service(self, name: str) -> psutil.Process:
        """The live process of `serve <name>` (the first executor for `executor`)."""
        for child in psutil.Process(self.launcher.pid).children():
            cmd = child.cmdline()
            if "serve" in cmd and cmd[cmd.index("serve") + 1] == name:
                return child
        raise LookupError(name)

    def executors(self) -> list[psutil.Process]:
        return [c for c in psutil.Process(self.launcher.pid).children() if "executor" in c.cmdline()]

    def serving_executor(self) -> psutil.Process:
        """The executor that answers the model's queries now (the worker id ends with its port)."""
        headers = {"Authorization": f"Bearer {self.key}"}
        body = {"inputs": {"chem": [[13.0] * CHEM], "color": [[2.0] * 6]}}
        answer = httpx.post(f"{self.url}/v1/models/wine/infer", json=body, headers=headers, timeout=30).json()
        port = answer["worker"].rsplit("-", 1)[-1]
        return next(p for p in self.executors() if p.environ().get("INFAAS_EXECUTOR_PORT") == port)

    def all_up(self) -> bool:
        names = ("registry", "planner", "profiler", "jobs", "gateway")
        try:
            return len(self.executors()) == 2 and all(self.service(n) for n in names) and self.healthy()
        except (LookupError, psutil.Error):
            return False

    def stop(self) -> None:
        self.launcher.send_signal(signal.SIGTERM)
        try:
            self.launcher.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.launcher.kill()
        self.redis.kill()
        self.redis.wait()
        self.log.close()


def wait(check: object, what: str, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} not ready within {timeout_s} s")
        time.sleep(0.2)


def register(system: System, var: Path) -> np.ndarray:
    admin = httpx.Client(base_url=system.url, headers={"Authorization": f"Bearer {system.key}"}, timeout=60)
    admin.post("/v1/apps", json={"name": "cellar"}).raise_for_status()
    register_wine(admin, var, app="cellar").raise_for_status()
    wait(lambda: admin.get("/v1/models/wine").json()["status"] == "ready", "profiling", 300)
    data = np.load(var / "wine.npz")
    return np.concatenate([data["chem"], data["color"]], axis=1)


async def load(system: System, rows: np.ndarray, args: argparse.Namespace, fault: str) -> Outcome:
    """Open loop: query i leaves at start + i / rate whatever happened to the earlier ones."""
    rng = np.random.default_rng(zlib.crc32(fault.encode()))  # the same inputs per fault, run to run
    headers = {"Authorization": f"Bearer {system.key}"}
    limits = httpx.Limits(max_connections=200)
    results: list[tuple[float, str, float]] = []  # (send time from start, outcome, latency ms)
    async with httpx.AsyncClient(base_url=system.url, headers=headers, timeout=30, limits=limits) as client:

        async def one(t: float) -> None:
            row = rows[rng.integers(len(rows))] * (1 + rng.normal(0, 1e-3, rows.shape[1]))  # unique input
            body = {"inputs": {"chem": [row[:CHEM].tolist()], "color": [row[CHEM:].tolist()]}}
            began = time.perf_counter()
            try:
                response = await client.post("/v1/models/wine/infer", json=body)
                outcome = "ok" if response.status_code == 200 else str(response.status_code)
            except httpx.HTTPError as exc:
                outcome = type(exc).__name__
            results.append((t, outcome, (time.perf_counter() - began) * 1000))

        loop = asyncio.get_running_loop()
        start = loop.time()
        total = int(args.rate * args.seconds)
        tasks, injected = [], False
        for i in range(total):
            t = i / args.rate
            await asyncio.sleep(max(0.0, start + t - loop.time()))
            if not injected and t >= args.fault_at:
                injected = True
                tasks.append(asyncio.create_task(inject(system, fault, args.down_s)))
            tasks.append(asyncio.create_task(one(t)))
        await asyncio.gather(*tasks)
    return summarize(fault, results, args.fault_at)


async def inject(system: System, fault: str, down_s: float = 10.0) -> None:
    if fault == "executor":
        system.serving_executor().send_signal(signal.SIGKILL)
    elif fault in ("registry", "planner", "profiler", "jobs", "gateway"):
        system.service(fault).send_signal(signal.SIGKILL)
    elif fault == "registry_down":
        registry = system.service("registry")
        registry.send_signal(signal.SIGSTOP)
        await asyncio.sleep(down_s)
        registry.send_signal(signal.SIGCONT)
    elif fault == "redis_blip":
        system.redis.send_signal(signal.SIGSTOP)
        await asyncio.sleep(2)
        system.redis.send_signal(signal.SIGCONT)
    elif fault in ("redis_empty", "redis_empty_fresh_reader"):
        system.redis.kill()
        system.redis.wait()
        system.redis = system._start_redis()
        if fault == "redis_empty_fresh_reader":
            await asyncio.sleep(2)
            system.service("gateway").send_signal(signal.SIGKILL)
    else:
        raise ValueError(fault)


def summarize(fault: str, results: list[tuple[float, str, float]], fault_at: float) -> Outcome:
    results.sort()
    failures: dict[str, int] = {}
    for _, outcome, _ in results:
        if outcome != "ok":
            failures[outcome] = failures.get(outcome, 0) + 1
    last_failure = max((t for t, outcome, _ in results if outcome != "ok"), default=None)
    if last_failure is None:
        recovered: float | None = 0.0
    else:
        later = [t for t, _, _ in results if t > last_failure]
        recovered = round(later[0] - fault_at, 2) if later else None
    after = [ms for t, outcome, ms in results if t >= fault_at and outcome == "ok"]
    return Outcome(
        fault=fault,
        sent=len(results),
        answered=len(results) - sum(failures.values()),
        failed=sum(failures.values()),
        failures=failures,
        time_to_full_service_s=recovered,
        p99_ms_after_fault=round(float(np.percentile(after, 99)), 1) if after else None,
        p999_ms_after_fault=round(float(np.percentile(after, 99.9)), 1) if after else None,
        max_ms_after_fault=round(max(after), 1) if after else None,
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--checkout", type=Path, default=ROOT, help="the tree whose infaas to run")
    parser.add_argument("--faults", default=",".join(FAULTS))
    parser.add_argument("--rate", type=float, default=40.0, help="queries a second")
    parser.add_argument("--seconds", type=float, default=20.0, help="load per fault")
    parser.add_argument("--fault-at", type=float, default=3.0, help="seconds into the load")
    parser.add_argument("--down-s", type=float, default=10.0, help="how long registry_down stops it")
    parser.add_argument("--out", type=Path, help="write the outcomes as JSON here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="chaos-") as tmp:
        var = Path(tmp) / "var"
        var.mkdir()
        system = System(args.checkout.resolve(), var)
        outcomes = []
        try:
            rows = register(system, Path(tmp))
            asyncio.run(warm_up(system, rows, args))
            for fault in args.faults.split(","):
                outcome = asyncio.run(load(system, rows, args, fault))
                outcomes.append(outcome)
                print(json.dumps(asdict(outcome)), flush=True)
                try:
                    wait(system.all_up, f"every service back after {fault}", 90)
                except RuntimeError as exc:
                    print(f"# {exc}; the remaining faults run on what is left", flush=True)
                time.sleep(3)  # heartbeats and caches settle before the next fault
        finally:
            system.stop()
    if args.out:
        args.out.write_text(json.dumps([asdict(o) for o in outcomes], indent=2))


async def warm_up(system: System, rows: np.ndarray, args: argparse.Namespace) -> None:
    """Load the model on both executors (queries at the full rate for a few seconds)."""
    quiet = argparse.Namespace(**{**vars(args), "seconds": 5.0, "fault_at": 1e9})
    await load(system, rows, quiet, "warm_up")


if __name__ == "__main__":
    main()
