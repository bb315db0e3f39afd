"""What every peer server shares: the models it serves and one ONNX Runtime session setting for all.

Runs inside each peer's own virtualenv (var/peers/<peer>/venv), so it imports only NumPy and ONNX Runtime.
Every session: CPU provider, one intra-op and one inter-op thread, sequential execution, ONNX Runtime's
default graph optimizations — the same for every peer, so the servers differ only in what they wrap
around `session.run`.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import onnxruntime as ort

MODELS = ("tiny", "heavy", "fixed")
MAX_BATCH = 32  # every batching peer: at most 32 rows per call …
BATCH_WAIT_S = 0.002  # … waiting at most 2 ms for the batch to fill


def models_dir() -> Path:
    return Path(os.environ.get("PEERS_MODELS", "var/peers/models"))


def session(model: str) -> ort.InferenceSession:
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    return ort.InferenceSession(str(models_dir() / f"{model}.onnx"), opts, providers=["CPUExecutionProvider"])


class Model:
    """One model: `run(rows)` → logits, float32 [n, 10]."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.session = session(name)
        self.run(np.zeros((1, 64), dtype=np.float32))  # first run of a shape: allocations, kernels
        self.run(np.zeros((MAX_BATCH, 64), dtype=np.float32))

    def run(self, rows: np.ndarray) -> np.ndarray:
        logits: np.ndarray = self.session.run(None, {"x": np.ascontiguousarray(rows, dtype=np.float32)})[0]
        return logits
