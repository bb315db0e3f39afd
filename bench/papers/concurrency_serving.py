"""An instance's concurrency (SERF's c) through the real product, side by side in one run: the heavy MLP
of the peer comparison (bench/common/peer_models.py: 64-3072-3072-10, one intra-op thread) served by one
executor, open-loop Poisson arrivals over HTTP at each `--rates`, the instance at c = 1 and at c = 2
(`POST /v1/instances/{variant}/concurrency`, what the planner's concurrency step sends), alternating
rounds so that drift in the machine's load hits both. The model autoscaler is off: the instance and its
concurrency are what the bench sets. Per rate and c: answered, errors, p50/p99, and what the planner's
rule (`concurrency_for`, the variant's concurrency profile, a 50 ms SLO) would choose at that rate.

    .venv/bin/python -m bench.papers.concurrency_serving --rates 60 120 180 --seconds 15 --rounds 2
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import orjson

from bench.common import loadgen, peer_models
from bench.common.paths import ROOT
from infaas.clients.executor import ExecutorClient
from infaas.core import workloads
from infaas.core.config import Settings
from infaas.policy.configuration import concurrency_for
from infaas.processes.suite import free_port
from infaas_cli.launcher import start_suite

APP, MODEL, SLO_MS = "bench-conc", "heavy", 50.0


def settings(var_dir: Path) -> Settings:
    ports = {f"{s}_port": free_port() for s in ("gateway", "registry", "scheduler", "planner")}
    return Settings(
        var_dir=var_dir,
        admin_key="adm_bench_concurrency",
        internal_key="int_bench_concurrency",
        gateway_host="127.0.0.1",
        profiler_metrics_port=free_port(),
        executors=1,
        executor_port=free_port(consecutive=2),
        autoscale_policy="off",
        **ports,  # type: ignore[arg-type]
    )


def register(http: httpx.Client, models_dir: Path) -> str:
    created = http.post(
        "/v1/apps",
        json={"name": APP, "cache": False, "default_latency_ms": SLO_MS, "slo_policy": "best_effort"},
    )
    created.raise_for_status()
    key = str(created.json()["api_key"])
    with (
        (models_dir / f"{MODEL}.onnx").open("rb") as f,
        (models_dir / "digits-validation.npz").open("rb") as v,
    ):
        http.post(
            "/v1/models",
            files={"file": (f"{MODEL}.onnx", f), "validation": ("validation.npz", v)},
            data={"metadata": orjson.dumps({"name": MODEL, "app": APP, "task": "classification"}).decode()},
        ).raise_for_status()
    deadline = time.monotonic() + 900
    while (status := http.get(f"/v1/models/{MODEL}").json()["status"]) != "ready":
        if status == "failed" or time.monotonic() > deadline:
            raise RuntimeError(f"profiling {MODEL}: {status}")
        time.sleep(2)
    return key


def measure(
    url: str, key: str, vid: str, rows: np.ndarray, rate: float, seconds: float, seed: int
) -> dict[str, Any]:
    target = loadgen.Target.parse(url)
    headers = {"Authorization": f"Bearer {key}", "content-type": "application/json"}
    bodies = [orjson.dumps({"inputs": {"x": [r.tolist()]}, "variant": vid}) for r in rows[:256]]
    requests = [
        loadgen.encode_request("POST", target.authority, f"/v1/models/{MODEL}/infer", b, headers)
        for b in bodies
    ]
    trace = workloads.gamma(rate, seconds, cv=1.0, seed=seed)
    result = loadgen.run(loadgen.run_open_loop(target, requests, trace.tolist(), connections=128))
    ok = np.array([ms for _, outcome, ms in result.records if outcome == 200])
    return {
        "offered": int(trace.size),
        "answered": int(ok.size),
        "errors": result.errors(),
        "p50_ms": round(float(np.percentile(ok, 50)), 2) if ok.size else None,
        "p99_ms": round(float(np.percentile(ok, 99)), 2) if ok.size else None,
    }


async def set_concurrency(cfg: Settings, url: str, vid: str, c: int) -> None:
    executors = ExecutorClient(internal_key=cfg.internal_key)
    try:
        await executors.set_concurrency(url, vid, c)
    finally:
        await executors.aclose()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rates", type=float, nargs="+", default=[60.0, 120.0, 180.0])
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "img" / "concurrency_serving.json")
    args = parser.parse_args()
    models_dir = ROOT / "var" / "bench-concurrency" / "models"
    peer_models.build_all(models_dir)
    rows = np.load(models_dir / "digits-validation.npz")["x"].astype(np.float32)
    with tempfile.TemporaryDirectory() as tmp:
        cfg = settings(Path(tmp))
        suite = start_suite(cfg)
        url = f"http://127.0.0.1:{cfg.gateway_port}"
        admin = httpx.Client(base_url=url, headers={"Authorization": f"Bearer {cfg.admin_key}"}, timeout=120)
        try:
            key = register(admin, models_dir)
            # The fp32 ONNX Runtime variant on one thread (the model as registered; a lossy int8 form
            # runs in a fraction of it): named-model queries pinned to it.
            listed = admin.get(f"/v1/models/{MODEL}/variants", params={"status": "ready"}).json()
            ready = listed["variants"] if isinstance(listed, dict) else listed
            profile = max(
                (
                    v
                    for v in ready
                    if v["precision"] == "fp32" and v["threads"] == 1 and v["runtime"] == "onnxruntime"
                ),
                key=lambda v: (v["optimization"] == "basic", v["max_batch"]),
            )
            vid = str(profile["id"])
            first = httpx.post(
                f"{url}/v1/models/{MODEL}/infer",
                headers={"Authorization": f"Bearer {key}"},
                json={"inputs": {"x": [rows[0].tolist()]}, "variant": vid},
                timeout=120,
            )
            first.raise_for_status()
            (worker,) = [w for w in admin.get("/v1/workers").json() if vid in w["instances"]]
            means = [
                p.get("mean_ms") or p["p50_ms"]
                for p in sorted(profile["interference"] or [], key=lambda p: p["concurrency"])
            ]
            print(
                f"serving {vid} on {worker['id']}; batch-1 mean at c=1..: {[round(m, 2) for m in means]} ms",
                flush=True,
            )
            results: list[dict[str, Any]] = []
            for rate in args.rates:
                choice = concurrency_for(means, rate, SLO_MS, current=1)
                for r in range(args.rounds):
                    for c in (1, 2) if r % 2 == 0 else (2, 1):
                        asyncio.run(set_concurrency(cfg, worker["url"], vid, c))
                        time.sleep(1.0)
                        row = {
                            "rate": rate,
                            "concurrency": c,
                            "round": r,
                            **measure(url, key, vid, rows, rate, args.seconds, seed=r),
                        }
                        row["rule_choice"] = choice.concurrency if choice else None
                        row["loadavg_1m"] = round(os.getloadavg()[0], 2)
                        print(row, flush=True)
                        results.append(row)
        finally:
            admin.close()
            suite.stop()
    doc = {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="minutes"),
        "machine": f"{os.cpu_count()} vCPU",
        "variant": vid,
        "concurrency_mean_ms": means,
        "slo_ms": SLO_MS,
        "results": results,
    }
    args.out.write_text(json.dumps(doc, indent=1))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
