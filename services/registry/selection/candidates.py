"""The model-selection layer's option in the registry: which of an app's models a `selection` may choose
among (checked when the app is updated; a refusal changes nothing)."""

from __future__ import annotations

from sqlalchemy.orm import Session

from infaas.core.errors import InvalidInput
from infaas.data.db import AppRow
from infaas.schemas.selection import Selection
from infaas.wire.tensors import Signature
from services.registry import repository as repo

SELECTABLE_TASKS = frozenset({"classification"})
"""Votes, agreement and 0/1 feedback are defined over class labels."""


def check(session: Session, app: AppRow, selection: Selection, *, default_output: object) -> None:
    """A 422 naming the reason unless every model of `selection` is the app's, a classifier, and takes
    and answers the same signature as the others (one query goes to each; their labels are compared)."""
    if selection.threshold > 0 and not default_output:
        raise InvalidInput("a selection threshold needs the app's default_output", field="threshold")
    if not selection.models:
        return
    mine = {m.name: m for m in repo.models(session, app_id=app.id)}
    missing = [name for name in selection.models if name not in mine]
    if missing:
        raise InvalidInput(f"not models of app {app.name!r}: {missing}", models=missing)
    first = mine[selection.models[0]]
    expected = _space(Signature.from_json(first.signature))
    for name in selection.models:
        model = mine[name]
        if model.task not in SELECTABLE_TASKS:
            raise InvalidInput(
                f"model {name!r} has task {model.task!r}: selection combines classifiers only", model=name
            )
        if model.status == "failed":
            raise InvalidInput(f"model {name!r} failed and cannot answer queries", model=name)
        if _space(Signature.from_json(model.signature)) != expected:
            raise InvalidInput(
                f"model {name!r} does not share {first.name!r}'s inputs and output space",
                model=name,
                expected_like=first.name,
            )


def _space(signature: Signature) -> tuple[str, tuple[tuple[int | None, ...], ...]]:
    """What models must share to be selected among: the inputs a query fits (names, dtypes, shapes) and
    the shapes of the outputs (the classes); output names may differ, the first output is the scores."""
    return signature.key, tuple(tuple(t.shape[1:]) for t in signature.outputs)
