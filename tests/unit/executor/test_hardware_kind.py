"""A worker loads only variants of the hardware kind it serves: a CUDA variant sent to a CPU worker (or
the reverse) is refused with 409 and both kinds, before anything is fetched or loaded."""

from __future__ import annotations

from pathlib import Path

import pytest
import redis.asyncio as aioredis

from infaas.core.errors import Conflict
from infaas.data.artifacts import LocalArtifactStore
from services.executor.heartbeat import worker_utilization
from services.executor.instances import InstanceHost
from tests.factories import variant_profile


@pytest.mark.parametrize(("worker", "variant"), [("cpu", "cuda"), ("cuda", "cpu")])
async def test_a_variant_of_another_kind_is_refused(tmp_path: Path, worker: str, variant: str) -> None:
    client = aioredis.Redis()  # never reached: the refusal comes first
    host = InstanceHost(
        worker_id=f"{worker}-h-1",
        redis=client,
        artifacts=LocalArtifactStore(tmp_path),
        hardware=worker,
    )
    profile = variant_profile(hardware=variant)
    with pytest.raises(Conflict) as caught:
        await host.load(profile)
    assert caught.value.status == 409
    assert caught.value.details == {"variant": profile.id, "hardware": variant, "worker_hardware": worker}
    assert host.instances == {}
    await client.aclose()


def test_utilization_is_over_the_cores_of_a_cpu_worker_and_the_gpu_of_a_cuda_one() -> None:
    # 2 s of instance time over 1 s: a quarter of an 8-core CPU worker, a saturated GPU.
    assert worker_utilization(2.0, 1.0, kind="cpu", cores=8) == 0.25
    assert worker_utilization(2.0, 1.0, kind="cuda", cores=8) == 1.0
    assert worker_utilization(0.5, 1.0, kind="cuda", cores=8) == 0.5
    assert worker_utilization(-1.0, 1.0, kind="cpu", cores=8) == 0.0
