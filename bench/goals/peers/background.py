"""What an idle infaas suite's background costs a query on the same core, with FastAPI (the best peer at
the low rate, `low_rate.py`) as a fixed probe: its query path does not change between conditions, so
what moves its latency is what else runs on the core.

    .venv/bin/python -m bench.goals.peers.build fastapi
    .venv/bin/python -m bench.goals.peers.background --suite default --suite INFAAS_PULSE_INTERVAL_S=0

Each `--suite` (`default`, or `NAME=VALUE` in the environment its processes read their settings from)
is a whole system pinned to the server core with `--model` registered, then left idle. The conditions,
measured in rounds of `--seconds` at `--rate` whose order alternates:
- each suite running alone (every other suite paused with SIGSTOP);
- the same with its control plane (planner, registry, profiler, jobs) paused too: what is left is the
  data plane's own background (gateway, executor, Redis);
- no suite running: the probe alone on the core.

Suites start with `infaas_side.PAUSABLE_HEARTBEAT_TTL_S`: a suite paused for a few rounds must not read
its own workers as gone when it wakes. Printed first: each suite's idle CPU per process.
"""

from __future__ import annotations

import argparse
import time

from bench.common import peer_models as model_build
from bench.common.paths import ROOT
from bench.goals.peers import measure, systems
from bench.goals.peers.infaas_side import PAUSABLE_HEARTBEAT_TTL_S, environment, pause, start_infaas
from bench.goals.peers.low_rate import idle_cpu
from bench.goals.peers.systems import MODELS_DIR, Server
from infaas.processes.suite import free_port

CONTROL_PLANE = ("planner", "registry", "profiler", "jobs")
NONE = "no suite"


def start_suites(specs: list[str], core: int, client_core: int, model: str) -> dict[str, Server]:
    suites: dict[str, Server] = {}
    try:
        for i, spec in enumerate(specs):
            name, sep, value = spec.partition("=")
            env = {"INFAAS_HEARTBEAT_TTL_S": PAUSABLE_HEARTBEAT_TTL_S, **({name: value} if sep else {})}
            with environment(env):
                var = ROOT / "var" / "peers" / f"background-{i}"
                suites[spec] = start_infaas(core, client_core, var, MODELS_DIR, [model])[0]
            pause(suites[spec], True)  # the next one registers on a quiet core
    except BaseException:
        for server in suites.values():
            pause(server, False)
            server.stop()
        raise
    return suites


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--suite", action="append", default=[], help="default, or NAME=VALUE (repeatable)")
    p.add_argument("--model", default="tiny", choices=list(model_build.SPECS))
    p.add_argument("--rate", type=float, default=50.0)
    p.add_argument("--seconds", type=float, default=6.0)
    p.add_argument("--rounds", type=int, default=6)
    a = systems.parse_pinned(p)
    specs = a.suite or ["default"]
    _, rows = model_build.prepare(MODELS_DIR)
    logs = ROOT / "var" / "peers" / "background_logs"
    logs.mkdir(parents=True, exist_ok=True)
    suites = start_suites(specs, a.server_core, a.client_core, a.model)
    probe = None
    try:
        probe = systems.start_peer(
            "fastapi", free_port(), a.server_core, MODELS_DIR, [a.model], logs, free_port
        )
        ep = systems.endpoints("fastapi", probe.port, [a.model])[0]
        systems.wait_ready([ep], rows, 120, lambda: True)
        for spec, server in suites.items():
            pause(server, False)
            time.sleep(3.0)
            idle = idle_cpu(server)
            print(f"{spec}: idle, ms of CPU per s: {idle}, total {sum(idle.values()):.0f}", flush=True)
            pause(server, True)
        runner = measure.Runner(a.server_core, 64, 0.5, {})
        runner.open_loop(ep, probe, rows, a.rate, 2.0)  # warm, not recorded
        conditions = [(spec, False) for spec in specs] + [(spec, True) for spec in specs] + [(NONE, False)]
        pooled: dict[str, list[float]] = {}
        for i in range(a.rounds):
            for spec, control_paused in conditions if i % 2 == 0 else conditions[::-1]:
                label = f"{spec}, control plane paused" if control_paused else spec
                running = suites.get(spec)
                if running is not None:
                    pause(running, False)
                    if control_paused:
                        pause(running, True, CONTROL_PLANE)
                    time.sleep(1.0)  # what its wake-up owes (heartbeats, pulses) done first
                try:
                    r = runner.open_loop(ep, probe, rows, a.rate, a.seconds, keep_latencies=True)
                finally:
                    if running is not None:
                        pause(running, True)
                pooled.setdefault(label, []).extend(r["latencies_ms"])
                print(f"  {label:48s} {measure.round_line(r)}", flush=True)
        print(f"\nfastapi probe, {a.model} at {a.rate:g}/s, pooled over {a.rounds} rounds:")
        for label, lat in pooled.items():
            print(f"  {label:48s} n={len(lat)}  {measure.against(lat, pooled[NONE], digits=3)}")
    finally:
        if probe is not None:
            probe.stop()
        for server in suites.values():
            pause(server, False)
            server.stop()


if __name__ == "__main__":
    main()
