"""The SLO-miss policies as pure rules (`infaas.policy.slo_miss`): one rule per policy an app may state,
and the dispatcher's wait that follows from it."""

from __future__ import annotations

from typing import get_args

import pytest

from infaas.policy.slo_miss import RULES, SloPolicy, Wait, rule, wait_for


def test_there_is_one_rule_for_every_policy_an_app_may_state() -> None:
    assert set(RULES) == set(get_args(SloPolicy))
    with pytest.raises(ValueError, match="no SLO policy 'late'"):
        rule("late")


def test_what_each_policy_does_with_a_miss() -> None:
    assert (rule("error").on_miss, rule("error").on_predicted_miss) == ("error", "shed")
    assert (rule("best_effort").on_miss, rule("best_effort").on_predicted_miss) == (
        "late_answer",
        "run_anyway",
    )
    assert [p for p, r in RULES.items() if r.uses_default_output] == ["default"]
    assert [p for p, r in RULES.items() if r.waits_past_slo] == ["best_effort"]


@pytest.mark.parametrize(
    ("policy", "slo_ms", "expected"),
    [
        ("error", 20.0, Wait(100.02, True)),  # stops at the deadline; the worker skips it after
        ("default", 20.0, Wait(100.02, True)),
        ("best_effort", 20.0, Wait(130.0, False)),  # the answer is wanted however late
        ("error", None, Wait(130.0, False)),  # no SLO: the query timeout bounds every policy
    ],
)
def test_the_dispatcher_waits_as_the_policy_wants(policy: str, slo_ms: float | None, expected: Wait) -> None:
    got = wait_for(rule(policy), arrived=100.0, slo_ms=slo_ms, timeout_s=30.0)
    assert got.at_deadline == expected.at_deadline
    assert got.give_up_at == pytest.approx(expected.give_up_at)
