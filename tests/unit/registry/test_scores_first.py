"""A classifier that answers a predicted label first and its class scores after (what `skl2onnx` writes,
or a `forward` returning `(label, logits)`) is registered with its scores moved first, every output still
served by name; one with no scores output at all is still a 422."""

from __future__ import annotations

import io

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper
from sklearn.datasets import load_iris

from infaas.core.errors import InvalidModel
from services.registry.intake.checks import check_upload

X, Y = load_iris(return_X_y=True)
W = np.linspace(-1, 1, 4 * 3, dtype=np.float32).reshape(4, 3)


def label_then_scores(*, with_scores: bool = True) -> bytes:
    nodes = [
        helper.make_node("MatMul", ["features", "w"], ["scores"]),
        helper.make_node("ArgMax", ["scores"], ["label"], axis=1, keepdims=0),
    ]
    outputs = [helper.make_tensor_value_info("label", TensorProto.INT64, ["batch"])]
    if with_scores:
        outputs.append(helper.make_tensor_value_info("scores", TensorProto.FLOAT, ["batch", 3]))
    graph = helper.make_graph(
        nodes,
        "label_first",
        [helper.make_tensor_value_info("features", TensorProto.FLOAT, ["batch", 4])],
        outputs,
        initializer=[numpy_helper.from_array(W, "w")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    serialized: bytes = model.SerializeToString()
    return serialized


def validation() -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, x=X.astype(np.float32), y=Y.astype(np.int64))
    return buffer.getvalue()


def test_the_scores_are_served_first_and_the_label_still_answers() -> None:
    uploaded = label_then_scores()
    checked = check_upload(uploaded, validation(), "classification")

    assert [o.name for o in checked.signature.outputs] == ["scores", "label"]
    assert checked.signature.outputs[0].shape == (None, 3)
    assert checked.model_bytes == checked.onnx_bytes != uploaded
    rows = X[:5].astype(np.float32)
    want_label, want_scores = ort.InferenceSession(uploaded).run(None, {"features": rows})
    served = ort.InferenceSession(checked.model_bytes)
    assert [o.name for o in served.get_outputs()] == ["scores", "label"]
    scores, label = served.run(None, {"features": rows})
    np.testing.assert_array_equal(scores, want_scores)
    np.testing.assert_array_equal(label, want_label)


def test_a_scores_first_classifier_is_kept_as_uploaded() -> None:
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["features", "w"], ["scores"])],
        "plain",
        [helper.make_tensor_value_info("features", TensorProto.FLOAT, ["batch", 4])],
        [helper.make_tensor_value_info("scores", TensorProto.FLOAT, ["batch", 3])],
        initializer=[numpy_helper.from_array(W, "w")],
    )
    uploaded = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8
    ).SerializeToString()
    assert check_upload(uploaded, validation(), "classification").model_bytes == uploaded


def test_a_classifier_with_no_scores_output_is_still_refused() -> None:
    with pytest.raises(InvalidModel, match=r"must output \(batch, classes\) scores") as info:
        check_upload(label_then_scores(with_scores=False), validation(), "classification")
    assert info.value.status == 422
