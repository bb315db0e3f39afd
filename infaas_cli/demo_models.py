"""Three small, real demo models trained on scikit-learn's bundled 8x8 digits.

The models differ clearly in size, accuracy and latency, which is what a model-less
serving system needs to make interesting variant choices. All three share one ONNX
signature (input ``x`` of shape ``(batch, 64)`` float32, output ``probabilities`` of
shape ``(batch, 10)`` float32), so any of them can answer the same query.

Training takes seconds, and results are cached under a directory so later calls only
check a manifest.
"""

from __future__ import annotations

import fcntl
import io
import json
import os
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import onnx
import onnxruntime as ort
import torch
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from torch import nn

# Bump whenever the data split, architectures or training recipe change: it invalidates caches.
DEMO_MODELS_VERSION = 1

DEMO_MODEL_NAMES: tuple[str, ...] = ("digits-mlp-small", "digits-mlp-large", "digits-cnn")

MANIFEST_NAME = "demo-models.json"
VALIDATION_NAME = "digits-validation.npz"
_LOCK_NAME = ".demo.lock"
_OPSET = 17
_BATCH_SIZE = 64
# Training is tiny; more threads than this mostly adds synchronisation overhead.
_TRAIN_THREADS = 2


@dataclass(frozen=True)
class DemoModel:
    """A trained demo model and where its artifacts live."""

    name: str
    description: str
    onnx_path: Path
    validation_path: Path
    torchscript_path: Path


class _ToImage(nn.Module):
    """Reshape flat 64-pixel rows to 1x8x8 images (a constant Reshape keeps the batch dynamic)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.reshape(-1, 1, 8, 8)


class _Classifier(nn.Module):
    """Wraps a logits network so the exported graph ends in a softmax."""

    def __init__(self, body: nn.Module) -> None:
        super().__init__()
        self.body = body

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(self.body(x), dim=-1)


def _mlp_small() -> nn.Module:
    return nn.Sequential(nn.Linear(64, 16), nn.ReLU(), nn.Linear(16, 10))


def _mlp_large() -> nn.Module:
    return nn.Sequential(nn.Linear(64, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))


def _cnn() -> nn.Module:
    return nn.Sequential(
        _ToImage(),
        nn.Conv2d(1, 32, 3, padding=1),
        nn.ReLU(),
        nn.Conv2d(32, 64, 3, padding=1),
        nn.ReLU(),
        # Convolving at full 8x8 resolution before pooling is what makes this the slowest variant.
        nn.Conv2d(64, 128, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),  # 8x8 -> 4x4
        nn.Flatten(),
        nn.Linear(128 * 4 * 4, 10),
    )


@dataclass(frozen=True)
class _Recipe:
    description: str
    build: Callable[[], nn.Module]
    epochs: int
    lr: float


_RECIPES: dict[str, _Recipe] = {
    "digits-mlp-small": _Recipe(
        "Tiny MLP 64-16-10: smallest and fastest, least accurate.", _mlp_small, 15, 2e-3
    ),
    "digits-mlp-large": _Recipe("MLP 64-512-512-10: larger and more accurate.", _mlp_large, 30, 1e-3),
    "digits-cnn": _Recipe("CNN (3 conv layers, 32/64/128 ch): slowest and most accurate.", _cnn, 15, 2e-3),
}

_Arrays = tuple[
    npt.NDArray[np.float32], npt.NDArray[np.float32], npt.NDArray[np.int64], npt.NDArray[np.int64]
]


def _load_split(seed: int) -> _Arrays:
    """Digits scaled to [0, 1], split 70/30 stratified: (x_train, x_val, y_train, y_val)."""
    digits = load_digits()
    x = (np.asarray(digits.data, dtype=np.float64) / 16.0).astype(np.float32)
    y = np.asarray(digits.target, dtype=np.int64)
    x_tr, x_val, y_tr, y_val = train_test_split(x, y, test_size=0.3, random_state=seed, stratify=y)
    return (
        np.ascontiguousarray(x_tr, dtype=np.float32),
        np.ascontiguousarray(x_val, dtype=np.float32),
        np.ascontiguousarray(y_tr, dtype=np.int64),
        np.ascontiguousarray(y_val, dtype=np.int64),
    )


def _train(recipe: _Recipe, x: npt.NDArray[np.float32], y: npt.NDArray[np.int64], seed: int) -> nn.Module:
    """Train the logits body with Adam + cross-entropy; return the softmax-wrapped model in eval mode."""
    torch.manual_seed(seed)
    body = recipe.build()
    opt = torch.optim.Adam(body.parameters(), lr=recipe.lr)
    loss_fn = nn.CrossEntropyLoss()
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)
    # A private generator keeps the shuffling order independent of any other torch RNG use.
    gen = torch.Generator().manual_seed(seed)
    body.train()
    for _ in range(recipe.epochs):
        order = torch.randperm(len(xt), generator=gen)
        for start in range(0, len(xt), _BATCH_SIZE):
            idx = order[start : start + _BATCH_SIZE]
            opt.zero_grad()
            loss = loss_fn(body(xt[idx]), yt[idx])
            loss.backward()
            opt.step()
    model = _Classifier(body)
    model.eval()
    return model


def _export_onnx(model: nn.Module) -> bytes:
    """Export with the legacy (TorchScript-based) exporter to a checked ONNX blob."""
    example = torch.zeros(1, 64, dtype=torch.float32)
    # torch 2.13 warns that the legacy exporter is deprecated; pytest here turns warnings into errors.
    # torch.onnx.export is typed to take a path, so go through a scratch dir, not a BytesIO.
    with warnings.catch_warnings(), tempfile.TemporaryDirectory() as scratch:
        warnings.simplefilter("ignore")
        out = Path(scratch) / "model.onnx"
        torch.onnx.export(
            model,
            (example,),
            out,
            dynamo=False,
            input_names=["x"],
            output_names=["probabilities"],
            dynamic_axes={"x": {0: "batch"}, "probabilities": {0: "batch"}},
            opset_version=_OPSET,
        )
        data = out.read_bytes()
    onnx.checker.check_model(onnx.load_from_string(data))
    return data


def _export_torchscript(model: nn.Module) -> bytes:
    """Trace (the graph is static, so tracing is exact) and serialise a TorchScript module."""
    buf = io.BytesIO()
    with warnings.catch_warnings():  # TorchScript is deprecated upstream and may warn too.
        warnings.simplefilter("ignore")
        traced = torch.jit.trace(model, torch.zeros(1, 64, dtype=torch.float32))  # type: ignore[no-untyped-call]
        torch.jit.save(traced, buf)
    return buf.getvalue()


def _onnx_accuracy(onnx_bytes: bytes, x: npt.NDArray[np.float32], y: npt.NDArray[np.int64]) -> float:
    """Accuracy of the exported graph itself, so the manifest describes what is actually served."""
    sess = ort.InferenceSession(onnx_bytes, providers=["CPUExecutionProvider"])
    probs: npt.NDArray[np.float32] = sess.run(["probabilities"], {"x": x})[0]
    return float(np.mean(np.argmax(probs, axis=1) == y))


def _atomic_write(path: Path, data: bytes) -> None:
    """Write via a temp file in the same directory + os.replace so readers never see a partial file."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        # mkstemp creates 0600; the artifacts are meant to be read by other (serving) processes.
        os.fchmod(fd, 0o644)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


@contextmanager
def _locked(cache_dir: Path) -> Iterator[None]:
    """Exclusive cross-process lock so concurrent builders don't train and write over each other."""
    with open(cache_dir / _LOCK_NAME, "a+b") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _read_manifest(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _describe(cache_dir: Path, name: str) -> DemoModel:
    return DemoModel(
        name=name,
        description=_RECIPES[name].description,
        onnx_path=cache_dir / f"{name}.onnx",
        validation_path=cache_dir / VALIDATION_NAME,
        torchscript_path=cache_dir / f"{name}.torchscript.pt",
    )


def build_demo_models(
    cache_dir: Path, *, names: Sequence[str] | None = None, seed: int = 0
) -> list[DemoModel]:
    """Train (or reuse cached) demo models; returns them in DEMO_MODEL_NAMES order (filtered by names).

    A model is reused when its ONNX and TorchScript files and the shared validation set exist
    and ``demo-models.json`` records it under the current ``DEMO_MODELS_VERSION`` and ``seed``.
    Everything else is (re)trained, exported, checked and written atomically under a file lock.
    """
    wanted = DEMO_MODEL_NAMES if names is None else tuple(names)
    unknown = sorted(set(wanted) - set(DEMO_MODEL_NAMES))
    if unknown:
        raise ValueError(f"unknown demo model(s) {unknown}; expected a subset of {DEMO_MODEL_NAMES}")
    cache_dir = Path(cache_dir)
    cache_dir.mkdir(parents=True, exist_ok=True)
    selected = [name for name in DEMO_MODEL_NAMES if name in wanted]
    models = [_describe(cache_dir, name) for name in selected]
    manifest_path = cache_dir / MANIFEST_NAME

    with _locked(cache_dir):
        manifest = _read_manifest(manifest_path)
        if manifest.get("version") != DEMO_MODELS_VERSION or manifest.get("seed") != seed:
            manifest = {"version": DEMO_MODELS_VERSION, "seed": seed, "models": {}}
        entries: dict[str, Any] = manifest.setdefault("models", {})
        validation_ok = models[0].validation_path.exists() if models else True
        if not validation_ok:
            # The validation set defines the recorded accuracies; without it nothing cached is trusted.
            entries.clear()
        missing = [
            m
            for m in models
            if m.name not in entries or not (m.onnx_path.exists() and m.torchscript_path.exists())
        ]
        if not missing and validation_ok:
            return models

        x_tr, x_val, y_tr, y_val = _load_split(seed)
        val_buf = io.BytesIO()
        np.savez(val_buf, x=x_val, y=y_val)
        _atomic_write(cache_dir / VALIDATION_NAME, val_buf.getvalue())

        prev_threads = torch.get_num_threads()
        torch.set_num_threads(max(1, min(_TRAIN_THREADS, os.cpu_count() or 1)))
        try:
            for m in missing:
                started = time.perf_counter()
                # Offset by position so each model gets its own but reproducible init.
                model = _train(_RECIPES[m.name], x_tr, y_tr, seed + DEMO_MODEL_NAMES.index(m.name))
                train_s = time.perf_counter() - started
                onnx_bytes = _export_onnx(model)
                _atomic_write(m.onnx_path, onnx_bytes)
                _atomic_write(m.torchscript_path, _export_torchscript(model))
                entries[m.name] = {
                    "name": m.name,
                    "description": m.description,
                    "params": sum(p.numel() for p in model.parameters()),
                    "val_accuracy": _onnx_accuracy(onnx_bytes, x_val, y_val),
                    "train_seconds": round(train_s, 3),
                    "onnx": m.onnx_path.name,
                    "torchscript": m.torchscript_path.name,
                }
        finally:
            torch.set_num_threads(prev_threads)
        _atomic_write(manifest_path, (json.dumps(manifest, indent=2, sort_keys=True) + "\n").encode())
    return models
