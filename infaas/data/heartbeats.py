"""A worker's heartbeat record in the metadata store, typed: what each executor writes every heartbeat
(`heartbeat`) and every reader gets back (`parse_workers`, `observed_from`, `instance_reports`).

Two hashes per worker, both expiring with the heartbeat TTL (the key table in `infaas.data.store`):
`worker:{wid}` holds the worker (`WorkerView`: hardware, url, cores, memory, utilization, push address,
incarnation) and the time of the beat; `instances:{wid}` holds one `InstanceReport` per loaded variant,
as JSON. Each has one encoder and one decoder here; a record a reader cannot decode is a `ValueError`
naming what is wrong, never a default standing in for a missing field.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass
from typing import get_args

import orjson
import redis.asyncio as aioredis
from redis.typing import EncodableT, FieldT

from infaas.policy.capacity import Observed
from infaas.policy.selection import InstanceState, InstanceView, WorkerView

log = logging.getLogger("infaas.store")

P = "infaas:"
WORKERS = P + "workers"


def worker_key(wid: str) -> str:
    return f"{P}worker:{wid}"


def instances_key(wid: str) -> str:
    return f"{P}instances:{wid}"


@dataclass(frozen=True, slots=True)
class InstanceReport:
    """What an executor reports about one instance each heartbeat: its state and why, its queue and
    batching, and what it measured over the last window (the planner's observed capacity,
    `infaas.policy.capacity`)."""

    state: InstanceState
    reason: str
    pending: int
    """Orders taken and not yet answered."""
    batch_limit: int
    """The AIMD batch limit now."""
    batch_delay_ms: float
    """The wait for batch mates before a short batch (0: none)."""
    batch_delay: str
    """Why that wait."""
    served: float
    """Rows answered per second over the window."""
    mean_batch: float
    busy: float
    slowdown: float
    concurrency: int
    """Batches it runs at once (SERF's c)."""

    def encode(self) -> bytes:
        return orjson.dumps(asdict(self))

    @classmethod
    def decode(cls, blob: bytes | str) -> InstanceReport:
        data = orjson.loads(blob)
        if type(data) is not dict:
            raise ValueError("an instance report must be a JSON object")
        try:
            report = cls(**data)
        except TypeError as exc:  # a field missing or one this version does not know
            raise ValueError(f"instance report: {exc}") from exc
        for name, kind in _KINDS.items():
            value = getattr(report, name)
            if not (type(value) in kind or (kind is _NUMBER and type(value) is int)):
                raise ValueError(f"instance report field {name!r} is {type(value).__name__}")
        if report.state not in _STATES:
            raise ValueError(f"instance report state {report.state!r} is not one of {sorted(_STATES)}")
        return report

    def observed(self) -> Observed:
        return Observed(
            served_rps=self.served, mean_batch=self.mean_batch, busy=self.busy, slowdown=self.slowdown
        )


_STATES = frozenset(get_args(InstanceState))
_NUMBER = (float,)
_KINDS: dict[str, tuple[type, ...]] = {
    "state": (str,),
    "reason": (str,),
    "pending": (int,),
    "batch_limit": (int,),
    "batch_delay_ms": _NUMBER,
    "batch_delay": (str,),
    "served": _NUMBER,
    "mean_batch": _NUMBER,
    "busy": _NUMBER,
    "slowdown": _NUMBER,
    "concurrency": (int,),
}


def worker_mapping(worker: WorkerView, *, now: float) -> dict[FieldT, EncodableT]:
    """The `worker:{wid}` hash of a heartbeat at `now` (unix s)."""
    return {
        "hardware": worker.hardware,
        "url": worker.url,
        "cores": worker.cores,
        "memory_bytes": worker.memory_bytes,
        "memory_used_bytes": worker.memory_used_bytes,
        "utilization": f"{worker.utilization:.4f}",
        "heartbeat_at": f"{now:.3f}",
        "push": worker.push,
        "incarnation": worker.incarnation,
    }


def worker_from_hash(wid: str, info: dict[bytes, bytes]) -> WorkerView:
    """The worker a `worker:{wid}` hash describes; a hash without one of its fields is a `ValueError`."""
    try:
        return WorkerView(
            id=wid,
            hardware=info[b"hardware"].decode(),
            url=info[b"url"].decode(),
            cores=int(info[b"cores"]),
            memory_bytes=int(info[b"memory_bytes"]),
            memory_used_bytes=int(info[b"memory_used_bytes"]),
            utilization=float(info[b"utilization"]),
            push=info[b"push"].decode(),
            incarnation=info[b"incarnation"].decode(),
        )
    except KeyError as exc:
        raise ValueError(f"worker record of {wid} without {exc.args[0].decode()!r}") from exc


def beat_at(info: dict[bytes, bytes]) -> float:
    """When a `worker:{wid}` hash was written (unix s); a hash without the time is a `ValueError`."""
    try:
        return float(info[b"heartbeat_at"])
    except KeyError:
        raise ValueError("worker record without 'heartbeat_at'") from None


def instance_reports(insts: dict[bytes, bytes]) -> dict[str, InstanceReport]:
    """An `instances:{wid}` hash decoded: variant id → report."""
    return {vid.decode(): InstanceReport.decode(blob) for vid, blob in insts.items()}


async def heartbeat(
    r: aioredis.Redis,
    *,
    worker: WorkerView,
    instances: dict[str, InstanceReport],
    now: float,
    ttl_s: float,
) -> None:
    """Report a worker and its instances in one round trip; `worker.incarnation` tells this run of the
    worker from an earlier one under the same id (`infaas.data.failures`)."""
    ttl_ms = int(ttl_s * 1000)
    pipe = r.pipeline(transaction=True)
    pipe.hset(worker_key(worker.id), mapping=worker_mapping(worker, now=now))
    pipe.pexpire(worker_key(worker.id), ttl_ms)
    pipe.zadd(WORKERS, {worker.id: now})
    pipe.delete(instances_key(worker.id))
    if instances:
        pipe.hset(instances_key(worker.id), mapping={k: v.encode() for k, v in instances.items()})
        pipe.pexpire(instances_key(worker.id), ttl_ms)
    await pipe.execute()


def parse_workers(
    ids: list[str], hashes: list[tuple[dict[bytes, bytes], dict[bytes, bytes]]]
) -> tuple[tuple[WorkerView, ...], tuple[InstanceView, ...]]:
    """Workers and their instances from each id's (worker hash, instances hash); a worker whose hash is
    gone (it expired between the two reads) is left out, and so is one whose record does not decode
    (logged): one bad record must not blind every reader to the other workers."""
    workers: list[WorkerView] = []
    instances: list[InstanceView] = []
    for wid, (info, insts) in zip(ids, hashes, strict=True):
        if not info:
            continue
        try:
            worker, reports = worker_from_hash(wid, info), instance_reports(insts)
        except ValueError as exc:
            log.warning("leaving out worker %s: its heartbeat record does not decode (%s)", wid, exc)
            continue
        workers.append(worker)
        for vid, report in reports.items():
            instances.append(InstanceView(wid, vid, report.state, report.pending, report.concurrency))
    return tuple(workers), tuple(instances)


def observed_from(wid: str, insts: dict[bytes, bytes]) -> dict[tuple[str, str], Observed]:
    """What one executor measured about its instances over its last heartbeat window, by (worker,
    variant), from its instances hash: the planner's observed capacity (none for a record that does
    not decode: `parse_workers` leaves that worker out and says so)."""
    try:
        reports = instance_reports(insts)
    except ValueError:
        return {}
    return {(wid, vid): report.observed() for vid, report in reports.items()}
