"""A batch size fixed in an uploaded ONNX graph, made dynamic where the graph allows it.

`torch.onnx.export` without `dynamic_axes` (the call most people write first) records the example's batch
size, usually 1, as a fixed first dimension of every input and output. Such a graph refuses any other
number of rows, so no batching variant could be generated from it and a query of two rows could not run.
The registry therefore rewrites every fixed first dimension of the graph's inputs and outputs as the
symbolic `batch` and drops the intermediate shapes recorded at export (ONNX Runtime infers them again).
The rewrite is kept only if the rewritten graph gives every validation row the same answer as the
uploaded graph at its own batch size, with rows alone and in a batch; a graph that hard-codes its batch
(a `Reshape` to `[1, -1]`) or mixes rows is refused with a 422 saying how to export it.
"""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort

from infaas.core.errors import InvalidModel
from infaas.wire.tensors import Signature, read_signature

BATCH_AXIS = "batch"
RTOL, ATOL = 1e-4, 1e-5
"""How close the rewritten graph's answers must be to the uploaded graph's: the same kernels run on the
same rows, so only the order of floating-point sums may differ with the batch size."""

HINT = (
    "export the model with a dynamic batch axis, e.g. torch.onnx.export(..., "
    "dynamic_axes={input_name: {0: 'batch'}, output_name: {0: 'batch'}}), "
    "torch.onnx.export(..., dynamo=True, dynamic_shapes=...) or "
    "torch.export.export(..., dynamic_shapes=({0: torch.export.Dim('batch')},))"
)


def fixed_batch(signature: Signature) -> int | None:
    """The batch size the graph's inputs fix, or None when every input's batch is dynamic."""
    sizes = {s.shape[0] for s in signature.inputs if s.shape[0] is not None}
    if not sizes:
        return None
    if len(sizes) > 1:
        raise InvalidModel(
            f"the model's inputs fix different batch sizes {sorted(sizes)}; {HINT}",
            batch_sizes=sorted(sizes),
        )
    return sizes.pop()


def with_dynamic_batch(model: onnx.ModelProto) -> onnx.ModelProto:
    """A copy of `model` whose graph inputs and outputs have a symbolic first dimension."""
    out = onnx.ModelProto()
    out.CopyFrom(model)
    initializers = {init.name for init in out.graph.initializer}
    for value in (*out.graph.input, *out.graph.output):
        if value.name in initializers or not value.type.HasField("tensor_type"):
            continue
        dims = value.type.tensor_type.shape.dim
        if len(dims) and dims[0].HasField("dim_value"):
            dims[0].Clear()
            dims[0].dim_param = BATCH_AXIS
    # Shapes recorded inside the graph at export carry the old batch size; ONNX Runtime infers its own.
    del out.graph.value_info[:]
    return out


def served_form(
    model: onnx.ModelProto, signature: Signature, arrays: dict[str, np.ndarray]
) -> tuple[onnx.ModelProto, Signature]:
    """The graph to serve and its signature: `model` itself when its batch is dynamic already, else its
    rewrite with a dynamic batch, checked against `model` on the validation rows in `arrays` (keyed by
    input name). Raises `InvalidModel` (422) when the graph cannot serve another batch size."""
    fixed = fixed_batch(signature)
    if fixed is None:
        if all(s.shape[0] is None for s in signature.outputs):
            return model, signature
        rewritten = with_dynamic_batch(model)  # only an output's batch was recorded as fixed
        return rewritten, read_signature(rewritten)
    rewritten = with_dynamic_batch(model)
    rows = max(fixed, 2)
    sample = {s.name: first_rows(arrays[s.name], rows) for s in signature.inputs}
    names = [s.name for s in signature.inputs]
    try:
        original = _session(model)
        # at its own batch size: one row at a time for a graph fixed at 1, else one batch of `fixed`
        expected = _concat(
            [
                original.run(None, {n: x[i : i + fixed] for n, x in sample.items()})
                for i in range(0, rows, fixed)
            ]
        )
    except Exception as exc:  # ONNX Runtime raises its own exception types
        raise InvalidModel(
            f"the model does not run on the validation set at its own batch size {fixed}",
            reason=str(exc)[:300],
        ) from exc
    try:
        served = _session(rewritten)
        together = served.run(None, {n: sample[n] for n in names})
        alone = served.run(None, {n: sample[n][:1] for n in names})
    except Exception as exc:
        raise InvalidModel(
            f"the model's batch size is fixed at {fixed} in the graph, and the graph does not run with "
            f"another batch size; {HINT}",
            reason=str(exc)[:300],
        ) from exc
    for want, got, one in zip(expected, together, alone, strict=True):
        if (
            got.shape != want.shape
            or one.shape != (1, *want.shape[1:])
            or not np.allclose(got, want, rtol=RTOL, atol=ATOL)
            or not np.allclose(one, want[:1], rtol=RTOL, atol=ATOL)
        ):
            raise InvalidModel(
                f"the model's batch size is fixed at {fixed} in the graph, and with another batch size "
                f"its answers differ from the graph's own (it reshapes or mixes its rows); {HINT}",
                got_shape=list(got.shape),
                expected_shape=list(want.shape),
            )
    return rewritten, read_signature(rewritten)


def first_rows(x: np.ndarray, n: int) -> np.ndarray:
    """The first `n` rows of `x`, its rows repeated if it has fewer."""
    return np.ascontiguousarray(np.resize(x, (n, *x.shape[1:])) if len(x) < n else x[:n])


def _concat(batches: list[list[np.ndarray]]) -> list[np.ndarray]:
    return [np.concatenate(parts) for parts in zip(*batches, strict=True)]


def _session(model: onnx.ModelProto) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    return ort.InferenceSession(
        model.SerializeToString(), sess_options=options, providers=["CPUExecutionProvider"]
    )
