"""FailLite's progressive failover (§3.3, Algorithm 1): when workers fail, which variant of each affected
app's family to load as its cold backup, and where — a greedy heuristic, fast enough to run on the
failure path — and which small variant to load first so that the app answers again soonest.

1. C = free memory of the live workers, D = Σ memory of each affected app's full-size backup,
   δ = C / D (δ ≥ 1: every app could get its full-size backup).
2. match: per app, the largest variant whose memory ≤ δ × its full-size variant's (else its smallest).
3. Per app (busiest first), from that variant down to the smallest: the first one that some worker can
   take, on the worker with the most room (worst fit, which leaves room everywhere for the next).
4. upgrade: per placed app, the most accurate variant that the room left on its worker can take instead.
5. Loading: the family's smallest variant first (lowest load time, hence MTTR), then the chosen one,
   which replaces it once active (`first` and `target` of a `Recovery`).

Pure: frozen inputs (`backups.Family`, `backups.Room`) in, a plan with a reason per app out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from infaas.schemas.variants import VariantProfile
from services.planner.policies.backups import Family, Room, fits


@dataclass(frozen=True, slots=True)
class Recovery:
    app: str
    target: tuple[str, str]
    """(variant, worker) chosen by Algorithm 1."""
    first: tuple[str, str] | None
    """(variant, worker) loaded before the target for a lower MTTR; None when the target is the smallest."""
    accuracy: float
    """The target's accuracy normalized within the family."""
    reason: str


@dataclass(frozen=True)
class FailoverPlan:
    delta: float
    recoveries: tuple[Recovery, ...]
    unrecovered: dict[str, str]
    """App → why no variant of it could be placed."""


def match(variants: Sequence[VariantProfile], full: VariantProfile, delta: float) -> VariantProfile:
    """The variant whose memory is closest to δ × the full-size one's from below (FailLite's match())."""
    by_size = sorted(variants, key=lambda v: (v.peak_memory_bytes, v.accuracy, v.id))
    within = [v for v in by_size if v.peak_memory_bytes <= delta * full.peak_memory_bytes]
    return within[-1] if within else by_size[0]


def worst_fit(v: VariantProfile, rooms: dict[str, Room]) -> Room | None:
    """The live worker with the most room that can take `v`."""
    fitting = [r for r in rooms.values() if fits(v, r)]
    return max(fitting, key=lambda r: (r.free_bytes, r.worker)) if fitting else None


def _take(rooms: dict[str, Room], worker: str, v: VariantProfile) -> None:
    room = rooms[worker]
    rooms[worker] = Room(worker, room.hardware, room.free_bytes - v.peak_memory_bytes, room.hosts | {v.id})


def _give(rooms: dict[str, Room], worker: str, v: VariantProfile) -> None:
    room = rooms[worker]
    rooms[worker] = Room(worker, room.hardware, room.free_bytes + v.peak_memory_bytes, room.hosts - {v.id})


def progressive(families: Sequence[Family], live: Sequence[Room]) -> FailoverPlan:
    """Algorithm 1 over the affected apps (those with no warm backup and nothing left serving) and the
    live workers' rooms."""
    rooms = {r.worker: r for r in live}
    affected = sorted((f for f in families if f.variants), key=lambda f: (-f.rate_qps, f.app))
    unrecovered = {f.app: "no eligible variant to fail over to" for f in families if not f.variants}
    capacity = sum(max(0, r.free_bytes) for r in live)
    demand = sum(f.full().peak_memory_bytes for f in affected)
    delta = capacity / demand if demand > 0 else 1.0
    placed: list[tuple[Family, VariantProfile, str, VariantProfile]] = []  # family, variant, worker, matched
    for family in affected:
        matched = match(family.variants, family.full(), delta)
        downward = sorted(
            (v for v in family.variants if v.peak_memory_bytes <= matched.peak_memory_bytes),
            key=lambda v: (v.peak_memory_bytes, v.accuracy, v.id),
            reverse=True,
        )
        for v in downward:
            room = worst_fit(v, rooms)
            if room is not None:
                _take(rooms, room.worker, v)
                placed.append((family, v, room.worker, matched))
                break
        else:
            unrecovered[family.app] = (
                f"no live worker has room for any variant up to {matched.id} "
                f"({len(rooms)} live, {capacity / 2**20:.1f} MiB free in all)"
            )
    recoveries = []
    for family, v, worker, matched in placed:
        _give(rooms, worker, v)
        better = [u for u in family.variants if fits(u, rooms[worker]) and u.accuracy >= v.accuracy]
        chosen = max(better, key=lambda u: (u.accuracy, -u.peak_memory_bytes, u.id), default=v)
        _take(rooms, worker, chosen)
        recoveries.append(_recovery(family, chosen, worker, matched, v, delta, rooms))
    return FailoverPlan(delta, tuple(recoveries), unrecovered)


def _recovery(
    family: Family,
    chosen: VariantProfile,
    worker: str,
    matched: VariantProfile,
    placed: VariantProfile,
    delta: float,
    rooms: dict[str, Room],
) -> Recovery:
    accuracy = family.normalized()[chosen.id]
    steps = [f"δ = {delta:.2f} matched {matched.id}"]
    if placed.id != matched.id:
        steps.append(f"no worker could take it, so {placed.id}")
    steps.append(f"placed worst-fit on {worker}")
    if chosen.id != placed.id:
        steps.append(f"upgraded to {chosen.id}, which the room left there takes")
    smallest = min(family.variants, key=lambda v: (v.peak_memory_bytes, -v.accuracy, v.id))
    first = None
    if smallest.id != chosen.id:
        # The small one goes where the target goes when both fit there, else wherever it fits: it only
        # bridges the target's load time, and is unloaded once the target is active.
        if fits(smallest, rooms[worker]):
            first = (smallest.id, worker)
        else:
            spare = worst_fit(smallest, rooms)
            first = (smallest.id, spare.worker) if spare is not None else None
        if first is not None:
            _take(rooms, first[1], smallest)
            steps.append(f"{smallest.id} loads first on {first[1]} (the smallest, the lowest MTTR)")
        else:
            steps.append(f"no room to load {smallest.id} first, so {chosen.id} loads directly")
    return Recovery(
        app=family.app,
        target=(chosen.id, worker),
        first=first,
        accuracy=accuracy,
        reason=f"progressive failover: {'; '.join(steps)} (accuracy {accuracy:.3f} of the family's best)",
    )
