"""The exact model autoscaler: INFaaS's ILP (§4.2.1) solved with HiGHS through `scipy.optimize.milp`.

δ_j = p_j − m_j with integers p_j, m_j ≥ 0 (instances added / removed of variant j), so that
max(δ_j, 0) = p_j in the objective (adding and removing the same variant at once only costs more, so the
optimum never does both):

    minimize   Σ_j C_j·(1 + λ·T_load_j)·p_j − C_j·m_j                       (= Σ Cost(δ_j))
    subject to Σ_{j ∈ model i} Q_j·(N_j + δ_j) ≥ slack_threshold·L_i    for every model i      (1)
               p_j = 0 when T_inf_j > S_i or accuracy_j < min_i                                 (2)
               Σ_{j on kind h} R_j·(N_j + δ_j) ≤ R_total_h, memory, per hardware kind h        (3)
               m_j ≤ N_j                                                                        (4)
               p_j ≤ workers of j's kind that could take one more instance (one per worker)
               Σ_{j ∈ model i} (N_j + δ_j) ≥ floor_i (warm)  for models with load or instances

Constraint (1) is read per model ("for all i"): each model's queries are served by its own variants.
Constraint (3) is aggregated per hardware kind; placing the chosen instances on workers is then a
first-fit pass, and whatever does not fit becomes a request for a worker.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.optimize import Bounds, milp

from infaas.schemas.variants import VariantProfile
from services.planner.policies.ilp_problem import Columns, Rows, capacity_rows, columns, model_pressures
from services.planner.policies.snapshot import (
    CAPACITY_STATES,
    Action,
    ClusterSnapshot,
    Decision,
    Placement,
    Plan,
    ScalingConfig,
    action_cost,
    cost_per_s,
    eligible,
    fmt_cost,
    running_counts,
    scale_down_wait_s,
)


@dataclass(frozen=True, slots=True)
class Solution:
    """The solver's answer: δ per variant id, its objective, and how it went."""

    delta: Mapping[str, int]
    objective: float
    status: str
    solve_s: float
    feasible: bool
    """Every model's load is carried (no shortfall)."""
    shortfall: Mapping[str, float] = field(default_factory=dict)
    """qps per model that no assignment on the live workers can carry: ask for workers."""


def solve(snapshot: ClusterSnapshot, config: ScalingConfig, *, time_limit_s: float = 10.0) -> Solution:
    """Solve the ILP over every model in the snapshot (pure; wall time is reported, not used)."""
    variants = [(d, v) for d in snapshot.demands for v in d.variants]
    if not variants:
        return Solution({}, 0.0, "nothing to scale", 0.0, feasible=True)
    placement = Placement(snapshot)
    x = columns(variants, snapshot, config, placement)
    rows = Rows(len(variants))
    short_of, needs = capacity_rows(x, rows, snapshot, config, placement)
    return _optimize(x, rows, short_of, needs, config, time_limit_s)


def _optimize(
    x: Columns,
    rows: Rows,
    short_of: list[str],
    needs: list[float],
    config: ScalingConfig,
    time_limit_s: float,
) -> Solution:
    """Price the shortfall, solve, and read the solution.

    Without shortfall columns one model that cannot be served (no eligible variant, no room) would make
    the whole problem infeasible and stall every other model's scaling. Shortfall s_i of model i is
    allowed only with a binary z_i priced above any scale-up at all (M), so a plan that carries every
    load always wins; among short plans, s is priced per qps so the rest is still covered."""
    n = x.n
    per_qps = [x.cost[j] * (1 + config.lam * x.load_s[j]) / x.unit[j] for j in range(n) if x.unit[j] > 0]
    k = len(short_of)
    big_m = float(np.dot(x.c[:n], np.minimum(x.ub_p, 1e3))) + 1.0
    penalty = 10 * max([*per_qps, 1e-9])
    for i, need in enumerate(needs):  # s_i − need_i·z_i ≤ 0
        rows.entry(2 * n + i, 1.0)
        rows.entry(2 * n + k + i, -need)
        rows.add([], -np.inf, 0.0)
    c = np.concatenate([x.c, np.full(k, penalty), np.full(k, big_m)])
    lower_bounds = np.zeros(2 * n + 2 * k)
    start = time.perf_counter()
    constraints = rows.constraints(2 * n + 2 * k)

    # Models that cannot be carried even with every candidate worker (before memory) get their
    # shortfall columns at once; the others only if the whole problem turns out infeasible.
    hopeless = np.array(
        [
            x.pressures[m].effective + sum(x.unit[j] * x.ub_p[j] for j in x.by_model.get(m, [])) < needs[i]
            for i, m in enumerate(short_of)
        ],
        dtype=bool,
    )

    z_lower = lower_bounds.copy()
    z_lower[2 * n + k :] = hopeless  # a hopeless model is short whatever else is chosen: no branching on it
    c[2 * n + k :][hopeless] = 0.0  # …and a constant M in the objective would only blur relative gaps

    def run(elastic: bool) -> Any:
        open_ = np.ones(k, dtype=bool) if elastic else hopeless
        slack_ub = np.concatenate([np.where(open_, np.inf, 0.0), open_.astype(float)])
        return milp(
            c,
            constraints=constraints,
            integrality=np.concatenate([np.ones(2 * n), np.zeros(k), np.ones(k)]),
            bounds=Bounds(z_lower, np.concatenate([x.ub_p, x.ub_m, slack_ub])),
            options={"time_limit": time_limit_s, "mip_rel_gap": 0.0},
        )

    result = run(elastic=False)
    if result.status == 2:  # infeasible
        result = run(elastic=True)
    elapsed = time.perf_counter() - start
    if result.x is None:
        return Solution({}, float("nan"), result.message, elapsed, feasible=False)
    chosen = np.rint(result.x[: 2 * n]).astype(int)
    delta = {
        v.id: int(chosen[j] - chosen[n + j])
        for j, (_, v) in enumerate(x.variants)
        if chosen[j] != chosen[n + j]
    }
    shortfall = {m: float(result.x[2 * n + i]) for i, m in enumerate(short_of) if result.x[2 * n + i] > 1e-6}
    objective = float(np.dot(c[: 2 * n], result.x[: 2 * n])) / 3600
    return Solution(delta, objective, result.message, elapsed, feasible=not shortfall, shortfall=shortfall)


def plan(
    snapshot: ClusterSnapshot,
    pending: Mapping[str, float],
    config: ScalingConfig,
    *,
    time_limit_s: float = 10.0,
) -> Plan:
    """The ILP's optimum turned into per-model decisions with the same wait before scale-downs as the
    greedy policy; when no assignment is feasible, ask for a worker for each model short of capacity."""
    solution = solve(snapshot, config, time_limit_s=time_limit_s)
    if math.isnan(solution.objective):  # the solver gave no answer at all (time limit): keep what runs
        return Plan(decisions=_requests(snapshot, config, solution.status, None), pending={})
    placement = Placement(snapshot)
    decisions: list[Decision] = list(_requests(snapshot, config, solution.status, solution.shortfall))
    still_pending: dict[str, float] = {}
    counts = running_counts(snapshot.instances)
    pressures = model_pressures(snapshot, config)
    for d in snapshot.demands:
        by_id = {v.id: v for v in d.variants}
        delta = {vid: k for vid, k in solution.delta.items() if vid in by_id}
        if not delta:
            continue
        pressure = pressures[d.model]
        scaling_up = pressure.scale_up
        cost = sum(action_cost(by_id[vid], k, config.lam) for vid, k in delta.items())
        loads: list[tuple[str, str]] = []
        short: list[str] = []
        for vid, k in sorted(delta.items()):
            if k > 0:
                workers = placement.candidates(by_id[vid])[:k]
                for w in workers:
                    placement.reserve(by_id[vid], w.id)
                    loads.append((vid, w.id))
                if len(workers) < k:
                    short.append(by_id[vid].hardware)
        unloads: list[tuple[str, str]] = []
        model_instances = [
            i for i in snapshot.instances if i.variant_id in by_id and i.state in CAPACITY_STATES
        ]
        for vid, k in sorted(delta.items()):
            if k < 0:
                unloads.extend((vid, w) for w in placement.victims(vid, model_instances, -k))
        action = _name(delta, counts, by_id)
        changes = ", ".join(f"{vid} {k:+d}" for vid, k in sorted(delta.items()))
        why = (
            f"ILP optimum ({solution.status.split('.')[0]}, {solution.solve_s * 1000:.0f} ms): {changes}; "
            f"cost {fmt_cost(cost)}; {pressure.why}"
        )
        decision = Decision(
            action=action, model=d.model, loads=tuple(loads), unloads=tuple(unloads), cost=cost, reason=why
        )
        if short:
            decisions.append(
                Decision(
                    action="request_worker",
                    model=d.model,
                    hardware=short[0],
                    reason=f"{why}; the chosen instances do not fit on the live {short[0]} workers",
                )
            )
        if scaling_up or not unloads:
            decisions.append(decision)
            continue
        key = f"{d.model}:ilp:{changes}"
        since = pending.get(key, snapshot.now)
        wait_s = scale_down_wait_s([by_id[v] for v, k in delta.items() if k < 0], config)
        if snapshot.now - since >= wait_s - 1e-6:
            decisions.append(decision)
        else:
            still_pending[key] = since
    return Plan(decisions=tuple(decisions), pending=still_pending)


def _name(delta: Mapping[str, int], counts: Mapping[str, int], by_id: Mapping[str, VariantProfile]) -> Action:
    """INFaaS's names for a δ: new instances of a running variant replicate; of another variant they
    upgrade (higher throughput than what runs) or downgrade; only removals remove."""
    added = [vid for vid, k in delta.items() if k > 0]
    running = [vid for vid in counts if vid in by_id]
    if not added:
        return "remove"
    if all(vid in counts for vid in added):
        return "replicate"
    if not running:
        return "load"
    new_q = max(by_id[vid].saturation_qps for vid in added if vid not in counts)
    return "upgrade" if new_q > max(by_id[vid].saturation_qps for vid in running) else "downgrade"


def _requests(
    snapshot: ClusterSnapshot, config: ScalingConfig, status: str, shortfall: Mapping[str, float] | None
) -> tuple[Decision, ...]:
    """A worker request per model the optimum leaves short (all short models when there is no optimum),
    of the kind whose eligible variant carries a qps most cheaply."""
    out = []
    pressures = model_pressures(snapshot, config)
    for d in snapshot.demands:
        pressure = pressures[d.model]
        if shortfall is not None and d.model not in shortfall:
            continue
        if shortfall is None and not pressure.scale_up:
            continue
        ok = [v for v in d.variants if eligible(v, d, config.slo_share) and v.saturation_qps > 0]
        if not ok:
            out.append(
                Decision(
                    action="request_worker",
                    model=d.model,
                    reason=f"no variant of {d.model} meets its SLO/accuracy: a worker would not help",
                )
            )
            continue
        kind = min(ok, key=lambda v: (cost_per_s(v) / v.saturation_qps, v.id)).hardware
        missing = f"{shortfall[d.model]:.1f} rows/s short" if shortfall is not None else status
        out.append(
            Decision(
                action="request_worker",
                model=d.model,
                hardware=kind,
                reason=f"ILP: {pressure.why}; cannot be carried on the live workers ({missing}); asking "
                f"for a {kind} worker",
            )
        )
    return tuple(out)
