"""Measuring one ONNX Runtime session configuration: load time, accuracy, latency per batch, memory.

Every variant of a model that shares a session configuration (runtime, graph, threads, hardware) shares
these measurements; the variant's max batch only decides which batch sizes it may use.
"""

from __future__ import annotations

import gc
import math
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import psutil

from infaas.runtimes.base import Runtime
from infaas.schemas.variants import BatchLatency


@dataclass(frozen=True)
class ConcurrencyPoint:
    """Latency of batch-1 requests when `concurrency` of them run at once on one instance (SERF):
    `mean_ms` gives the service rate μ_i = 1000/mean_ms the queueing model needs."""

    concurrency: int
    p50_ms: float
    p99_ms: float
    qps: float
    mean_ms: float
    requests: int


@dataclass(frozen=True)
class SessionMeasurement:
    threads: int
    load_ms: float
    accuracy: float
    latencies: tuple[BatchLatency, ...]
    peak_memory_bytes: int
    interference: tuple[ConcurrencyPoint, ...] = ()


def batch_sizes_up_to(largest: int, also: Iterable[int] = ()) -> list[int]:
    """1, 2, 4, … up to `largest`, `largest` itself and the sizes in `also` up to it (the max batches of
    the variants a session is measured for: a padded variant's cost is the cost at its max batch)."""
    sizes = {1 << i for i in range(int(math.log2(largest)) + 1)} | {largest}
    return sorted(sizes | {b for b in also if 1 <= b <= largest})


def measure_session(
    factory: Callable[[], Runtime],
    *,
    threads: int,
    artifact_bytes: int,
    inputs: dict[str, np.ndarray],
    labels: np.ndarray,
    task: str = "classification",
    batch_sizes: Sequence[int],
    seconds_per_point: float,
    min_iterations: int,
    max_concurrency: int = 1,
    concurrency_requests: int = 10,
) -> SessionMeasurement:
    """Profile one session configuration on this machine at `batch_sizes` (`batch_sizes_up_to`);
    `factory` builds an unloaded runtime."""
    process = psutil.Process()
    gc.collect()
    rss_before = process.memory_info().rss
    load_times = []
    model: Runtime | None = None
    # Load three times and keep the median: the first load also pays for the page cache.
    for _ in range(3):
        if model is not None:
            model.unload()
        model = factory()
        start = time.perf_counter()
        model.load()
        load_times.append((time.perf_counter() - start) * 1000)
    assert model is not None
    try:
        accuracy = measure_accuracy(model, inputs, labels, task=task)
        peak = process.memory_info().rss
        latencies = []
        for batch in batch_sizes:
            sample = {name: _rows(x, batch) for name, x in inputs.items()}
            latencies.append(time_batch(model, sample, batch, seconds_per_point, min_iterations))
            peak = max(peak, process.memory_info().rss)
        one = {name: _rows(x, 1) for name, x in inputs.items()}
        interference = tuple(
            measure_concurrency(model, one, c, concurrency_requests) for c in range(1, max_concurrency + 1)
        )
    finally:
        model.unload()
    return SessionMeasurement(
        threads=threads,
        load_ms=float(np.median(load_times)),
        accuracy=accuracy,
        latencies=tuple(latencies),
        interference=interference,
        peak_memory_bytes=max(peak - rss_before, artifact_bytes),
    )


def measure_concurrency(
    model: Runtime, sample: dict[str, np.ndarray], concurrency: int, requests: int
) -> ConcurrencyPoint:
    """Run `concurrency` request loops at once, about `requests` timed requests in all (SERF profiles
    ~10 per level: requests of one model are near-deterministic, so a few give the mean); requests
    interfere through shared cores, caches and memory bandwidth, which is what the model needs."""
    each = max(2, math.ceil(requests / concurrency))
    times: list[list[float]] = [[] for _ in range(concurrency)]
    # Every loop warms up once, then all start together: the timed requests run `concurrency` at a time.
    ready = threading.Barrier(concurrency + 1)

    def loop(out: list[float]) -> None:
        model.run(sample)
        ready.wait()
        for _ in range(each):
            start = time.perf_counter()
            model.run(sample)
            out.append((time.perf_counter() - start) * 1000)

    workers = [threading.Thread(target=loop, args=(t,)) for t in times]
    for w in workers:
        w.start()
    ready.wait()
    started = time.perf_counter()
    for w in workers:
        w.join()
    elapsed = time.perf_counter() - started
    flat = np.asarray([x for t in times for x in t])
    return ConcurrencyPoint(
        concurrency=concurrency,
        p50_ms=round(float(np.percentile(flat, 50)), 4),
        p99_ms=round(float(np.percentile(flat, 99)), 4),
        qps=round(len(flat) / elapsed, 1),
        mean_ms=round(float(flat.mean()), 4),
        requests=len(flat),
    )


def measure_accuracy(
    model: Runtime,
    inputs: dict[str, np.ndarray],
    labels: np.ndarray,
    *,
    task: str = "classification",
    chunk: int = 64,
) -> float:
    """The accuracy of this very session on the validation set: top-1 for a classifier, R² clipped to
    [0, 1] for a regression model (`r2_accuracy`)."""
    correct = 0
    predictions: list[np.ndarray] = []
    for start in range(0, len(labels), chunk):
        out = model.run({n: x[start : start + chunk] for n, x in inputs.items()})
        first = next(iter(out.values()))
        if task == "regression":
            predictions.append(first)
        else:
            correct += int((first.argmax(axis=1) == labels[start : start + chunk]).sum())
    if task == "regression":
        return r2_accuracy(np.concatenate(predictions), labels)
    return correct / len(labels)


def r2_accuracy(predictions: np.ndarray, targets: np.ndarray) -> float:
    """R² = 1 − SS_res/SS_tot over all targets (each target column about its own mean), clipped to
    [0, 1] so that a regression model's accuracy reads like a classifier's: a 0..1 number, higher is
    better, that `min_accuracy` bounds. A model worse than predicting the mean scores 0, as does one
    whose predictions are not finite. Registration refuses constant targets (SS_tot = 0)."""
    y = targets.astype(np.float64).reshape(len(targets), -1)
    pred = predictions.astype(np.float64).reshape(len(targets), -1)
    if pred.shape != y.shape:
        raise ValueError(f"predictions of shape {list(predictions.shape)} for targets {list(targets.shape)}")
    if not np.isfinite(pred).all():
        return 0.0
    ss_tot = float(((y - y.mean(axis=0)) ** 2).sum())
    if ss_tot == 0.0:
        raise ValueError("constant targets: R² is undefined")
    ss_res = float(((y - pred) ** 2).sum())
    return min(1.0, max(0.0, 1.0 - ss_res / ss_tot))


def time_batch(
    model: Runtime,
    sample: dict[str, np.ndarray],
    batch: int,
    seconds: float,
    min_iterations: int,
    max_iterations: int = 5000,
) -> BatchLatency:
    """p50/p99 of one batch size after warm-up, over at least `min_iterations` runs."""
    for _ in range(5):
        model.run(sample)
    times: list[float] = []
    deadline = time.perf_counter() + seconds
    while len(times) < max_iterations and (len(times) < min_iterations or time.perf_counter() < deadline):
        start = time.perf_counter()
        model.run(sample)
        times.append((time.perf_counter() - start) * 1000)
    arr = np.asarray(times)
    return BatchLatency(
        batch=batch,
        p50_ms=round(float(np.percentile(arr, 50)), 4),
        p99_ms=round(float(np.percentile(arr, 99)), 4),
    )


def saturation_qps(latencies: tuple[BatchLatency, ...], max_batch: int) -> float:
    """Rows per second one instance sustains at its best batch size within `max_batch`."""
    usable = [p for p in latencies if p.batch <= max_batch]
    return max((p.batch * 1000.0 / p.p50_ms for p in usable if p.p50_ms > 0), default=0.0)


def _rows(x: np.ndarray, n: int) -> np.ndarray:
    reps = math.ceil(n / len(x))
    return np.ascontiguousarray(np.concatenate([x] * reps)[:n] if reps > 1 else x[:n])
