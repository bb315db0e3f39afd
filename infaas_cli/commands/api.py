"""What the CLI's client commands share: one HTTP client to the gateway, errors and output.

The CLI talks to a running gateway over HTTP like any other client (`--url`/`--key`, or the environment
variables `INFAAS_URL` and `INFAAS_KEY`). Without them it finds the suite `infaas run` started here the
way the suite itself is configured: the gateway on `INFAAS_GATEWAY_PORT` (8080 by default), the admin key
from `INFAAS_ADMIN_KEY` or `<INFAAS_VAR_DIR>/admin.key`. Other CLI modules (apps, models, query, jobs,
events, status) import `gateway_client`, `request_json`, `print_result` and the option aliases from here.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any, NoReturn

import httpx
import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from infaas.core.config import Settings

TIMEOUT = httpx.Timeout(60.0, connect=5.0)

UrlOption = Annotated[
    str | None,
    typer.Option(
        "--url",
        envvar="INFAAS_URL",
        help="gateway URL (default: this machine's gateway, on INFAAS_GATEWAY_PORT)",
        show_default=False,
    ),
]
KeyOption = Annotated[
    str | None,
    typer.Option(
        "--key",
        envvar="INFAAS_KEY",
        help="API key (admin or app); default INFAAS_KEY, then the suite's admin key "
        "(INFAAS_ADMIN_KEY, var/admin.key)",
        show_default=False,
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="print the gateway's JSON answer (for scripts)")]

console = Console()
err_console = Console(stderr=True)


class CliError(Exception):
    """A failure to show the user as one line (the gateway's error code and message)."""

    def __init__(self, message: str, *, status: int | None = None, body: object = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.body = body


def gateway_target(url: str | None, key: str | None) -> tuple[str, str]:
    """The gateway URL and key a command uses: the arguments, else `INFAAS_URL` / `INFAAS_KEY`, else the
    suite's own settings (its gateway port; its admin key, configured or generated under its var dir)."""
    settings = Settings()  # read now, not cached: a one-shot command, and tests vary the environment
    base = (url or os.environ.get("INFAAS_URL") or f"http://127.0.0.1:{settings.gateway_port}").rstrip("/")
    token = (
        key
        or os.environ.get("INFAAS_KEY")
        or settings.admin_key
        or stored_key(settings.var_dir / "admin.key")
    )
    return base, token


def stored_key(path: Path) -> str:
    """The key kept in a file (`var/admin.key`), or "" when there is none to read."""
    try:
        return path.read_text().strip()
    except OSError:
        return ""


def gateway_client(url: str | None, key: str | None) -> httpx.Client:
    """An HTTP client for the gateway with the key as its Bearer token (`gateway_target` picks both).

    Callers that bypass typer's envvar handling behave the same: the environment is read here too.
    """
    base, token = gateway_target(url, key)
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.Client(base_url=base, headers=headers, timeout=TIMEOUT)


def request_json(client: httpx.Client, method: str, path: str, **kwargs: Any) -> Any:
    """Send one request; the decoded JSON answer (None for 204), or `CliError` with the gateway's error."""
    try:
        response = client.request(method, path, **kwargs)
    except httpx.HTTPError as exc:
        raise CliError(f"cannot reach the gateway at {client.base_url}: {type(exc).__name__}: {exc}") from exc
    if response.status_code == 204 or not response.content:
        body: Any = None
    else:
        try:
            body = response.json()
        except ValueError:
            body = response.text
    if response.status_code >= 400:
        raise CliError(_error_text(response.status_code, body), status=response.status_code, body=body)
    return body


def _error_text(status: int, body: Any) -> str:
    err = body.get("error") if isinstance(body, dict) else None
    if isinstance(err, dict):  # /v1 shape: {"error": {"code", "message", ...}}
        details = {k: v for k, v in err.items() if k not in ("code", "message")}
        extra = f" {json.dumps(details, default=str)}" if details else ""
        return f"{status} {err.get('code', 'error')}: {err.get('message', '')}{extra}"
    if isinstance(err, str):  # /v2 (Open Inference Protocol) shape: {"error": "..."}
        return f"{status}: {err}"
    return f"{status}: {body}"


def fail(exc: CliError, as_json: bool) -> NoReturn:
    """Report a failure (as the gateway's JSON with --json) and exit with status 1."""
    if as_json and exc.body is not None:
        typer.echo(json.dumps(exc.body, indent=2, default=str), err=True)
    else:
        err_console.print(f"[red]error:[/red] {escape(exc.message)}", highlight=False)
    raise typer.Exit(1)


def print_result(data: object, as_json: bool) -> None:
    """Print an answer: JSON for scripts, else a table (list of objects) or key/value lines (object)."""
    if as_json:
        typer.echo(json.dumps(data, indent=2, default=str))
        return
    if isinstance(data, list) and all(isinstance(row, dict) for row in data):
        print_table(data)
    elif isinstance(data, dict):
        for name, value in data.items():
            console.print(f"[bold]{escape(str(name))}[/bold]: {_cell(value)}", highlight=False)
    else:
        console.print(_cell(data), highlight=False)


def print_table(rows: Sequence[dict[str, Any]], columns: Sequence[str] | None = None) -> None:
    """Rows of objects as a table; `columns` picks and orders them (default: all, in first-seen order)."""
    if not rows:
        console.print("(none)")
        return
    names = list(columns) if columns else list(dict.fromkeys(k for row in rows for k in row))
    table = Table(show_lines=False)
    for name in names:
        table.add_column(name, overflow="fold")  # wrap long ids rather than cut them off
    for row in rows:
        table.add_row(*(_cell(row.get(n)) for n in names))
    console.print(table)


def _cell(value: Any) -> str:
    """A value as text for rich, escaped: `[batch, 64]` in a message is data, not markup."""
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, dict | list):
        return escape(json.dumps(value, default=str))
    return escape(str(value))
