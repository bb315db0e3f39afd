"""Whether the OS scheduler can keep the suite's background out of a query's way at one model's low rate:
one suite, its processes' CPU scheduling changed between rounds (interleaved, the order reversed every
other round), against the peer alone:
- `infaas`: the suite as `infaas run` starts it;
- `infaas, background nice N`: every thread of the registry, planner, profiler, jobs worker and Redis at
  nice N (the control plane and the commands it sends: no query waits on them in push dispatch);
- `infaas, data plane slice S µs`: every thread of the gateway and executor at nice 0 with an EEVDF
  slice of S µs (`sched_setattr`; a waking task with a shorter slice than the running one preempts it);
- `infaas, background slice S µs`: every thread of the background at nice 0 with an EEVDF slice of S µs
  (a task the scheduler picked runs its slice before a waking one of equal slice may take the core, so
  a query that wakes behind a planner tick waits out up to a whole default slice; behind a short one, S);
- the peer alone (the suite paused, as in `low_rate.py`).

    .venv/bin/python -m bench.goals.peers.priority --peer fastapi --model tiny --rounds 6   # ~10 min, as root

Renicing a thread back to 0 needs root (CAP_SYS_NICE). A diagnostic: what it finds decides whether
`infaas run` should start its processes so, not a way to run them.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import psutil

from bench.common import peer_models as model_build
from bench.common.paths import ROOT
from bench.diagnostics.cpu_priority import set_slice
from bench.goals.peers import measure, systems
from bench.goals.peers.infaas_side import PAUSABLE_HEARTBEAT_TTL_S, environment, members, pause, start_infaas
from bench.goals.peers.systems import LOW_RATE, MODELS_DIR
from infaas.processes.suite import free_port

BACKGROUND = ("registry", "planner", "profiler", "jobs", "redis")
DATA_PLANE = ("gateway", "executor")
ROUND_S = 20.0


def threads(server: systems.Server, names: tuple[str, ...]) -> list[int]:
    """Every thread of the suite's processes named `names` (a Celery worker's pool processes too)."""
    out: list[int] = []
    for member in members(server, names):
        try:
            out += [t.id for t in member.threads()]
        except psutil.Error:
            continue  # a process that ended meanwhile
    return out


def schedule(server: systems.Server, nice: int, slice_us: int, background_slice_us: int = 0) -> None:
    """The background's threads at `nice` with a `background_slice_us` slice, the data plane's with a
    `slice_us` slice (0: the kernel's default slice)."""
    for tid in threads(server, BACKGROUND):
        set_slice(tid, background_slice_us * 1000, nice)
    for tid in threads(server, DATA_PLANE):
        set_slice(tid, slice_us * 1000, 0)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--peer", default="fastapi", choices=list(systems.PEERS))
    p.add_argument("--model", default="tiny", choices=list(model_build.SPECS))
    p.add_argument("--rounds", type=int, default=6)
    p.add_argument("--nice", type=int, default=10, help="the background's nice value in its condition")
    p.add_argument("--slice-us", type=int, default=100, help="the data plane's slice in its condition")
    p.add_argument(
        "--background-slice-us", type=int, default=100, help="the background's slice in its condition"
    )
    p.add_argument(
        "--only",
        nargs="+",
        choices=("nice", "slice", "background-slice"),
        default=["nice", "slice", "background-slice"],
        help="the changed conditions to run (`infaas` and `alone` always run)",
    )
    a = systems.parse_pinned(p)
    _, rows = model_build.prepare(MODELS_DIR)
    rate = LOW_RATE.get(a.model, 20.0)
    changed = {
        "nice": (f"infaas, background nice {a.nice}", (a.nice, 0, 0)),
        "slice": (f"infaas, data plane slice {a.slice_us} µs", (0, a.slice_us, 0)),
        "background-slice": (
            f"infaas, background slice {a.background_slice_us} µs",
            (0, 0, a.background_slice_us),
        ),
    }
    conditions: dict[str, tuple[int, int, int]] = {
        "infaas": (0, 0, 0),
        **dict(changed[k] for k in a.only),
        "alone": (0, 0, 0),
    }
    servers: dict[str, systems.Server] = {}
    try:
        with environment({"INFAAS_HEARTBEAT_TTL_S": PAUSABLE_HEARTBEAT_TTL_S}):
            suite, key = start_infaas(
                a.server_core, a.client_core, ROOT / "var" / "peers" / "priority", MODELS_DIR, [a.model]
            )
        servers["infaas"] = suite
        logs = ROOT / "var" / "peers" / "priority_logs"
        logs.mkdir(parents=True, exist_ok=True)
        peer = servers[a.peer] = systems.start_peer(
            a.peer, free_port(), a.server_core, MODELS_DIR, [a.model], logs, free_port
        )
        ours = systems.endpoints("infaas", suite.port, [a.model], {"Authorization": f"Bearer {key}"})[0]
        theirs = systems.endpoints(a.peer, peer.port, [a.model])[0]
        systems.wait_ready([theirs], rows, 300, lambda: True)
        peer.hold(True)
        runner = measure.Runner(a.server_core, 64, 0.5, {})

        def run(label: str, seconds: float) -> dict[str, Any]:
            if label == "alone":
                pause(suite, True)
                peer.hold(False)
                try:
                    return runner.open_loop(theirs, peer, rows, rate, seconds, keep_latencies=True)
                finally:
                    peer.hold(True)
                    pause(suite, False)
                    time.sleep(1.0)  # the suite's catching up after the pause
            schedule(suite, *conditions[label])
            time.sleep(0.5)
            return runner.open_loop(ours, suite, rows, rate, seconds, keep_latencies=True)

        pooled = measure.interleaved(run, list(conditions), a.rounds, ROUND_S)
        print(f"\n{a.model} at {rate:.0f}/s, {a.rounds} rounds of {ROUND_S:.0f} s, against {a.peer} alone:")
        for label, got in pooled.items():
            print(f"  {label:34s} n={len(got)}  {measure.against(got, pooled['alone'])} ms")
    finally:
        if "infaas" in servers:
            schedule(servers["infaas"], 0, 0, 0)
            pause(servers["infaas"], False)
        for server in servers.values():
            server.stop()


if __name__ == "__main__":
    main()
