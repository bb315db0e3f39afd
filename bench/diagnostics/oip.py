"""What the Open Inference Protocol costs next to `/v1`: one model, the same kind of rows.

Closed loop, one request at a time over one keep-alive connection, against a running gateway:
- `v1 json`: `POST /v1/models/{model}/infer` with `{"inputs": rows}`;
- `v2 json`: `POST /v2/models/{model}/infer`, tensors as JSON `data`, outputs as JSON;
- `v2 binary`: the binary tensor extension both ways (`Inference-Header-Content-Length`);
- `tritonclient`: `tritonclient.http` (binary both ways), client-side encoding and decoding included.
Bodies are encoded before the clock starts (except for tritonclient), so the first three time the
request's round trip and the answer's decoding. Every query carries distinct random rows, so none is
answered from the prediction cache. The system picks the variant (the table says which answered);
`--pin` pins the fastest ready fp32 variant whose max batch holds the largest row count, so every path
runs the same compute — but the planner may unload a pinned variant's instance meanwhile (see
docs/benchmarks.md). Reported: p50/p99 of the round trip and the median of the server-reported total
(scheduler arrival → answer).

`--codec` needs no server: it times, in-process, what the gateway does per query on each path (JSON or
binary request → the scheduler's validated query; the scheduler's answer → `/v1` or OIP answer), best of
5 × 2,000 runs per cell, in µs.

Usage (with a system running, e.g. `make run`, or `infaas run` on other ports and INFAAS_VAR_DIR):

    .venv/bin/python -m bench.diagnostics.oip --markdown
    .venv/bin/python -m bench.diagnostics.oip --codec
    .venv/bin/python -m bench.diagnostics.oip --url http://127.0.0.1:19080 --rows 1 64 --n 500
"""

from __future__ import annotations

import argparse
import statistics
import time
import timeit
from collections.abc import Callable
from typing import Any

import httpx
import numpy as np
import orjson
import tritonclient.http as triton

from infaas.core.config import get_settings
from infaas.processes.suite import admin_key

HEADER = "Inference-Header-Content-Length"


def pick_variant(http: httpx.Client, model: str, rows: int) -> str:
    variants = http.get(
        f"/v1/models/{model}/variants", params={"status": "ready", "precision": "fp32", "batch": rows}
    ).json()
    fitting = [v for v in variants if v["max_batch"] >= rows and not v["dominated"]] or [
        v for v in variants if v["max_batch"] >= rows
    ]
    if not fitting:
        raise SystemExit(f"{model} has no ready fp32 variant with max batch >= {rows}")
    return str(fitting[0]["id"])


def _pin(variant: str | None) -> dict[str, str]:
    return {} if variant is None else {"variant": variant}


def v1_body(x: np.ndarray, variant: str | None) -> tuple[bytes, dict[str, str]]:
    return orjson.dumps({"inputs": x.tolist(), **_pin(variant)}), {"content-type": "application/json"}


def v2_json_body(x: np.ndarray, variant: str | None) -> tuple[bytes, dict[str, str]]:
    body = {
        "inputs": [{"name": "x", "shape": list(x.shape), "datatype": "FP32", "data": x.ravel().tolist()}],
        "outputs": [{"name": "probabilities", "parameters": {"binary_data": False}}],
        "parameters": _pin(variant),
    }
    return orjson.dumps(body), {"content-type": "application/json"}


def v2_binary_body(x: np.ndarray, variant: str | None) -> tuple[bytes, dict[str, str]]:
    head = orjson.dumps(
        {
            "inputs": [
                {
                    "name": "x",
                    "shape": list(x.shape),
                    "datatype": "FP32",
                    "parameters": {"binary_data_size": x.nbytes},
                }
            ],
            "parameters": {**_pin(variant), "binary_data_output": True},
        }
    )
    return head + x.tobytes(), {"content-type": "application/octet-stream", HEADER: str(len(head))}


Served = tuple[float, str]  # server-reported total ms, variant that answered


def decode(response: httpx.Response) -> Served:
    """What the server reports, after decoding the outputs as a client would."""
    response.raise_for_status()
    length = response.headers.get(HEADER)
    if length is None:
        answer = orjson.loads(response.content)
    else:
        answer = orjson.loads(response.content[: int(length)])
        np.frombuffer(response.content[int(length) :], dtype=np.float32)
    if "latency_ms" in answer:
        np.asarray(answer["outputs"]["probabilities"], dtype=np.float32)
        return float(answer["latency_ms"]["total"]), str(answer["variant"])
    out = answer["outputs"][0]
    if "data" in out:
        np.asarray(out["data"], dtype=np.float32)
    return float(answer["parameters"]["total_ms"]), str(answer["parameters"]["variant"])


def run_http(
    http: httpx.Client,
    path: str,
    make: Callable[[np.ndarray, str | None], tuple[bytes, dict[str, str]]],
    xs: list[np.ndarray],
    variant: str | None,
) -> tuple[list[float], list[Served]]:
    bodies = [make(x, variant) for x in xs]
    rtt, served = [], []
    for body, headers in bodies:
        t0 = time.perf_counter()
        response = http.post(path, content=body, headers=headers)
        answer = decode(response)
        rtt.append((time.perf_counter() - t0) * 1000)
        served.append(answer)
    return rtt, served


def run_triton(
    url: str, key: str, model: str, xs: list[np.ndarray], variant: str | None
) -> tuple[list[float], list[Served]]:
    client = triton.InferenceServerClient(url.removeprefix("http://"))
    rtt, served = [], []
    try:
        for x in xs:
            t0 = time.perf_counter()
            inp = triton.InferInput("x", list(x.shape), "FP32")
            inp.set_data_from_numpy(x)
            result = client.infer(
                model, [inp], headers={"Authorization": f"Bearer {key}"}, parameters=_pin(variant) or None
            )
            result.as_numpy("probabilities")
            rtt.append((time.perf_counter() - t0) * 1000)
            params = result.get_response()["parameters"]
            served.append((float(params["total_ms"]), str(params["variant"])))
    finally:
        client.close()
    return rtt, served


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def codec(rows_list: list[int]) -> None:
    """Per-query gateway CPU of each path, in-process (no network, no scheduler)."""
    from infaas.schemas.api import AppInternal, ModelInternal
    from infaas.wire.tensors import Signature, TensorSpec

    sig = Signature(
        (TensorSpec("x", "float32", (None, 64)),), (TensorSpec("probabilities", "float32", (None, 10)),)
    )
    model = ModelInternal(
        id=1,
        name="m",
        app="a",
        format="onnx",
        status="ready",
        artifact_digest="a" * 64,
        validation_digest="b" * 64,
        signature=sig.to_json(),
    )
    app = AppInternal(
        name="a", default_latency_ms=None, default_min_accuracy=None, slo_policy="best_effort", models=[model]
    )
    rng = np.random.default_rng(0)
    print("| rows | step | µs |\n|---:|---|---:|")
    for rows in rows_list:
        _codec_rows(rows, model, app, rng)


def _codec_rows(rows: int, model: Any, app: Any, rng: np.random.Generator) -> None:
    from gateway.dataplane import queries
    from gateway.dataplane.routes import v1_json
    from gateway.oip import codec as oip_codec
    from gateway.oip.routes import _response
    from infaas.clients.envelope import Answer
    from infaas.policy.selection import Requirements

    x = rng.random((rows, 64), dtype=np.float32) * 16
    v1 = orjson.dumps({"inputs": x.tolist()})
    v2_json, _ = v2_json_body(x, None)
    v2_bin, headers = v2_binary_body(x, None)
    out = rng.random((rows, 10), dtype=np.float32)
    outputs = {"probabilities": out}
    answer = Answer(outputs, "m", "v", "w", "cpu", 0.1, 0.1, 0.3, None, False, False, "r", "id")

    def v1_query() -> None:
        data, asked = queries.parse_body(v1)
        queries.from_json(app, model, data, asked, request_id="id", max_rows=1024)

    def v2_query(body: bytes, length: str | None) -> oip_codec.InferRequestV2:
        req = oip_codec.parse_request(*oip_codec.split_body(body, length), orjson.loads)
        queries.build(
            app,
            model,
            lambda signature: queries.arrays_for(signature, req.inputs, max_rows=1024),
            Requirements(),
            variant=None,
            request_id="id",
        )
        return req

    as_json = v2_query(v2_json, None)
    as_binary = v2_query(v2_bin, headers[HEADER])
    dtypes = {"probabilities": "float32"}
    steps: dict[str, Callable[[], object]] = {
        "v1 json request → query": v1_query,
        "v2 json request → query": lambda: v2_query(v2_json, None),
        "v2 binary request → query": lambda: v2_query(v2_bin, headers[HEADER]),
        "v1 json answer": lambda: v1_json(answer),
        "v2 json answer": lambda: _response("m", as_json, answer, dtypes),
        "v2 binary answer": lambda: _response("m", as_binary, answer, dtypes),
    }
    for name, step in steps.items():
        best = min(timeit.repeat(step, number=2000, repeat=5)) / 2000 * 1e6
        print(f"| {rows} | {name} | {best:.1f} |")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--url", default=None, help="gateway URL (default: this machine's)")
    parser.add_argument("--key", default=None, help="admin key (default: INFAAS_ADMIN_KEY or var/admin.key)")
    parser.add_argument("--model", default="digits-mlp-small")
    parser.add_argument("--rows", type=int, nargs="+", default=[1, 64])
    parser.add_argument("--n", type=int, default=300, help="queries per path and row count")
    parser.add_argument("--pin", action="store_true", help="pin one fp32 variant for every path")
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--codec", action="store_true", help="time the gateway's per-query steps in-process")
    args = parser.parse_args()
    if args.codec:
        codec(args.rows)
        return
    settings = get_settings()
    url = args.url or f"http://127.0.0.1:{settings.gateway_port}"
    key = args.key or admin_key(settings)
    rng = np.random.default_rng(0)
    lines = [
        "| rows | path | p50 ms | p99 ms | server total p50 ms | variants that answered |",
        "|---:|---|---:|---:|---:|---|",
    ]
    model = args.model
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=60) as http:
        variant = pick_variant(http, model, max(args.rows)) if args.pin else None
        print(f"model {model}, variant {variant or 'chosen by the system'}, {args.n} queries per cell")
        paths: dict[str, Callable[[list[np.ndarray]], tuple[list[float], list[Served]]]] = {
            "v1 json": lambda xs: run_http(http, f"/v1/models/{model}/infer", v1_body, xs, variant),
            "v2 json": lambda xs: run_http(http, f"/v2/models/{model}/infer", v2_json_body, xs, variant),
            "v2 binary": lambda xs: run_http(http, f"/v2/models/{model}/infer", v2_binary_body, xs, variant),
            "tritonclient (binary)": lambda xs: run_triton(url, key, model, xs, variant),
        }
        for rows in args.rows:
            for name, measure in paths.items():
                xs = [(rng.random((rows, 64), dtype=np.float32) * 16) for _ in range(args.n + 20)]
                rtt, served = measure(xs)
                rtt, served = rtt[20:], served[20:]  # warm-up
                ids = sorted({v.split(".", 1)[-1] for _, v in served})
                lines.append(
                    f"| {rows} | {name} | {statistics.median(rtt):.2f} | {pct(rtt, 0.99):.2f} | "
                    f"{statistics.median(t for t, _ in served):.2f} | {', '.join(ids)} |"
                )
    print("\n".join(lines) if args.markdown else "\n".join(line.replace("|", " ") for line in lines))


if __name__ == "__main__":
    main()
