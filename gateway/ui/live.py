"""Live load for the admin UI, computed from Prometheus scrapes of the serving processes.

A scrape is the merged samples of the gateway itself (its HTTP histograms; the embedded scheduler's
SLO and cache counters), the scheduler service when it runs apart, and every live executor. Rates
and quantiles over a window come from the difference of two scrapes, like PromQL's `rate` and
`histogram_quantile`; without an earlier scrape only totals since start are known. Pure functions of
the scrapes, so they are tested without servers.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families

Labels = tuple[tuple[str, str], ...]
Samples = dict[str, dict[Labels, float]]

INFER_ROUTE_SUFFIX = "/infer"
# Counters and histogram parts are cumulative and are differenced; everything else is a gauge.
_CUMULATIVE = ("_total", "_bucket", "_count", "_sum")


def parse(text: str) -> Samples:
    """Prometheus text → {sample name: {labels: value}}."""
    out: Samples = defaultdict(dict)
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[s.name][tuple(sorted(s.labels.items()))] = float(s.value)
    return dict(out)


CHART_SAMPLES = (
    "infaas_gateway_http_request_duration_seconds_bucket",
    "infaas_scheduler_slo_total",
    "infaas_shed_requests_total",
)
"""What a load chart point needs (`timeline.point`): queries and their latency at the gateway, SLO
misses and shed queries. All of them are the gateway's own (with the scheduler embedded) or the
scheduler service's; executors' series are not needed."""


def parse_only(text: str, names: Iterable[str]) -> Samples:
    """`parse` of the lines of `names` alone: the rest of the text is dropped before the (slow)
    Prometheus parser sees it."""
    kept = tuple(names)
    lines = [line for line in text.splitlines() if line.startswith(kept)]
    return parse("\n".join(lines) + "\n") if lines else {}


def collected(families: Iterable[Metric], names: Iterable[str]) -> Samples:
    """Samples of `names` from metric families collected in this process (no text rendered or parsed)."""
    kept = frozenset(names)
    out: Samples = defaultdict(dict)
    for family in families:
        for s in family.samples:
            if s.name in kept:
                out[s.name][tuple(sorted(s.labels.items()))] = float(s.value)
    return dict(out)


def merge(parts: Iterable[Samples]) -> Samples:
    """Samples of several processes as one: equal names and labels add up (a variant on two workers)."""
    out: Samples = defaultdict(lambda: defaultdict(float))
    for part in parts:
        for name, series in part.items():
            for labels, value in series.items():
                out[name][labels] += value
    return {name: dict(series) for name, series in out.items()}


def difference(cur: Samples, prev: Samples) -> Samples:
    """What happened between two scrapes: cumulative series subtracted (a reset counts from zero),
    gauges as they are now."""
    out: Samples = {}
    for name, series in cur.items():
        if not name.endswith(_CUMULATIVE):
            out[name] = dict(series)
            continue
        before = prev.get(name, {})
        out[name] = {
            labels: value - before.get(labels, 0.0) if value >= before.get(labels, 0.0) else value
            for labels, value in series.items()
        }
    return out


def total(samples: Samples, name: str, **match: str) -> float:
    return sum(v for labels, v in samples.get(name, {}).items() if _matches(labels, match))


def by_label(samples: Samples, name: str, label: str, **match: str) -> dict[str, float]:
    out: dict[str, float] = defaultdict(float)
    for labels, v in samples.get(name, {}).items():
        d = dict(labels)
        if label in d and _matches(labels, match):
            out[d[label]] += v
    return dict(out)


def _matches(labels: Labels, match: Mapping[str, str]) -> bool:
    d = dict(labels)
    return all(d.get(k) == v for k, v in match.items())


def bucket_counts(
    samples: Samples, name: str, *, keep: Callable[[dict[str, str]], bool] | None = None, **match: str
) -> list[tuple[float, float]]:
    """Cumulative `(le, count)` of a histogram over the series with labels `match` (and `keep(labels)`),
    summed over every other label."""
    counts: dict[float, float] = defaultdict(float)
    for labels, v in samples.get(f"{name}_bucket", {}).items():
        d = dict(labels)
        if (keep is not None and not keep(d)) or not _matches(labels, match):
            continue
        counts[float(d["le"])] += v
    return sorted(counts.items())


def quantile(q: float, buckets: list[tuple[float, float]]) -> float | None:
    """PromQL's `histogram_quantile`: linear inside the bucket; None without observations."""
    if not buckets or buckets[-1][1] <= 0:
        return None
    rank = q * buckets[-1][1]
    lower_bound, lower_count = 0.0, 0.0
    for bound, count in buckets:
        if count >= rank:
            if math.isinf(bound):
                return lower_bound  # beyond the last finite bucket: its bound is all we know
            width = count - lower_count
            return lower_bound + (bound - lower_bound) * ((rank - lower_count) / width if width else 1.0)
        lower_bound, lower_count = bound, count
    return lower_bound


@dataclass(frozen=True)
class VariantLoad:
    variant: str
    queries: float
    rows: float
    batches: float
    failures: float
    pending: float
    queries_per_s: float | None
    rows_per_s: float | None
    mean_batch: float | None
    p99_compute_ms: float | None
    p99_queue_ms: float | None


@dataclass(frozen=True)
class Load:
    """Load over one window (or since start when `seconds` is None)."""

    seconds: float | None
    queries: float
    queries_per_s: float | None
    p50_ms: float | None
    p99_ms: float | None
    slo_queries: float
    slo_missed: float
    slo_miss_rate: float | None
    cache_hit_ratio: float | None
    shed: float
    pending: float
    variants: list[VariantLoad] = field(default_factory=list)


def _is_infer_route(labels: dict[str, str]) -> bool:
    return labels.get("route", "").endswith(INFER_ROUTE_SUFFIX)


def load(samples: Samples, seconds: float | None) -> Load:
    """Everything the load page shows, from one (differenced or cumulative) set of samples."""

    def rate(count: float) -> float | None:
        return count / seconds if seconds else None

    def ms(value: float | None) -> float | None:
        return None if value is None else value * 1000

    requests = bucket_counts(samples, "infaas_gateway_http_request_duration_seconds", keep=_is_infer_route)
    queries = requests[-1][1] if requests else 0.0
    met = by_label(samples, "infaas_scheduler_slo_total", "met")
    slo_queries = sum(met.values())
    cache = by_label(samples, "infaas_cache_requests_total", "result")
    looked_up = sum(cache.values())
    variants = []
    answered = by_label(samples, "infaas_inference_request_success_total", "variant")
    failed = by_label(samples, "infaas_inference_request_failure_total", "variant")
    rows = by_label(samples, "infaas_inference_count_total", "variant")
    batches = by_label(samples, "infaas_inference_exec_count_total", "variant")
    pending = by_label(samples, "infaas_inference_pending_request_count", "variant")
    for vid in sorted(set(answered) | set(failed) | set(rows) | set(pending)):
        compute = bucket_counts(samples, "infaas_executor_compute_duration_seconds", variant=vid)
        waited = bucket_counts(samples, "infaas_executor_queue_duration_seconds", variant=vid)
        n_batches = batches.get(vid, 0.0)
        variants.append(
            VariantLoad(
                variant=vid,
                queries=answered.get(vid, 0.0),
                rows=rows.get(vid, 0.0),
                batches=n_batches,
                failures=failed.get(vid, 0.0),
                pending=pending.get(vid, 0.0),
                queries_per_s=rate(answered.get(vid, 0.0)),
                rows_per_s=rate(rows.get(vid, 0.0)),
                mean_batch=rows.get(vid, 0.0) / n_batches if n_batches else None,
                p99_compute_ms=ms(quantile(0.99, compute)),
                p99_queue_ms=ms(quantile(0.99, waited)),
            )
        )
    return Load(
        seconds=seconds,
        queries=queries,
        queries_per_s=rate(queries),
        p50_ms=ms(quantile(0.5, requests)),
        p99_ms=ms(quantile(0.99, requests)),
        slo_queries=slo_queries,
        slo_missed=met.get("false", 0.0),
        slo_miss_rate=met.get("false", 0.0) / slo_queries if slo_queries else None,
        cache_hit_ratio=cache.get("hit", 0.0) / looked_up if looked_up else None,
        shed=total(samples, "infaas_shed_requests_total"),
        pending=total(samples, "infaas_scheduler_pending_requests"),
        variants=variants,
    )


@dataclass
class ScrapeHistory:
    """The last scrapes this gateway process took, to difference the newest against an older one."""

    keep_s: float = 60.0
    min_window_s: float = 1.0
    scrapes: list[tuple[float, Samples]] = field(default_factory=list)

    def add(self, at: float, samples: Samples) -> tuple[float, Samples] | None:
        """Record a scrape; returns the oldest earlier one within `keep_s` (at least `min_window_s` old)."""
        self.scrapes = [(t, s) for t, s in self.scrapes if at - t <= self.keep_s]
        base = next(((t, s) for t, s in self.scrapes if at - t >= self.min_window_s), None)
        self.scrapes.append((at, samples))
        if len(self.scrapes) > 64:
            del self.scrapes[0]
        return base
