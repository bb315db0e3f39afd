"""The selection layer over real ONNX Runtime models and real Redis: an in-process dispatch runs each
named-model query on its model's session (the scheduler's path is covered by its own tests; what is under
test here is what the layer sends, combines, remembers and learns). The models are wine classifiers of
different accuracy sharing one signature (`tests/selection_wine.py`)."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from typing import Any

import numpy as np
import orjson
import pytest
import redis.asyncio as aioredis

from gateway.selection import feedback
from gateway.selection.layer import Selected, answer
from gateway.selection.store import SelectionStore
from infaas.clients.envelope import Answer, InferResponse, Query
from infaas.core.errors import Conflict, DeadlineExceeded, InvalidInput, NotFound, RequirementsUnmet
from infaas.policy.selection import Requirements
from infaas.schemas.api import AppInternal, ModelInternal
from infaas.schemas.selection import FeedbackItem, Selection
from tests.integration.selection.dispatch import COLUMNS, OnnxDispatch
from tests.selection_wine import SIGNATURE, wine_data


def app_with(selection: Selection, **fields: Any) -> AppInternal:
    models = [
        ModelInternal(
            id=i,
            name=name,
            app="cellar",
            format="onnx",
            status="ready",
            artifact_digest=name,
            validation_digest=name,
            signature=SIGNATURE,
        )  # fmt: skip
        for i, name in enumerate(COLUMNS, start=1)
    ]
    base: dict[str, Any] = {
        "name": "cellar",
        "default_latency_ms": None,
        "default_min_accuracy": None,
        "slo_policy": "best_effort",
    }
    return AppInternal(**(base | fields), models=models, selection=selection)


@pytest.fixture
async def store(redis_url: str) -> AsyncIterator[SelectionStore]:
    client = aioredis.Redis.from_url(redis_url)
    yield SelectionStore(client)
    await client.aclose()


@pytest.fixture(scope="module")
def dispatch() -> OnnxDispatch:
    return OnnxDispatch()


async def ask(
    app: AppInternal, rows: np.ndarray, rid: str, dispatch: OnnxDispatch, store: SelectionStore, **kw: Any
) -> dict[str, Any]:
    latency = kw.pop("latency_ms", None)
    selected = Selected(app, rows.tolist(), Requirements(latency), rid, kw.pop("user", None), 64)
    doc: dict[str, Any] = orjson.loads(await answer(selected, dispatch, store, timeout_s=5, **kw))
    InferResponse.model_validate(doc)  # every selection answer is what the OpenAPI document says
    return doc


async def test_exp3_converges_to_the_more_accurate_model_under_feedback(
    dispatch: OnnxDispatch, store: SelectionStore
) -> None:
    x, y = wine_data()
    app = app_with(Selection(policy="exp3", models=["strong", "weak"], eta=0.2, gamma=0.1))
    rng = random.Random(7)
    chose: list[str] = []
    for n in range(300):
        i = rng.randrange(len(y))
        doc = await ask(app, x[i : i + 1], f"q{n}", dispatch, store, draw=rng.random)
        chose.append(doc["selection"]["chosen"])
        assert doc["model"] == doc["selection"]["chosen"]
        await feedback.apply(app, [FeedbackItem(query_id=f"q{n}", labels=[int(y[i])])], store)
    state = await store.state("cellar", None, ["strong", "weak"])
    # the strong model's weight is the maximum; the weak one's has fallen far below it
    assert state.weights[0] == 1.0 and state.weights[1] < 0.05
    assert state.observed == 300
    late = chose[-100:]
    # γ = 0.1 keeps sending 5 % of queries to each model at random: the rest go to the strong one
    assert late.count("strong") >= 85, late.count("strong")


async def test_exp4_combines_all_by_weight_and_learns_every_models_loss(
    dispatch: OnnxDispatch, store: SelectionStore
) -> None:
    x, y = wine_data()
    app = app_with(Selection(policy="exp4", models=["strong", "weak", "middle"], eta=0.5))
    rows = x[::10]
    doc = await ask(app, rows, "e1", dispatch, store)
    sel = doc["selection"]
    assert sel["answered"] == ["strong", "weak", "middle"] and sel["missing"] == []
    assert doc["default"] is False
    labels = np.asarray(sel["labels"])
    own = {n: dispatch.sessions[n].run(None, {"features": rows})[0].argmax(axis=1) for n in COLUMNS}
    votes = np.stack([own["strong"], own["weak"], own["middle"]])
    # uniform weights: the majority label, and the confidence is the share of models agreeing with it
    for r in range(len(rows)):
        assert np.count_nonzero(votes[:, r] == labels[r]) >= 2 or len(set(votes[:, r])) == 3
        assert sel["confidence"][r] == pytest.approx(np.count_nonzero(votes[:, r] == labels[r]) / 3)
    assert np.asarray(doc["outputs"]["logits"]).argmax(axis=1).tolist() == labels.tolist()
    result = await feedback.apply(app, [FeedbackItem(query_id="e1", labels=y[::10].tolist())], store)
    (one,) = result.results
    assert one.models["strong"] == pytest.approx(float(np.mean(own["strong"] == y[::10])))
    assert one.models["weak"] == pytest.approx(float(np.mean(own["weak"] == y[::10])))
    # w_i ← w_i·exp(−0.5·L_i), divided by the largest (the strong model's, whose loss is the smallest)
    loss = {n: 1 - one.models[n] for n in COLUMNS}
    expected = {n: np.exp(-0.5 * (loss[n] - loss["strong"])) for n in COLUMNS}
    assert one.weights == pytest.approx(expected)


async def test_low_confidence_answers_the_default_output_and_says_why(
    dispatch: OnnxDispatch, store: SelectionStore
) -> None:
    x, y = wine_data()
    own = {n: dispatch.sessions[n].run(None, {"features": x})[0].argmax(axis=1) for n in COLUMNS}
    s, w, m = own["strong"], own["weak"], own["middle"]
    split = int(np.flatnonzero((s != w) & (w != m) & (s != m))[0])  # three models, three labels
    app = app_with(
        Selection(policy="exp4", models=["strong", "weak", "middle"], threshold=0.5),
        default_output={"logits": [0.0, 0.0, 0.0]},
    )
    doc = await ask(app, x[split : split + 1], "d1", dispatch, store)
    assert doc["default"] is True
    assert doc["outputs"] == {"logits": [[0.0, 0.0, 0.0]]}
    assert "below the app's threshold 0.5" in doc["reason"]
    assert doc["selection"]["confidence"] == [pytest.approx(1 / 3)]
    agreed = int(np.flatnonzero((s == w) & (w == m))[0])
    doc = await ask(app, x[agreed : agreed + 1], "d2", dispatch, store)
    assert doc["default"] is False and doc["selection"]["confidence"] == [1.0]
    del y


async def test_a_straggler_is_left_out_at_the_deadline_and_named(
    dispatch: OnnxDispatch, store: SelectionStore
) -> None:
    x, y = wine_data()
    app = app_with(Selection(policy="exp4", models=["strong", "weak", "middle"]))
    dispatch.slow["middle"] = 1.0
    try:
        doc = await ask(app, x[:4], "s1", dispatch, store, latency_ms=200)
    finally:
        del dispatch.slow["middle"]
    sel = doc["selection"]
    assert sel["answered"] == ["strong", "weak"]
    assert sel["missing"] == [{"model": "middle", "reason": "no answer within the deadline"}]
    assert "missing: middle (no answer within the deadline)" in doc["reason"]
    assert doc["latency_ms"]["total"] < 1000  # it answered without waiting for the straggler
    # feedback leaves the straggler's weight alone: its loss is unknown
    result = await feedback.apply(app, [FeedbackItem(query_id="s1", labels=y[:4].tolist())], store)
    assert set(result.results[0].models) == {"strong", "weak"}
    assert result.results[0].weights["middle"] == 1.0 or result.results[0].weights["middle"] > 0
    dispatch.slow.update(strong=1.0, weak=1.0, middle=1.0)
    try:
        with pytest.raises(DeadlineExceeded):
            await ask(app, x[:1], "s2", dispatch, store, latency_ms=100)
    finally:
        dispatch.slow.clear()


async def test_feedback_refuses_unknown_ids_wrong_shapes_and_labels_and_applies_nothing(
    dispatch: OnnxDispatch, store: SelectionStore
) -> None:
    x, y = wine_data()
    app = app_with(Selection(policy="exp4", models=["strong", "weak"]))
    await ask(app, x[:2], "f1", dispatch, store)
    with pytest.raises(NotFound) as unknown:
        batch = [FeedbackItem(query_id="f1", labels=[0, 0]), FeedbackItem(query_id="nope", labels=[1])]
        await feedback.apply(app, batch, store)
    assert unknown.value.details["query_ids"] == ["nope"]
    with pytest.raises(InvalidInput, match="had 2 rows"):
        await feedback.apply(app, [FeedbackItem(query_id="f1", labels=[0])], store)
    with pytest.raises(InvalidInput, match=r"in \[0, 3\)"):
        await feedback.apply(app, [FeedbackItem(query_id="f1", labels=[0, 3])], store)
    with pytest.raises(InvalidInput, match="more than once"):
        await feedback.apply(app, [FeedbackItem(query_id="f1", labels=[0, 0])] * 2, store)
    assert (await store.state("cellar", None, ["strong", "weak"])).observed == 0  # nothing applied
    await feedback.apply(app, [FeedbackItem(query_id="f1", labels=y[:2].tolist())], store)  # still there
    with pytest.raises(NotFound):  # ... and taken once
        await feedback.apply(app, [FeedbackItem(query_id="f1", labels=y[:2].tolist())], store)
    with pytest.raises(Conflict):
        await feedback.apply(app_with(Selection()), [FeedbackItem(query_id="f1", labels=[0, 0])], store)


async def test_state_is_per_user_and_survives_a_new_store(
    dispatch: OnnxDispatch, store: SelectionStore, redis_url: str
) -> None:
    x, y = wine_data()
    app = app_with(Selection(policy="exp4", models=["strong", "weak"], eta=1.0))
    await ask(app, x[:20], "u1", dispatch, store, user="ana")
    await feedback.apply(app, [FeedbackItem(query_id="u1", labels=y[:20].tolist())], store)
    ana = await store.state("cellar", "ana", ["strong", "weak"])
    assert ana.observed == 1 and ana.weights[1] < 1.0
    # another user starts from the app's weights, which the feedback moved too
    assert (await store.state("cellar", "bo", ["strong", "weak"])).weights == ana.weights
    client = aioredis.Redis.from_url(redis_url)  # a restarted gateway: a new connection, the same Redis
    try:
        again = await SelectionStore(client).state("cellar", "ana", ["strong", "weak"])
    finally:
        await client.aclose()
    assert again == ana
    # a selection over other models starts afresh: the weights described the old ones
    assert (await store.state("cellar", "ana", ["weak", "strong"])).observed == 0


async def test_exp3_leaves_the_deadline_and_errors_to_the_scheduler(store: SelectionStore) -> None:
    """One model per query: the scheduler's SLO policy answers (its default output, said so) and its
    errors keep their status, as on the plain path."""
    x, _ = wine_data()
    app = app_with(
        Selection(policy="exp3", models=["strong", "weak"]),
        slo_policy="default",
        default_output={"logits": [0.0, 0.0, 1.0]},
    )

    async def slo_passed(query: Query) -> Answer:
        outputs = {"logits": np.asarray([[0.0, 0.0, 1.0]], dtype=np.float32)}
        reason = "the SLO passed: the app's default output (app policy: default)"
        return Answer(
            outputs, query.target, "v", "none", "cpu", 0.0, 0.0, 9.0, False, False, True, reason, "r"
        )

    selected = Selected(app, x[:1].tolist(), Requirements(5.0), "x1", None, 64)
    doc = orjson.loads(await answer(selected, slo_passed, store, timeout_s=5, draw=lambda: 0.0))
    assert doc["default"] is True and doc["outputs"] == {"logits": [[0.0, 0.0, 1.0]]}
    assert "app policy: default" in doc["reason"] and doc["selection"]["chosen"] == "strong"
    with pytest.raises(NotFound):  # nothing to learn from: not remembered
        await feedback.apply(app, [FeedbackItem(query_id="x1", labels=[0])], store)

    async def unmet(query: Query) -> Answer:
        raise RequirementsUnmet(f"no variant of {query.target} meets the requirements")

    with pytest.raises(RequirementsUnmet):
        await answer(selected, unmet, store, timeout_s=5, draw=lambda: 0.0)
