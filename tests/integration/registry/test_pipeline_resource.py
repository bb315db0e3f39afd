"""Pipelines as a resource against real Postgres: a valid graph is stored, listed, shown and deleted; a bad
one (unknown model, dtype or shape mismatch between stages, a cycle) is a 422 naming the problem and
leaves nothing stored; a model that a pipeline uses is not deleted under it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from infaas.data.db import PipelineRow
from tests.e2e.wine import grader_model, wine_model
from tests.integration.registry.conftest import ADMIN, app_headers, upload

WINE_TO_GRADER = {"source": "wine", "target": "grader", "inputs": {"scores": "logits"}}


@pytest.fixture
def models(registry: TestClient, tmp_path: Path) -> TestClient:
    assert registry.post("/v1/apps", json={"name": "cellar"}, headers=ADMIN).status_code == 201
    assert registry.post("/v1/apps", json={"name": "other"}, headers=ADMIN).status_code == 201
    for name, build in (("wine", wine_model), ("grader", grader_model)):
        model, validation = build(tmp_path)
        response = registry.post(
            "/v1/models",
            headers=app_headers("cellar"),
            **upload(model.read_bytes(), validation.read_bytes(), name=name, app="cellar"),
        )
        assert response.status_code == 202, response.text
    return registry


def spec(**changes: Any) -> dict[str, Any]:
    return {
        "name": "tasting",
        "app": "cellar",
        "slo_ms": 80,
        "stages": [
            {"name": "wine", "model": "wine"},
            {"name": "grader", "model": "grader", "min_accuracy": 0.8},
        ],
        "edges": [WINE_TO_GRADER | {"when": {"output": "logits", "classes": [0, 1]}}],
        **changes,
    }


def stored(session: Session) -> int:
    return int(session.scalar(select(func.count()).select_from(PipelineRow)) or 0)


def test_a_pipeline_is_stored_listed_shown_and_deleted(models: TestClient, db_session: Session) -> None:
    created = models.post("/v1/pipelines", json=spec(), headers=app_headers("cellar"))
    assert created.status_code == 201, created.text
    body = created.json()
    assert body["order"] == ["wine", "grader"]
    assert body["edges"][0]["when"] == {"output": "logits", "classes": [0, 1]}
    assert body["plan"] is None
    assert [p["name"] for p in models.get("/v1/pipelines", headers=app_headers("cellar")).json()] == [
        "tasting"
    ]
    assert models.get("/v1/pipelines", headers=app_headers("other")).json() == []
    assert models.get("/v1/pipelines/tasting", headers=app_headers("other")).status_code == 403
    assert models.get("/internal/pipelines/tasting").json()["stages"][1]["min_accuracy"] == 0.8
    again = models.post("/v1/pipelines", json=spec(), headers=app_headers("cellar"))
    assert again.status_code == 409
    # A model in use stays: deleting it would break the pipeline silently.
    in_use = models.delete("/v1/models/grader", headers=app_headers("cellar"))
    assert in_use.status_code == 409 and in_use.json()["error"]["pipelines"] == ["tasting"]
    assert models.delete("/v1/pipelines/tasting", headers=app_headers("cellar")).status_code == 204
    assert stored(db_session) == 0
    assert models.get("/v1/pipelines/tasting", headers=app_headers("cellar")).status_code == 404
    assert models.delete("/v1/models/grader", headers=app_headers("cellar")).status_code == 204


@pytest.mark.parametrize(
    ("changes", "named"),
    [
        ({"stages": [{"name": "wine", "model": "wine"}, {"name": "grader", "model": "nosuch"}]}, "nosuch"),
        # grader's `strong` is [None, 2]; wine's `chem` takes [None, 7].
        (
            {
                "stages": [{"name": "grader", "model": "grader"}, {"name": "wine", "model": "wine"}],
                "edges": [
                    {"source": "grader", "target": "wine", "inputs": {"chem": "strong", "color": "strong"}}
                ],
            },
            "shape [None, 2]",
        ),
        (
            {"edges": [WINE_TO_GRADER, {"source": "grader", "target": "wine", "inputs": {"x": "strong"}}]},
            "cycle",
        ),
        (
            {"edges": [{"source": "wine", "target": "grader", "inputs": {"scores": "nope"}}]},
            "no output 'nope'",
        ),
        ({"edges": [{"source": "wine", "target": "grader", "inputs": {"other": "logits"}}]}, "every input"),
        ({"edges": []}, "exactly one root"),
        ({"edges": [WINE_TO_GRADER | {"when": {"output": "logits", "classes": [3]}}]}, "[0, 3)"),
    ],
)
def test_bad_pipelines_are_refused_naming_the_problem_and_store_nothing(
    models: TestClient, db_session: Session, changes: dict[str, Any], named: str
) -> None:
    response = models.post("/v1/pipelines", json=spec(**changes), headers=app_headers("cellar"))
    assert response.status_code == 422, response.text
    assert named in response.json()["error"]["message"]
    assert stored(db_session) == 0


def test_a_cycle_is_named_stage_by_stage(models: TestClient) -> None:
    body = spec(
        stages=[
            {"name": "a", "model": "wine"},
            {"name": "b", "model": "grader"},
            {"name": "c", "model": "grader"},
        ],
        edges=[
            {"source": "a", "target": "b", "inputs": {"scores": "logits"}},
            {"source": "b", "target": "c", "inputs": {"scores": "strong"}},
            {"source": "c", "target": "b", "inputs": {"scores": "strong"}},
        ],
    )
    response = models.post("/v1/pipelines", json=body, headers=app_headers("cellar"))
    assert response.status_code == 422
    assert response.json()["error"]["cycle"] == ["b", "c", "b"]


def test_another_apps_models_are_unknown(models: TestClient, db_session: Session) -> None:
    # Another app's model is unknown to this app, however it is named.
    foreign = spec(app="other")
    response = models.post("/v1/pipelines", json=foreign, headers=ADMIN)
    assert (
        response.status_code == 422
        and "no model 'wine' in app 'other'" in response.json()["error"]["message"]
    )
    assert stored(db_session) == 0
