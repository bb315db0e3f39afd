"""Workers as executor processes on this machine, started the way `infaas run` starts them.

Each worker gets its own CPU cores (`sched_setaffinity` on the new process, round-robin over the cores
this planner may use) and a memory budget: advertised to the scheduler and planner through
`INFAAS_WORKER_MEMORY_BYTES` (placement never exceeds it), and optionally enforced by the kernel as an
address-space limit (`hard_memory_limit`; off by default because ONNX Runtime and PyTorch reserve far
more virtual memory than they touch).
"""

from __future__ import annotations

import asyncio
import os
import resource
import socket
import subprocess
from pathlib import Path
from urllib.parse import urlsplit

import httpx

from infaas.core.config import Settings
from infaas.core.errors import Unavailable
from infaas.policy.selection import WorkerView
from infaas.processes.suite import Suite, free_port
from services.planner.providers.base import WorkerProvider


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

    async def add(self, hardware: str) -> str:
        if hardware != "cpu":
            raise Unavailable(
                f"the local provider starts cpu workers only, not {hardware}", hardware=hardware
            )
        port = free_port()
        name = f"executor-{port}"
        env = {"INFAAS_EXECUTOR_PORT": str(port), "INFAAS_EXECUTOR_ADVERTISE_URL": ""}
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

    async def close(self) -> None:
        """Stop the workers this provider started (the planner is going away with them)."""
        await asyncio.to_thread(self.suite.stop)
        self.ports.clear()


def _port(worker: WorkerView) -> int:
    return urlsplit(worker.url).port or 0
