"""FailLite's experiments at our scale.

`--part real` (default): a suite of real processes (three executors, SQLite + embedded Redis), apps in
three groups of `--apps-per` each — **warm** (critical: a warm backup placed by the proactive ILP),
**cold-small** (normal, a family of a full-size and a small MLP: progressive failover loads the small one
first) and **cold-full** (normal, the full-size MLP alone) — all primaries on the first executor, open-loop
queries to every app at `--rate` q/s, and that executor SIGKILLed at `--kill-at` s. Per group: MTTR (kill →
the app's first answer from another worker, detection included), share of apps recovered, accuracy lost
(1 − accuracy of the variants answering after the failure over the full-size one's, per answer), queries
lost (answered with an error). A timeline plot: every query's latency by send time, by variant size.

`--part heuristic`: Algorithm 1 (`progressive`) on a synthetic cluster of `--apps` apps and `--workers`
workers (FailLite: < 4 s at 3,000 / 1,000), and the proactive ILP on a smaller one, timed.

    python -m bench.papers.failover --part heuristic
    python -m bench.papers.failover --part real --out var/failover.json --plot docs/img/failover_timeline.png
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path

from services.planner.policies.backups import Family, Room, place_warm
from services.planner.policies.failover import progressive
from tests.factories import variant_profile

MB = 1 << 20


def synthetic(
    apps: int, workers: int, seed: int = 7, free: tuple[float, float] = (0.3, 0.6)
) -> tuple[list[Family], list[Room]]:
    """Families of 3 variants (full 200–800 MB, half and quarter size, accuracy 1.0 / 0.95 / 0.85 of the
    full one's), workers of 16 GiB with a share `free` (uniform in the range) not used by primaries."""
    rng = random.Random(seed)
    families = []
    for a in range(apps):
        full = rng.randint(200, 800)
        acc = rng.uniform(0.7, 0.95)
        variants = tuple(
            variant_profile(
                id=f"a{a}.{name}",
                model=f"a{a}",
                app=f"a{a}",
                accuracy=acc * share,
                peak_memory_bytes=size * MB,
            )
            for name, size, share in (
                ("full", full, 1.0),
                ("half", full // 2, 0.95),
                ("quarter", full // 4, 0.85),
            )
        )
        families.append(
            Family(f"a{a}", a % 2 == 0, variants, frozenset({f"w{a % workers}"}), rate_qps=rng.uniform(1, 50))
        )
    rooms = [Room(f"w{k}", "cpu", int(16 * 1024 * rng.uniform(*free)) * MB) for k in range(workers)]
    return families, rooms


def heuristic(
    apps: int, workers: int, failed_share: float, ilp_apps: int, ilp_workers: int
) -> dict[str, object]:
    out: dict[str, object] = {"apps": apps, "workers": workers}
    tight_label = f"{failed_share:.0%} of workers failed, 2-4 % free"
    for label, share, free in (
        ("every app, every worker", 0.0, (0.3, 0.6)),
        (f"{failed_share:.0%} of workers failed", failed_share, (0.3, 0.6)),
        (tight_label, failed_share, (0.02, 0.04)),
    ):
        families, rooms = synthetic(apps, workers, free=free)
        # Every app to place on every worker (none failed, all affected) is the upper bound on work.
        failed = {f"w{k}" for k in range(int(workers * share))}
        affected = [f for f in families if f.primaries & failed] if failed else families
        live = [r for r in rooms if r.worker not in failed]
        started = time.perf_counter()
        plan = progressive(affected, live)
        elapsed = time.perf_counter() - started
        recovered = len(plan.recoveries) / max(1, len(affected))
        mean_acc = sum(r.accuracy for r in plan.recoveries) / max(1, len(plan.recoveries))
        out[label] = {
            "affected_apps": len(affected),
            "live_workers": len(live),
            "delta": round(plan.delta, 3),
            "seconds": round(elapsed, 3),
            "recovered_share": round(recovered, 4),
            "mean_normalized_accuracy": round(mean_acc, 4),
        }
        print(f"Algorithm 1, {label}: {len(affected)} apps on {len(live)} live workers, "
              f"δ = {plan.delta:.2f}: {elapsed:.3f} s, {recovered:.1%} recovered, "
              f"accuracy {mean_acc:.3f} of full")  # fmt: skip
    small_families, small_rooms = synthetic(ilp_apps, ilp_workers)
    started = time.perf_counter()
    warm = place_warm(small_families, small_rooms)
    elapsed = time.perf_counter() - started
    critical = sum(f.critical for f in small_families)
    out["ilp"] = {
        "apps": ilp_apps,
        "critical": critical,
        "workers": ilp_workers,
        "seconds": round(elapsed, 3),
        "placed": len(warm.backups),
    }
    print(f"proactive ILP: {critical} critical apps on {ilp_workers} workers: {elapsed:.3f} s, "
          f"{len(warm.backups)} warm backups placed")  # fmt: skip
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--part", choices=("real", "heuristic"), default="real")
    parser.add_argument("--apps", type=int, default=3000)
    parser.add_argument("--workers", type=int, default=1000)
    parser.add_argument("--failed-share", type=float, default=0.1)
    parser.add_argument("--ilp-apps", type=int, default=200)
    parser.add_argument("--ilp-workers", type=int, default=50)
    parser.add_argument(
        "--apps-per", type=int, default=2, help="real: apps per group (warm, cold-small, cold-full)"
    )
    parser.add_argument("--rate", type=float, default=10.0, help="real: queries/s per app")
    parser.add_argument("--seconds", type=float, default=12.0)
    parser.add_argument("--kill-at", type=float, default=4.0)
    parser.add_argument(
        "--pulse-misses", type=int, default=2, help="real: missed pulses that declare failure"
    )
    parser.add_argument("--out", type=Path)
    parser.add_argument("--plot", type=Path)
    args = parser.parse_args()
    if args.part == "heuristic":
        result = heuristic(args.apps, args.workers, args.failed_share, args.ilp_apps, args.ilp_workers)
    else:
        from bench.papers.failover_real import run

        result = run(args)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
