"""Checking an uploaded model and validation set before anything is stored.

ONNX files go through the ONNX checker; PyTorch archives (TorchScript, torch.export) are scanned without
unpickling (`infaas.runtimes.pytorch_io`), loaded, and converted to ONNX where the exporter can. Every
model is then run on two validation rows: a file that parses can still fail to run.
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
from infaas.runtimes.engines import OnnxRuntime
from infaas.wire.tensors import Signature, TensorSpec, load_onnx, read_signature, validation_keys

SUPPORTED_TASKS = frozenset({"classification"})


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
        return _check_pytorch(model_bytes, validation_bytes)
    model = load_onnx(model_bytes)
    signature = read_signature(model)
    arrays = load_validation(validation_bytes, signature)
    smoke_test(model, signature, arrays)
    return CheckedUpload(
        model_bytes=model_bytes,
        validation_bytes=validation_bytes,
        signature=signature,
        rows=len(arrays["y"]),
        fmt="onnx",
        onnx_bytes=model_bytes,
        torchscript_bytes=None,
    )


def _check_pytorch(model_bytes: bytes, validation_bytes: bytes) -> CheckedUpload:
    import torch

    from infaas.runtimes import pytorch_io, torch_archives

    fmt = torch_archives.sniff_format(model_bytes)
    torch_archives.scan_archive(model_bytes, fmt)
    x = _validation_x(validation_bytes)
    example = (torch.from_numpy(np.ascontiguousarray(x[:2])),)
    try:
        module: torch.nn.Module
        if fmt == torch_archives.ModelFormat.TORCHSCRIPT:
            module = pytorch_io.load_torchscript(model_bytes)
            program: torch.jit.ScriptModule | torch.export.ExportedProgram = module
            torchscript_bytes: bytes | None = model_bytes
        else:
            exported = pytorch_io.load_exported(model_bytes)
            program = exported
            module = exported.module()
            torchscript_bytes = _trace(module, example)
        with torch.inference_mode():
            out = module(*example)
    except InvalidModel:
        raise
    except Exception as exc:  # a model that loads but cannot run on its own validation rows
        reason = str(exc)[:300]
        raise InvalidModel("the PyTorch model does not run on the validation set", reason=reason) from exc
    if not isinstance(out, torch.Tensor):
        raise InvalidModel("the PyTorch model must return one tensor of (batch, classes) scores")
    signature = Signature(
        inputs=(TensorSpec("x", x.dtype.name, (None, *x.shape[1:])),),
        outputs=(TensorSpec("output", str(out.dtype).removeprefix("torch."), (None, *out.shape[1:])),),
    )
    arrays = load_validation(validation_bytes, signature)
    if out.ndim != 2 or out.shape[0] != 2:
        raise InvalidModel(
            "a classification model must output (batch, classes) scores", got_shape=list(out.shape)
        )
    try:
        onnx_bytes: bytes | None = pytorch_io.to_onnx(
            program,
            input_names=["x"],
            example_inputs=example,
            output_names=["output"],
        )
    except InvalidModel:
        onnx_bytes = None  # kept as PyTorch variants only; the ONNX generators do not apply
    return CheckedUpload(
        model_bytes=model_bytes,
        validation_bytes=validation_bytes,
        signature=signature,
        rows=len(arrays["y"]),
        fmt=fmt.value,
        onnx_bytes=onnx_bytes,
        torchscript_bytes=torchscript_bytes,
    )


def _trace(module: object, example: tuple[object, ...]) -> bytes | None:
    """TorchScript form of an exported program's module, for the PyTorch variants (None if untraceable)."""
    import warnings

    import torch

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            traced = torch.jit.trace(module, example)  # type: ignore[no-untyped-call]
        buf = io.BytesIO()
        torch.jit.save(traced, buf)
        return buf.getvalue()
    except Exception:
        return None


def _validation_x(data: bytes) -> np.ndarray:
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as npz:
            if "x" not in npz.files:
                raise InvalidInput("the validation set needs inputs under key 'x'")
            x: np.ndarray = npz["x"]
    except (ValueError, OSError, zipfile.BadZipFile, EOFError) as exc:
        raise InvalidInput(
            "the validation file is not a NumPy .npz archive (object arrays refused)", reason=str(exc)[:200]
        ) from exc
    if x.dtype.kind != "f" or x.ndim < 2 or len(x) < 2:
        raise InvalidInput("validation 'x' for a PyTorch model must be a float array of at least 2 rows")
    return _finite(x, "x")


def _finite(x: np.ndarray, name: str) -> np.ndarray:
    """Refuse NaN and infinity (after the cast to the model's dtype, which can overflow): on such rows
    every variant would score the same, an all-NaN set giving each the accuracy 1.0."""
    if x.dtype.kind == "f" and not np.isfinite(x).all():
        raise InvalidInput("validation inputs must be finite", input=name)
    return x


def load_validation(data: bytes, signature: Signature) -> dict[str, np.ndarray]:
    """Read a validation `.npz` without ever unpickling, and check it against the signature."""
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as npz:
            arrays = {k: npz[k] for k in npz.files}
    except (ValueError, OSError, zipfile.BadZipFile, EOFError) as exc:
        raise InvalidInput(
            "the validation file is not a NumPy .npz archive (object arrays refused)", reason=str(exc)[:200]
        ) from exc
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
        with np.errstate(over="ignore"):  # an overflow becomes infinity, refused by _finite
            out[spec.name] = _finite(x.astype(spec.dtype, copy=False), name)
    y = out["y"]
    if y.ndim != 1 or y.dtype.kind not in "iu":
        raise InvalidInput("validation labels 'y' must be a 1-D array of integer class ids")
    if len(y) == 0 or any(len(out[s.name]) != len(y) for s in signature.inputs):
        raise InvalidInput("validation inputs and labels must have the same, non-zero number of rows")
    return out


def smoke_test(model: onnx.ModelProto, signature: Signature, arrays: dict[str, np.ndarray]) -> None:
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
    first = next(iter(outputs.values()))
    if first.ndim != 2 or first.shape[0] != 2:
        raise InvalidModel(
            "a classification model must output (batch, classes) scores", got_shape=list(first.shape)
        )
