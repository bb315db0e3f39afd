"""Which of the planner's loops run, with which policy and worker provider, from the settings:
`start_loops` is called from the planner's lifespan and returns what stops them all."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal

import redis.asyncio as aioredis
from fastapi import FastAPI

from infaas.clients.executor import ExecutorClient
from infaas.clients.registry import AsyncRegistryClient
from infaas.core.aio import stop_tasks
from infaas.core.config import Settings
from infaas.data.db import make_engine
from infaas.data.registry_version import read_version
from services.planner.event_log import EventLog
from services.planner.loops.claims import PipelineClaims
from services.planner.loops.failover import Failover
from services.planner.loops.jobs import start_jobs_loop
from services.planner.loops.leader import LeaderLock
from services.planner.loops.model_autoscaler import ModelAutoscaler, WorkerRequests
from services.planner.loops.observe import LoadMeter, SloCache
from services.planner.loops.pipeline_tuner import PipelineTuner
from services.planner.loops.worker_autoscaler import WorkerAutoscaler
from services.planner.policies.interference import InterferenceConfig
from services.planner.policies.snapshot import ScalingConfig
from services.planner.policies.worker_pool import WorkerConfig
from services.planner.providers.base import WorkerProvider
from services.planner.retirement import Retirement
from services.planner.signals import Signals

log = logging.getLogger("infaas.planner")


def make_provider(settings: Settings) -> WorkerProvider | None:
    """The configured `WorkerProvider`, or None (`worker_provider = none`: workers are managed by hand)."""
    if settings.worker_provider == "local":
        from services.planner.providers.local import LocalProcessProvider

        log_dir = settings.var_dir / "logs"
        log_dir.mkdir(parents=True, exist_ok=True)
        return LocalProcessProvider(settings, log_dir=log_dir, memory_bytes=settings.worker_memory_bytes)
    if settings.worker_provider == "kubernetes":
        from services.planner.providers.kubernetes import KubernetesProvider

        return KubernetesProvider.in_cluster(kinds=tuple(settings.kubernetes_worker_kinds))
    if settings.worker_provider != "none":
        raise ValueError(f"unknown worker_provider {settings.worker_provider!r}: none, local or kubernetes")
    return None


@dataclass(frozen=True)
class _Shared:
    """What the planner's loops share: its Redis, the leader lock, the clients and the event log."""

    redis: aioredis.Redis
    lock: LeaderLock
    registry: AsyncRegistryClient
    executors: ExecutorClient
    events: EventLog
    requests: WorkerRequests
    """The model autoscaler's worker requests, which the worker autoscaler serves."""
    claims: PipelineClaims


async def start_autoscaling(
    app: FastAPI, settings: Settings, signals: Signals | None = None
) -> Callable[[], Awaitable[None]]:
    """Start the model autoscaler (and the worker autoscaler when a provider is configured) on the
    planner's Redis; returns the coroutine function that stops them."""
    engine = make_engine(settings.resolved_database_url)
    app.state.events = EventLog(engine)
    redis: aioredis.Redis = app.state.redis
    registry = AsyncRegistryClient(settings.service_url("registry"), internal_key=settings.internal_key)
    executors = ExecutorClient(internal_key=settings.internal_key)
    app.state.registry, app.state.executors = registry, executors  # the pipeline planner's route uses them
    # What a new plan leaves unused is drained past every gateway's cached copy of the pipeline, which
    # pins its queries to the planned variants.
    retirement = app.state.pipeline_retirement = Retirement(
        redis=redis,
        registry=registry,
        executors=executors,
        events=app.state.events,
        heartbeat_ttl_s=settings.heartbeat_ttl_s,
        after_s=settings.auth_cache_ttl_s + 1.0,
    )
    shared = _Shared(
        redis=redis,
        lock=LeaderLock(redis, lease_s=max(5.0, 3 * settings.autoscale_interval_s)),
        registry=registry,
        executors=executors,
        events=app.state.events,
        requests=WorkerRequests(),
        # The models planned pipelines hold: the tuner refreshes them, the model autoscaler leaves them.
        claims=PipelineClaims(registry),
    )
    app.state.pipeline_claims = shared.claims
    tasks: list[asyncio.Task[None]] = []
    if settings.autoscale_policy != "off":
        tasks.append(_start_model_autoscaler(app, settings, shared))
    if settings.pipeline_tune_interval_s > 0:
        tasks.append(_start_pipeline_tuner(app, settings, shared, signals))
    if settings.failover_interval_s > 0:
        tasks.extend(await start_failover(app, settings, redis, shared.lock, registry, executors))
    if settings.events_retention_days > 0:
        tasks.append(_start_event_pruning(settings, shared.events))
    provider = make_provider(settings)
    if provider is not None:
        tasks.append(await _start_worker_autoscaler(app, settings, shared, provider))

    async def stop() -> None:
        await stop_tasks(*tasks)  # the failover listener first: it starts recoveries
        if settings.pipeline_tune_interval_s > 0:  # loads and drains the tuner has under way
            await stop_tasks(*app.state.pipeline_tuner.busy.values())
        if settings.failover_interval_s > 0:
            await stop_tasks(*app.state.failover.tasks, *app.state.failover.marking)
        await retirement.stop()  # drains not yet due: the instances stay
        await shared.lock.release()
        if provider is not None:
            await provider.close()
        await executors.aclose()
        await registry.aclose()
        engine.dispose()

    return stop


def _start_model_autoscaler(app: FastAPI, settings: Settings, shared: _Shared) -> asyncio.Task[None]:
    if settings.autoscale_policy not in ("greedy", "ilp", "horizontal"):
        raise ValueError(f"unknown autoscale_policy {settings.autoscale_policy!r}")
    policy: Literal["greedy", "ilp", "horizontal"] = settings.autoscale_policy  # type: ignore[assignment]
    redis = shared.redis
    scaler = ModelAutoscaler(
        redis=redis,
        lock=shared.lock,
        meter=LoadMeter(),
        slos=SloCache(shared.registry, token=lambda: read_version(redis)),
        executors=shared.executors,
        events=shared.events,
        policy=policy,
        config=ScalingConfig(
            slack_threshold=settings.slack_threshold,
            lam=settings.autoscale_lambda,
            min_scale_down_s=settings.scale_down_min_s,
            keep_loaded_s=settings.scale_keep_loaded_s,
            miss_scale_up=settings.scale_up_miss_share,
            settle_s=settings.scale_settle_s,
        ),
        heartbeat_ttl_s=settings.heartbeat_ttl_s,
        requests=shared.requests,
        interference_config=InterferenceConfig(
            migrate_after_s=settings.interference_migrate_s, lam=settings.autoscale_lambda
        ),
        claims=shared.claims,
    )
    app.state.model_autoscaler = scaler
    return asyncio.create_task(run_every(settings.autoscale_interval_s, scaler.tick, "model autoscaler"))


def _start_pipeline_tuner(
    app: FastAPI, settings: Settings, shared: _Shared, signals: Signals | None
) -> asyncio.Task[None]:
    tuner = PipelineTuner(
        redis=shared.redis,
        lock=shared.lock,
        registry=shared.registry,
        executors=shared.executors,
        events=shared.events,
        heartbeat_ttl_s=settings.heartbeat_ttl_s,
        claims=shared.claims,
        signals=signals,
    )
    app.state.pipeline_tuner = tuner
    return asyncio.create_task(run_every(settings.pipeline_tune_interval_s, tuner.tick, "pipeline tuner"))


def _start_event_pruning(settings: Settings, events: EventLog) -> asyncio.Task[None]:
    retention_s = settings.events_retention_days * 86400

    async def prune() -> None:
        pruned = await events.prune(retention_s)
        if pruned:
            log.info("pruned %d events older than %g days", pruned, settings.events_retention_days)

    return asyncio.create_task(run_every(3600.0, prune, "event pruning"))


async def _start_worker_autoscaler(
    app: FastAPI, settings: Settings, shared: _Shared, provider: WorkerProvider
) -> asyncio.Task[None]:
    await provider.watch(shared.redis, shared.events)  # restarts dead workers where it does that itself
    workers = WorkerAutoscaler(
        redis=shared.redis,
        lock=shared.lock,
        provider=provider,
        executors=shared.executors,
        events=shared.events,
        requests=shared.requests,
        config=WorkerConfig(
            idle_s=settings.worker_idle_s,
            min_workers=settings.min_workers,
            max_workers=settings.max_workers,
        ),
        heartbeat_ttl_s=settings.heartbeat_ttl_s,
    )
    app.state.worker_autoscaler = workers
    return asyncio.create_task(
        run_every(settings.worker_autoscale_interval_s, workers.tick, "worker autoscaler")
    )


async def start_failover(
    app: FastAPI,
    settings: Settings,
    redis: aioredis.Redis,
    lock: LeaderLock,
    registry: AsyncRegistryClient,
    executors: ExecutorClient,
) -> list[asyncio.Task[None]]:
    """The failover loop (FailLite): its listener on `infaas:failures` and its periodic tick."""
    failover = Failover(
        redis=redis,
        lock=lock,
        registry=registry,
        executors=executors,
        events=app.state.events,
        heartbeat_ttl_s=settings.heartbeat_ttl_s,
        alpha=settings.failover_alpha,
        scaler=getattr(app.state, "model_autoscaler", None),
    )
    app.state.failover = failover
    ready = asyncio.Event()
    listener = asyncio.create_task(failover.listen(ready), name="failover listener")
    await asyncio.wait_for(ready.wait(), timeout=10)
    return [listener, asyncio.create_task(run_every(settings.failover_interval_s, failover.tick, "failover"))]


async def start_loops(app: FastAPI, settings: Settings) -> Callable[[], Awaitable[None]]:
    """Start the autoscalers, then the offline-jobs loop; the returned coroutine function stops them in
    the reverse order."""
    # What the registry publishes after a job submission or a pipeline change: the idle loops read
    # their counters only then (`signals.py`).
    signals = Signals(app.state.redis)
    await signals.start()
    stop_autoscaling = await start_autoscaling(app, settings, signals)
    stop_jobs = await start_jobs_loop(app, settings, signals)

    async def stop() -> None:
        await stop_jobs()
        await stop_autoscaling()
        await signals.stop()

    return stop


async def run_every(interval_s: float, step: Callable[[], Awaitable[object]], name: str) -> None:
    """Call `step` every `interval_s` forever; a failing step is logged and the loop goes on."""
    while True:
        started = time.monotonic()
        try:
            await step()
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("%s tick failed", name)
        await asyncio.sleep(max(0.0, interval_s - (time.monotonic() - started)))
