"""`/metrics` in multiprocess mode: what several processes of one service counted, in one scrape."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from infaas.http.app import install_common
from infaas.metrics.exposition import MULTIPROC_ENV, prepare_multiproc_dir

# A process of the scheduler service: counts SLO misses, holds some queries in flight, and exits
# either marking itself dead (as `install_common` arranges) or as if it were still serving.
CHILD = """
import sys
from infaas.metrics.exposition import forget_at_exit
from services.scheduler import metrics
if sys.argv[3] == "exits":
    forget_at_exit()
metrics.SLO.labels("false").inc(int(sys.argv[1]))
metrics.PENDING.set(int(sys.argv[2]))
metrics.REQUEST_SECONDS.labels("ok").observe(0.003)
"""


def run_child(directory: Path, misses: int, pending: int, mode: str) -> None:
    env = {"PATH": "/usr/bin:/bin", MULTIPROC_ENV: str(directory)}
    subprocess.run(
        [sys.executable, "-c", CHILD, str(misses), str(pending), mode],
        env=env,
        check=True,
        cwd=Path(__file__).resolve().parents[3],
        timeout=60,
    )


def scrape(
    monkeypatch: pytest.MonkeyPatch, directory: Path
) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    monkeypatch.setenv(MULTIPROC_ENV, str(directory))
    app = FastAPI()
    install_common(app, service="multiproc", internal_key=None)
    with TestClient(app) as client:
        text = client.get("/metrics").text
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_two_processes_counts_add_up_in_one_scrape(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    directory = prepare_multiproc_dir(tmp_path / "metrics" / "scheduler")
    run_child(directory, misses=3, pending=2, mode="exits")
    run_child(directory, misses=4, pending=5, mode="serving")
    samples = scrape(monkeypatch, directory)
    assert samples[("infaas_scheduler_slo_total", (("met", "false"),))] == 7
    assert samples[("infaas_scheduler_request_duration_seconds_count", (("outcome", "ok"),))] == 2
    # livesum: only the process that is still serving holds queries in flight.
    assert samples[("infaas_scheduler_pending_requests", ())] == 5


def test_the_directory_starts_empty_on_every_start(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    directory = prepare_multiproc_dir(tmp_path / "gateway")
    run_child(directory, misses=3, pending=1, mode="serving")
    directory = prepare_multiproc_dir(tmp_path / "gateway")  # a new run of the service
    assert not list(directory.iterdir())
    run_child(directory, misses=1, pending=1, mode="serving")
    assert scrape(monkeypatch, directory)[("infaas_scheduler_slo_total", (("met", "false"),))] == 1
