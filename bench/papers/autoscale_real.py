"""`bench/papers/autoscale.py --mode real`: the §6.2 comparison on the real system with CPU variants.

For each policy a fresh system starts (`start_suite`: embedded Redis, SQLite, two executors), the demo
MLP `digits-mlp-small` is registered (its app with the prediction cache off) and profiled, and every
policy starts the same way: the pinned variant (ONNX Runtime basic, fp32, batch 1, the most threads: the
costliest CPU form) loaded on both executors — Clipper+'s "pre-loaded instances". Then each workload is
replayed open-loop through the gateway (bench/common/loadgen.py, raw keep-alive connections): `static` pins
every query to that variant with the planner off; `horizontal` pins it with the planner
replicating/removing that variant only; `greedy` (INFaaS) names only the model, so selection and the
model autoscaler may move to other variants. Instances are read from the metadata store every second and
priced by their profile ($/s), so the cost is what the instances would cost on AWS at the configured
prices.

Every run keeps per-second series — queries offered and served, SLO violations (each query counted in
the second it was due, as the simulator counts them) and the instances' $/h sampled mid-second —
which `save` writes to docs/img/autoscale_real.json and bench/papers/autoscale.py plots.
"""

from __future__ import annotations

import asyncio
import math
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import orjson
import redis.asyncio as aioredis

from bench.common.paths import ROOT
from infaas.core import workloads
from infaas.core.config import Settings
from infaas.core.credentials import INTERNAL_HEADER
from infaas.data import store
from infaas.processes.suite import free_port
from infaas_cli.demo_models import build_demo_models
from infaas_cli.launcher import start_suite
from services.planner.policies.snapshot import cost_per_s

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


@dataclass(frozen=True)
class Run:
    """One (load, policy) replay; second k of each series covers [k, k + 1) s of the trace."""

    policy: str
    load: str
    pinned: str
    t: np.ndarray
    offered: np.ndarray  # queries due in each second
    served: np.ndarray  # of those, answered 2xx (late ones included)
    violations: np.ndarray  # of those, failed, unanswered or over the SLO
    cost_per_hour: np.ndarray  # the live instances' $/h, sampled at k + 0.5 s
    instances: list[list[str]]  # the live instances' variants at each sample: what the cost is made of
    p99_ms: float
    errors: dict[str, int]  # outcome → count, for all but 2xx: a failed run says why
    error_bodies: dict[str, str]  # the first body of each non-2xx status (str keys: JSON)
    loadavg_1m: float  # after the run: other work on this 2-core machine moves the tail latencies

    @property
    def row(self) -> dict[str, object]:
        seconds = len(self.t)
        offered = int(self.offered.sum())
        return {
            "policy": self.policy,
            "load": self.load,
            "offered": offered / seconds,
            "throughput": float(self.served.sum()) / seconds,
            "violations": float(self.violations.sum()) / offered if offered else math.nan,
            "p99_ms": self.p99_ms,
            "cost_per_hour": float(self.cost_per_hour.mean()),
            "pinned": self.pinned,
        }


async def _sample_cost(
    redis_url: str,
    profiles: dict[str, Any],
    start: float,
    n: int,
    costs: list[float],
    instances: list[list[str]],
) -> None:
    """Sample k at `start` + k + 0.5 s on the perf_counter clock, for k < n: on a fixed grid rather than
    a sleep of 1 s after each read, so the samples stay in the seconds they are binned into however long
    the reads take, and mid-second, away from the edges of a bin."""
    client = aioredis.Redis.from_url(redis_url)
    try:
        for k in range(n):
            await asyncio.sleep(max(0.0, start + k + 0.5 - time.perf_counter()))
            _, live = await store.read_live(client, now=time.time(), ttl_s=5)
            priced = [i.variant_id for i in live if i.variant_id in profiles]
            costs.append(3600 * sum(cost_per_s(profiles[v]) for v in priced))
            instances.append(sorted(priced))
    finally:
        await client.aclose()


def run_real(seconds: float, seed: int) -> list[Run]:
    from bench.common import loadgen

    small = build_demo_models(ROOT / "var" / "demo-models", names=["digits-mlp-small"])[0]
    runs: list[Run] = []
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
                    # Cache off: every query carries the same input, so with the prediction cache on all
                    # but the first would be answered by the scheduler without reaching an instance, and
                    # throughput and violations would measure the cache, not the policies' instances.
                    json={
                        "name": "bench",
                        "default_latency_ms": SLO_MS,
                        "slo_policy": "best_effort",
                        "cache": False,
                    },
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
                for port in settings.executor_ports(2):
                    httpx.post(
                        f"http://127.0.0.1:{port}/v1/instances",
                        json={"variant": pinned.id},
                        headers={INTERNAL_HEADER: settings.internal_key},
                        timeout=60,
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
                    result, costs, instances = loadgen.run(
                        _replay(loadgen, target, request, trace, len(rates), settings.redis_url, profiles)
                    )
                    lat = np.full(len(trace), math.nan)
                    ok = np.zeros(len(trace), dtype=bool)
                    for i, outcome, ms in result.records:
                        lat[i] = ms
                        ok[i] = isinstance(outcome, int) and 200 <= outcome < 300
                    bad = ~ok | (lat > SLO_MS)  # NaN (unanswered) is never > SLO but is never ok either
                    due = np.minimum(trace.astype(np.int64), len(rates) - 1)
                    runs.append(
                        Run(
                            policy=policy,
                            load=load,
                            pinned=pinned.id,
                            t=np.arange(len(rates), dtype=np.float64),
                            offered=np.bincount(due, minlength=len(rates)),
                            served=np.bincount(due[ok], minlength=len(rates)),
                            violations=np.bincount(due[bad], minlength=len(rates)),
                            cost_per_hour=np.array(costs),
                            instances=instances,
                            p99_ms=float(np.nanpercentile(lat[ok], 99)) if ok.any() else math.nan,
                            errors=result.errors(),
                            error_bodies={
                                str(k): v.decode(errors="replace") for k, v in result.error_bodies.items()
                            },
                            loadavg_1m=os.getloadavg()[0],
                        )
                    )
                    run = runs[-1]
                    print(run.row, run.errors, run.error_bodies, f"load {run.loadavg_1m:.1f}", flush=True)
            finally:
                admin.close()
                suite.stop()
    print(_table(runs))
    return runs


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
    n: int,
    redis_url: str,
    profiles: dict[str, Any],
) -> tuple[Any, list[float], list[list[str]]]:
    """The trace's load generator result, and the instances' $/h and variants at each second."""
    costs: list[float] = []
    instances: list[list[str]] = []
    # The sampler's clock starts here; the load generator's a few milliseconds later, once its
    # connections are open — well inside the half second that separates a sample from a bin's edge.
    start = time.perf_counter()
    sampler = asyncio.create_task(_sample_cost(redis_url, profiles, start, n, costs, instances))
    try:
        result = await loadgen.run_open_loop(
            target, [request], list(trace), connections=16, keep_bodies=False
        )
    except BaseException:
        sampler.cancel()
        raise
    await sampler  # every second of the trace gets its sample, even when the last answer came early
    return result, costs, instances


def _table(runs: list[Run]) -> str:
    lines = [
        "| load | policy | offered/s | served/s | SLO violations | p99 ms | cost $/h | cost vs INFaaS |",
        "|---|---|---|---|---|---|---|---|",
    ]
    rows = [r.row for r in runs]
    base = {r["load"]: r["cost_per_hour"] for r in rows if r["policy"] == "greedy"}
    for r in rows:
        ratio = float(r["cost_per_hour"]) / float(base[r["load"]])  # type: ignore[arg-type]
        lines.append(
            f"| {r['load']} | {r['policy']} | {r['offered']:.1f} | {r['throughput']:.1f} | "
            f"{r['violations']:.1%} | {r['p99_ms']:.1f} | {r['cost_per_hour']:.4f} | {ratio:.2f}× |"
        )
    return "\n".join(lines)


def save(runs: list[Run], path: Path, seconds: float, seed: int) -> Path:
    """The per-second series of every run, with what is needed to read them."""
    doc = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "command": f"bench/papers/autoscale.py --mode real --seconds {seconds:g} --seed {seed}",
        "cpus": os.cpu_count(),
        "slo_ms": SLO_MS,
        "series": "second k = [k, k+1) s of the trace; queries counted in the second they were due; "
        "cost_per_hour and instances sampled at k + 0.5 s",
        "table": [r.row for r in runs],
        "runs": [
            {
                "load": r.load,
                "policy": r.policy,
                "errors": r.errors,
                "error_bodies": r.error_bodies,
                "loadavg_1m": r.loadavg_1m,
                "offered": r.offered,
                "served": r.served,
                "violations": r.violations,
                "cost_per_hour": r.cost_per_hour,
                "instances": r.instances,
            }
            for r in runs
        ],
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(orjson.dumps(doc, option=orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_INDENT_2))
    return path
