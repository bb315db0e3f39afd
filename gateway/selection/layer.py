"""An app query through the app's selection (Clipper's selection layer): `select` the models that answer
it (Exp3: one, drawn by the bandit; Exp4: all), send each an ordinary named-model query through the
scheduler's dispatch, `combine` what arrives by the deadline (stragglers are named, not waited for),
answer the app's default output when the ensemble's confidence is below the app's threshold (marked
`default: true` with the reason), and remember what each model said until the query's feedback."""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import orjson

from gateway.dataplane import queries
from gateway.selection import heads, metrics
from gateway.selection.store import SelectionStore
from infaas.clients.envelope import Answer, Query
from infaas.core.errors import DeadlineExceeded, InfaasError, Unavailable
from infaas.policy.bandits import BanditConfig, Combined, SelectionState, combine, exp3_select, labels_of
from infaas.policy.personalization import Head, features
from infaas.policy.selection import Requirements
from infaas.schemas.api import AppInternal, ModelInternal
from infaas.schemas.selection import HeadReport, MissingModel, QueryRecord, SelectionReport

Dispatch = Callable[[Query], Awaitable[Answer]]


@dataclass(frozen=True, slots=True)
class Selected:
    """An app query bound for the app's selection: what `routes.app_query` parsed, not yet dispatched."""

    app: AppInternal
    raw_inputs: Any
    asked: Requirements
    request_id: str
    user: str | None
    max_rows: int


def selected_models(app: AppInternal) -> list[ModelInternal]:
    by_name = {m.name: m for m in app.models}
    missing = [name for name in app.selection.models if name not in by_name]
    if missing:  # deleted since the selection was set
        raise Unavailable(f"the selection's models {missing} are gone from app {app.name!r}", models=missing)
    return [by_name[name] for name in app.selection.models]


async def answer(
    selected: Selected,
    dispatch: Dispatch,
    store: SelectionStore,
    *,
    timeout_s: float,
    draw: Callable[[], float] = random.random,
    clock: Callable[[], float] = time.perf_counter,
) -> bytes:
    """The `/v1` answer document of a selection query (JSON), its selection report under `selection`."""
    start = clock()
    app, selection = selected.app, selected.app.selection
    models = selected_models(app)
    signature, _ = queries.signature_of(models[0].signature)
    tensors = queries.tensors_for(signature, selected.raw_inputs, max_rows=selected.max_rows)
    rows = next(iter(tensors.values())).shape[0]
    names = [m.name for m in models]
    state = await store.state(app.name, selected.user, names)
    chosen, probability = None, None
    if selection.policy == "exp3":
        config = BanditConfig(eta=selection.eta, gamma=selection.gamma)
        chosen, probability = exp3_select(state, config, draw())
        targets = [chosen]
    else:  # exp4: every model; single, personalized: its one model
        targets = list(range(len(models))) if selection.policy == "exp4" else [0]
    sent = _queries(selected, models, targets, tensors)
    latency_ms = next(iter(sent.values())).requirements.slo_ms  # the app's default filled in
    budget_s = timeout_s if latency_ms is None else latency_ms / 1000
    asked = await _ask(sent, dispatch, names, budget_s - (clock() - start))
    if isinstance(asked, Answer):  # one model, and the app's default output for it (its SLO passed)
        metrics.ANSWERS.labels("default").inc()
        return _slo_default(
            selected, names[targets[0]], asked, state.weights, names, (clock() - start) * 1000
        )
    answers, missing = asked
    scores, combined, personal = await _combined(selected, models, answers, state, store)
    default = selection.threshold > 0 and float(combined.confidence.min()) < selection.threshold
    if selection.policy == "exp4" or default or personal is not None:
        outputs = _default_rows(app, rows) if default else {_first_output(models[0]): combined.scores}
    else:
        outputs = answers[targets[0]].outputs
    metrics.ANSWERS.labels("default" if default else "partial" if missing else selection.policy).inc()
    record = QueryRecord(
        app=app.name,
        user=selected.user,
        policy=selection.policy,
        models=names,
        classes=int(np.prod(signature_outputs_shape(models[0]))),
        chosen=chosen,
        probability=probability,
        labels={names[i]: labels_of(s).tolist() for i, s in enumerate(scores) if s is not None},
        answer=None if default else combined.labels.tolist(),
        scores=scores[0].tolist() if personal is not None and scores[0] is not None else None,
    )
    await store.remember(app.name, selected.request_id, record, selection.feedback_ttl_s)
    why = _why(selection.policy, names, targets, probability, answers, missing)
    report = SelectionReport(
        policy=selection.policy,
        user=selected.user,
        models=names,
        answered=[names[i] for i in sorted(answers)],
        missing=[MissingModel(model=names[i], reason=r) for i, r in sorted(missing.items())],
        chosen=names[chosen] if chosen is not None else None,
        probability=probability,
        weights=dict(zip(names, state.weights, strict=True)),
        labels=combined.labels.tolist(),
        confidence=combined.confidence.tolist(),
        feedback=f"/v1/apps/{app.name}/feedback",
        personalized=personal[2] if personal is not None else None,
    )
    reasons = _reasons(selected, why, default, float(combined.confidence.min()), personal)
    total_ms = (clock() - start) * 1000
    slo_met = None if latency_ms is None else (total_ms <= latency_ms and not default)
    return _document(selected, answers, outputs, report, reasons, default, total_ms, slo_met)


def _queries(
    selected: Selected, models: list[ModelInternal], targets: list[int], tensors: dict[str, np.ndarray]
) -> dict[int, Query]:
    """The named-model query each target model is sent, by model index."""
    return {
        index: queries.build(
            selected.app,
            models[index],
            lambda _: tensors,
            selected.asked,
            variant=None,
            request_id=f"{selected.request_id}.{models[index].name}",
        )
        for index in targets
    }


async def _ask(
    sent: dict[int, Query], dispatch: Dispatch, names: list[str], budget_s: float
) -> tuple[dict[int, Answer], dict[int, str]] | Answer:
    """The selected models' answers (by model index), and why the others are missing; or, when one model
    was asked and the app's default output answered for it (its SLO passed), that answer."""
    answers: dict[int, Answer]
    missing: dict[int, str]
    if len(sent) == 1:
        # One model: as on the plain path, the scheduler's deadline and the app's SLO policy apply (an
        # error is the scheduler's, with its status).
        ((index, query),) = sent.items()
        single = await dispatch(query)
        if single.default:  # no model's label to learn from
            return single
        answers, missing = {index: single}, {}
    else:
        answers, missing = await _gather(sent, dispatch, budget_s)
    if not answers:
        detail = [{"model": names[i], "reason": why} for i, why in missing.items()]
        if all(why.startswith("no answer") for why in missing.values()):
            raise DeadlineExceeded("no selected model answered within the deadline", missing=detail)
        raise Unavailable("no selected model could answer", missing=detail, retry_after_s=1)
    return answers, missing


def _document(
    selected: Selected,
    answers: dict[int, Answer],
    outputs: dict[str, np.ndarray],
    report: SelectionReport,
    reasons: list[str],
    default: bool,
    total_ms: float,
    slo_met: bool | None,
) -> bytes:
    """The `/v1` answer of a combination (`InferResponse`, its `selection` the report)."""
    order = sorted(answers)
    doc = {
        "outputs": outputs,
        "model": ",".join(report.models[i] for i in order),
        "variant": ",".join(answers[i].variant for i in order),
        "worker": ",".join(answers[i].worker for i in order),
        "hardware": answers[order[0]].hardware,
        "latency_ms": {
            "queue": max(a.queue_ms for a in answers.values()),
            "compute": max(a.compute_ms for a in answers.values()),
            "total": total_ms,
        },
        "slo_met": slo_met,
        "cached": all(a.cached for a in answers.values()),
        "default": default,
        "reason": "; ".join(reasons),
        "request_id": selected.request_id,
        "selection": report.model_dump(),
    }
    return orjson.dumps(doc, option=orjson.OPT_SERIALIZE_NUMPY, default=_as_list)


def _first_output(model: ModelInternal) -> str:
    return str(model.signature["outputs"][0]["name"])


async def _combined(
    selected: Selected,
    models: list[ModelInternal],
    answers: dict[int, Answer],
    state: SelectionState,
    store: SelectionStore,
) -> tuple[list[np.ndarray | None], Combined, tuple[Head, np.ndarray, HeadReport] | None]:
    """Each answering model's scores, their combination by the selection's weights and, for a named
    user of a personalized app, that user's head over them."""
    scores: list[np.ndarray | None] = [None] * len(models)
    for index, ans in answers.items():
        scores[index] = np.asarray(ans.outputs[_first_output(models[index])])
    classes = int(np.prod(signature_outputs_shape(models[0])))
    combined = combine(state, scores, classes=classes)
    personal = None
    if selected.app.selection.personalize and selected.user is not None:
        personal = await _personalize(selected, models[0], scores[0], classes, store)
        labels = np.asarray(personal[1].argmax(axis=1), dtype=np.int64)
        combined = Combined(labels, personal[1], combined.confidence)
    return scores, combined, personal


def _reasons(
    selected: Selected,
    why: str,
    default: bool,
    confidence: float,
    personal: tuple[Head, np.ndarray, HeadReport] | None,
) -> list[str]:
    selection = selected.app.selection
    reasons = [f"{selection.policy}: {why}"]
    if default:
        reasons.append(
            f"confidence {confidence:.3f} below the app's threshold {selection.threshold:g}: "
            "answered the app's default output"
        )
    if personal is not None:
        reasons.append(f"personalized for user {selected.user!r} by their head ({personal[2].origin})")
    elif selection.personalize:
        reasons.append("no user: the model's own answer")
    return reasons


def _as_list(value: object) -> object:
    """What orjson cannot serialize natively: an array of strings (a default output may be text)."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"not JSON-serializable: {type(value).__name__}")


async def _personalize(
    selected: Selected, model: ModelInternal, scores: np.ndarray | None, classes: int, store: SelectionStore
) -> tuple[Head, np.ndarray, HeadReport]:
    """The user's head over the model's scores: (head, personalized scores, report)."""
    assert scores is not None and selected.user is not None  # a single model answered, or it raised
    if store.heads is None:
        raise Unavailable("personalization needs the registry's durable heads")
    head, origin = await store.heads.get(selected.app.name, model.name, model.id, selected.user, classes)
    return head, features(scores) @ head.weights, heads.report(selected.user, head, origin)


def signature_outputs_shape(model: ModelInternal) -> list[int]:
    """The first output's shape past the batch (the classes); every selected model shares it."""
    return [int(d) for d in model.signature["outputs"][0]["shape"][1:]]


async def _gather(
    sent: dict[int, Query], dispatch: Dispatch, budget_s: float
) -> tuple[dict[int, Answer], dict[int, str]]:
    """Every query sent at once; at the deadline, what has arrived (a late prediction is worse than a
    less accurate one). A model that failed, was late, or answered its default output is missing."""
    tasks = {asyncio.ensure_future(dispatch(query)): index for index, query in sent.items()}
    done, pending = await asyncio.wait(tasks, timeout=max(budget_s, 0.0))
    answers: dict[int, Answer] = {}
    missing: dict[int, str] = {}
    for task in pending:
        task.cancel()
        missing[tasks[task]] = "no answer within the deadline"
    if pending:
        await asyncio.gather(*pending, return_exceptions=True)
    for task in done:
        index = tasks[task]
        exc = task.exception()
        if isinstance(exc, InfaasError):
            missing[index] = f"{exc.code}: {exc.message}"
        elif exc is not None:
            raise exc
        elif task.result().default:
            missing[index] = f"no answer within its SLO ({task.result().reason})"
        else:
            answers[index] = task.result()
    return answers, missing


def _why(
    policy: str,
    names: list[str],
    targets: list[int],
    probability: float | None,
    answers: dict[int, Answer],
    missing: dict[int, str],
) -> str:
    if policy == "exp3":
        return f"sent to {names[targets[0]]} (drawn with probability {probability:.3f})"
    said = f"combined {len(answers)} of {len(targets)} models by their weights"
    if missing:
        said += "; missing: " + ", ".join(f"{names[i]} ({why})" for i, why in sorted(missing.items()))
    return said


def _slo_default(
    selected: Selected,
    model: str,
    single: Answer,
    weights: tuple[float, ...],
    names: list[str],
    total_ms: float,
) -> bytes:
    """The scheduler answered the app's default output (its SLO passed, policy `default`): said as such,
    and not remembered for feedback (no model's label was seen)."""
    selection = selected.app.selection
    doc = {
        "outputs": single.outputs,
        "model": single.model,
        "variant": single.variant,
        "worker": single.worker,
        "hardware": single.hardware,
        "latency_ms": {"queue": single.queue_ms, "compute": single.compute_ms, "total": total_ms},
        "slo_met": single.slo_met,
        "cached": False,
        "default": True,
        "reason": f"{selection.policy}: sent to {model}; {single.reason}",
        "request_id": selected.request_id,
        "selection": {
            "policy": selection.policy,
            "user": selected.user,
            "models": names,
            "answered": [],
            "missing": [{"model": model, "reason": single.reason}],
            "chosen": model,
            "weights": dict(zip(names, weights, strict=True)),
            "feedback": None,
        },
    }
    return orjson.dumps(doc, option=orjson.OPT_SERIALIZE_NUMPY, default=_as_list)


def _default_rows(app: AppInternal, rows: int) -> dict[str, np.ndarray]:
    row = app.default_output or {}
    return {name: np.repeat(np.asarray([value]), rows, axis=0) for name, value in row.items()}
