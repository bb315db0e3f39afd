"""The lease sweeper's policy: wait, profile again, or give up, from a frozen snapshot."""

from __future__ import annotations

from dataclasses import replace

import pytest

from services.registry.profiles.recovery import ProfileSnapshot, RecoveryConfig, decide

CONFIG = RecoveryConfig(grace_s=5.0, queued_max_s=600.0, max_attempts=3)
CLAIMED = ProfileSnapshot(
    model="wine",
    status="profiling",
    attempt=4,
    tries=1,
    worker="profiler-cpu@h:8085",
    since_s=30.0,
    leased=False,
    missing_s=6.0,
    profilers_busy=False,
)
QUEUED = replace(CLAIMED, worker=None, missing_s=0.0, since_s=700.0)


def test_a_claimed_attempt_whose_lease_is_gone_past_the_grace_is_profiled_again() -> None:
    decision = decide(CLAIMED, CONFIG)
    assert decision.action == "requeue"
    assert decision.reason == (
        "profiler profiler-cpu@h:8085 lost the lease of model wine (attempt 4); "
        "profiling again (attempt 5, try 2 of 3)"
    )


def test_a_lease_missing_within_the_grace_waits_for_the_next_renewal() -> None:
    # Redis restarted empty: the live profiler re-creates its lease at its next renewal.
    decision = decide(replace(CLAIMED, missing_s=4.9), CONFIG)
    assert decision.action == "wait"
    assert "grace" in decision.reason


def test_a_live_lease_or_a_settled_model_is_left_alone() -> None:
    assert decide(replace(CLAIMED, leased=True), CONFIG).action == "wait"
    for status in ("ready", "failed"):
        assert decide(replace(CLAIMED, status=status), CONFIG).action == "wait"


def test_the_last_attempt_lost_gives_up_with_the_reason() -> None:
    decision = decide(replace(CLAIMED, tries=3), CONFIG)
    assert decision.action == "fail"
    assert decision.reason.endswith("gave up after 3 attempts")
    assert "lost the lease of model wine (attempt 4)" in decision.reason


def test_a_queued_attempt_is_not_dead_while_young_or_while_profilers_are_busy() -> None:
    assert decide(replace(QUEUED, since_s=599.0), CONFIG).action == "wait"
    behind = decide(replace(QUEUED, profilers_busy=True), CONFIG)
    assert behind.action == "wait" and "behind" in behind.reason
    # The queued state never looks dead because a lease is missing: it has none yet.
    assert decide(replace(QUEUED, since_s=10.0, missing_s=100.0), CONFIG).action == "wait"


@pytest.mark.parametrize(("tries", "action"), [(1, "requeue"), (3, "fail")])
def test_a_queued_attempt_nobody_took_while_profilers_idle_is_lost(tries: int, action: str) -> None:
    decision = decide(replace(QUEUED, tries=tries), CONFIG)
    assert decision.action == action
    assert "no profiler took model wine (attempt 4) in 700 s" in decision.reason
