"""`infaas events`: what the planner decided and why, newest first (admin key)."""

from __future__ import annotations

from typing import Annotated

import typer

from infaas_cli.commands.api import (
    CliError,
    JsonOption,
    KeyOption,
    UrlOption,
    fail,
    gateway_client,
    print_result,
    print_table,
    request_json,
)

COLUMNS = ("id", "at", "kind", "action", "outcome", "model", "variant", "worker", "reason")


def events(
    url: UrlOption = None,
    key: KeyOption = None,
    as_json: JsonOption = False,
    limit: Annotated[int, typer.Option(min=1, max=1000, help="how many events")] = 20,
    model: Annotated[str | None, typer.Option(help="only this model's events")] = None,
    kind: Annotated[str | None, typer.Option(help="model_autoscaler or worker_autoscaler")] = None,
    action: Annotated[str | None, typer.Option(help="e.g. replicate, upgrade, add_worker")] = None,
    before: Annotated[int | None, typer.Option(help="events older than this id (paging)")] = None,
) -> None:
    """Scaling decisions and their outcomes, each with its reason."""
    params: dict[str, str | int] = {"limit": limit}
    for name, value in (("model", model), ("kind", kind), ("action", action), ("before", before)):
        if value is not None:
            params[name] = value
    try:
        with gateway_client(url, key) as client:
            page = request_json(client, "GET", "/v1/events", params=params)
    except CliError as exc:
        fail(exc, as_json)
    if as_json:
        print_result(page, True)
    else:
        print_table(page["events"], COLUMNS)


def register(app: typer.Typer) -> None:
    app.command("events")(events)
