"""Publishing a trained parity model as the hidden variant of its model (ParM serving).

A parity model has the deployed model's architecture, so it runs with the same runtime settings and costs
what the deployed model's plain ONNX Runtime fp32 CPU variant costs: its profile is that variant's, with
the parity artifact, the degraded-mode score as accuracy and `parity_k` set. It is published apart from the
model's variants (`store.publish_parity`), so selection and the planner's demand never see it; the
planner places it (services/planner/loops/parity.py) and the scheduler's coder sends it parity queries
(services/scheduler/parity.py). Its id carries k and the training's generation (`parity_vid`).
"""

from __future__ import annotations

from dataclasses import replace

import redis
from sqlalchemy.orm import Session

from infaas.data import store
from infaas.data.db import AppRow, ModelRow, ParityModelRow
from infaas.policy.parity import parity_vid
from infaas.schemas.variants import VariantProfile
from services.registry import repository as repo
from services.registry.profiles.reports import to_profile


def parity_profile(
    session: Session, model: ModelRow, app: AppRow, row: ParityModelRow
) -> VariantProfile | None:
    """The parity model's hidden variant, or None while it is not trained or its model has no ready plain
    ONNX Runtime fp32 CPU variant to take the runtime settings and costs from."""
    if row.state != "ready" or not row.artifact_digest:
        return None
    bases = [
        to_profile(v, m, a)
        for v, m, a in repo.ready_variants(session)
        if m.id == model.id and v.runtime == "onnxruntime" and v.precision == "fp32" and v.hardware == "cpu"
    ]
    if not bases:
        return None
    base = min(bases, key=lambda p: (p.profiled_ms(1, tail=False), p.id))
    return replace(
        base,
        id=parity_vid(model.name, row.k, row.generation),
        app=app.name,
        artifact_digest=row.artifact_digest,
        accuracy=float(row.degraded_score or 0.0),
        dominated=True,
        parity_k=row.k,
    )


def publish(session: Session, r: redis.Redis, model_id: int) -> VariantProfile | None:
    """Publish the model's parity variant when its training is done and its app still asks for parity."""
    model = session.get(ModelRow, model_id)
    row = session.get(ParityModelRow, model_id)
    if model is None or row is None:
        return None
    app = session.get(AppRow, model.app_id)
    if app is None or app.redundancy.get("kind") != "parity" or app.redundancy.get("k") != row.k:
        return None
    profile = parity_profile(session, model, app, row)
    if profile is not None:
        store.publish_parity(r, profile)
    return profile


def publish_all(session: Session, r: redis.Redis) -> int:
    """Every parity variant that should be published (the registry's republication)."""
    rows = session.query(ParityModelRow).filter(ParityModelRow.state == "ready").all()
    return sum(publish(session, r, row.model_id) is not None for row in rows)


def withdraw(r: redis.Redis, model_name: str, row: ParityModelRow | None) -> None:
    """Take the parity variant of `row`'s current generation out (parity turned off, retrained, deleted)."""
    if row is not None and row.k:
        store.unpublish_parity(r, [parity_vid(model_name, row.k, row.generation)])
