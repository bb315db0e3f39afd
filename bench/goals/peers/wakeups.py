"""What an idle infaas suite does to its core, counted rather than timed: per process, wake-ups (context
switches of all its threads) and CPU per second, for one or more suites side by side.

    .venv/bin/python -m bench.goals.peers.wakeups --suite default --suite INFAAS_EXECUTOR_MODE=embedded

A wake-up is what a query on the same core can queue behind; their count does not depend on how noisy
the host is, where a probe's p99 (`background.py`) moves from run to run. Each `--suite` (`default`,
or `NAME=VALUE` in the environment its processes read their settings from; `PYTHONPATH=<a worktree>`
runs another build's code) is a whole system pinned to the server core with `--model` registered. The
suites take turns, `--rounds` times: each one running alone (the others paused with SIGSTOP), settled
for 3 s, then counted over `--seconds`.

With `--busy` the same window is traced with `perf sched` on the server core (`busy.py`): the time the
core spent in busy periods, how much of it in periods of 2, 5 and 10 ms or more, and who filled the long
ones. That is what a query arriving at a random moment waits behind.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from bench.common import peer_models as model_build
from bench.goals.peers import busy
from bench.goals.peers.background import start_suites
from bench.goals.peers.infaas_side import pause
from bench.goals.peers.systems import MODELS_DIR, Server

SETTLE_S = 3.0


def switches(pid: int) -> int:
    """Context switches, voluntary and not, of every live thread of `pid` so far (a thread that ended
    takes its count with it: a pool thread ending within the window undercounts, never overcounts)."""
    total = 0
    for status in Path(f"/proc/{pid}/task").glob("*/status"):
        try:
            for line in status.read_text().splitlines():
                if "ctxt_switches" in line:
                    total += int(line.split()[1])
        except OSError:
            continue
    return total


def count(
    server: Server, seconds: float, trace_core: int | None = None
) -> tuple[dict[str, float], dict[str, float], busy.BusyPeriods | None]:
    """Per process: wake-ups per second and CPU in ms per second over `seconds`; with `trace_core`,
    that core's busy periods over the same window."""
    w0 = {name: switches(p.pid) for name, p in server.procs.items()}
    c0 = server.cpu_s()
    periods = None
    if trace_core is None:
        time.sleep(seconds)
    else:
        periods = busy.record(trace_core, seconds, {p.pid: name for name, p in server.procs.items()})
    w1 = {name: switches(p.pid) for name, p in server.procs.items()}
    c1 = server.cpu_s()
    wakes = {n: max(0.0, (w1[n] - w0[n]) / seconds) for n in w0}
    cpu = {n: (c1[n] - c0[n]) / seconds * 1000 for n in c0 if n in c1}
    return wakes, cpu, periods


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--suite", action="append", default=[], metavar="default|NAME=VALUE")
    p.add_argument("--model", default="tiny", choices=list(model_build.SPECS))
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--seconds", type=float, default=10.0)
    p.add_argument("--server-core", type=int, default=0)
    p.add_argument("--client-core", type=int, default=1)
    p.add_argument("--busy", action="store_true", help="also trace the server core's busy periods (perf)")
    a = p.parse_args()
    if a.busy and not busy.available():
        p.error("--busy needs perf (linux-perf) and the right to trace the scheduler")
    specs = a.suite or ["default"]
    os.sched_setaffinity(0, {a.client_core})
    model_build.prepare(MODELS_DIR)
    suites = start_suites(specs, a.server_core, a.client_core, a.model)
    totals: dict[str, list[tuple[dict[str, float], dict[str, float], busy.BusyPeriods | None]]] = {
        s: [] for s in specs
    }
    try:
        for _ in range(a.rounds):
            for spec, server in suites.items():
                pause(server, False)
                time.sleep(SETTLE_S)
                totals[spec].append(count(server, a.seconds, a.server_core if a.busy else None))
                pause(server, True)
                wakes, cpu, periods = totals[spec][-1]
                print(
                    f"  {spec:32s} wake-ups/s {sum(wakes.values()):5.0f}  CPU ms/s {sum(cpu.values()):5.1f}"
                )
                if periods is not None:
                    print(f"  {'':32s} {periods.summary()}")
    finally:
        for server in suites.values():
            pause(server, False)
            server.stop()
    print(f"\nidle, mean of {a.rounds} rounds of {a.seconds:.0f} s ({a.model} registered):")
    for spec, rows in totals.items():
        names = list(rows[0][0])
        wakes = {n: sum(r[0].get(n, 0.0) for r in rows) / len(rows) for n in names}
        cpu = {n: sum(r[1].get(n, 0.0) for r in rows) / len(rows) for n in names}
        print(f"  {spec}: wake-ups/s {sum(wakes.values()):.0f}, CPU ms/s {sum(cpu.values()):.1f}")
        print("    " + ", ".join(f"{n} {wakes[n]:.0f}/s {cpu[n]:.1f} ms" for n in names))
        traced = [r[2] for r in rows if r[2] is not None]
        if traced:
            mean = {x: sum(t.long_ms_per_s(x) for t in traced) / len(traced) for x in busy.LONG_MS}
            longest = max((max(t.lengths_ms, default=0.0) for t in traced), default=0.0)
            busy_ms = sum(t.busy_ms_per_s() for t in traced) / len(traced)
            long = " / ".join(f"{mean[x]:.1f}" for x in busy.LONG_MS)
            print(
                f"    server core busy {busy_ms:.1f} ms/s; in periods >= 2/5/10 ms: {long} ms/s;"
                f" longest {longest:.1f} ms"
            )
            filled: dict[str, float] = {}
            for t in traced:
                for who, ms in t.in_long.items():
                    filled[who] = filled.get(who, 0.0) + ms / len(traced)
            top = sorted(filled.items(), key=lambda kv: -kv[1])[:8]
            print("    CPU ms/s inside periods >= 5 ms: " + ", ".join(f"{w} {v:.1f}" for w, v in top))


if __name__ == "__main__":
    main()
