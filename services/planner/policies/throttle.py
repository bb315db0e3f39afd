"""Offline-job throttle (pure): on which workers may job chunks run right now, and why (not).

INFaaS pauses offline work when online utilization passes 40 % (§5) and when online latency exceeds
its profile. Per worker:
- an instance in a pause state (`interfered`: its batches take longer than profiled; `overloaded`) stops
  jobs there — unless the worker is idle, because the instance monitor keeps `interfered` sticky while
  no batch runs and an idle worker has no online latency left to protect;
- online utilization above `pause_utilization` stops them; a stopped worker restarts only below
  `resume_utilization`, so a worker near the threshold does not flap;
Jobs are paused when no worker is eligible. The decision names the reason for each worker.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class WorkerLoad:
    """A live worker as the throttle sees it: online utilization and its instances' states."""

    id: str
    hardware: str
    utilization: float
    instance_states: tuple[tuple[str, str], ...] = ()  # (variant id, state)


@dataclass(frozen=True, slots=True)
class ThrottleThresholds:
    pause_utilization: float = 0.4
    resume_utilization: float = 0.3
    pause_states: frozenset[str] = frozenset({"interfered", "overloaded"})
    idle_utilization: float = 0.02
    """Below this a worker serves (almost) no online queries: sticky instance states are ignored."""


@dataclass(frozen=True, slots=True)
class ThrottleDecision:
    paused: bool
    eligible: tuple[str, ...]
    reason: str
    reasons: tuple[tuple[str, str], ...]  # (worker id, why it is or is not eligible)


def decide(
    workers: tuple[WorkerLoad, ...],
    *,
    thresholds: ThrottleThresholds,
    previously_eligible: frozenset[str] | None,
) -> ThrottleDecision:
    """Which workers may run offline chunks. `previously_eligible` is the last decision's set (None on
    the first tick: every worker is then judged by the pause threshold)."""
    eligible: list[str] = []
    reasons: list[tuple[str, str]] = []
    for w in sorted(workers, key=lambda w: w.id):
        hot = [(v, s) for v, s in w.instance_states if s in thresholds.pause_states]
        was_eligible = previously_eligible is None or w.id in previously_eligible
        limit = thresholds.pause_utilization if was_eligible else thresholds.resume_utilization
        if hot and w.utilization >= thresholds.idle_utilization:
            variant, state = hot[0]
            why = f"{variant} is {state} (online latency above its profile)"
            if state == "overloaded":
                why = f"{variant} is overloaded (online load at its profiled peak)"
            reasons.append((w.id, why))
        elif w.utilization > limit:
            verb = "above" if was_eligible else "still above"
            reasons.append((w.id, f"online utilization {w.utilization:.0%} {verb} {limit:.0%}"))
        else:
            eligible.append(w.id)
            reasons.append((w.id, f"online utilization {w.utilization:.0%} ≤ {limit:.0%}"))
    if not workers:
        return ThrottleDecision(True, (), "no live worker", ())
    if not eligible:
        summary = "; ".join(f"{wid}: {why}" for wid, why in reasons)
        return ThrottleDecision(True, (), f"online work needs every worker ({summary})", tuple(reasons))
    summary = ", ".join(eligible)
    return ThrottleDecision(False, tuple(eligible), f"spare capacity on {summary}", tuple(reasons))
