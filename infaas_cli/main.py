"""The `infaas` command: run the system, serve one service, migrate, demo."""

from __future__ import annotations

import signal
import threading
from typing import TYPE_CHECKING, Annotated, Any

import typer

from infaas.core.config import SERVICES, Settings, get_settings
from infaas.core.logs import configure_logging
from infaas.processes import lifeline
from infaas_cli.commands.apps import register as register_apps
from infaas_cli.commands.events import register as register_events
from infaas_cli.commands.jobs import jobs as jobs_cli
from infaas_cli.commands.models import register as register_models
from infaas_cli.commands.query import register as register_query
from infaas_cli.commands.status import register as register_status

if TYPE_CHECKING:
    from starlette.types import ASGIApp

app = typer.Typer(
    help="infaas: model-less inference serving.", no_args_is_help=True, pretty_exceptions_enable=False
)
db = typer.Typer(help="Database migrations.", no_args_is_help=True)
app.add_typer(db, name="db")
app.add_typer(jobs_cli, name="jobs")  # offline jobs, over HTTP (infaas_cli/commands/jobs.py)
register_status(app)  # `infaas status`: live view of workers, instances and load
register_events(app)  # `infaas events`: scaling decisions and their reasons
register_apps(app)  # `infaas apps …` over HTTP (infaas_cli/commands/apps.py)
register_models(app)  # `infaas models …`, with profiling progress (infaas_cli/commands/models.py)
register_query(app)  # `infaas query` and `infaas workers` (infaas_cli/commands/query.py)


@db.command("upgrade")
def db_upgrade(revision: str = "head") -> None:
    """Create or update the schema (SQLite by default, Postgres with INFAAS_DATABASE_URL)."""
    from infaas_cli.migrate import upgrade

    settings = get_settings()
    settings.var_dir.mkdir(parents=True, exist_ok=True)
    upgrade(settings.resolved_database_url, revision)
    typer.echo(f"database at {settings.resolved_database_url.split('@')[-1]} is at {revision}")


@app.command()
def serve(
    service: Annotated[str, typer.Argument(help=f"one of {', '.join(SERVICES)}, jobs")],
    queue: Annotated[list[str] | None, typer.Option(help="profiler only: Celery queues to consume")] = None,
) -> None:
    """Run one service in the foreground."""
    settings = get_settings()
    configure_logging(service, level=settings.log_level)  # JSON lines with the request id
    lifeline.watch()  # started by `infaas run`: stop when it dies, however it dies
    if service == "jobs":  # the offline-job Celery worker (queue `jobs`, no HTTP port)
        from services.jobs.worker import run_worker as run_jobs_worker

        run_jobs_worker(settings)
        return
    if service not in SERVICES:
        raise typer.BadParameter(f"unknown service {service!r}; choose from {', '.join(SERVICES)}")
    if service == "profiler":
        from services.profiler.worker import run_worker

        run_worker(settings, queue)
        return
    if service == "gateway" and settings.executor_mode == "embedded":
        from infaas.http.servers import serve_together

        serve_together(
            server_options("gateway", settings), server_options("executor", settings, in_process=True)
        )
        return
    from infaas.http.servers import serve as serve_http

    serve_http(server_options(service, settings))


def server_options(service: str, settings: Settings, *, in_process: bool = False) -> dict[str, Any]:
    """How uvicorn runs an HTTP service: the app, and our protocol (`infaas/http/server.py`);
    `in_process`: an executor in the gateway's process (`executor_mode = "embedded"`)."""
    from infaas.http.server import InfaasHttpProtocol

    if service == "gateway":
        asgi = _gateway(settings)
    elif in_process:
        from services.executor.app import create_app

        asgi = create_app(settings, in_process=True)
    else:
        asgi = _factory(service)(settings)
    return {
        "app": asgi,
        "http": InfaasHttpProtocol,  # one write per response; the gateway's queries without ASGI
        # The gateway applies uvicorn's proxy-headers middleware past its query lane (gateway/app.py);
        # around it, the middleware would also hide the lane from the protocol.
        "proxy_headers": service != "gateway",
        "host": settings.gateway_host if service == "gateway" else settings.host,
        "port": settings.port(service),
        "log_level": "warning",
        "log_config": None,  # uvicorn's loggers propagate to our JSON handler
        "access_log": False,
        "server_header": False,  # no `server: uvicorn` telling every caller what to look up exploits for
        "timeout_graceful_shutdown": 5,
    }


def _gateway(settings: Settings) -> ASGIApp:
    from gateway.app import serve_app

    if settings.scheduler_mode == "embedded":
        from services.scheduler.app import EmbeddedScheduler

        return serve_app(settings, embedded_scheduler=EmbeddedScheduler)
    return serve_app(settings)


def _factory(service: str):  # type: ignore[no-untyped-def]
    if service == "registry":
        from services.registry.app import create_app
    elif service == "scheduler":
        from services.scheduler.app import create_app
    elif service == "executor":
        from services.executor.app import create_app
    else:
        from services.planner.app import create_app
    return create_app


@app.command()
def run(demo: Annotated[bool, typer.Option(help="train and register the demo models")] = True) -> None:
    """Start the whole system on this machine; Ctrl-C stops it."""
    from infaas.runtimes.hardware import detect_hardware
    from infaas_cli.launcher import describe_hardware, executor_plan, start_suite, supervise

    settings = get_settings()
    # SIGTERM (a supervisor, `kill`) stops the system as cleanly as Ctrl-C; so does SIGINT when the
    # launcher runs in the background, where a shell makes it ignore SIGINT by default.
    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGINT, _interrupt)
    typer.echo("starting infaas …")
    try:
        suite = start_suite(settings)
    except RuntimeError as exc:  # what stopped it, for the operator: a port in use, a service that exited
        typer.echo(f"infaas did not start: {exc}", err=True)
        raise typer.Exit(1) from None
    url = f"http://127.0.0.1:{settings.gateway_port}"
    stop = threading.Event()
    # Supervised from here on: a service that exits is restarted (with back-off), during the demo's
    # registration too, and is never the cause of stopping the rest.
    supervisor = supervise(suite, stop)
    try:
        if demo:
            from infaas_cli.demo import run_demo

            run_demo(url, settings.admin_key, settings.var_dir)
        typer.echo("")
        typer.echo(f"gateway:    {url}   (OpenAPI: {url}/docs)")
        typer.echo(f"admin key:  {settings.admin_key}")
        typer.echo(f"logs:       {suite.log_dir}/")
        hardware = detect_hardware()
        typer.echo(f"hardware:   {describe_hardware(hardware, executor_plan(settings, hardware))}")
        if demo:
            typer.echo("try:")
            typer.echo(
                f"  curl -s {url}/v1/apps/demo/infer -H 'Authorization: Bearer {settings.admin_key}' "
                "-H 'content-type: application/json' "
                '-d \'{"inputs": [[' + ",".join(["0.5"] * 64) + ']], "latency_ms": 20, '
                '"min_accuracy": 0.9}\''
            )
        else:
            typer.echo(f"no demo models: register one with POST {url}/v1/models (see README.md)")
        typer.echo("press Ctrl-C to stop")
        while not stop.wait(1.0):  # a timed wait: the signal handler's KeyboardInterrupt lands in between
            pass
    except KeyboardInterrupt:
        typer.echo("\nstopping …")
    finally:
        # A second Ctrl-C (or SIGTERM) while stopping must not cut the stop short and leave processes
        # (the embedded Redis among them) running: from here on, it is only acknowledged.
        signal.signal(signal.SIGINT, _already_stopping)
        signal.signal(signal.SIGTERM, _already_stopping)
        stop.set()
        supervisor.join(timeout=10)  # no restart may race the stop below
        suite.stop()
        typer.echo("stopped")


def _interrupt(_signum: int, _frame: object) -> None:
    raise KeyboardInterrupt


def _already_stopping(_signum: int, _frame: object) -> None:
    typer.echo("already stopping: waiting for the services to exit", err=True)


@app.command("demo")
def demo_command(
    url: Annotated[str, typer.Option(help="gateway URL")] = "http://127.0.0.1:8080",
    key: Annotated[str, typer.Option(help="admin key (default: INFAAS_ADMIN_KEY or var/admin.key)")] = "",
) -> None:
    """Train the demo models, register them under app `demo`, wait for profiling, and query."""
    from infaas.processes.suite import admin_key
    from infaas_cli.demo import run_demo

    settings = get_settings()
    run_demo(url, key or admin_key(settings), settings.var_dir)


def main() -> None:
    from pydantic import ValidationError

    try:
        app()
    except ValidationError as exc:
        if exc.title != "Settings":
            raise
        # A setting out of range (an interval of 0 would spin a loop): one line per setting, named
        # as it is set, and no service started.
        for error in exc.errors():
            name = "INFAAS_" + "_".join(str(part) for part in error["loc"]).upper()
            typer.echo(f"invalid setting {name}={error.get('input')!r}: {error['msg']}", err=True)
        raise SystemExit(2) from None


if __name__ == "__main__":
    main()
