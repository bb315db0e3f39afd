"""When to restart a service that exited: exponential back-off and crash-loop verdicts.

A pure policy (times come in as arguments, nothing here reads a clock or touches a process):
`Supervisor` (`supervisor.py`) feeds it each exit and acts on the verdict.
"""

from __future__ import annotations

from dataclasses import dataclass, replace


@dataclass(frozen=True)
class BackoffPolicy:
    """How long to wait before restarting a service that exited, and when to call it a crash loop."""

    initial_s: float = 0.5
    """The wait after the first exit, or after an exit that followed a stable run."""
    max_s: float = 30.0
    """The cap: the wait doubles on each exit up to here, and stays here while the service keeps crashing."""
    stable_after_s: float = 60.0
    """A run at least this long was healthy: the next exit starts the back-off over."""
    crash_loop_exits: int = 5
    """This many exits within `crash_loop_window_s` make a crash loop."""
    crash_loop_window_s: float = 60.0


@dataclass(frozen=True)
class History:
    """What the policy remembers of one service between its exits."""

    backoff_s: float = 0.0
    """The wait chosen after the last exit; 0 before any."""
    exits: tuple[float, ...] = ()
    """Times of the exits still inside the crash-loop window."""


@dataclass(frozen=True)
class Verdict:
    """What to do about one exit."""

    restart_at: float
    backoff_s: float
    crash_loop: bool
    recent_exits: int
    """Exits inside the crash-loop window, this one included."""


def on_exit(
    history: History, *, started_at: float, exited_at: float, policy: BackoffPolicy
) -> tuple[Verdict, History]:
    """The verdict on a service that ran from `started_at` to `exited_at`, and its history after it."""
    if history.backoff_s == 0 or exited_at - started_at >= policy.stable_after_s:
        backoff = policy.initial_s
    else:
        backoff = min(policy.max_s, history.backoff_s * 2)
    window_start = exited_at - policy.crash_loop_window_s
    exits = (*(t for t in history.exits if t > window_start), exited_at)
    verdict = Verdict(
        restart_at=exited_at + backoff,
        backoff_s=backoff,
        crash_loop=len(exits) >= policy.crash_loop_exits,
        recent_exits=len(exits),
    )
    return verdict, replace(history, backoff_s=backoff, exits=exits)
