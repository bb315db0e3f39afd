"""The serving path through real processes: SLO-miss policies, the prediction cache, and many
concurrent queries spread over two executors with none lost, duplicated or mixed up."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import numpy as np
import onnxruntime as ort
import pytest

from infaas.core.credentials import INTERNAL_HEADER
from infaas_cli.demo_models import DemoModel
from tests.e2e.conftest import RunningSuite
from tests.e2e.wine import register_wine
from tests.polling import wait_for

pytestmark = pytest.mark.e2e


def patch_app(running: RunningSuite, **changes: Any) -> None:
    response = running.admin.patch("/v1/apps/shop", json=changes)
    assert response.status_code == 200, response.text


def query(running: RunningSuite, key: str, body: dict[str, Any]) -> httpx.Response:
    with running.client(key) as client:
        return client.post("/v1/models/small/infer", json=body)


@pytest.fixture
def shop_key(running: RunningSuite, shop: dict[str, str]) -> Any:
    yield shop["key"]
    patch_app(running, slo_policy="best_effort", cache=True)  # as the module's other tests expect


def test_each_slo_miss_policy_is_applied_and_said(
    running: RunningSuite, shop_key: str, small_model: DemoModel
) -> None:
    row = np.load(small_model.validation_path)["x"][:1].tolist()
    patch_app(running, slo_policy="error", cache=False)
    # An SLO the small MLP meets by its profile (tens of µs, more on a busy host) and the serving path
    # (~1 ms) cannot: just above the fastest profile, which a query below every profile is told.
    unmet = query(running, shop_key, {"inputs": row, "latency_ms": 0.001})
    assert unmet.status_code == 422, unmet.text
    fastest = unmet.json()["error"]["closest"]["best_latency_ms"]
    assert fastest < 0.3, fastest
    miss = {"inputs": row, "latency_ms": round(fastest * 1.05 + 0.001, 4)}

    error = query(running, shop_key, miss)
    assert error.status_code == 504, error.text
    body = error.json()["error"]
    assert body["code"] == "deadline_exceeded" and "SLO" in body["message"] and body["waited_ms"] > 0

    default_row = [0.1] * 10
    patch_app(running, slo_policy="default", default_output={"probabilities": default_row})
    default = query(running, shop_key, miss)
    assert default.status_code == 200, default.text
    answer = default.json()
    assert answer["default"] is True and answer["slo_met"] is False and "default output" in answer["reason"]
    assert answer["outputs"]["probabilities"] == [default_row]

    patch_app(running, slo_policy="best_effort")
    late = query(running, shop_key, miss)
    assert late.status_code == 200
    answer = late.json()
    assert answer["slo_met"] is False and answer["default"] is False
    assert np.argmax(answer["outputs"]["probabilities"][0]) == np.argmax(
        ort_row(small_model, np.asarray(row, dtype=np.float32))
    )


def ort_row(model: DemoModel, x: np.ndarray) -> np.ndarray:
    session = ort.InferenceSession(str(model.onnx_path), providers=["CPUExecutionProvider"])
    return np.asarray(session.run(None, {"x": x})[0])


def test_repeated_inputs_are_answered_from_the_cache(
    running: RunningSuite, shop_key: str, small_model: DemoModel
) -> None:
    patch_app(running, slo_policy="best_effort", cache=True)
    x = np.load(small_model.validation_path)["x"][100:102]
    first = query(running, shop_key, {"inputs": x.tolist()}).json()
    second = query(running, shop_key, {"inputs": x.tolist()}).json()
    assert first["cached"] is False and second["cached"] is True
    assert second["reason"] == "answered from the prediction cache" and second["worker"] == "cache"
    assert second["outputs"] == first["outputs"]
    other = query(running, shop_key, {"inputs": (x + 0.01).tolist()}).json()
    assert other["cached"] is False
    metrics = running.scheduler_metrics()
    assert 'infaas_cache_requests_total{result="hit"}' in metrics


def test_concurrent_queries_over_two_executors_lose_and_mix_up_nothing(
    running: RunningSuite, shop_key: str, small_model: DemoModel
) -> None:
    patch_app(running, cache=False)
    variants = running.admin.get("/v1/models/small/variants", params={"status": "ready"}).json()
    pinned = next(
        v["id"] for v in variants if v["max_batch"] == 64 and v["threads"] == 1 and v["precision"] == "fp32"
    )
    # The same variant active on both executors: the two consumers share its stream.
    base = running.settings.executor_port
    for port in (base, base + 1):
        loaded = httpx.post(
            f"http://127.0.0.1:{port}/v1/instances",
            json={"variant": pinned},
            headers={INTERNAL_HEADER: running.settings.internal_key},  # as the planner calls it
            timeout=60,
        )
        assert loaded.status_code == 200 and loaded.json()["state"] == "active", loaded.text
    x = np.load(small_model.validation_path)["x"][:300]
    expected = ort_row(small_model, x)
    # The dispatcher spreads a variant's queries over the workers its snapshot shows serving it; until
    # its next refresh after the second load it knows of one only (host noise can delay that past the
    # burst). A query at a time until both have answered, so the burst meets the state under test. First
    # both instances `active`: on a loaded host a new instance can read `interfered` for a while, and the
    # dispatcher rightly sends a burst to the active one only (one CI run saw every answer from one worker).
    wait_for(
        lambda: (
            [w["instances"].get(pinned) for w in running.admin.get("/v1/workers").json()].count("active") >= 2
        ),
        what=f"both instances of {pinned} active",
        timeout_s=30,
        every_s=0.1,
    )
    wait_until_both_serve(running, shop_key, x[0].tolist(), pinned)

    async def fire() -> list[httpx.Response]:
        limits = httpx.Limits(max_connections=64)
        headers = {"Authorization": f"Bearer {shop_key}"}
        async with httpx.AsyncClient(
            base_url=running.url, headers=headers, limits=limits, timeout=60
        ) as client:
            return await asyncio.gather(
                *(
                    client.post("/v1/models/small/infer", json={"inputs": [row.tolist()], "variant": pinned})
                    for row in x
                )
            )

    answers = asyncio.run(fire())
    assert [a.status_code for a in answers] == [200] * len(x)
    bodies = [a.json() for a in answers]
    assert len({b["request_id"] for b in bodies}) == len(x)  # one answer per query, none duplicated
    for i, body in enumerate(bodies):
        assert body["variant"] == pinned
        np.testing.assert_allclose(body["outputs"]["probabilities"][0], expected[i], rtol=1e-5, atol=1e-6)
    workers = {b["worker"] for b in bodies}
    assert len(workers) == 2, workers  # the burst was spread over both executors
    batched = [b for b in bodies if b["latency_ms"]["compute"] > 0]
    assert len(batched) == len(x)


def wait_until_both_serve(running: RunningSuite, key: str, row: list[float], variant: str) -> None:
    seen: set[str] = set()

    def both() -> bool:
        answer = query(running, key, {"inputs": [row], "variant": variant})
        assert answer.status_code == 200, answer.text
        seen.add(answer.json()["worker"])
        return len(seen) == 2

    wait_for(both, what=f"both executors answering for {variant}", timeout_s=30, every_s=0.05)


def test_a_cost_cap_is_enforced_and_said(
    running: RunningSuite, shop_key: str, small_model: DemoModel
) -> None:
    x = np.load(small_model.validation_path)["x"][:4].tolist()
    variants = running.admin.get("/v1/models/small/variants", params={"status": "ready"}).json()
    cheapest = min(v["cost_per_query"] for v in variants if v["cost_per_query"]) * 4
    answered = query(running, shop_key, {"inputs": x, "max_cost": 1.0})
    assert answered.status_code == 200, answered.text
    refused = query(running, shop_key, {"inputs": x, "max_cost": cheapest / 10})
    assert refused.status_code == 422
    error = refused.json()["error"]
    assert error["code"] == "requirements_unmet" and "cost <=" in error["message"]
    assert error["closest"]["min_cost"] > cheapest / 10


@pytest.fixture(scope="module")
def wine(running: RunningSuite, shop: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> str:
    """The two-input wine model (tests/e2e/wine.py) registered in app `shop`, profiled; its name."""
    with running.client(shop["key"]) as client:
        assert register_wine(client, tmp_path_factory.mktemp("wine"), app="shop").status_code == 202
    assert running.wait_ready("wine")["status"] == "ready"
    return "wine"


def test_a_pinned_variant_is_answered_by_that_variant_never_by_another_ones_cached_answer(
    running: RunningSuite, shop_key: str, wine: str
) -> None:
    patch_app(running, cache=True)
    variants = running.admin.get(f"/v1/models/{wine}/variants", params={"status": "ready"}).json()
    by_precision = {v["precision"]: v["id"] for v in variants}
    assert {"fp32", "int8-dynamic"} <= set(by_precision), by_precision
    row = {"chem": [[13.2, 1.8, 2.4, 16.0, 110.0, 2.8, 3.0]], "color": [[0.3, 2.3, 5.6, 1.0, 3.2, 1100.0]]}
    body: dict[str, Any] = {"inputs": row}
    with running.client(shop_key) as client:
        fp32 = client.post(f"/v1/models/{wine}/infer", json={**body, "variant": by_precision["fp32"]}).json()
        assert fp32["variant"] == by_precision["fp32"] and fp32["cached"] is False
        # The same input pinned to the int8 variant: the fp32 answer in the cache is not its answer.
        pinned = {**body, "variant": by_precision["int8-dynamic"]}
        int8 = client.post(f"/v1/models/{wine}/infer", json=pinned).json()
        assert int8["variant"] == by_precision["int8-dynamic"], int8
        assert int8["cached"] is False and int8["worker"] != "cache"
        again = client.post(f"/v1/models/{wine}/infer", json=pinned).json()
        assert again["cached"] is True and again["variant"] == by_precision["int8-dynamic"]
        # Unpinned and stating no accuracy (app not lossy): only a variant as accurate as the registered
        # model may answer, so the int8 answer now in the cache is not used; an fp32 one is, once cached.
        unpinned = client.post(f"/v1/models/{wine}/infer", json=body).json()
        assert unpinned["cached"] is False and "int8" not in unpinned["variant"], unpinned
        assert client.post(f"/v1/models/{wine}/infer", json=body).json()["cached"] is True
