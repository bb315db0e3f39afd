"""The variant rows of `variants.py`: one ready variant as its tables, plot and `variants.json` show
it, read from the registry's variant JSON, and the plain-text and Markdown tables."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

MIB = 1024 * 1024

Variant = Mapping[str, Any]


@dataclass(frozen=True)
class Row:
    """One ready variant as the tables, the plot and `variants.json` show it."""

    id: str
    variant: str  # the id without the `<model>.` prefix
    runtime: str
    precision: str
    optimization: str
    hardware: str
    threads: int
    max_batch: int
    accuracy: float
    p50_ms_b1: float
    p99_ms_b1: float
    best_batch: int
    best_batch_p50_ms: float
    best_rows_per_s: float
    saturation_qps: float | None
    peak_memory_mib: float | None
    cost_per_1m_queries: float | None
    load_ms: float | None
    dominated: bool


def point_at(latency: Sequence[Mapping[str, Any]], batch: int) -> Mapping[str, Any]:
    """The measured point of exactly `batch` rows, else the smallest measured batch above it, else the
    largest measured one."""
    ordered = sorted(latency, key=lambda p: int(p["batch"]))
    if not ordered:
        raise ValueError("no latency points")
    return next((p for p in ordered if int(p["batch"]) >= batch), ordered[-1])


def best_batch(
    latency: Sequence[Mapping[str, Any]], max_batch: int | None = None
) -> tuple[int, float, float]:
    """(batch, its p50 ms, rows/s) of the batch size with the highest throughput `batch * 1000 / p50`,
    among points up to `max_batch`. Ties go to the smaller batch (same throughput, lower latency)."""
    usable = [
        p for p in latency if float(p["p50_ms"]) > 0 and (max_batch is None or int(p["batch"]) <= max_batch)
    ]
    if not usable:
        raise ValueError("no usable latency points")
    best = max(usable, key=lambda p: (int(p["batch"]) * 1000.0 / float(p["p50_ms"]), -int(p["batch"])))
    batch, p50 = int(best["batch"]), float(best["p50_ms"])
    return batch, p50, batch * 1000.0 / p50


def short_id(variant_id: str) -> str:
    """`digits-cnn.onnxruntime-basic-fp32-cpu-b16-t2` → `onnxruntime-basic-fp32-cpu-b16-t2`."""
    return variant_id.partition(".")[2] or variant_id


def to_row(v: Variant) -> Row:
    """A ready variant's table row (raises ValueError for a variant without latency points)."""
    latency = v.get("latency") or []
    first = point_at(latency, 1)
    batch, batch_p50, rows_per_s = best_batch(latency, int(v["max_batch"]))
    memory = v.get("peak_memory_bytes")
    cost = v.get("cost_per_query")
    return Row(
        id=str(v["id"]),
        variant=short_id(str(v["id"])),
        runtime=str(v.get("runtime", "")),
        precision=str(v["precision"]),
        optimization=str(v["optimization"]),
        hardware=str(v.get("hardware", "")),
        threads=int(v["threads"]),
        max_batch=int(v["max_batch"]),
        accuracy=float(v.get("accuracy") or 0.0),
        p50_ms_b1=float(first["p50_ms"]),
        p99_ms_b1=float(first["p99_ms"]),
        best_batch=batch,
        best_batch_p50_ms=batch_p50,
        best_rows_per_s=rows_per_s,
        saturation_qps=None if v.get("saturation_qps") is None else float(v["saturation_qps"]),
        peak_memory_mib=None if memory is None else int(memory) / MIB,
        cost_per_1m_queries=None if cost is None else float(cost) * 1e6,
        load_ms=None if v.get("load_ms") is None else float(v["load_ms"]),
        dominated=bool(v.get("dominated", False)),
    )


def variant_rows(variants: Iterable[Variant]) -> list[Row]:
    """Rows of the ready, measured variants, fastest at batch 1 first; variants sharing a measurement
    (same p50) stay together, ordered by max batch."""
    rows = [to_row(v) for v in variants if v.get("status") == "ready" and v.get("latency")]
    return sorted(
        rows, key=lambda r: (r.p50_ms_b1, r.precision, r.optimization, r.threads, r.max_batch, r.id)
    )


def not_ready(variants: Iterable[Variant]) -> Counter[tuple[str, str]]:
    """(status, reason) → number of variants that are not ready."""
    return Counter(
        (str(v.get("status")), str(v.get("status_reason") or "no reason given"))
        for v in variants
        if v.get("status") != "ready"
    )


def fmt_num(x: float | None, digits: int = 3) -> str:
    """Three significant digits without scientific notation in the range we see (0.0001 … 1e6)."""
    if x is None or math.isnan(x):
        return "–"
    if x == 0:
        return "0"
    if abs(x) >= 10 ** (digits - 1):
        return f"{x:,.0f}"
    decimals = digits - 1 - math.floor(math.log10(abs(x)))
    return f"{x:.{decimals}f}"


COLUMNS = (
    "variant",
    "precision",
    "optimization",
    "threads",
    "max batch",
    "accuracy",
    "p50 ms @1",
    "best batch",
    "p50 ms @best",
    "saturation rows/s",
    "peak MiB",
    "$/1M queries",
    "dominated",
)
_RIGHT = frozenset(COLUMNS[3:12])  # the numeric columns


def cells(row: Row) -> list[str]:
    return [
        row.variant,
        row.precision,
        row.optimization,
        str(row.threads),
        str(row.max_batch),
        f"{row.accuracy:.4f}",
        fmt_num(row.p50_ms_b1),
        str(row.best_batch),
        fmt_num(row.best_batch_p50_ms),
        fmt_num(row.saturation_qps),
        fmt_num(row.peak_memory_mib),
        fmt_num(row.cost_per_1m_queries),
        "yes" if row.dominated else "",
    ]


def format_table(rows: Sequence[Row]) -> str:
    """A plain-text table with aligned columns (numbers right-aligned)."""
    body = [cells(r) for r in rows]
    widths = [max(len(h), *(len(c[i]) for c in body)) for i, h in enumerate(COLUMNS)]

    def line(values: Sequence[str]) -> str:
        out = [
            v.rjust(w) if h in _RIGHT else v.ljust(w) for v, w, h in zip(values, widths, COLUMNS, strict=True)
        ]
        return "  ".join(out).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(COLUMNS), rule, *(line(c) for c in body)])


def format_markdown(rows: Sequence[Row]) -> str:
    """The same table in GitHub Markdown (numbers right-aligned)."""
    header = "| " + " | ".join(COLUMNS) + " |"
    align = "|" + "|".join("---:" if h in _RIGHT else "---" for h in COLUMNS) + "|"
    body = ["| " + " | ".join(c.replace("|", "\\|") for c in cells(r)) + " |" for r in rows]
    return "\n".join([header, align, *body])
