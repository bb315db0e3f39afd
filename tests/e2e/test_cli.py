"""The `infaas` CLI's client commands against the running suite, over HTTP like any other client."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner, Result

from infaas.runtimes.onnx_runtime import OnnxRuntime
from infaas_cli.demo_models import DemoModel
from infaas_cli.main import app as cli
from tests.e2e.conftest import RunningSuite

pytestmark = pytest.mark.e2e


def run(running: RunningSuite, key: str, *args: str) -> Result:
    # COLUMNS: wide enough that rich's tables do not wrap names.
    env = {"INFAAS_URL": running.url, "INFAAS_KEY": key, "COLUMNS": "220"}
    return CliRunner().invoke(cli, list(args), env=env)


def ok(result: Result) -> str:
    assert result.exit_code == 0, (result.exit_code, result.output, result.exception)
    return result.stdout


def as_json(result: Result) -> Any:
    return json.loads(ok(result))


def artifact_outputs(running: RunningSuite, variant: dict[str, Any], x: np.ndarray) -> np.ndarray:
    digest = variant["artifact_digest"]
    # With the worker's own session settings (threads, graph optimizations): a quantized variant's outputs
    # are steps of 1/255, and another summation order can land a value one step away.
    engine = OnnxRuntime(
        running.settings.resolved_artifact_dir / digest[:2] / digest,
        threads=variant["threads"],
        optimization=variant["optimization"],
    )
    engine.load()
    step = variant["max_batch"]  # in chunks, as the worker runs a query larger than the variant's max batch
    return np.concatenate(
        [next(iter(engine.run({"x": x[i : i + step]}).values())) for i in range(0, len(x), step)]
    )


def test_apps_models_query_and_workers_through_the_cli(
    running: RunningSuite, small_model: DemoModel, tmp_path: Path
) -> None:
    admin = running.settings.admin_key
    created = as_json(run(running, admin, "apps", "create", "cli-app", "--latency-ms", "80", "--json"))
    assert created["name"] == "cli-app" and created["default_latency_ms"] == 80
    key = created["api_key"]
    assert "cli-app" in ok(run(running, admin, "apps", "list"))
    updated = as_json(
        run(running, key, "apps", "update", "cli-app", "--prefer", "latency", "--no-cache", "--json")
    )
    assert (
        updated["prefer"] == "latency" and updated["cache"] is False and updated["default_latency_ms"] == 80
    )
    assert as_json(run(running, key, "apps", "show", "cli-app", "--json"))["prefer"] == "latency"
    assert (
        as_json(run(running, key, "apps", "update", "cli-app", "--warm-instances", "0", "--json"))[
            "warm_instances"
        ]
        == 0
    )
    assert run(running, key, "apps", "update", "cli-app", "--warm-instances", "-1").exit_code != 0

    registered = run(
        running,
        key,
        "models",
        "register",
        str(small_model.onnx_path),
        "--validation",
        str(small_model.validation_path),
        "--name",
        "cli-small",
        "--app",
        "cli-app",
        "--timeout",
        "300",
    )
    out = ok(registered)
    assert "registered cli-small" in out and "cli-small is ready" in out and "variants" in out
    assert as_json(run(running, key, "models", "show", "cli-small", "--json"))["status"] == "ready"
    assert [m["name"] for m in as_json(run(running, key, "models", "list", "--json"))] == ["cli-small"]

    variants = as_json(
        run(
            running,
            key,
            "models",
            "variants",
            "cli-small",
            "--status",
            "ready",
            "--sort",
            "accuracy",
            "--descending",
            "--json",
        )
    )
    accuracies = [v["accuracy"] for v in variants]
    assert variants and accuracies == sorted(accuracies, reverse=True)
    table = ok(run(running, key, "models", "variants", "cli-small", "--hardware", "cpu", "--batch", "4"))
    assert "p50 ms @b4" in table and variants[0]["id"] in table
    by_id = {v["id"]: v for v in variants}

    x = np.load(small_model.validation_path)["x"][450:453].astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    answer = as_json(run(running, key, "query", "cli-app", "-i", str(tmp_path / "x.npy"), "--json"))
    assert answer["model"] == "cli-small" and answer["variant"] in by_id
    np.testing.assert_allclose(
        np.asarray(answer["outputs"]["probabilities"]),
        artifact_outputs(running, by_id[answer["variant"]], x),
        rtol=1e-5,
        atol=1e-6,
    )
    (tmp_path / "x.json").write_text(json.dumps(x[:1].tolist()))
    pinned = next(v for v in variants if v["precision"] == "fp32")
    human = ok(
        run(
            running,
            key,
            "query",
            "cli-small",
            "--model",
            "-i",
            str(tmp_path / "x.json"),
            "--latency-ms",
            "500",
            "--variant",
            pinned["id"],
        )
    )
    expected_class = int(artifact_outputs(running, pinned, x[:1]).argmax())
    assert f"row 0: class {expected_class}" in human and pinned["id"] in human
    assert "SLO" in human and "why:" in human
    inline = as_json(
        run(running, key, "query", "cli-small", "-m", "-i", json.dumps(x[:2].tolist()), "--json")
    )
    assert np.asarray(inline["outputs"]["probabilities"]).shape == (2, 10)

    workers = as_json(run(running, admin, "workers", "--json"))
    assert len(workers) == 2 and all(w["live"] for w in workers)
    assert "cpu-" in ok(run(running, admin, "workers"))

    reprofiled = as_json(run(running, key, "models", "profile", "cli-small", "--timeout", "300", "--json"))
    assert reprofiled["status"] == "ready"
    assert as_json(run(running, key, "models", "delete", "cli-small", "--yes", "--json")) == {
        "deleted": "cli-small"
    }
    assert as_json(run(running, key, "models", "list", "--json")) == []


def test_cli_errors_say_what_the_gateway_said(running: RunningSuite, tmp_path: Path) -> None:
    admin = running.settings.admin_key
    missing = run(running, admin, "query", "no-such-app", "-i", "[[1.0]]")
    assert missing.exit_code == 1 and "404 not_found" in missing.stderr and "no-such-app" in missing.stderr
    as_json_error = run(running, admin, "models", "show", "no-such-model", "--json")
    assert as_json_error.exit_code == 1 and json.loads(as_json_error.stderr)["error"]["code"] == "not_found"
    unauthorized = run(running, "wrong-key", "apps", "list")
    assert unauthorized.exit_code == 1 and "401 unauthorized" in unauthorized.stderr
    bad_input = run(running, admin, "query", "x", "-i", "{not json")
    assert bad_input.exit_code == 2 and "neither a .npy/.npz/.json file nor JSON" in bad_input.output
    pickled = tmp_path / "p.npy"
    np.save(pickled, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    refused = run(running, admin, "query", "x", "-i", str(pickled))
    assert refused.exit_code == 2 and "without pickled objects" in refused.output
    unreachable = CliRunner().invoke(cli, ["apps", "list", "--url", "http://127.0.0.1:9", "--key", "k"])
    assert unreachable.exit_code == 1 and "cannot reach the gateway" in unreachable.stderr


def test_with_no_url_or_key_the_cli_finds_the_suite_by_its_own_settings(
    running: RunningSuite, tmp_path: Path
) -> None:
    """What `infaas run` leaves for the CLI: the gateway port in INFAAS_GATEWAY_PORT and the admin key in
    `<var>/admin.key`; `infaas models list` and `infaas status` use both, with no --url or --key."""
    (tmp_path / "admin.key").write_text(running.settings.admin_key + "\n")
    env = {
        "INFAAS_GATEWAY_PORT": str(running.settings.gateway_port),
        "INFAAS_VAR_DIR": str(tmp_path),
        "INFAAS_URL": None,
        "INFAAS_KEY": None,
        "INFAAS_ADMIN_KEY": None,
        "COLUMNS": "220",
    }
    models = CliRunner().invoke(cli, ["models", "list", "--json"], env=env)
    assert isinstance(as_json(models), list)
    assert "workers" in as_json(CliRunner().invoke(cli, ["status", "--json"], env=env))
    (tmp_path / "admin.key").write_text("adm_not_the_key\n")  # the file really is what was used
    refused = CliRunner().invoke(cli, ["models", "list", "--json"], env=env)
    assert refused.exit_code != 0 and "unknown API key" in refused.output
