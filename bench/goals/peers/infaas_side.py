"""infaas in the peer comparison: the whole suite (`infaas_cli.launcher.start_suite`: gateway with its
embedded dispatcher, executor, planner, registry, profiler, jobs worker, embedded Redis, SQLite) started
with every process pinned to the server core, the three models registered under one app with the
product's defaults (non-lossy, warm instance 1), profiled, and queried by name
(`POST /v1/models/{model}/infer`) with the app's own key.

The app also holds the alternatives (`models.ALTERNATIVES`, cheaper models of the same task), for the
model-less endpoints: `POST /v1/apps/{app}/infer` with a minimum accuracy a point below the measured
model's, which any registered model's variant that meets it may answer. That is the model-less advantage,
reported apart from the named queries.

Another build of infaas (`Build`: a checkout with its own `.venv`) runs beside this one as the system
`infaas@NAME` (`--build NAME=PATH`), for before/after comparisons in one run: its suite is started by
that checkout's python from that checkout's tree (`start_build`), pinned to the server core like this
build's, and registered and queried the same way over HTTP."""

from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import psutil

from bench.goals.peers.systems import Endpoint, Server, pin, signal_all
from infaas.core.config import Settings
from infaas.processes.suite import free_port
from infaas_cli.launcher import start_suite

APP = "peers"
ADMIN_KEY = "adm_peers_bench"


MODEL_LESS_SLACK = 0.01  # a model-less query asks for the measured model's accuracy less one point


@dataclass(frozen=True)
class Build:
    """Another checkout of infaas, measured as the system `infaas@<name>`: its tree, whose `.venv` has its
    own install (`make install` there), and which provides `infaas_cli.launcher.start_suite(settings)`
    and `infaas.core.config.Settings` read from `INFAAS_*` in the environment."""

    name: str
    root: Path

    @property
    def system(self) -> str:
        return f"{BUILD_PREFIX}{self.name}"

    @property
    def python(self) -> Path:
        return self.root / ".venv" / "bin" / "python"

    def commit(self) -> str:
        done = subprocess.run(
            ["git", "-C", str(self.root), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
        )
        return done.stdout.strip() or "?"


BUILD_PREFIX = "infaas@"
SUITE_SETTINGS = (
    "var_dir",
    "admin_key",
    "gateway_host",
    "profiler_metrics_port",
    "executor_port",
    "executors",
)
"""The settings `start_infaas` chooses for a suite (besides its ports), whichever build runs it."""


def parse_builds(items: list[str]) -> dict[str, Build]:
    """`NAME=PATH` items (`--build`) → builds by system name (`infaas@NAME`); refuses a path that is not a
    checkout with its own virtualenv, so a run does not fail half an hour in."""
    builds: dict[str, Build] = {}
    for item in items:
        name, sep, path = item.partition("=")
        if not sep or not name or not path or "@" in name:
            raise SystemExit(f"--build {item!r}: expected NAME=PATH, e.g. before=/tmp/base")
        build = Build(name, Path(path).expanduser().resolve())
        if not (build.root / "infaas_cli" / "launcher.py").is_file():
            raise SystemExit(f"--build {item!r}: {build.root} is not a checkout of infaas")
        if not build.python.is_file():
            raise SystemExit(f"--build {item!r}: no {build.python} (run `make install` in that checkout)")
        builds[build.system] = build
    return builds


def start_infaas(
    core: int,
    client_core: int,
    var_dir: Path,
    models_dir: Path,
    models: list[str],
    alternatives: tuple[str, ...] = (),
    build: Build | None = None,
) -> tuple[Server, str]:
    """The suite of this checkout, or of `build`, started on `core` with its models registered and warm:
    the running system and the app's key."""
    shutil.rmtree(var_dir, ignore_errors=True)
    ports = {s: free_port() for s in ("gateway", "registry", "scheduler", "planner")}
    settings = Settings(
        var_dir=var_dir,
        admin_key=ADMIN_KEY,
        gateway_host="127.0.0.1",
        profiler_metrics_port=free_port(),
        executor_port=free_port(consecutive=2),
        executors=1,
        gateway_port=ports["gateway"],
        registry_port=ports["registry"],
        scheduler_port=ports["scheduler"],
        planner_port=ports["planner"],
    )
    if build is None:
        # children inherit the affinity at fork: the whole suite runs on the server core, this process not
        os.sched_setaffinity(0, {core})
        try:
            suite = start_suite(settings)
        finally:
            os.sched_setaffinity(0, {client_core})
        procs = {name: psutil.Process(p.pid) for name, p in suite.procs.items()}
        if suite.redis_proc is not None:
            procs["redis"] = psutil.Process(suite.redis_proc.pid)
        server = Server("infaas", settings.gateway_port, procs, suite.stop, version="this build")
    else:  # the same settings, given to that build through the environment its processes read
        names = [*SUITE_SETTINGS, *(f"{s}_port" for s in ports)]
        server = start_build(build, core, {f"INFAAS_{n.upper()}": str(getattr(settings, n)) for n in names})
    url = f"http://127.0.0.1:{server.port}"
    try:
        key = register(url, ADMIN_KEY, models_dir, [*models, *alternatives])
    except BaseException:
        server.stop()
        raise
    return server, key


SUITE_CHILD = """
import json, signal, sys
from infaas.core.config import Settings
from infaas_cli.launcher import start_suite

signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
suite = start_suite(Settings())
try:
    procs = {name: proc.pid for name, proc in suite.procs.items()}
    if suite.redis_proc is not None:
        procs["redis"] = suite.redis_proc.pid
    print("SUITE " + json.dumps({"port": suite.settings.gateway_port, "procs": procs}), flush=True)
    sys.stdin.read()  # until the bench closes it, or exits
finally:
    suite.stop()
"""
"""Run by another build's python in its tree: starts that build's suite as this process's own children
(no supervisor: the bench's own suite has none either), says where it is, and stops it when its standard
input closes, which it also does when the bench dies."""


def start_build(build: Build, core: int, env: dict[str, str], timeout_s: float = 300) -> Server:
    """`build`'s suite, with `env` (its settings) on top of this environment, started by that checkout's
    python with that tree as its working directory and first on its path (the suite's processes run
    `python -m` from there), and every process on `core` (the affinity is inherited)."""
    var_dir = Path(env["INFAAS_VAR_DIR"])
    var_dir.mkdir(parents=True, exist_ok=True)
    child_env = {**os.environ, **env, "PYTHONPATH": str(build.root)}
    child_env.pop("VIRTUAL_ENV", None)
    with open(var_dir / "launcher.log", "ab") as log:
        proc = subprocess.Popen(
            [str(build.python), "-c", SUITE_CHILD],
            cwd=build.root,
            env=child_env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            bufsize=0,  # unbuffered: `select` then sees every line the child writes
            stderr=log,
            start_new_session=True,
            preexec_fn=pin(core),
        )
    assert proc.stdin is not None and proc.stdout is not None

    def stop() -> None:
        if proc.stdin is not None and not proc.stdin.closed:
            proc.stdin.close()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    deadline = time.monotonic() + timeout_s
    while True:
        ready, _, _ = select.select([proc.stdout], [], [], 1.0)
        line = proc.stdout.readline().decode(errors="replace") if ready else ""
        if line.startswith("SUITE "):
            started = json.loads(line.removeprefix("SUITE "))
            break
        if proc.poll() is not None or time.monotonic() > deadline:
            stop()
            raise RuntimeError(f"{build.system} did not start; see {var_dir / 'launcher.log'}")
    procs = {str(name): psutil.Process(int(pid)) for name, pid in started["procs"].items()}
    return Server(
        build.system, int(started["port"]), procs, stop, version=f"{build.root} at {build.commit()}"
    )


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


def model_less_endpoints(
    port: int, key: str, accuracy: dict[str, float], system: str = "infaas"
) -> list[Endpoint]:
    """Per measured model (name → its accuracy): a query to the app, no model named, that asks for that
    accuracy less `MODEL_LESS_SLACK`. Its answers are compared with the measured model's all the same."""
    out = []
    for model, reference in accuracy.items():
        prefix = b'{"min_accuracy":%.4f,"inputs":[' % (reference - MODEL_LESS_SLACK)

        def wrap(text: bytes, prefix: bytes = prefix) -> bytes:
            return prefix + text + b"]}"

        out.append(
            Endpoint(
                system,
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
