"""Workers as executor processes on this machine, started the way `infaas run` starts them.

Each worker gets its own CPU cores (`sched_setaffinity` on the new process, round-robin over the cores
this planner may use) and a memory budget: advertised to the scheduler and planner through
`INFAAS_WORKER_MEMORY_BYTES` (placement never exceeds it), and optionally enforced by the kernel as an
address-space limit (`hard_memory_limit`; off by default because ONNX Runtime and PyTorch reserve far
more virtual memory than they touch).

Supervision (`watch`): the provider's executors are kept up by the same `Supervisor` that keeps
`infaas run`'s processes up (restart with exponential back-off, crash-loop events), polled every
`SUPERVISE_EVERY_S`; an executor that exits with code 0 left on purpose (drained) and stays down. An exit
is also a failure notice (`infaas.data.failures`), often the first one: the process is known dead. The
restarted executor is a new incarnation under the same worker id and port; it reads what its consumer
left pending before (`services/executor/consumers.py`) unless a surviving worker claimed it first.
"""

from __future__ import annotations

import asyncio
import logging
import os
import resource
import socket
import subprocess
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import redis.asyncio as aioredis

from infaas.core.config import Settings
from infaas.core.errors import Unavailable
from infaas.data.failures import FailureNotice, declare_failure
from infaas.policy.selection import WorkerView
from infaas.processes.suite import Suite, free_port
from infaas.processes.supervision import BackoffPolicy
from infaas.processes.supervisor import Supervisor
from services.planner.event_log import EventLog
from services.planner.providers.base import WorkerProvider

log = logging.getLogger("infaas.planner")

SUPERVISE_EVERY_S = 0.02
"""How often the provider looks for exited executors: an exit is a failure known for certain, so
noticing it costs one `poll()` per executor this often."""


class LocalProcessProvider(WorkerProvider):
    name = "local"

    def __init__(
        self,
        settings: Settings,
        *,
        log_dir: Path,
        cores_per_worker: int = 1,
        memory_bytes: int = 0,
        hard_memory_limit: bool = False,
        exit_timeout_s: float = 30.0,
    ) -> None:
        self.settings = settings
        self.suite = Suite(settings=settings, log_dir=log_dir)
        self.cores = sorted(os.sched_getaffinity(0))
        self.cores_per_worker = max(1, min(cores_per_worker, len(self.cores)))
        self.memory_bytes = memory_bytes
        self.hard_memory_limit = hard_memory_limit
        self.exit_timeout_s = exit_timeout_s
        self.ports: dict[int, str] = {}  # port → process name in the suite
        self.ready: set[int] = set()
        self._next_core = 0
        self.supervisor: Supervisor | None = None
        self._stop_supervising = threading.Event()
        self._supervising: threading.Thread | None = None

    async def add(self, hardware: str) -> str:
        if hardware != "cpu":
            raise Unavailable(
                f"the local provider starts cpu workers only, not {hardware}", hardware=hardware
            )
        port = free_port()
        name = f"executor-{port}"
        # `cpu` said, not detected: on a GPU machine an `auto` executor would serve the GPU instead.
        env = {
            "INFAAS_EXECUTOR_PORT": str(port),
            "INFAAS_EXECUTOR_ADVERTISE_URL": "",
            "INFAAS_EXECUTOR_HARDWARE": "cpu",
        }
        if self.memory_bytes:
            env["INFAAS_WORKER_MEMORY_BYTES"] = str(self.memory_bytes)
        # Suite.port() reads a name's index as an offset from executor_port: keep our own port map.
        self.suite.start(name, ["serve", "executor"], env)
        proc = self.suite.procs[name]
        cores = {self.cores[(self._next_core + k) % len(self.cores)] for k in range(self.cores_per_worker)}
        self._next_core = (self._next_core + self.cores_per_worker) % len(self.cores)
        os.sched_setaffinity(proc.pid, cores)  # threads the executor starts later inherit it
        if self.hard_memory_limit and self.memory_bytes:
            resource.prlimit(proc.pid, resource.RLIMIT_AS, (self.memory_bytes, self.memory_bytes))
        self.ports[port] = name
        return f"cpu-{socket.gethostname()}-{port} (pid {proc.pid}, cores {sorted(cores)})"

    def owns(self, worker: WorkerView) -> bool:
        return _port(worker) in self.ports

    async def remove(self, worker: WorkerView) -> None:
        port = _port(worker)
        name = self.ports.pop(port, None)
        if name is None:
            return
        self.ready.discard(port)
        proc = self.suite.procs.pop(name)
        try:  # drained with exit=true: it is already on its way out
            await asyncio.to_thread(proc.wait, self.exit_timeout_s)
        except subprocess.TimeoutExpired:
            proc.terminate()
            try:
                await asyncio.to_thread(proc.wait, 10)
            except subprocess.TimeoutExpired:
                proc.kill()
                await asyncio.to_thread(proc.wait)

    async def starting(self) -> dict[str, int]:
        waiting = [p for p in self.ports if p not in self.ready]
        if not waiting:
            return {}
        async with httpx.AsyncClient(timeout=0.5) as client:
            for port in waiting:
                try:
                    if (await client.get(f"http://127.0.0.1:{port}/health")).status_code == 200:
                        self.ready.add(port)
                except httpx.HTTPError:
                    pass
        count = sum(1 for p in self.ports if p not in self.ready)
        return {"cpu": count} if count else {}

    async def watch(self, redis: aioredis.Redis, events: EventLog | None) -> None:
        loop = asyncio.get_running_loop()
        host = socket.gethostname()

        def on_event(event: dict[str, Any]) -> None:  # on the supervisor's thread
            service = str(event["details"]["service"])
            if event["action"] == "exited" and service.startswith("executor-"):
                notice = FailureNotice(
                    worker=f"cpu-{host}-{service.removeprefix('executor-')}",
                    reason=f"its process exited ({event['details'].get('exit')})",
                    detected_at=time.time(),
                    last_seen_at=time.time(),
                    detector="provider",
                )
                asyncio.run_coroutine_threadsafe(declare_failure(redis, notice), loop)
            if events is not None:
                asyncio.run_coroutine_threadsafe(events.record(**event), loop)

        self.supervisor = Supervisor(
            self.suite,
            policy=BackoffPolicy(initial_s=0.2, max_s=10.0),
            on_event=on_event,
            restart_clean_exits=False,
        )
        self._supervising = threading.Thread(
            target=self.supervisor.run,
            args=(self._stop_supervising, SUPERVISE_EVERY_S),
            name="provider-supervisor",
        )
        self._supervising.start()

    async def close(self) -> None:
        """Stop the workers this provider started (the planner is going away with them)."""
        self._stop_supervising.set()  # first: a worker being stopped is not restarted
        if self._supervising is not None:
            await asyncio.to_thread(self._supervising.join)
        await asyncio.to_thread(self.suite.stop)
        self.ports.clear()


def _port(worker: WorkerView) -> int:
    return urlsplit(worker.url).port or 0
