"""An instance's two consumer loops: one pulls its queries from the variant's Redis stream and answers
them on reply channels, the other serves the queries pushed into its inbox over connections."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Any

from redis.exceptions import ResponseError

from infaas.data import store
from infaas.wire.frames import decode_frame
from services.executor import metrics
from services.executor.queries import Query, answer_on_connection, refuse
from services.executor.serving import Instance, Worker, serve_queries

log = logging.getLogger("infaas.executor")


def refuse_inbox(worker: Worker, instance: Instance, reason: str) -> None:
    """Hand everything waiting in the instance's inbox back to its senders."""
    while instance.inbox:
        refuse(instance.inbox.popleft(), worker.worker_id, reason)


async def consume_inbox(worker: Worker, instance: Instance) -> None:
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
        if worker.max_queue_delay_ms > 0 and sum(q.rows for q in instance.inbox) < limit:
            await asyncio.sleep(worker.max_queue_delay_ms / 1000)
        taken: list[Query] = []
        rows = 0
        while instance.inbox and (not taken or rows + instance.inbox[0].rows <= limit):
            q = instance.inbox.popleft()
            taken.append(q)
            rows += q.rows
        try:
            await serve_queries(worker, instance, taken, time.time(), answer_on_connection)
        except asyncio.CancelledError:  # unloaded or shut down mid-batch: nothing taken is lost
            for q in taken:
                if not q.answered:
                    refuse(q, worker.worker_id, "the instance was unloaded mid-batch")
            raise


async def consume_stream(worker: Worker, instance: Instance) -> None:
    """Pull up to the AIMD batch limit of queries at a time; first whatever this consumer left
    pending before a restart. With a queue delay set, a short batch waits briefly for company."""
    stream = store.stream_key(instance.profile.id)
    cursor = "0"  # re-read entries delivered to this consumer before a restart
    while not instance.draining:
        limit = instance.aimd.limit()
        try:
            reply: Any = await worker.redis.xreadgroup(
                store.STREAM_GROUP, worker.worker_id, {stream: cursor}, count=limit, block=1000
            )
            entries = reply[0][1] if reply else []
            if cursor == ">" and entries and len(entries) < limit and worker.max_queue_delay_ms > 0:
                more: Any = await worker.redis.xreadgroup(
                    store.STREAM_GROUP,
                    worker.worker_id,
                    {stream: ">"},
                    count=limit - len(entries),
                    block=max(1, int(worker.max_queue_delay_ms)),
                )
                entries += more[0][1] if more else []
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            if isinstance(exc, ResponseError) and "NOGROUP" in str(exc):
                # Redis came back without the stream (restarted empty): make it and its group again.
                log.warning("%s has no consumer group (Redis lost its data); creating it again", stream)
                with contextlib.suppress(Exception):  # BUSYGROUP: another worker made it first
                    await worker.redis.xgroup_create(stream, store.STREAM_GROUP, id="0", mkstream=True)
                continue
            log.exception("reading %s failed; retrying", stream)
            await asyncio.sleep(0.5)
            continue
        if cursor == "0" and not entries:
            cursor = ">"
            continue
        if entries:
            await serve_entries(worker, instance, entries)


async def serve_entries(
    worker: Worker, instance: Instance, entries: list[tuple[bytes, dict[bytes, bytes]]]
) -> None:
    """Serve entries read from the variant's stream, then acknowledge and delete them."""
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
    pipe = worker.redis.pipeline(transaction=False)

    def publish(q: Query, frame: bytes) -> None:
        pipe.publish(str(q.header["reply"]), frame)

    async def flush() -> None:
        await pipe.execute()

    try:
        await serve_queries(worker, instance, queries, picked_at, publish, flush)
    finally:
        stream = store.stream_key(instance.profile.id)
        pipe.xack(stream, store.STREAM_GROUP, *done_ids)
        pipe.xdel(stream, *done_ids)
        await pipe.execute()
