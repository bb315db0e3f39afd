"""Pareto dominance among a model's profiled variants (pure).

A variant is dominated when another one is at least as good on every axis — p50 latency at batch 1,
accuracy, saturation throughput, cost per query, load latency — and strictly better on one. Dominated
variants are kept (the API shows them) but selection skips them: whatever they would be chosen for,
the dominating variant does at least as well.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Point:
    id: str
    latency_ms: float  # lower is better
    accuracy: float  # higher is better
    throughput: float  # higher is better
    cost_per_query: float  # lower is better
    load_ms: float  # lower is better

    def key(self) -> tuple[float, float, float, float, float]:
        """All axes as 'lower is better'."""
        return (self.latency_ms, -self.accuracy, -self.throughput, self.cost_per_query, self.load_ms)


def dominated(points: Sequence[Point]) -> set[str]:
    keys = [(p.id, p.key()) for p in points]
    out: set[str] = set()
    for pid, k in keys:
        for qid, q in keys:
            if qid != pid and all(a <= b for a, b in zip(q, k, strict=True)) and q != k:
                out.add(pid)
                break
    return out
