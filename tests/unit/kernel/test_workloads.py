"""Arrival traces: seeded, following their rate curve, with the asked-for burstiness."""

from __future__ import annotations

import numpy as np
import pytest

from infaas.core import workloads


def test_the_same_seed_gives_the_same_trace_and_another_seed_another() -> None:
    a = workloads.poisson(50, 20, seed=1)
    assert np.array_equal(a, workloads.poisson(50, 20, seed=1))
    assert not np.array_equal(a, workloads.poisson(50, 20, seed=2))


def test_poisson_has_the_rate_and_exponential_gaps() -> None:
    a = workloads.poisson(200, 100, seed=3)
    assert np.all(np.diff(a) >= 0) and a[0] >= 0 and a[-1] < 100
    assert len(a) == pytest.approx(20_000, rel=0.03)  # 4 σ of a Poisson count is 2.8 %
    gaps = np.diff(a)
    assert gaps.std() / gaps.mean() == pytest.approx(1.0, abs=0.05)


def test_gamma_gaps_have_the_asked_coefficient_of_variation() -> None:
    gaps = np.diff(workloads.gamma(100, 1000, cv=4, seed=5))
    assert gaps.mean() == pytest.approx(0.01, rel=0.1)
    assert gaps.std() / gaps.mean() == pytest.approx(4.0, rel=0.1)


def test_arrivals_follow_a_rate_curve_second_by_second() -> None:
    rates = np.array([0, 100, 0, 400, 50], dtype=float)
    a = workloads.arrivals(rates, seed=7)
    counts = np.bincount(a.astype(int), minlength=5)
    assert counts[0] == 0 and counts[2] == 0
    assert counts[1] == pytest.approx(100, abs=40) and counts[3] == pytest.approx(400, abs=80)


def test_shapes_of_the_infaas_workloads() -> None:
    assert np.all(workloads.flat_rates(4, 10) == 4)
    ramp = workloads.ramp_rates(650, 700, 100)
    assert ramp[0] == 650 and ramp[-1] == 700 and np.all(np.diff(ramp) > 0)
    fl = workloads.fluctuating_rates(4, 80, 120, period_s=60)
    assert fl.min() == pytest.approx(4) and fl.max() == pytest.approx(80)
    assert fl[10] == pytest.approx(4) and fl[45] == pytest.approx(80)  # low first half, high second
    day = workloads.diurnal_rates(10, 1000, 3600, seed=1)
    assert day.min() == pytest.approx(10) and day.max() == pytest.approx(1000)
    assert np.median(day) < 700  # spikes stand above the daily swing


def test_an_hour_at_1000_qps_is_generated_whole() -> None:
    a = workloads.poisson(1000, 3600, seed=11)
    assert len(a) == pytest.approx(3_600_000, rel=0.01)


def test_bad_rates_are_refused() -> None:
    with pytest.raises(ValueError, match="non-negative"):
        workloads.arrivals(np.array([1.0, -1.0]), seed=0)
    with pytest.raises(ValueError, match="cv"):
        workloads.gamma(10, 10, cv=0, seed=0)
    assert workloads.arrivals(np.zeros(5), seed=0).size == 0
