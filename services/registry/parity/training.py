"""Coded redundancy (ParM) in the registry: which models can have a parity model (and why not), queuing
their training when an app turns parity on, and the trainings' reports and status.

A parity model is trained by the profiler (a Celery task on its hardware queue, `TRAIN_PARITY`), which
reports progress here; the registry is where its state lives, so it survives the worker and is served by
`GET /v1/models/{name}/parity`.
"""

from __future__ import annotations

from typing import Protocol

import onnx
from sqlalchemy.orm import Session

from infaas.core.errors import Conflict, InvalidInput, NotFound
from infaas.data.artifacts import ArtifactStore
from infaas.data.db import AppRow, ModelRow, ParityModelRow
from infaas.policy.parity import PARITY_TASKS, TRAINABLE_OPS
from infaas.schemas.parity import ParityReport, ParityStatus, Redundancy
from infaas.wire.tensors import Signature
from services.registry import repository as repo


class ParityQueue(Protocol):
    def enqueue_parity(self, model_id: int, k: int, generation: int) -> None: ...


def ineligible(model: ModelRow, artifacts: ArtifactStore) -> str | None:
    """Why `model` cannot have a parity model, or None when it can (see `ineligible_upload`)."""
    digest = model.onnx_digest or (model.artifact_digest if model.format == "onnx" else None)
    onnx_bytes = artifacts.get(digest) if digest is not None else None
    return ineligible_upload(model.task, Signature.from_json(model.signature), onnx_bytes)


def ineligible_upload(task: str, signature: Signature, onnx_bytes: bytes | None) -> str | None:
    """Why a model cannot have a parity model, or None when it can: a classifier or regressor taking one
    float tensor, whose ONNX graph has one output and only operators the trainer runs."""
    if task not in PARITY_TASKS:
        return f"task {task!r}: parity models serve classification and regression only"
    if len(signature.inputs) != 1:
        return f"{len(signature.inputs)} inputs: a parity query is the sum of one float tensor"
    if signature.inputs[0].dtype != "float32":
        return (
            f"input dtype {signature.inputs[0].dtype}: only float32 inputs can be summed into a parity query"
        )
    if len(signature.outputs) != 1:
        return f"{len(signature.outputs)} outputs: parity decoding needs one output tensor"
    if onnx_bytes is None:
        return "no ONNX form of the model to train a parity model of the same architecture from"
    graph = onnx.load_model_from_string(onnx_bytes).graph
    unknown = sorted({n.op_type for n in graph.node if n.op_type not in TRAINABLE_OPS})
    if unknown:
        return f"operators the parity trainer does not run: {', '.join(unknown)}"
    return None


def check(session: Session, app: AppRow, redundancy: Redundancy, artifacts: ArtifactStore) -> None:
    """A 422 naming every model of `app` that cannot have the parity `redundancy` asks for, and why."""
    if redundancy.kind != "parity":
        return
    reasons = {m.name: why for m in repo.models(session, app_id=app.id) if (why := ineligible(m, artifacts))}
    if reasons:
        listed = "; ".join(f"{name}: {why}" for name, why in sorted(reasons.items()))
        raise InvalidInput(
            f"parity redundancy is not possible for this app's models ({listed})", models=reasons
        )


def start(
    session: Session, app: AppRow, redundancy: Redundancy, queue: ParityQueue, artifacts: ArtifactStore
) -> None:
    """Queue a parity training for each of the app's models without a current one for this k (after the
    app's change is committed); a training of another k still running is superseded by generation, and
    a parity model of another k is deleted from the model repository."""
    if redundancy.kind != "parity" or redundancy.k is None:
        return
    queued: list[tuple[int, int]] = []
    superseded: list[str] = []
    for model in repo.models(session, app_id=app.id):
        row = session.get(ParityModelRow, model.id)
        if row is not None and row.k == redundancy.k and row.state != "failed":
            continue  # trained or training for this k already
        if row is None:
            row = ParityModelRow(model_id=model.id, generation=0, losses=[])
            session.add(row)
        row.k, row.generation, row.state, row.reason = redundancy.k, row.generation + 1, "queued", None
        row.steps_done, row.steps_total, row.losses = 0, 0, []
        row.metric = row.deployed_score = row.degraded_score = None
        row.holdout_rows = row.train_rows = None
        if row.artifact_digest:
            superseded.append(row.artifact_digest)
        row.train_seconds, row.artifact_digest = None, None
        queued.append((model.id, row.generation))
    session.commit()
    for digest in superseded:
        artifacts.delete(digest)
    for model_id, generation in queued:
        queue.enqueue_parity(model_id, redundancy.k, generation)


def report(session: Session, model_id: int, body: ParityReport) -> None:
    """A training's progress or result; 404 without a parity model, 409 from a superseded training."""
    row = session.get(ParityModelRow, model_id)
    if row is None:
        raise NotFound(f"model {model_id} has no parity model")
    if body.generation != row.generation:
        raise Conflict(f"parity training {body.generation} was superseded by {row.generation}")
    for field, value in body.model_dump(exclude={"generation"}, exclude_unset=True).items():
        setattr(row, field, value)
    session.commit()


def status(session: Session, model: ModelRow) -> ParityStatus:
    row = session.get(ParityModelRow, model.id)
    if row is None:
        raise NotFound(f"model {model.name!r} has no parity model (its app's redundancy is not parity)")
    return ParityStatus(
        model=model.name,
        k=row.k,
        generation=row.generation,
        state=row.state,
        reason=row.reason,
        steps_done=row.steps_done,
        steps_total=row.steps_total,
        losses=[(int(s), float(v)) for s, v in row.losses],
        metric=row.metric,
        deployed_score=row.deployed_score,
        degraded_score=row.degraded_score,
        holdout_rows=row.holdout_rows,
        train_rows=row.train_rows,
        train_seconds=row.train_seconds,
        artifact_digest=row.artifact_digest,
        updated_at=row.updated_at,
    )
