"""Which loaded instances are stale (`services/executor/stale.py`, pure)."""

from __future__ import annotations

import orjson

from services.executor.stale import MISSING_CHECKS, judge


def blob(digest: str) -> bytes:
    return orjson.dumps({"id": "m.v", "artifact_digest": digest})


def test_a_variant_published_with_another_artifact_is_stale_at_once() -> None:
    stale, counts = judge(True, {"m.v": blob("new"), "m.w": blob("w")}, {"m.v": "old", "m.w": "w"}, {})
    assert [vid for vid, _ in stale] == ["m.v"]
    assert counts == {}


def test_a_missing_variant_is_stale_only_after_reads_in_a_row_and_its_count_resets() -> None:
    counts: dict[str, int] = {}
    for _ in range(MISSING_CHECKS - 1):
        stale, counts = judge(True, {"m.v": None}, {"m.v": "d"}, counts)
        assert stale == []
    stale, _ = judge(True, {"m.v": blob("d")}, {"m.v": "d"}, counts)  # it came back: start over
    assert stale == []
    stale, counts = judge(True, {"m.v": None}, {"m.v": "d"}, {})
    assert stale == [] and counts == {"m.v": 1}
    stale, _ = judge(True, {"m.v": None}, {"m.v": "d"}, counts)
    assert stale and "deleted" in stale[0][1]


def test_nothing_is_judged_without_the_registrys_publication_or_from_an_unreadable_profile() -> None:
    assert judge(False, {"m.v": None}, {"m.v": "d"}, {"m.v": 5}) == ([], {"m.v": 5})
    assert judge(True, {"m.v": b"{not json"}, {"m.v": "d"}, {})[0] == []
