"""Request metrics are labelled by route template, plain Starlette routes (the hot query routes) too."""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.testclient import TestClient
from starlette.responses import Response
from starlette.routing import Route

from infaas.http.app import install_common


async def plain(_request: Request) -> Response:
    return Response(b"ok")


def test_every_route_kind_is_labelled_by_its_template() -> None:
    app = FastAPI()
    install_common(app, service="labels", internal_key=None)
    app.router.routes.append(Route("/v1/apps/{app}/infer", plain, methods=["POST"]))

    @app.get("/things/{thing}")
    async def thing(thing: str) -> dict[str, str]:
        return {"thing": thing}

    with TestClient(app) as client:
        client.post("/v1/apps/shop/infer")
        client.post("/v1/apps/other/infer")
        client.get("/things/1")
        client.get("/nowhere")
        text = client.get("/metrics").text
    lines = {line for line in text.splitlines() if line.startswith("infaas_labels_http_requests_total{")}
    assert lines == {
        'infaas_labels_http_requests_total{code="200",method="POST",route="/v1/apps/{app}/infer"} 2.0',
        'infaas_labels_http_requests_total{code="200",method="GET",route="/things/{thing}"} 1.0',
        'infaas_labels_http_requests_total{code="404",method="GET",route="unmatched"} 1.0',
    }
