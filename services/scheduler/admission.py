"""Deadline-aware admission, as pure logic: will a query finish in time on the instance chosen for it?

The prediction is the queue model of a variant's instances serving batches back to back: the rows
already queued ahead of the query (this dispatcher's rows in flight on the variant) times the time per
row those instances *observably* took to drain them (`service_times.py`, fed by every answer: compute,
batching and per-query costs under the current co-location, where an idle-machine profile overstates
capacity), less the work done on them since the oldest was admitted (the instances have been busy with
them since: counting a query half served as all ahead shed, at half load, a query arriving while
another ran), plus the query's own run (never less than its profiled median: a lone query runs in a batch
of its own), plus the answer time that model has not explained so far (serving overhead, event-loop
lag, other dispatchers' queries: an average of actual − modelled, plus twice its mean deviation when a
queue has formed — more queries ahead than instances to run them; behind no more than what the instances
are running, the average alone: the spread guards a queue filled up to the deadline, and at low load it
shed queries that idle capacity would have served in time).

A query is admitted when the prediction meets its deadline, or when nothing is queued ahead of it: a
query alone on its instance is not shed for load (its SLO policy applies when it is answered), since
`Retry-After` would promise a retry could help. The dispatcher tries the other active variants that
meet the query before shedding; what it does then is the app's `slo_policy` (`dispatch.py`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from services.scheduler.service_times import ServiceTime


@dataclass(frozen=True, slots=True)
class Prediction:
    """A query's predicted completion on one variant, with the numbers it came from."""

    variant: str
    rows_ahead: float
    ms_per_row: float
    own_ms: float
    overhead_ms: float
    deadline_ms: float
    done_ms: float = 0.0
    """Time since the oldest of the rows ahead was admitted: work on them the instances have done."""

    @property
    def modelled_ms(self) -> float:
        """The queue model alone: work ahead not yet done, plus the query's own run."""
        return max(0.0, self.rows_ahead * self.ms_per_row - self.done_ms) + self.own_ms

    @property
    def ms(self) -> float:
        return self.modelled_ms + self.overhead_ms

    @property
    def admits(self) -> bool:
        return self.ms <= self.deadline_ms or self.rows_ahead <= 0

    def why(self) -> str:
        """The prediction in words, with the numbers, e.g. for a shed query's error."""
        ms, deadline = self._shown(1)
        relation = "<=" if self.ms <= self.deadline_ms else ">"
        return (
            f"predicted {ms:.1f} ms on {self.variant} (queue {self.rows_ahead:.0f} rows ahead at "
            f"{self.ms_per_row:.3g} ms/row observed, {self.done_ms:.1f} ms of it under way, + own run "
            f"{self.own_ms:.1f} ms + "
            f"{self.overhead_ms:.1f} ms unexplained) {relation} deadline {deadline:.1f} ms"
        )

    def details(self) -> dict[str, float | str]:
        """The numbers, for an error's JSON body."""
        ms, deadline = self._shown(3)
        return {
            "variant": self.variant,
            "predicted_ms": ms,
            "rows_ahead": round(self.rows_ahead, 1),
            "ms_per_row": round(self.ms_per_row, 4),
            "done_ms": round(self.done_ms, 3),
            "own_ms": round(self.own_ms, 3),
            "overhead_ms": round(self.overhead_ms, 3),
            "deadline_ms": deadline,
        }

    def _shown(self, digits: int) -> tuple[float, float]:
        """The predicted time and the deadline rounded so that they keep the relation the prediction
        decided. Rounding is monotone, so a fit stays a fit; a miss by less than the rounding would read
        "150.0 > 150.0", so there the prediction is rounded up and the deadline down."""
        if self.ms <= self.deadline_ms:
            return round(self.ms, digits), round(self.deadline_ms, digits)
        scale = 10**digits
        # The inner round drops float noise, so that 180.1 stays 180.1 rather than going up to 180.2.
        return (
            math.ceil(round(self.ms * scale, 6)) / scale,
            math.floor(round(self.deadline_ms * scale, 6)) / scale,
        )


def predict(
    *,
    variant: str,
    rows: int,
    rows_ahead: float,
    profiled_ms: float,
    service: ServiceTime,
    deadline_ms: float,
    done_ms: float = 0.0,
    queued: bool = True,
) -> Prediction:
    """The completion of a `rows`-row query queued behind `rows_ahead` rows on one instance.

    `profiled_ms`: the variant's profiled median for the query alone (its own run rarely takes less; the
    p99 would make a profile taken on a busy machine shed what the instance can serve);
    `deadline_ms`: what is left of the query's SLO (or of the default budget when it has none);
    `done_ms`: how long ago the oldest of the rows ahead was admitted (0 with none ahead);
    `queued`: more queries ahead than instances to run them (the margin then includes the spread).
    """
    per_row = service.ms_per_row
    return Prediction(
        variant=variant,
        rows_ahead=rows_ahead,
        ms_per_row=per_row,
        own_ms=max(rows * per_row, profiled_ms),
        overhead_ms=service.margin_ms if queued else service.mean_margin_ms,
        deadline_ms=deadline_ms,
        done_ms=done_ms if rows_ahead > 0 else 0.0,
    )


def retry_after_s(prediction: Prediction) -> float:
    """When a retry may fit: once the excess work ahead has drained (at least a second: the header is
    whole seconds, and sooner would only be shed again)."""
    return max(1.0, (prediction.ms - prediction.deadline_ms) / 1000)
