"""The model repository over HTTP (`/internal/artifacts/{digest}`) on the real registry app, and a
profiler whose artifacts come only from there: its own cache directory, nothing shared with the
registry's but the HTTP API."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
from fastapi.testclient import TestClient

from infaas.clients.registry import RegistryClient
from infaas.core.config import Settings
from infaas.core.errors import InvalidInput, NotFound
from infaas.data.artifacts import CachedArtifactStore, LocalArtifactStore, digest_of
from infaas_cli.demo_models import DemoModel
from services.profiler import service
from tests.integration.registry.conftest import ADMIN, upload

DATA = b"an artifact's bytes \x00" * 5000
DIGEST = digest_of(DATA)


def files(root: Path) -> set[str]:
    return {p.name for p in root.rglob("*") if p.is_file()}


def test_upload_download_and_refusals(registry: TestClient, settings: Settings) -> None:
    url = f"/internal/artifacts/{DIGEST}"
    assert registry.head(url).status_code == 404
    missing = registry.get(url)
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"

    wrong = registry.put(url, content=DATA + b"!")
    assert wrong.status_code == 422, wrong.text
    assert wrong.json()["error"]["digest"] == DIGEST
    assert not LocalArtifactStore(settings.resolved_artifact_dir).exists(DIGEST)  # nothing kept

    assert registry.put(url, content=DATA).status_code == 204
    assert registry.put(url, content=DATA).status_code == 204  # the same bytes again: idempotent
    assert registry.head(url).status_code == 200
    got = registry.get(url)
    assert got.status_code == 200 and got.content == DATA

    for bad in ("abc", DIGEST.upper(), "..%2F..%2Fetc%2Fpasswd"):
        assert registry.get(f"/internal/artifacts/{bad}").status_code in (404, 422)
    unkeyed = registry.get(url, headers={"x-infaas-internal": ""})
    assert unkeyed.status_code == 401


def test_the_client_streams_and_the_cache_verifies(registry: TestClient, tmp_path: Path) -> None:
    client = RegistryClient("", internal_key="", http=registry)
    store = CachedArtifactStore(LocalArtifactStore(tmp_path / "elsewhere"), client)
    assert store.put(DATA) == DIGEST  # uploaded through the registry's check
    assert client.has(DIGEST)
    store.delete(DIGEST)
    assert store.path(DIGEST).read_bytes() == DATA  # fetched back by digest
    with pytest.raises(NotFound):
        store.path(digest_of(b"never stored"))
    with pytest.raises(InvalidInput):
        client.upload(digest_of(b"something else"), DATA)


def test_a_profiler_without_the_repository_fetches_and_uploads_by_digest(
    registry: TestClient, settings: Settings, demo_models: list[DemoModel], tmp_path: Path
) -> None:
    small = demo_models[0]
    assert registry.post("/v1/apps", json={"name": "a1"}, headers=ADMIN).status_code == 201
    form = upload(small.onnx_path.read_bytes(), small.validation_path.read_bytes())
    assert registry.post("/v1/models", headers=ADMIN, **form).status_code == 202
    model = registry.get("/internal/models/by-name/m1").json()
    repository = settings.resolved_artifact_dir
    cache = tmp_path / "profiler-cache"
    client = RegistryClient("", internal_key="", http=registry)
    service.profile_model(
        model["id"],
        registry=client,
        artifacts=CachedArtifactStore(LocalArtifactStore(cache), client),
        settings=settings,
        live_kinds=lambda: set(),
        dispatch=lambda _model, _kind: None,
    )
    assert registry.get("/v1/models/m1", headers=ADMIN).json()["status"] == "ready"
    variants = registry.get("/v1/models/m1/variants", params={"hardware": "cpu"}, headers=ADMIN).json()
    made = {v["artifact_digest"] for v in variants}
    assert made - {model["onnx_digest"]}, "the optimized and quantized variants are new artifacts"
    # The profiler read the model and validation set from the registry and wrote every variant there:
    # the registry's repository holds all of them, the profiler's cache what it touched.
    assert made | {model["onnx_digest"], model["validation_digest"]} <= files(repository)
    assert {model["onnx_digest"], model["validation_digest"]} <= files(cache)
    # Memory from the fresh-process probe: per batch size, at least the artifact, its peak the variant's.
    for v in variants:
        points = [p["memory_bytes"] for p in v["latency"]]
        assert all(
            p is not None
            and p >= (repository / v["artifact_digest"][:2] / v["artifact_digest"]).stat().st_size
            for p in points
        )
        assert v["peak_memory_bytes"] == max(points) and points == sorted(points)
    x = np.load(small.validation_path)["x"][:8]
    for digest in made:
        session = ort.InferenceSession(
            str(repository / digest[:2] / digest), providers=["CPUExecutionProvider"]
        )
        assert session.run(None, {session.get_inputs()[0].name: x})[0].shape[0] == 8
