"""InferLine's tuner on an injected clock and hand-computed arrival traces (pure)."""

from __future__ import annotations

import numpy as np

from services.planner.policies.pipeline_tuner import (
    StageTuning,
    TunerState,
    planned_envelope,
    replicas_for,
    tune,
    windows,
)

# Stage a: 4 rows/s per replica, every query, planned at ρ 0.5 (4 q/s -> 2 replicas). Stage b: 10 rows/s,
# half the queries, ρ 0.4 (-> 1 replica).
A = StageTuning("a", scale=1.0, rows_per_s=4.0, utilization=0.5)
B = StageTuning("b", scale=0.5, rows_per_s=10.0, utilization=0.4)
PLANNED = np.arange(480) * 0.25  # 4 q/s for two minutes, exact in binary


def test_envelope_windows_double_from_the_service_time_to_a_minute() -> None:
    assert windows(1.0) == (1, 2, 4, 8, 16, 32)
    envelope = planned_envelope(PLANNED, 1.0)
    assert envelope.rates == (4.0,) * 6
    assert (replicas_for(4.0, A), replicas_for(4.0, B)) == (2, 1)


def trace() -> np.ndarray:
    """4 q/s until 100 s, then a burst at 8 q/s (100.125 … 104.0), then 2 q/s from 104.5."""
    burst = 100.125 + np.arange(32) * 0.125
    after = 104.5 + np.arange(80) * 0.5
    return np.concatenate([np.arange(400) * 0.25, burst, after])


def test_a_window_over_the_envelope_scales_up_by_the_k_formula() -> None:
    envelope = planned_envelope(PLANNED, 1.0)
    state = TunerState({"a": 2, "b": 1}, last_action_at=0.0)
    actions, state = tune(104.0, trace(), [A, B], envelope, state)
    # Live over (103, 104]: 8 q/s > 4. a: ⌈8·1/(4·0.5)⌉ = 4. b: ⌈8·0.5/(10·0.4)⌉ = ⌈1.0⌉ = 1, as it is.
    assert [(x.stage, x.replicas_from, x.replicas_to) for x in actions] == [("a", 2, 4)]
    assert "8.0 q/s over 1 s exceeds the planned envelope's 4.0 q/s" in actions[0].reason
    assert state.replicas == {"a": 4, "b": 1} and state.last_action_at == 104.0


def test_scale_down_waits_for_stability_then_takes_the_max_over_30_s() -> None:
    envelope = planned_envelope(PLANNED, 1.0)
    state = TunerState({"a": 4, "b": 1}, last_action_at=104.0)
    # 14 s after the scale-up: under every envelope window, but not yet stable.
    assert tune(118.0, trace(), [A, B], envelope, state) == ([], state)
    # 21 s after: stable, but the 5 s window (100, 105] still holds the burst (34 arrivals: 6.8 q/s -> 4).
    assert tune(125.0, trace(), [A, B], envelope, state) == ([], state)
    # 31 s after: every 5 s window of the last 30 s runs at 2 q/s: a to ⌈2/(4·0.5)⌉ = 1; b stays at 1.
    actions, after = tune(135.0, trace(), [A, B], envelope, state)
    assert [(x.stage, x.replicas_from, x.replicas_to) for x in actions] == [("a", 4, 1)]
    assert "2.0 q/s" in actions[0].reason and after.last_action_at == 135.0


def test_the_loop_spreads_each_ticks_count_of_arrivals_evenly_inside_it() -> None:
    from collections import deque

    from services.planner.loops.pipeline_tuner import arrivals_from

    counts = deque([(0.0, 10), (1.0, 14), (2.0, 14), (3.0, 16)])
    np.testing.assert_allclose(arrivals_from(counts), [0.25, 0.5, 0.75, 1.0, 2.5, 3.0])
