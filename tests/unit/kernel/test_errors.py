"""The error hierarchy: body shape, and rebuilding an error from another service's answer."""

from __future__ import annotations

from typing import Any

import pytest

from infaas.core import errors
from infaas.core.errors import (
    BadRequest,
    InfaasError,
    InvalidInput,
    InvalidModel,
    NotFound,
    RequirementsUnmet,
    Unavailable,
    error_from_body,
)


def all_error_classes() -> list[type[InfaasError]]:
    found: list[type[InfaasError]] = [InfaasError]
    stack = [InfaasError]
    while stack:
        for sub in stack.pop().__subclasses__():
            if sub.__module__ == errors.__name__:
                found.append(sub)
                stack.append(sub)
    return found


CLASSES = all_error_classes()

EXPECTED = {
    "InfaasError": (500, "internal"),
    "BadRequest": (400, "bad_request"),
    "Unauthorized": (401, "unauthorized"),
    "Forbidden": (403, "forbidden"),
    "NotFound": (404, "not_found"),
    "Conflict": (409, "conflict"),
    "PayloadTooLarge": (413, "payload_too_large"),
    "InvalidInput": (422, "invalid_input"),
    "InvalidModel": (422, "invalid_model"),
    "RequirementsUnmet": (422, "requirements_unmet"),
    "TooManyRequests": (429, "too_many_requests"),
    "Unavailable": (503, "unavailable"),
    "Overloaded": (503, "overloaded"),
    "DeadlineExceeded": (504, "deadline_exceeded"),
}


def test_every_class_has_the_documented_status_and_code() -> None:
    assert {cls.__name__: (cls.status, cls.code) for cls in CLASSES} == EXPECTED


def test_codes_are_unique() -> None:
    codes = [cls.code for cls in CLASSES]
    assert len(codes) == len(set(codes))


def test_to_body_shape() -> None:
    err = InvalidInput("bad shape", input="x", expected_shape=[None, 4])
    assert err.to_body() == {
        "error": {"code": "invalid_input", "message": "bad shape", "input": "x", "expected_shape": [None, 4]}
    }
    assert str(err) == "bad shape"
    assert err.message == "bad shape"
    assert err.details == {"input": "x", "expected_shape": [None, 4]}


def test_to_body_without_details() -> None:
    assert NotFound("no such app").to_body() == {"error": {"code": "not_found", "message": "no such app"}}


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_error_from_body_rebuilds_the_same_class(cls: type[InfaasError]) -> None:
    original = cls("something happened", variant="v1", closest={"best_accuracy": 0.9})
    rebuilt = error_from_body(cls.status, original.to_body())
    assert type(rebuilt) is cls
    assert rebuilt.message == "something happened"
    assert rebuilt.details == {"variant": "v1", "closest": {"best_accuracy": 0.9}}
    assert rebuilt.to_body() == original.to_body()


def test_error_from_body_does_not_mutate_the_body() -> None:
    body = NotFound("gone", model="m").to_body()
    error_from_body(404, body)
    assert body == {"error": {"code": "not_found", "message": "gone", "model": "m"}}


@pytest.mark.parametrize(
    ("status", "cls"),
    [
        (400, BadRequest),
        (404, NotFound),
        (422, InvalidInput),
        (500, InfaasError),
        (503, Unavailable),
    ],
)
def test_unknown_code_falls_back_to_a_class_of_that_status(status: int, cls: type[InfaasError]) -> None:
    rebuilt = error_from_body(status, {"error": {"code": "brand_new_code", "message": "m", "k": 1}})
    assert type(rebuilt) is cls
    assert rebuilt.status == status
    assert rebuilt.message == "m"
    assert rebuilt.details == {"k": 1}


def test_known_code_with_a_different_status_follows_the_status() -> None:
    # A proxy answering 503 with a body that says not_found: the status is what the client sees.
    rebuilt = error_from_body(503, {"error": {"code": "not_found", "message": "m"}})
    assert type(rebuilt) is Unavailable


def test_subclass_sharing_a_status_is_rebuilt_by_its_code() -> None:
    assert type(error_from_body(422, InvalidModel("x").to_body())) is InvalidModel
    assert type(error_from_body(422, RequirementsUnmet("x").to_body())) is RequirementsUnmet


@pytest.mark.parametrize(("status", "cls"), [(418, BadRequest), (502, Unavailable), (599, Unavailable)])
def test_unknown_status_falls_back_by_range(status: int, cls: type[InfaasError]) -> None:
    assert type(error_from_body(status, {"error": {"code": "x", "message": "m"}})) is cls
    assert type(error_from_body(status, None)) is cls


@pytest.mark.parametrize(
    "body",
    [None, "Internal Server Error", [1, 2], 42, {"detail": "Not Found"}, {"error": "oops"}, {"error": None}],
    ids=["none", "text", "list", "int", "fastapi-detail", "error-string", "error-null"],
)
def test_non_error_bodies_give_a_generic_error_of_the_status(body: Any) -> None:
    rebuilt = error_from_body(404, body)
    assert type(rebuilt) is NotFound
    assert rebuilt.message == "upstream answered 404"
    assert rebuilt.details == {}


def test_missing_code_and_message_are_defaulted() -> None:
    rebuilt = error_from_body(500, {"error": {"reason": "boom"}})
    assert type(rebuilt) is InfaasError
    assert rebuilt.message == "error"
    assert rebuilt.details == {"reason": "boom"}
