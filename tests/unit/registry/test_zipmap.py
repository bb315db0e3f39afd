"""A classifier as `skl2onnx` writes it by default — a label, then its probabilities as a sequence of
{class: probability} maps (ZipMap) — is registered with the probabilities served as their (batch,
classes) tensor, first, and the label still answered."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper
from sklearn.datasets import load_iris
from sklearn.linear_model import LogisticRegression

from services.registry.intake.checks import check_upload
from tests.unit.registry.test_scores_first import validation

X, Y = load_iris(return_X_y=True)


def as_skl2onnx_writes() -> bytes:
    """LinearClassifier → (label, probabilities) → ZipMap, the ai.onnx.ml operators and output types of
    skl2onnx's default export of a scikit-learn classifier."""
    clf = LogisticRegression(max_iter=500).fit(X, Y)
    classifier = helper.make_node(
        "LinearClassifier",
        ["X"],
        ["label", "probabilities"],
        domain="ai.onnx.ml",
        coefficients=clf.coef_.astype(np.float32).ravel().tolist(),
        intercepts=clf.intercept_.astype(np.float32).tolist(),
        classlabels_ints=[0, 1, 2],
        multi_class=1,
        post_transform="SOFTMAX",
    )
    zipmap = helper.make_node(
        "ZipMap", ["probabilities"], ["output_probability"], domain="ai.onnx.ml", classlabels_int64s=[0, 1, 2]
    )
    maps = helper.make_sequence_type_proto(
        helper.make_map_type_proto(TensorProto.INT64, helper.make_tensor_type_proto(TensorProto.FLOAT, []))
    )
    graph = helper.make_graph(
        [classifier, zipmap],
        "sklearn",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [None, 4])],
        [
            helper.make_tensor_value_info("label", TensorProto.INT64, [None]),
            helper.make_value_info("output_probability", maps),
        ],
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("ai.onnx.ml", 1)],
        ir_version=8,
    )
    serialized: bytes = model.SerializeToString()
    return serialized


def test_zipmapped_probabilities_are_served_as_a_tensor_and_first() -> None:
    uploaded = as_skl2onnx_writes()
    rows = X[:6].astype(np.float32)
    labels, maps = ort.InferenceSession(uploaded).run(None, {"X": rows})
    assert isinstance(maps, list) and isinstance(maps[0], dict)  # what the upload answers

    checked = check_upload(uploaded, validation(), "classification")

    outputs = checked.signature.outputs
    assert [(o.name, o.dtype, o.shape) for o in outputs] == [
        ("probabilities", "float32", (None, 3)),
        ("label", "int64", (None,)),
    ]
    probabilities, label = ort.InferenceSession(checked.model_bytes).run(None, {"X": rows})
    np.testing.assert_allclose(probabilities, [[m[c] for c in range(3)] for m in maps], rtol=1e-6)
    np.testing.assert_array_equal(label, labels)


def test_a_model_without_a_zipmap_is_kept_as_uploaded() -> None:
    graph = helper.make_graph(
        [helper.make_node("Identity", ["X"], ["scores"])],
        "plain",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [None, 4])],
        [helper.make_tensor_value_info("scores", TensorProto.FLOAT, [None, 4])],
    )
    uploaded = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8
    ).SerializeToString()
    assert check_upload(uploaded, validation(), "classification").model_bytes == uploaded
