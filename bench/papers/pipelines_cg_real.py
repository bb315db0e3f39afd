"""`bench/papers/pipelines.py --mode real-cg`: InferLine's comparison on the real system — the planner's plan
against the coarse-grained baselines CG-Mean and CG-Peak, on a model that costs real compute.

A fresh system (`start_suite`: embedded Redis, SQLite, two executors; model autoscaler and pipeline tuner
off) registers two models built here from scikit-learn's digits and fixed seeds: `heavy`, the
64-3072-3072-10 MLP of bench/common/peer_models.py, and `high`, a logistic regression on heavy's `logits` (its
input `scores`): is the digit 5 or more. The pipeline heavy → high takes the second stage only for rows
heavy calls 3-6 (s_m ≈ 0.4). Per CV (1, then 4) one gamma trace is replayed open-loop through the gateway
(bench/common/loadgen.py, one digits row a query) against each configuration in turn: **InferLine**, `POST
/v1/pipelines/{name}/plan` for the run's rate and CV; **CG-Mean / CG-Peak**, `coarse()` of
bench/papers/pipelines.py on the published profiles — every stage on its fastest variant (lowest batch-1 p50;
of equal ones the largest max batch), one batch for all (the largest profiled one whose summed p50 fits
half the SLO), whole-pipeline replicas for the trace's mean or peak 1 s rate, capped at the executors —
stored as the pipeline's plan through the registry, instances loaded on the executors. Each configuration
is loaded and active, pinned by the gateway's answers and alone (the rest drained) before its trace.
Costs are the planner's (`pipeline_cost`); the estimator's P99 on the same trace (2 ms a hop) is beside
the measured one. No tuner row: the tuner is switched on at the planner's start only, and would tune the
CG plans too.

    .venv/bin/python -m bench.papers.pipelines_cg_real --rate 100 --seconds 60

It writes docs/img/pipelines_cg_real.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import onnx
import onnxruntime as ort
import orjson
import redis.asyncio as aioredis
from onnx import TensorProto, helper, numpy_helper
from sklearn.linear_model import LogisticRegression

from bench.common import loadgen, peer_models
from bench.common.paths import ROOT
from bench.papers.pipelines_real import _settings
from infaas.clients.executor import ExecutorClient
from infaas.clients.registry import AsyncRegistryClient
from infaas.core import workloads
from infaas.core.config import Settings
from infaas.data import store
from infaas.schemas.pipelines import PipelinePlan, StagePlan
from infaas.schemas.variants import VariantProfile
from infaas_cli.launcher import start_suite
from services.planner.policies.pipeline_plan import pipeline_cost
from services.planner.policies.snapshot import cost_per_s
from services.planner.simulator.pipelines import StageConfig, StageShape, estimate, routes

SLO_MS = 50.0
GO_ON = [3, 4, 5, 6]
APP, PIPELINE = "digits", "sorter"
STAGES = (("heavy", "heavy"), ("high", "high"))  # (stage, model), root first; each stage is its model
SERVING = frozenset({"active", "overloaded", "interfered"})
OUT = ROOT / "docs" / "img" / "pipelines_cg_real.json"
JSON = {"content-type": "application/json"}
Config = dict[str, StageConfig]


def build_models(directory: Path) -> tuple[np.ndarray, np.ndarray]:
    """Write heavy.onnx / heavy.npz and high.onnx / high.npz (validation sets: `x`, `y`); return the
    validation rows and heavy's logits on them."""
    x_tr, x_val, y_tr, y_val = peer_models.split()
    heavy = peer_models.build(peer_models.SPECS["heavy"], x_tr, y_tr, peer_models.SEED + 1)
    onnx.save(heavy, directory / "heavy.onnx")
    np.savez(directory / "heavy.npz", x=x_val, y=y_val)
    session = ort.InferenceSession(str(directory / "heavy.onnx"), providers=["CPUExecutionProvider"])
    logits_tr, logits_val = (session.run(None, {"x": x})[0] for x in (x_tr, x_val))
    clf = LogisticRegression(max_iter=1000).fit(logits_tr, y_tr >= 5)
    weights = np.hstack([-clf.coef_.T, clf.coef_.T]).astype(np.float32) / 2
    bias = np.array([-clf.intercept_[0], clf.intercept_[0]], dtype=np.float32) / 2
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["scores", "weights"], ["raw"]),
            helper.make_node("Add", ["raw", "bias"], ["high"]),
        ],
        "high",
        [helper.make_tensor_value_info("scores", TensorProto.FLOAT, [None, 10])],
        [helper.make_tensor_value_info("high", TensorProto.FLOAT, [None, 2])],
        initializer=[numpy_helper.from_array(weights, "weights"), numpy_helper.from_array(bias, "bias")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    (directory / "high.onnx").write_bytes(model.SerializeToString())
    np.savez(directory / "high.npz", x=logits_val.astype(np.float32), y=(y_val >= 5).astype(np.int64))
    return x_val, np.asarray(logits_val)


def coarse(
    profiles: dict[str, list[VariantProfile]], scale: float, rate_qps: float, workers: int
) -> tuple[Config, int]:
    """The pipeline as one unit for `rate_qps`; also the replicas it takes without the cap at `workers`."""
    chosen = {
        stage: min(profiles[model], key=lambda v: (v.profiled_ms(1, tail=False), -v.max_batch))
        for stage, model in STAGES
    }
    sizes = set.intersection(*({p.batch for p in v.latencies} for v in chosen.values()))
    fits = [b for b in sizes if sum(v.profiled_ms(b, tail=False) for v in chosen.values()) <= SLO_MS / 2]
    batch = max(fits or [1])
    scales = {STAGES[0][0]: 1.0, STAGES[1][0]: scale}
    unit = min(batch / (v.profiled_ms(batch, tail=False) / 1000) / scales[s] for s, v in chosen.items())
    k = max(1, math.ceil(rate_qps / unit))
    return {s: StageConfig(v, batch, min(k, workers)) for s, v in chosen.items()}, k


def as_plan(configs: Config, scale: float, rate: float, cv: float, p99: float, reason: str) -> PipelinePlan:
    """A CG configuration as a stored plan, priced as the planner prices its own (`services/planner/
    pipelines.py` `as_plan`)."""
    stages = [
        StagePlan(
            stage=name,
            variant=c.variant.id,
            hardware=c.variant.hardware,
            batch=c.batch,
            replicas=c.replicas,
            scale=1.0 if name == STAGES[0][0] else scale,
            cost_per_s=c.replicas * cost_per_s(c.variant),
        )
        for name, c in configs.items()
    ]
    return PipelinePlan(
        stages=stages,
        cost_per_s=pipeline_cost(configs),
        predicted_p99_ms=p99,
        rate_qps=rate,
        cv=cv,
        feasible=True,
        reason=reason,
    )


async def _read(
    settings: Settings,
) -> tuple[Any, dict[str, list[tuple[str, str]]], dict[str, VariantProfile]]:
    """Live workers; instances as variant → [(worker id, state)]; the published profiles."""
    client = aioredis.Redis.from_url(settings.redis_url)
    try:
        workers, instances = await store.read_live(client, now=time.time(), ttl_s=settings.heartbeat_ttl_s)
        hosting: dict[str, list[tuple[str, str]]] = {}
        for i in instances:
            if i.state in SERVING or i.state == "loading":
                hosting.setdefault(i.variant_id, []).append((i.worker_id, i.state))
        return workers, hosting, dict(await store.read_variants(client))
    finally:
        await client.aclose()


async def _control(settings: Settings, wanted: dict[str, int], *, drain: bool) -> None:
    """Load each wanted variant up to its replicas on workers that do not host it, or (drain) take every
    instance beyond `wanted` out of service."""
    workers, hosting, _ = await _read(settings)
    url = {w.id: w.url for w in workers}
    executors = ExecutorClient(internal_key=settings.internal_key)
    try:
        for vid, have in hosting.items() if drain else ((v, hosting.get(v, [])) for v in wanted):
            ids = [w for w, _ in have]
            if drain:
                for wid in ids[wanted.get(vid, 0) :]:
                    await executors.drain_instance(url[wid], vid)
            else:
                for wid in [w.id for w in workers if w.id not in ids][: max(0, wanted[vid] - len(ids))]:
                    await executors.load(url[wid], vid)
    finally:
        await executors.aclose()


def _wait_serving(settings: Settings, wanted: dict[str, int], *, exact: bool) -> None:
    """Until every wanted variant is active on its replicas in the heartbeat (exact: and nothing else)."""
    deadline = time.monotonic() + 60
    while True:
        _, hosting, _ = asyncio.run(_read(settings))
        active = {v: sum(s in SERVING for _, s in h) for v, h in hosting.items()}
        ok = all(active.get(v, 0) >= k for v, k in wanted.items())
        if ok and (not exact or {v: len(h) for v, h in hosting.items()} == wanted):
            return
        assert time.monotonic() < deadline, f"instances {hosting} never became {wanted}"
        time.sleep(0.5)


def _variants(body: bytes) -> dict[str, str]:
    return {s["stage"]: s["variant"] for s in orjson.loads(body).get("stages", [])}


def apply(
    settings: Settings, client: httpx.Client, probe: bytes, cg: Config | None, plan: Any
) -> tuple[Config, Any]:
    """Put a configuration in service — CG (`cg`, `plan` its PipelinePlan) or InferLine (`plan` the
    body of POST .../plan) — and return it with its stored plan document."""
    if cg is not None:
        configs, wanted = cg, {c.variant.id: c.replicas for c in cg.values()}
        asyncio.run(_control(settings, wanted, drain=False))
        _wait_serving(settings, wanted, exact=False)  # loaded before queries pin them: no cold load

        async def store_plan() -> None:
            registry = AsyncRegistryClient(
                settings.service_url("registry"), internal_key=settings.internal_key
            )
            try:
                await registry.set_pipeline_plan(PIPELINE, plan)
            finally:
                await registry.aclose()

        asyncio.run(store_plan())
        doc = plan.model_dump(mode="json")
    else:
        response = client.post(f"/v1/pipelines/{PIPELINE}/plan", json=plan, timeout=300)
        assert response.status_code == 200, response.text
        doc = response.json()["plan"]
        assert doc["feasible"], doc["reason"]
        _, _, profiles = asyncio.run(_read(settings))
        configs = {
            s["stage"]: StageConfig(profiles[s["variant"]], s["batch"], s["replicas"]) for s in doc["stages"]
        }
        wanted = {c.variant.id: c.replicas for c in configs.values()}
        _wait_serving(settings, wanted, exact=False)
    # The gateway caches the pipeline (auth_cache_ttl_s) and the registry's PUT does not tell it: wait
    # until its answers pin the new variants.
    expect, deadline = {s: c.variant.id for s, c in configs.items()}, time.monotonic() + 60
    infer = f"/v1/pipelines/{PIPELINE}/infer"
    while _variants(client.post(infer, content=probe, headers=JSON).content) != expect:
        assert time.monotonic() < deadline, f"the gateway never pinned {expect}"
        time.sleep(0.3)
    asyncio.run(_control(settings, wanted, drain=True))
    _wait_serving(settings, wanted, exact=True)
    return configs, doc


def stats(result: Any, queries: int, configs: Config) -> dict[str, Any]:
    """Cost, latency and SLO attainment of one run (an error counts as a miss); answers' variants are
    checked against the configuration (asserted on the first five)."""
    lat = np.full(queries, np.nan)
    for i, outcome, ms in result.records:
        lat[i] = ms if outcome == 200 else np.nan
    ok, expect = lat[~np.isnan(lat)], {s: c.variant.id for s, c in configs.items()}
    seen = [_variants(b) for b in result.bodies]
    assert seen and all(v.items() <= expect.items() for v in seen[:5]), (seen[:5], expect)
    return {
        "cost_per_s": pipeline_cost(configs),
        "real_p50_ms": float(np.percentile(ok, 50)) if ok.size else math.nan,
        "real_p99_ms": float(np.percentile(ok, 99)) if ok.size else math.nan,
        "attainment": float((lat <= SLO_MS).mean()),
        "errors": result.errors(),
        "variant_mismatches": sum(not v.items() <= expect.items() for v in seen),
    }


def describe(configs: Config) -> str:
    """`stage=variant/b{batch}×{replicas}`, the variant without its model, runtime and hardware."""
    short = {
        s: c.variant.id.split(".", 1)[1].replace("onnxruntime-", "").replace("-cpu", "")
        for s, c in configs.items()
    }
    return " ".join(f"{s}={short[s]}/b{c.batch}×{c.replicas}" for s, c in configs.items())


def start(tmp: Path) -> tuple[Any, Settings, httpx.Client, str]:
    """A fresh suite with both models registered and profiled and the pipeline created."""
    settings = _settings(tmp)
    suite = start_suite(settings)
    url = f"http://127.0.0.1:{settings.gateway_port}"
    admin = {"Authorization": f"Bearer {settings.admin_key}"}
    key = httpx.post(f"{url}/v1/apps", json={"name": APP, "cache": False}, headers=admin).json()["api_key"]
    client = httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=120)
    for _, model in STAGES:
        files = {"file": (f"{model}.onnx", (tmp / f"{model}.onnx").read_bytes())}
        files["validation"] = (f"{model}.npz", (tmp / f"{model}.npz").read_bytes())
        meta = orjson.dumps({"name": model, "app": APP, "task": "classification"}).decode()
        response = client.post("/v1/models", files=files, data={"metadata": meta})
        assert response.status_code == 202, response.text
    deadline = time.monotonic() + 600
    for _, model in STAGES:
        while (status := client.get(f"/v1/models/{model}").json()["status"]) not in ("ready", "failed"):
            assert time.monotonic() < deadline, "profiling took over 600 s"
            time.sleep(1)
        assert status == "ready", f"{model}: {status}"
    when = {"output": "logits", "classes": GO_ON}
    edge = {"source": "heavy", "target": "high", "inputs": {"scores": "logits"}, "when": when}
    stages = [{"name": s, "model": m} for s, m in STAGES]
    spec = {"name": PIPELINE, "app": APP, "slo_ms": SLO_MS, "stages": stages, "edges": [edge]}
    response = client.post("/v1/pipelines", json=spec)
    assert response.status_code == 201, response.text
    return suite, settings, client, key


def run_cg_real(rate: float, seconds: float, seed: int) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="pipelines-cg-real-") as tmp:
        x_val, logits = build_models(Path(tmp))
        routed = np.isin(logits.argmax(axis=1), GO_ON)
        scale = float(routed.mean())
        t0 = time.monotonic()
        suite, settings, client, key = start(Path(tmp))
        try:
            print(f"suite up, models profiled in {time.monotonic() - t0:.0f} s", flush=True)
            bodies = [orjson.dumps({"inputs": {"x": x_val[i : i + 1].tolist()}}) for i in range(len(x_val))]
            probe = bodies[int(np.flatnonzero(routed)[0])]  # a row that reaches both stages
            for body in bodies[:100]:  # traffic before any plan: the planner's s_m are then observed
                response = client.post(f"/v1/pipelines/{PIPELINE}/infer", content=body, headers=JSON)
                assert response.status_code == 200, response.text
            workers, _, variants = asyncio.run(_read(settings))
            profiles = {m: [v for v in variants.values() if v.model == m] for _, m in STAGES}
            for v in sorted(variants.values(), key=lambda v: v.id):
                points = " ".join(f"b{p.batch}:{p.p50_ms:.2f}" for p in v.latencies)
                print(f"  {v.id} p50 {points} ms; ${cost_per_s(v):.2e}/s; dominated {v.dominated}")
            target = loadgen.Target.parse(str(client.base_url))
            headers = {"Authorization": f"Bearer {key}", **JSON}
            path = f"/v1/pipelines/{PIPELINE}/infer"
            requests = [loadgen.encode_request("POST", target.authority, path, b, headers) for b in bodies]
            shapes = [StageShape("heavy", None), StageShape("high", "heavy", scale=scale)]
            for cv in (1.0, 4.0):
                trace = workloads.gamma(rate, seconds, cv=cv, seed=seed)
                masks = routes(shapes, trace.size, seed=seed)
                mean, peak = trace.size / seconds, float(np.bincount(trace.astype(int)).max())
                systems: dict[str, tuple[Config | None, Any, int | None]] = {
                    "InferLine": (None, {"rate_qps": rate, "cv": cv}, None)
                }
                for label, r in (("CG-Mean", mean), ("CG-Peak", peak)):
                    unit, k = coarse(profiles, scale, r, len(workers))
                    est = estimate(shapes, unit, trace, masks, overhead_ms=2.0).p99
                    why = f"{label} (bench): fastest variants, whole-pipeline replicas for {r:.1f} q/s"
                    systems[label] = (unit, as_plan(unit, scale, r, cv, est, why), k)
                for label, (cg, plan, uncapped) in systems.items():
                    configs, doc = apply(settings, client, probe, cg, plan)
                    load0 = os.getloadavg()[0]
                    result = loadgen.run(
                        loadgen.run_open_loop(target, requests, trace.tolist(), connections=64)
                    )
                    row = {"cv": cv, "system": label, "plan": describe(configs)}
                    row |= stats(result, trace.size, configs) | {
                        "rate": rate,
                        "seconds": seconds,
                        "replicas_uncapped": uncapped,
                        "predicted_p99_ms": doc["predicted_p99_ms"] if cg is None else None,
                        "estimated_p99_ms": estimate(shapes, configs, trace, masks, overhead_ms=2.0).p99,
                        "trace_mean_qps": mean,
                        "trace_peak_1s_qps": peak,
                        "scale": scale,
                        "loadavg_1m": [load0, os.getloadavg()[0]],
                    }
                    print(row, flush=True)
                    rows.append(row)
                for row in rows[-len(systems) :]:  # CG-Peak is the last of them
                    row["cost_vs_cg_peak"] = row["cost_per_s"] / rows[-1]["cost_per_s"]
        finally:
            client.close()
            suite.stop()
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| arrivals | system | configuration (stage=variant/batch×replicas) | cost ($/s) | vs CG-Peak "
        "| real p50 / p99 (ms) | SLO attainment | errors | planner's P99 | est. P99 | load avg |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        predicted = "" if r["predicted_p99_ms"] is None else f"{r['predicted_p99_ms']:.1f}"
        capped = f" (needs ×{r['replicas_uncapped']})" if (r["replicas_uncapped"] or 0) > 2 else ""
        lines.append(
            f"| CV {r['cv']:g} | {r['system']} | {r['plan']}{capped} | {r['cost_per_s']:.2e} "
            f"| {r['cost_vs_cg_peak']:.2f}× | {r['real_p50_ms']:.1f} / {r['real_p99_ms']:.1f} "
            f"| {100 * r['attainment']:.1f} % | {sum(r['errors'].values())} | {predicted} "
            f"| {r['estimated_p99_ms']:.1f} | {r['loadavg_1m'][0]:.1f}–{r['loadavg_1m'][1]:.1f} |"
        )
    return "\n".join(lines)


def report(rate: float, seconds: float, seed: int, out: Path) -> None:
    rows = run_cg_real(rate, seconds, seed)
    print(table(rows))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(rows, indent=1))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rate", type=float, default=100.0, help="queries per second")
    parser.add_argument("--seconds", type=float, default=60.0, help="each configuration's trace length")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", type=Path, default=OUT, help="the JSON rows")
    args = parser.parse_args()
    report(args.rate, args.seconds, args.seed, args.out)


if __name__ == "__main__":
    main()
