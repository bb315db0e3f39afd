"""Charts as SVG text, drawn on the server: no script, no font or library fetched by the browser.

Pure functions of their data; every text is escaped. Points carry `class="point"` and a `<title>`
(the browser shows it on hover), so a test or a person can tell what each mark is.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from markupsafe import Markup, escape

WIDTH, HEIGHT = 640, 360
LEFT, RIGHT, TOP, BOTTOM = 64, 16, 16, 48
# Colour-blind-safe qualitative palette (Okabe–Ito).
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000")


@dataclass(frozen=True)
class Point:
    x: float
    y: float
    label: str
    muted: bool = False
    """Drawn hollow and grey (e.g. a Pareto-dominated variant)."""


@dataclass(frozen=True)
class Series:
    name: str
    points: Sequence[tuple[float, float | None]]
    """(x, y); a None y is a gap: the line breaks there (a time with nothing to show)."""


def nice_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """Round tick values covering [lo, hi] (1, 2, 2.5, 5 × 10^k steps)."""
    if not math.isfinite(lo) or not math.isfinite(hi):
        return [0.0]
    if hi <= lo:
        hi = lo + (abs(lo) or 1.0)
    raw = (hi - lo) / max(1, count)
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    start = math.floor(lo / step) * step
    ticks = []
    value = start
    while value <= hi + step * 1e-9:
        ticks.append(round(value, 12))
        value += step
    if ticks[-1] < hi:
        ticks.append(round(value, 12))
    return ticks


def _tick_format(ticks: list[float]) -> str:
    """Enough decimals to tell neighbouring ticks apart (0.926, 0.928 — not 0.93, 0.93)."""
    step = min((b - a for a, b in zip(ticks, ticks[1:], strict=False)), default=1.0)
    decimals = max(0, -math.floor(math.log10(step))) if step > 0 else 0
    return f"{{:.{min(decimals, 6)}f}}"


def _fmt(value: float) -> str:
    if value == 0:
        return "0"
    if abs(value) >= 100:
        return f"{value:.0f}"
    return f"{value:.4g}"


class _Frame:
    """Maps data to pixels inside the plot area and draws axes."""

    def __init__(self, xs: list[float], ys: list[float], *, log2_x: bool = False) -> None:
        self.log2_x = log2_x
        if log2_x:
            lo, hi = min(xs), max(xs)
            self.xticks = [2.0**k for k in range(int(math.log2(lo)), int(math.ceil(math.log2(hi))) + 1)]
        else:
            self.xticks = nice_ticks(min(xs), max(xs))
        lo, hi = min(ys), max(ys)
        # Start at zero when the data nearly does (latencies); keep the range tight otherwise (accuracy).
        self.yticks = nice_ticks(0.0 if 0 <= lo < 0.2 * hi else lo, hi)
        self.x0, self.x1 = self.xticks[0], self.xticks[-1]
        self.y0, self.y1 = self.yticks[0], self.yticks[-1]

    def _tx(self, x: float) -> float:
        return math.log2(x) if self.log2_x else x

    def px(self, x: float) -> float:
        lo, hi = self._tx(self.x0), self._tx(self.x1)
        span = (hi - lo) or 1.0
        return LEFT + (self._tx(x) - lo) / span * (WIDTH - LEFT - RIGHT)

    def py(self, y: float) -> float:
        span = (self.y1 - self.y0) or 1.0
        return HEIGHT - BOTTOM - (y - self.y0) / span * (HEIGHT - TOP - BOTTOM)

    def axes(self, x_label: str, y_label: str) -> list[str]:
        out = [
            f'<line class="axis" x1="{LEFT}" y1="{HEIGHT - BOTTOM}" x2="{WIDTH - RIGHT}" '
            f'y2="{HEIGHT - BOTTOM}" stroke="#444"/>',
            f'<line class="axis" x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{HEIGHT - BOTTOM}" stroke="#444"/>',
        ]
        for t in self.xticks:
            x = self.px(t)
            out.append(f'<line x1="{x:.1f}" y1="{TOP}" x2="{x:.1f}" y2="{HEIGHT - BOTTOM}" stroke="#eee"/>')
            label = f"{t:.0f}" if self.log2_x else _tick_format(self.xticks).format(t)
            out.append(
                f'<text x="{x:.1f}" y="{HEIGHT - BOTTOM + 16}" text-anchor="middle" font-size="11">'
                f"{label}</text>"
            )
        for t in self.yticks:
            y = self.py(t)
            out.append(f'<line x1="{LEFT}" y1="{y:.1f}" x2="{WIDTH - RIGHT}" y2="{y:.1f}" stroke="#eee"/>')
            out.append(
                f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end" font-size="11">'
                f"{_tick_format(self.yticks).format(t)}</text>"
            )
        out.append(
            f'<text x="{(LEFT + WIDTH - RIGHT) / 2:.0f}" y="{HEIGHT - 10}" text-anchor="middle" '
            f'font-size="12">{escape(x_label)}</text>'
        )
        out.append(
            f'<text x="14" y="{(TOP + HEIGHT - BOTTOM) / 2:.0f}" text-anchor="middle" font-size="12" '
            f'transform="rotate(-90 14 {(TOP + HEIGHT - BOTTOM) / 2:.0f})">{escape(y_label)}</text>'
        )
        return out


def _svg(title: str, body: list[str]) -> Markup:
    return Markup(
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" role="img" viewBox="0 0 {WIDTH} {HEIGHT}" '
        f'width="{WIDTH}" height="{HEIGHT}" aria-label="{escape(title)}"><title>{escape(title)}</title>'
        + "".join(body)
        + "</svg>"
    )


def _empty(title: str, why: str) -> Markup:
    return _svg(
        title,
        [f'<text x="{WIDTH / 2}" y="{HEIGHT / 2}" text-anchor="middle" font-size="14">{escape(why)}</text>'],
    )


def scatter(title: str, points: Sequence[Point], *, x_label: str, y_label: str) -> Markup:
    """One mark per point (x, y); muted points hollow and grey, drawn under the others."""
    points = [p for p in points if math.isfinite(p.x) and math.isfinite(p.y)]
    if not points:
        return _empty(title, "no profiled variants yet")
    frame = _Frame([p.x for p in points], [p.y for p in points])
    body = frame.axes(x_label, y_label)
    for p in sorted(points, key=lambda p: not p.muted):
        colour = "#999" if p.muted else PALETTE[0]
        fill = "none" if p.muted else colour
        body.append(
            f'<circle class="point{" muted" if p.muted else ""}" cx="{frame.px(p.x):.1f}" '
            f'cy="{frame.py(p.y):.1f}" r="5" fill="{fill}" stroke="{colour}" stroke-width="1.5">'
            f"<title>{escape(p.label)}: {_fmt(p.x)}, {_fmt(p.y)}</title></circle>"
        )
    return _svg(title, body)


def lines(title: str, series: Sequence[Series], *, x_label: str, y_label: str) -> Markup:
    """One polyline with marks per series, x on a log2 axis (batch sizes), with a legend."""
    return _polylines(
        title, series, x_label, y_label, log2_x=True, empty="no latency measurements yet", x_name="batch "
    )


def timeseries(
    title: str,
    series: Sequence[Series],
    *,
    x_label: str,
    y_label: str,
    x_span: tuple[float, float] | None = None,
) -> Markup:
    """One polyline with marks per series over time (x linear: e.g. seconds before now, over `x_span` so
    that charts side by side share an axis), with a legend above the lines."""
    return _polylines(
        title, series, x_label, y_label, log2_x=False, empty="no samples yet", x_name="", x_span=x_span
    )


def curves(
    title: str, series: Sequence[Series], marks: Sequence[Point], *, x_label: str, y_label: str, empty: str
) -> Markup:
    """Predicted lines (x linear) with measured points drawn over them as hollow black diamonds."""
    return _polylines(title, series, x_label, y_label, log2_x=False, empty=empty, x_name="", marks=marks)


def _polylines(
    title: str,
    series: Sequence[Series],
    x_label: str,
    y_label: str,
    *,
    log2_x: bool,
    empty: str,
    x_name: str,
    x_span: tuple[float, float] | None = None,
    marks: Sequence[Point] = (),
) -> Markup:
    series = [s for s in series if any(y is not None for _, y in s.points)]
    if not series:
        return _empty(title, empty)
    marks = [m for m in marks if math.isfinite(m.x) and math.isfinite(m.y)]
    xs = [x for s in series for x, y in s.points if y is not None] + [m.x for m in marks]
    ys = [y for s in series for _, y in s.points if y is not None] + [m.y for m in marks]
    if x_span is not None:
        xs += list(x_span)
    if not log2_x:  # room above the data for the legend (batch charts keep theirs over small values)
        ys.append(max(ys) * (1.1 + 0.07 * len(series)) or 1.0)
    frame = _Frame(xs, ys, log2_x=log2_x)
    body = frame.axes(x_label, y_label)
    for i, s in enumerate(series):
        colour = PALETTE[i % len(PALETTE)]
        for segment in _segments(s.points):
            coords = " ".join(f"{frame.px(x):.1f},{frame.py(y):.1f}" for x, y in segment)
            body.append(
                f'<polyline class="series" points="{coords}" fill="none" stroke="{colour}" stroke-width="2"/>'
            )
        for x, y in s.points:
            if y is None:
                continue
            body.append(
                f'<circle class="point" cx="{frame.px(x):.1f}" cy="{frame.py(y):.1f}" r="3" fill="{colour}">'
                f"<title>{escape(s.name)}: {x_name}{_fmt(x)}, {_fmt(y)}</title></circle>"
            )
        ly = TOP + 6 + 15 * i
        body.append(
            f'<rect x="{LEFT + 10}" y="{ly - 8}" width="10" height="10" fill="{colour}"/>'
            f'<text x="{LEFT + 24}" y="{ly + 1}" font-size="11">{escape(s.name)}</text>'
        )
    for m in marks:
        x, y = frame.px(m.x), frame.py(m.y)
        body.append(
            f'<polygon class="measured" points="{x:.1f},{y - 6:.1f} {x + 6:.1f},{y:.1f} {x:.1f},{y + 6:.1f} '
            f'{x - 6:.1f},{y:.1f}" fill="none" stroke="#000" stroke-width="1.5">'
            f"<title>{escape(m.label)}: {_fmt(m.x)}, {_fmt(m.y)}</title></polygon>"
        )
    return _svg(title, body)


def _segments(points: Sequence[tuple[float, float | None]]) -> list[list[tuple[float, float]]]:
    """The runs of points between gaps (None y)."""
    out: list[list[tuple[float, float]]] = [[]]
    for x, y in points:
        if y is None:
            if out[-1]:
                out.append([])
        else:
            out[-1].append((x, y))
    return [run for run in out if run]
