"""The pipeline tuner's loop (InferLine's tuner, `policies/pipeline_tuner.py`): every tick, for each
planned pipeline, the queries that arrived at its root stage's model (the demand counter, sampled once
per tick) become the live arrival trace; the policy's actions are carried out through the executors'
instance controls — load the stage's planned variant on another worker of its hardware, or drain one —
and each is an event with the policy's reason.

Arrivals are known at the tick's resolution (counts per tick, spread evenly inside it), so envelope
windows shorter than the tick are not watched live. The planned envelope is recomputed from the trace
the plan was made on (`services/planner/pipelines.py`: same rate, CV and seed).

Each action is an event as soon as it is decided (`decided`, with the formula's numbers), and again
once carried out (`done` or `failed`). The loads and drains run as a task of their own per pipeline: a
load waits for its instance to be active (up to the executor client's timeout), and a worker that
accepts but hangs must delay neither the decision's event nor the other pipelines' tuning. A pipeline
whose actions are still under way keeps sampling its arrivals and decides nothing new meanwhile. A plan
that cannot be tuned (a planned variant no longer published) is said once per plan, as a `hold`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import redis.asyncio as aioredis

from infaas.clients.executor import ExecutorClient
from infaas.clients.registry import AsyncRegistryClient
from infaas.core import workloads
from infaas.data import store
from infaas.policy.selection import USABLE_STATES
from infaas.schemas.api import ADMIN
from infaas.schemas.events import Outcome
from infaas.schemas.pipelines import Pipeline, PipelinePlan
from infaas.schemas.variants import VariantProfile
from services.planner.event_log import EventLog
from services.planner.loops.claims import PipelineClaims, planned
from services.planner.loops.leader import LeaderLock
from services.planner.pipelines import TRACE_S
from services.planner.policies import pipeline_tuner as policy
from services.planner.signals import Signals
from services.planner.simulator.pipelines import StageConfig

log = logging.getLogger(__name__)

HISTORY_S = policy.ENVELOPE_MAX_S + 5.0

IDLE_READ_S = 10.0
"""With no planned pipeline at the last read, the tuner reads the pipelines again only when the
registry signals a change (`store.PIPELINES_CHANGED`, read only once its topic is published:
`services/planner/signals.py`) or this long after that read: a request to the
registry and a database query each second are measurable interference with the query path on a small
machine, and a lost signal costs at most this much."""


@dataclass
class Tracked:
    """One planned pipeline as the tuner follows it."""

    plan: PipelinePlan
    stages: list[policy.StageTuning]
    envelope: policy.Envelope
    state: policy.TunerState
    counts: deque[tuple[float, int]] = field(default_factory=deque)
    """(tick time, root model's query counter) over the last `HISTORY_S`."""


def tuning_for(plan: PipelinePlan, variants: dict[str, VariantProfile], now: float) -> Tracked | None:
    """The tuner's view of a plan: μ_m at the planned batch, ρ_m at the planning trace's peak 5 s rate
    (the plan was estimated to meet the SLO through that peak), the planned envelope."""
    trace = workloads.gamma(plan.rate_qps, TRACE_S, cv=plan.cv, seed=0)
    peak = float(np.bincount((trace // policy.DOWN_WINDOW_S).astype(int)).max()) / policy.DOWN_WINDOW_S
    stages, service_s = [], 0.0
    for s in plan.stages:
        v = variants.get(s.variant)
        if v is None:
            return None  # a planned variant no longer published: nothing to tune until it is re-planned
        config = StageConfig(v, s.batch, s.replicas)
        service_s += v.profiled_ms(s.batch, tail=False) / 1000
        rho = peak * s.scale / (s.replicas * config.rows_per_s())
        stages.append(policy.StageTuning(s.stage, s.scale, config.rows_per_s(), max(rho, 1e-3)))
    envelope = policy.planned_envelope(trace, max(service_s, 1.0))
    state = policy.TunerState({s.stage: s.replicas for s in plan.stages}, last_action_at=now)
    return Tracked(plan, stages, envelope, state)


def arrivals_from(counts: deque[tuple[float, int]]) -> np.ndarray:
    """Per-tick counts as arrival times spread evenly inside each tick."""
    times: list[np.ndarray] = []
    for (t0, c0), (t1, c1) in zip(counts, list(counts)[1:], strict=False):
        n = max(0, c1 - c0)
        if n:
            times.append(t0 + (np.arange(n) + 1) * (t1 - t0) / n)
    return np.concatenate(times) if times else np.empty(0)


class PipelineTuner:
    def __init__(
        self,
        *,
        redis: aioredis.Redis,
        lock: LeaderLock,
        registry: AsyncRegistryClient,
        executors: ExecutorClient,
        events: EventLog,
        heartbeat_ttl_s: float,
        claims: PipelineClaims | None = None,
        signals: Signals | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.redis, self.lock, self.registry, self.clock = redis, lock, registry, clock
        self.signals = signals
        self.executors, self.events, self.heartbeat_ttl_s = executors, events, heartbeat_ttl_s
        self.tracked: dict[str, Tracked] = {}
        self.claims = claims  # shared with the model autoscaler: the models it leaves to this loop
        self._read: tuple[float, bytes | str | None, bool] | None = None
        """At the latest read: `clock()`, the change counter, and whether any pipeline was planned."""
        self.busy: dict[str, asyncio.Task[None]] = {}  # pipeline -> its actions being carried out
        self.held: set[tuple[str, object]] = set()  # (pipeline, planned_at) said untunable

    async def _idle(self) -> bool:
        """Nothing to tune and nothing changed: no planned pipeline at the latest read, that read
        recent, and no change signalled since (one Redis read)."""
        if self._read is None:
            return False
        at, counter, any_planned = self._read
        if any_planned or self.clock() - at >= IDLE_READ_S:
            return False
        if self.signals is not None and not self.signals.take(store.PIPELINES_TOPIC):
            return True  # no change published since the last look: not even the counter is read
        return await self.redis.get(store.PIPELINES_CHANGED) == counter

    async def tick(self) -> list[policy.TunerAction]:
        now = time.time()
        if await self._idle():
            if self.claims is not None:
                self.claims.confirm(now)  # no change since the read that set them: still current
            return []
        if not await self.lock.hold():
            return []
        counter = await self.redis.get(store.PIPELINES_CHANGED)  # before the read: a later change moves it
        pipelines = await self.registry.pipelines(ADMIN)
        if self.claims is not None:
            self.claims.update(pipelines, now)
        tuned = planned(pipelines)
        self._read = (self.clock(), counter, bool(tuned))
        if not tuned:  # nothing to tune: no need to read every variant from the store each second
            self.tracked.clear()
            return []
        variants = await store.read_variants(self.redis)
        done: list[policy.TunerAction] = []
        self.busy = {name: task for name, task in self.busy.items() if not task.done()}
        for pipeline in tuned:
            assert pipeline.plan is not None
            tracked = self.tracked.get(pipeline.name)
            if tracked is None or tracked.plan.planned_at != pipeline.plan.planned_at:
                fresh = tuning_for(pipeline.plan, variants, now)
                if fresh is None:
                    await self._hold(pipeline, pipeline.plan, variants)
                    continue
                tracked = self.tracked[pipeline.name] = fresh
            root_model = next(s.model for s in pipeline.stages if s.name == pipeline.order[0])
            raw = await self.redis.hget(store.demand_key(root_model), "queries")
            tracked.counts.append((now, int(raw) if raw else 0))
            while tracked.counts and tracked.counts[0][0] < now - HISTORY_S:
                tracked.counts.popleft()
            if len(tracked.counts) < 2 or pipeline.name in self.busy:
                continue
            actions, tracked.state = policy.tune(
                now, arrivals_from(tracked.counts), tracked.stages, tracked.envelope, tracked.state
            )
            if not actions:
                continue
            for action in actions:  # said before carried out, whatever the event log answers
                await self._record(pipeline, tracked.plan, action, "decided")
            self.busy[pipeline.name] = asyncio.create_task(
                self._carry_out(pipeline, tracked.plan, actions), name=f"tune:{pipeline.name}"
            )
            done.extend(actions)
        names = {p.name for p in tuned}
        for gone in set(self.tracked) - names:
            del self.tracked[gone]
        self.held = {(name, at) for name, at in self.held if name in names}
        return done

    async def _hold(
        self, pipeline: Pipeline, plan: PipelinePlan, variants: dict[str, VariantProfile]
    ) -> None:
        """Say once per plan that it cannot be tuned, and why."""
        if (pipeline.name, plan.planned_at) in self.held:
            return
        self.held.add((pipeline.name, plan.planned_at))
        missing = sorted({s.variant for s in plan.stages if s.variant not in variants})
        reason = (
            f"pipeline {pipeline.name}: planned variant(s) {', '.join(missing)} no longer published: "
            "nothing to tune until it is re-planned"
        )
        log.warning("%s", reason)
        await self._event(action="hold", outcome="decided", reason=reason)

    async def _carry_out(
        self, pipeline: Pipeline, plan: PipelinePlan, actions: list[policy.TunerAction]
    ) -> None:
        for action in actions:
            try:
                outcome, note = await self._apply(plan, action)
            except Exception as exc:  # a failed load or drain is an outcome to record, not a crash
                outcome, note = "failed", f"; {exc}"
            await self._record(pipeline, plan, action, outcome, note)

    async def _apply(self, plan: PipelinePlan, action: policy.TunerAction) -> tuple[Outcome, str]:
        stage = next(s for s in plan.stages if s.stage == action.stage)
        workers, instances = await store.read_live(self.redis, now=time.time(), ttl_s=self.heartbeat_ttl_s)
        hosting = [
            i.worker_id for i in instances if i.variant_id == stage.variant and i.state in USABLE_STATES
        ]
        urls = {w.id: w.url for w in workers}
        if action.replicas_to > action.replicas_from:
            free = [w for w in workers if w.hardware == stage.hardware and w.id not in hosting]
            want = action.replicas_to - len(hosting)
            for worker in free[: max(0, want)]:
                await self.executors.load(worker.url, stage.variant)
            if want > len(free):
                return "done", f"; only {len(hosting) + len(free)} {stage.hardware} workers can host it"
        else:
            for wid in hosting[action.replicas_to :]:
                await self.executors.drain_instance(urls[wid], stage.variant)
        return "done", ""

    async def _record(
        self,
        pipeline: Pipeline,
        plan: PipelinePlan,
        action: policy.TunerAction,
        outcome: Outcome,
        note: str = "",
    ) -> None:
        stage = next(s for s in plan.stages if s.stage == action.stage)
        await self._event(
            action="tune_up" if action.replicas_to > action.replicas_from else "tune_down",
            outcome=outcome,
            reason=(
                f"pipeline {pipeline.name}, stage {action.stage}: {action.replicas_from} -> "
                f"{action.replicas_to} replicas: {action.reason}{note}"
            ),
            model=next(s.model for s in pipeline.stages if s.name == action.stage),
            variant=stage.variant,
        )

    async def _event(self, **fields: Any) -> None:
        """Record a `pipeline_planner` event; with the database away, say so in the log and go on: the
        loads and drains are carried out whether or not their events could be written."""
        try:
            await self.events.record(kind="pipeline_planner", **fields)
        except Exception:
            log.exception("recording a pipeline_planner %s event failed", fields.get("action"))
