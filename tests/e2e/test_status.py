"""`infaas status` against the running suite: one frame, and the JSON behind it."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import orjson
import pytest

from infaas_cli.demo_models import DemoModel
from tests.e2e.conftest import RunningSuite

pytestmark = [pytest.mark.e2e, pytest.mark.parametrize("running", ["postgres"], indirect=True)]


def status(running: RunningSuite, key: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("INFAAS_")} | {"COLUMNS": "240"}
    return subprocess.run(
        [sys.executable, "-m", "infaas_cli.main", "status", "--url", running.url, "--key", key, *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )


def instances(running: RunningSuite) -> set[tuple[str, str, str]]:
    return {
        (w["id"], vid, state)
        for w in running.admin.get("/v1/workers").json()
        for vid, state in w["instances"].items()
    }


def test_status_shows_workers_instances_and_load(
    running: RunningSuite, shop: dict[str, str], demo_models: list[DemoModel]
) -> None:
    x = np.load(demo_models[0].validation_path)["x"]
    with running.client(shop["key"]) as client:
        answers = [
            client.post(
                "/v1/apps/shop/infer", json={"inputs": x[i : i + 1].tolist(), "latency_ms": 50}
            ).json()
            for i in range(30, 36)
        ]
    served = {a["variant"] for a in answers}
    workers = [w["id"] for w in running.admin.get("/v1/workers").json()]

    # The planner may load and unload instances meanwhile: compare with the API read around it.
    for _ in range(10):
        before = instances(running)
        as_json = status(running, running.settings.admin_key, "--json")
        assert as_json.returncode == 0, as_json.stderr
        body = orjson.loads(as_json.stdout)
        if before == instances(running):
            break
    assert sorted(w["id"] for w in body["workers"]) == sorted(workers)
    assert {(i["worker"], i["variant"], i["state"]) for i in body["instances"]} == before
    assert body["load"]["since_start"]["queries"] >= len(answers)
    assert served <= {v["variant"] for v in body["load"]["since_start"]["variants"]}

    frame = status(running, running.settings.admin_key, "--once")
    assert frame.returncode == 0, frame.stderr
    for name in [*workers, *served, "queries/s", "p99", "instances"]:
        assert name in frame.stdout, f"{name} missing from:\n{frame.stdout}"

    refused = status(running, shop["key"], "--once")
    assert refused.returncode != 0 and "403" in refused.stderr
