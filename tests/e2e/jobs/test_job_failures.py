"""Offline jobs under failure: a killed jobs worker, a killed executor, a restarted Redis that also lost
the queued chunk messages — each finishing with exactly the right rows, none lost and none duplicated;
and online queries that keep succeeding while a job runs, the throttle pausing the job meanwhile."""

from __future__ import annotations

import threading
import time
from typing import Any

import httpx
import numpy as np
import pytest

from infaas.core.credentials import INTERNAL_HEADER
from infaas_cli.demo_models import DemoModel
from tests.e2e.jobs.helpers import (
    CHUNK_ROWS,
    MODEL,
    JobsSuite,
    check_exact_result,
    job_input,
    npy,
    submit,
    wait_for,
)

pytestmark = pytest.mark.e2e


def _crash_mid_job(js: JobsSuite, x: np.ndarray, crash: Any) -> dict[str, Any]:
    with js.client() as client:
        job = submit(client, npy(x)).json()
        wait_for(client, job["id"], until=lambda j: j["rows_done"] >= 2 * CHUNK_ROWS)
        crash()
        return wait_for(
            client, job["id"], until=lambda j: j["state"] in ("succeeded", "failed"), timeout_s=180
        )


def test_a_jobs_worker_killed_mid_job_loses_and_duplicates_nothing(
    jobs_suite: JobsSuite, demo_models: list[DemoModel]
) -> None:
    x = job_input(demo_models[1], 30_000, seed=2)

    def crash() -> None:
        jobs_suite.restart("jobs")

    check_exact_result(jobs_suite, _crash_mid_job(jobs_suite, x, crash), x)


def test_an_executor_killed_mid_job_loses_and_duplicates_nothing(
    jobs_suite: JobsSuite, demo_models: list[DemoModel]
) -> None:
    x = job_input(demo_models[1], 30_000, seed=3)

    def crash() -> None:
        for name in ("executor", "executor-2"):
            jobs_suite.restart(name)

    job = _crash_mid_job(jobs_suite, x, crash)
    check_exact_result(jobs_suite, job, x)


def test_one_executor_killed_mid_job_fails_over_to_the_other_losing_and_duplicating_nothing(
    jobs_suite: JobsSuite, demo_models: list[DemoModel]
) -> None:
    """Only one executor dies (declared failed from its pulses or its dropped push connection); the
    chunks it was computing go to the survivor, and each chunk's rows are still recorded once."""
    x = job_input(demo_models[1], 30_000, seed=5)
    try:
        job = _crash_mid_job(jobs_suite, x, lambda: jobs_suite.kill("executor"))
        check_exact_result(jobs_suite, job, x)
    finally:
        jobs_suite.restart("executor")  # the package's later tests expect both


def test_online_queries_succeed_alongside_a_job_which_pauses_while_they_load_the_workers(
    jobs_suite: JobsSuite, demo_models: list[DemoModel]
) -> None:
    # Large online batches, so that a few clients make the workers measurably busy.
    rows = job_input(demo_models[1], 512, seed=9).tolist()
    x = job_input(demo_models[1], 20_000, seed=4)
    stop = threading.Event()
    answers: list[int] = []
    refusals: list[str] = []  # the first bodies of non-200 answers, for the assertion's message

    def online() -> None:
        with jobs_suite.client() as client:
            while not stop.is_set():
                answer = client.post(f"/v1/models/{MODEL}/infer", json={"inputs": rows})
                answers.append(answer.status_code)
                if answer.status_code != 200:
                    refusals.append(answer.text[:300])

    planner = f"http://127.0.0.1:{jobs_suite.settings.planner_port}/internal/jobs/throttle"
    internal = {INTERNAL_HEADER: jobs_suite.settings.internal_key}
    # The throttle is per worker: an idle second executor would rightly run the job while the first is
    # busy. With one worker left, online load on it must pause the job outright.
    jobs_suite.kill("executor-2")
    deadline = time.monotonic() + 30
    while len(httpx.get(planner, headers=internal).json()["workers"]) != 1:
        assert time.monotonic() < deadline, "the killed executor's heartbeat never expired"
        time.sleep(0.2)
    # What executor-2 served moves to the survivor first (a failover: tests/e2e/test_executor_kill.py);
    # this test is about the job beside online load, so the load starts once a query is answered there.
    with jobs_suite.client() as client:
        deadline = time.monotonic() + 30
        while (first := client.post(f"/v1/models/{MODEL}/infer", json={"inputs": rows})).status_code != 200:
            assert time.monotonic() < deadline, f"the survivor never served the model: {first.text[:300]}"
            time.sleep(0.2)
    threads = [threading.Thread(target=online) for _ in range(3)]
    for t in threads:
        t.start()
    try:
        deadline = time.monotonic() + 30
        while not (throttle := httpx.get(planner, headers=internal).json())["paused"]:
            assert time.monotonic() < deadline, f"online load never paused jobs: {throttle}"
            time.sleep(0.1)
        with jobs_suite.client() as client:
            job = submit(client, npy(x)).json()
            paused = wait_for(client, job["id"], until=lambda j: j["state"] == "paused", timeout_s=30)
    finally:
        stop.set()
        for t in threads:
            t.join()
    with jobs_suite.client() as client:
        done = wait_for(
            client, job["id"], until=lambda j: j["state"] in ("succeeded", "failed"), timeout_s=180
        )
    jobs_suite.restart("executor-2")
    assert "utilization" in paused["reason"] or "profile" in paused["reason"] or "peak" in paused["reason"]
    assert answers and all(code == 200 for code in answers), (sorted(set(answers)), refusals[:3])
    check_exact_result(jobs_suite, done, x)


def test_redis_restarted_mid_job_losing_its_chunk_messages_loses_and_duplicates_nothing(
    jobs_suite: JobsSuite, demo_models: list[DemoModel]
) -> None:
    x = job_input(demo_models[1], 30_000, seed=5)

    def crash() -> None:
        jobs_suite.restart_redis(lose_job_messages=True)

    check_exact_result(jobs_suite, _crash_mid_job(jobs_suite, x, crash), x)
