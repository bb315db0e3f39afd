"""ONNX Runtime's usage telemetry stays off in every process of the suite (infaas/__init__.py).

ORT 1.31 on Linux writes a device ID and an event database under `$XDG_CACHE_HOME/Microsoft` when its
telemetry is on, and starts threads that upload them. Each case imports one of the suite's entry modules
in a fresh interpreter (the order of imports there is the module's own: several import onnxruntime
before anything of infaas's), runs a session, and looks for that directory."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]

RUN_A_SESSION = """
import sys, importlib
importlib.import_module(sys.argv[1])
import numpy as np, onnxruntime as ort
from onnx import TensorProto, helper
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 3])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 3])
graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x], [y])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)
session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
session.run(None, {"x": np.ones((2, 3), np.float32)})
"""


NOT_ON_A_BUILD_MACHINE = (
    "ORT_DISABLE_TELEMETRY",
    "ORT_RUNNING_UNIT_TESTS",
    # ORT turns its telemetry off by itself where one of these says it runs on a build machine (CI
    # sets `CI=true`): without them, the sessions below see what a server's processes see.
    "CI",
    "TF_BUILD",
    "GITHUB_ACTIONS",
    "GITLAB_CI",
    "CIRCLECI",
    "TRAVIS",
    "JENKINS_URL",
    "CODEBUILD_BUILD_ID",
    "BUILDKITE",
    "TEAMCITY_VERSION",
    "APPVEYOR",
    "BITBUCKET_BUILD_NUMBER",
)


def run_session(entry: str, cache: Path, telemetry: str | None) -> None:
    env = {k: v for k, v in os.environ.items() if k not in NOT_ON_A_BUILD_MACHINE}
    env["XDG_CACHE_HOME"] = str(cache)
    if telemetry is not None:
        env["ORT_DISABLE_TELEMETRY"] = telemetry
    subprocess.run([sys.executable, "-c", RUN_A_SESSION, entry], cwd=ROOT, env=env, check=True, timeout=120)


def telemetry_files(cache: Path) -> list[Path]:
    return sorted(p for p in (cache / "Microsoft").rglob("*") if p.is_file())


@pytest.mark.parametrize(
    "entry",
    [
        "services.profiler.generators",  # imports onnxruntime before infaas
        "services.profiler.parity_training",
        "infaas_cli.demo_models",
        "infaas.runtimes.registry",
        "gateway.app",
        "services.executor.app",
    ],
)
def test_no_process_of_the_suite_keeps_ort_telemetry(entry: str, tmp_path: Path) -> None:
    run_session(entry, tmp_path, telemetry=None)
    assert telemetry_files(tmp_path) == []


def test_the_probe_sees_telemetry_when_it_is_asked_for(tmp_path: Path) -> None:
    # ORT_DISABLE_TELEMETRY=0 is the operator's way back to ORT's default; the files then appear, which
    # is what the test above would see if the suite left telemetry on.
    run_session("services.profiler.generators", tmp_path, telemetry="0")
    assert telemetry_files(tmp_path) != []
