"""`Retry-After` on errors: every 503 carries one, whether or not the error names a time."""

from __future__ import annotations

from infaas.core.errors import DeadlineExceeded, Overloaded, TooManyRequests, Unauthorized, Unavailable
from infaas.http.app import DEFAULT_RETRY_AFTER, retry_after


def test_every_503_says_when_to_come_back() -> None:
    assert retry_after(Unavailable("registry is unreachable")) == DEFAULT_RETRY_AFTER == "1"
    assert retry_after(Overloaded("full", retry_after_s=2.2)) == "3"  # whole seconds, rounded up


def test_other_errors_carry_one_only_when_they_name_a_time() -> None:
    assert retry_after(TooManyRequests("slow down", retry_after_s=0.2)) == "1"
    assert retry_after(Unauthorized("unknown API key")) is None
    assert retry_after(DeadlineExceeded("no answer in time")) is None
