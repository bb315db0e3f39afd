"""Which requests the gateway's query lane takes; everything else goes to the app's router."""

from __future__ import annotations

import pytest

from gateway.api import app_query_frame, model_query_frame
from gateway.lane import _match


def scope(method: str, path: str) -> dict[str, object]:
    return {"type": "http", "method": method, "path": path}


def test_the_two_query_routes_are_taken_with_their_name() -> None:
    assert _match(scope("POST", "/v1/apps/shop/infer")) == ("/v1/apps/{app}/infer", app_query_frame, "shop")
    assert _match(scope("POST", "/v1/models/digits-mlp-small/infer")) == (
        "/v1/models/{name}/infer",
        model_query_frame,
        "digits-mlp-small",
    )


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/v1/apps/shop/infer"),  # the router answers 405
        ("POST", "/v1/apps/shop/infer/"),  # and redirects or 404s these
        ("POST", "/v1/apps//infer"),
        ("POST", "/v1/apps/shop/x/infer"),
        ("POST", "/v1/jobs/shop/infer"),
        ("POST", "/v2/models/shop/infer"),  # the Open Inference Protocol has its own routes
        ("POST", "/v1/apps"),
        ("POST", "v1/apps/shop/infer"),
    ],
)
def test_anything_else_goes_to_the_app(method: str, path: str) -> None:
    assert _match(scope(method, path)) is None
