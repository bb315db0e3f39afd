"""PyTorch uploads: TorchScript and torch.export archives are scanned (never unpickled), converted to
ONNX, kept as TorchScript variants, and profiled like any other model."""

from __future__ import annotations

import io
import warnings
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import torch
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session

from infaas.clients.registry import RegistryClient
from infaas.core.config import Settings
from infaas.core.credentials import internal_headers
from infaas.data.artifacts import LocalArtifactStore
from infaas.data.db import ModelRow
from infaas.runtimes.pytorch_io import load_torchscript
from infaas_cli.demo_models import DemoModel
from services.profiler import service
from services.registry.app import create_app
from services.registry.deps import _session
from tests.integration.registry.conftest import ADMIN, upload
from tests.token_model import accuracy, token_model


@pytest.fixture
def registry(settings: Settings, db_session: Session) -> Iterator[TestClient]:
    app = create_app(settings.model_copy(update={"profile_batch_sizes": [1, 8], "profile_threads": [1]}))
    app.dependency_overrides[_session] = lambda: (yield db_session)
    with TestClient(app, headers=internal_headers(settings.internal_key)) as client:
        assert client.post("/v1/apps", json={"name": "a1"}, headers=ADMIN).status_code == 201
        yield client


def _exported(model: DemoModel, *, dynamic: bool = True) -> bytes:
    """The model as a torch.export archive; without `dynamic`, exported from one row with no
    `dynamic_shapes` (the call torch's documentation shows first), so the program fixes a batch of 1."""
    module = load_torchscript(model.torchscript_path.read_bytes())
    batch = torch.export.Dim("batch", min=1, max=1024)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if dynamic:
            program = torch.export.export(_Wrap(module), (torch.zeros(2, 64),), dynamic_shapes=({0: batch},))
        else:
            program = torch.export.export(_Wrap(module), (torch.zeros(1, 64),))
    buf = io.BytesIO()
    torch.export.save(program, buf)
    return buf.getvalue()


class _Wrap(torch.nn.Module):
    """Re-trace a TorchScript module's weights as a plain module so torch.export can take it."""

    def __init__(self, scripted: torch.jit.ScriptModule) -> None:
        super().__init__()
        self.layers = torch.nn.ModuleList()
        params = dict(scripted.named_parameters())
        self.w = torch.nn.ParameterDict(
            {k.replace(".", "_"): torch.nn.Parameter(v.detach()) for k, v in params.items()}
        )
        self.keys = sorted({k.rsplit(".", 1)[0] for k in params})

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for i, key in enumerate(self.keys):
            x = torch.nn.functional.linear(
                x, self.w[f"{key.replace('.', '_')}_weight"], self.w[f"{key.replace('.', '_')}_bias"]
            )
            if i < len(self.keys) - 1:
                x = torch.relu(x)
        return torch.softmax(x, dim=-1)


def profile(registry: TestClient, settings: Settings, name: str) -> list[dict[str, object]]:
    model_id = registry.get(f"/internal/models/by-name/{name}").json()["id"]
    service.profile_model(
        model_id,
        registry=RegistryClient("", internal_key="", http=registry),
        artifacts=LocalArtifactStore(settings.resolved_artifact_dir),
        settings=settings.model_copy(update={"profile_batch_sizes": [1, 8], "profile_threads": [1]}),
        live_kinds=lambda: set(),
        dispatch=lambda _m, _k: None,
    )
    variants: list[dict[str, object]] = registry.get(f"/v1/models/{name}/variants", headers=ADMIN).json()
    return variants


def test_torchscript_upload_becomes_onnx_and_torchscript_variants(
    registry: TestClient, settings: Settings, small_model: DemoModel, db_session: Session
) -> None:
    files = upload(
        small_model.torchscript_path.read_bytes(), small_model.validation_path.read_bytes(), name="ts"
    )
    response = registry.post("/v1/models", headers=ADMIN, **files)
    assert response.status_code == 202, response.text
    assert response.json()["format"] == "torchscript"
    assert response.json()["signature"]["inputs"] == [{"name": "x", "dtype": "float32", "shape": [None, 64]}]
    row = db_session.scalars(select(ModelRow).where(ModelRow.name == "ts")).one()
    assert row.onnx_digest and row.torchscript_digest == row.artifact_digest

    variants = profile(registry, settings, "ts")
    ready = [v for v in variants if v["status"] == "ready"]
    runtimes = {v["runtime"] for v in ready}
    assert runtimes == {"onnxruntime", "torchscript"}
    data = np.load(small_model.validation_path)
    module = load_torchscript(small_model.torchscript_path.read_bytes())
    with torch.inference_mode():
        expected = float((module(torch.from_numpy(data["x"])).argmax(1).numpy() == data["y"]).mean())
    for v in ready:
        if v["precision"] == "fp32":
            assert v["accuracy"] == pytest.approx(expected, abs=1e-6), v["id"]


def test_torch_export_upload_is_converted_and_profiled(
    registry: TestClient, settings: Settings, demo_models: list[DemoModel]
) -> None:
    large = demo_models[1]
    files = upload(_exported(large), large.validation_path.read_bytes(), name="pt2")
    response = registry.post("/v1/models", headers=ADMIN, **files)
    assert response.status_code == 202, response.text
    assert response.json()["format"] == "torch_export"
    variants = profile(registry, settings, "pt2")
    ready = [v for v in variants if v["status"] == "ready"]
    assert {v["runtime"] for v in ready} >= {"onnxruntime"}
    assert all(v["accuracy"] > 0.9 for v in ready if v["precision"] == "fp32")


def test_a_torch_export_upload_with_its_batch_fixed_is_served_in_batches(
    registry: TestClient, settings: Settings, demo_models: list[DemoModel]
) -> None:
    large = demo_models[1]
    files = upload(_exported(large, dynamic=False), large.validation_path.read_bytes(), name="pt2-fixed")
    response = registry.post("/v1/models", headers=ADMIN, **files)
    assert response.status_code == 202, response.text
    assert response.json()["format"] == "torch_export"
    assert response.json()["signature"]["inputs"][0]["shape"] == [None, 64]
    variants = profile(registry, settings, "pt2-fixed")
    ready = [v for v in variants if v["status"] == "ready"]
    assert {v["runtime"] for v in ready} == {"onnxruntime"}  # no TorchScript form: a trace fixes the batch
    assert max(v["max_batch"] for v in ready) == 8  # the batch sizes profiled here: 1 and 8
    assert all(v["accuracy"] > 0.9 for v in ready if v["precision"] == "fp32")


def test_malicious_archive_is_refused_and_leaves_nothing(
    registry: TestClient, small_model: DemoModel, settings: Settings, db_session: Session
) -> None:
    import pickle
    import zipfile

    marker = settings.var_dir / "pwned"

    class Evil:
        def __reduce__(self) -> tuple[object, tuple[str]]:
            import os

            return (os.system, (f"touch {marker}",))

    original = small_model.torchscript_path.read_bytes()
    buf = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(original)) as src, zipfile.ZipFile(buf, "w") as dst:
        for info in src.infolist():
            data = src.read(info)
            if info.filename.endswith("data.pkl"):
                data = pickle.dumps(Evil())  # written, never loaded by the test
            dst.writestr(info, data)
    files = upload(buf.getvalue(), small_model.validation_path.read_bytes(), name="evil")
    response = registry.post("/v1/models", headers=ADMIN, **files)
    assert response.status_code == 422, response.text
    assert not marker.exists()
    assert db_session.scalars(select(ModelRow).where(ModelRow.name == "evil")).all() == []
    root = settings.resolved_artifact_dir
    assert not root.exists() or not [p for p in root.rglob("*") if p.is_file()]


@pytest.mark.parametrize("form", ["torchscript", "exported"])
def test_a_model_of_token_ids_and_a_mask_is_profiled_in_both_runtimes(
    registry: TestClient, settings: Settings, tmp_path: Path, form: str
) -> None:
    """Two inputs named by the forward, one of them int64, and a tuple of outputs (`tests/token_model.py`):
    every fp32 variant scores the module's own accuracy on the validation set."""
    model = token_model(tmp_path)
    name = f"tokens-{form}"
    files = upload(getattr(model, form).read_bytes(), model.validation.read_bytes(), name=name)
    response = registry.post("/v1/models", headers=ADMIN, **files)
    assert response.status_code == 202, response.text
    assert [i["name"] for i in response.json()["signature"]["inputs"]] == ["ids", "mask"]
    ready = [v for v in profile(registry, settings, name) if v["status"] == "ready"]
    assert {v["runtime"] for v in ready} == {"onnxruntime", "torchscript"}
    expected = accuracy(model.module, model.validation)
    assert expected > 0.85
    for v in ready:
        if v["precision"] == "fp32":
            assert v["accuracy"] == pytest.approx(expected, abs=1e-6), v["id"]
