"""The latency–accuracy scatter plot of `variants.py`: a self-contained SVG, log-scaled latency axis,
one colour per model, one shape per precision."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from xml.sax.saxutils import escape, quoteattr

from bench.diagnostics.variant_rows import Row, fmt_num

# Colour-blind-friendly (Okabe–Ito) colours, one per model.
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000")


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
