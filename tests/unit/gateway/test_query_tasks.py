"""A model-less query is answered by models of one task (infaas/core/tasks.py): the gateway picks it
(the stated `task`, or the only one its inputs fit) and the `Query` carries it to the scheduler."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from gateway.dataplane.queries import from_json, parse_body
from infaas.clients.envelope import Query
from infaas.core.errors import BadRequest, InvalidInput
from infaas.schemas.api import AppInternal, ModelInternal
from infaas.wire.frames import decode_frame, encode_frame
from tests.unit.gateway.test_queries import X2, X4, app, model


def with_task(m: ModelInternal, task: str) -> ModelInternal:
    return m.model_copy(update={"task": task})


def build(target: AppInternal, body: dict[str, Any], named: ModelInternal | None = None) -> Query:
    data, asked = parse_body(orjson.dumps(body))
    return from_json(target, named, data, asked, request_id="r", max_rows=100)


CLF = model("clf", X4, mid=1)
REG = with_task(model("reg", X4, mid=2), "regression")
ROW = {"inputs": [[1.0, 2.0, 3.0, 4.0]]}


def test_an_app_of_one_task_needs_no_task_and_the_query_carries_it() -> None:
    assert build(app([REG]), ROW).task == "regression"
    assert build(app([CLF]), ROW).task == "classification"


def test_same_input_models_of_two_tasks_make_an_unstated_query_a_422_naming_them() -> None:
    with pytest.raises(InvalidInput, match="several tasks") as info:
        build(app([CLF, REG]), ROW)
    assert info.value.status == 422
    assert info.value.details["tasks"] == ["classification", "regression"]


def test_a_stated_task_picks_the_models_of_that_task() -> None:
    both = app([CLF, REG])
    assert build(both, {**ROW, "task": "regression"}).task == "regression"
    assert build(both, {**ROW, "task": "classification"}).task == "classification"


def test_a_stated_task_the_app_lacks_or_does_not_know_is_a_422() -> None:
    with pytest.raises(InvalidInput, match="no regression model"):
        build(app([CLF]), {**ROW, "task": "regression"})
    with pytest.raises(InvalidInput, match="task must be one of"):
        build(app([CLF]), {**ROW, "task": "ranking"})


def test_models_of_other_inputs_do_not_make_the_task_ambiguous() -> None:
    other = with_task(model("reg2", X2, mid=3), "regression")
    assert build(app([CLF, other]), ROW).task == "classification"
    assert build(app([CLF, other]), {"inputs": [[1.0, 2.0]]}).task == "regression"


def test_a_named_model_query_takes_its_models_task_and_refuses_another() -> None:
    both = app([CLF, REG])
    assert build(both, ROW, named=REG).task == "regression"
    with pytest.raises(InvalidInput, match="is a regression model"):
        build(both, {**ROW, "task": "classification"}, named=REG)


def test_the_task_survives_the_query_frame() -> None:
    query = build(app([REG]), ROW)
    assert Query.decode(query.encode()).task == "regression"


def test_a_frame_from_a_gateway_older_than_tasks_is_a_classifier_query_and_a_forged_task_is_refused() -> None:
    query = build(app([CLF]), ROW)
    header, tensors = decode_frame(query.encode())
    del header["task"]
    assert Query.decode(encode_frame(header, tensors)).task == "classification"
    with pytest.raises(BadRequest, match="not one of"):
        Query.decode(encode_frame({**header, "task": "ranking"}, tensors))
