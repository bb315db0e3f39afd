"""The runs of `overhead.py`: the target and one open-loop run against it (`Bench`), the CPU the
serving processes and the rest of the machine use meanwhile, the server-reported latency medians, and
the same model run in-process with ONNX Runtime."""

from __future__ import annotations

import argparse
import math
import random
import statistics
import sys
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort
import orjson
import psutil

from bench.common import loadgen as lg

NONCE_FEATURE = 32  # a pixel that is 0 in every digits row, like feature 0


class Bench:
    """The target, its request bytes and the knobs shared by every run."""

    def __init__(self, args: argparse.Namespace, rows: np.ndarray, key: str) -> None:
        self.args = args
        self.target = lg.Target.parse(args.url)
        self.key = key
        self.rows = rows
        self.path = f"/v1/models/{args.model}/infer"
        self.seed = args.seed
        self.offset = self.base = 0
        self.nonce = np.float32(random.SystemRandom().randrange(1, lg.UNIQUE_VALUES) / lg.UNIQUE_VALUES)
        self.cpu = ServerCPU(self.target.port)

    def requests(self, variant: str | None) -> Callable[[int], bytes]:
        """Request i as bytes: validation row i mod 256 with, unless --repeat-inputs, its first feature
        (always 0 in digits) replaced by a number unique to the request within this invocation and another
        one (also always 0) by a random number of this invocation, so that no query is answered from the
        prediction cache (which outlives one invocation) and every one takes the whole path to an executor."""
        headers = {"Authorization": f"Bearer {self.key}", "Content-Type": "application/json"}
        extra = b',"variant":' + orjson.dumps(variant) if variant else b""
        marker = lg.unique_value(0)
        parts = []
        for original in self.rows:
            row = original.copy()
            if not self.args.repeat_inputs:
                row[NONCE_FEATURE] = self.nonce
            rest = orjson.dumps(row[1:].tolist())[1:-1]
            body = b'{"inputs":[[' + marker + b"," + rest + b"]]" + extra + b"}"
            raw = lg.encode_request("POST", self.target.authority, self.path, body, headers)
            cut = raw.index(b'{"inputs":[[') + len(b'{"inputs":[[')
            parts.append((raw[:cut], raw[cut + len(marker) :]))
        if self.args.repeat_inputs:
            firsts = [b"%.7f" % row[0] for row in self.rows]  # same width as the marker: x is in [0, 1]
            assert all(len(v) == len(marker) for v in firsts)
            fixed = [head + v + tail for (head, tail), v in zip(parts, firsts, strict=True)]
            return lambda i: fixed[i % len(fixed)]

        def request(i: int) -> bytes:
            head, tail = parts[i % len(parts)]
            return head + lg.unique_value(self.base + i) + tail

        return request

    def run(self, rate: float, duration: float, requests: Callable[[int], bytes]) -> Any:
        self.seed += 1
        schedule = lg.poisson_schedule(rate, duration, self.seed, max_requests=self.args.max_requests)
        self.base, self.offset = self.offset, self.offset + len(schedule)  # unique across runs too
        t0, before, busy0 = time.perf_counter(), self.cpu.sample(), machine_busy_s()
        result = lg.run(
            lg.run_open_loop(
                self.target,
                requests,
                schedule,
                connections=self.args.connections,
                drain_s=self.args.drain,
                duration_s=duration,
            )
        )
        wall, after, busy1 = time.perf_counter() - t0, self.cpu.sample(), machine_busy_s()
        used = {k: after[k] - before[k] for k in after if k in before}
        # what the queries cost: each process's CPU less what it burns when idle (heartbeats, polling)
        result.server_cpu_s = {k: max(0.0, v - self.cpu.idle.get(k, 0.0) * wall) for k, v in used.items()}
        result.other_cores = (busy1 - busy0 - sum(used.values()) - result.client_cpu_s) / wall
        result.target_rate = rate
        time.sleep(self.args.pause)  # let queues left by an overloaded run drain before the next one
        return result

    def api(self, method: str, path: str, body: dict[str, Any] | None = None) -> tuple[int, Any]:
        """Setup calls (listing, probing): plain blocking urllib, never used under load."""
        data = orjson.dumps(body) if body is not None else None
        req = urllib.request.Request(self.args.url.rstrip("/") + path, data=data, method=method)
        req.add_header("Authorization", f"Bearer {self.key}")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=60) as resp:
                return resp.status, orjson.loads(resp.read())
        except urllib.error.HTTPError as exc:
            raw = exc.read()
            try:
                return exc.code, orjson.loads(raw)
            except orjson.JSONDecodeError:
                return exc.code, raw.decode(errors="replace")

    def probe(self, variant: str | None) -> str | None:
        """One query; returns the variant to pin (None if pinning is refused). Exits if queries fail."""
        body: dict[str, Any] = {"inputs": [self.rows[0].tolist()]}
        if variant:
            body["variant"] = variant
        for _ in range(3):  # a 503 may be a stale pooled connection inside the server: try again
            status, answer = self.api("POST", self.path, body)
            if status != 503:
                break
        if status == 200:
            return variant
        if variant and status == 422:
            print(f"note: the server refused the 'variant' field (422: {_message(answer)}); running unpinned")
            return self.probe(None)
        sys.exit(f"a probe query failed: {status} {answer}")


class ServerCPU:
    """CPU seconds used by the serving processes, read from /proc via psutil: the process listening on
    the gateway port and, when it was started by `infaas run`, its sibling services and embedded Redis.
    Best effort: empty when the processes cannot be seen (another host, another user)."""

    def __init__(self, port: int) -> None:
        self.procs: dict[str, psutil.Process] = {}
        self.idle: dict[str, float] = {}
        try:
            listening = [
                c.pid
                for c in psutil.net_connections("tcp")
                if c.status == "LISTEN" and c.laddr and c.laddr.port == port
            ]
            if not listening or listening[0] is None:
                return
            gateway = psutil.Process(listening[0])
            parent = gateway.parent()
            launched = parent is not None and "run" in parent.cmdline()
            for proc in parent.children() if launched and parent is not None else [gateway]:
                cmd = proc.cmdline()
                name = cmd[cmd.index("serve") + 1] if "serve" in cmd else proc.name().split()[0]
                self.procs[name] = proc
        except (psutil.Error, OSError, ValueError, IndexError):
            self.procs = {}

    def measure_idle(self, seconds: float) -> None:
        """CPU per second each process uses with no query (heartbeats, polling loops)."""
        before = self.sample()
        time.sleep(seconds)
        after = self.sample()
        self.idle = {k: (after[k] - before[k]) / seconds for k in after if k in before}

    def sample(self) -> dict[str, float]:
        out = {}
        for name, proc in self.procs.items():
            try:
                t = proc.cpu_times()
                out[name] = t.user + t.system
            except psutil.Error:
                continue
        return out


def machine_busy_s() -> float:
    """CPU seconds all cores spent on anything but idling, since boot (steal time included)."""
    t = psutil.cpu_times()
    return float(t.user + t.nice + t.system + getattr(t, "irq", 0.0) + getattr(t, "softirq", 0.0)
                 + getattr(t, "steal", 0.0))  # fmt: skip


def _message(answer: Any) -> str:
    if isinstance(answer, dict) and isinstance(answer.get("error"), dict):
        return str(answer["error"].get("message"))
    return str(answer)[:200]


def server_medians(bodies: list[bytes]) -> tuple[dict[str, float], Counter[str], int]:
    """Medians of the answers' `latency_ms` parts, the variants that answered, how many from the cache."""
    parts: dict[str, list[float]] = {"queue": [], "compute": [], "total": []}
    cached = 0
    variants: Counter[str] = Counter()
    for raw in bodies:
        answer = orjson.loads(raw)
        variants[answer.get("variant", "?")] += 1
        cached += bool(answer.get("cached"))
        for k, values in parts.items():
            value = answer.get("latency_ms", {}).get(k)
            if isinstance(value, int | float):
                values.append(float(value))
    return {k: statistics.median(v) if v else math.nan for k, v in parts.items()}, variants, cached


def in_process(model_path: Path, rows: np.ndarray, runs: int) -> list[float]:
    """Per-call latency (ms) of the model in one ONNX Runtime session, one thread, batch of 1."""
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    session = ort.InferenceSession(str(model_path), opts, providers=["CPUExecutionProvider"])
    name = session.get_inputs()[0].name
    batches = [rows[i : i + 1] for i in range(len(rows))]
    for i in range(500):
        session.run(None, {name: batches[i % len(batches)]})
    out = []
    for i in range(runs):
        batch = batches[i % len(batches)]
        start = time.perf_counter()
        session.run(None, {name: batch})
        out.append((time.perf_counter() - start) * 1000)
    return out
