"""`infaas models …`: register (with a progress display until profiled), list, show, variants, delete and
profile again — through the gateway."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Annotated, Any

import httpx
import typer
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)

from infaas_cli.commands.api import (
    CliError,
    JsonOption,
    KeyOption,
    UrlOption,
    console,
    err_console,
    fail,
    gateway_client,
    print_result,
    print_table,
    request_json,
)

models = typer.Typer(
    help="Models: register, inspect their variants, profile again, delete.", no_args_is_help=True
)

WaitOption = Annotated[bool, typer.Option("--wait/--no-wait", help="follow profiling until ready or failed")]
TimeoutOption = Annotated[float, typer.Option("--timeout", help="seconds to wait for profiling")]
MODEL_COLUMNS = ("name", "app", "format", "status", "status_reason", "validation_rows", "size_bytes")


def register(app: typer.Typer) -> None:
    app.add_typer(models, name="models")


@models.command("register")
def register_model(
    file: Annotated[Path, typer.Argument(help="the model: an ONNX file or a PyTorch archive", exists=True)],
    validation: Annotated[
        Path, typer.Option("--validation", "-v", help=".npz with arrays x and y", exists=True)
    ],
    name: Annotated[str, typer.Option("--name", "-n", help="model name")],
    app_name: Annotated[str, typer.Option("--app", "-a", help="the app that owns the model")],
    task: Annotated[str, typer.Option(help="task, e.g. classification")] = "classification",
    wait: WaitOption = True,
    timeout: TimeoutOption = 900.0,
    url: UrlOption = None,
    key: KeyOption = None,
    as_json: JsonOption = False,
) -> None:
    """Upload a model and its validation set; profiling starts at once. Shows its progress until the model
    is ready or failed (exit status 1 if it failed)."""
    metadata = json.dumps({"name": name, "app": app_name, "task": task})
    try:
        with gateway_client(url, key) as client:
            files = {
                "file": (file.name, file.read_bytes(), "application/octet-stream"),
                "validation": (validation.name, validation.read_bytes(), "application/octet-stream"),
            }
            model = request_json(client, "POST", "/v1/models", files=files, data={"metadata": metadata})
            if not as_json:
                console.print(f"registered [bold]{escape(name)}[/bold]: profiling its variants …")
            if wait:
                model = _follow(client, name, timeout_s=timeout, show=not as_json)
    except CliError as exc:
        fail(exc, as_json)
    _finish(model, as_json)


def _finish(model: dict[str, Any], as_json: bool) -> None:
    if as_json:
        print_result(model, True)
    elif model["status"] == "ready":
        progress = model["progress"]
        console.print(
            f"[green]{escape(model['name'])} is ready[/green]: {progress['ready']} variants ready, "
            f"{progress['failed']} failed, {progress['pending']} pending (no hardware for them here)"
        )
    elif model["status"] == "failed":
        err_console.print(
            f"[red]{escape(model['name'])} failed:[/red] {escape(str(model['status_reason']))}",
            highlight=False,
        )
    else:
        console.print(f"{model['name']} is {model['status']}", markup=False)
    if model["status"] == "failed":
        raise typer.Exit(1)


def _follow(client: httpx.Client, name: str, *, timeout_s: float, show: bool) -> dict[str, Any]:
    """Poll the model until it is ready or failed, showing variants measured so far."""
    deadline = time.monotonic() + timeout_s
    columns = (
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("variants"),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=console, disable=not show, transient=False) as progress:
        bar = progress.add_task(f"{escape(name)}: registered", total=None)
        while True:
            model: dict[str, Any] = request_json(client, "GET", f"/v1/models/{name}")
            counts = model["progress"]
            # Variants of hardware no worker here has stay pending; they do not hold the model back.
            done = counts["ready"] + counts["failed"]
            progress.update(
                bar,
                description=f"{escape(name)}: {model['status']}",
                completed=done,
                total=counts["total"] or None,
            )
            if model["status"] in ("ready", "failed"):
                return model
            if time.monotonic() > deadline:
                raise CliError(
                    f"{name} is still {model['status']} after {timeout_s:.0f} s (it goes on profiling)"
                )
            time.sleep(0.5)


@models.command("list")
def list_models(url: UrlOption = None, key: KeyOption = None, as_json: JsonOption = False) -> None:
    """Models this key may see, with their status."""
    try:
        with gateway_client(url, key) as client:
            rows = request_json(client, "GET", "/v1/models")
    except CliError as exc:
        fail(exc, as_json)
    if as_json:
        print_result(rows, True)
    else:
        print_table([{**r, "progress": None} for r in rows], MODEL_COLUMNS)


@models.command("show")
def show(
    name: Annotated[str, typer.Argument(help="model name")],
    url: UrlOption = None,
    key: KeyOption = None,
    as_json: JsonOption = False,
) -> None:
    """One model: status, signature and profiling progress."""
    try:
        with gateway_client(url, key) as client:
            model = request_json(client, "GET", f"/v1/models/{name}")
    except CliError as exc:
        fail(exc, as_json)
    print_result(model, as_json)


@models.command("parity")
def parity(
    name: Annotated[str, typer.Argument(help="model name")],
    url: UrlOption = None,
    key: KeyOption = None,
    as_json: JsonOption = False,
) -> None:
    """The model's parity model (its app's redundancy is parity): training progress, last loss, and the
    degraded-mode accuracy of reconstructed outputs next to the deployed model's."""
    try:
        with gateway_client(url, key) as client:
            status = request_json(client, "GET", f"/v1/models/{name}/parity")
    except CliError as exc:
        fail(exc, as_json)
    if as_json:
        print_result(status, True)
        return
    last = status["losses"][-1][1] if status["losses"] else None
    console.print(
        f"parity model of [bold]{escape(name)}[/bold] (k={status['k']}): {status['state']}, "
        f"step {status['steps_done']}/{status['steps_total']}"
        + (f", loss {last:.4g}" if last is not None else "")
        + (f" ({escape(status['reason'])})" if status["reason"] else "")
    )
    if status["degraded_score"] is not None:
        console.print(
            f"{status['metric']} on {status['holdout_rows']} held-out rows: deployed "
            f"{status['deployed_score']:.3f}, reconstructed (degraded mode) {status['degraded_score']:.3f}"
        )


@models.command("variants")
def variants(
    name: Annotated[str, typer.Argument(help="model name")],
    hardware: Annotated[str | None, typer.Option(help="only this hardware kind (cpu, cuda, neuron)")] = None,
    status: Annotated[str | None, typer.Option(help="pending, profiling, ready or failed")] = None,
    precision: Annotated[str | None, typer.Option(help="fp32, fp16, int8-dynamic, int8-static")] = None,
    min_accuracy: Annotated[float | None, typer.Option("--min-accuracy")] = None,
    max_latency_ms: Annotated[float | None, typer.Option("--max-latency-ms", help="p50 at --batch")] = None,
    max_cost_per_query: Annotated[float | None, typer.Option("--max-cost-per-query")] = None,
    batch: Annotated[int, typer.Option(help="batch size for the latency filter, sort and column")] = 1,
    sort: Annotated[
        str, typer.Option(help="latency, accuracy, cost, throughput, memory or load")
    ] = "latency",
    descending: Annotated[bool, typer.Option("--descending")] = False,
    include_dominated: Annotated[bool, typer.Option("--include-dominated/--exclude-dominated")] = True,
    url: UrlOption = None,
    key: KeyOption = None,
    as_json: JsonOption = False,
) -> None:
    """The model's variants with their profiles, filtered and sorted on the server."""
    params: dict[str, Any] = {
        "hardware": hardware,
        "status": status,
        "precision": precision,
        "min_accuracy": min_accuracy,
        "max_latency_ms": max_latency_ms,
        "max_cost_per_query": max_cost_per_query,
        "batch": batch,
        "sort": sort,
        "descending": descending or None,
        "include_dominated": None if include_dominated else False,
    }
    try:
        with gateway_client(url, key) as client:
            rows = request_json(
                client,
                "GET",
                f"/v1/models/{name}/variants",
                params={k: v for k, v in params.items() if v is not None},
            )
    except CliError as exc:
        fail(exc, as_json)
    if as_json:
        print_result(rows, True)
        return
    print_table([_variant_row(v, batch) for v in rows])


def _variant_row(v: dict[str, Any], batch: int) -> dict[str, Any]:
    points = v.get("latency") or []
    at = next((p for p in points if p["batch"] >= batch), points[-1] if points else None)
    return {
        "id": v["id"],
        "status": v["status"],
        "accuracy": v["accuracy"],
        f"p50 ms @b{batch}": at["p50_ms"] if at else None,
        f"p99 ms @b{batch}": at["p99_ms"] if at else None,
        "qps": v["saturation_qps"],
        "$/query": v["cost_per_query"],
        "dominated": v["dominated"],
        "reason": v["status_reason"],
    }


@models.command("delete")
def delete(
    name: Annotated[str, typer.Argument(help="model name")],
    yes: Annotated[bool, typer.Option("--yes", "-y", help="do not ask for confirmation")] = False,
    url: UrlOption = None,
    key: KeyOption = None,
    as_json: JsonOption = False,
) -> None:
    """Delete a model and its variants."""
    if not yes and not typer.confirm(f"delete model {name!r} and all its variants?"):
        raise typer.Exit(1)
    try:
        with gateway_client(url, key) as client:
            request_json(client, "DELETE", f"/v1/models/{name}")
    except CliError as exc:
        fail(exc, as_json)
    print_result({"deleted": name}, as_json)


@models.command("profile")
def profile(
    name: Annotated[str, typer.Argument(help="model name")],
    wait: WaitOption = True,
    timeout: TimeoutOption = 900.0,
    url: UrlOption = None,
    key: KeyOption = None,
    as_json: JsonOption = False,
) -> None:
    """Profile the model again (e.g. after hardware was added), showing progress until it is done."""
    try:
        with gateway_client(url, key) as client:
            model = request_json(client, "POST", f"/v1/models/{name}/profile")
            if wait:
                model = _follow(client, name, timeout_s=timeout, show=not as_json)
    except CliError as exc:
        fail(exc, as_json)
    _finish(model, as_json)
