"""INFaaS §6.2 reproduced: flat low, steady high and fluctuating load on one model family, the INFaaS
policy (greedy model autoscaler with vertical scaling) against `static` (Clipper+: fixed pre-loaded
instances) and `horizontal` (SM+: replicas of one fixed variant) — throughput, SLO violation ratio and
cost over time, with plots in docs/img/.

`--mode sim` (default): the simulator (services/planner/simulator) with the real policy functions and a
ResNet50-like family of CPU, GPU (TensorRT batch 1 and 8) and Inferentia variants; costs as in the paper:
proportional to each instance's memory footprint, 0.031 (CPU), 0.190 (Inferentia), 0.498 (GPU) per GB·s
(normalized units, so only ratios matter). Workloads as in the paper: 4 QPS flat, 650 → 700 QPS ramp,
4–80 QPS fluctuating (spikes at 60–90 s and 150–180 s), Poisson arrivals, 200 s each.

`--mode real`: the whole system on this machine (`infaas.launcher.start_suite`, embedded Redis and
SQLite), the demo MLP's real CPU variants, traces replayed open-loop through the gateway
(bench/loadgen.py), instances sampled every second from the metadata store for the cost. Loads are
scaled to what two cores carry. Policies: `greedy` planner, `static` (planner off, one pinned variant
pre-loaded), `horizontal` (planner replicating that pinned variant only).

Usage:

    .venv/bin/python bench/autoscale.py                      # simulator, all workloads, plots
    .venv/bin/python bench/autoscale.py --mode real --seconds 40
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from infaas import workloads  # noqa: E402
from infaas.selection import WorkerView  # noqa: E402
from infaas.variants import BatchLatency, VariantProfile  # noqa: E402
from services.planner.scaling import ScalingConfig  # noqa: E402
from services.planner.simulator import SimConfig, SimModel, SimResult, simulate  # noqa: E402

IMG = Path(__file__).resolve().parents[1] / "docs" / "img"
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


def plot(results: dict[str, dict[str, SimResult]], prefix: str) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    IMG.mkdir(parents=True, exist_ok=True)
    paths = []
    fig, axes = plt.subplots(3, len(results), figsize=(5 * len(results), 9), squeeze=False)
    for col, (load, by_system) in enumerate(results.items()):
        for name, r in by_system.items():
            axes[0][col].plot(r.tick_t, r.served, label=name, lw=1)
            axes[1][col].plot(
                r.tick_t, np.where(r.offered > 0, r.violations / np.maximum(r.offered, 1), 0), lw=1
            )
            axes[2][col].plot(r.tick_t, np.cumsum(r.cost), lw=1)
        axes[0][col].plot(
            by_system["INFaaS"].tick_t, by_system["INFaaS"].offered, "k:", lw=1, label="offered"
        )
        axes[0][col].set_title(load)
        axes[0][col].set_ylabel("served queries/s")
        axes[1][col].set_ylabel("SLO violation ratio")
        axes[2][col].set_ylabel("cumulative cost")
        axes[2][col].set_xlabel("time (s)")
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    path = IMG / f"{prefix}.png"
    fig.savefig(path, dpi=90)
    plt.close(fig)
    paths.append(path)
    return paths


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--mode", choices=("sim", "real"), default="sim")
    parser.add_argument("--seconds", type=float, default=200)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    if args.mode == "real":
        from autoscale_real import run_real  # bench/autoscale_real.py

        run_real(args.seconds, args.seed)
        return
    results = run_sim(args.seconds, args.seed)
    print(table(results))
    for path in plot(results, "autoscale_sim"):
        print(f"plot: {path}")


if __name__ == "__main__":
    main()
