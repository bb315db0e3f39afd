"""Executor service: a worker that registers itself, heartbeats, and hosts instances of variants."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import orjson
import redis.asyncio as aioredis
from fastapi import APIRouter, FastAPI, Request
from pydantic import BaseModel, Field

from infaas.clients.artifacts import artifact_store
from infaas.clients.registry import AsyncRegistryClient
from infaas.core.aio import stop_tasks
from infaas.core.config import Settings
from infaas.core.errors import InfaasError, NotFound, Unavailable
from infaas.core.heap import settle_heap
from infaas.data import store
from infaas.data.pulses import Pulse, PulseSender
from infaas.http.app import install_common
from infaas.metrics.buffer import flushing
from infaas.policy.selection import WorkerView
from infaas.runtimes.hardware import detect_hardware, served_hardware, usable_cores
from infaas.runtimes.hardware import worker_id as make_worker_id
from infaas.schemas.api import WorkerRegistration
from infaas.schemas.variants import VariantProfile
from infaas.wire import local, loopback
from services.executor import control, metrics
from services.executor.failures import listen_failures
from services.executor.instance_state import Thresholds
from services.executor.instances import InstanceHost
from services.executor.offline import router as offline_router
from services.executor.push import start_server
from services.executor.serving import inline_threshold_ms
from services.executor.stale import StaleSweep

log = logging.getLogger("infaas.executor")


class LoadRequest(BaseModel):
    variant: str
    slo_ms: float | None = Field(None, gt=0, le=3_600_000)
    """The latency SLO of the model it serves, when the loader knows it: the instance's overload
    threshold is then SERF's capacity under it (services/executor/instance_state.py)."""


class InstanceOut(BaseModel):
    variant: str
    state: str
    load_ms: float
    pending: int
    error: str | None = None
    concurrency: int = 1


router = APIRouter(prefix="/v1")


def _host(request: Request) -> InstanceHost:
    host: InstanceHost = request.app.state.host
    return host


@router.post("/instances", response_model=InstanceOut)
async def load_instance(body: LoadRequest, request: Request) -> InstanceOut:
    host = _host(request)
    blob = await host.redis.get(store.variant_key(body.variant))
    if blob is None:
        raise NotFound(f"no profiled variant {body.variant!r}", variant=body.variant)
    profile = VariantProfile.from_json(orjson.loads(blob))
    try:
        instance = await host.load(profile, slo_ms=body.slo_ms)
    except InfaasError:
        raise
    except Exception as exc:
        raise Unavailable(f"loading {profile.id} failed", reason=str(exc)[:300]) from exc
    # Schedulers re-read instances now: a query sent right after this answer finds the instance rather
    # than cold-loading another elsewhere (their poll would see it only up to `snapshot_refresh_s` later).
    await request.app.state.beat(changed=True)
    return InstanceOut(
        variant=profile.id,
        state=instance.state,
        load_ms=round(instance.load_ms, 3),
        pending=instance.in_flight,
    )


@router.delete("/instances/{variant}", status_code=204)
async def unload_instance(variant: str, request: Request) -> None:
    if not await _host(request).unload(variant):
        raise NotFound(f"no instance of {variant!r} on this worker", variant=variant)
    await request.app.state.beat(changed=True)


@router.get("/instances", response_model=list[InstanceOut])
async def list_instances(request: Request) -> list[InstanceOut]:
    return [
        InstanceOut(
            variant=i.profile.id,
            state=i.state,
            load_ms=round(i.load_ms, 3),
            pending=i.in_flight,
            error=i.error,
            concurrency=i.concurrency,
        )
        for i in _host(request).instances.values()
    ]


def worker_utilization(busy_s: float, elapsed_s: float, *, kind: str, cores: int) -> float:
    """The share of a worker's capacity its instances kept busy: over the cores of a CPU worker, over
    the one GPU of a CUDA worker (its instances take turns on it; counted over the host's cores, a
    saturated GPU would look idle to the planner)."""
    lanes = cores if kind == "cpu" else 1
    return min(1.0, max(0.0, busy_s) / (max(elapsed_s, 1e-3) * lanes))


def create_app(settings: Settings, *, in_process: bool = False) -> FastAPI:
    """The executor's app; `in_process`: it runs inside the gateway's process, whose dispatcher then
    reaches its push endpoint without a socket (`infaas.wire.loopback`)."""
    hardware = detect_hardware()
    served = served_hardware(
        hardware,
        requested=settings.executor_hardware,
        device=settings.executor_device,
        memory_bytes=settings.worker_memory_bytes,
    )
    memory = served.memory_bytes
    worker_id = make_worker_id(served.kind, socket.gethostname(), settings.executor_port)
    url = settings.service_url("executor")
    incarnation = uuid.uuid4().hex[:12]  # tells this run from an earlier one under the same worker id

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        redis = aioredis.Redis.from_url(settings.require_redis())
        host = InstanceHost(
            worker_id=worker_id,
            redis=redis,
            artifacts=artifact_store(settings),
            default_slo_ms=settings.default_batch_budget_ms,
            max_queue_delay_ms=settings.max_queue_delay_ms,
            inline_ms=inline_threshold_ms(settings.executor_inline_ms, usable_cores()),
            hardware=served.kind,
            device=served.device or 0,
        )
        registry = AsyncRegistryClient(settings.service_url("registry"), internal_key=settings.internal_key)
        app.state.host = host
        # The push endpoint: dispatchers send query frames straight here (INFAAS_DISPATCH=push).
        push_server, push_addr = await start_server(
            host,
            bind=settings.host,
            port=settings.executor_push_port,
            advertise_url=url,
            internal_key=settings.internal_key,
            max_frame_bytes=4 * settings.max_request_bytes,
            in_process=in_process,
            local_dir=local.run_dir(settings.var_dir) if settings.push_local_socket else None,
        )
        last = {"t": time.monotonic(), "busy": 0.0}
        thresholds = Thresholds(
            interfere_enter=settings.interference_enter, interfere_exit=settings.interference_exit
        )

        async def beat(tick: bool = False, changed: bool = False) -> None:
            """Report load and instance states; `tick` closes each instance's observation window;
            `changed`: an instance was loaded or unloaded, which schedulers learn of at once."""
            if tick:
                for instance in host.instances.values():
                    before = instance.state
                    status = instance.monitor.tick(thresholds)
                    changed |= status.state != before
                    metrics.set_state(
                        instance.profile.id,
                        status.state,
                        instance.in_flight,
                        instance.aimd.limit(),
                        instance.delay.ms,
                    )
            now = time.monotonic()
            busy = sum(i.busy_seconds for i in host.instances.values())
            elapsed = max(now - last["t"], 1e-3)
            utilization = worker_utilization(
                busy - last["busy"], elapsed, kind=served.kind, cores=hardware.cores
            )
            last.update(t=now, busy=busy)
            states = {
                vid: {
                    "state": i.state,
                    "reason": i.monitor.status.reason,
                    "pending": i.in_flight,
                    "batch_limit": i.aimd.limit(),
                    "batch_delay_ms": i.delay.ms,
                    "batch_delay": i.delay.reason,
                    # what the planner takes capacity from (infaas/policy/capacity.py)
                    "served": round(i.monitor.observed.served_rps, 1),
                    "mean_batch": round(i.monitor.observed.mean_batch, 2),
                    "busy": round(i.monitor.observed.busy, 3),
                    "slowdown": round(i.monitor.observed.slowdown, 2),
                    "concurrency": i.concurrency,
                }
                for vid, i in host.instances.items()
            }
            used = sum(i.profile.peak_memory_bytes for i in host.instances.values())
            view = WorkerView(
                id=worker_id,
                hardware=served.kind,
                url=url,
                cores=hardware.cores,
                memory_bytes=memory,
                memory_used_bytes=used,
                utilization=utilization,
                push=push_addr,
            )
            await store.heartbeat(
                redis,
                worker=view,
                instances=states,
                now=time.time(),
                ttl_s=settings.heartbeat_ttl_s,
                incarnation=incarnation,
            )
            if changed:  # schedulers re-read instance states now rather than at their next poll
                await redis.publish(store.INVALIDATE, "instances")

        app.state.beat = beat

        sweep = StaleSweep()

        async def unload_stale() -> bool:
            """Unload instances of deleted or re-registered models (`stale.py`); whether any went. A
            failed read only skips this heartbeat's sweep, never the heartbeat."""
            loaded = {vid: i.profile.artifact_digest for vid, i in host.instances.items()}
            try:
                stale = await sweep(redis, loaded)
            except Exception as exc:  # noqa: BLE001 (Redis away: the heartbeat says so)
                log.debug("stale-instance sweep skipped: %s", exc)
                return False
            unloaded = False
            for vid, why in stale:
                log.warning("unloading %s: %s", vid, why)
                unloaded |= await host.unload(vid)
            return unloaded

        async def heartbeat_loop() -> None:
            registered = False
            while True:
                try:
                    if not registered:
                        await registry.register_worker(
                            WorkerRegistration(
                                id=worker_id,
                                hardware=served.kind,
                                url=url,
                                cores=hardware.cores,
                                memory_bytes=memory,
                            )
                        )
                        registered = True
                        log.info("registered worker %s at %s", worker_id, url)
                    await beat(tick=True, changed=await unload_stale())
                except Exception as exc:  # registry or Redis briefly away: keep trying
                    log.warning("heartbeat failed: %s", exc)
                await asyncio.sleep(settings.heartbeat_interval_s)

        task = asyncio.create_task(heartbeat_loop(), name="heartbeat")
        claims = asyncio.create_task(listen_failures(host), name="failure-notices")
        pulses = None
        if settings.pulse_interval_s > 0:
            pulses = PulseSender(
                settings.require_redis(),
                Pulse(worker_id, incarnation),
                interval_s=settings.pulse_interval_s,
                key=settings.internal_key,
            )
            pulses.start()
        settle_heap()
        async with flushing():
            yield
        if pulses is not None:  # first: detectors hear it is leaving, not failing, as it stops answering
            await asyncio.to_thread(pulses.stop)
        await stop_tasks(task, claims)
        push_server.close()  # no new connections; unloading refuses what is queued, to be sent elsewhere
        loopback.stop(push_addr)
        await host.close()
        with contextlib.suppress(Exception):
            await store.forget_worker(redis, worker_id)
        await registry.aclose()
        await redis.aclose()

    app = FastAPI(title="infaas executor", lifespan=lifespan)
    # Drain endpoints for the planner's scale-downs; installed first, so that its load guard sits inside
    # the internal key check (a caller without the key learns nothing of the worker's state).
    control.install(app)
    install_common(app, service="executor", internal_key=settings.internal_key)
    app.include_router(router)
    app.include_router(offline_router)
    return app
