"""The query path inside the scheduler: decide, answer from the cache, make sure an instance exists,
enqueue, await the answer under the query's deadline, and say what happened."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections import Counter
from typing import Any

import numpy as np
import orjson
import redis.asyncio as aioredis

from infaas import store
from infaas.cache import CachedAnswer, PredictionCache, input_digest
from infaas.clients.executor import ExecutorClient
from infaas.config import Settings
from infaas.errors import DeadlineExceeded, InvalidInput, NotFound, Overloaded, TooManyRequests, Unavailable
from infaas.selection import CandidateIndex, Decision, Requirements, get_variant
from infaas.wire import decode_frame, encode_frame, peek_header
from services.scheduler import metrics
from services.scheduler.enqueue import StreamEnqueuer
from services.scheduler.snapshot import SnapshotCache

log = logging.getLogger("infaas.scheduler")


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
        self.enqueuer = StreamEnqueuer(redis)
        self.id = uuid.uuid4().hex[:12]
        self.reply_channel = store.reply_channel(self.id)
        self._waiting: dict[str, asyncio.Future[bytes]] = {}
        self._loads: dict[str, asyncio.Future[None]] = {}
        self._rows_in_flight: Counter[str] = Counter()  # per variant
        self._app_in_flight: Counter[str] = Counter()
        self._in_flight = 0  # the sum of _app_in_flight, kept so the hot path need not add it up
        self._listener: asyncio.Task[None] | None = None

    async def start(self) -> None:
        ready = asyncio.Event()
        self._listener = asyncio.create_task(self._listen(ready), name="replies")
        await asyncio.wait_for(ready.wait(), timeout=10)

    async def stop(self) -> None:
        if self._listener is not None:
            self._listener.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._listener

    async def _listen(self, ready: asyncio.Event) -> None:
        """One subscription for all answers to this process, plus the store's invalidations."""
        while True:
            pubsub = self.redis.pubsub()
            try:
                await pubsub.subscribe(self.reply_channel, store.INVALIDATE)
                ready.set()
                async for message in pubsub.listen():
                    if message["type"] != "message":
                        continue
                    if message["channel"] == store.INVALIDATE.encode():
                        await self.snapshot.on_invalidate(message["data"].decode())
                        continue
                    frame: bytes = message["data"]
                    future = self._waiting.pop(str(peek_header(frame).get("id")), None)
                    if future is not None and not future.done():
                        future.set_result(frame)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.warning("reply subscription lost (%s); resubscribing", exc)
                await asyncio.sleep(0.2)
            finally:
                with contextlib.suppress(Exception):
                    await pubsub.aclose()  # type: ignore[no-untyped-call]

    def candidates(self, header: dict[str, Any]) -> CandidateIndex:
        if header["kind"] == "model":
            found = self.snapshot.by_model.get(header["target"])
            if found is None or not len(found):
                raise NotFound(
                    f"model {header['target']!r} has no profiled variant yet", model=header["target"]
                )
            pinned = header.get("variant")
            if pinned:
                index = self.snapshot.pinned(found, pinned)
                if index is None:
                    raise InvalidInput(
                        f"model {header['target']!r} has no ready variant {pinned!r}", variant=pinned
                    )
                return index
            return found
        return self.snapshot.by_app_signature.get((header["target"], header["signature"]), CandidateIndex(()))

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

    async def infer(self, frame: bytes, request_id: str) -> bytes:
        arrived = time.perf_counter()
        header, inputs = decode_frame(frame)
        if not inputs:
            raise InvalidInput("the query carries no inputs")
        app = str(header.get("app") or header["target"])
        if self._app_in_flight[app] >= self.settings.app_max_pending:
            metrics.SHED.labels("app_limit").inc()
            raise TooManyRequests(
                f"app {app!r} has {self._app_in_flight[app]} queries in flight", retry_after_s=1
            )
        if self._in_flight >= self.settings.max_pending_queries:
            metrics.SHED.labels("scheduler_full").inc()
            raise Overloaded("the scheduler is at its in-flight limit", retry_after_s=1)
        rows = int(next(iter(inputs.values())).shape[0])
        req = Requirements(
            latency_ms=header.get("latency_ms"),
            min_accuracy=header.get("min_accuracy"),
            max_cost=header.get("max_cost"),
        )
        t0 = time.perf_counter()
        try:
            decision = get_variant(
                req,
                rows,
                self.candidates(header),
                self.snapshot.snapshot,
                prefer=header.get("prefer", "cost"),
                saturated=self.saturated(),
            )
        except Overloaded as exc:
            metrics.SHED.labels("variant_queues_full").inc()
            exc.details["retry_after_s"] = 1
            raise
        metrics.DECISION_SECONDS.observe(time.perf_counter() - t0)
        metrics.DECISIONS.labels(decision.action).inc()
        variant = decision.variant

        key = None
        if header.get("cache", True):
            key = PredictionCache.key(variant.model, input_digest(inputs))
            hit = self._usable(self.cache.get(key), req, rows)
            metrics.CACHE.labels("hit" if hit is not None else "miss").inc()
            if hit is not None:
                return self._answer(
                    hit[0],
                    hit[1],
                    request_id,
                    arrived,
                    req,
                    queue_ms=0.0,
                    compute_ms=0.0,
                    worker="cache",
                    cached=True,
                    reason="answered from the prediction cache",
                )

        self._app_in_flight[app] += 1
        self._in_flight += 1
        self._rows_in_flight[variant.id] += rows
        metrics.QUEUED_ROWS.labels(variant.id).set(self._rows_in_flight[variant.id])
        try:
            loaded_now = False
            if decision.action == "load":
                loaded_now = await self._ensure_loaded(decision)
            return await self._run(decision, header, inputs, rows, request_id, arrived, req, key, loaded_now)
        finally:
            self._app_in_flight[app] -= 1
            self._in_flight -= 1
            self._rows_in_flight[variant.id] -= rows
            metrics.QUEUED_ROWS.labels(variant.id).set(max(0, self._rows_in_flight[variant.id]))
            if self._rows_in_flight[variant.id] <= 0:
                del self._rows_in_flight[variant.id]

    async def _run(
        self,
        decision: Decision,
        header: dict[str, Any],
        inputs: dict[str, np.ndarray],
        rows: int,
        request_id: str,
        arrived: float,
        req: Requirements,
        key: str | None,
        loaded_now: bool,
    ) -> bytes:
        policy = header.get("policy", "best_effort")
        hard_deadline = arrived + self.timeout_s
        slo_deadline = arrived + req.latency_ms / 1000 if req.latency_ms is not None else None
        # Under `error` and `default` nobody wants the answer after the SLO: stop waiting then, and tell
        # the executor to skip the query if it has not started it. `best_effort` waits for it.
        wait_until = hard_deadline if policy == "best_effort" or slo_deadline is None else slo_deadline
        qid = uuid.uuid4().hex
        future: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
        self._waiting[qid] = future
        now_wall = time.time()
        drop_after = now_wall + (wait_until - time.perf_counter())
        frame = encode_frame(
            {
                "id": qid,
                "reply": self.reply_channel,
                "enqueued_at": now_wall,
                "drop_after": drop_after if wait_until != hard_deadline else None,
                "budget_ms": req.latency_ms,
                "request_id": request_id,
            },
            inputs,
        )
        metrics.PENDING.inc()
        try:
            await self.enqueuer.xadd(store.stream_key(decision.variant.id), frame)
            answer = await asyncio.wait_for(future, timeout=max(0.0, wait_until - time.perf_counter()))
        except TimeoutError as exc:
            if wait_until == hard_deadline:
                metrics.FAILURES.labels("timeout").inc()
                waited = round((time.perf_counter() - arrived) * 1000, 3)
                raise DeadlineExceeded(
                    f"no worker answered within {self.timeout_s:.0f} s",
                    variant=decision.variant.id,
                    waited_ms=waited,
                ) from exc
            return self._missed(decision, header, rows, request_id, arrived, req)
        finally:
            metrics.PENDING.dec()
            self._waiting.pop(qid, None)
        reply_header, outputs = decode_frame(answer)
        if reply_header.get("expired"):  # the executor skipped it: the deadline passed in its queue
            return self._missed(decision, header, rows, request_id, arrived, req)
        if "error" in reply_header:
            metrics.FAILURES.labels("worker_error").inc()
            raise Unavailable(
                "the worker failed to run the query",
                variant=decision.variant.id,
                worker=reply_header.get("worker"),
                reason=reply_header["error"],
            )
        if key is not None:
            self.cache.put(key, outputs, variant=decision.variant.id)
        reason = decision.reason + (
            "; cold start: the instance was loaded for this query" if loaded_now else ""
        )
        return self._answer(
            decision,
            outputs,
            request_id,
            arrived,
            req,
            queue_ms=reply_header["queue_ms"],
            compute_ms=reply_header["compute_ms"],
            worker=reply_header["worker"],
            cached=False,
            reason=reason,
        )

    def _usable(
        self, hit: CachedAnswer | None, req: Requirements, rows: int
    ) -> tuple[Decision, dict[str, np.ndarray]] | None:
        """A cached answer counts only if the variant that computed it meets this query's accuracy and
        cost (another variant of the model may have been chosen since); the answer then names it."""
        if hit is None:
            return None
        computed_by = self.snapshot.snapshot.variants.get(hit.variant)
        if computed_by is None or (req.min_accuracy is not None and computed_by.accuracy < req.min_accuracy):
            return None
        if req.max_cost is not None and computed_by.cost_per_query * rows > req.max_cost:
            return None
        return Decision(computed_by, "active", None, "answered from the prediction cache"), hit.outputs

    def _missed(
        self,
        decision: Decision,
        header: dict[str, Any],
        rows: int,
        request_id: str,
        arrived: float,
        req: Requirements,
    ) -> bytes:
        """The SLO passed before an answer: the app's policy says what to do (`error` or `default`)."""
        waited = round((time.perf_counter() - arrived) * 1000, 3)
        metrics.SLO.labels("false").inc()
        if header.get("policy") == "default":
            metrics.FAILURES.labels("slo_default").inc()
            return self._default_answer(decision, header, rows, request_id, arrived, waited)
        metrics.FAILURES.labels("slo_error").inc()
        raise DeadlineExceeded(
            f"the query missed its {req.latency_ms} ms SLO (app policy: error)",
            variant=decision.variant.id,
            waited_ms=waited,
            latency_ms=req.latency_ms,
        )

    def _answer(
        self,
        decision: Decision,
        outputs: dict[str, np.ndarray],
        request_id: str,
        arrived: float,
        req: Requirements,
        *,
        queue_ms: float,
        compute_ms: float,
        worker: str,
        cached: bool,
        reason: str,
        default: bool = False,
    ) -> bytes:
        total_ms = (time.perf_counter() - arrived) * 1000
        slo_met = None if req.latency_ms is None else (total_ms <= req.latency_ms and not default)
        if slo_met is not None and not default:
            metrics.SLO.labels(str(slo_met).lower()).inc()
        return orjson.dumps(
            {
                "outputs": outputs,
                "model": decision.variant.model,
                "variant": decision.variant.id,
                "worker": worker,
                "hardware": decision.variant.hardware,
                "latency_ms": {"queue": queue_ms, "compute": compute_ms, "total": round(total_ms, 4)},
                "slo_met": slo_met,
                "cached": cached,
                "default": default,
                "reason": reason,
                "request_id": request_id,
            },
            option=orjson.OPT_SERIALIZE_NUMPY,
        )

    def _default_answer(
        self,
        decision: Decision,
        header: dict[str, Any],
        rows: int,
        request_id: str,
        arrived: float,
        waited_ms: float,
    ) -> bytes:
        row = header.get("default_output") or {}
        outputs = {name: np.repeat(np.asarray([value]), rows, axis=0) for name, value in row.items()}
        reason = (
            f"the query missed its {header.get('latency_ms')} ms SLO after {waited_ms} ms: answered "
            "the app's default output (app policy: default)"
        )
        req = Requirements(latency_ms=header.get("latency_ms"))
        return self._answer(
            decision,
            outputs,
            request_id,
            arrived,
            req,
            queue_ms=0.0,
            compute_ms=0.0,
            worker="none",
            cached=False,
            reason=reason,
            default=True,
        )

    async def _ensure_loaded(self, decision: Decision) -> bool:
        """Load the chosen variant once even if many queries ask at the same moment."""
        vid = decision.variant.id
        pending = self._loads.get(vid)
        if pending is not None:
            await asyncio.shield(pending)
            return False
        worker = decision.worker
        assert worker is not None
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._loads[vid] = future
        try:
            await self.executors.load(worker.url, vid)
            self.snapshot.note_instance(worker.id, vid, "active")
            future.set_result(None)
            return True
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()
            raise
        finally:
            del self._loads[vid]
