"""Overload: an open-loop step from 0.5× to 3× of one worker's capacity and back, under the `error` and
`best_effort` SLO policies, on a model that costs real compute per row — goodput (answers within the SLO
per second), SLO attainment of admitted queries, shed share, p50/p99 — for two builds side by side.

The model is built here: a wide MLP (64 → 4096 → 4096 → 4, ~17 M multiply-adds a row) trained briefly
with scikit-learn on `make_classification` data (nothing downloaded), written as ONNX with onnx.helper.
Each build runs in its own process with its own code (`--before DIR`: a git worktree of an older
commit; PYTHONPATH and cwd point there): a fresh system (`start_suite`: embedded Redis, SQLite, one
executor, the planner's autoscaler off so that one worker's capacity is the whole capacity), the model
registered and profiled, one variant (ONNX Runtime basic, fp32, one thread, the largest max batch)
loaded and pinned by every query, the app's prediction cache off. One worker's capacity is measured by
the first build (a short run far beyond it under `best_effort`: answers per second) and used for both,
so both see the same offered rates. Latency is the client's, from each query's scheduled send
(bench/common/loadgen.py).

An admitted query is one the system took on: answered (200) or given up at its SLO (504); shed are
503 and 429. Goodput counts 200s within the SLO.

Usage:
    git worktree add /tmp/f-before <commit>
    .venv/bin/python -m bench.diagnostics.overload --before /tmp/f-before --markdown
    .venv/bin/python -m bench.diagnostics.overload --step-s 2   # this build only, shorter
"""

from __future__ import annotations

import argparse
import io
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

STEPS = (0.5, 1.0, 2.0, 3.0, 3.0, 2.0, 1.0, 0.5)  # × one worker's capacity, one step each
ROWS = 128  # rows per query (as the 256-row queries: each runs as max batches back to back)
SLO_MS = 150.0


def build_model(out: Path) -> None:
    """model.onnx (input `x`, output `scores`) and validation.npz (x, y) under `out`."""
    import warnings

    import onnx
    from onnx import TensorProto, helper, numpy_helper
    from sklearn.datasets import make_classification
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.neural_network import MLPClassifier

    x, y = make_classification(n_samples=1600, n_features=64, n_informative=24, n_classes=4, random_state=0)
    x = x.astype(np.float32)
    net = MLPClassifier(hidden_layer_sizes=(4096, 4096), max_iter=1, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        net.fit(x[:1200], y[:1200])
    nodes, inits, prev = [], [], "x"
    for i, (w, b) in enumerate(zip(net.coefs_, net.intercepts_, strict=True)):
        inits += [
            numpy_helper.from_array(w.astype(np.float32), f"w{i}"),
            numpy_helper.from_array(b.astype(np.float32), f"b{i}"),
        ]
        last = i == len(net.coefs_) - 1
        out_name = "scores" if last else f"h{i}"
        nodes.append(helper.make_node("Gemm", [prev, f"w{i}", f"b{i}"], [out_name if last else f"g{i}"]))
        if not last:
            nodes.append(helper.make_node("Relu", [f"g{i}"], [out_name]))
        prev = out_name
    graph = helper.make_graph(
        nodes,
        "overload-mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 64])],
        [helper.make_tensor_value_info("scores", TensorProto.FLOAT, ["n", 4])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)
    onnx.checker.check_model(model)
    (out / "model.onnx").write_bytes(model.SerializeToString())
    buf = io.BytesIO()
    np.savez(buf, x=x[1200:], y=y[1200:].astype(np.int64))
    (out / "validation.npz").write_bytes(buf.getvalue())


def register_wide(admin: Any, model_dir: Path) -> list[dict[str, Any]]:
    """Register `build_model`'s model as `wide` in app `bench` (created by the caller), wait until it is
    profiled, and return its ready variants as `GET /v1/models/wide/variants` lists them."""
    import orjson

    meta = orjson.dumps({"name": "wide", "app": "bench", "task": "classification"}).decode()
    files = {
        "file": ("m.onnx", (model_dir / "model.onnx").read_bytes()),
        "validation": ("v.npz", (model_dir / "validation.npz").read_bytes()),
    }
    accepted = admin.post("/v1/models", files=files, data={"metadata": meta})
    assert accepted.status_code == 202, accepted.text
    deadline = time.monotonic() + 600
    while (status := admin.get("/v1/models/wide").json()["status"]) not in ("ready", "failed"):
        assert time.monotonic() < deadline, "profiling took over 600 s"
        time.sleep(1)
    assert status == "ready", status
    variants: list[dict[str, Any]] = admin.get("/v1/models/wide/variants", params={"status": "ready"}).json()
    return variants


def _outcomes(result: Any, trace: np.ndarray, step_s: float) -> dict[str, Any]:
    """Goodput, attainment of admitted queries, shed share, p50/p99 of answers; overall and at 3×."""
    from bench.common import loadgen

    n = len(trace)
    status = np.zeros(n, dtype=np.int64)  # 0: timeout, not sent or no connection
    lat = np.full(n, math.nan)
    for i, outcome, ms in result.records:
        status[i] = outcome if isinstance(outcome, int) else 0
        lat[i] = ms
    step = np.minimum((trace // step_s).astype(np.int64), len(STEPS) - 1)

    def summary(mask: np.ndarray, seconds: float) -> dict[str, Any]:
        ok = mask & (status == 200)
        good = ok & (lat <= SLO_MS)
        admitted = mask & np.isin(status, (200, 504))
        shed = mask & np.isin(status, (429, 503))
        answered = lat[ok]
        return {
            "offered_qps": round(int(mask.sum()) / seconds, 1),
            "goodput_qps": round(int(good.sum()) / seconds, 1),
            "attainment": round(int(good.sum()) / max(1, int(admitted.sum())), 3),
            "shed_share": round(int(shed.sum()) / max(1, int(mask.sum())), 3),
            "p50_ms": round(loadgen.percentile(answered.tolist(), 50), 1) if answered.size else None,
            "p99_ms": round(loadgen.percentile(answered.tolist(), 99), 1) if answered.size else None,
            "statuses": {
                str(k): int(v) for k, v in zip(*np.unique(status[mask], return_counts=True), strict=True)
            },
        }

    at3 = np.isin(step, [k for k, f in enumerate(STEPS) if f == 3.0])
    return {
        "all": summary(np.ones(n, dtype=bool), len(STEPS) * step_s),
        "at_3x": summary(at3, STEPS.count(3.0) * step_s),
    }


def worker(args: argparse.Namespace) -> dict[str, Any]:
    """One build: start it, register and pin the model, measure capacity if asked, run both policies."""
    import httpx
    import orjson

    import services.scheduler.dispatch as dispatch_module
    from bench.common import loadgen
    from infaas.core import workloads
    from infaas.core.config import Settings
    from infaas.core.credentials import INTERNAL_HEADER
    from infaas.processes.suite import free_port
    from infaas_cli.launcher import start_suite

    model_dir = Path(args.model_dir)
    with tempfile.TemporaryDirectory(prefix="overload-") as tmp:
        ports = {f"{s}_port": free_port() for s in ("gateway", "registry", "scheduler", "planner")}
        settings = Settings(
            var_dir=Path(tmp),
            admin_key="adm_bench_overload",
            gateway_host="127.0.0.1",
            profiler_metrics_port=free_port(),
            profile_seconds_per_point=0.05,
            profile_min_iterations=10,
            executors=1,
            executor_port=free_port(),
            autoscale_policy="off",
            **ports,  # type: ignore[arg-type]
        )
        suite = start_suite(settings)
        url = f"http://127.0.0.1:{settings.gateway_port}"
        admin = httpx.Client(
            base_url=url, headers={"Authorization": f"Bearer {settings.admin_key}"}, timeout=120
        )
        try:
            app = {"name": "bench", "default_latency_ms": SLO_MS, "slo_policy": "best_effort", "cache": False}
            key = admin.post("/v1/apps", json=app).json()["api_key"]
            variants = register_wide(admin, model_dir)
            fp32 = [
                v
                for v in variants
                if v["precision"] == "fp32" and v["optimization"] == "basic" and v["threads"] == 1
            ]
            pinned = max(fp32, key=lambda v: v["max_batch"])
            loaded = httpx.post(
                f"http://127.0.0.1:{settings.executor_port}/v1/instances",
                json={"variant": pinned["id"]},
                headers={INTERNAL_HEADER: settings.internal_key},
                timeout=120,
            )
            assert loaded.status_code == 200, loaded.text
            target = loadgen.Target.parse(url)
            rng = np.random.default_rng(0)
            bodies = [
                orjson.dumps(
                    {
                        "inputs": rng.random((ROWS, 64), dtype=np.float32).tolist(),
                        "variant": pinned["id"],
                        "latency_ms": SLO_MS,  # stated: an older build ignored the app's default here
                    }
                )
                for _ in range(64)
            ]
            headers = {"Authorization": f"Bearer {key}", "content-type": "application/json"}
            requests = [
                loadgen.encode_request("POST", target.authority, "/v1/models/wide/infer", b, headers)
                for b in bodies
            ]

            def replay(trace: np.ndarray) -> Any:
                return loadgen.run(
                    loadgen.run_open_loop(
                        target, requests, list(trace), connections=96, keep_bodies=False, drain_s=5
                    )
                )

            capacity = args.capacity
            if capacity is None:  # far beyond one worker for a few seconds: what it answers per second
                rate = 4 * pinned["saturation_qps"] / ROWS
                result = replay(workloads.arrivals(np.full(4, rate), seed=1))
                capacity = result.ok / result.elapsed_s
            out: dict[str, Any] = {
                "code": str(Path(dispatch_module.__file__).resolve().parents[2]),
                "variant": pinned["id"],
                "profiled_qps": round(pinned["saturation_qps"] / ROWS, 1),
                "capacity_qps": round(capacity, 1),
            }
            rates = np.array(STEPS) * capacity
            for k, policy in enumerate(("error", "best_effort")):
                changed = admin.patch("/v1/apps/bench", json={"slo_policy": policy})
                assert changed.status_code == 200, changed.text
                time.sleep(2)  # the queue of the previous run drained
                trace = workloads.arrivals(rates, seed=10 + k, step_s=args.step_s)
                out[policy] = _outcomes(replay(trace), trace, args.step_s)
                print(policy, json.dumps(out[policy]["at_3x"]), file=sys.stderr, flush=True)
            return out
        finally:
            admin.close()
            suite.stop()


def worker_env(root: Path) -> dict[str, str]:
    """The environment of a worker that measures the build at `root`: that tree's product code first
    (its `infaas`, and the suite it starts runs from it as the working directory), this checkout's
    `bench` package after it for the worker script's own imports (an older tree has no `bench`
    package, so ours is found)."""
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), str(ROOT)])}


def _table(results: dict[str, dict[str, Any]]) -> str:
    lines = [
        "| build | policy | window | offered q/s | goodput q/s | admitted in SLO | shed | p50 ms | p99 ms |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for build, r in results.items():
        for policy in ("error", "best_effort"):
            for window in ("all", "at_3x"):
                s = r[policy][window]
                lines.append(
                    f"| {build} | {policy} | {window} | {s['offered_qps']} | {s['goodput_qps']} | "
                    f"{s['attainment']:.1%} | {s['shed_share']:.1%} | {s['p50_ms']} | {s['p99_ms']} |"
                )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--before", help="root of an older build (a git worktree) to run side by side")
    parser.add_argument("--step-s", type=float, default=3.0, help="seconds per load step")
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--model-dir", help=argparse.SUPPRESS)
    parser.add_argument("--capacity", type=float, help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        Path(args.out).write_text(json.dumps(worker(args)))
        return
    results: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="overload-model-") as model_dir:
        build_model(Path(model_dir))
        builds = [("after", ROOT)] + ([("before", Path(args.before).resolve())] if args.before else [])
        capacity = None
        for name, root in builds:
            out = Path(model_dir) / f"{name}.json"
            cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", "--model-dir", model_dir]
            cmd += ["--out", str(out), "--step-s", str(args.step_s)]
            if capacity is not None:
                cmd += ["--capacity", str(capacity)]
            subprocess.run(cmd, cwd=root, env=worker_env(root), check=True)
            results[name] = json.loads(out.read_text())
            capacity = results[name]["capacity_qps"]
    for name, r in results.items():
        print(
            f"{name}: code {r['code']}, variant {r['variant']}, profiled {r['profiled_qps']} q/s, "
            f"measured capacity {r['capacity_qps']} q/s (both builds offered the same rates)"
        )
    print(_table(results) if args.markdown else json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
