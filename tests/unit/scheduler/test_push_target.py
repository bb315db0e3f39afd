"""Which worker a pushed query goes to (`Sender.target`): the one with the fewest of this dispatcher's
queries waiting, ties in turn (not always the first listed, which left the other instances unused below
saturation); a coded query away from its coding group's other members. Pure choice: nothing is sent."""

from __future__ import annotations

from collections import Counter

import redis.asyncio as aioredis

from infaas.core.config import Settings
from infaas.policy.selection import Decision, Snapshot, WorkerView
from services.scheduler.replies import Replies
from services.scheduler.sending import SPREAD, Sender
from services.scheduler.snapshot import SnapshotCache
from tests.factories import variant_profile

VARIANT = variant_profile(id="m.a")
WORKERS = tuple(
    WorkerView(f"w{i}", "cpu", f"http://127.0.0.1:{i}", 2, 1 << 30, push=f"127.0.0.1:{100 + i}")
    for i in range(3)
)
DECISION = Decision(VARIANT, "active", None, "test")


def _sender_with(states: dict[str, str]) -> Sender:
    """A sender whose snapshot holds one instance of `m.a` per worker id in `states`, in that state."""
    client = aioredis.Redis.from_url("redis://127.0.0.1:1")  # never connected: nothing is sent
    cache = SnapshotCache(client, ttl_s=5)
    cache.snapshot = Snapshot(variants={"m.a": VARIANT}, workers=WORKERS)
    for worker_id, state in states.items():
        cache.note_instance(worker_id, "m.a", state)
    return Sender(
        redis=client,
        snapshot=cache,
        replies=Replies(client, cache, "replies"),
        settings=Settings(dispatch="push"),
    )


def _sender() -> Sender:
    """Every worker with an active instance of `m.a`."""
    return _sender_with({w.id: "active" for w in WORKERS})


def test_idle_workers_take_queries_in_turn() -> None:
    sender = _sender()
    chosen = Counter(w.id for w in (sender.target(DECISION) for _ in range(30)) if w is not None)
    assert chosen == {"w0": 10, "w1": 10, "w2": 10}


def test_the_least_loaded_worker_wins_over_the_turn() -> None:
    sender = _sender()
    assert sender.push is not None
    sender.push.outstanding[WORKERS[0].push] = 2
    sender.push.outstanding[WORKERS[2].push] = 1
    assert {sender.target(DECISION).id for _ in range(6)} == {"w1"}  # type: ignore[union-attr]
    sender.push.outstanding[WORKERS[1].push] = 1
    assert {sender.target(DECISION).id for _ in range(6)} == {"w1", "w2"}  # type: ignore[union-attr]


def test_a_coding_group_spreads_over_workers() -> None:
    sender = _sender()
    spread: set[str] = set()
    token = SPREAD.set(spread)
    try:
        group = [sender.target(DECISION) for _ in range(3)]
    finally:
        SPREAD.reset(token)
    assert len({w.id for w in group if w is not None}) == 3


def test_streams_dispatch_has_no_target() -> None:
    client = aioredis.Redis.from_url("redis://127.0.0.1:1")
    cache = SnapshotCache(client, ttl_s=5)
    cache.serving = {"m.a": WORKERS}
    sender = Sender(
        redis=client,
        snapshot=cache,
        replies=Replies(client, cache, "replies"),
        settings=Settings(dispatch="streams"),
    )
    assert sender.target(DECISION) is None


def test_a_query_queued_for_an_interfered_loading_or_overloaded_instance_is_pushed_to_it() -> None:
    # Selection queues a query for such an instance when no active one meets it; through the stream the
    # same instance would run it a Redis round trip each way later.
    for state in ("interfered", "loading", "overloaded"):
        target = _sender_with({"w1": state}).target(DECISION)
        assert target is not None and target.id == "w1", state


def test_an_active_instance_is_preferred_and_a_failed_one_never_pushed_to() -> None:
    sender = _sender_with({"w0": "interfered", "w1": "active", "w2": "loading"})
    assert {sender.target(DECISION).id for _ in range(6)} == {"w1"}  # type: ignore[union-attr]
    assert _sender_with({"w2": "failed"}).target(DECISION) is None  # no push target: the stream decides


def test_an_instance_that_runs_is_preferred_to_one_still_loading() -> None:
    sender = _sender_with({"w0": "loading", "w1": "interfered", "w2": "loading"})
    assert {sender.target(DECISION).id for _ in range(6)} == {"w1"}  # type: ignore[union-attr]
