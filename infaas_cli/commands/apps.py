"""`infaas apps …`: create, list, show and update apps through the gateway."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer
from rich.markup import escape

from infaas_cli.commands.api import (
    CliError,
    JsonOption,
    KeyOption,
    UrlOption,
    console,
    fail,
    gateway_client,
    print_result,
    print_table,
    request_json,
)

apps = typer.Typer(
    help="Apps: tenants with default requirements and an SLO-miss policy.", no_args_is_help=True
)

LatencyOption = Annotated[float | None, typer.Option("--latency-ms", help="default latency SLO (ms)")]
AccuracyOption = Annotated[
    float | None, typer.Option("--min-accuracy", help="default minimum accuracy (0..1)")
]
PolicyOption = Annotated[
    str | None,
    typer.Option(
        "--slo-policy", help="on an SLO miss: error, best_effort or default (needs --default-output)"
    ),
]
DefaultOutputOption = Annotated[
    str | None, typer.Option("--default-output", help="JSON {output name: one row}, for --slo-policy default")
]
PreferOption = Annotated[
    str | None, typer.Option("--prefer", help="among variants that meet a query: cost or latency")
]
CacheOption = Annotated[
    bool | None, typer.Option("--cache/--no-cache", help="serve repeated inputs from the cache")
]
LossyOption = Annotated[
    bool | None,
    typer.Option(
        "--lossy/--no-lossy",
        help="allow variants less accurate than the registered model (int8 quantization) when a query "
        "states no accuracy",
    ),
]
CriticalityOption = Annotated[
    str | None,
    typer.Option(
        "--criticality",
        help="critical: a warm backup on another worker (failover in milliseconds); normal: a cold backup",
    ),
]
WarmOption = Annotated[
    int | None,
    typer.Option(
        "--warm-instances",
        min=0,
        help="instances kept loaded per model once it is ready (default 1; 0: load on the first query)",
    ),
]
RedundancyOption = Annotated[
    str | None,
    typer.Option(
        "--redundancy",
        help="coded redundancy: parity:K (K = 2..4; trains a parity model per model, 1/K extra resources) "
        "or none",
    ),
]
SelectionOption = Annotated[
    str | None,
    typer.Option(
        "--selection",
        help='model selection as JSON, e.g. \'{"policy": "exp3", "models": ["a", "b"]}\' '
        "(exp3 | exp4 | single; eta, gamma, threshold, personalize, feedback_ttl_s)",
    ),
]
COLUMNS = (
    "name",
    "default_latency_ms",
    "default_min_accuracy",
    "slo_policy",
    "prefer",
    "cache",
    "lossy",
    "warm_instances",
    "criticality",
    "models",
)


def parse_redundancy(text: str) -> dict[str, Any]:
    """`none` or `parity:K` as the API's redundancy object (the server checks K and the models)."""
    if text == "none":
        return {"kind": "none"}
    kind, _, k = text.partition(":")
    if kind != "parity" or not k.isdigit():
        raise typer.BadParameter(f"--redundancy is 'none' or 'parity:K' (K = 2..4), not {text!r}")
    return {"kind": "parity", "k": int(k)}


def parse_selection(text: str) -> dict[str, Any]:
    """The `--selection` JSON object as the API's selection (the server checks the policy and the models)."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise typer.BadParameter(f"--selection must be a JSON object: {exc}") from exc
    if not isinstance(value, dict):
        raise typer.BadParameter(
            '--selection must be a JSON object such as {"policy": "exp3", "models": [...]}'
        )
    return value


def register(app: typer.Typer) -> None:
    app.add_typer(apps, name="apps")


def _settings(
    latency_ms: float | None,
    min_accuracy: float | None,
    slo_policy: str | None,
    default_output: str | None,
    prefer: str | None,
    cache: bool | None,
    lossy: bool | None,
    criticality: str | None = None,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "default_latency_ms": latency_ms,
        "default_min_accuracy": min_accuracy,
        "slo_policy": slo_policy,
        "prefer": prefer,
        "cache": cache,
        "lossy": lossy,
        "criticality": criticality,
    }
    if default_output is not None:
        try:
            body["default_output"] = json.loads(default_output)
        except json.JSONDecodeError as exc:
            raise typer.BadParameter(f"--default-output is not JSON: {exc}") from exc
    return {k: v for k, v in body.items() if v is not None}


@apps.command("create")
def create(
    name: Annotated[str, typer.Argument(help="app name (lowercase letters, digits, . _ -)")],
    latency_ms: LatencyOption = None,
    min_accuracy: AccuracyOption = None,
    slo_policy: PolicyOption = None,
    default_output: DefaultOutputOption = None,
    prefer: PreferOption = None,
    cache: CacheOption = None,
    lossy: LossyOption = None,
    criticality: CriticalityOption = None,
    warm_instances: WarmOption = None,
    url: UrlOption = None,
    key: KeyOption = None,
    as_json: JsonOption = False,
) -> None:
    """Create an app (admin key). Prints the app's API key: it is shown only this once."""
    body = {
        "name": name,
        **_settings(latency_ms, min_accuracy, slo_policy, default_output, prefer, cache, lossy, criticality),
    }
    if warm_instances is not None:
        body["warm_instances"] = warm_instances
    try:
        with gateway_client(url, key) as client:
            created = request_json(client, "POST", "/v1/apps", json=body)
    except CliError as exc:
        fail(exc, as_json)
    if as_json:
        print_result(created, True)
        return
    console.print(f"created app [bold]{escape(created['name'])}[/bold]")
    console.print(
        f"API key (shown once, keep it): [bold green]{escape(created['api_key'])}[/bold green]",
        highlight=False,
    )


@apps.command("list")
def list_apps(url: UrlOption = None, key: KeyOption = None, as_json: JsonOption = False) -> None:
    """Apps this key may see (all with the admin key)."""
    try:
        with gateway_client(url, key) as client:
            rows = request_json(client, "GET", "/v1/apps")
    except CliError as exc:
        fail(exc, as_json)
    if as_json:
        print_result(rows, True)
    else:
        print_table(rows, COLUMNS)


@apps.command("show")
def show(
    name: Annotated[str, typer.Argument(help="app name")],
    url: UrlOption = None,
    key: KeyOption = None,
    as_json: JsonOption = False,
) -> None:
    """One app: its defaults, policy and models."""
    try:
        with gateway_client(url, key) as client:
            found = request_json(client, "GET", f"/v1/apps/{name}")
    except CliError as exc:
        fail(exc, as_json)
    print_result(found, as_json)


@apps.command("update")
def update(
    name: Annotated[str, typer.Argument(help="app name")],
    latency_ms: LatencyOption = None,
    min_accuracy: AccuracyOption = None,
    slo_policy: PolicyOption = None,
    default_output: DefaultOutputOption = None,
    prefer: PreferOption = None,
    cache: CacheOption = None,
    lossy: LossyOption = None,
    criticality: CriticalityOption = None,
    warm_instances: WarmOption = None,
    redundancy: RedundancyOption = None,
    selection: SelectionOption = None,
    url: UrlOption = None,
    key: KeyOption = None,
    as_json: JsonOption = False,
) -> None:
    """Change an app's defaults; options left out stay as they are."""
    body = _settings(latency_ms, min_accuracy, slo_policy, default_output, prefer, cache, lossy, criticality)
    if warm_instances is not None:
        body["warm_instances"] = warm_instances
    if redundancy is not None:
        body["redundancy"] = parse_redundancy(redundancy)
    if selection is not None:
        body["selection"] = parse_selection(selection)
    if not body:
        raise typer.BadParameter("nothing to change: give at least one option (see --help)")
    try:
        with gateway_client(url, key) as client:
            updated = request_json(client, "PATCH", f"/v1/apps/{name}", json=body)
    except CliError as exc:
        fail(exc, as_json)
    print_result(updated, as_json)
