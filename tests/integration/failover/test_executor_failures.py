"""Executors SIGKILLed under open-loop load, in both dispatch modes: the failure is declared once (from
the pulses, or the dropped push connection), every query is answered with its own rows' outputs and
nothing is left on the streams to be computed again, the recovery is measured (MTTR), and a restarted
executor rejoins as a new incarnation."""

from __future__ import annotations

import asyncio
import signal
from typing import Any

import numpy as np
import pytest
import redis

from infaas.clients.envelope import Query
from infaas.data import store
from infaas.policy.selection import Requirements
from services.planner.failure_watch import FailureWatch
from services.scheduler.dispatch import Dispatcher
from tests.integration.failover.conftest import FEATURES, SIGNATURE, FailCluster, failure_events, place
from tests.polling import async_wait_for, wait_for


def _query(x: np.ndarray, i: int) -> Query:
    return Query("model", "ranker", SIGNATURE, Requirements(), {"x": x}, f"q{i}", "shop", cache=False)


async def _offer_and_kill(
    cluster: FailCluster, dispatcher: Dispatcher, victim: str, *, n: int = 240, gap_s: float = 0.005
) -> tuple[list[np.ndarray], list[dict[str, Any] | Exception]]:
    """`n` queries of distinct rows, `gap_s` apart whatever the answers (open loop); `victim` is
    SIGKILLed once a third of them were sent. Returns the inputs and each query's answer or error."""
    rng = np.random.default_rng(3)
    xs = [rng.normal(size=(1 + i % 2, FEATURES)).astype(np.float32) for i in range(n)]
    results: list[dict[str, Any] | Exception] = [RuntimeError("not answered")] * n

    async def one(i: int) -> None:
        try:
            results[i] = (await dispatcher.infer(_query(xs[i], i)))._asdict()
        except Exception as exc:
            results[i] = exc

    tasks = []
    for i in range(n):
        tasks.append(asyncio.create_task(one(i)))
        if i == n // 3:
            cluster.suite.procs[victim].send_signal(signal.SIGKILL)
        await asyncio.sleep(gap_s)  # the offered rate: the scenario, not a wait
    await asyncio.gather(*tasks)
    return xs, results


def _check_answers(
    cluster: FailCluster, xs: list[np.ndarray], results: list[dict[str, Any] | Exception]
) -> None:
    failed = [r for r in results if isinstance(r, Exception)]
    assert not failed, f"{len(failed)} of {len(results)} queries failed: {failed[:3]}"
    for x, r in zip(xs, results, strict=True):
        assert isinstance(r, dict)
        got = np.asarray(r["outputs"]["scores"], dtype=np.float32)
        np.testing.assert_allclose(got, cluster.expected(x), atol=1e-5)  # its own rows, nobody else's


def _streams_empty(cluster: FailCluster, vid: str) -> bool:
    client = redis.Redis.from_url(cluster.settings.redis_url)
    try:
        pending = client.xpending(store.stream_key(vid), store.STREAM_GROUP)
        return int(pending["pending"]) == 0 and client.xlen(store.stream_key(vid)) == 0
    finally:
        client.close()


@pytest.mark.parametrize("dispatch_mode", ["push", "streams"])
async def test_sigkill_under_load_is_declared_once_and_loses_no_query(
    fail_cluster: FailCluster, watched: FailureWatch, dispatcher: Dispatcher, pg_url: str, dispatch_mode: str
) -> None:
    vid = f"ranker.{dispatch_mode}"
    await place(fail_cluster, dispatcher, vid, ("executor", "executor-2"))
    victim, survivor = fail_cluster.worker_id("executor"), fail_cluster.worker_id("executor-2")
    xs, results = await _offer_and_kill(fail_cluster, dispatcher, "executor")
    _check_answers(fail_cluster, xs, results)
    # Nothing the dead worker held is left on the stream to be served again later.
    assert _streams_empty(fail_cluster, vid)

    await async_wait_for(lambda: fail_cluster.notices, what="a failure notice")
    about_victim = [n for n in fail_cluster.notices if n.worker == victim]
    assert len(about_victim) == 1, f"declared {len(about_victim)} times: {about_victim}"
    notice = about_victim[0]
    assert notice.detector in ("planner", "scheduler") and notice.reason
    assert vid in notice.instances and notice.incarnation
    assert all(n.worker != survivor for n in fail_cluster.notices), "the survivor was declared failed"
    assert victim not in {w.id for w in dispatcher.snapshot.snapshot.workers}

    # MTTR: the first answer for the model from the survivor after the detection, published and recorded.
    await async_wait_for(lambda: fail_cluster.recoveries, what="a recovery")
    recovery = fail_cluster.recoveries[0]
    assert (recovery.worker, recovery.model, recovery.replacement) == (victim, "ranker", survivor)
    assert recovery.answered_at >= notice.detected_at
    with failure_events(pg_url) as events:

        def both() -> list[str]:
            got = sorted(
                r.action for r in events() if victim in (r.worker, (r.details or {}).get("failed_worker"))
            )
            return got if "recovered" in got else []

        actions = await async_wait_for(both, what="the failure's events")
        assert actions.count("declared") == 1 and actions.count("recovered") == 1

    # The supervisor's restart: a new incarnation under the same worker id rejoins every view.
    fail_cluster.suite.restart("executor")
    client = redis.Redis.from_url(fail_cluster.settings.redis_url)
    try:

        def rejoined() -> str:
            incarnation = client.hget(store.worker_key(victim), "incarnation")
            score = client.zscore(store.WORKERS, victim)
            return store.text(incarnation) if incarnation and score else ""

        new = wait_for(rejoined, what="the restarted executor's heartbeat", timeout_s=30, every_s=0.1)
        assert new != notice.incarnation
    finally:
        client.close()
    await async_wait_for(lambda: victim in watched.heard, what="its pulses heard again")
    assert len([n for n in fail_cluster.notices if n.worker == victim]) == 1


@pytest.mark.parametrize("dispatch_mode", ["streams"])
async def test_streams_last_instance_killed_its_queries_are_taken_back_and_sent_elsewhere(
    fail_cluster: FailCluster, watched: FailureWatch, dispatcher: Dispatcher, dispatch_mode: str
) -> None:
    """No survivor serves the variant: the dispatcher takes back what the dead consumer held and
    failover-loads the variant on the other worker; every query is answered within its deadline."""
    del watched, dispatch_mode
    vid = "ranker.alone"
    await place(fail_cluster, dispatcher, vid, ("executor",))
    xs, results = await _offer_and_kill(fail_cluster, dispatcher, "executor", n=150, gap_s=0.01)
    _check_answers(fail_cluster, xs, results)
    survivor = fail_cluster.worker_id("executor-2")
    assert {r["worker"] for r in results if isinstance(r, dict)} >= {survivor}
    assert _streams_empty(fail_cluster, vid)
    taken = [r for r in results if isinstance(r, dict) and "taken back" in r["reason"]]
    assert taken or any("was lost" in str(r["reason"]) for r in results if isinstance(r, dict)), (
        "no answer says it was sent again after the failure"
    )


async def test_the_watch_echoes_only_once_a_worker_goes_quiet_and_then_declares_it(
    fail_cluster: FailCluster, watched: FailureWatch, pg_url: str
) -> None:
    """While both executors pulse, their pulses prove the channel and the watch publishes (almost) no
    echo of its own; once one is SIGKILLed the echoes start, and the planner alone declares it (no
    dispatcher runs here, so no scheduler can)."""
    victim = fail_cluster.worker_id("executor")
    await async_wait_for(lambda: len(watched.heard) == 2, what="both executors' pulses")
    before, seconds = watched.echoes, 2.0
    await asyncio.sleep(seconds)  # the span observed, not a wait for a condition
    intervals = seconds / fail_cluster.settings.pulse_interval_s
    # Echoing every interval would be ~80 here; a pulse delayed past 1.5 intervals on a busy host
    # (a handful) makes a few.
    assert watched.echoes - before < intervals / 4, f"{watched.echoes - before} echoes in {intervals:.0f}"
    quiet = watched.echoes
    fail_cluster.suite.procs["executor"].send_signal(signal.SIGKILL)
    await async_wait_for(
        lambda: [n for n in fail_cluster.notices if n.worker == victim], what="the victim declared"
    )
    (notice,) = [n for n in fail_cluster.notices if n.worker == victim]
    assert notice.detector == "planner" and "no pulse" in notice.reason
    assert watched.echoes > quiet
    assert fail_cluster.worker_id("executor-2") not in {n.worker for n in fail_cluster.notices}
    # The declaration is recorded as an event too (and no write is left running when the test ends).
    with failure_events(pg_url) as events:
        (reason,) = await async_wait_for(
            lambda: [r.reason for r in events() if r.worker == victim and r.action == "declared"],
            what="the declaration's event",
        )
        assert "declared failed by the planner" in reason
