"""Variant choice for offline jobs (pure): the most rows per dollar among variants accurate enough.

Online queries pick the cheapest variant that meets a latency SLO at small batches; a job has no
latency SLO and runs whole max-size batches back to back, so what matters is profiled saturation
throughput per unit of cost. Ties go to the larger max batch (fewer runs per chunk), then accuracy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from infaas.core.errors import RequirementsUnmet


@dataclass(frozen=True, slots=True)
class JobCandidate:
    """A ready variant as the job planner sees it."""

    id: str
    model: str
    accuracy: float
    saturation_qps: float  # rows per second at the variant's best batch size
    cost_per_s: float  # $ per second of the hardware it occupies
    max_batch: int
    hardware: str = "cpu"

    @property
    def rows_per_dollar(self) -> float:
        if self.saturation_qps <= 0:
            return 0.0
        return math.inf if self.cost_per_s <= 0 else self.saturation_qps / self.cost_per_s


@dataclass(frozen=True, slots=True)
class JobChoice:
    variant: JobCandidate
    considered: int
    reason: str


def choose_job_variant(
    candidates: tuple[JobCandidate, ...] | list[JobCandidate],
    *,
    min_accuracy: float | None,
    hardware: frozenset[str] | None = None,
) -> JobChoice:
    """The candidate with the most rows per dollar whose accuracy ≥ `min_accuracy`, on hardware that a
    live worker has (`hardware`, when given); `RequirementsUnmet` naming the closest otherwise."""
    usable = [c for c in candidates if c.saturation_qps > 0 and (hardware is None or c.hardware in hardware)]
    if not usable:
        raise RequirementsUnmet(
            "no ready variant with a throughput profile can run this job",
            considered=len(candidates),
        )
    floor = min_accuracy if min_accuracy is not None else 0.0
    accurate = [c for c in usable if c.accuracy >= floor]
    if not accurate:
        best = max(usable, key=lambda c: c.accuracy)
        raise RequirementsUnmet(
            f"no variant reaches accuracy {floor:.3f}; the most accurate reaches {best.accuracy:.3f}",
            min_accuracy=floor,
            closest={"variant": best.id, "accuracy": best.accuracy},
        )
    chosen = max(accurate, key=lambda c: (c.rows_per_dollar, c.max_batch, c.accuracy, c.id))
    per_million = 1e6 * chosen.cost_per_s / chosen.saturation_qps
    reason = (
        f"most rows per dollar among {len(accurate)} of {len(usable)} variants with accuracy ≥ {floor:.3f}: "
        f"{chosen.saturation_qps:.0f} rows/s at ${per_million:.4f} per million rows "
        f"(max batch {chosen.max_batch}, accuracy {chosen.accuracy:.3f})"
    )
    return JobChoice(variant=chosen, considered=len(usable), reason=reason)
