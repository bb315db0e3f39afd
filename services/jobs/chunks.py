"""Running one chunk of an offline job: the whole of a jobs-worker task (`worker.py` wraps it in Celery).

`run_chunk` reads the chunk's rows (memory-mapped `.npy` from the artifact store), sends them to an
executor the planner's throttle allows, stores the outputs content-addressed, and tells the registry
the chunk is done. Every step can be repeated: the output is keyed by its bytes, and the registry
records a chunk's completion once. So a task may run twice (a lease expired, Celery redelivered an
unacknowledged message) without duplicating a row; a task that dies leaves the chunk leased until the
lease runs out and the planner hands it out again, so no row is lost either.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import orjson
import redis

from infaas.clients.executor import OfflineExecutorClient
from infaas.core.errors import InfaasError, InvalidInput
from infaas.data import store
from infaas.data.artifacts import ArtifactStore
from infaas.data.heartbeats import beat_at, worker_from_hash
from infaas.jobs.client import JobsClient
from infaas.jobs.protocol import THROTTLE_KEY, ThrottleState, npz_bytes
from infaas.jobs.schemas import TERMINAL_STATES, ChunkDone, ChunkRelease


@dataclass
class ChunkContext:
    """What a chunk run needs, injected so tests can run it against real services in-process."""

    jobs: JobsClient
    executor: OfflineExecutorClient
    artifacts: ArtifactStore
    redis: redis.Redis
    name: str
    heartbeat_ttl_s: float = 5.0


def run_chunk(ctx: ChunkContext, job_id: str, index: int) -> str:
    """Run one chunk; returns what happened (for logs and tests)."""
    task = ctx.jobs.chunk(job_id, index)
    if task.state == "done":
        return "already done"
    if task.job_state in TERMINAL_STATES:
        return f"job {task.job_state}"
    try:
        throttle = ThrottleState.from_json(ctx.redis.get(THROTTLE_KEY))
        worker = _pick_worker(ctx, task.variant, throttle)
    except redis.RedisError as exc:
        throttle, worker = ThrottleState(True, f"metadata store unreachable: {exc}", (), 0.0), None
    if throttle.paused or worker is None:
        reason = throttle.reason if throttle.paused else "no live worker the throttle allows for this variant"
        ctx.jobs.release(job_id, index, ChunkRelease(reason=f"paused: {reason}"[:500], quiet=True))
        return "paused: " + reason
    wid, url = worker
    inputs = {
        name: np.ascontiguousarray(
            np.load(ctx.artifacts.path(digest), mmap_mode="r", allow_pickle=False)[
                task.row_start : task.row_end
            ]
        )
        for name, digest in task.inputs.items()
    }
    rows = task.row_end - task.row_start
    try:
        outputs = ctx.executor.run(url, task.variant, inputs)
    except InvalidInput as exc:  # the rows themselves cannot run: running them again would not help
        ctx.jobs.release(
            job_id, index, ChunkRelease(reason=f"{wid}: {exc.message} {exc.details}"[:500], fatal=True)
        )
        return "failed: " + exc.message
    except InfaasError as exc:  # the worker died, is loading, restarted: try again later elsewhere
        ctx.jobs.release(job_id, index, ChunkRelease(reason=f"{wid}: {exc.message}"[:500]))
        return "released: " + exc.message
    missing = [n for n in task.output_names if n not in outputs]
    short = {n: a.shape[0] for n, a in outputs.items() if a.shape[0] != rows}
    if missing or short:
        reason = (
            f"{wid} answered outputs {sorted(outputs)} with rows {short}; "
            f"expected {task.output_names} × {rows} rows"
        )
        ctx.jobs.release(job_id, index, ChunkRelease(reason=reason[:500], fatal=True))
        return "failed: " + reason
    digest = ctx.artifacts.put(npz_bytes({n: outputs[n] for n in task.output_names}))
    result = ctx.jobs.done(job_id, index, ChunkDone(output_digest=digest, worker=ctx.name[:64]))
    return "done" if result.newly_done else "already done"


def _pick_worker(ctx: ChunkContext, variant: str, throttle: ThrottleState) -> tuple[str, str] | None:
    """The least utilized live worker of the variant's hardware that the throttle allows."""
    blob = ctx.redis.get(store.variant_key(variant))
    if blob is None:
        return None
    hardware = orjson.loads(blob).get("hardware", "cpu")
    best: tuple[float, str, str] | None = None
    for wid in throttle.eligible:
        raw: dict[bytes, bytes] = ctx.redis.hgetall(store.worker_key(wid))  # type: ignore[assignment]
        if not raw:  # gone (its heartbeat expired)
            continue
        try:
            worker, at = worker_from_hash(wid, raw), beat_at(raw)
        except ValueError:  # a record this version cannot read: not a worker to send rows to
            continue
        if worker.hardware != hardware or time.time() - at > ctx.heartbeat_ttl_s:
            continue
        if best is None or worker.utilization < best[0]:
            best = (worker.utilization, wid, worker.url)
    return None if best is None else (best[1], best[2])
