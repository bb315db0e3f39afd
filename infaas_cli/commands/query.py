"""`infaas query` (model-less on an app, or a named model) and `infaas workers`, through the gateway."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path
from typing import Annotated, Any

import numpy as np
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


def register(app: typer.Typer) -> None:
    app.command("query")(query)
    app.command("workers")(workers)


def load_inputs(source: str) -> Any:
    """Inputs from a `.npy` file (one input), a `.npz` file (input name → array), a `.json` file, or
    inline JSON: a batch of rows, or {input name: batch}. Never unpickles (`allow_pickle=False`)."""
    path = Path(source)
    if path.suffix in (".npy", ".npz", ".json") and path.is_file():
        if path.suffix == ".json":
            return _json(path.read_text(), str(path))
        try:
            loaded = np.load(io.BytesIO(path.read_bytes()), allow_pickle=False)
            if isinstance(loaded, np.ndarray):
                return loaded.tolist()
            with loaded:  # .npz members are read (and refused if pickled) here
                return {name: loaded[name].tolist() for name in loaded.files}
        except (ValueError, OSError, zipfile.BadZipFile) as exc:
            raise typer.BadParameter(f"{path} is not a NumPy file without pickled objects: {exc}") from exc
    if path.suffix in (".npy", ".npz", ".json"):
        raise typer.BadParameter(f"no such file: {path}")
    return _json(source, "--input")


def _json(text: str, where: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise typer.BadParameter(f"{where} is neither a .npy/.npz/.json file nor JSON: {exc}") from exc


def query(
    target: Annotated[str, typer.Argument(help="an app (model-less query) or, with --model, a model name")],
    inputs: Annotated[
        str, typer.Option("--input", "-i", help="a .npy/.npz/.json file, or inline JSON (a batch of rows)")
    ],
    model: Annotated[bool, typer.Option("--model", "-m", help="TARGET names a model, not an app")] = False,
    latency_ms: Annotated[float | None, typer.Option("--latency-ms", help="latency SLO (ms)")] = None,
    min_accuracy: Annotated[
        float | None, typer.Option("--min-accuracy", help="lowest accuracy (0..1)")
    ] = None,
    max_cost: Annotated[float | None, typer.Option("--max-cost", help="cost cap in $ for this query")] = None,
    variant: Annotated[str | None, typer.Option(help="with --model: run exactly this variant")] = None,
    url: UrlOption = None,
    key: KeyOption = None,
    as_json: JsonOption = False,
) -> None:
    """Send one query; print the outputs and what the system did (variant, worker, latency, SLO, why)."""
    body: dict[str, Any] = {"inputs": load_inputs(inputs)}
    requirements = (("latency_ms", latency_ms), ("min_accuracy", min_accuracy), ("max_cost", max_cost))
    for name, value in (*requirements, ("variant", variant)):
        if value is not None:
            body[name] = value
    if variant is not None and not model:
        raise typer.BadParameter("--variant pins a variant of a named model: add --model")
    path = f"/v1/models/{target}/infer" if model else f"/v1/apps/{target}/infer"
    try:
        with gateway_client(url, key) as client:
            answer = request_json(client, "POST", path, json=body)
    except CliError as exc:
        fail(exc, as_json)
    if as_json:
        print_result(answer, True)
        return
    latency = answer["latency_ms"]
    slo = {True: "[green]met[/green]", False: "[red]missed[/red]", None: "none set"}[answer["slo_met"]]
    console.print(
        f"[bold]{answer['model']}[/bold] · {answer['variant']} on {answer['worker']} ({answer['hardware']})",
        highlight=False,
    )
    console.print(
        f"latency {latency['total']:.3f} ms "
        f"(queue {latency['queue']:.3f}, compute {latency['compute']:.3f}) · "
        f"SLO {slo} · cached {answer['cached']}" + (" · default output" if answer.get("default") else ""),
        highlight=False,
    )
    console.print(f"why: {answer['reason']}", highlight=False, markup=False)
    for name, rows in answer["outputs"].items():
        array = np.asarray(rows)
        console.print(f"[bold]{escape(name)}[/bold] {escape(str(list(array.shape)))}:", highlight=False)
        if array.ndim == 2 and array.shape[1] > 1 and array.dtype.kind == "f":  # class scores: say the class
            for i, row in enumerate(array):
                console.print(
                    f"  row {i}: class {int(row.argmax())} ({float(row.max()):.4f})", highlight=False
                )
        else:
            console.print(f"  {array.tolist()}", highlight=False, markup=False)


def workers(url: UrlOption = None, key: KeyOption = None, as_json: JsonOption = False) -> None:
    """Registered workers, whether they are live, their load, and their instances' states (admin key)."""
    try:
        with gateway_client(url, key) as client:
            rows = request_json(client, "GET", "/v1/workers")
    except CliError as exc:
        fail(exc, as_json)
    if as_json:
        print_result(rows, True)
        return
    table = []
    for w in rows:
        states: dict[str, int] = {}
        for state in w["instances"].values():
            states[state] = states.get(state, 0) + 1
        table.append(
            {
                "id": w["id"],
                "hardware": w["hardware"],
                "live": w["live"],
                "cores": w["cores"],
                "memory GiB": round(w["memory_bytes"] / 2**30, 1),
                "utilization": w["utilization"],
                "instances": ", ".join(f"{n} {s}" for s, n in sorted(states.items())) or "-",
                "last seen": w["last_seen_at"],
            }
        )
    print_table(table)
