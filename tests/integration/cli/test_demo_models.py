"""Tests for infaas_cli.demo_models: real training, ONNX export, TorchScript parity and caching.

The three models are the suite's own (the session's `demo_models`, trained once per checkout under
./var), copied to a directory of this module's; `test_rebuilds_a_missing_file` trains one from scratch."""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch

from infaas_cli.demo_models import (
    DEMO_MODEL_NAMES,
    DEMO_MODELS_VERSION,
    MANIFEST_NAME,
    DemoModel,
    build_demo_models,
)


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory, demo_models: list[DemoModel]) -> Path:
    trained = demo_models[0].onnx_path.parent
    copy = tmp_path_factory.mktemp("demo") / "demo-models"
    shutil.copytree(trained, copy, ignore=shutil.ignore_patterns(".demo.lock"))
    return copy


@pytest.fixture(scope="module")
def models(cache_dir: Path) -> dict[str, DemoModel]:
    built = build_demo_models(cache_dir)
    return {m.name: m for m in built}


@pytest.fixture(scope="module")
def validation(models: dict[str, DemoModel]) -> tuple[np.ndarray, np.ndarray]:
    paths = {m.validation_path for m in models.values()}
    assert len(paths) == 1, "all models share one validation file"
    with np.load(paths.pop()) as data:
        return data["x"], data["y"]


def _session(path: Path) -> ort.InferenceSession:
    opts = ort.SessionOptions()
    # One thread: the tests share a small machine with other work.
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    return ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])


def test_returns_models_in_canonical_order(models: dict[str, DemoModel], cache_dir: Path) -> None:
    assert tuple(models) == DEMO_MODEL_NAMES
    for name, m in models.items():
        assert m.onnx_path == cache_dir / f"{name}.onnx"
        assert m.torchscript_path == cache_dir / f"{name}.torchscript.pt"
        assert m.validation_path == cache_dir / "digits-validation.npz"
        assert m.description


def test_validation_file_format(validation: tuple[np.ndarray, np.ndarray]) -> None:
    x, y = validation
    assert x.dtype == np.float32 and x.ndim == 2 and x.shape[1] == 64
    assert y.dtype == np.int64 and y.shape == (x.shape[0],)
    # 30% of the 1797 digits.
    assert 500 <= x.shape[0] <= 580
    assert 0.0 <= x.min() and x.max() <= 1.0
    assert set(np.unique(y)) == set(range(10))


def test_onnx_models_pass_checker_and_share_signature(models: dict[str, DemoModel]) -> None:
    for m in models.values():
        proto = onnx.load(str(m.onnx_path))
        onnx.checker.check_model(proto)
        (inp,) = proto.graph.input
        (out,) = proto.graph.output
        assert inp.name == "x"
        assert out.name == "probabilities"
        assert inp.type.tensor_type.elem_type == onnx.TensorProto.FLOAT
        assert out.type.tensor_type.elem_type == onnx.TensorProto.FLOAT
        in_dims = inp.type.tensor_type.shape.dim
        out_dims = out.type.tensor_type.shape.dim
        assert [d.dim_param or d.dim_value for d in in_dims] == ["batch", 64]
        assert [d.dim_param or d.dim_value for d in out_dims] == ["batch", 10]


def test_accuracies_and_probabilities(
    models: dict[str, DemoModel], validation: tuple[np.ndarray, np.ndarray], cache_dir: Path
) -> None:
    x, y = validation
    acc: dict[str, float] = {}
    for name, m in models.items():
        probs = _session(m.onnx_path).run(["probabilities"], {"x": x})[0]
        assert probs.shape == (len(x), 10) and probs.dtype == np.float32
        np.testing.assert_allclose(probs.sum(axis=1), 1.0, atol=1e-5)
        acc[name] = float(np.mean(probs.argmax(axis=1) == y))
    assert all(a > 0.85 for a in acc.values()), acc
    assert acc["digits-mlp-small"] < acc["digits-cnn"], acc
    assert acc["digits-mlp-small"] <= acc["digits-mlp-large"], acc

    manifest = json.loads((cache_dir / MANIFEST_NAME).read_text())
    assert manifest["version"] == DEMO_MODELS_VERSION
    for name in DEMO_MODEL_NAMES:
        entry = manifest["models"][name]
        assert entry["val_accuracy"] == pytest.approx(acc[name])
        assert entry["params"] > 0
    params = {n: manifest["models"][n]["params"] for n in DEMO_MODEL_NAMES}
    assert params["digits-mlp-small"] < params["digits-cnn"] < params["digits-mlp-large"]


def test_dynamic_batch(models: dict[str, DemoModel], validation: tuple[np.ndarray, np.ndarray]) -> None:
    x, _ = validation
    for m in models.values():
        sess = _session(m.onnx_path)
        for n in (1, 7, 32):
            assert sess.run(None, {"x": x[:n]})[0].shape == (n, 10)


def test_torchscript_matches_onnx(
    models: dict[str, DemoModel], validation: tuple[np.ndarray, np.ndarray]
) -> None:
    x, _ = validation
    for m in models.values():
        with warnings.catch_warnings():  # TorchScript loading may emit deprecation warnings.
            warnings.simplefilter("ignore")
            scripted = torch.jit.load(str(m.torchscript_path))  # type: ignore[no-untyped-call]
        scripted.eval()
        with torch.no_grad():
            ts_out = scripted(torch.from_numpy(x)).numpy()
        onnx_out = _session(m.onnx_path).run(["probabilities"], {"x": x})[0]
        np.testing.assert_allclose(ts_out, onnx_out, atol=1e-4, rtol=0)


def test_second_build_is_a_cache_hit(models: dict[str, DemoModel], cache_dir: Path) -> None:
    # Nothing rewritten is what makes the hit cheap; its time is measured by bench/diagnostics/demo_models.py.
    files = sorted(p for p in cache_dir.iterdir() if p.name != ".demo.lock")
    before = {p: p.stat().st_mtime_ns for p in files}
    again = build_demo_models(cache_dir)
    assert again == list(models.values())
    assert {p: p.stat().st_mtime_ns for p in files} == before
    # No temp files left behind by the atomic writes.
    assert not [p for p in cache_dir.iterdir() if p.name.endswith(".tmp")]


def test_names_filter_reuses_cache(models: dict[str, DemoModel], cache_dir: Path) -> None:
    before = models["digits-cnn"].onnx_path.stat().st_mtime_ns
    subset = build_demo_models(cache_dir, names=["digits-cnn", "digits-mlp-small"])
    assert [m.name for m in subset] == ["digits-mlp-small", "digits-cnn"]
    assert models["digits-cnn"].onnx_path.stat().st_mtime_ns == before
    with pytest.raises(ValueError, match="unknown"):
        build_demo_models(cache_dir, names=["nope"])


def test_rebuilds_a_missing_file(tmp_path: Path) -> None:
    (small,) = build_demo_models(tmp_path, names=["digits-mlp-small"])
    first = small.onnx_path.read_bytes()
    small.onnx_path.unlink()
    (again,) = build_demo_models(tmp_path, names=["digits-mlp-small"])
    # Deterministic training: the rebuilt graph is identical.
    assert again.onnx_path.read_bytes() == first
