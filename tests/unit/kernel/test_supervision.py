"""The supervision policy: back-off after each exit, reset after a stable run, crash-loop verdicts."""

from __future__ import annotations

import signal

from infaas.processes.supervision import BackoffPolicy, History, Verdict, on_exit
from infaas.processes.supervisor import describe_exit

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
