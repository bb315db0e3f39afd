"""Control endpoints the planner uses to scale: drain one instance, drain the whole worker.

Loading is `POST /v1/instances` (services/executor/app.py). Removing capacity must not drop a query, so
instead of cancelling a consumer mid-batch (what `DELETE /v1/instances/{variant}` does), a drain:
1. stops reporting the instance (or the whole worker), rewrites the heartbeat at once and tells
   schedulers (`invalidate`), so they stop sending new queries to it; a query pushed to it from now on
   is refused, and its dispatcher sends it elsewhere (services/executor/push.py);
2. keeps serving for `grace_s` — schedulers that had not yet refreshed may still enqueue for a moment;
3. lets the consumer loops finish what they hold and leave (`Instance.draining`): the stream consumer
   its batch, acknowledging everything it took, the push consumer everything pushed before step 1;
4. serves what is still queued in the variant's stream, in case this was its last instance;
5. unloads the runtime. A worker drain then refuses further loads and, with `exit=true`, stops the
   process (SIGTERM → the usual graceful shutdown), which is what the local WorkerProvider waits for and
   what a Kubernetes preStop hook calls before the pod is killed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import APIRouter, FastAPI, Query, Request
from pydantic import BaseModel, Field
from starlette.types import ASGIApp, Receive, Scope, Send

from infaas.core.aio import stop_tasks
from infaas.core.errors import NotFound, Unavailable
from infaas.data import store
from services.executor.consumers import serve_entries
from services.executor.instances import InstanceHost
from services.executor.serving import MAX_CONCURRENCY, Instance

log = logging.getLogger("infaas.executor")

GRACE_S = 0.6
"""Schedulers re-read instances every 0.5 s even when they miss an invalidation."""


class DrainedInstance(BaseModel):
    variant: str
    served_after_stop: int
    """Queries still queued when the consumer stopped, served by the final sweep."""


class DrainStatus(BaseModel):
    worker: str
    draining: bool
    instances: list[DrainedInstance] = []
    exiting: bool = False


router = APIRouter(prefix="/v1")


def _host(request: Request) -> InstanceHost:
    host: InstanceHost = request.app.state.host
    return host


async def drain_instance(
    host: InstanceHost,
    vid: str,
    *,
    report: Callable[[], Awaitable[None]] | None = None,
    grace_s: float = GRACE_S,
) -> DrainedInstance:
    """Take one instance out of service without losing a query (steps 1–5 above). `report` rewrites
    this worker's heartbeat at once: until it does, the metadata store still lists the instance and a
    scheduler re-reading it on the invalidation would keep choosing it."""
    instance = host.instances.pop(vid, None)
    if instance is None:
        raise NotFound(f"no instance of {vid!r} on this worker", variant=vid)
    if report is not None:
        await report()
    await host.redis.publish(store.INVALIDATE, "instances")
    await asyncio.sleep(grace_s)
    instance.draining = True
    instance.wake.set()  # the inbox consumer serves what was pushed before the pop, then leaves
    for task in (instance.task, instance.inbox_task):
        if task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await task
    served = await _sweep(host, instance)
    if instance.runtime is not None:
        instance.runtime.unload()
    instance.pool.shutdown(wait=False)
    log.info("drained %s (%d queued queries served after the consumer stopped)", vid, served)
    return DrainedInstance(variant=vid, served_after_stop=served)


async def _sweep(host: InstanceHost, instance: Instance) -> int:
    """Serve the entries no consumer has taken yet, until the stream has none."""
    if instance.runtime is None:
        return 0
    stream = store.stream_key(instance.profile.id)
    served = 0
    while True:
        reply: Any = await host.redis.xreadgroup(
            store.STREAM_GROUP, host.worker_id, {stream: ">"}, count=max(1, instance.profile.max_batch)
        )
        entries = reply[0][1] if reply else []
        if not entries:
            return served
        await serve_entries(host, instance, entries)
        served += len(entries)


@router.post("/instances/{variant}/drain", response_model=DrainedInstance)
async def drain_one(variant: str, request: Request) -> DrainedInstance:
    """Stop one instance after serving everything it was sent (the planner's scale-down)."""
    if variant in request.app.state.control["draining_instances"]:
        raise Unavailable(f"{variant} is already draining", variant=variant)
    request.app.state.control["draining_instances"].add(variant)
    try:
        drained = await drain_instance(_host(request), variant, report=request.app.state.beats.beat)
    finally:
        request.app.state.control["draining_instances"].discard(variant)
    await request.app.state.beats.beat(changed=True)
    return drained


class ConcurrencyRequest(BaseModel):
    concurrency: int = Field(ge=1, le=MAX_CONCURRENCY, description="batches the instance runs at once")


class ConcurrencyOut(BaseModel):
    variant: str
    concurrency: int
    previous: int


@router.post("/instances/{variant}/concurrency", response_model=ConcurrencyOut)
async def set_concurrency(variant: str, body: ConcurrencyRequest, request: Request) -> ConcurrencyOut:
    """How many batches the instance runs at once (the planner's SERF configuration): takes effect
    from its next batch; batches running now finish as they are."""
    instance = _host(request).instances.get(variant)
    if instance is None:
        raise NotFound(f"no instance of {variant!r} on this worker", variant=variant)
    previous, instance.concurrency = instance.concurrency, body.concurrency
    log.info("%s runs up to %d batch(es) at once (was %d)", variant, body.concurrency, previous)
    await request.app.state.beats.beat(changed=previous != body.concurrency)
    return ConcurrencyOut(variant=variant, concurrency=body.concurrency, previous=previous)


@router.post("/drain", response_model=DrainStatus)
async def drain_worker(
    request: Request, exit: bool = Query(True, description="stop the process once drained")
) -> DrainStatus:
    """Drain every instance, refuse new ones, and (by default) exit. Idempotent."""
    host = _host(request)
    control = request.app.state.control
    control["draining"] = True
    await _stop_heartbeat()
    await store.forget_worker(host.redis, host.worker_id)  # publishes invalidate: schedulers drop us now
    drained = await asyncio.gather(*(drain_instance(host, vid) for vid in list(host.instances)))
    if exit:
        # After this answer is on its way: the same graceful shutdown as a supervisor's SIGTERM.
        asyncio.get_running_loop().call_later(0.2, os.kill, os.getpid(), signal.SIGTERM)
    return DrainStatus(worker=host.worker_id, draining=True, instances=list(drained), exiting=exit)


@router.get("/drain", response_model=DrainStatus)
async def drain_status(request: Request) -> DrainStatus:
    return DrainStatus(worker=_host(request).worker_id, draining=request.app.state.control["draining"])


async def _stop_heartbeat() -> None:
    """A draining worker must vanish from the metadata store, or schedulers would cold-load on it."""
    await stop_tasks(*(task for task in asyncio.all_tasks() if task.get_name() == "heartbeat"))


class RefuseLoadsWhileDraining:
    """`POST /v1/instances` on a draining worker answers 503 instead of loading."""

    def __init__(self, app: ASGIApp, state: dict[str, Any]) -> None:
        self.app = app
        self.state = state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            self.state["draining"]
            and scope["type"] == "http"
            and scope["method"] == "POST"
            and scope["path"] == "/v1/instances"
        ):
            body = b'{"error":{"code":"unavailable","message":"this worker is draining"}}'
            await send(
                {
                    "type": "http.response.start",
                    "status": 503,
                    "headers": [(b"content-type", b"application/json"), (b"retry-after", b"1")],
                }
            )
            await send({"type": "http.response.body", "body": body})
            return
        await self.app(scope, receive, send)


def install(app: FastAPI) -> None:
    """Mount the control routes and the load guard (one line in the executor's app factory)."""
    app.state.control = {"draining": False, "draining_instances": set()}
    app.include_router(router)
    app.add_middleware(RefuseLoadsWhileDraining, state=app.state.control)
