"""A pipeline query (InferLine): the stages run root first, each as an ordinary named-model query through
the scheduler's dispatch (`QueryDispatch.infer`), all under one deadline — each stage's latency SLO is
what is left of the pipeline's end-to-end SLO when it starts. A planned stage pins the variant its plan
chose; an edge passes its source's outputs on as the target's inputs, and a conditional edge only the
rows whose predicted class it names."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

import numpy as np

from gateway.dataplane import queries
from infaas.clients.envelope import Answer, Query
from infaas.core.errors import InvalidInput
from infaas.policy.selection import Requirements
from infaas.schemas.api import AppInternal, ModelInternal
from infaas.schemas.pipelines import Pipeline, PipelineEdge

MIN_STAGE_BUDGET_MS = 1.0
"""A stage that starts past the deadline still runs (the answer says the SLO was missed), asking for the
fastest variant there is."""

Dispatch = Callable[[Query], Awaitable[Answer]]


def rows_on(edge: PipelineEdge, outputs: dict[str, np.ndarray]) -> np.ndarray:
    """Which of the source's rows go on along `edge` (positions in the source's rows)."""
    rows = next(iter(outputs.values())).shape[0]
    if edge.when is None:
        return np.arange(rows)
    scores = np.asarray(outputs[edge.when.output]).reshape(rows, -1)
    return np.flatnonzero(np.isin(scores.argmax(axis=1), edge.when.classes))


async def run(
    pipeline: Pipeline,
    app: AppInternal,
    models: dict[str, ModelInternal],
    tensors: dict[str, np.ndarray],
    dispatch: Dispatch,
    *,
    request_id: str,
    max_rows: int,
    clock: Callable[[], float] = time.perf_counter,
) -> dict[str, Any]:
    """Run every stage and answer the `/v1` pipeline document: per stage its rows (positions in the
    query), outputs, variant, worker and queue/compute/total ms; end to end the total and `slo_met`."""
    start = clock()
    deadline = start + pipeline.slo_ms / 1000
    stage_of = {s.name: s for s in pipeline.stages}
    parent = {e.target: e for e in pipeline.edges}
    planned = {s.stage: s.variant for s in pipeline.plan.stages} if pipeline.plan else {}
    rows: dict[str, np.ndarray] = {}
    outputs: dict[str, dict[str, np.ndarray]] = {}
    report: list[dict[str, Any]] = []
    for name in pipeline.order:
        stage = stage_of[name]
        edge = parent.get(name)
        if edge is None:
            inputs = tensors
            rows[name] = np.arange(next(iter(tensors.values())).shape[0])
        else:
            source = outputs.get(edge.source)
            if source is None:  # nothing reached the source: nothing reaches this stage either
                continue
            keep = rows_on(edge, source)
            if keep.size == 0:
                continue
            rows[name] = rows[edge.source][keep]
            inputs = {inp: np.ascontiguousarray(source[out][keep]) for inp, out in edge.inputs.items()}
        budget_ms = max(MIN_STAGE_BUDGET_MS, (deadline - clock()) * 1000)
        model = models[stage.model]
        # `build` fills in the app's default accuracy and `at_reference` (the rule the planner also
        # applies: `Pipeline.stage_accuracy`); a planned stage pins the variant the plan chose under it.
        query = queries.build(
            app,
            model,
            _checked(inputs, max_rows),
            Requirements(budget_ms, pipeline.stage_floor(stage)),
            variant=planned.get(name),
            request_id=f"{request_id}.{name}",
        )
        answer = await dispatch(query)
        outputs[name] = answer.outputs
        report.append(_stage_report(name, answer, int(rows[name].size), budget_ms))
    total_ms = (clock() - start) * 1000
    return {
        "pipeline": pipeline.name,
        "outputs": outputs,
        "rows": {name: r for name, r in rows.items() if name in outputs},
        "stages": report,
        "latency_ms": {"total": total_ms},
        "slo_ms": pipeline.slo_ms,
        "slo_met": total_ms <= pipeline.slo_ms,
        "planned": bool(planned),
        "request_id": request_id,
    }


def _stage_report(name: str, answer: Answer, rows: int, budget_ms: float) -> dict[str, Any]:
    """What one stage did, in the pipeline document."""
    return {
        "stage": name,
        "model": answer.model,
        "variant": answer.variant,
        "worker": answer.worker,
        "hardware": answer.hardware,
        "rows": rows,
        "budget_ms": round(budget_ms, 3),
        "latency_ms": {"queue": answer.queue_ms, "compute": answer.compute_ms, "total": answer.total_ms},
        "slo_met": answer.slo_met,
        "cached": answer.cached,
        "reason": answer.reason,
    }


def _checked(arrays: dict[str, np.ndarray], max_rows: int) -> queries.Inputs:
    """A stage's inputs checked against its model's signature like any query's (a registered edge fits,
    but the model may have been re-registered since): a mismatch is a 422 naming the input."""

    def check(signature: Any) -> dict[str, np.ndarray]:
        try:
            return queries.arrays_for(signature, arrays, max_rows=max_rows)
        except InvalidInput as exc:
            message = f"a pipeline stage's inputs no longer fit: {exc.message}"
            raise InvalidInput(message, **exc.details) from exc

    return check
