"""How much of the serving path's tail is the OS scheduler's: the same fixed-rate load, alternated between
CPU scheduling policies for the processes that carry the queries.

`overhead.py` measures the added latency at 50 % of saturation on a 2-vCPU VM, where the load
generator, the gateway and the executor (about 1.2 cores of demand at that rate) share two vCPUs with the
control plane (planner, registry, profiler and jobs workers, Redis) and with the guest kernel's own
threads. Under the default policy (CFS/EEVDF), a process woken by a packet can wait for a vCPU while
another runnable task finishes its slice. This script runs the same Poisson load at one rate in rounds,
each round once per mode, the modes in turn:

- `default`: as `infaas run` starts everything;
- `nice`: the data plane (gateway and executors) at nice −10, everything else as it was;
- `slice`: the data plane and this load generator keep the default policy but ask for a 0.1 ms slice
  (`sched_setattr` with `sched_runtime`, Linux ≥ 6.12, EEVDF; allowed without privilege): a task with a
  shorter slice gets an earlier virtual deadline, so it preempts a longer-sliced one when it wakes;
- `fifo`: the data plane and this load generator under SCHED_FIFO (priority 10), so that a woken query
  path process runs at once unless another of them holds the vCPU.

The difference between `default` and `fifo` is the part of the tail that the code being measured does not
decide. It is a diagnostic, not a way to run infaas: SCHED_FIFO processes that go busy starve everything
else on the machine (Linux throttles them to 95 % of each second), so `fifo` runs no saturation ramp and
the script restores each thread's policy when it ends. `nice` and `fifo` need root (CAP_SYS_NICE);
`slice` only needs to run as the user that owns the serving processes.

Usage (with `infaas run` serving on this machine; see `overhead.py`):

    INFAAS_VAR_DIR=/tmp/ovh .venv/bin/python -m bench.diagnostics.cpu_priority --url http://127.0.0.1:19080 \\
        --rate 3200 --rounds 3 --duration 15
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import os
import statistics
import struct
import sys
import threading
from collections.abc import Iterator

import numpy as np
import psutil

from bench.diagnostics import overhead
from bench.diagnostics.overhead_runs import Bench
from infaas.core.config import get_settings
from infaas.processes.suite import admin_key

MODES = ("default", "nice", "slice", "fifo")
DATA_PLANE = ("gateway", "executor")  # `serve executor` for each of the executors
FIFO_PRIORITY = 10
DATA_PLANE_NICE = -10
SLICE_NS = 100_000
_SCHED_SETATTR = {"x86_64": 314, "aarch64": 274}.get(os.uname().machine)
_ATTR = struct.Struct("IIQiIQQQII")  # struct sched_attr, SCHED_ATTR_SIZE_VER1 (56 bytes)
_libc = ctypes.CDLL(None, use_errno=True)


def set_slice(tid: int, nanoseconds: int, nice: int) -> None:
    """SCHED_OTHER at `nice` with a custom slice (0: the kernel's default slice again)."""
    if _SCHED_SETATTR is None:
        sys.exit(f"no sched_setattr number known for {os.uname().machine}")
    attr = ctypes.create_string_buffer(_ATTR.pack(_ATTR.size, 0, 0, nice, 0, nanoseconds, 0, 0, 0, 0))
    if _libc.syscall(_SCHED_SETATTR, tid, attr, 0) != 0:
        errno = ctypes.get_errno()
        if errno != 3:  # ESRCH: the thread ended meanwhile
            raise OSError(errno, f"sched_setattr({tid}): {os.strerror(errno)}")


pct = overhead.pct


def threads_of(pid: int) -> list[int]:
    try:
        return [int(t) for t in os.listdir(f"/proc/{pid}/task")]
    except OSError:
        return []


Saved = tuple[int, int, int]  # (policy, priority, nice) of one thread


def save(tids: list[int]) -> dict[int, Saved]:
    saved = {}
    for tid in tids:
        with contextlib.suppress(ProcessLookupError):  # a thread that ended meanwhile
            saved[tid] = (
                os.sched_getscheduler(tid),
                os.sched_getparam(tid).sched_priority,
                os.getpriority(os.PRIO_PROCESS, tid),
            )
    return saved


def apply(saved: dict[int, Saved], mode: str) -> None:
    """`mode` for the threads that run at the default policy and nice 0; the others (the executor's
    offline thread at nice 19) keep theirs."""
    for tid, (sched, _, nice) in saved.items():
        if sched != os.SCHED_OTHER or nice != 0:
            continue
        with contextlib.suppress(ProcessLookupError):
            if mode == "fifo":
                os.sched_setscheduler(tid, os.SCHED_FIFO, os.sched_param(FIFO_PRIORITY))
            elif mode == "nice":
                os.setpriority(os.PRIO_PROCESS, tid, DATA_PLANE_NICE)
            elif mode == "slice":
                set_slice(tid, SLICE_NS, nice)


def restore(saved: dict[int, Saved]) -> None:
    for tid, (sched, priority, nice) in saved.items():
        with contextlib.suppress(ProcessLookupError):
            if sched == os.SCHED_OTHER:
                set_slice(tid, 0, nice)  # the policy, the nice value and the default slice, in one call
            else:
                os.sched_setscheduler(tid, sched, os.sched_param(priority))
                os.setpriority(os.PRIO_PROCESS, tid, nice)


@contextlib.contextmanager
def policy(data_plane: list[int], mode: str) -> Iterator[None]:
    """`mode` for the data plane's threads (and, for fifo and slice, this process's) during one run."""
    tids = [t for pid in data_plane for t in threads_of(pid)]
    if mode in ("fifo", "slice"):
        tids.append(threading.get_native_id())  # the load generator's event loop runs in this thread
    saved = save(tids)
    try:
        apply(saved, mode)
        yield
    finally:
        restore(saved)


def data_plane_pids(gateway: psutil.Process) -> list[int]:
    """The gateway and every executor `infaas run` started beside it."""
    parent = gateway.parent()
    siblings = parent.children() if parent is not None and "run" in parent.cmdline() else [gateway]
    pids = []
    for proc in siblings:
        cmd = proc.cmdline()
        if "serve" in cmd and cmd.index("serve") + 1 < len(cmd) and cmd[cmd.index("serve") + 1] in DATA_PLANE:
            pids.append(proc.pid)
    return pids


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--url", default="http://127.0.0.1:8080")
    parser.add_argument("--model", default="digits-mlp-small")
    parser.add_argument("--rate", type=float, required=True, help="offered queries per second")
    parser.add_argument("--duration", type=float, default=15.0, help="seconds per run")
    parser.add_argument("--rounds", type=int, default=3, help="runs per mode, the modes alternated")
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    if os.geteuid() != 0 and {"nice", "fifo"} & set(args.modes):
        sys.exit("nice −10 and SCHED_FIFO need root (CAP_SYS_NICE); `--modes default slice` does not")

    settings = get_settings()
    rows = np.load(settings.var_dir / "demo-models" / "digits-validation.npz", allow_pickle=False)["x"]
    bench_args = argparse.Namespace(
        url=args.url, model=args.model, seed=1, repeat_inputs=False, max_requests=200_000,
        connections=args.connections, drain=5.0, pause=1.0,
    )  # fmt: skip
    bench = Bench(bench_args, rows.astype(np.float32)[:256], admin_key(settings))
    if "gateway" not in bench.cpu.procs:
        sys.exit(f"no gateway process listens at {args.url} on this machine: nothing to set a policy on")
    data_plane = data_plane_pids(bench.cpu.procs["gateway"])
    print(f"data plane: {len(data_plane)} processes ({', '.join(map(str, data_plane))})")
    requests = bench.requests(None)
    print("warming up (500 queries at 100/s) …")
    bench.run(100, 5, requests)

    table_rows: list[list[str]] = []
    p99s: dict[str, list[float]] = {m: [] for m in args.modes}
    for round_ in range(1, args.rounds + 1):
        for mode in args.modes:
            with policy(data_plane, mode):
                r = bench.run(args.rate, args.duration, requests)
            lat = r.ok_latencies_ms
            p99s[mode].append(pct(lat, 99))
            print(f"  round {round_} {mode}: {r.summary()}", flush=True)
            table_rows.append(
                [
                    str(round_), mode, f"{r.offered_rate:.0f}", f"{r.achieved_rate:.0f}",
                    overhead.ms(pct(lat, 50)), overhead.ms(pct(lat, 99)), overhead.ms(pct(lat, 99.9)),
                    overhead.ms(pct(r.send_lag_ms, 99)), overhead.errors_text(r),
                ]
            )  # fmt: skip
    print(
        f"\n{args.model}, 1 row per query, {args.connections} connections, {args.duration:.0f} s per run; "
        "latencies in ms from the scheduled send time"
    )
    overhead.table(
        ["round", "mode", "offered /s", "achieved /s", "p50", "p99", "p99.9", "client send lag p99",
         "errors"],
        table_rows,
        args.markdown,
    )  # fmt: skip
    print(
        "\nmedian p99 per mode: " + ", ".join(f"{m} {statistics.median(v):.3f} ms" for m, v in p99s.items())
    )


if __name__ == "__main__":
    main()
