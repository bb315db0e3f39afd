"""Variant choice for jobs: most rows per dollar among the accurate-enough variants, not latency."""

from __future__ import annotations

import pytest

from infaas.core.errors import RequirementsUnmet
from infaas.jobs.variants import JobCandidate, choose_job_variant


def c(
    vid: str, *, acc: float = 0.9, qps: float = 1000, cost: float = 1e-5, batch: int = 16, hw: str = "cpu"
) -> JobCandidate:
    return JobCandidate(
        id=vid, model="m", accuracy=acc, saturation_qps=qps, cost_per_s=cost, max_batch=batch, hardware=hw
    )


def test_most_rows_per_dollar_wins_not_the_fastest_or_cheapest_per_second() -> None:
    fast_expensive = c("gpu", qps=20_000, cost=1.5e-4, hw="cuda")  # 1.3e8 rows/$
    cheap_slow = c("b1", qps=500, cost=1e-5)  # 5e7 rows/$
    batched = c("b64", qps=4000, cost=2e-5, batch=64)  # 2e8 rows/$
    choice = choose_job_variant([fast_expensive, cheap_slow, batched], min_accuracy=None)
    assert choice.variant.id == "b64" and choice.considered == 3
    assert "most rows per dollar" in choice.reason and "max batch 64" in choice.reason


def test_accuracy_requirement_filters_first() -> None:
    choice = choose_job_variant(
        [c("int8", acc=0.80, qps=9000), c("fp32", acc=0.95, qps=3000)], min_accuracy=0.9
    )
    assert choice.variant.id == "fp32"


def test_ties_prefer_the_larger_max_batch() -> None:
    choice = choose_job_variant([c("b16", batch=16), c("b64", batch=64)], min_accuracy=0.5)
    assert choice.variant.id == "b64"


def test_hardware_without_a_live_worker_is_skipped() -> None:
    choice = choose_job_variant(
        [c("gpu", qps=1e6, hw="cuda"), c("cpu", qps=100)], min_accuracy=None, hardware=frozenset({"cpu"})
    )
    assert choice.variant.id == "cpu"


def test_unmet_accuracy_names_the_closest() -> None:
    with pytest.raises(RequirementsUnmet) as err:
        choose_job_variant([c("a", acc=0.7), c("b", acc=0.8)], min_accuracy=0.99)
    assert "0.800" in err.value.message and err.value.details["closest"]["variant"] == "b"


def test_variants_without_a_throughput_profile_cannot_run_jobs() -> None:
    with pytest.raises(RequirementsUnmet):
        choose_job_variant([c("a", qps=0.0)], min_accuracy=None)
