"""Replay an open-loop arrival trace (infaas.core.workloads) against the gateway and record every query.

Each query of the trace is sent at its arrival time over a pool of raw keep-alive connections
(bench/loadgen.py: open loop, latency measured from the scheduled time, no coordinated omission); the
per-query record — scheduled time, outcome (HTTP status, `timeout`, `connection error`, `not sent`) and
latency — is written as CSV, with a summary per second on stdout.

Usage:

    .venv/bin/python bench/replay.py --url http://127.0.0.1:8080 --key $KEY --model digits-mlp-small \\
        --shape diurnal --min-qps 10 --max-qps 200 --seconds 120 --out var/replay.csv
    shapes: poisson (--qps), gamma (--qps --cv), flat, ramp (--min-qps → --max-qps), fluctuating, diurnal
"""

from __future__ import annotations

import argparse
import csv
import math
import sys
from pathlib import Path

import numpy as np
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import loadgen  # noqa: E402  (bench/ is on sys.path when run as a script)

from infaas.core import workloads  # noqa: E402


def trace(args: argparse.Namespace) -> np.ndarray:
    if args.shape == "poisson":
        return workloads.poisson(args.qps, args.seconds, seed=args.seed)
    if args.shape == "gamma":
        return workloads.gamma(args.qps, args.seconds, cv=args.cv, seed=args.seed)
    rates = {
        "flat": lambda: workloads.flat_rates(args.qps, args.seconds),
        "ramp": lambda: workloads.ramp_rates(args.min_qps, args.max_qps, args.seconds),
        "fluctuating": lambda: workloads.fluctuating_rates(args.min_qps, args.max_qps, args.seconds),
        "diurnal": lambda: workloads.diurnal_rates(args.min_qps, args.max_qps, args.seconds, seed=args.seed),
    }[args.shape]()
    return workloads.arrivals(rates, seed=args.seed, cv=args.cv)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--url", default="http://127.0.0.1:8080")
    parser.add_argument("--key", required=True)
    parser.add_argument("--model", required=True, help="named-model queries to this model")
    parser.add_argument("--rows", type=int, default=1)
    parser.add_argument("--features", type=int, default=64)
    parser.add_argument("--latency-ms", type=float, default=None, help="SLO sent with each query")
    parser.add_argument(
        "--shape", choices=("poisson", "gamma", "flat", "ramp", "fluctuating", "diurnal"), default="poisson"
    )
    parser.add_argument("--qps", type=float, default=50)
    parser.add_argument("--min-qps", type=float, default=4)
    parser.add_argument("--max-qps", type=float, default=80)
    parser.add_argument("--cv", type=float, default=1.0)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--out", type=Path, default=None, help="CSV of every query")
    args = parser.parse_args()

    arrivals = trace(args)
    body: dict[str, object] = {"inputs": [[0.5] * args.features] * args.rows}
    if args.latency_ms is not None:
        body["latency_ms"] = args.latency_ms
    target = loadgen.Target.parse(args.url)
    request = loadgen.encode_request(
        "POST",
        target.authority,
        f"/v1/models/{args.model}/infer",
        orjson.dumps(body),
        {"Authorization": f"Bearer {args.key}", "content-type": "application/json"},
    )
    result = loadgen.run(
        loadgen.run_open_loop(
            target, [request], list(arrivals), connections=args.connections, keep_bodies=False
        )
    )
    records = sorted(result.records)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        with args.out.open("w", newline="") as fh:
            writer = csv.writer(fh)
            writer.writerow(["index", "scheduled_s", "outcome", "latency_ms"])
            for i, outcome, ms in records:
                writer.writerow([i, f"{arrivals[i]:.6f}", outcome, "" if math.isnan(ms) else f"{ms:.3f}"])
    print(result.summary())
    print("second | offered | ok | p99 ms")
    for s in range(int(math.ceil(args.seconds))):
        rows = [(o, ms) for i, o, ms in records if s <= arrivals[i] < s + 1]
        ok = [ms for o, ms in rows if isinstance(o, int) and 200 <= o < 300]
        p99 = f"{np.percentile(ok, 99):.1f}" if ok else "-"
        print(f"{s:6d} | {len(rows):7d} | {len(ok):4d} | {p99}")
    if args.out is not None:
        print(f"records: {args.out}")


if __name__ == "__main__":
    main()
