"""Pure logic of an instance's batching: the adaptive batch limit (Clipper's AIMD), grouping queued
queries into batches, and running a batch larger than the variant's max batch in max-batch chunks."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from infaas.runtimes.engines import Runtime
from services.executor.queries import Query


@dataclass
class AIMD:
    """Clipper's adaptive batch size: grow by `step` while batches finish within their latency budget,
    cut by 10 % when one does not; always within 1…the variant's max batch."""

    cap: int
    step: int = 1
    backoff: float = 0.9
    size: float = 1.0

    def limit(self) -> int:
        return max(1, min(self.cap, int(self.size)))

    def observe(self, rows: int, latency_ms: float, budget_ms: float) -> None:
        if latency_ms > budget_ms:
            self.size = max(1.0, self.size * self.backoff)
        elif rows >= self.limit():
            # Grow only on evidence: a batch that did not fill the limit says nothing about a bigger one.
            self.size = min(float(self.cap), self.size + self.step)


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
