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


def _sender() -> Sender:
    client = aioredis.Redis.from_url("redis://127.0.0.1:1")  # never connected: nothing is sent
    cache = SnapshotCache(client, ttl_s=5)
    cache.snapshot = Snapshot(variants={"m.a": VARIANT}, workers=WORKERS)
    cache.serving = {"m.a": WORKERS}
    replies = Replies(client, cache, "replies")
    return Sender(redis=client, snapshot=cache, replies=replies, settings=Settings(dispatch="push"))


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
