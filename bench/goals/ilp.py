"""Greedy vs exact model autoscaling (INFaaS §4.2): solve time and cost gap on generated clusters.

Each instance has A architectures (models) × 10 variants: CPU variants (batch 1–64, 1–4 threads,
20–600 qps, $0.048/vCPU-hour, load 50–2,000 ms) and CUDA variants (batch 1–64, 300–5,000 qps,
$0.526/GPU-hour, load 1–11 s), memory 50 MiB–2 GiB, p99 of a full batch 2–300 ms, an SLO per model of
30–300 ms (so some variants are ruled out by constraint (2)). Each model runs one or two instances of
one variant, and its load is 0.1×–3× what those carry (so some models must scale up, some could scale
down). CPU workers: 2·A of 16 GiB; CUDA workers: A/2 of 16 GiB.

- ILP: `services.planner.policies.ilp.solve` (HiGHS via scipy, mip_rel_gap 0: the proven optimum).
- Greedy: `services.planner.policies.greedy.plan` run to a fixed point (its decisions applied to the
  snapshot, T_v waited out), since it changes one thing per model per tick.
Both are scored by the same total: Σ C·N after + λ·Σ C·T_load per loaded instance ($/s); the gap is
greedy / ILP − 1 over the instances where both met every model's load.

Usage:

    .venv/bin/python -m bench.goals.ilp                       # 10, 20, 50, 100 architectures × 5 seeds
    .venv/bin/python -m bench.goals.ilp --archs 100 --seeds 3 --json
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from dataclasses import replace
from typing import TypedDict

from infaas.policy.selection import InstanceView, WorkerView
from infaas.schemas.variants import BatchLatency, VariantProfile
from services.planner.policies import greedy as autoscaler
from services.planner.policies import ilp
from services.planner.policies.snapshot import (
    ClusterSnapshot,
    Decision,
    ModelDemand,
    ScalingConfig,
    cost_per_s,
    eligible,
)

GiB = 1 << 30
MiB = 1 << 20
CPU_VCPU_S = 0.048 / 3600
GPU_S = 0.526 / 3600


def variant(rng: random.Random, model: str, j: int) -> VariantProfile:
    gpu = rng.random() < 0.3
    batch = rng.choice((1, 4, 16, 64))
    threads = 1 if gpu else rng.choice((1, 2, 4))
    qps = rng.uniform(300, 5000) if gpu else rng.uniform(20, 600) * threads**0.5
    full = rng.uniform(2, 300) * (0.5 + batch / 64)
    c = GPU_S if gpu else CPU_VCPU_S * threads
    return VariantProfile(
        id=f"{model}.v{j}-{'cuda' if gpu else 'cpu'}-b{batch}-t{threads}",
        model=model,
        app="bench",
        signature_key="x",
        runtime="onnxruntime",
        optimization="basic",
        precision="fp32",
        hardware="cuda" if gpu else "cpu",
        max_batch=batch,
        threads=threads,
        artifact_digest="0" * 64,
        accuracy=rng.uniform(0.7, 0.95),
        load_ms=rng.uniform(1000, 11000) if gpu else rng.uniform(50, 2000),
        latencies=(BatchLatency(1, full / batch, full / batch), BatchLatency(batch, full * 0.8, full)),
        saturation_qps=qps,
        peak_memory_bytes=int(rng.uniform(50 * MiB, 2 * GiB)),
        cost_per_query=c / qps,
    )


def instance(archs: int, seed: int) -> ClusterSnapshot:
    rng = random.Random(seed * 1000 + archs)
    cpu = [WorkerView(f"c{k}", "cpu", "", 16, 16 * GiB, 0, rng.random()) for k in range(2 * archs)]
    gpu = [WorkerView(f"g{k}", "cuda", "", 8, 16 * GiB, 0, rng.random()) for k in range(max(1, archs // 2))]
    demands = []
    instances: list[InstanceView] = []
    used: dict[str, int] = {}
    for i in range(archs):
        model = f"m{i}"
        variants = tuple(variant(rng, model, j) for j in range(10))
        d = ModelDemand(model, 0.0, variants, slo_ms=rng.uniform(30, 300))
        ok = [v for v in variants if eligible(v, d)] or list(variants)
        run = rng.choice(ok)
        pool = cpu if run.hardware == "cpu" else gpu
        n = min(rng.choice((1, 2)), len(pool))
        for w in rng.sample(pool, n):
            instances.append(InstanceView(w.id, run.id, "active"))
            used[w.id] = used.get(w.id, 0) + run.peak_memory_bytes
        demands.append(replace(d, load_qps=run.saturation_qps * n * rng.uniform(0.1, 3.0)))
    workers = tuple(replace(w, memory_used_bytes=used.get(w.id, 0)) for w in (*cpu, *gpu))
    return ClusterSnapshot(now=0.0, demands=tuple(demands), workers=workers, instances=tuple(instances))


def total_cost(snapshot: ClusterSnapshot, loaded: dict[str, int], lam: float) -> float:
    by_id = {v.id: v for d in snapshot.demands for v in d.variants}
    running = sum(cost_per_s(by_id[i.variant_id]) for i in snapshot.instances)
    loading = sum(cost_per_s(by_id[vid]) * lam * by_id[vid].load_ms / 1000 * k for vid, k in loaded.items())
    return running + loading


def met(snapshot: ClusterSnapshot, config: ScalingConfig) -> int:
    """Models whose load the snapshot's instances carry with the headroom."""
    by_id = {v.id: v for d in snapshot.demands for v in d.variants}
    count = 0
    for d in snapshot.demands:
        cap = sum(
            by_id[i.variant_id].saturation_qps
            for i in snapshot.instances
            if i.variant_id in by_id and by_id[i.variant_id].model == d.model
        )
        count += cap >= config.slack_threshold * d.load_qps - 1e-9
    return count


def apply(
    snapshot: ClusterSnapshot, decisions: tuple[Decision, ...], loaded: dict[str, int]
) -> ClusterSnapshot:
    by_id = {v.id: v for d in snapshot.demands for v in d.variants}
    instances = list(snapshot.instances)
    used = {w.id: w.memory_used_bytes for w in snapshot.workers}
    for d in decisions:
        for vid, w in d.loads:
            instances.append(InstanceView(w, vid, "active"))
            used[w] += by_id[vid].peak_memory_bytes
            loaded[vid] = loaded.get(vid, 0) + 1
        for vid, w in d.unloads:
            instances = [i for i in instances if not (i.variant_id == vid and i.worker_id == w)]
            used[w] -= by_id[vid].peak_memory_bytes
    workers = tuple(replace(w, memory_used_bytes=used[w.id]) for w in snapshot.workers)
    return replace(snapshot, instances=tuple(instances), workers=workers, now=snapshot.now + 1e6)


def greedy_fixed_point(
    snapshot: ClusterSnapshot, config: ScalingConfig
) -> tuple[ClusterSnapshot, dict[str, int], float, int]:
    loaded: dict[str, int] = {}
    pending: dict[str, float] = {}
    first_tick_s = 0.0
    for tick in range(200):
        start = time.perf_counter()
        result = autoscaler.plan(snapshot, pending, config)
        if tick == 0:
            first_tick_s = time.perf_counter() - start
        actions = tuple(d for d in result.decisions if d.action != "request_worker")
        pending = dict(result.pending)
        if not actions and not pending:
            return snapshot, loaded, first_tick_s, tick
        snapshot = apply(snapshot, actions, loaded)
    return snapshot, loaded, first_tick_s, 200


class Run(TypedDict):
    """One cluster (size × seed): both policies' solve times and costs, as `--json` writes them."""

    archs: int
    seed: int
    variants: int
    ilp_s: float
    ilp_status: str
    greedy_tick_s: float
    greedy_ticks: int
    greedy_cost: float
    ilp_cost: float
    greedy_hw: float
    ilp_hw: float
    greedy_met: int
    ilp_met: int


def run_one(archs: int, seed: int, config: ScalingConfig) -> Run:
    snap = instance(archs, seed)
    base = total_cost(snap, {}, config.lam)
    g_snap, g_loaded, g_tick_s, ticks = greedy_fixed_point(snap, config)
    solution = ilp.solve(snap, config, time_limit_s=60)
    i_plan = ilp.plan(snap, {}, replace(config, min_scale_down_s=0.0))
    i_loaded: dict[str, int] = {}
    i_snap = apply(snap, tuple(d for d in i_plan.decisions if d.action != "request_worker"), i_loaded)
    ilp_cost = base + solution.objective
    return {
        "archs": archs,
        "seed": seed,
        "variants": archs * 10,
        "ilp_s": solution.solve_s,
        "ilp_status": solution.status,
        "greedy_tick_s": g_tick_s,
        "greedy_ticks": ticks,
        "greedy_cost": total_cost(g_snap, g_loaded, config.lam),
        "ilp_cost": ilp_cost,
        "greedy_hw": total_cost(g_snap, {}, config.lam),
        "ilp_hw": total_cost(i_snap, {}, config.lam),
        "greedy_met": met(g_snap, config),
        "ilp_met": met(i_snap, config),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--archs", type=int, nargs="*", default=[10, 20, 50, 100])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--lam", type=float, default=1.0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    config = ScalingConfig(lam=args.lam, min_scale_down_s=0.0)
    rows = [run_one(a, s, config) for a in args.archs for s in range(args.seeds)]
    if args.json:
        print(json.dumps(rows, indent=1))
        return
    print(
        "| archs × 10 | ILP solve ms (median / max) | greedy tick ms (median) | greedy ticks to settle | "
        "models carried: greedy / ILP | total-cost gap (median / max) | hardware $/s gap (median / max) |"
    )
    print("|---|---|---|---|---|---|---|")
    for a in args.archs:
        rs = [r for r in rows if r["archs"] == a]
        both = [r for r in rs if r["greedy_met"] == r["ilp_met"]]
        gaps = [r["greedy_cost"] / r["ilp_cost"] - 1 for r in both]
        gap = f"{statistics.median(gaps):+.1%} / {max(gaps):+.1%} (n={len(gaps)})" if gaps else "n/a"
        hw = [r["greedy_hw"] / r["ilp_hw"] - 1 for r in both]
        hw_gap = f"{statistics.median(hw):+.1%} / {max(hw):+.1%}" if hw else "n/a"
        print(
            f"| {a} | {statistics.median(r['ilp_s'] for r in rs) * 1000:.1f} / "
            f"{max(r['ilp_s'] for r in rs) * 1000:.1f} | "
            f"{statistics.median(r['greedy_tick_s'] for r in rs) * 1000:.2f} | "
            f"{statistics.median(r['greedy_ticks'] for r in rs):.0f} | "
            f"{statistics.mean(r['greedy_met'] for r in rs):.1f} / "
            f"{statistics.mean(r['ilp_met'] for r in rs):.1f} "
            f"of {a} | {gap} | {hw_gap} |"
        )


if __name__ == "__main__":
    main()
