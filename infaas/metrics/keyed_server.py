"""The `/metrics` port of a process that has no HTTP app of its own (the profiler's Celery worker):
Prometheus's WSGI exposition behind the internal key, like every internal service's `/metrics`.

prometheus_client's own `start_http_server` answers anyone who can reach the port, and names itself in a
`Server` header; this one answers 401 without the key (`x-infaas-internal`, or the bearer token that
Prometheus's `authorization` scrape setting sends) and sends no `Server` header. `/health` stays open.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any
from wsgiref.simple_server import ServerHandler, WSGIRequestHandler, make_server

import orjson
from prometheus_client import CollectorRegistry, make_wsgi_app
from prometheus_client.exposition import ThreadingWSGIServer

from infaas.core.credentials import carries_key

StartResponse = Callable[..., Any]
WsgiApp = Callable[[dict[str, Any], StartResponse], Iterable[bytes]]

_UNAUTHORIZED = orjson.dumps(
    {"error": {"code": "unauthorized", "message": "this internal port answers the suite's own services only"}}
)


class _Anonymous(ServerHandler):
    server_software = ""  # wsgiref writes `Server: WSGIServer/… CPython/…` unless this is empty


class _QuietHandler(WSGIRequestHandler):
    """No access log on stderr (scrapes every few seconds), and no `Server` header."""

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the base class's name)
        pass

    def send_header(self, keyword: str, value: str) -> None:  # the error pages' own header
        if keyword.lower() != "server":
            super().send_header(keyword, value)

    def handle(self) -> None:
        """`WSGIRequestHandler.handle`, with `_Anonymous` as the WSGI handler."""
        self.raw_requestline = self.rfile.readline(65537)
        if len(self.raw_requestline) > 65536:
            self.requestline = self.request_version = self.command = ""
            self.send_error(414)
            return
        if not self.parse_request():
            return
        wfile: Any = self.wfile  # a BufferedIOBase, which wsgiref writes to as the IO[bytes] it types
        handler = _Anonymous(self.rfile, wfile, self.get_stderr(), self.get_environ(), multithread=False)
        handler.request_handler = self  # type: ignore[attr-defined]  # wsgiref's back-pointer for logging
        handler.run(self.server.get_app())  # type: ignore[attr-defined]


def keyed(app: WsgiApp, key: str) -> WsgiApp:
    """`app` behind the internal key (`/health` open)."""
    expected = key.encode()

    def guarded(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        if environ.get("PATH_INFO") == "/health":
            start_response("200 OK", [("Content-Type", "application/json")])
            return [b'{"status":"ok"}']
        header, bearer = environ.get("HTTP_X_INFAAS_INTERNAL"), environ.get("HTTP_AUTHORIZATION")
        # WSGI decodes header bytes as latin-1: encoding back gives the bytes sent.
        if not carries_key(
            None if header is None else header.encode("latin-1"),
            None if bearer is None else bearer.encode("latin-1"),
            expected,
        ):
            start_response("401 Unauthorized", [("Content-Type", "application/json")])
            return [_UNAUTHORIZED]
        return app(environ, start_response)

    return guarded


def start_keyed_metrics_server(
    port: int, *, addr: str, registry: CollectorRegistry, key: str
) -> tuple[ThreadingWSGIServer, threading.Thread]:
    """Serve `registry` on `addr:port` behind `key`, from a daemon thread; returns the server and thread."""
    server = make_server(
        addr, port, keyed(make_wsgi_app(registry), key), ThreadingWSGIServer, handler_class=_QuietHandler
    )
    thread = threading.Thread(target=server.serve_forever, name="metrics", daemon=True)
    thread.start()
    return server, thread
