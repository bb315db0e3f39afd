"""What a query costs each process of the suite: CPU and context switches per query at a fixed open-loop
rate, with each process's idle rate (measured just before, for as long) taken off. Latency moves with
the host from run to run; CPU per query is steadier, which makes this the probe for a change to the
query path's own work.

    .venv/bin/python -m bench.goals.peers.cpu_per_query --model tiny --rate 50 --rounds 4
    .venv/bin/python -m bench.goals.peers.cpu_per_query --also INFAAS_PUSH_LOCAL_SOCKET=false --rounds 4

With `--also NAME=VALUE`, a second suite runs with that setting and the rounds alternate between the
two (A B B A …), each suite paused (SIGSTOP) while the other is measured. The suite is pinned to the
server core and the load generator to the client core, as in `low_rate.py`. CPU times come from the
kernel in 10 ms ticks: a round of 500 queries resolves ~20 µs a query.
"""

from __future__ import annotations

import argparse
import os
import time

from bench.common import peer_models as model_build
from bench.common.paths import ROOT
from bench.goals.peers import measure, systems
from bench.goals.peers.infaas_side import PAUSABLE_HEARTBEAT_TTL_S, environment, pause, start_infaas
from bench.goals.peers.systems import MODELS_DIR, Server


def switches(server: Server) -> dict[str, int]:
    """Context switches so far per process, all threads."""
    out: dict[str, int] = {}
    for name, proc in server.procs.items():
        total = 0
        try:
            for task in os.listdir(f"/proc/{proc.pid}/task"):
                with open(f"/proc/{proc.pid}/task/{task}/status") as fh:
                    for line in fh:
                        if line.startswith(("voluntary_ctxt", "nonvoluntary_ctxt")):
                            total += int(line.split()[1])
        except OSError:
            continue  # a thread that ended while being read
        out[name] = total
    return out


def round_of(
    runner: measure.Runner, server: Server, ep: systems.Endpoint, rows: object, a: argparse.Namespace
) -> None:
    cpu0, sw0, t0 = server.cpu_s(), switches(server), time.perf_counter()
    time.sleep(a.seconds)
    cpu1, sw1, t1 = server.cpu_s(), switches(server), time.perf_counter()
    idle_cpu = {k: (cpu1[k] - cpu0[k]) / (t1 - t0) for k in cpu1 if k in cpu0}
    idle_sw = {k: (sw1[k] - sw0[k]) / (t1 - t0) for k in sw1 if k in sw0}
    cpu0, sw0, t0 = server.cpu_s(), switches(server), time.perf_counter()
    r = runner.open_loop(ep, server, rows, a.rate, a.seconds)  # type: ignore[arg-type]
    cpu1, sw1, t1 = server.cpu_s(), switches(server), time.perf_counter()
    n = max(1, r["ok"])
    print(f"  n {r['ok']}  p50 {r['p50']:.2f}  p99 {r['p99']:.2f} ms  errors {r['errors'] or 0}")
    total = 0.0
    for k in sorted(idle_cpu, key=lambda k: -(cpu1[k] - cpu0[k])):
        busy = (cpu1[k] - cpu0[k]) - idle_cpu[k] * (t1 - t0)
        total += busy
        sw = (sw1.get(k, 0) - sw0.get(k, 0)) - idle_sw.get(k, 0.0) * (t1 - t0)
        print(
            f"    {k:10s} {busy / n * 1e6:6.0f} µs and {sw / n:5.2f} switches a query; "
            f"idle {idle_cpu[k] * 1000:5.1f} ms and {idle_sw.get(k, 0.0):5.1f} switches a second"
        )
    print(f"    all        {total / n * 1e6:6.0f} µs a query", flush=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--model", default="tiny", choices=list(model_build.SPECS))
    p.add_argument("--rate", type=float, default=50.0)
    p.add_argument("--seconds", type=float, default=10.0)
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--also", metavar="NAME=VALUE", help="a second suite with this setting, alternated")
    a = systems.parse_pinned(p)
    _, rows = model_build.prepare(MODELS_DIR)
    specs: list[tuple[str, dict[str, str]]] = [("as configured", {})]
    if a.also:
        name, sep, value = a.also.partition("=")
        if not sep:
            p.error("--also takes NAME=VALUE")
        specs.append((a.also, {name: value}))
    suites: dict[str, tuple[Server, systems.Endpoint]] = {}
    try:
        for i, (label, env) in enumerate(specs):
            with environment({"INFAAS_HEARTBEAT_TTL_S": PAUSABLE_HEARTBEAT_TTL_S, **env}):
                var = ROOT / "var" / "peers" / f"cpu_per_query-{i}"
                server, key = start_infaas(a.server_core, a.client_core, var, MODELS_DIR, [a.model])
            ep = systems.endpoints("infaas", server.port, [a.model], {"Authorization": f"Bearer {key}"})[0]
            systems.wait_ready([ep], rows, 300, lambda: True)
            suites[label] = (server, ep)
            pause(server, True)
        runner = measure.Runner(a.server_core, 64, 0.5, {})
        labels = list(suites)
        for i in range(a.rounds):
            for label in labels if i % 2 == 0 else labels[::-1]:
                server, ep = suites[label]
                pause(server, False)
                time.sleep(2.0)  # its loops catch up on what they missed while paused
                print(f"{label}, round {i + 1}: {a.model} at {a.rate:.0f}/s for {a.seconds:.0f} s")
                round_of(runner, server, ep, rows, a)
                pause(server, True)
    finally:
        for server, _ in suites.values():
            pause(server, False)
            server.stop()


if __name__ == "__main__":
    main()
