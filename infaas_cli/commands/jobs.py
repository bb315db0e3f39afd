"""`infaas jobs …`: submit offline jobs, follow them with a progress bar, cancel, list, download results.

Talks to the gateway over HTTP like any client (`--url`/`--key`, or `INFAAS_URL`/`INFAAS_KEY`).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Annotated, Any

import httpx
import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

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

jobs = typer.Typer(
    help="Offline batch jobs: run a whole file through a model in spare capacity.", no_args_is_help=True
)

ENDED = ("succeeded", "failed", "cancelled")
LIST_COLUMNS = (
    "id",
    "model",
    "variant",
    "state",
    "rows_done",
    "rows_total",
    "throughput_rows_s",
    "created_at",
)


@jobs.command("submit")
def submit(
    input_file: Annotated[
        Path | None, typer.Argument(help=".npy, or .npz with `x`", exists=True, dir_okay=False)
    ] = None,
    model: Annotated[str | None, typer.Option(help="run on this model")] = None,
    app: Annotated[str | None, typer.Option(help="model-less: any of this app's models that fits")] = None,
    min_accuracy: Annotated[float | None, typer.Option(help="minimum accuracy of the variant")] = None,
    input_path: Annotated[
        str | None, typer.Option(help="instead of a file: a path in the job data store")
    ] = None,
    output_path: Annotated[
        str | None, typer.Option(help="also write the result there (job data store)")
    ] = None,
    chunk_rows: Annotated[int | None, typer.Option(help="rows per chunk (default: ~1 s of work)")] = None,
    wait: Annotated[bool, typer.Option("--wait", help="follow the job until it ends")] = False,
    url: UrlOption = None,
    key: KeyOption = None,
    as_json: JsonOption = False,
) -> None:
    """Submit a job; bad input (shape, dtype, corrupt file, unknown model) is refused right away."""
    meta = {
        k: v
        for k, v in {
            "model": model,
            "app": app,
            "min_accuracy": min_accuracy,
            "input_path": input_path,
            "output_path": output_path,
            "chunk_rows": chunk_rows,
        }.items()
        if v is not None
    }
    files = None
    if input_file is not None:
        files = {"input": (input_file.name, input_file.read_bytes(), "application/octet-stream")}
    try:
        with gateway_client(url, key) as client:
            job = request_json(client, "POST", "/v1/jobs", files=files, data={"metadata": json.dumps(meta)})
            if wait:
                job = _follow(client, job["id"], as_json=as_json)
    except CliError as exc:
        fail(exc, as_json)
    _show(job, as_json)
    if wait and job["state"] != "succeeded":
        raise typer.Exit(1)


@jobs.command("status")
def status(job_id: str, url: UrlOption = None, key: KeyOption = None, as_json: JsonOption = False) -> None:
    """State (and why), rows done of total, throughput, ETA and errors."""
    try:
        with gateway_client(url, key) as client:
            job = request_json(client, "GET", f"/v1/jobs/{job_id}")
    except CliError as exc:
        fail(exc, as_json)
    _show(job, as_json)


@jobs.command("wait")
def wait_command(
    job_id: str,
    timeout: Annotated[float, typer.Option(help="give up after this many seconds (0: never)")] = 0.0,
    url: UrlOption = None,
    key: KeyOption = None,
    as_json: JsonOption = False,
) -> None:
    """Follow a job with a progress bar until it ends; exit status 0 only if it succeeded."""
    try:
        with gateway_client(url, key) as client:
            job = _follow(client, job_id, as_json=as_json, timeout_s=timeout)
    except CliError as exc:
        fail(exc, as_json)
    _show(job, as_json)
    if job["state"] != "succeeded":
        raise typer.Exit(1)


@jobs.command("cancel")
def cancel(job_id: str, url: UrlOption = None, key: KeyOption = None, as_json: JsonOption = False) -> None:
    """Cancel a job (its partial output is never presented as a result)."""
    try:
        with gateway_client(url, key) as client:
            job = request_json(client, "DELETE", f"/v1/jobs/{job_id}")
    except CliError as exc:
        fail(exc, as_json)
    _show(job, as_json)


@jobs.command("list")
def list_command(url: UrlOption = None, key: KeyOption = None, as_json: JsonOption = False) -> None:
    """Your jobs (all of them with the admin key), newest first."""
    try:
        with gateway_client(url, key) as client:
            rows = request_json(client, "GET", "/v1/jobs")
    except CliError as exc:
        fail(exc, as_json)
    if as_json:
        print_result(rows, True)
    else:
        print_table(rows, LIST_COLUMNS)


@jobs.command("result")
def result(
    job_id: str,
    output: Annotated[Path, typer.Option("--output", "-o", help="where to write the .npz")],
    url: UrlOption = None,
    key: KeyOption = None,
) -> None:
    """Download the output `.npz` of a succeeded job."""
    try:
        with (
            gateway_client(url, key) as client,
            client.stream("GET", f"/v1/jobs/{job_id}/result") as response,
        ):
            if response.status_code >= 400:
                response.read()
                request_json_error(response)
            with output.open("wb") as fh:
                for part in response.iter_bytes():
                    fh.write(part)
    except CliError as exc:
        fail(exc, False)
    except httpx.HTTPError as exc:
        fail(CliError(f"download failed: {exc}"), False)
    console.print(f"wrote {output}")


def request_json_error(response: httpx.Response) -> None:
    try:
        body: Any = response.json()
    except ValueError:
        body = response.text
    err = body.get("error", {}) if isinstance(body, dict) else {}
    raise CliError(
        f"{response.status_code} {err.get('code', 'error')}: {err.get('message', body)}", body=body
    )


def _follow(client: httpx.Client, job_id: str, *, as_json: bool, timeout_s: float = 0.0) -> Any:
    deadline = time.monotonic() + timeout_s if timeout_s > 0 else None
    job = request_json(client, "GET", f"/v1/jobs/{job_id}")
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("rows"),
        TimeRemainingColumn(),
    )
    # With --json the bar would mix with the JSON on stdout: it goes to stderr, or not at all.
    with Progress(*columns, console=console, transient=True, disable=as_json) as progress:
        bar = progress.add_task(job["state"], total=job["rows_total"])
        while job["state"] not in ENDED:
            if deadline is not None and time.monotonic() > deadline:
                raise CliError(f"job {job_id} is still {job['state']} after {timeout_s:.0f} s")
            time.sleep(0.5)
            job = request_json(client, "GET", f"/v1/jobs/{job_id}")
            progress.update(
                bar, completed=job["rows_done"], description=f"{job['state']}: {job['reason'] or ''}"[:60]
            )
    return job


def _show(job: dict[str, Any], as_json: bool) -> None:
    if as_json:
        print_result(job, True)
        return
    rate = f"{job['throughput_rows_s']:.0f} rows/s" if job.get("throughput_rows_s") else "-"
    eta = f"{job['eta_s']:.0f} s" if job.get("eta_s") is not None else "-"
    console.print(f"[bold]{job['id']}[/bold] {job['state']}: {job.get('reason') or ''}", highlight=False)
    console.print(
        f"  {job['model']} on {job['variant']}  {job['rows_done']}/{job['rows_total']} rows"
        f"  {rate}  ETA {eta}",
        highlight=False,
    )
    for error in job.get("errors") or []:
        kind = "error" if error["fatal"] else "retried"
        console.print(f"  {kind}: chunk {error['chunk']}: {error['message']}", highlight=False)
    if job.get("result_url"):
        console.print(f"  result: infaas jobs result {job['id']} -o out.npz", highlight=False)
