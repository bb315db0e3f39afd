"""Per-query variant selection (INFaaS §4.1) as a pure function over a frozen snapshot.

1. Among variants with an *active* instance that meet the requirements, take the fastest at the query's
   batch and send it to that variant's queue (the least-loaded worker hosting it pulls it).
2. Else, among variants with no usable instance that meet the requirements, take the one with the lowest
   load + inference latency and load it on the least-utilized worker of its hardware kind.
3. Else no variant can: raise `RequirementsUnmet` naming the closest achievable accuracy and latency.
Instances that are overloaded, interfered, failed or still loading are never chosen as active.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal

from infaas.errors import RequirementsUnmet, Unavailable
from infaas.variants import VariantProfile

InstanceState = Literal["inactive", "loading", "active", "overloaded", "interfered", "failed"]


@dataclass(frozen=True, slots=True)
class Requirements:
    """What the query asks for; `None` means no constraint."""

    latency_ms: float | None = None
    min_accuracy: float | None = None


@dataclass(frozen=True, slots=True)
class InstanceView:
    worker_id: str
    variant_id: str
    state: InstanceState
    pending: int = 0


@dataclass(frozen=True, slots=True)
class WorkerView:
    id: str
    hardware: str
    url: str
    cores: int
    memory_bytes: int
    memory_used_bytes: int = 0
    utilization: float = 0.0


@dataclass(frozen=True, slots=True)
class Snapshot:
    """What selection knows: profiled variants and the live instances and workers."""

    variants: Mapping[str, VariantProfile] = field(default_factory=dict)
    instances: tuple[InstanceView, ...] = ()
    workers: tuple[WorkerView, ...] = ()


@dataclass(frozen=True, slots=True)
class Decision:
    variant: VariantProfile
    action: Literal["active", "load"]
    worker: WorkerView | None
    reason: str


def meets(variant: VariantProfile, req: Requirements, rows: int) -> bool:
    if req.min_accuracy is not None and variant.accuracy < req.min_accuracy:
        return False
    return req.latency_ms is None or variant.latency_ms(rows) <= req.latency_ms


def get_variant(
    req: Requirements, rows: int, candidates: Iterable[VariantProfile], snapshot: Snapshot
) -> Decision:
    """Choose the variant (and, for a cold one, the worker to load it on) for one query."""
    pool = list(candidates)
    satisfying = [v for v in pool if meets(v, req, rows)]
    if not satisfying:
        raise _unmet(req, rows, pool)
    # Dominated variants lose to another on every profiled axis; they stay only as a fallback for the
    # rare query whose batch size makes the dominating one miss the latency bound.
    satisfying = [v for v in satisfying if not v.dominated] or satisfying

    by_variant: dict[str, list[InstanceView]] = {}
    for inst in snapshot.instances:
        by_variant.setdefault(inst.variant_id, []).append(inst)

    active = [v for v in satisfying if any(i.state == "active" for i in by_variant.get(v.id, ()))]
    if active:
        best = min(active, key=lambda v: (v.latency_ms(rows), v.id))
        return Decision(
            variant=best,
            action="active",
            worker=None,
            reason="fastest active variant meeting the requirements",
        )

    # A variant that is loading, overloaded or interfered somewhere is not cold: loading it again on
    # another worker is what the autoscaler decides, not a single query. Prefer truly cold variants.
    cold = [v for v in satisfying if not by_variant.get(v.id)]
    ranked = sorted(cold or satisfying, key=lambda v: (v.load_ms + v.latency_ms(rows), v.id))
    for variant in ranked:
        worker = least_utilized_worker(variant, snapshot.workers)
        if worker is not None:
            return Decision(
                variant=variant,
                action="load",
                worker=worker,
                reason="no active variant meets the requirements: loading the one with "
                "the lowest load + inference latency",
            )
    kinds = sorted({v.hardware for v in ranked})
    raise Unavailable(
        f"no live worker of hardware kind {', '.join(kinds)} can host a satisfying variant", hardware=kinds
    )


def least_utilized_worker(variant: VariantProfile, workers: Iterable[WorkerView]) -> WorkerView | None:
    """The worker of the variant's hardware kind with the lowest utilization and room for it."""
    fitting = [
        w
        for w in workers
        if w.hardware == variant.hardware
        and (w.memory_bytes - w.memory_used_bytes) >= variant.peak_memory_bytes
    ]
    if not fitting:
        return None
    return min(fitting, key=lambda w: (w.utilization, w.memory_used_bytes, w.id))


def _unmet(req: Requirements, rows: int, pool: list[VariantProfile]) -> RequirementsUnmet:
    if not pool:
        return RequirementsUnmet("no profiled variant serves this query yet", closest=None)
    fast_enough = [v for v in pool if req.latency_ms is None or v.latency_ms(rows) <= req.latency_ms]
    accurate_enough = [v for v in pool if req.min_accuracy is None or v.accuracy >= req.min_accuracy]
    best_acc = max(fast_enough or pool, key=lambda v: v.accuracy)
    fastest = min(accurate_enough or pool, key=lambda v: v.latency_ms(rows))
    closest = {
        "max_accuracy_within_latency": round(best_acc.accuracy, 4) if fast_enough else None,
        "variant_for_accuracy": best_acc.id if fast_enough else None,
        "min_latency_ms_at_accuracy": _ms(fastest.latency_ms(rows)) if accurate_enough else None,
        "variant_for_latency": fastest.id if accurate_enough else None,
        "best_accuracy": round(max(v.accuracy for v in pool), 4),
        "best_latency_ms": _ms(min(v.latency_ms(rows) for v in pool)),
    }
    return RequirementsUnmet(
        f"no variant meets latency <= {req.latency_ms} ms and accuracy >= {req.min_accuracy} "
        f"for a batch of {rows}",
        closest=closest,
    )


def _ms(value: float) -> float | None:
    return None if math.isinf(value) else round(value, 4)
