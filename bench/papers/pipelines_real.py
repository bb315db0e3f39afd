"""`pipelines.py --mode real`: a planned pipeline on the real system, and the estimator's P99 next
to the measured one on the same trace.

A fresh system (`start_suite`: embedded Redis, SQLite, two executors; model autoscaler and pipeline tuner
off, so the plan is what serves) registers the two real models of the e2e tests (`tests/e2e/wine.py`: the
wine classifier and the grader that reads its logits), creates the pipeline wine → grader (the grader
only for the rows predicted class 0 or 2), plans it for the rate and CV of the run
(`POST /v1/pipelines/{name}/plan`) and replays gamma arrivals open-loop through the gateway
(bench/common/loadgen.py), each query one wine row, the rows in turn. Then the estimator runs the plan's
configuration over the same arrival times with the scale factor the run observed, with the default 2 ms
per stage hop, with the overhead measured in the run (each query's end-to-end latency minus the
compute the stages reported), and with the serving path as a queue (`estimate(path_servers=N)`: N FIFO
servers, the machine's cores, each query holds for its hops; the cost per hop from the CV 1 run's
fastest tenth of latency minus compute, kept for CV 4).
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import orjson
import redis.asyncio as aioredis

from infaas.core import workloads
from infaas.core.config import Settings
from infaas.data import store
from infaas.processes.suite import free_port
from infaas_cli.launcher import start_suite
from services.planner.simulator.pipelines import StageConfig, StageShape, estimate, routes
from tests.e2e.wine import register_grader, register_wine, wine_logits

SLO_MS = 50.0
GO_ON = [0, 2]


def _settings(var_dir: Path) -> Settings:
    ports = {f"{s}_port": free_port() for s in ("gateway", "registry", "scheduler", "planner")}
    executor = free_port()
    while True:
        import socket

        try:
            with socket.socket() as s:
                s.bind(("127.0.0.1", executor + 1))
            break
        except OSError:
            executor = free_port()
    return Settings(
        var_dir=var_dir,
        admin_key="adm_bench_pipelines",
        gateway_host="127.0.0.1",
        profiler_metrics_port=free_port(),
        profile_seconds_per_point=0.05,
        profile_min_iterations=20,
        executors=2,
        executor_port=executor,
        autoscale_policy="off",
        pipeline_tune_interval_s=0.0,
        **ports,  # type: ignore[arg-type]
    )


async def _profiles(redis_url: str) -> dict[str, Any]:
    client = aioredis.Redis.from_url(redis_url)
    try:
        return dict(await store.read_variants(client))
    finally:
        await client.aclose()


def run_real(rate: float, seconds: float, seed: int) -> list[dict[str, Any]]:
    from bench.common import loadgen

    out: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="pipelines-real-") as tmp:
        settings = _settings(Path(tmp))
        suite = start_suite(settings)
        url = f"http://127.0.0.1:{settings.gateway_port}"
        admin = httpx.Client(
            base_url=url, headers={"Authorization": f"Bearer {settings.admin_key}"}, timeout=120
        )
        try:
            key = admin.post("/v1/apps", json={"name": "cellar", "cache": False}).json()["api_key"]
            app_client = httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=120)
            assert register_wine(app_client, Path(tmp), app="cellar").status_code == 202
            assert register_grader(app_client, Path(tmp), app="cellar").status_code == 202
            deadline = time.monotonic() + 300
            for name in ("wine", "grader"):
                while admin.get(f"/v1/models/{name}").json()["status"] not in ("ready", "failed"):
                    assert time.monotonic() < deadline, "profiling took over 300 s"
                    time.sleep(1)
            spec = {
                "name": "tasting",
                "app": "cellar",
                "slo_ms": SLO_MS,
                "stages": [{"name": "wine", "model": "wine"}, {"name": "grader", "model": "grader"}],
                "edges": [
                    {
                        "source": "wine",
                        "target": "grader",
                        "inputs": {"scores": "logits"},
                        "when": {"output": "logits", "classes": GO_ON},
                    }
                ],
            }
            assert app_client.post("/v1/pipelines", json=spec).status_code == 201
            chem, color, logits = wine_logits(Path(tmp))
            bodies = [
                orjson.dumps(
                    {"inputs": {"chem": chem[i : i + 1].tolist(), "color": color[i : i + 1].tolist()}}
                )
                for i in range(len(chem))
            ]
            scale = float(np.isin(logits.argmax(axis=1), GO_ON).mean())
            target = loadgen.Target.parse(url)
            headers = {"Authorization": f"Bearer {key}", "content-type": "application/json"}
            requests = [
                loadgen.encode_request("POST", target.authority, "/v1/pipelines/tasting/infer", b, headers)
                for b in bodies
            ]
            hop_ms: float | None = None
            for cv in (1.0, 4.0):
                planned = app_client.post("/v1/pipelines/tasting/plan", json={"rate_qps": rate, "cv": cv})
                assert planned.status_code == 200, planned.text
                plan = planned.json()["plan"]
                trace = workloads.gamma(rate, seconds, cv=cv, seed=seed)
                result = loadgen.run(loadgen.run_open_loop(target, requests, trace.tolist(), connections=64))
                lat = np.full(trace.size, np.nan)
                for i, outcome, ms in result.records:
                    if isinstance(outcome, int) and outcome == 200:
                        lat[i] = ms
                computes = [
                    sum(s["latency_ms"]["compute"] for s in orjson.loads(b)["stages"]) for b in result.bodies
                ]
                ok = lat[~np.isnan(lat)]
                profiles = asyncio.run(_profiles(settings.redis_url))
                shapes = [StageShape("wine", None), StageShape("grader", "wine", scale=scale)]
                configs = {
                    s["stage"]: StageConfig(profiles[s["variant"]], s["batch"], s["replicas"])
                    for s in plan["stages"]
                }
                masks = routes(shapes, trace.size, seed=seed)
                est = estimate(shapes, configs, trace, masks, overhead_ms=2.0)
                overhead = max(0.0, float(np.median(ok)) - float(np.median(computes))) if ok.size else 2.0
                est_cal = estimate(shapes, configs, trace, masks, overhead_ms=overhead / 2)
                # The path as a queue: its service per hop is the unqueued cost, the fastest tenth of
                # the first (CV 1) run's queries (latency minus compute) over the hops a query takes on
                # average, kept for the burstier runs (a cost per hop does not change with the load);
                # its servers are the machine's cores, which the suite's processes share.
                if hop_ms is None:
                    floor = float(np.percentile(ok, 10)) - float(np.median(computes)) if ok.size else 2.0
                    hop_ms = max(0.0, floor) / (1.0 + scale)
                est_path = estimate(
                    shapes, configs, trace, masks, overhead_ms=hop_ms, path_servers=os.cpu_count() or 1
                )
                row = {
                    "cv": cv,
                    "rate": rate,
                    "plan": " ".join(
                        f"{s['stage']}={s['variant']}/b{s['batch']}x{s['replicas']}" for s in plan["stages"]
                    ),
                    "predicted_p99_ms": plan["predicted_p99_ms"],
                    "cost_per_s": plan["cost_per_s"],
                    "real_p50_ms": float(np.percentile(ok, 50)),
                    "real_p99_ms": float(np.percentile(ok, 99)),
                    "attainment": float((lat <= SLO_MS).mean()),
                    "errors": result.errors(),
                    "estimated_p99_ms": est.p99,
                    "estimated_p99_calibrated_ms": est_cal.p99,
                    "overhead_per_hop_ms": overhead / 2,
                    "estimated_p50_path_queue_ms": est_path.p(50),
                    "estimated_p99_path_queue_ms": est_path.p99,
                    "path_hop_ms": hop_ms,
                    "path_servers": os.cpu_count() or 1,
                    "loadavg_1m": os.getloadavg()[0],
                }
                print(row, flush=True)
                out.append(row)
        finally:
            admin.close()
            suite.stop()
    return out
