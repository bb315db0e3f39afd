"""The simulator against the real system on the same trace: the same Poisson arrivals replayed through
the gateway (open loop, raw keep-alive client) and simulated with the variant's real profile.

The simulator does not model the serving processes themselves (gateway, scheduler, executor and Redis
sharing two cores), so it is calibrated first on a separate trace (another seed and rate): the measured
latencies minus the variant's profiled compute time are its serving-overhead samples. Stated margin:
the simulated p99 is within a factor of 2 of the measured p99 (either way) or within 5 ms of it. Both
are printed (pytest -s) for the record. A p99 of 600 queries is their 6th-slowest, so one scheduling
hiccup of a busy shared machine moves it: a disturbed run is repeated, at most three attempts in all."""

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
    spec = importlib.util.spec_from_file_location("bench_loadgen_e2e", ROOT / "bench" / "loadgen.py")
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


def test_simulated_p99_matches_a_real_run_on_the_same_trace(
    running: RunningSuite, shop: dict[str, str]
) -> None:
    loadgen = _loadgen()
    variants = asyncio.run(_variants(running.settings.redis_url))
    small = sorted(
        (v for v in variants.values() if v.model == "small" and v.max_batch == 1 and v.threads == 1),  # type: ignore[attr-defined]
        key=lambda v: v.latency_ms(1, tail=False),  # type: ignore[attr-defined]
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

    compute = variant.latency_ms(1, tail=False)  # type: ignore[attr-defined]

    def attempt() -> tuple[float, float, bool]:
        """(measured p99, simulated p99, whether the planner scaled `small` meanwhile)."""
        before = _last_event_id(running)
        # Calibration (another trace, another rate): the serving path's overhead distribution on this
        # machine, i.e. measured latency minus the profiled compute time.
        calibration = replay(workloads.poisson(20, 10, seed=5))
        overhead = tuple(float(x) for x in np.maximum(0.0, calibration - compute))
        # The trace compared: simulated with the real profile and the calibrated overhead.
        trace = workloads.poisson(40, 15, seed=21)
        measured = replay(trace)
        sim = simulate(
            [SimModel("small", (variant,), trace, slo_ms=None)],  # type: ignore[arg-type]
            [WorkerView("w0", "cpu", "", 2, 1 << 34)],
            [(variant.id, "w0")],  # type: ignore[attr-defined]
            15,
            SimConfig(policy="static", overhead_samples_ms=overhead),
        )
        real_p99 = float(np.percentile(measured, 99))
        print(
            f"\nreal p50 {np.percentile(measured, 50):.2f} p99 {real_p99:.2f} ms; "
            f"simulated p50 {sim.p(50):.2f} p99 {sim.p(99):.2f} ms"
        )
        return real_p99, sim.p(99), _last_event_id(running) != before

    def within(real: float, simulated: float) -> bool:
        return abs(simulated - real) <= 5 or real / 2 <= simulated <= real * 2

    # The simulation is of a static configuration on a quiet machine; a run during which the planner
    # scaled this model (earlier tests leave instances it trims) or a neighbour's tests took the cores
    # is repeated, at most three times in all, every attempt printed.
    results = []
    for _ in range(3):
        results.append(attempt())
        if within(results[-1][0], results[-1][1]):
            break
    assert within(results[-1][0], results[-1][1]), results


def _last_event_id(running: RunningSuite) -> int:
    events = running.admin.get("/v1/events", params={"limit": 1, "model": "small"}).json()["events"]
    return int(events[0]["id"]) if events else 0


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
