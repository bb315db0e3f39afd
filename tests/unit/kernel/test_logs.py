"""JSON log lines, and the request id an HTTP request binds for them and returns."""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator

import orjson
import pytest
from fastapi import FastAPI, Request
from fastapi.testclient import TestClient

from infaas.core.errors import NotFound
from infaas.core.logs import (
    JsonFormatter,
    accept_request_id,
    bind_request_id,
    configure_logging,
    request_id_bound,
    request_id_var,
)
from infaas.http.app import install_common, request_id


@pytest.fixture
def captured() -> Iterator[io.StringIO]:
    """A JSON handler on a test logger (the root logger is pytest's)."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter("gateway"))
    logger = logging.getLogger("infaas.test")
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    yield stream
    logger.removeHandler(handler)


def lines(stream: io.StringIO) -> list[dict[str, object]]:
    return [orjson.loads(line) for line in stream.getvalue().splitlines()]


def test_a_line_is_json_with_the_bound_request_id_and_extra_fields(captured: io.StringIO) -> None:
    log = logging.getLogger("infaas.test")
    log.info("no request yet")
    with request_id_bound("req-42"):
        log.warning("chose %s", "variant-a", extra={"variant": "variant-a", "rows": 3})
    log.info("after")
    first, second, third = lines(captured)
    assert first["msg"] == "no request yet" and "request_id" not in first
    assert second["request_id"] == "req-42" and second["msg"] == "chose variant-a"
    assert second["level"] == "warning" and second["service"] == "gateway"
    assert second["logger"] == "infaas.test" and second["variant"] == "variant-a" and second["rows"] == 3
    assert str(second["ts"]).endswith("+00:00")
    assert "request_id" not in third


def test_exceptions_and_odd_extra_values_are_kept(captured: io.StringIO) -> None:
    log = logging.getLogger("infaas.test")
    token = bind_request_id("r1")
    try:
        raise ValueError("boom")
    except ValueError:
        log.exception("failed", extra={"path": object.__new__(type("Thing", (), {}))})
    finally:
        request_id_var.reset(token)
    (entry,) = lines(captured)
    assert entry["request_id"] == "r1" and "ValueError: boom" in str(entry["exc"])
    assert "Thing object" in str(entry["path"])
    assert request_id_var.get() is None


def test_configure_logging_sends_everything_as_json_lines() -> None:
    root = logging.getLogger()
    saved = (list(root.handlers), root.level)
    stream = io.StringIO()
    try:
        configure_logging("executor", level="info", stream=stream)
        logging.getLogger("uvicorn.error").warning("from uvicorn")
        logging.getLogger("infaas.x").debug("below the level")
    finally:
        for h in list(root.handlers):
            root.removeHandler(h)
        for h in saved[0]:
            root.addHandler(h)
        root.setLevel(saved[1])
    (entry,) = lines(stream)
    assert (
        entry["service"] == "executor"
        and entry["logger"] == "uvicorn.error"
        and entry["msg"] == "from uvicorn"
    )


@pytest.mark.parametrize(
    ("given", "kept"),
    [(b"abc-123_x.y:z", True), (b"", False), (None, False), (b"a" * 129, False), (b"bad id\n{", False)],
)
def test_only_plain_request_ids_are_taken_from_callers(given: bytes | None, kept: bool) -> None:
    rid = accept_request_id(given)
    assert (rid == (given or b"").decode()) is kept
    assert rid and len(rid) <= 128


def _app(stream: io.StringIO) -> FastAPI:
    app = FastAPI()
    install_common(app, service="test", internal_key=None)
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter("test"))
    log = logging.getLogger("infaas.test.app")
    log.addHandler(handler)
    log.setLevel(logging.INFO)

    @app.get("/hello")
    async def hello(request: Request) -> dict[str, str]:
        log.info("handling")
        return {"forwarded": request_id(request)}

    @app.get("/missing")
    async def missing() -> None:
        log.info("about to fail")
        raise NotFound("nothing here")

    return app


def test_each_request_gets_an_id_in_its_logs_its_response_and_what_it_forwards() -> None:
    stream = io.StringIO()
    with TestClient(_app(stream)) as client:
        given = client.get("/hello", headers={"X-Request-Id": "from-client-1"})
        made = client.get("/hello")
        refused = client.get("/hello", headers={"X-Request-Id": "no spaces allowed"})
        error = client.get("/missing", headers={"X-Request-Id": "err-7"})
    assert given.headers["x-request-id"] == "from-client-1" == given.json()["forwarded"]
    new_id = made.headers["x-request-id"]
    assert len(new_id) == 32 and made.json()["forwarded"] == new_id
    assert refused.headers["x-request-id"] != "no spaces allowed"
    assert error.status_code == 404 and error.headers["x-request-id"] == "err-7"
    assert [e["request_id"] for e in lines(stream)] == [
        "from-client-1",
        new_id,
        refused.headers["x-request-id"],
        "err-7",
    ]
    assert request_id_var.get() is None
