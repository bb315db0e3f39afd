"""Instances on this worker: load a variant, pull its queries from the variant's stream, batch, run,
reply. Several instances of different variants run side by side, each on its own thread."""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import redis.asyncio as aioredis
from redis.exceptions import ResponseError

from infaas.core.aio import stop_tasks
from infaas.data import store
from infaas.data.artifacts import ArtifactStore
from infaas.runtimes.engines import Runtime, runtime_for
from infaas.schemas.variants import VariantProfile
from infaas.wire.connection import FramedProtocol
from infaas.wire.frames import decode_frame, encode_frame
from services.executor import metrics
from services.executor.batching import batches, run_chunked
from services.executor.instance_state import AIMD, InstanceMonitor, Status

log = logging.getLogger("infaas.executor")

INLINE_MS = 0.5
"""Batches whose profiled p99 is at most this run on the event loop instead of the instance's thread."""

UNLOAD_GRACE_S = 2.0
"""How long an unload waits for the batch its instance is running to be answered before cutting it off
(whatever it then leaves unanswered is refused, so the sender runs it elsewhere)."""


@dataclass
class Query:
    entry_id: bytes
    header: dict[str, object]
    inputs: dict[str, np.ndarray]
    rows: int
    conn: FramedProtocol | None = None
    """The push connection to answer on; None: the query came from the variant's stream."""
    answered: bool = False
    """Set when its answer is handed to its push connection (what an unload must not refuse again)."""


Reply = Callable[[Query, bytes], None]
"""Where a query's answer frame goes: its push connection, or a Redis pipeline's PUBLISH."""


@dataclass
class Instance:
    profile: VariantProfile
    monitor: InstanceMonitor
    aimd: AIMD
    runtime: Runtime | None = None
    task: asyncio.Task[None] | None = None
    pool: ThreadPoolExecutor = field(default_factory=lambda: ThreadPoolExecutor(max_workers=1))
    in_flight: int = 0
    busy_seconds: float = 0.0
    load_ms: float = 0.0
    error: str | None = None
    draining: bool = False  # set by services/executor/control.py: stop pulling after this batch
    inbox: deque[Query] = field(default_factory=deque)
    """Queries pushed over a connection (services/executor/push.py), waiting for the inbox consumer."""
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    inbox_task: asyncio.Task[None] | None = None

    @property
    def state(self) -> str:
        return self.monitor.status.state


class InstanceHost:
    """Owns this worker's instances and their consumer loops."""

    def __init__(
        self,
        *,
        worker_id: str,
        redis: aioredis.Redis,
        artifacts: ArtifactStore,
        default_budget_ms: float = 20.0,
        max_queue_delay_ms: float = 0.0,
    ) -> None:
        self.worker_id = worker_id
        self.redis = redis
        self.artifacts = artifacts
        self.default_budget_ms = default_budget_ms
        self.max_queue_delay_ms = max_queue_delay_ms
        self.instances: dict[str, Instance] = {}
        self._loading: dict[str, asyncio.Future[Instance]] = {}

    async def load(self, profile: VariantProfile) -> Instance:
        """Load an instance (concurrent requests for the same variant share one load)."""
        existing = self.instances.get(profile.id)
        if existing is not None and existing.state != "failed":
            return existing  # loading, or busy (overloaded/interfered): one instance per variant here
        if existing is not None:
            await self.unload(profile.id)  # a failed instance is replaced
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
        # AIMD grows by an eighth of the max batch per good batch: a few batches reach the cap.
        instance = Instance(
            profile=profile,
            monitor=InstanceMonitor(profile),
            aimd=AIMD(cap=profile.max_batch, step=max(1, profile.max_batch // 8)),
        )
        self.instances[profile.id] = instance
        start = time.perf_counter()
        try:
            runtime = runtime_for(profile, self.artifacts.path(profile.artifact_digest))
            await asyncio.get_running_loop().run_in_executor(instance.pool, runtime.load)
            await self._ensure_group(profile.id)
        except Exception as exc:
            instance.monitor.status = Status("failed", f"load failed: {str(exc)[:200]}")
            instance.error = str(exc)[:300]
            self.refuse_inbox(instance, f"loading the instance failed: {instance.error}")
            log.exception("loading %s failed", profile.id)
            raise
        instance.runtime = runtime
        instance.load_ms = (time.perf_counter() - start) * 1000
        metrics.LOAD_SECONDS.observe(instance.load_ms / 1000)
        instance.monitor.status = Status("active", f"loaded in {instance.load_ms:.0f} ms")
        instance.task = asyncio.create_task(self._consume(instance), name=f"consume:{profile.id}")
        instance.inbox_task = asyncio.create_task(self.consume_inbox(instance), name=f"inbox:{profile.id}")
        return instance

    async def _ensure_group(self, vid: str) -> None:
        try:
            await self.redis.xgroup_create(store.stream_key(vid), store.STREAM_GROUP, id="0", mkstream=True)
        except ResponseError as exc:
            if "BUSYGROUP" not in str(exc):
                raise

    async def unload(self, vid: str) -> bool:
        instance = self.instances.pop(vid, None)  # from here on, pushed queries for it are refused
        if instance is None:
            return False
        # What waits in the inbox goes back to its senders now, to run elsewhere; the batch running is
        # answered here (then the inbox consumer finds nothing left and returns), unless it takes longer
        # than the grace period. Stream entries being served stay pending in the stream when cut off.
        instance.draining = True
        self.refuse_inbox(instance, "the instance was unloaded")
        instance.wake.set()
        await stop_tasks(instance.task)
        await stop_tasks(instance.inbox_task, grace_s=UNLOAD_GRACE_S)
        if instance.runtime is not None:
            instance.runtime.unload()
        instance.pool.shutdown(wait=False)
        return True

    async def close(self) -> None:
        for vid in list(self.instances):
            await self.unload(vid)

    def accept(self, query: Query) -> str | None:
        """Queue a pushed query for its variant's instance; the reason it cannot be, if not (the sender
        then sends it elsewhere: an unknown, draining or failed instance is not a lost query)."""
        vid = str(query.header.get("variant"))
        instance = self.instances.get(vid)
        if instance is None:
            return f"no instance of {vid} on this worker"
        if instance.draining:
            return f"the instance of {vid} is draining"
        if instance.state == "failed":
            return f"the instance of {vid} failed: {instance.error}"
        instance.inbox.append(query)  # a loading instance serves it once loaded
        instance.wake.set()
        return None

    def refuse_inbox(self, instance: Instance, reason: str) -> None:
        while instance.inbox:
            self.refuse(instance.inbox.popleft(), reason)

    def refuse(self, query: Query, reason: str) -> None:
        """Hand a pushed query back to its sender, which sends it elsewhere."""
        if query.conn is not None and not query.conn.closed:
            query.conn.send(refusal(query.header, self.worker_id, reason))

    async def consume_inbox(self, instance: Instance) -> None:
        """Serve pushed queries: everything waiting, up to the AIMD limit per batch; with a queue delay
        set, a short batch waits briefly for company. Returns once draining and empty."""
        while True:
            if not instance.inbox:
                if instance.draining:
                    return
                instance.wake.clear()
                await instance.wake.wait()
                continue
            limit = instance.aimd.limit()
            if self.max_queue_delay_ms > 0 and sum(q.rows for q in instance.inbox) < limit:
                await asyncio.sleep(self.max_queue_delay_ms / 1000)
            taken: list[Query] = []
            rows = 0
            while instance.inbox and (not taken or rows + instance.inbox[0].rows <= limit):
                q = instance.inbox.popleft()
                taken.append(q)
                rows += q.rows
            try:
                await self.serve_queries(instance, taken, time.time(), _answer_on_connection)
            except asyncio.CancelledError:  # unloaded or shut down mid-batch: nothing taken is lost
                for q in taken:
                    if not q.answered:
                        self.refuse(q, "the instance was unloaded mid-batch")
                raise

    async def _consume(self, instance: Instance) -> None:
        """Pull up to the AIMD batch limit of queries at a time; first whatever this consumer left
        pending before a restart. With a queue delay set, a short batch waits briefly for company."""
        stream = store.stream_key(instance.profile.id)
        cursor = "0"  # re-read entries delivered to this consumer before a restart
        while not instance.draining:
            limit = instance.aimd.limit()
            try:
                reply: Any = await self.redis.xreadgroup(
                    store.STREAM_GROUP, self.worker_id, {stream: cursor}, count=limit, block=1000
                )
                entries = reply[0][1] if reply else []
                if cursor == ">" and entries and len(entries) < limit and self.max_queue_delay_ms > 0:
                    more: Any = await self.redis.xreadgroup(
                        store.STREAM_GROUP,
                        self.worker_id,
                        {stream: ">"},
                        count=limit - len(entries),
                        block=max(1, int(self.max_queue_delay_ms)),
                    )
                    entries += more[0][1] if more else []
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("reading %s failed; retrying", stream)
                await asyncio.sleep(0.5)
                continue
            if cursor == "0" and not entries:
                cursor = ">"
                continue
            if entries:
                await self._serve(instance, entries)

    async def _serve(self, instance: Instance, entries: list[tuple[bytes, dict[bytes, bytes]]]) -> None:
        """Serve entries read from the variant's stream."""
        picked_at = time.time()
        queries = []
        done_ids = []
        for entry_id, fields in entries:
            done_ids.append(entry_id)
            try:
                header, inputs = decode_frame(fields[b"f"])
            except Exception:
                log.exception("dropping malformed entry %s", entry_id)
                metrics.FAILURES.labels(instance.profile.id, "malformed").inc()
                continue
            rows = next(iter(inputs.values())).shape[0] if inputs else 0
            queries.append(Query(entry_id=entry_id, header=header, inputs=inputs, rows=rows))
        # Answers and the acknowledgement leave in one pipeline: one Redis round trip per batch (each
        # one costs a process wake-up on both sides, which is most of this hop's CPU). Redis runs the
        # commands in order, so entries are acknowledged only after their answers are published; a
        # crash before the write leaves them pending, to be re-read on restart.
        pipe = self.redis.pipeline(transaction=False)

        def publish(q: Query, frame: bytes) -> None:
            pipe.publish(str(q.header["reply"]), frame)

        async def flush() -> None:
            await pipe.execute()

        try:
            await self.serve_queries(instance, queries, picked_at, publish, flush)
        finally:
            stream = store.stream_key(instance.profile.id)
            pipe.xack(stream, store.STREAM_GROUP, *done_ids)
            pipe.xdel(stream, *done_ids)
            await pipe.execute()

    async def serve_queries(
        self,
        instance: Instance,
        taken: list[Query],
        picked_at: float,
        reply: Reply,
        flush: Callable[[], Any] | None = None,
    ) -> None:
        """Run `taken` in AIMD-limited batches and answer each query through `reply`; `flush` (if
        given) sends what `reply` queued between batches, so an earlier batch's answers do not wait."""
        queries = []
        expired = []
        for query in taken:
            instance.monitor.offered(query.rows)
            drop_after = query.header.get("drop_after")
            if isinstance(drop_after, int | float) and picked_at > drop_after:
                expired.append(query)  # its caller has stopped waiting: running it would only add load
            else:
                queries.append(query)
        instance.in_flight += len(queries)
        try:
            if expired:
                self._reply_expired(reply, instance, expired, picked_at)
            grouped = batches(queries, instance.aimd.limit())
            for i, batch in enumerate(grouped):
                await self._run_batch(reply, instance, batch, picked_at)
                if flush is not None and i < len(grouped) - 1:
                    await flush()
        finally:
            instance.in_flight -= len(queries)

    def _reply_expired(
        self, reply: Reply, instance: Instance, expired: list[Query], picked_at: float
    ) -> None:
        for q in expired:
            metrics.FAILURES.labels(instance.profile.id, "expired").inc()
            head = {
                "id": q.header["id"],
                "worker": self.worker_id,
                "variant": instance.profile.id,
                "error": "the query's deadline passed before it could run",
                "expired": True,
                "queue_ms": round((picked_at - _enqueued(q, picked_at)) * 1000, 4),
            }
            reply(q, encode_frame(head, {}))

    async def _run_batch(
        self, reply: Reply, instance: Instance, batch: list[Query], picked_at: float
    ) -> None:
        """Run one batch and hand each query's answer to `reply`."""
        profile = instance.profile
        runtime = instance.runtime
        assert runtime is not None
        names = list(batch[0].inputs)
        if len(batch) == 1:
            merged = batch[0].inputs
        else:
            merged = {n: np.concatenate([q.inputs[n] for q in batch]) for n in names}
        rows_total = sum(q.rows for q in batch)
        start = time.perf_counter()
        try:
            if profile.latency_ms(rows_total) <= INLINE_MS:
                # Handing a sub-half-millisecond run to a thread costs more than the run itself; the
                # event loop is blocked for less than the hand-off would take.
                outputs = run_chunked(runtime, merged, profile.max_batch)
            else:
                outputs = await asyncio.get_running_loop().run_in_executor(
                    instance.pool, run_chunked, runtime, merged, profile.max_batch
                )
            error = None
        except Exception as exc:  # a failing run answers every query in the batch with the error
            # The frame carries each query's request id: the log line names every query the failure hit.
            log.exception(
                "running %s failed",
                profile.id,
                extra={"request_ids": [q.header.get("request_id") for q in batch]},
            )
            outputs, error = {}, str(exc)[:300]
        compute_s = time.perf_counter() - start
        compute_ms = compute_s * 1000
        instance.busy_seconds += compute_s * profile.threads
        instance.monitor.ran(rows_total, compute_ms)
        budgets = [float(b) for q in batch if isinstance(b := q.header.get("budget_ms"), int | float)]
        instance.aimd.observe(rows_total, compute_ms, min(budgets) if budgets else self.default_budget_ms)
        metrics.observe_batch(profile.id, rows_total, compute_s)
        offset = 0
        for q in batch:
            queue_s = max(0.0, picked_at - _enqueued(q, picked_at))
            metrics.observe_query(profile.id, queue_s, ok=error is None)
            head = {
                "id": q.header["id"],
                "worker": self.worker_id,
                "variant": profile.id,
                "queue_ms": round(queue_s * 1000, 4),
                "compute_ms": round(compute_ms, 4),
                "batch_rows": rows_total,
            }
            if error is None:
                part = {n: a[offset : offset + q.rows] for n, a in outputs.items()}
            else:
                part, head["error"] = {}, error
            offset += q.rows
            reply(q, encode_frame(head, part))


def refusal(header: dict[str, object], worker_id: str, reason: str) -> bytes:
    """The answer to a pushed query this worker will not run: the sender re-dispatches it."""
    return encode_frame({"id": header.get("id"), "worker": worker_id, "refused": reason}, {})


def _answer_on_connection(query: Query, frame: bytes) -> None:
    query.answered = True
    conn = query.conn
    if conn is None or conn.closed:  # the sender went away: nobody is waiting for this answer
        metrics.FAILURES.labels(str(query.header.get("variant")), "sender_gone").inc()
        return
    conn.send(frame)


def _enqueued(query: Query, default: float) -> float:
    value = query.header.get("enqueued_at")
    return float(value) if isinstance(value, int | float) else default
