"""A pushed query that arrives alone, for an idle instance whose batches run on the event loop, is served
where it arrives: its answer does not wait for the inbox consumer's turn. Frames that arrive together,
or that the instance would hold for batch mates, still go through the inbox and run as one batch. A real
push server and instance host on Redis, a client on a real TCP connection, real ONNX Runtime."""

from __future__ import annotations

import asyncio
import contextlib
import struct
from collections.abc import AsyncIterator
from pathlib import Path

import numpy as np
import pytest
import redis.asyncio as aioredis

from infaas.data import store
from infaas.data.artifacts import LocalArtifactStore
from infaas.wire.handshake import encode_hello
from infaas.wire.messages import Reply
from services.executor.consumers import consume_inbox
from services.executor.instances import InstanceHost
from services.executor.push import start_server
from services.executor.serving import Instance
from tests.orders import order
from tests.tokens import model_bytes, token_profile, tokens

VID = "tokens-arrive.onnxruntime-basic-fp32-cpu-b64-t1"
KEY = "internal-key-for-this-test"
_LEN = struct.Struct(">I")


class Client:
    """The dispatcher's side, by hand: the hello, then length-prefixed frames, each write as given."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    async def send(self, *frames: bytes) -> None:
        self.writer.write(b"".join(_LEN.pack(len(f)) + f for f in frames))  # one write: one read there
        await self.writer.drain()

    async def answer(self, timeout_s: float = 5.0) -> tuple[Reply, dict[str, np.ndarray]]:
        (size,) = _LEN.unpack(await asyncio.wait_for(self.reader.readexactly(4), timeout_s))
        return Reply.decode(await asyncio.wait_for(self.reader.readexactly(size), timeout_s))


def _frame(qid: str, rows: slice) -> bytes:
    return order(qid, variant=VID, slo_ms=50.0).encode({"token_ids": tokens()[rows]})


async def _served(
    redis_url: str, tmp_path: Path, *, max_queue_delay_ms: float | None
) -> AsyncIterator[tuple[InstanceHost, Instance, Client]]:
    artifacts = LocalArtifactStore(tmp_path / "artifacts")
    digest = artifacts.put(model_bytes())
    redis = aioredis.Redis.from_url(redis_url)
    await redis.delete(store.stream_key(VID))
    host = InstanceHost(
        worker_id="w-arrive",
        redis=redis,
        artifacts=artifacts,
        max_queue_delay_ms=max_queue_delay_ms,
        inline_ms=float("inf"),  # every batch on the event loop, as on a one-core worker
    )
    profile = token_profile("tokens-arrive", digest)
    instance = await host.load(profile)
    server, addr = await start_server(
        host,
        bind="127.0.0.1",
        port=0,
        advertise_url="http://127.0.0.1",
        internal_key=KEY,
        max_frame_bytes=1 << 20,
    )
    reader, writer = await asyncio.open_connection("127.0.0.1", int(addr.rpartition(":")[2]))
    writer.write(_LEN.pack(len(encode_hello(KEY))) + encode_hello(KEY))
    try:
        yield host, instance, Client(reader, writer)
    finally:
        writer.close()
        server.close()
        await host.close()
        await redis.delete(store.stream_key(VID))
        await redis.aclose()


@pytest.fixture
async def served(redis_url: str, tmp_path: Path) -> AsyncIterator[tuple[InstanceHost, Instance, Client]]:
    async for each in _served(redis_url, tmp_path, max_queue_delay_ms=0):
        yield each


@pytest.fixture
async def held(redis_url: str, tmp_path: Path) -> AsyncIterator[tuple[InstanceHost, Instance, Client]]:
    async for each in _served(redis_url, tmp_path, max_queue_delay_ms=20):
        yield each


async def _stop_consumer(instance: Instance) -> None:
    assert instance.inbox_task is not None
    instance.inbox_task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await instance.inbox_task


async def test_a_lone_frame_is_answered_without_the_consumer_and_frames_together_batch(
    served: tuple[InstanceHost, Instance, Client],
) -> None:
    host, instance, client = served
    await _stop_consumer(instance)  # what is answered now did not pass the inbox
    assert instance.aimd.limit() == 1

    await client.send(_frame("alone", slice(0, 3)))
    reply, outputs = await client.answer()
    assert reply.id == "alone" and reply.batch_rows == 3 and reply.outcome == "answered"
    assert outputs["logits"].shape == (3, 3)
    runtime = instance.runtime
    assert runtime is not None
    np.testing.assert_allclose(
        outputs["logits"], runtime.run({"token_ids": tokens()[0:3]})["logits"], rtol=1e-6
    )

    # Two frames in one read: queued together for the consumer, which is stopped, so no answer yet.
    await client.send(_frame("first", slice(3, 5)), _frame("second", slice(5, 9)))
    with pytest.raises(TimeoutError):
        await client.answer(timeout_s=0.5)
    assert [q.order.id for q in instance.inbox] == ["first", "second"]

    # A lone frame behind queued ones waits its turn rather than overtaking them.
    await client.send(_frame("behind", slice(9, 10)))
    await asyncio.sleep(0.2)
    assert [q.order.id for q in instance.inbox] == ["first", "second", "behind"]

    assert instance.aimd.limit() >= 7  # the lone query's batch was accounted: the limit grew
    instance.inbox_task = asyncio.create_task(consume_inbox(host, instance))
    answers = [await client.answer() for _ in range(3)]
    assert [h.id for h, _ in answers] == ["first", "second", "behind"]
    assert {h.batch_rows for h, _ in answers} == {7}  # one batch of all three: 2 + 4 + 1 rows


async def test_an_instance_that_waits_for_batch_mates_queues_a_lone_frame(
    held: tuple[InstanceHost, Instance, Client],
) -> None:
    _, instance, client = held
    instance.aimd.size = 16  # batches of up to 16 rows: a lone row has batch mates to wait for
    await _stop_consumer(instance)
    await client.send(_frame("waits", slice(0, 1)))
    with pytest.raises(TimeoutError):
        await client.answer(timeout_s=0.5)
    assert [q.order.id for q in instance.inbox] == ["waits"]
