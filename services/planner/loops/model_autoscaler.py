"""The model autoscaler loop (every `autoscale_interval_s`), and the worker requests it hands the worker
autoscaler (`worker_autoscaler.py`).

Each tick: hold the leader lease (else do nothing), observe (`observe.py`), decide with a
pure policy — the scaling policy, then interference mitigation (`policies/interference.py`) and
warm instances (`policies/warm.py`) for the models it left alone — record the decision with its
reason, carry it out, record the outcome. A model with a decision still being carried out is left
alone until it finishes, so two ticks never race. A tick whose read lacks a worker seen within a heartbeat
TTL that the store no longer lists at all plans nothing (Redis lost its keys, e.g. restarted empty:
planning then would replace instances that still serve); the hold is an event, once per episode.
Last, each serving instance of the models left alone gets the concurrency SERF predicts its rate needs
(`configure.py`).
Carrying out: loads first (`POST /v1/instances` on the chosen workers, concurrently), then drains
(`POST /v1/instances/{variant}/drain`) of the instances being replaced or removed — capacity only goes
once its replacement is active, and a drain serves everything that was queued for it.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Literal

import redis.asyncio as aioredis

from infaas.clients.executor import ExecutorClient
from infaas.policy.selection import InstanceView
from services.planner.event_log import EventLog
from services.planner.loops.claims import Claim, PipelineClaims
from services.planner.loops.cluster import ClusterReader
from services.planner.loops.configure import ConcurrencyTuner
from services.planner.loops.leader import LeaderLock
from services.planner.loops.observe import InstanceAges, KnownWorkers, LoadMeter, SloCache, observe
from services.planner.loops.parity import ParityKeeper
from services.planner.policies import greedy, ilp, interference, warm
from services.planner.policies.pressure import assess
from services.planner.policies.snapshot import (
    CAPACITY_STATES,
    ClusterSnapshot,
    Decision,
    Plan,
    ScalingConfig,
)

log = logging.getLogger("infaas.planner")

Policy = Callable[[ClusterSnapshot, Mapping[str, float], ScalingConfig], Plan]
POLICIES: dict[str, Policy] = {
    "greedy": greedy.plan,
    "ilp": ilp.plan,
    "horizontal": greedy.plan_horizontal,
}


@dataclass
class WorkerRequests:
    """Hardware kinds the model autoscaler found short, for the worker autoscaler: kind → (since, why)."""

    by_kind: dict[str, tuple[float, str]] = field(default_factory=dict)

    def ask(self, kind: str, now: float, reason: str) -> None:
        self.by_kind.setdefault(kind, (now, reason))

    def only(self, kinds: set[str]) -> None:
        """Keep only what the latest tick still lacks: a request an earlier tick made and a new worker
        or a scale-down has since answered must not start one more."""
        self.by_kind = {k: v for k, v in self.by_kind.items() if k in kinds}

    def take(self) -> dict[str, tuple[float, str]]:
        taken, self.by_kind = self.by_kind, {}
        return taken


class ModelAutoscaler:
    """One model-autoscaler loop (INFaaS's per-worker Model-Autoscaler, run centrally here)."""

    def __init__(
        self,
        *,
        redis: aioredis.Redis,
        lock: LeaderLock,
        meter: LoadMeter,
        slos: SloCache,
        executors: ExecutorClient,
        events: EventLog,
        policy: Literal["greedy", "ilp", "horizontal"],
        config: ScalingConfig,
        heartbeat_ttl_s: float,
        requests: WorkerRequests,
        interference_config: interference.InterferenceConfig | None = None,
        clock: Callable[[], float] = time.time,
        claims: PipelineClaims | None = None,
    ) -> None:
        self.redis = redis
        self.lock = lock
        self.meter = meter
        self.slos = slos
        self.executors = executors
        self.events = events
        self.policy = POLICIES[policy]
        self.policy_name = policy
        self.config = config
        self.heartbeat_ttl_s = heartbeat_ttl_s
        self.requests = requests
        self.clock = clock
        self.pending: dict[str, float] = {}
        self.busy: dict[str, asyncio.Task[None]] = {}
        self.asking: set[tuple[str, str | None]] = set()
        self.cluster = ClusterReader(ttl_s=heartbeat_ttl_s, parity=True)  # one round trip a tick
        self.ages = InstanceAges()
        self.holding: set[tuple[str, str]] = set()
        self.interference = interference_config or interference.InterferenceConfig(migrate_after_s=0.0)
        self.interfered_since: dict[interference.Key, float] = {}
        self.moved: dict[str, float] = {}
        # Warm backups (worker, variant) the failover loop keeps: idle by design, not capacity to scale.
        self.reserved: set[tuple[str, str]] = set()
        self.parity = ParityKeeper(redis=redis, executors=executors, events=events)
        self.known = KnownWorkers(heartbeat_ttl_s, clock())
        # Each serving instance's concurrency from SERF's prediction at its rate (`configure.py`).
        self.tuner = ConcurrencyTuner(executors=executors, events=events, clock=clock)
        self.missing: tuple[str, ...] = ()  # the workers the current hold waits for (one event per episode)
        # Models a planned pipeline holds: its tuner scales them (`claims.py`); said once per claim.
        self.claims = claims
        self.yielded: dict[str, Claim] = {}

    async def tick(self) -> list[Decision]:
        """One round: observe, decide, start carrying out. Returns the decisions started."""
        if not await self.lock.hold():
            return []
        try:
            read = await self.cluster.read(self.redis, now=self.clock())
        except Exception:
            self.known.failed()
            raise
        missing = self.known.missing_in(read.beats, read.now)
        snapshot = await observe(read, self.meter, self.slos, ages=self.ages)
        if missing:
            await self._hold_for(missing)
            return []
        if self.missing:
            log.info("the store lists every known worker again: planning resumes")
            self.missing = ()
        # Parity instances for apps with parity redundancy (`parity.py`).
        await self.parity.tick(snapshot, read.parity)
        if self.reserved:
            kept = tuple(i for i in snapshot.instances if (i.worker_id, i.variant_id) not in self.reserved)
            snapshot = replace(snapshot, instances=kept)
        self.busy = {m: t for m, t in self.busy.items() if not t.done()}
        owned = await self._yield_to_pipelines(snapshot.now)
        if self.busy or owned:  # plan only the models nobody else is changing or holds
            snapshot = replace(
                snapshot,
                demands=tuple(d for d in snapshot.demands if d.model not in self.busy.keys() | owned.keys()),
            )
        result = self.policy(snapshot, self.pending, self.config)
        self.pending = dict(result.pending)
        moves = interference.migrations(
            snapshot,
            self.interfered_since,
            self.interference,
            moved=self.moved,
            skip_models={d.model for d in result.decisions},
        )
        self.interfered_since, self.moved = dict(moves.since), dict(moves.moved)
        warming = warm.warm_up(
            snapshot, self.config, skip_models={d.model for d in (*result.decisions, *moves.decisions)}
        )
        decisions = (*result.decisions, *moves.decisions, *warming)
        slos = {d.model: d.slo_ms for d in snapshot.demands}
        numbers = _numbers(snapshot, {d.model for d in decisions}, self.config)
        asking: set[tuple[str, str | None]] = set()
        holding: set[tuple[str, str]] = set()
        for decision in decisions:
            if decision.action == "hold":
                # Said once per episode (the reason up to its changing numbers), never carried out.
                held = (decision.model, decision.reason.split(" while ")[0])
                holding.add(held)
                if held not in self.holding:
                    await self._record(decision, "decided", numbers=numbers.get(decision.model))
                continue
            if decision.action == "request_worker":
                # Asked again every tick until a worker joins: one event per episode, not one per second.
                key = (decision.model, decision.hardware)
                asking.add(key)
                if key not in self.asking:
                    await self._record(decision, "decided", numbers=numbers.get(decision.model))
                if decision.hardware:
                    self.requests.ask(decision.hardware, snapshot.now, decision.reason)
                continue
            await self._record(decision, "decided", numbers=numbers.get(decision.model))
            urls = {w.id: w.url for w in snapshot.workers}
            self.busy[decision.model] = asyncio.create_task(
                self._carry_out(decision, urls, slos.get(decision.model), numbers.get(decision.model)),
                name=f"scale:{decision.model}",
            )
        await self.tuner.tick(snapshot, skip={d.model for d in decisions} | set(self.busy) | set(owned))
        self.asking = asking
        self.holding = holding
        self.requests.only({hw for _, hw in asking if hw is not None})
        return list(decisions)

    async def _yield_to_pipelines(self, now: float) -> dict[str, Claim]:
        """The models planned pipelines hold, each claim and each release said once as an event."""
        held = await self.claims.current(now) if self.claims is not None else {}
        changes = [(m, c, "pipeline_owned") for m, c in held.items() if self.yielded.get(m) != c] + [
            (m, c, "pipeline_released") for m, c in self.yielded.items() if m not in held
        ]
        for model, claim, action in sorted(changes, key=lambda change: change[0]):
            if action == "pipeline_owned":
                reason = (
                    f"{model} is stage {claim.stage} of pipeline {claim.pipeline}, planned on "
                    f"{claim.variant}: its replicas follow the pipeline's plan and tuner (end-to-end "
                    "P99 SLO), not this loop"
                )
            else:
                reason = (
                    f"no planned pipeline has {model} as a stage any more ({claim.pipeline} was): "
                    "scaled here again"
                )
            try:
                await self.events.record(
                    kind="model_autoscaler", action=action, outcome="decided", reason=reason, model=model,
                    variant=claim.variant, details={"policy": self.policy_name, "pipeline": claim.pipeline},
                )  # fmt: skip
            except Exception as exc:  # the database briefly away must not stop scaling
                log.warning("recording an event failed: %s (%s)", exc, reason)
        self.yielded = dict(held)
        return held

    async def _hold_for(self, missing: tuple[str, ...]) -> None:
        if set(missing) <= set(self.missing):
            return
        self.missing = missing
        reason = (
            f"no scaling (models or workers): the store no longer lists {len(missing)} worker(s) whose "
            f"last heartbeat is less than the heartbeat TTL ({self.heartbeat_ttl_s:g} s) old "
            f"({', '.join(missing)}): Redis restarted empty or lost their keys; planning waits for "
            "their next heartbeat, or the TTL"
        )
        try:
            await self.events.record(
                kind="model_autoscaler",
                action="hold",
                outcome="decided",
                reason=reason,
                worker=missing[0] if len(missing) == 1 else None,
                details={"policy": self.policy_name, "missing": list(missing)},
            )
        except Exception as exc:  # the database briefly away must not stop scaling
            log.warning("recording an event failed: %s (%s)", exc, reason)
        log.warning("hold: %s", reason)

    async def settle(self) -> None:
        """Wait for every decision being carried out (tests and shutdown)."""
        await self.parity.settle()
        if self.busy:
            await asyncio.gather(*self.busy.values(), return_exceptions=True)

    async def _carry_out(
        self,
        decision: Decision,
        urls: Mapping[str, str],
        slo_ms: float | None,
        numbers: dict[str, float | None] | None,
    ) -> None:
        try:
            # The model's SLO goes with each load: the instance's overload threshold is SERF's capacity
            # under it (services/executor/instance_state.py), the same number this decision counted on.
            await asyncio.gather(
                *(self.executors.load(urls[w], vid, slo_ms=slo_ms) for vid, w in decision.loads)
            )
        except Exception as exc:
            await self._record(decision, "failed", numbers=numbers, error=f"load failed: {exc}")
            return
        drained = []
        try:
            for vid, w in decision.unloads:
                if w in urls:
                    drained.append(await self.executors.drain_instance(urls[w], vid))
        except Exception as exc:
            await self._record(decision, "failed", numbers=numbers, error=f"drain failed: {exc}")
            return
        await self._record(decision, "done", numbers=numbers, drained=drained)

    async def _record(
        self,
        decision: Decision,
        outcome: Literal["decided", "done", "failed"],
        numbers: dict[str, float | None] | None = None,
        **extra: object,
    ) -> None:
        variants = sorted({vid for vid, _ in (*decision.loads, *decision.unloads)})
        workers = sorted({w for _, w in (*decision.loads, *decision.unloads)})
        reason = decision.reason
        if "error" in extra:
            reason = f"{reason} — {extra['error']}"
        try:
            await self.events.record(
                kind="model_autoscaler",
                action=decision.action,
                outcome=outcome,
                reason=reason,
                model=decision.model,
                variant=variants[0] if len(variants) == 1 else None,
                worker=workers[0] if len(workers) == 1 else None,
                details={
                    "policy": self.policy_name,
                    "loads": [list(p) for p in decision.loads],
                    "unloads": [list(p) for p in decision.unloads],
                    "hardware": decision.hardware,
                    "cost_per_hour": round(decision.cost * 3600, 6),
                    # SERF's predicted mean at the offered load and what was observed (the reason's numbers)
                    **({"numbers": numbers} if numbers is not None else {}),
                    **{k: v for k, v in extra.items() if k != "error"},
                },
            )
        except Exception as exc:  # the database briefly away must not stop scaling
            log.warning("recording an event failed: %s (%s)", exc, reason)
        log.info("%s %s %s: %s", decision.action, decision.model, outcome, reason)


def _numbers(
    snapshot: ClusterSnapshot, models: set[str], config: ScalingConfig
) -> dict[str, dict[str, float | None]]:
    """For each model decided on: offered rows/s, capacity under its SLO, SERF's predicted mean latency
    at that load (None when not finite), rows/s observed served, share of queries that missed."""
    held: dict[str, list[InstanceView]] = {}
    owner = {v.id: d.model for d in snapshot.demands for v in d.variants}
    for i in snapshot.instances:
        if owner.get(i.variant_id) in models and i.state in CAPACITY_STATES:
            held.setdefault(owner[i.variant_id], []).append(i)
    out: dict[str, dict[str, float | None]] = {}
    for d in snapshot.demands:
        if d.model not in models:
            continue
        p = assess(d, held.get(d.model, []), snapshot, config)
        served = sum(o.served_rps for (w, vid), o in snapshot.observed.items() if owner.get(vid) == d.model)
        out[d.model] = {
            "offered_rows_per_s": round(d.load_qps, 3),
            "capacity_rows_per_s": round(p.capacity, 3),
            "slo_ms": d.slo_ms,
            "predicted_mean_ms": round(p.predicted_ms, 3) if math.isfinite(p.predicted_ms) else None,
            "observed_served_rows_per_s": round(served, 3),
            "missed_share": round(d.missed_share, 4),
        }
    return out
