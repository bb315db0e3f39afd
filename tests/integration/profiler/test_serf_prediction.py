"""SERF's prediction against a measurement of the same run: a real ONNX Runtime session profiled the
profiler's way (`measure_concurrency`, ~10 requests), then served one request at a time (an instance's
single thread) under Poisson arrivals at half its measured service rate; the mean latency from arrival to
answer is compared with M/D_interf/c's (here M/D/1's) prediction from that profile.

Tolerance: a factor of 2 either way. The model has no term for the machine: on a shared 2-vCPU VM a
neighbour busy during the profile or the measurement moves one number and not the other, and Python's
thread hand-off adds tens of microseconds to each request. A factor of 2 still catches what would make
the prediction wrong on every machine — the queue left out (W = S alone is 1.5× too low at ρ = 0.5), μ
in the wrong unit (ms against s: 1000×), a rate per batch instead of per request.
The comparison holds only while the model's premise does: the machine runs the model as fast as while it
was profiled, and the generator keeps its schedule. Both are measured in the round itself (the model's
mean run time during the measurement, the generator's lateness). The model is profiled before the round
and again right after; the prediction comes from whichever profile the measurement's run times match (a
host slowed down for the whole round matches the one after). A round that matches neither, or whose
generator fell behind — a neighbour took the core — is profiled and measured again, up to `ROUNDS`
times, and the test fails if none ran undisturbed (with every round's numbers). It compares two
measurements of one run and asserts nothing about how fast the machine is.
"""

from __future__ import annotations

import queue
import random
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from infaas.policy.serf import predict
from infaas.runtimes.base import Runtime, RuntimeSpec
from infaas.runtimes.registry import build_runtime
from services.profiler.profiling import measure_concurrency

ROUNDS = 8
"""Rounds of profile + measurement tried until one runs undisturbed."""
SAME_SPEED = 0.15
"""A round counts when the model's mean run time during the measurement is within 15 % of its profile.
(At 30 % a CI run failed: the model ran 27 % slower than profiled, so the real load was ρ = 0.64, not 0.5,
and the measured mean came out 2.2× the prediction. The queue amplifies a speed change: that round did not
test the model's premise.)"""
LATE = 0.25
"""…and the generator put requests in less than a quarter of a service time late on average (lateness adds
to the measured latency when the server is idle: at most 1/6 of W = 1.5 S, well inside the tolerance)."""
MAX_UTILIZATION = 0.7
"""…and the profile the prediction uses puts the offered load at ρ ≤ 0.7 (0.5 by the profile before)."""
HIDDEN = 4096
"""A 64→4096→4096→10 MLP: 64 MB of weights, a few milliseconds a request on one thread (memory-bound), so
the generator's own cost (tens of µs) is small beside it; 400 arrivals at half its rate take ~3 s. (At
1,536 the weights fit the cache and a request takes 0.15 ms: Python's hand-off would be the server.)"""


def wide_mlp(path: Path) -> Path:
    """Random weights: latency, not accuracy, is measured. Unlike the demo models (digits): one 64-wide
    input `x`, a hidden width of 4,096."""
    import torch
    from torch import nn

    from infaas_cli.demo_models import _export_onnx

    torch.manual_seed(0)
    net = nn.Sequential(
        nn.Linear(64, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, 10)
    )
    path.write_bytes(_export_onnx(net.eval()))
    return path


@dataclass(frozen=True)
class Run:
    latency_ms: np.ndarray
    """Due arrival time → answer, per request (the first tenth dropped: the queue starts empty)."""
    compute_ms: float
    """Mean time of the model's run itself during the measurement."""
    late_ms: float
    """Mean time the generator put a request in after its due time."""


def open_loop(rt: Runtime, sample: dict[str, np.ndarray], rate: float, n: int, seed: int) -> Run:
    """`n` Poisson arrivals at `rate`/s served one at a time, as an instance's single thread does."""
    inbox: queue.Queue[float | None] = queue.Queue()
    latencies: list[float] = []
    compute: list[float] = []

    def serve() -> None:
        while (due := inbox.get()) is not None:
            start = time.perf_counter()
            rt.run(sample)
            done = time.perf_counter()
            compute.append((done - start) * 1000)
            latencies.append((done - due) * 1000)

    server = threading.Thread(target=serve)
    server.start()
    rng = random.Random(seed)
    late = []
    due = time.perf_counter() + 0.01
    for _ in range(n):
        due += rng.expovariate(rate)
        while (gap := due - time.perf_counter()) > 0:
            time.sleep(gap if gap > 0.0005 else 0)
        inbox.put(due)
        late.append((time.perf_counter() - due) * 1000)
    inbox.put(None)
    server.join()
    skip = n // 10
    return Run(np.asarray(latencies[skip:]), float(np.mean(compute)), float(np.mean(late)))


def profile(rt: Runtime, sample: dict[str, np.ndarray]) -> float:
    """The mean ms of one request, measured the profiler's way."""
    point = measure_concurrency(rt, sample, 1, 10)
    assert point.mean_ms is not None and point.requests is not None and point.requests >= 10
    return float(point.mean_ms)


def test_predicted_mean_latency_at_half_load_matches_the_measured_within_a_factor_of_2(
    tmp_path: Path,
) -> None:
    rt = build_runtime(
        wide_mlp(tmp_path / "mlp.onnx"), RuntimeSpec(runtime="onnxruntime", provider="CPUExecutionProvider")
    )
    rt.load()
    sample = {"x": np.random.default_rng(1).standard_normal((1, 64)).astype(np.float32)}
    for _ in range(30):
        rt.run(sample)
    disturbed = []
    for attempt in range(ROUNDS):
        before = profile(rt, sample)
        mu = 1000.0 / before
        rate = 0.5 * mu
        prediction = predict([mu], rate)
        # M/D/1 at ρ = 0.5: W = S + ρS/(2(1 − ρ)) = 1.5 S
        assert prediction.utilization == 0.5
        assert prediction.latency_ms == pytest.approx(1.5 * before)
        run = open_loop(rt, sample, rate, n=400, seed=7 + attempt)
        # A host that slowed down for the whole round (seen in CI: 4.1-4.5 ms a request against 3.0-3.2
        # profiled, in every round) ran the model as fast as a profile taken right after says. SERF then
        # predicts from that profile at the rate that was offered: the same prediction, from a profile
        # of the machine the queries met.
        after = profile(rt, sample)
        used = min((before, after), key=lambda ms: abs(run.compute_ms / ms - 1))
        if used != before:
            prediction = predict([1000.0 / used], rate)
        measured = float(run.latency_ms.mean())
        said = (
            f"predicted {prediction.latency_ms:.3f} ms at {rate:.0f} req/s "
            f"(ρ = {prediction.utilization:.2f}, "
            f"profiled {before:.3f} ms a request before the round and {after:.3f} after); measured "
            f"{measured:.3f} ms, the model running {run.compute_ms:.3f} ms a request meanwhile, arrivals "
            f"{run.late_ms:.3f} ms late"
        )
        # The premise of the comparison: the machine ran the model as fast as while profiling, and the
        # generator kept its schedule. A round where a neighbour broke either is measured again; so is
        # one whose profile puts the load near saturation, where any speed change swamps the queue.
        if (
            abs(run.compute_ms / used - 1) > SAME_SPEED
            or run.late_ms > LATE * used
            or prediction.utilization > MAX_UTILIZATION
        ):
            disturbed.append(said)
            continue
        ratio = prediction.latency_ms / measured
        assert 0.5 <= ratio <= 2.0, said
        return
    pytest.fail(f"every round was disturbed by the machine's other work: {disturbed}")
