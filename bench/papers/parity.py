"""ParM's experiment on this machine: parity models against stragglers, next to an equal-resources
baseline (one more replica) and no redundancy; and the degraded-mode accuracy of trained parity models.

The serving side is a small frontend over real ONNX Runtime worker processes, not the infaas dispatcher
(whose coding groups are not built yet): each worker runs the deployed digits MLP (or, for parity, its
trained parity model) on one thread and talks to the frontend over pipes of its own, so a paused worker
holds no lock the others need. The frontend sends each query to the deployed worker with the fewest
outstanding queries, forms coding groups of k consecutive queries (`infaas.policy.parity.GroupFormer`,
bound `--bound-ms`), sends their sum to the parity worker, and answers each query with whichever comes
first: its own output or the reconstruction (`CodingGroup`). Arrivals are Poisson, batch 1. Stragglers:
every `--period-ms` (exponential) one worker of the pool, drawn at random, is paused (SIGSTOP) for
`--pause-ms` and resumed (SIGCONT) — the same schedule of draws in every configuration.

Configurations (equal resources for the baseline): `none` (m deployed workers), `parity` (m deployed + m/k
parity workers, k=2), `replica` (m + m/k deployed workers).

Usage:

    .venv/bin/python -m bench.papers.parity [--queries 20000] [--rate 300] [--train-steps 3000] \
        [--out docs/img]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import signal
import statistics
import threading
import time
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import cast

import numpy as np
import onnxruntime as ort
from sklearn.datasets import load_digits

from bench.common.paths import ROOT
from infaas.policy.parity import CodingGroup, GroupFormer, encode
from infaas_cli.demo_models import build_demo_models
from services.profiler.parity_training import ParityConfig, train_parity

ID = np.dtype("<i8")


def worker(model_bytes: bytes, inbox: Connection, outbox: Connection) -> None:
    """Run every query (8-byte id + float32 row) through the model; answer id + float32 outputs."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(model_bytes, options, providers=["CPUExecutionProvider"])
    name = session.get_inputs()[0].name
    width = session.get_inputs()[0].shape[1]
    while True:
        raw = inbox.recv_bytes()
        if not raw:
            return
        x = np.frombuffer(raw, dtype=np.float32, offset=8).reshape(1, width)
        y = np.asarray(session.run(None, {name: x})[0], dtype=np.float32)
        outbox.send_bytes(raw[:8] + y.tobytes())


@dataclass
class Pool:
    """Worker processes of one kind, with the pipes to reach them and their outstanding counts."""

    procs: list[mp.process.BaseProcess] = field(default_factory=list)
    inboxes: list[Connection] = field(default_factory=list)
    outboxes: list[Connection] = field(default_factory=list)
    outstanding: list[int] = field(default_factory=list)

    def start(self, model_bytes: bytes, count: int) -> None:
        ctx = mp.get_context("spawn")
        for _ in range(count):
            recv_in, send_in = ctx.Pipe(duplex=False)
            recv_out, send_out = ctx.Pipe(duplex=False)
            proc = ctx.Process(target=worker, args=(model_bytes, recv_in, send_out), daemon=True)
            proc.start()
            self.procs.append(proc)
            self.inboxes.append(send_in)
            self.outboxes.append(recv_out)
            self.outstanding.append(0)

    def send(self, qid: int, x: np.ndarray) -> int:
        """To the worker with the fewest outstanding queries (join the shortest queue)."""
        i = min(range(len(self.procs)), key=self.outstanding.__getitem__)
        self.outstanding[i] += 1
        self.inboxes[i].send_bytes(np.array([qid], dtype=ID).tobytes() + x.tobytes())
        return i

    def stop(self) -> None:
        for proc in self.procs:
            os.kill(proc.pid or 0, signal.SIGCONT)
        for inbox in self.inboxes:
            inbox.send_bytes(b"")
        for proc in self.procs:
            proc.join(timeout=5)


@dataclass
class Run:
    name: str
    latencies_ms: list[float]
    reconstructed: int
    uncoded: int
    encode_us: list[float]
    decode_us: list[float]
    pauses: int


def serve(
    name: str,
    deployed: bytes,
    parity: bytes | None,
    *,
    workers: int,
    parity_workers: int,
    k: int,
    xs: np.ndarray,
    queries: int,
    rate: float,
    bound_ms: float,
    period_ms: float,
    pause_ms: float,
    seed: int,
) -> Run:
    main, extra = Pool(), Pool()
    main.start(deployed, workers)
    if parity is not None:
        extra.start(parity, parity_workers)
    time.sleep(2.0)  # sessions loaded
    rng = np.random.default_rng(seed)
    gaps = rng.exponential(1.0 / rate, size=queries)
    rows = rng.integers(0, len(xs), size=queries)
    arrived = np.zeros(queries)
    done = np.full(queries, np.nan)
    lock = threading.Lock()
    member_of: dict[int, tuple[int, int]] = {}  # query -> (group, member)
    members_of: dict[int, list[int]] = {}  # group -> its queries, by member
    groups: dict[int, CodingGroup] = {}
    waiting: dict[int, np.ndarray] = {}  # outputs of queries not yet in a group
    counts = {"reconstructed": 0, "pauses": 0}
    encode_us: list[float] = []
    decode_us: list[float] = []
    former = GroupFormer(k=k, bound_s=bound_ms / 1000)
    finished = threading.Event()

    def settle(group_id: int, rebuilt: list[tuple[int, np.ndarray]], now: float) -> None:
        for member, _output in rebuilt:
            qid = members_of[group_id][member]
            if np.isnan(done[qid]):
                done[qid] = now
                counts["reconstructed"] += 1

    def collect() -> None:
        readers = main.outboxes + extra.outboxes
        remaining = queries
        while remaining > 0 or any(extra.outstanding):
            # `wait` answers with the objects it was given: all of them connections here
            for conn in cast("list[Connection]", wait(readers, timeout=1.0)):
                raw = conn.recv_bytes()
                now = time.perf_counter()
                qid = int(np.frombuffer(raw[:8], dtype=ID)[0])
                y = np.frombuffer(raw, dtype=np.float32, offset=8).reshape(1, -1)
                with lock:
                    if conn in extra.outboxes:
                        extra.outstanding[extra.outboxes.index(conn)] -= 1
                        t0 = time.perf_counter()
                        rebuilt = groups[qid].arrive_parity(y)
                        if rebuilt:
                            decode_us.append((time.perf_counter() - t0) * 1e6)
                        settle(qid, rebuilt, now)
                        continue
                    main.outstanding[main.outboxes.index(conn)] -= 1
                    remaining -= 1
                    if np.isnan(done[qid]):
                        done[qid] = now
                    if qid in member_of:
                        group_id, member = member_of[qid]
                        t0 = time.perf_counter()
                        rebuilt = groups[group_id].arrive(member, y)
                        if rebuilt:
                            decode_us.append((time.perf_counter() - t0) * 1e6)
                        settle(group_id, rebuilt, now)
                    elif parity is not None:
                        waiting[qid] = y
        finished.set()

    def straggle() -> None:
        pool = main.procs + extra.procs
        draws = np.random.default_rng(seed + 1)
        while not finished.is_set():
            if finished.wait(draws.exponential(period_ms / 1000)):
                return
            proc = pool[int(draws.integers(0, len(pool)))]
            os.kill(proc.pid or 0, signal.SIGSTOP)
            counts["pauses"] += 1
            finished.wait(pause_ms / 1000)
            os.kill(proc.pid or 0, signal.SIGCONT)

    collector = threading.Thread(target=collect, daemon=True)
    stragglers = threading.Thread(target=straggle, daemon=True)
    collector.start()
    stragglers.start()
    start = time.perf_counter()
    due = start
    for qid in range(queries):
        due += gaps[qid]
        delay = due - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        x = xs[rows[qid] : rows[qid] + 1]
        with lock:
            arrived[qid] = time.perf_counter()
            main.send(qid, x)
            if parity is None:
                continue
            full = former.add(qid, x, arrived[qid])
            if full is None:
                continue
            t0 = time.perf_counter()
            p = encode([m for _, m in full])
            encode_us.append((time.perf_counter() - t0) * 1e6)
            group = CodingGroup(k=k)
            groups[qid] = group
            members_of[qid] = [member_qid for member_qid, _ in full]
            now = time.perf_counter()
            for member, (member_qid, _) in enumerate(full):
                member_of[member_qid] = (qid, member)
                if member_qid in waiting:
                    settle(qid, group.arrive(member, waiting.pop(member_qid)), now)
            extra.send(qid, p)
    finished.wait(120)
    main.stop()
    extra.stop()
    latencies = ((done - arrived) * 1000).tolist()
    return Run(
        name,
        latencies,
        counts["reconstructed"],
        former.uncoded,
        encode_us,
        decode_us,
        counts["pauses"],
    )


def summary(run: Run) -> dict[str, float | None]:
    lat = np.asarray(run.latencies_ms)
    lost = int(np.isnan(lat).sum())
    lat = lat[~np.isnan(lat)]
    median, p99, p999 = (float(np.percentile(lat, q)) for q in (50, 99, 99.9))
    return {
        "queries": len(run.latencies_ms),
        "lost": lost,
        "median_ms": median,
        "p99_ms": p99,
        "p999_ms": p999,
        "gap_ms": p999 - median,
        "reconstructed": run.reconstructed,
        "uncoded": run.uncoded,
        "pauses": run.pauses,
        "encode_us_median": statistics.median(run.encode_us) if run.encode_us else None,
        "decode_us_median": statistics.median(run.decode_us) if run.decode_us else None,
    }


def degraded_accuracy(deployed: bytes, validation: Path, steps: int) -> list[dict[str, float | int | str]]:
    """Parity models for k = 2, 3, 4 trained on the validation rows plus the digits rows the demo model
    was trained on as unlabeled inputs, judged on held-out validation rows."""
    with np.load(validation) as npz:
        x, y = npz["x"], npz["y"]
    digits = (np.asarray(load_digits().data, dtype=np.float64) / 16.0).astype(np.float32)
    seen = {r.tobytes() for r in x}
    unlabeled = np.stack([r for r in digits if r.tobytes() not in seen])
    out: list[dict[str, float | int | str]] = []
    for k in (2, 3, 4):
        result = train_parity(
            deployed, x, y, task="classification", config=ParityConfig(k=k, steps=steps), unlabeled=unlabeled
        )
        out.append(
            {
                "k": k,
                "deployed": result.deployed_score,
                "degraded": result.degraded_score,
                "holdout_rows": result.holdout_rows,
                "train_rows": result.train_rows,
                "train_s": result.train_seconds,
                "onnx": result.onnx_bytes.hex() if k == 2 else "",
            }
        )
        print(
            f"k={k}: deployed {result.deployed_score:.3f}, degraded {result.degraded_score:.3f} "
            f"({result.holdout_rows} held-out rows, {result.train_rows} training rows, "
            f"{result.train_seconds:.0f} s)"
        )
    return out


def plot(runs: list[Run], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for run in runs:
        lat = np.sort(np.asarray([v for v in run.latencies_ms if v == v]))
        tail = 1.0 - np.arange(1, len(lat) + 1) / len(lat)
        ax.plot(lat, np.maximum(tail, 1e-6), label=run.name)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("latency (ms)")
    ax.set_ylabel("fraction of queries slower")
    ax.set_title("Paused workers under Poisson load (batch 1)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--queries", type=int, default=20000)
    parser.add_argument("--rate", type=float, default=300.0, help="Poisson arrivals per second")
    parser.add_argument("--workers", type=int, default=2, help="deployed workers (m)")
    parser.add_argument("--k", type=int, default=2)
    parser.add_argument("--bound-ms", type=float, default=20.0, help="a coding group's longest wait")
    parser.add_argument("--period-ms", type=float, default=500.0, help="mean time between pauses")
    parser.add_argument("--pause-ms", type=float, default=50.0, help="how long a paused worker stays paused")
    parser.add_argument("--train-steps", type=int, default=3000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "img")
    args = parser.parse_args()

    demo = {m.name: m for m in build_demo_models(ROOT / "var" / "demo-models")}["digits-mlp-large"]
    deployed = demo.onnx_path.read_bytes()
    accuracy = degraded_accuracy(deployed, demo.validation_path, args.train_steps)
    parity_model = bytes.fromhex(str(accuracy[0]["onnx"]))
    with np.load(demo.validation_path) as npz:
        xs = np.ascontiguousarray(npz["x"], dtype=np.float32)
    extra = max(1, args.workers // args.k)
    common = {
        "k": args.k,
        "xs": xs,
        "queries": args.queries,
        "rate": args.rate,
        "bound_ms": args.bound_ms,
        "period_ms": args.period_ms,
        "pause_ms": args.pause_ms,
        "seed": args.seed,
    }
    runs = [
        serve("none", deployed, None, workers=args.workers, parity_workers=0, **common),
        serve(
            f"parity k={args.k}", deployed, parity_model, workers=args.workers, parity_workers=extra, **common
        ),
        serve(
            "replica (equal resources)",
            deployed,
            None,
            workers=args.workers + extra,
            parity_workers=0,
            **common,
        ),
    ]
    rows = {run.name: summary(run) for run in runs}
    print(f"{'configuration':28} {'median':>8} {'p99':>8} {'p99.9':>8} {'gap':>8} {'rebuilt':>8} {'lost':>5}")
    for name, s in rows.items():
        print(
            f"{name:28} {s['median_ms']:8.2f} {s['p99_ms']:8.2f} {s['p999_ms']:8.2f} {s['gap_ms']:8.2f} "
            f"{s['reconstructed']:8d} {s['lost']:5d}"
        )
    parity_row = rows[runs[1].name]
    print(
        f"encode {parity_row['encode_us_median']:.1f} us, "
        f"decode {parity_row['decode_us_median']:.1f} us (median)"
    )
    args.out.mkdir(parents=True, exist_ok=True)
    for a in accuracy:
        a.pop("onnx")
    record = {
        "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "load_average": os.getloadavg(),
        "cores": os.cpu_count(),
        "runs": rows,
        "degraded_accuracy": accuracy,
    }
    (args.out / "parity.json").write_text(json.dumps(record, indent=2))
    plot(runs, args.out / "parity.png")


if __name__ == "__main__":
    main()
