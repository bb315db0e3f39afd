"""Counting demand per model: every query that reaches the dispatcher, whatever became of it, so that the
planner scales on what arrives and not only on what was dispatched (a shed query is demand the
instances never saw). Counted in memory per query and added to `store.demand_key(model)` by the
dispatcher's housekeeping, in its one pipeline per turn."""

from __future__ import annotations

import logging
from collections import Counter

from redis.asyncio.client import Pipeline

from infaas.clients.envelope import Answer, Query
from infaas.data import store
from infaas.policy.selection import CandidateIndex

log = logging.getLogger("infaas.scheduler")


class DemandCounter:
    def __init__(self) -> None:
        self._counts: dict[str, Counter[str]] = {}

    def _add(self, model: str, rows: int, outcome: str | None) -> None:
        counts = self._counts.get(model)
        if counts is None:
            counts = self._counts[model] = Counter()
        counts["rows"] += rows
        counts["queries"] += 1
        if outcome is not None:
            counts[f"{outcome}_rows"] += rows
            counts[outcome] += 1

    def answered(self, query: Query, answer: Answer) -> None:
        """An answer, late when its SLO was missed (a default output included); cache hits count too,
        since they are demand the instances were spared."""
        self._add(answer.model, query.rows, "late" if answer.slo_met is False else None)

    def failed(self, query: Query, candidates: CandidateIndex | None, *, late: bool) -> None:
        """A query refused (`late` False: shed with 429/503, no worker took it) or past its deadline
        (`late` True), counted for the model it asked for or, for an app query, the model of its
        first candidate (the one selection ranks from)."""
        if query.kind == "model":
            model = query.target
        elif candidates is not None and len(candidates):
            model = candidates.variants[0].model
        else:
            return  # an app query no model of the app could take: no model's demand
        self._add(model, query.rows, "late" if late else "shed")

    @property
    def counted(self) -> bool:
        """Whether anything was counted since the last `take`."""
        return bool(self._counts)

    def take(self, pipe: Pipeline) -> dict[str, Counter[str]]:
        """Queue what was counted since the last turn on `pipe` (the dispatcher's housekeeping round
        trip) and hand it over; `restore` it if the pipeline fails, for the next turn."""
        counts, self._counts = self._counts, {}
        for model, fields in counts.items():
            for name, n in fields.items():
                pipe.hincrby(store.demand_key(model), name, n)
        return counts

    def restore(self, counts: dict[str, Counter[str]]) -> None:
        for model, fields in counts.items():
            self._counts.setdefault(model, Counter()).update(fields)
