"""An instance loaded with its model's SLO (what the model autoscaler sends with every load) takes its
overload threshold from SERF's capacity under that SLO; one loaded without keeps the profiled peak. Real
ONNX Runtime instance on a real Redis, the monitor's clock moved by hand."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import numpy as np
import onnx
import pytest
import redis.asyncio as aioredis
from onnx import TensorProto, helper, numpy_helper

from infaas.data.artifacts import LocalArtifactStore
from infaas.schemas.variants import VariantProfile
from services.executor.instances import InstanceHost
from tests.factories import variant_profile


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def gauge_model() -> bytes:
    """A 3-reading → 1 score linear model (input `readings`), unlike the demo models."""
    w = numpy_helper.from_array(np.asarray([[0.5], [-1.0], [2.0]], dtype=np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["readings", "w"], ["score"])],
        "gauge",
        [helper.make_tensor_value_info("readings", TensorProto.FLOAT, [None, 3])],
        [helper.make_tensor_value_info("score", TensorProto.FLOAT, [None, 1])],
        [w],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model.SerializeToString()


@pytest.fixture
async def host(redis_url: str, tmp_path: Path) -> AsyncIterator[tuple[InstanceHost, VariantProfile]]:
    artifacts = LocalArtifactStore(tmp_path / "artifacts")
    # Profiled (as if) at 10 ms a lone row and 40 ms for 8: 200 rows/s flat out at batch 8, a peak of
    # 1,000 rows/s as the profile states it.
    profile = variant_profile(
        id="gauge.onnxruntime-basic-fp32-cpu-b8-t1",
        model="gauge",
        artifact_digest=artifacts.put(gauge_model()),
        signature_key="readings:float32:3",
        input_names=("readings",),
        output_names=("score",),
        max_batch=8,
        latencies=((1, 10.0, 15.0), (8, 40.0, 50.0)),
        saturation_qps=1000.0,
    )
    client = aioredis.Redis.from_url(redis_url)
    h = InstanceHost(worker_id="w-slo", redis=client, artifacts=artifacts)
    yield h, profile
    await h.close()
    await client.aclose()


async def test_the_slo_a_load_carries_sets_the_instances_overload_threshold(
    host: tuple[InstanceHost, VariantProfile],
) -> None:
    h, profile = host
    instance = await h.load(profile, slo_ms=100.0)
    assert instance.state == "active" and instance.monitor.slo_ms == 100.0
    # A second load of the same variant without an SLO (a scheduler's cold load) keeps the one it has;
    # a later one with an SLO replaces it.
    assert (await h.load(profile)).monitor.slo_ms == 100.0
    assert (await h.load(profile, slo_ms=200.0)).monitor.slo_ms == 200.0
    await h.load(profile, slo_ms=100.0)

    clock = Clock()
    monitor = instance.monitor
    monitor.clock = clock
    monitor.tick()  # opens a window on the hand-moved clock
    # Under the 100 ms SLO SERF carries 150 rows/s (batch 8 in 40 ms, M/D/1 mean of 100 ms at ρ = 3/4):
    # 160 rows/s is overloaded though it is 16 % of the profiled peak.
    clock.now += 1.0
    monitor.offered(160)
    status = monitor.tick()
    assert status.state == "overloaded", status.reason
    assert "capacity under the 100 ms SLO (150 rows/s at batch ~8)" in status.reason

    bare = await h.load(variant_profile_without_slo(profile))
    bare.monitor.clock = clock
    bare.monitor.tick()
    clock.now += 1.0
    bare.monitor.offered(160)
    assert bare.monitor.tick().state == "active"  # no SLO said: 16 % of the profiled peak


def variant_profile_without_slo(profile: VariantProfile) -> VariantProfile:
    """The same model as another variant (its own instance on this worker), loaded without an SLO."""
    return replace(profile, id="gauge.onnxruntime-basic-fp32-cpu-b8-t1-copy")
