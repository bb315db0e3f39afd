"""The query path inside the scheduler: admit, decide, answer from the cache, make sure an instance
exists, send (`sending.py`) and await the answer under the query's deadline, re-dispatch when a worker
is lost, and say what happened (`answers.py`)."""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections import Counter
from typing import Any

import redis.asyncio as aioredis

from infaas.clients.envelope import Answer, Query
from infaas.clients.executor import ExecutorClient
from infaas.core.aio import stop_tasks
from infaas.core.config import Settings
from infaas.core.errors import (
    DeadlineExceeded,
    InvalidInput,
    NotFound,
    Overloaded,
    TooManyRequests,
    Unavailable,
)
from infaas.data import store
from infaas.metrics.buffer import BUFFER
from infaas.policy.selection import (
    CandidateIndex,
    Decision,
    Snapshot,
    WorkerView,
    get_variant,
)
from infaas.policy.slo_miss import RULES, wait_for
from infaas.wire.messages import Reply
from services.scheduler import metrics
from services.scheduler.admission import Prediction
from services.scheduler.answers import answer, missed
from services.scheduler.demand import DemandCounter
from services.scheduler.failures import Failover
from services.scheduler.gate import AdmissionGate
from services.scheduler.loads import ColdLoads
from services.scheduler.parity import ParityCoder
from services.scheduler.prediction_cache import PredictionCache, input_digest, usable
from services.scheduler.push import WorkerLost
from services.scheduler.replies import Replies
from services.scheduler.sending import Sender
from services.scheduler.snapshot import SnapshotCache

log = logging.getLogger("infaas.scheduler")

_MAX_REMEMBERED = 4096  # decisions kept per snapshot (distinct requirements × row counts seen)


class Dispatcher:
    def __init__(
        self, *, redis: aioredis.Redis, snapshot: SnapshotCache, executors: ExecutorClient, settings: Settings
    ) -> None:
        self.redis = redis
        self.snapshot = snapshot
        self.executors = executors
        self.settings = settings
        self.timeout_s = settings.query_timeout_s
        self.cache = PredictionCache(settings.cache_bytes)
        self.id = uuid.uuid4().hex[:12]
        self.replies = Replies(redis, snapshot, store.reply_channel(self.id))
        self.sender = Sender(redis=redis, snapshot=snapshot, replies=self.replies, settings=settings)
        self.failover = Failover(redis=redis, snapshot=snapshot, sender=self.sender, replies=self.replies)
        self.loads = ColdLoads(snapshot=snapshot, executors=executors)
        self.parity = ParityCoder(snapshot=snapshot, sender=self.sender, timeout_s=settings.query_timeout_s)
        self.demand = DemandCounter()
        self._rows_in_flight: Counter[str] = Counter()  # per variant
        self._app_in_flight: Counter[str] = Counter()
        self._in_flight = 0  # the sum of _app_in_flight, kept so the hot path need not add it up
        self.gate = AdmissionGate(
            snapshot=snapshot,
            rows_in_flight=self._rows_in_flight,
            default_slo_ms=settings.default_batch_budget_ms,
        )
        self._listener: asyncio.Task[None] | None = None
        self._counting: asyncio.Task[None] | None = None
        self._decided_for: Snapshot | None = None  # the snapshot `_decided` was computed over
        self._decided: dict[tuple[Any, ...], Decision] = {}

    async def start(self) -> None:
        ready = asyncio.Event()
        self._listener = asyncio.create_task(self.replies.listen(ready), name="replies")
        await asyncio.wait_for(ready.wait(), timeout=10)
        self._counting = asyncio.create_task(self._housekeeping(), name="housekeeping")

    async def stop(self) -> None:
        if self.sender.push is not None:
            await self.sender.push.aclose()
        await self.sender.enqueuer.aclose()
        await self.parity.aclose()
        await stop_tasks(self._listener, self._counting)
        await self.failover.aclose()

    async def _housekeeping(self, every_s: float = 0.25) -> None:
        """What need not happen per query, every `every_s`: the queue gauges, and adding the demand
        counted (`demand.py`) and the rows sent (pushed or through a stream) since the last turn to the
        store's counters, the planner's measures of demand and offered load
        (services/planner/loops/observe.py) — one round trip per turn when anything was counted, none
        otherwise."""
        shown: set[str] = set()
        while True:
            await asyncio.sleep(every_s)
            metrics.PENDING.set(len(self.replies.waiting))
            for vid in shown - self._rows_in_flight.keys():
                metrics.QUEUED_ROWS.labels(vid).set(0)
            for vid, rows in self._rows_in_flight.items():
                metrics.QUEUED_ROWS.labels(vid).set(rows)
            shown = set(self._rows_in_flight)
            if not self.demand.counted and not self.sender.offered_rows:
                continue
            pipe = self.redis.pipeline(transaction=False)
            demand = self.demand.take(pipe)
            offered, self.sender.offered_rows = self.sender.offered_rows, Counter()
            for vid, n in offered.items():
                pipe.incrby(store.offered_rows_key(vid), n)
            try:
                await pipe.execute()
            except Exception as exc:  # Redis briefly away: count them next turn
                log.warning("counting demand and offered rows failed: %s", exc)
                self.demand.restore(demand)
                self.sender.offered_rows.update(offered)

    def candidates(self, query: Query) -> CandidateIndex:
        if query.kind == "model":
            found = self.snapshot.by_model.get(query.target)
            if found is None or not len(found):
                raise NotFound(f"model {query.target!r} has no profiled variant yet", model=query.target)
            pinned = query.variant
            if pinned:
                index = self.snapshot.pinned(found, pinned)
                if index is None:
                    raise InvalidInput(
                        f"model {query.target!r} has no ready variant {pinned!r}", variant=pinned
                    )
                return index
            return found
        key = (query.target, query.signature, query.task)
        return self.snapshot.by_app_signature.get(key, CandidateIndex(()))

    def saturated(self) -> frozenset[str]:
        """Variants whose queued work (rows in flight from this scheduler) exceeds `queue_limit_s` of
        their profiled saturation throughput: new queries must go elsewhere or be shed."""
        out = set()
        variants = self.snapshot.snapshot.variants
        for vid, rows in self._rows_in_flight.items():
            v = variants.get(vid)
            if v is not None and rows >= max(4 * v.max_batch, v.saturation_qps * self.settings.queue_limit_s):
                out.add(vid)
        return frozenset(out)

    async def infer(self, query: Query) -> Answer:
        """One query, as the gateway built it (decoded from its frame by the scheduler's route, or handed
        over as it is by the gateway this dispatcher is embedded in), counted as its model's demand
        whatever becomes of it (`demand.py`)."""
        try:
            result = await self._infer(query)
        except (Overloaded, TooManyRequests, Unavailable, DeadlineExceeded) as exc:
            candidates = self.snapshot.by_app_signature.get((query.target, query.signature, query.task))
            self.demand.failed(query, candidates, late=isinstance(exc, DeadlineExceeded))
            raise
        self.demand.answered(query, result)
        return self.snapshot.failovers.stamp(result)

    async def _infer(self, query: Query) -> Answer:
        arrived = time.perf_counter()
        inputs = query.tensors
        if not inputs:
            raise InvalidInput("the query carries no inputs")
        app = query.app
        if self._app_in_flight[app] >= self.settings.app_max_pending:
            metrics.SHED.labels("app_limit").inc()
            raise TooManyRequests(
                f"app {app!r} has {self._app_in_flight[app]} queries in flight", retry_after_s=1
            )
        if self._in_flight >= self.settings.max_pending_queries:
            metrics.SHED.labels("scheduler_full").inc()
            raise Overloaded("the scheduler is at its in-flight limit", retry_after_s=1)
        rows = query.rows
        req = query.requirements
        decision = self._decide(query, rows)
        variant = decision.variant

        key = None
        if query.cache:
            key = PredictionCache.key(variant.model, input_digest(inputs))
            hit = usable(self.cache.get(key), self.snapshot.snapshot.variants, req, rows, query.variant)
            BUFFER.inc(metrics.CACHE_HIT if hit is not None else metrics.CACHE_MISS)
            if hit is not None:
                return answer(
                    hit[0],
                    hit[1],
                    query.request_id,
                    arrived,
                    req,
                    queue_ms=0.0,
                    compute_ms=0.0,
                    worker="cache",
                    cached=True,
                    reason="answered from the prediction cache",
                )

        prediction = None
        if decision.action == "active":
            admitted = self.gate.admit(query, rows, decision, arrived, self._decide)
            if isinstance(admitted, Answer):
                return admitted
            decision, prediction = admitted
            variant = decision.variant

        self._app_in_flight[app] += 1
        self._in_flight += 1
        self._rows_in_flight[variant.id] += rows
        token = id(query)
        self.gate.entered(variant.id, token, time.perf_counter())
        try:
            loaded_now = False
            if decision.action == "load":
                loaded_now = await self.loads.ensure(decision, pinned=query.variant is not None)
            parity = self.snapshot.parity.get(variant.model) if self.snapshot.parity else None
            if parity is not None and query.variant is None:  # its app has parity redundancy
                run = self._run(decision, query, rows, arrived, key, loaded_now, prediction)
                return await self.parity.serve(parity, decision, query, arrived, lambda: run)
            return await self._run(decision, query, rows, arrived, key, loaded_now, prediction)
        finally:
            self._app_in_flight[app] -= 1
            self._in_flight -= 1
            self._rows_in_flight[variant.id] -= rows
            self.gate.left(variant.id, token)
            if self._rows_in_flight[variant.id] <= 0:
                del self._rows_in_flight[variant.id]

    def _decide(self, query: Query, rows: int, excluded: frozenset[str] = frozenset()) -> Decision:
        """`get_variant` over the current snapshot, remembered per snapshot: it is a pure function of
        its arguments, and a snapshot is replaced, never changed, when what it holds changes (so is a
        candidate index, which belongs to one). Queries alike (same candidates, requirements, rows,
        preference and saturated variants) then cost one dict look-up until the next refresh.
        `excluded`: variants admission found too slow for this query, left out like saturated ones."""
        t0 = time.perf_counter()
        snap = self.snapshot.snapshot
        if snap is not self._decided_for or len(self._decided) >= _MAX_REMEMBERED:
            self._decided_for, self._decided = snap, {}
        candidates = self.candidates(query)
        req, prefer = query.requirements, query.prefer
        saturated = self.saturated() | excluded if excluded else self.saturated()
        key = (candidates, req, rows, prefer, saturated)
        try:
            decision = self._decided.get(key)
            if decision is None:
                decision = get_variant(req, rows, candidates, snap, prefer=prefer, saturated=saturated)
                self._decided[key] = decision
        except Overloaded as exc:
            if not excluded:  # else admission sheds it, and says why
                metrics.SHED.labels("variant_queues_full").inc()
            exc.details["retry_after_s"] = 1
            raise
        BUFFER.observe(metrics.DECISION_SECONDS, time.perf_counter() - t0)
        BUFFER.inc(metrics.DECIDED[decision.action])
        return decision

    async def _run(
        self,
        decision: Decision,
        query: Query,
        rows: int,
        arrived: float,
        key: str | None,
        loaded_now: bool,
        prediction: Prediction | None,
    ) -> Answer:
        """Send the query (again, to another worker, when one refuses it or is lost) and wait for its
        reply as long as its app's SLO policy wants the answer (`infaas.policy.slo_miss`)."""
        slo_ms = query.requirements.slo_ms
        wait = wait_for(RULES[query.policy], arrived=arrived, slo_ms=slo_ms, timeout_s=self.timeout_s)
        # The worker's clock is the wall clock: it skips the order if it picks it up after this.
        drop_after = time.time() + (wait.give_up_at - time.perf_counter()) if wait.at_deadline else None
        redirected: list[str] = []
        while True:  # more than once only when a worker refuses the query or its connection drops
            target = self.sender.target(decision)
            try:
                reply, outputs = await self.sender.send(
                    decision,
                    target,
                    query.tensors,
                    rows=rows,
                    request_id=query.request_id,
                    slo_ms=slo_ms,
                    drop_after=drop_after,
                    give_up_at=wait.give_up_at,
                )
            except WorkerLost as lost:
                decision = await self._redirect(
                    decision, lost, target, query, rows, wait.give_up_at, redirected
                )
                loaded_now = loaded_now or decision.action == "load"
                if decision.action == "load":  # a failover: what served it is gone, so no rate limit
                    await self.loads.ensure(decision, pinned=query.variant is not None, failover=True)
                continue
            except TimeoutError as exc:
                if not wait.at_deadline:
                    metrics.FAILURES.labels("timeout").inc()
                    waited = round((time.perf_counter() - arrived) * 1000, 3)
                    raise DeadlineExceeded(
                        f"no worker answered within {self.timeout_s:.0f} s",
                        variant=decision.variant.id,
                        waited_ms=waited,
                    ) from exc
                self.gate.observe(decision.variant, rows, arrived, prediction, None)
                return missed(decision, query, arrived)
            break
        if reply.outcome != "answered":
            return self._not_answered(decision, query, rows, arrived, prediction, reply)
        self.gate.observe(decision.variant, rows, arrived, prediction, reply)
        if self.failover.recovering:  # a model recovering from a failure: this answer may end it
            self.failover.answered(decision.variant.model, decision.variant.id, reply.worker)
        if key is not None:
            # After this turn of the loop, so after the answer is written: the copy it keeps costs the
            # query nothing. A query with the same inputs reaches the dispatcher in a later turn.
            v = decision.variant
            asyncio.get_running_loop().call_soon(self.cache.put, key, outputs, v.id, v.artifact_digest)
        reason = decision.reason + (
            "; cold start: the instance was loaded for this query" if loaded_now else ""
        )
        if redirected:
            reason += f"; sent again after {'; '.join(redirected)}"
        return answer(
            decision,
            outputs,
            query.request_id,
            arrived,
            query.requirements,
            queue_ms=reply.queue_ms,
            compute_ms=reply.compute_ms,
            worker=reply.worker,
            cached=False,
            reason=reason,
        )

    def _not_answered(
        self,
        decision: Decision,
        query: Query,
        rows: int,
        arrived: float,
        prediction: Prediction | None,
        reply: Reply,
    ) -> Answer:
        """A reply without the query's outputs: skipped past its deadline (the SLO policy answers),
        its values refused by the model (the caller's error), or the run failed on the worker."""
        if reply.outcome == "expired":  # the worker skipped it: the deadline passed in its queue
            self.gate.observe(decision.variant, rows, arrived, prediction, None)
            return missed(decision, query, arrived)
        if reply.outcome == "invalid":  # the model refused this query's values, alone
            metrics.FAILURES.labels("input_refused").inc()
            raise InvalidInput(
                "the model refused the query's inputs", variant=decision.variant.id, reason=reply.error
            )
        metrics.FAILURES.labels("worker_error").inc()
        raise Unavailable(
            "the worker failed to run the query",
            variant=decision.variant.id,
            worker=reply.worker,
            reason=reply.error,
        )

    async def _redirect(
        self,
        decision: Decision,
        lost: WorkerLost,
        target: WorkerView | None,
        query: Query,
        rows: int,
        give_up_at: float,
        redirected: list[str],
    ) -> Decision:
        """The query's worker refused it or went away: forget that instance (or the whole worker) and
        decide again, at most three times and while the query can still be answered in time."""
        vid = decision.variant.id
        where = target.id if target is not None else lost.worker
        if lost.refused:  # pushed, or read from the stream by an instance that would not run it
            self.snapshot.note_instance(where, vid, None)
        elif target is not None:
            self.snapshot.note_unreachable(target.push)
        redirected.append(f"{where} {'refused it' if lost.refused else 'was lost'} ({lost.reason})")
        metrics.REDISPATCHED.labels("refused" if lost.refused else "worker_lost").inc()
        if len(redirected) > 3 or time.perf_counter() >= give_up_at:
            metrics.FAILURES.labels("worker_lost").inc()
            raise Unavailable(
                "no worker could take the query", variant=vid, attempts=redirected, retry_after_s=1
            )
        log.info("re-dispatching a query of %s: %s", vid, redirected[-1])
        return self._decide(query, rows)
