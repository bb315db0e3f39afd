"""Plots for docs/benchmarks.md from benchmark output kept in docs/img/, for the scripts that print
tables but draw nothing (`bench.goals.selection`, `bench.goals.ilp`); and a palette reduction that keeps
every PNG here small (matplotlib writes full-colour PNGs, 300 KB for `bench.papers.autoscale`'s 15 × 9 in
figure).

    .venv/bin/python -m bench.goals.selection --variants 100 300 1000 3000 5000 10000 --markdown \\
        > docs/img/selection.txt
    .venv/bin/python -m bench.goals.ilp --json > docs/img/ilp.json
    .venv/bin/python -m bench.common.doc_plots                     # selection.png, ilp.png
    .venv/bin/python -m bench.common.doc_plots docs/img/autoscale_sim.png   # only shrink these PNGs
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
from pathlib import Path

import matplotlib

from bench.common.paths import DOCS_IMG

matplotlib.use("Agg")  # before pyplot: no display here
import matplotlib.pyplot as plt  # noqa: E402
from PIL import Image  # noqa: E402

HERE = DOCS_IMG  # the plots and the output they are drawn from


def shrink(path: Path) -> None:
    """Rewrite a PNG with a 256-colour palette (line plots lose nothing visible)."""
    image = Image.open(path).convert("RGB")
    image.convert("P", palette=Image.Palette.ADAPTIVE, colors=256).save(path, optimize=True)


def _us(cell: str) -> float:
    value, unit = cell.strip().split()
    return float(value.replace(",", "")) * (1000.0 if unit == "ms" else 1.0)


def selection_rows(text: str) -> list[dict[str, float]]:
    """The rows of bench/goals/selection.py's Markdown table: variants, then µs for get_variant p50/p99/mean
    and the brute force p50/p99/mean."""
    rows = []
    for line in text.splitlines():
        cells = line.strip().strip("|").split("|")
        if len(cells) != 8 or not re.fullmatch(r"[\d,]+", cells[0].strip()):
            continue
        values = [_us(c) for c in cells[1:7]]
        keys = ("p50", "p99", "mean", "brute_p50", "brute_p99", "brute_mean")
        rows.append({"variants": float(cells[0].replace(",", "")), **dict(zip(keys, values, strict=True))})
    return rows


def plot_selection(rows: list[dict[str, float]], out: Path) -> None:
    n = [r["variants"] for r in rows]
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    ax.plot(n, [r["p50"] for r in rows], "o-", color="tab:blue", label="get_variant p50")
    ax.plot(n, [r["p99"] for r in rows], "o:", color="tab:blue", label="get_variant p99")
    ax.plot(n, [r["brute_p50"] for r in rows], "s-", color="tab:red", label="brute force p50")
    ax.plot(n, [r["brute_p99"] for r in rows], "s:", color="tab:red", label="brute force p99")
    ax.axhline(100, color="k", lw=0.8, ls="--")
    ax.text(n[0], 115, "goal: p50 ≤ 100 µs at 1,000 variants", fontsize=8)
    ax.axhspan(2200, 3500, color="0.85", zorder=0)
    ax.text(n[0], 2500, "INFaaS (paper): 2.2–3.5 ms", fontsize=8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("variants a query may choose from")
    ax.set_ylabel("decision time per query (µs)")
    ax.set_title("Per-query variant selection (bench/goals/selection.py)")
    ax.legend(fontsize=8, loc="lower right")
    ax.grid(True, which="major", lw=0.3)
    fig.tight_layout()
    fig.savefig(out, dpi=90)
    plt.close(fig)
    shrink(out)


def plot_ilp(rows: list[dict[str, float]], out: Path) -> None:
    archs = sorted({int(r["archs"]) for r in rows})
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4.2))
    for a in archs:
        rs = [r for r in rows if r["archs"] == a]
        x = [a * 10] * len(rs)
        left.scatter(x, [r["ilp_s"] * 1000 for r in rs], color="tab:blue", s=14, alpha=0.7)
        left.scatter(x, [r["greedy_tick_s"] * 1000 for r in rs], color="tab:orange", s=14, alpha=0.7)
        both = [r for r in rs if r["greedy_met"] == r["ilp_met"]]
        right.scatter(
            [a * 10] * len(both),
            [100 * (r["greedy_cost"] / r["ilp_cost"] - 1) for r in both],
            color="tab:red",
            s=14,
            alpha=0.7,
        )
        right.scatter(
            [a * 10] * len(both),
            [100 * (r["greedy_hw"] / r["ilp_hw"] - 1) for r in both],
            color="tab:green",
            s=14,
            alpha=0.7,
        )
    x = [a * 10 for a in archs]
    left.plot(
        x,
        [statistics.median(r["ilp_s"] * 1000 for r in rows if r["archs"] == a) for a in archs],
        color="tab:blue",
        label="exact ILP solve (median, seeds as dots)",
    )
    left.plot(
        x,
        [statistics.median(r["greedy_tick_s"] * 1000 for r in rows if r["archs"] == a) for a in archs],
        color="tab:orange",
        label="greedy autoscaler, one tick",
    )
    left.axhline(1000, color="k", lw=0.8, ls="--")
    left.text(x[0], 1150, "goal: ILP ≤ 1 s at 1,000 variants (INFaaS/Gurobi: 50 s)", fontsize=8)
    left.set_xscale("log")
    left.set_yscale("log")
    left.set_ylim(top=3000)
    left.set_xlabel("variants (architectures × 10)")
    left.set_ylabel("ms")
    left.set_title("Time to decide")
    left.legend(fontsize=8, loc="lower right")
    right.axhline(0, color="k", lw=0.8)
    right.scatter([], [], color="tab:red", s=14, label="total cost (hardware + loads on the way)")
    right.scatter([], [], color="tab:green", s=14, label="hardware $/s once settled")
    right.set_xscale("log")
    right.set_xlabel("variants (architectures × 10)")
    right.set_ylabel("greedy over ILP (%)")
    right.set_title("Greedy's cost above the optimum, per seed")
    right.legend(fontsize=8, loc="upper right")
    for ax in (left, right):
        ax.set_xticks(x, [str(v) for v in x])
        ax.minorticks_off()
        ax.grid(True, lw=0.3)
    fig.tight_layout()
    fig.savefig(out, dpi=90)
    plt.close(fig)
    shrink(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("pngs", nargs="*", type=Path, help="only shrink these PNGs (no plot is drawn)")
    args = parser.parse_args()
    if args.pngs:
        for path in args.pngs:
            shrink(path)
        return
    plot_selection(selection_rows((HERE / "selection.txt").read_text()), HERE / "selection.png")
    plot_ilp(json.loads((HERE / "ilp.json").read_text()), HERE / "ilp.png")


if __name__ == "__main__":
    main()
