"""INFaaS §6.2 reproduced: flat low, steady high and fluctuating load on one model family, the INFaaS
policy (greedy model autoscaler with vertical scaling) against `static` (Clipper+: fixed pre-loaded
instances) and `horizontal` (SM+: replicas of one fixed variant) — throughput, SLO violation ratio and
cost over time, with plots in docs/img/.

`--mode sim` (default): the simulator (services/planner/simulator) with the real policy functions and a
ResNet50-like family of CPU, GPU (TensorRT batch 1 and 8) and Inferentia variants; costs as in the paper:
proportional to each instance's memory footprint, 0.031 (CPU), 0.190 (Inferentia), 0.498 (GPU) per GB·s
(normalized units, so only ratios matter). Workloads as in the paper: 4 QPS flat, 650 → 700 QPS ramp,
4–80 QPS fluctuating (spikes at 60–90 s and 150–180 s), Poisson arrivals, 200 s each.

`--mode real`: the whole system on this machine (`infaas_cli.launcher.start_suite`, embedded Redis and
SQLite), the demo MLP's real CPU variants, traces replayed open-loop through the gateway
(bench/common/loadgen.py), instances sampled every second from the metadata store for the cost. Loads are
scaled to what two cores carry. Policies: `greedy` planner, `static` (planner off, one pinned variant
pre-loaded), `horizontal` (planner replicating that pinned variant only). Per-second series go to
docs/img/autoscale_real.json, the plot (same layout as the simulator's) to docs/img/autoscale_real.png.

Usage:

    .venv/bin/python -m bench.papers.autoscale                      # simulator, all workloads, plots
    .venv/bin/python -m bench.papers.autoscale --mode real --seconds 40
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bench.common.paths import DOCS_IMG as IMG
from infaas.core import workloads
from infaas.policy.selection import WorkerView
from infaas.schemas.variants import BatchLatency, VariantProfile
from services.planner.policies.snapshot import ScalingConfig
from services.planner.simulator import SimConfig, SimModel, SimResult, simulate

GB = 1 << 30
RATE = {"cpu": 0.031, "neuron": 0.190, "cuda": 0.498}  # per GB·s of footprint (INFaaS §6.2)
SLO_MS = 300.0


def _variant(
    vid: str,
    hw: str,
    batch: int,
    points: tuple[tuple[int, float, float], ...],
    qps: float,
    gb: float,
    load_s: float,
) -> VariantProfile:
    return VariantProfile(
        id=f"resnet50.{vid}",
        model="resnet50",
        app="bench",
        signature_key="x",
        runtime="onnxruntime",
        optimization=vid,
        precision="fp32",
        hardware=hw,
        max_batch=batch,
        threads=1,
        artifact_digest="0" * 64,
        accuracy=0.76,
        load_ms=load_s * 1000,
        latencies=tuple(BatchLatency(*p) for p in points),
        saturation_qps=qps,
        peak_memory_bytes=int(gb * GB),
        cost_per_query=RATE[hw] * gb / qps,
    )


FAMILY = (
    _variant("cpu-b1", "cpu", 1, ((1, 180.0, 220.0),), 5.5, 0.6, 2.0),
    _variant("trt-b1", "cuda", 1, ((1, 3.0, 4.0),), 330.0, 0.8, 6.0),
    _variant("trt-b8", "cuda", 8, ((1, 3.0, 4.0), (8, 10.0, 12.0)), 800.0, 1.2, 8.0),
    _variant("inf-b1", "neuron", 1, ((1, 6.0, 8.0),), 160.0, 0.4, 4.0),
)
CPU, TRT1, TRT8, INF = (v.id for v in FAMILY)
WORKERS = (
    [WorkerView(f"cpu{i}", "cpu", "", 8, 4 * GB) for i in range(16)]
    + [WorkerView(f"gpu{i}", "cuda", "", 8, 16 * GB) for i in range(2)]
    + [WorkerView(f"inf{i}", "neuron", "", 8, 8 * GB) for i in range(2)]
)
# (name, policy, initial instances)
SYSTEMS = (
    ("INFaaS", "greedy", [(CPU, "cpu0")]),
    ("Clipper+CPU", "static", [(CPU, "cpu0"), (CPU, "cpu1")]),
    ("Clipper+GPU", "static", [(TRT8, "gpu0")]),
    ("SM+CPU", "horizontal", [(CPU, "cpu0")]),
    ("SM+GPU", "horizontal", [(TRT1, "gpu0")]),
)


def loads(seconds: float) -> dict[str, np.ndarray]:
    return {
        "flat low (4 QPS)": workloads.flat_rates(4, seconds),
        "steady high (650→700 QPS)": workloads.ramp_rates(650, 700, seconds),
        "fluctuating (4–80 QPS)": workloads.fluctuating_rates(4, 80, seconds, period_s=90),
    }


def run_sim(seconds: float, seed: int) -> dict[str, dict[str, SimResult]]:
    out: dict[str, dict[str, SimResult]] = {}
    for w_i, (load, rates) in enumerate(loads(seconds).items()):
        trace = workloads.arrivals(rates, seed=seed + w_i)
        out[load] = {}
        for name, policy, initial in SYSTEMS:
            model = SimModel("resnet50", FAMILY, trace, slo_ms=SLO_MS)
            config = SimConfig(policy=policy, scaling=ScalingConfig(min_scale_down_s=5.0), seed=seed)  # type: ignore[arg-type]
            out[load][name] = simulate([model], WORKERS, initial, seconds, config)
    return out


def table(results: dict[str, dict[str, SimResult]]) -> str:
    lines = [
        "| load | system | throughput (mean served/s) | SLO violations | cost (normalized) "
        "| cost vs INFaaS |",
        "|---|---|---|---|---|---|",
    ]
    ratios: list[float] = []
    for load, by_system in results.items():
        base = by_system["INFaaS"].cost.sum()
        for name, r in by_system.items():
            ratio = r.cost.sum() / base if base > 0 else math.nan
            if name.endswith("GPU"):
                ratios.append(ratio)
            lines.append(
                f"| {load} | {name} | {r.served.mean():.1f} | {r.violation_ratio:.1%} | {r.cost.sum():.1f} | "
                f"{ratio:.2f}× |"
            )
    lines.append("")
    lines.append(f"GPU baselines' cost over INFaaS's, mean of the {len(ratios)} runs: {np.mean(ratios):.1f}×")
    return "\n".join(lines)


@dataclass(frozen=True)
class Series:
    """One run's curves as plotted, one point per second: both modes draw through `plot`, so the
    simulator's and the real system's figures read the same way."""

    t: np.ndarray
    offered: np.ndarray  # queries arriving in each second
    served: np.ndarray  # of those, answered (late ones included)
    violation_ratio: np.ndarray  # of those, shed, failed or over the SLO; 0 where none arrived
    cost: np.ndarray  # whatever the caller plots in the cost row (its label says which)


def violation_ratio(offered: np.ndarray, violations: np.ndarray) -> np.ndarray:
    out: np.ndarray = np.where(offered > 0, violations / np.maximum(offered, 1), 0)
    return out


def sim_series(r: SimResult) -> Series:
    return Series(r.tick_t, r.offered, r.served, violation_ratio(r.offered, r.violations), np.cumsum(r.cost))


def plot(
    series: Mapping[str, Mapping[str, Series]], prefix: str, cost_label: str, *, nested: bool = False
) -> Path:
    """One column per load (rows: throughput, SLO violation ratio, cost), one line per system; the
    offered load is the first system's (every system of a load replays the same trace).

    `nested`: each earlier system drawn wider, so that curves which coincide (on the real system every
    policy may serve all that is offered, with no violations) stay visible under the later ones; the
    legend above the panels, where it hides no curve; violation ratios and costs from 0 (an all-zero
    ratio would otherwise get an axis centred on 0), so that the heights of $/h levels compare as
    their ratios."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    IMG.mkdir(parents=True, exist_ok=True)
    fig, axes = plt.subplots(3, len(series), figsize=(5 * len(series), 9), squeeze=False)
    for col, (load, by_system) in enumerate(series.items()):
        for i, (name, s) in enumerate(by_system.items()):
            lw = 1 + 1.5 * (len(by_system) - 1 - i) if nested else 1
            axes[0][col].plot(s.t, s.served, label=name, lw=lw)
            axes[1][col].plot(s.t, s.violation_ratio, lw=lw)
            axes[2][col].plot(s.t, s.cost, lw=lw)
        if nested:
            worst = max(float(s.violation_ratio.max(initial=0)) for s in by_system.values())
            top = max(0.05, 1.1 * worst)
            axes[1][col].set_ylim(-0.02 * top, top)  # the margin keeps a wide line at 0 whole
            axes[2][col].set_ylim(bottom=0)
        first = next(iter(by_system.values()))
        axes[0][col].plot(first.t, first.offered, "k:", lw=1, label="offered")
        axes[0][col].set_title(load)
        axes[0][col].set_ylabel("served queries/s")
        axes[1][col].set_ylabel("SLO violation ratio")
        axes[2][col].set_ylabel(cost_label)
        axes[2][col].set_xlabel("time (s)")
    if nested:
        handles, labels = axes[0][0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="upper center", ncols=len(labels), fontsize=8, frameon=False)
        fig.tight_layout(rect=(0, 0, 1, 0.97))
    else:
        axes[0][0].legend(fontsize=7)
        fig.tight_layout()
    path = IMG / f"{prefix}.png"
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--mode", choices=("sim", "real"), default="sim")
    parser.add_argument("--seconds", type=float, default=200)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    if args.mode == "real":
        from bench.papers.autoscale_real import run_real, save  # bench/papers/autoscale_real.py

        runs = run_real(args.seconds, args.seed)
        # The raw series first: a plotting failure must not cost the (minutes-long) run.
        print(f"series: {save(runs, IMG / 'autoscale_real.json', args.seconds, args.seed)}")
        real: dict[str, dict[str, Series]] = {}
        for r in runs:
            real.setdefault(r.load, {})[r.policy] = Series(
                r.t, r.offered, r.served, violation_ratio(r.offered, r.violations), r.cost_per_hour
            )
        print(f"plot: {plot(real, 'autoscale_real', 'cost ($/h)', nested=True)}")
        return
    results = run_sim(args.seconds, args.seed)
    print(table(results))
    sim = {load: {name: sim_series(r) for name, r in by.items()} for load, by in results.items()}
    print(f"plot: {plot(sim, 'autoscale_sim', 'cumulative cost')}")


if __name__ == "__main__":
    main()
