"""`bench/autoscale.py --mode real`: the §6.2 comparison on the real system with CPU variants.

For each policy a fresh system starts (`start_suite`: embedded Redis, SQLite, two executors), the demo
MLP `digits-mlp-small` is registered and profiled, and every instance starts the same way: the pinned
variant (ONNX Runtime basic, fp32, batch 1, the most threads: the costliest CPU form) loaded on both
executors — Clipper+'s "pre-loaded instances". Then each workload is replayed open-loop through the
gateway (bench/loadgen.py, raw keep-alive connections): `static` pins every query to that variant with
the planner off; `horizontal` pins it with the planner replicating/removing that variant only;
`greedy` (INFaaS) names only the model, so selection and the model autoscaler may move to other
variants. Instances are read from the metadata store every second and priced by their profile ($/s),
so the cost is what the instances would cost on AWS at the configured prices.
"""

from __future__ import annotations

import asyncio
import math
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import orjson
import redis.asyncio as aioredis

from infaas import store, workloads
from infaas.config import Settings
from infaas.demo_models import build_demo_models
from infaas.launcher import free_port, start_suite
from services.planner.scaling import cost_per_s

ROOT = Path(__file__).resolve().parents[1]
SLO_MS = 20.0


def _settings(var_dir: Path, policy: str) -> Settings:
    ports = {f"{s}_port": free_port() for s in ("gateway", "registry", "scheduler", "planner")}
    executor = free_port()
    while True:
        try:
            import socket

            with socket.socket() as s:
                s.bind(("127.0.0.1", executor + 1))
            break
        except OSError:
            executor = free_port()
    return Settings(
        var_dir=var_dir,
        admin_key="adm_bench_autoscale",
        gateway_host="127.0.0.1",
        profiler_metrics_port=free_port(),
        profile_seconds_per_point=0.05,
        profile_min_iterations=20,
        executors=2,
        executor_port=executor,
        autoscale_policy="off" if policy == "static" else policy,
        scale_down_min_s=5.0,
        **ports,  # type: ignore[arg-type]
    )


def _workloads(seconds: float) -> dict[str, np.ndarray]:
    return {
        "flat low (4 QPS)": workloads.flat_rates(4, seconds),
        "steady high (150→170 QPS)": workloads.ramp_rates(150, 170, seconds),
        "fluctuating (4–80 QPS)": workloads.fluctuating_rates(4, 80, seconds, period_s=seconds / 2),
    }


async def _sample_cost(
    redis_url: str, profiles: dict[str, Any], stop: asyncio.Event, out: list[float]
) -> None:
    client = aioredis.Redis.from_url(redis_url)
    try:
        while not stop.is_set():
            _, instances = await store.read_live(client, now=time.time(), ttl_s=5)
            out.append(sum(cost_per_s(profiles[i.variant_id]) for i in instances if i.variant_id in profiles))
            await asyncio.sleep(1.0)
    finally:
        await client.aclose()


def run_real(seconds: float, seed: int) -> list[dict[str, object]]:
    import loadgen  # bench/ is on sys.path when run as bench/autoscale.py

    small = build_demo_models(ROOT / "var" / "demo-models", names=["digits-mlp-small"])[0]
    rows: list[dict[str, object]] = []
    for policy in ("greedy", "static", "horizontal"):
        with tempfile.TemporaryDirectory(prefix=f"autoscale-{policy}-") as tmp:
            settings = _settings(Path(tmp), policy)
            suite = start_suite(settings)
            url = f"http://127.0.0.1:{settings.gateway_port}"
            admin = httpx.Client(
                base_url=url, headers={"Authorization": f"Bearer {settings.admin_key}"}, timeout=60
            )
            try:
                key = admin.post(
                    "/v1/apps",
                    json={"name": "bench", "default_latency_ms": SLO_MS, "slo_policy": "best_effort"},
                ).json()["api_key"]
                meta = orjson.dumps({"name": "small", "app": "bench", "task": "classification"}).decode()
                accepted = admin.post(
                    "/v1/models",
                    files={
                        "file": ("m.onnx", small.onnx_path.read_bytes()),
                        "validation": ("v.npz", small.validation_path.read_bytes()),
                    },
                    data={"metadata": meta},
                )
                assert accepted.status_code == 202, accepted.text
                deadline = time.monotonic() + 300
                while admin.get("/v1/models/small").json()["status"] not in ("ready", "failed"):
                    assert time.monotonic() < deadline, "profiling took over 300 s"
                    time.sleep(1)
                profiles = asyncio.run(_profiles(settings.redis_url))
                # The same form in every run (dominance can differ between profiling runs): ONNX Runtime
                # basic graph optimization, fp32, batch 1, the most threads — the costliest CPU form.
                b1 = [
                    v
                    for v in profiles.values()
                    if v.model == "small"
                    and v.max_batch == 1
                    and v.optimization == "basic"
                    and v.precision == "fp32"
                ]
                pinned = max(b1, key=lambda v: v.threads)
                for port in (settings.executor_port, settings.executor_port + 1):
                    httpx.post(
                        f"http://127.0.0.1:{port}/v1/instances", json={"variant": pinned.id}, timeout=60
                    )
                body: dict[str, object] = {"inputs": [[0.5] * 64]}
                if policy != "greedy":
                    body["variant"] = pinned.id
                target = loadgen.Target.parse(url)
                for w_i, (load, rates) in enumerate(_workloads(seconds).items()):
                    trace = workloads.arrivals(rates, seed=seed + w_i)
                    request = loadgen.encode_request(
                        "POST",
                        target.authority,
                        "/v1/models/small/infer",
                        orjson.dumps(body),
                        {"Authorization": f"Bearer {key}", "content-type": "application/json"},
                    )
                    costs: list[float] = []
                    result = loadgen.run(
                        _replay(loadgen, target, request, trace, settings.redis_url, profiles, costs)
                    )
                    lat = np.full(len(trace), math.nan)
                    ok = np.zeros(len(trace), dtype=bool)
                    for i, outcome, ms in result.records:
                        lat[i] = ms
                        ok[i] = isinstance(outcome, int) and 200 <= outcome < 300
                    bad = ~ok | (lat > SLO_MS)
                    rows.append(
                        {
                            "policy": policy,
                            "load": load,
                            "offered": len(trace) / seconds,
                            "throughput": ok.sum() / seconds,
                            "violations": float(bad.mean()),
                            "p99_ms": float(np.nanpercentile(lat[ok], 99)) if ok.any() else math.nan,
                            "cost_per_hour": float(np.mean(costs)) * 3600 if costs else math.nan,
                            "pinned": pinned.id,
                        }
                    )
                    print(rows[-1], flush=True)
            finally:
                admin.close()
                suite.stop()
    print(_table(rows))
    return rows


async def _profiles(redis_url: str) -> dict[str, Any]:
    client = aioredis.Redis.from_url(redis_url)
    try:
        return dict(await store.read_variants(client))
    finally:
        await client.aclose()


async def _replay(
    loadgen: Any,
    target: Any,
    request: bytes,
    trace: np.ndarray,
    redis_url: str,
    profiles: dict[str, Any],
    costs: list[float],
) -> Any:
    stop = asyncio.Event()
    sampler = asyncio.create_task(_sample_cost(redis_url, profiles, stop, costs))
    try:
        return await loadgen.run_open_loop(target, [request], list(trace), connections=16, keep_bodies=False)
    finally:
        stop.set()
        await sampler


def _table(rows: list[dict[str, object]]) -> str:
    lines = [
        "| load | policy | offered/s | served/s | SLO violations | p99 ms | cost $/h | cost vs INFaaS |",
        "|---|---|---|---|---|---|---|---|",
    ]
    base = {r["load"]: r["cost_per_hour"] for r in rows if r["policy"] == "greedy"}
    for r in rows:
        ratio = float(r["cost_per_hour"]) / float(base[r["load"]])  # type: ignore[arg-type]
        lines.append(
            f"| {r['load']} | {r['policy']} | {r['offered']:.1f} | {r['throughput']:.1f} | "
            f"{r['violations']:.1%} | {r['p99_ms']:.1f} | {r['cost_per_hour']:.4f} | {ratio:.2f}× |"
        )
    return "\n".join(lines)
