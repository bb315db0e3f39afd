"""Offline jobs end to end: correct output (equal to ONNX Runtime run directly), the CLI, bad input that
leaves no job, and cancel."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from infaas_cli.demo_models import DemoModel
from infaas_cli.main import app
from tests import polling
from tests.e2e.jobs.helpers import (
    MODEL,
    JobsSuite,
    check_exact_result,
    expected_output,
    job_input,
    npy,
    submit,
    wait_for,
)

pytestmark = pytest.mark.e2e


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
