"""A small real cluster for the planner's loops: the registry and two executor processes on the test's
Postgres and Redis, a real ONNX model in the artifact store, and a query source that enqueues frames
the way the scheduler does and counts every answer."""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
import redis
import redis.asyncio as aioredis

from infaas.core.config import Settings
from infaas.data import store
from infaas.data.artifacts import LocalArtifactStore
from infaas.processes.suite import Suite, free_port
from infaas.schemas.variants import VariantProfile
from infaas.wire.messages import Reply
from infaas_cli.demo_models import DemoModel
from tests.factories import variant_profile
from tests.orders import order
from tests.polling import wait_for


@dataclass
class Cluster:
    settings: Settings
    suite: Suite
    executor_urls: list[str]
    digest: str

    def profile(self, vid: str, **overrides: object) -> VariantProfile:
        fields: dict[str, object] = {
            "id": vid,
            "model": "digits",
            "app": "shop",
            "signature_key": "x:float32:64",
            "artifact_digest": self.digest,
            "output_names": ("probabilities",),
            "max_batch": 1,
            "latencies": ((1, 0.2, 0.5),),
            "load_ms": 50.0,
            "peak_memory_bytes": 10 << 20,
        }
        fields.update(overrides)
        return variant_profile(**fields)

    def live_instances(self, vid: str) -> list[str]:
        """Workers whose latest heartbeat reports an instance of `vid`."""
        client = redis.Redis.from_url(self.settings.redis_url)
        try:
            wids = [store.text(w) for w in client.zrangebyscore(store.WORKERS, time.time() - 5, "+inf")]
            return sorted(w for w in wids if client.hexists(store.instances_key(w), vid))
        finally:
            client.close()


@pytest.fixture
def cluster(settings: Settings, small_model: DemoModel, tmp_path: Path) -> Iterator[Cluster]:
    # Executors after the first listen on executor_port + 1, …: ask for two consecutive free ports.
    registry_port, executor_port = free_port(), free_port(consecutive=2)
    cfg = settings.model_copy(
        # The default 1 s heartbeat: a drain must not rely on a faster one to take an instance out of view.
        update={"registry_port": registry_port, "executor_port": executor_port, "heartbeat_interval_s": 1.0}
    )
    digest = LocalArtifactStore(cfg.resolved_artifact_dir).put(small_model.onnx_path.read_bytes())
    log_dir = tmp_path / "logs"
    log_dir.mkdir()
    suite = Suite(settings=cfg, log_dir=log_dir)
    try:
        suite.start("registry", ["serve", "registry"])
        suite.wait_healthy(("registry",))
        for name in ("executor", "executor-2"):
            suite.start(name, ["serve", "executor"], {"INFAAS_EXECUTOR_PORT": str(suite.port(name))})
        suite.wait_healthy(("executor", "executor-2"))
        urls = [f"http://127.0.0.1:{suite.port(n)}" for n in ("executor", "executor-2")]
        _wait_heartbeats(cfg.redis_url, 2)  # healthy is not yet registered: wait for both heartbeats
        yield Cluster(settings=cfg, suite=suite, executor_urls=urls, digest=digest)
    finally:
        suite.stop()


def _wait_heartbeats(url: str, n: int, timeout_s: float = 30.0) -> None:
    client = redis.Redis.from_url(url)
    try:
        wait_for(
            lambda: client.zcount(store.WORKERS, time.time() - 3, "+inf") >= n,
            what=f"{n} executors' heartbeats",
            timeout_s=timeout_s,
            every_s=0.1,
        )
    finally:
        client.close()


@dataclass
class QuerySource:
    """Enqueues queries (one row unless asked) on a variant's stream at a rate, counting their rows as
    offered load as a dispatcher does, and records every answer by id."""

    redis: aioredis.Redis
    channel: str = field(default_factory=lambda: store.reply_channel(f"test-{uuid.uuid4().hex[:8]}"))
    sent: list[str] = field(default_factory=list)
    answers: dict[str, Reply] = field(default_factory=dict)

    async def send(self, vid: str, rate: float, seconds: float, *, rows: int = 1) -> None:
        async def always() -> str:
            return vid

        await self.send_routed(always, rate, seconds, rows=rows)

    async def send_routed(
        self, choose: Callable[[], Awaitable[str]], rate: float, seconds: float, *, rows: int = 1
    ) -> None:
        """Each query to the variant `choose()` names at that moment (in a test: from the instances the
        workers' heartbeats report — what a scheduler's snapshot holds)."""
        x = np.zeros((rows, 64), dtype=np.float32)
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            qid = uuid.uuid4().hex
            vid = await choose()
            frame = order(qid, variant=vid, reply=self.channel, sent_at=time.time()).encode({"x": x})
            self.sent.append(qid)
            await self.redis.xadd(store.stream_key(vid), {"f": frame})
            await self.redis.incrby(store.offered_rows_key(vid), rows)  # as a dispatcher counts it
            await asyncio.sleep(1 / rate)  # the offered rate: the scenario, not a wait

    async def listen(self, ready: asyncio.Event) -> None:
        pubsub = self.redis.pubsub()
        await pubsub.subscribe(self.channel)
        ready.set()
        try:
            async for message in pubsub.listen():
                if message["type"] == "message":
                    reply, _ = Reply.decode(message["data"])
                    self.answers[reply.id] = reply
        finally:
            with contextlib.suppress(Exception):
                await pubsub.aclose()

    async def wait_answered(self, timeout_s: float = 15.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and len(self.answers) < len(self.sent):
            await asyncio.sleep(0.1)


@pytest.fixture
async def queries(redis_url: str) -> AsyncIterator[QuerySource]:
    client = aioredis.Redis.from_url(redis_url)
    source = QuerySource(client)
    ready = asyncio.Event()
    task = asyncio.create_task(source.listen(ready))
    await ready.wait()
    yield source
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    await client.aclose()
