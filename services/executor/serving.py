"""An instance as it serves (its runtime, thread, monitor, batch limit and inbox), and serving a set of
its queries: drop the expired, run the rest in batches, answer each query."""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import redis.asyncio as aioredis

from infaas.runtimes.base import Runtime
from infaas.runtimes.registry import refuses_input
from infaas.schemas.variants import VariantProfile
from infaas.wire.messages import Order, Outcome, Reply
from services.executor import metrics
from services.executor.batching import AIMD, Delay, batches, run_chunked
from services.executor.instance_state import InstanceMonitor
from services.executor.queries import Delivery, ReplyTo

log = logging.getLogger("infaas.executor")

INLINE_MS = 0.5
"""Batches whose profiled p99 is at most this run on the event loop instead of the instance's thread."""


def inline_threshold_ms(configured: float | None, cores: int) -> float:
    """Up to which profiled batch latency batches run on the event loop: as configured, else every
    batch where this process may use one core only (a thread there buys no parallelism, only two
    context switches per batch, each a wait for the core on a busy machine), else `INLINE_MS`."""
    if configured is not None:
        return configured
    return math.inf if cores <= 1 else INLINE_MS


MAX_CONCURRENCY = 8
"""Most batches one instance runs at once (a configuration asking more gets this many)."""

ROW_COUPLED_PRECISIONS = frozenset({"int8-dynamic"})
"""Precisions whose answer for a row depends on the other rows it runs with: dynamic quantization
scales activations over the whole input tensor. Their instances run one query per batch, so no query's
answer depends on another's input (a query's own rows, one tenant's, still run together)."""


class Worker(Protocol):
    """What serving needs of the worker hosting the instance (`InstanceHost`,
    services/executor/instances.py)."""

    worker_id: str
    redis: aioredis.Redis
    default_slo_ms: float
    """The batch latency aimed for where no order of a batch states an SLO."""
    max_queue_delay_ms: float | None
    inline_ms: float
    """Batches whose profiled latency is at most this run on the event loop (`inline_threshold_ms`)."""


@dataclass
class Instance:
    profile: VariantProfile
    monitor: InstanceMonitor
    aimd: AIMD
    runtime: Runtime | None = None
    task: asyncio.Task[None] | None = None
    pool: ThreadPoolExecutor = field(default_factory=lambda: ThreadPoolExecutor(max_workers=MAX_CONCURRENCY))
    """Threads are started as batches need them: one while `concurrency` is 1."""
    concurrency: int = 1
    """Batches run at once (SERF's c; each with the variant's threads): set by the planner from the
    model's predicted latency at the instance's load (`infaas.policy.configuration.concurrency_for`)."""
    in_flight: int = 0
    busy_seconds: float = 0.0
    load_ms: float = 0.0
    error: str | None = None
    draining: bool = False  # set by services/executor/control.py: stop pulling after this batch
    inbox: deque[Delivery] = field(default_factory=deque)
    """Orders pushed over a connection (services/executor/push.py), waiting for the inbox consumer."""
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    inbox_task: asyncio.Task[None] | None = None
    delay: Delay = field(default_factory=lambda: Delay(0.0, 1, "no batch yet"))
    """The wait for batch mates chosen before its latest batch (services/executor/consumers.py)."""
    delay_key: tuple[float | None, int, float, float, int] | None = None
    """What `delay` was worked out from (`batch_delay_for`): the same again, the same wait."""

    @property
    def state(self) -> str:
        return self.monitor.status.state


def other_artifact(instance: Instance, order: Order) -> str | None:
    """Why `instance` must not answer an order whose sender meant another artifact of its variant id (a
    model deleted and registered again under its name reuses its variant ids), or None. The sender
    then sends it elsewhere, or has the new artifact loaded; an order without a digest is not checked."""
    meant = order.digest
    if meant is None or meant == instance.profile.artifact_digest:
        return None
    vid = instance.profile.id
    return f"the instance of {vid} runs another artifact than the query's (its model was registered again)"


async def serve_queries(
    worker: Worker,
    instance: Instance,
    taken: list[Delivery],
    picked_at: float,
    reply: ReplyTo,
    flush: Callable[[], Any] | None = None,
) -> None:
    """Run `taken` in AIMD-limited batches and answer each order through `reply`; `flush` (if
    given) sends what `reply` queued between batches, so an earlier batch's replies do not wait."""
    queries = _live(worker, instance, taken, picked_at, reply)
    instance.in_flight += len(queries)
    try:
        coupled = instance.profile.precision in ROW_COUPLED_PRECISIONS
        grouped = batches(queries, 1 if coupled else instance.aimd.limit())
        for i, batch in enumerate(grouped):
            await _run_batch(worker, reply, instance, batch, picked_at)
            if flush is not None and i < len(grouped) - 1:
                await flush()
    finally:
        instance.in_flight -= len(queries)


def runs_inline(worker: Worker, instance: Instance, rows: int) -> bool:
    """Whether a batch of `rows` runs on the event loop (`_run`) rather than on the instance's thread."""
    return instance.profile.profiled_ms(rows) <= worker.inline_ms


def serve_inline(
    worker: Worker, instance: Instance, delivery: Delivery, picked_at: float, reply: ReplyTo
) -> None:
    """Serve one order as a batch of its own on the event loop, now: what `serve_queries` does for it
    when its batch `runs_inline`, without an await (the caller checked that it does)."""
    if not _live(worker, instance, [delivery], picked_at, reply):
        return
    runtime = instance.runtime
    assert runtime is not None
    instance.in_flight += 1
    try:
        start = time.perf_counter()
        alone: Alone | None = None
        try:
            outputs = run_chunked(runtime, delivery.inputs, instance.profile.max_batch)
        except Exception as exc:
            _log_failure(instance, [delivery], exc)
            outputs, alone = {}, [({}, exc)]
        _answer_batch(worker, reply, instance, [delivery], picked_at, start, outputs, alone)
    finally:
        instance.in_flight -= 1


def _live(
    worker: Worker, instance: Instance, taken: list[Delivery], picked_at: float, reply: ReplyTo
) -> list[Delivery]:
    """The orders of `taken` still worth running, all counted as offered; those whose sender has
    stopped waiting (`drop_after` passed) are answered as expired here: running them would only add load."""
    live = []
    expired = []
    for d in taken:
        instance.monitor.offered(d.rows)
        drop_after = d.order.drop_after
        if drop_after is not None and picked_at > drop_after:
            expired.append(d)
        else:
            live.append(d)
    if expired:
        _reply_expired(worker, reply, instance, expired, picked_at)
    return live


def _queue_s(delivery: Delivery, picked_at: float) -> float:
    """From the order's sending to its picking up (never below 0: the sender's clock may be ahead)."""
    return max(0.0, picked_at - delivery.order.sent_at)


def _reply_expired(
    worker: Worker, reply: ReplyTo, instance: Instance, expired: list[Delivery], picked_at: float
) -> None:
    for d in expired:
        metrics.FAILURES.labels(instance.profile.id, "expired").inc()
        why = "the query's deadline passed before it could run"
        queue_ms = round(_queue_s(d, picked_at) * 1000, 4)
        frame = Reply(d.order.id, worker.worker_id, "expired", instance.profile.id, queue_ms, error=why)
        reply(d, frame.encode())


async def _run_batch(
    worker: Worker, reply: ReplyTo, instance: Instance, batch: list[Delivery], picked_at: float
) -> None:
    """Run one batch and hand each order's reply to `reply`."""
    names = list(batch[0].inputs)
    if len(batch) == 1:
        merged = batch[0].inputs
    else:
        merged = {n: np.concatenate([d.inputs[n] for d in batch]) for n in names}
    rows_total = sum(d.rows for d in batch)
    start = time.perf_counter()
    alone: Alone | None = None
    try:
        outputs = await _run(worker, instance, merged, rows_total)
    except Exception as exc:
        _log_failure(instance, batch, exc)
        outputs = {}
        # One query's values (a token id past the vocabulary) fail the whole run: each query runs
        # again alone, so only the queries that fail by themselves get an error. Costs runs only when
        # a batch fails, at most one per query in it.
        alone = (
            [(outputs, exc)] if len(batch) == 1 else [await _run_alone(worker, instance, d) for d in batch]
        )
    _answer_batch(worker, reply, instance, batch, picked_at, start, outputs, alone)


Alone = list[tuple[dict[str, np.ndarray], Exception | None]]
"""After a failed batch run: each order's own outputs and error, from running it again by itself."""


def _log_failure(instance: Instance, batch: list[Delivery], exc: Exception) -> None:
    # The order carries each query's request id: the log line names every query the failure hit.
    # Values the model refuses are the caller's error, said in its reply: one line, no traceback.
    ids = {"request_ids": [d.order.request_id for d in batch]}
    if refuses_input(exc):
        log.info("%s refused a batch's inputs: %s", instance.profile.id, str(exc)[:300], extra=ids)
    else:
        log.exception("running %s failed", instance.profile.id, extra=ids)


def _answer_batch(
    worker: Worker,
    reply: ReplyTo,
    instance: Instance,
    batch: list[Delivery],
    picked_at: float,
    start: float,
    outputs: dict[str, np.ndarray],
    alone: Alone | None,
) -> None:
    """Hand each order's reply to `reply`, then account for the batch run since `start` (`alone`: the
    run failed and each order ran again by itself, with these results): replies first, so that one
    that writes at once (`answer_at_once`) is not held back by the accounting."""
    profile = instance.profile
    rows_total = sum(d.rows for d in batch)
    compute_s = time.perf_counter() - start
    compute_ms = round(compute_s * 1000, 4)
    offset = 0
    for i, d in enumerate(batch):
        queue_ms = round(_queue_s(d, picked_at) * 1000, 4)
        # A batch of one order answers with the outputs as they are (a slice is a NumPy call apiece,
        # tens of µs on the cold caches of a low rate).
        part = outputs if len(batch) == 1 else {n: a[offset : offset + d.rows] for n, a in outputs.items()}
        offset += d.rows
        error = None
        if alone is not None:
            part, error = alone[i]
        outcome: Outcome = "answered"
        if error is not None:  # the model refused these values (the caller's to fix: a 422), or failed
            outcome = "invalid" if refuses_input(error) else "failed"
        why = None if error is None else str(error)[:300]
        answered = Reply(
            d.order.id, worker.worker_id, outcome, profile.id, queue_ms, compute_ms, rows_total, why
        )
        reply(d, answered.encode(part))
    instance.busy_seconds += compute_s * profile.threads
    if alone is None:  # a failed run (and its orders run again alone) says nothing of the instance's speed
        instance.monitor.ran(rows_total, compute_s * 1000)
        slos = [slo for d in batch if (slo := d.order.slo_ms) is not None]
        instance.aimd.observe(rows_total, compute_s * 1000, min(slos) if slos else worker.default_slo_ms)
    metrics.observe_batch(profile.id, rows_total, compute_s)
    for i, d in enumerate(batch):
        ok = alone is None or alone[i][1] is None
        metrics.observe_query(profile.id, _queue_s(d, picked_at), ok=ok)


async def _run(
    worker: Worker, instance: Instance, inputs: dict[str, np.ndarray], rows: int
) -> dict[str, np.ndarray]:
    runtime = instance.runtime
    assert runtime is not None
    profile = instance.profile
    if runs_inline(worker, instance, rows):
        # Handing a short run to a thread costs more than the run itself (and on one core the
        # thread only takes turns with the event loop): the loop is blocked for the run instead.
        return run_chunked(runtime, inputs, profile.max_batch)
    return await asyncio.get_running_loop().run_in_executor(
        instance.pool, run_chunked, runtime, inputs, profile.max_batch
    )


async def _run_alone(
    worker: Worker, instance: Instance, delivery: Delivery
) -> tuple[dict[str, np.ndarray], Exception | None]:
    try:
        return await _run(worker, instance, delivery.inputs, delivery.rows), None
    except Exception as exc:
        return {}, exc
