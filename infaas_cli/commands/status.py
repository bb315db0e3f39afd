"""`infaas status`: a live terminal view of workers, instances and load, read from the gateway.

It asks the gateway's `/ui/api/status` (admin key) every `--interval` seconds: the same numbers the
web UI's load page shows. `--once` prints one frame and exits; `--json` prints the raw answer.
"""

from __future__ import annotations

import time
from typing import Annotated, Any

import httpx
import orjson
import typer
from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from infaas_cli.commands.api import gateway_target

STATE_STYLES = {
    "active": "green",
    "loading": "yellow",
    "inactive": "dim",
    "overloaded": "bold red",
    "interfered": "magenta",
    "failed": "red",
}


def fetch(url: str, key: str) -> dict[str, Any]:
    response = httpx.get(
        f"{url.rstrip('/')}/ui/api/status", headers={"Authorization": f"Bearer {key}"}, timeout=10
    )
    if response.status_code != 200:
        try:
            error = response.json()["error"]
            detail = f"{error['code']}: {error['message']}"
        except (ValueError, KeyError, TypeError):
            detail = response.text[:200]
        raise typer.BadParameter(f"the gateway answered {response.status_code} ({detail})")
    answer: dict[str, Any] = orjson.loads(response.content)
    return answer


def _num(value: float | None, digits: int = 1) -> str:
    return "—" if value is None else f"{value:,.{digits}f}"


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value * 100:.1f}%"


def render(status: dict[str, Any], url: str) -> Group:
    """One frame: load, workers, instances, and load per variant."""
    load = status["load"]["window"] or status["load"]["since_start"]
    over = f"last {load['seconds']:.0f} s" if load["seconds"] else "since start (rates from the next frame)"
    summary = Text.assemble(
        ("infaas ", "bold"),
        f"{url} · {time.strftime('%H:%M:%S')} · load {over}\n",
        ("queries/s ", "dim"),
        _num(load["queries_per_s"]),
        ("  queries ", "dim"),
        _num(load["queries"], 0),
        ("  p50 ", "dim"),
        f"{_num(load['p50_ms'], 2)} ms",
        ("  p99 ", "dim"),
        f"{_num(load['p99_ms'], 2)} ms",
        ("  SLO misses ", "dim"),
        _pct(load["slo_miss_rate"]),
        ("  in flight ", "dim"),
        _num(load["pending"], 0),
        ("  shed ", "dim"),
        _num(load["shed"], 0),
        ("  cache hits ", "dim"),
        _pct(load["cache_hit_ratio"]),
    )
    workers = Table(title="workers", title_justify="left", expand=True)
    for column in ("worker", "hardware", "live", "utilization", "instances"):
        workers.add_column(column)
    for w in status["workers"]:
        workers.add_row(
            w["id"],
            w["hardware"],
            Text("live", "green") if w["live"] else Text("gone", "red"),
            _pct(w["utilization"]),
            str(len(w["instances"])),
        )
    instances = Table(title="instances", title_justify="left", expand=True)
    for column in ("worker", "variant", "state", "why", "pending", "batch limit"):
        instances.add_column(column)
    for i in status["instances"]:
        instances.add_row(
            i["worker"],
            i["variant"],
            Text(i["state"], STATE_STYLES.get(i["state"], "")),
            i["reason"] or "",
            "—" if i["pending"] is None else str(i["pending"]),
            "—" if i["batch_limit"] is None else str(i["batch_limit"]),
        )
    variants = Table(title="load per variant", title_justify="left", expand=True)
    for column in (
        "variant",
        "queries",
        "queries/s",
        "rows/s",
        "mean batch",
        "p99 compute ms",
        "p99 queue ms",
    ):
        variants.add_column(column)
    for v in load["variants"]:
        variants.add_row(
            v["variant"],
            _num(v["queries"], 0),
            _num(v["queries_per_s"]),
            _num(v["rows_per_s"]),
            _num(v["mean_batch"]),
            _num(v["p99_compute_ms"], 3),
            _num(v["p99_queue_ms"], 3),
        )
    return Group(summary, workers, instances, variants)


def register(app: typer.Typer) -> None:
    """Add the `status` command to the CLI."""

    @app.command("status")
    def status(
        url: Annotated[str, typer.Option(help="gateway URL (default: this machine's gateway port)")] = "",
        key: Annotated[str, typer.Option(help="admin key (default: INFAAS_ADMIN_KEY or var/admin.key)")] = "",
        once: Annotated[bool, typer.Option("--once", help="print one frame and exit")] = False,
        as_json: Annotated[bool, typer.Option("--json", help="print the status as JSON and exit")] = False,
        interval: Annotated[float, typer.Option(min=0.2, help="seconds between frames")] = 2.0,
    ) -> None:
        """Live view of workers, instances (with their states) and load: throughput, p99, queues."""
        url, key = gateway_target(url or None, key or None)
        if not key:
            raise typer.BadParameter("no admin key: pass --key or set INFAAS_ADMIN_KEY")
        if as_json:
            typer.echo(orjson.dumps(fetch(url, key), option=orjson.OPT_INDENT_2).decode())
            return
        console = Console()
        if once:
            console.print(render(fetch(url, key), url))
            return
        try:
            with Live(render(fetch(url, key), url), console=console, refresh_per_second=4) as view:
                while True:
                    time.sleep(interval)
                    view.update(render(fetch(url, key), url))
        except KeyboardInterrupt:
            pass
