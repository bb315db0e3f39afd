"""Whether a model in profiling still has a profiler at work: a pure policy over a frozen snapshot.

The registry's lease sweeper (`sweeper.py`) builds the snapshot from Postgres (attempt, tries,
who claimed it since when) and Redis (the live leases), and acts on the decision.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

PROFILING = ("registered", "profiling")


@dataclass(frozen=True)
class ProfileSnapshot:
    model: str
    status: str
    attempt: int
    tries: int
    """Attempts made since the last request to profile (this one included)."""
    worker: str | None
    """The profiler that claimed the attempt; None while it is queued."""
    since_s: float
    """Seconds since the attempt was queued, or claimed."""
    leased: bool
    """A live lease of this attempt exists (on any hardware kind)."""
    missing_s: float
    """How long the sweeper has seen this attempt without a live lease (0 when it has one)."""
    profilers_busy: bool
    """Some profiler holds a live lease on another model: the queue is moving."""


@dataclass(frozen=True)
class RecoveryConfig:
    grace_s: float
    queued_max_s: float
    max_attempts: int


@dataclass(frozen=True)
class Decision:
    action: Literal["wait", "requeue", "fail"]
    reason: str


def decide(s: ProfileSnapshot, config: RecoveryConfig) -> Decision:
    """Wait while a profiler holds the lease (or may still: grace) or the attempt is plausibly queued;
    otherwise profile again, or give up once `max_attempts` attempts were lost."""
    if s.status not in PROFILING:
        return Decision("wait", f"model {s.model} is {s.status}")
    if s.leased:
        return Decision("wait", f"a profiler holds the lease of model {s.model} (attempt {s.attempt})")
    if s.worker is not None:
        if s.missing_s < config.grace_s:
            return Decision(
                "wait",
                f"the lease of model {s.model} has been missing for {s.missing_s:.1f} s, within the "
                f"{config.grace_s:g} s grace (a late renewal, or Redis restarted empty)",
            )
        lost = f"profiler {s.worker} lost the lease of model {s.model} (attempt {s.attempt})"
    else:
        if s.since_s < config.queued_max_s:
            return Decision("wait", f"model {s.model} is queued (attempt {s.attempt}, {s.since_s:.0f} s)")
        if s.profilers_busy:
            return Decision("wait", f"model {s.model} is queued behind another model's profile")
        lost = (
            f"no profiler took model {s.model} (attempt {s.attempt}) in {s.since_s:.0f} s while none was "
            "busy: its task was lost or no profiler runs"
        )
    if s.tries >= config.max_attempts:
        return Decision("fail", f"{lost}; gave up after {s.tries} attempts")
    return Decision(
        "requeue",
        f"{lost}; profiling again (attempt {s.attempt + 1}, try {s.tries + 1} of {config.max_attempts})",
    )
