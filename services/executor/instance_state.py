"""An instance's state (INFaaS Fig. 4), as pure logic.

The executor feeds each instance's `InstanceMonitor` what it served, and every heartbeat turns the
window into a state with `next_state`; the clock is injected so tests can drive time by hand.

States: `loading` and `failed` are set by loading itself. Between `active`, `overloaded` and
`interfered`:
- overloaded: with the SLO its queries are served under known (the planner says it when it loads the
  instance), the rows offered in the window reach the instance's capacity under that SLO — the rate at
  which SERF predicts a mean latency of the SLO (`infaas/policy/capacity.py`: M/D/1 over batches, at the
  batch and slowdown of the window); without one, `overload_enter` (95 %) of the variant's profiled
  saturation throughput. It leaves below `overload_exit` (80 %) of the same rate — the gap keeps it
  from flapping;
- interfered: not overloaded, but batches take `interfere_enter` (2.5×) their profiled p50 at the same
  batch size; it leaves at `interfere_exit` (1.5×) — INFaaS's code used the same two factors.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from infaas.policy.capacity import Observed, instance_capacity
from infaas.policy.selection import InstanceState
from infaas.schemas.variants import VariantProfile


@dataclass(frozen=True, slots=True)
class Thresholds:
    overload_enter: float = 0.95
    overload_exit: float = 0.80
    interfere_enter: float = 2.5
    interfere_exit: float = 1.5


@dataclass(frozen=True, slots=True)
class Window:
    """What one instance did between two heartbeats."""

    seconds: float
    rows_offered: int
    slowdowns: tuple[float, ...]  # observed / profiled latency, one per batch


@dataclass(frozen=True, slots=True)
class Status:
    state: InstanceState
    reason: str


def next_state(
    current: Status,
    window: Window,
    profile: VariantProfile,
    thresholds: Thresholds = Thresholds(),
    *,
    slo_ms: float | None = None,
    observed: Observed | None = None,
) -> Status:
    """The instance's state after `window` (pure). `slo_ms`: the SLO its queries are served under;
    `observed`: what the window measured (batch, busy share, slowdown), for SERF's capacity."""
    if current.state in ("loading", "failed"):
        return current
    offered = window.rows_offered / window.seconds if window.seconds > 0 else 0.0
    overloaded = current.state == "overloaded"
    if slo_ms is not None:
        cap = instance_capacity(profile, slo_ms, observed)
        load = offered / cap.rows_per_s if cap.rows_per_s > 0 else math.inf
        limit = thresholds.overload_exit if overloaded else 1.0
        if load >= limit and offered > 0:
            predicted = cap.predicted_ms(offered)
            return Status(
                "overloaded",
                f"offered {offered:.0f} rows/s = {load:.0%} of its capacity under the {slo_ms:g} ms SLO "
                f"({cap.rows_per_s:.0f} rows/s at batch ~{cap.batch}): SERF predicts a mean of "
                + ("more than the SLO" if not math.isfinite(predicted) else f"{predicted:.1f} ms"),
            )
    else:
        load = offered / profile.saturation_qps if profile.saturation_qps > 0 else 0.0
        limit = thresholds.overload_exit if overloaded else thresholds.overload_enter
        if load >= limit:
            return Status(
                "overloaded",
                f"offered {offered:.0f} rows/s = {load:.0%} of its profiled peak "
                f"{profile.saturation_qps:.0f} rows/s",
            )
    if not window.slowdowns:
        # Idle: no evidence either way. An interfered instance stays so until a batch shows otherwise.
        if current.state == "interfered":
            return current
        return Status("active", "idle" if current.state == "overloaded" else current.reason or "serving")
    slowdown = statistics.median(window.slowdowns)
    limit = thresholds.interfere_exit if current.state == "interfered" else thresholds.interfere_enter
    if slowdown >= limit:
        return Status("interfered", f"batches take {slowdown:.1f}× their profiled latency")
    of = "of its capacity under the SLO" if slo_ms is not None else "of peak"
    share = f"{load:.0%}" if math.isfinite(load) else "no capacity"
    return Status("active", f"batches at {slowdown:.1f}× profiled latency, {share} {of}")


@dataclass
class InstanceMonitor:
    """Accumulates an instance's work between heartbeats."""

    profile: VariantProfile
    clock: Callable[[], float] = time.monotonic
    status: Status = field(default_factory=lambda: Status("loading", "loading"))
    slo_ms: float | None = None
    """The latency SLO of the model this instance serves, when its loader said (the overload threshold
    is then SERF's capacity under it)."""
    observed: Observed = field(default_factory=Observed)
    """The last closed window as the planner reads it (rows served, mean batch, busy share, slowdown)."""
    min_excess_ms: float = 0.5
    """Slowdowns count only when a batch is also this much slower in absolute terms: at microsecond
    scale, timer and scheduling noise alone would otherwise look like 3× interference."""
    offered_rps: float = 0.0
    """Rows offered per second in the last closed window (what delayed batching weighs a wait by)."""
    _started: float = field(default=0.0, init=False)
    _rows: int = field(default=0, init=False)
    _slowdowns: list[float] = field(default_factory=list, init=False)
    _served: int = field(default=0, init=False)
    _batches: int = field(default=0, init=False)
    _compute_ms: float = field(default=0.0, init=False)

    def __post_init__(self) -> None:
        self._started = self.clock()

    def offered(self, rows: int) -> None:
        self._rows += rows

    def ran(self, rows: int, compute_ms: float) -> None:
        self._served += rows
        self._batches += 1
        self._compute_ms += compute_ms
        expected = self.profile.profiled_ms(rows, tail=False)
        if expected > 0:
            ratio = compute_ms / expected
            self._slowdowns.append(ratio if compute_ms - expected >= self.min_excess_ms else min(ratio, 1.0))

    def tick(self, thresholds: Thresholds = Thresholds()) -> Status:
        """Close the window, update and return the state."""
        now = self.clock()
        window = Window(
            seconds=now - self._started, rows_offered=self._rows, slowdowns=tuple(self._slowdowns)
        )
        seconds = max(window.seconds, 1e-9)
        self.offered_rps = self._rows / seconds
        self.observed = Observed(
            served_rps=self._served / seconds,
            mean_batch=self._served / self._batches if self._batches else 0.0,
            busy=min(1.0, self._compute_ms / 1000 / seconds),
            slowdown=statistics.median(window.slowdowns) if window.slowdowns else 1.0,
        )
        self._started, self._rows, self._slowdowns = now, 0, []
        self._served, self._batches, self._compute_ms = 0, 0, 0.0
        self.status = next_state(
            self.status, window, self.profile, thresholds, slo_ms=self.slo_ms, observed=self.observed
        )
        return self.status
