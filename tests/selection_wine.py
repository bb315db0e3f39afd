"""Wine classifiers of different accuracy that share one signature, for the selection layer's tests: logistic
regression on scikit-learn's wine data (178 rows, 3 classes) over some of the 13 features, the others
weighted zero, so every model takes the same `features` (13 float32) and answers `logits` (3). Not the demo
models: other data, input and output names. Trained here in well under a second; nothing is downloaded."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from sklearn.datasets import load_wine
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler

FEATURES = 13
CLASSES = 3
STRONG = tuple(range(FEATURES))  # all features: right on (almost) every row
WEAK = (0,)  # alcohol alone: about two rows in three
MIDDLE = (0, 1)  # alcohol and malic acid: about four in five

SIGNATURE: dict[str, Any] = {
    "inputs": [{"name": "features", "dtype": "float32", "shape": [None, FEATURES]}],
    "outputs": [{"name": "logits", "dtype": "float32", "shape": [None, CLASSES]}],
}


def wine_data() -> tuple[np.ndarray, np.ndarray]:
    x, y = load_wine(return_X_y=True)
    return x.astype(np.float32), y.astype(np.int64)


def wine_classifier(columns: tuple[int, ...]) -> bytes:
    """An ONNX logistic regression over `columns` of the wine features (standardization folded in)."""
    x, y = load_wine(return_X_y=True)
    scaler = StandardScaler().fit(x[:, columns])
    clf = LogisticRegression(max_iter=500).fit(scaler.transform(x[:, columns]), y)
    weights = np.zeros((FEATURES, CLASSES), dtype=np.float32)
    weights[list(columns)] = clf.coef_.T / scaler.scale_[:, None]
    bias = (clf.intercept_ - (scaler.mean_ / scaler.scale_) @ clf.coef_.T).astype(np.float32)
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["features", "weights"], ["scores"]),
            helper.make_node("Add", ["scores", "bias"], ["logits"]),
        ],
        "wine_subset",
        [helper.make_tensor_value_info("features", TensorProto.FLOAT, [None, FEATURES])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [None, CLASSES])],
        initializer=[numpy_helper.from_array(weights, "weights"), numpy_helper.from_array(bias, "bias")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return bytes(model.SerializeToString())


def user_labels(y: np.ndarray, user: str) -> np.ndarray:
    """Wine labels with a per-user shift, for personalization: three tasters who name the cultivars their
    own way. `ana` uses the dataset's names; `bo` calls every cultivar by the next one's name (k → k+1
    mod 3); `cy` swaps the first two. One model trained on the dataset's names is right for ana and
    mostly wrong for bo and cy: only a per-user head over its scores can serve all three."""
    if user == "ana":
        return y.copy()
    if user == "bo":
        return (y + 1) % CLASSES
    if user == "cy":
        return np.choose(y, [1, 0, 2])
    raise ValueError(f"no such taster: {user}")


def wine_straggler(columns: tuple[int, ...]) -> bytes:
    """`wine_classifier(columns)` whose run time grows with the first feature's magnitude: it also squares
    an n × n matrix twice, n = |features[0, 0]|, and adds zero times the result to the logits. The wine
    rows (alcohol 11–15) cost microseconds, so the profile is fast; a query whose first feature is 1,500
    costs seconds, a straggler made on demand on a real executor. The logits are the classifier's."""
    base = onnx.load_from_string(wine_classifier(columns))
    graph = base.graph
    logits = graph.output[0].name
    graph.node[-1].output[0] = "plain_logits"
    extra = [
        helper.make_node("Slice", ["features", "zero2", "one2"], ["first"]),  # [1, 1]
        helper.make_node("Abs", ["first"], ["size_f"]),
        helper.make_node("Cast", ["size_f"], ["size_i"], to=TensorProto.INT64),
        helper.make_node("Reshape", ["size_i", "one1"], ["size"]),
        helper.make_node("Concat", ["size", "size"], ["square"], axis=0),
        helper.make_node("Sigmoid", ["first"], ["seed"]),
        helper.make_node("Expand", ["seed", "square"], ["a"]),
        helper.make_node("MatMul", ["a", "a"], ["a2"]),
        helper.make_node("Sigmoid", ["a2"], ["b"]),
        helper.make_node("MatMul", ["b", "b"], ["b2"]),
        helper.make_node("Sigmoid", ["b2"], ["c"]),
        helper.make_node("ReduceMean", ["c"], ["mean"], keepdims=1),
        helper.make_node("Mul", ["mean", "nothing"], ["zero_out"]),
        helper.make_node("Add", ["plain_logits", "zero_out"], [logits]),
    ]
    graph.node.extend(extra)
    graph.initializer.extend(
        [
            numpy_helper.from_array(np.zeros(2, np.int64), "zero2"),
            numpy_helper.from_array(np.ones(2, np.int64), "one2"),
            numpy_helper.from_array(np.ones(1, np.int64), "one1"),
            numpy_helper.from_array(np.zeros((1, 1), np.float32), "nothing"),
        ]
    )
    onnx.checker.check_model(base)
    return bytes(base.SerializeToString())
