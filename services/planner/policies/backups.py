"""FailLite's proactive step (§3.2): which variant of each critical app's family to keep loaded, idle, as
a **warm backup**, and on which worker — an ILP solved with HiGHS through `scipy.optimize.milp`.

Vocabulary of FailLite's Table 1, with our names: an *application* is an app's family (its variants that
answer the same queries: every variant of every model of the app with one input signature); K = the
critical apps; d_ij = the variant's peak memory (the one resource kind r the executors account for);
c_k = the worker's room for backups; a_ij = accuracy normalized within the family (a / max a); q_i = the
app's request rate; p_i = the workers that host its primaries; α = the share of capacity kept for cold
loads (progressive failover, `failover.py`).

    max  Σ_i Σ_j Σ_k (B + a_ij·(q_i + 1) + s_ijk) · x_ijk
    s.t. Σ_i Σ_j d_ij·x_ijk ≤ c_k               ∀k     (2) a worker's room
         Σ_i Σ_j Σ_k d_ij·x_ijk ≤ (1−α)·Σ_k c_k        (3) α kept for cold backups
         x_ijk = 0 for k ∈ p_i                          (4) never beside a primary (left out of the model)
         Σ_j Σ_k x_ijk ≤ 1                      ∀i     (5) one backup
         l_ij ≤ L_i where x_ijk = 1                     (6) latency SLO (left out of the model)

Deviations, each for a reason: (5) is `≤ 1` with a bonus B larger than any accuracy term, so that an app
no worker can take leaves the others placed (the paper's `= 1` makes the whole problem infeasible) and the
unplaced one is said, not hidden; q_i + 1 so that an idle critical app still prefers its most accurate
backup; s_ijk, a small bonus for the backup already loaded, so that a re-plan does not move backups around
for a tie.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, milp
from scipy.sparse import coo_array

from infaas.policy.selection import USABLE_STATES, InstanceView, WorkerView
from infaas.schemas.variants import VariantProfile

ALPHA = 0.1
"""FailLite's fault-tolerance parameter: share of free capacity kept for cold backups."""
KEEP_BONUS = 1e-3
"""s_ijk for the backup already loaded: less than any accuracy difference worth a reload."""


@dataclass(frozen=True, slots=True)
class Family:
    """One application as failover sees it: an app's variants that answer the same queries."""

    app: str
    critical: bool
    variants: tuple[VariantProfile, ...]
    """Eligible backups: ready, of the app's accuracy floor, meeting its latency SLO at batch 1."""
    primaries: frozenset[str] = frozenset()
    """p_i: workers hosting its serving instances (not its backup)."""
    rate_qps: float = 0.0
    """q_i: queries/s the app received over the planner's window."""
    members: frozenset[str] = frozenset()
    """Every variant of the family's models, eligible as a backup or not: what a failed worker may have
    taken from this family (`app` is a label: `app[signature][task]` where an app has several)."""

    def normalized(self) -> dict[str, float]:
        """a_ij: accuracy over the family's best (FailLite normalizes within the family)."""
        best = max((v.accuracy for v in self.variants), default=0.0)
        return {v.id: (v.accuracy / best if best > 0 else 1.0) for v in self.variants}

    def full(self) -> VariantProfile:
        """The full-size backup: the most accurate variant, the larger on a tie."""
        return max(self.variants, key=lambda v: (v.accuracy, v.peak_memory_bytes, v.id))


@dataclass(frozen=True, slots=True)
class AppTerms:
    """What of an app decides its backups: its criticality and the answers it accepts."""

    critical: bool = False
    lossy: bool = False
    min_accuracy: float | None = None
    slo_ms: float | None = None


def eligible(v: VariantProfile, terms: AppTerms) -> bool:
    """May `v` answer for the app: as accurate as the app accepts by default (its floor, and unless it is
    lossy its model as registered: what its queries would get) and within its SLO at batch 1 ((6))."""
    if terms.min_accuracy is not None and v.accuracy < terms.min_accuracy:
        return False
    if terms.min_accuracy is None and not terms.lossy and v.accuracy < (v.reference_accuracy or 0.0):
        return False
    return terms.slo_ms is None or v.profiled_ms(1) <= terms.slo_ms


def _task_tag(task: str) -> str:
    """A family's name past its signature: the task, where it is not the default one."""
    return "" if task == "classification" else f"[{task}]"


def families(
    variants: Iterable[VariantProfile],
    instances: Iterable[InstanceView],
    terms: Mapping[str, AppTerms],
    rates: Mapping[str, float],
    *,
    backups: Iterable[tuple[str, str]] = (),
) -> list[Family]:
    """One `Family` per app (per app, input signature and task when it has several), with the workers of its
    primaries: those hosting its usable instances, the `backups` ((variant, worker)) left out."""
    spare = set(backups)
    # Models of another task take the same inputs but answer other queries (infaas.core.tasks).
    groups: dict[tuple[str, str, str], list[VariantProfile]] = {}
    for v in variants:
        groups.setdefault((v.app, v.signature_key, v.task), []).append(v)
    signatures: dict[str, int] = {}
    for app, _, _ in groups:
        signatures[app] = signatures.get(app, 0) + 1
    hosts: dict[str, set[str]] = {}
    for i in instances:
        if i.state in USABLE_STATES and (i.variant_id, i.worker_id) not in spare:
            hosts.setdefault(i.variant_id, set()).add(i.worker_id)
    out = []
    for (app, signature, task), vs in sorted(groups.items()):
        app_terms = terms.get(app, AppTerms())
        ok = sorted((v for v in vs if eligible(v, app_terms)), key=lambda v: v.id)
        # Selection routes to a dominated variant only when no undominated one meets the query, loaded
        # or not: a dominated backup would sit idle while a query cold-loads its dominator.
        undominated = [v for v in ok if not v.dominated]
        out.append(
            Family(
                app=app if signatures[app] == 1 else f"{app}[{signature}]" + _task_tag(task),
                critical=app_terms.critical,
                variants=tuple(undominated or ok),
                primaries=frozenset(w for v in vs for w in hosts.get(v.id, ())),
                members=frozenset(v.id for v in vs),
                rate_qps=sum(rates.get(v.model, 0.0) for v in {v.model: v for v in vs}.values()),
            )
        )
    return out


def rooms(
    workers: Iterable[WorkerView],
    instances: Iterable[InstanceView],
    variants: Mapping[str, VariantProfile],
    *,
    draining: Iterable[str] = (),
    give_back: Iterable[tuple[str, str]] = (),
) -> list[Room]:
    """Each live worker's free memory (draining ones left out) and the variants it hosts; the memory of
    the instances in `give_back` ((variant, worker): warm backups that a new plan may move) counts as free."""
    hosts: dict[str, set[str]] = {}
    for i in instances:
        hosts.setdefault(i.worker_id, set()).add(i.variant_id)
    returned: dict[str, int] = {}
    for vid, worker in give_back:
        v = variants.get(vid)
        if v is not None and vid in hosts.get(worker, set()):
            returned[worker] = returned.get(worker, 0) + v.peak_memory_bytes
            hosts[worker].discard(vid)
    skip = set(draining)
    return [
        Room(
            w.id,
            w.hardware,
            w.memory_bytes - w.memory_used_bytes + returned.get(w.id, 0),
            frozenset(hosts.get(w.id, ())),
        )
        for w in workers
        if w.id not in skip
    ]


@dataclass(frozen=True, slots=True)
class Room:
    """One live worker's free memory for backups (its backups' own memory included: they may move)."""

    worker: str
    hardware: str
    free_bytes: int
    hosts: frozenset[str] = frozenset()
    """Variants it already runs (primaries): one instance of a variant per worker, the executor's rule."""


@dataclass(frozen=True, slots=True)
class Backup:
    app: str
    variant: str
    worker: str
    accuracy: float
    """Normalized within the family."""
    reason: str


@dataclass(frozen=True)
class WarmPlan:
    backups: tuple[Backup, ...]
    unplaced: Mapping[str, str]
    """Critical app → why it has no warm backup."""
    budget_bytes: int
    """(1 − α) · Σ c_k: what warm backups may take together."""


def fits(v: VariantProfile, room: Room) -> bool:
    return room.hardware == v.hardware and v.id not in room.hosts and room.free_bytes >= v.peak_memory_bytes


def place_warm(
    families: Sequence[Family],
    rooms: Sequence[Room],
    *,
    alpha: float = ALPHA,
    current: Mapping[str, tuple[str, str]] | None = None,
) -> WarmPlan:
    """The proactive ILP over the critical families; `current`: app → (variant, worker) of the warm
    backups loaded now (kept on a tie)."""
    current = current or {}
    budget = int((1 - alpha) * sum(max(0, r.free_bytes) for r in rooms))
    critical = sorted((f for f in families if f.critical), key=lambda f: f.app)
    columns, unplaced = _warm_columns(critical, rooms)
    if not columns:
        return WarmPlan((), unplaced, budget)
    accuracy = [f.normalized() for f in critical]
    result = _solve_warm(critical, rooms, columns, accuracy, current, budget)
    if result.x is None:  # x = 0 is always feasible, so only a solver failure lands here
        return WarmPlan((), {f.app: f"the backup ILP failed: {result.message}" for f in critical}, budget)
    chosen = [columns[c] for c in np.flatnonzero(result.x > 0.5)]
    backups = _warm_backups(critical, rooms, chosen, accuracy, budget, alpha)
    placed = {b.app for b in backups}
    for family in critical:
        if family.app not in placed and family.app not in unplaced:
            unplaced[family.app] = (
                f"no room within the warm-backup budget ({_mb(budget)}, α = {alpha:g} kept for cold "
                "loads) once the other critical apps' backups are placed"
            )
    return WarmPlan(tuple(backups), unplaced, budget)


_Column = tuple[int, VariantProfile, int]
"""One binary x: (critical family index, variant, room index)."""


def _warm_columns(critical: list[Family], rooms: Sequence[Room]) -> tuple[list[_Column], dict[str, str]]:
    """Every (family, variant, room) a warm backup could take ((4): never beside a primary), and why
    each family that has none has none."""
    columns: list[_Column] = []
    unplaced: dict[str, str] = {}
    for fi, family in enumerate(critical):
        options = [
            (fi, v, ri)
            for v in family.variants
            for ri, room in enumerate(rooms)
            if room.worker not in family.primaries and fits(v, room)
        ]
        if not family.primaries:
            unplaced[family.app] = "no primary instance yet: nothing to back up"
            continue
        if not family.variants:
            unplaced[family.app] = "no eligible variant (ready, accurate and fast enough) to back it up"
        elif not options:
            unplaced[family.app] = (
                "no worker other than its primary's has room for any of its "
                f"{len(family.variants)} eligible variants"
            )
        columns.extend(options)
    return columns, unplaced


def _solve_warm(
    critical: list[Family],
    rooms: Sequence[Room],
    columns: list[_Column],
    accuracy: list[dict[str, float]],
    current: Mapping[str, tuple[str, str]],
    budget: int,
) -> Any:
    """HiGHS over the columns: the most apps placed, then accuracy weighted by rate, then the backups
    already loaded."""
    bonus = 2.0 * (1 + max(f.rate_qps for f in critical))  # B: placing one more app beats any accuracy
    gain = np.array(
        [
            bonus
            + accuracy[fi][v.id] * (critical[fi].rate_qps + 1)
            + (KEEP_BONUS if current.get(critical[fi].app) == (v.id, rooms[ri].worker) else 0.0)
            for fi, v, ri in columns
        ]
    )
    n = len(columns)
    memory = np.array([float(v.peak_memory_bytes) for _, v, _ in columns])
    col = np.arange(n)
    per_room = coo_array((memory, ([ri for _, _, ri in columns], col)), shape=(len(rooms), n))
    per_app = coo_array((np.ones(n), ([fi for fi, _, _ in columns], col)), shape=(len(critical), n))
    constraints = [
        LinearConstraint(per_room.tocsr(), -np.inf, np.array([float(r.free_bytes) for r in rooms])),  # (2)
        LinearConstraint(memory.reshape(1, -1), -np.inf, float(budget)),  # (3)
        LinearConstraint(per_app.tocsr(), -np.inf, np.ones(len(critical))),  # (5)
    ]
    return milp(
        -gain, constraints=constraints, integrality=np.ones(n), bounds=Bounds(np.zeros(n), np.ones(n))
    )


def _warm_backups(
    critical: list[Family],
    rooms: Sequence[Room],
    chosen: list[_Column],
    accuracy: list[dict[str, float]],
    budget: int,
    alpha: float,
) -> list[Backup]:
    """The chosen columns as backups, by app, each with why it is where it is."""
    backups = []
    for fi, v, ri in sorted(chosen, key=lambda c: critical[c[0]].app):
        family, room = critical[fi], rooms[ri]
        full = family.full()
        size = "the full-size variant" if v.id == full.id else f"a smaller variant than {full.id}"
        backups.append(
            Backup(
                app=family.app,
                variant=v.id,
                worker=room.worker,
                accuracy=accuracy[fi][v.id],
                reason=(
                    f"critical app: warm backup {v.id} ({size}, accuracy {accuracy[fi][v.id]:.3f} of the "
                    f"family's best) on {room.worker}, away from its primary on "
                    f"{', '.join(sorted(family.primaries)) or 'no worker'}; warm backups take "
                    f"{_mb(sum(c[1].peak_memory_bytes for c in chosen))} of the "
                    f"{_mb(budget)} left after α = {alpha:g} kept for cold loads"
                ),
            )
        )
    return backups


def _mb(n: int) -> str:
    return f"{n / 2**20:.1f} MiB"
