"""An ONNX graph run as a trainable torch module: the same outputs as ONNX Runtime for every operator
the parity trainer accepts in a small graph, parameters written back into a copy of the graph, and
graphs it cannot run refused by name."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
from onnx import TensorProto, helper, numpy_helper

from infaas.policy.parity import TRAINABLE_OPS
from infaas.runtimes.onnx_torch import OPS, OnnxModule, UnsupportedGraph, with_parameters

RNG = np.random.default_rng(0)


def f32(*shape: int) -> np.ndarray:
    return RNG.normal(size=shape).astype(np.float32)


def image_classifier() -> onnx.ModelProto:
    """x (batch, 16) -> 1x4x4 image -> conv, batch norm, pools (3 pooled 2x2 maps + 3 global averages =
    15 features) -> dense -> softmax: most of the operators, in one graph."""
    init = [
        numpy_helper.from_array(np.array([-1, 1, 4, 4], dtype=np.int64), "shape"),
        numpy_helper.from_array(f32(3, 1, 3, 3), "cw"),
        numpy_helper.from_array(f32(3), "cb"),
        numpy_helper.from_array(np.abs(f32(3)) + 0.5, "scale"),
        numpy_helper.from_array(f32(3), "bias"),
        numpy_helper.from_array(f32(3), "mean"),
        numpy_helper.from_array(np.abs(f32(3)) + 0.5, "var"),
        numpy_helper.from_array(f32(15, 5), "w"),
        numpy_helper.from_array(f32(5), "b"),
        numpy_helper.from_array(np.float32([0.5]), "half"),
    ]
    nodes = [
        helper.make_node("Reshape", ["x", "shape"], ["img"]),
        helper.make_node("Conv", ["img", "cw", "cb"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c", "scale", "bias", "mean", "var"], ["n"]),
        helper.make_node("LeakyRelu", ["n"], ["r"], alpha=0.1),
        helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("AveragePool", ["r"], ["a"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Add", ["p", "a"], ["pa"]),
        helper.make_node("GlobalAveragePool", ["r"], ["g"]),
        helper.make_node("Flatten", ["pa"], ["pf"]),
        helper.make_node("Flatten", ["g"], ["gf"]),
        helper.make_node("Concat", ["pf", "gf"], ["cat"], axis=1),
        helper.make_node("Sigmoid", ["cat"], ["s"]),
        helper.make_node("Mul", ["s", "half"], ["m"]),
        helper.make_node("Tanh", ["m"], ["t"]),
        helper.make_node("Gemm", ["t", "w", "b"], ["logits"]),
        helper.make_node("Softmax", ["logits"], ["probabilities"], axis=1),
    ]
    graph = helper.make_graph(
        nodes,
        "small",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 16])],
        [helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, [None, 5])],
        initializer=init,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def run_ort(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return np.asarray(session.run(None, {"x": x})[0])


def test_the_operators_run_are_the_ones_the_registry_accepts() -> None:
    assert set(OPS) == TRAINABLE_OPS


def test_outputs_match_onnx_runtime() -> None:
    model, x = image_classifier(), f32(6, 16)
    got = OnnxModule(model)(torch.from_numpy(x)).detach().numpy()
    np.testing.assert_allclose(got, run_ort(model, x), atol=1e-5)


def test_trained_parameters_go_back_into_the_graph_without_its_softmax() -> None:
    model, x = image_classifier(), f32(6, 16)
    module = OnnxModule(model, drop_softmax=True)
    optimizer = torch.optim.SGD(module.parameters(), lr=0.1)
    loss = module(torch.from_numpy(x)).pow(2).mean()
    loss.backward()  # type: ignore[no-untyped-call]
    optimizer.step()
    exported = with_parameters(model, module)
    assert [n.op_type for n in exported.graph.node][-1] == "Identity"
    assert len(exported.graph.node) == len(model.graph.node)
    np.testing.assert_allclose(run_ort(exported, x), module(torch.from_numpy(x)).detach().numpy(), atol=1e-5)
    assert not np.allclose(run_ort(exported, x).sum(axis=1), 1.0)  # logits now, not probabilities


def test_unsupported_operators_are_named() -> None:
    graph = helper.make_graph(
        [helper.make_node("Erf", ["x"], ["e"]), helper.make_node("Cos", ["e"], ["y"])],
        "odd",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 2])],
    )
    with pytest.raises(UnsupportedGraph, match="not supported for parity training: Cos, Erf"):
        OnnxModule(helper.make_model(graph))
