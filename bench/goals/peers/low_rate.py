"""The low-rate goal alone, with more queries than `run.py` gives it: infaas against one peer at each
model's low rate (`systems.LOW_RATE`), in many rounds whose order alternates, every answered query
pooled per condition. At 20 q/s a `run.py` run has ~360 queries per endpoint, so its p99 is the
4th-slowest query and moves by a third from one run to the next.

Three conditions per model, interleaved in time so that the host's noisy and quiet stretches fall on
each alike:
- `infaas`: a query through the whole suite;
- the peer beside the idle suite (its processes keep their background on the core, as in `run.py`);
- the peer alone: the whole suite paused with SIGSTOP for the round (`infaas_side.pause`, all its
  processes at once; the suite runs with a heartbeat TTL that outlasts the pause). The reference the
  goal is judged against.

    .venv/bin/python -m bench.goals.peers.low_rate --peer fastapi --models tiny fixed heavy --rounds 6
    .venv/bin/python -m bench.goals.peers.low_rate --peer fastapi --models tiny fixed heavy --rounds 6 \
        --also INFAAS_EXECUTOR_MODE=embedded

`--also` adds a second infaas suite with other settings, and `--build NAME=PATH` the suite of another
checkout (its own `.venv`, its own code: `infaas_side.Build`) as `infaas@NAME`, for a before/after in
one run; each is measured in the same rounds. Each suite is paused (SIGSTOP, as for `alone`) while the
others' rounds run, and the peer "beside the idle suite" runs beside the first (default) suite only.

    .venv/bin/python -m bench.goals.peers.low_rate --peer fastapi --models tiny --rounds 12 \
        --build before=/tmp/base

Each ratio comes with a 90 % interval: the rounds resampled with replacement (round i of each condition
kept together, as they ran minutes apart at most), the pooled percentiles' ratio of each resample. An
interval across 1.0× says the run cannot tell the two apart at that percentile. The rounds' latencies are
kept in `var/peers/low_rate_logs/rounds-<time>.json`; `--report FILE` prints a kept run again.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np

from bench.common import peer_models as model_build
from bench.common.paths import ROOT
from bench.goals.peers import measure, systems
from bench.goals.peers.infaas_side import (
    PAUSABLE_HEARTBEAT_TTL_S,
    Build,
    environment,
    parse_builds,
    pause,
    start_infaas,
)
from bench.goals.peers.systems import LOW_RATE, MODELS_DIR, Endpoint, Server
from infaas.processes.suite import free_port

ROUND_S = 6.0
RESAMPLES = 2000
ALONE = "alone"
"""The condition label of the peer measured with the suite paused."""


Condition = tuple[str, Endpoint, Server, list[Server]]
"""A condition's label, its endpoint, the server that answers it, and the suites paused meanwhile."""


def rounds(
    runner: measure.Runner, conditions: list[Condition], rows: np.ndarray, rate: float, count: int
) -> dict[str, list[list[float]]]:
    """`count` rounds of `ROUND_S` at `rate` of each condition, the order reversed every other round:
    each round's latencies by condition label."""
    pooled: dict[str, list[list[float]]] = {label: [] for label, *_ in conditions}
    for i in range(-1, count):  # round -1: every condition warmed for 2 s, not recorded
        for label, ep, server, paused in conditions if i % 2 == 0 else conditions[::-1]:
            for suite in paused:
                pause(suite, True)
            try:
                mine = label.startswith("infaas")
                seconds = ROUND_S if i >= 0 else 2.0
                r = runner.open_loop(ep, server, rows, rate, seconds, keep_latencies=True, keep_bodies=mine)
            finally:
                for suite in paused:
                    pause(suite, False)
                if paused:
                    time.sleep(1.0)  # the suites' catching up after the pause, before the next round
            if i < 0:
                continue
            pooled[label].append(list(r["latencies_ms"]))
            cpu_us = sum(r["server_cpu_s"].values()) / max(1, r["ok"]) * 1e6  # background included
            print(
                f"  {ep.model} {label:20s} p50 {r['p50']:6.2f} p99 {r['p99']:6.2f} ms  "
                f"server CPU {cpu_us:5.0f} µs/query  errors "
                f"{r['errors'] or 0}  other load on the core {r['other_on_server_core']:.2f}"
                + (f"  answered by {r['variants']}" if mine else ""),
                flush=True,
            )
    return pooled


def summary(latencies: np.ndarray) -> str:
    a = np.asarray(latencies)
    p = {q: float(np.percentile(a, q)) for q in (50, 99, 99.9)}
    return f"n={len(a)} p50 {p[50]:.3f} p99 {p[99]:.3f} p99.9 {p[99.9]:.3f} ms"


def intervals(
    ours: list[list[float]], theirs: list[list[float]], seed: int = 0
) -> list[tuple[float, float, float, float]]:
    """(percentile, ratio, 5th, 95th) for p50, p99 and p99.9: the pooled percentiles' ratio, ours over
    theirs, and its 90 % interval over `RESAMPLES` draws of the rounds with replacement (round i of
    both conditions drawn together: they ran minutes apart at most)."""
    qs = (50.0, 99.0, 99.9)
    mine = [np.asarray(r, dtype=float) for r in ours]  # converted once, not once per draw
    other = [np.asarray(r, dtype=float) for r in theirs]
    point = np.percentile(np.concatenate(mine), qs) / np.percentile(np.concatenate(other), qs)
    n = min(len(mine), len(other))
    rng = np.random.default_rng(seed)
    samples = np.empty((RESAMPLES, len(qs)))
    for b in range(RESAMPLES):
        pick = rng.integers(0, n, n)
        samples[b] = np.percentile(np.concatenate([mine[i] for i in pick]), qs) / np.percentile(
            np.concatenate([other[i] for i in pick]), qs
        )
    low, high = np.percentile(samples, [5, 95], axis=0)
    return [(q, float(point[k]), float(low[k]), float(high[k])) for k, q in enumerate(qs)]


def ratios(ours: list[list[float]], theirs: list[list[float]]) -> str:
    return "  ".join(f"p{q:g} {r:.2f}× ({lo:.2f}–{hi:.2f})" for q, r, lo, hi in intervals(ours, theirs))


def _pool(rounds: list[list[float]]) -> np.ndarray:
    return np.concatenate([np.asarray(r, dtype=float) for r in rounds])


def report(pooled: dict[str, dict[str, list[list[float]]]], peer: str, labels: list[str]) -> None:
    for model, got in pooled.items():
        print(f"{model} at {LOW_RATE.get(model, 20.0):.0f}/s, {len(got[labels[0]])} rounds")
        for label in labels:
            print(f"  {label:30s} {summary(_pool(got[label]))}")
        for peer_label, said in ((peer, "beside the suite"), (ALONE, "alone")):
            print(f"  {peer} {said:22s} {summary(_pool(got[peer_label]))}")
            for label in labels:
                print(f"      {label}/{peer} {said}: {ratios(got[label], got[peer_label])}")
        for label in labels[1:]:
            print(f"  {labels[0]}/{label}: {ratios(got[labels[0]], got[label])}")


def idle_cpu(server: Server, seconds: float = 10.0) -> dict[str, float]:
    """Each process's CPU with no query, in ms per second (what the suite's background costs the core)."""
    before = server.cpu_s()
    time.sleep(seconds)
    after = server.cpu_s()
    return {name: round((after[name] - before[name]) / seconds * 1000, 1) for name in after if name in before}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--peer", default="fastapi", choices=list(systems.PEERS))
    p.add_argument("--models", nargs="+", default=list(model_build.SPECS), choices=list(model_build.SPECS))
    p.add_argument("--rounds", type=int, default=6)
    p.add_argument(
        "--also",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="also measure a second infaas suite with these settings (repeatable for several settings),\n"
        "e.g. INFAAS_EXECUTOR_MODE=embedded: each suite is paused while the other's rounds run",
    )
    p.add_argument(
        "--build",
        action="append",
        default=[],
        metavar="NAME=PATH",
        help="also measure the suite of another checkout of infaas with its own .venv, as infaas@NAME",
    )
    p.add_argument("--report", type=Path, help="print the ratios of a kept run (its rounds-*.json) and exit")
    a = systems.parse_pinned(p)
    if a.report is not None:
        kept = json.loads(a.report.read_text())
        report(kept["rounds"], kept["peer"], kept["labels"])
        return
    _, rows = model_build.prepare(MODELS_DIR)
    logs = ROOT / "var" / "peers" / "low_rate_logs"
    logs.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("INFAAS_HEARTBEAT_TTL_S", PAUSABLE_HEARTBEAT_TTL_S)
    also = dict(item.split("=", 1) for item in a.also)
    builds = parse_builds(a.build)
    specs: list[tuple[str, dict[str, str], Build | None]] = [("infaas", {}, None)]
    if also:
        settings = ",".join(f"{k.removeprefix('INFAAS_').lower()}={v}" for k, v in also.items())
        specs.append((f"infaas {settings}", also, None))
    specs += [(system, {}, build) for system, build in builds.items()]
    labels = [label for label, _, _ in specs]
    servers: dict[str, Server] = {}
    keys: dict[str, str] = {}
    try:
        for i, (label, env, build) in enumerate(specs):
            for started in servers.values():
                pause(started, True)  # while the next suite starts and registers
            with environment(env):
                var = ROOT / "var" / "peers" / ("low_rate" if i == 0 else f"low_rate-{i}")
                servers[label], keys[label] = start_infaas(
                    a.server_core, a.client_core, var, MODELS_DIR, a.models, build=build
                )
        for started in servers.values():
            pause(started, False)
        servers[a.peer] = systems.start_peer(
            a.peer, free_port(), a.server_core, MODELS_DIR, a.models, logs, free_port
        )
        ours = {
            label: systems.endpoints(
                "infaas", servers[label].port, a.models, {"Authorization": f"Bearer {keys[label]}"}
            )
            for label in labels
        }
        theirs = systems.endpoints(a.peer, servers[a.peer].port, a.models)
        systems.wait_ready([*(ep for eps in ours.values() for ep in eps), *theirs], rows, 300, lambda: True)
        runner = measure.Runner(a.server_core, 64, 0.5, {})
        servers[a.peer].hold(True)
        time.sleep(3.0)  # the registration's and warm-up's work done
        suites = [servers[label] for label in labels]
        for label in labels:
            others = [s for s in suites if s is not servers[label]]
            for suite in others:
                pause(suite, True)
            idle = idle_cpu(servers[label])
            for suite in others:
                pause(suite, False)
            print(f"{label} idle, ms of CPU per s: {idle}, total {sum(idle.values()):.0f}", flush=True)
        servers[a.peer].hold(False)
        pooled: dict[str, dict[str, list[list[float]]]] = {}
        for model in a.models:
            peer = next(ep for ep in theirs if ep.model == model)
            conditions: list[Condition] = [
                (
                    label,
                    next(ep for ep in ours[label] if ep.model == model),
                    servers[label],
                    [s for s in suites if s is not servers[label]],
                )
                for label in labels
            ]
            conditions += [
                (a.peer, peer, servers[a.peer], suites[1:]),
                (ALONE, peer, servers[a.peer], suites),
            ]
            pooled[model] = rounds(runner, conditions, rows, LOW_RATE.get(model, 20.0), a.rounds)
        print()
        kept = logs / f"rounds-{time.strftime('%Y%m%d-%H%M%S')}.json"
        kept.write_text(json.dumps({"peer": a.peer, "labels": labels, "rounds": pooled}))
        report(pooled, a.peer, labels)
        print(f"(rounds kept in {kept.relative_to(ROOT)})")
    finally:
        for label, server in servers.items():
            if label in labels:
                pause(server, False)  # a paused suite would not hear its SIGTERM
            server.stop()


if __name__ == "__main__":
    main()
