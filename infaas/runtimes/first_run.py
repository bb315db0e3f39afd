"""An instance's first inference, run at load instead of on the first query: ONNX Runtime and PyTorch
allocate their arenas and pick kernels on the first run of each shape, which costs a cold query
milliseconds to tens of milliseconds (a warm instance must not make its first query pay for it).

On a GPU every batch size is a new shape to cuDNN, which picks its convolution algorithms per shape:
measured on an H100 with the demo CNN (`bench/cuda_first_shapes.py`), the first run of each new batch
size cost 31-43 ms with ONNX Runtime's default exhaustive search and 8-9 ms with the heuristic one,
against 0.3-0.8 ms once seen. The batcher forms batches of any size up to the variant's maximum, so a
GPU instance runs each of them once at load."""

from __future__ import annotations

import numpy as np

from infaas.runtimes.engines import Runtime


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


def warm_batch_sizes(max_batch: int, *, every_size: bool) -> list[int]:
    """The batch sizes a first run covers: one row and a full batch, or every size up to it."""
    top = max(1, max_batch)
    return list(range(1, top + 1)) if every_size else sorted({1, top})


def first_run(runtime: Runtime, signature_key: str, max_batch: int, *, every_size: bool = False) -> None:
    """Run zeros through a loaded runtime at `warm_batch_sizes`; the outputs are discarded."""
    for rows in warm_batch_sizes(max_batch, every_size=every_size):
        inputs = zero_inputs(signature_key, rows)
        if inputs is None:
            return
        runtime.run(inputs)
