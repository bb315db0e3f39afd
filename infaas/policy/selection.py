"""Per-query variant selection (INFaaS §4.1) as a pure function over a frozen snapshot.

1. Among variants with an *active* instance that meet the requirements, take the fastest at the query's
   batch and send it to that variant's queue (the least-loaded worker hosting it pulls it).
2. Else, among variants with no usable instance that meet the requirements, take the one with the lowest
   load + inference latency and load it on the least-utilized worker of its hardware kind.
3. Else no variant can: raise `RequirementsUnmet` naming the closest achievable accuracy and latency.
Instances that are overloaded, interfered, failed or still loading are never chosen as active.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Literal

import numpy as np

from infaas.core.errors import Overloaded, RequirementsUnmet, Unavailable
from infaas.policy.unmet import requirements_unmet
from infaas.schemas.variants import VariantProfile

InstanceState = Literal["inactive", "loading", "active", "overloaded", "interfered", "failed"]
Prefer = Literal["cost", "latency"]


@dataclass(frozen=True, slots=True)
class Requirements:
    """What the query asks for; `None` means no constraint."""

    slo_ms: float | None = None
    """Its latency SLO (the API's `latency_ms`), ms."""
    min_accuracy: float | None = None
    max_cost: float | None = None
    """$ for this query: a variant's profiled $ per row (at saturation) × the query's rows."""
    at_reference: bool = False
    """Only variants at least as accurate as their own model's `reference_accuracy` (the model as
    registered): set by the gateway when the query states no accuracy and its app is not `lossy`."""


@dataclass(frozen=True, slots=True)
class InstanceView:
    worker_id: str
    variant_id: str
    state: InstanceState
    pending: int = 0
    concurrency: int = 1
    """Batches it runs at once (the planner's SERF configuration)."""


@dataclass(frozen=True, slots=True)
class WorkerView:
    id: str
    hardware: str
    url: str
    cores: int
    memory_bytes: int
    memory_used_bytes: int = 0
    utilization: float = 0.0
    push: str = ""
    """`host:port` of the worker's push endpoint (services/executor/push.py); empty: streams only."""
    incarnation: str = ""
    """This run of the worker, as its heartbeat says (`infaas.data.failures`)."""


USABLE_STATES = frozenset({"active", "loading", "overloaded", "interfered"})
"""Instance states that serve queries now or once loaded (`failed` and `inactive` do not)."""


@dataclass(frozen=True)
class Snapshot:
    """What selection knows: profiled variants and the live instances and workers."""

    variants: Mapping[str, VariantProfile] = field(default_factory=dict)
    instances: tuple[InstanceView, ...] = ()
    workers: tuple[WorkerView, ...] = ()

    @cached_property
    def _ids(self) -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
        active = frozenset(i.variant_id for i in self.instances if i.state == "active")
        usable = frozenset(i.variant_id for i in self.instances if i.state in USABLE_STATES)
        return active, frozenset(i.variant_id for i in self.instances), usable

    def active_ids(self) -> frozenset[str]:
        """Variants with at least one instance in state `active`."""
        return self._ids[0]

    def placed_ids(self) -> frozenset[str]:
        """Variants with an instance in any state (loading, overloaded, … included)."""
        return self._ids[1]

    def usable_ids(self) -> frozenset[str]:
        """Variants with an instance that serves or soon will (`USABLE_STATES`)."""
        return self._ids[2]


@dataclass(frozen=True, slots=True)
class Decision:
    variant: VariantProfile
    action: Literal["active", "load"]
    worker: WorkerView | None
    reason: str


def accurate_enough(variant: VariantProfile, req: Requirements) -> bool:
    """The query's accuracy bound: its `min_accuracy`, and its model's reference under `at_reference`."""
    if req.min_accuracy is not None and variant.accuracy < req.min_accuracy:
        return False
    return not (req.at_reference and variant.accuracy < _reference(variant))


def meets(variant: VariantProfile, req: Requirements, rows: int) -> bool:
    if not accurate_enough(variant, req):
        return False
    return req.slo_ms is None or variant.profiled_ms(rows) <= req.slo_ms


# Batch sizes at which candidate latencies are precomputed; a query of `rows` rows uses the next one up.
_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)


class CandidateIndex:
    """The variants one query may choose from, laid out as arrays so that checking a thousand of them
    is a few vector operations instead of a Python loop (INFaaS kept sorted sets in Redis for the
    same reason). Built once per snapshot refresh, immutable afterwards."""

    def __init__(self, variants: Iterable[VariantProfile]) -> None:
        self.variants: tuple[VariantProfile, ...] = tuple(variants)
        n = len(self.variants)
        self.accuracy = np.fromiter((v.accuracy for v in self.variants), dtype=np.float64, count=n)
        self.dominated = np.fromiter((v.dominated for v in self.variants), dtype=bool, count=n)
        self.cost = np.fromiter((v.cost_per_query for v in self.variants), dtype=np.float64, count=n)
        self.load_ms = np.fromiter((v.load_ms for v in self.variants), dtype=np.float64, count=n)
        self.latency = np.array(
            [[v.profiled_ms(b) for b in _BUCKETS] for v in self.variants], dtype=np.float64
        ).reshape(n, len(_BUCKETS))
        # A unicode array, built once: ties break by id without converting ids on every query.
        self.ids = np.array([v.id for v in self.variants], dtype=str)
        self._placement: tuple[int, np.ndarray, np.ndarray, np.ndarray] | None = None
        self._by_rows: dict[int, np.ndarray] = {}
        self._at_reference: tuple[CandidateIndex, int] | None = None

    def __len__(self) -> int:
        return len(self.variants)

    def latency_at(self, rows: int) -> np.ndarray:
        k = bisect.bisect_left(_BUCKETS, rows)
        if k < len(_BUCKETS) and _BUCKETS[k] == rows:
            return self.latency[:, k]
        # Rows between two buckets (or beyond the last): computed once per row count, then kept — at
        # most `max_query_rows` columns, so the first query of a size pays and the rest do not.
        column = self._by_rows.get(rows)
        if column is None:
            column = np.fromiter(
                (v.profiled_ms(rows) for v in self.variants), dtype=np.float64, count=len(self)
            )
            self._by_rows[rows] = column
        return column

    def at_reference(self) -> tuple[CandidateIndex, int]:
        """(the variants at least as accurate as their model's reference accuracy, how many were left
        out), built once per index."""
        if self._at_reference is None:
            kept = [v for v in self.variants if v.accuracy >= _reference(v)]
            self._at_reference = (CandidateIndex(kept), len(self.variants) - len(kept))
        return self._at_reference

    def placement(self, snapshot: Snapshot) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(has an active instance, has any instance, has a usable instance) per variant, cached for
        this snapshot object."""
        if self._placement is not None and self._placement[0] == id(snapshot):
            return self._placement[1], self._placement[2], self._placement[3]
        active_ids, placed_ids, usable_ids = (
            snapshot.active_ids(),
            snapshot.placed_ids(),
            snapshot.usable_ids(),
        )
        active = np.fromiter((v.id in active_ids for v in self.variants), dtype=bool, count=len(self))
        placed = np.fromiter((v.id in placed_ids for v in self.variants), dtype=bool, count=len(self))
        usable = np.fromiter((v.id in usable_ids for v in self.variants), dtype=bool, count=len(self))
        self._placement = (id(snapshot), active, placed, usable)
        return active, placed, usable


def get_variant(
    req: Requirements,
    rows: int,
    candidates: Iterable[VariantProfile] | CandidateIndex,
    snapshot: Snapshot,
    *,
    prefer: Prefer = "cost",
    saturated: frozenset[str] = frozenset(),
) -> Decision:
    """Choose the variant (and, for a cold one, the worker to load it on) for one query.

    `prefer` orders the active variants that meet the query: cheapest per query first, or fastest.
    `saturated` are variants whose queue is full right now: treated like overloaded instances.
    """
    index = candidates if isinstance(candidates, CandidateIndex) else CandidateIndex(candidates)
    if req.at_reference and len(index):
        return _at_reference(req, rows, index, snapshot, prefer, saturated)
    if not len(index):
        raise requirements_unmet(req, rows, [])
    latency = index.latency_at(rows)
    ok = _meeting(req, rows, index, latency, saturated)
    active, placed, usable = index.placement(snapshot)
    hot = np.flatnonzero(ok & active)
    if hot.size:
        primary, secondary = (index.cost, latency) if prefer == "cost" else (latency, index.cost)
        best = int(hot[np.lexsort((index.ids[hot], secondary[hot], primary[hot]))[0]])
        why = "cheapest" if prefer == "cost" else "fastest"
        return Decision(
            variant=index.variants[best],
            action="active",
            worker=None,
            reason=f"{why} active variant meeting the requirements",
        )

    # An instance that is loading, overloaded or interfered still serves (or soon will): the query
    # queues for it rather than loading another instance. Adding capacity is the planner's alone, on
    # the demand it counts (a query later shed for a full queue included), so that a query-path load
    # and a planner removal never undo each other. Cold loads happen only when nothing placed can serve.
    queued = np.flatnonzero(ok & usable)
    if queued.size:
        best = int(queued[np.lexsort((index.ids[queued], latency[queued]))[0]])
        return Decision(
            variant=index.variants[best],
            action="active",
            worker=None,
            reason="no active instance meets the requirements: queued for a loading, overloaded or "
            "interfered instance (adding capacity is the planner's)",
        )
    return _cold_load(index, ok, placed, latency, snapshot)


def _meeting(
    req: Requirements, rows: int, index: CandidateIndex, latency: np.ndarray, saturated: frozenset[str]
) -> np.ndarray:
    """Which candidates meet the query (a mask over `index`): its requirements, not dominated where an
    undominated one meets them too, and not saturated. None: a 422 with the closest numbers, or a 503
    when all that meet it are at their queue limit."""
    ok = np.ones(len(index), dtype=bool)
    if req.min_accuracy is not None:
        ok &= index.accuracy >= req.min_accuracy
    if req.slo_ms is not None:
        ok &= latency <= req.slo_ms
    if req.max_cost is not None:
        ok &= index.cost * rows <= req.max_cost
    if not ok.any():
        raise requirements_unmet(req, rows, list(index.variants))
    # Dominated variants lose to another on every profiled axis; they stay only as a fallback for the
    # rare query whose batch size makes the dominating one miss the latency bound.
    undominated = ok & ~index.dominated
    if undominated.any():
        ok = undominated
    if saturated:
        ok_ids = {str(index.ids[i]) for i in np.flatnonzero(ok)}
        if ok_ids <= saturated:
            raise Overloaded(
                "every variant that meets the query is at its queue limit", variants=sorted(ok_ids)
            )
        ok &= np.fromiter((i not in saturated for i in index.ids), dtype=bool, count=len(index))
    return ok


def _cold_load(
    index: CandidateIndex, ok: np.ndarray, placed: np.ndarray, latency: np.ndarray, snapshot: Snapshot
) -> Decision:
    """Nothing placed can serve the query: load the satisfying variant with the lowest load + inference
    latency (one not placed anywhere first) on the least-utilized live worker of its kind with room."""
    cold = np.flatnonzero(ok & ~placed)
    pool = cold if cold.size else np.flatnonzero(ok)
    order = pool[np.lexsort((index.ids[pool], (index.load_ms + latency)[pool]))]
    for i in order:
        variant = index.variants[int(i)]
        worker = least_utilized_worker(variant, snapshot.workers)
        if worker is not None:
            return Decision(
                variant=variant,
                action="load",
                worker=worker,
                reason="no active variant meets the requirements: loading the one with "
                "the lowest load + inference latency",
            )
    kinds = sorted({index.variants[int(i)].hardware for i in order})
    raise Unavailable(
        f"no live worker of hardware kind {', '.join(kinds)} can host a satisfying variant", hardware=kinds
    )


def _reference(variant: VariantProfile) -> float:
    """The accuracy floor of a variant's model; none while its reference is unknown."""
    return variant.reference_accuracy if variant.reference_accuracy is not None else -math.inf


def _at_reference(
    req: Requirements,
    rows: int,
    index: CandidateIndex,
    snapshot: Snapshot,
    prefer: Prefer,
    saturated: frozenset[str],
) -> Decision:
    """`get_variant` over the variants as accurate as their model (lossy ones left out), and a reason
    that says how many were left out and why."""
    kept, left_out = index.at_reference()
    why = (
        f"{left_out} variant(s) less accurate than the registered model left out: the query states no "
        "accuracy and the app does not allow lossy variants (lossy: false)"
    )
    loose = Requirements(req.slo_ms, req.min_accuracy, req.max_cost)
    if not len(kept):
        closest = requirements_unmet(loose, rows, list(index.variants))
        raise RequirementsUnmet(f"{closest.message}: {why}", **closest.details)
    try:
        decision = get_variant(loose, rows, kept, snapshot, prefer=prefer, saturated=saturated)
    except RequirementsUnmet as exc:
        if left_out:
            exc.message = f"{exc.message}; {why}"
        raise
    if not left_out:
        return decision
    return Decision(decision.variant, decision.action, decision.worker, f"{decision.reason}; {why}")


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
