"""The push path (INFAAS_DISPATCH=push) on a real cluster: a real dispatcher sends frames straight to two
real executor processes. Nothing is lost when an executor is killed mid-load, or when the last instance
of a variant is drained while the dispatcher's snapshot still lists it; the planner's load meter counts
pushed queries; and every answer says where it went and why it was sent again."""

from __future__ import annotations

import asyncio
import signal
import struct
import time
from collections.abc import AsyncIterator
from typing import Any

import numpy as np
import onnxruntime as ort
import pytest
import redis
import redis.asyncio as aioredis

from infaas.clients.envelope import Answer, Query
from infaas.clients.executor import ExecutorClient
from infaas.data import store
from infaas.data.artifacts import LocalArtifactStore
from infaas.policy.selection import Requirements
from infaas.wire.connection import split_addr
from infaas.wire.frames import encode_frame
from infaas.wire.handshake import encode_hello
from infaas.wire.messages import Reply
from infaas_cli.demo_models import DemoModel
from services.planner.loops.cluster import ClusterReader
from services.planner.loops.observe import LoadMeter
from services.scheduler.dispatch import Dispatcher
from services.scheduler.snapshot import SnapshotCache
from tests.integration.planner.conftest import Cluster
from tests.orders import order
from tests.polling import async_wait_for


@pytest.fixture
def dispatch_mode() -> str:
    return "push"


@pytest.fixture
async def dispatcher(cluster: Cluster, redis_url: str, dispatch_mode: str) -> AsyncIterator[Dispatcher]:
    client = aioredis.Redis.from_url(redis_url)
    snapshot = SnapshotCache(client, ttl_s=5)
    executors = ExecutorClient(internal_key=cluster.settings.internal_key)
    d = Dispatcher(
        redis=client,
        snapshot=snapshot,
        executors=executors,
        settings=cluster.settings.model_copy(update={"dispatch": dispatch_mode, "query_timeout_s": 10.0}),
    )
    yield d
    await d.stop()
    await snapshot.stop()
    await executors.aclose()
    await client.aclose()


def _query(x: np.ndarray, request_id: str, variant: str | None = None) -> Query:
    asked = Requirements()
    return Query(
        "model", "digits", "x:float32:64", asked, {"x": x}, request_id, "shop", cache=False, variant=variant
    )


async def _offer(
    dispatcher: Dispatcher, results: list[dict[str, Any] | Exception], *, n: int, gap_s: float
) -> None:
    """Send `n` one-row queries `gap_s` apart without waiting for answers; record each answer or error."""
    x = np.ones((1, 64), dtype=np.float32)

    async def one(i: int) -> None:
        try:
            results.append((await dispatcher.infer(_query(x, f"q{i}")))._asdict())
        except Exception as exc:
            results.append(exc)

    tasks = []
    for i in range(n):
        tasks.append(asyncio.create_task(one(i)))
        await asyncio.sleep(gap_s)
    await asyncio.gather(*tasks)


async def _serve_on_both(cluster: Cluster, dispatcher: Dispatcher, vid: str) -> None:
    sync = redis.Redis.from_url(cluster.settings.redis_url)
    store.publish_variants(sync, [cluster.profile(vid, saturation_qps=5000.0, max_batch=8)])
    sync.close()
    executors = ExecutorClient(internal_key=cluster.settings.internal_key)
    try:
        for url in cluster.executor_urls:
            await executors.load(url, vid)
    finally:
        await executors.aclose()
    deadline = time.monotonic() + 10
    await dispatcher.snapshot.refresh_variants()
    while len(dispatcher.snapshot.serving.get(vid, ())) < 2:
        assert time.monotonic() < deadline, "both workers' push endpoints did not show up"
        await asyncio.sleep(0.2)
        await dispatcher.snapshot.refresh_live()


@pytest.mark.parametrize("dispatch_mode", ["push", "streams"])
async def test_queries_are_answered_once_each_and_counted_as_offered_load(
    cluster: Cluster, dispatcher: Dispatcher, small_model: DemoModel, dispatch_mode: str
) -> None:
    """Both ways of handing queries to instances: each query gets its own rows' answer."""
    await dispatcher.snapshot.start()
    await dispatcher.start()
    await _serve_on_both(cluster, dispatcher, "digits.p")
    meter, reader = LoadMeter(window_s=5.0), ClusterReader(ttl_s=cluster.settings.heartbeat_ttl_s)

    async def rates() -> dict[str, float]:  # as a planner tick reads the counters and rates them
        return meter.rates_of((await reader.read(dispatcher.redis, now=time.time())).rows)

    await rates()
    before = int(await dispatcher.redis.get(store.offered_rows_key("digits.p")) or 0)
    rng = np.random.default_rng(0)
    xs = [rng.random((1 + i % 3, 64), dtype=np.float32) for i in range(200)]
    answers = await asyncio.gather(*(dispatcher.infer(_query(x, f"r{i}")) for i, x in enumerate(xs)))
    session = ort.InferenceSession(str(small_model.onnx_path), providers=["CPUExecutionProvider"])
    name = session.get_inputs()[0].name
    expected = [session.run(["probabilities"], {name: x})[0] for x in xs]
    workers = set()
    for x, want, raw in zip(xs, expected, answers, strict=True):
        body = raw._asdict()
        got = np.asarray(body["outputs"]["probabilities"], dtype=np.float32)
        assert got.shape == (x.shape[0], want.shape[1])  # its own rows, not a neighbour's in the batch
        np.testing.assert_allclose(got, want, atol=1e-5)
        assert body["variant"] == "digits.p" and "sent again" not in body["reason"]
        workers.add(body["worker"])
    if dispatch_mode == "push":  # (with streams, whichever worker is free pulls: maybe one takes all)
        assert len(workers) == 2, "both workers with an instance take pushed queries"
    rows = sum(x.shape[0] for x in xs)

    async def every_row_offered() -> bool:  # every row, not every query; added to the store periodically
        return int(await dispatcher.redis.get(store.offered_rows_key("digits.p")) or 0) - before == rows

    await async_wait_for(every_row_offered, what=f"{rows} offered rows in the store")
    rate = (await rates())["digits.p"]
    assert rate > 0, "the planner must see every dispatched query as offered load"


async def test_killing_an_executor_mid_load_loses_no_query(cluster: Cluster, dispatcher: Dispatcher) -> None:
    await dispatcher.snapshot.start()
    await dispatcher.start()
    await _serve_on_both(cluster, dispatcher, "digits.k")
    results: list[dict[str, Any] | Exception] = []
    source = asyncio.create_task(_offer(dispatcher, results, n=600, gap_s=0.005))  # 3 s at 200/s
    await asyncio.sleep(1.5)  # the scenario: the kill lands mid-load (3 s of it)
    victim = cluster.suite.procs["executor"]
    # Stopped first, so that queries are certainly in flight on its connection when it dies (a query
    # takes about a millisecond: a bare kill at 200/s often finds none there).
    victim.send_signal(signal.SIGSTOP)
    await asyncio.sleep(0.1)
    victim.send_signal(signal.SIGKILL)
    await source
    failed = [r for r in results if isinstance(r, Exception)]
    assert len(results) == 600 and not failed, f"{len(failed)} queries failed: {failed[:3]}"
    after_kill = [r for r in results if isinstance(r, dict) and "sent again" in r["reason"]]
    answered_by = {r["worker"] for r in results if isinstance(r, dict)}
    assert len(answered_by) == 2
    # Queries in flight on the killed worker's connection were sent again, and their answers say so.
    assert after_kill, "no answer records being sent again after the kill"
    assert all("was lost" in r["reason"] for r in after_kill)


async def test_draining_the_last_instance_behind_a_stale_snapshot_loses_no_query(
    cluster: Cluster, dispatcher: Dispatcher
) -> None:
    """Issue 5's race: the dispatcher still lists the instance well past the drain's grace period (its
    snapshot is never refreshed here). Pushed queries that reach the drained instance are refused and
    sent again; with no instance left the dispatcher cold-loads one, and every query is answered."""
    sync = redis.Redis.from_url(cluster.settings.redis_url)
    store.publish_variants(sync, [cluster.profile("digits.d", saturation_qps=5000.0)])
    sync.close()
    executors = ExecutorClient(internal_key=cluster.settings.internal_key)
    try:
        await executors.load(cluster.executor_urls[0], "digits.d")
        await dispatcher.snapshot.refresh_variants()

        async def serving() -> bool:
            await dispatcher.snapshot.refresh_live()
            return bool(dispatcher.snapshot.serving.get("digits.d"))

        await async_wait_for(serving, what="the instance's push endpoint shows up", every_s=0.2)
        # From here on the snapshot is frozen: no poll, no invalidations (dispatcher.start is not called).
        results: list[dict[str, Any] | Exception] = []
        # 3 s at 50/s; the drain (0.6 s grace) happens once a third of them are answered.
        source = asyncio.create_task(_offer(dispatcher, results, n=150, gap_s=0.02))
        await async_wait_for(lambda: len(results) >= 50, what="a third of the load answered")
        drained = await executors.drain_instance(cluster.executor_urls[0], "digits.d")
        await source
    finally:
        await executors.aclose()
    failed = [r for r in results if isinstance(r, Exception)]
    assert len(results) == 150 and not failed, f"{len(failed)} queries failed: {failed[:3]} ({drained})"
    redirected = [r for r in results if isinstance(r, dict) and "refused it" in r["reason"]]
    assert redirected, "queries sent after the drain must have been refused and sent again"
    assert all("cold start" in r["reason"] or "sent again" in r["reason"] for r in redirected)


async def test_bad_frames_on_the_push_endpoint_are_answered_or_cut_off_and_harm_nothing(
    cluster: Cluster, dispatcher: Dispatcher
) -> None:
    await dispatcher.snapshot.start()
    await _serve_on_both(cluster, dispatcher, "digits.b")
    addr = dispatcher.snapshot.serving["digits.b"][0].push
    host, port = split_addr(addr)
    reader, writer = await asyncio.open_connection(host, port)
    hello = encode_hello(cluster.settings.internal_key)  # as every dispatcher opens a connection
    writer.write(struct.pack(">I", len(hello)) + hello)

    async def exchange(frame: bytes) -> Reply:
        writer.write(struct.pack(">I", len(frame)) + frame)
        (size,) = struct.unpack(">I", await asyncio.wait_for(reader.readexactly(4), 5))
        return Reply.decode(await reader.readexactly(size))[0]

    x = np.ones((1, 64), dtype=np.float32)
    ok = await exchange(order("fine", variant="digits.b").encode({"x": x}))
    assert ok.id == "fine" and ok.outcome == "answered"
    unknown = await exchange(order("u", variant="digits.nope").encode({"x": x}))
    assert (
        unknown.id == "u"
        and unknown.outcome == "refused"
        and "no instance of digits.nope" in str(unknown.error)
    )
    truncated = order("t", variant="digits.b").encode({"x": x})[:-8]
    bad = await exchange(truncated)
    assert bad.id == "t" and bad.outcome == "failed" and "malformed" in str(bad.error)
    empty = await exchange(order("e", variant="digits.b").encode({}))
    assert empty.id == "e" and empty.outcome == "failed" and "no inputs" in str(empty.error)
    # A header that is not an order (a field missing): answered by its id as malformed, not run.
    partial = await exchange(encode_frame({"id": "p", "variant": "digits.b"}, {"x": x}))
    assert partial.id == "p" and partial.outcome == "failed" and "without 'digest'" in str(partial.error)
    # Not even a header: the connection is cut off, and the executor goes on serving everyone else.
    writer.write(struct.pack(">I", 3) + b"\xff\x00\x01" + b"zzz")
    assert await asyncio.wait_for(reader.read(), 5) == b""
    writer.close()
    answer = await dispatcher.infer(_query(x, "after"))
    assert answer.variant == "digits.b"


def _slow_model(layers: int = 64, width: int = 1024) -> bytes:
    """An ONNX model of the digits signature that takes milliseconds per row (a chain of width×width
    matmuls sharing one weight), so that a batch is still running when the test acts."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    weights = [
        numpy_helper.from_array((rng.standard_normal(shape) / np.sqrt(shape[0])).astype(np.float32), name)
        for name, shape in (("w_in", (64, width)), ("w", (width, width)), ("w_out", (width, 10)))
    ]
    nodes = [helper.make_node("MatMul", ["x", "w_in"], ["h0"])]
    for i in range(layers):
        nodes.append(helper.make_node("MatMul", [f"h{i}", "w"], [f"m{i}"]))
        nodes.append(helper.make_node("Tanh", [f"m{i}"], [f"h{i + 1}"]))
    nodes.append(helper.make_node("MatMul", [f"h{layers}", "w_out"], ["logits"]))
    nodes.append(helper.make_node("Softmax", ["logits"], ["probabilities"], axis=-1))
    graph = helper.make_graph(
        nodes,
        "slow",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 64])],
        [helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, [None, 10])],
        initializer=weights,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return bytes(model.SerializeToString())


async def test_unloading_an_instance_mid_batch_loses_no_query(
    cluster: Cluster, dispatcher: Dispatcher
) -> None:
    """DELETE /instances/{variant} while the instance runs a batch and more wait in its inbox: the
    running batch is answered, the waiting queries are refused and sent again (the dispatcher loads
    the variant anew), and none waits for its deadline."""
    digest = LocalArtifactStore(cluster.settings.resolved_artifact_dir).put(_slow_model())
    profile = cluster.profile(
        "digits.u",
        artifact_digest=digest,
        max_batch=8,
        latencies=((1, 10.0, 14.0), (8, 14.0, 20.0)),  # over INLINE_MS: batches run on the instance's thread
        saturation_qps=5000.0,  # not its real peak: the dispatcher must queue all 400 queries, not shed them
    )
    sync = redis.Redis.from_url(cluster.settings.redis_url)
    store.publish_variants(sync, [profile])
    sync.close()
    await dispatcher.snapshot.start()
    await dispatcher.start()
    executors = ExecutorClient(internal_key=cluster.settings.internal_key)
    try:
        await executors.load(cluster.executor_urls[0], "digits.u")
        deadline = time.monotonic() + 10
        while not dispatcher.snapshot.serving.get("digits.u"):
            assert time.monotonic() < deadline, "the instance's push endpoint did not show up"
            await asyncio.sleep(0.2)
            await dispatcher.snapshot.refresh_live()
        rng = np.random.default_rng(1)
        xs = [rng.random((1, 64), dtype=np.float32) for _ in range(400)]
        pending = [
            asyncio.create_task(dispatcher.infer(_query(x, f"u{i}", variant="digits.u")))
            for i, x in enumerate(xs)
        ]
        # Unload once a batch has been answered: the instance is busy and the rest wait in its inbox.
        await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
        await executors.unload(cluster.executor_urls[0], "digits.u")
        results = await asyncio.gather(*pending, return_exceptions=True)
    finally:
        await executors.aclose()
    failed = [r for r in results if isinstance(r, BaseException)]
    assert not failed, f"{len(failed)} of {len(results)} queries failed: {failed[:3]}"
    answers = [r._asdict() for r in results if isinstance(r, Answer)]
    session = ort.InferenceSession(_slow_model(), providers=["CPUExecutionProvider"])
    expected = session.run(["probabilities"], {"x": np.concatenate(xs)})[0]
    got = np.concatenate([np.asarray(a["outputs"]["probabilities"], dtype=np.float32) for a in answers])
    np.testing.assert_allclose(got, expected, atol=1e-5)  # every query answered, with its own row
    first = [a for a in answers if "sent again" not in a["reason"]]
    again = [a for a in answers if "sent again" in a["reason"]]
    assert first, "the batch running when the unload came must be answered by that instance"
    # Refused from the inbox by the unload, or (a query the dispatcher pushed only after the unload, on a
    # slow machine) refused on arrival for want of the instance: either way sent again, nothing else.
    why = ("the instance was unloaded", "no instance of digits.u on this worker")
    assert again and all(any(w in a["reason"] for w in why) for a in again), [a["reason"] for a in again[:3]]
