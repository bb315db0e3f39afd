"""The model autoscaler carrying out its decisions on real executors: load rises → a replica appears;
load falls → it goes after T_v through a drain; an instance interfered for long enough moves to the
other worker; every query sent meanwhile is answered."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
import redis
import redis.asyncio as aioredis
from sqlalchemy import delete

from infaas.clients.executor import ExecutorClient
from infaas.clients.registry import AsyncRegistryClient
from infaas.core.errors import InfaasError, NotFound
from infaas.data import store
from infaas.data.db import EventRow, make_engine
from infaas.schemas.variants import VariantProfile
from services.executor.serving import MAX_CONCURRENCY
from services.planner.event_log import EventLog
from services.planner.loops.configure import SWITCH_EVERY_S, ConcurrencyTuner
from services.planner.loops.leader import LeaderLock
from services.planner.loops.model_autoscaler import ModelAutoscaler, WorkerRequests
from services.planner.loops.observe import LoadMeter, SloCache
from services.planner.policies.interference import InterferenceConfig
from services.planner.policies.snapshot import ClusterSnapshot, ModelDemand, ScalingConfig
from tests.integration.planner.conftest import Cluster, QuerySource
from tests.polling import async_wait_for

# Profiled as carrying 30 qps: 40 qps offered needs 42 with the 1.05 headroom → one more instance.
SATURATION = 30.0


async def _ticked_until(
    predicate: Callable[[], object], tick: Callable[[], Awaitable[None]], *, what: str, timeout_s: float
) -> None:
    """Tick every 0.5 s (the planner's loop, sped up) until `predicate` holds."""

    async def ticked() -> bool:
        await tick()
        return bool(predicate())

    await async_wait_for(ticked, what=what, timeout_s=timeout_s, every_s=0.5)


@contextlib.asynccontextmanager
async def autoscaler(
    cluster: Cluster, redis_url: str, *variants: VariantProfile, **options: Any
) -> AsyncIterator[tuple[ModelAutoscaler, EventLog, ExecutorClient, aioredis.Redis]]:
    """A greedy model autoscaler over the cluster's real executors, Redis and event log, with
    `variants` published and the event log emptied; everything closed afterwards."""
    sync = redis.Redis.from_url(redis_url)
    store.publish_variants(sync, list(variants))
    sync.close()
    client = aioredis.Redis.from_url(redis_url)
    executors = ExecutorClient(internal_key=cluster.settings.internal_key)
    registry = AsyncRegistryClient(
        cluster.settings.service_url("registry"), internal_key=cluster.settings.internal_key
    )
    engine = make_engine(cluster.settings.resolved_database_url)
    with engine.begin() as conn:
        conn.execute(delete(EventRow))
    events = EventLog(engine)
    scaler = ModelAutoscaler(
        redis=client,
        lock=LeaderLock(client),
        meter=LoadMeter(window_s=2.0),
        slos=SloCache(registry),
        executors=executors,
        events=events,
        policy="greedy",
        config=options.pop("config", ScalingConfig(min_scale_down_s=1.0, keep_loaded_s=0.0)),
        heartbeat_ttl_s=cluster.settings.heartbeat_ttl_s,
        requests=WorkerRequests(),
        **options,
    )
    try:
        yield scaler, events, executors, client
    finally:
        await scaler.settle()
        await scaler.lock.release()
        await executors.aclose()
        await registry.aclose()
        await client.aclose()
        engine.dispose()


def ticker(scaler: ModelAutoscaler) -> Callable[[], Awaitable[None]]:
    """One tick with what it decided carried out, for `_ticked_until`."""

    async def tick() -> None:
        await scaler.tick()
        await scaler.settle()

    return tick


def assert_all_answered(queries: QuerySource) -> None:
    missing = set(queries.sent) - set(queries.answers)
    assert not missing, f"{len(missing)} of {len(queries.sent)} queries never answered"
    errors = [a for a in queries.answers.values() if a.outcome != "answered"]
    assert not errors, errors[:3]


async def test_replicate_under_load_then_remove_after_t_v_without_losing_a_query(
    cluster: Cluster, queries: QuerySource, redis_url: str
) -> None:
    variant = cluster.profile("digits.a", saturation_qps=SATURATION, cost_per_query=1e-6)
    async with autoscaler(cluster, redis_url, variant) as (scaler, events, executors, _):
        await executors.load(cluster.executor_urls[0], variant.id)
        assert len(cluster.live_instances(variant.id)) <= 1

        tick = ticker(scaler)
        # Load rises to 40 qps: headroom 30/40 < 1.05 → replicate onto the other executor.
        load = asyncio.create_task(queries.send(variant.id, rate=40, seconds=8))
        await _ticked_until(
            lambda: len(cluster.live_instances(variant.id)) == 2, tick, what="a replica", timeout_s=20
        )
        replicate = await events.list(action="replicate")
        assert [e.outcome for e in replicate][:2] == ["done", "decided"]
        assert "headroom" in replicate[-1].reason and "< slack threshold 1.05" in replicate[-1].reason
        # the event carries the numbers behind the decision: offered load, capacity, what was observed
        numbers = replicate[-1].details["numbers"]  # type: ignore[index]
        assert numbers["offered_rows_per_s"] > numbers["capacity_rows_per_s"] / 1.05 > 0
        assert set(numbers) >= {"slo_ms", "predicted_mean_ms", "observed_served_rows_per_s", "missed_share"}
        await load

        # Load falls to 5 qps (30 qps still carried with headroom without the replica): it goes, but only
        # after the proposal has stood pending on an earlier tick (how long, T_v, is timed on a fake clock in
        # tests/unit/planner/test_autoscaler.py); queries keep flowing through the drain.
        ticks: list[str] = []

        async def noting_tick() -> None:
            decided = await scaler.tick()
            removed = any(d.action == "remove" for d in decided)
            ticks.append("remove" if removed else "pending" if scaler.pending else "")
            await scaler.settle()

        low = asyncio.create_task(queries.send(variant.id, rate=5, seconds=12))
        await _ticked_until(
            lambda: len(cluster.live_instances(variant.id)) == 1,
            noting_tick,
            what="the replica gone",
            timeout_s=20,
        )
        assert "pending" in ticks[: ticks.index("remove")], ticks
        await low
        removed = await events.list(action="remove")
        assert removed and removed[0].outcome == "done"
        assert "without one instance of digits.a" in removed[0].reason
        drained = removed[0].details["drained"]  # type: ignore[index]
        assert drained and drained[0]["variant"] == variant.id

        await queries.wait_answered()
        assert_all_answered(queries)
        assert len({a.worker for a in queries.answers.values()}) == 2  # both instances served


async def test_upgrade_to_a_higher_throughput_variant_drains_the_old_one_without_losing_a_query(
    cluster: Cluster, queries: QuerySource, redis_url: str
) -> None:
    # a carries 30 qps, b 200 qps, both cost the same per second (C = 3e-5 $/s). At 40 qps:
    # replicate a ×1 = C·(1 + 0.05) vs upgrade to b ×1 = C·(1 + 0.05) − C (a goes) → upgrade.
    a = cluster.profile("digits.a", saturation_qps=30.0, cost_per_query=1e-6)
    b = cluster.profile(
        "digits.b",
        saturation_qps=200.0,
        cost_per_query=1.5e-7,
        max_batch=4,
        latencies=((1, 0.2, 0.5), (4, 0.4, 0.8)),
    )
    async with autoscaler(cluster, redis_url, a, b) as (scaler, events, executors, client):
        await executors.load(cluster.executor_urls[0], a.id)

        tick = ticker(scaler)

        async def cheapest_active() -> str:
            """The scheduler's choice: b once it is active, else a while a has an instance, else b.
            (Never a variant with no instance: on a slow machine b's few batches can read as
            `interfered` against its made-up profile, and a has gone by then.)"""
            _, instances = await store.read_live(client, now=time.time(), ttl_s=3)
            states = {i.variant_id: i.state for i in instances}
            return a.id if states.get(b.id) != "active" and a.id in states else b.id

        load = asyncio.create_task(queries.send_routed(cheapest_active, rate=40, seconds=8))
        await _ticked_until(lambda: cluster.live_instances(b.id) != [], tick, what="b loaded", timeout_s=20)
        await _ticked_until(lambda: cluster.live_instances(a.id) == [], tick, what="a gone", timeout_s=10)
        upgrade = await events.list(action="upgrade")
        assert [e.outcome for e in upgrade][:2] == ["done", "decided"]
        assert "upgrade digits.b ×1" in upgrade[-1].reason
        await load
        await queries.wait_answered()
        assert_all_answered(queries)
        served = {x.variant for x in queries.answers.values()}
        assert served == {a.id, b.id}


async def test_an_interfered_instance_moves_to_the_less_loaded_worker_without_losing_a_query(
    cluster: Cluster, queries: QuerySource, redis_url: str
) -> None:
    # Profiled at 1 µs for a batch of 16,384 rows, its real batches are far above 2.5× its profile: it
    # reads `interfered` while it serves (what a noisy neighbour does to a truthful profile). A batch
    # counts as slowed only when it runs at least `min_excess_ms` (0.5 ms) over its profile: 4,096-row
    # batches take 0.3–0.6 ms on a quiet machine and often did not, nor did 8,192 rows (0.38 ms) on a
    # fast one; 12,288 rows take 0.6 ms and more.
    # Its capacity as the planner observes it (profile over the measured slowdown: ~50–150 k rows/s here,
    # depending on what else the machine runs) stays above the load (2 × 12,288 rows/s), so the scaling
    # policy itself has nothing to do: at 3 × 16,384 rows/s on a busy machine it rightly replicated,
    # and so it did at these 2 × 12,288 rows/s now and then (1 run in 6, alone and in CI) where its
    # batches took ~0.9 ms (17,830 rows/s), leaving the old instance beside the copy. Scaling up here
    # waits for a headroom under 0.5: this test is about the move.
    scaling = ScalingConfig(slack_threshold=0.5, min_scale_down_s=1.0, keep_loaded_s=0.0)
    slow = cluster.profile(
        "digits.a", saturation_qps=1e8, max_batch=16384, latencies=((16384, 0.001, 0.002),)
    )
    moves = InterferenceConfig(migrate_after_s=1.0)
    async with autoscaler(cluster, redis_url, slow, interference_config=moves, config=scaling) as (
        scaler,
        events,
        executors,
        client,
    ):
        await executors.load(cluster.executor_urls[0], slow.id)
        await async_wait_for(lambda: cluster.live_instances(slow.id), what="the instance live")
        (before,) = cluster.live_instances(slow.id)

        tick = ticker(scaler)
        load = asyncio.create_task(queries.send(slow.id, rate=2, seconds=10, rows=12288))
        await _ticked_until(
            lambda: cluster.live_instances(slow.id) not in ([], [before]), tick, what="a move", timeout_s=20
        )
        await async_wait_for(lambda: len(cluster.live_instances(slow.id)) == 1, what="the old instance gone")
        (after,) = cluster.live_instances(slow.id)
        assert after != before
        migrate = await events.list(action="migrate")
        assert [e.outcome for e in migrate][-2:] == ["done", "decided"]  # newest first
        decided = migrate[-1]
        assert decided.reason.startswith(f"{slow.id} on {before} interfered for ")
        assert f"re-placed on {after}" in decided.reason
        assert migrate[-2].details["drained"][0]["variant"] == slow.id  # type: ignore[index]
        await load
        await queries.wait_answered()
        assert_all_answered(queries)
        assert {a.worker for a in queries.answers.values()} == {before, after}  # both served


async def test_draining_the_last_instance_strands_no_query(
    cluster: Cluster, queries: QuerySource, redis_url: str
) -> None:
    """Queries go to the variant for as long as the metadata store lists an instance of it (what a
    scheduler's snapshot holds); the drain must serve every one of them, none may wait for an instance
    that no longer exists."""
    a = cluster.profile("digits.a", saturation_qps=500.0)
    sync = redis.Redis.from_url(redis_url)
    store.publish_variants(sync, [a])
    sync.close()
    client = aioredis.Redis.from_url(redis_url)
    executors = ExecutorClient(internal_key=cluster.settings.internal_key)
    try:
        await executors.load(cluster.executor_urls[0], a.id)
        await async_wait_for(lambda: cluster.live_instances(a.id), what="the instance live")

        async def listed() -> bool:
            _, instances = await store.read_live(client, now=time.time(), ttl_s=3)
            return any(i.variant_id == a.id for i in instances)

        async def send_while_listed() -> None:
            while await listed():
                await queries.send(a.id, rate=50, seconds=0.1)

        source = asyncio.create_task(send_while_listed())
        await async_wait_for(lambda: len(queries.answers) >= 60, what="queries flowing to the instance")
        drained = await executors.drain_instance(cluster.executor_urls[0], a.id)
        await source
        await queries.wait_answered()
        missing = set(queries.sent) - set(queries.answers)
        assert len(queries.sent) > 50
        assert not missing, f"{len(missing)} of {len(queries.sent)} queries stranded ({drained})"
    finally:
        await executors.aclose()
        await client.aclose()


async def test_a_worker_redis_lost_holds_scaling_until_its_heartbeat_ttl_has_passed(
    cluster: Cluster, queries: QuerySource, redis_url: str
) -> None:
    """Redis loses a live worker's keys (what a restart with no data does): the autoscaler's read then
    shows its instance gone, and planning on it would load a replacement while the instance still serves.
    It holds instead, with one event naming the worker, until the worker heartbeats again or its last
    heartbeat is a TTL old (here: the worker is paused, so the TTL passes and the replacement is loaded)."""
    variant = cluster.profile("digits.a", saturation_qps=SATURATION)
    async with autoscaler(cluster, redis_url, variant) as (scaler, events, executors, client):
        await executors.load(cluster.executor_urls[0], variant.id)
        await async_wait_for(lambda: cluster.live_instances(variant.id), what="the instance live")
        (lost,) = cluster.live_instances(variant.id)
        load = asyncio.create_task(queries.send(variant.id, rate=15, seconds=20))
        assert await scaler.tick() == []  # 15 qps on a 30 qps instance: nothing to do
        victim = cluster.suite.procs["executor"]
        victim.send_signal(signal.SIGSTOP)  # it must not heartbeat its keys back during the test
        try:
            await client.delete(store.worker_key(lost), store.instances_key(lost))
            await client.zrem(store.WORKERS, lost)
            lost_at = time.time()
            assert await scaler.tick() == []
            held = await events.list(action="hold")
            assert len(held) == 1 and lost in held[0].reason, [e.reason for e in held]
            decisions: list[Any] = []

            async def replaced() -> bool:
                decisions.extend(await scaler.tick())
                return any(variant.id in {vid for vid, _ in d.loads} for d in decisions)

            await async_wait_for(replaced, what="a replacement after the TTL", timeout_s=30, every_s=0.25)
            # Nothing before the TTL of its last heartbeat (which came at most one interval before `lost_at`).
            waited = time.time() - lost_at
            ttl = cluster.settings.heartbeat_ttl_s
            assert waited >= ttl - cluster.settings.heartbeat_interval_s, (waited, decisions)
            assert len(await events.list(action="hold")) == 1  # one event for the episode, not one a tick
        finally:
            victim.send_signal(signal.SIGCONT)
            await scaler.settle()
        await load
        await queries.wait_answered(timeout_s=30)
        assert_all_answered(queries)


async def test_an_instances_concurrency_follows_serfs_prediction_at_its_rate_with_events(
    cluster: Cluster, redis_url: str
) -> None:
    """The concurrency step (`loops/configure.py`) on a real executor: batch-1 requests of the variant
    take 10 ms alone and 12 ms two at once (its concurrency profile); under a 30 ms SLO one batch at a
    time carries up to 80 req/s (M/D/1), so at 70 req/s (84 with the 1.2 headroom) it switches to two,
    and back to one at 20. Each switch is an event with the predicted and observed numbers, the
    executor's heartbeat reports it, and an instance switches at most once per SWITCH_EVERY_S."""
    # Its batch profile says the same (10 ms, no batching: max batch 1), so batching at c = 1 carries
    # what M/D/1 does, 80 req/s, and the concurrency profile decides.
    variant = cluster.profile("digits.a", concurrency_ms=(10.0, 12.0), latencies=((1, 10.0, 11.0),))
    async with autoscaler(cluster, redis_url, variant) as (_, events, executors, client):
        await executors.load(cluster.executor_urls[0], variant.id)
        await async_wait_for(lambda: cluster.live_instances(variant.id), what="the instance live")
        clock = {"now": 1000.0}
        tuner = ConcurrencyTuner(executors=executors, events=events, clock=lambda: clock["now"])

        async def at(rate: float) -> list[tuple[str, str, int]]:
            workers, instances = await store.read_live(client, now=time.time(), ttl_s=5)
            demand = ModelDemand(model="digits", load_qps=rate, variants=(variant,), slo_ms=30.0)
            snapshot = ClusterSnapshot(
                now=time.time(), demands=(demand,), workers=workers, instances=instances
            )
            return await tuner.tick(snapshot, skip=set())

        async def reported(c: int) -> bool:
            _, instances = await store.read_live(client, now=time.time(), ttl_s=5)
            return [i.concurrency for i in instances if i.variant_id == variant.id] == [c]

        (worker,) = cluster.live_instances(variant.id)
        assert await at(20.0) == []  # one at a time already meets it
        assert await at(70.0) == [(worker, variant.id, 2)]
        await async_wait_for(lambda: reported(2), what="the heartbeat reporting concurrency 2")
        (up,) = await events.list(action="configure")
        assert up.outcome == "done" and up.worker == worker and "concurrency 1 → c=2" in up.reason
        numbers = up.details["numbers"]  # type: ignore[index]
        assert numbers["from"] == 1 and numbers["to"] == 2 and numbers["predicted_mean_ms_after"] <= 30
        assert numbers["predicted_mean_ms_before"] == pytest.approx(
            10 + 0.7 / (2 * 100 * 0.3) * 1000, abs=0.01
        )
        assert await at(20.0) == []  # within SWITCH_EVERY_S of the last switch: held
        clock["now"] += SWITCH_EVERY_S
        assert await at(20.0) == [(worker, variant.id, 1)]
        await async_wait_for(lambda: reported(1), what="the heartbeat reporting concurrency 1")
        assert len(await events.list(action="configure")) == 2
        # Bad input to the executor's route: a clear error, and the instance keeps its concurrency.
        for bad in (0, MAX_CONCURRENCY + 1):
            with pytest.raises(InfaasError) as refused:
                await executors.set_concurrency(cluster.executor_urls[0], variant.id, bad)
            assert refused.value.status == 422
        with pytest.raises(NotFound):
            await executors.set_concurrency(cluster.executor_urls[0], "digits.nothing", 2)
        assert await reported(1)
