"""Deadline-aware admission on real processes: a real dispatcher pushes to a real executor serving a wide
MLP (built here, costing real compute per row); a burst of about three SLOs' worth of work arrives at
once. Under `error` the queries that would be late are shed at once with the numbers that say why, and
every admitted one meets its SLO; under `best_effort` none is shed, and those predicted late say so."""

from __future__ import annotations

import asyncio
import gc
import math
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import redis
import redis.asyncio as aioredis
from onnx import TensorProto, helper, numpy_helper

from infaas.clients.envelope import Answer, Query
from infaas.clients.executor import ExecutorClient
from infaas.core.config import Settings
from infaas.core.errors import Overloaded
from infaas.core.heap import settle_heap
from infaas.data import store
from infaas.data.artifacts import LocalArtifactStore
from infaas.policy.selection import Requirements
from infaas.processes.suite import Suite, free_port
from infaas.schemas.variants import VariantProfile
from services.scheduler.dispatch import Dispatcher
from services.scheduler.snapshot import SnapshotCache
from tests.factories import variant_profile
from tests.polling import async_wait_for, wait_for

FEATURES, HIDDEN, CLASSES = 96, 1536, 5
ROWS = 8  # per query
SLO_MS = 150.0
VID = "wide.onnxruntime-basic-fp32-cpu-b64-t1"


def wide_mlp() -> bytes:
    """96 → 1536 → 1536 → 5 with ReLU: ~2.5 M multiply-adds a row, input `features`, output `scores`."""
    rng = np.random.default_rng(7)
    dims = (FEATURES, HIDDEN, HIDDEN, CLASSES)
    nodes, inits, prev = [], [], "features"
    for i, (n_in, n_out) in enumerate(zip(dims, dims[1:], strict=False)):
        w = (rng.standard_normal((n_in, n_out)) / math.sqrt(n_in)).astype(np.float32)
        inits += [
            numpy_helper.from_array(w, f"w{i}"),
            numpy_helper.from_array(np.zeros(n_out, np.float32), f"b{i}"),
        ]
        out = "scores" if i == len(dims) - 2 else f"h{i}"
        nodes.append(
            helper.make_node("Gemm", [prev, f"w{i}", f"b{i}"], [f"g{i}" if out != "scores" else out])
        )
        if out != "scores":
            nodes.append(helper.make_node("Relu", [f"g{i}"], [out]))
        prev = out
    graph = helper.make_graph(
        nodes,
        "wide",
        [helper.make_tensor_value_info("features", TensorProto.FLOAT, ["n", FEATURES])],
        [helper.make_tensor_value_info("scores", TensorProto.FLOAT, ["n", CLASSES])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)
    onnx.checker.check_model(model)
    return model.SerializeToString()


def measured_profile(onnx_bytes: bytes, digest: str) -> VariantProfile:
    """The variant's idle-machine profile, measured here as the profiler would (median and worst of a few
    runs per batch size); admission starts from it and then goes by what answers show."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(onnx_bytes, options, providers=["CPUExecutionProvider"])
    x = np.ones((64, FEATURES), np.float32)
    points = []
    for batch in (1, 8, 32, 64):
        times = []
        for _ in range(5):
            t0 = time.perf_counter()
            session.run(None, {"features": x[:batch]})
            times.append((time.perf_counter() - t0) * 1000)
        points.append((batch, float(np.median(times)), max(times)))
    return variant_profile(
        id=VID,
        model="wide",
        app="shop",
        signature_key=f"features:float32:{FEATURES}",
        artifact_digest=digest,
        input_names=("features",),
        output_names=("scores",),
        max_batch=64,
        latencies=tuple(points),
        saturation_qps=64 * 1000 / points[-1][1],
        load_ms=50.0,
        peak_memory_bytes=64 << 20,
    )


@dataclass
class Served:
    """A dispatcher with the wide MLP's instance active, and the model it serves."""

    dispatcher: Dispatcher
    onnx_bytes: bytes


@pytest.fixture
def executor(settings: Settings, tmp_path: Path) -> Iterator[tuple[Settings, str, bytes]]:
    cfg = settings.model_copy(update={"registry_port": free_port(), "executor_port": free_port()})
    onnx_bytes = wide_mlp()
    digest = LocalArtifactStore(cfg.resolved_artifact_dir).put(onnx_bytes)
    sync = redis.Redis.from_url(cfg.redis_url)
    store.publish_variants(sync, [measured_profile(onnx_bytes, digest)])
    (tmp_path / "logs").mkdir()
    suite = Suite(settings=cfg, log_dir=tmp_path / "logs")
    try:
        suite.start("registry", ["serve", "registry"])
        suite.wait_healthy(("registry",))
        suite.start("executor", ["serve", "executor"])
        suite.wait_healthy(("executor",))
        wait_for(lambda: sync.zcard(store.WORKERS) >= 1, what="the executor's heartbeat", timeout_s=30)
        yield cfg, f"http://127.0.0.1:{cfg.executor_port}", onnx_bytes
    finally:
        suite.stop()
        sync.close()


@pytest.fixture
async def served(executor: tuple[Settings, str, bytes]) -> AsyncIterator[Served]:
    cfg, url, onnx_bytes = executor
    client = aioredis.Redis.from_url(cfg.redis_url)
    snapshot = SnapshotCache(client, ttl_s=5)
    executors = ExecutorClient(internal_key=cfg.internal_key)
    d = Dispatcher(
        redis=client,
        snapshot=snapshot,
        executors=executors,
        settings=cfg.model_copy(update={"dispatch": "push", "query_timeout_s": 30.0}),
    )
    await snapshot.start()
    await d.start()
    await executors.load(url, VID)

    async def serving() -> bool:
        await snapshot.refresh_live()
        return bool(snapshot.serving.get(VID))

    await async_wait_for(serving, what="the instance active in the snapshot")
    # As every service does once started: a full collection of the test process's heap during a burst
    # stalled its event loop (the dispatcher's) for longer than the SLO.
    threshold = gc.get_threshold()
    settle_heap()
    yield Served(d, onnx_bytes)
    gc.unfreeze()
    gc.set_threshold(*threshold)
    await d.stop()
    await snapshot.stop()
    await executors.aclose()
    await client.aclose()


def _query(x: np.ndarray, i: int, policy: str) -> Query:
    asked = Requirements(slo_ms=SLO_MS)
    return Query(
        "model",
        "wide",
        f"features:float32:{FEATURES}",
        asked,
        {"features": x},
        f"q{i}",
        "shop",
        policy=policy,
        cache=False,
    )


async def _burst(served: Served, policy: str) -> tuple[list[Answer | Exception], list[np.ndarray]]:
    """Warm up, then send about three SLOs' worth of queries in one event-loop turn twice: first under
    `best_effort` (admission learns the per-row time and the spread of answers under this very load:
    queries admitted in one turn have no answer yet to learn from), then under `policy`. The second
    burst's results, in the order they completed, and its inputs."""
    d = served.dispatcher
    rng = np.random.default_rng(1)
    for i in range(10):
        await d.infer(_query(rng.random((ROWS, FEATURES), dtype=np.float32), i, policy))
    per_row = d.gate.service_times.of(d.snapshot.snapshot.variants[VID]).ms_per_row
    n = min(600, max(40, math.ceil(3 * SLO_MS / (ROWS * per_row))))
    xs = [rng.random((ROWS, FEATURES), dtype=np.float32) for _ in range(n)]
    done: list[Answer | Exception] = []

    async def one(i: int, policy: str) -> None:
        try:
            done.append(await d.infer(_query(xs[i], 100 + i, policy)))
        except Exception as exc:
            done.append(exc)

    await asyncio.gather(*(one(i, "best_effort") for i in range(n)))
    assert all(isinstance(r, Answer) for r in done), [r for r in done if not isinstance(r, Answer)]
    done.clear()
    await asyncio.gather(*(one(i, policy) for i in range(n)))
    return done, xs


async def test_under_error_a_burst_beyond_capacity_is_shed_at_once_and_the_admitted_meet_their_slo(
    served: Served,
) -> None:
    done, xs = await _burst(served, "error")
    shed = [r for r in done if isinstance(r, Overloaded)]
    answered = [r for r in done if isinstance(r, Answer)]
    assert len(shed) + len(answered) == len(done), [r for r in done if not isinstance(r, Overloaded | Answer)]
    assert shed and answered, f"{len(shed)} shed, {len(answered)} answered"
    # Admitted work meets its deadline: no query waited until its SLO to be refused (504) or missed it.
    assert all(a.slo_met is True for a in answered), [a.total_ms for a in answered if not a.slo_met]
    # Shed at once: every shed came back before the first admitted query was answered (in the event
    # loop's first pass over the burst, before any answer could be read), and says why with numbers.
    first_answer = next(i for i, r in enumerate(done) if isinstance(r, Answer))
    assert all(i < first_answer for i, r in enumerate(done) if isinstance(r, Overloaded))
    for exc in shed:
        d = exc.details
        assert exc.status == 503 and d["retry_after_s"] >= 1
        assert d["predicted_ms"] > d["deadline_ms"] and d["rows_ahead"] > 0
        assert str(exc).startswith("shed at once: predicted") and f"{d['rows_ahead']:.0f} rows ahead" in str(
            exc
        )
    session = ort.InferenceSession(served.onnx_bytes, providers=["CPUExecutionProvider"])
    for a in answered[:5]:  # each its own rows' answer, as ONNX Runtime computes it
        x = xs[int(a.request_id[1:]) - 100]
        np.testing.assert_allclose(
            a.outputs["scores"], session.run(None, {"features": x})[0], rtol=1e-4, atol=1e-4
        )


async def test_under_best_effort_nothing_is_shed_and_predicted_misses_say_so(served: Served) -> None:
    done, _ = await _burst(served, "best_effort")
    assert all(isinstance(r, Answer) for r in done), [r for r in done if not isinstance(r, Answer)]
    late = [r for r in done if isinstance(r, Answer) and "run anyway (best_effort)" in r.reason]
    assert late, "a burst of three SLOs' work must predict some misses"
    assert all("> deadline" in a.reason for a in late)
    assert any(a.slo_met is False for a in late)
