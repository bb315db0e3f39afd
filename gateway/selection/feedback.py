"""Feedback for selection queries (Clipper's `observe`): the true labels of an earlier query's rows move the
selection's weights (the user's and the app's), count toward each model's live accuracy, and are logged.

A batch is checked whole before anything is applied: an unknown or expired query id is a 404 naming it, a
label count or class out of range a 422 naming the query, and then no record is consumed."""

from __future__ import annotations

from gateway.selection import heads, metrics
from gateway.selection.store import SelectionStore
from infaas.core.errors import Conflict, InvalidInput, NotFound
from infaas.policy import personalization
from infaas.policy.bandits import BanditConfig, SelectionState, exp3_observe, exp4_observe, zero_one_loss
from infaas.schemas.api import AppInternal
from infaas.schemas.selection import FeedbackAnswer, FeedbackItem, FeedbackResult, HeadReport, QueryRecord


async def apply(app: AppInternal, items: list[FeedbackItem], store: SelectionStore) -> FeedbackAnswer:
    selection = app.selection
    if selection.policy == "single" and not selection.personalize:
        raise Conflict(f"app {app.name!r} has no selection to take feedback (PATCH its selection)")
    ids = [item.query_id for item in items]
    if len(set(ids)) != len(ids):
        twice = sorted({i for i in ids if ids.count(i) > 1})
        raise InvalidInput("a batch names a query more than once", query_ids=twice)
    records = await store.take(app.name, ids)
    taken = {i: r for i, r in zip(ids, records, strict=True) if r is not None}
    try:
        unknown = [i for i, r in zip(ids, records, strict=True) if r is None]
        if unknown:
            raise NotFound(
                "unknown or expired query ids (or their feedback was already given)", query_ids=unknown
            )
        for item in items:
            _check(item, taken[item.query_id])
    except (NotFound, InvalidInput):
        await store.give_back(app.name, taken, selection.feedback_ttl_s)
        raise
    config = BanditConfig(eta=selection.eta, gamma=selection.gamma)
    results, log = [], []
    for item in items:
        record = taken[item.query_id]
        per_model = {name: 1.0 - zero_one_loss(labels, item.labels) for name, labels in record.labels.items()}
        for name, accuracy in per_model.items():
            metrics.FEEDBACK_ROWS.labels(app.name, name).inc(len(item.labels))
            metrics.FEEDBACK_CORRECT.labels(app.name, name).inc(round(accuracy * len(item.labels)))
        weights = await _observe(app, record, per_model, config, store)
        personalized = await _personal(app, record, item.labels, store)
        answered = 1.0 - zero_one_loss(record.answer, item.labels) if record.answer is not None else 0.0
        results.append(
            FeedbackResult(
                query_id=item.query_id,
                accuracy=answered,
                models=per_model,
                weights=dict(zip(record.models, weights.weights, strict=True)),
                personalized=personalized,
            )
        )
        log.append(
            {"query_id": item.query_id, "user": record.user, "labels": item.labels, "models": per_model}
        )
    await store.log(app.name, log)
    return FeedbackAnswer(results=results)


def _check(item: FeedbackItem, record: QueryRecord) -> None:
    rows = len(next(iter(record.labels.values())))
    if len(item.labels) != rows:
        raise InvalidInput(
            f"query {item.query_id!r} had {rows} rows: give one label per row",
            query_id=item.query_id,
            expected_rows=rows,
        )
    bad = [label for label in item.labels if not 0 <= label < record.classes]
    if bad:
        raise InvalidInput(
            f"labels of query {item.query_id!r} must be class indices in [0, {record.classes})",
            query_id=item.query_id,
            invalid=bad[:10],
        )


async def _observe(
    app: AppInternal,
    record: QueryRecord,
    accuracy: dict[str, float],
    config: BanditConfig,
    store: SelectionStore,
) -> SelectionState:
    """Move the weights of the user (when the query named one) and of the app by one feedback."""
    models = record.models
    now = app.selection
    if record.policy == "single" or (record.policy, models) != (now.policy, now.models):
        # the selection changed since this query: its weights describe other models now
        return await store.state(app.name, record.user, now.models) if now.models else SelectionState((1.0,))
    if record.policy == "exp3":
        chosen, probability = record.chosen or 0, record.probability or 1.0
        loss = 1.0 - accuracy[models[chosen]]

        def step(state: SelectionState) -> SelectionState:
            return exp3_observe(state, config, chosen=chosen, loss=loss, probability=probability)

    else:
        losses = [1.0 - accuracy[name] if name in accuracy else None for name in models]

        def step(state: SelectionState) -> SelectionState:
            return exp4_observe(state, config, losses)

    # The user's first (a new user's weights start from the app's, which must not hold this feedback yet)
    mine = await store.update(app.name, record.user, models, step) if record.user else None
    everyone = await store.update(app.name, None, models, step)
    return mine or everyone


async def _personal(
    app: AppInternal, record: QueryRecord, labels: list[int], store: SelectionStore
) -> HeadReport | None:
    """Fold the feedback into the user's Velox head (Sherman–Morrison), when the answer was personalized."""
    if record.scores is None or record.user is None or store.heads is None:
        return None
    model = next((m for m in app.models if m.name == record.models[0]), None)
    if model is None:  # deleted since the query
        return None
    head, origin = await store.heads.get(app.name, model.name, model.id, record.user, record.classes)
    head = personalization.update(head, record.scores, labels, heads.CONFIG)
    await store.heads.put(app.name, model.name, model.id, record.user, head)
    report = heads.report(record.user, head, origin)
    if report.stale:
        metrics.STALE_HEADS.labels(app.name, model.name).inc()
    return report
