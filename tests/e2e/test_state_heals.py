"""State that heals, on real processes: Redis restarted empty or down for a few seconds, the registry
SIGKILLed, an executor gone. Queries a live worker can answer keep being answered; what cannot be
answered is a 503 with `Retry-After`; a 401 challenges for a bearer key.

In push mode (the default) a query needs Redis only for what the scheduler does not hold in memory: a
cold load (the executor reads the variant's profile from Redis) and the stream fallback when no worker
takes pushed queries. The scheduler's snapshot, the push connection and the answer do not touch it."""

from __future__ import annotations

import os
import shutil
import signal
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import numpy as np
import orjson
import pytest
import redis
from onnx import TensorProto, helper, numpy_helper

from infaas.data import store
from infaas.processes.suite import REDIS, Suite
from infaas_cli.launcher import start_suite
from tests.e2e.conftest import RunningSuite, _settings
from tests.polling import wait_for

pytestmark = pytest.mark.e2e

MODEL, APP = "linear-heal", "lab"
HEARTBEAT_TTL_S = 3.0  # short, so a blip of a few seconds outlives the heartbeat keys


def linear_model(directory: Path) -> tuple[Path, Path]:
    """A linear classifier over 5 features into 3 classes (nothing like the demo MLP and CNN), with a
    validation set it labels itself."""
    rng = np.random.default_rng(7)
    weights = rng.normal(size=(5, 3)).astype(np.float32)
    bias = rng.normal(size=3).astype(np.float32)
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["x", "weights"], ["scores"]),
            helper.make_node("Add", ["scores", "bias"], ["logits"]),
        ],
        "linear",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 5])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [None, 3])],
        initializer=[numpy_helper.from_array(weights, "weights"), numpy_helper.from_array(bias, "bias")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    x = rng.normal(size=(64, 5)).astype(np.float32)
    onnx_path, npz_path = directory / "linear.onnx", directory / "linear.npz"
    onnx_path.write_bytes(model.SerializeToString())
    np.savez(npz_path, x=x, y=np.argmax(x @ weights + bias, axis=1).astype(np.int64))
    return onnx_path, npz_path


@dataclass
class Healing:
    running: RunningSuite
    key: str
    body: dict[str, object]

    @property
    def suite(self) -> Suite:
        return self.running.suite

    def redis(self) -> redis.Redis:
        return redis.Redis.from_url(self.running.settings.redis_url)

    def query(self, key: str | None = None) -> httpx.Response:
        with self.running.client(key or self.key) as client:
            return client.post(f"/v1/models/{MODEL}/infer", json=self.body)


@pytest.fixture(scope="module")
def healing(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Healing]:
    """Its own suite (SQLite + embedded Redis, two executors), whose Redis and registry these tests stop;
    the gateway trusts a cached key for a second only, so a registry outage needs stale data at once."""
    var = tmp_path_factory.mktemp("heal")
    settings = _settings(var / "var", auth_cache_ttl_s=1.0, heartbeat_ttl_s=HEARTBEAT_TTL_S)
    suite = start_suite(settings)
    url = f"http://127.0.0.1:{settings.gateway_port}"
    admin = httpx.Client(base_url=url, headers={"Authorization": f"Bearer {settings.admin_key}"}, timeout=60)
    try:
        key = admin.post("/v1/apps", json={"name": APP}).json()["api_key"]
        onnx_path, npz_path = linear_model(var)
        response = admin.post(
            "/v1/models",
            files={
                "file": ("linear.onnx", onnx_path.read_bytes()),
                "validation": ("v.npz", npz_path.read_bytes()),
            },
            data={"metadata": orjson.dumps({"name": MODEL, "app": APP, "task": "classification"}).decode()},
        )
        assert response.status_code == 202, response.text
        running = RunningSuite(suite=suite, settings=settings, url=url, admin=admin)
        assert running.wait_ready(MODEL)["status"] == "ready"
        healing = Healing(running, key, {"inputs": np.load(npz_path)["x"][:2].tolist()})
        first = healing.query()
        assert first.status_code == 200, first.text  # loads an instance: later queries are pushed to it
        yield healing
    finally:
        admin.close()
        suite.stop()


def stop_redis(healing: Healing, *, empty: bool) -> None:
    """Stop the embedded Redis; `empty`: and delete its append-only file, so it restarts with nothing."""
    proc = healing.suite.redis_proc
    assert proc is not None
    proc.terminate()
    proc.wait(timeout=10)
    if empty:
        data = healing.running.settings.var_dir / "redis"
        for path in data.iterdir():
            if path.name != "auth.conf":  # its password file stays: only the data goes
                if path.is_dir():
                    shutil.rmtree(path)
                else:
                    path.unlink()


def start_redis(healing: Healing) -> None:
    healing.suite.restart(REDIS)

    def answers() -> bool:
        try:
            with healing.redis() as client:
                return bool(client.ping())
        except redis.ConnectionError:
            return False

    wait_for(answers, what="Redis answers again", timeout_s=15)


def refused_for_no_worker(response: httpx.Response) -> bool:
    return response.status_code == 503 and "no live worker" in response.text


def test_redis_restarted_empty_is_republished_and_queries_recover(healing: Healing) -> None:
    with healing.redis() as client:
        published = sorted(store.text(v) for v in client.smembers(store.VARIANTS))
    assert published
    stop_redis(healing, empty=True)
    statuses = [healing.query().status_code]  # while Redis is down: the pushed path does not need it
    start_redis(healing)
    with healing.redis() as client:
        wait_for(lambda: client.exists(store.PUBLISHED), what="the registry republished", timeout_s=10)
        assert sorted(store.text(v) for v in client.smembers(store.VARIANTS)) == published
        # The executor heartbeats again, on its own reconnected client.
        wait_for(lambda: client.zcount(store.WORKERS, 1, "+inf"), what="a heartbeat", timeout_s=10)
    answers = [healing.query() for _ in range(20)]
    statuses += [a.status_code for a in answers]
    assert statuses == [200] * len(statuses), [a.text for a in answers if a.status_code != 200][:1]

    events = healing.running.admin.get("/v1/events", params={"kind": "registry"}).json()
    reasons = [e["reason"] for e in events["events"] if e["action"] == "republish"]
    assert any(
        r.startswith("Redis came back without the published state; republished 1 models") for r in reasons
    )


def test_a_redis_blip_longer_than_the_heartbeat_ttl_refuses_no_query_for_want_of_a_worker(
    healing: Healing,
) -> None:
    """Redis stops for longer than a heartbeat key lives and comes back with its data (the keys expired
    meanwhile): the scheduler keeps the workers it knew, so no query is refused 'no live worker'."""
    stop_redis(healing, empty=False)
    down_until = time.monotonic() + HEARTBEAT_TTL_S + 0.5
    answers = []
    while time.monotonic() < down_until:  # the outage's length, not synchronization: queries run all along
        answers.append(healing.query())
    start_redis(healing)
    with healing.redis() as client:
        wait_for(
            lambda: client.zcount(store.WORKERS, time.time() - 2, "+inf"), what="a heartbeat", timeout_s=10
        )
    answers += [healing.query() for _ in range(20)]
    failed = [(a.status_code, a.text) for a in answers if a.status_code != 200]
    assert not [a for a in answers if refused_for_no_worker(a)], failed
    assert all(a.status_code == 503 and a.headers.get("retry-after") for a in answers if a.status_code != 200)
    assert not failed, failed  # pushed to a loaded instance: Redis is not on this path at all


def test_with_the_registry_down_known_keys_are_served_from_stale_data_and_unknown_ones_get_503(
    healing: Healing,
) -> None:
    suite = healing.suite
    os.kill(suite.procs["registry"].pid, signal.SIGKILL)
    suite.procs["registry"].wait(timeout=10)

    def stale_for_a_while() -> bool:
        answer = healing.query()
        assert answer.status_code == 200, answer.text
        return float(answer.headers.get("x-infaas-stale-auth", 0)) >= 5  # well past the 1 s TTL

    wait_for(stale_for_a_while, what="queries answered on stale auth data", timeout_s=30, every_s=0.2)

    stranger = healing.query("inf_never_seen_" + "x" * 20)
    assert stranger.status_code == 503 and stranger.headers["retry-after"] == "1", stranger.text
    with healing.running.client("inf_never_seen_either") as client:
        for response in (
            client.get("/v1/apps"),  # a /v1 route through FastAPI
            client.post(f"/v2/models/{MODEL}/infer", json={"inputs": []}),  # Open Inference Protocol
        ):
            assert response.status_code == 503 and response.headers["retry-after"] == "1", response.text

    suite.restart("registry")
    suite.wait_healthy(("registry",))
    wait_for(
        lambda: "x-infaas-stale-auth" not in healing.query().headers, what="fresh auth again", timeout_s=10
    )


def test_with_the_registry_hung_known_keys_are_served_from_stale_data_and_fresh_once_it_answers(
    healing: Healing,
) -> None:
    """SIGSTOP: the registry's port still accepts connections, nothing answers. Every query is answered
    (the key, app and model caches serve what the registry last confirmed) until it wakes."""
    suite = healing.suite
    wait_for(
        lambda: "x-infaas-stale-auth" not in healing.query().headers, what="fresh auth first", timeout_s=10
    )
    os.kill(suite.procs["registry"].pid, signal.SIGSTOP)
    try:

        def stale_for_a_while() -> bool:
            answer = healing.query()
            assert answer.status_code == 200, answer.text
            return float(answer.headers.get("x-infaas-stale-auth", 0)) >= 3  # well past the 1 s TTL

        wait_for(stale_for_a_while, what="queries answered on stale auth data", timeout_s=30, every_s=0.2)
    finally:
        os.kill(suite.procs["registry"].pid, signal.SIGCONT)
    wait_for(
        lambda: "x-infaas-stale-auth" not in healing.query().headers, what="fresh auth again", timeout_s=15
    )


def test_every_401_challenges_for_a_bearer_key(healing: Healing) -> None:
    with httpx.Client(base_url=healing.running.url, timeout=30) as anonymous:
        for response in (
            anonymous.post(f"/v1/models/{MODEL}/infer", json=healing.body),  # the query lane
            anonymous.get("/v1/apps"),
            anonymous.post(f"/v2/models/{MODEL}/infer", json={"inputs": []}),
            anonymous.get(f"/v2/models/{MODEL}"),
        ):
            assert response.status_code == 401, response.text
            assert response.headers["www-authenticate"] == 'Bearer realm="infaas"'
            assert "error" in response.json()  # the JSON body as before


def test_no_live_worker_is_a_503_with_retry_after(healing: Healing) -> None:
    suite = healing.suite
    executors = ("executor", "executor-2")
    for name in executors:
        os.kill(suite.procs[name].pid, signal.SIGKILL)
        suite.procs[name].wait(timeout=10)
    try:
        answer = wait_for(
            lambda: (a := healing.query()).status_code != 200 and a, what="a refusal", timeout_s=30
        )
        assert answer.status_code == 503 and answer.headers["retry-after"] == "1", answer.text
    finally:
        for name in executors:
            suite.restart(name)
        suite.wait_healthy(executors)
    wait_for(lambda: healing.query().status_code == 200, what="served again", timeout_s=60, every_s=0.2)
