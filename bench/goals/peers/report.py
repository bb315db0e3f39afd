"""Tables and plots of a `run.py` result: per model, every endpoint's numbers, then infaas's ratios to the
best peer of the same run (lower is better for latency, higher for rates), for its named-model queries and,
apart, for its model-less ones, and one plot per model. Another build measured beside it (`--build`) gets
the same ratios, and this build's ratios to it.

    .venv/bin/python -m bench.goals.peers.report var/peers/results.json --plots docs/img
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.goals.peers.systems import is_infaas

Metric = Callable[[dict[str, Any]], float | None]
"""One endpoint's record → a metric of it (None: not measured)."""


def fmt(value: Any, digits: int = 1) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "–"
    return f"{value:,.{digits}f}"


def cpu_us(run: dict[str, Any] | None) -> float:
    if not run or not run.get("ok"):
        return math.nan
    cpu_s: dict[str, float] = run["server_cpu_s"]
    return sum(cpu_s.values()) / int(run["ok"]) * 1e6


def errors(run: dict[str, Any] | None) -> str:
    if not run:
        return "–"
    return ", ".join(f"{k}: {n}" for k, n in run.get("errors", {}).items()) or "0"


def at_max(rec: dict[str, Any]) -> dict[str, Any] | None:
    """The (last) search run at the highest passing rate."""
    runs = [r for r in rec.get("search", []) if r["rate"] == rec.get("max_rate")]
    return runs[-1] if runs else None


def endpoint_rows(eps: dict[str, dict[str, Any]], known: dict[str, float]) -> list[list[str]]:
    """`known`: each infaas variant's validation accuracy, by variant id."""
    rows = []
    for label, rec in eps.items():
        low, closed, answers = rec.get("low") or {}, rec.get("closed") or {}, rec.get("answers") or {}
        variant = ""
        if low.get("variants"):
            variant = (
                " ("
                + ", ".join(
                    v.split(".", 1)[1] + (f", accuracy {known[v]:.4f}" if known.get(v) is not None else "")
                    for v in low["variants"]
                )
                + ")"
            )
        rows.append(
            [
                f"{label}{variant}",
                f"{fmt(low.get('p50'), 2)} / {fmt(low.get('p99'), 2)} / {fmt(low.get('p999'), 2)}",
                f"{low.get('ok', 0)}, {errors(low)}",
                fmt(rec.get("max_rate"), 0),
                f"{fmt(closed.get('throughput'), 0)} ({fmt(closed.get('p50'), 1)})",
                f"{fmt(cpu_us(low), 0)} / {fmt(cpu_us(at_max(rec)), 0)}",
                f"{fmt(answers.get('max_abs_diff'), 4)} / "
                f"{fmt(100 * answers.get('argmax_agree', math.nan), 0)} %",
                fmt(low.get("other_on_server_core"), 2),
            ]
        )
    return rows


def ours_of(
    eps: dict[str, dict[str, Any]], mode: str = "adaptive", system: str = "infaas"
) -> dict[str, Any] | None:
    """An infaas suite's record (this build's, or `infaas@NAME`'s): its named-model queries (`adaptive`)
    or its model-less ones."""
    return next(
        (r for r in eps.values() if r["system"] == system and r.get("mode", "adaptive") == mode), None
    )


def builds(eps: dict[str, dict[str, Any]]) -> list[str]:
    """The other builds measured beside this one (`run.py --build`), in the order they were measured."""
    return list(dict.fromkeys(r["system"] for r in eps.values() if r["system"].startswith("infaas@")))


def ratios(
    eps: dict[str, dict[str, Any]], mode: str = "adaptive", system: str = "infaas", against: str | None = None
) -> list[list[str]] | None:
    """`system`'s ratios to the best peer of the run, per metric; with `against` (another infaas system),
    to that system's record of the same mode instead: a build against a build."""
    ours = ours_of(eps, mode, system)
    if against is None:
        peers = {k: r for k, r in eps.items() if not is_infaas(r["system"])}
    else:
        theirs = ours_of(eps, mode, against)
        peers = {} if theirs is None else {against: theirs}
    if ours is None or not peers:
        return None

    def best(key: Metric, lower: bool) -> tuple[str, float]:
        values = [(k, v) for k, r in peers.items() if (v := key(r)) is not None and math.isfinite(v)]
        if not values:
            return "–", math.nan
        return min(values, key=lambda kv: kv[1]) if lower else max(values, key=lambda kv: kv[1])

    metrics: list[tuple[str, Metric, bool]] = [
        ("p50 at the low rate (ms)", lambda r: (r.get("low") or {}).get("p50"), True),
        ("p99 at the low rate (ms)", lambda r: (r.get("low") or {}).get("p99"), True),
        ("p99.9 at the low rate (ms)", lambda r: (r.get("low") or {}).get("p999"), True),
        ("highest rate with p99 ≤ SLO (q/s)", lambda r: r.get("max_rate"), False),
        ("closed-loop throughput (q/s)", lambda r: (r.get("closed") or {}).get("throughput"), False),
        ("server CPU per query at the low rate (µs)", lambda r: cpu_us(r.get("low")), True),
        ("server CPU per query at its max rate (µs)", lambda r: cpu_us(at_max(r)), True),
    ]
    out = []
    for name, key, lower in metrics:
        peer, value = best(key, lower)
        mine = key(ours)
        ratio = mine / value if mine is not None and value and math.isfinite(value) else math.nan
        out.append(
            [
                name,
                fmt(mine, 2 if "ms" in name else 0),
                f"{fmt(value, 2 if 'ms' in name else 0)} ({peer})",
                f"{fmt(ratio, 2)}×",
            ]
        )
    return out


def infaas_cpu(eps: dict[str, dict[str, Any]], system: str = "infaas") -> list[list[str]]:
    """CPU per query of each infaas process, at the low rate and in the fastest passing search run."""
    ours = ours_of(eps, system=system)
    if ours is None or not ours.get("low"):
        return []
    runs = [("low rate", ours["low"])]
    passing = at_max(ours)
    if passing:
        runs.append((f"{passing['rate']:.0f}/s", passing))
    out = []
    for name, run in runs:
        per = {k: v / run["ok"] * 1e6 for k, v in run["server_cpu_s"].items()} if run["ok"] else {}
        shown = ", ".join(f"{k} {v:.0f}" for k, v in sorted(per.items(), key=lambda kv: -kv[1]) if v >= 1)
        out.append([name, shown, fmt(sum(per.values()), 0)])
    return out


def batching_gain(eps: dict[str, dict[str, Any]]) -> list[list[str]]:
    """Per peer that batches: its highest rate at the SLO and closed-loop throughput, batching on over off."""
    out = []
    for system in dict.fromkeys(r["system"] for r in eps.values()):
        modes = {r["mode"]: r for r in eps.values() if r["system"] == system}
        if "on" not in modes or "off" not in modes:
            continue
        on, off = modes["on"], modes["off"]
        gain = (on.get("max_rate") or 0) / off["max_rate"] if off.get("max_rate") else math.nan
        closed_on = (on.get("closed") or {}).get("throughput") or math.nan
        closed_off = (off.get("closed") or {}).get("throughput") or math.nan
        out.append([system, f"{fmt(gain, 2)}×", f"{fmt(closed_on / closed_off, 2)}×"])
    return out


def table(head: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def plot(model: str, eps: dict[str, dict[str, Any]], slo_ms: float, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = list(eps)
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 0.45 * len(labels) + 1.8))
    y = range(len(labels))
    for offset, (key, name) in zip(
        (-0.27, 0, 0.27), (("p50", "p50"), ("p99", "p99"), ("p999", "p99.9")), strict=True
    ):
        values = [(eps[k].get("low") or {}).get(key) or math.nan for k in labels]
        left.barh([i + offset for i in y], values, height=0.26, label=name)
    left.set_yticks(list(y), labels)
    left.set_xscale("log")
    left.set_xlabel("latency at the low rate (ms, from the scheduled send)")
    left.invert_yaxis()
    left.legend(loc="lower right", fontsize=8)
    colors = [
        ("tab:orange" if eps[k]["mode"] == "model-less" else "tab:red")
        if eps[k]["system"] == "infaas"
        else ("tab:purple" if is_infaas(eps[k]["system"]) else "tab:gray")
        for k in labels
    ]
    right.barh(list(y), [eps[k].get("max_rate") or 0 for k in labels], color=colors, label="open loop")
    right.scatter(
        [(eps[k].get("closed") or {}).get("throughput") or math.nan for k in labels],
        list(y),
        marker="|",
        s=200,
        color="black",
        label="closed loop",
    )
    right.set_yticks(list(y), [])
    right.invert_yaxis()
    right.set_xlabel(f"highest rate with p99 ≤ {slo_ms:.0f} ms, no errors (q/s)")
    right.legend(loc="lower right", fontsize=8)
    fig.suptitle(
        f"{model}: infaas (red; model-less orange; other builds purple) and its peers on one pinned core, "
        "one run"
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("results", type=Path)
    parser.add_argument("--plots", type=Path, help="write peers_<model>.png here")
    a = parser.parse_args()
    res = json.loads(a.results.read_text())
    slo = float(res["args"]["slo_ms"])
    print(
        f"run {res['date']}, {res.get('minutes', math.nan):.1f} min; load average 1/5/15 min at the start "
        f"{res['loadavg_start']}, at the end {res.get('loadavg_end')}"
    )
    print(f"versions: {res.get('versions')}; skipped: {res.get('skipped') or 'none'}")
    print(f"idle CPU (cores): {res.get('idle_cpu_cores')}\n")
    listed = [res.get("infaas_variants", {}), *res.get("build_variants", {}).values()]
    known = {v: a for per in listed for m in per.values() for v, a in m.get("variants", {}).items()}
    for model, eps in res.get("endpoints", {}).items():
        info = res["models"][model]
        print(
            f"### {model}: {info['description']} (accuracy {info['accuracy']:.4f}; in-process "
            f"{info['in_process_ms']['1']:.3f} ms at batch 1, {info['in_process_ms']['32']:.3f} ms at 32)\n"
        )
        low_rate = next(iter(eps.values())).get("low", {}).get("rate", math.nan)
        print(
            table(
                [
                    "endpoint",
                    f"{low_rate:.0f}/s, rounds pooled: p50 / p99 / p99.9 ms",
                    "answered, errors",
                    f"max q/s at p99 ≤ {slo:.0f} ms",
                    "closed loop q/s (p50 ms)",
                    "server CPU µs/query: low rate / max rate",
                    "answers: max abs Δ / argmax agree",
                    "other load on the core",
                ],
                endpoint_rows(eps, known),
            )
        )
        for system in ["infaas", *builds(eps)]:
            for mode, said in (("adaptive", ""), ("model-less", " model-less")):
                r = ratios(eps, mode, system)
                if r:
                    print()
                    print(table([f"{system}{said} against the best peer", system, "best peer", "ratio"], r))
        for other in builds(eps):
            for mode, said in (("adaptive", ""), ("model-less", " model-less")):
                r = ratios(eps, mode, "infaas", against=other)
                if r:
                    print()
                    print(table([f"infaas{said} against {other}", "infaas", other, "ratio"], r))
        gains = batching_gain(eps)
        if gains:
            print()
            print(table(["peer", "batching on / off: max rate at the SLO", "closed-loop throughput"], gains))
        for system in ["infaas", *builds(eps)]:
            cpu = infaas_cpu(eps, system)
            if cpu:
                print()
                print(table([f"{system} run", "CPU µs per query by process", "total"], cpu))
        print()
        if a.plots:
            a.plots.mkdir(parents=True, exist_ok=True)
            plot(model, eps, slo, a.plots / f"peers_{model}.png")


if __name__ == "__main__":
    main()
