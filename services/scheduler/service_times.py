"""What one dispatcher has observed of each variant's instances, fed by every answer: compute per row at
the batch sizes its traffic really forms, and the answer time the admission model did not explain
(`admission.py` predicts from these; no clock, no I/O)."""

from __future__ import annotations

from dataclasses import dataclass

from infaas.schemas.variants import VariantProfile

SERVED_ALPHA = 0.05
"""Weight of each answer in the per-row compute average: about the last twenty answers, a fraction of a
second of the load where admission matters, so a change of co-location shows within one batch or two."""

RESIDUAL_ALPHA = 0.1
"""Weight of each answer in the unexplained-time averages: slower, they are a correction, not a signal."""

DEVIATIONS = 2.0
"""How many mean deviations of the unexplained time the margin adds (TCP's retransmission timer adds
four to the round-trip average). Admission fills the queue up to the deadline, so the last queries in
sit right at it: on the average alone, about half of them would miss."""


@dataclass(slots=True)
class ServiceTime:
    """What one dispatcher observed of a variant's instances (mutable, fed by answers; no clock)."""

    work_ms: float
    """Decayed sum of compute time, each answer counting its own rows' share of its batch."""
    rows: float
    """Decayed sum of the rows that compute served: `work_ms / rows` is ms per row at realized batches."""
    residual_ms: float = 0.0
    """Average of (answer time − what the queue model predicted), negative when it was pessimistic."""
    deviation_ms: float = 0.0
    """Mean deviation of that difference from its average: how far one answer strays."""

    @classmethod
    def from_profile(cls, variant: VariantProfile) -> ServiceTime:
        """Before any answer: the profile's per-row time at saturation (its best case), weighing one row,
        so that the first answers replace it."""
        if variant.saturation_qps > 0:
            per_row = 1000.0 / variant.saturation_qps
        else:
            per_row = variant.latency_ms(variant.max_batch, tail=False) / max(1, variant.max_batch)
        return cls(work_ms=per_row, rows=1.0)

    @property
    def ms_per_row(self) -> float:
        return self.work_ms / self.rows

    @property
    def margin_ms(self) -> float:
        """What to add to the queue model: the unexplained time and its spread (never less than 0: a
        pessimistic model is not credited)."""
        return max(0.0, self.residual_ms + DEVIATIONS * self.deviation_ms)

    def served(self, rows: int, batch_rows: int, compute_ms: float) -> None:
        """A query of `rows` rows was answered from a batch of `batch_rows` that took `compute_ms`."""
        keep = 1.0 - SERVED_ALPHA
        self.work_ms = self.work_ms * keep + compute_ms * rows / max(batch_rows, rows, 1)
        self.rows = self.rows * keep + rows

    def answered(self, actual_ms: float, modelled_ms: float) -> None:
        """A query predicted at `modelled_ms` (without the residual) took `actual_ms` to answer (or at
        least that long: a query given up at its SLO reports the time it was given up)."""
        error = actual_ms - modelled_ms - self.residual_ms
        self.residual_ms += RESIDUAL_ALPHA * error
        self.deviation_ms += RESIDUAL_ALPHA * (abs(error) - self.deviation_ms)


class ServiceTimes:
    """`ServiceTime` per variant, begun from the variant's profile the first time it is needed."""

    def __init__(self) -> None:
        self._by_variant: dict[str, ServiceTime] = {}

    def of(self, variant: VariantProfile) -> ServiceTime:
        found = self._by_variant.get(variant.id)
        if found is None:
            found = self._by_variant[variant.id] = ServiceTime.from_profile(variant)
        return found
