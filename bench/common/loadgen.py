"""Open-loop HTTP/1.1 load generation for the benchmarks.

Requests follow a Poisson schedule at a fixed rate and each one is sent at its scheduled time whatever
happened to the earlier ones (open loop, never closed loop). Latency is measured from the scheduled time,
so a request that had to wait in the client — for a free connection, or for the event loop — counts
that wait (no coordinated omission). Timers fire up to ~1 ms late (the event loop sleeps in whole
milliseconds), so a sender wakes `wake_early_s` before the due time; a request sent early is measured
from its actual send instead, so neither case makes latency look better than it was.

The client is a pool of persistent raw TCP connections (`asyncio.open_connection`) writing pre-encoded
request bytes and parsing only the status line and the framing headers: a few tens of µs of CPU per
request, so that it is not the bottleneck on a small machine that also runs the server. Bodies are kept
and decoded only after the run.

Used by `bench/diagnostics/overhead.py`; the pure helpers (schedule, percentiles, request encoding, response
parsing) are unit-tested in `tests/unit/bench/test_bench_loadgen.py`. Usage as a library:

    schedule = poisson_schedule(rate=200, duration_s=10, seed=1)
    result = run(run_open_loop(Target.parse(url), [request_bytes], schedule, connections=32))
    print(result.summary())
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import math
import random
import time
from collections import Counter
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar
from urllib.parse import urlsplit

# Outcomes that are not an HTTP status.
TIMEOUT = "timeout"
CONNECTION_ERROR = "connection error"
NOT_SENT = "not sent"

T = TypeVar("T")


# ---------------------------------------------------------------------------------------- pure helpers
def poisson_schedule(
    rate: float, duration_s: float, seed: int, *, max_requests: int | None = None
) -> list[float]:
    """Send offsets in seconds from the start: exponential gaps of mean 1/rate, all before `duration_s`,
    at most `max_requests` of them. The same seed gives the same schedule."""
    if rate <= 0 or duration_s <= 0:
        return []
    rng = random.Random(seed)
    out: list[float] = []
    t = rng.expovariate(rate)
    while t < duration_s and (max_requests is None or len(out) < max_requests):
        out.append(t)
        t += rng.expovariate(rate)
    return out


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0–100) with linear interpolation between closest ranks (NumPy's default);
    NaN for no values."""
    if not 0 <= q <= 100:
        raise ValueError(f"percentile {q} outside 0..100")
    if not values:
        return math.nan
    s = sorted(values)
    pos = (len(s) - 1) * q / 100
    lo = math.floor(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def encode_request(
    method: str, host: str, path: str, body: bytes = b"", headers: Mapping[str, str] | None = None
) -> bytes:
    """A complete HTTP/1.1 request with Content-Length (keep-alive is HTTP/1.1's default)."""
    lines = [f"{method} {path} HTTP/1.1", f"Host: {host}"]
    for name, value in (headers or {}).items():
        if "\r" in name or "\n" in name or "\r" in value or "\n" in value:
            raise ValueError(f"header {name!r} holds a line break")
        lines.append(f"{name}: {value}")
    if body or method not in ("GET", "HEAD"):
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


UNIQUE_VALUES = 10**7


def unique_value(i: int) -> bytes:
    """A JSON number that differs for every i below UNIQUE_VALUES, also once parsed as float32
    (steps of 1e-7 in [0, 1) are wider than float32's spacing there), with a fixed width so that a
    body's Content-Length does not change: put it in a request to defeat a prediction cache."""
    return b"0.%07d" % (i % UNIQUE_VALUES)


@dataclass(frozen=True, slots=True)
class ResponseHead:
    status: int
    content_length: int | None
    chunked: bool
    close: bool

    @property
    def has_body(self) -> bool:
        return not (100 <= self.status < 200 or self.status in (204, 304))


def parse_head(head: bytes) -> ResponseHead:
    """Status line and framing headers of a response head (up to and including the blank line)."""
    lines = head.rstrip(b"\r\n").split(b"\r\n")
    parts = lines[0].split(b" ", 2)
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/1.") or not parts[1].isdigit():
        raise ValueError(f"not an HTTP/1.x status line: {lines[0][:80]!r}")
    status = int(parts[1])
    length: int | None = None
    chunked = False
    close = parts[0] == b"HTTP/1.0"
    for line in lines[1:]:
        name, sep, value = line.partition(b":")
        if not sep:
            raise ValueError(f"malformed header line: {line[:80]!r}")
        name = name.strip().lower()
        value = value.strip().lower()
        if name == b"content-length":
            if not value.isdigit():
                raise ValueError(f"bad Content-Length: {value[:40]!r}")
            length = int(value)
        elif name == b"transfer-encoding":
            chunked = value.endswith(b"chunked")
        elif name == b"connection":
            tokens = {t.strip() for t in value.split(b",")}
            close = b"close" in tokens or (close and b"keep-alive" not in tokens)
    return ResponseHead(status=status, content_length=length, chunked=chunked, close=close)


async def read_response(reader: asyncio.StreamReader) -> tuple[ResponseHead, bytes]:
    """One response off a keep-alive connection: head, then a Content-Length or chunked body."""
    head = parse_head(await reader.readuntil(b"\r\n\r\n"))
    if not head.has_body:
        return head, b""
    if head.chunked:
        parts: list[bytes] = []
        while True:
            size_line = await reader.readuntil(b"\r\n")
            size = int(size_line.split(b";", 1)[0].strip(), 16)
            if size == 0:
                while await reader.readuntil(b"\r\n") != b"\r\n":  # trailers
                    pass
                return head, b"".join(parts)
            parts.append(await reader.readexactly(size))
            await reader.readexactly(2)
    if head.content_length is not None:
        return head, await reader.readexactly(head.content_length)
    return head, await reader.read()  # no framing: the body runs to the end of the connection


@dataclass(frozen=True, slots=True)
class Target:
    host: str
    port: int
    authority: str

    @classmethod
    def parse(cls, url: str) -> Target:
        parts = urlsplit(url)
        if parts.scheme != "http" or not parts.hostname:
            raise ValueError(f"only plain http://host:port URLs are supported, not {url!r}")
        port = parts.port or 80
        return cls(host=parts.hostname, port=port, authority=f"{parts.hostname}:{port}")


# --------------------------------------------------------------------------------------------- results
@dataclass
class RunResult:
    """What one open-loop run observed. Latencies in ms; `outcomes` per request in schedule order
    (an HTTP status, or TIMEOUT / CONNECTION_ERROR / NOT_SENT)."""

    offered_rate: float  # realized: requests scheduled / duration
    duration_s: float  # how long requests were being scheduled for
    latencies_ms: list[float] = field(default_factory=list)  # every answered request, any status
    ok_latencies_ms: list[float] = field(default_factory=list)  # 2xx only
    send_lag_ms: list[float] = field(default_factory=list)  # actual send − scheduled time
    outcomes: Counter[int | str] = field(default_factory=Counter)
    bodies: list[bytes] = field(default_factory=list)  # 2xx bodies
    error_bodies: dict[int, bytes] = field(default_factory=dict)  # the first body of each other status
    elapsed_s: float = 0.0  # start → the later of the end of the schedule and the last answer
    client_cpu_s: float = 0.0  # CPU time of this process during the run
    target_rate: float = math.nan  # the rate asked for, when the caller records it
    # filled by callers that can see the machine: CPU seconds per server process, other load in cores
    server_cpu_s: dict[str, float] = field(default_factory=dict)
    other_cores: float = math.nan
    # per request, in completion order: (schedule index, outcome, latency ms or NaN) — for trace replays
    records: list[tuple[int, int | str, float]] = field(default_factory=list)

    @property
    def sent(self) -> int:
        return sum(n for k, n in self.outcomes.items() if k != NOT_SENT)

    @property
    def ok(self) -> int:
        return sum(n for k, n in self.outcomes.items() if isinstance(k, int) and 200 <= k < 300)

    @property
    def achieved_rate(self) -> float:
        return self.ok / self.elapsed_s if self.elapsed_s > 0 else 0.0

    def errors(self) -> dict[str, int]:
        return {
            str(k): n
            for k, n in sorted(self.outcomes.items(), key=str)
            if not (isinstance(k, int) and k < 300)
        }

    def summary(self) -> str:
        lat = self.ok_latencies_ms
        target = "" if math.isnan(self.target_rate) else f" (target {self.target_rate:.0f}/s)"
        return (
            f"offered {self.offered_rate:.0f}/s{target} achieved {self.achieved_rate:.0f}/s "
            f"p50 {percentile(lat, 50):.3f} p99 {percentile(lat, 99):.3f} "
            f"p99.9 {percentile(lat, 99.9):.3f} ms "
            f"errors {self.errors() or 0}"
        )


# ------------------------------------------------------------------------------------------ the client
class Connection:
    """One persistent connection; reconnects after an error or a `Connection: close`."""

    def __init__(self, target: Target, timeout_s: float) -> None:
        self.target = target
        self.timeout_s = timeout_s
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None
        self.used = False

    async def connect(self) -> None:
        self.reader, self.writer = await asyncio.wait_for(
            asyncio.open_connection(self.target.host, self.target.port), self.timeout_s
        )
        self.used = False

    async def close(self) -> None:
        writer, self.reader, self.writer = self.writer, None, None
        if writer is not None:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def send(self, request: bytes) -> tuple[int, bytes]:
        """Write the request and read its answer; one retry on a fresh connection when a reused one turns
        out to be closed by the server before any byte of the answer (idle keep-alive timeout)."""
        for attempt in (0, 1):
            if self.writer is None:
                await self.connect()
            assert self.reader is not None and self.writer is not None
            reused = self.used
            self.used = True
            self.writer.write(request)
            try:
                head, body = await read_response(self.reader)
            except (asyncio.IncompleteReadError, ConnectionError) as exc:
                await self.close()
                if (
                    attempt == 0
                    and reused
                    and (not isinstance(exc, asyncio.IncompleteReadError) or not exc.partial)
                ):
                    continue
                raise
            if head.close:
                await self.close()
            return head.status, body
        raise AssertionError("unreachable")


async def run_open_loop(
    target: Target,
    requests: Sequence[bytes] | Callable[[int], bytes],
    schedule: Sequence[float],
    *,
    connections: int = 32,
    timeout_s: float = 30.0,
    drain_s: float = 10.0,
    wake_early_s: float = 0.0005,
    keep_bodies: bool = True,
    duration_s: float | None = None,
) -> RunResult:
    """Send request i — `requests(i)`, or `requests[i % len(requests)]` — at `schedule[i]` seconds after
    the start, over a pool of `connections` persistent connections opened beforehand. A request waits in
    the client only when every connection is busy (and that wait counts). Whatever is unanswered `drain_s`
    after the last scheduled send is cancelled and counted as TIMEOUT (sent) or NOT_SENT; `timeout_s`
    bounds each connect. `duration_s` is the length of the schedule's window (default: its last send)."""
    if callable(requests):
        request_for = requests
    elif requests:
        fixed = requests

        def request_for(i: int) -> bytes:
            return fixed[i % len(fixed)]
    else:
        raise ValueError("no request to send")
    duration = duration_s if duration_s is not None else (schedule[-1] if schedule else 0.0)
    result = RunResult(offered_rate=len(schedule) / duration if duration > 0 else 0.0, duration_s=duration)
    pool = [Connection(target, timeout_s) for _ in range(max(1, connections))]
    await asyncio.gather(*(c.connect() for c in pool))
    n = len(schedule)
    outcome: list[int | str] = [NOT_SENT] * n
    clock = time.perf_counter
    start = clock() + 0.01
    last_done = start
    next_index = 0

    async def sender(conn: Connection) -> None:
        nonlocal next_index, last_done
        while next_index < n:
            i = next_index
            next_index += 1
            due = start + schedule[i]
            delay = due - clock() - wake_early_s
            if delay > 0:
                await asyncio.sleep(delay)
            sent = clock()
            outcome[i] = TIMEOUT
            try:
                status, body = await conn.send(request_for(i))
            except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError):
                outcome[i] = CONNECTION_ERROR
                await conn.close()
                continue
            done = clock()
            last_done = max(last_done, done)
            latency = (done - min(due, sent)) * 1000
            outcome[i] = status
            result.records.append((i, status, latency))
            result.send_lag_ms.append((sent - due) * 1000)
            result.latencies_ms.append(latency)
            if 200 <= status < 300:
                result.ok_latencies_ms.append(latency)
                if keep_bodies:
                    result.bodies.append(body)
            elif status not in result.error_bodies:
                result.error_bodies[status] = body[:500]

    cpu0 = time.process_time()
    tasks = [asyncio.create_task(sender(c)) for c in pool]
    _, pending = await asyncio.wait(tasks, timeout=max(0.0, start + duration + drain_s - clock()))
    for task in pending:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    result.client_cpu_s = time.process_time() - cpu0
    await asyncio.gather(*(c.close() for c in pool), return_exceptions=True)
    result.outcomes = Counter(outcome)
    answered = {i for i, _, _ in result.records}
    result.records.extend((i, o, math.nan) for i, o in enumerate(outcome) if i not in answered)
    result.elapsed_s = max(duration, last_done - start)
    return result


def run(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine on uvloop when it is installed (it is, with uvicorn[standard]): its event loop costs
    less CPU per request than asyncio's, which matters when client and server share two cores.

    The cyclic garbage collector is off meanwhile: a run keeps every response until it ends, and with
    tens of thousands of them a full collection stalls the sender for tens of milliseconds — lag that
    would be charged to the server. (Responses form no cycles; the collector runs once afterwards.)"""
    gc.collect()
    gc.disable()
    try:
        try:
            import uvloop
        except ImportError:
            return asyncio.run(coro)
        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            return runner.run(coro)
    finally:
        gc.enable()
        gc.collect()
