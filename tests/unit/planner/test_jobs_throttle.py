"""The offline-job throttle policy: pause above the utilization threshold or when online latency exceeds
its profile; resume only below the lower threshold; say why."""

from __future__ import annotations

from services.planner.policies.throttle import ThrottleThresholds, WorkerLoad, decide

T = ThrottleThresholds(pause_utilization=0.4, resume_utilization=0.3)


def w(wid: str, utilization: float, *states: str) -> WorkerLoad:
    return WorkerLoad(
        id=wid,
        hardware="cpu",
        utilization=utilization,
        instance_states=tuple((f"m.v{i}", s) for i, s in enumerate(states)),
    )


def test_quiet_workers_run_jobs() -> None:
    d = decide((w("a", 0.1), w("b", 0.39)), thresholds=T, previously_eligible=None)
    assert not d.paused and d.eligible == ("a", "b") and "spare capacity" in d.reason


def test_utilization_above_the_threshold_pauses_that_worker_and_all_busy_pauses_jobs() -> None:
    d = decide((w("a", 0.41), w("b", 0.2)), thresholds=T, previously_eligible=None)
    assert not d.paused and d.eligible == ("b",)
    assert dict(d.reasons)["a"] == "online utilization 41% above 40%"
    d = decide((w("a", 0.9), w("b", 0.5)), thresholds=T, previously_eligible=frozenset({"b"}))
    assert (
        d.paused and d.eligible == () and "online work needs every worker" in d.reason and "90%" in d.reason
    )


def test_resume_needs_the_lower_threshold() -> None:
    paused = decide((w("a", 0.5),), thresholds=T, previously_eligible=None)
    assert paused.paused
    between = decide((w("a", 0.35),), thresholds=T, previously_eligible=frozenset(paused.eligible))
    assert between.paused and "still above 30%" in between.reason  # no flapping around 40 %
    resumed = decide((w("a", 0.25),), thresholds=T, previously_eligible=frozenset(between.eligible))
    assert not resumed.paused and resumed.eligible == ("a",)
    # …and a running worker keeps running until the upper threshold.
    assert not decide((w("a", 0.35),), thresholds=T, previously_eligible=frozenset({"a"})).paused


def test_online_latency_above_profile_pauses_even_at_low_utilization() -> None:
    d = decide((w("a", 0.1, "active", "interfered"),), thresholds=T, previously_eligible=None)
    assert d.paused and "m.v1 is interfered (online latency above its profile)" in d.reason
    d = decide((w("a", 0.1, "overloaded"),), thresholds=T, previously_eligible=None)
    assert d.paused and "overloaded" in d.reason


def test_an_idle_worker_ignores_sticky_interfered_states() -> None:
    # The instance monitor keeps `interfered` until a batch shows otherwise; with no online work there
    # is no latency to protect, so jobs must not wait forever.
    d = decide((w("a", 0.0, "interfered"),), thresholds=T, previously_eligible=frozenset())
    assert not d.paused


def test_pause_states_and_thresholds_are_configurable() -> None:
    lenient = ThrottleThresholds(pause_utilization=0.9, resume_utilization=0.8, pause_states=frozenset())
    assert not decide((w("a", 0.6, "interfered"),), thresholds=lenient, previously_eligible=None).paused


def test_no_worker_means_paused() -> None:
    d = decide((), thresholds=T, previously_eligible=None)
    assert d.paused and d.reason == "no live worker"
