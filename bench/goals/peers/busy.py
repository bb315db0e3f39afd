"""Busy periods of one core, from the kernel's scheduler trace: what a query arriving at a random moment
would wait behind.

A busy period is a stretch in which the core ran something with no idle gap over `GAP_S` between runs.
A query that lands in one waits, or shares the core, until it ends; so the share of time inside long
periods, and who fills them, bounds how many queries the background can slow and by how much. Counts
of wake-ups (`wakeups.py`) do not say that: many short runs can cost a query less than a few long ones.

Needs `perf` and the right to trace the scheduler (root here): `perf sched record -C <core>`, then
`perf sched timehist`, whose every line is one run of one thread, ending at its timestamp.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

GAP_S = 50e-6
"""Idle gaps shorter than this join two runs into one period (a context switch itself takes longer)."""
LONG_MS = (2.0, 5.0, 10.0)


@dataclass(frozen=True)
class BusyPeriods:
    seconds: float
    lengths_ms: tuple[float, ...]
    # process name -> ms of CPU per s inside periods of at least 5 ms, and over all periods
    in_long: dict[str, float]
    overall: dict[str, float]

    def busy_ms_per_s(self) -> float:
        return sum(self.lengths_ms) / self.seconds

    def long_ms_per_s(self, at_least_ms: float) -> float:
        """Time per second inside periods of at least `at_least_ms`."""
        return sum(length for length in self.lengths_ms if length >= at_least_ms) / self.seconds

    def summary(self) -> str:
        lengths = sorted(self.lengths_ms)
        longest = lengths[-1] if lengths else 0.0
        long = " / ".join(f"{self.long_ms_per_s(x):.1f}" for x in LONG_MS)
        return (
            f"busy {self.busy_ms_per_s():.1f} ms/s in {len(lengths) / self.seconds:.0f} periods/s; "
            f"in periods >= {'/'.join(f'{x:g}' for x in LONG_MS)} ms: {long} ms/s; longest {longest:.1f} ms"
        )


def available() -> bool:
    return shutil.which("perf") is not None


def record(core: int, seconds: float, names: dict[int, str]) -> BusyPeriods:
    """Trace `core` for `seconds`; `names` maps pids to the names to report them by (threads count
    under their process; anything else under its command name)."""
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "sched.data"
        subprocess.run(
            ["perf", "sched", "record", "-C", str(core), "-o", str(data), "--", "sleep", str(seconds)],
            check=True,
            capture_output=True,
        )
        timehist = subprocess.run(
            ["perf", "sched", "timehist", "-i", str(data)], check=True, capture_output=True, text=True
        ).stdout
    return parse(timehist, names)


_TASK = re.compile(r"^(?P<comm>.*)\[(?P<tid>\d+)(?:/(?P<pid>\d+))?\]$")


def parse(timehist: str, names: dict[int, str]) -> BusyPeriods:
    """Busy periods from `perf sched timehist` output (time, cpu, task, wait, delay, run time)."""
    runs: list[tuple[float, float, str]] = []  # start, end (s), who
    for line in timehist.splitlines():
        parts = line.split()
        if len(parts) < 6:
            continue
        try:
            end, run_ms = float(parts[0]), float(parts[-1])
        except ValueError:
            continue  # the header
        task = parts[2]
        if task.startswith("<idle>"):
            continue
        match = _TASK.match(task)
        who = task
        if match:
            pid = int(match["pid"] or match["tid"])
            who = names.get(pid, match["comm"])
        runs.append((end - run_ms / 1000, end, who))
    if not runs:
        return BusyPeriods(seconds=1.0, lengths_ms=(), in_long={}, overall={})
    runs.sort()
    span = max(end for _, end, _ in runs) - runs[0][0]
    periods: list[tuple[float, float, dict[str, float]]] = []  # start, end, ms of CPU per process
    for start, end, who in runs:
        if periods and start - periods[-1][1] < GAP_S:
            first, last, cpu = periods[-1]
            periods[-1] = (first, max(last, end), cpu)
        else:
            cpu = defaultdict(float)
            periods.append((start, end, cpu))
        cpu[who] += (end - start) * 1000
    in_long: dict[str, float] = defaultdict(float)
    overall: dict[str, float] = defaultdict(float)
    for start, end, cpu in periods:
        for who, ms in cpu.items():
            overall[who] += ms
            if (end - start) * 1000 >= 5.0:
                in_long[who] += ms
    return BusyPeriods(
        seconds=span,
        lengths_ms=tuple((end - start) * 1000 for start, end, _ in periods),
        in_long={k: v / span for k, v in sorted(in_long.items(), key=lambda kv: -kv[1])},
        overall={k: v / span for k, v in sorted(overall.items(), key=lambda kv: -kv[1])},
    )
