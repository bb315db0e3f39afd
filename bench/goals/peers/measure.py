"""The measurements of the peer comparison, one endpoint at a time: an open-loop Poisson run (through
`bench/common/loadgen.py`), a closed-loop run, the search for the highest rate whose p99 meets the SLO, and a
correctness check against the model run in-process. Each run records the CPU the server's processes used
per query and what else ran on the server core meanwhile."""

from __future__ import annotations

import asyncio
import math
import os
import time
from collections import Counter
from collections.abc import Callable, Generator
from typing import Any

import numpy as np
import onnxruntime as ort
import orjson
import psutil

from bench.common import loadgen as lg
from bench.goals.peers.systems import Endpoint, Server

pct = lg.percentile


def core_busy_s(core: int) -> float:
    t = psutil.cpu_times(percpu=True)[core]
    return float(t.user + t.nice + t.system + t.irq + t.softirq + getattr(t, "steal", 0.0))


class Runner:
    """Runs against endpoints of running servers; request numbers never repeat, so no cache answers."""

    def __init__(self, server_core: int, connections: int, pause_s: float, idle: dict[str, float]) -> None:
        self.server_core = server_core
        self.connections = connections
        self.pause_s = pause_s
        self.idle = idle  # each system's CPU use with no query, in cores
        self.offset = 0
        self.seed = 0

    def _requests(self, ep: Endpoint, rows: np.ndarray, n: int) -> Callable[[int], bytes]:
        base, self.offset = self.offset, self.offset + n + 1
        make = ep.requests(rows)
        return lambda i: make(base + i)

    def _measured(self, server: Server, run: Callable[[], Any]) -> tuple[Any, dict[str, Any]]:
        cpu0, busy0, t0, started = (
            server.cpu_s(),
            core_busy_s(self.server_core),
            time.perf_counter(),
            time.time(),
        )
        result = run()
        wall = time.perf_counter() - t0
        cpu1, busy1 = server.cpu_s(), core_busy_s(self.server_core)
        used = {k: cpu1[k] - cpu0[k] for k in cpu1 if k in cpu0}
        extra = {
            "server_cpu_s": used,
            "other_on_server_core": max(0.0, busy1 - busy0 - sum(used.values())) / wall,
            "loadavg_1m": os.getloadavg()[0],
            "started_at": started,  # wall clock, to line runs up with infaas's events
        }
        time.sleep(self.pause_s)
        self._settle(server)
        return result, extra

    def _settle(self, server: Server, limit_s: float = 4.0) -> None:
        """Wait (up to `limit_s`) until the server is back to its idle CPU use: an overloaded run leaves
        queued work behind, which must not land on the next run, nor stay frozen in a paused peer."""
        deadline = time.monotonic() + limit_s
        idle = self.idle.get(server.system, 0.0) + 0.1
        while time.monotonic() < deadline:
            before = sum(server.cpu_s().values())
            time.sleep(0.25)
            if (sum(server.cpu_s().values()) - before) / 0.25 <= idle:
                return

    def open_loop(
        self,
        ep: Endpoint,
        server: Server,
        rows: np.ndarray,
        rate: float,
        duration_s: float,
        keep_bodies: bool = False,
        drain_s: float = 5.0,
        keep_latencies: bool = False,
    ) -> dict[str, Any]:
        """`drain_s`: how long after the last scheduled send answers are still awaited (later ones count
        as timeouts). `keep_latencies`: every answered query's latency in the result (ms, µs precision),
        for percentiles pooled over several runs (`pooled`)."""
        self.seed += 1
        schedule = lg.poisson_schedule(rate, duration_s, self.seed)
        requests = self._requests(ep, rows, len(schedule))
        target = lg.Target("127.0.0.1", ep.port, f"127.0.0.1:{ep.port}")

        def run() -> Any:
            return lg.run(
                lg.run_open_loop(
                    target,
                    requests,
                    schedule,
                    connections=self.connections,
                    drain_s=drain_s,
                    keep_bodies=keep_bodies,
                    duration_s=duration_s,
                )
            )

        r, extra = self._measured(server, run)
        lat = r.ok_latencies_ms
        failed = sum(r.outcomes.values()) - r.ok
        out = {
            "rate": rate,
            "duration_s": duration_s,
            "offered": r.offered_rate,
            "achieved": r.achieved_rate,
            "scheduled": sum(r.outcomes.values()),
            "ok": r.ok,
            "errors": r.errors(),
            **latency_summary(lat, failed, any_sent=bool(r.outcomes)),
            "send_lag_p99": pct(r.send_lag_ms, 99),
            "client_cpu_s": r.client_cpu_s,
            "first_error": {str(k): v.decode(errors="replace")[:300] for k, v in r.error_bodies.items()},
            **extra,
        }
        if keep_latencies:
            out["latencies_ms"] = [round(v, 3) for v in lat]
        if keep_bodies:
            variants: Counter[str] = Counter()
            for body in r.bodies:
                variants[str(orjson.loads(body).get("variant", "?"))] += 1
            out["variants"] = dict(variants.most_common(5))
        return out

    def closed_loop(
        self, ep: Endpoint, server: Server, rows: np.ndarray, concurrency: int, duration_s: float
    ) -> dict[str, Any]:
        requests = self._requests(ep, rows, 1_000_000)
        target = lg.Target("127.0.0.1", ep.port, f"127.0.0.1:{ep.port}")
        r, extra = self._measured(server, lambda: lg.run(_closed(target, requests, concurrency, duration_s)))
        lat, outcomes, elapsed = r
        ok = sum(n for k, n in outcomes.items() if isinstance(k, int) and 200 <= k < 300)
        return {
            "concurrency": concurrency,
            "throughput": ok / elapsed,
            "ok": ok,
            "p50": pct(lat, 50),
            "p99": pct(lat, 99),
            "errors": {str(k): n for k, n in outcomes.items() if k != 200},
            **extra,
        }


async def _closed(
    target: lg.Target, requests: Callable[[int], bytes], concurrency: int, duration_s: float
) -> tuple[list[float], Counter[int | str], float]:
    """`concurrency` clients, each sending its next request as soon as the last one is answered."""
    pool = [lg.Connection(target, 30.0) for _ in range(concurrency)]
    await asyncio.gather(*(c.connect() for c in pool))
    clock = time.perf_counter
    start = clock()
    stop = start + duration_s
    latencies: list[float] = []
    outcomes: Counter[int | str] = Counter()
    counter = iter(range(10**9))

    async def client(conn: lg.Connection) -> None:
        while clock() < stop:
            sent = clock()
            try:
                status, _ = await asyncio.wait_for(conn.send(requests(next(counter))), 30.0)
            except (OSError, asyncio.IncompleteReadError, ValueError, TimeoutError):
                outcomes[lg.CONNECTION_ERROR] += 1
                await conn.close()
                continue
            outcomes[status] += 1
            if 200 <= status < 300:
                latencies.append((clock() - sent) * 1000)

    await asyncio.gather(*(client(c) for c in pool))
    elapsed = clock() - start
    await asyncio.gather(*(c.close() for c in pool), return_exceptions=True)
    return latencies, outcomes, elapsed


def latency_summary(lat: list[float], failed: int, *, any_sent: bool) -> dict[str, float]:
    """p50/p99/p99.9 of the answered queries' latencies, and the SLO's p99, which counts a failed or
    unanswered query as infinitely late (`any_sent` False: nothing was scheduled, no p99 at all)."""
    return {
        "p50": pct(lat, 50),
        "p99": pct(lat, 99),
        "p999": pct(lat, 99.9),
        "slo_p99": pct(lat + [math.inf] * failed, 99) if any_sent else math.inf,
    }


def round_line(r: dict[str, Any]) -> str:
    """One round's p50 and p99 in ms and its errors, as the interleaving scripts print each round."""
    return f"p50 {r['p50']:6.2f} p99 {r['p99']:6.2f} ms  errors {r['errors'] or 0}"


def cpu_per_query(r: dict[str, Any], top: int = 3) -> str:
    """The `top` processes by CPU over a round, each in µs of CPU per answered query (its background
    included): whether a condition makes a process's work per query dearer."""
    used = sorted(r.get("server_cpu_s", {}).items(), key=lambda kv: -kv[1])[:top]
    return "CPU µs/query " + ", ".join(f"{name} {s / max(1, r['ok']) * 1e6:.0f}" for name, s in used)


def interleaved(
    run: Callable[[str, float], dict[str, Any]], labels: list[str], rounds: int, round_s: float
) -> dict[str, list[float]]:
    """Every condition once for 2 s (warm, not recorded), then `rounds` rounds of `round_s` each, the
    order reversed every other round so that a noisy stretch of the host falls on each alike; prints
    each round and returns every answered query's latency pooled by condition."""
    width = max(8, *(len(label) for label in labels))
    for label in labels:
        run(label, 2.0)
    pooled: dict[str, list[float]] = {label: [] for label in labels}
    for i in range(rounds):
        for label in labels if i % 2 == 0 else labels[::-1]:
            r = run(label, round_s)
            pooled[label] += r["latencies_ms"]
            print(f"  {label:{width}s} {round_line(r)}  {cpu_per_query(r)}", flush=True)
    return pooled


def against(latencies: list[float], reference: list[float], digits: int = 2) -> str:
    """p50, p99 and p99.9 of `latencies` in ms, each with its ratio to the same percentile of `reference`."""
    x, ref = np.asarray(latencies), np.asarray(reference)
    return "  ".join(
        f"p{q:g} {np.percentile(x, q):.{digits}f} ({np.percentile(x, q) / np.percentile(ref, q):.2f}×)"
        for q in (50, 99, 99.9)
    )


def pooled(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """One record for several runs at one rate (each with `latencies_ms`): percentiles over every
    answered query of all of them (at 20 q/s a 6 s round's p99 is its second-slowest query; three rounds
    pooled put ~4 queries above it), counts and CPU summed, the median round's p99 kept beside."""
    lat = [v for r in rounds for v in r.get("latencies_ms", [])]
    failed = sum(r["scheduled"] - r["ok"] for r in rounds)
    errors: Counter[str] = Counter()
    variants: Counter[str] = Counter()
    cpu: Counter[str] = Counter()
    for r in rounds:
        errors.update(r["errors"])
        variants.update(r.get("variants", {}))
        cpu.update(r["server_cpu_s"])
    by_p99 = sorted(r["p99"] for r in rounds)
    out = {
        "rate": rounds[0]["rate"],
        "rounds": len(rounds),
        "duration_s": sum(r["duration_s"] for r in rounds),
        "scheduled": sum(r["scheduled"] for r in rounds),
        "ok": sum(r["ok"] for r in rounds),
        "errors": dict(errors),
        **latency_summary(lat, failed, any_sent=bool(lat or failed)),
        "median_round_p99": by_p99[(len(by_p99) - 1) // 2],
        "send_lag_p99": max(r["send_lag_p99"] for r in rounds),
        "server_cpu_s": dict(cpu),
        "other_on_server_core": sum(r["other_on_server_core"] for r in rounds) / len(rounds),
    }
    if variants:
        out["variants"] = dict(variants.most_common(5))
    return out


def max_rate_search(
    start: float, slo_ms: float, ceiling: float, runs: int, tolerance: float, confirm: bool = True
) -> Generator[float, dict[str, Any], float]:
    """Yields the next rate to try and receives its run; returns the highest rate whose p99 (failures
    counted as misses) met the SLO with no error: ×2 (or ÷2) to bracket it, then bisection (geometric).

    `confirm`: a run that fails in its tail alone (no error, its median within the SLO) is run once more
    at the same rate, and the second run decides. One stall of the shared host (a ~100 ms pause in a 3 s
    run) otherwise halves the bracket for good with so few runs; an overloaded server fails both. The
    repeat does not count against `runs`, and every system's search follows the same rule."""
    lo: float | None = None
    hi: float | None = None
    rate = start

    def passed(r: dict[str, Any]) -> bool:
        return bool(r["slo_p99"] <= slo_ms and not r["errors"])

    for _ in range(runs):
        r = yield rate
        if confirm and not passed(r) and r["ok"] and not r["errors"] and r["p50"] <= slo_ms:
            r = yield rate
        if passed(r):
            lo = rate
        else:
            hi = rate
        if r["ok"] == 0:
            break
        if hi is None:
            rate *= 2
            if rate > ceiling:
                break
        elif lo is None:
            rate /= 2
            if rate < 1:
                break
        elif hi / lo <= 1 + tolerance:
            break
        else:
            rate = math.sqrt(lo * hi)
    return lo or 0.0


# ------------------------------------------------------------------------------------------ correctness
def reference(model_path: str) -> ort.InferenceSession:
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    return ort.InferenceSession(model_path, opts, providers=["CPUExecutionProvider"])


def check_answers(ep: Endpoint, session: ort.InferenceSession, rows: np.ndarray, n: int) -> dict[str, Any]:
    """n single-row queries (first feature unique, as under load) against the model in-process: the
    largest absolute logit difference and the share of rows whose argmax agrees."""
    from bench.goals.peers.systems import post

    diffs, agree, failures = [], 0, 0
    for i in range(n):
        status, body = post(ep, rows, i)
        if status != 200:
            failures += 1
            continue
        row = rows[i % len(rows)].copy()
        row[0] = float(lg.unique_value(i))
        expected = session.run(None, {"x": row[None, :].astype(np.float32)})[0]
        got = ep.logits(body)
        diffs.append(float(np.max(np.abs(got - expected))))
        agree += int(np.argmax(got) == np.argmax(expected))
    return {
        "max_abs_diff": max(diffs) if diffs else math.nan,
        "argmax_agree": agree / max(1, n - failures),
        "failed": failures,
    }
