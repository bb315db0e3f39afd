"""Checking an uploaded model and validation set before anything is stored.

ONNX files go through the ONNX checker; PyTorch archives (TorchScript, torch.export) are scanned without
unpickling, loaded, and converted to ONNX where the exporter can (`pytorch.py`). Every
model is then run on two validation rows: a file that parses can still fail to run.

What the labels `y` and the model's first output must be depends on the task (`infaas.core.tasks`):
- classification: `y` is a 1-D integer array of class ids; the output is (batch, classes) scores.
- regression: `y` is a finite numeric array of shape (rows,) or (rows, k), not constant over all its
  targets (R² would be undefined); the output is (batch,) or (batch, k) with the same number of targets
  per row, a 1-D `y` counting as one target (so (batch, 1) and (batch,) both fit it).
"""

from __future__ import annotations

import io
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx

from infaas.core.errors import InvalidInput, InvalidModel
from infaas.core.tasks import TASKS
from infaas.runtimes.onnx_runtime import OnnxRuntime
from infaas.wire.tensors import Signature, load_onnx, read_signature, validation_keys
from services.registry.intake import batch_axis, zipmap

SUPPORTED_TASKS = TASKS


@dataclass(frozen=True)
class CheckedUpload:
    model_bytes: bytes
    validation_bytes: bytes
    signature: Signature
    rows: int
    fmt: str
    onnx_bytes: bytes | None
    torchscript_bytes: bytes | None


def check_upload(model_bytes: bytes, validation_bytes: bytes, task: str) -> CheckedUpload:
    """Everything that can be wrong with an upload is found here, before anything is written."""
    if task not in SUPPORTED_TASKS:
        raise InvalidInput(f"task {task!r} is not supported; supported: {sorted(SUPPORTED_TASKS)}")
    if model_bytes[:2] == b"PK":
        from services.registry.intake import pytorch  # imports torch: only for PyTorch uploads

        return pytorch.check(model_bytes, validation_bytes, task)
    return check_onnx(model_bytes, validation_bytes, task)


def check_onnx(model_bytes: bytes, validation_bytes: bytes, task: str) -> CheckedUpload:
    uploaded = load_onnx(model_bytes)
    model = zipmap.unzipped(uploaded)
    signature = read_signature(model)
    arrays = load_validation(validation_bytes, signature, task=task)
    model, signature = batch_axis.served_form(model, signature, arrays)
    if task == "classification":
        model, signature = scores_first(model, signature)
    if model is not uploaded:  # rewritten (probabilities as a tensor, a dynamic batch, the scores first)
        model_bytes = model.SerializeToString()  # the served form is what is stored
    smoke_test(model, signature, arrays, task=task)
    return CheckedUpload(
        model_bytes=model_bytes,
        validation_bytes=validation_bytes,
        signature=signature,
        rows=len(arrays["y"]),
        fmt="onnx",
        onnx_bytes=model_bytes,
        torchscript_bytes=None,
    )


def finite(x: np.ndarray, name: str) -> np.ndarray:
    """Refuse NaN and infinity (after the cast to the model's dtype, which can overflow): on such rows
    every variant would score the same, an all-NaN set giving each the accuracy 1.0."""
    if x.dtype.kind == "f" and not np.isfinite(x).all():
        raise InvalidInput("validation inputs must be finite", input=name)
    return x


def read_npz(data: bytes) -> dict[str, np.ndarray]:
    """Every array of a validation `.npz`, never unpickled (object arrays refused)."""
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as npz:
            return {k: npz[k] for k in npz.files}
    except (ValueError, OSError, zipfile.BadZipFile, EOFError) as exc:
        raise InvalidInput(
            "the validation file is not a NumPy .npz archive (object arrays refused)", reason=str(exc)[:200]
        ) from exc


def load_validation(
    data: bytes, signature: Signature, *, task: str = "classification"
) -> dict[str, np.ndarray]:
    """Read a validation `.npz` without ever unpickling, and check it against the signature and the
    labels against the task."""
    arrays = read_npz(data)
    if "y" not in arrays:
        raise InvalidInput("the validation set needs labels under key 'y'")
    names = validation_keys(signature)
    out: dict[str, np.ndarray] = {"y": arrays["y"]}
    for name, spec in zip(names, signature.inputs, strict=True):
        if name not in arrays:
            raise InvalidInput(f"the validation set needs inputs under key {name!r}")
        x = arrays[name]
        if x.ndim != len(spec.shape) or any(
            e is not None and e != g for g, e in zip(x.shape[1:], spec.shape[1:], strict=False)
        ):
            raise InvalidInput(
                f"validation {name!r} has shape {list(x.shape)}, the model expects {list(spec.shape)}"
            )
        if x.dtype.kind not in "fiub":
            raise InvalidInput(f"validation {name!r} must be numeric")
        with np.errstate(over="ignore"):  # an overflow becomes infinity, refused by finite
            out[spec.name] = finite(x.astype(spec.dtype, copy=False), name)
    y = out["y"]
    if task == "regression":
        _check_targets(y)
    elif y.ndim != 1 or y.dtype.kind not in "iu":
        raise InvalidInput("validation labels 'y' must be a 1-D array of integer class ids")
    if len(y) == 0 or any(len(out[s.name]) != len(y) for s in signature.inputs):
        raise InvalidInput("validation inputs and labels must have the same, non-zero number of rows")
    return out


def _check_targets(y: np.ndarray) -> None:
    """A regression model's validation targets: R² on them must be defined (module docstring)."""
    if y.dtype.kind not in "fiu" or y.ndim not in (1, 2) or (y.ndim == 2 and y.shape[1] == 0):
        raise InvalidInput(
            "validation targets 'y' of a regression model must be a numeric array of shape (rows,) "
            "or (rows, k)",
            got_shape=list(y.shape),
            got_dtype=y.dtype.name,
        )
    if y.dtype.kind == "f" and not np.isfinite(y).all():
        raise InvalidInput("validation targets 'y' must be finite")
    values = y.astype(np.float64)
    if len(values) == 0 or not np.any(values != values[0]):
        raise InvalidInput(
            "validation targets 'y' are constant: R², a regression model's accuracy, is undefined"
        )


def targets_per_row(shape: tuple[int, ...]) -> int | None:
    """Targets per row of a regression output or of `y`: 1 for (rows,), k for (rows, k), else None."""
    if len(shape) == 1:
        return 1
    return shape[1] if len(shape) == 2 else None


def scores_first(model: onnx.ModelProto, signature: Signature) -> tuple[onnx.ModelProto, Signature]:
    """A classifier whose first output is not its (batch, classes) scores but a later one is (a
    predicted label first, its scores after: what `skl2onnx` writes, or a `forward` that returns
    `(label, logits)`), served with that output moved first. Accuracy, parity and the selection
    layer read a classifier's first output as its scores; every output is still answered, by name."""
    at = next((i for i, spec in enumerate(signature.outputs) if _scores(spec.shape, spec.dtype)), None)
    if at is None or at == 0:
        return model, signature  # as uploaded: the smoke test says what is wrong, if anything
    outputs = list(model.graph.output)
    outputs.insert(0, outputs.pop(at))
    out = onnx.ModelProto()
    out.CopyFrom(model)
    del out.graph.output[:]
    out.graph.output.extend(outputs)  # copies of the upload's outputs, the scores first
    return out, read_signature(out)


def _scores(shape: tuple[int | None, ...], dtype: str) -> bool:
    return len(shape) == 2 and np.dtype(dtype).kind == "f"


def check_output(shape: tuple[int, ...], y: np.ndarray, *, task: str) -> None:
    """The first output's shape on two validation rows, against the task and the labels."""
    if task == "regression":
        if shape[:1] != (2,) or targets_per_row(shape) != targets_per_row(y.shape):
            raise InvalidModel(
                "a regression model must output (batch,) or (batch, k) predictions, k the targets per "
                "row of the validation 'y'",
                got_shape=list(shape),
                targets_shape=list(y.shape),
            )
    elif len(shape) != 2 or shape[0] != 2:
        raise InvalidModel(
            "a classification model must output (batch, classes) scores", got_shape=list(shape)
        )


def smoke_test(
    model: onnx.ModelProto, signature: Signature, arrays: dict[str, np.ndarray], *, task: str
) -> None:
    """Run the model on two validation rows: a graph the checker accepts can still fail to run."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "model.onnx"
        path.write_bytes(model.SerializeToString())
        runtime = OnnxRuntime(path, threads=1)
        try:
            runtime.load()
            outputs = runtime.run({s.name: arrays[s.name][:2] for s in signature.inputs})
        except Exception as exc:  # ONNX Runtime raises its own exception types for bad graphs
            raise InvalidModel("the model does not run on the validation set", reason=str(exc)[:300]) from exc
        finally:
            runtime.unload()
    check_output(next(iter(outputs.values())).shape, arrays["y"], task=task)
