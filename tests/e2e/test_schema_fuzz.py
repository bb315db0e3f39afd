"""A schema fuzzer (schemathesis) against the gateway's own `/openapi.json`, on a running suite with a
registered model: no generated request, however malformed, gets a 5xx. Bounded to a few minutes: a few
examples per operation, with the admin key and then with an app's key."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from xml.etree import ElementTree

import pytest

from tests.e2e.conftest import RunningSuite, _settings, own_suite
from tests.e2e.wine import register_wine

pytestmark = pytest.mark.e2e

EXAMPLES_PER_OPERATION = 20
BUDGET_S = 300


@pytest.fixture(scope="module")
def fuzzed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[RunningSuite, str]]:
    """Its own suite (the fuzzer deletes and patches whatever it can name), with app `cellar` and the
    two-input wine model registered and profiled."""
    var = tmp_path_factory.mktemp("fuzz")
    with own_suite(_settings(var / "var")) as running:
        key = running.admin.post("/v1/apps", json={"name": "cellar"}).json()["api_key"]
        response = register_wine(running.admin, var, app="cellar")
        assert response.status_code == 202, response.text
        assert running.wait_ready("wine")["status"] == "ready"
        yield running, key


REAL_NAMES = """
[parameters]
"path.name" = "wine"
"path.app" = "cellar"
"path.m" = "wine"
"""
"""Path parameters fixed to what exists: the generated bodies then reach the model's own query path
(inference on two named inputs) instead of stopping at 404."""


FUZZER_BUG = "AST constructor recursion depth mismatch"
"""CPython 3.11's `ast.parse` failing inside Hypothesis while it describes a generated strategy (its
`repr` of a lambda): an error of the fuzzer's own, before any request is sent for that operation, so not
counted as a failed case (every other error and every failed check is)."""


def fuzz(url: str, key: str, out: Path, *, real_names: bool) -> tuple[int, int, str]:
    """Run the fuzzer; returns (test cases, failed cases, the tail of its output)."""
    config: list[str] = []
    if real_names:
        (out / "schemathesis.toml").write_text(REAL_NAMES)
        config = ["--config-file", str(out / "schemathesis.toml")]
    junit = out / "junit.xml"
    result = subprocess.run(
        [
            str(Path(sys.executable).with_name("st")),
            *config,
            "run",
            f"{url}/openapi.json",
            "--checks",
            "not_a_server_error",
            "--header",
            f"Authorization: Bearer {key}",
            "--max-examples",
            str(EXAMPLES_PER_OPERATION),
            "--generation-deterministic",
            "--request-timeout",
            "30",
            "--workers",
            "2",
            "--no-color",
            "--report",
            "junit",
            "--report-junit-path",
            str(junit),
        ],
        capture_output=True,
        text=True,
        timeout=BUDGET_S,
        check=False,
        cwd=out,  # its own state folder (.schemathesis) lands there
    )
    tail = result.stdout[-6000:] + result.stderr[-2000:]
    match = re.search(r"(\d+) generated", result.stdout)
    generated = int(match.group(1)) if match else 0
    suites = ElementTree.parse(junit).getroot() if junit.exists() else None
    failed = fuzzer_bugs = 0
    if suites is not None:
        texts = [ElementTree.tostring(e, encoding="unicode") for e in suites.iter("error")]
        fuzzer_bugs = sum(FUZZER_BUG in t for t in texts)
        failed = sum(1 for _ in suites.iter("failure")) + len(texts) - fuzzer_bugs
    if result.returncode != 0 and failed == 0 and not fuzzer_bugs:
        failed = -1  # the fuzzer itself failed: say so below
    return generated, failed, tail


@pytest.mark.parametrize(("who", "real_names"), [("admin", False), ("app", False), ("app", True)])
def test_no_generated_request_gets_a_server_error(
    fuzzed: tuple[RunningSuite, str], who: str, real_names: bool, tmp_path: Path
) -> None:
    running, app_key = fuzzed
    key = running.settings.admin_key if who == "admin" else app_key
    generated, failed, tail = fuzz(running.url, key, tmp_path, real_names=real_names)
    print(tail)
    assert failed == 0, tail
    assert generated >= 200, tail  # it did reach the API (a fuzzer that sent nothing would pass too)
    assert running.suite.dead() == []  # and nothing it sent brought a service down
