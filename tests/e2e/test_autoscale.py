"""A trace replayed through the gateway (open loop, raw keep-alive client) is answered whole, and the
simulator runs the same trace with the variant's real profile and the overhead measured on this machine.

How close the simulated p99 comes to the measured one is a measurement, not a test:
`bench.papers.sim_vs_real` replays and simulates the same traces and prints both (the margin is in
docs/benchmarks.md)."""

from __future__ import annotations

import asyncio
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import orjson
import pytest
import redis.asyncio as aioredis

from infaas.core import workloads
from infaas.data import store
from infaas.policy.selection import WorkerView
from services.planner.simulator import SimConfig, SimModel, simulate
from tests.e2e.conftest import RunningSuite

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parents[2]


def _loadgen() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "bench_loadgen_e2e", ROOT / "bench" / "common" / "loadgen.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


async def _variants(url: str) -> dict[str, object]:
    client = aioredis.Redis.from_url(url)
    try:
        return dict(await store.read_variants(client))
    finally:
        await client.aclose()


def test_a_replayed_trace_is_answered_whole_and_simulated_from_the_real_profile(
    running: RunningSuite, shop: dict[str, str]
) -> None:
    loadgen = _loadgen()
    variants = asyncio.run(_variants(running.settings.redis_url))
    small = sorted(
        (v for v in variants.values() if v.model == "small" and v.max_batch == 1 and v.threads == 1),  # type: ignore[attr-defined]
        key=lambda v: v.profiled_ms(1, tail=False),  # type: ignore[attr-defined]
    )
    assert small, "no batch-1 single-thread variant of `small` was profiled"
    variant = small[0]
    body = orjson.dumps({"inputs": [[0.5] * 64], "variant": variant.id})  # type: ignore[attr-defined]
    with running.client(shop["key"]) as client:  # cold start outside the measured traces
        warm = client.post(
            "/v1/models/small/infer", content=body, headers={"content-type": "application/json"}
        )
        assert warm.status_code == 200, warm.text
    target = loadgen.Target.parse(running.url)
    request = loadgen.encode_request(
        "POST",
        target.authority,
        "/v1/models/small/infer",
        body,
        {"Authorization": f"Bearer {shop['key']}", "content-type": "application/json"},
    )

    def replay(trace: np.ndarray) -> np.ndarray:
        result = loadgen.run(
            loadgen.run_open_loop(target, [request], list(trace), connections=16, keep_bodies=False)
        )
        assert result.ok == len(trace), (result.errors(), result.error_bodies)
        assert len(result.records) == len(trace)  # every query's latency and outcome recorded
        return np.array(result.ok_latencies_ms)

    compute = variant.profiled_ms(1, tail=False)  # type: ignore[attr-defined]

    # Calibration (another trace, another rate): the serving path's overhead distribution on this
    # machine, i.e. measured latency minus the profiled compute time.
    calibration = replay(workloads.poisson(20, 10, seed=5))
    overhead = tuple(float(x) for x in np.maximum(0.0, calibration - compute))
    trace = workloads.poisson(40, 15, seed=21)
    measured = replay(trace)
    sim = simulate(
        [SimModel("small", (variant,), trace, slo_ms=None)],  # type: ignore[arg-type]
        [WorkerView("w0", "cpu", "", 2, 1 << 34)],
        [(variant.id, "w0")],  # type: ignore[attr-defined]
        15,
        SimConfig(policy="static", overhead_samples_ms=overhead),
    )
    assert len(measured) == len(trace) and np.all(measured > 0)
    assert sim.latency_ms.size == len(trace) and not np.isnan(sim.latency_ms).any()  # every query served
    assert 0 < sim.p(50) <= sim.p(99)


def test_events_are_served_to_the_admin_only_with_a_typed_schema(
    running: RunningSuite, shop: dict[str, str]
) -> None:
    page = running.admin.get("/v1/events", params={"limit": 5})
    assert page.status_code == 200, page.text
    assert isinstance(page.json()["events"], list)
    with running.client(shop["key"]) as client:
        refused = client.get("/v1/events")
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "forbidden"
    bad = running.admin.get("/v1/events", params={"kind": "nonsense"})
    assert bad.status_code == 422 and "error" in bad.json()
    schema = running.admin.get("/openapi.json").json()
    ok = schema["paths"]["/v1/events"]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
    assert ok["$ref"].endswith("/EventPage")
    from typer.testing import CliRunner

    from infaas_cli.main import app

    result = CliRunner().invoke(
        app, ["events", "--json", "--url", running.url, "--key", running.settings.admin_key]
    )
    assert result.exit_code == 0, result.output
    assert "events" in orjson.loads(result.output)
