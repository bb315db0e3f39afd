"""What an app wants done with a query that misses its latency SLO (its `slo_policy`), as pure logic.

INFaaS answers a query it cannot serve in time explicitly, never silently; which answer is the app's
choice. Each policy is one `MissRule` in `RULES`, and the dispatcher, admission and the gateway ask
the rule rather than compare policy names:

- `error`: nobody wants a late answer. The dispatcher stops waiting at the SLO and tells the worker to
  skip the query if it has not started it; a miss is a 504 saying what happened, and a query that
  admission predicts will miss is shed at once (503 + Retry-After), not run to be wasted.
- `best_effort`: the answer is wanted however late. The dispatcher waits up to the query timeout, a
  predicted miss runs anyway on the variant predicted to finish first, and the late answer says
  `slo_met: false`.
- `default`: a late answer is replaced by the app's `default_output` (marked `default: true`), at the
  SLO or at once when admission predicts the miss.

A new policy is one entry here and its name in `SloPolicy` (`infaas.schemas.api`, which the app
schemas use); the scheduler and gateway follow its rule.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, NamedTuple

from infaas.schemas.api import SloPolicy

__all__ = ["RULES", "MissRule", "SloPolicy", "Wait", "rule", "wait_for"]

OnMiss = Literal["error", "late_answer", "default_output"]
"""What answers a query whose SLO passed: a 504, its answer however late, or the app's default output."""

OnPredictedMiss = Literal["shed", "run_anyway", "default_output"]
"""What admission does with a query it predicts will miss: shed it (503), run it where it is
predicted to finish first, or answer the default output at once."""


@dataclass(frozen=True, slots=True)
class MissRule:
    on_miss: OnMiss
    on_predicted_miss: OnPredictedMiss
    description: str

    @property
    def waits_past_slo(self) -> bool:
        """Whether the answer is still wanted after the SLO passed (else the dispatcher stops waiting
        then, and the worker skips a query it picks up after that)."""
        return self.on_miss == "late_answer"

    @property
    def uses_default_output(self) -> bool:
        """Whether the app must have a `default_output` (and the query carries it)."""
        return self.on_miss == "default_output" or self.on_predicted_miss == "default_output"


RULES: dict[str, MissRule] = {
    "error": MissRule("error", "shed", "a missed SLO is an error (504); a predicted miss is shed (503)"),
    "best_effort": MissRule("late_answer", "run_anyway", "the answer however late, marked slo_met: false"),
    "default": MissRule(
        "default_output", "default_output", "the app's default_output instead of a late answer"
    ),
}


def rule(policy: str) -> MissRule:
    """The rule of a policy by name; an unknown name is a `ValueError` naming the known ones."""
    found = RULES.get(policy)
    if found is None:
        raise ValueError(f"no SLO policy {policy!r}; known: {sorted(RULES)}")
    return found


class Wait(NamedTuple):
    """How long the dispatcher waits for a query's answer, on its own clock (`time.perf_counter`)."""

    give_up_at: float
    """The instant it stops waiting: the SLO's deadline, or the query timeout where the answer is
    wanted however late (or the query states no SLO)."""
    at_deadline: bool
    """Whether `give_up_at` is the SLO's deadline: then the worker is told to skip the query if it
    picks it up later (`Order.drop_after`), and giving up is a miss under the policy, not a timeout."""


def wait_for(miss: MissRule, *, arrived: float, slo_ms: float | None, timeout_s: float) -> Wait:
    """The dispatcher's wait for a query that `arrived` (perf_counter s) with `slo_ms`."""
    if slo_ms is None or miss.waits_past_slo:
        return Wait(arrived + timeout_s, False)
    return Wait(arrived + slo_ms / 1000, True)
