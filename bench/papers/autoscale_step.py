"""Autoscaling under a load step: 0.5× → 3× → 0.5× of one worker's capacity, the autoscalers on, two
builds side by side — goodput, SLO attainment of admitted queries, shed share, time to scale up and down,
and cost, per second and per phase.

The model is bench/diagnostics/overload.py's wide MLP (64 → 4096 → 4096 → 4 on `make_classification`, 128-row
queries). Each build runs in its own process with its own code (`--before DIR`: a git worktree of an older
commit): a fresh system (`start_suite`: embedded Redis, SQLite) with one executor, the local worker
provider allowed a second (`max_workers` 2, one core each: this machine has two), the model autoscaler
`greedy`, the app's prediction cache off and its SLO policy `error`. Queries name the model (no variant
pinned) with a latency SLO of 150 ms (`SLO_MS`: more when the profile says one worker cannot meet it;
both builds get the same) and an accuracy equal to the fp32 variants' (so both builds choose among the
same variants). One worker's capacity is measured first, on a suite of its own with the autoscalers off,
as `bench.diagnostics.overload` measures it (one fp32, one-thread, largest-batch instance pinned, a short
run far beyond it); both builds are then offered the same rates from a fresh start.

Every second the live instances (variant and worker) are read from the metadata store and priced by their
profile ($/h at the configured prices); the planner's events give the decisions and their reasons.
The first 30 s at 0.5× let each build settle (its first queries find nothing loaded). Time to scale up:
from the step to 3× until more instances serve than just before it (the first scale-up decision's time is
reported too); time to scale down: from the step back to 0.5× until no more instances serve than just
before the step up ("never" within the 60 s: the instances stayed).

Usage:
    git worktree add /tmp/f-before <commit>
    .venv/bin/python -m bench.papers.autoscale_step --before /tmp/f-before --markdown \
        --json docs/img/autoscale_step.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench.common.paths import ROOT

PHASES = ((0.5, 30.0), (3.0, 40.0), (0.5, 60.0))  # (× one worker's capacity, seconds)
SLO_MS = 150.0
"""The SLO unless the profile says one worker cannot meet it for a 128-row query on this (possibly busy)
machine: then 2.5× the profiled p99 of that query, so the step measures scaling, not an unmeetable SLO."""
SCALE_ACTIONS = ("replicate", "upgrade", "request_worker", "add_worker", "load", "migrate")
SHRINK_ACTIONS = ("remove", "downgrade", "drain_worker")


async def _sample(redis_url: str, profiles: dict[str, Any], start: float, n: int, out: list[Any]) -> None:
    """At start + k + 0.5 s for k < n: the live instances (variant@worker), workers and their $/h."""
    import redis.asyncio as aioredis

    from infaas.data import store
    from services.planner.policies.snapshot import cost_per_s

    client = aioredis.Redis.from_url(redis_url)
    try:
        for k in range(n):
            await asyncio.sleep(max(0.0, start + k + 0.5 - time.perf_counter()))
            workers, live = await store.read_live(client, now=time.time(), ttl_s=5)
            priced = [i for i in live if i.variant_id in profiles]
            out.append(
                {
                    "instances": sorted(f"{i.variant_id}@{i.worker_id}" for i in priced),
                    "workers": len(workers),
                    "cost_per_hour": 3600 * sum(cost_per_s(profiles[i.variant_id]) for i in priced),
                }
            )
    finally:
        await client.aclose()


def _series(result: Any, trace: np.ndarray, seconds: int, slo_ms: float) -> dict[str, np.ndarray]:
    status = np.zeros(len(trace), dtype=np.int64)  # 0: timeout, not sent or no connection
    lat = np.full(len(trace), math.nan)
    for i, outcome, ms in result.records:
        status[i] = outcome if isinstance(outcome, int) else 0
        lat[i] = ms
    due = np.minimum(trace.astype(np.int64), seconds - 1)

    def per_second(mask: np.ndarray) -> np.ndarray:
        return np.bincount(due[mask], minlength=seconds)

    return {
        "offered": per_second(np.ones(len(trace), dtype=bool)),
        "good": per_second((status == 200) & (lat <= slo_ms)),
        "admitted": per_second(np.isin(status, (200, 504))),
        "shed": per_second(np.isin(status, (429, 503))),
        "other": per_second(~np.isin(status, (200, 504, 429, 503))),
        "p99_ms": np.array(
            [
                float(np.nanpercentile(lat[(due == s) & (status == 200)], 99))
                if ((due == s) & (status == 200)).any()
                else math.nan
                for s in range(seconds)
            ]
        ),
    }


def _phase_rows(series: dict[str, np.ndarray], samples: list[Any]) -> list[dict[str, Any]]:
    rows, t0 = [], 0
    for factor, secs in PHASES:
        sl = slice(t0, t0 + int(secs))
        offered, good = int(series["offered"][sl].sum()), int(series["good"][sl].sum())
        admitted, shed = int(series["admitted"][sl].sum()), int(series["shed"][sl].sum())
        rows.append(
            {
                "phase": f"{factor:g}× ({t0}–{t0 + int(secs)} s)",
                "offered_qps": round(offered / secs, 1),
                "goodput_qps": round(good / secs, 1),
                "attainment": round(good / max(1, admitted), 3),
                "shed_share": round(shed / max(1, offered), 3),
                "other": int(series["other"][sl].sum()),
                "instances_mean": round(float(np.mean([len(s["instances"]) for s in samples[sl]])), 2),
                "cost_per_hour": round(float(np.mean([s["cost_per_hour"] for s in samples[sl]])), 4),
            }
        )
        t0 += int(secs)
    return rows


def _scale_times(samples: list[Any], events: list[dict[str, Any]], t_start: float) -> dict[str, Any]:
    up_at = int(PHASES[0][1])
    down_at = up_at + int(PHASES[1][1])
    before = len(samples[up_at - 1]["instances"])
    grown = next((k for k in range(up_at, down_at) if len(samples[k]["instances"]) > before), None)
    peak = max(len(s["instances"]) for s in samples[up_at:down_at])
    shrunk = next((k for k in range(down_at, len(samples)) if len(samples[k]["instances"]) <= before), None)
    if grown is None:
        shrunk = None  # nothing to scale down from
    decided = [e for e in events if e["outcome"] == "decided" and e["t"] >= up_at]
    first_up = next((e for e in decided if e["action"] in SCALE_ACTIONS and e["t"] < down_at), None)
    shrink_under_load = [e for e in decided if e["action"] in SHRINK_ACTIONS and e["t"] < down_at]
    return {
        "instances_before_step": before,
        "instances_peak_at_3x": peak,
        "scale_up_s": None if grown is None else grown + 0.5 - up_at,
        "first_scale_decision_s": None if first_up is None else round(first_up["t"] - up_at, 1),
        "first_scale_decision": None if first_up is None else f"{first_up['action']}: {first_up['reason']}",
        "scale_down_s": None if shrunk is None else shrunk + 0.5 - down_at,
        "shrinks_during_3x": len(shrink_under_load),
        "cost_dollars": round(sum(s["cost_per_hour"] for s in samples) / 3600, 6),
        "t_start_epoch": t_start,
    }


def worker(args: argparse.Namespace) -> dict[str, Any]:
    import httpx
    import orjson
    import redis.asyncio as aioredis

    import services.scheduler.dispatch as dispatch_module
    from bench.common import loadgen
    from bench.diagnostics.overload import register_wide
    from infaas.core import workloads
    from infaas.core.config import Settings
    from infaas.core.credentials import INTERNAL_HEADER
    from infaas.data import store
    from infaas.processes.suite import free_port
    from infaas_cli.launcher import start_suite

    model_dir = Path(args.model_dir)
    measure = args.capacity is None
    with tempfile.TemporaryDirectory(prefix="autoscale-step-") as tmp:
        ports = {f"{s}_port": free_port() for s in ("gateway", "registry", "scheduler", "planner")}
        settings = Settings(
            var_dir=Path(tmp),
            admin_key="adm_bench_autoscale_step",
            gateway_host="127.0.0.1",
            profiler_metrics_port=free_port(),
            profile_seconds_per_point=0.05,
            profile_min_iterations=10,
            executors=1,
            executor_port=free_port(),
            # Measuring one worker's capacity: nothing else may add capacity (a burst would start a
            # second worker). The step itself: the autoscalers on.
            autoscale_policy="off" if measure else "greedy",
            worker_provider="none" if measure else "local",
            min_workers=1,
            max_workers=2,
            worker_idle_s=20.0,
            **ports,  # type: ignore[arg-type]
        )
        suite = start_suite(settings)
        url = f"http://127.0.0.1:{settings.gateway_port}"
        admin = httpx.Client(
            base_url=url, headers={"Authorization": f"Bearer {settings.admin_key}"}, timeout=120
        )
        try:
            app = {"name": "bench", "slo_policy": "error", "cache": False}
            key = admin.post("/v1/apps", json=app).json()["api_key"]
            variants = register_wide(admin, model_dir)
            fp32 = [v for v in variants if v["precision"] == "fp32"]
            accuracy = min(v["accuracy"] for v in fp32)
            one = max((v for v in fp32 if v["threads"] == 1), key=lambda v: v["max_batch"])
            slo = args.slo
            if slo is None:
                p99 = max(p["p99_ms"] for p in one["latency"] if p["batch"] == one["max_batch"])
                slo = max(SLO_MS, round(2.5 * (128 / one["max_batch"]) * p99))
            admin.patch("/v1/apps/bench", json={"default_latency_ms": slo})
            target = loadgen.Target.parse(url)
            rng = np.random.default_rng(0)
            headers = {"Authorization": f"Bearer {key}", "content-type": "application/json"}

            def requests(extra: dict[str, Any]) -> list[bytes]:
                bodies = [
                    orjson.dumps(
                        {"inputs": rng.random((128, 64), dtype=np.float32).tolist(), "latency_ms": slo}
                        | extra
                    )
                    for _ in range(64)
                ]
                return [
                    loadgen.encode_request("POST", target.authority, "/v1/models/wide/infer", b, headers)
                    for b in bodies
                ]

            if (
                measure
            ):  # as bench/diagnostics/overload.py: one pinned fp32 one-thread instance, far beyond it
                instance_url = f"http://127.0.0.1:{settings.executor_port}/v1/instances"
                internal = {INTERNAL_HEADER: settings.internal_key}
                loaded = httpx.post(instance_url, json={"variant": one["id"]}, headers=internal, timeout=120)
                assert loaded.status_code == 200, loaded.text
                admin.patch("/v1/apps/bench", json={"slo_policy": "best_effort"})
                rate = 4 * one["saturation_qps"] / 128
                burst = loadgen.run(
                    loadgen.run_open_loop(
                        target,
                        requests({"variant": one["id"]}),
                        list(workloads.arrivals(np.full(4, rate), seed=1)),
                        connections=96,
                        keep_bodies=False,
                        drain_s=5,
                    )
                )
                assert burst.ok, f"no answer in the capacity burst: {burst.errors()} {burst.error_bodies}"
                return {"capacity_qps": round(burst.ok / burst.elapsed_s, 1), "slo_ms": slo}

            capacity = args.capacity

            profiles = asyncio.run(_read_variants(settings.redis_url, store, aioredis))
            rates = np.concatenate([np.full(int(s), f * capacity) for f, s in PHASES])
            trace = workloads.arrivals(rates, seed=7)
            samples: list[Any] = []

            async def replay() -> Any:
                start = time.perf_counter()
                sampler = asyncio.create_task(
                    _sample(settings.redis_url, profiles, start, len(rates), samples)
                )
                result = await loadgen.run_open_loop(
                    target,
                    requests({"min_accuracy": accuracy}),
                    list(trace),
                    connections=96,
                    keep_bodies=False,
                    drain_s=5,
                )
                await sampler
                return result

            t_start = time.time()
            result = loadgen.run(replay())
            series = _series(result, trace, len(rates), slo)
            events = []
            for e in admin.get("/v1/events", params={"limit": 1000}).json()["events"]:
                at = e["at"].replace("Z", "+00:00")
                from datetime import datetime

                t = datetime.fromisoformat(at).timestamp() - t_start
                if t >= 0:
                    events.append({**e, "t": round(t, 2)})
            events.sort(key=lambda e: e["t"])
            statuses = [str(outcome) for _, outcome, _ in result.records]
            return {
                "code": str(Path(dispatch_module.__file__).resolve().parents[2]),
                "statuses": {k: statuses.count(k) for k in set(statuses)}
                | {"unanswered": len(trace) - len(statuses)},
                "error_bodies": {str(k): v.decode(errors="replace") for k, v in result.error_bodies.items()},
                "capacity_qps": round(capacity, 1),
                "slo_ms": slo,
                "accuracy": accuracy,
                "phases": _phase_rows(series, samples),
                "scaling": _scale_times(samples, events, t_start),
                "series": {k: v.tolist() for k, v in series.items()},
                "samples": samples,
                "events": [
                    {k: e[k] for k in ("t", "kind", "action", "outcome", "variant", "worker", "reason")}
                    for e in events
                ],
                "loadavg_1m": os.getloadavg()[0],
            }
        finally:
            admin.close()
            suite.stop()
            if args.keep_logs:  # the services' logs, to read what a run's numbers came from
                import shutil

                shutil.copytree(Path(tmp) / "logs", Path(args.keep_logs) / ("measure" if measure else "step"))


async def _read_variants(redis_url: str, store: Any, aioredis: Any) -> dict[str, Any]:
    client = aioredis.Redis.from_url(redis_url)
    try:
        return dict(await store.read_variants(client))
    finally:
        await client.aclose()


def _table(results: dict[str, dict[str, Any]]) -> str:
    lines = [
        "| build | phase | offered q/s | goodput q/s | admitted in SLO | shed | instances | cost $/h |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for build, r in results.items():
        for p in r["phases"]:
            lines.append(
                f"| {build} | {p['phase']} | {p['offered_qps']} | {p['goodput_qps']} | "
                f"{p['attainment']:.1%} | {p['shed_share']:.1%} | {p['instances_mean']} | "
                f"{p['cost_per_hour']:.4f} |"
            )
    lines += [
        "",
        "| build | instances before → peak | first scale-up decision | scaled up after | scaled down after "
        "| shrinks during 3× | cost of the run $ |",
        "|---|---|---|---|---|---|---|",
    ]
    for build, r in results.items():
        s = r["scaling"]
        lines.append(
            f"| {build} | {s['instances_before_step']} → {s['instances_peak_at_3x']} | "
            f"{fmt(s['first_scale_decision_s'])} | {fmt(s['scale_up_s'])} | {fmt(s['scale_down_s'])} | "
            f"{s['shrinks_during_3x']} | {s['cost_dollars']:.5f} |"
        )
    return "\n".join(lines)


def fmt(seconds: float | None) -> str:
    return "never" if seconds is None else f"{seconds:g} s"


def plot(results: dict[str, dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(3, 1, figsize=(9, 8), sharex=True)
    for build, r in results.items():
        s = r["series"]
        t = np.arange(len(s["offered"]))
        style = "-" if build == "after" else "--"
        if build == next(iter(results)):
            axes[0].plot(t, s["offered"], color="grey", lw=1, label="offered")
        axes[0].plot(t, s["good"], style, label=f"{build}: goodput (200 within SLO)")
        axes[1].plot(t, s["shed"], style, label=f"{build}: shed (429/503)")
        late = np.array(s["admitted"]) - np.array(s["good"])
        axes[1].plot(t, late, style, lw=1, label=f"{build}: admitted, missed SLO")
        axes[2].step(t, [len(x["instances"]) for x in r["samples"]], style, where="mid", label=build)
    axes[0].set_ylabel("queries / s")
    axes[1].set_ylabel("queries / s")
    axes[2].set_ylabel("instances")
    up = int(PHASES[0][1])
    axes[2].set_xlabel(f"seconds (0.5× → 3× at {up} s → 0.5× at {up + int(PHASES[1][1])} s)")
    for ax in axes:
        ax.legend(fontsize=7, loc="upper right")
        ax.grid(alpha=0.3)
    fig.suptitle("Load step 0.5× → 3× → 0.5× of one worker, autoscalers on")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--before", help="root of an older build (a git worktree) to run side by side")
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--json", help="write every series and event here")
    parser.add_argument("--plot", default=str(ROOT / "docs" / "img" / "autoscale_step.png"))
    parser.add_argument("--keep-logs", help="copy each build's service logs under this folder")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--model-dir", help=argparse.SUPPRESS)
    parser.add_argument("--capacity", type=float, help=argparse.SUPPRESS)
    parser.add_argument("--slo", type=float, help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        Path(args.out).write_text(json.dumps(worker(args)))
        return
    from bench.diagnostics.overload import build_model, worker_env

    results: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="autoscale-step-model-") as model_dir:
        build_model(Path(model_dir))
        builds = [("after", ROOT)] + ([("before", Path(args.before).resolve())] if args.before else [])
        measured: dict[str, Any] = {}
        for name, root in [("measure", ROOT), *builds]:  # one worker's capacity first, on its own suite
            out = Path(model_dir) / f"{name}.json"
            cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", "--model-dir", model_dir]
            cmd += ["--out", str(out)]
            if args.keep_logs:
                cmd += ["--keep-logs", str(Path(args.keep_logs).resolve() / name)]
            if measured:
                cmd += ["--capacity", str(measured["capacity_qps"]), "--slo", str(measured["slo_ms"])]
            subprocess.run(cmd, cwd=root, env=worker_env(root), check=True)
            if measured:
                results[name] = json.loads(out.read_text())
            else:
                measured = json.loads(out.read_text())
    for name, r in results.items():
        print(
            f"{name}: code {r['code']}, capacity {r['capacity_qps']} q/s, SLO {r['slo_ms']} ms, "
            f"load avg {r['loadavg_1m']:.1f}"
        )
        print(f"  statuses {r['statuses']}; first error bodies {r['error_bodies']}")
        for e in r["events"]:
            if e["outcome"] == "decided":
                print(f"  {e['t']:6.1f} s {e['action']} {e['variant']} {e['worker']}: {e['reason']}")
    print(_table(results) if args.markdown else json.dumps({k: v["scaling"] for k, v in results.items()}))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    plot(results, Path(args.plot))


if __name__ == "__main__":
    main()
