"""The demo models' costs: how long a cached `build_demo_models` takes, and each model's median batch-1
latency in-process (ONNX Runtime, one thread, so the numbers are about model cost, not thread scheduling).

The demo's variants are meant to trade accuracy for latency (the CNN does thousands of times the
multiply-adds of the small MLP); the unit tests check what the models compute, this measures what they
cost. Usage:

    .venv/bin/python -m bench.diagnostics.demo_models --cache var/demo-models --runs 200
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np
import onnxruntime as ort

from infaas_cli.demo_models import build_demo_models


def median_latency_ms(path: Path, x: np.ndarray, runs: int) -> float:
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    session = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
    for _ in range(20):  # warm
        session.run(None, {"x": x})
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        session.run(None, {"x": x})
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--cache", type=Path, default=Path("var/demo-models"))
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()

    models = build_demo_models(args.cache)  # builds what is missing; the timed build below hits the cache
    start = time.perf_counter()
    build_demo_models(args.cache)
    print(f"cached build_demo_models: {(time.perf_counter() - start) * 1000:.1f} ms")

    with np.load(models[0].validation_path) as data:
        x1 = data["x"][:1]
    print("median batch-1 latency, one thread (ms)")
    for model in models:
        print(f"  {model.name:24} {median_latency_ms(model.onnx_path, x1, args.runs):.4f}")


if __name__ == "__main__":
    main()
