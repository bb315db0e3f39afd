"""The query path inside the scheduler: decide, make sure an instance exists, enqueue, await the answer."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from typing import Any

import numpy as np
import orjson
import redis.asyncio as aioredis

from infaas import store
from infaas.clients.executor import ExecutorClient
from infaas.errors import DeadlineExceeded, InvalidInput, NotFound, Unavailable
from infaas.selection import Decision, Requirements, get_variant
from infaas.variants import VariantProfile
from infaas.wire import decode_frame, encode_frame
from services.scheduler import metrics
from services.scheduler.snapshot import SnapshotCache

log = logging.getLogger("infaas.scheduler")

STREAM_MAXLEN = 100_000


class Dispatcher:
    def __init__(
        self, *, redis: aioredis.Redis, snapshot: SnapshotCache, executors: ExecutorClient, timeout_s: float
    ) -> None:
        self.redis = redis
        self.snapshot = snapshot
        self.executors = executors
        self.timeout_s = timeout_s
        self.id = uuid.uuid4().hex[:12]
        self.reply_channel = store.reply_channel(self.id)
        self._waiting: dict[str, asyncio.Future[bytes]] = {}
        self._loads: dict[str, asyncio.Future[None]] = {}
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
                    channel = message["channel"].decode()
                    if channel == store.INVALIDATE:
                        await self.snapshot.on_invalidate(message["data"].decode())
                        continue
                    self._deliver(message["data"])
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.warning("reply subscription lost (%s); resubscribing", exc)
                await asyncio.sleep(0.2)
            finally:
                with contextlib.suppress(Exception):
                    await pubsub.aclose()  # type: ignore[no-untyped-call]

    def _deliver(self, frame: bytes) -> None:
        # Peek at the id without decoding tensors: the waiter decodes its own answer.
        header, _ = decode_frame(frame)
        future = self._waiting.pop(str(header.get("id")), None)
        if future is not None and not future.done():
            future.set_result(frame)

    def candidates(self, header: dict[str, Any]) -> list[VariantProfile]:
        if header["kind"] == "model":
            found = self.snapshot.by_model.get(header["target"])
            if not found:
                raise NotFound(
                    f"model {header['target']!r} has no profiled variant yet", model=header["target"]
                )
            return list(found)
        return list(self.snapshot.by_app_signature.get((header["target"], header["signature"]), ()))

    async def infer(self, frame: bytes, request_id: str) -> bytes:
        arrived = time.perf_counter()
        header, inputs = decode_frame(frame)
        if not inputs:
            raise InvalidInput("the query carries no inputs")
        rows = int(next(iter(inputs.values())).shape[0])
        req = Requirements(latency_ms=header.get("latency_ms"), min_accuracy=header.get("min_accuracy"))
        t0 = time.perf_counter()
        decision = get_variant(req, rows, self.candidates(header), self.snapshot.snapshot)
        metrics.DECISION_SECONDS.observe(time.perf_counter() - t0)
        metrics.DECISIONS.labels(decision.action).inc()
        loaded_now = False
        if decision.action == "load":
            loaded_now = await self._ensure_loaded(decision)
        answer = await self._roundtrip(decision.variant, inputs, request_id, arrived)
        reply_header, outputs = decode_frame(answer)
        if "error" in reply_header:
            raise Unavailable(
                "the worker failed to run the query",
                variant=decision.variant.id,
                worker=reply_header.get("worker"),
                reason=reply_header["error"],
            )
        total_ms = (time.perf_counter() - arrived) * 1000
        slo_met = None if req.latency_ms is None else total_ms <= req.latency_ms
        if slo_met is not None:
            metrics.SLO.labels(str(slo_met).lower()).inc()
        reason = decision.reason + (
            "; cold start: the instance was loaded for this query" if loaded_now else ""
        )
        return orjson.dumps(
            {
                "outputs": outputs,
                "model": decision.variant.model,
                "variant": decision.variant.id,
                "worker": reply_header["worker"],
                "hardware": decision.variant.hardware,
                "latency_ms": {
                    "queue": reply_header["queue_ms"],
                    "compute": reply_header["compute_ms"],
                    "total": round(total_ms, 4),
                },
                "slo_met": slo_met,
                "cached": False,
                "reason": reason,
                "request_id": request_id,
            },
            option=orjson.OPT_SERIALIZE_NUMPY,
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

    async def _roundtrip(
        self, variant: VariantProfile, inputs: dict[str, np.ndarray], request_id: str, arrived: float
    ) -> bytes:
        qid = uuid.uuid4().hex
        future: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
        self._waiting[qid] = future
        deadline = time.time() + self.timeout_s - (time.perf_counter() - arrived)
        frame = encode_frame(
            {
                "id": qid,
                "reply": self.reply_channel,
                "enqueued_at": time.time(),
                "deadline": deadline,
                "request_id": request_id,
            },
            inputs,
        )
        metrics.PENDING.inc()
        try:
            await self.redis.xadd(
                store.stream_key(variant.id), {"f": frame}, maxlen=STREAM_MAXLEN, approximate=True
            )
            return await asyncio.wait_for(future, timeout=max(0.0, deadline - time.time()))
        except TimeoutError as exc:
            raise DeadlineExceeded(
                f"no worker answered within {self.timeout_s:.0f} s", variant=variant.id
            ) from exc
        finally:
            metrics.PENDING.dec()
            self._waiting.pop(qid, None)
