"""Every line the Celery workers print is a JSON line: the profiler and jobs workers started as real
processes on a real Redis, each handed a task that fails (the registry it reports to is not running),
then stopped. No banner, no text warning, no plain traceback, on stdout or stderr."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from infaas.clients.profiler import PROFILE_MODEL, make_celery, profile_queue
from infaas.jobs.protocol import JOBS_QUEUE, RUN_CHUNK, make_jobs_celery
from infaas.processes.suite import free_port
from tests.polling import wait_for


def start(args: list[str], redis_url: str, var: Path, out: Path, err: Path) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "INFAAS_REDIS_URL": redis_url,
        "INFAAS_VAR_DIR": str(var),
        "INFAAS_REGISTRY_PORT": str(free_port()),  # nothing listens there: every task fails
        "INFAAS_PROFILER_METRICS_PORT": str(free_port()),
        "INFAAS_LOG_LEVEL": "info",
    }
    with out.open("wb") as stdout, err.open("wb") as stderr:
        return subprocess.Popen(
            [sys.executable, "-m", "infaas_cli.main", *args], env=env, stdout=stdout, stderr=stderr
        )


def json_lines(path: Path) -> list[dict[str, Any]]:
    """Every line of the file as JSON; a line that is not fails the test, naming it."""
    parsed = []
    for line in path.read_text().splitlines():
        try:
            entry = orjson.loads(line)
        except orjson.JSONDecodeError:
            pytest.fail(f"{path.name}: not a JSON line: {line!r}")
        assert isinstance(entry, dict) and {"ts", "level", "service", "msg"} <= entry.keys(), line
        parsed.append(entry)
    return parsed


@pytest.mark.parametrize("worker", ["profiler", "jobs"])
def test_a_worker_prints_json_lines_only(worker: str, redis_url: str, tmp_path: Path) -> None:
    out, err = tmp_path / "stdout", tmp_path / "stderr"
    proc = start(["serve", worker], redis_url, tmp_path / "var", out, err)
    try:
        wait_for(lambda: b" ready." in err.read_bytes(), what=f"the {worker} worker ready", timeout_s=60)
        if worker == "profiler":
            make_celery(redis_url).send_task(PROFILE_MODEL, args=[4242, 1], queue=profile_queue("cpu"))
        else:
            make_jobs_celery(redis_url).send_task(RUN_CHUNK, args=["nojob", 0], queue=JOBS_QUEUE)
        wait_for(
            lambda: any(e["level"] == "error" and "exc" in e for e in json_lines(err)),
            what="the failed task logged as an error with its traceback",
            timeout_s=60,
        )
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    lines = json_lines(out) + json_lines(err)
    assert {e["service"] for e in lines} == {worker}
    assert not any(
        "celery@" in e["msg"] or "[tasks]" in e["msg"] for e in lines
    )  # no banner, even as a record
