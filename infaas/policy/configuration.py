"""The cheapest worker configuration that meets an SLO at an arrival rate (pure; SERF, SEEDS.md §5).

A configuration is a variant (its runtime, threads per request, max batch, hardware kind) run with `c`
concurrent requests per instance. Its latency at any load comes from the M/D_interf/c model
(`infaas/policy/serf.py`) over the variant's measured service rates μ_1..μ_c, so choosing one needs no
further profiling: for each candidate, the fewest instances whose share of the load keeps the predicted
mean latency within the SLO, priced; the cheapest wins (ties: the lower predicted latency).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from infaas.core.costs import PriceTable
from infaas.policy.serf import Prediction, max_rate, predict

MAX_INSTANCES = 64
"""Bound on the instances one choice may ask for: a configuration needing more is not a candidate."""


@dataclass(frozen=True, slots=True)
class Configuration:
    """One way to run a variant: `concurrency` requests at once, each request with the variant's threads."""

    variant_id: str
    hardware: str
    threads: int
    max_batch: int
    concurrency: int
    service_rates: tuple[float, ...]
    """μ_1..μ_c (requests/s of one request while i run), from the variant's concurrency profile."""
    cost_per_s: float
    """$ per second one instance of this configuration holds."""

    @property
    def label(self) -> str:
        return f"{self.variant_id} c={self.concurrency} t={self.threads}"


@dataclass(frozen=True, slots=True)
class Choice:
    """The configuration chosen for a load, and the numbers that chose it (for the event's reason)."""

    configuration: Configuration
    instances: int
    prediction: Prediction
    """At the load each instance gets (arrival rate / instances)."""
    cost_per_s: float
    meets_slo: bool
    why: str


def configurations(
    *,
    variant_id: str,
    hardware: str,
    threads: int,
    max_batch: int,
    mean_ms: Sequence[float],
    prices: PriceTable,
) -> list[Configuration]:
    """Every concurrency 1..len(mean_ms) of one variant, from its mean latency with i requests running.
    On a CPU each concurrent request holds its own threads (c × t vCPUs); an accelerator is one device
    however many requests share it."""
    rates = tuple(1000.0 / m for m in mean_ms if m > 0)
    if len(rates) != len(mean_ms):
        return []
    return [
        Configuration(
            variant_id=variant_id,
            hardware=hardware,
            threads=threads,
            max_batch=max_batch,
            concurrency=c,
            service_rates=rates[:c],
            cost_per_s=prices.per_second(hardware, threads * c),
        )
        for c in range(1, len(rates) + 1)
    ]


def instances_for(configuration: Configuration, arrival_rps: float, slo_ms: float) -> int | None:
    """Fewest instances of `configuration` whose equal shares of `arrival_rps` each meet `slo_ms` on
    mean latency; None when even one request alone misses it or more than MAX_INSTANCES would be needed."""
    per_instance = max_rate(configuration.service_rates, slo_ms)
    if per_instance <= 0:
        return None
    if arrival_rps <= 0:
        return 1
    n = max(1, math.ceil(arrival_rps / per_instance))
    # max_rate is a bisection to 0.1 %: step up if the rounded share still misses.
    while n <= MAX_INSTANCES and predict(configuration.service_rates, arrival_rps / n).latency_ms > slo_ms:
        n += 1
    return n if n <= MAX_INSTANCES else None


def choose(candidates: Iterable[Configuration], arrival_rps: float, slo_ms: float) -> Choice | None:
    """The cheapest (instances × cost) configuration meeting `slo_ms` at `arrival_rps`; when none can,
    the one with the lowest predicted latency on a single instance, marked `meets_slo=False`; None
    without candidates."""
    pool = list(candidates)
    if not pool:
        return None
    best: tuple[float, float, Configuration, int, Prediction] | None = None
    for cfg in pool:
        n = instances_for(cfg, arrival_rps, slo_ms)
        if n is None:
            continue
        p = predict(cfg.service_rates, arrival_rps / n)
        key = (n * cfg.cost_per_s, p.latency_ms)
        if best is None or key < best[:2]:
            best = (*key, cfg, n, p)
    if best is not None:
        cost, _, cfg, n, p = best
        why = (
            f"{cfg.label} ×{n}: predicted {p.latency_ms:.1f} ms at {arrival_rps:.1f} req/s "
            f"(ρ = {p.utilization:.2f}) within the {slo_ms:g} ms SLO, cheapest of {len(pool)} "
            f"configurations at ${cost * 3600:.4f}/h"
        )
        return Choice(cfg, n, p, cost, True, why)
    fallback = min(
        pool, key=lambda c: predict(c.service_rates, min(arrival_rps, 0.999 * _peak(c))).latency_ms
    )
    p = predict(fallback.service_rates, arrival_rps)
    why = (
        f"no configuration of {len(pool)} meets the {slo_ms:g} ms SLO at {arrival_rps:.1f} req/s "
        f"with ≤ {MAX_INSTANCES} instances; {fallback.label} is the fastest "
        f"(predicted {p.latency_ms:.1f} ms on one instance)"
    )
    return Choice(fallback, 1, p, fallback.cost_per_s, False, why)


def table(
    candidates: Sequence[Configuration], slo_ms: float, loads: Iterable[float]
) -> list[tuple[float, Choice | None]]:
    """Load → best configuration, the table a worker switches along as its arrival rate changes."""
    return [(lam, choose(candidates, lam, slo_ms)) for lam in loads]


def _peak(configuration: Configuration) -> float:
    """Arrival rate at which the configuration saturates (ρ = 1)."""
    return configuration.concurrency * configuration.service_rates[-1]


UP_HEADROOM = 1.2
"""An instance's concurrency is chosen for 1.2× its current arrival rate, so a rising load is met before
it arrives."""

DOWN_HEADROOM = 1.5
"""It goes down only when the fewer batches would still meet the SLO at 1.5× the rate: a rate hovering
at a boundary does not switch back and forth."""


@dataclass(frozen=True, slots=True)
class ConcurrencyChoice:
    """The batches one instance should run at once at its arrival rate, and why (an event's reason)."""

    concurrency: int
    prediction: Prediction
    """At the arrival rate, with the chosen concurrency."""
    current: Prediction
    """At the arrival rate, with the concurrency it has now."""
    meets_slo: bool
    why: str


def concurrency_for(
    mean_ms: Sequence[float],
    arrival_rps: float,
    slo_ms: float,
    *,
    current: int,
    slowdown: float = 1.0,
    batched_rps: float = 0.0,
) -> ConcurrencyChoice | None:
    """For one instance of a variant whose batch-1 requests take `mean_ms[i-1]` while i run at once
    (times the `slowdown` its executor observed against the profile): the fewest concurrent batches
    whose predicted mean latency stays within `slo_ms` at `UP_HEADROOM` × `arrival_rps` (each more holds
    the variant's threads on more cores), lowered only when the fewer meet it at `DOWN_HEADROOM` ×; when
    none meets it, the one with the lowest predicted latency. None: fewer than two profiled points, or
    unusable ones (nothing to choose from).
    `batched_rps`: what the instance carries under the SLO one batch at a time *with batching*
    (`infaas.policy.capacity.instance_capacity`). The concurrency profile is of batch-1 requests, and
    an instance that batches carries far more than 1/S at c = 1 (the executor's batch amortizes the
    run: bench/papers/concurrency_serving.py saw c = 1 and 2 alike at 600 req/s where the batch-1 model
    saturates at 578); while batching covers the rate with the same headroom, one at a time."""
    if len(mean_ms) < 2 or not all(math.isfinite(m) and m > 0 for m in mean_ms):
        return None
    rates = [1000.0 / (m * max(slowdown, 1e-6)) for m in mean_ms]
    top = len(rates)
    current = min(max(current, 1), top)
    if batched_rps >= UP_HEADROOM * arrival_rps and (
        current == 1 or batched_rps >= DOWN_HEADROOM * arrival_rps
    ):
        one = predict(rates[:1], arrival_rps)
        why = (
            f"c=1: batching carries {batched_rps:.1f} req/s one batch at a time within the {slo_ms:g} ms "
            f"SLO, ≥ {UP_HEADROOM if current == 1 else DOWN_HEADROOM:g}× the {arrival_rps:.1f} req/s offered"
        )
        return ConcurrencyChoice(1, one, predict(rates[:current], arrival_rps), True, why)

    def fewest(headroom: float) -> int | None:
        for c in range(1, top + 1):
            p = predict(rates[:c], arrival_rps * headroom)
            if p.utilization < 1 and p.latency_ms <= slo_ms:
                return c
        return None

    up = fewest(UP_HEADROOM)
    now = predict(rates[:current], arrival_rps)
    if up is None:
        chosen = min(range(1, top + 1), key=lambda c: predict(rates[:c], arrival_rps).latency_ms)
        p = predict(rates[:chosen], arrival_rps)
        why = (
            f"no concurrency of 1..{top} keeps the predicted mean within the {slo_ms:g} ms SLO at "
            f"{arrival_rps:.1f} req/s × {UP_HEADROOM:g}; c={chosen} is the fastest "
            f"(predicted {p.latency_ms:.1f} ms, ρ = {p.utilization:.2f})"
        )
        return ConcurrencyChoice(chosen, p, now, False, why)
    chosen = up
    if up < current:
        down = fewest(DOWN_HEADROOM)
        chosen = down if down is not None and down < current else current
    p = predict(rates[:chosen], arrival_rps)
    why = (
        f"c={chosen}: predicted mean {p.latency_ms:.1f} ms at {arrival_rps:.1f} req/s (ρ = "
        f"{p.utilization:.2f}) within the {slo_ms:g} ms SLO with {UP_HEADROOM:g}× headroom; c={current} "
        f"predicted {now.latency_ms:.1f} ms"
    )
    return ConcurrencyChoice(chosen, p, now, True, why)
