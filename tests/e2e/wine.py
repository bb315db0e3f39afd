"""A model unlike the demo models, for end-to-end tests: logistic regression on scikit-learn's wine data
(178 rows, 3 classes), with two named inputs (`chem`: 7 float32 features, `color`: 6) that the graph
concatenates. Trained here in well under a second; nothing is downloaded."""

from __future__ import annotations

from pathlib import Path

import httpx
import numpy as np
import onnx
import orjson
from onnx import TensorProto, helper, numpy_helper
from sklearn.datasets import load_wine
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler

CHEM = 7


def wine_model(directory: Path) -> tuple[Path, Path]:
    """Write `wine.onnx` and its validation set `wine.npz` (keys `chem`, `color`, `y`) into `directory`."""
    x, y = load_wine(return_X_y=True)
    scaler = StandardScaler().fit(x)
    clf = LogisticRegression(max_iter=500).fit(scaler.transform(x), y)
    # Standardization folded into the weights: (x - m) / s @ W + b = x @ (W / s) + (b - (m / s) @ W).
    weights = (clf.coef_.T / scaler.scale_[:, None]).astype(np.float32)
    bias = (clf.intercept_ - (scaler.mean_ / scaler.scale_) @ clf.coef_.T).astype(np.float32)
    graph = helper.make_graph(
        [
            helper.make_node("Concat", ["chem", "color"], ["features"], axis=1),
            helper.make_node("MatMul", ["features", "weights"], ["scores"]),
            helper.make_node("Add", ["scores", "bias"], ["logits"]),
        ],
        "wine",
        [
            helper.make_tensor_value_info("chem", TensorProto.FLOAT, [None, CHEM]),
            helper.make_tensor_value_info("color", TensorProto.FLOAT, [None, x.shape[1] - CHEM]),
        ],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [None, 3])],
        initializer=[numpy_helper.from_array(weights, "weights"), numpy_helper.from_array(bias, "bias")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx_path, npz_path = directory / "wine.onnx", directory / "wine.npz"
    onnx_path.write_bytes(model.SerializeToString())
    features = x.astype(np.float32)
    np.savez(npz_path, chem=features[:, :CHEM], color=features[:, CHEM:], y=y.astype(np.int64))
    return onnx_path, npz_path


def register_wine(client: httpx.Client, directory: Path, *, app: str, name: str = "wine") -> httpx.Response:
    """Build the wine model in `directory` and register it as `name` in `app` through the gateway
    `client` (which carries a key that may); the gateway's answer (202 when accepted)."""
    onnx_path, npz_path = wine_model(directory)
    metadata = orjson.dumps({"name": name, "app": app, "task": "classification"}).decode()
    files = {"file": ("wine.onnx", onnx_path.read_bytes()), "validation": ("wine.npz", npz_path.read_bytes())}
    return client.post("/v1/models", files=files, data={"metadata": metadata})
