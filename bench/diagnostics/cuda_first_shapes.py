"""What a new batch size costs a CUDA variant: cuDNN picks its convolution algorithms per input shape,
and ONNX Runtime's CUDA provider benchmarks every candidate algorithm by default (`EXHAUSTIVE`). The
batcher forms batches of any size up to the variant's maximum, so each size is a new shape once.

For each `cudnn_conv_algo_search` mode, one fresh session of the demo CNN (fp32, TF32 off, as the
executor runs it) runs batch sizes 1, 3, 7, 13, 29 and 64 twice each; the table gives the first run of
each size (a new shape) and the second (seen). ONNX Runtime's CUDA convolutions keep the plan of the
last shape only, so a size seen before costs a new plan again once another size ran in between: a
second table runs the sizes in turn (each run a different size than the one before), through the
runtime the executor serves with (heuristic search), as batches come and padded to the max batch 64
(`infaas.runtimes.providers.padded_batch`). Needs a CUDA GPU and onnxruntime-gpu (the `gpu` extra);
elsewhere it says why and exits.

    .venv/bin/python -m bench.diagnostics.cuda_first_shapes [--repeats 1]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import onnxruntime as ort

from infaas.runtimes.base import RuntimeSpec
from infaas.runtimes.hardware import cuda_unavailable_reason
from infaas.runtimes.onnx_runtime import load_gpu_libraries
from infaas.runtimes.registry import build_runtime
from infaas_cli.demo_models import build_demo_models

SIZES = (1, 3, 7, 13, 29, 64)
MODES = ("EXHAUSTIVE", "HEURISTIC", "DEFAULT")
TURNS = 8


def run_once(onnx_path: Path, x: np.ndarray, mode: str) -> tuple[list[float], list[float]]:
    options = {"cudnn_conv_algo_search": mode, "use_tf32": 0}
    session = ort.InferenceSession(str(onnx_path), providers=[("CUDAExecutionProvider", options)])
    if session.get_providers()[0] != "CUDAExecutionProvider":
        sys.exit("the CUDA provider did not load")
    first: list[float] = []
    seen: list[float] = []
    for size in SIZES:
        for out in (first, seen):
            start = time.perf_counter()
            session.run(None, {"x": x[:size]})
            out.append((time.perf_counter() - start) * 1e3)
    return first, seen


def in_turn(onnx_path: Path, x: np.ndarray, pad_to: int | None) -> list[float]:
    """ms per run of the served runtime, the sizes in turn `TURNS` times, after each ran once."""
    spec = RuntimeSpec(
        runtime="onnxruntime", provider="CUDAExecutionProvider", optimization="all", pad_to=pad_to
    )
    runtime = build_runtime(onnx_path, spec)
    runtime.load()
    for size in SIZES:
        runtime.run({"x": x[:size]})
    times = []
    for _ in range(TURNS):
        for size in SIZES:
            start = time.perf_counter()
            runtime.run({"x": x[:size]})
            times.append((time.perf_counter() - start) * 1e3)
    runtime.unload()
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--repeats", type=int, default=1, help="fresh sessions per mode (medians shown)")
    args = parser.parse_args()
    reason = cuda_unavailable_reason()
    if reason is not None:
        print(f"no usable GPU: {reason}")
        return
    load_gpu_libraries()
    cnn = build_demo_models(Path("var/demo-models"), names=["digits-cnn"])[0]
    x = np.load(cnn.validation_path)["x"]
    print(f"onnxruntime {ort.__version__}; ms per run of batch sizes {', '.join(map(str, SIZES))}")
    print("| cudnn_conv_algo_search | first run of each size (new shape) | second run (seen) |")
    print("|---|---|---|")
    for mode in MODES:
        runs = [run_once(cnn.onnx_path, x, mode) for _ in range(args.repeats)]
        first = [statistics.median(r[0][i] for r in runs) for i in range(len(SIZES))]
        seen = [statistics.median(r[1][i] for r in runs) for i in range(len(SIZES))]
        cells = " / ".join(f"{v:.1f}" for v in first), " / ".join(f"{v:.2f}" for v in seen)
        print(f"| {mode} | {cells[0]} | {cells[1]} |")
    print(f"\nthe sizes in turn, {TURNS} times, each seen before (served runtime), ms per run")
    print("| batches | median | p90 | max |")
    print("|---|---:|---:|---:|")
    for label, pad_to in (("as they come", None), ("padded to 64", 64)):
        times = sorted(t for _ in range(args.repeats) for t in in_turn(cnn.onnx_path, x, pad_to))
        p90 = times[int(0.9 * (len(times) - 1))]
        print(f"| {label} | {statistics.median(times):.2f} | {p90:.2f} | {times[-1]:.2f} |")


if __name__ == "__main__":
    main()
