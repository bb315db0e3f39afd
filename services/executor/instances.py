"""Instances on this worker: load a variant, start its consumer loops (services/executor/consumers.py),
take pushed queries in, unload. Several instances of different variants run side by side, each on its
own thread."""

from __future__ import annotations

import asyncio
import logging
import time
from functools import partial

import redis.asyncio as aioredis
from redis.exceptions import ResponseError

from infaas.core.aio import stop_tasks
from infaas.core.errors import Conflict
from infaas.data import store
from infaas.data.artifacts import ArtifactStore
from infaas.runtimes.base import Runtime
from infaas.runtimes.first_run import first_run
from infaas.runtimes.registry import runtime_for
from infaas.schemas.variants import VariantProfile
from services.executor import metrics
from services.executor.batching import AIMD
from services.executor.consumers import consume_inbox, consume_stream, refuse_inbox, serve_now
from services.executor.instance_state import InstanceMonitor, Status
from services.executor.queries import Delivery
from services.executor.serving import Instance, other_artifact

log = logging.getLogger("infaas.executor")

UNLOAD_GRACE_S = 2.0
"""How long an unload waits for the batch its instance is running to be answered before cutting it off
(whatever it then leaves unanswered is refused, so the sender runs it elsewhere)."""


class InstanceHost:
    """Owns this worker's instances and their consumer loops."""

    def __init__(
        self,
        *,
        worker_id: str,
        redis: aioredis.Redis,
        artifacts: ArtifactStore,
        default_slo_ms: float = 20.0,
        max_queue_delay_ms: float | None = None,
        inline_ms: float = 0.5,
        hardware: str = "cpu",
        device: int = 0,
    ) -> None:
        self.worker_id = worker_id
        self.hardware = hardware
        """The kind this worker serves; variants of another kind are refused (they would not load, or
        would run on the wrong hardware with a profile that does not describe them)."""
        self.device = device
        """The GPU a CUDA worker's instances run on."""
        self.redis = redis
        self.artifacts = artifacts
        self.default_slo_ms = default_slo_ms
        """The SLO assumed for orders that state none (setting `default_batch_budget_ms`)."""
        self.max_queue_delay_ms = max_queue_delay_ms
        self.inline_ms = inline_ms
        self.instances: dict[str, Instance] = {}
        self._loading: dict[str, asyncio.Future[Instance]] = {}

    async def load(self, profile: VariantProfile, *, slo_ms: float | None = None) -> Instance:
        """Load an instance (concurrent requests for the same variant share one load); `slo_ms`, when
        the loader knows the model's SLO, sets the instance's overload threshold (kept when not given)."""
        instance = await self._load_once(profile)
        if slo_ms is not None:
            instance.monitor.slo_ms = slo_ms
        return instance

    async def _load_once(self, profile: VariantProfile) -> Instance:
        if profile.hardware != self.hardware:
            raise Conflict(
                f"variant {profile.id} runs on {profile.hardware}; this worker serves {self.hardware}",
                variant=profile.id,
                hardware=profile.hardware,
                worker_hardware=self.hardware,
            )
        existing = self.instances.get(profile.id)
        stale = existing is not None and existing.profile.artifact_digest != profile.artifact_digest
        if existing is not None and existing.state != "failed" and not stale:
            return existing  # loading, or busy (overloaded/interfered): one instance per variant here
        if existing is not None:
            if stale:
                log.warning("replacing %s: its model was registered again with another artifact", profile.id)
            await self.unload(profile.id)  # a failed instance, or one of another artifact, is replaced
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
            # off the event loop: on a machine with a cache of the repository, a first load downloads it
            path = await asyncio.to_thread(self.artifacts.path, profile.artifact_digest)
            runtime = runtime_for(profile, path, self.device)
            await asyncio.get_running_loop().run_in_executor(instance.pool, runtime.load)
            await self._first_run(instance, runtime)
            await self._ensure_group(profile.id)
        except Exception as exc:
            instance.monitor.status = Status("failed", f"load failed: {str(exc)[:200]}")
            instance.error = str(exc)[:300]
            refuse_inbox(self, instance, f"loading the instance failed: {instance.error}")
            log.exception("loading %s failed", profile.id)
            raise
        instance.runtime = runtime
        instance.load_ms = (time.perf_counter() - start) * 1000
        metrics.LOAD_SECONDS.observe(instance.load_ms / 1000)
        instance.monitor.status = Status("active", f"loaded in {instance.load_ms:.0f} ms")
        instance.task = asyncio.create_task(consume_stream(self, instance), name=f"consume:{profile.id}")
        instance.inbox_task = asyncio.create_task(consume_inbox(self, instance), name=f"inbox:{profile.id}")
        return instance

    async def _first_run(self, instance: Instance, runtime: Runtime) -> None:
        """Its first inference now, not on a query's time; a model that cannot run zeros is still
        loaded (its queries will say what is wrong), the log says why."""
        profile = instance.profile
        try:
            warm = partial(first_run, runtime, profile.signature_key, profile.max_batch)
            await asyncio.get_running_loop().run_in_executor(instance.pool, warm)
        except Exception as exc:  # noqa: BLE001 (any runtime error: the load itself succeeded)
            log.warning("first run of %s on zeros failed: %s", profile.id, exc)

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
        refuse_inbox(self, instance, "the instance was unloaded")
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

    def accept(self, delivery: Delivery, *, alone: bool = False) -> str | None:
        """Queue a pushed order for its variant's instance, or serve it now (`serve_now`) when it came
        `alone` (no frame behind it to batch it with); the reason it cannot be, if not (the sender
        then sends it elsewhere: an unknown, draining or failed instance is not a lost query)."""
        vid = delivery.order.variant
        instance = self.instances.get(vid)
        if instance is None:
            return f"no instance of {vid} on this worker"
        if instance.draining:
            return f"the instance of {vid} is draining"
        if instance.state == "failed":
            return f"the instance of {vid} failed: {instance.error}"
        if (other := other_artifact(instance, delivery.order)) is not None:
            return other
        if alone and serve_now(self, instance, delivery):
            return None
        instance.inbox.append(delivery)  # a loading instance serves it once loaded
        instance.wake.set()
        return None
