"""The floor under a pulse on this machine: what the least Python that sends a datagram every 25 ms, and
the least that receives it, cost in CPU, to set the suite's pulses against (`wakeups.py` measures
those).

Each sender mode runs in its own process beside one minimal receiver (a uvloop datagram endpoint that
counts), both pinned to the server core; CPU is the sum over the process's threads of the scheduler's
own on-CPU time (`/proc/<pid>/task/*/schedstat`), which counts short runs that tick-based accounting
misses. Modes:
- `thread`: a thread that sleeps on a lock with a timeout and sends (what `infaas.data.pulses` does);
- `thread-no-send`: the same wake-ups without the send (what waking alone costs);
- `loop`: a uvloop timer on the main thread that sends.

    .venv/bin/python -m bench.goals.peers.pulse_floor --seconds 15
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

INTERVAL_S = 0.025
DATAGRAM = b"x" * 90  # about a sealed pulse's size
MODES = ("thread", "thread-no-send", "loop")


def cpu_ns(pid: int) -> int:
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (OSError, IndexError, ValueError):  # a thread that ended meanwhile
            continue
    return total


def receive(port: int) -> None:
    import uvloop

    class Count(asyncio.DatagramProtocol):
        def datagram_received(self, data: bytes, addr: object) -> None:
            pass

    async def main() -> None:
        await asyncio.get_running_loop().create_datagram_endpoint(Count, local_addr=("127.0.0.1", port))
        await asyncio.Event().wait()

    uvloop.run(main())


def send(mode: str, port: int) -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setblocking(False)
    target = ("127.0.0.1", port)
    if mode == "loop":
        import uvloop

        async def main() -> None:
            loop = asyncio.get_running_loop()

            def tick() -> None:
                sock.sendto(DATAGRAM, target)
                loop.call_later(INTERVAL_S, tick)

            tick()
            await asyncio.Event().wait()

        uvloop.run(main())
        return
    halt = threading.Lock()
    halt.acquire()

    def run() -> None:
        due = time.monotonic()
        while True:
            due += INTERVAL_S
            halt.acquire(timeout=max(0.0, due - time.monotonic()))
            if mode == "thread":
                sock.sendto(DATAGRAM, target)

    threading.Thread(target=run, daemon=True).start()
    threading.Event().wait()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--seconds", type=float, default=15.0)
    p.add_argument("--server-core", type=int, default=0)
    p.add_argument("--role", choices=("receive", *MODES), help=argparse.SUPPRESS)
    p.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.role == "receive":
        return receive(a.port)
    if a.role is not None:
        return send(a.role, a.port)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    pin = [
        "taskset",
        "-c",
        str(a.server_core),
        sys.executable,
        "-m",
        "bench.goals.peers.pulse_floor",
        "--port",
        str(port),
        "--role",
    ]
    receiver = subprocess.Popen([*pin, "receive"])
    try:
        time.sleep(1.0)
        print(f"every {INTERVAL_S * 1000:.0f} ms, {a.seconds:g} s each, CPU ms per s (schedstat):")
        for mode in MODES:
            sender = subprocess.Popen([*pin, mode])
            try:
                time.sleep(2.0)
                r0, s0, t0 = cpu_ns(receiver.pid), cpu_ns(sender.pid), time.monotonic()
                time.sleep(a.seconds)
                r1, s1, t1 = cpu_ns(receiver.pid), cpu_ns(sender.pid), time.monotonic()
            finally:
                sender.kill()
                sender.wait()
            per_s = 1e6 * (t1 - t0)
            print(f"  {mode:15s} sender {(s1 - s0) / per_s:5.2f}   receiver {(r1 - r0) / per_s:5.2f}")
    finally:
        receiver.kill()
        receiver.wait()
    return None


if __name__ == "__main__":
    main()
