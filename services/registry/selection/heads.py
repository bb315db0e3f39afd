"""Velox heads, durable: each user's linear head over a model's scores, written by the gateway on every
feedback (its Redis copy is the hot one), read back when Redis has lost it, and averaged for new users."""

from __future__ import annotations

from typing import Annotated

import numpy as np
from fastapi import APIRouter, Path
from sqlalchemy import select

from infaas.core.errors import InvalidInput, NotFound
from infaas.data.db import ModelRow, PersonalHeadRow
from infaas.schemas.selection import MAX_USER_CHARS, HeadPrior, PersonalHead
from services.registry.deps import SessionDep

router = APIRouter(prefix="/internal/models", include_in_schema=False)

ModelId = Annotated[int, Path(ge=1, le=2**31 - 1)]
User = Annotated[str, Path(min_length=1, max_length=MAX_USER_CHARS)]


def _view(row: PersonalHeadRow) -> PersonalHead:
    return PersonalHead(
        user=row.user,
        a_inv=row.a_inv,
        b=row.b,
        error=row.error,
        model_error=row.model_error,
        updates=row.updates,
    )


@router.get("/{model_id}/heads/{user}", response_model=PersonalHead)
def get_head(model_id: ModelId, user: User, session: SessionDep) -> PersonalHead:
    row = session.get(PersonalHeadRow, (model_id, user))
    if row is None:
        raise NotFound(f"no head for user {user!r} of model {model_id}", user=user)
    return _view(row)


@router.put("/{model_id}/heads/{user}", response_model=PersonalHead)
def put_head(model_id: ModelId, user: User, head: PersonalHead, session: SessionDep) -> PersonalHead:
    model = session.get(ModelRow, model_id)
    if model is None:
        raise NotFound(f"no model {model_id}", model=model_id)
    d = len(head.a_inv)
    if head.user != user or any(len(r) != d for r in head.a_inv) or len(head.b) != d:
        raise InvalidInput("a head's A⁻¹ must be d × d and B d × classes, for the user in the path")
    row = session.get(PersonalHeadRow, (model_id, user))
    if row is None:
        row = PersonalHeadRow(model_id=model_id, user=user)
        session.add(row)
    row.a_inv, row.b = head.a_inv, head.b
    row.error, row.model_error, row.updates = head.error, head.model_error, head.updates
    session.commit()
    return head


@router.get("/{model_id}/heads-prior", response_model=HeadPrior)
def head_prior(model_id: ModelId, session: SessionDep) -> HeadPrior:
    """The mean of the users' weights W = A⁻¹B (Velox: a new user starts from it)."""
    rows = list(session.scalars(select(PersonalHeadRow).where(PersonalHeadRow.model_id == model_id)))
    if not rows:
        return HeadPrior(users=0, weights=None)
    weights = np.mean([np.asarray(r.a_inv) @ np.asarray(r.b) for r in rows], axis=0)
    return HeadPrior(users=len(rows), weights=weights.tolist())
