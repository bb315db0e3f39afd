"""CPU per query of the gateway's HTTP layer: the query lane answered directly by our protocol, against
the same lane reached through uvicorn's request cycle and ASGI.

End-to-end runs (`overhead.py`) compare builds by CPU per query, but on these VMs that number
moves by 10-20 % between runs of one build. This isolates the one thing the direct lane changes: one
process, no network, the real `QueryLane` and the real protocols, fed a query request's bytes through
`data_received` and answered through a transport that only counts what is written. What the lane does
behind the HTTP layer (auth, the frame, the scheduler) is replaced by a fixed answer in both, so the
difference is the HTTP layer's alone.

    .venv/bin/python -m bench.diagnostics.http_lane --queries 50000
"""

from __future__ import annotations

import argparse
import asyncio
import time
from typing import Any

import uvloop
from fastapi import FastAPI
from uvicorn.config import Config
from uvicorn.server import ServerState

from gateway.dataplane.lane import QueryLane, Route
from infaas.http.server import CoalescingHttpToolsProtocol, InfaasHttpProtocol

ANSWER = b'{"outputs":{"probabilities":[[0.1,0.2,0.3,0.4]]},"slo_met":true}'
BODY = b'{"inputs":[[' + b",".join([b"0.1234567"] * 64) + b"]]}"
REQUEST = (
    b"POST /v1/models/digits-mlp-small/infer HTTP/1.1\r\nhost: 127.0.0.1:8080\r\n"
    b"authorization: Bearer adm_0123456789abcdef\r\ncontent-type: application/json\r\n"
    b"content-length: %d\r\n\r\n%s" % (len(BODY), BODY)
)


class FixedLane(QueryLane):
    """The real lane, with what lies behind the HTTP layer answered at once."""

    async def answer_direct(
        self, route: Route, headers: dict[bytes, bytes], body: bytes | None, peer: str | None
    ) -> tuple[int, bytes, list[tuple[bytes, bytes]]]:
        del route, headers, body, peer  # the same answer to every query
        return 200, ANSWER, [(b"x-request-id", b"0123456789abcdef0123456789abcdef")]


class CountingTransport(asyncio.Transport):
    """Takes the protocol's writes; wakes the driver when an answer is complete."""

    def __init__(self) -> None:
        super().__init__()
        self.answered: asyncio.Event = asyncio.Event()
        self.bytes = 0

    def write(self, data: Any) -> None:
        self.bytes += len(data)
        if bytes(data).endswith(ANSWER):
            self.answered.set()

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"peername": ("127.0.0.1", 50000), "sockname": ("127.0.0.1", 8080)}.get(name, default)

    def is_closing(self) -> bool:
        return False

    def close(self) -> None:
        return None

    def pause_reading(self) -> None:
        return None

    def resume_reading(self) -> None:
        return None


async def drive(protocol_class: type[CoalescingHttpToolsProtocol], queries: int) -> float:
    """CPU µs per query for `queries` requests, one after another on one connection."""
    lane = FixedLane(FastAPI(), max_body_bytes=1 << 20)
    config = Config(lane, proxy_headers=False, log_config=None)
    protocol = protocol_class(config=config, server_state=ServerState(), app_state={})
    transport = CountingTransport()
    protocol.connection_made(transport)
    for _ in range(200):  # warm up
        transport.answered.clear()
        protocol.data_received(REQUEST)
        await transport.answered.wait()
    start = time.process_time()
    for _ in range(queries):
        transport.answered.clear()
        protocol.data_received(REQUEST)
        await transport.answered.wait()
    spent = time.process_time() - start
    protocol.connection_lost(None)
    return spent / queries * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--queries", type=int, default=50_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    results: dict[str, list[float]] = {"asgi": [], "direct": []}
    for _ in range(args.rounds):  # alternated, so that a drift of the host hits both alike
        results["asgi"].append(uvloop.run(drive(CoalescingHttpToolsProtocol, args.queries)))
        results["direct"].append(uvloop.run(drive(InfaasHttpProtocol, args.queries)))
    for name, values in results.items():
        runs = ", ".join(f"{v:.1f}" for v in values)
        print(f"{name:>6}: best {min(values):.1f} µs per query of CPU (runs: {runs})")
    print(f"saved: {min(results['asgi']) - min(results['direct']):.1f} µs per query")


if __name__ == "__main__":
    main()
