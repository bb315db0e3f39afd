"""InferLine's comparison at our scale, in the simulator: a three-stage pipeline (preprocess → a
ResNet50-like model → a conditional language model that 30 % of queries reach) under one end-to-end P99
SLO, gamma arrivals with CV 1 and CV 4. Systems:

- **InferLine**: the planner (`services/planner/policies/pipeline_plan.py`) on a 60 s planning trace,
  its plan served unchanged;
- **InferLine + tuner**: the same plan with the tuner (`pipeline_tuner.py`) ticking every second on the
  live arrivals (a replica it adds serves after its variant's load time);
- **CG-Mean / CG-Peak** (the paper's coarse-grained baselines): the pipeline provisioned as one unit —
  every stage on its fastest variant, one batch size for all (the largest whose summed latency fits half
  the SLO), whole-pipeline replicas for the planning trace's mean rate, or for its peak 1 s rate.
Every configuration is evaluated on a separate 300 s trace of the same rate and CV by the estimator
(`services/planner/simulator/pipelines.py`): cost (normalized $/s, time-averaged), SLO attainment (share
of queries within the SLO) and P99. Costs as in `autoscale.py`: proportional to the instance's memory
footprint per hardware kind, so only ratios matter. Also timed: the estimator on one hour of trace.

Usage:

    .venv/bin/python -m bench.papers.pipelines                  # table, docs/img/pipelines_sim.{json,png}
    .venv/bin/python -m bench.papers.pipelines --seconds 120    # a shorter evaluation trace
    .venv/bin/python -m bench.papers.pipelines --time-estimator # only the estimator's speed on one hour
    .venv/bin/python -m bench.papers.pipelines --mode real --rate 40 --seconds 30    # pipelines_real.py
    .venv/bin/python -m bench.papers.pipelines --mode real-cg --rate 100 --seconds 60 # pipelines_cg_real.py
"""

from __future__ import annotations

import argparse
import json
import math
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from bench.common.paths import DOCS_IMG as IMG
from infaas.core import workloads
from infaas.schemas.variants import BatchLatency, VariantProfile
from services.planner.policies.pipeline_plan import PlanStage, pipeline_cost, plan, utilization
from services.planner.policies.pipeline_tuner import (
    DOWN_WINDOW_S,
    StageTuning,
    TunerState,
    planned_envelope,
    tune,
)
from services.planner.policies.snapshot import cost_per_s
from services.planner.simulator.pipelines import StageConfig, StageShape, estimate, routes

GB = 1 << 30
RATE = {"cpu": 0.031, "neuron": 0.190, "cuda": 0.498}  # per GB·s of footprint (INFaaS §6.2)
SLO_MS = 100.0
QPS = 1000.0
OVERHEAD_MS = 2.0


def _variant(
    model: str,
    vid: str,
    hw: str,
    fixed_ms: float,
    per_row_ms: float,
    max_batch: int,
    gb: float,
    load_s: float,
) -> VariantProfile:
    """A variant profiled like ours, at batch sizes 1, 2, 4, … max_batch: p50 = fixed + per row × batch,
    p99 20 % above."""
    points = [(1 << i, fixed_ms + per_row_ms * (1 << i)) for i in range(int(math.log2(max_batch)) + 1)]
    qps = max_batch / (points[-1][1] / 1000)
    return VariantProfile(
        id=f"{model}.{vid}",
        model=model,
        app="bench",
        signature_key=model,
        runtime="onnxruntime",
        optimization=vid,
        precision="fp32",
        hardware=hw,
        max_batch=max_batch,
        threads=1,
        artifact_digest="0" * 64,
        accuracy=0.9,
        load_ms=load_s * 1000,
        latencies=tuple(BatchLatency(b, t, t * 1.2) for b, t in points),
        saturation_qps=qps,
        peak_memory_bytes=int(gb * GB),
        cost_per_query=RATE[hw] * gb / qps,
    )


STAGES = (
    (StageShape("preprocess", None), (_variant("pre", "cpu", "cpu", 0.8, 0.1, 32, 0.2, 1.0),)),
    (
        StageShape("resnet", "preprocess"),
        (
            _variant("resnet", "cpu", "cpu", 50.0, 45.0, 4, 0.6, 2.0),
            _variant("resnet", "trt", "cuda", 2.5, 0.7, 32, 1.2, 6.0),
            _variant("resnet", "inf", "neuron", 5.0, 1.8, 16, 0.4, 4.0),
        ),
    ),
    (
        StageShape("lang", "resnet", scale=0.3),
        (
            _variant("lang", "cpu", "cpu", 4.0, 2.0, 16, 0.3, 1.0),
            _variant("lang", "gpu", "cuda", 1.8, 0.3, 32, 0.8, 5.0),
        ),
    ),
)
SHAPES = [s for s, _ in STAGES]


def coarse(rate_qps: float) -> dict[str, StageConfig]:
    """The pipeline as one unit: fastest variants, one batch for all, whole-pipeline replicas for `rate`."""
    fastest = {s.name: min(vs, key=lambda v: v.latency_ms(1, tail=False)) for s, vs in STAGES}
    batch = 1
    while (
        all(batch * 2 <= v.max_batch for v in fastest.values())
        and sum(v.profiled_ms(batch * 2, tail=False) for v in fastest.values()) <= SLO_MS / 2
    ):
        batch *= 2
    unit = min(
        batch / (v.profiled_ms(batch, tail=False) / 1000) / s.scale
        for s, v in zip(SHAPES, fastest.values(), strict=True)
    )
    k = max(1, math.ceil(rate_qps / unit))
    return {name: StageConfig(v, batch, k) for name, v in fastest.items()}


def tuner_schedules(
    configs: dict[str, StageConfig], planning: np.ndarray, trace: np.ndarray
) -> tuple[dict[str, list[tuple[float, int]]], float, int]:
    """Replica schedules from the tuner ticking every second over `trace`; the time-averaged cost; actions."""
    service_s = sum(c.variant.profiled_ms(c.batch, tail=False) for c in configs.values()) / 1000
    envelope = planned_envelope(planning, service_s)
    # ρ_m at the highest 5 s rate of the planning trace: the plan was estimated to meet the SLO through
    # that peak, so its utilization there is what the tuner keeps (at the mean, every bit of noise above
    # the mean would add a replica).
    peak = float(np.bincount((planning // DOWN_WINDOW_S).astype(int)).max()) / DOWN_WINDOW_S
    stages = [
        StageTuning(
            s.name, s.scale, configs[s.name].rows_per_s(), utilization(configs[s.name], peak, s.scale)
        )
        for s in SHAPES
    ]
    state = TunerState({n: c.replicas for n, c in configs.items()}, last_action_at=0.0)
    schedules: dict[str, list[tuple[float, int]]] = {n: [] for n in configs}
    replicas = {n: [(0.0, c.replicas)] for n, c in configs.items()}
    end = float(trace[-1])
    actions = 0
    for now in np.arange(1.0, end, 1.0):
        done, state = tune(
            float(now), trace[: np.searchsorted(trace, now, side="right")], stages, envelope, state
        )
        for action in done:
            actions += 1
            delay = (
                configs[action.stage].variant.load_ms / 1000
                if action.replicas_to > action.replicas_from
                else 0.0
            )
            schedules[action.stage].append((float(now) + delay, action.replicas_to))
            replicas[action.stage].append((float(now), action.replicas_to))  # a loading replica costs too
    cost = 0.0
    for name, steps in replicas.items():
        c = cost_per_s(configs[name].variant)
        for (t0, k), (t1, _) in zip(steps, [*steps[1:], (end, 0)], strict=True):
            cost += c * k * (t1 - t0)
    for name in schedules:
        schedules[name].sort()
    return schedules, cost / end, actions


def run(seconds: float, seed: int) -> dict[str, dict[str, dict[str, float]]]:
    out: dict[str, dict[str, dict[str, float]]] = {}
    for cv in (1.0, 4.0):
        planning = workloads.gamma(QPS, 60, cv=cv, seed=seed)
        trace = workloads.gamma(QPS, seconds, cv=cv, seed=seed + 1)
        masks = routes(SHAPES, trace.size, seed=seed)
        t0 = time.perf_counter()
        planned = plan(
            [PlanStage(s, vs) for s, vs in STAGES], planning, SLO_MS, overhead_ms=OVERHEAD_MS, seed=seed
        )
        plan_s = time.perf_counter() - t0
        rate = planning.size / float(planning[-1] - planning[0])
        peak = float(np.bincount(planning.astype(int)).max())
        systems: dict[
            str, tuple[dict[str, StageConfig], dict[str, list[tuple[float, int]]] | None, float | None]
        ] = {
            "InferLine": (planned.configs, None, None),
            "CG-Mean": (coarse(rate), None, None),
            "CG-Peak": (coarse(peak), None, None),
        }
        schedules, tuned_cost, actions = tuner_schedules(planned.configs, planning, trace)
        systems["InferLine + tuner"] = (planned.configs, schedules, tuned_cost)
        out[f"CV {cv:g}"] = {}
        for name, (configs, sched, cost) in systems.items():
            result = estimate(SHAPES, configs, trace, masks, overhead_ms=OVERHEAD_MS, schedules=sched)
            out[f"CV {cv:g}"][name] = {
                "cost_per_s": cost if cost is not None else pipeline_cost(configs),
                "attainment": float((result.latency_ms <= SLO_MS).mean()),
                "p99_ms": result.p99,
                "config": " ".join(
                    f"{n}={c.variant.optimization}/b{c.batch}x{c.replicas}" for n, c in configs.items()
                ),  # type: ignore[dict-item]
            }
        out[f"CV {cv:g}"]["InferLine"]["plan_s"] = plan_s
        out[f"CV {cv:g}"]["InferLine"]["predicted_p99_ms"] = planned.p99_ms
        out[f"CV {cv:g}"]["InferLine + tuner"]["actions"] = actions
    return out


def estimator_speed(seed: int) -> tuple[int, float, float]:
    """Queries in one hour at the bench rate; seconds the estimator's first call takes over them (in a
    new process: its queue kernel compiled, or loaded from numba's cache) and the best of 3 after it."""
    trace = workloads.gamma(QPS, 3600, cv=1.0, seed=seed)
    masks = routes(SHAPES, trace.size, seed=seed)
    configs = coarse(QPS)
    configs = {n: replace(c, replicas=c.replicas + 1) for n, c in configs.items()}
    times: list[float] = []
    for _ in range(4):
        t0 = time.perf_counter()
        estimate(SHAPES, configs, trace, masks, overhead_ms=OVERHEAD_MS)
        times.append(time.perf_counter() - t0)
    return trace.size, times[0], min(times[1:])


def print_estimator_speed(seed: int) -> None:
    queries, first, best = estimator_speed(seed)
    print(
        f"estimator: one hour at {QPS:g} q/s ({queries} queries, 3 stages) in {best:.3f} s "
        f"(best of 3); first call {first:.3f} s"
    )


def table(results: dict[str, dict[str, dict[str, float]]]) -> str:
    lines = [
        "| arrivals | system | configuration (stage=variant/batch×replicas) | cost ($/s, normalized) "
        "| cost vs InferLine + tuner | SLO attainment | P99 (ms) |",
        "|---|---|---|---|---|---|---|",
    ]
    for load, systems in results.items():
        base = systems["InferLine + tuner"]["cost_per_s"]
        for name, r in systems.items():
            lines.append(
                f"| {load} | {name} | {r['config']} | {r['cost_per_s']:.4f} | {r['cost_per_s'] / base:.2f}× "
                f"| {100 * r['attainment']:.2f} % | {r['p99_ms']:.1f} |"
            )
    return "\n".join(lines)


def plot(results: dict[str, dict[str, dict[str, float]]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    names = list(next(iter(results.values())))
    width = 0.8 / len(results)
    for i, (load, systems) in enumerate(results.items()):
        xs = np.arange(len(names)) + i * width
        axes[0].bar(xs, [systems[n]["cost_per_s"] for n in names], width, label=load)
        axes[1].bar(xs, [100 * systems[n]["attainment"] for n in names], width, label=load)
    for ax, title in zip(
        axes, ("cost ($/s, normalized)", f"SLO attainment (%) at P99 {SLO_MS:g} ms"), strict=True
    ):
        ax.set_xticks(np.arange(len(names)) + width / 2, names, rotation=15, fontsize=8)
        ax.set_title(title, fontsize=10)
        ax.legend(fontsize=8)
    axes[1].set_ylim(80, 100.5)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=300.0, help="evaluation trace length")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--no-plot", action="store_true")
    parser.add_argument("--mode", choices=("sim", "real", "real-cg"), default="sim")
    parser.add_argument("--rate", type=float, default=40.0, help="real mode: queries per second")
    parser.add_argument("--time-estimator", action="store_true", help="only time the estimator")
    args = parser.parse_args()
    if args.time_estimator:
        print_estimator_speed(args.seed)
        return
    if args.mode == "real-cg":
        from bench.papers.pipelines_cg_real import OUT, report

        report(args.rate, args.seconds, args.seed, OUT)
        return
    if args.mode == "real":
        from bench.papers.pipelines_real import run_real

        rows = run_real(args.rate, args.seconds, args.seed)
        IMG.mkdir(parents=True, exist_ok=True)
        (IMG / "pipelines_real.json").write_text(json.dumps(rows, indent=1))
        return
    results = run(args.seconds, args.seed)
    print(table(results))
    for load, systems in results.items():
        il = systems["InferLine"]
        print(
            f"{load}: plan took {il['plan_s']:.2f} s; predicted P99 {il['predicted_p99_ms']:.1f} ms "
            f"(planning trace); tuner actions {systems['InferLine + tuner']['actions']:.0f}"
        )
    print_estimator_speed(args.seed)
    if not args.no_plot:
        IMG.mkdir(parents=True, exist_ok=True)
        (IMG / "pipelines_sim.json").write_text(json.dumps(results, indent=1))
        plot(results, IMG / "pipelines_sim.png")


if __name__ == "__main__":
    main()
