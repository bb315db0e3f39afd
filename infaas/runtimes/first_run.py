"""An instance's first inference, run at load instead of on the first query: ONNX Runtime and PyTorch
allocate their arenas and pick kernels on the first run of each shape, which costs a cold query
milliseconds to tens of milliseconds (a warm instance must not make its first query pay for it).

One row and a full batch are run. A GPU variant pads every batch to its max batch (providers.py
`padded_batch`), so both runs are its one shape: warming other sizes would not help there, since ONNX
Runtime's CUDA convolutions keep the plan of the last shape only."""

from __future__ import annotations

import numpy as np

from infaas.runtimes.base import Runtime


def zero_inputs(signature_key: str, rows: int) -> dict[str, np.ndarray] | None:
    """Zeros shaped like the model's inputs (`Signature.key`: `name:dtype:dim x dim|…`, `?` for a free
    dimension, taken as 1); None when an input is not numeric (strings have no neutral value)."""
    inputs = {}
    for part in signature_key.split("|"):
        name, dtype, dims = part.rsplit(":", 2)
        kind = np.dtype(dtype)
        if kind.kind not in "biuf":
            return None
        shape = [1 if d == "?" else int(d) for d in dims.split("x") if d]
        inputs[name] = np.zeros((rows, *shape), dtype=kind)
    return inputs


def warm_batch_sizes(max_batch: int) -> list[int]:
    """The batch sizes a first run covers: one row and a full batch."""
    return sorted({1, max(1, max_batch)})


def first_run(runtime: Runtime, signature_key: str, max_batch: int) -> None:
    """Run zeros through a loaded runtime at `warm_batch_sizes`; the outputs are discarded."""
    for rows in warm_batch_sizes(max_batch):
        inputs = zero_inputs(signature_key, rows)
        if inputs is None:
            return
        runtime.run(inputs)
