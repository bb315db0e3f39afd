"""Two models on scikit-learn's diabetes data (442 rows, 10 float features; nothing is downloaded) that
take the same input `features`: a linear regression of disease progression (`diabetes`, output
`prediction` of shape (batch, 1), task `regression`) and a logistic classifier of progression above the
median (`diabetes-high`, output `logits` (batch, 2)). Both are fitted on the first 300 rows; the
validation sets hold the other 142."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from sklearn.datasets import load_diabetes
from sklearn.linear_model import LinearRegression, LogisticRegression

TRAIN_ROWS = 300


def _linear_onnx(weights: np.ndarray, bias: np.ndarray, output: str) -> bytes:
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["features", "weights"], ["product"]),
            helper.make_node("Add", ["product", "bias"], [output]),
        ],
        "diabetes",
        [helper.make_tensor_value_info("features", TensorProto.FLOAT, [None, 10])],
        [helper.make_tensor_value_info(output, TensorProto.FLOAT, [None, weights.shape[1]])],
        initializer=[
            numpy_helper.from_array(weights.astype(np.float32), "weights"),
            numpy_helper.from_array(bias.astype(np.float32), "bias"),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model.SerializeToString()


def diabetes_models(directory: Path) -> dict[str, tuple[Path, Path]]:
    """Write both models and their validation sets (keys `x`, `y`) into `directory`: name → (onnx, npz).
    The regression targets are float64 of shape (rows,); the classifier's labels int64 class ids."""
    x, y = load_diabetes(return_X_y=True)
    x = x.astype(np.float32)
    train, hold = slice(0, TRAIN_ROWS), slice(TRAIN_ROWS, None)
    reg = LinearRegression().fit(x[train], y[train])
    high = (y > np.median(y[train])).astype(np.int64)
    clf = LogisticRegression(max_iter=1000, C=100.0).fit(x[train], high[train])
    coef = np.concatenate([-clf.coef_, clf.coef_]).T  # two logits whose argmax is the class
    out: dict[str, tuple[Path, Path]] = {}
    for name, onnx_bytes, labels in (
        ("diabetes", _linear_onnx(reg.coef_[:, None], np.asarray([reg.intercept_]), "prediction"), y),
        (
            "diabetes-high",
            _linear_onnx(coef, np.asarray([-clf.intercept_[0], clf.intercept_[0]]), "logits"),
            high,
        ),
    ):
        onnx_path, npz_path = directory / f"{name}.onnx", directory / f"{name}.npz"
        onnx_path.write_bytes(onnx_bytes)
        np.savez(npz_path, x=x[hold], y=labels[hold])
        out[name] = (onnx_path, npz_path)
    return out


def r2(predictions: np.ndarray, targets: np.ndarray) -> float:
    """R² computed here, independently of the profiler: 1 − SS_res/SS_tot."""
    y = targets.astype(np.float64).reshape(len(targets), -1)
    pred = predictions.astype(np.float64).reshape(len(targets), -1)
    return float(1 - ((y - pred) ** 2).sum() / ((y - y.mean(axis=0)) ** 2).sum())
