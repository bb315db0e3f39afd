"""The offline-jobs suite's processes (`JobsSuite`), and the inputs, submission, waiting and exact expected
output of a job."""

from __future__ import annotations

import io
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import onnxruntime as ort
import orjson
import psycopg
import redis

from infaas.core.config import Settings
from infaas.processes.suite import Suite, embedded_redis_command, free_port
from infaas_cli.demo_models import DemoModel
from tests.conftest import libpq

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
    proc = subprocess.Popen(
        embedded_redis_command(port, data),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
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
