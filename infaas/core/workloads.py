"""Open-loop arrival traces for benchmarks, the simulator and load tests: pure NumPy, seeded.

Every generator returns sorted arrival times in seconds from 0 (a float64 array). Time-varying loads are
a rate per second (`rates[k]` queries/s during second k) turned into arrivals by time rescaling: a
unit-rate renewal process (Poisson, or gamma inter-arrivals with a given coefficient of variation, as
InferLine used with CV 1 and 4) is laid out on the cumulative-rate axis Λ(t) and mapped back through
Λ⁻¹, so the mean follows the rate curve and the burstiness follows the CV. Vectorized: an hour at
1,000 QPS (3.6 M arrivals) takes well under a second.

Shapes (INFaaS §6.2 and §6.1): `flat` (4 QPS low), `ramp` (650 → 700 QPS steady high), `fluctuating`
(between 4 and 80 QPS), and `diurnal` — a day compressed into the duration, shaped like the 2018
Twitter trace INFaaS replayed (a smooth daily swing with a trough near 40 % of the peak, minute-scale
noise and a few sudden spikes), scaled to [min_qps, max_qps] (INFaaS: 10–1,000 QPS).
"""

from __future__ import annotations

import numpy as np


def arrivals(rates: np.ndarray, *, seed: int, cv: float = 1.0, step_s: float = 1.0) -> np.ndarray:
    """Arrival times for a piecewise-constant rate curve (`rates[k]` during [k·step, (k+1)·step))."""
    rates = np.asarray(rates, dtype=np.float64)
    if rates.ndim != 1 or (rates < 0).any() or not np.isfinite(rates).all():
        raise ValueError("rates must be a 1-D array of finite, non-negative queries/s")
    if cv <= 0:
        raise ValueError("cv must be positive")
    rng = np.random.default_rng(seed)
    edges = np.concatenate([[0.0], np.cumsum(rates * step_s)])  # Λ at each step boundary
    total = edges[-1]
    if total <= 0:
        return np.empty(0)
    # Unit-rate renewal process on the Λ axis: gamma with shape 1/cv² and mean 1 (cv = 1: exponential).
    shape = 1.0 / cv**2
    n = int(total + 10 * np.sqrt(total) * max(cv, 1.0) + 20)
    points = np.cumsum(rng.gamma(shape, 1.0 / shape, size=n))
    while points[-1] < total:  # rare: draw more
        points = np.concatenate([points, points[-1] + np.cumsum(rng.gamma(shape, 1.0 / shape, size=n))])
    points = points[points < total]
    times = np.interp(points, edges, np.arange(len(edges)) * step_s)
    return np.asarray(times)


def poisson(rate: float, duration_s: float, *, seed: int) -> np.ndarray:
    """Poisson arrivals at a constant rate."""
    return arrivals(np.full(_steps(duration_s), float(rate)), seed=seed)


def gamma(rate: float, duration_s: float, *, cv: float, seed: int) -> np.ndarray:
    """Gamma inter-arrivals of mean 1/rate and coefficient of variation `cv` (> 1: burstier)."""
    return arrivals(np.full(_steps(duration_s), float(rate)), seed=seed, cv=cv)


def flat_rates(rate: float, duration_s: float) -> np.ndarray:
    return np.full(_steps(duration_s), float(rate))


def ramp_rates(start_qps: float, end_qps: float, duration_s: float) -> np.ndarray:
    """A steady ramp (INFaaS's steady high load: 650 → 700 QPS)."""
    return np.linspace(start_qps, end_qps, _steps(duration_s))


def fluctuating_rates(
    low_qps: float, high_qps: float, duration_s: float, *, period_s: float = 60.0
) -> np.ndarray:
    """Alternating low and high plateaus with linear edges of a tenth of the period (INFaaS: 4–80 QPS,
    spikes at 60–90 s and 150–180 s)."""
    t = np.arange(_steps(duration_s)) + 0.5
    phase = (t % period_s) / period_s  # 0..1: low for the first half, high for the second
    edge = 0.1
    up = np.clip((phase - 0.5) / edge, 0, 1)
    down = np.clip((1.0 - phase) / edge, 0, 1)
    out: np.ndarray = low_qps + (high_qps - low_qps) * np.minimum(up, down)
    return out


def diurnal_rates(
    min_qps: float, max_qps: float, duration_s: float, *, seed: int, spikes: int = 4
) -> np.ndarray:
    """One day compressed into `duration_s`: two harmonics (a daily swing and an afternoon shoulder),
    1 % step noise and `spikes` sudden bursts of 1.5–2.5× lasting 1–3 % of the day, scaled to
    [min_qps, max_qps]."""
    rng = np.random.default_rng(seed)
    n = _steps(duration_s)
    x = np.arange(n) / max(n, 1)
    shape = 0.7 + 0.3 * np.sin(2 * np.pi * (x - 0.3)) + 0.08 * np.sin(4 * np.pi * (x - 0.1))
    shape = shape * (1 + 0.05 * rng.standard_normal(n))
    for _ in range(spikes):
        start = rng.integers(0, max(1, n - 1))
        width = max(1, int(n * rng.uniform(0.01, 0.03)))
        shape[start : start + width] *= rng.uniform(1.5, 2.5)
    shape = np.clip(shape, 1e-6, None)
    lo, hi = shape.min(), shape.max()
    out: np.ndarray = min_qps + (max_qps - min_qps) * (shape - lo) / (hi - lo if hi > lo else 1.0)
    return out


def _steps(duration_s: float) -> int:
    if duration_s <= 0:
        raise ValueError("duration must be positive")
    return int(np.ceil(duration_s))
