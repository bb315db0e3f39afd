"""The latency floor of this machine for infaas's process topology, with no infaas in it.

`overhead.py` measures the serving path: load generator → gateway → executor → gateway → load
generator, four hand-offs between processes per query. On a small VM what a hand-off costs depends on
the host (waking an idle vCPU can take a millisecond), and it changes from one machine to the next; so
a latency budget means little without the floor under it. This script measures that floor with the
same load generator, the same request bytes and the same event loop (uvloop), against two stand-ins that
do no work:

- `one-hop`: an HTTP/1.1 server that answers every request at once with a fixed JSON body (client ↔
  server: two hand-offs);
- `two-hop`: the same server, but each request's body goes as a length-prefixed frame over one
  persistent TCP connection to a second process, which answers it at once; the HTTP answer leaves when
  the frame's answer is back (client ↔ front ↔ back: four hand-offs, infaas's topology).

Whatever p99 the two-hop stand-in shows at a rate, no design with a separate executor process beats
on this machine at that rate; the difference to `overhead.py` at the same rate is what infaas
itself adds. Also: `wakeup`, a bare socket ping-pong between two processes with Poisson gaps; and
`stalls`: one, then two processes that only read the clock in a loop, for `--stall-seconds` each. Every
pause between two reads longer than 0.5 ms is time the process did not run although it wanted to: with
one spinner on an idle 2-vCPU machine there should be none; what shows up with two is the host taking
vCPUs away when both are busy, and no code in the guest can avoid it. Those pauses land in any
latency percentile they exceed the share of.

    .venv/bin/python -m bench.diagnostics.floor --rates 1000 2000 4000 --duration 8 --markdown
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import re
import socket
import struct
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import psutil

from bench.common import loadgen as lg
from infaas.processes.suite import free_port

ANSWER = b'{"outputs":[[0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9,1.0]],"variant":"floor","slo_met":true}'
HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n" % len(ANSWER)
LENGTH = re.compile(rb"content-length:\s*(\d+)")
FRAME = struct.Struct("!II")  # length of what follows, request id


def take_frames(buffer: bytearray) -> list[tuple[int, bytes]]:
    """(request id, body) of every whole frame at the start of `buffer`, removed from it."""
    out = []
    while len(buffer) >= FRAME.size:
        size, rid = FRAME.unpack_from(buffer)
        if len(buffer) < 4 + size:
            break
        out.append((rid, bytes(buffer[FRAME.size : 4 + size])))
        del buffer[: 4 + size]
    return out


class Back(asyncio.Protocol):
    """Answers each frame at once with a frame of the same id."""

    def connection_made(self, transport: Any) -> None:
        self.transport = transport
        self.buffer = bytearray()

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        out = [FRAME.pack(4 + len(ANSWER), rid) + ANSWER for rid, _ in take_frames(self.buffer)]
        if out:
            self.transport.write(b"".join(out))


class Front(asyncio.Protocol):
    """Minimal HTTP/1.1 keep-alive server; `upstream` is None for one hop, else the back's connection."""

    upstream: Upstream | None = None

    def connection_made(self, transport: Any) -> None:
        self.transport = transport
        self.buffer = bytearray()

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while True:
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                return
            head = bytes(self.buffer[:end]).lower()
            found = LENGTH.search(head)
            length = int(found.group(1)) if found else 0
            if len(self.buffer) < end + 4 + length:
                return
            body = bytes(self.buffer[end + 4 : end + 4 + length])
            del self.buffer[: end + 4 + length]
            if self.upstream is None:
                self.transport.write(HEAD + ANSWER)
            else:
                self.upstream.send(body, self.transport)


class Upstream(asyncio.Protocol):
    """The front's one connection to the back: frames out, answers matched back by id."""

    def __init__(self) -> None:
        self.waiting: dict[int, Any] = {}
        self.next_id = 0
        self.buffer = bytearray()

    def connection_made(self, transport: Any) -> None:
        self.transport = transport

    def send(self, body: bytes, client: Any) -> None:
        self.next_id += 1
        self.waiting[self.next_id] = client
        self.transport.write(FRAME.pack(4 + len(body), self.next_id) + body)

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        for rid, _ in take_frames(self.buffer):
            self.waiting.pop(rid).write(HEAD + ANSWER)


async def serve(role: str, port: int, back_port: int) -> None:
    loop = asyncio.get_running_loop()
    if role == "back":
        server = await loop.create_server(Back, "127.0.0.1", port)
    else:
        if role == "two-hop":
            _, Front.upstream = await loop.create_connection(Upstream, "127.0.0.1", back_port)
        server = await loop.create_server(Front, "127.0.0.1", port)
    print("ready", flush=True)
    await server.serve_forever()


def run_server(args: argparse.Namespace) -> None:
    import uvloop

    uvloop.run(serve(args.serve, args.port, args.back_port))


def start(role: str, port: int, back_port: int = 0) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "bench.diagnostics.floor", "--serve", role]
        + ["--port", str(port), "--back-port", str(back_port)],
        stdout=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == b"ready"
    return proc


def server_cpu_s(procs: list[subprocess.Popen[bytes]]) -> float:
    """User + system CPU seconds of the stand-in processes so far."""
    return sum(sum(psutil.Process(p.pid).cpu_times()[:2]) for p in procs)


def wakeup(samples: int, rate: float) -> list[float]:
    """Round trips (µs) of one byte between two processes, with exponential gaps of mean 1/rate between
    them: each one wakes a process that was asleep, as a query does at moderate load."""
    a, b = socket.socketpair()
    child = os.fork()
    if child == 0:
        for _ in range(samples):
            b.send(b.recv(1))
        os._exit(0)
    rng = random.Random(1)
    out = []
    for _ in range(samples):
        time.sleep(rng.expovariate(rate))
        t = time.perf_counter()
        a.send(b"x")
        a.recv(1)
        out.append((time.perf_counter() - t) * 1e6)
    os.waitpid(child, 0)
    return out


def spin(seconds: float) -> list[float]:
    """Read the clock for `seconds`; the pauses (ms) between two reads longer than 0.5 ms."""
    out = []
    last = start = time.perf_counter()
    while last - start < seconds:
        now = time.perf_counter()
        if now - last > 0.0005:
            out.append((now - last) * 1000)
        last = now
    return out


def stalls(seconds: float) -> None:
    """`spin` in one process, then in two at once: how much of the time a busy process is paused."""
    for spinners in (1, 2):
        with ProcessPoolExecutor(spinners) as pool:
            runs = list(pool.map(spin, [seconds] * spinners))
        for gaps in runs:
            print(
                f"stalls, {spinners} spinner(s): {sum(gaps) / seconds / 10:.2f} % of {seconds:.0f} s paused; "
                f"{sum(g >= 1 for g in gaps)} pauses ≥ 1 ms, {sum(g >= 4 for g in gaps)} ≥ 4 ms, "
                f"longest {max(gaps, default=0.0):.1f} ms",
                flush=True,
            )


def measure(args: argparse.Namespace) -> None:
    body = b'{"inputs":[[' + b",".join([b"0.1234567"] * 64) + b"]]}"
    rows = []
    gaps = wakeup(args.wakeup_samples, 1000.0)
    print(
        f"wakeup ping-pong, {len(gaps)} round trips 1 ms apart on average: "
        f"p50 {lg.percentile(gaps, 50):.0f} µs, p99 {lg.percentile(gaps, 99):.0f} µs, "
        f"p99.9 {lg.percentile(gaps, 99.9):.0f} µs",
        flush=True,
    )
    if args.stall_seconds > 0:
        stalls(args.stall_seconds)
    for topology in args.topologies:
        port = free_port()
        procs = []
        if topology == "two-hop":
            back_port = free_port()
            procs.append(start("back", back_port))
            procs.append(start("two-hop", port, back_port))
        else:
            procs.append(start("one-hop", port))
        try:
            target = lg.Target.parse(f"http://127.0.0.1:{port}")
            request = lg.encode_request("POST", target.authority, "/v1/models/m/infer", body, {})
            for n, rate in enumerate(args.rates):
                schedule = lg.poisson_schedule(rate, args.duration, args.seed + n)
                cpu0 = server_cpu_s(procs)
                r = lg.run(lg.run_open_loop(target, [request], schedule, connections=args.connections))
                ok = r.ok_latencies_ms
                per_query = (server_cpu_s(procs) - cpu0) / max(1, len(ok)) * 1e6
                row = [topology, f"{rate:.0f}", f"{r.achieved_rate:.0f}"] + [
                    f"{lg.percentile(ok, q):.3f}" for q in (50, 99, 99.9)
                ]
                row += [f"{per_query:.0f}", f"{r.client_cpu_s / max(1, len(ok)) * 1e6:.0f}"]
                rows.append(row + [str(len(r.records) - len(ok))])
                print("  " + " ".join(row), flush=True)
                time.sleep(0.5)
        finally:
            for proc in procs:
                proc.terminate()
                proc.wait()
    head = ["topology", "offered /s", "achieved /s", "p50 ms", "p99 ms", "p99.9 ms"]
    head += ["server CPU µs/query", "client CPU µs/query", "errors"]
    if args.markdown:
        print("| " + " | ".join(head) + " |\n|" + "---|" * len(head))
        for row in rows:
            print("| " + " | ".join(row) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rates", type=float, nargs="+", default=[1000.0, 2000.0, 4000.0])
    parser.add_argument("--duration", type=float, default=8.0)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--topologies", nargs="+", default=["one-hop", "two-hop"])
    parser.add_argument("--wakeup-samples", type=int, default=3000)
    parser.add_argument("--stall-seconds", type=float, default=5.0, help="0: skip the stalls probe")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--serve", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--back-port", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        run_server(args)
    else:
        measure(args)


if __name__ == "__main__":
    main()
