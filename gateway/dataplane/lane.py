"""The query lane: the two query routes served straight from the ASGI server, ahead of FastAPI.

`POST /v1/apps/{app}/infer` and `POST /v1/models/{name}/infer` are the product's hot path. Through
FastAPI each one passed about ten ASGI layers (error and exception middlewares, FastAPI's own, the
body limit, request id, metrics, the router, the request/response wrapper), each wrapping `send` and
some building objects — a large share of the gateway's CPU per query (docs/benchmarks.md). This layer
does what those layers did for these two routes, once, and hands every other request to the app:
- the body limit (413 by Content-Length, or as soon as the bytes pass it);
- the request id (the caller's `X-Request-Id` or a new one), bound for logs and returned;
- the app's error rendering (`infaas.http.app`'s own helpers): an `InfaasError` is its JSON body and status,
  with `Retry-After` when it has one (every 503 has); anything else is logged and answered 500 `internal`;
- the gateway's authentication headers (`gateway/auth_headers.py`): `WWW-Authenticate` on 401, and
  `x-infaas-stale-auth` when cached auth data answered while the registry was unreachable;
- the HTTP metrics, under the same route templates.
The routes stay declared in the app for the OpenAPI schema, the SDKs, and for use without this layer.

Under our HTTP protocol (`infaas.http.server.InfaasHttpProtocol`) the two routes skip ASGI too: the server
asks `direct_route` and has `answer_direct` answer; this ASGI entry answers them the same way when the
server does not (another server, a test client, a request the protocol passes on).
"""

from __future__ import annotations

import logging
import time
from typing import Any

import orjson
from fastapi import FastAPI
from starlette.types import ASGIApp, Receive, Scope, Send
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

from gateway.auth_headers import STALE_AGES, headers_for
from gateway.dataplane.routes import QUERY_ROUTES, QueryBuilder, respond
from gateway.state import GatewayState
from infaas.core.errors import InfaasError, PayloadTooLarge
from infaas.core.logs import accept_request_id, request_id_var
from infaas.http.app import internal_error_body, retry_after
from infaas.http.server import declares_more_than
from infaas.metrics.buffer import BUFFER
from infaas.metrics.http import metrics_for

log = logging.getLogger("infaas.gateway")

Route = tuple[str, QueryBuilder, str]  # (template, query builder, app or model name)
_ROUTES: dict[str, tuple[str, QueryBuilder]] = {r.kind: (r.template, r.build) for r in QUERY_ROUTES}
_RAW_ROUTES = {kind.encode(): route for kind, route in _ROUTES.items()}


class _Disconnected(Exception):
    """The client went away before its body arrived: there is nobody to answer."""


class QueryLane:
    def __init__(self, app: FastAPI, *, max_body_bytes: int, forwarded_allow_ips: str | None = None) -> None:
        self.app = app
        # uvicorn's proxy-headers middleware (X-Forwarded-For/-Proto from trusted proxies into the scope)
        # wraps every request when the server applies it; the query routes need only the client's
        # address, and only to count failed keys (`_client`, by the same trusted list), so the server
        # leaves it off and only the app's requests pass it.
        self.rest: ASGIApp = app
        self.trusted: Any = None  # the proxies whose X-Forwarded-For names the client (uvicorn's list)
        if forwarded_allow_ips is not None:
            proxied = ProxyHeadersMiddleware(app, trusted_hosts=forwarded_allow_ips)  # type: ignore[arg-type]
            self.rest = proxied  # type: ignore[assignment]
            self.trusted = proxied.trusted_hosts
        self.max_body_bytes = max_body_bytes
        self.requests, self.seconds = metrics_for("gateway")  # the same collectors as the app's
        self._bound: dict[tuple[str, int], tuple[Any, Any]] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        route = _match(scope) if scope["type"] == "http" else None
        if route is None:
            await self.rest(scope, receive, send)
            return
        headers = dict(reversed(scope["headers"]))  # a handful of pairs; the first of a repeated one wins
        try:
            body = await self._body(headers, receive)
        except _Disconnected:
            return
        peer = scope.get("client")
        status, content, extra = await self.answer_direct(route, headers, body, peer[0] if peer else None)
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(content)).encode()),
                    *extra,
                ],
            }
        )
        await send({"type": "http.response.body", "body": content})

    def direct_route(self, method: bytes, url: bytes) -> Route | None:
        """The route of a query request as the HTTP server sees it (method, raw URL), for it to answer
        without ASGI (`infaas.http.server.InfaasHttpProtocol`); None for anything else, and for a URL
        with a query string, an escape or other than ASCII, which the ASGI way decodes."""
        if method != b"POST" or b"?" in url or b"%" in url or not url.isascii():
            return None
        parts = url.split(b"/")
        if len(parts) != 5 or parts[0] or parts[1] != b"v1" or parts[4] != b"infer" or not parts[3]:
            return None
        route = _RAW_ROUTES.get(parts[2])
        return (route[0], route[1], parts[3].decode()) if route is not None else None

    async def answer_direct(
        self, route: Route, headers: dict[bytes, bytes], body: bytes | None, peer: str | None
    ) -> tuple[int, bytes, list[tuple[bytes, bytes]]]:
        """(status, JSON body, headers beyond content-type and -length) for one query; `body` None when
        it was over the limit. Every error is rendered here, as the app renders it."""
        template, build, name = route
        start = time.perf_counter()
        rid = accept_request_id(headers.get(b"x-request-id"))
        token = request_id_var.set(rid)
        stale: list[float] = []
        stale_token = STALE_AGES.set(stale)
        extra = [(b"x-request-id", rid.encode())]
        try:
            if body is None:
                limit = self.max_body_bytes
                raise PayloadTooLarge(f"the request body is larger than {limit} bytes", limit=limit)
            state: GatewayState = self.app.state.gateway
            auth = headers.get(b"authorization")
            authorization = auth.decode("latin-1") if auth is not None else None
            query = await build(state, authorization, self._client(peer, headers), name, body, rid)
            status, content = 200, await respond(state, query)
        except InfaasError as exc:
            status, content = exc.status, orjson.dumps(exc.to_body())
            retry = retry_after(exc)
            if retry is not None:
                extra.append((b"retry-after", retry.encode()))
        except Exception:
            log.exception("unhandled error in gateway")
            status, content = 500, internal_error_body("gateway")
        finally:
            request_id_var.reset(token)
            STALE_AGES.reset(stale_token)
        if status == 401 or stale:
            extra += headers_for(status, stale)
        counter, timer = self._children(template, status)
        BUFFER.inc(counter)
        BUFFER.observe(timer, time.perf_counter() - start)
        return status, content, extra

    def _client(self, peer: str | None, headers: dict[bytes, bytes]) -> str | None:
        """The caller's address (failed key verifications count against it): the peer, or the client a
        trusted proxy names in X-Forwarded-For, as uvicorn's middleware resolves it for the app."""
        forwarded = headers.get(b"x-forwarded-for")
        if forwarded is None or self.trusted is None or peer not in self.trusted:
            return peer
        host: str = self.trusted.get_trusted_client_address(forwarded.decode("latin-1"))[0]
        return host or peer

    def _children(self, template: str, status: int) -> tuple[Any, Any]:
        """The metrics' label children, bound once per (route, status)."""
        found = self._bound.get((template, status))
        if found is None:
            found = (
                self.requests.labels("POST", template, str(status)),
                self.seconds.labels("POST", template),
            )
            self._bound[(template, status)] = found
        return found

    async def _body(self, headers: dict[bytes, bytes], receive: Receive) -> bytes | None:
        """The request body, or None once it is known to be over the limit (`answer_direct` refuses it)."""
        limit = self.max_body_bytes
        if declares_more_than(headers, limit):
            return None
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise _Disconnected
            chunk: bytes = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                return None
            chunks.append(chunk)
            if not message.get("more_body", False):
                return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def _match(scope: Scope) -> Route | None:
    """(template, query builder, name) for `POST /v1/{apps|models}/<name>/infer`, else None (the
    app's router then answers it, redirects and 405s included)."""
    if scope["method"] != "POST":
        return None
    parts = scope["path"].split("/")
    if len(parts) != 5 or parts[0] or parts[1] != "v1" or parts[4] != "infer" or not parts[3]:
        return None
    route = _ROUTES.get(parts[2])
    return (route[0], route[1], parts[3]) if route is not None else None
