"""A variant's memory two ways, on the demo models: as RSS growth of a long-lived process over a load
and runs, after other sessions have come and gone, and as the profiler takes it (a fresh process,
services/profiler/memory.py). Prints a markdown table; no system needed.

    .venv/bin/python -m bench.diagnostics.variant_memory [--batches 1,4,16,64]
"""

from __future__ import annotations

import argparse
import gc
import time
from pathlib import Path

import numpy as np
import psutil

from infaas.runtimes.base import RuntimeSpec
from infaas.runtimes.registry import build_runtime
from infaas_cli.demo_models import build_demo_models
from services.profiler.memory import ProbeSpec, measure_memory

MIB = 1 << 20


def in_process(path: Path, spec: RuntimeSpec, batches: list[int], x: np.ndarray) -> int:
    """The old way: RSS after the runs minus RSS before the load, in this (long-lived) process."""
    process = psutil.Process()
    gc.collect()
    before = process.memory_info().rss
    model = build_runtime(path, spec)
    model.load()
    peak = process.memory_info().rss
    for b in batches:
        model.run({"x": x[:b]})
        peak = max(peak, process.memory_info().rss)
    model.unload()
    return max(0, peak - before)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--batches", default="1,4,16,64")
    args = parser.parse_args()
    batches = [int(b) for b in args.batches.split(",")]
    models = build_demo_models(Path("var") / "demo-models")
    x = np.load(models[0].validation_path)["x"]
    print(
        f"| model | runtime | artifact MiB | in-process RSS growth MiB | fresh process MiB "
        f"(batch {', '.join(map(str, batches))}) | probe s |"
    )
    print("| --- | --- | ---: | ---: | --- | ---: |")
    for model in models:
        forms = (
            ("onnxruntime", "CPUExecutionProvider", model.onnx_path),
            ("torchscript", "torch-cpu", model.torchscript_path),
        )
        for runtime, provider, path in forms:
            built = RuntimeSpec(runtime=runtime, provider=provider, optimization="all")
            old = in_process(path, built, batches, x)
            start = time.perf_counter()
            new = measure_memory(ProbeSpec(path=str(path), runtime=built), {"x": x}, batches)
            took = time.perf_counter() - start
            per_batch = " / ".join(f"{new.by_batch[b] / MIB:.2f}" for b in batches)
            print(
                f"| {model.name} | {runtime} | {path.stat().st_size / MIB:.2f} | {old / MIB:.2f} | "
                f"{per_batch} | {took:.1f} |"
            )


if __name__ == "__main__":
    main()
