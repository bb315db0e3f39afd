"""Checking a PyTorch upload (TorchScript or torch.export) before anything is stored.

The archive is scanned without unpickling and loaded (`infaas.runtimes.pytorch_io`). What it serves is
read from the program itself, not assumed:
- **Inputs**: the tensors `forward` takes, in order. A one-input model is served with its input named
  `x` and reads its validation rows from key `x`; a model of several inputs (token ids and an attention
  mask) serves each under its argument's name and reads each from the key of that name. Any numeric
  dtype (floats, integer ids, booleans): the validation arrays' dtypes are the served ones.
- **Outputs**: one tensor (`output`), or a tuple or list of tensors (`output_0`, `output_1`, ...), every
  one answered by name. A classifier whose scores are not its first output (`(label, logits)`) is
  served through its ONNX form with the scores moved first (`checks.scores_first`): a TorchScript form
  would answer in the module's order, so it has none.
- A torch.export program that fixes its batch is served through its ONNX form made dynamic
  (`batch_axis.py`), as before.
"""

from __future__ import annotations

import io
import warnings
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np
import onnx

from infaas.core.errors import InvalidInput, InvalidModel
from infaas.wire.tensors import Signature, TensorSpec
from services.registry.intake import batch_axis, checks

if TYPE_CHECKING:
    import torch


def check(model_bytes: bytes, validation_bytes: bytes, task: str) -> checks.CheckedUpload:
    import torch

    from infaas.runtimes import pytorch_io, torch_archives

    fmt = torch_archives.sniff_format(model_bytes)
    torch_archives.scan_archive(model_bytes, fmt)
    given = {k: v for k, v in checks.read_npz(validation_bytes).items() if k != "y"}
    program: torch.jit.ScriptModule | torch.export.ExportedProgram
    if fmt == torch_archives.ModelFormat.TORCHSCRIPT:
        program = pytorch_io.load_torchscript(model_bytes)
        names = _script_inputs(program)
    else:
        program = pytorch_io.load_exported(model_bytes)
        names = list(program.graph_signature.user_inputs)
    served = ["x"] if len(names) == 1 else names
    xs = [_input(given, key, names) for key in served]
    example = tuple(torch.from_numpy(np.ascontiguousarray(x[:2])) for x in xs)
    if isinstance(program, torch.export.ExportedProgram):
        fixed = pytorch_io.static_batch(program)
        if fixed is not None:
            return _check_static_program(program, fixed, xs, served, model_bytes, validation_bytes, task)
    try:
        if isinstance(program, torch.export.ExportedProgram):
            module: Any = program.module()
            torchscript_bytes = _trace(module, example)
        else:
            module, torchscript_bytes = program, model_bytes
        with torch.inference_mode():
            outs = _outputs(module(*example))
    except InvalidModel:
        raise
    except Exception as exc:  # a model that loads but cannot run on its own validation rows
        reason = str(exc)[:300]
        raise InvalidModel("the PyTorch model does not run on the validation set", reason=reason) from exc
    out_names = ["output"] if len(outs) == 1 else [f"output_{i}" for i in range(len(outs))]
    signature = Signature(
        inputs=tuple(
            TensorSpec(n, x.dtype.name, (None, *x.shape[1:])) for n, x in zip(served, xs, strict=True)
        ),
        outputs=tuple(
            TensorSpec(n, str(o.dtype).removeprefix("torch."), (None, *o.shape[1:]))
            for n, o in zip(out_names, outs, strict=True)
        ),
    )
    arrays = checks.load_validation(validation_bytes, signature, task=task)
    try:
        onnx_bytes: bytes | None = pytorch_io.to_onnx(
            program, input_names=served, example_inputs=example, output_names=out_names
        )
    except InvalidModel:
        onnx_bytes = None  # kept as PyTorch variants only; the ONNX generators do not apply
    first = tuple(outs[0].shape)
    if task == "classification" and len(outs) > 1 and not _scores(first, outs[0]):
        # The scores come later: only an ONNX form can be served with them first.
        at = next((i for i, o in enumerate(outs) if _scores(tuple(o.shape), o)), None)
        if at is None or onnx_bytes is None:
            raise InvalidModel(
                "a classification model must output (batch, classes) scores first, or return them in its "
                "tuple where its ONNX export can move them first",
                got_shapes=[list(o.shape) for o in outs],
            )
        model, moved = checks.scores_first(onnx.load_model_from_string(onnx_bytes), signature)
        if moved.outputs[0].name != out_names[at]:
            raise InvalidModel(
                "the model's ONNX form does not give its scores as a (batch, classes) float output",
                output=out_names[at],
            )
        onnx_bytes, signature = model.SerializeToString(), moved
        torchscript_bytes, first = None, tuple(outs[at].shape)
    checks.check_output(first, arrays["y"], task=task)
    return checks.CheckedUpload(
        model_bytes=model_bytes,
        validation_bytes=validation_bytes,
        signature=signature,
        rows=len(arrays["y"]),
        fmt=fmt.value,
        onnx_bytes=onnx_bytes,
        torchscript_bytes=torchscript_bytes,
    )


def _check_static_program(
    exported: torch.export.ExportedProgram,
    fixed: int,
    xs: list[np.ndarray],
    served: list[str],
    model_bytes: bytes,
    validation_bytes: bytes,
    task: str,
) -> checks.CheckedUpload:
    """A torch.export program whose batch is fixed (exported from one example without `dynamic_shapes`,
    the call torch's documentation shows first): its guards refuse any other number of rows, so its
    ONNX export, checked and made dynamic in its batch as an ONNX upload is, is what is served. It has
    no TorchScript form (a trace would fix the batch again)."""
    import torch

    from infaas.runtimes import pytorch_io, torch_archives

    outputs = len(exported.graph_signature.user_outputs)
    onnx_bytes = pytorch_io.to_onnx(
        exported,
        input_names=served,
        example_inputs=tuple(torch.from_numpy(batch_axis.first_rows(x, fixed)) for x in xs),
        output_names=["output"] if outputs == 1 else [f"output_{i}" for i in range(outputs)],
        dynamic_batch=False,
    )
    checked = checks.check_onnx(onnx_bytes, validation_bytes, task)
    return replace(
        checked,
        model_bytes=model_bytes,
        fmt=torch_archives.ModelFormat.TORCH_EXPORT.value,
        torchscript_bytes=None,
    )


def _script_inputs(module: torch.jit.ScriptModule) -> list[str]:
    """The tensors a TorchScript module's `forward` takes (after `self`); anything else is refused."""
    arguments = list(module.forward.schema.arguments)[1:]  # type: ignore[attr-defined]
    others = [f"{a.name}: {a.type}" for a in arguments if str(a.type) != "Tensor"]
    if others or not arguments:
        raise InvalidModel(
            "a TorchScript model's forward must take one or more tensors and nothing else",
            arguments=[f"{a.name}: {a.type}" for a in arguments],
        )
    return [a.name for a in arguments]


def _outputs(out: object) -> tuple[torch.Tensor, ...]:
    import torch

    outs = out if isinstance(out, tuple | list) else (out,)
    if not outs or not all(isinstance(o, torch.Tensor) and o.ndim >= 1 for o in outs):
        raise InvalidModel(
            "the PyTorch model must return a tensor, or a tuple or list of tensors, with the batch first",
            returned=type(out).__name__,
        )
    return tuple(outs)


def _scores(shape: tuple[int, ...], out: torch.Tensor) -> bool:
    return len(shape) == 2 and out.is_floating_point()


def _input(given: dict[str, np.ndarray], key: str, names: list[str]) -> np.ndarray:
    """The validation array under `key`: numeric, batch first, at least 2 rows, finite."""
    if key not in given:
        takes = ", ".join(names)
        raise InvalidInput(
            f"the validation set needs the model's inputs under key {key!r} (its forward takes {takes}; a "
            "one-input model's rows go under 'x')",
            keys=sorted(given),
        )
    x = given[key]
    if x.dtype.kind not in "fiub" or x.ndim < 1 or len(x) < 2:
        raise InvalidInput(
            f"validation {key!r} for a PyTorch model must be a numeric array of at least 2 rows (rows first)",
            got_shape=list(x.shape),
            got_dtype=x.dtype.name,
        )
    return checks.finite(x, key)


def _trace(module: object, example: tuple[object, ...]) -> bytes | None:
    """TorchScript form of an exported program's module, for the PyTorch variants (None if untraceable)."""
    import torch

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            traced = torch.jit.trace(module, example)  # type: ignore[no-untyped-call]
            buf = io.BytesIO()
            torch.jit.save(traced, buf)  # deprecated in favour of torch.export: it warns
        return buf.getvalue()
    except Exception:
        return None
