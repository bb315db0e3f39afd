"""One query whose values the model refuses (a token id past its embedding's table: shapes and dtypes
pass the gateway's checks, the value does not pass the kernel's) fails alone: its batch mates, other
tenants' queries, are answered, and its own answer says the inputs were refused. On the executor's own
serving path (a real instance host on Redis, a real ONNX Runtime session) with a model unlike the demo
models: iris measurements binned into 4 tokens of a 20-token vocabulary → embedding → mean → 3 logits."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
import redis.asyncio as aioredis

from infaas.data.artifacts import LocalArtifactStore
from infaas.wire.messages import Reply
from services.executor.instances import InstanceHost
from services.executor.queries import Delivery
from services.executor.serving import Instance, serve_queries
from tests.orders import order
from tests.tokens import model_bytes, token_profile, tokens


@pytest.fixture
async def instance(redis_url: str, tmp_path: Path) -> AsyncIterator[tuple[InstanceHost, Instance]]:
    artifacts = LocalArtifactStore(tmp_path / "artifacts")
    profile = token_profile("tokens", artifacts.put(model_bytes()))
    client = aioredis.Redis.from_url(redis_url)
    host = InstanceHost(worker_id="w-tokens", redis=client, artifacts=artifacts)
    loaded = await host.load(profile)
    loaded.aimd.size = profile.max_batch  # as after warm-up: queries waiting together share a batch
    yield host, loaded
    await host.close()
    await client.aclose()


def query(qid: str, x: np.ndarray) -> Delivery:
    return Delivery(
        entry_id=qid.encode(), order=order(qid, request_id=qid), inputs={"token_ids": x}, rows=len(x)
    )


async def served(
    host: InstanceHost, instance: Instance, queries: list[Delivery]
) -> dict[str, tuple[Reply, dict[str, np.ndarray]]]:
    answers: dict[str, tuple[Reply, dict[str, np.ndarray]]] = {}

    def reply(q: Delivery, frame: bytes) -> None:
        answers[q.order.id] = Reply.decode(frame)

    await serve_queries(host, instance, queries, time.time(), reply)
    return answers


async def test_a_query_the_model_refuses_fails_alone_and_says_so(
    instance: tuple[InstanceHost, Instance],
) -> None:
    host, loaded = instance
    x = tokens()
    bad = x[10:12].copy()
    bad[1, 2] = 99_999_999  # past the 20-token table
    good = [x[:3], x[50:51], x[100:108]]
    queries = [query("good0", good[0]), query("bad", bad), query("good1", good[1]), query("good2", good[2])]

    answers = await served(host, loaded, queries)

    head, outputs = answers["bad"]
    assert head.outcome == "invalid" and "out of data bounds" in (head.error or ""), head
    assert outputs == {}
    reference = ort.InferenceSession(model_bytes())
    for i, rows in enumerate(good):
        head, outputs = answers[f"good{i}"]
        assert head.outcome == "answered", head
        assert head.batch_rows == 3 + 2 + 1 + 8  # they did share the run that failed
        (want,) = reference.run(None, {"token_ids": rows})
        np.testing.assert_allclose(outputs["logits"], want, rtol=1e-6)
    # The test can fail: run merged, the bad row fails every row with it.
    with pytest.raises(Exception, match="out of data bounds"):
        reference.run(None, {"token_ids": np.concatenate([good[0], bad, good[1], good[2]])})


async def test_a_failed_run_leaves_the_instance_as_it_was(instance: tuple[InstanceHost, Instance]) -> None:
    host, loaded = instance
    before = loaded.aimd.limit()
    x = tokens()
    for _ in range(5):
        bad = x[:4].copy()
        bad[0, 0] = -1_000
        answers = await served(host, loaded, [query("bad", bad), query("good", x[4:6])])
        assert answers["bad"][0].outcome == "invalid" and answers["good"][0].outcome == "answered"
    assert loaded.aimd.limit() == before
    assert loaded.state == "active"
