"""Instances on this worker: load a variant, pull its queries from the variant's stream, batch, run,
reply. Several instances of different variants run side by side, each on its own thread."""

from __future__ import annotations

import asyncio
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import redis.asyncio as aioredis
from redis.exceptions import ResponseError

from infaas import store
from infaas.artifacts import ArtifactStore
from infaas.runtimes import Runtime, make_runtime
from infaas.variants import VariantProfile
from infaas.wire import decode_frame, encode_frame
from services.executor import metrics

log = logging.getLogger("infaas.executor")


@dataclass
class Query:
    entry_id: bytes
    header: dict[str, object]
    inputs: dict[str, np.ndarray]
    rows: int


@dataclass
class Instance:
    profile: VariantProfile
    state: str = "loading"
    runtime: Runtime | None = None
    task: asyncio.Task[None] | None = None
    pool: ThreadPoolExecutor = field(default_factory=lambda: ThreadPoolExecutor(max_workers=1))
    in_flight: int = 0
    busy_seconds: float = 0.0
    load_ms: float = 0.0
    error: str | None = None


class InstanceHost:
    """Owns this worker's instances and their consumer loops."""

    def __init__(self, *, worker_id: str, redis: aioredis.Redis, artifacts: ArtifactStore) -> None:
        self.worker_id = worker_id
        self.redis = redis
        self.artifacts = artifacts
        self.instances: dict[str, Instance] = {}
        self._loading: dict[str, asyncio.Future[Instance]] = {}

    async def load(self, profile: VariantProfile) -> Instance:
        """Load an instance (concurrent requests for the same variant share one load)."""
        existing = self.instances.get(profile.id)
        if existing is not None and existing.state == "active":
            return existing
        pending = self._loading.get(profile.id)
        if pending is not None:
            return await asyncio.shield(pending)
        future: asyncio.Future[Instance] = asyncio.get_running_loop().create_future()
        self._loading[profile.id] = future
        try:
            instance = await self._load(profile)
            future.set_result(instance)
            return instance
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # mark retrieved: the caller gets the exception directly
            raise
        finally:
            del self._loading[profile.id]

    async def _load(self, profile: VariantProfile) -> Instance:
        instance = Instance(profile=profile)
        self.instances[profile.id] = instance
        start = time.perf_counter()
        try:
            path = self.artifacts.path(profile.artifact_digest)
            runtime = make_runtime(
                path,
                runtime=profile.runtime,
                hardware=profile.hardware,
                threads=profile.threads,
                optimization=profile.optimization,
                provider=profile.provider,
                precision=profile.precision,
                input_names=list(profile.input_names),
                output_names=list(profile.output_names),
            )
            await asyncio.get_running_loop().run_in_executor(instance.pool, runtime.load)
            await self._ensure_group(profile.id)
        except Exception as exc:
            instance.state = "failed"
            instance.error = str(exc)[:300]
            log.exception("loading %s failed", profile.id)
            raise
        instance.runtime = runtime
        instance.load_ms = (time.perf_counter() - start) * 1000
        metrics.LOAD_SECONDS.observe(instance.load_ms / 1000)
        instance.state = "active"
        instance.task = asyncio.create_task(self._consume(instance), name=f"consume:{profile.id}")
        return instance

    async def _ensure_group(self, vid: str) -> None:
        try:
            await self.redis.xgroup_create(store.stream_key(vid), store.STREAM_GROUP, id="0", mkstream=True)
        except ResponseError as exc:
            if "BUSYGROUP" not in str(exc):
                raise

    async def unload(self, vid: str) -> bool:
        instance = self.instances.pop(vid, None)
        if instance is None:
            return False
        if instance.task is not None:
            instance.task.cancel()
            try:
                await instance.task
            except asyncio.CancelledError:
                pass
        if instance.runtime is not None:
            instance.runtime.unload()
        instance.pool.shutdown(wait=False)
        return True

    async def close(self) -> None:
        for vid in list(self.instances):
            await self.unload(vid)

    async def _consume(self, instance: Instance) -> None:
        """Pull up to a max batch of queries at a time; first whatever this consumer left pending."""
        vid = instance.profile.id
        stream = store.stream_key(vid)
        cursor = "0"  # re-read entries delivered to this consumer before a restart
        while True:
            try:
                reply: Any = await self.redis.xreadgroup(
                    store.STREAM_GROUP,
                    self.worker_id,
                    {stream: cursor},
                    count=instance.profile.max_batch,
                    block=1000,
                )
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("reading %s failed; retrying", stream)
                await asyncio.sleep(0.5)
                continue
            entries = reply[0][1] if reply else []
            if cursor == "0" and not entries:
                cursor = ">"
                continue
            if entries:
                await self._serve(instance, entries)

    async def _serve(self, instance: Instance, entries: list[tuple[bytes, dict[bytes, bytes]]]) -> None:
        picked_at = time.time()
        queries = []
        done_ids = []
        for entry_id, fields in entries:
            done_ids.append(entry_id)
            try:
                header, inputs = decode_frame(fields[b"f"])
            except Exception:
                log.exception("dropping malformed entry %s", entry_id)
                continue
            rows = next(iter(inputs.values())).shape[0] if inputs else 0
            queries.append(Query(entry_id=entry_id, header=header, inputs=inputs, rows=rows))
        instance.in_flight += len(queries)
        try:
            for batch in _batches(queries, instance.profile.max_batch):
                await self._run_batch(instance, batch, picked_at)
        finally:
            instance.in_flight -= len(queries)
            await self.redis.xack(store.stream_key(instance.profile.id), store.STREAM_GROUP, *done_ids)
            await self.redis.xdel(store.stream_key(instance.profile.id), *done_ids)

    async def _run_batch(self, instance: Instance, batch: list[Query], picked_at: float) -> None:
        profile = instance.profile
        runtime = instance.runtime
        assert runtime is not None
        names = list(batch[0].inputs)
        if len(batch) == 1:
            merged = batch[0].inputs
        else:
            merged = {n: np.concatenate([q.inputs[n] for q in batch]) for n in names}
        start = time.perf_counter()
        try:
            outputs = await asyncio.get_running_loop().run_in_executor(
                instance.pool, _run_chunked, runtime, merged, profile.max_batch
            )
            error = None
        except Exception as exc:  # a failing run answers every query in the batch with the error
            log.exception("running %s failed", profile.id)
            outputs, error = {}, str(exc)[:300]
        compute_s = time.perf_counter() - start
        instance.busy_seconds += compute_s * profile.threads
        metrics.COMPUTE_SECONDS.labels(profile.id).observe(compute_s)
        metrics.BATCH_ROWS.labels(profile.id).observe(sum(q.rows for q in batch))
        offset = 0
        pipe = self.redis.pipeline(transaction=False)
        for q in batch:
            queue_s = max(0.0, picked_at - float(q.header.get("enqueued_at", picked_at)))  # type: ignore[arg-type]
            metrics.QUEUE_SECONDS.labels(profile.id).observe(queue_s)
            head = {
                "id": q.header["id"],
                "worker": self.worker_id,
                "variant": profile.id,
                "queue_ms": round(queue_s * 1000, 4),
                "compute_ms": round(compute_s * 1000, 4),
                "batch_rows": sum(x.rows for x in batch),
            }
            if error is None:
                part = {n: a[offset : offset + q.rows] for n, a in outputs.items()}
                metrics.QUERIES.labels(profile.id, "ok").inc()
            else:
                part, head["error"] = {}, error
                metrics.QUERIES.labels(profile.id, "error").inc()
            offset += q.rows
            pipe.publish(str(q.header["reply"]), encode_frame(head, part))
        await pipe.execute()


def _batches(queries: list[Query], max_batch: int) -> list[list[Query]]:
    """Group queries in arrival order into batches of at most `max_batch` rows (a larger query alone)."""
    out: list[list[Query]] = []
    current: list[Query] = []
    rows = 0
    signature: tuple[tuple[str, tuple[int, ...]], ...] | None = None
    for q in queries:
        shape_key = tuple((n, a.shape[1:]) for n, a in q.inputs.items())
        if current and (rows + q.rows > max_batch or shape_key != signature):
            out.append(current)
            current, rows = [], 0
        current.append(q)
        rows += q.rows
        signature = shape_key
    if current:
        out.append(current)
    return out


def _run_chunked(runtime: Runtime, inputs: dict[str, np.ndarray], max_batch: int) -> dict[str, np.ndarray]:
    rows = next(iter(inputs.values())).shape[0]
    if rows <= max_batch:
        return runtime.run(inputs)
    parts = [
        runtime.run({n: a[i : i + max_batch] for n, a in inputs.items()}) for i in range(0, rows, max_batch)
    ]
    return {n: np.concatenate([p[n] for p in parts]) for n in parts[0]}
