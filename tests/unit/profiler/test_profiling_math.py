"""The profiler's arithmetic: measured batch sizes, saturation throughput, and the CPU variant space."""

from __future__ import annotations

import pytest

from infaas.core.config import Settings
from infaas.schemas.variants import BatchLatency
from services.profiler.generators import Candidate
from services.profiler.profiling import batch_sizes_up_to, saturation_qps
from services.profiler.service import expand


@pytest.mark.parametrize(
    ("largest", "expected"),
    [
        (1, [1]),
        (2, [1, 2]),
        (3, [1, 2, 3]),
        (16, [1, 2, 4, 8, 16]),
        (64, [1, 2, 4, 8, 16, 32, 64]),
        (100, [1, 2, 4, 8, 16, 32, 64, 100]),
        (1024, [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]),
        (1023, [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1023]),
    ],
)
def test_batch_sizes_up_to(largest: int, expected: list[int]) -> None:
    assert batch_sizes_up_to(largest) == expected


def points(*rows: tuple[int, float]) -> tuple[BatchLatency, ...]:
    return tuple(BatchLatency(batch=b, p50_ms=p50, p99_ms=p50 * 2) for b, p50 in rows)


# 1 row / 2 ms = 500 rows/s; 4 / 4 ms = 1000; 16 / 20 ms = 800.
CURVE = points((1, 2.0), (4, 4.0), (16, 20.0))


@pytest.mark.parametrize(("max_batch", "expected"), [(1, 500.0), (2, 500.0), (4, 1000.0), (16, 1000.0)])
def test_saturation_qps_is_the_best_rows_per_second_within_max_batch(max_batch: int, expected: float) -> None:
    assert saturation_qps(CURVE, max_batch) == pytest.approx(expected)


def test_saturation_qps_when_the_largest_batch_is_the_most_efficient() -> None:
    # 1/1 ms = 1000; 8/4 ms = 2000; 64/16 ms = 4000
    assert saturation_qps(points((1, 1.0), (8, 4.0), (64, 16.0)), 64) == pytest.approx(4000.0)


def test_saturation_qps_ignores_zero_latency_and_empty_curves() -> None:
    assert saturation_qps(points((1, 0.0), (2, 4.0)), 2) == pytest.approx(500.0)
    assert saturation_qps((), 8) == 0.0
    assert saturation_qps(points((1, 0.0)), 1) == 0.0
    assert saturation_qps(points((8, 1.0)), 4) == 0.0  # nothing measured within the max batch


def settings() -> Settings:
    return Settings(profile_batch_sizes=[1, 4, 16, 64], profile_threads=[1, 2])


def candidate(
    provider: str = "CPUExecutionProvider",
    hardware: str = "cpu",
    precision: str = "fp32",
    optimization: str = "basic",
) -> Candidate:
    return Candidate(
        generator="g",
        runtime="onnxruntime",
        provider=provider,
        hardware=hardware,
        optimization=optimization,
        precision=precision,
        data=b"",
    )


def test_cpu_variants_span_batch_sizes_times_threads() -> None:
    variants = expand("digits-cnn", candidate(), "d" * 64, settings(), cores=4)
    assert len(variants) == 8
    assert [(v.max_batch, v.threads) for v in variants] == [
        (1, 1),
        (4, 1),
        (16, 1),
        (64, 1),
        (1, 2),
        (4, 2),
        (16, 2),
        (64, 2),
    ]
    assert variants[6].id == "digits-cnn.onnxruntime-basic-fp32-cpu-b16-t2"
    assert len({v.id for v in variants}) == 8
    for v in variants:
        assert v.id == f"digits-cnn.onnxruntime-basic-fp32-cpu-b{v.max_batch}-t{v.threads}"
        assert v.status == "pending"
        assert v.hardware == "cpu"
        assert v.runtime == "onnxruntime"
        assert v.artifact_digest == "d" * 64
        assert v.accuracy is None and v.latency is None


def test_cpu_variants_threads_capped_at_cores() -> None:
    variants = expand("m", candidate(), "d" * 64, settings(), cores=1)
    assert len(variants) == 4
    assert {v.threads for v in variants} == {1}
    assert sorted(v.max_batch for v in variants) == [1, 4, 16, 64]
    assert len({v.id for v in variants}) == 4


def test_cpu_variants_capping_merges_duplicate_thread_counts() -> None:
    s = Settings(profile_batch_sizes=[16, 1], profile_threads=[8, 4, 2])
    variants = expand("m", candidate(), "d" * 64, s, cores=2)
    assert [(v.max_batch, v.threads) for v in variants] == [(1, 2), (16, 2)]


def test_gpu_variants_have_no_thread_dimension_and_distinct_provider_ids() -> None:
    cuda = expand("m", candidate("CUDAExecutionProvider", "cuda", "fp16", "all"), "d" * 64, settings(), 8)
    trt = expand("m", candidate("TensorrtExecutionProvider", "cuda", "fp16", "all"), "d" * 64, settings(), 8)
    assert {v.threads for v in cuda + trt} == {1}
    assert len(cuda) == len(trt) == 4
    assert cuda[0].id == "m.onnxruntime-all-fp16-cuda-b1-t1"
    assert trt[0].id == "m.onnxruntime-all-fp16-trt-b1-t1"
    assert all(v.hardware == "cuda" for v in cuda + trt)
    assert {v.provider for v in trt} == {"TensorrtExecutionProvider"}


@pytest.mark.parametrize(
    ("configured", "cores", "expected"),
    [([], 1, [1]), ([], 2, [1, 2]), ([], 6, [1, 2, 4, 6]), ([], 16, [1, 2, 4, 8, 16]), ([8, 4, 2], 2, [2])],
)
def test_thread_counts_default_to_powers_of_two_up_to_the_cores(
    configured: list[int], cores: int, expected: list[int]
) -> None:
    from services.profiler.service import thread_counts

    assert thread_counts(configured, cores) == expected
