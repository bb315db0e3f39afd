"""The supervision policy (back-off after each exit, reset after a stable run, crash-loop verdicts) and
the supervisor acting on it for real child processes."""

from __future__ import annotations

import signal
import sys
from pathlib import Path
from typing import Any

from infaas.core.config import Settings
from infaas.processes.suite import REDIS, Suite
from infaas.processes.supervision import BackoffPolicy, History, Verdict, on_exit
from infaas.processes.supervisor import Supervisor, describe_exit

POLICY = BackoffPolicy(
    initial_s=0.5, max_s=30.0, stable_after_s=60.0, crash_loop_exits=5, crash_loop_window_s=60.0
)


def crashes(uptimes: list[float], policy: BackoffPolicy = POLICY) -> list[Verdict]:
    """Verdicts for a service that, after each restart, stays up for the next uptime and exits."""
    history, verdicts = History(), list[Verdict]()
    for uptime in uptimes:
        started = verdicts[-1].restart_at if verdicts else 0.0
        verdict, history = on_exit(history, started_at=started, exited_at=started + uptime, policy=policy)
        verdicts.append(verdict)
    return verdicts


def test_the_wait_doubles_from_half_a_second_up_to_the_cap() -> None:
    waits = [v.backoff_s for v in crashes([0.1] * 9)]
    assert waits == [0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0, 30.0]


def test_the_restart_is_due_one_wait_after_the_exit() -> None:
    verdict, _ = on_exit(History(), started_at=100.0, exited_at=105.0, policy=POLICY)
    assert verdict.restart_at == 105.5


def test_a_stable_run_starts_the_back_off_over() -> None:
    waits = [v.backoff_s for v in crashes([1.0, 1.0, 1.0, 60.0, 1.0])]
    assert waits == [0.5, 1.0, 2.0, 0.5, 1.0]


def test_five_exits_within_a_minute_are_a_crash_loop_and_restarts_go_on() -> None:
    verdicts = crashes([1.0] * 7)
    assert [v.crash_loop for v in verdicts] == [False, False, False, False, True, True, True]
    assert [v.recent_exits for v in verdicts[:5]] == [1, 2, 3, 4, 5]
    assert all(v.restart_at > 0 for v in verdicts)  # a crash loop still gets a restart time


def test_exits_spread_wider_than_the_window_are_no_crash_loop() -> None:
    # 50 s up between exits: a few exits per window, never five.
    verdicts = crashes([50.0] * 8)
    assert not any(v.crash_loop for v in verdicts)
    assert max(v.recent_exits for v in verdicts) < 5


def test_exit_codes_and_signals_are_named() -> None:
    assert describe_exit(1) == "exit code 1"
    assert describe_exit(-signal.SIGKILL) == "signal SIGKILL"
    assert describe_exit(-200) == "signal 200"


def test_the_supervisor_restarts_the_embedded_redis_and_reports_each_step_as_an_event(tmp_path: Path) -> None:
    """A real child process standing in for the embedded Redis server: it exits at once, the supervisor
    sees the exit, waits its back-off (an injected clock), starts the same command again, and hands
    every step to its event sink with a reason."""
    suite = Suite(settings=Settings(var_dir=tmp_path), log_dir=tmp_path)
    suite.redis_proc = suite._spawn(REDIS, [sys.executable, "-c", "raise SystemExit(3)"], env=None)
    suite.redis_proc.wait()
    now = [suite.started_at[REDIS] + 2.0]
    events: list[dict[str, Any]] = []
    supervisor = Supervisor(suite, clock=lambda: now[0], on_event=events.append)

    supervisor.check()
    assert [(e["action"], e["outcome"]) for e in events] == [("exited", "failed")]
    assert "redis exited (exit code 3) after 2.0 s up" in events[0]["reason"]
    assert events[0]["kind"] == "supervisor" and events[0]["details"]["service"] == REDIS
    first = suite.redis_proc

    now[0] += POLICY.initial_s  # the back-off is over
    supervisor.check()
    assert suite.redis_proc is not first and suite.restarts == {REDIS: 1}
    assert [e["action"] for e in events] == ["exited", "restarted"]
    assert events[1]["details"]["restarts"] == 1
    suite.redis_proc.wait()
    journal = (tmp_path / "supervisor.log").read_text()
    assert '"service":"redis"' in journal


def test_a_sink_that_fails_never_stops_supervision(tmp_path: Path) -> None:
    suite = Suite(settings=Settings(var_dir=tmp_path), log_dir=tmp_path)
    suite.redis_proc = suite._spawn(REDIS, [sys.executable, "-c", "pass"], env=None)
    suite.redis_proc.wait()

    def broken(_event: dict[str, Any]) -> None:
        raise RuntimeError("database down")

    supervisor = Supervisor(suite, on_event=broken, policy=BackoffPolicy(initial_s=0.0))
    supervisor.check()
    supervisor.check()
    assert suite.restarts == {REDIS: 1}
    suite.redis_proc.wait()
