"""Interference mitigation (INFaaS §4.1): an instance interfered for `migrate_after_s` is re-placed on
the least utilized other worker of its kind that has room, lower utilization and no interference."""

from __future__ import annotations

from dataclasses import replace

import pytest

from infaas.policy.selection import InstanceView
from services.planner.policies.interference import InterferenceConfig, migrations
from services.planner.policies.snapshot import ClusterSnapshot
from tests.unit.planner.autoscale_fixtures import A, snapshot, worker

CONFIG = InterferenceConfig(migrate_after_s=10.0, lam=1.0)


def interfered(base: ClusterSnapshot, *keys: tuple[str, str]) -> ClusterSnapshot:
    """`base` with the instances (variant, worker) in `keys` interfered."""
    return replace(
        base,
        instances=tuple(
            replace(i, state="interfered") if (i.variant_id, i.worker_id) in keys else i
            for i in base.instances
        ),
    )


def test_an_instance_is_watched_first_then_moved_to_the_least_utilized_worker() -> None:
    # w1 (50 %) hosts an interfered m.a; w2 (10 %) and w3 (20 %) are free → w2
    first = migrations(interfered(snapshot(50, [("m.a", "w1")], now=100.0), ("m.a", "w1")), {}, CONFIG)
    assert first.decisions == () and first.since == {("m.a", "w1"): 100.0}
    early = migrations(
        interfered(snapshot(50, [("m.a", "w1")], now=109.0), ("m.a", "w1")), first.since, CONFIG
    )
    assert early.decisions == () and early.since == {("m.a", "w1"): 100.0}

    late = migrations(
        interfered(snapshot(50, [("m.a", "w1")], now=110.0), ("m.a", "w1")), first.since, CONFIG
    )
    (d,) = late.decisions
    assert d.action == "migrate" and d.model == "m"
    assert d.loads == (("m.a", "w2"),) and d.unloads == (("m.a", "w1"),)  # load first, then drain
    assert d.cost == pytest.approx(1e-4 * 1.0 * 0.1)  # C·λ·T_load: the move's loading time
    assert (
        "m.a on w1 interfered for 10 s" in d.reason
        and "re-placed on w2, utilization 10.0% < 50.0%" in d.reason
    )
    assert late.since == {}  # the episode is over: a new one starts the clock again
    assert late.moved == {"m.a": 110.0}


def test_a_moved_variant_is_not_moved_again_within_the_cooldown() -> None:
    # m.a now on w2 reads interfered too (every worker as noisy), and w3 is less utilized than w1 was
    workers = (worker("w1", 0.0), worker("w2", 0.5), worker("w3", 0.1))
    moved = {"m.a": 110.0}
    at = interfered(snapshot(50, [("m.a", "w2")], workers, now=169.0), ("m.a", "w2"))
    held = migrations(at, {("m.a", "w2"): 115.0}, CONFIG, moved=moved)
    assert held.decisions == () and held.moved == moved and held.since == {("m.a", "w2"): 115.0}
    after = migrations(replace(at, now=170.0), held.since, CONFIG, moved=held.moved)
    assert [d.loads for d in after.decisions] == [(("m.a", "w1"),)] and after.moved == {"m.a": 170.0}


def test_an_instance_that_recovers_is_forgotten() -> None:
    watched = migrations(interfered(snapshot(50, [("m.a", "w1")]), ("m.a", "w1")), {}, CONFIG)
    recovered = migrations(snapshot(50, [("m.a", "w1")], now=105.0), watched.since, CONFIG)
    assert recovered.since == {}
    again = migrations(
        interfered(snapshot(50, [("m.a", "w1")], now=111.0), ("m.a", "w1")), recovered.since, CONFIG
    )
    assert again.decisions == () and again.since == {("m.a", "w1"): 111.0}


def test_no_target_no_move() -> None:
    since = {("m.a", "w2"): 0.0}
    # w2 is the least utilized (10 %): nothing is less loaded than where it is
    assert migrations(interfered(snapshot(50, [("m.a", "w2")]), ("m.a", "w2")), since, CONFIG).decisions == ()
    # w3 (20 %) is less utilized than w1 (50 %) but interfered itself, w2 already hosts m.a
    base = snapshot(50, [("m.a", "w1"), ("m.a", "w2"), ("m.b", "w3")])
    result = migrations(interfered(base, ("m.a", "w1"), ("m.b", "w3")), {("m.a", "w1"): 0.0}, CONFIG)
    assert [d.loads for d in result.decisions] == []
    # no memory on the others, or they are being drained
    full = (worker("w1", 0.5), worker("w2", 0.1, memory=A.peak_memory_bytes - 1))
    assert (
        migrations(
            interfered(snapshot(50, [("m.a", "w1")], full), ("m.a", "w1")),
            since | {("m.a", "w1"): 0.0},
            CONFIG,
        ).decisions
        == ()
    )
    draining = replace(
        interfered(snapshot(50, [("m.a", "w1")]), ("m.a", "w1")), draining=frozenset({"w2", "w3"})
    )
    assert migrations(draining, {("m.a", "w1"): 0.0}, CONFIG).decisions == ()
    # another hardware kind is no target
    cuda = (worker("w1", 0.5), worker("g1", 0.0, hardware="cuda"))
    assert (
        migrations(
            interfered(snapshot(50, [("m.a", "w1")], cuda), ("m.a", "w1")), {("m.a", "w1"): 0.0}, CONFIG
        ).decisions
        == ()
    )


def test_one_move_per_model_and_none_for_a_model_another_decision_touches() -> None:
    base = interfered(snapshot(50, [("m.a", "w1"), ("m.b", "w1")]), ("m.a", "w1"), ("m.b", "w1"))
    since = {("m.a", "w1"): 0.0, ("m.b", "w1"): 0.0}
    result = migrations(base, since, CONFIG)
    assert [d.loads for d in result.decisions] == [(("m.a", "w2"),)]
    assert result.since == {("m.b", "w1"): 0.0}  # still watched: moved on a later tick
    skipped = migrations(base, since, CONFIG, skip_models={"m"})
    assert skipped.decisions == () and skipped.since == since


def test_migration_can_be_turned_off_and_other_states_are_not_moved() -> None:
    off = InterferenceConfig(migrate_after_s=0.0)
    assert (
        migrations(
            interfered(snapshot(50, [("m.a", "w1")]), ("m.a", "w1")), {("m.a", "w1"): 0.0}, off
        ).decisions
        == ()
    )
    overloaded = replace(snapshot(50, [("m.a", "w1")]), instances=(InstanceView("w1", "m.a", "overloaded"),))
    result = migrations(overloaded, {}, CONFIG)  # overload is the autoscaler's to answer (replicate)
    assert result.decisions == () and result.since == {}
