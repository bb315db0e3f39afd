"""Request metrics for any service's HTTP app, as a thin ASGI middleware (no per-request objects
beyond the timer), labelled by route template so cardinality stays low."""

from __future__ import annotations

import time

from prometheus_client import Counter, Histogram
from starlette.types import ASGIApp, Message, Receive, Scope, Send

_METRICS: dict[str, tuple[Counter, Histogram]] = {}


def metrics_for(service: str) -> tuple[Counter, Histogram]:
    # Starlette may build the middleware stack more than once; the collectors must exist once.
    if service not in _METRICS:
        _METRICS[service] = (
            Counter(f"infaas_{service}_http_requests_total", "HTTP requests", ["method", "route", "code"]),
            Histogram(
                f"infaas_{service}_http_request_duration_seconds",
                "HTTP request duration",
                ["method", "route"],
                buckets=(0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
            ),
        )
    return _METRICS[service]


class RequestMetrics:
    def __init__(self, app: ASGIApp, *, service: str) -> None:
        self.app = app
        self.requests, self.seconds = metrics_for(service)
        self._templates: dict[object, str] | None = None

    def _template_of(self, scope: Scope) -> str:
        """The path template of a plain Starlette route (the hot query routes are mounted as such, and
        only FastAPI's routes put themselves in the scope), found by its endpoint."""
        if self._templates is None:
            routes = getattr(scope.get("app"), "routes", ())
            self._templates = {
                r.endpoint: r.path for r in routes if hasattr(r, "endpoint") and hasattr(r, "path")
            }
        return self._templates.get(scope.get("endpoint"), "unmatched")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status = 500

        async def send_wrapper(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_wrapper)
        finally:
            route = scope.get("route")
            template = getattr(route, "path", None) or self._template_of(scope)
            if template not in ("/metrics", "/health"):
                self.requests.labels(scope["method"], template, str(status)).inc()
                self.seconds.labels(scope["method"], template).observe(time.perf_counter() - start)
