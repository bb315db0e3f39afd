"""Baseline of the serving path: sequential (closed-loop, one client) queries through the gateway,
next to the same model called in-process with ONNX Runtime.

This is a before/after yardstick for the query path, not the open-loop overhead benchmark of issue 4.
Usage (with `make run` going in another terminal):

    .venv/bin/python -m bench.diagnostics.baseline_latency --queries 2000
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import httpx
import numpy as np
import onnxruntime as ort

from infaas.core.config import get_settings
from infaas.processes.suite import admin_key


def percentiles(values: list[float]) -> str:
    arr = np.asarray(values)
    return "  ".join(f"p{q}={np.percentile(arr, q):.3f}" for q in (50, 90, 99))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--url", default="http://127.0.0.1:8080")
    parser.add_argument("--model", default="digits-mlp-small")
    parser.add_argument("--queries", type=int, default=2000)
    parser.add_argument("--rows", type=int, default=1)
    args = parser.parse_args()

    settings = get_settings()
    models = settings.var_dir / "demo-models"
    x = np.load(models / "digits-validation.npz")["x"][: args.rows]
    body = {"inputs": x.tolist()}

    session = ort.InferenceSession(
        str(Path(models / f"{args.model}.onnx")), providers=["CPUExecutionProvider"]
    )
    for _ in range(200):
        session.run(None, {"x": x})
    local = []
    for _ in range(args.queries):
        start = time.perf_counter()
        session.run(None, {"x": x})
        local.append((time.perf_counter() - start) * 1000)

    client = httpx.Client(base_url=args.url, headers={"Authorization": f"Bearer {admin_key(settings)}"})
    path = f"/v1/models/{args.model}/infer"
    for _ in range(200):  # warm: instance loaded, connections pooled
        client.post(path, json=body).raise_for_status()
    total, server, queue, compute = [], [], [], []
    for _ in range(args.queries):
        start = time.perf_counter()
        answer = client.post(path, json=body)
        total.append((time.perf_counter() - start) * 1000)
        answer.raise_for_status()
        ms = answer.json()["latency_ms"]
        server.append(ms["total"])
        queue.append(ms["queue"])
        compute.append(ms["compute"])

    print(f"{args.queries} sequential queries, {args.rows} row(s), model {args.model} (ms)")
    print(f"  in-process ONNX Runtime      {percentiles(local)}")
    print(f"  client round trip (gateway)  {percentiles(total)}")
    print(f"  scheduler total              {percentiles(server)}")
    print(f"  executor queue               {percentiles(queue)}")
    print(f"  executor compute             {percentiles(compute)}")
    added = np.percentile(total, 50) - np.percentile(local, 50)
    print(f"  added p50 over in-process: {added:.3f} ms")


if __name__ == "__main__":
    main()
