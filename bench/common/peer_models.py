"""The three models of the peer comparison, built from scikit-learn's digits and fixed seeds.

Each is a digits classifier (input `x`: float32 [batch, 64] in [0, 1]; output `logits`: float32
[batch, 10]) whose hidden layers are random tanh features (a fixed seed) and whose last layer is fitted by
ridge regression on the training split, so that the accuracy the profiler measures is a real one and the
build takes seconds, not a training run:

- `tiny`: 64-32-10, a few µs per row;
- `heavy`: 64-3072-3072-10, 1.5–12 ms at batch 1 on one thread depending on the host's load (the
  weights, 38 MB, are read once per batch, so a batch of 32 costs ~3–4× one row, not 32×);
- `fixed`: 64-256-10 plus a per-batch branch of eight 1024-wide layers on the batch's mean row whose
  result is multiplied by zero and added to the logits: a fixed cost of ~1–1.5 ms per call that batching
  shares (the Clipper case). Multiplying by zero keeps every row's answer independent of its batch mates
  (the branch is bounded by tanh, so the product is exactly 0); ONNX Runtime does not fold it away, since
  the branch depends on the input.

`ALTERNATIVES` are models of the same task that only infaas is given, for its model-less queries:
- `small`: 64-512-10, a few µs per row, within a point of `heavy`'s accuracy.

The validation set (`digits-validation.npz`: `x`, `y`) is the 30 % split the demo models use.

    .venv/bin/python -m bench.common.peer_models var/peers/models
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
import onnx
from onnx import TensorProto, helper, numpy_helper
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

SEED = 21
OPSET = 17
Floats = npt.NDArray[np.float32]


@dataclass(frozen=True)
class Spec:
    hidden: tuple[int, ...]
    fixed_layers: int = 0
    fixed_width: int = 0
    description: str = ""


SPECS = {
    "tiny": Spec((32,), description="MLP 64-32-10, a few µs per row"),
    "heavy": Spec((3072, 3072), description="MLP 64-3072-3072-10, 38 MB of weights"),
    "fixed": Spec((256,), 8, 1024, description="MLP 64-256-10 + a per-batch fixed cost"),
}
# Registered with infaas beside the measured models: a model-less query (the app and a minimum accuracy,
# no model named) may be answered by them. A peer serves the model it is given.
ALTERNATIVES = {
    "small": Spec((512,), description="MLP 64-512-10, a few µs per row"),
}
ALL = {**SPECS, **ALTERNATIVES}


def split() -> tuple[Floats, Floats, npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    digits = load_digits()
    x = (np.asarray(digits.data, dtype=np.float64) / 16.0).astype(np.float32)
    y = np.asarray(digits.target, dtype=np.int64)
    x_tr, x_val, y_tr, y_val = train_test_split(x, y, test_size=0.3, random_state=0, stratify=y)
    return x_tr, x_val, y_tr, y_val


def build(spec: Spec, x_tr: Floats, y_tr: npt.NDArray[np.int64], seed: int) -> onnx.ModelProto:
    rng = np.random.default_rng(seed)
    inits: list[onnx.TensorProto] = []
    nodes: list[onnx.NodeProto] = []
    prev, width, features = "x", 64, x_tr.astype(np.float64)
    for i, size in enumerate(spec.hidden):
        w = (rng.standard_normal((width, size)) * 2.0 / np.sqrt(width)).astype(np.float32)
        b = (rng.standard_normal(size) * 0.5).astype(np.float32)
        inits += [numpy_helper.from_array(w, f"w{i}"), numpy_helper.from_array(b, f"b{i}")]
        nodes += [
            helper.make_node("Gemm", [prev, f"w{i}", f"b{i}"], [f"g{i}"]),
            helper.make_node("Tanh", [f"g{i}"], [f"h{i}"]),
        ]
        features = np.tanh(features @ w + b)
        prev, width = f"h{i}", size
    # ridge regression of one-hot targets on the last features (the dual form: rows ≪ width)
    onehot = np.eye(10)[y_tr]
    gram = features @ features.T + 1.0 * np.eye(len(features))
    w_out = (features.T @ np.linalg.solve(gram, onehot)).astype(np.float32)
    inits.append(numpy_helper.from_array(w_out, "w_out"))
    out = "logits" if not spec.fixed_layers else "per_row"
    nodes.append(helper.make_node("MatMul", [prev, "w_out"], [out]))
    if spec.fixed_layers:
        nodes.append(helper.make_node("ReduceMean", ["x"], ["f_in"], axes=[0], keepdims=1))
        prev, width = "f_in", 64
        for j in range(spec.fixed_layers):
            w = (rng.standard_normal((width, spec.fixed_width)) / np.sqrt(width)).astype(np.float32)
            inits.append(numpy_helper.from_array(w, f"fw{j}"))
            nodes += [
                helper.make_node("MatMul", [prev, f"fw{j}"], [f"fm{j}"]),
                helper.make_node("Tanh", [f"fm{j}"], [f"ft{j}"]),
            ]
            prev, width = f"ft{j}", spec.fixed_width
        inits.append(numpy_helper.from_array(np.zeros((1, 1), dtype=np.float32), "zero"))
        nodes += [
            helper.make_node("ReduceSum", [prev], ["f_sum"], keepdims=1),
            helper.make_node("Mul", ["f_sum", "zero"], ["f_zero"]),
            helper.make_node("Add", ["per_row", "f_zero"], ["logits"]),
        ]
    graph = helper.make_graph(
        nodes,
        "digits",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 64])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 10])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def prepare(out: Path, count: int = 256) -> tuple[dict[str, dict[str, object]], np.ndarray]:
    """`build_all(out)`, and the first `count` validation rows: what every bench script sends."""
    manifest = build_all(out)
    with np.load(out / "digits-validation.npz") as data:
        return manifest, np.asarray(data["x"][:count], dtype=np.float32)


def build_all(out: Path) -> dict[str, dict[str, object]]:
    """Write `<name>.onnx` for each model, the validation set and a manifest (accuracy per model); files
    already there with a matching manifest are kept."""
    out.mkdir(parents=True, exist_ok=True)
    manifest_path = out / "models.json"
    if manifest_path.exists():
        manifest: dict[str, dict[str, object]] = json.loads(manifest_path.read_text())
        if set(manifest) == set(ALL) and all((out / f"{n}.onnx").exists() for n in ALL):
            return manifest
    x_tr, x_val, y_tr, y_val = split()
    np.savez(out / "digits-validation.npz", x=x_val, y=y_val)
    manifest = {}
    for i, (name, spec) in enumerate(ALL.items()):
        model = build(spec, x_tr, y_tr, SEED + i)
        path = out / f"{name}.onnx"
        onnx.save(model, path)
        manifest[name] = {"description": spec.description, "accuracy": accuracy(path, x_val, y_val)}
    manifest_path.write_text(json.dumps(manifest, indent=1))
    return manifest


def accuracy(path: Path, x: Floats, y: npt.NDArray[np.int64]) -> float:
    import onnxruntime as ort

    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    logits = session.run(None, {"x": x})[0]
    return float(np.mean(np.argmax(logits, axis=1) == y))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("out", type=Path, nargs="?", default=Path("var/peers/models"))
    args = parser.parse_args()
    for name, info in build_all(args.out).items():
        print(f"{name:6} accuracy {info['accuracy']:.4f}  {info['description']}")


if __name__ == "__main__":
    main()
