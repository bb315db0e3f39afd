"""The variant profile: what the profiler measured about one runnable form of a model.

This frozen record is what the metadata store holds and what selection reasons over; it is built from
the registry's rows and never mutated.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import orjson


@dataclass(frozen=True, slots=True)
class BatchLatency:
    """Measured latency of one run at a batch size."""

    batch: int
    p50_ms: float
    p99_ms: float


@dataclass(frozen=True, slots=True)
class VariantProfile:
    """A profiled variant, ready to be selected."""

    id: str
    model: str
    app: str
    signature_key: str
    runtime: str
    optimization: str
    precision: str
    hardware: str
    max_batch: int
    threads: int
    artifact_digest: str
    accuracy: float
    load_ms: float
    latencies: tuple[BatchLatency, ...]
    saturation_qps: float
    peak_memory_bytes: int
    provider: str = "CPUExecutionProvider"
    cost_per_query: float = 0.0
    dominated: bool = False
    input_names: tuple[str, ...] = ("x",)
    output_names: tuple[str, ...] = ("y",)
    reference_accuracy: float | None = None
    """The accuracy of its model as registered (`ModelInternal.reference_accuracy`); None: not yet
    measured."""
    concurrency_ms: tuple[float, ...] = ()
    """Mean latency of one batch-1 request while 1, 2, … of them run at once on one instance (the
    profiler's concurrency points: SERF's μ_i = 1000 / concurrency_ms[i-1]); empty: not profiled."""
    task: str = "classification"
    """Its model's task (`infaas.core.tasks`): model-less queries are answered by models of one task."""
    parity_k: int = 0
    """0 for a variant of the model. k > 0: the hidden *parity model* of `model` for coding groups of k
    (ParM, `infaas.policy.parity`): published apart from the model's variants (`store.PARITY_VARIANTS`),
    so selection never sees it; only the dispatcher's coder sends it parity queries."""

    def profiled_ms(self, rows: int, *, tail: bool = True) -> float:
        """Expected latency of a query of `rows` rows, as profiled (p99; `tail=False`: p50): the measured
        point at the next batch size up, and whole max-size batches run back to back for queries larger
        than the max batch."""
        if not self.latencies:
            return math.inf
        runs = 1
        if rows > self.max_batch:
            runs = math.ceil(rows / self.max_batch)
            rows = self.max_batch
        chosen = self.latencies[-1]
        for point in self.latencies:
            if point.batch >= rows:
                chosen = point
                break
        return runs * (chosen.p99_ms if tail else chosen.p50_ms)

    def to_json_bytes(self) -> bytes:
        return orjson.dumps(asdict(self))

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> VariantProfile:
        data = dict(data)
        data["latencies"] = tuple(BatchLatency(**p) for p in data["latencies"])
        for names in ("input_names", "output_names", "concurrency_ms"):
            if names in data:
                data[names] = tuple(data[names])
        return cls(**data)


def variant_id(
    model: str,
    *,
    runtime: str,
    optimization: str,
    precision: str,
    hardware: str,
    max_batch: int,
    threads: int,
) -> str:
    """Readable, unique name of a variant, e.g. `digits-cnn.onnxruntime-basic-fp32-cpu-b16-t2`."""
    return f"{model}.{runtime}-{optimization}-{precision}-{hardware}-b{max_batch}-t{threads}"
