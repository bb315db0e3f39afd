"""An instance runs up to its `concurrency` batches at once (SERF's c, set by the planner), on both of
its consumers (pushed queries and the variant's stream). Real instance host on Redis, real ONNX Runtime
session of a model unlike the demo models (iris: 4 features → 16 → 3). Each run first waits at a
barrier of two: it passes only when two batches run at the same time, so at c = 1 it breaks."""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import numpy as np
import pytest
import redis.asyncio as aioredis
from onnx import TensorProto, helper, numpy_helper
from sklearn.datasets import load_iris

from infaas.data import store
from infaas.data.artifacts import LocalArtifactStore
from infaas.wire.messages import Reply
from services.executor.instances import InstanceHost
from services.executor.queries import Delivery
from services.executor.serving import Instance
from tests.factories import variant_profile
from tests.orders import order

BARRIER_S = 3.0


def write_model(path: Path) -> None:
    rng = np.random.default_rng(11)
    w0 = rng.standard_normal((4, 16)).astype(np.float32)
    w1 = rng.standard_normal((16, 3)).astype(np.float32)
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["petals", "w0"], ["m0"]),
            helper.make_node("Relu", ["m0"], ["h0"]),
            helper.make_node("MatMul", ["h0", "w1"], ["species"]),
        ],
        "iris",
        [helper.make_tensor_value_info("petals", TensorProto.FLOAT, [None, 4])],
        [helper.make_tensor_value_info("species", TensorProto.FLOAT, [None, 3])],
        [numpy_helper.from_array(w0, "w0"), numpy_helper.from_array(w1, "w1")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path.write_bytes(model.SerializeToString())


class Barriered:
    """The instance's runtime, each run first waiting for a second one to run beside it."""

    def __init__(self, instance: Instance) -> None:
        assert instance.runtime is not None
        self.real = instance.runtime.run
        self.barrier = threading.Barrier(2, timeout=BARRIER_S)
        instance.runtime.run = self.run  # type: ignore[method-assign]

    def run(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        self.barrier.wait()
        return self.real(inputs)

    def reset(self) -> None:
        self.barrier = threading.Barrier(2, timeout=BARRIER_S)


@pytest.fixture
async def loaded(redis_url: str, tmp_path: Path) -> AsyncIterator[tuple[InstanceHost, Instance, Barriered]]:
    source = tmp_path / "iris.onnx"
    write_model(source)
    artifacts = LocalArtifactStore(tmp_path / "artifacts")
    vid = f"iris-{uuid.uuid4().hex[:6]}.onnxruntime-basic-fp32-cpu-b1-t1"
    profile = variant_profile(
        id=vid,
        model=vid.split(".")[0],
        artifact_digest=artifacts.put(source.read_bytes()),
        input_names=("petals",),
        output_names=("species",),
        max_batch=1,  # one query per batch: two queries are two batches
        latencies=((1, 50.0, 60.0),),  # above the inline threshold: runs go to the instance's threads
    )
    client = aioredis.Redis.from_url(redis_url)
    host = InstanceHost(worker_id=f"w-{vid[:11]}", redis=client, artifacts=artifacts, max_queue_delay_ms=0)
    instance = await host.load(profile)
    barriered = Barriered(instance)
    yield host, instance, barriered
    await host.close()
    await client.aclose()


class Connection:
    """Where pushed answers go (a push connection's `send`)."""

    closed = False

    def __init__(self) -> None:
        self.frames: list[bytes] = []

    def send(self, frame: bytes) -> None:
        self.frames.append(frame)


def rows() -> np.ndarray:
    x, _ = load_iris(return_X_y=True)
    return x.astype(np.float32)


async def pushed(host: InstanceHost, instance: Instance, n: int) -> list[Reply]:
    conn = Connection()
    x = rows()
    for i in range(n):
        q = Delivery(
            entry_id=b"",
            order=order(f"q{i}", variant=instance.profile.id),
            inputs={"petals": x[i : i + 1]},
            rows=1,
            conn=conn,  # type: ignore[arg-type]
        )
        assert host.accept(q) is None
    deadline = time.monotonic() + 2 * BARRIER_S + 5
    while len(conn.frames) < n and time.monotonic() < deadline:
        await asyncio.sleep(0.02)  # polling for the answers, not pacing the scenario
    return [Reply.decode(f)[0] for f in conn.frames]


async def test_two_pushed_batches_run_at_once_at_concurrency_2_and_not_at_1(
    loaded: tuple[InstanceHost, Instance, Barriered],
) -> None:
    host, instance, barriered = loaded
    instance.concurrency = 2
    answers = await pushed(host, instance, 2)
    assert len(answers) == 2 and all(a.outcome == "answered" for a in answers), answers
    # The same queries at concurrency 1: the first run waits for a second that cannot start.
    barriered.reset()
    instance.concurrency = 1
    answers = await pushed(host, instance, 2)
    assert len(answers) == 2
    assert any(a.outcome == "failed" for a in answers), answers


async def test_two_stream_batches_run_at_once_at_concurrency_2(
    loaded: tuple[InstanceHost, Instance, Barriered], redis_url: str
) -> None:
    host, instance, _ = loaded
    instance.concurrency = 2
    channel = store.reply_channel(f"test-{uuid.uuid4().hex[:8]}")
    listener = aioredis.Redis.from_url(redis_url)
    pubsub = listener.pubsub()
    await pubsub.subscribe(channel)
    try:
        x = rows()
        for i in range(2):
            sent = order(f"s{i}", variant=instance.profile.id, reply=channel, sent_at=time.time())
            frame = sent.encode({"petals": x[i : i + 1]})
            await host.redis.xadd(store.stream_key(instance.profile.id), {"f": frame})
        answers: list[Reply] = []
        deadline = time.monotonic() + 2 * BARRIER_S + 5
        while len(answers) < 2 and time.monotonic() < deadline:
            message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=0.5)
            if message is not None:
                answers.append(Reply.decode(message["data"])[0])
        assert len(answers) == 2 and all(a.outcome == "answered" for a in answers), answers
        pending = await host.redis.xpending(store.stream_key(instance.profile.id), store.STREAM_GROUP)
        assert pending["pending"] == 0  # both acknowledged
    finally:
        await pubsub.aclose()
        await listener.aclose()
