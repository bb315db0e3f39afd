"""Added latency of the serving path under open-loop load, next to the same model run in-process.

Poisson arrivals at a fixed offered rate against a running gateway (`POST /v1/models/{model}/infer`, one
validation row per query), each request sent at its scheduled time whatever happened to the earlier
ones, latency measured from that scheduled time (coordinated omission avoided; see `bench/common/loadgen.py`).
Without `--rates`, a short ramp (×1.5 per step) first finds the saturation throughput, then each of
10/25/50/75/90 % of it runs for `--duration` seconds. For every rate: offered and achieved rate,
p50/p99/p99.9, errors by status, and the medians of the server-reported `latency_ms` (queue, compute,
total = scheduler arrival → answer). Beside it, the model's ONNX file run in-process with ONNX Runtime
(one session, one thread, batch of 1), so that added latency = gateway percentile − in-process one.
Every query carries a distinct input (`--repeat-inputs` to cycle 256 rows instead), so none is answered
from the prediction cache. Where the serving processes are visible (`infaas run` on this machine), a
second table gives the CPU time per query of each process, net of its idle use, and the load of
everything else on the machine during the run (the noise).

`--slo-ms 20` instead finds, for two pinned variants of one measured session (the model's b1 and b64
forms of the fastest b64 variant on `--slo-hardware`, cpu by default, or
`--slo-variants A B`), the highest offered rate whose
p99 stays within the SLO, failed queries counting as misses (doubling, then bisection), and prints the
batching gain.
Pinning adds `"variant": "<id>"` to the body; a server that answers 422 to it is reported and the
run goes on unpinned (or, in SLO mode, stops: there is nothing to compare).

Usage (with a system running, e.g. `make run`, or `infaas run` on other ports and INFAAS_VAR_DIR):

    .venv/bin/python -m bench.diagnostics.overhead --markdown
    .venv/bin/python -m bench.diagnostics.overhead --rates 100 200 400 --duration 10
    .venv/bin/python -m bench.diagnostics.overhead --slo-ms 20
    INFAAS_VAR_DIR=/tmp/ovh .venv/bin/python -m bench.diagnostics.overhead --url http://127.0.0.1:19080
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from bench.common import loadgen as lg
from bench.diagnostics.overhead_runs import Bench, in_process, server_medians
from infaas.core.config import get_settings
from infaas.processes.suite import admin_key

pct = lg.percentile

FRACTIONS = (0.10, 0.25, 0.50, 0.75, 0.90)
BUDGET_P50_MS, BUDGET_P99_MS = 1.5, 4.0  # ARCHITECTURE.md §9, at 50 % of saturation


def find_saturation(bench: Bench, requests: Callable[[int], bytes]) -> tuple[float, list[Any]]:
    """Ramp the offered rate ×1.5 per short step until the server falls behind; the best achieved rate."""
    a = bench.args
    rate, best = a.ramp_start, 0.0
    steps: list[Any] = []
    print(
        f"finding saturation: steps of ≥ {a.ramp_step:.0f} s and ≥ 200 queries from {rate:.0f}/s, ×1.5 each"
    )
    while rate <= a.ramp_max and len(steps) < 20:
        r = bench.run(rate, max(a.ramp_step, 200 / rate), requests)
        steps.append(r)
        best = max(best, r.achieved_rate)
        print(f"  {r.summary()}")
        print_error_samples(r)
        # a few errors are not saturation (the table shows them); shedding most of the load is
        behind = r.achieved_rate < 0.9 * r.offered_rate or r.ok < 0.9 * sum(r.outcomes.values())
        if behind or pct(r.ok_latencies_ms, 99) > a.ramp_max_p99:
            break
        rate *= 1.5
    return best, steps


def slo_p99(r: Any) -> float:
    """p99 over every scheduled query, a failed or unanswered one counting as an infinite latency."""
    failed = sum(r.outcomes.values()) - r.ok
    return pct(r.ok_latencies_ms + [math.inf] * failed, 99) if r.outcomes else math.inf


def passes_slo(r: Any, slo_ms: float) -> bool:
    return slo_p99(r) <= slo_ms


def max_rate_within_slo(bench: Bench, requests: Callable[[int], bytes], slo_ms: float) -> tuple[float, Any]:
    """Highest offered rate with p99 ≤ SLO and no errors: double (or halve) to bracket it, then bisect."""
    a = bench.args
    lo: tuple[float, Any] | None = None
    hi: float | None = None
    rate = a.ramp_start
    for _ in range(a.slo_max_runs):
        duration = min(max(a.slo_duration, a.slo_min_requests / rate), 4 * a.slo_duration)
        r = bench.run(rate, duration, requests)
        ok = passes_slo(r, slo_ms)
        print(f"    {'pass' if ok else 'FAIL'} {r.summary()}")
        print_error_samples(r)
        if r.ok == 0:
            print("    every query failed: the server is not serving, so no SLO can be found; stopping")
            break
        if ok:
            lo = (rate, r)
        else:
            hi = rate
        if hi is None:
            rate *= 2
            if rate > a.ramp_max:
                break
        elif lo is None:
            rate /= 2
            if rate < 1:
                break
        elif hi / lo[0] <= 1 + a.slo_tolerance:
            break
        else:
            rate = math.sqrt(lo[0] * hi)
    if lo is None:
        return 0.0, None
    return lo


# -------------------------------------------------------------------------------------------- printing
def table(head: list[str], rows: list[list[str]], markdown: bool) -> None:
    if markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "|".join("---" for _ in head) + "|")
        for row in rows:
            print("| " + " | ".join(row) + " |")
        return
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(head)]
    print("  ".join(h.rjust(w) for h, w in zip(head, widths, strict=True)))
    for row in rows:
        print("  ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)))


def ms(value: float) -> str:
    return "–" if math.isnan(value) else f"{value:.3f}"


def print_error_samples(r: Any) -> None:
    for status, body in sorted(r.error_bodies.items()):
        print(f"    first {status} answer: {body.decode(errors='replace')[:300]}")


def errors_text(r: Any) -> str:
    return ", ".join(f"{k}: {n}" for k, n in r.errors().items()) or "0"


# ---------------------------------------------------------------------------------------------- modes
def overhead_mode(
    bench: Bench, requests: Callable[[int], bytes], local: list[float], pinned: str | None
) -> None:
    a = bench.args
    local50, local99 = pct(local, 50), pct(local, 99)
    saturation = None
    if a.rates:
        rates: list[tuple[float, float | None]] = [(r, None) for r in a.rates]
    else:
        saturation, _ = find_saturation(bench, requests)
        print(f"saturation ≈ {saturation:.0f} req/s (best achieved rate during the ramp)\n")
        rates = [(f * saturation, f) for f in FRACTIONS]

    rows, cpu_rows, at_half = [], [], None
    names = sorted(bench.cpu.procs)
    for rate, frac in rates:
        print(f"running {rate:.0f}/s for {a.duration:.0f} s …", flush=True)
        r = bench.run(rate, a.duration, requests)
        med, variants, cached = server_medians(r.bodies)
        lat = r.ok_latencies_ms
        p50, p99 = pct(lat, 50), pct(lat, 99)
        rows.append(
            [
                f"{rate:.0f}" + (f" ({frac:.0%})" if frac is not None else ""),
                f"{r.offered_rate:.0f}",
                f"{r.achieved_rate:.0f}",
                ms(p50),
                ms(p99),
                ms(pct(lat, 99.9)),
                ms(p50 - local50),
                ms(p99 - local99),
                errors_text(r),
                f"{cached}",
                ms(med["queue"]),
                ms(med["compute"]),
                ms(med["total"]),
                ms(pct(r.send_lag_ms, 99)),
            ]
        )
        per_query = {k: v / r.ok * 1e6 for k, v in r.server_cpu_s.items()} if r.ok else {}
        client = r.client_cpu_s / r.ok * 1e6 if r.ok else math.nan
        busy = (r.client_cpu_s + sum(r.server_cpu_s.values())) / r.elapsed_s if r.elapsed_s else math.nan
        cpu_rows.append(
            [f"{rate:.0f}", f"{client:.0f}"]
            + [f"{per_query[n]:.0f}" if n in per_query else "–" for n in names]
            + [f"{client + sum(per_query.values()):.0f}", f"{busy:.2f}", f"{r.other_cores:.2f}"]
        )
        if frac == 0.5:
            at_half = (p50 - local50, p99 - local99)
        shown = ", ".join(f"{v} ({n})" for v, n in variants.most_common(3))
        print(f"  {r.summary()}; served by {shown}")
        print_error_samples(r)

    print(
        f"\n{a.model}, 1 row per query, {a.connections} connections, {a.duration:.0f} s per rate; "
        f"latencies in ms from the scheduled send time"
        + (f"; pinned to {pinned}" if pinned else "")
        + (f"; saturation ≈ {saturation:.0f} req/s" if saturation else "")
    )
    table(
        ["target /s", "offered /s", "achieved /s", "p50", "p99", "p99.9", "added p50", "added p99", "errors",
         "cached", "server queue p50", "server compute p50", "server total p50", "client send lag p99"],
        rows,
        a.markdown,
    )  # fmt: skip
    if names:
        print(
            "\nCPU time per answered query (µs) by process, net of each one's idle use; 'cores busy' = all"
            "\nof it / run time; 'other load' = cores busy with anything else on the machine (noise)"
        )
        table(["target /s", "client", *names, "total", "cores busy", "other load"], cpu_rows, a.markdown)
    print(
        f"\nin-process ONNX Runtime ({a.model}.onnx, 1 thread, batch 1, {len(local):,} runs): "
        f"p50 {local50:.4f} ms, p99 {local99:.4f} ms"
    )
    if at_half is not None:
        print(
            f"added latency at 50 % of saturation: p50 {at_half[0]:.3f} ms (budget {BUDGET_P50_MS}), "
            f"p99 {at_half[1]:.3f} ms (budget {BUDGET_P99_MS})"
        )


def slo_mode(bench: Bench, slo_ms: float) -> None:
    a = bench.args
    pair = a.slo_variants or pick_pair(bench)
    print(
        f"highest offered rate with p99 ≤ {slo_ms:g} ms (failed queries count as misses): {', '.join(pair)}"
    )
    if bench.probe(pair[0]) != pair[0]:
        print("the server cannot pin a variant: no batching comparison possible")
        return
    rows, best = [], []
    for vid in pair:
        print(f"  {vid}:")
        requests = bench.requests(vid)
        bench.run(100, 2, requests)  # warm: the instance loads on the first query
        rate, r = max_rate_within_slo(bench, requests, slo_ms)
        best.append(rate)
        if r is None:
            rows.append([vid, "< 1", "–", "–", "–"])
            continue
        _, variants, _ = server_medians(r.bodies)
        served = ", ".join(f"{v} ({n})" for v, n in variants.most_common(2))
        rows.append([vid, f"{rate:.0f}", ms(pct(r.ok_latencies_ms, 50)), ms(slo_p99(r)), served])
    print()
    table(["variant", f"max rate at p99 ≤ {slo_ms:g} ms", "p50", "p99", "served by"], rows, a.markdown)
    if len(best) == 2 and best[0] > 0:
        print(f"\nbatching throughput gain at the SLO: {best[1] / best[0]:.2f}× ({pair[1]} over {pair[0]})")


def pick_pair(bench: Bench) -> tuple[str, str]:
    """The b1 and b64 forms of the fastest ready b64 variant of the model on `--slo-hardware`:
    non-dominated first (on a GPU machine the CPU's best are usually dominated by the GPU's)."""
    status, variants = bench.api("GET", f"/v1/models/{bench.args.model}/variants?status=ready")
    if status != 200:
        sys.exit(f"cannot list variants: {status} {variants}")
    ready = {v["id"]: v for v in variants if v["status"] == "ready"}
    hardware = bench.args.slo_hardware
    # Fastest first as listed; the sort is stable, so the non-dominated keep that order ahead of the rest.
    for v in sorted(variants, key=lambda v: bool(v["dominated"])):
        if v["id"] in ready and v["max_batch"] == 64 and v["hardware"] == hardware:
            small = v["id"].replace("-b64-", "-b1-")
            if small in ready:
                return small, v["id"]
    sys.exit(f"no ready {hardware} b1/b64 pair among the variants of {bench.args.model}: pass --slo-variants")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--url", default="http://127.0.0.1:8080")
    parser.add_argument("--key", help="API key (default: the admin key of INFAAS_VAR_DIR)")
    parser.add_argument("--model", default="digits-mlp-small")
    parser.add_argument("--variant", help="pin this variant id in every query")
    parser.add_argument("--rates", type=float, nargs="+", help="offered rates (default: from saturation)")
    parser.add_argument("--duration", type=float, default=10.0, help="seconds per rate")
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--max-requests", type=int, default=200_000, help="cap per run")
    parser.add_argument("--drain", type=float, default=5.0, help="seconds to wait for answers after a run")
    parser.add_argument("--pause", type=float, default=1.0, help="seconds between runs")
    parser.add_argument("--ramp-start", type=float, default=50.0)
    parser.add_argument("--ramp-step", type=float, default=2.0, help="seconds per ramp step")
    parser.add_argument("--ramp-max", type=float, default=20_000.0)
    parser.add_argument("--ramp-max-p99", type=float, default=1000.0, help="ms; stop the ramp above it")
    parser.add_argument("--idle", type=float, default=5.0, help="seconds to measure idle server CPU")
    parser.add_argument("--local-runs", type=int, default=20_000, help="in-process ONNX Runtime calls")
    parser.add_argument("--slo-ms", type=float, help="find the max rate within this p99 for two variants")
    parser.add_argument(
        "--slo-variants", nargs="+", metavar="VARIANT", help="small-batch then large-batch variant (or one)"
    )
    parser.add_argument(
        "--slo-hardware", default="cpu", choices=("cpu", "cuda"), help="where the picked pair runs"
    )
    parser.add_argument("--slo-duration", type=float, default=5.0, help="seconds per SLO probe (at least)")
    parser.add_argument("--slo-min-requests", type=int, default=600, help="per SLO probe (p99 needs them)")
    parser.add_argument("--slo-max-runs", type=int, default=10, help="probes per variant")
    parser.add_argument("--slo-tolerance", type=float, default=0.1, help="stop bisecting at hi/lo ≤ 1+x")
    parser.add_argument(
        "--repeat-inputs", action="store_true", help="cycle 256 validation rows (prediction-cache hits)"
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()

    settings = get_settings()
    models = settings.var_dir / "demo-models"
    rows = np.load(models / "digits-validation.npz", allow_pickle=False)["x"].astype(np.float32)[:256]
    bench = Bench(args, rows, args.key or admin_key(settings))
    if args.slo_ms:
        slo_mode(bench, args.slo_ms)
        return

    pinned = bench.probe(args.variant)
    requests = bench.requests(pinned)
    local = in_process(models / f"{args.model}.onnx", rows, args.local_runs)
    print("warming up (500 queries at 100/s) …")
    bench.run(100, 5, requests)
    bench.cpu.measure_idle(a_idle := args.idle)
    print(f"idle CPU of the serving processes over {a_idle:.0f} s: "
          + ", ".join(f"{k} {v * 100:.1f} %" for k, v in sorted(bench.cpu.idle.items())))  # fmt: skip
    overhead_mode(bench, requests, local, pinned)


if __name__ == "__main__":
    main()
