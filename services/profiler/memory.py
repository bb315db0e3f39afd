"""A variant's memory, measured in a process of its own.

The profiler's process has loaded and run many sessions before this one (allocator arenas, ONNX Runtime
and torch state, the validation set), so its RSS growth over a load says little about what a worker
needs to host the variant. Here a fresh Python process imports the runtimes, loads and runs a one-node
model on the same runtime, provider and threads (what any first session costs a worker, the runtime's
libraries and thread pools, is not this variant's; a model of its own, as memory the variant itself
freed would be reused unseen), takes its RSS as the baseline, loads the variant, runs every batch size
up to the largest, and reports the peak above the baseline after each: the kernel's high-water mark (`VmHWM`,
reset to the baseline through `/proc/self/clear_refs`), so a peak inside a run counts. For a
GPU variant it reports the GPU memory NVML says the process gained over the baseline instead (the CUDA
context the warm-up made is a worker's once): that is what packs instances onto a GPU. The child
answers in JSON on stdout and reads its inputs from an `.npz` without pickles: nothing it says is
unpickled.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from infaas.runtimes.base import RuntimeSpec

PROBE_TIMEOUT_S = 300.0
"""A load plus one run per batch size: minutes only for a very large model; past this the probe failed."""


@dataclass(frozen=True)
class MemoryMeasurement:
    peak_bytes: int
    """The highest of `by_batch`: host memory (CPU variants) or GPU memory (GPU variants)."""
    by_batch: dict[int, int]
    """Peak above the baseline once each batch size has run (sizes in increasing order, so cumulative)."""
    gpu: bool


@dataclass(frozen=True)
class ProbeSpec:
    """The variant the child measures: its artifact and how its runtime is built."""

    path: str
    runtime: RuntimeSpec


def measure_memory(
    spec: ProbeSpec, inputs: dict[str, np.ndarray], batches: list[int], timeout_s: float = PROBE_TIMEOUT_S
) -> MemoryMeasurement:
    """Run the probe in a fresh interpreter; `RuntimeError` with the child's last words if it fails."""
    with tempfile.TemporaryDirectory(prefix="infaas-memory-") as tmp:
        sample = Path(tmp) / "inputs.npz"
        rows: dict[str, Any] = {name: _rows(x, max(batches)) for name, x in inputs.items()}
        np.savez(sample, **rows)
        args = {
            "spec": {"path": spec.path, "runtime": spec.runtime.to_json()},
            "inputs": str(sample),
            "batches": batches,
        }
        done = subprocess.run(
            [sys.executable, "-m", "services.profiler.memory", json.dumps(args)],
            capture_output=True,
            timeout=timeout_s,
            check=False,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
    if done.returncode != 0:
        raise RuntimeError(f"the memory probe exited with {done.returncode}: {done.stderr.decode()[-300:]}")
    answer = json.loads(done.stdout.decode().strip().splitlines()[-1])
    by_batch = {int(b): int(v) for b, v in answer["by_batch"].items()}
    return MemoryMeasurement(peak_bytes=max(by_batch.values()), by_batch=by_batch, gpu=bool(answer["gpu"]))


def _rows(x: np.ndarray, n: int) -> np.ndarray:
    reps = -(-n // len(x))
    return np.ascontiguousarray(np.concatenate([x] * reps)[:n] if reps > 1 else x[:n])


def _rss() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _reset_high_water() -> bool:
    """Start the kernel's peak-RSS record afresh at the current RSS (Linux ≥ 4.0); False where it cannot."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
    except OSError:
        return False
    return True


def _high_water() -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


def _warm_up(spec: RuntimeSpec) -> None:
    """Start the runtime as the variant will, on its plug-in's one-node model: libraries, provider,
    thread pools, TorchScript's compiler."""
    from infaas.runtimes.registry import build_runtime, plugin

    with tempfile.TemporaryDirectory(prefix="infaas-warm-") as tmp:
        path = Path(tmp) / "warm"
        plugin(spec.runtime).write_warm_model(path)
        warm = RuntimeSpec(
            runtime=spec.runtime,
            provider=spec.provider,
            threads=spec.threads,
            optimization=spec.optimization,
            input_names=("a",),
            output_names=("b",),
            device=spec.device,
        )
        runtime = build_runtime(path, warm)
        runtime.load()
        runtime.run({"a": np.ones((1, 4), dtype=np.float32)})
        runtime.unload()


def probe(args: dict[str, Any]) -> dict[str, Any]:
    """The child's work (see the module's docstring)."""
    import gc

    from infaas.runtimes.hardware import GpuMemoryReader, gpu_memory_above, gpu_use
    from infaas.runtimes.registry import build_runtime

    spec = RuntimeSpec.from_json(args["spec"]["runtime"])
    with np.load(args["inputs"], allow_pickle=False) as npz:
        inputs = {name: npz[name] for name in npz.files}
    gpu = spec.execution_provider.gpu
    reader = GpuMemoryReader(spec.device) if gpu else None
    _warm_up(spec)
    gc.collect()
    base = _rss()
    pid = os.getpid()
    gpu_base = gpu_use(pid, reader.processes(), reader.device_used()) if reader else None
    peaks = _reset_high_water()  # else sampled after each run: a peak inside a run is missed
    runtime = build_runtime(Path(args["spec"]["path"]), spec)
    runtime.load()
    by_batch: dict[int, int] = {}
    for batch in args["batches"]:
        sample = {name: x[:batch] for name, x in inputs.items()}
        runtime.run(sample)
        runtime.run(sample)  # the second run of a size is the steady state (arenas grown, plans cached)
        if reader is not None and gpu_base is not None:
            now = gpu_use(pid, reader.processes(), reader.device_used())
            by_batch[batch] = gpu_memory_above(gpu_base, now)
        else:
            by_batch[batch] = max(0, max(_high_water() if peaks else 0, _rss()) - base)
    if reader is not None:
        reader.close()
    return {"by_batch": by_batch, "gpu": gpu}


if __name__ == "__main__":
    print(json.dumps(probe(json.loads(sys.argv[1]))))
