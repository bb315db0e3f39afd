"""SERF's queueing model of one worker configuration: M/D_interf/c (pure; SEEDS.md §5).

A configuration runs up to `c` requests of one variant at once (each with the variant's threads).
Requests of one model take a near-constant time alone, but requests running together slow each other
down through shared cores, caches and memory bandwidth. So the model takes the *measured* service rate
μ_i of one request while exactly i run (i = 1..c; `service_rates[i - 1]`, requests/s), not μ_1 scaled:

    ρ_i = λ/μ_i,  Π_k = ∏_{i≤k} ρ_i,  ρ = λ/(c·μ_c)                       (stable only when ρ < 1)
    p0  = 1 / (1 + Σ_{k=1}^{c−1} Π_k/k! + Π_c/(c!(1−ρ)))
    L_q = p0·Π_c/c!·ρ/(1−ρ)²,   W_q^{MM} = L_q/λ
    W_q ≈ ½(1 + f(c)·g(ρ))·W_q^{MM},  f(c) = (c−1)(√(4+5c)−2)/(16c),  g(ρ) = (1−ρ)/ρ   (Cosmetatos)
    S   = Σ_{i=1}^{c} p_{i−1}/μ_i + p0·Π_c/(μ_c·c!·(1−ρ))
    W   ≈ S + W_q

The state probabilities are those of a birth–death chain with departure rate i·μ_i in state i ≤ c, so
with all μ_i equal the model is M/M/c's (Erlang C) before the Cosmetatos step, and with c = 1 it is
Pollaczek–Khinchine's M/D/1. S is the mean service time an arrival sees: it starts beside the i − 1
requests already running (probability p_{i−1}), or waits and starts when c run.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Prediction:
    """Steady state of one configuration at one arrival rate (times in ms, rates per second)."""

    arrival_rps: float
    """λ: requests per second offered to the configuration."""
    concurrency: int
    """c: requests it runs at once."""
    utilization: float
    """ρ = λ/(c·μ_c); the model holds only below 1."""
    p0: float
    """Probability the configuration is idle (0 when unstable)."""
    queue_length: float
    """L_q: mean requests waiting (inf when unstable)."""
    wait_mm_ms: float
    """W_q of the M/M/c chain (before the Cosmetatos correction)."""
    wait_ms: float
    """W_q with the Cosmetatos correction for deterministic service."""
    service_ms: float
    """S: mean service time of a request, slowed by the requests it runs beside."""
    latency_ms: float
    """W ≈ S + W_q (inf when unstable)."""

    @property
    def stable(self) -> bool:
        return self.utilization < 1.0


def cosmetatos_f(concurrency: int) -> float:
    """f(c) = (c−1)(√(4+5c)−2)/(16c): 0 for one server."""
    c = concurrency
    return (c - 1) * (math.sqrt(4 + 5 * c) - 2) / (16 * c)


def predict(service_rates: Sequence[float], arrival_rps: float) -> Prediction:
    """Predict mean latency at `arrival_rps` for a configuration whose request runs at
    `service_rates[i - 1]` requests/s while i requests run (len = c, every rate > 0)."""
    c = len(service_rates)
    if c == 0 or any(not (mu > 0 and math.isfinite(mu)) for mu in service_rates):
        raise ValueError("service_rates needs one positive, finite rate per concurrency 1..c")
    if arrival_rps < 0 or not math.isfinite(arrival_rps):
        raise ValueError("arrival_rps must be a finite rate ≥ 0")
    lam = arrival_rps
    mu_c = service_rates[-1]
    rho = lam / (c * mu_c)
    if rho >= 1.0:
        inf = math.inf
        return Prediction(lam, c, rho, 0.0, inf, inf, inf, 1000.0 / mu_c, inf)
    if lam == 0.0:  # an idle configuration: a request runs alone and never waits
        return Prediction(
            0.0, c, 0.0, 1.0, 0.0, 0.0, 0.0, 1000.0 / service_rates[0], 1000.0 / service_rates[0]
        )
    # terms[k] = Π_k/k! (k = 0..c): unnormalised probabilities of k requests in the configuration.
    terms = [1.0]
    for k, mu in enumerate(service_rates, start=1):
        terms.append(terms[-1] * (lam / mu) / k)
    waiting = terms[c] / (1.0 - rho)  # Π_c/(c!(1−ρ)): c running, any number queued
    p0 = 1.0 / (sum(terms[:c]) + waiting)
    queue_length = p0 * terms[c] * rho / (1.0 - rho) ** 2
    wait_mm = queue_length / lam
    wait = 0.5 * (1.0 + cosmetatos_f(c) * (1.0 - rho) / rho) * wait_mm
    service = sum(p0 * terms[i - 1] / service_rates[i - 1] for i in range(1, c + 1))
    service += p0 * waiting / mu_c
    return Prediction(
        arrival_rps=lam,
        concurrency=c,
        utilization=rho,
        p0=p0,
        queue_length=queue_length,
        wait_mm_ms=wait_mm * 1000.0,
        wait_ms=wait * 1000.0,
        service_ms=service * 1000.0,
        latency_ms=(service + wait) * 1000.0,
    )


def max_rate(service_rates: Sequence[float], latency_ms: float, *, tolerance: float = 1e-3) -> float:
    """The highest arrival rate whose predicted mean latency stays within `latency_ms` (0 when not even
    a lone request does): the configuration's capacity under that SLO. W grows with λ, so bisect."""
    if predict(service_rates, 0.0).latency_ms > latency_ms:
        return 0.0
    low, high = 0.0, len(service_rates) * service_rates[-1]  # ρ → 1: W → ∞
    while high - low > tolerance * max(high, 1e-9):
        mid = (low + high) / 2
        if predict(service_rates, mid).latency_ms <= latency_ms:
            low = mid
        else:
            high = mid
    return low


def rates_from_latency(mean_ms: Sequence[float]) -> list[float]:
    """μ_i in requests/s from the mean latency (ms) of one request while i run at once."""
    return [1000.0 / m for m in mean_ms]
