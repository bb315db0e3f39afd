"""Each instance's concurrency from SERF's prediction (`infaas.policy.configuration.concurrency_for`),
switched as its arrival rate changes: part of the model autoscaler's tick, for the models it is not
changing. An instance's rate is its model's offered rows/s shared equally among the model's serving
instances (what the schedulers' least-loaded choice converges to); its service rates are its variant's
concurrency profile, slowed by what its executor observed; while the instance's batching capacity at
c = 1 (`instance_capacity`, what scaling counts) covers its rate, it stays at one. Every switch is an
event with the predicted numbers at the old and new concurrency and the observed ones; an instance
switches at most once per `SWITCH_EVERY_S`.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping
from typing import Literal

from infaas.clients.executor import ExecutorClient
from infaas.policy.capacity import instance_capacity
from infaas.policy.configuration import concurrency_for
from infaas.policy.selection import InstanceView
from services.planner.event_log import EventLog
from services.planner.policies.snapshot import ClusterSnapshot

log = logging.getLogger("infaas.planner")

SWITCH_EVERY_S = 10.0
"""Least time between two switches of one instance: its observed numbers need a window to settle."""

SERVING = frozenset({"active", "overloaded", "interfered"})


class ConcurrencyTuner:
    def __init__(self, *, executors: ExecutorClient, events: EventLog, clock: Callable[[], float]) -> None:
        self.executors = executors
        self.events = events
        self.clock = clock
        self.switched_at: dict[tuple[str, str], float] = {}

    async def tick(self, snapshot: ClusterSnapshot, skip: set[str]) -> list[tuple[str, str, int]]:
        """Switch the instances whose concurrency the prediction says is wrong for their rate; returns
        (worker, variant, concurrency) of each switch made."""
        urls = {w.id: w.url for w in snapshot.workers}
        serving: dict[str, list[InstanceView]] = {}
        owner = {v.id: d.model for d in snapshot.demands for v in d.variants}
        for i in snapshot.instances:
            if i.state in SERVING and i.variant_id in owner:
                serving.setdefault(owner[i.variant_id], []).append(i)
        now = self.clock()
        live = {(i.worker_id, i.variant_id) for i in snapshot.instances}
        self.switched_at = {k: t for k, t in self.switched_at.items() if k in live}
        made = []
        for d in snapshot.demands:
            instances = serving.get(d.model, [])
            if d.model in skip or d.slo_ms is None or not instances:
                continue
            variants = {v.id: v for v in d.variants}
            rate = d.load_qps / len(instances)
            for i in instances:
                key = (i.worker_id, i.variant_id)
                variant = variants[i.variant_id]
                if now - self.switched_at.get(key, float("-inf")) < SWITCH_EVERY_S or i.worker_id not in urls:
                    continue
                observed = snapshot.observed.get(key)
                batched = instance_capacity(variant, d.slo_ms, observed if i.concurrency == 1 else None)
                choice = concurrency_for(
                    variant.concurrency_ms,
                    rate,
                    d.slo_ms,
                    current=i.concurrency,
                    # The observed slowdown is against the batch-1-alone profile: at c > 1 it holds the
                    # concurrent batches' own interference, which the concurrency profile already has.
                    slowdown=observed.slowdown if observed is not None and i.concurrency == 1 else 1.0,
                    batched_rps=batched.rows_per_s,
                )
                if choice is None or choice.concurrency == i.concurrency:
                    continue
                self.switched_at[key] = now
                numbers: dict[str, float | None] = {
                    "arrival_rows_per_s": round(rate, 3),
                    "slo_ms": d.slo_ms,
                    "from": i.concurrency,
                    "to": choice.concurrency,
                    "predicted_mean_ms_before": _finite(choice.current.latency_ms),
                    "predicted_mean_ms_after": _finite(choice.prediction.latency_ms),
                    "predicted_utilization_after": round(choice.prediction.utilization, 4),
                    "observed_served_rows_per_s": observed.served_rps if observed is not None else None,
                    "observed_busy": observed.busy if observed is not None else None,
                    "observed_slowdown": observed.slowdown if observed is not None else None,
                }
                reason = f"{i.variant_id} on {i.worker_id}: concurrency {i.concurrency} → {choice.why}"
                try:
                    await self.executors.set_concurrency(urls[i.worker_id], i.variant_id, choice.concurrency)
                except Exception as exc:
                    await self._record(d.model, i, "failed", f"{reason} — {exc}", numbers)
                    continue
                await self._record(d.model, i, "done", reason, numbers)
                made.append((i.worker_id, i.variant_id, choice.concurrency))
        return made

    async def _record(
        self,
        model: str,
        instance: InstanceView,
        outcome: Literal["done", "failed"],
        reason: str,
        numbers: Mapping[str, float | None],
    ) -> None:
        try:
            await self.events.record(
                kind="model_autoscaler",
                action="configure",
                outcome=outcome,
                reason=reason,
                model=model,
                variant=instance.variant_id,
                worker=instance.worker_id,
                details={"numbers": dict(numbers)},
            )
        except Exception as exc:  # the database briefly away must not stop scaling
            log.warning("recording an event failed: %s (%s)", exc, reason)
        log.info("configure %s %s: %s", model, outcome, reason)


def _finite(x: float) -> float | None:
    return round(x, 3) if math.isfinite(x) else None
