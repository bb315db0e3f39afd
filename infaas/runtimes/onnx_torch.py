"""An ONNX graph as a trainable torch module: the graph's nodes run as torch functions, its float
initializers are the module's parameters. Written for parity models (ParM), which must have the deployed
model's architecture: training this module and writing its parameters back into a copy of the graph
(`with_parameters`) gives an ONNX model with exactly the deployed graph's nodes and shapes.

Why not a converter package: onnx2torch (the maintained one) imports torchvision at import time, and no
CPU torchvision exists for the torch these machines have. The operators below cover the feed-forward
classifiers and regressors the system serves (dense, convolutional, normalized); a graph with any other
operator is refused by name (`UnsupportedGraph`), before any training starts.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import onnx
import torch
import torch.nn.functional as tf
from onnx import helper, numpy_helper
from torch import nn

from infaas.policy.parity import TRAINABLE_OPS

Tensor = torch.Tensor


class UnsupportedGraph(ValueError):
    """The graph cannot be run as a torch module: the message says which operator or attribute."""


def _attrs(node: onnx.NodeProto) -> dict[str, Any]:
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _gemm(x: list[Tensor], at: dict[str, Any]) -> Tensor:
    a = x[0].t() if at.get("transA", 0) else x[0]
    b = x[1].t() if at.get("transB", 0) else x[1]
    out = float(at.get("alpha", 1.0)) * (a @ b)
    if len(x) > 2:
        out = out + float(at.get("beta", 1.0)) * x[2]
    return out


def _pads(at: dict[str, Any], dims: int) -> list[int]:
    if at.get("auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET", b"VALID", "VALID"):
        raise UnsupportedGraph(f"auto_pad {at['auto_pad']!r} is not supported")
    pads = list(at.get("pads", [0] * (2 * dims)))
    if pads[:dims] != pads[dims:]:
        raise UnsupportedGraph(f"asymmetric pads {pads} are not supported")
    return pads[:dims]


def _conv(x: list[Tensor], at: dict[str, Any]) -> Tensor:
    dims = x[1].dim() - 2
    conv = {1: tf.conv1d, 2: tf.conv2d, 3: tf.conv3d}[dims]
    return conv(
        x[0],
        x[1],
        x[2] if len(x) > 2 else None,
        stride=list(at.get("strides", [1] * dims)),
        padding=_pads(at, dims),
        dilation=list(at.get("dilations", [1] * dims)),
        groups=int(at.get("group", 1)),
    )


def _pool(kind: str) -> Callable[[list[Tensor], dict[str, Any]], Tensor]:
    def run(x: list[Tensor], at: dict[str, Any]) -> Tensor:
        kernel = list(at["kernel_shape"])
        dims = len(kernel)
        strides = list(at.get("strides", [1] * dims))
        padding = _pads(at, dims)
        if at.get("ceil_mode", 0):
            raise UnsupportedGraph(f"{kind} with ceil_mode is not supported")
        if kind == "MaxPool":
            fn = {1: tf.max_pool1d, 2: tf.max_pool2d, 3: tf.max_pool3d}[dims]
            return fn(x[0], kernel, strides, padding)
        avg = {1: tf.avg_pool1d, 2: tf.avg_pool2d, 3: tf.avg_pool3d}[dims]
        return avg(x[0], kernel, strides, padding, count_include_pad=bool(at.get("count_include_pad", 0)))

    return run


def _reshape(x: list[Tensor], at: dict[str, Any]) -> Tensor:
    shape = [int(s) for s in x[1].tolist()]
    if not at.get("allowzero", 0):
        shape = [x[0].shape[i] if s == 0 else s for i, s in enumerate(shape)]
    return x[0].reshape(shape)


def _flatten(x: list[Tensor], at: dict[str, Any]) -> Tensor:
    axis = int(at.get("axis", 1))
    return x[0].reshape(int(np.prod(x[0].shape[:axis])), -1)


def _batch_norm(x: list[Tensor], at: dict[str, Any]) -> Tensor:
    # The running statistics are the deployed model's, not trained: torch takes no gradient through them.
    mean, var = x[3].detach(), x[4].detach()
    return tf.batch_norm(x[0], mean, var, x[1], x[2], training=False, eps=float(at.get("epsilon", 1e-5)))


def _constant(_x: list[Tensor], at: dict[str, Any]) -> Tensor:
    if "value" not in at:
        raise UnsupportedGraph("Constant without a tensor value is not supported")
    return torch.from_numpy(numpy_helper.to_array(at["value"]).copy())


OPS: Mapping[str, Callable[[list[Tensor], dict[str, Any]], Tensor]] = {
    "Gemm": _gemm,
    "MatMul": lambda x, _: x[0] @ x[1],
    "Add": lambda x, _: x[0] + x[1],
    "Sub": lambda x, _: x[0] - x[1],
    "Mul": lambda x, _: x[0] * x[1],
    "Div": lambda x, _: x[0] / x[1],
    "Relu": lambda x, _: tf.relu(x[0]),
    "LeakyRelu": lambda x, at: tf.leaky_relu(x[0], float(at.get("alpha", 0.01))),
    "Sigmoid": lambda x, _: torch.sigmoid(x[0]),
    "Tanh": lambda x, _: torch.tanh(x[0]),
    "Softmax": lambda x, at: torch.softmax(x[0], dim=int(at.get("axis", -1))),
    "Identity": lambda x, _: x[0],
    "Dropout": lambda x, _: x[0],
    "Constant": _constant,
    "Conv": _conv,
    "MaxPool": _pool("MaxPool"),
    "AveragePool": _pool("AveragePool"),
    "GlobalAveragePool": lambda x, _: x[0].mean(dim=tuple(range(2, x[0].dim())), keepdim=True),
    "BatchNormalization": _batch_norm,
    "Reshape": _reshape,
    "Flatten": _flatten,
    "Concat": lambda x, at: torch.cat(x, dim=int(at["axis"])),
    "Transpose": lambda x, at: (
        x[0].permute(*at["perm"]) if "perm" in at else x[0].permute(*range(x[0].dim() - 1, -1, -1))
    ),
}


def final_softmax(model: onnx.ModelProto) -> onnx.NodeProto | None:
    """The Softmax node that produces the graph's (single) output, if the graph ends in one."""
    out = model.graph.output[0].name
    found: onnx.NodeProto | None = None
    for node in model.graph.node:
        if out in node.output and node.op_type == "Softmax":
            found = node
    return found


class OnnxModule(nn.Module):
    """Runs `model`'s graph; its float initializers are trainable parameters. With `drop_softmax`, a final
    Softmax is the identity (a parity model's outputs are sums of probabilities, not probabilities)."""

    def __init__(self, model: onnx.ModelProto, *, drop_softmax: bool = False) -> None:
        super().__init__()
        graph = model.graph
        if len(graph.output) != 1:
            raise UnsupportedGraph(f"the graph has {len(graph.output)} outputs; one is supported")
        unknown = sorted(
            {
                n.op_type
                for n in graph.node
                if n.op_type not in TRAINABLE_OPS or n.domain not in ("", "ai.onnx")
            }
        )
        if unknown:
            raise UnsupportedGraph(f"operators not supported for parity training: {', '.join(unknown)}")
        self.nodes = list(graph.node)
        self.output = graph.output[0].name
        init_names = {i.name for i in graph.initializer}
        self.inputs = [i.name for i in graph.input if i.name not in init_names]
        self.skip = final_softmax(model) if drop_softmax else None
        self.params = nn.ParameterList()
        self.param_names: list[str] = []
        self.constants: dict[str, Tensor] = {}
        for init in graph.initializer:
            value = numpy_helper.to_array(init)
            if value.dtype == np.float32:
                self.param_names.append(init.name)
                self.params.append(nn.Parameter(torch.from_numpy(value.copy())))
            else:
                self.constants[init.name] = torch.from_numpy(np.array(value))

    def forward(self, *inputs: Tensor) -> Tensor:
        values: dict[str, Tensor] = dict(self.constants)
        values.update(zip(self.param_names, self.params, strict=True))
        values.update(zip(self.inputs, inputs, strict=True))
        for node in self.nodes:
            args = [values[name] for name in node.input if name]
            if node is self.skip:
                out = args[0]
            else:
                out = OPS[node.op_type](args, _attrs(node))
            values[node.output[0]] = out
        return values[self.output]


def with_parameters(model: onnx.ModelProto, module: OnnxModule) -> onnx.ModelProto:
    """A copy of `model` with `module`'s trained parameters as its initializers, and its final Softmax
    (when the module dropped it) an Identity: the same nodes and shapes, checked by the ONNX checker."""
    out = onnx.ModelProto()
    out.CopyFrom(model)
    trained = {n: p.detach().cpu().numpy() for n, p in zip(module.param_names, module.params, strict=True)}
    for init in out.graph.initializer:
        if init.name in trained:
            init.CopyFrom(numpy_helper.from_array(trained[init.name].astype(np.float32), init.name))
    if module.skip is not None:
        for node in out.graph.node:
            if node.op_type == "Softmax" and list(node.output) == list(module.skip.output):
                node.op_type = "Identity"
                del node.attribute[:]
    onnx.checker.check_model(out)
    return out
