"""SERF's M/D_interf/c model against values worked by hand and its M/M/c and M/D/1 limits."""

from __future__ import annotations

import math

import pytest

from infaas.policy.serf import cosmetatos_f, max_rate, predict, rates_from_latency


def test_two_servers_with_interference_by_hand() -> None:
    # μ1 = 10/s alone, μ2 = 8/s beside another; λ = 8/s. ρ1 = 0.8, ρ2 = 1, Π1 = Π2 = 0.8, ρ = 0.5.
    # p0 = 1/(1 + 0.8 + 0.8/(2·0.5)) = 5/13; L_q = 5/13 · 0.4 · 0.5/0.25 = 4/13; W_q^MM = L_q/8 = 1/26 s.
    # f(2) = (√14 − 2)/32, g(0.5) = 1; S = p0/10 + p1/8 + p0·0.8/(8·2·0.5) = 3 · 1/26 s.
    p = predict([10.0, 8.0], 8.0)
    assert p.utilization == pytest.approx(0.5)
    assert p.p0 == pytest.approx(5 / 13)
    assert p.queue_length == pytest.approx(4 / 13)
    assert p.wait_mm_ms == pytest.approx(1000 / 26)
    f2 = (math.sqrt(14) - 2) / 32
    assert cosmetatos_f(2) == pytest.approx(f2)
    assert p.wait_ms == pytest.approx(0.5 * (1 + f2) * 1000 / 26)
    assert p.service_ms == pytest.approx(3000 / 26)
    assert p.latency_ms == pytest.approx(3000 / 26 + 0.5 * (1 + f2) * 1000 / 26)


def _erlang_c_wait(c: int, mu: float, lam: float) -> float:
    a = lam / mu
    top = a**c / math.factorial(c) * c / (c - a)
    probability = top / (sum(a**k / math.factorial(k) for k in range(c)) + top)
    return probability / (c * mu - lam)


@pytest.mark.parametrize(
    ("c", "mu", "lam"), [(1, 50.0, 20.0), (2, 50.0, 70.0), (4, 12.5, 40.0), (8, 3.0, 23.0)]
)
def test_equal_rates_are_mmc_before_the_correction(c: int, mu: float, lam: float) -> None:
    p = predict([mu] * c, lam)
    assert p.wait_mm_ms == pytest.approx(_erlang_c_wait(c, mu, lam) * 1000)
    assert p.service_ms == pytest.approx(1000 / mu)  # no interference: every request takes 1/μ
    rho = lam / (c * mu)
    assert p.wait_ms == pytest.approx(0.5 * (1 + cosmetatos_f(c) * (1 - rho) / rho) * p.wait_mm_ms)


@pytest.mark.parametrize("lam", [1.0, 25.0, 45.0, 49.5])
def test_one_server_is_md1(lam: float) -> None:
    mu = 50.0
    rho = lam / mu
    p = predict([mu], lam)
    assert cosmetatos_f(1) == 0.0
    assert p.p0 == pytest.approx(1 - rho)
    assert p.wait_ms == pytest.approx(rho / (2 * mu * (1 - rho)) * 1000)  # Pollaczek–Khinchine
    assert p.latency_ms == pytest.approx(1000 / mu + rho / (2 * mu * (1 - rho)) * 1000)


def test_idle_and_unstable() -> None:
    idle = predict([10.0, 8.0], 0.0)
    assert (idle.latency_ms, idle.wait_ms, idle.p0) == (100.0, 0.0, 1.0)
    full = predict([10.0, 8.0], 16.0)  # ρ = 1
    assert not full.stable and math.isinf(full.latency_ms)
    assert predict([10.0, 8.0], 15.9).stable


def test_interference_costs_latency() -> None:
    alone = predict([10.0, 10.0, 10.0], 20.0)
    together = predict([10.0, 9.0, 8.0], 20.0)
    assert together.latency_ms > alone.latency_ms
    assert together.service_ms > alone.service_ms


@pytest.mark.parametrize("rates", [[], [10.0, 0.0], [math.inf], [-1.0]])
def test_bad_rates_are_refused(rates: list[float]) -> None:
    with pytest.raises(ValueError, match="service_rates"):
        predict(rates, 1.0)
    with pytest.raises(ValueError, match="arrival_rps"):
        predict([1.0], -1.0)


def test_max_rate_meets_the_slo_and_no_more() -> None:
    rates = rates_from_latency([20.0, 25.0, 32.0])
    assert rates == pytest.approx([50.0, 40.0, 31.25])
    cap = max_rate(rates, 60.0)
    assert 0 < cap < 3 * 31.25
    assert predict(rates, cap).latency_ms <= 60.0
    assert predict(rates, cap * 1.01).latency_ms > 60.0
    assert max_rate(rates, 19.0) == 0.0  # not even a lone request fits
    # W grows with λ: a sweep never goes down.
    sweep = [predict(rates, lam).latency_ms for lam in range(0, 93, 3)]
    assert sweep == sorted(sweep)
