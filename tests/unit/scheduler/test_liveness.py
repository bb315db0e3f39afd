"""Which workers a scheduler keeps live when their heartbeat vanishes (`services/scheduler/liveness.py`)."""

from __future__ import annotations

from infaas.policy.selection import InstanceView, WorkerView
from services.scheduler.liveness import Seen, flatten, merge

TTL = 5.0


def worker(wid: str) -> WorkerView:
    return WorkerView(id=wid, hardware="cpu", url=f"http://{wid}", cores=2, memory_bytes=1, push=f"{wid}:1")


def instance(wid: str, vid: str = "m.v") -> InstanceView:
    return InstanceView(worker_id=wid, variant_id=vid, state="active")


def known(*wids: str, at: float) -> dict[str, Seen]:
    return {w: Seen(worker(w), (instance(w),), at) for w in wids}


def test_what_is_read_is_live_with_its_instances() -> None:
    table = merge(
        {},
        (worker("a"),),
        (instance("a"), instance("a", "m.w")),
        departed=frozenset(),
        now=10.0,
        reachable_since=0.0,
        ttl_s=TTL,
    )
    assert list(table.workers) == ["a"]
    assert table.workers["a"] == Seen(worker("a"), (instance("a"), instance("a", "m.w")), 10.0)
    assert flatten(table.workers) == ((worker("a"),), (instance("a"), instance("a", "m.w")))


def test_a_worker_whose_heartbeat_vanished_is_kept_until_ttl_passes() -> None:
    before = known("a", "b", at=10.0)
    table = merge(
        before,
        (worker("a"),),
        (instance("a"),),
        departed=frozenset(),
        now=14.9,
        reachable_since=0.0,
        ttl_s=TTL,
    )
    assert set(table.workers) == {"a", "b"} and table.kept == ("b",) and table.dropped == ()
    assert table.workers["b"] == before["b"]  # its last known instances, as they were
    table = merge(before, (worker("a"),), (), departed=frozenset(), now=15.0, reachable_since=0.0, ttl_s=TTL)
    assert set(table.workers) == {"a"} and table.dropped == ("b",)


def test_time_while_redis_was_away_does_not_count() -> None:
    before = known("a", at=10.0)
    # Redis was unreachable from 11 to 30: the worker was last seen at 10, but the clock starts at 30.
    table = merge(before, (), (), departed=frozenset(), now=34.0, reachable_since=30.0, ttl_s=TTL)
    assert table.kept == ("a",)
    table = merge(before, (), (), departed=frozenset(), now=35.0, reachable_since=30.0, ttl_s=TTL)
    assert table.dropped == ("a",) and not table.workers


def test_a_worker_that_left_on_purpose_is_dropped_at_once() -> None:
    table = merge(
        known("a", at=10.0), (), (), departed=frozenset({"a"}), now=10.5, reachable_since=0.0, ttl_s=TTL
    )
    assert table.dropped == ("a",) and not table.workers


def test_a_worker_back_under_the_same_id_is_live_again_whatever_it_left_behind() -> None:
    table = merge(
        known("a", at=10.0),
        (worker("a"),),
        (),
        departed=frozenset({"a"}),
        now=11.0,
        reachable_since=0.0,
        ttl_s=TTL,
    )
    assert table.workers["a"] == Seen(worker("a"), (), 11.0)
