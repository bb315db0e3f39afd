"""The ILP of `ilp.py` as arrays: its columns (p_j, m_j per variant, with bounds and prices) and its
rows (each model's capacity (1) with a shortfall column, warm floors, memory per hardware kind (3)),
built from a snapshot in a fixed order so that the same snapshot gives the same problem."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np
from scipy.optimize import LinearConstraint
from scipy.sparse import coo_array

from infaas.policy.selection import InstanceView
from infaas.schemas.variants import VariantProfile
from services.planner.policies.pressure import Pressure, assess, unit_capacity
from services.planner.policies.snapshot import (
    CAPACITY_STATES,
    ClusterSnapshot,
    ModelDemand,
    Placement,
    ScalingConfig,
    cost_per_s,
    eligible,
    floor_instances,
    running_counts,
)


@dataclass(frozen=True)
class Columns:
    """The variables p_j, m_j of every variant j (in snapshot order) and what bounds and prices them."""

    variants: list[tuple[ModelDemand, VariantProfile]]
    big_n: np.ndarray
    """N_j: the instances running now."""
    unit: list[float]
    """Q_j: one instance's capacity at the batch its traffic forms under the SLO, not its saturation."""
    ub_p: np.ndarray
    ub_m: np.ndarray
    cost: np.ndarray
    """C_j in $/hour: $/s values (~1e-5) sit below HiGHS's absolute tolerances and would blur the optimum."""
    load_s: np.ndarray
    c: np.ndarray
    """The objective over (p, m)."""
    by_model: dict[str, list[int]]
    pressures: dict[str, Pressure]

    @property
    def n(self) -> int:
        return len(self.variants)


def columns(
    variants: list[tuple[ModelDemand, VariantProfile]],
    snapshot: ClusterSnapshot,
    config: ScalingConfig,
    placement: Placement,
) -> Columns:
    counts = running_counts(snapshot.instances)
    big_n = np.array([counts.get(v.id, 0) for _, v in variants], dtype=np.float64)
    pressures = model_pressures(snapshot, config)
    unit = [unit_capacity(v, d, snapshot, config).rows_per_s for d, v in variants]
    # (4) tightened: nothing of a model missing its SLO is removed, nor a recently loaded instance.
    young = Counter(vid for p in pressures.values() for vid, _ in p.young)
    ub_m = np.array(
        [
            0 if pressures[d.model].hold else max(0, big_n[j] - young[v.id])
            for j, (d, v) in enumerate(variants)
        ],
        dtype=np.float64,
    )
    cost = np.array([cost_per_s(v) * 3600 for _, v in variants])
    load_s = np.array([v.load_ms / 1000 for _, v in variants])
    ub_p = np.array(
        [len(placement.candidates(v)) if eligible(v, d, config.slo_share) else 0 for d, v in variants],
        dtype=np.float64,
    )
    by_model: dict[str, list[int]] = {}
    for j, (d, _) in enumerate(variants):
        by_model.setdefault(d.model, []).append(j)
    return Columns(
        variants=variants,
        big_n=big_n,
        unit=unit,
        ub_p=ub_p,
        ub_m=ub_m,
        cost=cost,
        load_s=load_s,
        c=np.concatenate([cost * (1 + config.lam * load_s), -cost]),
        by_model=by_model,
        pressures=pressures,
    )


class Rows:
    """The constraint matrix, built row by row: columns p_j, m_j (j < n), then s_i and z_i."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.rows: list[int] = []
        self.cols: list[int] = []
        self.vals: list[float] = []
        self.lower: list[float] = []
        self.upper: list[float] = []

    def entry(self, col: int, value: float) -> None:
        """One entry of the row the next `add` closes."""
        self.rows.append(len(self.lower))
        self.cols.append(col)
        self.vals.append(value)

    def add(self, entries: list[tuple[int, float]], lo: float, hi: float) -> None:
        """A row over δ_j = p_j − m_j: lo ≤ Σ value·δ_j (+ entries already given) ≤ hi."""
        r = len(self.lower)
        for j, value in entries:
            self.rows.extend((r, r))
            self.cols.extend((j, self.n + j))
            self.vals.extend((value, -value))
        self.lower.append(lo)
        self.upper.append(hi)

    def constraints(self, width: int) -> list[LinearConstraint]:
        if not self.lower:
            return []
        a = coo_array((self.vals, (self.rows, self.cols)), shape=(len(self.lower), width)).tocsr()
        return [LinearConstraint(a, np.array(self.lower), np.array(self.upper))]


def capacity_rows(
    x: Columns, rows: Rows, snapshot: ClusterSnapshot, config: ScalingConfig, placement: Placement
) -> tuple[list[str], list[float]]:
    """Rows (1) with their shortfall columns, the warm floors and (3); returns the models with a load
    row, in the order of their shortfall columns, and the capacity each needs."""
    short_of: list[str] = []
    needs: list[float] = []
    for d in snapshot.demands:
        members = x.by_model.get(d.model, [])
        if d.load_qps > 0:  # (1), with an elastic shortfall column priced far above any real capacity
            q = [(j, x.unit[j]) for j in members]
            have = x.pressures[d.model].effective
            rows.entry(2 * x.n + len(short_of), 1.0)
            short_of.append(d.model)
            rows.add(q, config.slack_threshold * d.load_qps - have, np.inf)
            needs.append(config.slack_threshold * d.load_qps)
        floor = floor_instances(d, config)
        if floor and (d.load_qps > 0 or any(x.big_n[j] for j in members)):
            rows.add([(j, 1.0) for j in members], floor - sum(x.big_n[j] for j in members), np.inf)
    for kind in sorted({v.hardware for _, v in x.variants}):  # (3), memory per hardware kind
        free = sum(placement.free[w] for w, view in placement.workers.items() if view.hardware == kind)
        entries = [
            (j, float(v.peak_memory_bytes)) for j, (_, v) in enumerate(x.variants) if v.hardware == kind
        ]
        rows.add(entries, -np.inf, float(free))
    return short_of, needs


def model_pressures(snapshot: ClusterSnapshot, config: ScalingConfig) -> dict[str, Pressure]:
    """Each model's pressure (`pressure.py`): capacity at realized batches, demand, holds."""
    variants = {v.id: d.model for d in snapshot.demands for v in d.variants}
    held: dict[str, list[InstanceView]] = {}
    for i in snapshot.instances:
        if i.variant_id in variants and i.state in CAPACITY_STATES:
            held.setdefault(variants[i.variant_id], []).append(i)
    return {d.model: assess(d, held.get(d.model, []), snapshot, config) for d in snapshot.demands}
