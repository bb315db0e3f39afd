"""Applying deadline-aware admission (`admission.py`) on the query path: predict the query's completion
on the variant selection chose, try the other active variants that meet it when that misses, and else
do what the app's `slo_policy` says; and teach the predictions from every answer (`service_times.py`)."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import replace

from infaas.clients.envelope import Answer, Query
from infaas.core.errors import Unavailable
from infaas.metrics.buffer import BUFFER
from infaas.policy.selection import Decision
from infaas.policy.slo_miss import RULES
from infaas.schemas.variants import VariantProfile
from infaas.wire.messages import Reply
from services.scheduler import metrics
from services.scheduler.admission import Prediction, predict
from services.scheduler.answers import shed
from services.scheduler.service_times import ServiceTimes
from services.scheduler.snapshot import SnapshotCache

Decide = Callable[[Query, int, frozenset[str]], Decision]
"""Selection for a query with some variants left out (the dispatcher's `_decide`)."""


class AdmissionGate:
    def __init__(
        self, *, snapshot: SnapshotCache, rows_in_flight: Counter[str], default_slo_ms: float
    ) -> None:
        self.snapshot = snapshot
        self.rows_in_flight = rows_in_flight  # the dispatcher's, per variant: the work queued ahead
        self.default_slo_ms = default_slo_ms
        """The SLO a query that states none is admitted against (setting `default_batch_budget_ms`)."""
        self.service_times = ServiceTimes()
        # Per variant, the admission time of each query in flight on it, oldest first (dicts keep
        # insertion order): the oldest says how long the instances have been working on what is ahead.
        self._since: dict[str, dict[int, float]] = {}

    def entered(self, variant: str, token: int, now: float) -> None:
        """A query's rows joined `variant`'s work in flight (the dispatcher counts the rows)."""
        self._since.setdefault(variant, {})[token] = now

    def left(self, variant: str, token: int) -> None:
        since = self._since.get(variant)
        if since is not None:
            since.pop(token, None)
            if not since:
                del self._since[variant]

    def admit(
        self, query: Query, rows: int, decision: Decision, arrived: float, decide: Decide
    ) -> tuple[Decision, Prediction] | Answer:
        """The chosen variant when the query is predicted to finish in time there, else another active
        variant that meets the query and is predicted to, else the app's policy: `best_effort` runs it
        where it is predicted to finish first and says so, `default` answers the default output at once,
        `error` sheds it at once (503 + Retry-After): the rule of its `slo_policy`
        (`infaas.policy.slo_miss`). A query without an SLO is predicted against the default SLO; where
        its policy runs a predicted miss anyway, it is only predicted (its answer still teaches)."""
        req = query.requirements
        miss = RULES[query.policy]
        slo_ms = req.slo_ms if req.slo_ms is not None else self.default_slo_ms
        deadline_ms = slo_ms - (time.perf_counter() - arrived) * 1000  # left of it, from now
        prediction = self.predict(decision.variant, rows, deadline_ms)
        if prediction.admits or (req.slo_ms is None and miss.on_predicted_miss == "run_anyway"):
            BUFFER.inc(metrics.ADMITTED["admitted"])
            return decision, prediction
        tried = [(decision, prediction)]
        excluded = {decision.variant.id}
        while True:  # at most once per active variant that meets the query
            try:
                other = decide(query, rows, frozenset(excluded))
            except Unavailable:  # every variant that meets the query was tried, or none can be loaded
                break
            if other.action != "active":  # a cold load would not finish in time either
                break
            found = self.predict(other.variant, rows, deadline_ms)
            if found.admits:
                BUFFER.inc(metrics.ADMITTED["rerouted"])
                why = f"{other.reason}; not {decision.variant.id}: {prediction.why()}"
                return replace(other, reason=why), found
            tried.append((other, found))
            excluded.add(other.variant.id)
        fastest, predicted = min(tried, key=lambda pair: pair[1].ms)
        if miss.on_predicted_miss == "run_anyway":
            BUFFER.inc(metrics.ADMITTED["late"])
            late = f"{predicted.why()} (fastest of {len(tried)} active variants): run anyway (best_effort)"
            return replace(fastest, reason=f"{fastest.reason}; {late}"), predicted
        return shed(fastest, query, arrived, predicted)

    def predict(self, variant: VariantProfile, rows: int, deadline_ms: float) -> Prediction:
        """The query's completion on `variant`, behind the dispatcher's rows in flight on it (drained at
        the rate its instances together have been answering them)."""
        since = self._since.get(variant.id)
        done_ms = (time.perf_counter() - next(iter(since.values()))) * 1000 if since else 0.0
        instances = len(self.snapshot.serving.get(variant.id, ())) or 1
        return predict(
            variant=variant.id,
            rows=rows,
            rows_ahead=self.rows_in_flight[variant.id],
            profiled_ms=variant.profiled_ms(rows, tail=False),
            service=self.service_times.of(variant),
            deadline_ms=deadline_ms,
            done_ms=done_ms,
            queued=len(since or ()) > instances,
        )

    def observe(
        self,
        variant: VariantProfile,
        rows: int,
        arrived: float,
        prediction: Prediction | None,
        reply: Reply | None,
    ) -> None:
        """Teach admission what an answer showed (`reply`: None when the query was given up or skipped
        at its deadline): how fast the queue drained, and how far the answer time (or the time the
        query was given up at) was from what its prediction modelled. Called while the query's rows
        still count as in flight."""
        service = self.service_times.of(variant)
        now = time.perf_counter()
        if reply is not None:
            service.drained(now, rows, self.rows_in_flight[variant.id] - rows)
        if prediction is not None and prediction.variant == variant.id:
            service.answered((now - arrived) * 1000, prediction.modelled_ms)
