"""Which workers a scheduler holds live: a pure policy over what it last read and what it reads now.

A heartbeat key can vanish without its worker dying: Redis restarted (empty, or with keys that expired
while it was down), or Redis was unreachable for a moment. Dropping such a worker at once answered a
burst of 503 "no live worker" while the worker itself was serving. So a worker seen once is kept until
it has not been seen for `ttl_s` of the scheduler's own clock while Redis answered: the time Redis was
away does not count, and after it answers again every known worker has a full `ttl_s` to heartbeat.
A worker that left on purpose (`infaas.data.store.forget_worker`) is dropped at once, and so is one
declared failed (`infaas.data.failures.declare_failure` marks it departed in the store, and the snapshot
drops it on the notice: `SnapshotCache.drop_failed`) — a failure is declared from pulses that other workers
kept sending, never from Redis being away. One whose push connection fails is left out by the snapshot
(`SnapshotCache.note_unreachable`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from infaas.policy.failure_detection import unseen_for_ttl
from infaas.policy.selection import InstanceView, WorkerView


@dataclass(frozen=True)
class Seen:
    """A worker as last read from the store, and when (the scheduler's monotonic clock)."""

    worker: WorkerView
    instances: tuple[InstanceView, ...]
    at: float


@dataclass(frozen=True)
class Table:
    workers: dict[str, Seen]
    kept: tuple[str, ...]
    """Workers missing from this read but kept, still within `ttl_s`."""
    dropped: tuple[str, ...]
    """Workers dropped by this merge: departed, or unseen for `ttl_s` while Redis answered."""


def merge(
    known: Mapping[str, Seen],
    workers: tuple[WorkerView, ...],
    instances: tuple[InstanceView, ...],
    *,
    departed: frozenset[str],
    now: float,
    reachable_since: float,
    ttl_s: float,
) -> Table:
    """The worker table after a successful read of `workers` and `instances` at `now`; `reachable_since`
    is when Redis last started answering after failing (or when this scheduler started)."""
    by_worker: dict[str, list[InstanceView]] = {}
    for i in instances:
        by_worker.setdefault(i.worker_id, []).append(i)
    table = {w.id: Seen(w, tuple(by_worker.get(w.id, ())), now) for w in workers}
    kept, dropped = [], []
    for wid, seen in known.items():
        if wid in table:
            continue
        if wid not in departed and not unseen_for_ttl(seen.at, reachable_since, now, ttl_s):
            table[wid] = seen
            kept.append(wid)
        else:
            dropped.append(wid)
    return Table(table, tuple(kept), tuple(dropped))


def flatten(table: Mapping[str, Seen]) -> tuple[tuple[WorkerView, ...], tuple[InstanceView, ...]]:
    """The table as the snapshot holds it: workers, and every instance they report."""
    return tuple(s.worker for s in table.values()), tuple(i for s in table.values() for i in s.instances)
