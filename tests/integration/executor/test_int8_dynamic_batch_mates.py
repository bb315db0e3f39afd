"""int8-dynamic answers do not depend on batch-mates: dynamic quantization scales activations over the
whole input tensor, so an instance of such a variant runs one query per batch. On the executor's own
serving path (a real instance host on Redis, a real ONNX Runtime session of the int8 form that the
profiler's generator makes) with a model unlike the demo models: standardized breast-cancer
measurements (30 features) → 512 → ReLU → 2 logits."""

from __future__ import annotations

import math
import time
from collections.abc import AsyncIterator
from pathlib import Path

import numpy as np
import onnx
import pytest
import redis.asyncio as aioredis
from onnx import TensorProto, helper, numpy_helper
from sklearn.datasets import load_breast_cancer

from infaas.data.artifacts import LocalArtifactStore
from infaas.runtimes.registry import runtime_for
from infaas.schemas.variants import VariantProfile
from infaas.wire.messages import Reply
from infaas.wire.tensors import Signature, TensorSpec
from services.executor.instances import InstanceHost
from services.executor.queries import Delivery
from services.executor.serving import Instance, serve_queries
from services.profiler.generators import OrtInt8Dynamic, SourceModel
from tests.factories import variant_profile
from tests.orders import order

FEATURES, HIDDEN = 30, 512


def cells() -> np.ndarray:
    x, _ = load_breast_cancer(return_X_y=True)
    return ((x - x.mean(axis=0)) / x.std(axis=0)).astype(np.float32)


def write_model(path: Path) -> None:
    rng = np.random.default_rng(3)
    w0 = (rng.standard_normal((FEATURES, HIDDEN)) / math.sqrt(FEATURES)).astype(np.float32)
    w1 = (rng.standard_normal((HIDDEN, 2)) / math.sqrt(HIDDEN)).astype(np.float32)
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["cells", "w0"], ["m0"]),
            helper.make_node("Relu", ["m0"], ["h0"]),
            helper.make_node("MatMul", ["h0", "w1"], ["diagnosis"]),
        ],
        "cancer",
        [helper.make_tensor_value_info("cells", TensorProto.FLOAT, [None, FEATURES])],
        [helper.make_tensor_value_info("diagnosis", TensorProto.FLOAT, [None, 2])],
        [numpy_helper.from_array(w0, "w0"), numpy_helper.from_array(w1, "w1")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    path.write_bytes(model.SerializeToString())


@pytest.fixture
def int8_profile(tmp_path: Path) -> tuple[VariantProfile, LocalArtifactStore]:
    """The int8-dynamic form of the model, as the profiler's generator makes it, in an artifact store."""
    source = tmp_path / "cancer.onnx"
    write_model(source)
    signature = Signature(
        inputs=(TensorSpec("cells", "float32", (None, FEATURES)),),
        outputs=(TensorSpec("diagnosis", "float32", (None, 2)),),
    )
    (candidate,) = OrtInt8Dynamic().generate(SourceModel("cancer", signature, source, None, {}))
    artifacts = LocalArtifactStore(tmp_path / "artifacts")
    profile = variant_profile(
        id="cancer.onnxruntime-basic-int8-dynamic-cpu-b64-t1",
        model="cancer",
        precision=candidate.precision,
        optimization=candidate.optimization,
        artifact_digest=artifacts.put(candidate.data),
        signature_key=signature.key,
        input_names=("cells",),
        output_names=("diagnosis",),
        max_batch=64,
        latencies=((1, 1.0, 2.0), (64, 2.0, 3.0)),
    )
    return profile, artifacts


@pytest.fixture
async def instance(
    redis_url: str, int8_profile: tuple[VariantProfile, LocalArtifactStore]
) -> AsyncIterator[tuple[InstanceHost, Instance]]:
    profile, artifacts = int8_profile
    client = aioredis.Redis.from_url(redis_url)
    host = InstanceHost(worker_id="w-int8", redis=client, artifacts=artifacts)
    loaded = await host.load(profile)
    loaded.aimd.size = profile.max_batch  # as after warm-up: queries waiting together would share a batch
    yield host, loaded
    await host.close()
    await client.aclose()


def query(qid: str, x: np.ndarray) -> Delivery:
    return Delivery(entry_id=qid.encode(), order=order(qid, request_id=qid), inputs={"cells": x}, rows=len(x))


async def served(
    host: InstanceHost, instance: Instance, queries: list[Delivery]
) -> dict[str, tuple[Reply, dict[str, np.ndarray]]]:
    """Serve `queries` as taken together from the instance's queue; each query's reply and outputs."""
    answers: dict[str, tuple[Reply, dict[str, np.ndarray]]] = {}

    def reply(q: Delivery, frame: bytes) -> None:
        answers[q.order.id] = Reply.decode(frame)

    await serve_queries(host, instance, queries, time.time(), reply)
    return answers


async def test_a_row_gets_the_same_answer_alone_and_amid_very_different_batch_mates(
    instance: tuple[InstanceHost, Instance], int8_profile: tuple[VariantProfile, LocalArtifactStore]
) -> None:
    host, loaded = instance
    x = cells()
    row = x[:1]
    mates = [
        x[1:9] * 20,
        -x[9:40] * 50,
        x[40:41] * 1000,
    ]  # other tenants' rows, far outside the model's range
    alone = (await served(host, loaded, [query("mine", row)]))["mine"]
    amid = await served(
        host, loaded, [query("mine", row)] + [query(f"other{i}", m) for i, m in enumerate(mates)]
    )
    assert amid["mine"][0].outcome == "answered", amid["mine"][0]
    np.testing.assert_array_equal(amid["mine"][1]["diagnosis"], alone[1]["diagnosis"])
    assert amid["mine"][0].batch_rows == 1  # it ran on its own
    for i, m in enumerate(mates):
        assert amid[f"other{i}"][0].batch_rows == len(m)

    # The test can fail: run merged, the same int8 session answers the row differently.
    profile, artifacts = int8_profile
    runtime = runtime_for(profile, artifacts.path(profile.artifact_digest))
    runtime.load()
    try:
        merged = runtime.run({"cells": np.concatenate([row, *mates])})["diagnosis"][:1]
    finally:
        runtime.unload()
    assert np.abs(merged - alone[1]["diagnosis"]).max() > 1e-3


async def test_a_querys_own_rows_still_run_together(instance: tuple[InstanceHost, Instance]) -> None:
    # One query's rows are one tenant's: they share a run, as offline chunks of one job do.
    host, loaded = instance
    answers = await served(host, loaded, [query("many", cells()[:16])])
    assert answers["many"][0].batch_rows == 16
    assert answers["many"][1]["diagnosis"].shape == (16, 2)
