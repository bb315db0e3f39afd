"""A model's charts: its variants' accuracy against latency, latency against batch size, and the
fastest variant's predicted latency against load per concurrency (SERF) beside its measured points."""

from __future__ import annotations

from dataclasses import dataclass

from markupsafe import Markup

from gateway.ui.svg import Point, Series, curves, lines, scatter, timeseries
from infaas.policy.serf import predict
from infaas.schemas.api import Variant
from infaas.schemas.parity import ParityStatus

MAX_SERIES = 8


@dataclass(frozen=True)
class ModelCharts:
    latency_accuracy: Markup
    latency_batch: Markup
    capacity: Markup
    capacity_variant: str | None
    """The variant the capacity chart is drawn for (None: no variant has a concurrency profile)."""
    plotted: int
    """How many variants the latency–accuracy chart shows."""


def parity_loss_chart(parity: ParityStatus) -> Markup:
    """The parity model's training loss (MSE to the summed outputs) against the step."""
    series = [Series(name=f"k={parity.k}", points=[(float(s), loss) for s, loss in parity.losses])]
    return timeseries("Parity model training loss", series, x_label="step", y_label="MSE")


def p50_at(variant: Variant, batch: int = 1) -> float | None:
    return next((p.p50_ms for p in variant.latency or () if p.batch == batch), None)


def short_id(variant: Variant, model: str) -> str:
    return variant.id.removeprefix(f"{model}.")


def model_charts(model: str, variants: list[Variant]) -> ModelCharts:
    """Profiled variants only. Dominated variants are drawn hollow; the batch chart shows the fastest
    non-dominated ones (a line for each of 40 variants would hide them all)."""
    profiled = [v for v in variants if v.status == "ready" and v.accuracy is not None and p50_at(v)]
    points = [
        Point(x=p50_at(v) or 0.0, y=v.accuracy or 0.0, label=short_id(v, model), muted=v.dominated)
        for v in profiled
    ]
    fastest = sorted((v for v in profiled if not v.dominated), key=lambda v: p50_at(v) or 0.0)[:MAX_SERIES]
    series = [
        Series(short_id(v, model), [(float(p.batch), p.p50_ms) for p in v.latency or ()]) for v in fastest
    ]
    return ModelCharts(
        latency_accuracy=scatter(
            f"{model}: accuracy against p50 latency at batch 1",
            points,
            x_label="p50 latency at batch 1 (ms)",
            y_label="accuracy (validation set)",
        ),
        latency_batch=lines(
            f"{model}: p50 latency against batch size",
            series,
            x_label="batch size (rows)",
            y_label="p50 latency (ms)",
        ),
        capacity=capacity_chart(model, fastest),
        capacity_variant=next((short_id(v, model) for v in fastest if v.interference), None),
        plotted=len(points),
    )


CURVE_POINTS = 24


def capacity_chart(model: str, ranked: list[Variant]) -> Markup:
    """The first of `ranked` with a concurrency profile: predicted mean latency against arrival rate for
    each concurrency c (M/D_interf/c over μ_i = 1000/mean_ms at i concurrent requests, up to 95 % of
    ρ = 1), and the profile's closed-loop points (throughput, mean latency at i concurrent) over them."""
    variant = next((v for v in ranked if v.interference), None)
    profile = sorted(variant.interference or (), key=lambda p: p.concurrency) if variant else []
    title = f"{model}: predicted mean latency against load (SERF)"
    if variant is None or any((p.mean_ms or p.p50_ms) <= 0 for p in profile):
        return curves(title, [], [], x_label="", y_label="", empty="no concurrency profile yet")
    rates = [1000.0 / (p.mean_ms or p.p50_ms) for p in profile]
    series = []
    for c in range(1, len(rates) + 1):
        peak = c * rates[c - 1]
        loads = [0.95 * peak * k / (CURVE_POINTS - 1) for k in range(CURVE_POINTS)]
        series.append(Series(f"c={c}", [(lam, predict(rates[:c], lam).latency_ms) for lam in loads]))
    marks = [
        Point(x=p.qps, y=p.mean_ms or p.p50_ms, label=f"measured, {p.concurrency} concurrent")
        for p in profile
    ]
    return curves(
        f"{short_id(variant, model)}: predicted mean latency against load (SERF)",
        series,
        marks,
        x_label="arrival rate (requests/s)",
        y_label="mean latency (ms)",
        empty="no concurrency profile yet",
    )
