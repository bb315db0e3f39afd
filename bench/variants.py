"""Profile the three demo models on a running system and report their variants: a table per model,
a latency–accuracy scatter plot (self-contained SVG) and the same numbers as JSON for the docs.

Against a running system (`make run`, or `.venv/bin/infaas run --no-demo`), from the repository root:

    .venv/bin/python bench/variants.py [--url http://127.0.0.1:8080] [--key KEY] [--markdown]
                                       [--out var/bench/variants.svg] [--cleanup]
    .venv/bin/python bench/variants.py --from-json var/bench/variants.json --markdown   # no system needed

Each demo model is registered under a fresh name `<name>-bench-<unix time>` in the app `bench` (created
if missing), one after the other, so that the time from the 202 until the model is `ready` is that
model's own profiling time (the profiler measures one model at a time). The admin key defaults to the
one the launcher uses (`INFAAS_ADMIN_KEY`, else `<INFAAS_VAR_DIR>/admin.key`). `variants.json` is
written next to the SVG; `--from-json` re-renders the tables and the plot from such a file.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape, quoteattr

import httpx

APP = "bench"
POLL_S = 0.5
MIB = 1024 * 1024
# Colour-blind-friendly (Okabe–Ito) colours, one per model.
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000")

Variant = Mapping[str, Any]


# --------------------------------------------------------------------------------------------- pure parts


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


# ----------------------------------------------------------------------------------------- the scatter plot


def _steps(exp_lo: int, exp_hi: int) -> list[float]:
    return [m * 10.0**e for e in range(exp_lo, exp_hi + 1) for m in (1, 2, 5)]


def log_domain(values: Iterable[float]) -> tuple[float, float]:
    """The tightest 1-2-5 bounds (…, 0.01, 0.02, 0.05, 0.1, …) enclosing the positive values."""
    positive = [v for v in values if v > 0]
    if not positive:
        return 0.1, 1.0
    vmin, vmax = min(positive), max(positive)
    steps = _steps(math.floor(math.log10(vmin)) - 1, math.ceil(math.log10(vmax)) + 1)
    lo = max(s for s in steps if s <= vmin * (1 + 1e-9))
    hi = min(s for s in steps if s >= vmax * (1 - 1e-9))
    if hi <= lo:
        hi = min(s for s in steps if s > lo)
    return lo, hi


def log_position(value: float, lo: float, hi: float, start: float, end: float) -> float:
    """Where `value` falls between pixel `start` (at `lo`) and `end` (at `hi`) on a log scale."""
    if value <= 0 or lo <= 0 or hi <= lo:
        raise ValueError("log scale needs 0 < lo < hi and a positive value")
    frac = (math.log10(value) - math.log10(lo)) / (math.log10(hi) - math.log10(lo))
    return start + frac * (end - start)


def log_ticks(lo: float, hi: float) -> list[tuple[float, bool]]:
    """(value, labelled) ticks at 1, 2 and 5 × 10^k within [lo, hi]; beyond 3 decades only the decades
    are labelled."""
    span = math.log10(hi / lo)
    ticks = [
        v
        for v in _steps(math.floor(math.log10(lo)), math.ceil(math.log10(hi)))
        if lo * (1 - 1e-9) <= v <= hi * (1 + 1e-9)
    ]
    return [(v, span <= 3 or _is_decade(v)) for v in ticks]


def _is_decade(v: float) -> bool:
    return abs(math.log10(v) - round(math.log10(v))) < 1e-9


def linear_domain(values: Iterable[float], *, ceiling: float | None = 1.0) -> tuple[float, float, float]:
    """(lo, hi, step): a 'nice' linear range around the values with about 5–8 ticks."""
    vals = list(values) or [0.0, 1.0]
    vmin, vmax = min(vals), max(vals)
    span = vmax - vmin
    pad = span * 0.08 if span > 0 else 0.01
    lo, hi = vmin - pad, vmax + pad
    if ceiling is not None and vmax <= ceiling:
        hi = min(hi, ceiling)
    raw = (hi - lo) / 6
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    return math.floor(lo / step) * step, math.ceil(hi / step) * step, step


def fmt_tick(v: float) -> str:
    return f"{v:g}" if v >= 0.001 else f"{v:.0e}"


# Marker shape per precision (everything else is drawn as a downward triangle).
SHAPES = {"fp32": "circle", "fp16": "diamond", "int8-dynamic": "square", "int8-static": "triangle"}


def marker(shape: str, cx: float, cy: float, r: float, attrs: str) -> str:
    """One marker element of about the same area whatever its shape; `attrs` go on the element."""
    if shape == "circle":
        return f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="{r:.1f}" {attrs}'
    if shape == "square":
        a = r * 0.89
        pts = [(cx - a, cy - a), (cx + a, cy - a), (cx + a, cy + a), (cx - a, cy + a)]
    elif shape == "diamond":
        a = r * 1.25
        pts = [(cx, cy - a), (cx + a, cy), (cx, cy + a), (cx - a, cy)]
    elif shape == "triangle":
        a = r * 1.35
        pts = [(cx, cy - a), (cx + a * 0.87, cy + a * 0.5), (cx - a * 0.87, cy + a * 0.5)]
    else:
        a = r * 1.35
        pts = [(cx, cy + a), (cx + a * 0.87, cy - a * 0.5), (cx - a * 0.87, cy - a * 0.5)]
    return '<polygon points="' + " ".join(f"{x:.1f},{y:.1f}" for x, y in pts) + f'" {attrs}'


def render_svg(
    series: Mapping[str, Sequence[Row]],
    *,
    title: str = "Variants: latency vs accuracy",
    subtitle: str = "",
    width: int = 960,
    height: int = 600,
) -> str:
    """A self-contained SVG scatter plot: x = p50 at batch 1 (ms, log scale), y = accuracy. One colour per
    model (the keys of `series`), one shape per precision; filled markers are on the Pareto front, hollow
    ones are dominated. Every variant is one element of class `variant` (a `<circle>` or `<polygon>`) with
    a `<title>` tooltip; every model is one `<g class="legend-model">`."""
    left, right, top, bottom = 80, 260, 70, 70
    x0, x1 = left, width - right
    y0, y1 = height - bottom, top  # y grows downwards in SVG
    all_rows = [r for rows in series.values() for r in rows]
    xlo, xhi = log_domain(r.p50_ms_b1 for r in all_rows)
    ylo, yhi, ystep = linear_domain(r.accuracy for r in all_rows)

    def px(v: float) -> float:  # inset so that markers at the ends stay inside the frame
        return log_position(v, xlo, xhi, x0 + 10, x1 - 10)

    def py(v: float) -> float:
        return y0 + (v - ylo) / (yhi - ylo) * (y1 - y0)

    mid = (x0 + x1) / 2
    out: list[str] = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="DejaVu Sans, Helvetica, Arial, sans-serif" '
        'font-size="13">',
        f"<title>{escape(title)}</title>",
        f'<rect x="0" y="0" width="{width}" height="{height}" fill="#ffffff"/>',
        f'<text x="{mid:.1f}" y="30" text-anchor="middle" font-size="18" font-weight="bold">'
        f"{escape(title)}</text>",
    ]
    if subtitle:
        out.append(
            f'<text x="{mid:.1f}" y="50" text-anchor="middle" fill="#555555">{escape(subtitle)}</text>'
        )
    # grid, ticks and tick labels
    out.append('<g class="x-axis">')
    for v, labelled in log_ticks(xlo, xhi):
        x = px(v)
        grid = "#cccccc" if _is_decade(v) else "#e8e8e8"
        out.append(f'<line x1="{x:.1f}" y1="{y1}" x2="{x:.1f}" y2="{y0}" stroke="{grid}"/>')
        out.append(f'<line x1="{x:.1f}" y1="{y0}" x2="{x:.1f}" y2="{y0 + 6}" stroke="#333333"/>')
        if labelled:
            out.append(f'<text x="{x:.1f}" y="{y0 + 22}" text-anchor="middle">{fmt_tick(v)}</text>')
    out.append(
        f'<text x="{mid:.1f}" y="{height - 22}" text-anchor="middle">'
        "p50 latency at batch 1 (ms, log scale)</text>"
    )
    out.append("</g>")
    out.append('<g class="y-axis">')
    for i in range(round((yhi - ylo) / ystep) + 1):
        v = ylo + i * ystep
        y = py(v)
        out.append(f'<line x1="{x0}" y1="{y:.1f}" x2="{x1}" y2="{y:.1f}" stroke="#e8e8e8"/>')
        out.append(f'<line x1="{x0 - 6}" y1="{y:.1f}" x2="{x0}" y2="{y:.1f}" stroke="#333333"/>')
        out.append(f'<text x="{x0 - 10}" y="{y + 4:.1f}" text-anchor="end">{v:.3f}</text>')
    ymid = (y0 + y1) / 2
    out.append(
        f'<text x="22" y="{ymid:.1f}" text-anchor="middle" transform="rotate(-90 22 {ymid:.1f})">'
        "top-1 accuracy (validation set)</text>"
    )
    out.append("</g>")
    out.append(f'<rect x="{x0}" y="{y1}" width="{x1 - x0}" height="{y0 - y1}" fill="none" stroke="#333333"/>')
    # markers: dominated (hollow) first so that the Pareto-front ones stay visible on top
    colours = {name: PALETTE[i % len(PALETTE)] for i, name in enumerate(series)}
    out.append('<g class="markers">')
    ordered = sorted(((n, r) for n, rows in series.items() for r in rows), key=lambda nr: not nr[1].dominated)
    for name, r in ordered:
        c = colours[name]
        style = (
            f'fill="{c}" fill-opacity="0" stroke="{c}" stroke-width="1.5" stroke-opacity="0.85"'
            if r.dominated
            else f'fill="{c}" fill-opacity="0.9" stroke="#ffffff" stroke-width="1"'
        )
        tip = (
            f"{r.id}\naccuracy {r.accuracy:.4f}, p50 at batch 1 {fmt_num(r.p50_ms_b1)} ms, "
            f"best batch {r.best_batch} ({fmt_num(r.best_rows_per_s)} rows/s)"
            + (", dominated" if r.dominated else "")
        )
        attrs = f'class="variant" data-model={quoteattr(name)} data-variant={quoteattr(r.id)} {style}>'
        shape = SHAPES.get(r.precision, "other")
        element = "circle" if shape == "circle" else "polygon"
        out.append(
            marker(shape, px(r.p50_ms_b1), py(r.accuracy), 6.5, attrs)
            + f"<title>{escape(tip)}</title></{element}>"
        )
    out.append("</g>")
    # legend: models (colour), precisions (shape), Pareto front (fill)
    lx, ly = x1 + 24, y1 + 12
    out.append('<g class="legend">')
    out.append(f'<text x="{lx}" y="{ly}" font-weight="bold">model (ready variants)</text>')
    ly += 24
    for name, rows in series.items():
        out.append(
            f'<g class="legend-model" data-model={quoteattr(name)}>'
            f'<rect x="{lx}" y="{ly - 11}" width="12" height="12" fill="{colours[name]}"/>'
            f'<text x="{lx + 20}" y="{ly}">{escape(name)} ({len(rows)})</text></g>'
        )
        ly += 22
    known = list(SHAPES)
    precisions = sorted(
        {r.precision for r in all_rows}, key=lambda p: (known.index(p) if p in known else len(known), p)
    )
    ly += 14
    out.append(f'<text x="{lx}" y="{ly}" font-weight="bold">precision</text>')
    ly += 24
    for precision in precisions:
        shape = SHAPES.get(precision, "other")
        out.append(
            '<g class="legend-precision">'
            + marker(shape, lx + 6, ly - 5, 6, 'fill="#666666"/>')
            + f'<text x="{lx + 20}" y="{ly}">{escape(precision)}</text></g>'
        )
        ly += 22
    ly += 14
    out.append(
        marker("circle", lx + 6, ly - 5, 6, 'fill="#666666"/>')
        + f'<text x="{lx + 20}" y="{ly}">on the Pareto front</text>'
    )
    ly += 22
    out.append(
        marker("circle", lx + 6, ly - 5, 6, 'fill="none" stroke="#666666" stroke-width="1.5"/>')
        + f'<text x="{lx + 20}" y="{ly}">dominated</text>'
    )
    ly += 30
    for note in (
        "Pareto front: per model, over latency,",
        "accuracy, throughput, cost and load.",
        "Variants that differ only in max",
        "batch share one measurement, so",
        "they sit on one spot.",
    ):
        out.append(f'<text x="{lx}" y="{ly}" font-size="11" fill="#555555">{escape(note)}</text>')
        ly += 15
    out.append("</g>")
    out.append("</svg>")
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------------------------- talking to the system


class Bench:
    """The gateway calls this benchmark makes, with the admin key."""

    def __init__(self, url: str, key: str) -> None:
        self.http = httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=60)

    def ensure_app(self) -> None:
        r = self.http.post("/v1/apps", json={"name": APP})
        if r.status_code not in (201, 409):
            sys.exit(f"creating app {APP!r} failed: {r.status_code} {r.text}")

    def register(self, name: str, onnx_path: Path, validation_path: Path) -> None:
        metadata = json.dumps({"name": name, "app": APP, "task": "classification"})
        with onnx_path.open("rb") as f, validation_path.open("rb") as v:
            r = self.http.post(
                "/v1/models",
                files={
                    "file": (onnx_path.name, f, "application/octet-stream"),
                    "validation": (validation_path.name, v, "application/octet-stream"),
                },
                data={"metadata": metadata},
            )
        if r.status_code != 202:
            sys.exit(f"registering {name} failed: {r.status_code} {r.text}")

    def wait_ready(self, name: str, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        last = ""
        while True:
            r = self.http.get(f"/v1/models/{name}")
            r.raise_for_status()
            model = r.json()
            if model["status"] == "ready":
                return
            if model["status"] == "failed":
                sys.exit(f"profiling {name} failed: {model.get('status_reason')}")
            p = model.get("progress") or {}
            state = f"{model['status']} ({p.get('ready', 0)}/{p.get('total', 0)} ready)"
            if state != last:
                print(f"  {name}: {state}", file=sys.stderr)
                last = state
            if time.monotonic() > deadline:
                sys.exit(f"{name} was not ready after {timeout_s:.0f} s (last: {state})")
            time.sleep(POLL_S)

    def variants(self, name: str, **params: str) -> list[dict[str, Any]]:
        r = self.http.get(f"/v1/models/{name}/variants", params=params)
        r.raise_for_status()
        out: list[dict[str, Any]] = r.json()
        return out

    def delete(self, name: str) -> None:
        r = self.http.delete(f"/v1/models/{name}")
        if r.status_code not in (200, 202, 204, 404):
            print(f"deleting {name} failed: {r.status_code} {r.text}", file=sys.stderr)


def measure(args: argparse.Namespace) -> dict[str, Any]:
    """Register, profile and read back every demo model; the report `variants.json` holds."""
    # Imported here so that the pure functions above import without the settings machinery.
    from infaas.core.config import get_settings
    from infaas.processes.suite import admin_key
    from infaas_cli.demo_models import build_demo_models

    settings = get_settings()
    demo = build_demo_models(settings.var_dir / "demo-models")
    bench = Bench(args.url, args.key or admin_key(settings))
    bench.ensure_app()
    stamp = int(time.time())
    models: list[dict[str, Any]] = []
    registered: list[str] = []
    try:
        for m in demo:
            name = f"{m.name}-bench-{stamp}"
            print(f"registering {m.name} as {name} …", file=sys.stderr)
            bench.register(name, m.onnx_path, m.validation_path)
            start = time.monotonic()
            registered.append(name)
            bench.wait_ready(name, args.timeout)
            elapsed = round(time.monotonic() - start, 2)  # rounded once, so every print agrees
            print(f"  {name}: ready after {elapsed:.1f} s", file=sys.stderr)
            ready = bench.variants(name, status="ready")
            every = bench.variants(name)
            models.append(
                {
                    "model": m.name,
                    "registered_as": name,
                    "profiling_s": elapsed,
                    "total_variants": len(every),
                    "variants": [asdict(r) for r in variant_rows(ready)],
                    "not_ready": [
                        {"status": st, "reason": reason, "count": n}
                        for (st, reason), n in sorted(not_ready(every).items())
                    ],
                }
            )
    finally:
        if args.cleanup:
            for name in registered:
                bench.delete(name)
            print(f"deleted {len(registered)} bench model(s)", file=sys.stderr)
    return {
        "generated_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "url": args.url,
        "models": models,
    }


def print_report(report: Mapping[str, Any], *, markdown: bool) -> None:
    for m in report["models"]:
        rows = [Row(**r) for r in m["variants"]]
        print(
            f"\n{m['model']} (registered as {m['registered_as']}): profiling took {m['profiling_s']:.1f} s; "
            f"{len(rows)} of {m['total_variants']} variants ready"
        )
        print(format_table(rows))
        for p in m["not_ready"]:
            print(f"  {p['count']} {p['status']}: {p['reason']}")
    if not markdown:
        return
    print("\n<!-- Markdown for docs/benchmarks.md -->\n")
    print("| model | profiling time (202 → ready) | ready variants | not ready |")
    print("|---|---:|---:|---|")
    for m in report["models"]:
        pending = "; ".join(f"{p['count']} {p['status']}: {p['reason']}" for p in m["not_ready"]) or "–"
        print(
            f"| {m['model']} | {m['profiling_s']:.1f} s | {len(m['variants'])} of {m['total_variants']} "
            f"| {pending.replace('|', '/')} |"
        )
    for m in report["models"]:
        print(f"\n### {m['model']}\n")
        print(format_markdown([Row(**r) for r in m["variants"]]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--url", default="http://127.0.0.1:8080", help="gateway URL")
    parser.add_argument("--key", help="admin key (default: the launcher's)")
    parser.add_argument("--out", type=Path, default=Path("var/bench/variants.svg"), help="SVG to write")
    parser.add_argument("--markdown", action="store_true", help="also print the tables as Markdown")
    parser.add_argument("--cleanup", action="store_true", help="delete the bench models afterwards")
    parser.add_argument("--timeout", type=float, default=600, help="seconds to wait for each model")
    parser.add_argument(
        "--from-json",
        type=Path,
        metavar="JSON",
        help="no system needed: re-render the tables and the SVG from an earlier variants.json",
    )
    args = parser.parse_args()

    report = json.loads(args.from_json.read_text()) if args.from_json else measure(args)
    print_report(report, markdown=args.markdown)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    series = {m["model"]: [Row(**r) for r in m["variants"]] for m in report["models"]}
    hardware = ", ".join(sorted({r.hardware for rows in series.values() for r in rows})) or "none"
    subtitle = (
        f"{sum(len(r) for r in series.values())} ready variants of {len(series)} models "
        f"(hardware: {hardware}), profiled {report['generated_at'][:10]}"
    )
    args.out.write_text(render_svg(series, subtitle=subtitle))
    written = [str(args.out)]
    if not args.from_json:
        json_path = args.out.with_name("variants.json")
        json_path.write_text(json.dumps(report, indent=2) + "\n")
        written.append(str(json_path))
    print(f"\nwrote {' and '.join(written)}", file=sys.stderr)


if __name__ == "__main__":
    main()
