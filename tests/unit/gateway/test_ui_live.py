"""The admin UI's pure parts: load from Prometheus scrapes, and the SVG charts."""

from __future__ import annotations

import math

import pytest
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest

from gateway.ui import live
from gateway.ui.svg import Point, Series, lines, nice_ticks, scatter


def scrape_text(*, ok: int, slow: int, misses: int, met: int, rows: int, batches: int) -> str:
    """A gateway + executor scrape: `ok` queries at ≤ 5 ms, `slow` between 50 and 100 ms."""
    route = 'method="POST",route="/v1/apps/{app}/infer"'
    return f"""
# TYPE infaas_gateway_http_request_duration_seconds histogram
infaas_gateway_http_request_duration_seconds_bucket{{{route},le="0.005"}} {ok}
infaas_gateway_http_request_duration_seconds_bucket{{{route},le="0.05"}} {ok}
infaas_gateway_http_request_duration_seconds_bucket{{{route},le="0.1"}} {ok + slow}
infaas_gateway_http_request_duration_seconds_bucket{{{route},le="+Inf"}} {ok + slow}
infaas_gateway_http_request_duration_seconds_count{{{route}}} {ok + slow}
infaas_gateway_http_request_duration_seconds_sum{{{route}}} 1.0
infaas_gateway_http_request_duration_seconds_bucket{{method="GET",route="/v1/models",le="0.005"}} 50
infaas_gateway_http_request_duration_seconds_bucket{{method="GET",route="/v1/models",le="+Inf"}} 50
# TYPE infaas_scheduler_slo counter
infaas_scheduler_slo_total{{met="true"}} {met}
infaas_scheduler_slo_total{{met="false"}} {misses}
# TYPE infaas_scheduler_pending_requests gauge
infaas_scheduler_pending_requests 3
# TYPE infaas_inference_count counter
infaas_inference_count_total{{variant="m.a"}} {rows}
# TYPE infaas_inference_exec_count counter
infaas_inference_exec_count_total{{variant="m.a"}} {batches}
# TYPE infaas_inference_request_success counter
infaas_inference_request_success_total{{variant="m.a"}} {rows}
"""


def test_quantile_interpolates_inside_the_bucket_like_promql() -> None:
    buckets = [(0.01, 50.0), (0.1, 100.0), (math.inf, 100.0)]
    assert live.quantile(0.5, buckets) == pytest.approx(0.01)
    assert live.quantile(0.75, buckets) == pytest.approx(0.055)
    assert live.quantile(0.99, [(0.01, 0.0), (math.inf, 10.0)]) == 0.01  # beyond the last bound
    assert live.quantile(0.99, [(0.01, 0.0), (math.inf, 0.0)]) is None


def test_load_over_a_window_is_the_difference_of_two_scrapes() -> None:
    before = live.parse(scrape_text(ok=100, slow=0, misses=0, met=100, rows=100, batches=50))
    after = live.parse(scrape_text(ok=190, slow=10, misses=10, met=190, rows=300, batches=100))
    window = live.load(live.difference(after, before), 10.0)
    assert window.queries == 100 and window.queries_per_s == pytest.approx(10.0)
    assert window.slo_miss_rate == pytest.approx(10 / 100)  # 90 met and 10 missed in the window
    assert window.p50_ms is not None and window.p50_ms <= 5.0
    assert window.p99_ms is not None and 50 < window.p99_ms <= 100  # the slow tenth sets the p99
    assert window.pending == 3  # a gauge is as it is now
    (variant,) = window.variants
    assert variant.rows_per_s == pytest.approx(20.0) and variant.mean_batch == pytest.approx(4.0)

    since_start = live.load(after, None)
    assert since_start.queries == 200 and since_start.queries_per_s is None
    assert since_start.slo_miss_rate == pytest.approx(10 / 200)


def test_a_restarted_process_counts_from_zero_and_executors_add_up() -> None:
    before = live.parse(scrape_text(ok=500, slow=0, misses=0, met=0, rows=900, batches=90))
    after = live.parse(scrape_text(ok=20, slow=0, misses=0, met=0, rows=40, batches=10))
    assert live.load(live.difference(after, before), 2.0).queries == 20
    two = live.merge([after, after])
    assert live.load(two, None).variants[0].rows == 80


def test_scrape_history_differences_against_an_old_enough_scrape() -> None:
    history = live.ScrapeHistory(keep_s=60, min_window_s=1)
    assert history.add(100.0, {}) is None
    assert history.add(100.5, {}) is None  # too recent to make a rate from
    base = history.add(110.0, {})
    assert base is not None and base[0] == 100.0
    base = history.add(200.0, {})  # everything before 140 s is forgotten
    assert base is None


def test_scatter_draws_one_escaped_mark_per_point() -> None:
    svg = scatter(
        "t",
        [Point(0.1, 0.9, "a<b>"), Point(0.3, 0.95, "c", muted=True), Point(math.nan, 1, "skipped")],
        x_label="ms",
        y_label="accuracy",
    )
    assert svg.count('class="point') == 2 and svg.count('class="point muted"') == 1
    assert "a&lt;b&gt;" in svg and "<b>" not in svg and "skipped" not in svg
    assert svg.startswith("<svg") and "<script" not in svg


def test_line_chart_has_a_series_per_variant_on_a_log2_batch_axis() -> None:
    svg = lines(
        "t",
        [Series("v1", [(1, 0.1), (4, 0.2), (16, 0.5)]), Series("v2", [(1, 0.2)])],
        x_label="b",
        y_label="ms",
    )
    assert svg.count("<polyline") == 2 and svg.count('class="point"') == 4
    assert ">16</text>" in svg and ">8</text>" in svg  # powers of two between 1 and 16
    empty = lines("t", [], x_label="b", y_label="ms")
    assert "no latency measurements yet" in empty


def test_nice_ticks_cover_the_range_with_round_steps() -> None:
    ticks = nice_ticks(0.013, 0.47)
    assert ticks[0] <= 0.013 and ticks[-1] >= 0.47
    steps = {round(b - a, 9) for a, b in zip(ticks, ticks[1:], strict=False)}
    assert len(steps) == 1 and steps.pop() in (0.1, 0.05, 0.2, 0.25)
    assert nice_ticks(1.0, 1.0)[-1] > 1.0


def test_the_chart_series_read_alone_equal_those_of_a_full_parse() -> None:
    text = scrape_text(ok=90, slow=10, misses=4, met=96, rows=100, batches=20)
    full = live.parse(text)
    only = live.parse_only(text, live.CHART_SAMPLES)
    assert set(only) == {"infaas_gateway_http_request_duration_seconds_bucket", "infaas_scheduler_slo_total"}
    assert all(only[name] == full[name] for name in only)
    assert live.parse_only("# nothing\n", live.CHART_SAMPLES) == {}

    # In process: the families a scrape would render, without the text.
    registry = CollectorRegistry()
    requests = Histogram(
        "infaas_gateway_http_request_duration_seconds", "", ["method", "route"], registry=registry
    )
    slo = Counter("infaas_scheduler_slo", "", ["met"], registry=registry)
    other = Counter("infaas_inference_count", "", ["variant"], registry=registry)
    requests.labels("POST", "/v1/apps/{app}/infer").observe(0.004)
    slo.labels("false").inc(2)
    other.labels("m.a").inc(5)
    collected = live.collected(registry.collect(), live.CHART_SAMPLES)
    assert set(collected) == {
        "infaas_gateway_http_request_duration_seconds_bucket",
        "infaas_scheduler_slo_total",
    }
    parsed = live.parse(generate_latest(registry).decode())
    assert all(collected[name] == parsed[name] for name in collected)
    assert live.load(collected, None).slo_missed == 2
