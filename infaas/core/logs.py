"""Structured logs: one JSON object per line, each carrying the request id of the query it belongs to.

The request id lives in a context variable: the HTTP middleware (`infaas.http.app`) binds it per request,
and code that handles a query outside a request (the executor's batch loop, a Celery task) binds the
id it received in the frame with `bind_request_id`. Every log record made while it is bound carries it.
"""

from __future__ import annotations

import itertools
import logging
import secrets
import sys
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar, Token
from datetime import UTC, datetime
from typing import Any, TextIO

import orjson
from starlette.types import ASGIApp, Message, Receive, Scope, Send

request_id_var: ContextVar[str | None] = ContextVar("infaas_request_id", default=None)
"""The id of the request (query) being handled in this context, if any."""

# Attributes every LogRecord has; anything else on a record came from `extra=` and is logged as a field.
_STANDARD = frozenset(
    logging.LogRecord("", 0, "", 0, "", (), None).__dict__.keys() | {"message", "asctime", "taskName"}
)


def bind_request_id(rid: str | None) -> Token[str | None]:
    """Make `rid` the current request id; returns the token `request_id_var.reset` takes to undo it."""
    return request_id_var.set(rid)


@contextmanager
def request_id_bound(rid: str | None) -> Iterator[None]:
    """`with request_id_bound(rid):` — the id is bound for the block and restored after it."""
    token = request_id_var.set(rid)
    try:
        yield
    finally:
        request_id_var.reset(token)


class JsonFormatter(logging.Formatter):
    """`{"ts", "level", "service", "logger", "msg", "request_id"?, ...extra fields, "exc"?}` per line."""

    def __init__(self, service: str) -> None:
        super().__init__()
        self.service = service

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "service": self.service,
            "logger": record.name,
            "msg": record.getMessage(),
        }
        rid = getattr(record, "request_id", None) or request_id_var.get()
        if rid:
            entry["request_id"] = rid
        for key, value in record.__dict__.items():
            if key not in _STANDARD and key not in entry and not key.startswith("_"):
                entry[key] = value
        if record.exc_info:
            entry["exc"] = "".join(traceback.format_exception(*record.exc_info)).rstrip()
        # default=str: an extra field that JSON cannot hold is logged as its text, never dropped.
        return orjson.dumps(entry, default=str).decode()


def configure_logging(service: str, *, level: str = "info", stream: TextIO | None = None) -> logging.Handler:
    """Send every log record of this process, as JSON lines, to `stream` (stderr by default).

    Replaces the root handlers (this is the process's logging set-up, called once at start) and makes
    uvicorn's and Celery's loggers propagate to it, so their lines are JSON too.
    """
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter(service))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access", "celery"):
        logger = logging.getLogger(name)
        logger.handlers.clear()
        logger.propagate = True
    # httpx logs every request at info: the control loops' polling would drown everything else.
    for name in ("httpx", "httpcore"):
        logging.getLogger(name).setLevel(max(logging.WARNING, root.level))
    return handler


def configure_worker_logging(service: str, *, level: str = "info") -> None:
    """`configure_logging` for a Celery worker process, whose libraries print warnings (Celery's
    SecurityWarning when run as root): Python warnings become log records, so JSON lines too. Celery's
    shutdown notices ("worker: Warm shutdown") are written straight to the stdout file descriptor past
    logging and every setting (`celery.apps.worker.safe_say`): they are logged instead."""
    from celery.apps import worker as celery_worker  # here: only worker processes import Celery

    configure_logging(service, level=level)
    logging.captureWarnings(True)
    celery_worker.safe_say = _celery_says


def _celery_says(msg: str, *_stream: object) -> None:
    logging.getLogger("celery.apps.worker").info(msg.strip())


# Ids from outside are logged and forwarded, so only short, plain ones are taken as they are.
_ID_CHARS = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.:")


_ID_PREFIX = secrets.token_hex(8)
_ID_COUNTER = itertools.count()


def new_request_id() -> str:
    """32 hex characters, unique without a syscall: this process's random prefix and a counter (a
    `uuid4` reads the kernel's random source on every call, which on the query path is not free)."""
    return f"{_ID_PREFIX}{next(_ID_COUNTER):016x}"


def accept_request_id(value: bytes | None) -> str:
    """The caller's `X-Request-Id` if it is 1–128 plain characters, else a new id."""
    if value and len(value) <= 128 and all(c in _ID_CHARS for c in value):
        return value.decode()
    return new_request_id()


class RequestIdMiddleware:
    """Binds each HTTP request's id (the caller's `X-Request-Id`, or a new one) for its logs and
    returns it in the response's `X-Request-Id` header. Pure ASGI: a few µs per request."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        given = next((v for k, v in scope["headers"] if k == b"x-request-id"), None)
        rid = accept_request_id(given)
        header = (b"x-request-id", rid.encode())

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [h for h in message.get("headers", ()) if h[0].lower() != b"x-request-id"]
                message["headers"] = [*headers, header]
            await send(message)

        token = request_id_var.set(rid)
        try:
            await self.app(scope, receive, send_with_id)
        finally:
            request_id_var.reset(token)
