"""The planner's offline-job loop: every `job_tick_s` decide the throttle (`policies/throttle.py`), publish
it in Redis for the jobs workers, apply it to the jobs in Postgres (through the registry), and — when
not paused — lease chunks up to `job_max_in_flight` and send each as a Celery task to queue `jobs`.

A chunk whose task is lost (a jobs worker killed, Redis restarted) stays leased only until its lease
expires; the next tick leases and sends it again. Nothing here is durable: a restarted planner picks
up from Postgres.

One planner runs the loop at a time (its own lease in Redis, `JOBS_LEADER_KEY`), so two planners never
lease past `job_max_in_flight` between them. With no job active at the last ask of the registry, a tick
reads nothing until a submission is published (`services/planner/signals.py`; then it reads the
counter `SUBMITTED_KEY`, the truth the message only hints at) or `job_idle_tick_s` has passed: no lease
renewal, no load read, no throttle published (only a running chunk reads it, and the tick that leases a
chunk publishes it first), no registry request. On a small machine each Redis round trip twice a
second is measurable interference with the query path (docs/benchmarks.md).
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Awaitable, Callable

import redis.asyncio as aioredis
from fastapi import FastAPI

from infaas.core.aio import stop_tasks
from infaas.core.config import Settings
from infaas.data import store
from infaas.jobs.client import AsyncJobsClient
from infaas.jobs.protocol import (
    JOBS_QUEUE,
    RUN_CHUNK,
    SUBMITTED_KEY,
    THROTTLE_KEY,
    ThrottleState,
    make_jobs_celery,
)
from infaas.jobs.schemas import JobsTick
from services.planner import metrics
from services.planner.loops.leader import JOBS_LEADER_KEY, LeaderLock
from services.planner.policies.throttle import ThrottleDecision, ThrottleThresholds, WorkerLoad, decide
from services.planner.signals import Signals

log = logging.getLogger("infaas.planner.jobs")


def thresholds_from(settings: Settings) -> ThrottleThresholds:
    return ThrottleThresholds(
        pause_utilization=settings.job_pause_utilization,
        resume_utilization=settings.job_resume_utilization,
        pause_states=frozenset(settings.job_pause_states),
    )


async def read_loads(r: aioredis.Redis, *, ttl_s: float) -> tuple[WorkerLoad, ...]:
    workers, instances = await store.read_live(r, now=time.time(), ttl_s=ttl_s)
    return tuple(
        WorkerLoad(
            id=w.id,
            hardware=w.hardware,
            utilization=w.utilization,
            instance_states=tuple((i.variant_id, i.state) for i in instances if i.worker_id == w.id),
        )
        for w in workers
    )


class JobsLoop:
    """One tick at a time; `send(job_id, index)` enqueues a chunk task (blocking, run in a thread)."""

    def __init__(
        self,
        settings: Settings,
        *,
        redis: aioredis.Redis,
        jobs: AsyncJobsClient,
        send: Callable[[str, int], None],
        lock: LeaderLock | None = None,
        signals: Signals | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.settings = settings
        self.signals = signals
        self.redis = redis
        self.jobs = jobs
        self.send = send
        self.lock = lock
        self.clock = clock
        self.thresholds = thresholds_from(settings)
        self.decision: ThrottleDecision | None = None
        self.active_jobs: int | None = None
        """Active jobs at the last ask of the registry; None before the first."""
        self._submitted_seen: bytes | str | None = None
        self._asked_at = -math.inf
        self.decided_at: float | None = None
        """`clock()` at the latest decision (idle ticks make none)."""

    async def tick(self) -> ThrottleDecision:
        loads = await read_loads(self.redis, ttl_s=self.settings.heartbeat_ttl_s)
        previous = self.decision
        eligible = frozenset(previous.eligible) if previous is not None else None
        decision = decide(loads, thresholds=self.thresholds, previously_eligible=eligible)
        if previous is None or previous.paused != decision.paused:
            metrics.THROTTLE_CHANGES.labels(str(decision.paused).lower()).inc()
            log.info("offline jobs %s: %s", "paused" if decision.paused else "running", decision.reason)
        self.decision, self.decided_at = decision, self.clock()
        metrics.JOBS_PAUSED.set(1 if decision.paused else 0)
        state = ThrottleState(decision.paused, decision.reason, decision.eligible, time.time())
        ttl_ms = int(max(2.0, 4 * self.settings.job_tick_s) * 1000)
        await self.redis.set(THROTTLE_KEY, state.to_json(), px=ttl_ms)
        await self._apply(decision)
        return decision

    async def _apply(self, decision: ThrottleDecision) -> None:
        """Apply the decision to the jobs and lease chunks — through the registry, unless nothing can
        have changed there: no job active at the last ask, no submission signalled since, and that ask
        recent. The signal is read before asking, and the registry increments it after its commit, so
        a job is never missed: either this ask sees it, or the next tick sees the counter move."""
        submitted = await self.redis.get(SUBMITTED_KEY)
        now = self.clock()
        if self._unchanged(submitted, now):
            return
        result = await self.jobs.tick(
            JobsTick(
                paused=decision.paused,
                reason=decision.reason[:500],
                max_in_flight=self.settings.job_max_in_flight,
                lease_s=self.settings.job_chunk_lease_s,
            )
        )
        self.active_jobs, self._submitted_seen, self._asked_at = result.active_jobs, submitted, now
        metrics.JOBS_ACTIVE.set(result.active_jobs)
        metrics.CHUNKS_IN_FLIGHT.set(result.in_flight)
        for chunk in result.leased:
            await asyncio.to_thread(self.send, chunk.job_id, chunk.index)
            metrics.CHUNKS_DISPATCHED.inc()

    def _unchanged(self, submitted: bytes | str | None, now: float) -> bool:
        """Nothing the registry holds can have changed: no job active at the last ask, no submission
        signalled since (`submitted`, the counter as read now), and that ask recent."""
        return (
            self.active_jobs == 0
            and submitted == self._submitted_seen
            and now - self._asked_at < self.settings.job_idle_tick_s
        )

    async def idle(self) -> bool:
        """Whether a tick has nothing to do (`_unchanged`, the test `_apply` makes, here before anything
        else is read); a loop with no decision yet or a job active is not idle, and reads nothing."""
        if self.decision is None or self.active_jobs != 0:
            return False
        now = self.clock()
        if (
            self.signals is not None
            and now - self._asked_at < self.settings.job_idle_tick_s
            and not self.signals.take(store.JOBS_TOPIC)
        ):
            return True  # no submission published since the last look: not even the counter is read
        return self._unchanged(await self.redis.get(SUBMITTED_KEY), now)

    async def step(self) -> ThrottleDecision | None:
        """One turn of the loop: a tick when this planner leads and there is something to do; the
        decision it made, else None."""
        if await self.idle():
            return None
        if self.lock is not None and not await self.lock.hold():
            return None
        return await self.tick()

    async def run_forever(self) -> None:
        while True:
            try:
                await self.step()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # registry or Redis briefly away: leases expire, nothing is lost
                log.warning("jobs tick failed: %s", exc)
            await asyncio.sleep(self.settings.job_tick_s)


async def start_jobs_loop(
    app: FastAPI, settings: Settings, signals: Signals | None = None
) -> Callable[[], Awaitable[None]]:
    """Start the offline-jobs loop on its own Redis connection and lease, sending chunk tasks through
    Celery; `app.state.jobs_loop` is what `/internal/jobs/throttle` reads. Returns what stops it."""
    r = aioredis.Redis.from_url(settings.require_redis())
    celery = make_jobs_celery(settings.require_redis())
    jobs = AsyncJobsClient(settings.service_url("registry"), internal_key=settings.internal_key)

    def send(job_id: str, index: int) -> None:
        celery.send_task(
            RUN_CHUNK,
            args=[job_id, index],
            queue=JOBS_QUEUE,
            retry=True,
            retry_policy={"max_retries": 2, "interval_start": 0.2},
        )

    lock = LeaderLock(r, key=JOBS_LEADER_KEY, lease_s=max(5.0, 4 * settings.job_tick_s))
    loop = JobsLoop(settings, redis=r, jobs=jobs, send=send, lock=lock, signals=signals)
    app.state.jobs_loop = loop
    task = asyncio.create_task(loop.run_forever(), name="jobs-throttle")

    async def stop() -> None:
        await stop_tasks(task)
        await lock.release()
        await jobs.aclose()
        await r.aclose()

    return stop
