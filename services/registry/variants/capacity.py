"""A variant's predicted latency-vs-load curves, one per concurrency it was profiled at (SERF)."""

from __future__ import annotations

from infaas.core.costs import PriceTable
from infaas.core.errors import Conflict
from infaas.data.db import VariantRow
from infaas.policy.configuration import configurations
from infaas.policy.serf import max_rate, predict
from infaas.schemas.api import ConcurrencyPoint
from infaas.schemas.capacity import ConfigurationCurve, LoadPoint, VariantCapacity


def mean_latencies(points: list[ConcurrencyPoint]) -> list[float]:
    """Mean latency at 1..c concurrent requests; profiles from before the mean was stored give their
    median, which for near-deterministic requests is close to it."""
    ordered = sorted(points, key=lambda p: p.concurrency)
    return [p.mean_ms if p.mean_ms is not None else p.p50_ms for p in ordered]


def variant_capacity(
    row: VariantRow, model: str, *, slo_ms: float | None, points: int, prices: PriceTable
) -> VariantCapacity:
    """The curve of every configuration 1..c of `row`; 409 while it has no concurrency profile."""
    measured = sorted(
        (ConcurrencyPoint.model_validate(p) for p in row.interference or []), key=lambda p: p.concurrency
    )
    if row.status != "ready" or not measured:
        raise Conflict(
            f"variant {row.id} has no concurrency profile yet",
            status=row.status,
            reason="the capacity curve needs the latency of 1..c concurrent requests",
        )
    try:
        configs = configurations(
            variant_id=row.id,
            hardware=row.hardware,
            threads=row.threads,
            max_batch=row.max_batch,
            mean_ms=mean_latencies(measured),
            prices=prices,
        )
    except ValueError:  # a hardware kind without a price: the curves stand, the costs are unknown
        configs = configurations(
            variant_id=row.id,
            hardware="cpu",
            threads=row.threads,
            max_batch=row.max_batch,
            mean_ms=mean_latencies(measured),
            prices=PriceTable(0.0, 0.0, 0.0),
        )
    curves = []
    for cfg in configs:
        peak = cfg.concurrency * cfg.service_rates[-1]
        curve = []
        for k in range(points):
            p = predict(cfg.service_rates, 0.98 * peak * k / (points - 1))
            curve.append(
                LoadPoint(
                    arrival_rps=round(p.arrival_rps, 4),
                    utilization=round(p.utilization, 6),
                    latency_ms=round(p.latency_ms, 4),
                    service_ms=round(p.service_ms, 4),
                    wait_ms=round(p.wait_ms, 4),
                )
            )
        curves.append(
            ConfigurationCurve(
                concurrency=cfg.concurrency,
                threads=cfg.threads,
                cost_per_s=cfg.cost_per_s or None,
                saturation_rps=round(peak, 4),
                slo_rps=round(max_rate(cfg.service_rates, slo_ms), 4) if slo_ms is not None else None,
                curve=curve,
            )
        )
    return VariantCapacity(
        model=model,
        variant=row.id,
        hardware=row.hardware,
        threads=row.threads,
        max_batch=row.max_batch,
        slo_ms=slo_ms,
        service_rates=[round(mu, 4) for mu in configs[-1].service_rates] if configs else [],
        measured=measured,
        configurations=curves,
        best=_best(curves),
    )


def _best(curves: list[ConfigurationCurve]) -> int | None:
    """The concurrency carrying the most SLO-meeting load per $ (per instance when costs are unknown)."""
    scored = [(c.slo_rps / (c.cost_per_s or 1.0), -c.concurrency, c.concurrency) for c in curves if c.slo_rps]
    return max(scored)[2] if scored else None
