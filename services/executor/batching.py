"""Pure helpers of an instance's batching: grouping queued queries into batches, and running a batch
larger than the variant's max batch in max-batch chunks."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from infaas.runtimes.engines import Runtime

if TYPE_CHECKING:
    from services.executor.instances import Query


def batches(queries: list[Query], max_batch: int) -> list[list[Query]]:
    """Group queries in arrival order into batches of at most `max_batch` rows (a larger query alone)."""
    out: list[list[Query]] = []
    current: list[Query] = []
    rows = 0
    signature: tuple[tuple[str, tuple[int, ...]], ...] | None = None
    for q in queries:
        shape_key = tuple((n, a.shape[1:]) for n, a in q.inputs.items())
        if current and (rows + q.rows > max_batch or shape_key != signature):
            out.append(current)
            current, rows = [], 0
        current.append(q)
        rows += q.rows
        signature = shape_key
    if current:
        out.append(current)
    return out


def run_chunked(runtime: Runtime, inputs: dict[str, np.ndarray], max_batch: int) -> dict[str, np.ndarray]:
    rows = next(iter(inputs.values())).shape[0]
    if rows <= max_batch:
        return runtime.run(inputs)
    parts = [
        runtime.run({n: a[i : i + max_batch] for n, a in inputs.items()}) for i in range(0, rows, max_batch)
    ]
    return {n: np.concatenate([p[n] for p in parts]) for n in parts[0]}
