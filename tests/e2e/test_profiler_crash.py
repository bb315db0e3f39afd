"""A profiler SIGKILLed mid-profile on real processes: its lease expires, the registry's sweeper queues
the model again as a new attempt, the supervisor restarts the profiler, and the model becomes ready with
its variants; the recovery is an event that says why. A model deleted mid-profile is abandoned with a
log line, no traceback."""

from __future__ import annotations

import io
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np
import orjson
import pytest
import redis
from onnx import TensorProto, helper, numpy_helper

from infaas.clients.profiler import LEASE_PREFIX
from tests.e2e.conftest import RunningSuite, _settings, own_suite
from tests.polling import wait_for

pytestmark = pytest.mark.e2e


@pytest.fixture
def supervised(tmp_path: Path) -> Iterator[RunningSuite]:
    """Its own suite (SQLite + embedded Redis), supervised as `infaas run` does; profiling points long
    enough that a profile is still running when the test kills the profiler."""
    settings = _settings(tmp_path / "var")
    settings.profile_seconds_per_point = 0.3
    with own_suite(settings, supervised=True) as running:
        yield running


def sensor_model() -> tuple[bytes, bytes]:
    """A two-layer classifier of 6 `readings` into 3 classes (unlike the demo models' `x`), and a
    validation set labelled by the model itself."""
    rng = np.random.default_rng(7)
    w1, w2 = rng.normal(size=(6, 16)).astype(np.float32), rng.normal(size=(16, 3)).astype(np.float32)
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["readings", "w1"], ["h"]),
            helper.make_node("Relu", ["h"], ["r"]),
            helper.make_node("MatMul", ["r", "w2"], ["logits"]),
        ],
        "sensor",
        [helper.make_tensor_value_info("readings", TensorProto.FLOAT, [None, 6])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [None, 3])],
        [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(w2, "w2")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    x = rng.normal(size=(256, 6)).astype(np.float32)
    y = (np.maximum(x @ w1, 0) @ w2).argmax(axis=1).astype(np.int64)
    buffer = io.BytesIO()
    np.savez(buffer, x=x, y=y)
    return model.SerializeToString(), buffer.getvalue()


def register_sensor(admin: httpx.Client) -> None:
    assert admin.post("/v1/apps", json={"name": "plant"}).status_code == 201
    model_bytes, validation = sensor_model()
    registered = admin.post(
        "/v1/models",
        files={"file": ("sensor.onnx", model_bytes), "validation": ("v.npz", validation)},
        data={
            "metadata": orjson.dumps({"name": "sensor", "app": "plant", "task": "classification"}).decode()
        },
    )
    assert registered.status_code == 202, registered.text


def test_a_profiler_killed_mid_profile_is_recovered_and_the_model_becomes_ready(
    supervised: RunningSuite,
) -> None:
    suite, admin = supervised.suite, supervised.admin
    r = redis.Redis.from_url(supervised.settings.require_redis())
    register_sensor(admin)

    def leased() -> list[bytes]:
        status = admin.get("/v1/models/sensor").json()["status"]
        return list(r.scan_iter(match=f"{LEASE_PREFIX}*")) if status == "profiling" else []

    (key,) = wait_for(leased, what="sensor profiling under a lease", timeout_s=120)
    lease = orjson.loads(r.get(key) or b"{}")
    assert lease["attempt"] == 1
    os.kill(suite.procs["profiler"].pid, signal.SIGKILL)

    def settled() -> dict[str, object] | None:
        model: dict[str, object] = admin.get("/v1/models/sensor").json()
        return model if model["status"] in ("ready", "failed") else None

    model = wait_for(settled, what="sensor profiled again after the kill", timeout_s=180, every_s=0.25)
    assert model is not None and model["status"] == "ready", model
    variants = admin.get("/v1/models/sensor/variants").json()
    assert variants and all(v["status"] == "ready" for v in variants if v["hardware"] == "cpu")
    assert suite.restarts.get("profiler", 0) >= 1

    events = admin.get("/v1/events", params={"model": "sensor"}).json()["events"]
    recovered = [e for e in events if e["kind"] == "profiler" and e["action"] == "reprofile"]
    assert len(recovered) == 1, events
    assert recovered[0]["reason"].startswith(
        f"profiler {lease['worker']} lost the lease of model sensor (attempt 1); profiling again (attempt 2"
    )
    r.close()


def test_a_model_deleted_mid_profile_is_abandoned_with_a_log_line(supervised: RunningSuite) -> None:
    admin, log = supervised.admin, supervised.suite.log_dir / "profiler.log"
    r = redis.Redis.from_url(supervised.settings.require_redis())
    register_sensor(admin)

    def measuring() -> bool:  # generated and measuring: the profiler reads the model's files now
        model = admin.get("/v1/models/sensor").json()
        return bool(model["status"] == "profiling" and model["progress"]["profiling"] > 0)

    wait_for(measuring, what="sensor being measured", timeout_s=120, every_s=0.1)
    assert admin.delete("/v1/models/sensor").status_code == 204
    wait_for(
        lambda: "model 1 deleted, profile abandoned" in log.read_text(errors="replace"),
        what="the profiler abandoning the deleted model",
        timeout_s=60,
    )
    text = log.read_text(errors="replace")
    assert "Traceback" not in text, text[-3000:]
    wait_for(lambda: not list(r.scan_iter(match=f"{LEASE_PREFIX}*")), what="the lease dropped")
    assert not supervised.suite.dead() and supervised.suite.restarts.get("profiler", 0) == 0
    r.close()
