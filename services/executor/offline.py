"""Offline batches on this worker, below its online queries (`POST /internal/offline/run`).

A jobs worker sends the rows of one chunk as a binary frame; they run on a session of their own (not
the online instance's), in one thread whose OS priority is lowered (nice 19, inherited by the ONNX
Runtime threads it creates), in max-batch slices. Before each slice the runner yields while any online
instance on this worker has queries in flight, so online batches go first; the planner's throttle
stops sending chunks altogether when online load is high. Offline work is not counted in the
utilization this worker reports, so it cannot throttle itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
import time
from collections import OrderedDict
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import orjson
from fastapi import APIRouter, FastAPI, Request, Response
from prometheus_client import Counter

from infaas.core.errors import InvalidInput, NotFound, Unavailable
from infaas.data import store
from infaas.runtimes.base import Runtime
from infaas.runtimes.registry import runtime_for
from infaas.schemas.variants import VariantProfile
from infaas.wire.frames import decode_frame, encode_frame
from services.executor.instances import InstanceHost

log = logging.getLogger("infaas.executor.offline")

OFFLINE_ROWS = Counter("infaas_offline_rows_total", "Rows of offline jobs run on this worker")
OFFLINE_YIELD = Counter(
    "infaas_offline_yield_seconds_total", "Time offline slices waited for online queries to finish"
)

MAX_SESSIONS = 2
"""Offline sessions kept loaded (a job runs one variant; a second covers two jobs interleaving)."""


def _lower_priority() -> None:
    # On Linux a thread id is a valid PRIO_PROCESS target: only this thread (and threads it creates,
    # ONNX Runtime's intra-op pool among them) gets nice 19; the online threads keep their priority.
    with contextlib.suppress(OSError, AttributeError):
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)


class OfflineRunner:
    """Runs offline batches one at a time, yielding to the host's online instances."""

    def __init__(
        self, host: InstanceHost, *, poll_s: float = 0.002, max_yield_s: float = 1.0, max_sessions: int = 2
    ) -> None:
        self.host = host
        self.poll_s = poll_s
        self.max_yield_s = max_yield_s
        self.max_sessions = max_sessions
        self.pool = ThreadPoolExecutor(
            max_workers=1, initializer=_lower_priority, thread_name_prefix="offline"
        )
        self.sessions: OrderedDict[str, Runtime] = OrderedDict()
        self.lock = asyncio.Lock()

    async def run(self, profile: VariantProfile, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        async with self.lock:  # one offline batch at a time: spare capacity is one core's worth here
            runtime = await self._session(profile)
            rows = next(iter(inputs.values())).shape[0]
            parts: list[dict[str, np.ndarray]] = []
            loop = asyncio.get_running_loop()
            for start in range(0, rows, profile.max_batch):
                await self._yield_to_online()
                part = {n: a[start : start + profile.max_batch] for n, a in inputs.items()}
                try:
                    parts.append(await loop.run_in_executor(self.pool, runtime.run, part))
                except Exception as exc:
                    raise InvalidInput(
                        f"running rows {start}… on {profile.id} failed", reason=str(exc)[:300]
                    ) from exc
            OFFLINE_ROWS.inc(rows)
            return {n: np.concatenate([p[n] for p in parts]) for n in parts[0]}

    async def _yield_to_online(self) -> None:
        start = time.monotonic()
        # Bounded: under sustained online load the planner pauses jobs; this only keeps a slice from
        # landing on top of an online batch that is running right now.
        while any(i.in_flight > 0 for i in self.host.instances.values()):
            if time.monotonic() - start > self.max_yield_s:
                break
            await asyncio.sleep(self.poll_s)
        OFFLINE_YIELD.inc(time.monotonic() - start)

    async def _session(self, profile: VariantProfile) -> Runtime:
        # By artifact, not variant id: a model registered again under its name reuses its variant ids.
        key = f"{profile.id}@{profile.artifact_digest}"
        runtime = self.sessions.get(key)
        if runtime is not None:
            self.sessions.move_to_end(key)
            return runtime
        try:
            path = await asyncio.to_thread(self.host.artifacts.path, profile.artifact_digest)  # may download
            runtime = runtime_for(profile, path, self.host.device)
            # Loaded on the low-priority thread, so the threads ONNX Runtime starts inherit its nice.
            await asyncio.get_running_loop().run_in_executor(self.pool, runtime.load)
        except Exception as exc:
            raise Unavailable(f"loading {profile.id} for offline work failed", reason=str(exc)[:300]) from exc
        self.sessions[key] = runtime
        while len(self.sessions) > self.max_sessions:
            _, old = self.sessions.popitem(last=False)
            old.unload()
        return runtime

    def close(self) -> None:
        for runtime in self.sessions.values():
            runtime.unload()
        self.sessions.clear()
        self.pool.shutdown(wait=False, cancel_futures=True)


@contextlib.asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
    # Runs inside the executor's own lifespan (FastAPI merges router lifespans), so the host exists.
    runner = OfflineRunner(app.state.host, max_sessions=MAX_SESSIONS)
    app.state.offline = runner
    try:
        yield
    finally:
        runner.close()


router = APIRouter(prefix="/internal/offline", include_in_schema=False, lifespan=_lifespan)


@router.post("/run")
async def run_offline(request: Request) -> Response:
    """Body and answer are binary frames (`infaas.wire.frames`): header `{variant}` + the chunk's rows."""
    runner: OfflineRunner = request.app.state.offline
    header, inputs = decode_frame(await request.body())
    vid = header.pop("variant", None)
    if type(vid) is not str or header:
        raise InvalidInput("an offline run's header is {variant: <variant id>}, nothing else")
    blob = await runner.host.redis.get(store.variant_key(vid))
    if blob is None:
        raise NotFound(f"no profiled variant {vid!r}", variant=vid)
    profile = VariantProfile.from_json(orjson.loads(blob))
    if sorted(inputs) != sorted(profile.input_names):
        raise InvalidInput(f"{vid} takes inputs {list(profile.input_names)}; got {sorted(inputs)}")
    rows = {a.shape[0] for a in inputs.values()}
    if len(rows) != 1 or 0 in rows:
        raise InvalidInput("every input needs the same, non-zero number of rows")
    outputs = await runner.run(profile, inputs)
    answer = {"variant": vid, "worker": runner.host.worker_id, "rows": rows.pop()}
    return Response(encode_frame(answer, outputs), media_type="application/octet-stream")
