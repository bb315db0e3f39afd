"""The real-process part of `bench/papers/failover.py` (see its docstring): a full-size and a small MLP of one
family trained on scikit-learn's wine data and exported with onnx.helper, apps in three groups, a worker
SIGKILLed under open-loop load, and what each group saw."""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import onnx
import orjson
from onnx import TensorProto, helper, numpy_helper
from sklearn.datasets import load_wine
from sklearn.neural_network import MLPClassifier
from sklearn.preprocessing import StandardScaler

from infaas.clients.executor import ExecutorClient
from infaas.processes.suite import free_port
from infaas_cli.launcher import start_suite
from tests.e2e.conftest import RunningSuite, _settings
from tests.polling import wait_for

SIZES = {"full": (1024, 1024, 1024), "small": (8,)}
GROUPS: dict[str, tuple[str, tuple[str, ...]]] = {
    "warm": ("critical", ("full", "small")),
    "cold-small": ("normal", ("full", "small")),
}
GROUPS["cold-full"] = ("normal", ("full",))


def mlp(directory: Path, size: str) -> tuple[bytes, bytes]:
    """An MLP of `SIZES[size]` on wine, standardization folded into its first layer: (onnx, npz)."""
    x, y = load_wine(return_X_y=True)
    scaler = StandardScaler().fit(x)
    clf = MLPClassifier(SIZES[size], max_iter=60 if size == "full" else 40, random_state=0)
    clf.fit(scaler.transform(x), y)
    nodes, inits, last = [], [], "x"
    for k, (w, b) in enumerate(zip(clf.coefs_, clf.intercepts_, strict=True)):
        if k == 0:  # (x - m) / s @ W + b = x @ (W / s) + (b - (m / s) @ W)
            w, b = w / scaler.scale_[:, None], b - (scaler.mean_ / scaler.scale_) @ w
        inits += [numpy_helper.from_array(w.astype(np.float32), f"w{k}"), numpy_helper.from_array(
            b.astype(np.float32), f"b{k}")]  # fmt: skip
        nodes += [helper.make_node("MatMul", [last, f"w{k}"], [f"m{k}"]), helper.make_node(
            "Add", [f"m{k}", f"b{k}"], [f"a{k}"])]  # fmt: skip
        last = f"a{k}"
        if k < len(clf.coefs_) - 1:
            nodes.append(helper.make_node("Relu", [last], [f"r{k}"]))
            last = f"r{k}"
    nodes.append(helper.make_node("Identity", [last], ["logits"]))
    graph = helper.make_graph(
        nodes,
        f"wine_{size}",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, x.shape[1]])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [None, 3])],
        initializer=inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    npz = directory / f"{size}.npz"
    np.savez(npz, x=x.astype(np.float32), y=y.astype(np.int64))
    return model.SerializeToString(), npz.read_bytes()


@dataclass
class Shot:
    app: str
    sent: float
    done: float
    status: int
    variant: str = ""
    worker: str = ""
    failover: bool = False


async def load(running: RunningSuite, keys: dict[str, str], rate: float, seconds: float, kill) -> list[Shot]:  # type: ignore[no-untyped-def]
    shots: list[Shot] = []
    rng = np.random.default_rng(3)
    x = load_wine().data.astype(np.float32)
    async with httpx.AsyncClient(base_url=running.url, timeout=30) as client:

        async def one(app: str, sent: float) -> None:
            row = x[rng.integers(len(x))] * np.float32(1 + rng.normal(0, 1e-3))
            try:
                r = await client.post(
                    f"/v1/apps/{app}/infer",
                    content=orjson.dumps({"inputs": {"x": [row.tolist()]}}),
                    headers={"Authorization": f"Bearer {keys[app]}", "Content-Type": "application/json"},
                )
                doc = r.json() if r.status_code == 200 else {}
                shots.append(Shot(app, sent, time.time(), r.status_code, doc.get("variant", ""),
                                  doc.get("worker", ""), "failover" in doc))  # fmt: skip
            except httpx.HTTPError:
                shots.append(Shot(app, sent, time.time(), 0))

        tasks = []
        start = time.time()
        kill_task = asyncio.get_running_loop().call_later(kill[0], kill[1])
        gaps = rng.exponential(1 / (rate * len(keys)), size=int(rate * len(keys) * seconds * 2))
        t = 0.0
        apps = sorted(keys)
        for i, gap in enumerate(gaps):
            t += gap
            if t > seconds:
                break
            await asyncio.sleep(max(0.0, start + t - time.time()))
            tasks.append(asyncio.create_task(one(apps[i % len(apps)], time.time())))
        await asyncio.gather(*tasks)
        kill_task.cancel()
    return shots


def run(args: argparse.Namespace) -> dict[str, Any]:
    var = Path(tempfile.mkdtemp(prefix="failover-bench-"))
    settings = _settings(var / "var").model_copy(
        # A 2-vCPU machine busy profiling delays pulses past two 25 ms intervals (false failures).
        update={"executors": 3, "executor_port": free_port(consecutive=3), "pulse_misses": args.pulse_misses}
    )
    suite = start_suite(settings)
    url = f"http://127.0.0.1:{settings.gateway_port}"
    admin = httpx.Client(base_url=url, headers={"Authorization": f"Bearer {settings.admin_key}"}, timeout=120)
    running = RunningSuite(suite=suite, settings=settings, url=url, admin=admin)
    try:
        artifacts = {size: mlp(var, size) for size in SIZES}
        keys, family = {}, {}
        for group, (criticality, sizes) in GROUPS.items():
            for n in range(args.apps_per):
                app = f"{group}-{n}"
                terms = {"criticality": criticality, "warm_instances": 0, "cache": False}
                keys[app] = admin.post("/v1/apps", json={"name": app, **terms}).json()["api_key"]
                for size in sizes:
                    meta = orjson.dumps(
                        {"name": f"{app}-{size}", "app": app, "task": "classification"}
                    ).decode()
                    files = {
                        "file": ("m.onnx", artifacts[size][0]),
                        "validation": ("v.npz", artifacts[size][1]),
                    }
                    r = admin.post("/v1/models", files=files, data={"metadata": meta})
                    assert r.status_code == 202, r.text
                    family[f"{app}-{size}"] = (app, size)
        accuracy: dict[str, tuple[str, str, float]] = {}  # variant → (app, size, accuracy)
        full: list[str] = []
        for model, (app, size) in family.items():
            assert running.wait_ready(model, timeout_s=900)["status"] == "ready"
            for v in admin.get(f"/v1/models/{model}/variants").json():
                if v["status"] == "ready":
                    accuracy[v["id"]] = (app, size, v["accuracy"])
                    if size == "full" and v["precision"] == "fp32" and not v["dominated"]:
                        full.append(v["id"])  # what selection may take for a query with no accuracy
        first = f"http://127.0.0.1:{suite.port('executor')}"

        async def place() -> None:
            executors = ExecutorClient(internal_key=settings.internal_key)
            try:
                for vid in full:
                    try:
                        await executors.load(first, vid)
                    except Exception as exc:  # a variant this worker cannot load: the others serve
                        print(f"loading {vid} failed: {exc}")
            finally:
                await executors.aclose()

        asyncio.run(place())
        warm_apps = [a for a in keys if a.startswith("warm")]

        def backups_placed() -> bool:
            events = admin.get("/v1/events", params={"kind": "failover", "limit": 1000}).json()["events"]
            return {e["details"]["app"] for e in events if e["action"] == "warm_backup"} >= set(warm_apps)

        wait_for(backups_placed, what="warm backups", timeout_s=60)
        killed = f"-{suite.port('executor')}"
        pid = suite.procs["executor"].pid
        killed_at: list[float] = []

        def kill() -> None:
            killed_at.append(time.time())
            os.kill(pid, signal.SIGKILL)

        shots = asyncio.run(load(running, keys, args.rate, args.seconds, (args.kill_at, kill)))
        time.sleep(6)  # the snapshot fallback acts after the heartbeat expires (5 s) when no notice came
        events = admin.get("/v1/events", params={"kind": "failover", "limit": 1000}).json()["events"]
        return summarize(shots, killed_at[0], killed, accuracy, events, args)
    finally:
        admin.close()
        suite.stop()


def summarize(
    shots: list[Shot], t_kill: float, killed: str, accuracy: dict[str, tuple[str, str, float]],
    events: list[dict[str, Any]], args: argparse.Namespace,
) -> dict[str, Any]:  # fmt: skip
    best: dict[str, float] = {}
    for app, _, acc in accuracy.values():
        best[app] = max(best.get(app, 0.0), acc)
    out: dict[str, Any] = {
        "groups": {},
        "events": [(e["action"], e["details"]["app"], e["reason"]) for e in events],
    }
    for group in GROUPS:
        apps = sorted({s.app for s in shots if s.app.startswith(group)})
        mttrs, lost, losses = [], 0, []
        for app in apps:
            mine = [s for s in shots if s.app == app]
            after = [s for s in mine if s.status == 200 and s.done > t_kill and not s.worker.endswith(killed)]
            if after:
                mttrs.append(min(s.done for s in after) - t_kill)
            lost += sum(1 for s in mine if s.status != 200)
            losses += [1 - accuracy[s.variant][2] / best[app] for s in after if s.variant in accuracy]
        out["groups"][group] = {
            "apps": len(apps),
            "mttr_ms": [round(m * 1000, 1) for m in mttrs],
            "recovered_share": len(mttrs) / max(1, len(apps)),
            "accuracy_lost_pct": round(100 * float(np.mean(losses)), 3) if losses else None,
            "queries": sum(1 for s in shots if s.app in apps),
            "queries_lost": lost,
            "answers_after_kill_by_size": {
                size: sum(
                    1
                    for s in shots
                    if s.app in apps
                    and s.done > t_kill
                    and s.status == 200
                    and accuracy.get(s.variant, ("", ""))[1] == size
                )
                for size in SIZES
            },
            "accuracy_by_size": {
                size: max((a for app, sz, a in accuracy.values() if sz == size and app in apps), default=None)
                for size in SIZES
            },
        }
        print(group, out["groups"][group])
    if args.plot:
        plot(shots, t_kill, accuracy, args.plot)
    return out


def plot(shots: list[Shot], t_kill: float, accuracy: dict[str, tuple[str, str, float]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(GROUPS), 1, figsize=(8, 7), sharex=True)
    for ax, group in zip(axes, GROUPS, strict=True):
        for size, color in (("full", "tab:blue"), ("small", "tab:orange")):
            pts = [s for s in shots if s.app.startswith(group) and s.status == 200 and accuracy.get(
                s.variant, ("", ""))[1] == size]  # fmt: skip
            ax.scatter([s.sent - t_kill for s in pts], [1000 * (s.done - s.sent) for s in pts], s=6, c=color,
                       label=f"{size} variant")  # fmt: skip
        bad = [s for s in shots if s.app.startswith(group) and s.status != 200]
        ax.scatter([s.sent - t_kill for s in bad], [1 for _ in bad], marker="x", c="red", label="error")
        ax.axvline(0, color="black", lw=0.8)
        ax.set_yscale("log")
        ax.set_ylabel(f"{group}\nlatency (ms)")
        ax.legend(loc="upper right", fontsize=7)
    axes[-1].set_xlabel("query sent, s after the SIGKILL of the primaries' worker")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
