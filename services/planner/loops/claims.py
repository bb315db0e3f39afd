"""Which models a planned pipeline holds (InferLine: the pipeline's planner and tuner provision its
stages against the end-to-end P99 SLO). The model autoscaler leaves a held model's replicas alone, so two
loops never act on one model's instances at once: otherwise the autoscaler, seeing a stage model's own
per-query SLO and rate, would remove the replicas the tuner added for a burst, or add ones the plan does
not count.

A model is held while a stored, feasible plan of some pipeline names it as a stage; the pipeline tuner
refreshes the claims from its own registry read every tick, and the model autoscaler reads the registry
itself when they are older than `max_age_s` (the tuner off, or stalled). With the tuner off a held model is
served as planned and scaled by nobody: the plan is its provisioning until it is re-planned or the
pipeline deleted. Queries sent to a held model directly share the planned instances.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

from infaas.clients.registry import AsyncRegistryClient
from infaas.schemas.api import ADMIN
from infaas.schemas.pipelines import Pipeline

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Claim:
    pipeline: str
    stage: str
    variant: str
    """The stage's planned variant."""


def planned(pipelines: list[Pipeline]) -> list[Pipeline]:
    """The pipelines with a stored, feasible plan."""
    return [p for p in pipelines if p.plan is not None and p.plan.feasible]


def claims_of(pipelines: list[Pipeline]) -> dict[str, Claim]:
    """Model → the first (by name) planned pipeline that has it as a stage."""
    held: dict[str, Claim] = {}
    for p in sorted(planned(pipelines), key=lambda p: p.name):
        assert p.plan is not None
        models = {s.name: s.model for s in p.stages}
        for s in p.plan.stages:
            if s.stage in models:
                held.setdefault(models[s.stage], Claim(p.name, s.stage, s.variant))
    return held


class PipelineClaims:
    def __init__(self, registry: AsyncRegistryClient, *, max_age_s: float = 5.0) -> None:
        self.registry = registry
        self.max_age_s = max_age_s
        self.by_model: dict[str, Claim] = {}
        self.at = -math.inf

    def update(self, pipelines: list[Pipeline], now: float) -> None:
        self.by_model, self.at = claims_of(pipelines), now

    def confirm(self, now: float) -> None:
        """The pipelines are known not to have changed since the last update: the claims stand as
        of `now` (the pipeline tuner, which watches the registry's change signal). Claims expired
        meanwhile (`expire`) stay expired: this process stored a plan, which the next read must see."""
        if self.at != -math.inf:
            self.at = now

    def expire(self) -> None:
        """A plan was stored or removed: the next read goes to the registry."""
        self.at = -math.inf

    async def current(self, now: float) -> dict[str, Claim]:
        if now - self.at > self.max_age_s:
            try:
                self.update(await self.registry.pipelines(ADMIN), now)
            except Exception as exc:  # the last known claims stand until the registry answers again
                log.warning("reading the pipelines failed, the last claims stand: %s", exc)
        return self.by_model
