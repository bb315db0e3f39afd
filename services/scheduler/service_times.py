"""What one dispatcher has observed of each variant's instances, fed by every answer: how fast they drain
the queue (time per row while work was waiting: compute, batching and every per-query cost included,
at the batch sizes the traffic really forms), and the answer time the admission model did not explain
(`admission.py` predicts from these; no I/O, and the clock is the caller's).
"""

from __future__ import annotations

from dataclasses import dataclass

from infaas.schemas.variants import VariantProfile

WINDOW_S = 0.1
"""Drain time and rows are summed over windows this long, then averaged across windows: answers of one
batch arrive together (the first carries the batch's whole time, the rest none), so a per-answer
average would depend on where in a batch it stopped."""

WINDOW_WEIGHT = 0.5
"""Weight of the newest window: a change of load or co-location shows within two or three windows."""

RESIDUAL_ALPHA = 0.1
"""Weight of each answer in the unexplained-time averages: slower, they are a correction, not a signal."""

DEVIATIONS = 2.0
"""How many mean deviations of the unexplained time the margin adds (TCP's retransmission timer adds
four to the round-trip average). Admission fills the queue up to the deadline, so the last queries in
sit right at it: on the average alone, about half of them would miss."""


@dataclass(slots=True)
class ServiceTime:
    """What one dispatcher observed of a variant's instances (mutable, fed by answers)."""

    ms_per_row: float
    """Time the variant's instances took per row while this dispatcher had work waiting on them."""
    residual_ms: float = 0.0
    """Average of (answer time − what the queue model predicted), negative when it was pessimistic."""
    deviation_ms: float = 0.0
    """Mean deviation of that difference from its average: how far one answer strays."""
    _last_at: float | None = None  # when the previous answer came (s, the caller's clock)
    _busy: bool = False  # whether rows were still in flight after it
    _window_at: float = 0.0
    _window_ms: float = 0.0
    _window_rows: int = 0

    @classmethod
    def from_profile(cls, variant: VariantProfile) -> ServiceTime:
        """Before any answer: the profile's per-row time at saturation (its best case), replaced by the
        first window of answers."""
        if variant.saturation_qps > 0:
            return cls(ms_per_row=1000.0 / variant.saturation_qps)
        return cls(ms_per_row=variant.profiled_ms(variant.max_batch, tail=False) / max(1, variant.max_batch))

    @property
    def mean_margin_ms(self) -> float:
        """The unexplained time alone, without its spread (never less than 0)."""
        return max(0.0, self.residual_ms)

    @property
    def margin_ms(self) -> float:
        """What to add to the queue model: the unexplained time and its spread (never less than 0: a
        pessimistic model is not credited)."""
        return max(0.0, self.residual_ms + DEVIATIONS * self.deviation_ms)

    def drained(self, now: float, rows: int, pending_after: int) -> None:
        """An answer of `rows` rows came at `now` (s), and `pending_after` rows are still in flight. The
        time since the previous answer was spent serving if work was waiting then; idle time is not."""
        if self._busy and self._last_at is not None:
            self._window_ms += (now - self._last_at) * 1000
            self._window_rows += rows
        self._last_at, self._busy = now, pending_after > 0
        if now - self._window_at >= WINDOW_S:
            if self._window_rows:
                sample = self._window_ms / self._window_rows
                self.ms_per_row += WINDOW_WEIGHT * (sample - self.ms_per_row)
            self._window_at, self._window_ms, self._window_rows = now, 0.0, 0

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
