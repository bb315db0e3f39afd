"""More than one machine, without a shared volume: the profiler and both executors run with
`artifact_source=registry`, each with an artifact directory of its own. The profiler fetches the model
and its validation set by digest and uploads the variants it makes; each executor fetches the variant it
loads, verifies the digest and serves it; every directory ends up holding only what its process used."""

from __future__ import annotations

import signal
from pathlib import Path

import numpy as np
import onnxruntime as ort
import orjson
import pytest

from infaas.clients.executor import OfflineExecutorClient
from infaas.core.credentials import internal_headers
from infaas.data.artifacts import digest_of
from tests.e2e.conftest import RunningSuite, _settings, own_suite
from tests.e2e.wine import CHEM, register_wine

pytestmark = pytest.mark.e2e

APP = "cellar"
REMOTE = ("profiler", "executor", "executor-2")


def files(root: Path) -> set[str]:
    return {p.name for p in root.rglob("*") if p.is_file() and not p.name.startswith(".")}


def _on_their_own_disks(running: RunningSuite, caches: dict[str, Path]) -> None:
    """Restart the profiler and the executors as if on other machines: their own directories, artifacts
    from the registry only."""
    suite = running.suite
    for name in REMOTE:
        suite.procs[name].send_signal(signal.SIGTERM)
    for name in REMOTE:
        suite.procs[name].wait(timeout=30)
    for name in REMOTE:
        env = {"INFAAS_ARTIFACT_SOURCE": "registry", "INFAAS_ARTIFACT_DIR": str(caches[name])}
        if name == "profiler":
            suite.start(name, ["serve", "profiler", "--queue", "profile.cpu"], env)
        else:
            suite.start(name, ["serve", "executor"], {**env, "INFAAS_EXECUTOR_PORT": str(suite.port(name))})
    suite.wait_healthy(("executor", "executor-2"))


def test_profiler_and_executors_on_their_own_disks(tmp_path: Path) -> None:
    settings = _settings(tmp_path / "var")
    caches = {name: tmp_path / f"{name}-disk" for name in REMOTE}
    with own_suite(settings) as running:
        _on_their_own_disks(running, caches)
        created = running.admin.post("/v1/apps", json={"name": APP, "cache": False})
        assert created.status_code == 201, created.text
        with running.client(created.json()["api_key"]) as client:
            assert register_wine(client, tmp_path, app=APP).status_code == 202
        assert running.wait_ready("wine", timeout_s=300)["status"] == "ready"

        repository = settings.resolved_artifact_dir
        onnx_path, npz_path = tmp_path / "wine.onnx", tmp_path / "wine.npz"  # what `register_wine` sent
        original, validation = digest_of(onnx_path.read_bytes()), digest_of(npz_path.read_bytes())
        variants = running.admin.get("/v1/models/wine/variants", params={"hardware": "cpu"}).json()
        made = {v["artifact_digest"] for v in variants} - {original}
        assert made, "the profiler made new artifacts (optimized, quantized forms)"
        assert made | {original, validation} <= files(repository), "every variant was uploaded"
        assert {original, validation} <= files(caches["profiler"])

        # An fp32 variant with its own artifact (a graph optimization of the original), on both executors.
        chosen = next(v for v in variants if v["precision"] == "fp32" and v["artifact_digest"] in made)
        data = np.load(npz_path)
        rows = {"chem": data["chem"][:16], "color": data["color"][:16]}
        session = ort.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
        expected = session.run(None, rows)[0]
        offline = OfflineExecutorClient(internal_key=settings.internal_key)
        try:
            for name in ("executor", "executor-2"):
                url = f"http://127.0.0.1:{running.suite.port(name)}"
                loaded = running.admin.post(  # a direct call with the internal key, as the planner makes
                    f"{url}/v1/instances",
                    json={"variant": chosen["id"]},
                    headers=internal_headers(settings.internal_key),
                )
                assert loaded.status_code == 200, loaded.text
                assert loaded.json()["state"] == "active"
                assert chosen["artifact_digest"] in files(caches[name])
                fetched = caches[name] / chosen["artifact_digest"][:2] / chosen["artifact_digest"]
                assert digest_of(fetched.read_bytes()) == chosen["artifact_digest"]
                outputs = offline.run(url, chosen["id"], rows)
                np.testing.assert_allclose(outputs["logits"], expected, rtol=1e-5, atol=1e-5)
        finally:
            offline.close()

        for name in ("executor", "executor-2"):  # a cache holds repository artifacts, never anything else
            assert files(caches[name]) <= files(repository)

        # And online, through the gateway: whichever executor answers, it answers the row's own logits.
        with running.client(created.json()["api_key"]) as client:
            for i in range(4):
                row = np.concatenate([data["chem"][i], data["color"][i]])
                body = {"inputs": {"chem": [row[:CHEM].tolist()], "color": [row[CHEM:].tolist()]}}
                answer = client.post(f"/v1/apps/{APP}/infer", content=orjson.dumps(body))
                assert answer.status_code == 200, answer.text
                logits = np.asarray(answer.json()["outputs"]["logits"], dtype=np.float32)
                np.testing.assert_allclose(logits[0], expected[i], rtol=1e-3, atol=1e-3)
