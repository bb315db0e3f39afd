"""The model autoscaler loop (every `autoscale_interval_s`), and the worker requests it hands the worker
autoscaler (`worker_autoscaler.py`).

Each tick: hold the leader lease (else do nothing), observe (`observe.py`), decide with a
pure policy — the scaling policy, then interference mitigation (`policies/interference.py`) and
warm instances (`policies/warm.py`) for the models it left alone — record the decision with its
reason, carry it out, record the outcome. A model with a decision still being carried out is left
alone until it finishes, so two ticks never race.
Carrying out: loads first (`POST /v1/instances` on the chosen workers, concurrently), then drains
(`POST /v1/instances/{variant}/drain`) of the instances being replaced or removed — capacity only goes
once its replacement is active, and a drain serves everything that was queued for it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Literal

import redis.asyncio as aioredis

from infaas.clients.executor import ExecutorClient
from infaas.data import store
from services.planner.event_log import EventLog
from services.planner.loops.leader import LeaderLock
from services.planner.loops.observe import InstanceAges, LoadMeter, SloCache, observe
from services.planner.policies import greedy, ilp, interference, warm
from services.planner.policies.snapshot import ClusterSnapshot, Decision, Plan, ScalingConfig

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
        self.variants = store.VariantReader()
        self.ages = InstanceAges()
        self.holding: set[tuple[str, str]] = set()
        self.interference = interference_config or interference.InterferenceConfig(migrate_after_s=0.0)
        self.interfered_since: dict[interference.Key, float] = {}
        self.moved: dict[str, float] = {}
        # Warm backups (worker, variant) the failover loop keeps: idle by design, not capacity to scale.
        self.reserved: set[tuple[str, str]] = set()

    async def tick(self) -> list[Decision]:
        """One round: observe, decide, start carrying out. Returns the decisions started."""
        if not await self.lock.hold():
            return []
        snapshot = await observe(
            self.redis,
            self.meter,
            self.slos,
            heartbeat_ttl_s=self.heartbeat_ttl_s,
            now=self.clock(),
            variants_from=self.variants,
            ages=self.ages,
        )
        if self.reserved:
            kept = tuple(i for i in snapshot.instances if (i.worker_id, i.variant_id) not in self.reserved)
            snapshot = replace(snapshot, instances=kept)
        self.busy = {m: t for m, t in self.busy.items() if not t.done()}
        if self.busy:  # plan only the models nobody is changing right now
            snapshot = replace(
                snapshot, demands=tuple(d for d in snapshot.demands if d.model not in self.busy)
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
        asking: set[tuple[str, str | None]] = set()
        holding: set[tuple[str, str]] = set()
        for decision in decisions:
            if decision.action == "hold":
                # Said once per episode (the reason up to its changing numbers), never carried out.
                held = (decision.model, decision.reason.split(" while ")[0])
                holding.add(held)
                if held not in self.holding:
                    await self._record(decision, "decided")
                continue
            if decision.action == "request_worker":
                # Asked again every tick until a worker joins: one event per episode, not one per second.
                key = (decision.model, decision.hardware)
                asking.add(key)
                if key not in self.asking:
                    await self._record(decision, "decided")
                if decision.hardware:
                    self.requests.ask(decision.hardware, snapshot.now, decision.reason)
                continue
            await self._record(decision, "decided")
            urls = {w.id: w.url for w in snapshot.workers}
            self.busy[decision.model] = asyncio.create_task(
                self._carry_out(decision, urls), name=f"scale:{decision.model}"
            )
        self.asking = asking
        self.holding = holding
        self.requests.only({hw for _, hw in asking if hw is not None})
        return list(decisions)

    async def settle(self) -> None:
        """Wait for every decision being carried out (tests and shutdown)."""
        if self.busy:
            await asyncio.gather(*self.busy.values(), return_exceptions=True)

    async def _carry_out(self, decision: Decision, urls: Mapping[str, str]) -> None:
        try:
            await asyncio.gather(*(self.executors.load(urls[w], vid) for vid, w in decision.loads))
        except Exception as exc:
            await self._record(decision, "failed", error=f"load failed: {exc}")
            return
        drained = []
        try:
            for vid, w in decision.unloads:
                if w in urls:
                    drained.append(await self.executors.drain_instance(urls[w], vid))
        except Exception as exc:
            await self._record(decision, "failed", error=f"drain failed: {exc}")
            return
        await self._record(decision, "done", drained=drained)

    async def _record(
        self, decision: Decision, outcome: Literal["decided", "done", "failed"], **extra: object
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
                    **{k: v for k, v in extra.items() if k != "error"},
                },
            )
        except Exception as exc:  # the database briefly away must not stop scaling
            log.warning("recording an event failed: %s (%s)", exc, reason)
        log.info("%s %s %s: %s", decision.action, decision.model, outcome, reason)
