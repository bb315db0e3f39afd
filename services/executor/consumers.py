"""An instance's two consumer loops: one pulls its queries from the variant's Redis stream and answers
them on reply channels, the other serves the queries pushed into its inbox over connections."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Coroutine
from typing import Any

from redis.exceptions import ResponseError

from infaas.core.errors import BadRequest
from infaas.data import store
from infaas.wire.messages import Order
from services.executor import metrics
from services.executor.batching import Delay, batch_delay
from services.executor.queries import Delivery, answer_at_once, answer_on_connection, refusal, refuse
from services.executor.serving import (
    ROW_COUPLED_PRECISIONS,
    Instance,
    Worker,
    other_artifact,
    runs_inline,
    serve_inline,
    serve_queries,
)

log = logging.getLogger("infaas.executor")


AUTO_DELAY_CAP_MS = 5.0
"""The longest wait for batch mates an instance chooses by itself (`max_queue_delay_ms` unset)."""

NO_DELAY = Delay(0.0, 1, "")


def batch_delay_for(worker: Worker, instance: Instance, limit: int, head: Order | None) -> Delay:
    """The wait for batch mates before the instance's next short batch: the configured one where
    `max_queue_delay_ms` is set (0: never), else the instance's own choice (`batch_delay`), kept on the
    instance for its heartbeat and metrics. `head` is the oldest waiting order (its SLO).

    Remembered until what it depends on changes: the offered rate moves once per monitor window, the
    limit and SLO seldom, and working it out again (its reason's text included) cost ~50 µs a query
    on the cold caches of a low rate (docs/benchmarks.md, "Cold caches")."""
    slo_ms = head.slo_ms if head is not None and head.slo_ms is not None else worker.default_slo_ms
    configured = worker.max_queue_delay_ms
    key = (configured, limit, slo_ms, instance.monitor.offered_rps, id(instance.profile))
    if key == instance.delay_key:
        return instance.delay
    if configured is not None:
        delay = (
            Delay(configured, limit, f"max_queue_delay_ms is set to {configured:g}")
            if configured > 0
            else NO_DELAY
        )
    elif instance.profile.precision in ROW_COUPLED_PRECISIONS:
        delay = Delay(0.0, 1, f"{instance.profile.precision} runs one query per batch")
    else:
        delay = batch_delay(
            instance.profile,
            offered_rps=instance.monitor.offered_rps,
            limit=limit,
            slo_ms=slo_ms,
            cap_ms=AUTO_DELAY_CAP_MS,
        )
    instance.delay, instance.delay_key = delay, key
    return delay


def serve_now(worker: Worker, instance: Instance, delivery: Delivery) -> bool:
    """Serve a pushed query where it arrived, if the inbox consumer would run it at once in a batch of
    its own on the event loop anyway: the instance loaded, nothing waiting or running, no wait for batch
    mates, an inline run. Its answer then leaves without the consumer's task switch, which on an idle
    machine costs about as much as the run of a small model (docs/benchmarks.md). False: queue it."""
    if (
        instance.runtime is None
        or instance.inbox
        or instance.in_flight
        or not runs_inline(worker, instance, delivery.rows)
    ):
        return False
    delay = batch_delay_for(worker, instance, instance.aimd.limit(), delivery.order)
    if delay.ms > 0 and delivery.rows < delay.target_rows:
        return False
    serve_inline(worker, instance, delivery, time.time(), answer_at_once)
    return True


def refuse_inbox(worker: Worker, instance: Instance, reason: str) -> None:
    """Hand everything waiting in the instance's inbox back to its senders."""
    while instance.inbox:
        refuse(instance.inbox.popleft(), worker.worker_id, reason)


class Batches:
    """The batches one consumer of an instance runs at once: up to the instance's `concurrency`, each a
    task; at concurrency 1 with none running, a batch runs in the consumer itself (no task)."""

    def __init__(self) -> None:
        self.running: set[asyncio.Task[None]] = set()

    async def room(self, concurrency: int) -> None:
        """Return once fewer than `concurrency` batches run."""
        while len(self.running) >= concurrency:
            await asyncio.wait(self.running, return_when=asyncio.FIRST_COMPLETED)

    async def run(self, batch: Coroutine[Any, Any, None], concurrency: int) -> None:
        if concurrency <= 1 and not self.running:
            await batch
            return
        task = asyncio.create_task(batch)
        self.running.add(task)
        task.add_done_callback(self.running.discard)

    async def finish(self) -> None:
        if self.running:
            await asyncio.gather(*self.running)

    async def cancel(self) -> None:
        """The consumer was cancelled (unloaded, shut down): the batches still running stop too."""
        for task in self.running:
            task.cancel()
        await asyncio.gather(*self.running, return_exceptions=True)


async def consume_inbox(worker: Worker, instance: Instance) -> None:
    """Serve pushed queries: everything waiting, up to the AIMD limit per batch, up to the instance's
    `concurrency` batches at once; a short batch may first wait briefly for company
    (`batch_delay_for`). Returns once draining, empty and done."""
    batches = Batches()
    try:
        while True:
            if not instance.inbox:
                if instance.draining:
                    await batches.finish()
                    return
                instance.wake.clear()
                await instance.wake.wait()
                continue
            await batches.room(instance.concurrency)
            if not instance.inbox:
                continue
            limit = instance.aimd.limit()
            delay = batch_delay_for(worker, instance, limit, instance.inbox[0].order)
            if delay.ms > 0 and sum(q.rows for q in instance.inbox) < delay.target_rows:
                await asyncio.sleep(delay.ms / 1000)
            taken: list[Delivery] = []
            rows = 0
            while instance.inbox and (not taken or rows + instance.inbox[0].rows <= limit):
                q = instance.inbox.popleft()
                taken.append(q)
                rows += q.rows
            await batches.run(_serve_inbox_batch(worker, instance, taken), instance.concurrency)
    except asyncio.CancelledError:
        await batches.cancel()
        raise


async def _serve_inbox_batch(worker: Worker, instance: Instance, taken: list[Delivery]) -> None:
    try:
        await serve_queries(worker, instance, taken, time.time(), answer_on_connection)
    except asyncio.CancelledError:  # unloaded or shut down mid-batch: nothing taken is lost
        for q in taken:
            if not q.answered:
                refuse(q, worker.worker_id, "the instance was unloaded mid-batch")
        raise


async def consume_stream(worker: Worker, instance: Instance) -> None:
    """Pull up to the AIMD batch limit of queries at a time, up to the instance's `concurrency`
    batches at once; first whatever this consumer left pending before a restart or a failed read. A
    short batch may first wait briefly for company (`batch_delay_for`)."""
    stream = store.stream_key(instance.profile.id)
    cursor = "0"  # re-read entries delivered to this consumer before a restart
    batches = Batches()
    in_hand: set[bytes] = set()  # entries a running batch holds: a re-read from "0" lists them too

    async def serve_held(entries: list[tuple[bytes, dict[bytes, bytes]]]) -> None:
        try:
            await serve_entries(worker, instance, entries)
        finally:
            in_hand.difference_update(e[0] for e in entries)

    try:
        while not instance.draining:
            await batches.room(instance.concurrency)
            if instance.draining:
                break
            limit = instance.aimd.limit()
            try:
                reply: Any = await worker.redis.xreadgroup(
                    store.STREAM_GROUP, worker.worker_id, {stream: cursor}, count=limit, block=1000
                )
                entries = reply[0][1] if reply else []
                if cursor == "0":
                    entries = [e for e in entries if e[0] not in in_hand]
                delay = (
                    batch_delay_for(worker, instance, limit, None) if cursor == ">" and entries else NO_DELAY
                )
                if delay.ms > 0 and len(entries) < delay.target_rows:
                    # Stream entries are counted as queries here, not rows: reading them costs a decode.
                    more: Any = await worker.redis.xreadgroup(
                        store.STREAM_GROUP,
                        worker.worker_id,
                        {stream: ">"},
                        count=limit - len(entries),
                        block=max(1, round(delay.ms)),
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
                # A read that failed may still have been delivered (the reply lost to a timeout, e.g.
                # after the process was paused): its entries wait in this consumer's pending list,
                # which only a read from "0" returns. Without it they were never answered.
                cursor = "0"
                await asyncio.sleep(0.5)
                continue
            if cursor == "0" and not entries:
                cursor = ">"
                continue
            if not entries:
                continue
            in_hand.update(e[0] for e in entries)
            await batches.run(serve_held(entries), instance.concurrency)
        await batches.finish()
    except asyncio.CancelledError:  # entries of a cancelled batch stay pending: re-read on restart
        await batches.cancel()
        raise


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
            order, inputs = Order.decode(fields[b"f"])
        except (BadRequest, KeyError):
            log.exception("dropping malformed entry %s", entry_id)
            metrics.FAILURES.labels(instance.profile.id, "malformed").inc()
            continue
        rows = next(iter(inputs.values())).shape[0] if inputs else 0
        queries.append(Delivery(entry_id=entry_id, order=order, inputs=inputs, rows=rows))
    # Answers and the acknowledgement leave in one pipeline: one Redis round trip per batch (each
    # one costs a process wake-up on both sides, which is most of this hop's CPU). Redis runs the
    # commands in order, so entries are acknowledged only after their answers are published; a
    # crash before the write leaves them pending, to be re-read on restart.
    pipe = worker.redis.pipeline(transaction=False)

    def publish(d: Delivery, frame: bytes) -> None:
        pipe.publish(d.order.reply, frame)

    # A query meant for the artifact its model was registered again with goes back to its sender, as a
    # push refused (it has the new artifact loaded); this instance goes at its next heartbeat.
    runnable = []
    for q in queries:
        if (other := other_artifact(instance, q.order)) is None:
            runnable.append(q)
        else:
            publish(q, refusal(q.order.id, worker.worker_id, other))
    queries = runnable

    async def flush() -> None:
        await pipe.execute()

    try:
        await serve_queries(worker, instance, queries, picked_at, publish, flush)
    finally:
        stream = store.stream_key(instance.profile.id)
        pipe.xack(stream, store.STREAM_GROUP, *done_ids)
        pipe.xdel(stream, *done_ids)
        await pipe.execute()
