"""A real two-stage pipeline end to end: the wine classifier (two named inputs) feeding the grader (its
logits as `scores`) along a conditional edge, queried through the gateway. Outputs are checked against
running both stages by hand in ONNX Runtime; the answer says which variant ran each stage, its queue and
compute times and whether the end-to-end SLO was met. Bad pipelines are refused with nothing stored."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort
import pytest

from infaas.clients.executor import ExecutorClient
from infaas.clients.registry import AsyncRegistryClient
from infaas.schemas.pipelines import PipelinePlan
from tests.e2e.conftest import RunningSuite
from tests.e2e.wine import grader_model, register_grader, register_wine, wine_logits
from tests.polling import wait_for

pytestmark = pytest.mark.e2e

GO_ON = [0, 2]  # the classes whose rows the grader sees
# Model names of their own: model names are global, and other e2e modules register a "wine" too.
WINE, GRADER = "cellar-wine", "cellar-grader"


@pytest.fixture(scope="module")
def cellar(running: RunningSuite, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    created = running.admin.post("/v1/apps", json={"name": "cellar"})
    assert created.status_code == 201, created.text
    key = created.json()["api_key"]
    directory = tmp_path_factory.mktemp("cellar")
    with running.client(key) as client:
        assert register_wine(client, directory, app="cellar", name=WINE).status_code == 202
        assert register_grader(client, directory, app="cellar", name=GRADER).status_code == 202
    for name in (WINE, GRADER):
        assert running.wait_ready(name)["status"] == "ready"
    return {"key": key, "dir": directory}


def assert_as_accurate_as_registered(running: RunningSuite, model: str, variant: str) -> None:
    reference = running.admin.get(f"/v1/models/{model}").json()["reference_accuracy"]
    forms = {v["id"]: v for v in running.admin.get(f"/v1/models/{model}/variants").json()}
    assert reference is not None and forms[variant]["accuracy"] >= reference, (
        variant,
        forms[variant],
        reference,
    )


def spec(**changes: Any) -> dict[str, Any]:
    return {
        "name": "tasting",
        "app": "cellar",
        "slo_ms": 2000,
        "stages": [{"name": "wine", "model": WINE}, {"name": "grader", "model": GRADER}],
        "edges": [
            {
                "source": "wine",
                "target": "grader",
                "inputs": {"scores": "logits"},
                "when": {"output": "logits", "classes": GO_ON},
            }
        ],
        **changes,
    }


def test_pipeline_outputs_match_the_stages_run_by_hand(running: RunningSuite, cellar: dict[str, Any]) -> None:
    directory: Path = cellar["dir"]
    with running.client(cellar["key"]) as client:
        created = client.post("/v1/pipelines", json=spec())
        assert created.status_code == 201, created.text
        chem, color, _ = wine_logits(directory)
        rows = np.arange(0, 178, 7)  # every cultivar appears
        body = {"inputs": {"chem": chem[rows].tolist(), "color": color[rows].tolist()}}
        response = client.post("/v1/pipelines/tasting/infer", json=body)
    assert response.status_code == 200, response.text
    answer = response.json()

    wine = ort.InferenceSession(str(directory / "wine.onnx"), providers=["CPUExecutionProvider"])
    (logits,) = wine.run(None, {"chem": chem[rows], "color": color[rows]})
    grader_path, _ = grader_model(directory)
    grader = ort.InferenceSession(str(grader_path), providers=["CPUExecutionProvider"])
    on = np.flatnonzero(np.isin(logits.argmax(axis=1), GO_ON))
    assert 0 < on.size < rows.size  # the branch really splits this batch
    (strong,) = grader.run(None, {"scores": logits[on]})

    # No floor is stated anywhere and the app is not lossy: each stage is answered only by variants as
    # accurate as its model as registered (the wine model's int8 forms score about half of it: rows of
    # a wrong class would go on). Other graph levels may answer, hence a tolerance that still tells a
    # wrong row or a wrong routing apart.
    for stage in answer["stages"]:
        assert_as_accurate_as_registered(running, stage["model"], stage["variant"])
    np.testing.assert_allclose(answer["outputs"]["wine"]["logits"], logits, rtol=0.05, atol=0.05)
    assert answer["rows"]["wine"] == list(range(rows.size))
    assert answer["rows"]["grader"] == on.tolist()
    np.testing.assert_allclose(answer["outputs"]["grader"]["strong"], strong, rtol=0.05, atol=0.05)
    stages = {s["stage"]: s for s in answer["stages"]}
    assert [s["stage"] for s in answer["stages"]] == ["wine", "grader"]
    assert stages["wine"]["variant"].startswith(f"{WINE}.") and stages["grader"]["variant"].startswith(
        f"{GRADER}."
    )
    assert stages["grader"]["rows"] == on.size
    for stage in stages.values():
        assert stage["latency_ms"]["compute"] > 0 and stage["latency_ms"]["queue"] >= 0
    # One deadline: the second stage's budget is what the first left of the end-to-end SLO.
    assert stages["grader"]["budget_ms"] < stages["wine"]["budget_ms"] <= 2000
    assert answer["slo_ms"] == 2000 and answer["slo_met"] == (answer["latency_ms"]["total"] <= 2000)
    assert answer["latency_ms"]["total"] >= stages["wine"]["latency_ms"]["total"]


def test_bad_pipelines_are_refused_and_nothing_is_stored(
    running: RunningSuite, cellar: dict[str, Any]
) -> None:
    cycle = spec(
        name="loop",
        edges=[
            {"source": "wine", "target": "grader", "inputs": {"scores": "logits"}},
            {"source": "grader", "target": "wine", "inputs": {"chem": "strong", "color": "strong"}},
        ],
    )
    unknown = spec(
        name="ghost", stages=[{"name": "wine", "model": WINE}, {"name": "grader", "model": "nope"}]
    )
    with running.client(cellar["key"]) as client:
        for body, named in ((cycle, "cycle"), (unknown, "no model 'nope'")):
            response = client.post("/v1/pipelines", json=body)
            assert response.status_code == 422, response.text
            assert named in response.json()["error"]["message"]
        assert {p["name"] for p in client.get("/v1/pipelines").json()} <= {"tasting"}
        bad_input = client.post("/v1/pipelines/tasting/infer", json={"inputs": [[1.0, 2.0]]})
        assert bad_input.status_code == 422
        assert client.post("/v1/pipelines/nosuch/infer", json={"inputs": [[1.0]]}).status_code == 404


def test_a_plan_is_made_stored_applied_and_pins_the_queries(
    running: RunningSuite, cellar: dict[str, Any]
) -> None:
    chem, color, _ = wine_logits(cellar["dir"])
    body = {"inputs": {"chem": chem[:4].tolist(), "color": color[:4].tolist()}}
    with running.client(cellar["key"]) as client:
        if client.get("/v1/pipelines/tasting").status_code == 404:
            assert client.post("/v1/pipelines", json=spec()).status_code == 201
        response = client.post("/v1/pipelines/tasting/plan", json={"rate_qps": 20, "cv": 1})
        assert response.status_code == 200, response.text
        plan = response.json()["plan"]
        assert plan["feasible"] is True, plan
        assert plan["predicted_p99_ms"] <= 2000 and plan["cost_per_s"] > 0 and plan["rate_qps"] == 20
        planned = {s["stage"]: s for s in plan["stages"]}
        assert set(planned) == {"wine", "grader"}
        for stage in planned.values():
            assert stage["replicas"] >= 1 and stage["batch"] >= 1
        # Shown with the pipeline, and the planned variants answer its queries.
        assert client.get("/v1/pipelines/tasting").json()["plan"]["stages"] == plan["stages"]
        answer = client.post("/v1/pipelines/tasting/infer", json=body).json()
    assert answer["planned"] is True
    for stage in answer["stages"]:
        assert stage["variant"] == planned[stage["stage"]]["variant"]
        # No floor stated, the app not lossy: the plan keeps each model as accurate as registered (the
        # cheapest forms are the wine model's int8 ones, at about half its accuracy).
        assert_as_accurate_as_registered(running, stage["model"], stage["variant"])
    events = running.admin.get("/v1/events", params={"kind": "pipeline_planner"}).json()["events"]
    assert any(e["action"] == "plan" and "tasting" in e["reason"] for e in events), events
    with running.client(None) as stranger:
        assert stranger.post("/v1/pipelines/tasting/plan", json={"rate_qps": 20}).status_code == 401
    bad = running.admin.post("/v1/pipelines/tasting/plan", json={"rate_qps": -1})
    assert bad.status_code == 422


def test_a_pipeline_is_an_oip_model(running: RunningSuite, cellar: dict[str, Any]) -> None:
    chem, color, logits = wine_logits(cellar["dir"])
    rows = np.arange(0, 178, 11)
    inputs = [
        {"name": "chem", "datatype": "FP32", "shape": [rows.size, 7], "data": chem[rows].ravel().tolist()},
        {"name": "color", "datatype": "FP32", "shape": [rows.size, 6], "data": color[rows].ravel().tolist()},
    ]
    with running.client(cellar["key"]) as client:
        if client.get("/v1/pipelines/tasting").status_code == 404:
            assert client.post("/v1/pipelines", json=spec()).status_code == 201
        response = client.post("/v2/models/tasting/infer", json={"id": "q1", "inputs": inputs})
        assert response.status_code == 200, response.text
        clash = client.post("/v1/pipelines", json=spec(name=WINE))  # a model's name
        assert clash.status_code == 409
    body = response.json()
    assert body["model_name"] == "tasting" and body["id"] == "q1"
    out = {t["name"]: t for t in body["outputs"]}
    on = np.flatnonzero(np.isin(logits[rows].argmax(axis=1), GO_ON))
    assert out["grader.rows"]["data"] == on.tolist() and out["grader.rows"]["datatype"] == "INT64"
    got = np.asarray(out["wine.logits"]["data"]).reshape(out["wine.logits"]["shape"])
    np.testing.assert_allclose(got, logits[rows], rtol=0.05, atol=0.05)
    assert out["grader.strong"]["shape"] == [on.size, 2]
    assert body["parameters"]["pipeline"] == "tasting" and isinstance(body["parameters"]["slo_met"], bool)
    assert body["parameters"]["wine.variant"].startswith(f"{WINE}.")
    # Planned by now (the plan test ran first in this module): the plan's variants keep the same rule.
    assert_as_accurate_as_registered(running, WINE, body["parameters"]["wine.variant"])


def test_a_burst_over_the_planned_envelope_scales_a_stage_up_with_its_reason(
    running: RunningSuite, cellar: dict[str, Any]
) -> None:
    chem, color, _ = wine_logits(cellar["dir"])
    body = {"inputs": {"chem": chem[:1].tolist(), "color": color[:1].tolist()}}

    def tuned_up() -> list[dict[str, Any]]:
        events = running.admin.get("/v1/events", params={"kind": "pipeline_planner", "action": "tune_up"})
        return [e for e in events.json()["events"] if "pipeline tasting" in e["reason"]]

    with running.client(cellar["key"]) as client:
        if client.get("/v1/pipelines/tasting").status_code == 404:
            assert client.post("/v1/pipelines", json=spec()).status_code == 201
        planned = client.post("/v1/pipelines/tasting/plan", json={"rate_qps": 5, "cv": 1})
        assert planned.status_code == 200 and planned.json()["plan"]["feasible"], planned.text
        # Planned for 5 q/s; send as fast as one client goes (tens of q/s) for three seconds, and on
        # until the tuner has reacted (at most 20 s): on a loaded host one client sends fewer a second,
        # and the tuner judges the arrivals over its window.
        started = time.monotonic()
        looked = started
        while time.monotonic() - started < 20:
            assert client.post("/v1/pipelines/tasting/infer", json=body).status_code == 200
            if time.monotonic() - started >= 3 and time.monotonic() - looked >= 0.5:
                looked = time.monotonic()
                if tuned_up():
                    break

    events = wait_for(tuned_up, what="a tune_up event for tasting", timeout_s=15, every_s=0.2)
    decided = [e for e in events if e["outcome"] == "decided"]
    assert decided, events  # said when decided, before its loads are carried out
    assert "exceeds the planned envelope" in decided[0]["reason"] and "k = ⌈" in decided[0]["reason"]
    # ... and again once carried out, with the same numbers (a load waits for its instance to be active).
    carried = wait_for(
        lambda: [e for e in tuned_up() if e["outcome"] != "decided"],
        what="the tune_up's outcome",
        timeout_s=90,
        every_s=0.5,
    )
    assert carried[-1]["outcome"] in ("done", "failed"), carried
    assert carried[-1]["reason"].startswith(decided[-1]["reason"]), (carried, decided)

    # The model autoscaler left both stage models to the pipeline (said once each), and through the burst
    # it decided nothing for them: one loop, not two, scales a planned pipeline's models.
    scaler = running.admin.get("/v1/events", params={"kind": "model_autoscaler", "limit": 1000}).json()
    ours = [e for e in scaler["events"] if e["model"] in (WINE, GRADER)]
    claimed: dict[str, int] = {}  # model → its first claim
    for e in sorted((e for e in ours if e["action"] == "pipeline_owned"), key=lambda e: int(e["id"])):
        claimed.setdefault(e["model"], e["id"])
    assert set(claimed) == {WINE, GRADER}, ours
    assert all("pipeline tasting" in e["reason"] for e in ours if e["action"] == "pipeline_owned")
    acted = [e for e in ours if e["id"] > claimed[e["model"]] and not e["action"].startswith("pipeline_")]
    assert acted == [], acted


def test_a_new_plan_drains_what_the_old_one_used_once_every_gateway_serves_it(
    running: RunningSuite, cellar: dict[str, Any]
) -> None:
    with running.client(cellar["key"]) as client:
        if client.get("/v1/pipelines/tasting").status_code == 404:
            assert client.post("/v1/pipelines", json=spec()).status_code == 201
        first = client.post("/v1/pipelines/tasting/plan", json={"rate_qps": 5, "cv": 1})
        assert first.status_code == 200 and first.json()["plan"]["feasible"], first.text
    plan = first.json()["plan"]
    planned = next(s["variant"] for s in plan["stages"] if s["stage"] == "wine")
    ready = running.admin.get(f"/v1/models/{WINE}/variants").json()
    old = next(v["id"] for v in ready if v["status"] == "ready" and v["id"] != planned)
    # As if an earlier plan had the wine stage on `old`: stored as the pipeline's plan, its instance live.
    earlier = PipelinePlan.model_validate(
        {**plan, "stages": [{**s, "variant": old} if s["stage"] == "wine" else s for s in plan["stages"]]}
    )

    async def an_earlier_plan() -> None:
        key = running.settings.internal_key
        registry = AsyncRegistryClient(running.settings.service_url("registry"), internal_key=key)
        executors = ExecutorClient(internal_key=key)
        try:
            await registry.set_pipeline_plan("tasting", earlier)
            await executors.load(f"http://127.0.0.1:{running.suite.port('executor')}", old)
        finally:
            await registry.aclose()
            await executors.aclose()

    asyncio.run(an_earlier_plan())
    listed = running.admin.get("/v1/events", params={"kind": "pipeline_planner", "limit": 1}).json()["events"]
    since = max((e["id"] for e in listed), default=0)  # only what the re-plan below decides counts
    with running.client(cellar["key"]) as client:
        again = client.post("/v1/pipelines/tasting/plan", json={"rate_qps": 5, "cv": 1})
        assert again.status_code == 200, again.text
    now = next(s["variant"] for s in again.json()["plan"]["stages"] if s["stage"] == "wine")
    assert now != old, "the planner chose the variant this test took for the earlier plan's"

    def events(action: str) -> list[dict[str, Any]]:
        params = {"kind": "pipeline_planner", "action": action, "limit": 200}
        found = running.admin.get("/v1/events", params=params).json()["events"]
        return [
            e for e in found if e["id"] > since and "pipeline tasting" in e["reason"] and old in e["reason"]
        ]

    (decided,) = wait_for(lambda: events("retire"), what="the retire decision", timeout_s=10)
    assert decided["outcome"] == "decided" and f"the new plan serves it with {now}" in decided["reason"]
    assert not events("drain"), "drained before the gateways' cached plan expired"
    budget = running.settings.auth_cache_ttl_s + 15
    (drained,) = wait_for(lambda: events("drain"), what="the old variant drained", timeout_s=budget)
    assert drained["outcome"] == "done" and drained["variant"] == old, drained


def test_a_rate_at_registration_plans_at_once_or_says_why_not(
    running: RunningSuite, cellar: dict[str, Any]
) -> None:
    with running.client(cellar["key"]) as client:
        planned = client.post("/v1/pipelines", json=spec(name="tasting-planned", rate_qps=10))
        assert planned.status_code == 201, planned.text
        assert planned.json()["plan"]["feasible"] is True and planned.json()["plan_error"] is None
        # No grader variant reaches an accuracy of 1: stored, not planned, and the answer says why.
        strict = spec(
            name="tasting-strict",
            rate_qps=10,
            stages=[
                {"name": "wine", "model": WINE},
                {"name": "grader", "model": GRADER, "min_accuracy": 1.0},
            ],
        )
        refused = client.post("/v1/pipelines", json=strict)
        assert refused.status_code == 201, refused.text
        body = refused.json()
        assert body["plan"] is None and "grader" in body["plan_error"]["message"]
        assert client.get("/v1/pipelines/tasting-strict").status_code == 200
        for name in ("tasting-planned", "tasting-strict"):
            assert client.delete(f"/v1/pipelines/{name}").status_code == 204
