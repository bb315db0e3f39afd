"""A variant id that stands for another artifact now (its model deleted and registered again under its
name): the executor's old instance refuses queries meant for the new artifact, pushed or read from the
stream, so their senders go elsewhere; a load of the new profile replaces it; and the heartbeat's sweep
finds instances of deleted or re-registered variants. A real instance host on Redis, real ONNX Runtime."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path

import numpy as np
import onnx
import pytest
import redis.asyncio as aioredis
from onnx import numpy_helper

from infaas.data import store
from infaas.data.artifacts import LocalArtifactStore
from infaas.schemas.variants import VariantProfile
from infaas.wire.messages import Reply
from services.executor.consumers import serve_entries
from services.executor.instances import InstanceHost
from services.executor.offline import OfflineRunner
from services.executor.queries import Delivery
from services.executor.stale import StaleSweep
from tests.orders import order
from tests.tokens import model_bytes, token_profile, tokens

VID = "tokens-again.onnxruntime-basic-fp32-cpu-b64-t1"


def _negated() -> bytes:
    proto = onnx.load_model_from_string(model_bytes())
    for init in proto.graph.initializer:
        if init.name == "head":
            init.CopyFrom(numpy_helper.from_array(-numpy_helper.to_array(init), "head"))
    return proto.SerializeToString()


def _profile(digest: str) -> VariantProfile:
    return token_profile("tokens-again", digest)


@pytest.fixture
async def host(redis_url: str, tmp_path: Path) -> AsyncIterator[tuple[InstanceHost, str, str]]:
    artifacts = LocalArtifactStore(tmp_path / "artifacts")
    old, new = artifacts.put(model_bytes()), artifacts.put(_negated())
    client = aioredis.Redis.from_url(redis_url)
    await client.delete(store.stream_key(VID), store.variant_key(VID))
    served = InstanceHost(worker_id="w-again", redis=client, artifacts=artifacts)
    yield served, old, new
    await served.close()
    await client.delete(store.stream_key(VID), store.variant_key(VID))
    await client.aclose()


def _query(digest: str | None) -> Delivery:
    return Delivery(
        entry_id=b"1-0",
        order=order("q", variant=VID, digest=digest),
        inputs={"token_ids": tokens()[:2]},
        rows=2,
    )


async def test_the_old_instance_refuses_what_is_meant_for_the_new_artifact_and_a_load_replaces_it(
    host: tuple[InstanceHost, str, str], redis_url: str
) -> None:
    served, old, new = host
    instance = await served.load(_profile(old))
    assert served.accept(_query(old)) is None
    assert served.accept(_query(None)) is None  # a sender that does not say is not checked
    instance.inbox.clear()
    refused = served.accept(_query(new))
    assert refused is not None and "registered again" in refused

    # Read from the stream: the refusal goes back on the query's reply channel, and the entry is done.
    client = aioredis.Redis.from_url(redis_url)
    pubsub = client.pubsub()
    await pubsub.subscribe("reply-again")
    frame = order("s1", variant=VID, digest=new, reply="reply-again").encode({"token_ids": tokens()[:2]})
    await serve_entries(served, instance, [(b"1-0", {b"f": frame})])
    deadline = time.monotonic() + 5
    message = None
    while message is None and time.monotonic() < deadline:
        message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=1)
    assert message is not None
    reply, _ = Reply.decode(message["data"])
    assert reply.id == "s1" and reply.outcome == "refused" and "registered again" in (reply.error or "")
    await pubsub.aclose()  # type: ignore[no-untyped-call]
    await client.aclose()

    replaced = await served.load(_profile(new))
    assert replaced is not instance and served.instances[VID].profile.artifact_digest == new
    assert served.accept(_query(new)) is None


async def test_the_sweep_finds_re_registered_and_deleted_variants(
    host: tuple[InstanceHost, str, str],
) -> None:
    served, old, new = host
    redis = served.redis  # its database is emptied around each test
    await redis.set(store.PUBLISHED, "test")
    sweep = StaleSweep()
    await redis.set(store.variant_key(VID), _profile(old).to_json_bytes())
    assert await sweep(redis, {VID: old}) == []  # published as it runs
    await redis.set(store.variant_key(VID), _profile(new).to_json_bytes())
    (stale,) = await sweep(redis, {VID: old})
    assert stale[0] == VID and "registered again" in stale[1]
    await redis.delete(store.variant_key(VID))
    assert await sweep(redis, {VID: new}) == []  # one read that misses it may race a publication
    (gone,) = await sweep(redis, {VID: new})
    assert "deleted" in gone[1]
    await redis.delete(store.PUBLISHED)
    assert await StaleSweep()(redis, {VID: new}) == []  # Redis without the publication says nothing
    assert await sweep(redis, {VID: new}) == []


async def test_offline_work_runs_the_artifact_its_profile_names(host: tuple[InstanceHost, str, str]) -> None:
    served, old, new = host
    runner = OfflineRunner(served)
    try:
        x = {"token_ids": tokens()[:5]}
        before = (await runner.run(_profile(old), x))["logits"]
        after = (await runner.run(_profile(new), x))["logits"]  # same variant id, other weights
        np.testing.assert_allclose(after, -before, rtol=1e-5, atol=1e-6)
    finally:
        runner.close()
