"""The pure parts of `bench.diagnostics.variants`: rows from variant JSON, best batch and tables
(`variant_rows`), the SVG plot (`variant_plot`)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

import pytest

from bench.diagnostics import variant_plot as plot
from bench.diagnostics import variant_rows as table

SVG = "{http://www.w3.org/2000/svg}"


def variant(
    model: str,
    suffix: str,
    points: list[tuple[int, float]],
    *,
    accuracy: float = 0.95,
    max_batch: int = 64,
    threads: int = 1,
    precision: str = "fp32",
    status: str = "ready",
    dominated: bool = False,
    reason: str | None = None,
) -> dict[str, Any]:
    ready = status == "ready"
    return {
        "id": f"{model}.onnxruntime-{suffix}-cpu-b{max_batch}-t{threads}",
        "model": model,
        "runtime": "onnxruntime",
        "provider": "CPUExecutionProvider",
        "optimization": suffix.split("-")[0],
        "precision": precision,
        "hardware": "cpu",
        "max_batch": max_batch,
        "threads": threads,
        "status": status,
        "status_reason": reason,
        "accuracy": accuracy if ready else None,
        "load_ms": 1.0 if ready else None,
        "latency": [{"batch": b, "p50_ms": p, "p99_ms": p * 1.5} for b, p in points] if ready else None,
        "saturation_qps": max(b * 1000 / p for b, p in points) if ready else None,
        "peak_memory_bytes": 3 * 1024 * 1024 if ready else None,
        "interference": None,
        "cost_per_s": 1.3e-5 if ready else None,
        "cost_per_query": 2.5e-9 if ready else None,
        "dominated": dominated,
    }


def _runs(rule: str) -> list[tuple[int, str]]:
    """(start, run) of each run of dashes in a table rule."""
    out, i = [], 0
    for run in rule.split(" "):
        if run:
            out.append((i, run))
        i += len(run) + 1
    return out


def _centre(element: ET.Element) -> tuple[float, float]:
    """Centre of a circle, or of a polygon's bounding box."""
    if element.tag == f"{SVG}circle":
        return float(element.get("cx", "nan")), float(element.get("cy", "nan"))
    pts = [tuple(map(float, p.split(","))) for p in element.get("points", "").split()]
    xs, ys = [p[0] for p in pts], [p[1] for p in pts]
    return (min(xs) + max(xs)) / 2, (min(ys) + max(ys)) / 2


# batch 1: 1000 rows/s, 4: 2000, 16: 3200, 64: 3047 → best is 16
POINTS = [(1, 1.0), (4, 2.0), (16, 5.0), (64, 21.0)]


def test_best_batch_is_the_highest_throughput() -> None:
    assert table.best_batch([{"batch": b, "p50_ms": p} for b, p in POINTS]) == (16, 5.0, 3200.0)


def test_best_batch_respects_max_batch_and_prefers_smaller_on_ties() -> None:
    points = [{"batch": b, "p50_ms": p} for b, p in POINTS]
    assert table.best_batch(points, max_batch=4) == (4, 2.0, 2000.0)
    tie = [{"batch": 1, "p50_ms": 1.0}, {"batch": 2, "p50_ms": 2.0}]
    assert table.best_batch(tie)[0] == 1
    with pytest.raises(ValueError):
        table.best_batch([{"batch": 8, "p50_ms": 1.0}], max_batch=4)


def test_rows_are_ready_variants_ordered_by_latency_at_batch_1() -> None:
    variants = [
        variant("m", "basic-fp32", [(1, 0.30), (4, 0.5)], max_batch=4),
        variant("m", "basic-int8", [(1, 0.10), (4, 0.2)], max_batch=4, precision="int8-dynamic"),
        variant("m", "basic-fp32", [(1, 0.20)], max_batch=1, dominated=True),
        variant("m", "basic-fp16", [], status="pending", reason="no CUDA device"),
    ]
    rows = table.variant_rows(variants)
    assert [r.p50_ms_b1 for r in rows] == [0.10, 0.20, 0.30]
    # variants sharing one measurement (same p50) are ordered by max batch, numerically
    shared = table.variant_rows([variant("m", "basic-fp32", [(1, 0.2)], max_batch=b) for b in (64, 4, 16, 1)])
    assert [r.max_batch for r in shared] == [1, 4, 16, 64]
    assert rows[0].variant == "onnxruntime-basic-int8-cpu-b4-t1"
    assert rows[0].best_batch == 4 and rows[0].best_batch_p50_ms == 0.2
    assert rows[0].best_rows_per_s == pytest.approx(20000.0)
    assert rows[0].peak_memory_mib == 3.0
    assert rows[0].cost_per_1m_queries == pytest.approx(2.5e-3)
    assert rows[1].dominated and not rows[0].dominated
    assert table.not_ready(variants) == {("pending", "no CUDA device"): 1}


def test_tables_have_one_line_per_row_and_aligned_columns() -> None:
    rows = table.variant_rows(
        [
            variant("m", "basic-fp32", POINTS, threads=1),
            variant("m", "basic-fp32", [(b, p * 1.4) for b, p in POINTS], threads=2, dominated=True),
        ]
    )
    text = table.format_table(rows).splitlines()
    assert len(text) == 2 + len(rows)
    assert text[0].startswith("variant")
    # every column of the header starts where the rule's dashes start; numeric cells end where they end
    rule = text[1]
    spans = [(i, i + len(dashes)) for i, dashes in _runs(rule)]
    assert len(spans) == len(table.COLUMNS)
    for line in text[2:]:
        for (start, end), column in zip(spans, table.COLUMNS, strict=True):
            cell = line[start:end]
            if column in ("p50 ms @1", "saturation rows/s"):
                assert cell.strip() and not cell.endswith(" ") and line[end : end + 1] in ("", " ")
    assert text[2][spans[6][0] : spans[6][1]].strip() == "1.00"
    md = table.format_markdown(rows).splitlines()
    assert len(md) == 2 + len(rows)
    assert all(line.startswith("| ") and line.endswith(" |") for line in md[2:])
    assert md[3].endswith("| yes |")


def test_fmt_num_keeps_three_significant_digits() -> None:
    assert table.fmt_num(0.006123) == "0.00612"
    assert table.fmt_num(0.153) == "0.153"
    assert table.fmt_num(12.34) == "12.3"
    assert table.fmt_num(7_012_345.6) == "7,012,346"
    assert table.fmt_num(None) == "–"


def test_log_positions_are_monotonic_and_span_the_axis() -> None:
    lo, hi = plot.log_domain([0.006, 0.025, 0.153])
    assert (lo, hi) == pytest.approx((0.005, 0.2))
    assert plot.log_domain([0.02]) == pytest.approx((0.02, 0.05))
    xs = [plot.log_position(v, lo, hi, 80, 700) for v in (0.005, 0.006, 0.01, 0.02, 0.1, 0.153, 0.2)]
    assert xs == sorted(xs) and len(set(xs)) == len(xs)
    assert xs[0] == pytest.approx(80) and xs[-1] == pytest.approx(700)
    # equal ratios give equal distances
    assert plot.log_position(0.01, 0.001, 1.0, 0, 300) == pytest.approx(100)
    assert plot.log_position(0.1, 0.001, 1.0, 0, 300) == pytest.approx(200)
    ticks = plot.log_ticks(lo, hi)
    assert [v for v, _ in ticks] == sorted(v for v, _ in ticks)
    assert all(lo <= v <= hi for v, _ in ticks)
    with pytest.raises(ValueError):
        plot.log_position(0.0, lo, hi, 0, 1)


def test_svg_parses_with_one_marker_per_variant_and_a_legend_entry_per_model() -> None:
    series = {
        "digits-mlp-small": table.variant_rows(
            [
                variant("a", "basic-fp32", [(1, 0.006), (64, 0.01)], accuracy=0.93),
                variant("a", "basic-fp32", [(1, 0.008)], accuracy=0.93, max_batch=1, dominated=True),
            ]
        ),
        "digits-cnn": table.variant_rows(
            [
                variant("c", "basic-fp32", [(1, 0.15), (64, 9.0)], accuracy=0.993),
                variant("c", "all-int8", [(1, 0.12)], accuracy=0.98, max_batch=1, precision="int8"),
                variant("c", "basic-fp32", [(1, 0.25)], accuracy=0.993, threads=2, dominated=True),
            ]
        ),
    }
    root = ET.fromstring(plot.render_svg(series, title="t <&> t"))
    assert root.tag == f"{SVG}svg"
    markers = [e for e in root.iter() if e.get("class") == "variant"]
    assert len(markers) == 5
    # one shape per precision: fp32 circles, anything else a polygon
    assert sorted(m.tag.removeprefix(SVG) for m in markers) == ["circle"] * 4 + ["polygon"]
    assert {m.get("data-variant") for m in markers} == {r.id for rows in series.values() for r in rows}
    legend = [g for g in root.iter(f"{SVG}g") if g.get("class") == "legend-model"]
    assert [g.get("data-model") for g in legend] == list(series)
    # colours: one per model, and dominated markers are hollow
    fills = {}
    for m in markers:
        row = next(r for rows in series.values() for r in rows if r.id == m.get("data-variant"))
        if row.dominated:
            assert m.get("fill-opacity") == "0"
        else:
            fills.setdefault(m.get("data-model"), set()).add(m.get("fill"))
    assert all(len(f) == 1 for f in fills.values()) and len(set().union(*fills.values())) == 2
    # x follows latency (log scale), y follows accuracy (higher accuracy is higher up)
    by_id = {m.get("data-variant"): m for m in markers}
    ordered = sorted((r for rows in series.values() for r in rows), key=lambda r: r.p50_ms_b1)
    xs = [_centre(by_id[r.id])[0] for r in ordered]
    assert xs == sorted(xs) and len(set(xs)) == len(xs)
    cnn = series["digits-cnn"]
    assert _centre(by_id[cnn[1].id])[1] < _centre(by_id[cnn[0].id])[1]  # 0.993 above 0.98
    texts = "".join(t.text or "" for t in root.iter(f"{SVG}text"))
    assert "t <&> t" in texts and "log scale" in texts and "accuracy" in texts
