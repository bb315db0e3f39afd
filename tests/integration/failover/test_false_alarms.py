"""A live executor declared failed (a false alarm: a stall longer than the pulse timeout, a push
connection cut while the process lives) under open-loop load, in both dispatch modes: every query is
still answered once with its own rows' outputs, nothing is left on the streams, the failure watch sees
it pulse again and records it `revived`, the worker is back in the store and the dispatcher's snapshot
under the same incarnation, and a real failure of it afterwards is declared again."""

from __future__ import annotations

import asyncio
import signal
import time
from typing import Any

import numpy as np
import pytest
import redis
import redis.asyncio as aioredis

from infaas.data import store
from infaas.data.failures import FailureNotice, declare_failure
from services.planner.failure_watch import FailureWatch
from services.scheduler.dispatch import Dispatcher
from tests.integration.failover.conftest import FEATURES, FailCluster, failure_events, place
from tests.integration.failover.test_executor_failures import _check_answers, _query, _streams_empty
from tests.polling import async_wait_for, wait_for


async def _offer_and_declare(
    cluster: FailCluster, dispatcher: Dispatcher, victim: str, incarnation: str, *, n: int = 240
) -> tuple[list[np.ndarray], list[dict[str, Any] | Exception]]:
    """`n` queries 5 ms apart (open loop); a third of the way in, the live `victim` is declared failed
    as a detector would on a false alarm."""
    rng = np.random.default_rng(4)
    xs = [rng.normal(size=(1 + i % 2, FEATURES)).astype(np.float32) for i in range(n)]
    results: list[dict[str, Any] | Exception] = [RuntimeError("not answered")] * n
    client = aioredis.Redis.from_url(cluster.settings.redis_url)

    async def one(i: int) -> None:
        try:
            results[i] = (await dispatcher.infer(_query(xs[i], i)))._asdict()
        except Exception as exc:
            results[i] = exc

    try:
        tasks = []
        for i in range(n):
            tasks.append(asyncio.create_task(one(i)))
            if i == n // 3:
                now = time.time()
                notice = FailureNotice(
                    worker=victim,
                    reason="a false alarm staged by the test",
                    detected_at=now,
                    last_seen_at=now - 0.05,
                    detector="planner",
                    incarnation=incarnation,
                )
                assert await declare_failure(client, notice) is not None
            await asyncio.sleep(0.005)  # the offered rate: the scenario, not a wait
        await asyncio.gather(*tasks)
    finally:
        await client.aclose()
    return xs, results


@pytest.mark.parametrize("dispatch_mode", ["push", "streams"])
async def test_a_live_worker_declared_failed_keeps_every_answer_and_rejoins(
    fail_cluster: FailCluster, watched: FailureWatch, dispatcher: Dispatcher, pg_url: str, dispatch_mode: str
) -> None:
    vid = f"ranker.{dispatch_mode}"
    await place(fail_cluster, dispatcher, vid, ("executor", "executor-2"))
    victim = fail_cluster.worker_id("executor")
    sync = redis.Redis.from_url(fail_cluster.settings.redis_url)
    try:
        incarnation = store.text(sync.hget(store.worker_key(victim), "incarnation") or b"")
        assert incarnation

        xs, results = await _offer_and_declare(fail_cluster, dispatcher, victim, incarnation)
        _check_answers(fail_cluster, xs, results)  # every query answered, each with its own rows
        assert _streams_empty(fail_cluster, vid)  # nothing left to be computed again later
        await async_wait_for(lambda: fail_cluster.notices, what="the staged notice")
        assert [n.worker for n in fail_cluster.notices] == [victim]

        # The watch hears it pulse under the declared incarnation: a false alarm, recorded as such.
        await async_wait_for(lambda: victim not in watched.declared, what="the watch to see it revive")
        await async_wait_for(lambda: victim in watched.heard, what="its pulses tracked again")
        with failure_events(pg_url) as events:
            rows = await async_wait_for(
                lambda: [r for r in events() if r.action == "revived" and r.worker == victim],
                what="the revived event",
            )
            assert "stalled, not died" in rows[0].reason

        # Its next heartbeat puts it back, same incarnation, and the dispatcher serves from it again.
        def back() -> bool:
            same = store.text(sync.hget(store.worker_key(victim), "incarnation") or b"") == incarnation
            return same and (sync.zscore(store.WORKERS, victim) or 0) > 0

        wait_for(back, what="the worker back in the store", timeout_s=10, every_s=0.05)

        async def in_snapshot() -> bool:
            await dispatcher.snapshot.refresh_live()
            snap = dispatcher.snapshot.snapshot
            return any(i.worker_id == victim and i.variant_id == vid for i in snap.instances)

        await async_wait_for(in_snapshot, what="its instance in the snapshot again", every_s=0.1)

        # A real failure of the same incarnation afterwards is declared: the false alarm's claim is gone.
        fail_cluster.suite.procs["executor"].send_signal(signal.SIGKILL)
        second = await async_wait_for(
            lambda: len([n for n in fail_cluster.notices if n.worker == victim]) >= 2, what="the real failure"
        )
        assert second
        real = [n for n in fail_cluster.notices if n.worker == victim][1]
        assert real.incarnation == incarnation and real.detector in ("planner", "scheduler")
    finally:
        sync.close()


async def _watch_with(cluster: FailCluster, *, hung_s: float) -> tuple[FailureWatch, aioredis.Redis]:
    client = aioredis.Redis.from_url(cluster.settings.redis_url)
    cfg = cluster.settings
    watch = FailureWatch(
        client,
        None,
        interval_s=cfg.pulse_interval_s,
        misses=cfg.pulse_misses,
        hung_s=hung_s,
        key=cfg.internal_key,
    )
    await watch.start()
    return watch, client


async def test_a_paused_executor_is_a_suspect_not_a_failure_and_a_hung_one_is_declared(
    fail_cluster: FailCluster,
) -> None:
    """SIGSTOP silences every pulse, as a long stall on a loaded machine does, but the kernel still
    accepts connections on its port: not declared while its silence is below `hung_s`; declared as hung
    once past it."""
    victim = fail_cluster.worker_id("executor")
    proc = fail_cluster.suite.procs["executor"]
    patient, client = await _watch_with(fail_cluster, hung_s=60.0)
    try:
        await async_wait_for(lambda: victim in patient.heard, what="its pulses")
        proc.send_signal(signal.SIGSTOP)
        try:
            # Silent for many pulse timeouts: probed, found alive, kept as a suspect.
            await async_wait_for(lambda: victim in patient.suspects, what="it suspected", timeout_s=10)
            before = patient.heard[victim]
            await async_wait_for(
                lambda: time.monotonic() - before > 20 * patient.timeout_s, what="a long stall", every_s=0.05
            )
        finally:
            proc.send_signal(signal.SIGCONT)
        await async_wait_for(lambda: patient.heard.get(victim, 0) > before, what="its pulses again")
        assert not patient.declared and sync_score(fail_cluster, victim) > 0  # never taken out of the store

        strict, other = await _watch_with(fail_cluster, hung_s=1.0)
        try:
            await async_wait_for(lambda: victim in strict.heard, what="its pulses heard by the strict watch")
            proc.send_signal(signal.SIGSTOP)
            try:
                (notice,) = await async_wait_for(
                    lambda: [n for n in strict.notices if n.worker == victim],
                    what="it declared",
                    timeout_s=15,
                )
                assert "hung" in notice.reason and notice.detector == "planner"
            finally:
                proc.send_signal(signal.SIGCONT)
        finally:
            await strict.stop()
            await other.aclose()
    finally:
        await patient.stop()
        await client.aclose()


async def test_a_paused_executor_whose_store_entry_expired_is_probed_at_the_address_it_had(
    fail_cluster: FailCluster,
) -> None:
    """Paused past its store entry's TTL (`heartbeat_ttl_s`; deleted here rather than waited for), the
    executor has no address in the store: the watch probes the one it read there before, finds the port
    accepting, and keeps it a suspect, where declaring it on silence alone would be a false alarm."""
    victim = fail_cluster.worker_id("executor")
    proc = fail_cluster.suite.procs["executor"]
    watch, client = await _watch_with(fail_cluster, hung_s=60.0)
    try:
        await async_wait_for(
            lambda: victim in watch.addresses, what="its address learned from its first pulse"
        )
        proc.send_signal(signal.SIGSTOP)
        try:
            last = watch.heard[victim]
            await client.delete(store.worker_key(victim))
            await async_wait_for(lambda: victim in watch.suspects, what="it suspected", timeout_s=10)
            assert not watch.declared and not watch.notices
        finally:
            proc.send_signal(signal.SIGCONT)
        await async_wait_for(lambda: watch.heard.get(victim, 0) > last, what="its pulses again")
        await async_wait_for(
            lambda: client_url(fail_cluster, victim), what="its next heartbeat back in the store"
        )
        assert not watch.declared and not watch.notices
    finally:
        proc.send_signal(signal.SIGCONT)
        await watch.stop()
        await client.aclose()


async def test_after_a_pause_of_the_whole_host_nobody_is_declared(fail_cluster: FailCluster) -> None:
    """Every process stopped at once (a frozen VM): the executors and this watch's loop, for longer than
    the executors' pulse listeners' entries live (5 s). When they go on, the watch's echo can come back
    before an executor's first pulse, its last one seconds old, and its port accepts: a suspect, not hung,
    and the executors have kept the watch's address, so their pulses come at once."""
    watch, client = await _watch_with(fail_cluster, hung_s=0.5)
    procs = [fail_cluster.suite.procs[n] for n in ("executor", "executor-2")]
    workers = {fail_cluster.worker_id(n) for n in ("executor", "executor-2")}
    try:
        await async_wait_for(lambda: workers <= set(watch.heard), what="both executors' pulses")
        for proc in procs:
            proc.send_signal(signal.SIGSTOP)
        time.sleep(6.0)  # this loop frozen too, the pulse listeners' entries expire meanwhile
        for proc in procs:
            proc.send_signal(signal.SIGCONT)
        resumed = time.monotonic()
        await async_wait_for(
            lambda: all(watch.heard.get(w, 0) > resumed for w in workers), what="pulses after the pause"
        )
        await asyncio.sleep(1.0)  # what a declaration would still need
        assert not watch.declared and not watch.notices
        assert all(sync_score(fail_cluster, w) > 0 for w in workers)
    finally:
        for proc in procs:
            proc.send_signal(signal.SIGCONT)
        await watch.stop()
        await client.aclose()


def sync_score(cluster: FailCluster, worker: str) -> float:
    client = redis.Redis.from_url(cluster.settings.redis_url)
    try:
        return float(client.zscore(store.WORKERS, worker) or 0)
    finally:
        client.close()


def client_url(cluster: FailCluster, worker: str) -> str:
    client = redis.Redis.from_url(cluster.settings.redis_url)
    try:
        return store.text(client.hget(store.worker_key(worker), "url") or b"")
    finally:
        client.close()
