"""A classifier's probabilities as `skl2onnx` writes them by default, served as the tensor they are.

`skl2onnx` ends a classifier with a `ZipMap` node (domain `ai.onnx.ml`) that turns its (batch, classes)
probabilities into a sequence of {class: probability} maps. Maps are not tensors: no batching, no JSON
arrays, no accuracy measurement reads them. The registry serves such a graph with that output replaced
by the ZipMap's input, the probabilities tensor itself (what `skl2onnx`'s `zipmap=False` option writes),
and the ZipMap node removed. Nothing else of the graph changes.
"""

from __future__ import annotations

import onnx
from onnx import TensorProto, helper

ML_DOMAIN = "ai.onnx.ml"


def unzipped(model: onnx.ModelProto) -> onnx.ModelProto:
    """`model` itself when no graph output comes from a ZipMap, else a copy with each such output
    replaced by the ZipMap's (batch, classes) float input."""
    zipmaps = {
        node.output[0]: node
        for node in model.graph.node
        if node.op_type == "ZipMap" and node.domain == ML_DOMAIN and len(node.input) == 1
    }
    if not any(o.name in zipmaps for o in model.graph.output):
        return model
    out = onnx.ModelProto()
    out.CopyFrom(model)
    outputs = []
    for value in out.graph.output:
        node = zipmaps.get(value.name)
        if node is None:
            outputs.append(value)
            continue
        labels = next(
            (a for a in node.attribute if a.name in ("classlabels_int64s", "classlabels_strings")), None
        )
        classes = len(labels.ints or labels.strings) if labels is not None else None
        outputs.append(helper.make_tensor_value_info(node.input[0], TensorProto.FLOAT, ["batch", classes]))
    del out.graph.output[:]
    out.graph.output.extend(outputs)
    removed = {id(node) for node in zipmaps.values()}
    kept = [node for node in model.graph.node if id(node) not in removed]
    del out.graph.node[:]
    out.graph.node.extend(kept)
    return out
