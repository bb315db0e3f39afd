"""Filters and order of `GET /v1/models/{name}/variants`, applied to the model's variant rows."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from infaas.data.db import VariantRow

SortKey = Literal["latency", "accuracy", "cost", "throughput", "memory", "load"]


@dataclass(frozen=True)
class VariantQuery:
    """Filters and order for `GET /v1/models/{name}/variants`."""

    hardware: str | None = None
    status: str | None = None
    precision: str | None = None
    min_accuracy: float | None = None
    max_latency_ms: float | None = None
    max_cost_per_query: float | None = None
    include_dominated: bool = True
    batch: int = 1
    sort: SortKey = "latency"
    descending: bool = False


def latency_at(v: VariantRow, batch: int) -> float | None:
    """p50 latency of `batch` rows as selection sees it: the next measured batch size up, and whole
    max-size batches back to back beyond the variant's max batch. None until profiled."""
    points = v.latency or []
    if not points:
        return None
    runs = 1
    if batch > v.max_batch:
        runs = -(-batch // v.max_batch)
        batch = v.max_batch
    point = next((p for p in points if p["batch"] >= batch), points[-1])
    return runs * float(point["p50_ms"])


def select(rows: list[VariantRow], q: VariantQuery) -> list[VariantRow]:
    def keep(v: VariantRow) -> bool:
        lat = latency_at(v, q.batch)
        return (
            (q.hardware is None or v.hardware == q.hardware)
            and (q.status is None or v.status == q.status)
            and (q.precision is None or v.precision == q.precision)
            and (q.min_accuracy is None or (v.accuracy or 0.0) >= q.min_accuracy)
            and (q.max_latency_ms is None or (lat is not None and lat <= q.max_latency_ms))
            and (
                q.max_cost_per_query is None
                or (v.cost_per_query is not None and v.cost_per_query <= q.max_cost_per_query)
            )
            and (q.include_dominated or not v.dominated)
        )

    def sort_key(v: VariantRow) -> tuple[bool, float, str]:
        value = {
            "latency": latency_at(v, q.batch),
            "accuracy": v.accuracy,
            "cost": v.cost_per_query,
            "throughput": v.saturation_qps,
            "memory": float(v.peak_memory_bytes) if v.peak_memory_bytes is not None else None,
            "load": v.load_ms,
        }[q.sort]
        # Unmeasured variants go last whatever the direction.
        if value is None:
            return (True, 0.0, v.id)
        return (False, -value if q.descending else value, v.id)

    return sorted((v for v in rows if keep(v)), key=sort_key)
