"""InferLine's online tuner as a pure policy over an injected clock (`now`) and the pipeline's recent
arrival times.

- **Envelopes.** For windows from the pipeline's service time doubling up to 60 s, the highest arrival
  rate any window of that length saw: the planned envelope over the planning trace, the live one over
  the last minute (the window ending now).
- **Scale up** as soon as a live window's rate exceeds the planned envelope's at that window: every stage
  to k_m = ⌈r_max·s_m / (μ_m·ρ_m)⌉, with r_max the highest exceeding live rate, μ_m one replica's
  throughput at its planned batch and ρ_m the utilization the plan ran it at (the plan's headroom kept).
- **Scale down** after `STABLE_S` without any action, to the k_m of the highest rate over the last
  `DOWN_SPAN_S` in `DOWN_WINDOW_S` windows; never below one replica.
Every action carries its reason (the window, the rates, the formula's numbers).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

ENVELOPE_MAX_S = 60.0
STABLE_S = 15.0
DOWN_SPAN_S = 30.0
DOWN_WINDOW_S = 5.0


@dataclass(frozen=True, slots=True)
class StageTuning:
    """A stage as the plan left it."""

    name: str
    scale: float
    """s_m."""
    rows_per_s: float
    """μ_m: one replica at its planned batch."""
    utilization: float
    """ρ_m: λ·s_m / (k·μ_m) at the planned rate."""


@dataclass(frozen=True, slots=True)
class Envelope:
    windows_s: tuple[float, ...]
    rates: tuple[float, ...]
    """The highest arrivals per second over any window of each length."""


@dataclass(frozen=True, slots=True)
class TunerState:
    replicas: Mapping[str, int]
    last_action_at: float


@dataclass(frozen=True, slots=True)
class TunerAction:
    stage: str
    replicas_from: int
    replicas_to: int
    reason: str


def windows(service_s: float, horizon_s: float = ENVELOPE_MAX_S) -> tuple[float, ...]:
    """The service time, doubling, up to the horizon."""
    out, w = [], max(service_s, 1e-3)
    while w <= horizon_s:
        out.append(w)
        w *= 2
    return tuple(out)


def planned_envelope(arrivals: np.ndarray, service_s: float) -> Envelope:
    """Max arrivals in any window [a_i, a_i + w) of the planning trace, per window length, as rates."""
    ws = windows(service_s)
    idx = np.arange(arrivals.size)
    rates = []
    for w in ws:
        counts = np.searchsorted(arrivals, arrivals + w, side="left") - idx
        rates.append(float(counts.max()) / w if counts.size else 0.0)
    return Envelope(ws, tuple(rates))


def live_rates(arrivals: np.ndarray, now: float, ws: Sequence[float]) -> tuple[float, ...]:
    """Arrivals per second in each window (now − w, now]."""
    end = np.searchsorted(arrivals, now, side="right")
    return tuple(float(end - np.searchsorted(arrivals, now - w, side="right")) / w for w in ws)


def replicas_for(rate: float, stage: StageTuning) -> int:
    """k_m = ⌈r·s_m / (μ_m·ρ_m)⌉, at least one."""
    return max(1, math.ceil(rate * stage.scale / (stage.rows_per_s * stage.utilization) - 1e-9))


def tune(
    now: float,
    arrivals: np.ndarray,
    stages: Sequence[StageTuning],
    envelope: Envelope,
    state: TunerState,
) -> tuple[list[TunerAction], TunerState]:
    """The actions due at `now` given the pipeline's arrival times (sorted, at least the last minute)."""
    live = live_rates(arrivals, now, envelope.windows_s)
    over = [(w, r, p) for w, r, p in zip(envelope.windows_s, live, envelope.rates, strict=True) if r > p]
    actions: list[TunerAction] = []
    if over:
        w, r_max, planned = max(over, key=lambda x: x[1])
        for stage in stages:
            k = replicas_for(r_max, stage)
            have = state.replicas[stage.name]
            if k > have:
                reason = (
                    f"live rate {r_max:.1f} q/s over {w:g} s exceeds the planned envelope's "
                    f"{planned:.1f} q/s: k = ⌈{r_max:.1f}·{stage.scale:.2f}/"
                    f"({stage.rows_per_s:.1f}·{stage.utilization:.2f})⌉ = {k}"
                )
                actions.append(TunerAction(stage.name, have, k, reason))
    elif now - state.last_action_at >= STABLE_S:
        starts = now - np.arange(DOWN_WINDOW_S, DOWN_SPAN_S + 1e-9, DOWN_WINDOW_S)
        counts = np.searchsorted(arrivals, starts + DOWN_WINDOW_S, side="right") - np.searchsorted(
            arrivals, starts, side="right"
        )
        r = float(counts.max()) / DOWN_WINDOW_S
        for stage in stages:
            k = replicas_for(r, stage)
            have = state.replicas[stage.name]
            if k < have:
                reason = (
                    f"stable {now - state.last_action_at:.0f} s; max rate over the last {DOWN_SPAN_S:g} s in "
                    f"{DOWN_WINDOW_S:g} s windows {r:.1f} q/s: k = {k}"
                )
                actions.append(TunerAction(stage.name, have, k, reason))
    if not actions:
        return [], state
    replicas = dict(state.replicas) | {a.stage: a.replicas_to for a in actions}
    return actions, TunerState(replicas, now)
