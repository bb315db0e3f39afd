"""Pipelines (InferLine): registration with the graph checked against the models' signatures
(`graph.py`), listing, deletion and the planner's plan. A refused pipeline stores nothing."""

from __future__ import annotations

import logging
from typing import Any

import redis
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from infaas.core.errors import Conflict, InvalidInput, NotFound
from infaas.data import store
from infaas.data.db import AppRow, PipelineRow
from infaas.schemas.api import Principal
from infaas.schemas.pipelines import Pipeline, PipelineCreate, PipelinePlan
from services.registry import repository as repo
from services.registry import service
from services.registry.pipelines import graph

log = logging.getLogger("infaas.registry")


def create(session: Session, principal: Principal, spec: PipelineCreate) -> PipelineRow:
    app = service.app_for(session, principal, spec.app)
    if _by_name(session, spec.name) is not None:
        raise Conflict(f"pipeline {spec.name!r} already exists", pipeline=spec.name)
    if repo.model_by_name(session, spec.name) is not None or repo.app_by_name(session, spec.name) is not None:
        # The name is also the pipeline's model name under the Open Inference Protocol.
        raise Conflict(f"{spec.name!r} already names a model or an app", pipeline=spec.name)
    signatures: dict[str, dict[str, Any]] = {}
    tasks: dict[str, str] = {}
    for stage in spec.stages:
        model = repo.model_by_name(session, stage.model)
        if model is None or model.app_id != app.id:
            raise InvalidInput(
                f"stage {stage.name!r}: no model {stage.model!r} in app {app.name!r}",
                stage=stage.name,
                model=stage.model,
            )
        signatures[stage.model] = model.signature
        tasks[stage.name] = model.task
    order = graph.check_graph(spec, signatures)
    graph.check_branches(spec, tasks)
    row = PipelineRow(
        name=spec.name,
        app_id=app.id,
        slo_ms=spec.slo_ms,
        min_accuracy=spec.min_accuracy,
        spec={
            "stages": [s.model_dump() for s in spec.stages],
            "edges": [e.model_dump() for e in spec.edges],
        },
        order=order,
    )
    session.add(row)
    try:
        session.commit()
    except IntegrityError as exc:  # a concurrent create of the same name
        session.rollback()
        raise Conflict(f"pipeline {spec.name!r} already exists", pipeline=spec.name) from exc
    return row


def _by_name(session: Session, name: str) -> PipelineRow | None:
    return session.scalars(select(PipelineRow).where(PipelineRow.name == name)).one_or_none()


def row_for(session: Session, principal: Principal, name: str) -> PipelineRow:
    """The pipeline, if it exists (404) and the caller may see it (403)."""
    row = _by_name(session, name)
    if row is None:
        raise NotFound(f"no pipeline {name!r}", pipeline=name)
    app = session.get(AppRow, row.app_id)
    service.app_for(session, principal, app.name if app else "")
    return row


def internal_row(session: Session, name: str) -> PipelineRow:
    row = _by_name(session, name)
    if row is None:
        raise NotFound(f"no pipeline {name!r}", pipeline=name)
    return row


def rows(session: Session, principal: Principal) -> list[PipelineRow]:
    query = select(PipelineRow).order_by(PipelineRow.name)
    if principal.role != "admin":
        query = query.where(PipelineRow.app_id == service.app_for(session, principal, principal.app or "").id)
    return list(session.scalars(query))


def delete(session: Session, principal: Principal, name: str) -> None:
    session.delete(row_for(session, principal, name))
    session.commit()


def set_plan(session: Session, name: str, plan: PipelinePlan) -> PipelineRow:
    row = internal_row(session, name)
    row.plan = plan.model_dump(mode="json")
    session.commit()
    return row


def signal_change(r: redis.Redis) -> None:
    """Tell the pipeline tuner a pipeline changed (`store.PIPELINES_CHANGED`), after the commit: a
    tuner that sees the counter move finds the change in the database. Best effort: a lost signal
    costs the tuner's idle re-read interval, not the change."""
    try:
        store.signal(r, store.PIPELINES_CHANGED, store.PIPELINES_TOPIC)
    except redis.RedisError as exc:
        log.warning("signalling a pipeline change to the planner failed: %s", exc)


def view(session: Session, row: PipelineRow) -> Pipeline:
    app = session.get(AppRow, row.app_id)
    return Pipeline(
        name=row.name,
        app=app.name if app else "",
        slo_ms=row.slo_ms,
        min_accuracy=row.min_accuracy,
        stages=row.spec["stages"],
        edges=row.spec["edges"],
        order=row.order,
        plan=PipelinePlan.model_validate(row.plan) if row.plan else None,
        created_at=row.created_at,
    )
