"""ONNX uploads whose batch size is fixed in the graph (`torch.onnx.export` without `dynamic_axes`): the
registry serves them with a dynamic batch where the graph gives every row the same answer at any batch
size, and refuses them with a 422 saying how to export them where it does not."""

from __future__ import annotations

import io

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
from onnx import TensorProto, helper, numpy_helper
from sklearn.datasets import load_digits

from infaas.core.errors import InvalidModel
from infaas.wire.tensors import read_signature
from services.registry.intake import batch_axis
from services.registry.intake.checks import check_upload

X, Y = load_digits(return_X_y=True)


def validation(x: np.ndarray = X[:40], y: np.ndarray = Y[:40]) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, x=x.astype(np.float32), y=y.astype(np.int64))
    return buffer.getvalue()


def torch_export(module: torch.nn.Module, batch: int, *, dynamo: bool = False) -> bytes:
    """What `torch.onnx.export` writes when the caller passes no `dynamic_axes` (or, with `dynamo`, no
    `dynamic_shapes`: the call as torch's documentation shows it first)."""
    buffer = io.BytesIO()
    torch.manual_seed(0)
    with torch.no_grad():
        torch.onnx.export(
            module.eval(),
            (torch.zeros(batch, 64),),
            buffer,  # type: ignore[arg-type]  # typed as a path; a file object works
            input_names=["pixels"],
            output_names=["logits"],
            dynamo=dynamo,
        )
    return buffer.getvalue()


def mlp() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(64, 16), torch.nn.ReLU(), torch.nn.Linear(16, 10))


class FlattensToOneRow(torch.nn.Module):
    """Hard-codes its batch of 1 in a Reshape: with two rows it answers one row of 20 scores."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(64, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        scores: torch.Tensor = self.fc(x)
        return scores.reshape(1, -1)


def run(model_bytes: bytes, x: np.ndarray) -> np.ndarray:
    session = ort.InferenceSession(model_bytes, providers=["CPUExecutionProvider"])
    out: np.ndarray = session.run(None, {"pixels": x.astype(np.float32)})[0]
    return out


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # the legacy exporter, as users call it
@pytest.mark.filterwarnings("ignore::FutureWarning")  # torch's dynamo exporter, inside itself
@pytest.mark.parametrize(("batch", "dynamo"), [(1, False), (4, False), (1, True)])
def test_a_fixed_batch_graph_is_served_with_a_dynamic_batch_and_the_same_answers(
    batch: int, dynamo: bool
) -> None:
    uploaded = torch_export(mlp(), batch, dynamo=dynamo)
    assert run(uploaded, X[:batch]).shape == (batch, 10)
    with pytest.raises(Exception, match="Got invalid dimensions"):
        run(uploaded, X[: batch + 1])  # what the upload itself refuses

    checked = check_upload(uploaded, validation(), "classification")

    assert checked.signature.inputs[0].shape == (None, 64)
    assert checked.signature.outputs[0].shape == (None, 10)
    assert checked.model_bytes == checked.onnx_bytes != uploaded
    rows = X[:7]
    per_row = np.concatenate([run(uploaded, np.resize(r, (batch, 64)))[:1] for r in rows])
    np.testing.assert_allclose(run(checked.model_bytes, rows), per_row, rtol=1e-4, atol=1e-5)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_a_graph_that_hard_codes_its_batch_is_refused_with_how_to_export_it() -> None:
    uploaded = torch_export(FlattensToOneRow(), 1)
    with pytest.raises(InvalidModel, match="fixed at 1 in the graph") as info:
        check_upload(uploaded, validation(), "classification")
    assert "dynamic_axes" in info.value.message and info.value.status == 422


def rows_mixing_graph(batch: int) -> onnx.ModelProto:
    """y = x @ W - mean over the batch of (x @ W): runs at any batch size, but a row's answer depends on
    the other rows of its batch."""
    w = numpy_helper.from_array(np.linspace(-1, 1, 64 * 10, dtype=np.float32).reshape(64, 10), "w")
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["pixels", "w"], ["scores"]),
            helper.make_node("ReduceMean", ["scores"], ["mean"], axes=[0], keepdims=1),
            helper.make_node("Sub", ["scores", "mean"], ["logits"]),
        ],
        "mixing",
        [helper.make_tensor_value_info("pixels", TensorProto.FLOAT, [batch, 64])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [batch, 10])],
        initializer=[w],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)


def test_a_graph_whose_rows_depend_on_each_other_is_refused() -> None:
    uploaded = rows_mixing_graph(2).SerializeToString()
    with pytest.raises(InvalidModel, match="answers differ") as info:
        check_upload(uploaded, validation(), "classification")
    assert info.value.status == 422


def test_a_dynamic_batch_graph_is_kept_as_uploaded() -> None:
    model = rows_mixing_graph(2)
    dynamic = batch_axis.with_dynamic_batch(model)
    assert dynamic.graph.input[0].type.tensor_type.shape.dim[0].dim_param == batch_axis.BATCH_AXIS
    assert model.graph.input[0].type.tensor_type.shape.dim[0].dim_value == 2  # the upload is untouched
    uploaded = dynamic.SerializeToString()
    # Already dynamic in its batch, it comes back byte for byte: that it mixes rows is then the graph's
    # own meaning at every batch size, which the registry does not second-guess.
    assert check_upload(uploaded, validation(), "classification").model_bytes == uploaded


def test_inputs_that_fix_different_batch_sizes_are_refused() -> None:
    graph = helper.make_graph(
        [helper.make_node("Add", ["a", "b"], ["c"])],
        "two",
        [
            helper.make_tensor_value_info("a", TensorProto.FLOAT, [1, 3]),
            helper.make_tensor_value_info("b", TensorProto.FLOAT, [2, 3]),
        ],
        [helper.make_tensor_value_info("c", TensorProto.FLOAT, [None, 3])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    signature = read_signature(model)
    with pytest.raises(InvalidModel, match=r"different batch sizes \[1, 2\]"):
        batch_axis.fixed_batch(signature)


def torch_export_archive(module: torch.nn.Module, batch: int) -> bytes:
    """`torch.export.save(torch.export.export(model, (example,)))`: the program fixes the example's batch."""
    buffer = io.BytesIO()
    torch.export.save(torch.export.export(module.eval(), (torch.zeros(batch, 64),)), buffer)
    return buffer.getvalue()


@pytest.mark.filterwarnings("ignore::FutureWarning")  # torch's dynamo exporter, inside itself
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_a_torch_export_program_with_a_fixed_batch_is_served_through_its_onnx_form() -> None:
    module = mlp().eval()
    uploaded = torch_export_archive(module, 1)

    checked = check_upload(uploaded, validation(), "classification")

    assert checked.fmt == "torch_export" and checked.model_bytes == uploaded
    assert checked.torchscript_bytes is None  # a trace would fix the batch again
    assert checked.onnx_bytes is not None
    assert checked.signature.inputs[0].shape == (None, 64)
    rows = X[:6].astype(np.float32)
    with torch.no_grad():
        per_row = np.concatenate([module(torch.from_numpy(r[None])).numpy() for r in rows])
    served = ort.InferenceSession(checked.onnx_bytes)
    np.testing.assert_allclose(served.run(None, {"x": rows})[0], per_row, rtol=1e-4, atol=1e-5)


@pytest.mark.filterwarnings("ignore::FutureWarning")
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_a_torch_export_program_that_hard_codes_its_batch_is_refused_with_how_to_export_it() -> None:
    with pytest.raises(InvalidModel, match="fixed at 1 in the graph") as info:
        check_upload(torch_export_archive(FlattensToOneRow(), 1), validation(), "classification")
    assert info.value.status == 422 and "dynamic" in info.value.message
