"""The throughput an int8-dynamic variant gives up by running one query per batch (the executor's rule,
services/executor/serving.py `ROW_COUPLED_PRECISIONS`): single-row queries answered in batches of 32 queries
against one query per run, on one intra-op thread, for two MLPs built here (a narrow 30 → 512 → 2 and a
wide 96 → 1536 → 1536 → 5), quantized by the profiler's own generator; fp32 alongside. Also how far a
row's int8-dynamic answer moves when it is batched with other rows.

Usage:

    .venv/bin/python -m bench.diagnostics.int8_batch_mates [--seconds 1.0]
"""

from __future__ import annotations

import argparse
import math
import tempfile
import time
from pathlib import Path

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from infaas.wire.tensors import Signature, TensorSpec
from services.profiler.generators import OrtInt8Dynamic, SourceModel


def mlp(path: Path, dims: tuple[int, ...]) -> None:
    rng = np.random.default_rng(7)
    nodes, inits, prev = [], [], "x"
    for i, (n_in, n_out) in enumerate(zip(dims, dims[1:], strict=False)):
        inits.append(
            numpy_helper.from_array(
                (rng.standard_normal((n_in, n_out)) / math.sqrt(n_in)).astype(np.float32), f"w{i}"
            )
        )
        last = i == len(dims) - 2
        nodes.append(helper.make_node("MatMul", [prev, f"w{i}"], ["y" if last else f"m{i}"]))
        if not last:
            nodes.append(helper.make_node("Relu", [f"m{i}"], [f"h{i}"]))
            prev = f"h{i}"
    graph = helper.make_graph(
        nodes,
        "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, dims[0]])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, dims[-1]])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path.write_bytes(model.SerializeToString())


def rows_per_s(session: ort.InferenceSession, x: np.ndarray, batch: int, seconds: float) -> float:
    rows, start = 0, time.perf_counter()
    i = 0
    while time.perf_counter() - start < seconds:
        session.run(None, {"x": x[i % 256 : i % 256 + batch]})
        rows += batch
        i += batch
    return rows / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=1.0)
    args = parser.parse_args()
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    print(
        "| model | form | 1 query per run (rows/s) | 32 queries per run (rows/s) | cost of per-query runs "
        "| max change of a row's logits when batched |"
    )
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for name, dims in (("narrow 30-512-2", (30, 512, 2)), ("wide 96-1536-1536-5", (96, 1536, 1536, 5))):
            path = Path(tmp) / f"{dims[0]}.onnx"
            mlp(path, dims)
            signature = Signature(
                (TensorSpec("x", "float32", (None, dims[0])),),
                (TensorSpec("y", "float32", (None, dims[-1])),),
            )
            (candidate,) = OrtInt8Dynamic().generate(SourceModel(name, signature, path, None, {}))
            x = np.random.default_rng(1).standard_normal((512, dims[0])).astype(np.float32)
            x[1:32] *= 20  # other tenants' rows, far from this one's scale
            for form, model in (("fp32", path.read_bytes()), ("int8-dynamic", candidate.data)):
                session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
                rows_per_s(session, x, 32, 0.2)  # warm-up: first runs allocate
                one = rows_per_s(session, x, 1, args.seconds)
                many = rows_per_s(session, x, 32, args.seconds)
                alone = session.run(None, {"x": x[:1]})[0]
                batched = session.run(None, {"x": x[:32]})[0][:1]
                moved = float(np.abs(alone - batched).max())
                scale = float(np.abs(alone).max())
                print(
                    f"| {name} | {form} | {one:,.0f} | {many:,.0f} | {1 - one / many:.0%} "
                    f"| {moved:.3g} (of {scale:.3g}) |"
                )


if __name__ == "__main__":
    main()
