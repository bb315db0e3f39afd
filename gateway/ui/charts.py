"""A model's charts: its variants' accuracy against latency, and latency against batch size."""

from __future__ import annotations

from dataclasses import dataclass

from markupsafe import Markup

from gateway.ui.svg import Point, Series, lines, scatter
from infaas.schemas.api import Variant

MAX_SERIES = 8


@dataclass(frozen=True)
class ModelCharts:
    latency_accuracy: Markup
    latency_batch: Markup
    plotted: int
    """How many variants the latency–accuracy chart shows."""


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
        plotted=len(points),
    )
