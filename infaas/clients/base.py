"""Shared plumbing of the typed service clients: timeouts, error mapping, principal headers.

Every client takes the suite's internal key (`internal_key`) and sends it on each request
(`infaas.core.credentials`): internal services refuse requests without it."""

from __future__ import annotations

from typing import Any, Protocol
from urllib.parse import quote

import httpx
import orjson

from infaas.core.errors import InfaasError, Unavailable, error_from_body
from infaas.schemas.api import Principal

DEFAULT_TIMEOUT = httpx.Timeout(10.0, connect=2.0)
ROLE_HEADER = "x-infaas-role"
APP_HEADER = "x-infaas-app"


def segment(value: str | int) -> str:
    """One path parameter as it goes into an internal URL: percent-encoded whole, so `?`, `#`, `/`, `%`,
    spaces or control characters stay inside it instead of cutting the URL short or making it invalid;
    `.` and `..` encoded too, or the URL's dot segments would be resolved away."""
    text = str(value)
    if text in (".", ".."):
        return text.replace(".", "%2E")
    return quote(text, safe="")


def principal_headers(principal: Principal | None) -> dict[str, str]:
    """The caller's identity, as the gateway vouches for it to internal services."""
    if principal is None:
        return {}
    headers: dict[str, str] = {ROLE_HEADER: principal.role}
    if principal.app:
        headers[APP_HEADER] = principal.app
    return headers


class HasStatusAndContent(Protocol):
    @property
    def status_code(self) -> int: ...

    @property
    def content(self) -> bytes: ...


def raise_for_error(response: HasStatusAndContent) -> None:
    """Turn another service's JSON error into the same domain exception here."""
    if response.status_code < 400:
        return
    try:
        body = orjson.loads(response.content)
    except orjson.JSONDecodeError:
        body = None
    raise error_from_body(response.status_code, body)


IDEMPOTENT = frozenset({"GET", "HEAD", "PUT", "DELETE", "OPTIONS"})

CONNECTION_LOST = (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError)
"""What a request meets when the kept-alive connection it was put on had been closed by the other side
(a restart, an idle timeout, a crash): the request never ran, or ran on a service that is gone."""


async def request_once_more(
    http: httpx.AsyncClient, method: str, url: str, *, retry: bool | None = None, **kwargs: Any
) -> httpx.Response:
    """`http.request`, sent again once on a fresh connection when the pooled one turned out dead — for
    idempotent requests only (by method, or `retry=True` for a read sent as POST): one caller's broken
    connection must not fail another caller's request."""
    try:
        return await http.request(method, url, **kwargs)
    except CONNECTION_LOST:
        if not (method in IDEMPOTENT if retry is None else retry):
            raise
        return await http.request(method, url, **kwargs)  # httpx dropped the dead connection from its pool


def request_once_more_sync(
    http: httpx.Client, method: str, url: str, *, retry: bool | None = None, **kwargs: Any
) -> httpx.Response:
    """`request_once_more` for a blocking client."""
    try:
        return http.request(method, url, **kwargs)
    except CONNECTION_LOST:
        if not (method in IDEMPOTENT if retry is None else retry):
            raise
        return http.request(method, url, **kwargs)


def unavailable(service: str, exc: httpx.HTTPError) -> InfaasError:
    return Unavailable(f"{service} is unreachable", service=service, reason=type(exc).__name__)
