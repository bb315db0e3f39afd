"""A model unlike the demo models, for tests of values a model refuses: iris measurements binned into 4
tokens of a 20-token vocabulary (int64 input `token_ids`) → embedding → mean → 3 logits (`logits`). A
token id past the table passes the gateway's shape and dtype checks and fails ONNX Runtime's Gather."""

from __future__ import annotations

import io

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from sklearn.datasets import load_iris

from infaas.schemas.variants import VariantProfile
from tests.factories import variant_profile

VOCABULARY, WIDTH = 20, 8


def tokens() -> np.ndarray:
    x, _ = load_iris(return_X_y=True)
    binned: np.ndarray = np.clip((x * 2).astype(np.int64), 0, VOCABULARY - 1)
    return binned


def model_bytes() -> bytes:
    rng = np.random.default_rng(5)
    table = rng.standard_normal((VOCABULARY, WIDTH)).astype(np.float32)
    head = rng.standard_normal((WIDTH, 3)).astype(np.float32)
    graph = helper.make_graph(
        [
            helper.make_node("Gather", ["table", "token_ids"], ["embedded"], axis=0),
            helper.make_node("ReduceMean", ["embedded"], ["pooled"], axes=[1], keepdims=0),
            helper.make_node("MatMul", ["pooled", "head"], ["logits"]),
        ],
        "tokens",
        [helper.make_tensor_value_info("token_ids", TensorProto.INT64, [None, 4])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [None, 3])],
        [numpy_helper.from_array(table, "table"), numpy_helper.from_array(head, "head")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    onnx.checker.check_model(model)
    serialized: bytes = model.SerializeToString()
    return serialized


def validation_bytes() -> bytes:
    """The validation `.npz` (`x`: the tokens, `y`: the iris classes)."""
    _, y = load_iris(return_X_y=True)
    buffer = io.BytesIO()
    np.savez(buffer, x=tokens(), y=y.astype(np.int64))
    return buffer.getvalue()


def token_profile(model: str, digest: str) -> VariantProfile:
    """An fp32 CPU variant of this model, max batch 64, named `model`, serving the artifact `digest`."""
    return variant_profile(
        id=f"{model}.onnxruntime-basic-fp32-cpu-b64-t1",
        model=model,
        artifact_digest=digest,
        signature_key="token_ids:int64:4",
        input_names=("token_ids",),
        output_names=("logits",),
        max_batch=64,
        latencies=((1, 1.0, 2.0), (64, 2.0, 3.0)),
    )
