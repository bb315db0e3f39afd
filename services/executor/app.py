"""Executor service: a worker that registers itself, heartbeats, and hosts instances of variants."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace

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
from infaas.schemas.variants import VariantProfile
from infaas.wire import local, loopback
from services.executor import control
from services.executor.failures import listen_failures
from services.executor.heartbeat import Heartbeat
from services.executor.instance_state import Thresholds
from services.executor.instances import InstanceHost
from services.executor.offline import router as offline_router
from services.executor.push import start_server
from services.executor.serving import inline_threshold_ms

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
    await request.app.state.beats.beat(changed=True)
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
    await request.app.state.beats.beat(changed=True)


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


@dataclass(frozen=True)
class Identity:
    """Who this worker is, worked out once from the settings and the machine."""

    worker: WorkerView
    """As registered (no memory in use, no utilization yet); `push` is filled in once it listens."""
    device: int
    """The GPU a CUDA worker's instances run on."""

    @classmethod
    def of(cls, settings: Settings) -> Identity:
        hardware = detect_hardware()
        served = served_hardware(
            hardware,
            requested=settings.executor_hardware,
            device=settings.executor_device,
            memory_bytes=settings.worker_memory_bytes,
        )
        worker = WorkerView(
            id=make_worker_id(served.kind, socket.gethostname(), settings.executor_port),
            hardware=served.kind,
            url=settings.service_url("executor"),
            cores=hardware.cores,
            memory_bytes=served.memory_bytes,
            incarnation=uuid.uuid4().hex[:12],  # tells this run from an earlier one under the same id
        )
        return cls(worker, served.device or 0)


def create_app(settings: Settings, *, in_process: bool = False) -> FastAPI:
    """The executor's app; `in_process`: it runs inside the gateway's process, whose dispatcher then
    reaches its push endpoint without a socket (`infaas.wire.loopback`)."""
    me = Identity.of(settings)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        redis = aioredis.Redis.from_url(settings.require_redis())
        host = InstanceHost(
            worker_id=me.worker.id,
            redis=redis,
            artifacts=artifact_store(settings),
            default_slo_ms=settings.default_batch_budget_ms,
            max_queue_delay_ms=settings.max_queue_delay_ms,
            inline_ms=inline_threshold_ms(settings.executor_inline_ms, usable_cores()),
            hardware=me.worker.hardware,
            device=me.device,
        )
        registry = AsyncRegistryClient(settings.service_url("registry"), internal_key=settings.internal_key)
        app.state.host = host
        # The push endpoint: dispatchers send query frames straight here (INFAAS_DISPATCH=push).
        push_server, push_addr = await start_server(
            host,
            bind=settings.host,
            port=settings.executor_push_port,
            advertise_url=me.worker.url,
            internal_key=settings.internal_key,
            max_frame_bytes=4 * settings.max_request_bytes,
            in_process=in_process,
            local_dir=local.run_dir(settings.var_dir) if settings.push_local_socket else None,
        )
        beats = Heartbeat(
            host=host,
            redis=redis,
            registry=registry,
            worker=replace(me.worker, push=push_addr),
            thresholds=Thresholds(
                interfere_enter=settings.interference_enter, interfere_exit=settings.interference_exit
            ),
            interval_s=settings.heartbeat_interval_s,
            ttl_s=settings.heartbeat_ttl_s,
        )
        app.state.beats = beats
        task = asyncio.create_task(beats.run(), name="heartbeat")
        claims = asyncio.create_task(listen_failures(host), name="failure-notices")
        pulses = _pulses(settings, me.worker)
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
            await store.forget_worker(redis, me.worker.id)
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


def _pulses(settings: Settings, worker: WorkerView) -> PulseSender | None:
    """The worker's liveness pulses for fast failure detection (`infaas.data.pulses`), started; None
    where they are off."""
    if settings.pulse_interval_s <= 0:
        return None
    pulses = PulseSender(
        settings.require_redis(),
        Pulse(worker.id, worker.incarnation),
        interval_s=settings.pulse_interval_s,
        key=settings.internal_key,
    )
    pulses.start()
    return pulses
