"""Side by side with the servers people would pick instead: FastAPI (+ uvicorn, model inline), LitServe,
MLServer, BentoML and Ray Serve, each batching on and off where it batches, against infaas, on the same
three ONNX models (`models.py`) with the same ONNX Runtime settings, in one run.

Every server runs at once, pinned to the server core (`--server-core`, infaas's whole suite included);
this process, the load generator, runs on the other one. The measurements are interleaved: per model,
each phase visits every endpoint in turn before the next phase starts, so that a noisy stretch of the
shared host falls on all of them rather than on one. Per model:
1. a closed-loop cross-check: `--concurrency` clients back to back for `--closed-s` seconds;
2. a fixed low rate (`--low-rate`) of open-loop Poisson arrivals for `--low-s` seconds, `--low-rounds`
   times, each round in another order: p50/p99/p99.9 from the scheduled send time over every round's
   queries pooled, and CPU per query of each server process;
3. the highest open-loop rate whose p99 (failures counted as misses) is ≤ `--slo-ms` with no error:
   from 0.3× the closed-loop throughput, ×2 or ÷2 to bracket, then bisection, all endpoints' searches
   advancing one run at a time in turn; a run that fails in its tail alone is run once more, and the
   second run decides (`measure.max_rate_search`).
Before that, every endpoint's answers are checked against the model run in-process. Results go to a
JSON file; `report.py` turns it into the tables and plots of docs/benchmarks.md.

    .venv/bin/python -m bench.goals.peers.build            # once: the peers' virtualenvs
    .venv/bin/python -m bench.goals.peers.run              # ~28 min; --quick for a smoke run
    .venv/bin/python -m bench.goals.peers.report var/peers/results.json

Before/after in one run: `--build NAME=PATH` names another checkout (with its own `.venv`), measured as
the system `infaas@NAME` beside this build, in the same interleaved rounds:

    .venv/bin/python -m bench.goals.peers.run --systems infaas infaas@before fastapi --build before=/tmp/base

With more than one infaas suite, only one runs at a time: the measured one when an infaas endpoint is
measured, this build's when a peer is, the others paused whole (SIGSTOP, with a heartbeat TTL that
outlasts the pause), so each sees the same background as in a run with one suite.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import platform
import signal
import sys
import time
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort
import psutil

from bench.common import peer_models as model_build
from bench.common.paths import ROOT
from bench.goals.peers import infaas_side, measure, systems
from bench.goals.peers.systems import LOW_RATE, MODELS_DIR, Endpoint, Server
from infaas.processes.suite import free_port

PAUSED_SUITE_HEARTBEAT_TTL_S = "900"
"""With several infaas suites, each is paused while the others and the peers are measured: up to a whole
rotation of a phase over every endpoint (minutes in the max-rate search), longer than the pause that
`infaas_side.PAUSABLE_HEARTBEAT_TTL_S` is set for. Silent workers count as gone only after it."""


def parse() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument(
        "--systems",
        nargs="+",
        default=["infaas", *systems.PEERS],
        help="infaas (this build), infaas@NAME (a --build), or peers: " + " ".join(systems.PEERS),
    )
    p.add_argument(
        "--build",
        action="append",
        default=[],
        metavar="NAME=PATH",
        help="another checkout of infaas with its own .venv, measured as the system infaas@NAME",
    )
    p.add_argument("--models", nargs="+", default=list(model_build.SPECS))
    p.add_argument(
        "--model-less",
        nargs="*",
        default=["heavy", "fixed"],
        help="models that also get an infaas model-less endpoint (none: no alternatives registered)",
    )
    p.add_argument("--server-core", type=int, default=0)
    p.add_argument("--client-core", type=int, default=1)
    p.add_argument("--low-s", type=float, default=6.0)
    p.add_argument("--low-rounds", type=int, default=3, help="low-rate rounds; the median p99 is reported")
    p.add_argument("--closed-s", type=float, default=3.0)
    p.add_argument("--concurrency", type=int, default=8)
    p.add_argument("--slo-ms", type=float, default=50.0)
    p.add_argument("--search-runs", type=int, default=4)
    p.add_argument("--search-s", type=float, default=3.0, help="each search run: ≥ this long and 150 queries")
    p.add_argument("--tolerance", type=float, default=0.2)
    p.add_argument(
        "--no-confirm", action="store_true", help="a search run that fails in its tail alone is not run again"
    )
    p.add_argument("--connections", type=int, default=64)
    p.add_argument("--pause", type=float, default=0.5)
    p.add_argument("--out", type=Path, default=ROOT / "var" / "peers" / "results.json")
    p.add_argument("--quick", action="store_true", help="smoke run: 2 s phases, 2 search runs")
    a = p.parse_args()
    a.builds = infaas_side.parse_builds(a.build)
    unknown = [s for s in a.systems if s.startswith(infaas_side.BUILD_PREFIX) and s not in a.builds]
    if unknown:
        p.error(f"{', '.join(unknown)}: no --build NAME=PATH for them")
    if a.quick:
        a.low_s, a.closed_s, a.search_runs, a.search_s, a.low_rounds = 2.0, 1.0, 2, 1.0, 1
    return a


def in_process_ms(session: ort.InferenceSession, rows: np.ndarray) -> dict[str, float]:
    out = {}
    for n in (1, 32):
        x = np.ascontiguousarray(rows[:n], dtype=np.float32)
        for _ in range(3):
            session.run(None, {"x": x})
        samples = []
        for _ in range(20):
            t = time.perf_counter()
            session.run(None, {"x": x})
            samples.append((time.perf_counter() - t) * 1000)
        out[str(n)] = float(np.median(samples))
    return out


def start_all(
    a: argparse.Namespace,
    models_dir: Path,
    logs: Path,
    rows: np.ndarray,
    manifest: dict[str, dict[str, Any]],
) -> tuple[dict[str, Server], list[Endpoint], dict[str, str]]:
    servers: dict[str, Server] = {}
    eps: list[Endpoint] = []
    skipped: dict[str, str] = {}
    for system in a.systems:
        t0 = time.monotonic()
        try:
            if systems.is_infaas(system):
                server, key = infaas_side.start_infaas(
                    a.server_core,
                    a.client_core,
                    ROOT / "var" / "peers" / system,
                    models_dir,
                    a.models,
                    alternatives(a),
                    build=a.builds.get(system),
                )
                mine = systems.endpoints(system, server.port, a.models, {"Authorization": f"Bearer {key}"})
                less = {m: float(manifest[m]["accuracy"]) for m in a.model_less if m in a.models}
                mine += infaas_side.model_less_endpoints(server.port, key, less, system)
            else:
                if not (systems.venv(system) / "bin" / "python").exists():
                    raise RuntimeError(
                        f"no virtualenv at {systems.venv(system)}: run python -m bench.goals.peers.build"
                    )
                server = systems.start_peer(
                    system, free_port(), a.server_core, models_dir, a.models, logs, free_port
                )
                mine = systems.endpoints(system, server.port, a.models)
            servers[system] = server
            root = next(iter(server.procs.values()))
            systems.wait_ready(mine, rows, 300, partial(_alive, root))
            eps += mine
            server.hold(True)  # idle until measured, so as not to disturb the next one's start
            print(f"{system} {server.version}: ready in {time.monotonic() - t0:.0f} s", flush=True)
        except Exception as exc:  # one peer that cannot run here must not stop the others
            skipped[system] = f"{type(exc).__name__}: {exc}"
            print(f"{system}: skipped ({skipped[system]})", flush=True)
            if system in servers:
                servers.pop(system).stop()
    return servers, eps, skipped


def alternatives(a: argparse.Namespace) -> tuple[str, ...]:
    return tuple(model_build.ALTERNATIVES) if a.model_less else ()


def idle_cpu(servers: dict[str, Server], seconds: float) -> dict[str, float]:
    before = {k: sum(s.cpu_s().values()) for k, s in servers.items()}
    time.sleep(seconds)
    return {k: (sum(s.cpu_s().values()) - before[k]) / seconds for k, s in servers.items()}


class Focus:
    """Keeps only the measured system running beside the infaas suite: the other peers' processes
    SIGSTOPped. With several infaas suites (`--build`), one of them runs at a time: the measured one, or
    the first of `--systems` while a peer is measured; the others are paused whole (`infaas_side.pause`),
    so that every system meets the background of one idle suite, as in a run with one."""

    def __init__(self, servers: dict[str, Server], suites: list[str]) -> None:
        self.servers = servers
        self.suites = suites
        self.current: str | None = "(all running)"

    def __call__(self, system: str | None) -> None:
        """`None`: no peer running (between phases)."""
        if system == self.current:
            return
        awake = system if system in self.suites else next(iter(self.suites), None)
        for name, server in self.servers.items():
            if name not in self.suites:
                server.hold(name != system)
            elif len(self.suites) > 1:
                infaas_side.pause(server, name != awake)
        self.current = system
        time.sleep(0.3)

    def wake(self) -> None:
        """Every suite running again (a paused one answers nothing), the peers as they are."""
        for name in self.suites:
            infaas_side.pause(self.servers[name], False)
        self.current = "(all running)"


def rotate(items: list[Endpoint], k: int) -> list[Endpoint]:
    k %= max(1, len(items))
    return items[k:] + items[:k]


def measure_model(
    a: argparse.Namespace,
    runner: measure.Runner,
    model: str,
    eps: list[Endpoint],
    servers: dict[str, Server],
    rows: np.ndarray,
    session: ort.InferenceSession,
    records: dict[str, dict[str, Any]],
    focus: Focus,
) -> None:
    low = LOW_RATE.get(model, 20.0)
    for ep in eps:  # warm: a short run each, not recorded (first shapes, connection pools, autoscalers)
        focus(ep.system)
        runner.open_loop(ep, servers[ep.system], rows, low, 1.0 if a.quick else 2.0)
    print(f"\n== {model}: answers, closed loop ×{a.concurrency}", flush=True)
    for ep in rotate(eps, 0):
        rec = records[ep.label]
        focus(ep.system)
        rec["answers"] = measure.check_answers(ep, session, rows, 32)
        rec["closed"] = runner.closed_loop(ep, servers[ep.system], rows, a.concurrency, a.closed_s)
        c = rec["closed"]
        print(
            f"  {ep.label:16} {c['throughput']:7.0f}/s p50 {c['p50']:7.2f} p99 {c['p99']:7.2f} "
            f"errors {c['errors'] or 0} answers {rec['answers']}",
            flush=True,
        )
    print(f"== {model}: {low:.0f}/s open loop, {a.low_rounds} × {a.low_s:.0f} s", flush=True)
    for ep in eps:
        records[ep.label]["low_rounds"] = []
    # Rounds visit the endpoints in a different order each: a noisy stretch of the shared host falls on
    # different servers each round, and each server's round with the median p99 is reported.
    for i in range(a.low_rounds):
        for ep in rotate(eps, 1 + i):
            focus(ep.system)
            r = runner.open_loop(
                ep,
                servers[ep.system],
                rows,
                low,
                a.low_s,
                keep_bodies=systems.is_infaas(ep.system),
                keep_latencies=True,
            )
            records[ep.label]["low_rounds"].append(r)
            print(
                f"  {ep.label:16} p50 {r['p50']:7.2f} p99 {r['p99']:7.2f} p99.9 {r['p999']:7.2f} "
                f"errors {r['errors'] or 0} lag99 {r['send_lag_p99']:.2f} "
                f"other {r['other_on_server_core']:.2f}"
                + (f" variants {r.get('variants')}" if "variants" in r else ""),
                flush=True,
            )
    for ep in eps:
        records[ep.label]["low"] = measure.pooled(records[ep.label]["low_rounds"])
    print(f"== {model}: highest rate with p99 ≤ {a.slo_ms:.0f} ms", flush=True)
    searches = {}
    for ep in eps:
        start = max(10.0, 0.3 * records[ep.label]["closed"]["throughput"])
        gen = measure.max_rate_search(
            start, a.slo_ms, 20_000, a.search_runs, a.tolerance, confirm=not a.no_confirm
        )
        searches[ep.label] = (ep, gen, next(gen))
        records[ep.label]["search"] = []
    k = 2
    while searches:
        for label in [ep.label for ep in rotate([s[0] for s in searches.values()], k)]:
            ep, gen, rate = searches[label]
            duration = min(max(a.search_s, 150 / rate), 2 * a.search_s)
            focus(ep.system)
            # an answer 2 s late fails a 50 ms SLO whatever it says: no need to wait longer for it
            r = runner.open_loop(ep, servers[ep.system], rows, rate, duration, drain_s=2.0)
            records[label]["search"].append(r)
            try:
                searches[label] = (ep, gen, gen.send(r))
            except StopIteration as done:
                records[label]["max_rate"] = done.value
                print(f"  {label:16} {done.value:7.0f}/s", flush=True)
                del searches[label]
        k += 1


def main() -> None:
    a = parse()
    if sum(systems.is_infaas(s) for s in a.systems) > 1:  # suites are paused while another is measured
        os.environ.setdefault("INFAAS_HEARTBEAT_TTL_S", PAUSED_SUITE_HEARTBEAT_TTL_S)
    # stopped by a signal (also when started in the background, where SIGINT is ignored), the servers
    # this run started are still stopped by the `finally` below
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    signal.signal(signal.SIGINT, signal.default_int_handler)
    os.sched_setaffinity(0, {a.client_core})
    t_start = time.monotonic()
    manifest, rows = model_build.prepare(MODELS_DIR)
    logs = ROOT / "var" / "peers" / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    sessions = {m: measure.reference(str(MODELS_DIR / f"{m}.onnx")) for m in a.models}
    result: dict[str, Any] = {
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": {
            "cpus": os.cpu_count(),
            "cpu": _cpu_model(),
            "kernel": platform.release(),
            "python": platform.python_version(),
            "onnxruntime": ort.__version__,
        },
        "args": {k: str(v) for k, v in vars(a).items()},
        "models": {m: {**manifest[m], "in_process_ms": in_process_ms(sessions[m], rows)} for m in a.models},
        "loadavg_start": os.getloadavg(),
    }
    servers, eps, skipped = start_all(a, MODELS_DIR, logs, rows, manifest)
    try:
        result["versions"] = {k: s.version for k, s in servers.items()}
        result["skipped"] = skipped
        suites = [s for s in a.systems if s in servers and systems.is_infaas(s)]
        measured = [*a.models, *alternatives(a)]
        if "infaas" in servers:
            result["infaas_variants"] = infaas_side.variants(servers["infaas"].port, measured)
        result["build_variants"] = {
            s: infaas_side.variants(servers[s].port, measured) for s in suites if s != "infaas"
        }
        for server in servers.values():
            server.hold(False)
        result["idle_cpu_cores"] = idle_cpu(servers, 2.0 if a.quick else 5.0)
        focus = Focus(servers, suites)
        focus(None)
        print(f"idle CPU (cores): { {k: round(v, 3) for k, v in result['idle_cpu_cores'].items()} }")
        runner = measure.Runner(a.server_core, a.connections, a.pause, result["idle_cpu_cores"])
        records: dict[str, dict[str, Any]] = {}
        for model in a.models:
            mine = [ep for ep in eps if ep.model == model]
            for ep in mine:
                records[ep.label] = {"system": ep.system, "mode": ep.mode, "model": model}
            measure_model(a, runner, model, mine, servers, rows, sessions[model], records, focus)
            result.setdefault("endpoints", {})[model] = dict(records)
            records.clear()
            _write(a.out, result)
        focus.wake()
        if "infaas" in servers:
            result["infaas_events"] = infaas_side.events(servers["infaas"].port)
        result["build_events"] = {s: infaas_side.events(servers[s].port) for s in suites if s != "infaas"}
    finally:
        for name, server in servers.items():
            if systems.is_infaas(name):
                infaas_side.pause(server, False)  # a paused process would not hear its SIGTERM
            server.stop()
    result["loadavg_end"] = os.getloadavg()
    result["minutes"] = (time.monotonic() - t_start) / 60
    _write(a.out, result)
    print(f"\nwrote {a.out} after {result['minutes']:.1f} min")


def _alive(proc: psutil.Process) -> bool:
    try:
        return proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def _write(path: Path, result: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        json.dumps(
            result, indent=1, default=lambda v: None if isinstance(v, float) and math.isnan(v) else str(v)
        )
    )


if __name__ == "__main__":
    main()
