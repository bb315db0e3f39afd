"""infaas in the peer comparison: the whole suite (`infaas_cli.launcher.start_suite`: gateway with its
embedded dispatcher, executor, planner, registry, profiler, jobs worker, embedded Redis, SQLite) started
with every process pinned to the server core, the three models registered under one app with the
product's defaults (non-lossy, warm instance 1), profiled, and queried by name
(`POST /v1/models/{model}/infer`) with the app's own key.

The app also holds the alternatives (`models.ALTERNATIVES`, cheaper models of the same task), for the
model-less endpoints: `POST /v1/apps/{app}/infer` with a minimum accuracy a point below the measured
model's, which any registered model's variant that meets it may answer. That is the model-less advantage,
reported apart from the named queries."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import psutil

from bench.goals.peers.systems import Endpoint, Server, signal_all
from infaas.core.config import Settings
from infaas.processes.suite import free_port
from infaas_cli.launcher import start_suite

APP = "peers"
ADMIN_KEY = "adm_peers_bench"


MODEL_LESS_SLACK = 0.01  # a model-less query asks for the measured model's accuracy less one point


def start_infaas(
    core: int,
    client_core: int,
    var_dir: Path,
    models_dir: Path,
    models: list[str],
    alternatives: tuple[str, ...] = (),
) -> tuple[Server, str]:
    shutil.rmtree(var_dir, ignore_errors=True)
    ports = {f"{s}_port": free_port() for s in ("gateway", "registry", "scheduler", "planner")}
    settings = Settings(
        var_dir=var_dir,
        admin_key=ADMIN_KEY,
        gateway_host="127.0.0.1",
        profiler_metrics_port=free_port(),
        executor_port=free_port(consecutive=2),
        executors=1,
        **ports,  # type: ignore[arg-type]
    )
    # children inherit the affinity at fork: the whole suite runs on the server core, this process not
    os.sched_setaffinity(0, {core})
    try:
        suite = start_suite(settings)
    finally:
        os.sched_setaffinity(0, {client_core})
    url = f"http://127.0.0.1:{settings.gateway_port}"
    procs = {name: psutil.Process(p.pid) for name, p in suite.procs.items()}
    if suite.redis_proc is not None:
        procs["redis"] = psutil.Process(suite.redis_proc.pid)
    server = Server("infaas", settings.gateway_port, procs, suite.stop, version="this build")
    try:
        key = register(url, settings.admin_key or "", models_dir, [*models, *alternatives])
    except BaseException:
        suite.stop()
        raise
    return server, key


@contextmanager
def environment(env: dict[str, str]) -> Iterator[None]:
    """`env` in this process's environment while a suite starts (its processes read their settings from
    it), then the environment as it was. With `PYTHONPATH` (another build's tree), also that tree as the
    working directory: the suite's processes run `python -m`, which puts the working directory first on
    their path, so from this checkout they would import this checkout's code whatever `PYTHONPATH` says."""
    before = {k: os.environ.get(k) for k in env}
    cwd = os.getcwd()
    os.environ.update(env)
    if "PYTHONPATH" in env:
        os.chdir(env["PYTHONPATH"].split(os.pathsep)[0])
    try:
        yield
    finally:
        os.chdir(cwd)
        for k, v in before.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def start_ab(
    name: str, value: str, core: int, client_core: int, var_dir: Path, models_dir: Path, models: list[str]
) -> dict[str, tuple[Server, str]]:
    """Two suites side by side for an A/B: "A" as configured, "B" with `name=value` in the environment
    its processes read their settings from (`var_dir`-A and -B). A suite that fails to start stops the
    one already started."""
    suites: dict[str, tuple[Server, str]] = {}
    try:
        for label, env in (("A", {}), ("B", {name: value})):
            with environment(env):
                here = var_dir.with_name(f"{var_dir.name}-{label}")
                suites[label] = start_infaas(core, client_core, here, models_dir, models)
    except BaseException:
        for server, _ in suites.values():
            server.stop()
        raise
    return suites


PAUSABLE_HEARTBEAT_TTL_S = "120"
"""`INFAAS_HEARTBEAT_TTL_S` for a suite that `pause` stops for a few rounds at a time: its own workers'
heartbeats, older than the default 5 s when it wakes, must not read as workers gone. (The TTL decides
only when a silent worker counts as gone; queries never wait on it.)"""


def members(server: Server, names: tuple[str, ...] | None = None) -> list[psutil.Process]:
    """The suite's processes, or only those whose name starts with one of `names`, each with its
    children (a Celery worker's pool processes)."""
    out: list[psutil.Process] = []
    for name, proc in server.procs.items():
        if names is None or name.split("-")[0] in names:
            try:
                out += [proc, *proc.children(recursive=True)]
            except psutil.Error:
                continue
    return out


def pause(server: Server, paused: bool, names: tuple[str, ...] | None = None) -> None:
    """SIGSTOP (or SIGCONT) the suite's processes, or only those whose name starts with one of `names`:
    the whole system stopped at once, so none of them sees another fall silent."""
    signal_all(members(server, names), paused)


def register(url: str, admin: str, models_dir: Path, models: list[str], timeout_s: float = 900) -> str:
    """Create the app, register the models, wait until each is profiled and has an active instance."""
    http = httpx.Client(base_url=url, headers={"Authorization": f"Bearer {admin}"}, timeout=120)
    created = http.post("/v1/apps", json={"name": APP})
    created.raise_for_status()
    key = str(created.json()["api_key"])
    for name in models:
        with (
            (models_dir / f"{name}.onnx").open("rb") as f,
            (models_dir / "digits-validation.npz").open("rb") as v,
        ):
            answer = http.post(
                "/v1/models",
                files={"file": (f"{name}.onnx", f), "validation": ("validation.npz", v)},
                data={"metadata": f'{{"name": "{name}", "app": "{APP}", "task": "classification"}}'},
            )
        answer.raise_for_status()
    start = time.monotonic()
    deadline = start + timeout_s
    while True:
        states = {n: http.get(f"/v1/models/{n}").json() for n in models}
        if any(s["status"] == "failed" for s in states.values()):
            raise RuntimeError(f"profiling failed: {states}")
        active = {
            vid.partition(".")[0]
            for w in http.get("/v1/workers").json()
            for vid, state in w["instances"].items()
            if state == "active"
        }
        if all(s["status"] == "ready" for s in states.values()) and set(models) <= active:
            print(
                f"infaas: {len(models)} models profiled and warm in {time.monotonic() - start:.0f} s",
                flush=True,
            )
            return key
        if time.monotonic() > deadline:
            raise RuntimeError(
                f"not ready in {timeout_s:.0f} s: {[(n, s['status']) for n, s in states.items()]}"
            )
        time.sleep(2)


def variants(port: int, models: list[str]) -> dict[str, dict[str, object]]:
    """Per model: the accuracy as registered and each ready variant's, to say whether the variant that
    answered is as accurate as the registered model."""
    http = httpx.Client(
        base_url=f"http://127.0.0.1:{port}", headers={"Authorization": f"Bearer {ADMIN_KEY}"}, timeout=30
    )
    out: dict[str, dict[str, object]] = {}
    for name in models:
        model = http.get(f"/v1/models/{name}").json()
        listed = http.get(f"/v1/models/{name}/variants", params={"status": "ready"}).json()
        rows = listed["variants"] if isinstance(listed, dict) else listed
        out[name] = {
            "reference_accuracy": model.get("reference_accuracy"),
            "variants": {v["id"]: v["accuracy"] for v in rows},
        }
    return out


def events(port: int, limit: int = 300) -> list[dict[str, object]]:
    """The planner's last decisions (loads, unloads, holds, with their reasons): what infaas did while
    it was measured."""
    http = httpx.Client(
        base_url=f"http://127.0.0.1:{port}", headers={"Authorization": f"Bearer {ADMIN_KEY}"}, timeout=30
    )
    answer = http.get("/v1/events", params={"limit": limit})
    if answer.status_code != 200:
        return [{"error": f"{answer.status_code} {answer.text[:200]}"}]
    found: list[dict[str, object]] = answer.json()["events"]
    return found


def model_less_endpoints(port: int, key: str, accuracy: dict[str, float]) -> list[Endpoint]:
    """Per measured model (name → its accuracy): a query to the app, no model named, that asks for that
    accuracy less `MODEL_LESS_SLACK`. Its answers are compared with the measured model's all the same."""
    out = []
    for model, reference in accuracy.items():
        prefix = b'{"min_accuracy":%.4f,"inputs":[' % (reference - MODEL_LESS_SLACK)

        def wrap(text: bytes, prefix: bytes = prefix) -> bytes:
            return prefix + text + b"]}"

        out.append(
            Endpoint(
                "infaas",
                "model-less",
                model,
                port,
                f"/v1/apps/{APP}/infer",
                wrap,
                lambda a: a["outputs"]["logits"],
                {"Authorization": f"Bearer {key}"},
            )
        )
    return out
