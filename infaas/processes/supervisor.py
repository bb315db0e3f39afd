"""Keeping a suite's processes up: restart each one that exits, after the back-off `supervision.py` picks.

Opt-in: `infaas run` supervises its suite; a `Suite` on its own (as the tests use it) restarts nothing,
so `Suite.dead()` still reports every exit. The embedded Redis server is supervised like the services
(restarted on its port, from its append-only file). Each exit, restart and crash loop is a log line
(logger `infaas.supervisor`), a JSON line in `<log_dir>/supervisor.log`, and an event handed to
`on_event` (`infaas run` writes them to the events table, so `GET /v1/events?kind=supervisor` and the
admin UI show them).
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import orjson

from infaas.processes.suite import Suite
from infaas.processes.supervision import BackoffPolicy, History, on_exit

logger = logging.getLogger("infaas.supervisor")

EventSink = Callable[[dict[str, Any]], None]
"""Receives each event as the keyword arguments of `infaas.data.events.event_row` (kind `supervisor`).
Called on the supervisor's thread: a sink that may block (a database write) hands off to its own."""


def describe_exit(returncode: int) -> str:
    """`exit code 1`, or `signal SIGKILL` for a process a signal ended (Popen's negative return codes)."""
    if returncode < 0:
        try:
            return f"signal {signal.Signals(-returncode).name}"
        except ValueError:
            return f"signal {-returncode}"
    return f"exit code {returncode}"


class Supervisor:
    """Restarts the processes of `suite` that exit; call `check` periodically, or `run` until stopped."""

    def __init__(
        self,
        suite: Suite,
        *,
        policy: BackoffPolicy | None = None,
        clock: Callable[[], float] = time.monotonic,
        on_event: EventSink | None = None,
        restart_clean_exits: bool = True,
    ) -> None:
        self.suite = suite
        # False: a process that exited with code 0 left on purpose (a drained executor) and stays down.
        self.restart_clean_exits = restart_clean_exits
        self.on_event = on_event
        self.policy = policy or BackoffPolicy()
        # The suite stamps start times with time.monotonic; an injected clock must be on the same scale.
        self.clock = clock
        self.journal = suite.log_dir / "supervisor.log"
        self._history: dict[str, History] = {}
        self._restart_at: dict[str, float] = {}

    def check(self) -> None:
        """One pass: note each process that exited since the last pass; restart those whose wait is over."""
        now = self.clock()
        for name, proc in self.suite.supervised().items():
            if name in self._restart_at:
                if now >= self._restart_at[name]:
                    del self._restart_at[name]
                    self._restart(name)
                continue
            code = proc.poll()
            if code is None or (code == 0 and not self.restart_clean_exits):
                continue
            uptime = now - self.suite.started_at[name]
            verdict, self._history[name] = on_exit(
                self._history.get(name, History()),
                started_at=self.suite.started_at[name],
                exited_at=now,
                policy=self.policy,
            )
            self._restart_at[name] = verdict.restart_at
            how = describe_exit(code)
            logger.warning(
                "%s exited (%s) after %.1f s up; restarting in %.1f s; see %s/%s.log",
                name,
                how,
                uptime,
                verdict.backoff_s,
                self.suite.log_dir,
                name,
            )
            reason = f"{name} exited ({how}) after {uptime:.1f} s up; restart in {verdict.backoff_s:.1f} s"
            self._emit("exited", "failed", reason, name, exit=how, uptime_s=round(uptime, 3))
            if verdict.crash_loop:
                logger.error(
                    "%s is crash-looping: %d exits in %.0f s; restarting it still, waiting %.1f s at most",
                    name,
                    verdict.recent_exits,
                    self.policy.crash_loop_window_s,
                    self.policy.max_s,
                )
                self._emit(
                    "crash_loop",
                    "failed",
                    f"{name} is crash-looping: {verdict.recent_exits} exits in "
                    f"{self.policy.crash_loop_window_s:.0f} s; still restarted, {self.policy.max_s:.0f} s "
                    f"apart at most; see {self.suite.log_dir}/{name}.log",
                    name,
                    recent_exits=verdict.recent_exits,
                )
            self._journal(
                event="exited",
                service=name,
                exit=how,
                returncode=code,
                uptime_s=round(uptime, 3),
                backoff_s=verdict.backoff_s,
                crash_loop=verdict.crash_loop,
                recent_exits=verdict.recent_exits,
            )

    def _restart(self, name: str) -> None:
        try:
            self.suite.restart(name)
        except OSError as exc:  # cannot even spawn (a full disk, a missing binary): try again later
            self._restart_at[name] = self.clock() + self.policy.max_s
            logger.error("%s could not be restarted (%s); next try in %.0f s", name, exc, self.policy.max_s)
            self._emit("restart_failed", "failed", f"{name} could not be restarted: {exc}", name)
            return
        count = self.suite.restarts[name]
        pid = self.suite.supervised()[name].pid
        logger.warning("%s restarted (restart %d, pid %d)", name, count, pid)
        self._journal(event="restarted", service=name, restarts=count, pid=pid)
        reason = f"{name} restarted (restart {count}, pid {pid})"
        self._emit("restarted", "done", reason, name, restarts=count)

    def _emit(self, action: str, outcome: str, reason: str, service: str, **details: Any) -> None:
        if self.on_event is None:
            return
        event = {
            "kind": "supervisor",
            "action": action,
            "outcome": outcome,
            "reason": reason,
            "details": {"service": service, **details},
        }
        try:
            self.on_event(event)
        except Exception:  # an event that cannot be recorded never stops supervision; the journal has it
            logger.exception("recording the supervisor event %r failed", action)

    def run(self, stop: threading.Event, interval_s: float = 0.1) -> None:
        """Check every `interval_s` until `stop` is set."""
        while not stop.is_set():
            self.check()
            stop.wait(interval_s)

    def _journal(self, **fields: Any) -> None:
        line = orjson.dumps({"at": datetime.now(UTC).isoformat(), **fields})
        with open(self.journal, "ab") as fh:
            fh.write(line + b"\n")
