"""The admin web UI at `/ui`: server-rendered pages over the same data as the API (admin key).

Signing in posts the admin key once; it is kept in an HttpOnly, SameSite=Strict cookie scoped to
`/ui` (never in a URL, never readable by script) and checked like a Bearer key on every page. Pages
send a strict Content-Security-Policy: no script runs, nothing is loaded from elsewhere.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Form, Header, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from jinja2 import Environment, PackageLoader, select_autoescape

from gateway.ui import data
from gateway.ui.charts import model_charts
from infaas.core.errors import Forbidden, InfaasError, Unauthorized
from infaas.http.app import json_response
from infaas.schemas.api import Principal

router = APIRouter(prefix="/ui", include_in_schema=False)

COOKIE = "infaas_admin"
COOKIE_MAX_AGE_S = 8 * 3600
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


def render(name: str, status: int = 200, **context: Any) -> HTMLResponse:
    html = templates.get_template(name).render(refresh_s=REFRESH_S, **context)
    return HTMLResponse(html, status_code=status, headers=_SECURITY_HEADERS)


async def _signed_in(request: Request) -> tuple[Principal, str] | None:
    key = request.cookies.get(COOKIE)
    if not key:
        return None
    try:
        principal = await data.gateway_state(request).auth.principal(f"Bearer {key}")
    except Unauthorized:
        return None
    return (principal, key) if principal.role == "admin" else None


Page = Callable[[Principal, str], Awaitable[Response]]


async def _page(request: Request, build: Page) -> Response:
    """Run a page for a signed-in admin; otherwise send them to the sign-in form. Errors of the
    services behind the page are shown as a page with their status, code and message."""
    who = await _signed_in(request)
    if who is None:
        return RedirectResponse("/ui/login", status_code=303, headers=_SECURITY_HEADERS)
    try:
        return await build(*who)
    except InfaasError as exc:
        return render("error.html", status=exc.status, page=None, error=exc.to_body()["error"])


@router.get("/static/ui.css")
async def stylesheet() -> Response:
    return Response(_CSS, media_type="text/css", headers={"Cache-Control": "max-age=300"})


@router.get("/login")
async def login_form(request: Request) -> Response:
    if await _signed_in(request) is not None:
        return RedirectResponse("/ui/", status_code=303)
    return render("login.html", page="login", error=None)


@router.post("/login")
async def login(request: Request, key: Annotated[str, Form(max_length=256)] = "") -> Response:
    """Check the key; an admin key is set as the session cookie, anything else is refused."""
    try:
        principal = await data.gateway_state(request).auth.principal(f"Bearer {key.strip()}")
    except Unauthorized as exc:
        return render("login.html", status=401, page="login", error=exc.message)
    if principal.role != "admin":
        return render(
            "login.html", status=403, page="login", error="this is an app key; sign in with the admin key"
        )
    response = RedirectResponse("/ui/", status_code=303, headers=_SECURITY_HEADERS)
    response.set_cookie(
        COOKIE,
        key.strip(),
        max_age=COOKIE_MAX_AGE_S,
        path="/ui",
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )
    return response


@router.post("/logout")
async def logout() -> Response:
    response = RedirectResponse("/ui/login", status_code=303, headers=_SECURITY_HEADERS)
    response.delete_cookie(COOKIE, path="/ui", httponly=True, samesite="strict")
    return response


@router.get("/")
async def home(request: Request) -> Response:
    async def build(principal: Principal, _key: str) -> Response:
        state = data.gateway_state(request)
        models = await state.registry.models(principal)
        workers = await state.registry.workers(principal)
        load = await data.load_page(request, workers)
        return render("home.html", page="home", models=models, workers=workers, load=load)

    return await _page(request, build)


@router.get("/apps")
async def apps(request: Request) -> Response:
    async def build(principal: Principal, _key: str) -> Response:
        found = await data.gateway_state(request).registry.apps(principal)
        return render("apps.html", page="apps", apps=found)

    return await _page(request, build)


@router.get("/models")
async def models(request: Request) -> Response:
    async def build(principal: Principal, _key: str) -> Response:
        found = await data.gateway_state(request).registry.models(principal)
        return render("models.html", page="models", models=found)

    return await _page(request, build)


@router.get("/models/{name}")
async def model(name: str, request: Request) -> Response:
    async def build(principal: Principal, _key: str) -> Response:
        registry = data.gateway_state(request).registry
        found = await registry.model(principal, name)
        variants = await registry.variants(principal, name)
        charts = model_charts(found.name, variants)
        return render("model.html", page="models", model=found, variants=variants, charts=charts)

    return await _page(request, build)


@router.get("/workers")
async def workers(request: Request) -> Response:
    async def build(principal: Principal, _key: str) -> Response:
        state = data.gateway_state(request)
        found = await state.registry.workers(principal)
        rows = await data.instances(state, found)
        return render("workers.html", page="workers", workers=found, instances=rows)

    return await _page(request, build)


@router.get("/load")
async def load(request: Request) -> Response:
    async def build(principal: Principal, _key: str) -> Response:
        found = await data.gateway_state(request).registry.workers(principal)
        return render("load.html", page="load", load=await data.load_page(request, found), refresh=True)

    return await _page(request, build)


@router.get("/events")
async def events(request: Request) -> Response:
    async def build(_principal: Principal, key: str) -> Response:
        answer = await data.api_get(request, key, "/v1/events")
        return render("events.html", page="events", answer=answer, refresh=True)

    return await _page(request, build)


@router.get("/jobs")
async def jobs(request: Request) -> Response:
    async def build(_principal: Principal, key: str) -> Response:
        answer = await data.api_get(request, key, "/v1/jobs")
        return render("jobs.html", page="jobs", answer=answer, refresh=True)

    return await _page(request, build)


@router.get("/api/status")
async def status(
    request: Request, authorization: Annotated[str | None, Header(alias="Authorization")] = None
) -> Response:
    """Workers, instances and load as JSON, for `infaas status` (admin key as Bearer, or the UI's
    cookie). Rates are over the window since this gateway process's previous scrape."""
    if authorization:
        principal = await data.gateway_state(request).auth.principal(authorization)
    else:
        who = await _signed_in(request)
        if who is None:
            raise Unauthorized("missing API key: send 'Authorization: Bearer <admin key>'")
        principal = who[0]
    if principal.role != "admin":
        raise Forbidden("the status view needs the admin key")
    state = data.gateway_state(request)
    workers = await state.registry.workers(principal)
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
