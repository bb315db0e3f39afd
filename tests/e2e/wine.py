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


def wine_rows(n: int, seed: int = 20) -> np.ndarray:
    """`n` distinct plausible wine rows of 13 features (no two share an answer from a cache)."""
    rng = np.random.default_rng(seed)
    base = np.array([13, 2, 2.4, 19, 100, 2.3, 2, 0.36, 1.6, 5, 1, 2.6, 750], dtype=np.float32)
    return (base * rng.uniform(0.8, 1.2, size=(n, 13))).astype(np.float32)


def wine_body(row: np.ndarray) -> bytes:
    """A `/v1` query body for one wine row, split into the model's two inputs."""
    return orjson.dumps({"inputs": {"chem": [row[:CHEM].tolist()], "color": [row[CHEM:].tolist()]}})


def register_wine(client: httpx.Client, directory: Path, *, app: str, name: str = "wine") -> httpx.Response:
    """Build the wine model in `directory` and register it as `name` in `app` through the gateway
    `client` (which carries a key that may); the gateway's answer (202 when accepted)."""
    onnx_path, npz_path = wine_model(directory)
    metadata = orjson.dumps({"name": name, "app": app, "task": "classification"}).decode()
    files = {"file": ("wine.onnx", onnx_path.read_bytes()), "validation": ("wine.npz", npz_path.read_bytes())}
    return client.post("/v1/models", files=files, data={"metadata": metadata})


def wine_logits(directory: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(chem, color, logits of the wine model) over the whole wine set, as ONNX Runtime computes them."""
    import onnxruntime as ort

    onnx_path, npz_path = wine_model(directory)
    data = np.load(npz_path)
    session = ort.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
    (logits,) = session.run(None, {"chem": data["chem"], "color": data["color"]})
    return data["chem"], data["color"], logits


def grader_model(directory: Path) -> tuple[Path, Path]:
    """The second stage of a wine pipeline: a logistic regression that reads the wine model's `logits`
    (as its input `scores`, 3 float32) and tells whether the wine is stronger than the median (output
    `strong`, 2 classes), trained on the wine set. Written as `grader.onnx` and `grader.npz` (keys `x`
    for `scores`, and `y`)."""
    x, _ = load_wine(return_X_y=True)
    _, _, logits = wine_logits(directory)
    strong = (x[:, 0] > np.median(x[:, 0])).astype(np.int64)
    clf = LogisticRegression(max_iter=500).fit(logits, strong)
    weights = np.hstack([-clf.coef_.T, clf.coef_.T]).astype(np.float32) / 2
    bias = np.array([-clf.intercept_[0], clf.intercept_[0]], dtype=np.float32) / 2
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["scores", "weights"], ["raw"]),
            helper.make_node("Add", ["raw", "bias"], ["strong"]),
        ],
        "grader",
        [helper.make_tensor_value_info("scores", TensorProto.FLOAT, [None, 3])],
        [helper.make_tensor_value_info("strong", TensorProto.FLOAT, [None, 2])],
        initializer=[numpy_helper.from_array(weights, "weights"), numpy_helper.from_array(bias, "bias")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx_path, npz_path = directory / "grader.onnx", directory / "grader.npz"
    onnx_path.write_bytes(model.SerializeToString())
    np.savez(npz_path, x=logits.astype(np.float32), y=strong)
    return onnx_path, npz_path


def register_grader(
    client: httpx.Client, directory: Path, *, app: str, name: str = "grader"
) -> httpx.Response:
    """Build the grader in `directory` and register it as `name` in `app` (like `register_wine`)."""
    onnx_path, npz_path = grader_model(directory)
    metadata = orjson.dumps({"name": name, "app": app, "task": "classification"}).decode()
    files = {
        "file": ("grader.onnx", onnx_path.read_bytes()),
        "validation": ("grader.npz", npz_path.read_bytes()),
    }
    return client.post("/v1/models", files=files, data={"metadata": metadata})
