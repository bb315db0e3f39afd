"""How much of infaas's low-rate latency is its own background: three conditions at one model's low rate,
interleaved in rounds whose order reverses every other round:
- `infaas`: the suite as configured;
- `infaas, quiet`: a second suite with no pulses (`INFAAS_PULSE_INTERVAL_S=0`) whose registry, planner,
  profiler and jobs worker are stopped (SIGSTOP) for each of its rounds, after a second of running
  whole (the gateway's caches then hold fresh keys and models): what is left on the core is the query
  path alone (gateway, executor, Redis) and the host;
- the peer alone (both suites stopped).

    .venv/bin/python -m bench.goals.peers.quiet --peer fastapi --model tiny --rounds 6

The quiet suite is not a configuration to run: with its control plane stopped nothing would notice a
failure. It bounds what removing the background could gain.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from bench.common import peer_models as model_build
from bench.common.paths import ROOT
from bench.goals.peers import measure, systems
from bench.goals.peers.infaas_side import PAUSABLE_HEARTBEAT_TTL_S, environment, pause, start_infaas
from bench.goals.peers.systems import LOW_RATE, MODELS_DIR
from infaas.processes.suite import free_port

CONTROL_PLANE = ("registry", "planner", "profiler", "jobs")
ROUND_S = 20.0


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--peer", default="fastapi", choices=list(systems.PEERS))
    p.add_argument("--model", default="tiny", choices=list(model_build.SPECS))
    p.add_argument("--rounds", type=int, default=6)
    a = systems.parse_pinned(p)
    _, rows = model_build.prepare(MODELS_DIR)
    rate = LOW_RATE.get(a.model, 20.0)
    var = ROOT / "var" / "peers"
    servers: dict[str, systems.Server] = {}
    keys: dict[str, str] = {}
    try:
        with environment({"INFAAS_HEARTBEAT_TTL_S": PAUSABLE_HEARTBEAT_TTL_S}):
            servers["infaas"], keys["infaas"] = start_infaas(
                a.server_core, a.client_core, var / "quiet-a", MODELS_DIR, [a.model]
            )
            pause(servers["infaas"], True)
            with environment({"INFAAS_PULSE_INTERVAL_S": "0"}):
                servers["quiet"], keys["quiet"] = start_infaas(
                    a.server_core, a.client_core, var / "quiet-b", MODELS_DIR, [a.model]
                )
            pause(servers["quiet"], True)
        logs = var / "quiet_logs"
        logs.mkdir(parents=True, exist_ok=True)
        servers[a.peer] = systems.start_peer(
            a.peer, free_port(), a.server_core, MODELS_DIR, [a.model], logs, free_port
        )
        eps = {
            label: systems.endpoints(
                "infaas", servers[label].port, [a.model], {"Authorization": f"Bearer {key}"}
            )[0]
            for label, key in keys.items()
        }
        eps[a.peer] = systems.endpoints(a.peer, servers[a.peer].port, [a.model])[0]
        systems.wait_ready([eps[a.peer]], rows, 300, lambda: True)
        servers[a.peer].hold(True)
        runner = measure.Runner(a.server_core, 64, 0.5, {})

        def run(label: str, seconds: float) -> dict[str, Any]:
            server = servers[label]
            if label in keys:
                pause(server, False)
                time.sleep(1.0)  # whole: heartbeats and the gateway's caches catch up
                if label == "quiet":
                    runner.open_loop(eps[label], server, rows, rate, 1.0)  # keys and models fresh
                    pause(server, True, CONTROL_PLANE)
                    time.sleep(0.5)
            else:
                server.hold(False)
            try:
                return runner.open_loop(eps[label], server, rows, rate, seconds, keep_latencies=True)
            finally:
                if label in keys:
                    pause(server, True)
                else:
                    server.hold(True)

        pooled = measure.interleaved(run, list(eps), a.rounds, ROUND_S)
        print(f"\n{a.model} at {rate:.0f}/s, {a.rounds} rounds of {ROUND_S:.0f} s:")
        for label, got in pooled.items():
            print(f"  {label:8s} n={len(got)}  {measure.against(got, pooled[a.peer])} ms")
    finally:
        for label, server in servers.items():
            if label in keys:
                pause(server, False)
            server.stop()


if __name__ == "__main__":
    main()
