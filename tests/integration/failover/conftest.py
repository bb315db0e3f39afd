"""A small real cluster for failures: the registry and two executor processes (pulsing at the default
interval) on the test's Postgres and Redis, the planner's failure watch running in the test's loop, a
real dispatcher, and a model unlike the demo ones (a 6-feature, 4-class softmax regression built with
onnx.helper) in the artifact store."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx
import pytest
import redis
import redis.asyncio as aioredis
from onnx import TensorProto, helper, numpy_helper
from sqlalchemy import select

from infaas.clients.executor import ExecutorClient
from infaas.core.config import Settings
from infaas.data import store
from infaas.data.artifacts import LocalArtifactStore
from infaas.data.db import EventRow, make_engine, make_sessionmaker
from infaas.data.failures import FAILURES_CHANNEL, RECOVERIES_CHANNEL, FailureNotice, Recovery
from infaas.processes.suite import Suite, free_port
from infaas.schemas.variants import VariantProfile
from services.planner.event_log import EventLog
from services.planner.failure_watch import FailureWatch
from services.scheduler.dispatch import Dispatcher
from services.scheduler.snapshot import SnapshotCache
from tests.factories import variant_profile
from tests.polling import async_wait_for, wait_for

FEATURES, CLASSES = 6, 4
SIGNATURE = f"x:float32:{FEATURES}"


def softmax_regression(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """Write the model to `path`; returns its weights and bias (the test's own reference)."""
    rng = np.random.default_rng(20)
    weights = rng.normal(size=(FEATURES, CLASSES)).astype(np.float32)
    bias = rng.normal(size=(CLASSES,)).astype(np.float32)
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["x", "W"], ["logits0"]),
            helper.make_node("Add", ["logits0", "b"], ["logits"]),
            helper.make_node("Softmax", ["logits"], ["scores"], axis=1),
        ],
        "softmax_regression",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", FEATURES])],
        [helper.make_tensor_value_info("scores", TensorProto.FLOAT, ["n", CLASSES])],
        [numpy_helper.from_array(weights, "W"), numpy_helper.from_array(bias, "b")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return weights, bias


@contextlib.contextmanager
def failure_events(pg_url: str) -> Iterator[Callable[[], list[EventRow]]]:
    """A reader of the `failure` events recorded so far (its engine disposed on leaving)."""
    engine = make_engine(pg_url)
    sessions = make_sessionmaker(engine)

    def read() -> list[EventRow]:
        with sessions() as s:
            return list(s.scalars(select(EventRow).where(EventRow.kind == "failure")).all())

    try:
        yield read
    finally:
        engine.dispose()


@dataclass
class FailCluster:
    settings: Settings
    suite: Suite
    digest: str
    weights: np.ndarray
    bias: np.ndarray
    notices: list[FailureNotice] = field(default_factory=list)
    recoveries: list[Recovery] = field(default_factory=list)

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.suite.port(name)}"

    def worker_id(self, name: str) -> str:
        return f"cpu-{socket.gethostname()}-{self.suite.port(name)}"

    def profile(self, vid: str) -> VariantProfile:
        return variant_profile(
            id=vid,
            model="ranker",
            app="shop",
            signature_key=SIGNATURE,
            artifact_digest=self.digest,
            output_names=("scores",),
            max_batch=8,
            latencies=((1, 0.2, 0.5), (8, 0.4, 1.0)),
            saturation_qps=5000.0,
            load_ms=50.0,
            peak_memory_bytes=10 << 20,
        )

    def expected(self, x: np.ndarray) -> np.ndarray:
        logits = x @ self.weights + self.bias
        e = np.exp(logits - logits.max(axis=1, keepdims=True))
        out: np.ndarray = e / e.sum(axis=1, keepdims=True)
        return out


@pytest.fixture
def fail_cluster(settings: Settings, tmp_path: Path) -> Iterator[FailCluster]:
    registry_port, executor_port = free_port(), free_port(consecutive=2)
    cfg = settings.model_copy(update={"registry_port": registry_port, "executor_port": executor_port})
    weights, bias = softmax_regression(tmp_path / "ranker.onnx")
    digest = LocalArtifactStore(cfg.resolved_artifact_dir).put((tmp_path / "ranker.onnx").read_bytes())
    log_dir = tmp_path / "logs"
    log_dir.mkdir()
    suite = Suite(settings=cfg, log_dir=log_dir)
    try:
        suite.start("registry", ["serve", "registry"])
        suite.wait_healthy(("registry",))
        for name in ("executor", "executor-2"):
            suite.start(name, ["serve", "executor"], {"INFAAS_EXECUTOR_PORT": str(suite.port(name))})
        suite.wait_healthy(("executor", "executor-2"))
        client = redis.Redis.from_url(cfg.redis_url)
        try:
            wait_for(
                lambda: client.zcount(store.WORKERS, time.time() - 3, "+inf") >= 2,
                what="both executors' heartbeats",
                timeout_s=30,
                every_s=0.1,
            )
        finally:
            client.close()
        yield FailCluster(settings=cfg, suite=suite, digest=digest, weights=weights, bias=bias)
    finally:
        suite.stop()


@pytest.fixture
def dispatch_mode() -> str:
    return "push"


@pytest.fixture
async def watched(fail_cluster: FailCluster, pg_url: str) -> AsyncIterator[FailureWatch]:
    """The planner's failure watch (events into the test database), and the notices and recoveries
    published meanwhile, collected on the cluster."""
    client = aioredis.Redis.from_url(fail_cluster.settings.redis_url)
    engine = make_engine(pg_url)
    cfg = fail_cluster.settings
    watch = FailureWatch(
        client,
        EventLog(engine),
        interval_s=cfg.pulse_interval_s,
        misses=cfg.pulse_misses,
        key=cfg.internal_key,
    )
    await watch.start()
    # Executors read where to pulse once a second: a test kills only what the watch already hears.
    workers = {fail_cluster.worker_id(name) for name in ("executor", "executor-2")}
    await async_wait_for(lambda: workers <= set(watch.heard), what="both executors' pulses")
    pubsub = client.pubsub()
    await pubsub.subscribe(FAILURES_CHANNEL, RECOVERIES_CHANNEL)

    async def collect() -> None:
        async for message in pubsub.listen():
            if message["type"] != "message":
                continue
            if message["channel"] == FAILURES_CHANNEL.encode():
                fail_cluster.notices.append(FailureNotice.decode(message["data"]))
            else:
                fail_cluster.recoveries.append(Recovery.decode(message["data"]))

    task = asyncio.create_task(collect())
    yield watch
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    await pubsub.aclose()  # type: ignore[no-untyped-call]
    await watch.stop()
    await client.aclose()
    engine.dispose()


@pytest.fixture
async def dispatcher(fail_cluster: FailCluster, dispatch_mode: str) -> AsyncIterator[Dispatcher]:
    client = aioredis.Redis.from_url(fail_cluster.settings.redis_url)
    snapshot = SnapshotCache(client, ttl_s=5)
    executors = ExecutorClient(internal_key=fail_cluster.settings.internal_key)
    d = Dispatcher(
        redis=client,
        snapshot=snapshot,
        executors=executors,
        settings=fail_cluster.settings.model_copy(
            update={"dispatch": dispatch_mode, "query_timeout_s": 10.0}
        ),
    )
    await snapshot.start()
    await d.start()
    yield d
    await d.stop()
    await snapshot.stop()
    await executors.aclose()
    await client.aclose()


async def place(cluster: FailCluster, dispatcher: Dispatcher, vid: str, names: tuple[str, ...]) -> None:
    """Publish `vid` and load it on the named executors; returns once the dispatcher sees them all."""
    sync = redis.Redis.from_url(cluster.settings.redis_url)
    store.publish_variants(sync, [cluster.profile(vid)])
    sync.close()
    executors = ExecutorClient(internal_key=cluster.settings.internal_key)
    try:
        for name in names:
            await executors.load(cluster.url(name), vid)
    finally:
        await executors.aclose()
    await dispatcher.snapshot.refresh_variants()

    async def shown() -> bool:
        await dispatcher.snapshot.refresh_live()
        active = {i.worker_id for i in dispatcher.snapshot.snapshot.instances if i.variant_id == vid}
        return active >= {cluster.worker_id(n) for n in names}

    await async_wait_for(shown, what=f"{vid} on {names}", every_s=0.1)
