"""The tasks a model may serve, and which one a model-less query or job on an app is for.

An app may hold a classifier and a regression model that take the same inputs; their outputs mean
different things (class scores, predicted values), so a model-less query is answered by models of one
task only: the one it states (`task`), or the only one among the app's models its inputs fit.
"""

from __future__ import annotations

from collections.abc import Iterable

from infaas.core.errors import InvalidInput

TASKS = frozenset({"classification", "regression"})
"""`classification`: the first output is (batch, classes) scores, accuracy is top-1. `regression`: the
first output is (batch,) or (batch, k) predictions, accuracy is R² clipped to [0, 1]."""


def check_stated(task: object) -> str | None:
    """A query's or job's `task` field: absent, or one of `TASKS` (a 422 naming them otherwise)."""
    if task is None:
        return None
    if not isinstance(task, str) or task not in TASKS:
        raise InvalidInput(f"task must be one of {sorted(TASKS)}", field="task")
    return task


def one_task(app: str, tasks: Iterable[str], stated: str | None) -> str:
    """The task a model-less query or job on `app` is for, given the tasks of the app's models its
    inputs fit (never empty): the stated one, or the only one; several and none stated is a 422, as
    a stated task none of those models has."""
    found = sorted(set(tasks))
    if stated is not None:
        if stated not in found:
            raise InvalidInput(
                f"app {app!r} has no {stated} model that takes these inputs", app=app, tasks=found
            )
        return stated
    if len(found) > 1:
        raise InvalidInput(
            f"app {app!r} has models of several tasks that take these inputs: state the task "
            "(`task`) or name a model",
            app=app,
            tasks=found,
        )
    return found[0]
