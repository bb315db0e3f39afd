"""The pure parts of `bench.goals.peers`: the models' batch-mate independence, each system's request bytes,
the max-rate search, the ratios the report prints (the low-rate bench's with their intervals) and the segment
tool's stamps (no server is started)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import onnxruntime as ort
import orjson
import pytest

from bench.common import loadgen as lg
from bench.common import peer_models as models
from bench.goals.peers import busy, infaas_side, low_rate, measure, report, segments, systems


@pytest.fixture(scope="module")
def digits() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    return models.split()


def _session(model: object) -> ort.InferenceSession:
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])  # type: ignore[attr-defined]


def test_fixed_cost_branch_leaves_each_row_independent_of_its_batch_mates(digits) -> None:
    x_tr, x_val, y_tr, _ = digits
    spec = models.Spec((16,), fixed_layers=2, fixed_width=32)
    session = _session(models.build(spec, x_tr, y_tr, seed=1))
    assert any(n.op_type == "ReduceMean" for n in models.build(spec, x_tr, y_tr, seed=1).graph.node)
    batch = x_val[:8]
    together = session.run(None, {"x": batch})[0]
    alone = np.concatenate([session.run(None, {"x": batch[i : i + 1]})[0] for i in range(8)])
    np.testing.assert_allclose(together, alone, rtol=0, atol=1e-5)


def test_ridge_fitted_head_classifies_digits(digits) -> None:
    x_tr, x_val, y_tr, y_val = digits
    session = _session(models.build(models.Spec((128,)), x_tr, y_tr, seed=3))
    accuracy = float(np.mean(np.argmax(session.run(None, {"x": x_val})[0], axis=1) == y_val))
    assert accuracy > 0.8  # random tanh features + a ridge head; chance is 0.1


@pytest.mark.parametrize("system", ["infaas", *systems.PEERS])
def test_each_request_is_framed_and_carries_a_unique_first_feature(system: str, digits) -> None:
    rows = digits[1][:4]
    for ep in systems.endpoints(system, 8123, ["tiny"], {"Authorization": "Bearer k"}):
        make = ep.requests(rows)
        bodies = []
        for i in (1, 5, 7):
            head, _, body = make(i).partition(b"\r\n\r\n")
            assert head.startswith(f"POST {ep.path} HTTP/1.1".encode())
            assert f"content-length: {len(body)}".encode() in head.lower()
            parsed = orjson.loads(body)
            assert float(lg.unique_value(i)) in _numbers(parsed)
            bodies.append(body)
        assert len(set(bodies)) == 3


def _numbers(value: object) -> list[float]:
    if isinstance(value, list):
        return [n for v in value for n in _numbers(v)]
    if isinstance(value, dict):
        return [n for v in value.values() for n in _numbers(v)]
    return [float(value)] if isinstance(value, int | float) else []


def _search(capacity: float, start: float) -> tuple[float, list[float]]:
    gen = measure.max_rate_search(start, slo_ms=50, ceiling=10_000, runs=8, tolerance=0.1)
    tried = [next(gen)]
    try:
        while True:
            rate = tried[-1]
            passed = rate <= capacity
            # past capacity the queue grows: the median misses the SLO too (no repeat)
            run = {
                "slo_p99": 10.0 if passed else math.inf,
                "p50": 2.0 if passed else math.inf,
                "errors": {},
                "ok": 100,
            }
            tried.append(gen.send(run))
    except StopIteration as done:
        return done.value, tried


def test_search_brackets_upward_then_bisects_below_capacity() -> None:
    found, tried = _search(capacity=100, start=30)
    assert tried[:3] == [30, 60, 120]
    assert 100 / 1.1 <= found <= 100


def test_search_halves_from_a_start_above_capacity() -> None:
    found, tried = _search(capacity=20, start=100)
    assert tried[:3] == [100, 50, 25]
    assert 20 / 1.1 <= found <= 20


def test_search_fails_a_rate_with_errors_even_within_the_slo() -> None:
    gen = measure.max_rate_search(10, slo_ms=50, ceiling=10_000, runs=1, tolerance=0.1)
    next(gen)
    with pytest.raises(StopIteration) as done:
        gen.send({"slo_p99": 1.0, "errors": {"503": 1}, "ok": 99})
    assert done.value.value == 0.0


def _tail_failures(rate_fails: dict[float, int], start: float) -> tuple[float, list[float]]:
    """A search against a server that fails each rate in its tail alone the given number of times."""
    gen = measure.max_rate_search(start, slo_ms=50, ceiling=10_000, runs=3, tolerance=0.1)
    tried = [next(gen)]
    left = dict(rate_fails)
    try:
        while True:
            rate = tried[-1]
            failing = left.get(rate, 0) > 0
            left[rate] = left.get(rate, 0) - 1
            run = {"slo_p99": 120.0 if failing else 10.0, "p50": 1.5, "errors": {}, "ok": 100}
            tried.append(gen.send(run))
    except StopIteration as done:
        return done.value, tried


def test_search_runs_a_tail_failure_once_more_and_the_second_run_decides() -> None:
    found, tried = _tail_failures({100: 1}, start=100)  # one stall at 100/s: the repeat passes
    assert tried[:3] == [100, 100, 200]
    assert found == 400  # 3 counted runs: 100 (confirmed), 200, 400 all pass
    found, tried = _tail_failures({100: 2}, start=100)  # fails twice: a real miss
    assert tried[:3] == [100, 100, 50]
    assert found == pytest.approx(math.sqrt(50 * 100))  # 50 passes, then the bisection between


def test_search_does_not_repeat_an_overloaded_run() -> None:
    gen = measure.max_rate_search(100, slo_ms=50, ceiling=10_000, runs=2, tolerance=0.1)
    assert next(gen) == 100
    assert gen.send({"slo_p99": 900.0, "p50": 400.0, "errors": {}, "ok": 100}) == 50
    errors = measure.max_rate_search(100, slo_ms=50, ceiling=10_000, runs=2, tolerance=0.1)
    next(errors)
    assert errors.send({"slo_p99": 10.0, "p50": 1.0, "errors": {"503": 1}, "ok": 99}) == 50


def test_pooled_low_rate_percentiles_come_from_every_rounds_queries() -> None:
    def round_(latencies: list[float], cpu: float) -> dict[str, object]:
        return {
            "rate": 20.0, "duration_s": 6.0, "scheduled": len(latencies), "ok": len(latencies),
            "errors": {}, "p99": max(latencies), "send_lag_p99": 0.5, "latencies_ms": latencies,
            "server_cpu_s": {"gateway": cpu}, "other_on_server_core": 0.1,
            "variants": {"m.v": len(latencies)},
        }  # fmt: skip

    quiet = [1.0] * 99 + [2.0]
    noisy = [1.0] * 98 + [30.0, 40.0]
    out = measure.pooled([round_(quiet, 0.1), round_(noisy, 0.2), round_(quiet, 0.1)])
    assert out["ok"] == 300 and out["rounds"] == 3
    assert out["p50"] == 1.0
    assert 2.0 <= out["p99"] < 30.0  # 2 slow queries of 300 are above the pooled p99
    assert out["p999"] >= 30.0
    assert out["median_round_p99"] == 2.0
    assert out["server_cpu_s"] == {"gateway": pytest.approx(0.4)}
    assert out["variants"] == {"m.v": 300}


def test_low_rate_ratios_carry_an_interval_that_separates_only_what_differs() -> None:
    rng = np.random.default_rng(7)
    theirs = [list(rng.exponential(1.0, 300)) for _ in range(12)]
    alike = [list(rng.exponential(1.0, 300)) for _ in range(12)]
    slower = [list(rng.exponential(1.5, 300)) for _ in range(12)]
    for q, ratio, low, high in low_rate.intervals(alike, theirs):
        assert low <= ratio <= high, q
    p50 = low_rate.intervals(alike, theirs)[0]
    assert p50[2] < 1.0 < p50[3]  # the same distribution: the interval spans 1.0×
    slow50, slow99 = low_rate.intervals(slower, theirs)[:2]
    assert slow50[2] > 1.2 and slow99[2] > 1.0  # 1.5× slower: both intervals above 1.0×
    # round i of each side is drawn together: a host stall in one round of both leaves the ratio alone
    stalled = [[x + (20.0 if i == 3 else 0.0) for x in r] for i, r in enumerate(theirs)]
    same = low_rate.intervals(stalled, stalled)
    assert all(ratio == low == high == 1.0 for _, ratio, low, high in same)
    assert low_rate.ratios(slower, theirs).startswith("p50 1.")


def test_model_less_queries_are_compared_apart_from_named_ones() -> None:
    def rec(system: str, mode: str, p50: float, max_rate: float) -> dict[str, object]:
        low = {"p50": p50, "p99": 2 * p50, "p999": 3 * p50, "ok": 10, "server_cpu_s": {"x": 0.01}}
        closed = {"throughput": max_rate}
        return {"system": system, "mode": mode, "low": low, "max_rate": max_rate, "closed": closed}

    eps = {
        "infaas": rec("infaas", "adaptive", 2.0, 300),
        "infaas model-less": rec("infaas", "model-less", 1.0, 3000),
        "a": rec("a", "off", 4.0, 100),
    }
    named = {r[0]: r for r in report.ratios(eps) or []}
    less = {r[0]: r for r in report.ratios(eps, "model-less") or []}
    assert named["highest rate with p99 ≤ SLO (q/s)"][3] == "3.00×"
    assert less["highest rate with p99 ≤ SLO (q/s)"][3] == "30.00×"
    assert report.infaas_cpu(eps)[0][0] == "low rate"


def test_ratios_compare_with_the_best_peer_in_each_direction() -> None:
    def rec(system: str, p50: float, max_rate: float) -> dict[str, object]:
        low = {"p50": p50, "p99": 2 * p50, "p999": 3 * p50, "ok": 10, "server_cpu_s": {"x": 0.01}}
        return {"system": system, "low": low, "max_rate": max_rate, "closed": {"throughput": max_rate}}

    eps = {"infaas": rec("infaas", 2.0, 300), "a": rec("a", 4.0, 100), "b": rec("b", 8.0, 150)}
    rows = {r[0]: r for r in report.ratios(eps) or []}
    assert rows["p50 at the low rate (ms)"][2].endswith("(a)")
    assert rows["p50 at the low rate (ms)"][3] == "0.50×"
    assert rows["highest rate with p99 ≤ SLO (q/s)"][2].endswith("(b)")
    assert rows["highest rate with p99 ≤ SLO (q/s)"][3] == "2.00×"


TIMEHIST = """\
           time    cpu  task name                       wait time  sch delay   run time
                        [tid/pid]                          (msec)     (msec)     (msec)
--------------- ------  ------------------------------  ---------  ---------  ---------
    100.000000 [0000]  <idle>                              0.000      0.000      0.000
    100.001000 [0000]  python[11/10]                       0.000      0.000      1.000
    100.004000 [0000]  redis-server[20]                    0.000      0.000      3.000
    100.006000 [0000]  python[12/10]                       0.000      0.000      2.000
    100.500000 [0000]  <idle>                              0.000      0.000    494.000
    100.500200 [0000]  kdamond.0[5]                        0.000      0.000      0.200
    101.000000 [0000]  <idle>                              0.000      0.000    499.800
    101.000500 [0000]  python[30/30]                       0.000      0.000      0.500
"""


def test_busy_periods_join_back_to_back_runs_and_name_who_filled_the_long_ones() -> None:
    periods = busy.parse(TIMEHIST, {10: "planner", 20: "redis"})
    # 100.000-100.006 is one period of 6 ms (three runs back to back), then two short ones.
    assert sorted(round(x, 3) for x in periods.lengths_ms) == [0.2, 0.5, 6.0]
    per_s = 3.0 / periods.seconds
    assert periods.in_long == pytest.approx({"planner": per_s, "redis": per_s})
    assert set(periods.overall) == {"planner", "redis", "kdamond.0", "python"}  # pid 30 is nobody's: its comm
    assert periods.long_ms_per_s(5.0) == pytest.approx(6.0 / periods.seconds)
    assert periods.long_ms_per_s(10.0) == 0.0


def test_interleaved_warms_each_condition_then_reverses_the_order_every_other_round(
    capsys: pytest.CaptureFixture[str],
) -> None:
    calls: list[tuple[str, float]] = []

    def run(label: str, seconds: float) -> dict[str, object]:
        calls.append((label, seconds))
        n = len(calls)
        return {"latencies_ms": [float(n)], "p50": n, "p99": n, "errors": 0, "ok": 1, "server_cpu_s": {}}

    pooled = measure.interleaved(run, ["a", "b", "c"], rounds=3, round_s=20.0)

    assert calls[:3] == [("a", 2.0), ("b", 2.0), ("c", 2.0)]  # warm, not recorded
    assert [label for label, _ in calls[3:]] == ["a", "b", "c", "c", "b", "a", "a", "b", "c"]
    assert all(seconds == 20.0 for _, seconds in calls[3:])
    assert pooled == {"a": [4.0, 9.0, 10.0], "b": [5.0, 8.0, 11.0], "c": [6.0, 7.0, 12.0]}
    assert len(capsys.readouterr().out.splitlines()) == 9  # one line per recorded round


def test_cpu_per_query_names_the_busiest_processes_in_microseconds_per_answer() -> None:
    r = {"ok": 50, "server_cpu_s": {"gateway": 0.05, "executor": 0.025, "planner": 0.01, "jobs": 0.001}}
    assert measure.cpu_per_query(r) == "CPU µs/query gateway 1000, executor 500, planner 200"


def test_every_segment_stamp_finds_its_anchor_once_in_the_tree() -> None:
    """The segment tool edits a copy of the tree at these anchors: code that moves one must move it too,
    or the tool would stop (it refuses to measure with a stamp missing)."""
    root = Path(__file__).resolve().parents[3]
    for rel, anchor, _ in segments.EDITS:
        assert (root / rel).read_text().count(anchor) == 1, (rel, anchor)


def test_every_file_the_segment_tool_edits_still_compiles_edited() -> None:
    """An anchor found once can still sit at another indentation (inside a branch): the edited file
    would not import, and the tool would measure a suite that cannot start."""
    root = Path(__file__).resolve().parents[3]
    edited: dict[str, str] = {}
    for rel, anchor, replacement in segments.EDITS:
        text = edited.get(rel, (root / rel).read_text())
        edited[rel] = text.replace(anchor, replacement)
    for rel, text in edited.items():
        compile(text, rel, "exec")


def test_segments_keep_only_queries_whose_stamps_are_all_there_and_in_order() -> None:
    columns = (*segments.GATEWAY, "G5", *segments.EXECUTOR)
    at = {k: 1.0 + segments.ORDER.index(k) * 1e-5 for k in columns}  # 10 µs between stamps in order
    good = [at[k] for k in columns]
    overlapped = dict(at, G3=at["G0"])  # another query's stamp: out of order
    missing = dict(at, Gi=0.0)  # a stamp that was not set
    rows = np.array([good, [overlapped[k] for k in columns], [missing[k] for k in columns]])
    parts = segments.segments(rows)
    assert parts["E0 → E1"].tolist() == pytest.approx([10.0])  # one query kept, in µs
    assert parts["G0 → G5 (server)"].tolist() == pytest.approx([10.0 * (len(segments.ORDER) - 1)])
    assert len(parts) == len(segments.ORDER)  # every consecutive pair, and the whole


def _checkout(root: Path, *, venv: bool = True) -> Path:
    (root / "infaas_cli").mkdir(parents=True)
    (root / "infaas_cli" / "launcher.py").write_text("")
    if venv:
        (root / ".venv" / "bin").mkdir(parents=True)
        (root / ".venv" / "bin" / "python").write_text("")
    return root


def test_a_build_is_a_checkout_with_its_own_virtualenv_measured_as_infaas_at_its_name(tmp_path: Path) -> None:
    base = _checkout(tmp_path / "base")
    builds = infaas_side.parse_builds([f"before={base}"])
    assert list(builds) == ["infaas@before"]
    build = builds["infaas@before"]
    assert (build.name, build.root, build.python) == ("before", base, base / ".venv" / "bin" / "python")
    assert (
        systems.is_infaas(build.system) and systems.is_infaas("infaas") and not systems.is_infaas("fastapi")
    )


@pytest.mark.parametrize("item", ["before", "=/tmp", "before=", "a@b=/tmp", "nowhere=/nonexistent/checkout"])
def test_a_build_that_is_not_a_checkout_is_refused_before_anything_starts(item: str) -> None:
    with pytest.raises(SystemExit):
        infaas_side.parse_builds([item])


def test_a_checkout_without_its_own_virtualenv_is_refused(tmp_path: Path) -> None:
    bare = _checkout(tmp_path / "bare", venv=False)
    with pytest.raises(SystemExit, match="make install"):
        infaas_side.parse_builds([f"bare={bare}"])


def test_another_builds_endpoints_are_infaas_endpoints_under_its_own_name() -> None:
    (named,) = systems.endpoints("infaas@before", 8123, ["tiny"], {"Authorization": "Bearer k"})
    (ours,) = systems.endpoints("infaas", 8124, ["tiny"], {"Authorization": "Bearer k"})
    assert (named.label, named.path, named.headers) == ("infaas@before", ours.path, ours.headers)
    (less,) = infaas_side.model_less_endpoints(8123, "k", {"tiny": 0.9}, "infaas@before")
    assert less.label == "infaas@before model-less"
    assert named.logits(b'{"outputs": {"logits": [[0,1,2,3,4,5,6,7,8,9]]}}').shape == (1, 10)


def test_a_build_is_compared_with_the_best_peer_and_this_build_with_it() -> None:
    def rec(system: str, p50: float, max_rate: float) -> dict[str, object]:
        low = {"p50": p50, "p99": 2 * p50, "p999": 3 * p50, "ok": 10, "server_cpu_s": {"x": 0.01}}
        return {"system": system, "low": low, "max_rate": max_rate, "closed": {"throughput": max_rate}}

    eps = {
        "infaas": rec("infaas", 2.0, 300),
        "infaas@before": rec("infaas@before", 2.5, 200),
        "a": rec("a", 4.0, 100),
    }
    assert report.builds(eps) == ["infaas@before"]
    to_peer = {r[0]: r for r in report.ratios(eps) or []}
    assert to_peer["p50 at the low rate (ms)"][2].endswith("(a)")  # another build is never "the best peer"
    theirs = {r[0]: r for r in report.ratios(eps, system="infaas@before") or []}
    assert theirs["highest rate with p99 ≤ SLO (q/s)"][3] == "2.00×"
    after = {r[0]: r for r in report.ratios(eps, against="infaas@before") or []}
    assert after["p50 at the low rate (ms)"][2].endswith("(infaas@before)")
    assert after["p50 at the low rate (ms)"][3] == "0.80×"
    assert after["highest rate with p99 ≤ SLO (q/s)"][3] == "1.50×"
