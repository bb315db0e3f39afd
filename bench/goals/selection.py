"""Decision time of `infaas.policy.selection.get_variant` beside a brute-force baseline (INFaaS Table 7).

A synthetic app of ~100 models and N profiled variants (accuracy 0.5–0.99, p50/p99 latency points at
batch 1, 2, 4, … up to the variant's max batch growing sublinearly, load 1–3000 ms, costs, a share of
Pareto-dominated variants, CPU and CUDA forms), a snapshot of 10 workers with ~20 % of the variants
placed on one or two of them (mostly `active`, some loading/overloaded/failed), and a stream of random
requirements (latency 1–200 ms log-uniform, min accuracy 0.5–0.99, 1–16 rows). Every query is a
model-less app query, so the candidates are all N variants (the worst case the scheduler sees).

Each query is timed alone with `time.perf_counter_ns` after a warm-up. The baseline decides the same
query with no precomputation: it indexes the snapshot's instances, then for every variant computes the
latency at the batch and checks the requirements, and for every variant × worker scores the pair —
active instance first, then a cold load with the lowest load + inference latency on the least-utilized
worker with room — keeping the best key (dominated variants only as a fallback, as `get_variant` does).
Both answers are checked against the requirements; differing choices are counted (ties and the
ordering policy among active variants may legitimately differ).

When `infaas.policy.selection` offers a prebuilt candidate structure (`CandidateIndex`), it is built once per
run — as the scheduler does on a snapshot refresh — and its build time is printed; `--candidates list`
passes the plain tuple instead.

Usage:

    .venv/bin/python -m bench.goals.selection                         # N = 100, 1000, 5000
    .venv/bin/python -m bench.goals.selection --variants 1000 --queries 5000 --markdown
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from infaas.core.errors import InfaasError, RequirementsUnmet
from infaas.policy import selection
from infaas.policy.selection import (
    InstanceState,
    InstanceView,
    Requirements,
    Snapshot,
    WorkerView,
    get_variant,
)
from infaas.schemas.variants import BatchLatency, VariantProfile

GiB = 1024**3
MiB = 1024**2
BUDGET_US = 100.0  # ARCHITECTURE.md §9: get_variant p50 at 1,000 variants
BUDGET_N = 1000

# (runtime, optimization, precision, hardware, relative batch-1 latency, accuracy delta)
FORMS: tuple[tuple[str, str, str, str, float, float], ...] = (
    ("onnxruntime", "basic", "fp32", "cpu", 1.0, 0.0),
    ("onnxruntime", "extended", "fp32", "cpu", 0.9, 0.0),
    ("onnxruntime", "all", "fp32", "cpu", 0.8, 0.0),
    ("onnxruntime", "int8dyn", "int8", "cpu", 1.2, -0.01),
    ("onnxruntime", "int8static", "int8", "cpu", 0.9, -0.02),
    ("onnxruntime", "cuda", "fp32", "cuda", 0.3, 0.0),
    ("onnxruntime", "cuda", "fp16", "cuda", 0.2, -0.005),
    ("onnxruntime", "trt", "fp16", "trt", 0.15, -0.005),
)
MAX_BATCHES = (1, 4, 16, 64)
THREADS = (1, 2)


# ------------------------------------------------------------------------------------------ the workload
def make_variants(
    n: int, rng: random.Random, *, models: int = 100, app: str = "bench"
) -> list[VariantProfile]:
    """N variants spread over `models` models (fewer when N is small), every one of them profiled."""
    models = max(1, min(models, n // 5 or 1))
    out: list[VariantProfile] = []
    seen: set[str] = set()
    for m in range(models):
        name = f"model-{m:03d}"
        count = n // models + (1 if m < n % models else 0)
        base_acc = rng.uniform(0.5, 0.99)
        base_ms = math.exp(rng.uniform(math.log(0.05), math.log(40.0)))  # batch-1 p50 of the plain form
        for k in range(count):
            runtime, opt, precision, hardware, speed, acc_delta = FORMS[k % len(FORMS)]
            max_batch = MAX_BATCHES[(k // len(FORMS)) % len(MAX_BATCHES)]
            threads = 1 if hardware != "cpu" else THREADS[(k // (len(FORMS) * len(MAX_BATCHES))) % 2]
            p1 = base_ms * speed * rng.uniform(0.85, 1.15) / (1.4 if threads == 2 else 1.0)
            alpha = rng.uniform(0.25, 0.5) if hardware != "cpu" else rng.uniform(0.5, 0.9)
            jitter = rng.uniform(1.1, 2.0)  # p99 / p50
            points = []
            batch = 1
            while batch <= max_batch:
                p50 = p1 * batch**alpha
                points.append(BatchLatency(batch=batch, p50_ms=round(p50, 5), p99_ms=round(p50 * jitter, 5)))
                batch *= 2
            sat = max(p.batch * 1000.0 / p.p50_ms for p in points)
            cost_per_s = (0.526 if hardware != "cpu" else 0.048 * threads) / 3600
            vid = f"{name}.{runtime}-{opt}-{precision}-{hardware}-b{max_batch}-t{threads}"
            if vid in seen:
                vid += f"-{k}"  # more variants than forms (GPU forms have one thread): keep ids unique
            seen.add(vid)
            out.append(
                VariantProfile(
                    id=vid,
                    model=name,
                    app=app,
                    signature_key="x:float32:64",
                    runtime=runtime,
                    optimization=opt,
                    precision=precision,
                    hardware=hardware,
                    max_batch=max_batch,
                    threads=threads,
                    artifact_digest=f"{len(out):064x}",
                    accuracy=round(min(0.999, max(0.4, base_acc + acc_delta + rng.gauss(0, 0.003))), 4),
                    load_ms=round(math.exp(rng.uniform(0.0, math.log(3000.0))), 3),
                    latencies=tuple(points),
                    saturation_qps=sat,
                    peak_memory_bytes=int(math.exp(rng.uniform(math.log(MiB), math.log(2 * GiB)))),
                    provider="CUDAExecutionProvider" if hardware != "cpu" else "CPUExecutionProvider",
                    cost_per_query=cost_per_s / sat,
                    dominated=rng.random() < 0.4,
                )
            )
    assert len(seen) == len(out) == n
    return out


def make_snapshot(variants: Sequence[VariantProfile], rng: random.Random, *, workers: int = 10) -> Snapshot:
    """Workers of each hardware kind (mostly CPU), ~20 % of the variants placed on one or two of them."""
    kinds = ["cpu"] * (workers - workers // 5 - workers // 10) + ["cuda"] * (workers // 5)
    kinds += ["trt"] * (workers - len(kinds))
    views = tuple(
        WorkerView(
            id=f"w{i:02d}",
            hardware=kind,
            url=f"http://10.0.0.{i}:8083",
            cores=8,
            memory_bytes=(mem := rng.choice((16, 32, 64)) * GiB),
            memory_used_bytes=int(mem * rng.uniform(0.1, 0.95)),
            utilization=round(rng.uniform(0.0, 1.0), 3),
        )
        for i, kind in enumerate(kinds)
    )
    by_kind: dict[str, list[WorkerView]] = {}
    for w in views:
        by_kind.setdefault(w.hardware, []).append(w)
    instances: list[InstanceView] = []
    states: tuple[InstanceState, ...] = ("active",) * 17 + ("loading", "overloaded", "failed")
    for v in rng.sample(list(variants), k=len(variants) // 5):
        hosts = by_kind.get(v.hardware)
        if not hosts:
            continue
        for w in rng.sample(hosts, k=min(len(hosts), rng.choice((1, 1, 1, 2)))):
            instances.append(InstanceView(w.id, v.id, rng.choice(states), pending=rng.randrange(0, 8)))
    return Snapshot(variants={v.id: v for v in variants}, instances=tuple(instances), workers=views)


def make_queries(n: int, rng: random.Random) -> list[tuple[Requirements, int]]:
    return [
        (
            Requirements(
                slo_ms=round(math.exp(rng.uniform(0.0, math.log(200.0))), 3),
                min_accuracy=round(rng.uniform(0.5, 0.99), 3),
            ),
            rng.randint(1, 16),
        )
        for _ in range(n)
    ]


# ---------------------------------------------------------------------------------------- the baseline
@dataclass(frozen=True, slots=True)
class Choice:
    variant_id: str
    action: str  # "active" | "load"
    worker_id: str | None


def latency_at(v: VariantProfile, rows: int) -> float:
    """p99 at the next measured batch size up; whole max-size batches beyond the max batch."""
    if not v.latencies:
        return math.inf
    runs = 1
    if rows > v.max_batch:
        runs = -(-rows // v.max_batch)
        rows = v.max_batch
    for point in v.latencies:
        if point.batch >= rows:
            return runs * point.p99_ms
    return runs * v.latencies[-1].p99_ms


def brute_force(
    req: Requirements, rows: int, candidates: Sequence[VariantProfile], snapshot: Snapshot, prefer: str
) -> Choice | None:
    """Every variant × every worker scored from scratch; None when no variant meets the requirements."""
    state: dict[tuple[str, str], str] = {(i.worker_id, i.variant_id): i.state for i in snapshot.instances}
    best: tuple[Any, ...] | None = None
    choice: Choice | None = None
    for v in candidates:
        lat = latency_at(v, rows)
        if req.min_accuracy is not None and v.accuracy < req.min_accuracy:
            continue
        if req.slo_ms is not None and lat > req.slo_ms:
            continue
        placed = any((w.id, v.id) in state for w in snapshot.workers)
        for w in snapshot.workers:
            if w.hardware != v.hardware:
                continue
            s = state.get((w.id, v.id))
            if s == "active":
                rank = (lat, v.cost_per_query) if prefer == "latency" else (v.cost_per_query, lat)
                key: tuple[Any, ...] = (v.dominated, 0, *rank, v.id, "")
                action, wid = "active", None
            elif w.memory_bytes - w.memory_used_bytes >= v.peak_memory_bytes and s is None:
                # a cold variant first; one that is placed somewhere (loading, overloaded…) only after
                key = (v.dominated, 2 if placed else 1, v.load_ms + lat, v.id, w.utilization,
                       w.memory_used_bytes, w.id)  # fmt: skip
                action, wid = "load", w.id
            else:
                continue
            if best is None or key < best:
                best, choice = key, Choice(v.id, action, wid)
    return choice


def satisfies(v: VariantProfile, req: Requirements, rows: int) -> bool:
    return (req.min_accuracy is None or v.accuracy >= req.min_accuracy) and (
        req.slo_ms is None or latency_at(v, rows) <= req.slo_ms
    )


# ------------------------------------------------------------------------------------------- measuring
def timed(fn: Callable[[], Any]) -> tuple[int, Any]:
    start = time.perf_counter_ns()
    try:
        out = fn()
    except InfaasError as exc:  # RequirementsUnmet, Unavailable: a decision too
        out = exc
    return time.perf_counter_ns() - start, out


def pct(values: Sequence[float], q: float) -> float:
    s = sorted(values)
    pos = (len(s) - 1) * q / 100
    lo = math.floor(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def run(
    n: int, queries: int, warmup: int, baseline_queries: int, seed: int, mode: str, prefer: str
) -> dict[str, Any]:
    rng = random.Random(seed + n)
    variants = make_variants(n, rng)
    snapshot = make_snapshot(variants, rng)
    stream = make_queries(queries, rng)
    pool: tuple[VariantProfile, ...] = tuple(variants)
    candidates: Any = pool
    build_ms = None
    index_cls = getattr(selection, "CandidateIndex", None)
    if mode != "list" and index_cls is not None:
        t0 = time.perf_counter()
        candidates = index_cls(pool)
        build_ms = (time.perf_counter() - t0) * 1000

    for req, rows in stream[:warmup]:
        timed(partial(get_variant, req, rows, candidates, snapshot))
    ours: list[float] = []
    picks: list[Any] = []
    pow2: list[float] = []
    other: list[float] = []
    for req, rows in stream:
        ns, out = timed(partial(get_variant, req, rows, candidates, snapshot))
        ours.append(ns / 1000)
        (pow2 if rows & (rows - 1) == 0 else other).append(ns / 1000)
        picks.append(out)

    base: list[float] = []
    outcome: Counter[str] = Counter()
    by_id = snapshot.variants
    for q, (req, rows) in enumerate(stream[:baseline_queries]):
        ns, theirs = timed(partial(brute_force, req, rows, pool, snapshot, prefer))
        base.append(ns / 1000)
        mine = picks[q]
        if theirs is None:
            outcome["both unmet" if isinstance(mine, RequirementsUnmet) else "baseline unmet only"] += 1
            continue
        if isinstance(mine, Exception):
            outcome[f"get_variant {type(mine).__name__} only"] += 1
            continue
        outcome["get_variant ok" if satisfies(mine.variant, req, rows) else "get_variant VIOLATES"] += 1
        outcome["baseline ok" if satisfies(by_id[theirs.variant_id], req, rows) else "baseline VIOLATES"] += 1
        if mine.variant.id == theirs.variant_id:
            outcome["same variant"] += 1
        elif mine.action == theirs.action:
            outcome[f"differ, both {mine.action}"] += 1
        else:
            outcome[f"differ, {mine.action} vs baseline {theirs.action}"] += 1
    return {
        "n": n,
        "models": len({v.model for v in variants}),
        "instances": len(snapshot.instances),
        "build_ms": build_ms,
        "ours": ours,
        "pow2": pow2,
        "other": other,
        "base": base,
        "outcome": outcome,
        "compared": len(base),
    }


def fmt_us(value: float) -> str:
    return f"{value:,.1f} µs" if value < 10_000 else f"{value / 1000:,.2f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--variants", type=int, nargs="+", default=[100, 1000, 5000], help="N per table row")
    parser.add_argument("--queries", type=int, default=3000, help="timed get_variant calls per N")
    parser.add_argument("--warmup", type=int, default=300)
    parser.add_argument("--baseline-queries", type=int, default=300, help="brute-force calls per N (slow)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--candidates", choices=("auto", "list"), default="auto")
    parser.add_argument(
        "--baseline-prefer",
        choices=("latency", "cost"),
        default="latency",
        help="order of active variants in the baseline (INFaaS: fastest)",
    )
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()

    results = []
    for n in args.variants:
        r = run(n, args.queries, args.warmup, min(args.baseline_queries, args.queries), args.seed,
                args.candidates, args.baseline_prefer)  # fmt: skip
        results.append(r)

    head = ["variants", "get_variant p50", "p99", "mean", "brute force p50", "p99", "mean", "speed-up (p50)"]
    rows = []
    for r in results:
        o, b = r["ours"], r["base"]
        rows.append(
            [
                f"{r['n']:,}",
                fmt_us(pct(o, 50)),
                fmt_us(pct(o, 99)),
                fmt_us(statistics.fmean(o)),
                fmt_us(pct(b, 50)),
                fmt_us(pct(b, 99)),
                fmt_us(statistics.fmean(b)),
                f"{pct(b, 50) / pct(o, 50):,.1f}×",
            ]
        )
    print_table(head, rows, args.markdown)
    print()
    for r in results:
        build = f"; candidate index built in {r['build_ms']:.2f} ms" if r["build_ms"] is not None else ""
        print(
            f"N={r['n']:,}: {r['models']} models, {r['instances']} instances on 10 workers{build}; "
            f"get_variant p50 at power-of-two rows {fmt_us(pct(r['pow2'], 50))}, "
            f"other rows {fmt_us(pct(r['other'], 50))}"
        )
        print(f"  {r['compared']} queries decided by both: " + ", ".join(f"{k} {v}" for k, v in
              sorted(r["outcome"].items())))  # fmt: skip
    for r in results:
        if r["n"] == BUDGET_N:
            p50 = pct(r["ours"], 50)
            verdict = "meets" if p50 <= BUDGET_US else "MISSES"
            print(
                f"\nbudget: get_variant p50 {fmt_us(p50)} at {BUDGET_N:,} variants "
                f"{verdict} ≤ {BUDGET_US:.0f} µs"
            )
    print(
        "\n'differ' counts choices that are both valid: equal keys break by variant id in both, but the"
        "\nordering among active variants (fastest vs cheapest: see --baseline-prefer) and the set of cold"
        "\nvariants may differ."
    )


def print_table(head: list[str], rows: list[list[str]], markdown: bool) -> None:
    if markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "|".join("---" for _ in head) + "|")
        for row in rows:
            print("| " + " | ".join(row) + " |")
        return
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(head)]
    print("  ".join(h.rjust(w) for h, w in zip(head, widths, strict=True)))
    for row in rows:
        print("  ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)))


if __name__ == "__main__":
    main()
