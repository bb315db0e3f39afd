"""Profile the three demo models on a running system and report their variants: a table per model,
a latency–accuracy scatter plot (self-contained SVG) and the same numbers as JSON for the docs.

Against a running system (`make run`, or `.venv/bin/infaas run --no-demo`), from the repository root:

    .venv/bin/python -m bench.diagnostics.variants [--url http://127.0.0.1:8080] [--key KEY] [--markdown]
        [--out var/bench/variants.svg] [--cleanup]
    .venv/bin/python -m bench.diagnostics.variants --from-json var/bench/variants.json --markdown  # no system

Each demo model is registered under a fresh name `<name>-bench-<unix time>` in the app `bench` (created
if missing), one after the other, so that the time from the 202 until the model is `ready` is that
model's own profiling time (the profiler measures one model at a time). The admin key defaults to the
one the launcher uses (`INFAAS_ADMIN_KEY`, else `<INFAAS_VAR_DIR>/admin.key`). `variants.json` is
written next to the SVG; `--from-json` re-renders the tables and the plot from such a file.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Any

import httpx

from bench.diagnostics.variant_plot import render_svg
from bench.diagnostics.variant_rows import Row, format_markdown, format_table, not_ready, variant_rows

APP = "bench"
POLL_S = 0.5


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
    # Imported here so that this file and its helpers import without the settings machinery.
    from infaas.core.config import get_settings
    from infaas.processes.suite import admin_key
    from infaas_cli.demo_models import build_demo_models

    settings = get_settings()
    demo = build_demo_models(settings.var_dir / "demo-models", names=args.models)
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
    parser.add_argument("--models", nargs="+", metavar="NAME", help="only these demo models (default: all)")
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
