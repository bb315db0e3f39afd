"""Static checks of the container deployment: docker-compose.yml and the shared Dockerfile.

No Docker engine is needed: the compose file is parsed with `yaml.safe_load` (which resolves the `<<`
merge keys of the `x-` anchors) and checked against what the infaas processes expect; the Dockerfile is
read stage by stage and its installs checked against the Makefile's sequence.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from infaas.core.config import SERVICES

ROOT = Path(__file__).resolve().parents[3]
COMPOSE_FILE = ROOT / "docker-compose.yml"
DOCKERFILE = ROOT / "Dockerfile"
MAKEFILE = ROOT / "Makefile"

# Processes `infaas serve X` can start.
SERVE_TARGETS = {"gateway", "registry", "scheduler", "executor", "planner", "profiler", "jobs"}

# Compose service -> the `infaas serve` target it runs.
APP_SERVICES = {
    "gateway": "gateway",
    "registry": "registry",
    "scheduler": "scheduler",
    "executor": "executor",
    "executor-cuda": "executor",
    "planner": "planner",
    "profiler-cpu": "profiler",
    "profiler-cuda": "profiler",
    "jobs": "jobs",
}
INFAAS_SERVICES = {"migrate", *APP_SERVICES}
REQUIRED_SERVICES = {
    "postgres",
    "redis",
    "migrate",
    "gateway",
    "registry",
    "profiler-cpu",
    "scheduler",
    "executor",
    "planner",
    "jobs",
}
HTTP_PORTS = {"gateway": 8080, "registry": 8081, "scheduler": 8082, "executor": 8083, "planner": 8084}
ARTIFACT_DIR = "/var/lib/infaas/artifacts"
ARTIFACT_USERS = {"registry", "profiler-cpu", "profiler-cuda", "executor", "executor-cuda", "jobs"}


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    assert COMPOSE_FILE.is_file(), "docker-compose.yml is missing at the repository root"
    data = yaml.safe_load(COMPOSE_FILE.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


@pytest.fixture(scope="module")
def services(compose: dict[str, Any]) -> dict[str, dict[str, Any]]:
    svcs = compose.get("services")
    assert isinstance(svcs, dict) and svcs, "docker-compose.yml defines no services"
    return svcs


def _argv(value: Any) -> list[str]:
    """A compose command/entrypoint as an argument list (string form is shell-split like compose does)."""
    if value is None:
        return []
    if isinstance(value, str):
        return shlex.split(value)
    assert isinstance(value, list), value
    return [str(v) for v in value]


def _env(service: dict[str, Any]) -> dict[str, str]:
    env = service.get("environment") or {}
    if isinstance(env, list):
        return dict(item.split("=", 1) if "=" in item else (item, "") for item in env)
    return {str(k): "" if v is None else str(v) for k, v in env.items()}


def _depends(service: dict[str, Any]) -> dict[str, str]:
    """depends_on as {service: condition}; the short list form means `service_started`."""
    deps = service.get("depends_on") or {}
    if isinstance(deps, list):
        return dict.fromkeys(deps, "service_started")
    return {name: (spec or {}).get("condition", "service_started") for name, spec in deps.items()}


def test_names_every_required_service(services: dict[str, dict[str, Any]]) -> None:
    missing = REQUIRED_SERVICES - services.keys()
    assert not missing, f"services missing from docker-compose.yml: {sorted(missing)}"
    assert "profiler-cuda" in services


def test_serve_targets_match_the_code() -> None:
    assert set(SERVICES) | {"jobs"} == SERVE_TARGETS  # `jobs`: the offline-job worker, no port


def test_infaas_services_share_one_image(services: dict[str, dict[str, Any]]) -> None:
    builds = {}
    for name in INFAAS_SERVICES:
        svc = services[name]
        assert "build" in svc or "image" in svc, f"{name} has neither build nor image"
        builds[name] = (repr(svc.get("build")), svc.get("image"))
    assert len(set(builds.values())) == 1, f"infaas services use different images: {builds}"

    build = services["gateway"]["build"]
    context = build if isinstance(build, str) else build.get("context", ".")
    dockerfile = "Dockerfile" if isinstance(build, str) else build.get("dockerfile", "Dockerfile")
    assert (ROOT / context / dockerfile).resolve() == DOCKERFILE

    for name in ("postgres", "redis"):
        assert "build" not in services[name]
    assert str(services["postgres"]["image"]).startswith("postgres:16")
    assert str(services["redis"]["image"]).startswith("redis:7")


def test_only_the_gateway_publishes_a_port(services: dict[str, dict[str, Any]]) -> None:
    publishing = {name for name, svc in services.items() if svc.get("ports")}
    assert publishing == {"gateway"}
    assert [str(p) for p in services["gateway"]["ports"]] == ["8080:8080"]


def test_migrate_runs_db_upgrade_once(services: dict[str, dict[str, Any]]) -> None:
    migrate = services["migrate"]
    assert _argv(migrate.get("entrypoint")) == []
    assert _argv(migrate["command"]) == ["db", "upgrade"]
    assert str(migrate.get("restart")) == "no"
    assert _depends(migrate).get("postgres") == "service_healthy"


def test_every_long_running_service_is_restarted_when_it_exits(services: dict[str, dict[str, Any]]) -> None:
    # Only the one-shot migrate may stay down; a crashed executor or registry must come back by itself.
    long_running = set(services) - {"migrate"}
    assert long_running >= REQUIRED_SERVICES - {"migrate"}
    for name in long_running:
        assert str(services[name].get("restart")) in ("unless-stopped", "on-failure", "always"), name


def test_app_services_wait_for_migrate_and_the_stores(services: dict[str, dict[str, Any]]) -> None:
    for name in APP_SERVICES:
        deps = _depends(services[name])
        assert deps.get("migrate") == "service_completed_successfully", name
        assert deps.get("postgres") == "service_healthy", name
        assert deps.get("redis") == "service_healthy", name


def test_each_service_serves_its_own_process(services: dict[str, dict[str, Any]]) -> None:
    for name, target in APP_SERVICES.items():
        argv = _argv(services[name].get("command"))
        assert argv[:1] == ["serve"], f"{name}: command {argv} is not `infaas serve ...`"
        assert len(argv) >= 2 and argv[1] in SERVE_TARGETS, f"{name}: unknown serve target in {argv}"
        assert argv[1] == target, f"{name} runs `serve {argv[1]}`, expected `serve {target}`"
    # Every `infaas serve X` anywhere in the file names a real process.
    text = COMPOSE_FILE.read_text(encoding="utf-8")
    for match in re.finditer(r"infaas\s+serve\s+([\w-]+)", text):
        assert match.group(1) in SERVE_TARGETS, match.group(0)


def test_profilers_consume_their_queues(services: dict[str, dict[str, Any]]) -> None:
    assert "profile.cpu" in _argv(services["profiler-cpu"]["command"])
    assert not services["profiler-cpu"].get("profiles")
    cuda = services["profiler-cuda"]
    assert "profile.cuda" in _argv(cuda["command"])
    assert cuda.get("profiles") == ["gpu"]
    devices = cuda["deploy"]["resources"]["reservations"]["devices"]
    assert any(d.get("driver") == "nvidia" and "gpu" in d.get("capabilities", []) for d in devices)


def test_executors_say_their_hardware_and_the_cuda_one_reserves_a_gpu(
    services: dict[str, dict[str, Any]],
) -> None:
    assert _env(services["executor"])["INFAAS_EXECUTOR_HARDWARE"] == "cpu"
    cuda = services["executor-cuda"]
    assert _env(cuda)["INFAAS_EXECUTOR_HARDWARE"] == "cuda"
    assert cuda.get("profiles") == ["gpu"]
    devices = cuda["deploy"]["resources"]["reservations"]["devices"]
    assert any(d.get("driver") == "nvidia" and "gpu" in d.get("capabilities", []) for d in devices)
    assert services["gateway"]["build"]["target"] == "${INFAAS_IMAGE_TARGET:-cpu}"


def test_entrypoint_still_runs_infaas(services: dict[str, dict[str, Any]]) -> None:
    for name in INFAAS_SERVICES:
        entry = _argv(services[name].get("entrypoint"))
        if entry:  # a wrapper must hand its arguments to infaas
            assert entry[:2] == ["sh", "-c"], f"{name}: unexpected entrypoint {entry}"
            assert re.search(r'exec infaas "\$\$@"', entry[2]), f"{name}: wrapper does not exec infaas"


def test_executor_replicas_advertise_their_own_hostname(services: dict[str, dict[str, Any]]) -> None:
    executor = services["executor"]
    assert executor["deploy"]["replicas"] >= 2
    script = _argv(executor["entrypoint"])[2]
    assert "INFAAS_EXECUTOR_ADVERTISE_URL=" in script
    assert "HOSTNAME" in script and ":8083" in script
    # A fixed service name would point every replica at whichever one DNS picks.
    assert "INFAAS_EXECUTOR_ADVERTISE_URL" not in _env(executor)
    assert "http://executor:8083" not in script


def test_infaas_environment(services: dict[str, dict[str, Any]]) -> None:
    for name in INFAAS_SERVICES:
        env = _env(services[name])
        for key in ("INFAAS_DATABASE_URL", "INFAAS_REDIS_URL", "INFAAS_ADMIN_KEY"):
            assert env.get(key), f"{name}: {key} is not set"
        db = urlsplit(env["INFAAS_DATABASE_URL"])
        assert db.scheme == "postgresql+psycopg" and db.hostname == "postgres", name
        redis = urlsplit(env["INFAAS_REDIS_URL"])
        assert redis.scheme == "redis" and redis.hostname == "redis", name
        assert env["INFAAS_ADMIN_KEY"].startswith("${INFAAS_ADMIN_KEY:?"), name
        assert env.get("INFAAS_HOST") == "0.0.0.0", name
        assert env.get("INFAAS_ARTIFACT_DIR") == ARTIFACT_DIR, name
        for key, target in (
            ("INFAAS_REGISTRY_URL", "registry"),
            ("INFAAS_SCHEDULER_URL", "scheduler"),
            ("INFAAS_PLANNER_URL", "planner"),
        ):
            url = urlsplit(env.get(key, ""))
            assert url.hostname == target and url.port == HTTP_PORTS[target], f"{name}: {key}"
            assert url.hostname in services


def test_http_services_have_python_healthchecks(services: dict[str, dict[str, Any]]) -> None:
    for name, port in HTTP_PORTS.items():
        check = services[name].get("healthcheck")
        assert check, f"{name} has no healthcheck"
        test = " ".join(_argv(check["test"]))
        assert "curl" not in test, f"{name}: curl is not in the slim image"
        assert "python" in test and "urllib" in test, name
        assert f":{port}/health" in test, f"{name}: healthcheck does not probe port {port}"
    assert "pg_isready" in " ".join(_argv(services["postgres"]["healthcheck"]["test"]))
    assert services["redis"].get("healthcheck")


def test_named_volumes(compose: dict[str, Any], services: dict[str, dict[str, Any]]) -> None:
    assert {"pgdata", "artifacts"} <= set(compose.get("volumes") or {})
    assert any(str(v).startswith("pgdata:") for v in services["postgres"].get("volumes", []))
    for name in ARTIFACT_USERS:
        assert f"artifacts:{ARTIFACT_DIR}" in [str(v) for v in services[name].get("volumes", [])], name


def _dockerfile_stages() -> dict[str, tuple[str | None, list[str]]]:
    """Stage name -> (the stage it is built on, or None for an image; its instructions, each on one line)."""
    text = re.sub(r"\\\n\s*", " ", DOCKERFILE.read_text(encoding="utf-8"))  # join continuation lines
    stages: dict[str, tuple[str | None, list[str]]] = {}
    own: list[str] = []
    for line in (raw.strip() for raw in text.splitlines()):
        if not line or line.startswith("#"):
            continue
        if line.startswith("FROM "):
            _, source, _, name = line.split()
            own = [line]
            stages[name] = (source if source in stages else None, own)
        else:
            own.append(line)
    return stages


def _instructions(target: str) -> list[str]:
    """What building `target` runs: the instructions of the stages it is built on, then its own."""
    parent, own = _dockerfile_stages()[target]
    return [*(_instructions(parent) if parent else []), *own]


def _pip_commands(instructions: list[str]) -> list[str]:
    return [
        cmd.strip()
        for line in instructions
        if line.startswith("RUN ")
        for cmd in line.removeprefix("RUN ").split("&&")
        if cmd.strip().startswith("pip ")
    ]


def test_dockerfile() -> None:
    assert DOCKERFILE.is_file(), "Dockerfile is missing at the repository root"
    stages = _dockerfile_stages()
    assert stages["base"][1][0] == "FROM python:3.11-slim AS base"
    assert list(stages) == ["base", "gpu", "cpu"]  # the last stage is what a plain `docker build` makes: cpu
    assert stages["gpu"][0] == stages["cpu"][0] == "base"
    assert "download.pytorch.org" not in DOCKERFILE.read_text(encoding="utf-8")
    for target in ("cpu", "gpu"):
        instructions = _instructions(target)
        assert [line for line in instructions if line.startswith("ENTRYPOINT")] == ['ENTRYPOINT ["infaas"]']
        users = [line.split()[1] for line in instructions if line.startswith("USER ")]
        assert users and users[-1] not in {"root", "0"}, target


def _makefile_pin(variable: str) -> str:
    match = re.search(rf"^{variable} := (\S+)$", MAKEFILE.read_text(encoding="utf-8"), re.MULTILINE)
    assert match, f"the Makefile sets no {variable}"
    return match.group(1)


@pytest.mark.parametrize(("target", "locks"), [("cpu", ["runtime"]), ("gpu", ["runtime", "gpu"])])
def test_the_image_installs_from_the_locks_as_the_makefile_does(target: str, locks: list[str]) -> None:
    # The Makefile's install_from: its pip, the hashed locks (the gpu one on top of the runtime's), torch
    # pinned, then the project with nothing resolved, built by the lock's setuptools (test_locks.py checks
    # that the runtime lock pins the build requirements) rather than by whatever an isolated build fetches.
    assert _pip_commands(_instructions(target)) == [
        f"pip install pip=={_makefile_pin('PIP_VERSION')}",
        *(f"pip install --require-hashes -r requirements/{lock}.txt" for lock in locks),
        f"pip install {_makefile_pin('TORCH')}",
        "pip install --no-deps --no-build-isolation .",
    ]
    for lock in locks:
        assert (ROOT / "requirements" / f"{lock}.txt").is_file(), lock


@pytest.mark.parametrize("target", ["cpu", "gpu"])
def test_the_dependency_layers_come_before_the_source(target: str) -> None:
    # Only the locks are copied before the dependencies install, so a source change rebuilds only the
    # project's own layer, not the locks' or torch's.
    instructions = _instructions(target)
    copies = [i for i, line in enumerate(instructions) if line.startswith("COPY ")]
    assert [instructions[i] for i in copies] == ["COPY requirements/ requirements/", "COPY . ."]
    installs = [i for i, line in enumerate(instructions) if line.startswith("RUN pip install")]
    lock_installs = [i for i in installs if "--require-hashes" in instructions[i]]
    assert copies[0] < lock_installs[0]
    assert all(i < copies[1] for i in installs[:-1])
    assert installs[-1] > copies[1] and "--no-deps" in instructions[installs[-1]]


def test_dockerignore_keeps_local_state_out() -> None:
    ignored = {
        line.strip().rstrip("/")
        for line in (ROOT / ".dockerignore").read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    }
    assert {".venv", "var", ".git"} <= ignored


def test_internal_traffic_carries_credentials(services: dict[str, dict[str, Any]]) -> None:
    # Every infaas process holds the internal key and Redis's password, both required from the operator.
    for name in INFAAS_SERVICES:
        env = _env(services[name])
        assert env["INFAAS_INTERNAL_KEY"].startswith("${INFAAS_INTERNAL_KEY:?"), name
        assert urlsplit(env["INFAAS_REDIS_URL"]).password == "${INFAAS_REDIS_PASSWORD}", name
    redis = services["redis"]
    assert _env(redis)["REDISCLI_AUTH"].startswith("${INFAAS_REDIS_PASSWORD:?")
    assert "--requirepass" in " ".join(_argv(redis["command"]))


def test_only_the_gateway_is_on_a_network_with_a_way_out(
    compose: dict[str, Any], services: dict[str, dict[str, Any]]
) -> None:
    networks = compose["networks"]
    assert networks["backend"]["internal"] is True
    for name, svc in services.items():
        expected = {"backend", "edge"} if name == "gateway" else {"backend"}
        assert set(svc.get("networks", [])) == expected, name
