"""The admin web UI at `/ui`: server-rendered pages over the same data as the API (admin key).

Signing in posts the admin key once; the browser gets a random session id (`gateway/ui/sessions.py`) in
an HttpOnly, SameSite=Strict cookie scoped to `/ui`, never the key. Every page resolves the session in
Redis (none, expired or signed out: back to the sign-in form); what a page reads it reads as the admin,
the gateway's own identity, never with anything from the browser. The one form that changes state,
sign-out, carries the session's CSRF token. Pages send a strict Content-Security-Policy: no script
runs, nothing is loaded from elsewhere.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Form, Header, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from jinja2 import Environment, PackageLoader, select_autoescape

from gateway.deps import client_address
from gateway.ui import data
from gateway.ui.charts import model_charts, parity_loss_chart
from gateway.ui.pipeline_graph import pipeline_svg
from gateway.ui.sessions import Session, SessionStore
from infaas.core.errors import Forbidden, InfaasError, Unauthorized, Unavailable
from infaas.http.app import json_response, retry_after
from infaas.schemas.api import ADMIN

router = APIRouter(prefix="/ui", include_in_schema=False)

COOKIE = "infaas_session"
COOKIE_PATH = "/ui"
CSRF_FIELD = "csrf"
"""Who a page reads the system as: a session exists only for someone who presented the admin key."""
REFRESH_S = 5
_CSS = (Path(__file__).parent / "static" / "ui.css").read_bytes()
_SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; "
        "frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}

templates = Environment(
    loader=PackageLoader("gateway.ui", "templates"), autoescape=select_autoescape(), enable_async=False
)


def _num(value: float | None, digits: int = 2) -> str:
    return "—" if value is None else f"{value:,.{digits}f}"


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value * 100:.1f} %"


def _sig(value: float | None) -> str:
    return "—" if value is None else f"{value:.3g}"


templates.filters["num"] = _num
templates.filters["sig"] = _sig
templates.filters["pct"] = _pct


def render(name: str, status: int = 200, *, session: Session | None = None, **context: Any) -> HTMLResponse:
    """A page; with the session, its navigation carries the sign-out form and that form's CSRF token."""
    csrf = session.csrf if session is not None else None
    html = templates.get_template(name).render(refresh_s=REFRESH_S, csrf=csrf, **context)
    return HTMLResponse(html, status_code=status, headers=_SECURITY_HEADERS)


def _error_page(exc: InfaasError, session: Session | None = None) -> HTMLResponse:
    page = None if session is not None else "login"  # no navigation for someone not signed in
    return render("error.html", status=exc.status, session=session, page=page, error=exc.to_body()["error"])


def _store(request: Request) -> SessionStore:
    store: SessionStore | None = request.app.state.ui_sessions
    if store is None:
        raise Unavailable("the admin UI needs Redis for its sessions: set INFAAS_REDIS_URL")
    return store


async def _session(request: Request) -> Session | None:
    return await _store(request).resolve(request.cookies.get(COOKIE))


def _to_login(request: Request) -> Response:
    """Back to the sign-in form; a cookie that named no live session is cleared on the way."""
    response = RedirectResponse("/ui/login", status_code=303, headers=_SECURITY_HEADERS)
    if COOKIE in request.cookies:
        _clear_cookie(request, response)
    return response


def _clear_cookie(request: Request, response: Response) -> None:
    response.delete_cookie(
        COOKIE, path=COOKIE_PATH, httponly=True, samesite="strict", secure=request.url.scheme == "https"
    )


View = tuple[str, dict[str, Any]]
"""A page to render: its template and what the template shows."""
Page = Callable[[], Awaitable[View]]


async def _page(request: Request, build: Page) -> Response:
    """Run a page for a signed-in admin; otherwise send them to the sign-in form. Errors of the
    services behind the page (the session store included) are shown as a page with their status, code
    and message."""
    try:
        session = await _session(request)
    except InfaasError as exc:
        return _error_page(exc)
    if session is None:
        return _to_login(request)
    try:
        name, context = await build()
    except InfaasError as exc:
        return _error_page(exc, session)
    return render(name, session=session, **context)


@router.get("/static/ui.css")
async def stylesheet() -> Response:
    return Response(_CSS, media_type="text/css", headers={"Cache-Control": "max-age=300"})


def _login_page(request: Request, status: int, error: str | None) -> Response:
    ttl = data.gateway_state(request).settings.ui_session_ttl_s
    lasts = f"{ttl / 3600:g} h" if ttl >= 3600 else f"{ttl / 60:g} min" if ttl >= 60 else f"{ttl:g} s"
    return render("login.html", status=status, page="login", error=error, session_lasts=lasts)


@router.get("/login")
async def login_form(request: Request) -> Response:
    try:
        if await _session(request) is not None:
            return RedirectResponse("/ui/", status_code=303)
    except InfaasError as exc:
        return _login_page(request, exc.status, exc.message)
    return _login_page(request, 200, None)


@router.post("/login")
async def login(request: Request, key: Annotated[str, Form(max_length=256)] = "") -> Response:
    """Check the key; for the admin key start a session and set its id as the cookie, anything else is
    refused. A session this browser already had ends here: one browser, one live session."""
    try:
        principal = await data.gateway_state(request).auth.principal(
            f"Bearer {key.strip()}", client_address(request)
        )
    except Unauthorized as exc:
        return _login_page(request, 401, exc.message)
    except InfaasError as exc:  # too many failed keys from this address (429), the registry down (503)
        page = _login_page(request, exc.status, exc.message)
        if (retry := retry_after(exc)) is not None:
            page.headers["Retry-After"] = retry
        return page
    if principal.role != "admin":
        return _login_page(request, 403, "this is an app key; sign in with the admin key")
    try:
        store = _store(request)
        if previous := request.cookies.get(COOKIE):
            await store.revoke(previous)
        session = await store.create()
    except InfaasError as exc:
        return _login_page(request, exc.status, exc.message)
    response = RedirectResponse("/ui/", status_code=303, headers=_SECURITY_HEADERS)
    response.set_cookie(
        COOKIE,
        session.id,
        max_age=max(1, int(store.ttl_s)),
        path=COOKIE_PATH,
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )
    return response


@router.post("/logout")
async def logout(
    request: Request, csrf: Annotated[str, Form(alias=CSRF_FIELD, max_length=256)] = ""
) -> Response:
    """End the session in Redis (its id no longer works, even replayed) and clear the cookie. The form
    must carry the session's CSRF token: a sign-out posted from another site is refused."""
    try:
        session = await _session(request)
        if session is not None:
            if not session.csrf_matches(csrf):
                raise Forbidden(
                    "sign-out must come from this UI's own page (its CSRF token is missing or wrong)"
                )
            await _store(request).revoke(session.id)
    except InfaasError as exc:
        return _error_page(exc)
    response = RedirectResponse("/ui/login", status_code=303, headers=_SECURITY_HEADERS)
    _clear_cookie(request, response)
    return response


@router.get("/")
async def home(request: Request) -> Response:
    async def build() -> View:
        state = data.gateway_state(request)
        models = await state.registry.models(ADMIN)
        workers = await state.registry.workers(ADMIN)
        load = await data.load_page(request, workers)
        return "home.html", {"page": "home", "models": models, "workers": workers, "load": load}

    return await _page(request, build)


@router.get("/apps")
async def apps(request: Request) -> Response:
    async def build() -> View:
        return "apps.html", {"page": "apps", "apps": await data.gateway_state(request).registry.apps(ADMIN)}

    return await _page(request, build)


@router.get("/models")
async def models(request: Request) -> Response:
    async def build() -> View:
        found = await data.gateway_state(request).registry.models(ADMIN)
        return "models.html", {"page": "models", "models": found}

    return await _page(request, build)


@router.get("/models/{name}")
async def model(name: str, request: Request) -> Response:
    async def build() -> View:
        registry = data.gateway_state(request).registry
        found = await registry.model(ADMIN, name)
        variants = await registry.variants(ADMIN, name)
        parity = await registry.parity(ADMIN, name)
        charts = model_charts(found.name, variants)
        context = {"model": found, "variants": variants, "charts": charts, "parity": parity}
        if parity is not None:
            context["parity_chart"] = parity_loss_chart(parity)
        return "model.html", {"page": "models", **context}

    return await _page(request, build)


@router.get("/pipelines")
async def pipelines(request: Request) -> Response:
    async def build() -> View:
        found = await data.gateway_state(request).registry.pipelines(ADMIN)
        graphs = {p.name: pipeline_svg(p) for p in found}
        return "pipelines.html", {"page": "pipelines", "pipelines": found, "graphs": graphs}

    return await _page(request, build)


@router.get("/workers")
async def workers(request: Request) -> Response:
    async def build() -> View:
        state = data.gateway_state(request)
        found = await state.registry.workers(ADMIN)
        rows = await data.instances(state, found)
        return "workers.html", {"page": "workers", "workers": found, "instances": rows}

    return await _page(request, build)


@router.get("/load")
async def load(request: Request) -> Response:
    async def build() -> View:
        found = await data.gateway_state(request).registry.workers(ADMIN)
        page = await data.load_page(request, found)
        charts = data.load_charts(request)
        return "load.html", {"page": "load", "load": page, "charts": charts, "refresh": True}

    return await _page(request, build)


@router.get("/events")
async def events(request: Request) -> Response:
    async def build() -> View:
        answer = await data.api_get(request, "/v1/events")
        return "events.html", {"page": "events", "answer": answer, "refresh": True}

    return await _page(request, build)


@router.get("/jobs")
async def jobs(request: Request) -> Response:
    async def build() -> View:
        answer = await data.api_get(request, "/v1/jobs")
        return "jobs.html", {"page": "jobs", "answer": answer, "refresh": True}

    return await _page(request, build)


@router.get("/api/status")
async def status(
    request: Request, authorization: Annotated[str | None, Header(alias="Authorization")] = None
) -> Response:
    """Workers, instances and load as JSON, for `infaas status` (admin key as Bearer, or a UI
    session's cookie). Rates are over the window since this gateway process's previous scrape."""
    if authorization:
        principal = await data.gateway_state(request).auth.principal(authorization, client_address(request))
        if principal.role != "admin":
            raise Forbidden("the status view needs the admin key")
    elif await _session(request) is None:
        raise Unauthorized("missing API key: send 'Authorization: Bearer <admin key>'")
    state = data.gateway_state(request)
    workers = await state.registry.workers(ADMIN)
    instances = await data.instances(state, workers)
    load = await data.load_page(request, workers)
    return json_response(
        {
            "workers": [w.model_dump(mode="json") for w in workers],
            "instances": [dataclasses.asdict(i) for i in instances],
            "load": {
                "window": dataclasses.asdict(load.window) if load.window else None,
                "since_start": dataclasses.asdict(load.since_start),
                "sources": load.scrape.sources,
                "unreachable": load.scrape.unreachable,
            },
        }
    )
