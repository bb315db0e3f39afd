"""The worker autoscaler (INFaaS §4.2.3, the VM-Autoscaler) as a pure function.

Per hardware kind, over its live workers that are not being drained, add a worker when
1. the utilization of a resource (CPU, memory) exceeds 80 % across all of them (the mean),
2. every instance on that kind is `interfered`,
3. more than 80 % of them host an `overloaded` instance, or
4. the model autoscaler asked for one (a scale-up that found no room);
at most one start per kind at a time (a start takes many ticks; asking again before it lands would
overshoot), and never above `max_workers`. A worker that has hosted no instance for `idle_s` is drained
and removed, one per tick, never below `min_workers` of its kind and never while its kind needs more.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from infaas.policy.selection import InstanceView, WorkerView
from services.planner.policies.snapshot import CAPACITY_STATES


@dataclass(frozen=True, slots=True)
class WorkerConfig:
    utilization: float = 0.8
    overloaded_share: float = 0.8
    idle_s: float = 60.0
    min_workers: int = 1
    max_workers: int = 8


@dataclass(frozen=True)
class WorkerSnapshot:
    now: float
    workers: tuple[WorkerView, ...]
    instances: tuple[InstanceView, ...]
    requests: Mapping[str, str] = field(default_factory=dict)
    """hardware kind → why the model autoscaler needs a worker of it."""
    starting: Mapping[str, int] = field(default_factory=dict)
    """hardware kind → workers asked for that have not joined yet."""
    draining: frozenset[str] = frozenset()
    removable: frozenset[str] | None = None
    """Workers the provider may remove (None: all); others are never drained."""


@dataclass(frozen=True, slots=True)
class WorkerDecision:
    action: Literal["add_worker", "drain_worker"]
    hardware: str
    reason: str
    worker: str | None = None


@dataclass(frozen=True)
class WorkerPlan:
    decisions: tuple[WorkerDecision, ...]
    idle_since: Mapping[str, float]
    """worker → when it was first seen without an instance; feed back into the next call."""


def plan(snapshot: WorkerSnapshot, idle_since: Mapping[str, float], config: WorkerConfig) -> WorkerPlan:
    live = [w for w in snapshot.workers if w.id not in snapshot.draining]
    hosted: dict[str, list[InstanceView]] = {}
    for i in snapshot.instances:
        if i.state in CAPACITY_STATES:
            hosted.setdefault(i.worker_id, []).append(i)
    idle = {w.id: idle_since.get(w.id, snapshot.now) for w in live if not hosted.get(w.id)}
    kinds = sorted({w.hardware for w in live} | set(snapshot.requests))
    decisions: list[WorkerDecision] = []
    removed = False
    for kind in kinds:
        of_kind = [w for w in live if w.hardware == kind]
        why = _needs_more(kind, of_kind, hosted, snapshot, config)
        starting = snapshot.starting.get(kind, 0)
        if why is not None:
            if starting:
                continue  # one start at a time; the condition is re-checked once it has joined
            if len(of_kind) + starting >= config.max_workers:
                continue
            decisions.append(WorkerDecision("add_worker", kind, f"{why}; adding a {kind} worker"))
            continue
        if removed:
            continue
        candidates = sorted(
            (
                w
                for w in of_kind
                if w.id in idle
                and snapshot.now - idle[w.id] >= config.idle_s
                and (snapshot.removable is None or w.id in snapshot.removable)
            ),
            key=lambda w: (idle[w.id], w.id),
        )
        if candidates and len(of_kind) > config.min_workers:
            w = candidates[0]
            decisions.append(
                WorkerDecision(
                    "drain_worker",
                    kind,
                    f"{w.id} has hosted no instance for {snapshot.now - idle[w.id]:.0f} s "
                    f"(≥ {config.idle_s:.0f} s) and {len(of_kind) - 1} {kind} worker(s) remain",
                    worker=w.id,
                )
            )
            removed = True
    return WorkerPlan(decisions=tuple(decisions), idle_since=idle)


def _needs_more(
    kind: str,
    workers: list[WorkerView],
    hosted: Mapping[str, list[InstanceView]],
    snapshot: WorkerSnapshot,
    config: WorkerConfig,
) -> str | None:
    """Why `kind` needs another worker (the first rule that holds), or None."""
    if kind in snapshot.requests:
        return f"the model autoscaler needs room: {snapshot.requests[kind]}"
    if not workers:
        return None
    cpu = sum(w.utilization for w in workers) / len(workers)
    if cpu > config.utilization:
        return (
            f"mean CPU utilization of the {len(workers)} {kind} worker(s) is {cpu:.0%} "
            f"> {config.utilization:.0%}"
        )
    memory = sum(w.memory_used_bytes for w in workers) / max(1, sum(w.memory_bytes for w in workers))
    if memory > config.utilization:
        return f"memory of the {kind} workers is {memory:.0%} used > {config.utilization:.0%}"
    instances = [i for w in workers for i in hosted.get(w.id, [])]
    if instances and all(i.state == "interfered" for i in instances):
        return f"all {len(instances)} instance(s) on {kind} workers are interfered"
    overloaded = sum(any(i.state == "overloaded" for i in hosted.get(w.id, [])) for w in workers)
    if overloaded > config.overloaded_share * len(workers):
        return (
            f"{overloaded} of {len(workers)} {kind} worker(s) host an overloaded instance "
            f"(> {config.overloaded_share:.0%})"
        )
    return None
