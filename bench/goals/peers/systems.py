"""The servers of the peer comparison as the driver sees them: how each is started (pinned to the server
core), what its endpoints are, how a one-row request is written for each and how its answer is read.

Peers run from their own virtualenvs (`bench/goals/peers/build.py`); infaas runs as the whole suite
(`infaas_cli.launcher.start_suite`, every process pinned to the same core through the affinity it
inherits). A request's first feature (0 in every digits row) is replaced by a number unique to the
request (`loadgen.unique_value`), so that no answer can come from a cache.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import psutil

from bench.common import loadgen as lg
from bench.common.paths import ROOT

HERE = Path(__file__).resolve().parent
MODELS_DIR = ROOT / "var" / "peers" / "models"
"""Where every bench script builds the shared models (`peer_models.prepare`)."""
SERVERS = HERE / "servers"

PEERS = ("fastapi", "litserve", "mlserver", "bentoml", "ray")
LOW_RATE = {"tiny": 50.0, "heavy": 20.0, "fixed": 20.0}
"""Each model's fixed low rate (q/s): the low-rate goal's load, in `run.py` and every probe beside it."""
BATCHING = {
    "fastapi": ("off",),
    "litserve": ("off", "on"),
    "mlserver": ("off", "on"),
    "bentoml": ("off", "on"),
    "ray": ("off", "on"),
}
SENTINEL = b"@" * len(lg.unique_value(0))


def is_infaas(system: str) -> bool:
    """This build's suite (`infaas`) or another build's (`infaas@NAME`, `infaas_side.Build`)."""
    return system == "infaas" or system.startswith("infaas@")


MAX_BATCH, BATCH_WAIT_S = 32, 0.002  # as in servers/common.py: the batching peers' settings


@dataclass
class Endpoint:
    """One (system, batching mode, model): where to send, how to wrap a row, how to read the answer."""

    system: str
    mode: str  # "off" / "on" for peers; infaas: "adaptive" (the model named), "model-less" (not named)
    model: str
    port: int
    path: str
    wrap: Callable[[bytes], bytes]  # a JSON row `[…]` → the request body
    outputs: Callable[[Any], Any]  # the parsed answer → its logits (nested lists)
    headers: dict[str, str] = field(default_factory=dict)

    @property
    def label(self) -> str:
        if self.mode == "model-less":
            return f"{self.system} model-less"
        return (
            self.system
            if self.mode in ("adaptive", "off") and (is_infaas(self.system) or self.system == "fastapi")
            else f"{self.system} b={self.mode}"
        )

    def requests(self, rows: np.ndarray) -> Callable[[int], bytes]:
        """Request i: row i mod len(rows), its first feature unique to i."""
        target = lg.Target(host="127.0.0.1", port=self.port, authority=f"127.0.0.1:{self.port}")
        headers = {"Content-Type": "application/json", **self.headers}
        parts = []
        for row in rows:
            text = b"[" + SENTINEL + b"," + orjson.dumps(row[1:].tolist())[1:]
            raw = lg.encode_request("POST", target.authority, self.path, self.wrap(text), headers)
            head, _, tail = raw.partition(SENTINEL)
            parts.append((head, tail))

        def request(i: int) -> bytes:
            head, tail = parts[i % len(parts)]
            return head + lg.unique_value(i) + tail

        return request

    def logits(self, body: bytes) -> np.ndarray:
        return np.asarray(self.outputs(orjson.loads(body)), dtype=np.float32).reshape(-1, 10)


def _inputs(text: bytes) -> bytes:
    return b'{"inputs":[' + text + b"]}"


def _v2(text: bytes) -> bytes:
    return b'{"inputs":[{"name":"x","shape":[1,64],"datatype":"FP32","data":' + text + b"}]}"


def _x(text: bytes) -> bytes:
    return b'{"x":[' + text + b"]}"


def endpoints(
    system: str, port: int, models: list[str], headers: dict[str, str] | None = None
) -> list[Endpoint]:
    out = []
    for model in models:
        for mode in BATCHING.get(system, ("adaptive",)):
            batched = mode == "on"
            suffix = "batched" if batched else "plain"
            if is_infaas(system):  # outputs: {output name: rows}
                ep = Endpoint(
                    system,
                    mode,
                    model,
                    port,
                    f"/v1/models/{model}/infer",
                    _inputs,
                    lambda a: a["outputs"]["logits"],
                    headers or {},
                )
            elif system == "fastapi":
                ep = Endpoint(system, mode, model, port, f"/predict/{model}", _inputs, lambda a: a["outputs"])
            elif system in ("litserve", "ray"):
                ep = Endpoint(
                    system, mode, model, port, f"/{model}/{suffix}", _inputs, lambda a: a["outputs"]
                )
            elif system == "mlserver":
                name = f"{model}-batched" if batched else model
                ep = Endpoint(
                    system,
                    mode,
                    model,
                    port,
                    f"/v2/models/{name}/infer",
                    _v2,
                    lambda a: a["outputs"][0]["data"],
                )
            elif system == "bentoml":
                ep = Endpoint(system, mode, model, port, f"/{model}_{suffix}", _x, lambda a: a)
            else:
                raise ValueError(f"unknown system {system}")
            out.append(ep)
    return out


# --------------------------------------------------------------------------------------------- servers
def stop_servers_on_sigterm() -> None:
    """SIGTERM (a `timeout`, a `kill`) ends the script through its `finally`, which stops the servers it
    started: by default the signal ended it at once and left them running on the server core, where
    they skewed whatever ran there next."""

    def _exit(_signum: int, _frame: object) -> None:
        raise SystemExit(143)

    signal.signal(signal.SIGTERM, _exit)


def parse_pinned(p: argparse.ArgumentParser) -> argparse.Namespace:
    """Parse a script's arguments with `--server-core` and `--client-core` added, stop the servers it
    starts on SIGTERM (`stop_servers_on_sigterm`) and pin the script itself to the client core."""
    p.add_argument("--server-core", type=int, default=0)
    p.add_argument("--client-core", type=int, default=1)
    a = p.parse_args()
    stop_servers_on_sigterm()
    os.sched_setaffinity(0, {a.client_core})
    return a


def signal_all(procs: list[psutil.Process], paused: bool) -> None:
    """SIGSTOP (or SIGCONT) each of `procs`; one already gone is skipped."""
    for p in procs:
        try:
            p.send_signal(signal.SIGSTOP if paused else signal.SIGCONT)
        except psutil.Error:
            continue


def pin(core: int) -> Callable[[], None]:
    return lambda: os.sched_setaffinity(0, {core})


@dataclass
class Server:
    """A running system: its processes (for CPU accounting) and how to stop it."""

    system: str
    port: int
    procs: dict[str, psutil.Process]  # name → process; peers: the root, its children counted with it
    stop: Callable[[], None]
    version: str = ""

    def family(self) -> list[psutil.Process]:
        out = []
        for name, proc in self.procs.items():
            try:
                out += [proc, *proc.children(recursive=True)] if name == self.system else [proc]
            except psutil.Error:
                continue
        return out

    def hold(self, paused: bool) -> None:
        """SIGSTOP (or SIGCONT) a peer's whole process tree while another system is measured: some peers
        poll when idle (LitServe's workers, Ray's loops), which would land on the measured one's core.
        infaas is not paused here: its processes watch each other's heartbeats, so a suite is paused
        only whole and when it runs with a heartbeat TTL that outlasts the pause (`infaas_side.pause`)."""
        if is_infaas(self.system):
            return
        signal_all(self.family(), paused)

    def cpu_s(self) -> dict[str, float]:
        """CPU seconds per named process, children included (a peer's workers, Ray's actors)."""
        out = {}
        for name, proc in self.procs.items():
            total = 0.0
            try:
                family = [proc, *proc.children(recursive=True)] if name == self.system else [proc]
            except psutil.Error:
                family = []
            for p in family:
                try:
                    t = p.cpu_times()
                    total += t.user + t.system
                except psutil.Error:
                    continue
            out[name] = total
        return out


def venv(peer: str) -> Path:
    return ROOT / "var" / "peers" / peer / "venv"


def version(peer: str) -> str:
    dist = {
        "fastapi": "fastapi",
        "litserve": "litserve",
        "mlserver": "mlserver",
        "bentoml": "bentoml",
        "ray": "ray",
    }[peer]
    code = f"import importlib.metadata as m; print(m.version({dist!r}))"
    done = subprocess.run([str(venv(peer) / "bin" / "python"), "-c", code], capture_output=True, text=True)
    return done.stdout.strip() or "?"


def mlserver_repo(root: Path, port: int, models: list[str], ports: tuple[int, int]) -> Path:
    """MLServer's model repository: settings.json (ports) and one folder per model and batching mode."""
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    settings = {
        "http_port": port,
        "grpc_port": ports[0],
        "metrics_port": ports[1],
        "host": "127.0.0.1",
        "debug": False,
    }
    (root / "settings.json").write_text(json.dumps(settings))
    for model in models:
        for batched in (False, True):
            name = f"{model}-batched" if batched else model
            (root / name).mkdir()
            spec: dict[str, Any] = {
                "name": name,
                "implementation": "mlserver_runtime.OnnxRuntime",
                "parameters": {"extra": {"model": model}},
            }
            if batched:
                spec |= {"max_batch_size": MAX_BATCH, "max_batch_time": BATCH_WAIT_S}
            (root / name / "model-settings.json").write_text(json.dumps(spec))
    return root


def start_peer(
    peer: str,
    port: int,
    core: int,
    models_dir: Path,
    models: list[str],
    logs: Path,
    free_port: Callable[[], int],
) -> Server:
    bin_dir = venv(peer) / "bin"
    env = {
        **os.environ,
        "PEERS_MODELS": str(models_dir.resolve()),
        # the servers by their file names (MLServer's runtime, BentoML's service), and what they share as
        # `bench.goals.peers.servers.common`
        "PYTHONPATH": os.pathsep.join([str(SERVERS), str(ROOT)]),
        "RAY_USAGE_STATS_ENABLED": "0",
        "BENTOML_DO_NOT_TRACK": "true",
        "ORT_DISABLE_TELEMETRY": "1",  # as in infaas's processes (infaas/__init__.py)
        "BENTOML_HOME": str((logs / "bentoml-home").resolve()),
        "OMP_NUM_THREADS": "1",
    }
    for var in ("VIRTUAL_ENV", "PYTHONHOME"):
        env.pop(var, None)
    cwd = ROOT
    if peer == "fastapi":
        cmd = [str(bin_dir / "python"), str(SERVERS / "fastapi_server.py"), str(port)]
    elif peer == "litserve":
        cmd = [str(bin_dir / "python"), str(SERVERS / "litserve_server.py"), str(port)]
    elif peer == "ray":
        cmd = [str(bin_dir / "python"), str(SERVERS / "ray_server.py"), str(port)]
    elif peer == "mlserver":
        repo = mlserver_repo(logs / "mlserver-repo", port, models, (free_port(), free_port()))
        cmd = [str(bin_dir / "mlserver"), "start", str(repo)]
    elif peer == "bentoml":
        cmd = [
            str(bin_dir / "bentoml"),
            "serve",
            "bentoml_service:Peers",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
        ]
        cwd = SERVERS
    else:
        raise ValueError(peer)
    log = open(logs / f"{peer}.log", "ab")  # noqa: SIM115 - the child keeps it
    proc = subprocess.Popen(
        cmd,
        cwd=cwd,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        preexec_fn=pin(core),
    )
    log.close()

    def stop() -> None:
        server.hold(False)
        try:
            family = [psutil.Process(proc.pid), *psutil.Process(proc.pid).children(recursive=True)]
        except psutil.Error:
            family = []
        for p in family:  # only what this bench started: the server and its descendants
            try:
                p.terminate()
            except psutil.Error:
                pass
        _, alive = psutil.wait_procs(family, timeout=10)
        for p in alive:
            try:
                p.kill()
            except psutil.Error:
                pass

    server = Server(peer, port, {peer: psutil.Process(proc.pid)}, stop, version(peer))
    return server


def wait_ready(eps: list[Endpoint], rows: np.ndarray, timeout_s: float, alive: Callable[[], bool]) -> None:
    """Until one query to every endpoint answers 200, or `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    pending = list(eps)
    while pending:
        ep = pending[0]
        status, body = post(ep, rows[:1])
        if status == 200:
            pending.pop(0)
            continue
        if not alive():
            raise RuntimeError(f"{ep.system} exited while starting; see its log")
        if time.monotonic() > deadline:
            raise RuntimeError(
                f"{ep.system} {ep.path} not ready after {timeout_s:.0f} s: {status} {body[:300]!r}"
            )
        time.sleep(1.0)


def post(ep: Endpoint, rows: np.ndarray, i: int = 0) -> tuple[int, bytes]:
    """One blocking request (setup and correctness checks only, never under load)."""
    raw = ep.requests(rows)(i)
    head, _, body = raw.partition(b"\r\n\r\n")
    headers = dict(line.split(": ", 1) for line in head.decode().split("\r\n")[2:])
    req = urllib.request.Request(
        f"http://127.0.0.1:{ep.port}{ep.path}", data=body, method="POST", headers=headers
    )
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()
    except (urllib.error.URLError, OSError) as exc:
        return 0, str(exc).encode()
