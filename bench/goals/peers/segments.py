"""Where a query's time goes on the server, segment by segment, at a low rate: a copy of the tree
(`git worktree` of `--rev`) with timestamps added along the query path, the suite started from it
(`PYTHONPATH`) and pinned to the server core with one model, an open-loop Poisson run from the client
core, and the percentiles of each segment between two stamps.

    .venv/bin/python -m bench.goals.peers.segments --model tiny --seconds 60

The stamps are `time.perf_counter()` (CLOCK_MONOTONIC: one clock for every process on the host), so
the executor's stamps (kept by order id) travel back in its reply's header (`_st`, added to the copy's
`Reply.encode`) and the gateway sets them beside its own.
The gateway keeps one query's stamps at a time: at a low rate queries rarely overlap, and a query whose
stamps are out of order (another overlapped it) is left out. The stamps are text edits of the copy,
each at an anchor that must occur exactly once: when the code moves, the script says which anchor it
no longer finds rather than measure something else. The product's own tree is never edited.

Segments (gateway G, executor E):
  G0 request parsed  → Ga caller's key checked → Gb model looked up → Gc body parsed → Gd inputs checked
  → Ge dispatcher entered → Gf variant decided → Gg cache looked up → Gh admitted → G1 sender entered
  → G2 frame written → E0 executor read it → E1 decoded → E2 picked for a run → E3 run started → E4 run
  done → E5 answer encoded → G3 gateway read it → G4 sender resumed with it decoded → Gi admission told → Gj cached
  → Gk answer built → Gl demand counted → Gm JSON encoded → Gn metrics → G5 response written.
"""

# ruff: noqa: E501 (the edits are lines of code, kept whole to be read as such)
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np

from bench.common import peer_models as model_build
from bench.common.paths import ROOT
from bench.goals.peers import measure, systems
from bench.goals.peers.infaas_side import environment, start_infaas
from bench.goals.peers.systems import LOW_RATE, MODELS_DIR

GATEWAY: tuple[str, ...] = ("G0", "Ga", "Gb", "Gc", "Gd", "Ge", "Gf", "Gg", "Gh", "G1", "G2", "G3", "G4")
GATEWAY += ("Gi", "Gj", "Gk", "Gl", "Gm", "Gn")
EXECUTOR = ("E0", "E1", "E2", "E3", "E4", "E5")
ORDER: tuple[str, ...] = ("G0", "Ga", "Gb", "Gc", "Gd", "Ge", "Gf", "Gg", "Gh", "G1", "G2", *EXECUTOR)
ORDER += ("G3", "G4", "Gi", "Gj", "Gk", "Gl", "Gm", "Gn", "G5")

STAMPS = f'''"""Timestamps along the query path (bench/goals/peers/segments.py): one query at a time."""
import os
import time

S: dict[str, float] = {{}}
E: dict[str, list[float]] = {{}}
"""The executor's stamps of each order it holds, by order id, until its reply carries them back."""
ROWS: list[list[float]] = []
OUT = os.environ["INFAAS_STAMPS_DIR"]


def st(k: str) -> None:
    S[k] = time.perf_counter()


def finish(executor: list[float]) -> None:
    ROWS.append([S.get(k, 0.0) for k in {GATEWAY!r}] + [time.perf_counter()] + executor)
    S.clear()
    if len(ROWS) >= 100:
        with open(os.path.join(OUT, f"stamps-{{os.getpid()}}.csv"), "a") as f:
            f.writelines(",".join(f"{{x:.7f}}" for x in r) + "\\n" for r in ROWS)
        ROWS.clear()
'''

ST = "from infaas._stamps import st; "
EDITS: list[tuple[str, str, str]] = [
    # (file, anchor, replacement): each anchor occurs exactly once in its file
    (
        "infaas/http/server.py",
        "        cycle.started = True\n        if body is None:",
        f"        {ST}st('G0')\n        cycle.started = True\n        if body is None:",
    ),
    (
        "infaas/http/server.py",
        '        self.transport.write(b"".join(parts))\n        cycle.response_complete',
        "        from infaas import _stamps\n        _stamps.finish(_stamps.S.pop('EX', []))\n"
        '        self.transport.write(b"".join(parts))\n        cycle.response_complete',
    ),
    (
        "gateway/dataplane/routes.py",
        "    model = await state.auth.model(principal, name)\n",
        f"    {ST}st('Ga')\n    model = await state.auth.model(principal, name)\n    st('Gb')\n",
    ),
    (
        "gateway/dataplane/routes.py",
        "    app = await state.auth.app_of(model)\n",
        f"    {ST}st('Gc')\n    app = await state.auth.app_of(model)\n",
    ),
    (
        "gateway/dataplane/routes.py",
        "    return queries.from_json(app, model, data, asked, request_id=rid, max_rows=max_rows)",
        "    q = queries.from_json(app, model, data, asked, request_id=rid, max_rows=max_rows)\n    st('Gd')\n    return q",
    ),
    (
        "gateway/dataplane/routes.py",
        "    return v1_json(await state.scheduler.infer(built))",
        f"    a = await state.scheduler.infer(built)\n    {ST}j = v1_json(a)\n    st('Gm')\n    return j",
    ),
    (
        "gateway/dataplane/lane.py",
        "        BUFFER.observe(timer, time.perf_counter() - start)\n",
        f"        BUFFER.observe(timer, time.perf_counter() - start)\n        {ST}st('Gn')\n",
    ),
    ("services/scheduler/dispatch.py", "\nimport time\n", "\nimport time\nfrom infaas._stamps import st\n"),
    (
        "services/scheduler/dispatch.py",
        "        decision = self._decide(query, rows)\n        variant",
        "        st('Ge')\n        decision = self._decide(query, rows)\n        st('Gf')\n        variant",
    ),
    (
        "services/scheduler/dispatch.py",
        "        prediction = None\n",
        "        st('Gg')\n        prediction = None\n",
    ),
    (
        "services/scheduler/dispatch.py",
        "        self._app_in_flight[app] += 1\n",
        "        st('Gh')\n        self._app_in_flight[app] += 1\n",
    ),
    (
        "services/scheduler/dispatch.py",
        "        self.gate.observe(decision.variant, rows, arrived, prediction, reply)\n",
        "        self.gate.observe(decision.variant, rows, arrived, prediction, reply)\n        st('Gi')\n",
    ),
    (
        "services/scheduler/dispatch.py",
        "        reason = decision.reason + (\n",
        "        st('Gj')\n        reason = decision.reason + (\n",
    ),
    (
        "services/scheduler/dispatch.py",
        "        self.demand.answered(query, result)\n        return self.snapshot.failovers.stamp(result)",
        "        st('Gk')\n        self.demand.answered(query, result)\n        r = self.snapshot.failovers.stamp(result)\n"
        "        st('Gl')\n        return r",
    ),
    (
        "services/scheduler/sending.py",
        "        variant = decision.variant\n        order = Order(\n",
        "        from infaas._stamps import st\n        st('G1')\n        variant = decision.variant\n        order = Order(\n",
    ),
    (
        "services/scheduler/sending.py",
        "            replied = await until(future, give_up_at)",
        "            replied = await until(future, give_up_at)\n            st('G4')\n",
    ),
    (
        "infaas/wire/messages.py",
        "        h, outputs = decode_frame(frame)\n",
        "        h, outputs = decode_frame(frame)\n"
        "        from infaas import _stamps\n        _stamps.S['EX'] = list(h.get('_st', []))\n",
    ),
    (
        "infaas/wire/messages.py",
        "        return encode_frame(head, outputs or {})\n\n    @classmethod\n    def decode(cls, frame: bytes | memoryview) -> tuple[Reply,",
        "        head['_st'] = __import__('infaas._stamps', fromlist=['E']).E.pop(self.id, [])\n"
        "        return encode_frame(head, outputs or {})\n\n    @classmethod\n    def decode(cls, frame: bytes | memoryview) -> tuple[Reply,",
    ),
    (
        "services/scheduler/push.py",
        "        qid = resolve(self.pool.waiting, frame, self.addr)\n",
        f"        {ST}st('G3')\n        qid = resolve(self.pool.waiting, frame, self.addr)\n",
    ),
    ("infaas/wire/connection.py", "import struct\n", "import struct\nimport time\n"),
    (
        "infaas/wire/connection.py",
        "        self.transport.write(data)\n",
        "        from infaas import _stamps\n        _stamps.S.setdefault('G2', time.perf_counter())\n"
        "        self.transport.write(data)\n",
    ),
    (
        "infaas/wire/connection.py",
        "    def data_received(self, data: bytes) -> None:\n",
        "    def data_received(self, data: bytes) -> None:\n        self.received_at = time.perf_counter()\n",
    ),
    (
        "services/executor/push.py",
        "        rows = int(next(iter(inputs.values())).shape[0])\n",
        "        from infaas import _stamps\n"
        "        _stamps.E[order.id] = [self.received_at, __import__('time').perf_counter()]\n"
        "        rows = int(next(iter(inputs.values())).shape[0])\n",
    ),
    (
        "services/executor/consumers.py",
        "    serve_inline(worker, instance, delivery, time.time(), answer_at_once)\n",
        "    from infaas import _stamps\n    _stamps.E.setdefault(delivery.order.id, [0.0, 0.0]).append(time.perf_counter())\n"
        "    serve_inline(worker, instance, delivery, time.time(), answer_at_once)\n",
    ),
    (
        "services/executor/consumers.py",
        "        await serve_queries(worker, instance, taken, time.time(), answer_on_connection)\n",
        "        from infaas import _stamps\n        for q in taken:\n"
        "            _stamps.E.setdefault(q.order.id, [0.0, 0.0]).append(time.perf_counter())\n"
        "        await serve_queries(worker, instance, taken, time.time(), answer_on_connection)\n",
    ),
    (
        "services/executor/serving.py",
        "    compute_s = time.perf_counter() - start\n    compute_ms",
        "    compute_s = time.perf_counter() - start\n    e4 = time.perf_counter()\n    compute_ms",
    ),
    (
        "services/executor/serving.py",
        "        reply(d, answered.encode(part))\n",
        "        from infaas import _stamps\n"
        "        _stamps.E[d.order.id] = (_stamps.E.get(d.order.id, []) + [0.0] * 3)[:3] + [start, e4, time.perf_counter()]\n"
        "        reply(d, answered.encode(part))\n",
    ),
]


def instrumented_copy(rev: str, where: Path) -> Path:
    """A worktree of `rev` at `where` with the stamps added; exits saying which anchor moved."""
    if where.exists():
        subprocess.run(["git", "worktree", "remove", "--force", str(where)], cwd=ROOT, check=False)
        shutil.rmtree(where, ignore_errors=True)
    subprocess.run(["git", "worktree", "add", "--detach", "--force", str(where), rev], cwd=ROOT, check=True)
    (where / "infaas" / "_stamps.py").write_text(STAMPS)
    for rel, anchor, replacement in EDITS:
        path = where / rel
        text = path.read_text()
        if text.count(anchor) != 1:
            sys.exit(f"{rel}: the anchor {anchor.strip()[:60]!r} occurs {text.count(anchor)} times, not once")
        path.write_text(text.replace(anchor, replacement))
    return where


def segments(rows: np.ndarray) -> dict[str, np.ndarray]:
    """Each segment's durations in µs, over the queries whose stamps are all there and in order."""
    at = dict(zip((*GATEWAY, "G5", *EXECUTOR), rows.T, strict=True))
    stamps = np.stack([at[k] for k in ORDER], axis=1)
    whole = (stamps > 0).all(axis=1) & (np.diff(stamps, axis=1) >= 0).all(axis=1)
    kept = stamps[whole]
    out = {
        f"{a} → {b}": (kept[:, i + 1] - kept[:, i]) * 1e6
        for i, (a, b) in enumerate(zip(ORDER, ORDER[1:], strict=False))
    }
    out["G0 → G5 (server)"] = (kept[:, -1] - kept[:, 0]) * 1e6
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--model", default="tiny", choices=list(model_build.SPECS))
    p.add_argument("--rate", type=float, help="queries per second (default: run.py's low rate)")
    p.add_argument("--seconds", type=float, default=60.0)
    p.add_argument("--rev", default="HEAD", help="the commit to measure (default: HEAD)")
    a = systems.parse_pinned(p)
    rate = a.rate or LOW_RATE.get(a.model, 20.0)
    work = ROOT / "var" / "peers" / "segments"
    source = instrumented_copy(a.rev, work / "src")
    out = work / "stamps"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    _, rows = model_build.prepare(MODELS_DIR)
    with environment({"PYTHONPATH": str(source), "INFAAS_STAMPS_DIR": str(out)}):
        server, key = start_infaas(a.server_core, a.client_core, work / "var", MODELS_DIR, [a.model])
    try:
        ep = systems.endpoints("infaas", server.port, [a.model], {"Authorization": f"Bearer {key}"})[0]
        runner = measure.Runner(a.server_core, 64, 0.5, {})
        runner.open_loop(ep, server, rows, rate, 3.0)  # warm, not recorded
        r = runner.open_loop(ep, server, rows, rate, a.seconds)
    finally:
        server.stop()
    files = sorted(out.glob("stamps-*.csv"))
    if not files:
        sys.exit("no stamps were written: did the gateway answer from the instrumented copy?")
    table = np.concatenate([np.loadtxt(f, delimiter=",", ndmin=2) for f in files])
    parts = segments(table[100:])  # the first hundred: the warm-up
    n = len(next(iter(parts.values())))
    print(f"{a.model} at {rate:g}/s for {a.seconds:g} s ({a.rev}): client {measure.round_line(r)}")
    print(f"{n} queries with every stamp in order, of {len(table) - 100}; µs")
    # Where the slowest queries' time went: each segment's median over the 2 % slowest server paths.
    total = parts["G0 → G5 (server)"]
    slow = total >= np.percentile(total, 98)
    for name, x in parts.items():
        print(
            f"  {name:18s} p50 {np.percentile(x, 50):8.1f}  p90 {np.percentile(x, 90):8.1f}"
            f"  p99 {np.percentile(x, 99):8.1f}  in the slowest 2 % {np.median(x[slow]):8.1f}"
        )


if __name__ == "__main__":
    main()
