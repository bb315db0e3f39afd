"""INFaaS Fig. 8 in spirit: online p99 latency and offline job throughput over time, each alone and then
co-located on the same workers (the throttle pausing the job when online load needs the workers).

Starts the whole system (embedded Redis + SQLite under a temporary directory), registers the large demo
MLP, then runs three phases of `--phase-s` seconds: online load alone, an offline job alone, both.
Online load: `--clients` closed-loop clients, each sending `--rows`-row queries with `--think-ms` pauses.
Writes a table to stdout, JSON next to the SVG plot (`--out`, default docs/img/offline.svg).

    .venv/bin/python -m bench.papers.offline --phase-s 20
"""

from __future__ import annotations

import argparse
import json
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import numpy as np
import orjson

from bench.common.paths import ROOT
from infaas.core.config import Settings
from infaas.processes.suite import free_port
from infaas_cli.demo_models import build_demo_models
from infaas_cli.launcher import start_suite


@dataclass
class Series:
    online: list[tuple[float, float]] = field(default_factory=list)  # (t, latency ms)
    failures: int = 0
    job: list[tuple[float, int, str]] = field(default_factory=list)  # (t, rows done, state)


def online_load(url: str, key: str, x: np.ndarray, rows: int, think_s: float, stop: threading.Event,
                series: Series, t0: float, seed: int) -> None:  # fmt: skip
    rng = np.random.default_rng(seed)
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=30) as client:
        while not stop.is_set():
            batch = x[rng.integers(0, len(x), size=rows)] + rng.normal(0, 0.01, size=(rows, x.shape[1]))
            start = time.perf_counter()
            response = client.post("/v1/models/big/infer", json={"inputs": batch.astype(np.float32).tolist()})
            elapsed = (time.perf_counter() - start) * 1000
            if response.status_code == 200:
                series.online.append((time.perf_counter() - t0, elapsed))
            else:
                series.failures += 1
            time.sleep(think_s)


def follow_job(client: httpx.Client, job_id: str, stop: threading.Event, series: Series, t0: float) -> None:
    while not stop.is_set():
        job = client.get(f"/v1/jobs/{job_id}").json()
        series.job.append((time.perf_counter() - t0, job["rows_done"], job["state"]))
        if job["state"] in ("succeeded", "failed", "cancelled"):
            return
        time.sleep(0.25)


def submit_job(client: httpx.Client, x: np.ndarray, rows: int, data_dir: Path) -> str:
    """The input goes through the job data store (`input_path`), not an upload: it is large."""
    rng = np.random.default_rng(1)
    data_dir.mkdir(parents=True, exist_ok=True)
    np.save(data_dir / "bench-in.npy", (x[rng.integers(0, len(x), size=rows)]).astype(np.float32))
    meta = {"model": "big", "chunk_rows": 2000, "input_path": "bench-in.npy"}
    response = client.post("/v1/jobs", data={"metadata": orjson.dumps(meta).decode()})
    response.raise_for_status()
    return str(response.json()["id"])


def run_phase(name: str, url: str, key: str, x: np.ndarray, args: argparse.Namespace, *, online: bool,
              job_rows: int) -> Series:  # fmt: skip
    series = Series()
    stop = threading.Event()
    t0 = time.perf_counter()
    threads = []
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=60) as client:
        if online:
            threads += [
                threading.Thread(
                    target=online_load,
                    args=(url, key, x, args.rows, args.think_ms / 1000, stop, series, t0, i),
                )
                for i in range(args.clients)
            ]
        if job_rows:
            job_id = submit_job(client, x, job_rows, args.data_dir)
            threads.append(threading.Thread(target=follow_job, args=(client, job_id, stop, series, t0)))
        for t in threads:
            t.start()
        time.sleep(args.phase_s)
        stop.set()
        for t in threads:
            t.join()
        if job_rows:
            client.delete(f"/v1/jobs/{job_id}")  # the next phase starts from an idle system
    polls = len(series.job)
    print(f"phase {name}: {len(series.online)} online queries, {series.failures} failed, {polls} job polls")
    return series


def per_second(series: Series, phase_s: float) -> list[dict[str, float | str | None]]:
    out: list[dict[str, float | str | None]] = []
    previous_rows = 0
    job_iter = iter(series.job)
    current = next(job_iter, None)
    for second in range(int(phase_s)):
        lat = [ms for t, ms in series.online if second <= t < second + 1]
        rows, state = previous_rows, None
        while current is not None and current[0] < second + 1:
            rows, state = current[1], current[2]
            current = next(job_iter, None)
        out.append(
            {
                "t": second,
                "online_qps": float(len(lat)),
                "online_p99_ms": float(np.percentile(lat, 99)) if lat else None,
                "offline_rows_s": float(rows - previous_rows),
                "job_state": state,
            }
        )
        previous_rows = rows
    return out


def summary(rows: list[dict[str, float | str | None]], series: Series) -> dict[str, float | None]:
    lat = [ms for _, ms in series.online]
    offline = [float(r["offline_rows_s"] or 0) for r in rows]
    paused = sum(1 for r in rows if r["job_state"] == "paused")
    return {
        "online_queries": float(len(lat)),
        "online_failures": float(series.failures),
        "online_p50_ms": float(np.percentile(lat, 50)) if lat else None,
        "online_p99_ms": float(np.percentile(lat, 99)) if lat else None,
        "offline_rows_s_mean": float(np.mean(offline)) if series.job else None,
        "seconds_job_paused": float(paused),
    }


def svg(phases: dict[str, list[dict[str, float | str | None]]], path: Path) -> None:
    """Two panels (online p99, offline rows/s) over time, one line per phase; hand-written SVG."""
    width, height, pad = 760, 520, 60
    colors = {"online alone": "#1f77b4", "offline alone": "#2ca02c", "co-located": "#d62728"}
    panels = [("online_p99_ms", "online p99 (ms)", 40), ("offline_rows_s", "offline rows/s", 290)]
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        'font-family="sans-serif" font-size="12"><rect width="100%" height="100%" fill="white"/>'
    ]
    n = max(len(r) for r in phases.values())
    for key, label, top in panels:
        values = [float(v) for r in phases.values() for row in r if (v := row[key]) is not None]
        vmax = max(values) * 1.1 if values else 1.0
        h = 180
        parts.append(f'<text x="{pad}" y="{top - 8}" font-weight="bold">{label}</text>')
        parts.append(f'<line x1="{pad}" y1="{top + h}" x2="{width - 20}" y2="{top + h}" stroke="#444"/>')
        parts.append(f'<line x1="{pad}" y1="{top}" x2="{pad}" y2="{top + h}" stroke="#444"/>')
        parts.append(f'<text x="{pad - 8}" y="{top + 4}" text-anchor="end">{vmax:.0f}</text>')
        parts.append(f'<text x="{pad - 8}" y="{top + h}" text-anchor="end">0</text>')
        for name, rows in phases.items():
            points = [
                (pad + (width - 20 - pad) * row["t"] / max(1, n - 1), top + h - h * float(v) / vmax)  # type: ignore[operator]
                for row in rows
                if (v := row[key]) is not None
            ]
            if points:
                path_d = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
                parts.append(
                    f'<polyline fill="none" stroke="{colors[name]}" stroke-width="2" points="{path_d}"/>'
                )
    for i, (name, color) in enumerate(colors.items()):
        parts.append(f'<rect x="{pad + 170 * i}" y="{height - 22}" width="12" height="12" fill="{color}"/>')
        parts.append(f'<text x="{pad + 170 * i + 18}" y="{height - 12}">{name}</text>')
    parts.append(f'<text x="{width - 20}" y="{height - 40}" text-anchor="end">seconds into the phase</text>')
    parts.append("</svg>")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(parts))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--phase-s", type=float, default=20)
    parser.add_argument("--clients", type=int, default=2)
    parser.add_argument("--rows", type=int, default=32)
    parser.add_argument("--think-ms", type=float, default=5)
    parser.add_argument("--job-rows", type=int, default=300_000)
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "img" / "offline.svg")
    args = parser.parse_args()
    var = Path(tempfile.mkdtemp(prefix="infaas-bench-offline-"))
    args.data_dir = var / "job-data"
    ports = {f"{s}_port": free_port() for s in ("gateway", "registry", "scheduler", "planner", "executor")}
    settings = Settings(var_dir=var, admin_key="adm_" + uuid.uuid4().hex, profiler_metrics_port=free_port(),
                        profile_seconds_per_point=0.05, profile_min_iterations=20,
                        max_request_bytes=64 << 20, **ports)  # type: ignore[arg-type]  # fmt: skip
    models = build_demo_models(ROOT / "var" / "demo-models")
    suite = start_suite(settings)
    url = f"http://127.0.0.1:{settings.gateway_port}"
    try:
        with httpx.Client(
            base_url=url, headers={"Authorization": f"Bearer {settings.admin_key}"}, timeout=60
        ) as a:
            key = a.post("/v1/apps", json={"name": "bench", "cache": False}).json()["api_key"]
            large = models[1]
            a.post(
                "/v1/models",
                files={"file": ("m.onnx", large.onnx_path.read_bytes()),
                       "validation": ("v.npz", large.validation_path.read_bytes())},
                data={"metadata": json.dumps({"name": "big", "app": "bench", "task": "classification"})},
            ).raise_for_status()  # fmt: skip
            while a.get("/v1/models/big").json()["status"] not in ("ready", "failed"):
                time.sleep(0.5)
        x = np.load(large.validation_path)["x"].astype(np.float32)
        phases = {
            "online alone": run_phase("online alone", url, key, x, args, online=True, job_rows=0),
            "offline alone": run_phase(
                "offline alone", url, key, x, args, online=False, job_rows=args.job_rows
            ),
            "co-located": run_phase("co-located", url, key, x, args, online=True, job_rows=args.job_rows),
        }
    finally:
        suite.stop()
    table = {name: per_second(series, args.phase_s) for name, series in phases.items()}
    results = {name: summary(table[name], series) for name, series in phases.items()}
    head = ("phase", "queries", "fail", "p50 ms", "p99 ms", "offline rows/s", "paused s")
    print(f"{head[0]:<14} " + " ".join(f"{h:>{max(8, len(h))}}" for h in head[1:]))
    for name, s in results.items():

        def f(v: float | None, fmt: str) -> str:
            return "-" if v is None else format(v, fmt)

        cells = [
            f(s["online_queries"], ".0f"),
            f(s["online_failures"], ".0f"),
            f(s["online_p50_ms"], ".2f"),
            f(s["online_p99_ms"], ".2f"),
            f(s["offline_rows_s_mean"], ".0f"),
            f(s["seconds_job_paused"], ".0f"),
        ]
        print(
            f"{name:<14} " + " ".join(f"{c:>{max(8, len(h))}}" for c, h in zip(cells, head[1:], strict=True))
        )
    svg(table, args.out)
    args.out.with_suffix(".json").write_text(json.dumps({"summary": results, "per_second": table}, indent=1))
    print(f"wrote {args.out} and {args.out.with_suffix('.json')}")


if __name__ == "__main__":
    main()
