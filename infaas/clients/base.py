"""Shared plumbing of the typed service clients: timeouts, error mapping, principal headers.

Every client takes the suite's internal key (`internal_key`) and sends it on each request
(`infaas.core.credentials`): internal services refuse requests without it."""

from __future__ import annotations

from typing import Protocol
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


def unavailable(service: str, exc: httpx.HTTPError) -> InfaasError:
    return Unavailable(f"{service} is unreachable", service=service, reason=type(exc).__name__)
